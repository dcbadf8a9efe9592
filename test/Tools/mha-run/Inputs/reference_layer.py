"""Expected output of Inputs/layer.mlir (8 heads-wide self-attention, 2 heads,
bool mask) from the numpy reference: reference_layer.py X W M OUT."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "Integration", "reference"))
import mha_reference  # noqa: E402

x, w, m = (np.load(p) for p in sys.argv[1:4])
with np.errstate(invalid="ignore"):
    y = mha_reference.multi_head_attention(x, x, x, w, w, w, w, mask=m,
                                           num_heads=2)
np.save(sys.argv[4], y.astype(np.float32))
describe = lambda b: ("all NaN" if np.isnan(y[b]).all() else
                      "all finite" if np.isfinite(y[b]).all() else "mixed")
print(f"batch 0: {describe(0)}; batch 1: {describe(1)}")
