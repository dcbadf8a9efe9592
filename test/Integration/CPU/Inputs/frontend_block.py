"""Inputs and the numpy expected output of frontend-block.mlir.

Usage: frontend_block.py DIR  (writes q, k, v, w and expected .npy there)
"""
import math
import sys

import numpy as np

out = sys.argv[1]
rng = np.random.default_rng(7)
q = rng.standard_normal((4, 16, 8)).astype(np.float32)
k = rng.standard_normal((4, 24, 8)).astype(np.float32)
v = rng.standard_normal((4, 24, 8)).astype(np.float32)
w = (rng.standard_normal((32, 32)) / math.sqrt(32)).astype(np.float32)
s = q.astype(np.float64) @ k.transpose(0, 2, 1) * 0.353553385
p = np.exp(s - s.max(-1, keepdims=True))
p /= p.sum(-1, keepdims=True)
merged = (p @ v).transpose(1, 0, 2).reshape(16, 32)
y = merged @ w.T.astype(np.float64)
erf = np.vectorize(math.erf)
g = 0.5 * y * (1 + erf(y / math.sqrt(2)))
for name, a in dict(q=q, k=k, v=v, w=w,
                    expected=np.concatenate([g, merged], axis=1)).items():
    np.save(f"{out}/{name}.npy", a.astype(np.float32))
