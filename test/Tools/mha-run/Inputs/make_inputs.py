"""Writes good and bad .npy files for the mha-run error tests into argv[1]."""
import os
import sys

import numpy as np

d = sys.argv[1]
os.makedirs(d, exist_ok=True)
rng = np.random.default_rng(0)
np.save(f"{d}/x.npy", rng.uniform(-1, 1, (2, 4, 8)).astype(np.float32))
np.save(f"{d}/w.npy", rng.uniform(-1, 1, (8, 8)).astype(np.float32))
np.save(f"{d}/m.npy", rng.uniform(0, 1, (4, 4)) < 0.8)
np.save(f"{d}/x_f64.npy", rng.uniform(-1, 1, (2, 4, 8)))
np.save(f"{d}/x_rank2.npy", rng.uniform(-1, 1, (4, 8)).astype(np.float32))
np.save(f"{d}/x_dim.npy", rng.uniform(-1, 1, (2, 5, 8)).astype(np.float32))
np.save(f"{d}/x_big_endian.npy", rng.uniform(-1, 1, (2, 4, 8)).astype(">f4"))
np.save(f"{d}/x_fortran.npy", np.asfortranarray(rng.uniform(-1, 1, (2, 4, 8)).astype(np.float32)))
with open(f"{d}/x.npy", "rb") as f:
    good = f.read()
with open(f"{d}/truncated.npy", "wb") as f:
    f.write(good[: len(good) - 10])
with open(f"{d}/not_npy.npy", "wb") as f:
    f.write(b"hello, this is not an array\n")

# A header whose shape would overflow a 64-bit byte count.
header = "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 8, 8), }"
header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
with open(f"{d}/huge.npy", "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode())
# Non-finite inputs: a NaN in batch 0 and +-inf in batch 1 of x.
x = rng.uniform(-1, 1, (2, 4, 8)).astype(np.float32)
x[0, 1, 2] = np.nan
np.save(f"{d}/x_nan.npy", x)
x = rng.uniform(-1, 1, (2, 4, 8)).astype(np.float32)
x[1, 0, 0] = np.inf
x[1, 3, 5] = -np.inf
np.save(f"{d}/x_inf.npy", x)
