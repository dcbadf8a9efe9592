"""Inputs and numpy expected outputs of raise-attention.mlir, one set per
function: DIR/NAME.argI.npy and DIR/NAME.expected.npy.

Usage: raise_attention.py DIR
"""
import sys

import numpy as np

out = sys.argv[1]
rng = np.random.default_rng(11)


def randn(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def attention(q, k, v, scale, visible=None, bias=None):
    """softmax(q kᵀ scale + bias, hidden keys dropped) v in float64."""
    s = q.astype(np.float64) @ np.swapaxes(k.astype(np.float64), -1, -2)
    s = s * scale
    if bias is not None:
        s = s + bias
    if visible is not None:
        s = np.where(visible, s, -np.inf)
    s = s - s.max(-1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(-1, keepdims=True)
    return p @ v.astype(np.float64)


def causal(sq, sk, offset):
    i = np.arange(sq)[:, None]
    j = np.arange(sk)[None, :]
    return j <= i + offset


def save(name, args, expected):
    for i, a in enumerate(args):
        np.save(f"{out}/{name}.arg{i}.npy", a)
    np.save(f"{out}/{name}.expected.npy", expected.astype(np.float32))


q, k, v = randn(2, 4, 16, 8), randn(2, 4, 24, 8), randn(2, 4, 24, 12)
save("generic4d", [q, k, v], attention(q, k, v, 1 / 2.828427))

q, k, v = randn(2, 4, 16, 8), randn(2, 4, 24, 8), randn(2, 4, 24, 8)
pad = np.zeros((2, 1, 1, 24), np.float32)
pad[0, ..., 20:] = -np.inf  # the first sequence has 20 keys
pad[1, ..., 3] = -1.0e4
save("torch_style", [q, k, v, pad], attention(q, k, v, 0.353553385, bias=pad))

q, k, v = randn(12, 16), randn(20, 16), randn(20, 16)
m = rng.random((12, 20)) < 0.7
m[:, 0] = True  # no row fully masked
save("matmul2d_bool", [q, k, v, m], attention(q, k, v, 0.25, visible=m))

q, k, v = randn(6, 20, 8), randn(6, 20, 8), randn(6, 20, 8)
save("causal_index", [q, k, v],
     attention(q, k, v, 0.353553385, visible=causal(20, 20, 0)))

q, k, v = randn(6, 8, 8), randn(6, 20, 8), randn(6, 20, 8)
save("causal_top_left", [q, k, v],
     attention(q, k, v, 0.353553385, visible=causal(8, 20, 0)))

q, k, v = randn(3, 10, 8), randn(3, 13, 8), randn(3, 13, 8)
hidden = rng.random((3, 10, 13)) < 0.3
hidden[..., 5] = False  # every query sees key 5
save("masked_fill_dynamic", [q, k, v, hidden],
     attention(q, k, v, 0.353553385, visible=~hidden))

q, k, v = randn(1, 2, 6, 8), randn(1, 2, 6, 8), randn(1, 2, 6, 8)
save("constant_triangle", [q, k, v],
     attention(q, k, v, 1.0, visible=causal(6, 6, 0)))

# The layer: x [2, 16, 32], 4 query heads, 2 key/value heads of 8, causal,
# weights [out, in] as PyTorch keeps them, output 24 features.
x = randn(2, 16, 32)
wq, bq = randn(32, 32) / 6, randn(32)
wk, bk = randn(16, 32) / 6, randn(16)
wv, bv = randn(16, 32) / 6, randn(16)
wo, bo = randn(24, 32) / 6, randn(24)
x64 = x.astype(np.float64)
heads = lambda t, h: t.reshape(2, 16, h, 8).transpose(0, 2, 1, 3)
q4 = heads(x64 @ wq.T + bq, 4)
k4 = np.repeat(heads(x64 @ wk.T + bk, 2), 2, axis=1)
v4 = np.repeat(heads(x64 @ wv.T + bv, 2), 2, axis=1)
o4 = attention(q4, k4, v4, 0.353553385, visible=causal(16, 16, 0))
merged = o4.transpose(0, 2, 1, 3).reshape(2, 16, 32)
save("layer", [x, wq, bq, wk, bk, wv, bv, wo, bo], merged @ wo.T + bo)

q, k, v = randn(2, 4, 16, 8), randn(2, 4, 24, 8), randn(2, 4, 24, 8)
bias = np.where(rng.random((1, 16, 24)) < 0.2, -np.inf, 0.5 * randn(1, 16, 24))
bias[..., 0] = 0.0  # no row fully masked
bias = bias.astype(np.float32)
save("tosa_sdpa", [q, k, v, bias],
     attention(q, k, v, 0.353553385, bias=bias[:, None]))

q, k, v = randn(2, 2, 10, 8), randn(2, 2, 14, 8), randn(2, 2, 14, 8)
save("torch_fx_split_scale", [q, k, v],
     attention(q, k, v, np.float64(np.float32(0.594603558)) ** 2))

q, kt, v = randn(3, 12, 8), randn(3, 8, 20), randn(3, 20, 8)
save("keys_given_transposed", [q, kt, v],
     attention(q, np.swapaxes(kt, -1, -2), v, 1 / np.float32(2.82842708),
               visible=causal(12, 20, 8)))

q, k, v = randn(2, 4, 8), randn(2, 6, 8), randn(2, 6, 8)
save("named_ops", [q, k, v], attention(q, k, v, 0.353553385))
