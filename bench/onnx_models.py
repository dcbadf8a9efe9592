"""The attention layer as ONNX models, for the ONNX Runtime peer of peers.py.

Two forms of the same layer, both with the four projections as MatMul nodes
on constant weights (initializers, as a model exported from a trained layer
has them) and the core attention as one fused node, because that is what a
user of ONNX Runtime would run:

  * `attention`: ONNX's own `Attention` (opset 23) on 3-D [B, S, H*d]
    inputs, with `q_num_heads` / `kv_num_heads` (grouped-query attention
    natively, K/V projected at Hkv*d) and `is_causal`; biases as Add nodes.
  * `mha`: the contrib op `com.microsoft.MultiHeadAttention`, the one ONNX
    Runtime's transformer optimizer produces. It takes the three projection
    biases fused into one `bias` input and is causal through `unidirectional`.
    It has no grouped-query form, so for GQA the K/V weights are widened to
    H*d columns (each K/V head repeated H/Hkv times), which costs the extra
    projection work a user of this op pays.

A third form has no attention node at all, for the peers that take no
such node (IREE's ONNX import has neither):

  * `primitives`: the core attention as the graph `torch.onnx.export`
    writes for a PyTorch attention written out: Reshape and Transpose into
    heads, MatMul of q and kᵀ, Mul by the scale, Add of a causal mask
    (Trilu of -inf above the diagonal), Softmax, MatMul with v, Transpose
    and Reshape back; grouped-query K/V heads repeated by Expand.

Debian 12's onnx (1.12) predates opset 23; its helper API still writes such
a model, and the checker, which would refuse it, is not run. ONNX Runtime
validates the model when it loads it.
"""

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

FORMS = ("attention", "mha")
PRIMITIVE_FORMS = ("primitives",)
# A step over a K/V cache (peers.Config.cache: decoding, prefill with a
# cache): Sq new queries at the end of Sk keys.
#   * `attention-cache`: ONNX's `Attention` (opset 24) on 4-D inputs over a
#     static cache with `nonpad_kv_seqlen` = Sk (read in place, no copy; the
#     causal diagonal at Sk - Sq).
#   * `gqa`: `com.microsoft.GroupQueryAttention` appending the step's K/V to
#     past buffers of Sk rows (seqlens_k = Sk - 1): what ONNX Runtime's
#     transformer tools produce; it copies the past into the present.
CACHE_FORMS = ("attention-cache", "gqa")
# A layer's step over a K/V cache: the `gqa` form between MatMul
# projections of the step's tokens (initializers), as ONNX Runtime's
# decoder exports have it.
LAYER_CACHE_FORMS = ("gqa",)


def _random(name, shape, seed):
    """Values that depend on the tensor's name alone, so that both forms of
    a layer compute the same function (a cheap cross-check of the forms)."""
    rng = np.random.default_rng([seed] + [ord(c) for c in name])
    return rng.uniform(-0.05, 0.05, size=shape).astype(np.float32)


def _widen_heads(w, hkv, h):
    """[..., Hkv*d] -> [..., H*d], each K/V head repeated H/Hkv times in
    place (query head i reads K/V head i // (H/Hkv), as in mha and ONNX)."""
    lead = w.shape[:-1]
    d = w.shape[-1] // hkv
    return np.repeat(w.reshape(*lead, hkv, d), h // hkv, axis=-2).reshape(
        *lead, h * d)


