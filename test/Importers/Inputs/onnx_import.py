"""Builds ONNX attention layers with the onnx helper API (opsets 23-25, IR
version 10), evaluates each graph's semantics with numpy (as the ONNX and
ONNX Runtime operator specs define them, independently of the importer),
and imports it with mha_importers.onnx_mha into DIR/NAME/. Where the
installed onnx has Attention (1.23 has, Debian's 1.12 has not), ONNX's own
onnx.reference.ReferenceEvaluator runs each ONNX graph too and must agree
with the numpy evaluation (onnx 1.22's reference differs where
nonpad_kv_seqlen meets is_causal or a query sees no key: we follow the
current spec, which 1.23 implements).

Usage: onnx_import.py DIR
"""
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

from mha_importers.onnx_mha import import_model

try:
    from onnx.reference import ReferenceEvaluator
    HAS_REFERENCE = onnx.defs.has("Attention")
except ImportError:
    HAS_REFERENCE = False

out = sys.argv[1]
rng = np.random.default_rng(5)
F32 = TensorProto.FLOAT


def randn(*shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def softmax_rows(s):
    """Softmax over the last dim; a row of -inf only (no key attended) is
    zeros, as ONNX Attention's spec says (1.23 on)."""
    top = s.max(-1, keepdims=True)
    p = np.exp(s - np.where(np.isneginf(top), 0, top))
    total = p.sum(-1, keepdims=True)
    return p / np.where(total == 0, 1, total)


def heads(x, h):
    b, s, e = x.shape
    return x.reshape(b, s, h, e // h).transpose(0, 2, 1, 3)


def onnx_attention(q, k, v, mask, qh, kvh, causal, scale, softcap=0.0,
                   left=-1, right=-1, nonpad=None):
    """ONNX Attention (opsets 23-25) on 3-d inputs, as its spec reads:
    softcap (> 0) caps the scaled scores before any mask is added; a query
    i attends key j where, with diff = (i + offset) - j, causal needs
    diff >= 0, left_window_size (>= 0) diff <= left and right_window_size
    (>= 0) -diff <= right; offset is 0 (top-left), or nonpad[b] - Sq per
    batch when nonpad_kv_seqlen is given, which also hides the keys
    j >= nonpad[b]."""
    q, k, v = heads(q, qh), heads(k, kvh), heads(v, kvh)
    k, v = np.repeat(k, qh // kvh, axis=1), np.repeat(v, qh // kvh, axis=1)
    scale = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    if softcap > 0:
        s = softcap * np.tanh(s / softcap)
    b, _, sq, sk = s.shape
    offset = np.zeros(b, np.int64) if nonpad is None else nonpad - sq
    i = np.arange(sq)[None, :, None]
    j = np.arange(sk)[None, None, :]
    diff = i + offset[:, None, None] - j  # [B, Sq, Sk]
    allowed = np.ones(diff.shape, bool)
    if causal:
        allowed &= diff >= 0
    if left >= 0:
        allowed &= diff <= left
    if right >= 0:
        allowed &= -diff <= right
    if nonpad is not None:
        allowed &= j < nonpad[:, None, None]
    s = s + np.where(allowed, 0, -np.inf)[:, None]
    if mask is not None:
        # A last dim shorter than the keys is padded with -inf (false), not
        # broadcast.
        pad = [(0, 0)] * (mask.ndim - 1) + [(0, sk - mask.shape[-1])]
        mask = np.pad(mask, pad, constant_values=False if mask.dtype == bool
                      else -np.inf)
        s = s + (np.where(mask, 0, -np.inf) if mask.dtype == bool else mask)
    y = softmax_rows(s) @ v
    return y.transpose(0, 2, 1, 3).reshape(b, sq, -1)


def ort_mha(q, k, v, bias, kpm, attn_bias, h, causal, scale, fill):
    """com.microsoft.MultiHeadAttention on 3-d inputs."""
    if bias is not None:
        bq, bk, bv = np.split(bias, 3)
        q, k, v = q + bq, k + bk, v + bv
    q, k, v = heads(q, h), heads(k, h), heads(v, h)
    scale = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    sq, sk = s.shape[-2:]
    if kpm is not None:
        s = s + np.where(kpm == 0, fill, 0.0)[:, None, None, :]
    if attn_bias is not None:
        s = s + attn_bias
    if causal:
        s = s + np.where(np.tril(np.ones((sq, sk), bool)), 0, -np.inf)
    y = softmax_rows(s) @ v
    return y.transpose(0, 2, 1, 3).reshape(q.shape[0], sq, -1)


def model(nodes, inputs, inits, out_shape, ms=False, opset=23):
    graph = helper.make_graph(
        nodes, "attention", inputs,
        [helper.make_tensor_value_info("y", F32, out_shape)],
        [numpy_helper.from_array(a, n) for n, a in inits.items()])
    opsets = [helper.make_opsetid("", opset)]
    if ms:
        opsets.append(helper.make_opsetid("com.microsoft", 1))
    m = helper.make_model(graph, opset_imports=opsets)
    m.ir_version = 10
    return m


def projections(names, x_names, ws, bs):
    nodes = []
    for n, x, w, b in zip(names, x_names, ws, bs):
        if b is None:
            nodes.append(helper.make_node("MatMul", [x, f"w{n}"], [n]))
        else:
            nodes.append(helper.make_node("MatMul", [x, f"w{n}"], [f"{n}0"]))
            nodes.append(helper.make_node("Add", [f"{n}0", f"b{n}"], [n]))
    return nodes


checked = []


def distinct(name, expected, **variants):
    """Each variant (the output with one feature left out or evaluated
    another way) must be far from `expected`, beyond mha-run's default
    tolerance (atol = rtol = 1e-4): a lowering that got that feature wrong
    fails the comparison."""
    for what, got in variants.items():
        err = np.abs(got - expected).max()
        assert err > 1e-2, f"{name}: {what} changes the output by {err} only"


def save(name, m, inputs, expected, expected_qk=None):
    onnx.save(m, f"{out}/{name}.onnx")
    import_model(m, f"{out}/{name}", inputs=inputs)
    np.save(f"{out}/{name}/expected.npy", expected.astype(np.float32))
    if expected_qk is not None:
        np.save(f"{out}/{name}/expected_qk.npy",
                expected_qk.astype(np.float32))
    if HAS_REFERENCE and m.opset_import[-1].domain != "com.microsoft":
        # The graph inputs are the runtime arguments, in order.
        feeds = dict(zip([i.name for i in m.graph.input], inputs.values()))
        got = ReferenceEvaluator(m).run(None, feeds)
        for g, e in zip(got, [expected, expected_qk]):
            np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5,
                                       err_msg=f"{name} vs onnx.reference")
        checked.append(name)


# 1. Self-attention, GQA (4 query heads, 2 key/value heads), causal,
#    biases on every projection.
x = randn(2, 16, 32)
w = dict(wq=randn(32, 32, scale=0.2), wk=randn(32, 16, scale=0.2),
         wv=randn(32, 16, scale=0.2), wo=randn(32, 24, scale=0.2),
         bq=randn(32), bk=randn(16), bv=randn(16), bo=randn(24))
nodes = projections("qkv", "xxx", [w["wq"], w["wk"], w["wv"]], [1, 1, 1])
nodes.append(helper.make_node("Attention", ["q", "k", "v"], ["a"],
                              q_num_heads=4, kv_num_heads=2, is_causal=1))
nodes += [helper.make_node("MatMul", ["a", "wo"], ["y0"]),
          helper.make_node("Add", ["y0", "bo"], ["y"])]
m = model(nodes, [helper.make_tensor_value_info("x", F32, [2, 16, 32])], w,
          [2, 16, 24])
ref = lambda t, n: t @ w[f"w{n}"] + w[f"b{n}"]
a = onnx_attention(ref(x, "q"), ref(x, "k"), ref(x, "v"), None, 4, 2, True,
                   None)
save("gqa_causal", m, {"query": x}, a @ w["wo"] + w["bo"])

# 2. Cross-attention with one input for keys and values, a float mask
#    [H, Sq, Sk] (right-aligned broadcasting), an explicit scale, no biases.
xq, xkv = randn(2, 8, 32), randn(2, 12, 32)
mask = randn(4, 8, 12)
mask[:, :, 3] = -np.inf
w = dict(wq=randn(32, 32, scale=0.2), wk=randn(32, 32, scale=0.2),
         wv=randn(32, 32, scale=0.2), wo=randn(32, 32, scale=0.2))
nodes = projections("qkv", ["xq", "xkv", "xkv"],
                    [w["wq"], w["wk"], w["wv"]], [None] * 3)
nodes.append(helper.make_node("Attention", ["q", "k", "v", "mask"], ["a"],
                              q_num_heads=4, kv_num_heads=4, scale=0.2))
nodes.append(helper.make_node("MatMul", ["a", "wo"], ["y"]))
m = model(nodes, [helper.make_tensor_value_info("xq", F32, [2, 8, 32]),
                  helper.make_tensor_value_info("xkv", F32, [2, 12, 32]),
                  helper.make_tensor_value_info("mask", F32, [4, 8, 12])],
          w, [2, 8, 32])
a = onnx_attention(xq @ w["wq"], xkv @ w["wk"], xkv @ w["wv"], mask, 4, 4,
                   False, 0.2)
save("cross_float_mask", m, {"query": xq, "key": xkv, "mask": mask},
     a @ w["wo"])

# 3. A boolean mask [Sq, Sk] (true: attended, ONNX's convention), dynamic
#    batch and lengths.
x = randn(3, 10, 16)
bmask = rng.random((10, 10)) < 0.7
bmask[:, 0] = True
w = dict(wq=randn(16, 16, scale=0.3), wk=randn(16, 16, scale=0.3),
         wv=randn(16, 16, scale=0.3), wo=randn(16, 16, scale=0.3),
         bq=randn(16), bk=randn(16), bv=randn(16), bo=randn(16))
nodes = projections("qkv", "xxx", [0, 0, 0], [1, 1, 1])
nodes.append(helper.make_node("Attention", ["q", "k", "v", "m"], ["a"],
                              q_num_heads=2, kv_num_heads=2))
nodes += [helper.make_node("MatMul", ["a", "wo"], ["y0"]),
          helper.make_node("Add", ["bo", "y0"], ["y"])]
m = model(nodes, [helper.make_tensor_value_info("x", F32, ["b", "s", 16]),
                  helper.make_tensor_value_info("m", TensorProto.BOOL,
                                                ["s", "s"])],
          w, ["b", "s", 16])
a = onnx_attention(ref(x, "q"), ref(x, "k"), ref(x, "v"), bmask, 2, 2, False,
                   None)
save("bool_mask_dynamic", m, {"query": x, "m": bmask},
     a @ w["wo"] + w["bo"])

# 4. ONNX Runtime's com.microsoft.MultiHeadAttention: projections without
#    Add, the packed q/k/v bias, an int32 key padding mask [B, Sk] (0:
#    padding, mask_filter_value added), a constant attention_bias
#    [1, H, Sq, Sk] initializer.
xq, xkv = randn(2, 6, 32), randn(2, 9, 32)
kpm = np.ones((2, 9), np.int32)
kpm[1, 6:] = 0
w = dict(wq=randn(32, 32, scale=0.2), wk=randn(32, 32, scale=0.2),
         wv=randn(32, 32, scale=0.2), wo=randn(32, 32, scale=0.2),
         bo=randn(32), qkv_bias=randn(96), attn_bias=randn(1, 4, 6, 9))
nodes = projections("qkv", ["xq", "xkv", "xkv"],
                    [w["wq"], w["wk"], w["wv"]], [None] * 3)
nodes.append(helper.make_node("MultiHeadAttention",
                              ["q", "k", "v", "qkv_bias", "kpm", "attn_bias"],
                              ["a"], domain="com.microsoft", num_heads=4))
nodes += [helper.make_node("MatMul", ["a", "wo"], ["y0"]),
          helper.make_node("Add", ["y0", "bo"], ["y"])]
m = model(nodes, [helper.make_tensor_value_info("xq", F32, [2, 6, 32]),
                  helper.make_tensor_value_info("xkv", F32, [2, 9, 32]),
                  helper.make_tensor_value_info("kpm", TensorProto.INT32,
                                                [2, 9])],
          w, [2, 6, 32], ms=True)
a = ort_mha(xq @ w["wq"], xkv @ w["wk"], xkv @ w["wv"], w["qkv_bias"], kpm,
            w["attn_bias"], 4, False, None, -10000.0)
save("ms_mha", m, {"query": xq, "key": xkv, "kpm": kpm},
     a @ w["wo"] + w["bo"])

# 5. Attention's qk_matmul_output after the softmax (mode 3): the
#    probabilities per head as a second graph output.
x = randn(1, 6, 16)
w = dict(wq=randn(16, 16, scale=0.3), wk=randn(16, 16, scale=0.3),
         wv=randn(16, 16, scale=0.3), wo=randn(16, 16, scale=0.3))
nodes = projections("qkv", "xxx", [0, 0, 0], [None] * 3)
nodes.append(helper.make_node("Attention", ["q", "k", "v"],
                              ["a", "", "", "qk"], q_num_heads=2,
                              kv_num_heads=2, qk_matmul_output_mode=3))
nodes.append(helper.make_node("MatMul", ["a", "wo"], ["y"]))
m = model(nodes, [helper.make_tensor_value_info("x", F32, [1, 6, 16])], w,
          [1, 6, 16])
m.graph.output.append(helper.make_tensor_value_info("qk", F32, [1, 2, 6, 6]))
qh, kh = heads(x @ w["wq"], 2), heads(x @ w["wk"], 2)
probs = softmax_rows(qh @ np.swapaxes(kh, -1, -2) / np.sqrt(8))
a = onnx_attention(x @ w["wq"], x @ w["wk"], x @ w["wv"], None, 2, 2, False,
                   None)
save("qk_output", m, {"query": x}, a @ w["wo"], expected_qk=probs)

# 6. A float attn_mask [Sq, 1], shorter than the keys: ONNX pads its last
#    dim with -inf (every query sees key 0 only), it does not broadcast it.
x = randn(1, 6, 16)
fmask = randn(6, 1)
w = dict(wq=randn(16, 16, scale=0.3), wk=randn(16, 16, scale=0.3),
         wv=randn(16, 16, scale=0.3), wo=randn(16, 16, scale=0.3))
nodes = projections("qkv", "xxx", [0, 0, 0], [None] * 3)
nodes.append(helper.make_node("Attention", ["q", "k", "v", "m"], ["a"],
                              q_num_heads=2, kv_num_heads=2))
nodes.append(helper.make_node("MatMul", ["a", "wo"], ["y"]))
m = model(nodes, [helper.make_tensor_value_info("x", F32, [1, 6, 16]),
                  helper.make_tensor_value_info("m", F32, [6, 1])],
          w, [1, 6, 16])
a = onnx_attention(x @ w["wq"], x @ w["wk"], x @ w["wv"], fmask, 2, 2, False,
                   None)
save("short_float_mask", m, {"query": x, "m": fmask}, a @ w["wo"])

# 7. A boolean attn_mask [Sq, Sk - 2] with a dynamic query length: the last
#    two keys padded with false (not attended).
xq, xkv = randn(2, 5, 16), randn(2, 9, 16)
bmask = rng.random((5, 7)) < 0.6
bmask[:, 0] = True
w = dict(wq=randn(16, 16, scale=0.3), wk=randn(16, 8, scale=0.3),
         wv=randn(16, 8, scale=0.3), wo=randn(16, 16, scale=0.3))
nodes = projections("qkv", ["xq", "xkv", "xkv"], [0, 0, 0], [None] * 3)
nodes.append(helper.make_node("Attention", ["q", "k", "v", "m"], ["a"],
                              q_num_heads=4, kv_num_heads=2))
nodes.append(helper.make_node("MatMul", ["a", "wo"], ["y"]))
m = model(nodes, [helper.make_tensor_value_info("xq", F32, [2, "sq", 16]),
                  helper.make_tensor_value_info("xkv", F32, [2, 9, 16]),
                  helper.make_tensor_value_info("m", TensorProto.BOOL,
                                                ["sq", 7])],
          w, [2, "sq", 16])
a = onnx_attention(xq @ w["wq"], xkv @ w["wk"], xkv @ w["wv"], bmask, 4, 2,
                   False, None)
save("short_bool_mask", m, {"query": xq, "key": xkv, "m": bmask},
     a @ w["wo"])

# 8. Opset 25 self-attention, GQA, is_causal with a sliding window
#    (left_window_size 3: the query and three keys before it) and a soft
#    cap, Sq = Sk static (ONNX's window is top-left here, as mha's
#    bottom-right one). right_window_size 2 is subsumed by is_causal: the
#    importer drops it. Large weights: the scores go well beyond the cap.
x = randn(2, 12, 32)
w = dict(wq=randn(32, 32, scale=0.6), wk=randn(32, 16, scale=0.6),
         wv=randn(32, 16, scale=0.3), wo=randn(32, 24, scale=0.3),
         bq=randn(32), bk=randn(16), bv=randn(16), bo=randn(24))
nodes = projections("qkv", "xxx", [0, 0, 0], [1, 1, 1])
nodes.append(helper.make_node("Attention", ["q", "k", "v"], ["a"],
                              q_num_heads=4, kv_num_heads=2, is_causal=1,
                              left_window_size=3, right_window_size=2,
                              softcap=4.0))
nodes += [helper.make_node("MatMul", ["a", "wo"], ["y0"]),
          helper.make_node("Add", ["y0", "bo"], ["y"])]
m = model(nodes, [helper.make_tensor_value_info("x", F32, [2, 12, 32])], w,
          [2, 12, 24], opset=25)
qkv = [ref(x, n) for n in "qkv"]
y = lambda **kw: onnx_attention(*qkv, None, 4, 2, **{
    **dict(causal=True, scale=None, softcap=4.0, left=3, right=2),
    **kw}) @ w["wo"] + w["bo"]
distinct("gqa_causal_window_softcap", y(), no_softcap=y(softcap=0.0),
         no_window=y(left=-1), no_causal=y(causal=False))
save("gqa_causal_window_softcap", m, {"query": x}, y())

# 9. Opset 24 decode-style cross-attention: nonpad_kv_seqlen (an int64 [B]
#    graph input: the key lengths) with is_causal, 3 queries and a
#    10-key cache, a soft cap and a dynamic batch. The causal diagonal is
#    nonpad[b] - Sq per batch (bottom-right to each batch's valid keys):
#    batch 0 sees its 10 keys (query i keys 0..7+i), batch 1 its first 4
#    (keys 0..1+i), batch 2 its first 2, where query 0 sees no key (a zero
#    head output, as the spec says) and query 1 key 0 only. The keys past
#    the lengths are large: were they seen, the output would show it.
xq, xkv = randn(3, 3, 32), randn(3, 10, 32)
nonpad = np.array([10, 4, 2], np.int64)
for b_, n_ in enumerate(nonpad):
    xkv[b_, n_:] *= 20
w = dict(wq=randn(32, 32, scale=0.5), wk=randn(32, 32, scale=0.5),
         wv=randn(32, 32, scale=0.2), wo=randn(32, 16, scale=0.2))
nodes = projections("qkv", ["xq", "xkv", "xkv"], [0, 0, 0], [None] * 3)
nodes.append(helper.make_node("Attention",
                              ["q", "k", "v", "", "", "", "n"], ["a"],
                              q_num_heads=4, kv_num_heads=4, is_causal=1,
                              softcap=3.0))
nodes.append(helper.make_node("MatMul", ["a", "wo"], ["y"]))
m = model(nodes, [helper.make_tensor_value_info("xq", F32, ["b", 3, 32]),
                  helper.make_tensor_value_info("xkv", F32, ["b", 10, 32]),
                  helper.make_tensor_value_info("n", TensorProto.INT64,
                                                ["b"])],
          w, ["b", 3, 16], opset=24)
qkv = [xq @ w["wq"], xkv @ w["wk"], xkv @ w["wv"]]
y = lambda **kw: onnx_attention(*qkv, **{
    **dict(mask=None, qh=4, kvh=4, causal=True, scale=None, softcap=3.0,
           nonpad=nonpad), **kw}) @ w["wo"]
# onnx 1.22's reading: the lengths, but the causal diagonal top-left.
valid = np.arange(10)[None, None, None, :] < nonpad[:, None, None, None]
distinct("nonpad_causal", y(), no_softcap=y(softcap=0.0),
         no_lengths=y(nonpad=np.full(3, 10)), no_causal=y(causal=False),
         top_left=y(nonpad=None, mask=np.broadcast_to(valid, (3, 1, 3, 10))))
save("nonpad_causal", m, {"query": xq, "key": xkv, "n": nonpad}, y())

# 10. Opset 25 bidirectional window without causal: left_window_size 1,
#     right_window_size 2 (query i sees keys i-1..i+2), Sq = Sk static,
#     with a boolean attn_mask beside it.
x = randn(2, 9, 16)
bmask = rng.random((9, 9)) < 0.8
np.fill_diagonal(bmask, True)
w = dict(wq=randn(16, 16, scale=0.5), wk=randn(16, 16, scale=0.5),
         wv=randn(16, 16, scale=0.3), wo=randn(16, 16, scale=0.3))
nodes = projections("qkv", "xxx", [0, 0, 0], [None] * 3)
nodes.append(helper.make_node("Attention", ["q", "k", "v", "m"], ["a"],
                              q_num_heads=2, kv_num_heads=2,
                              left_window_size=1, right_window_size=2))
nodes.append(helper.make_node("MatMul", ["a", "wo"], ["y"]))
m = model(nodes, [helper.make_tensor_value_info("x", F32, [2, 9, 16]),
                  helper.make_tensor_value_info("m", TensorProto.BOOL,
                                                [9, 9])],
          w, [2, 9, 16], opset=25)
qkv = [x @ w["wq"], x @ w["wk"], x @ w["wv"]]
y = lambda **kw: onnx_attention(*qkv, bmask, 2, 2, **{
    **dict(causal=False, scale=None, left=1, right=2), **kw}) @ w["wo"]
distinct("window_bidirectional", y(), no_left=y(left=-1),
         no_right=y(right=-1), swapped=y(left=2, right=1))
save("window_bidirectional", m, {"query": x, "m": bmask}, y())

# 11. Opset 25 window with nonpad_kv_seqlen and no causal, Sq = 4 < Sk = 8:
#     the window's diagonal is nonpad[b] - Sq too (left 2, right 1), the
#     lengths a constant initializer (a constant argument), a float mask.
xq, xkv = randn(2, 4, 16), randn(2, 8, 16)
nonpad = np.array([8, 5], np.int64)
fmask = randn(4, 8)
w = dict(wq=randn(16, 16, scale=0.5), wk=randn(16, 16, scale=0.5),
         wv=randn(16, 16, scale=0.3), wo=randn(16, 16, scale=0.3),
         n=nonpad)
nodes = projections("qkv", ["xq", "xkv", "xkv"], [0, 0, 0], [None] * 3)
nodes.append(helper.make_node("Attention",
                              ["q", "k", "v", "m", "", "", "n"], ["a"],
                              q_num_heads=2, kv_num_heads=2,
                              left_window_size=2, right_window_size=1))
nodes.append(helper.make_node("MatMul", ["a", "wo"], ["y"]))
m = model(nodes, [helper.make_tensor_value_info("xq", F32, [2, 4, 16]),
                  helper.make_tensor_value_info("xkv", F32, [2, 8, 16]),
                  helper.make_tensor_value_info("m", F32, [4, 8])],
          w, [2, 4, 16], opset=25)
qkv = [xq @ w["wq"], xkv @ w["wk"], xkv @ w["wv"]]
y = lambda **kw: onnx_attention(*qkv, fmask, 2, 2, **{
    **dict(causal=False, scale=None, left=2, right=1, nonpad=nonpad),
    **kw}) @ w["wo"]
distinct("nonpad_window", y(), top_left=y(nonpad=None),
         no_window=y(left=-1, right=-1), no_lengths=y(nonpad=np.full(2, 8)))
save("nonpad_window", m, {"query": xq, "key": xkv, "m": fmask}, y())


def onnx_attention_past(q, k, v, pk, pv, mask, qh, kvh, causal):
    """ONNX Attention on 3-d q, k, v with past_key and past_value
    [B, kvh, P, d]: the keys and values are the past's, then the step's
    (present = concat(past, new)), and is_causal's diagonal is offset by
    the past length P (query i attends key j <= i + P). Returns the output
    [B, Sq, qh * dv] and the present keys and values."""
    pres_k = np.concatenate([pk, heads(k, kvh)], axis=2)
    pres_v = np.concatenate([pv, heads(v, kvh)], axis=2)
    q = heads(q, qh)
    kr = np.repeat(pres_k, qh // kvh, axis=1)
    vr = np.repeat(pres_v, qh // kvh, axis=1)
    s = q @ kr.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1])
    if mask is not None:
        s = s + mask
    if causal:
        sq, sk, p = s.shape[-2], s.shape[-1], pk.shape[2]
        allowed = np.arange(sk)[None, :] <= np.arange(sq)[:, None] + p
        s = s + np.where(allowed, 0, -np.inf)
    y = softmax_rows(s) @ vr
    return y.transpose(0, 2, 1, 3).reshape(q.shape[0], q.shape[2], -1), \
        pres_k, pres_v


def save_outputs(name, m, inputs, expected):
    """`expected`: the graph outputs' values in the graph's order, saved as
    expected0.npy, expected1.npy, ..."""
    onnx.save(m, f"{out}/{name}.onnx")
    import_model(m, f"{out}/{name}", inputs=inputs)
    for i, e in enumerate(expected):
        np.save(f"{out}/{name}/expected{i}.npy", e.astype(np.float32))
    if HAS_REFERENCE:
        feeds = dict(zip([i.name for i in m.graph.input], inputs.values()))
        got = ReferenceEvaluator(m).run(None, feeds)
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5,
                                       err_msg=f"{name} vs onnx.reference")
        checked.append(name)


def past_model(nodes, inputs, inits, outputs, opset=23):
    graph = helper.make_graph(
        nodes, "attention", inputs,
        [helper.make_tensor_value_info(n, F32, shape) for n, shape in outputs],
        [numpy_helper.from_array(a, n) for n, a in inits.items()])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("",
                                                                    opset)])
    m.ir_version = 10
    return m


