"""Inputs and float64 numpy results for the f32 exp approximation of
mha-approximate-exp: DIR/exp.mlir (@main: math.exp over a vector),
DIR/x.npy (a dense sweep of [-90, 90], values around the clamps, zeros,
infinities and NaN) and DIR/expected.npy (numpy's exp in float64, rounded
to f32; results below 2^-125.5 = 1.7e-38, which the approximation flushes
to 0, as 0: sweep points within 0.01 of that bound in x·log2(e) left out).

Usage: exp_values.py DIR
"""
import sys

import numpy as np

out = sys.argv[1]
special = np.array([0.0, -0.0, 1e-30, -1e-30, 0.5, -0.5, 0.34657359, -0.34657359,
                    1.0, -1.0, 10.0, -10.0, 88.72, 88.7228, 88.73, 89.0, 100.0,
                    -86.9, -87.0, -87.4, -87.6, -100.0, -1e30, 1e30,
                    np.inf, -np.inf, np.nan], dtype=np.float32)
sweep = np.linspace(-90.0, 90.0, 20000, dtype=np.float32)
rng = np.random.default_rng(5)
small = rng.uniform(-1.0, 1.0, 4000).astype(np.float32)
sweep = sweep[np.abs(sweep.astype(np.float64) / np.log(2) + 125.5) > 0.01]
x = np.concatenate([special, sweep, small])
n = len(x)

with np.errstate(over="ignore"):
    expected = np.exp(x.astype(np.float64)).astype(np.float32)
expected[(x.astype(np.float64) / np.log(2) < -125.5) & (x < 0)] = 0.0

np.save(f"{out}/x.npy", x)
np.save(f"{out}/expected.npy", expected)
with open(f"{out}/exp.mlir", "w") as f:
    f.write(f"""func.func @main(%x: tensor<{n}xf32>) -> tensor<{n}xf32> {{
  %e = tensor.empty() : tensor<{n}xf32>
  %y = linalg.generic {{indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                       iterator_types = ["parallel"]}}
      ins(%x : tensor<{n}xf32>) outs(%e : tensor<{n}xf32>) {{
  ^bb0(%a: f32, %b: f32):
    %r = math.exp %a : f32
    linalg.yield %r : f32
  }} -> tensor<{n}xf32>
  return %y : tensor<{n}xf32>
}}
""")
