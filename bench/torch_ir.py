"""The attention layer in the torch dialect, for the IREE peer of peers.py.

What iree-turbine's `aot.export` writes for a PyTorch module whose forward
is the layer with `F.scaled_dot_product_attention` (the form PyTorch 2 users
write, and the one IREE maps to its own attention op), written here directly
so that the bench needs no PyTorch 2: the projections as `aten.matmul` (+
`aten.add.Tensor` for biases) on constant weights (`dense_resource`, the
values onnx_models.py gives the ONNX forms, so every form computes the same
function), `aten.view` / `aten.transpose.int` into heads,
`aten.scaled_dot_product_attention` with `is_causal` (grouped-query K/V
heads repeated first, as `repeat_kv` does), and back. For the bench's
`core` rows, the scaled_dot_product_attention alone on head-split q, k, v.
"""

import numpy as np

from onnx_models import _random


def build(cfg, path, seed=0):
    """Writes the layer of `cfg` (a peers.Config) to `path` as a torch
    dialect module with one function, `@main`."""
    b, sq, sk, e, h, hkv, d = cfg.b, cfg.sq, cfg.sk, cfg.e, cfg.h, cfg.hkv, cfg.d
    lines, blobs, consts = [], {}, {}

    def vt(*shape):
        return f"!torch.vtensor<[{','.join(map(str, shape))}],f32>"

    def emit(text):
        name = f"%v{len(lines)}"
        lines.append(f"    {name} = {text}")
        return name

    def const_int(n):
        if ("int", n) not in consts:
            consts[("int", n)] = emit(f"torch.constant.int {n}")
        return consts[("int", n)]

    def int_list(values):
        ints = [const_int(v) for v in values]
        return emit(f"torch.prim.ListConstruct {', '.join(ints)} : "
                    f"({', '.join(['!torch.int'] * len(ints))}) -> "
                    f"!torch.list<int>")

    def weight(name, shape):
        blobs[name] = _random(name, shape, seed)
        return emit(f"torch.vtensor.literal(dense_resource<{name}> : "
                    f"tensor<{'x'.join(map(str, shape))}xf32>) : {vt(*shape)}")

    def project(name, src, s, heads):
        w = weight("w_" + name, [e, heads * d])
        y = emit(f"torch.aten.matmul {src}, {w} : {vt(b, s, e)}, "
                 f"{vt(e, heads * d)} -> {vt(b, s, heads * d)}")
        if cfg.bias:
            bias = weight("b_" + name, [heads * d])
            y = emit(f"torch.aten.add.Tensor {y}, {bias}, {const_int(1)} : "
                     f"{vt(b, s, heads * d)}, {vt(heads * d)}, !torch.int -> "
                     f"{vt(b, s, heads * d)}")
        split = emit(f"torch.aten.view {y}, {int_list([b, s, heads, d])} : "
                     f"{vt(b, s, heads * d)}, !torch.list<int> -> "
                     f"{vt(b, s, heads, d)}")
        return emit(f"torch.aten.transpose.int {split}, {const_int(1)}, "
                    f"{const_int(2)} : {vt(b, s, heads, d)}, !torch.int, "
                    f"!torch.int -> {vt(b, heads, s, d)}")

    if cfg.core:  # the core attention alone, on head-split q, k, v
        q, k, v = "%q", "%k", "%v"
    else:
        kv_arg = "%kv" if cfg.cross else "%x"
        q = project("q", "%x", sq, h)
        k = project("k", kv_arg, sk, hkv)
        v = project("v", kv_arg, sk, hkv)
    if hkv != h:  # repeat_kv: [B, Hkv, Sk, d] -> [B, H, Sk, d]
        g = h // hkv
        repeated = []
        for x in (k, v):
            u = emit(f"torch.aten.unsqueeze {x}, {const_int(2)} : "
                     f"{vt(b, hkv, sk, d)}, !torch.int -> "
                     f"{vt(b, hkv, 1, sk, d)}")
            ex = emit(f"torch.aten.expand {u}, {int_list([b, hkv, g, sk, d])}, "
                      f"{emit('torch.constant.bool false')} : "
                      f"{vt(b, hkv, 1, sk, d)}, !torch.list<int>, !torch.bool "
                      f"-> {vt(b, hkv, g, sk, d)}")
            repeated.append(emit(
                f"torch.aten.reshape {ex}, {int_list([b, h, sk, d])} : "
                f"{vt(b, hkv, g, sk, d)}, !torch.list<int> -> "
                f"{vt(b, h, sk, d)}"))
        k, v = repeated
    none = emit("torch.constant.none")
    zero = emit("torch.constant.float 0.000000e+00")
    causal = emit(f"torch.constant.bool {'true' if cfg.causal else 'false'}")
    gqa = emit("torch.constant.bool false")
    o = emit(f"torch.aten.scaled_dot_product_attention {q}, {k}, {v}, {none}, "
             f"{zero}, {causal}, {none}, {gqa} : {vt(b, h, sq, d)}, "
             f"{vt(b, h, sk, d)}, {vt(b, h, sk, d)}, !torch.none, !torch.float, "
             f"!torch.bool, !torch.none, !torch.bool -> {vt(b, h, sq, d)}")
    if cfg.core:
        return _write(path, cfg, [f"%q: {vt(b, h, sq, d)}",
                                  f"%k: {vt(b, hkv, sk, d)}",
                                  f"%v: {vt(b, hkv, sk, d)}"],
                      lines, o, vt(b, h, sq, d), blobs)
    t = emit(f"torch.aten.transpose.int {o}, {const_int(1)}, {const_int(2)} : "
             f"{vt(b, h, sq, d)}, !torch.int, !torch.int -> {vt(b, sq, h, d)}")
    merged = emit(f"torch.aten.reshape {t}, {int_list([b, sq, h * d])} : "
                  f"{vt(b, sq, h, d)}, !torch.list<int> -> {vt(b, sq, h * d)}")
    wo = weight("w_o", [h * d, e])
    y = emit(f"torch.aten.matmul {merged}, {wo} : {vt(b, sq, h * d)}, "
             f"{vt(h * d, e)} -> {vt(b, sq, e)}")
    if cfg.bias:
        bo = weight("b_o", [e])
        y = emit(f"torch.aten.add.Tensor {y}, {bo}, {const_int(1)} : "
                 f"{vt(b, sq, e)}, {vt(e)}, !torch.int -> {vt(b, sq, e)}")
    args = [f"%x: {vt(b, sq, e)}"] + ([f"%kv: {vt(b, sk, e)}"] if cfg.cross
                                      else [])
    _write(path, cfg, args, lines, y, vt(b, sq, e), blobs)


def _write(path, cfg, args, lines, result, result_type, blobs):
    resources = ",\n".join(
        f'      {name}: "0x04000000{value.astype(np.float32).tobytes().hex()}"'
        for name, value in blobs.items())
    with open(path, "w") as f:
        f.write(f"// {cfg.name}: {cfg.title} (generated by bench/torch_ir.py)\n"
                f"func.func @main({', '.join(args)}) -> {result_type} {{\n" +
                "\n".join(lines) +
                f"\n    return {result} : {result_type}\n}}\n")
        if blobs:
            f.write("\n{-#\n  dialect_resources: {\n    builtin: {\n" +
                    resources + "\n    }\n  }\n#-}\n")
