"""Inputs and numpy expected outputs (result and probabilities) of
attention-weights.mlir: DIR/NAME.argI.npy, DIR/NAME.out0.npy, NAME.out1.npy.

Usage: attention_weights.py DIR
"""
import sys

import numpy as np

out = sys.argv[1]
rng = np.random.default_rng(17)
randn = lambda *s: rng.standard_normal(s).astype(np.float32)


def layer(q, k, v, ws, h, hkv, visible, bias=None):
    wq, wk, wv, wo = (w.astype(np.float64) for w in ws)
    bq, bk, bv, bo = bias if bias is not None else (0, 0, 0, 0)
    split = lambda t, n: t.reshape(t.shape[0], t.shape[1], n, -1) \
        .transpose(0, 2, 1, 3)
    qh = split(q @ wq + bq, h)
    kh = np.repeat(split(k @ wk + bk, hkv), h // hkv, axis=1)
    vh = np.repeat(split(v @ wv + bv, hkv), h // hkv, axis=1)
    s = qh @ kh.transpose(0, 1, 3, 2) / np.sqrt(qh.shape[-1])
    s = np.where(visible, s, -np.inf)
    m = s.max(-1, keepdims=True)
    e = np.where(np.isfinite(m), np.exp(s - np.where(np.isfinite(m), m, 0)),
                 0)
    tot = e.sum(-1, keepdims=True)
    p = np.divide(e, tot, out=np.zeros_like(e), where=tot > 0)
    o = (p @ vh).transpose(0, 2, 1, 3).reshape(q.shape[0], q.shape[1], -1)
    return o @ wo + bo, p


def save(name, args, outs):
    for i, a in enumerate(args):
        np.save(f"{out}/{name}.arg{i}.npy", a)
    for i, a in enumerate(outs):
        np.save(f"{out}/{name}.out{i}.npy", a.astype(np.float32))


x = randn(2, 12, 32)
ws = [randn(32, 32) / 5, randn(32, 16) / 5, randn(32, 16) / 5,
      randn(32, 32) / 5]
bs = [randn(32), randn(16), randn(16), randn(32)]
causal = np.tril(np.ones((12, 12), bool))
y, p = layer(x, x, x, ws, 4, 2, causal, bs)
save("per_head", [x] + ws + bs, [y, p])

q, kv = randn(2, 7, 32), randn(2, 9, 32)
w = randn(32, 32) / 5
m = rng.random((2, 7, 9)) < 0.7
m[:, 0, :] = False  # the first query sees no key
y, p = layer(q, kv, kv, [w] * 4, 4, 4, m[:, None])
save("average", [q, kv, m, w], [y, p.mean(axis=1)])
