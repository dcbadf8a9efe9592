"""Builds torch.nn.MultiheadAttention modules, runs PyTorch's own forward and
imports each with mha_importers.torch_mha into DIR/NAME/ (main.mlir,
main.rsp with the inputs and weights, expected.npy from PyTorch).

Usage: torch_import.py DIR
"""
import sys

import numpy as np
import torch

from mha_importers.torch_mha import import_module

out = sys.argv[1]
torch.manual_seed(3)


def case(name, mha, q, k, v, self_attention=False, kpm=None, am=None,
         static=True, need_weights=False, average=True):
    mha.eval()
    with torch.no_grad():
        expected, weights = mha(q, k, v, key_padding_mask=kpm, attn_mask=am,
                                need_weights=need_weights,
                                average_attn_weights=average)
    bf = mha.batch_first
    b = q.shape[0 if bf else 1]
    sq, sk = q.shape[1 if bf else 0], k.shape[1 if bf else 0]
    inputs = {"query": q}
    if not self_attention:
        inputs.update(key=k, value=v)
    spec = lambda m: None if m is None else (
        "bool" if m.dtype == torch.bool else "float",
        tuple(m.shape) if static else tuple(None for _ in m.shape))
    if kpm is not None:
        inputs["key_padding_mask"] = kpm
    if am is not None:
        inputs["attn_mask"] = am
    import_module(mha, f"{out}/{name}", batch=b if static else None,
                  q_len=sq if static else None,
                  kv_len=sk if static else None,
                  self_attention=self_attention, key_padding_mask=spec(kpm),
                  attn_mask=spec(am), need_weights=need_weights,
                  average_attn_weights=average, inputs=inputs)
    np.save(f"{out}/{name}/expected.npy", expected.numpy())
    if need_weights:
        np.save(f"{out}/{name}/expected_weights.npy", weights.numpy())


# Self-attention, batch first, biases.
m = torch.nn.MultiheadAttention(32, 4, batch_first=True)
x = torch.randn(2, 16, 32)
case("self", m, x, x, x, self_attention=True)

# Cross-attention in PyTorch's default [S, B, E] layout, kdim != vdim != E,
# a boolean key padding mask (true: padding).
m = torch.nn.MultiheadAttention(32, 4, kdim=24, vdim=20)
q, k, v = torch.randn(8, 3, 32), torch.randn(12, 3, 24), torch.randn(12, 3, 20)
kpm = torch.zeros(3, 12, dtype=torch.bool)
kpm[0, 9:] = True
kpm[2, :4] = True
case("cross_padding", m, q, k, v, kpm=kpm)

# No biases, a float attention mask [Sq, Sk] with a boolean padding mask.
m = torch.nn.MultiheadAttention(32, 2, bias=False, batch_first=True)
q, k = torch.randn(2, 10, 32), torch.randn(2, 14, 32)
am = torch.randn(10, 14)
am[:, 5] = float("-inf")
kpm = torch.zeros(2, 14, dtype=torch.bool)
kpm[1, 12:] = True
case("float_mask", m, q, k, k, am=am, kpm=kpm)

# A boolean attention mask per head, [B*H, Sq, Sk] (true: not attended).
m = torch.nn.MultiheadAttention(16, 4, batch_first=True)
q = torch.randn(2, 6, 16)
am = torch.rand(8, 6, 6) < 0.3
am[..., 0] = False  # every query sees key 0
case("head_mask", m, q, q, q, self_attention=True, am=am)

# Dynamic sizes: the imported function takes any batch and lengths.
m = torch.nn.MultiheadAttention(32, 4, batch_first=True)
q, k = torch.randn(3, 7, 32), torch.randn(3, 9, 32)
case("dynamic", m, q, k, k, static=False)

# need_weights: averaged over the heads (PyTorch's default) in [S, B, E]
# with a padding mask, and per head.
m = torch.nn.MultiheadAttention(32, 4)
q, k = torch.randn(6, 2, 32), torch.randn(9, 2, 32)
kpm = torch.zeros(2, 9, dtype=torch.bool)
kpm[0, 7:] = True
case("weights_average", m, q, k, k, kpm=kpm, need_weights=True)
m = torch.nn.MultiheadAttention(16, 2, batch_first=True)
x = torch.randn(2, 5, 16)
case("weights_per_head", m, x, x, x, self_attention=True, need_weights=True,
     average=False)

# A state dict: the self-attention of a TransformerEncoderLayer, saved with
# torch.save and imported by the command line (torch.test runs it).
enc = torch.nn.TransformerEncoderLayer(32, 4, dim_feedforward=64,
                                       batch_first=True).eval()
torch.save(enc.state_dict(), f"{out}/encoder.pt")
x = torch.randn(2, 11, 32)
with torch.no_grad():
    expected, _ = enc.self_attn(x, x, x, need_weights=False)
np.save(f"{out}/encoder_x.npy", x.numpy())
np.save(f"{out}/encoder_expected.npy", expected.numpy())
