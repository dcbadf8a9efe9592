"""Writes the .npy files of runner-support.test into argv[1]: one array per
dtype RunnerSupport reads (numpy writes them), and bad files."""
import os
import sys

import numpy as np

d = sys.argv[1]
os.makedirs(d, exist_ok=True)
arrays = {
    "f4": np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5,
    "f2": np.array([1.5, -2.0, 65504.0], dtype=np.float16),
    "u2": np.arange(8, dtype=np.uint16).reshape(2, 2, 2) + 0x3F80,  # bf16 bits
    "b1": np.array([[True, False], [False, True]]),
    "i4": np.array([[-7, 0, 2147483647]], dtype=np.int32),
    "scalar": np.float32(3.25).reshape(()),
    "empty": np.zeros((3, 0), dtype=np.float32),
    "native": np.arange(4, dtype="=f4"),  # '<f4' as numpy writes it
}
for name, a in arrays.items():
    np.save(f"{d}/{name}.npy", a)
# Version 2.0 header (4-byte length).
with open(f"{d}/v2.npy", "wb") as f:
    np.lib.format.write_array(f, arrays["f4"], version=(2, 0))


def raw(name, header, data=b"", version=b"\x01\x00"):
    size = len(header).to_bytes(2 if version == b"\x01\x00" else 4, "little")
    with open(f"{d}/{name}.npy", "wb") as f:
        f.write(b"\x93NUMPY" + version + size + header.encode() + data)


np.save(f"{d}/f8.npy", np.zeros(3))
np.save(f"{d}/big_endian.npy", np.zeros(3, dtype=">f4"))
np.save(f"{d}/fortran.npy", np.asfortranarray(np.zeros((2, 3), dtype=np.float32)))
with open(f"{d}/f4.npy", "rb") as f:
    good = f.read()
with open(f"{d}/truncated.npy", "wb") as f:
    f.write(good[:-10])
with open(f"{d}/short_header.npy", "wb") as f:
    f.write(good[:40])
with open(f"{d}/magic.npy", "wb") as f:
    f.write(b"hello, this is not an array\n")
with open(f"{d}/tiny.npy", "wb") as f:
    f.write(b"\x93NUMPY\x01")
raw("huge", "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 8, 8), }\n")
raw("version", "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }\n", version=b"\x07\x00")
raw("no_shape", "{'descr': '<f4', 'fortran_order': False, }\n")
raw("bad_shape", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, x), }\n")
raw("negative", "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }\n")