def _primitive_attention(nodes, inits, cfg, q, k, v, out):
    """softmax(q kᵀ · scale + causal mask) v over heads, in plain ONNX ops,
    from [B, S, heads*d] projections to `out` [B, Sq, H*d]."""
    b, sq, sk, h, hkv, d = cfg.b, cfg.sq, cfg.sk, cfg.h, cfg.hkv, cfg.d

    def const(name, value):
        inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(op, inputs, name, **attrs):
        nodes.append(helper.make_node(op, inputs, [name], **attrs))
        return name

    def heads(x, s, n, name):  # [B, S, n*d] -> [B, n, S, d]
        r = node("Reshape", [x, const(name + "_shape",
                                      np.array([b, s, n, d], np.int64))],
                 name + "_split")
        return node("Transpose", [r], name + "_heads", perm=[0, 2, 1, 3])

    qh, kh, vh = heads(q, sq, h, "qh"), heads(k, sk, hkv, "kh"), \
        heads(v, sk, hkv, "vh")
    if hkv != h:  # each K/V head repeated H/Hkv times (PyTorch's repeat_kv)
        g = h // hkv
        for name in ("kh", "vh"):
            src = kh if name == "kh" else vh
            u = node("Unsqueeze", [src, const(name + "_axis",
                                              np.array([2], np.int64))],
                     name + "_u")
            x = node("Expand", [u, const(name + "_g", np.array(
                [b, hkv, g, sk, d], np.int64))], name + "_x")
            r = node("Reshape", [x, const(name + "_all", np.array(
                [b, h, sk, d], np.int64))], name + "_rep")
            kh, vh = (r, vh) if name == "kh" else (kh, r)
    kt = node("Transpose", [kh], "kt", perm=[0, 1, 3, 2])
    scores = node("MatMul", [qh, kt], "scores")
    scaled = node("Mul", [scores, const("scale", np.array(
        float(d) ** -0.5, np.float32))], "scaled")
    if cfg.causal:
        full = node("ConstantOfShape", [const("mask_shape", np.array(
            [sq, sk], np.int64))], "mask_full",
            value=numpy_helper.from_array(np.array([-np.inf], np.float32)))
        mask = node("Trilu", [full, const("mask_k", np.array(
            sk - sq + 1, np.int64))], "mask", upper=1)
        scaled = node("Add", [scaled, mask], "masked")
    probs = node("Softmax", [scaled], "probs", axis=-1)
    ctx = node("MatMul", [probs, vh], "ctx")
    merged = node("Transpose", [ctx], "ctx_t", perm=[0, 2, 1, 3])
    node("Reshape", [merged, const("out_shape", np.array(
        [b, sq, h * d], np.int64))], out)


