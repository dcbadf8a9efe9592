"""mha.attention with `key_transposed` (the key given as kᵀ [B, Hkv, dk, Sk])
on a few configurations: DIR/NAME.mlir (@main), DIR/NAME.argI.npy and
DIR/NAME.expected.npy from a float64 numpy evaluation.

Usage: key_transposed.py DIR
"""
import sys

import numpy as np

out = sys.argv[1]
rng = np.random.default_rng(23)


def attention(q, kt, v, scale, causal, visible):
    """softmax(q kᵀ scale, hidden keys dropped) v per head, kv heads shared
    by groups of query heads, in float64; rows that see no key give 0."""
    h, hkv = q.shape[1], kt.shape[1]
    kt = np.repeat(kt.astype(np.float64), h // hkv, axis=1)
    v = np.repeat(v.astype(np.float64), h // hkv, axis=1)
    s = (q.astype(np.float64) @ kt) * scale
    sq, sk = s.shape[-2:]
    keep = np.ones((sq, sk), bool)
    if causal:
        keep &= np.arange(sk)[None, :] <= np.arange(sq)[:, None] + (sk - sq)
    if visible is not None:
        keep = keep & visible
    s = np.where(keep, s, -np.inf)
    m = s.max(-1, keepdims=True)
    p = np.where(np.isfinite(m), np.exp(s - np.where(np.isfinite(m), m, 0)), 0)
    total = p.sum(-1, keepdims=True)
    p = np.divide(p, total, out=np.zeros_like(p), where=total > 0)
    return p @ v


def case(name, b, h, hkv, sq, sk, dk, dv, causal=False, mask=False,
         dynamic=False):
    q = rng.standard_normal((b, h, sq, dk)).astype(np.float32)
    kt = rng.standard_normal((b, hkv, dk, sk)).astype(np.float32)
    v = rng.standard_normal((b, hkv, sk, dv)).astype(np.float32)
    args = [q, kt, v]
    visible = None
    if mask:
        visible = rng.random((sq, sk)) < 0.8
        args.append(visible)
    scale = 1 / np.sqrt(dk)
    np.save(f"{out}/{name}.expected.npy",
            attention(q, kt, v, scale, causal, visible).astype(np.float32))
    for i, a in enumerate(args):
        np.save(f"{out}/{name}.arg{i}.npy", a)

    def t(*dims, elt="f32"):
        return "tensor<" + "x".join(
            "?" if (dynamic and d in ("sq", "sk")) else str(d if
            isinstance(d, int) else {"sq": sq, "sk": sk}[d])
            for d in dims) + "x" + elt + ">"
    tq, tk, tv = t(b, h, "sq", dk), t(b, hkv, dk, "sk"), t(b, hkv, "sk", dv)
    to = t(b, h, "sq", dv)
    params = [f"%q: {tq}", f"%kt: {tk}", f"%v: {tv}"]
    mask_part = ""
    if mask:
        tm = t("sq", "sk", elt="i1")
        params.append(f"%m: {tm}")
        mask_part = f" mask(%m : {tm})"
    empty = "tensor.empty() : " + to
    if dynamic:
        empty = f"tensor.empty(%sq) : {to}"
    attrs = ["key_transposed"] + (["causal"] if causal else [])
    text = f"""func.func @main({", ".join(params)}) -> {to} {{
  %c2 = arith.constant 2 : index
  %sq = tensor.dim %q, %c2 : {tq}
  %init = {empty}
  %o = mha.attention ins(%q, %kt, %v : {tq}, {tk}, {tv}){mask_part}
         outs(%init : {to}) {{{", ".join(attrs)}}} -> {to}
  return %o : {to}
}}
"""
    with open(f"{out}/{name}.mlir", "w") as f:
        f.write(text)


# GQA, causal with Sq < Sk, lengths the 64-wide tiles do not divide, dk != dv.
case("gqa_causal_odd", b=2, h=4, hkv=2, sq=37, sk=130, dk=64, dv=48,
     causal=True)
# Full vector tiles.
case("full_tiles", b=1, h=2, hkv=2, sq=128, sk=256, dk=64, dv=64)
# Dynamic lengths and a boolean mask.
case("dynamic_bool", b=1, h=2, hkv=1, sq=20, sk=70, dk=16, dv=16, mask=True,
     dynamic=True)