# 12. A decoding step of a layer with a KV cache (past_key, past_value in,
#     present_key, present_value out, listed first and last): GQA (4 query
#     heads, 2 key/value heads), biases, is_causal (its diagonal offset by
#     the past length), a float attn_mask [Sq, P + Sk] over the past and
#     the step's keys; 3 new tokens after 5.
x = randn(2, 3, 32)
pk, pv = randn(2, 2, 5, 8), randn(2, 2, 5, 8)
fmask = randn(3, 8)
fmask[1, 2] = -np.inf
w = dict(wq=randn(32, 32, scale=0.2), wk=randn(32, 16, scale=0.2),
         wv=randn(32, 16, scale=0.2), wo=randn(32, 24, scale=0.2),
         bq=randn(32), bk=randn(16), bv=randn(16), bo=randn(24))
nodes = projections("qkv", "xxx", [0, 0, 0], [1, 1, 1])
nodes.append(helper.make_node("Attention", ["q", "k", "v", "m", "pk", "pv"],
                              ["a", "present_k", "present_v"], q_num_heads=4,
                              kv_num_heads=2, is_causal=1))
nodes += [helper.make_node("MatMul", ["a", "wo"], ["y0"]),
          helper.make_node("Add", ["y0", "bo"], ["y"])]
m = past_model(nodes, [helper.make_tensor_value_info("x", F32, [2, 3, 32]),
                       helper.make_tensor_value_info("m", F32, [3, 8]),
                       helper.make_tensor_value_info("pk", F32, [2, 2, 5, 8]),
                       helper.make_tensor_value_info("pv", F32, [2, 2, 5, 8])],
               w, [("present_k", [2, 2, 8, 8]), ("y", [2, 3, 24]),
                   ("present_v", [2, 2, 8, 8])])