def build(cfg, form, path, seed=0):
    """Writes the layer of `cfg` (a peers.Config) in `form` to `path`."""
    b, sq, sk, e, h, hkv, d = cfg.b, cfg.sq, cfg.sk, cfg.e, cfg.h, cfg.hkv, cfg.d
    # The mha form has no GQA: K/V are projected to all H heads.
    widen = form == "mha" and hkv != h
    nodes, inits = [], []

    def constant(name, shape, widened=False):
        value = _random(name, shape, seed)
        if widened:
            value = _widen_heads(value, hkv, h)
        inits.append(numpy_helper.from_array(value, name))
        return value

    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [b, sq, e])]
    kv_source = "x"
    if cfg.cross:
        inputs.append(helper.make_tensor_value_info("kv", TensorProto.FLOAT,
                                                    [b, sk, e]))
        kv_source = "kv"

    def project(name, src, heads, add_bias):
        constant("w_" + name, [e, heads * d], widened=heads != h and widen)
        out = name if not add_bias else name + "_nobias"
        nodes.append(helper.make_node("MatMul", [src, "w_" + name], [out]))
        if add_bias:
            constant("b_" + name, [heads * d])
            nodes.append(helper.make_node("Add", [out, "b_" + name], [name]))
        return name

    # In the mha form the contrib op adds the Q/K/V biases itself.
    fused_bias = form == "mha" and cfg.bias
    q = project("q", "x", h, cfg.bias and not fused_bias)
    k = project("k", kv_source, hkv, cfg.bias and not fused_bias)
    v = project("v", kv_source, hkv, cfg.bias and not fused_bias)

    if form == "attention":
        nodes.append(helper.make_node(
            "Attention", [q, k, v], ["heads"], q_num_heads=h, kv_num_heads=hkv,
            is_causal=int(cfg.causal), scale=float(d) ** -0.5))
    elif form == "mha":
        mha_inputs = [q, k, v]
        if fused_bias:
            parts = [_random("b_q", [h * d], seed)]
            for name in ("b_k", "b_v"):
                value = _random(name, [hkv * d], seed)
                parts.append(_widen_heads(value, hkv, h) if widen else value)
            inits.append(numpy_helper.from_array(np.concatenate(parts), "b_qkv"))
            mha_inputs.append("b_qkv")
        nodes.append(helper.make_node(
            "MultiHeadAttention", mha_inputs, ["heads"], domain="com.microsoft",
            num_heads=h, unidirectional=int(cfg.causal), scale=float(d) ** -0.5))
    elif form == "primitives":
        _primitive_attention(nodes, inits, cfg, q, k, v, "heads")
    else:
        raise ValueError(f"unknown ONNX form {form!r}")

    project_out = "y_nobias" if cfg.bias else "y"
    constant("w_o", [h * d, e])
    nodes.append(helper.make_node("MatMul", ["heads", "w_o"], [project_out]))
    if cfg.bias:
        constant("b_o", [e])
        nodes.append(helper.make_node("Add", ["y_nobias", "b_o"], ["y"]))

    graph = helper.make_graph(
        nodes, f"{cfg.name}-{form}", inputs,
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [b, sq, e])],
        initializer=inits)
    model = helper.make_model(graph, opset_imports=[
        helper.make_opsetid("", 23), helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 10
    onnx.save(model, path)


def build_cache_step(cfg, form, path):
    """Writes the step of `cfg` over its cache in `form` (CACHE_FORMS) to
    `path`;
    returns (float inputs {name: shape}, integer inputs {name: (dtype,
    shape, value)}) for ort_worker.py."""
    b, sq, sk, h, hkv, d = cfg.b, cfg.sq, cfg.sk, cfg.h, cfg.hkv, cfg.d
    f = TensorProto.FLOAT
    vi = helper.make_tensor_value_info
    if not cfg.core and form != "gqa":
        raise ValueError(f"no ONNX cache form {form!r} for a layer")
    if form == "attention-cache":
        floats = {"q": [b, h, sq, d], "k": [b, hkv, sk, d],
                  "v": [b, hkv, sk, d]}
        ints = {"n": ("int64", [b], sk)}
        node = helper.make_node("Attention", ["q", "k", "v", "", "", "", "n"],
                                ["y"], is_causal=int(cfg.causal))
        outs = [vi("y", f, [b, h, sq, d])]
        opsets = [helper.make_opsetid("", 24)]
    elif form == "gqa":
        floats = {"q": [b, sq, h * d], "k": [b, sq, hkv * d],
                  "v": [b, sq, hkv * d], "pk": [b, hkv, sk, d],
                  "pv": [b, hkv, sk, d]}
        ints = {"sl": ("int32", [b], sk - 1), "tot": ("int32", [], sk)}
        node = helper.make_node(
            "GroupQueryAttention", ["q", "k", "v", "pk", "pv", "sl", "tot"],
            ["y", "pko", "pvo"], domain="com.microsoft", num_heads=h,
            kv_num_heads=hkv)
        outs = [vi("y", f, [b, sq, h * d]), vi("pko", f, [b, hkv, sk, d]),
                vi("pvo", f, [b, hkv, sk, d])]
        opsets = [helper.make_opsetid("", 21),
                  helper.make_opsetid("com.microsoft", 1)]
    else:
        raise ValueError(f"unknown ONNX cache form {form!r}")
    nodes, inits = [node], []
    if not cfg.core:
        # The layer: the step's tokens x [B, Sq, E] projected by MatMuls into
        # the node's q, k, v, its output projected back to E.
        e = cfg.e
        floats = {"x": [b, sq, e], **{n: floats[n] for n in ("pk", "pv")}}
        widths = {"q": h * d, "k": hkv * d, "v": hkv * d}
        nodes = [helper.make_node("MatMul", ["x", f"w_{n}"], [n])
                 for n in widths]
        inits = [numpy_helper.from_array(_random(f"w_{n}", [e, w], 0),
                                         f"w_{n}") for n, w in widths.items()]
        inits.append(numpy_helper.from_array(_random("w_o", [h * d, e], 0),
                                             "w_o"))
        node.output[0] = "attn"
        nodes += [node, helper.make_node("MatMul", ["attn", "w_o"], ["y"])]
        outs[0] = vi("y", f, [b, sq, e])
    types = {"int64": TensorProto.INT64, "int32": TensorProto.INT32}
    inputs = [vi(n, f, shape) for n, shape in floats.items()] + \
        [vi(n, types[t], shape) for n, (t, shape, _) in ints.items()]
    graph = helper.make_graph(nodes, f"{cfg.name}-{form}", inputs, outs,
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 10
    onnx.save(model, path)
    return floats, ints
