#!/usr/bin/env python3
"""Cross-checks the numpy reference (mha_reference.py) against PyTorch's
torch.nn.MultiheadAttention on the configurations PyTorch supports, through
the mapping of docs/Semantics.md: weights transposed ([out, in] -> [in, out]),
boolean masks negated (PyTorch: True = forbidden), key_padding_mask as a
rank-4 [B, 1, 1, Sk] mask, causal only with Sq == Sk (PyTorch's is top-left).

Prints one line per configuration and exits 1 if any differs.
"""

import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mha_reference  # noqa: E402

CONFIGS = [
    dict(name="self", b=2, sq=5, sk=5, e=16, kdim=16, vdim=16, h=2, bias=True),
    dict(name="no-bias", b=1, sq=4, sk=4, e=12, kdim=12, vdim=12, h=3, bias=False),
    dict(name="cross-kdim-vdim", b=2, sq=3, sk=7, e=8, kdim=5, vdim=6, h=2, bias=True),
    dict(name="bool-attn-mask", b=2, sq=5, sk=6, e=8, kdim=8, vdim=8, h=2, bias=True,
         mask="bool"),
    dict(name="float-attn-mask", b=2, sq=5, sk=6, e=8, kdim=8, vdim=8, h=2, bias=True,
         mask="float"),
    dict(name="key-padding", b=3, sq=4, sk=5, e=8, kdim=8, vdim=8, h=4, bias=True,
         padding=True),
    dict(name="causal", b=2, sq=6, sk=6, e=12, kdim=12, vdim=12, h=3, bias=True,
         causal=True),
]


def check(cfg, rng):
    b, sq, sk, e, h = cfg["b"], cfg["sq"], cfg["sk"], cfg["e"], cfg["h"]
    kdim, vdim = cfg["kdim"], cfg["vdim"]
    mha = torch.nn.MultiheadAttention(e, h, bias=cfg["bias"], kdim=kdim,
                                      vdim=vdim, batch_first=True).double()
    with torch.no_grad():
        for p in mha.parameters():
            p.copy_(torch.from_numpy(rng.uniform(-0.5, 0.5, p.shape)))
    query = rng.uniform(-1, 1, (b, sq, e))
    key = rng.uniform(-1, 1, (b, sk, kdim))
    value = rng.uniform(-1, 1, (b, sk, vdim))

    if mha._qkv_same_embed_dim:
        w_q, w_k, w_v = mha.in_proj_weight.detach().numpy().reshape(3, e, e)
    else:
        w_q = mha.q_proj_weight.detach().numpy()
        w_k = mha.k_proj_weight.detach().numpy()
        w_v = mha.v_proj_weight.detach().numpy()
    w_o = mha.out_proj.weight.detach().numpy()
    biases = None
    if cfg["bias"]:
        b_q, b_k, b_v = mha.in_proj_bias.detach().numpy().reshape(3, e)
        biases = (b_q, b_k, b_v, mha.out_proj.bias.detach().numpy())

    torch_kwargs, ours_mask = {}, None
    if cfg.get("mask") == "bool":
        allowed = rng.uniform(0, 1, (sq, sk)) < 0.7
        allowed[:, 0] = True  # PyTorch gives NaN on fully masked rows.
        torch_kwargs["attn_mask"] = torch.from_numpy(~allowed)
        ours_mask = allowed
    elif cfg.get("mask") == "float":
        additive = rng.uniform(-2, 2, (sq, sk))
        torch_kwargs["attn_mask"] = torch.from_numpy(additive)
        ours_mask = additive
    if cfg.get("padding"):
        lengths = rng.integers(1, sk + 1, b)
        padded = np.arange(sk)[None, :] >= lengths[:, None]
        torch_kwargs["key_padding_mask"] = torch.from_numpy(padded)
        ours_mask = (~padded)[:, None, None, :]
    if cfg.get("causal"):
        torch_kwargs["attn_mask"] = torch.from_numpy(
            np.triu(np.ones((sq, sk), dtype=bool), k=1))

    with torch.no_grad():
        expected, _ = mha(torch.from_numpy(query), torch.from_numpy(key),
                          torch.from_numpy(value), need_weights=False,
                          **torch_kwargs)
    ours = mha_reference.multi_head_attention(
        query, key, value, w_q.T, w_k.T, w_v.T, w_o.T, biases=biases,
        mask=ours_mask, num_heads=h, causal=bool(cfg.get("causal")))
    err = float(np.max(np.abs(ours - expected.numpy())))
    ok = err < 1e-10
    print(f"{cfg['name']}: max abs difference {err:.3e}: {'OK' if ok else 'MISMATCH'}")
    return ok


def main():
    rng = np.random.default_rng(0)
    results = [check(cfg, rng) for cfg in CONFIGS]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