qkv = [ref(x, "q"), ref(x, "k"), ref(x, "v")]
run = lambda p_k=pk, p_v=pv, causal=True, mask=fmask: onnx_attention_past(
    *qkv, p_k, p_v, mask, 4, 2, causal)
y_of = lambda r: r[0] @ w["wo"] + w["bo"]
got = run()
distinct("past_gqa_causal_mask", y_of(got), no_causal=y_of(run(causal=False)),
         no_mask=y_of(run(mask=None)),
         zero_past=y_of(run(p_k=np.zeros_like(pk), p_v=np.zeros_like(pv))))
save_outputs("past_gqa_causal_mask", m,
             {"query": x, "m": fmask, "pk": pk, "pv": pv},
             [got[1], y_of(got), got[2]])

# 13. The same with dynamic batch, step and past lengths (one symbol for
#     the step's queries and keys: self-attention, where ONNX's causal
#     diagonal is mha's), no mask, no biases: 2 new tokens after 6.
x = randn(1, 2, 16)
pk, pv = randn(1, 2, 6, 8), randn(1, 2, 6, 8)
w = dict(wq=randn(16, 16, scale=0.4), wk=randn(16, 16, scale=0.4),
         wv=randn(16, 16, scale=0.4), wo=randn(16, 16, scale=0.4))
nodes = projections("qkv", "xxx", [0, 0, 0], [None] * 3)
nodes.append(helper.make_node("Attention", ["q", "k", "v", "", "pk", "pv"],
                              ["a", "present_k", "present_v"], q_num_heads=2,
                              kv_num_heads=2, is_causal=1))
nodes.append(helper.make_node("MatMul", ["a", "wo"], ["y"]))
m = past_model(nodes, [
    helper.make_tensor_value_info("x", F32, ["b", "s", 16]),
    helper.make_tensor_value_info("pk", F32, ["b", 2, "p", 8]),
    helper.make_tensor_value_info("pv", F32, ["b", 2, "p", 8])],
    w, [("y", ["b", "s", 16]), ("present_k", ["b", 2, None, 8]),
        ("present_v", ["b", 2, None, 8])])
qkv = [x @ w["wq"], x @ w["wk"], x @ w["wv"]]
run = lambda causal=True: onnx_attention_past(*qkv, pk, pv, None, 2, 2,
                                              causal)
got = run()
distinct("past_dynamic", got[0] @ w["wo"],
         no_causal=run(causal=False)[0] @ w["wo"])
save_outputs("past_dynamic", m, {"query": x, "pk": pk, "pv": pv},
             [got[0] @ w["wo"], got[1], got[2]])

print(f"onnx {onnx.__version__}: " +
      (f"onnx.reference agrees on {', '.join(checked)}" if HAS_REFERENCE
       else "no Attention in onnx.reference, numpy only"))
