"""Writes the torch.export fixtures of test/Importers/torch-export.test:
per case DIR/NAME.pt2 (torch.export.save, recompressed), DIR/NAME.INPUT.npy
for each of the program's inputs and DIR/NAME.expected.npy, PyTorch's own
forward on them. Needs PyTorch 2 (the bench's environment):

    bench/work/venv/bin/python test/Importers/Inputs/torch_export_fixtures.py \\
        test/Importers/Inputs/torch_export

The cases to be refused have no inputs or expected output.
"""
import json
import os
import sys
import zipfile

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.export import Dim

out = None


def save(name, module, args, dynamic_shapes=None, run=True):
    module.eval()
    ep = torch.export.export(module, args, dynamic_shapes=dynamic_shapes)
    path = os.path.join(out, f"{name}.pt2")
    torch.export.save(ep, path)
    # Recompressed, without the sample inputs (a pickle the importer does
    # not read) and the nodes' stack traces (this script's line numbers,
    # which would change every fixture at each edit): the graph and
    # weights as torch.export wrote them.
    with zipfile.ZipFile(path) as z:
        items = []
        for i in z.infolist():
            if i.filename.endswith("sample_inputs/model.pt"):
                continue
            data = z.read(i)
            if i.filename.endswith("models/model.json"):
                model = json.loads(data)
                for n in model["graph_module"]["graph"]["nodes"]:
                    n.get("metadata", {}).pop("stack_trace", None)
                data = json.dumps(model).encode()
            items.append((i, data))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for info, data in items:
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    if not run:
        return
    names = [s.arg.name for s in ep.graph_signature.input_specs
             if s.kind.name == "USER_INPUT"]
    for n, a in zip(names, args):
        np.save(os.path.join(out, f"{name}.{n}.npy"), a.numpy())
    with torch.no_grad():
        y = module(*args)
    if isinstance(y, tuple):  # nn.MultiheadAttention's (output, weights)
        y, w = y
        np.save(os.path.join(out, f"{name}.expected_weights.npy"), w.numpy())
    np.save(os.path.join(out, f"{name}.expected.npy"), y.numpy())


def rope_tables(positions, dim, base=10000.0):
    inv = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))
    freqs = torch.outer(torch.arange(positions).float(), inv)
    return freqs


class Llama(nn.Module):
    """q/k/v projections without biases, rotary embeddings (half-rotated,
    tables as buffers cat'ed as Llama's), GQA by enable_gqa, causal SDPA,
    output projection."""

    def __init__(self, e=32, h=4, hkv=2, max_pos=16, gqa_by_repeat=False):
        super().__init__()
        self.h, self.hkv, self.d = h, hkv, e // h
        self.q = nn.Linear(e, h * self.d, bias=False)
        self.k = nn.Linear(e, hkv * self.d, bias=False)
        self.v = nn.Linear(e, hkv * self.d, bias=False)
        self.o = nn.Linear(h * self.d, e, bias=False)
        emb = torch.cat([rope_tables(max_pos, self.d)] * 2, dim=-1)
        self.register_buffer("cos", emb.cos(), persistent=False)
        self.register_buffer("sin", emb.sin(), persistent=False)
        self.gqa_by_repeat = gqa_by_repeat

    @staticmethod
    def rotate_half(x):
        x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
        return torch.cat((-x2, x1), dim=-1)

    def forward(self, x):
        b, s, _ = x.shape
        q = self.q(x).view(b, s, self.h, self.d).transpose(1, 2)
        k = self.k(x).view(b, s, self.hkv, self.d).transpose(1, 2)
        v = self.v(x).view(b, s, self.hkv, self.d).transpose(1, 2)
        cos, sin = self.cos[:s], self.sin[:s]
        q = q * cos + self.rotate_half(q) * sin
        k = k * cos + self.rotate_half(k) * sin
        if self.gqa_by_repeat:
            n = self.h // self.hkv
            k = k[:, :, None].expand(b, self.hkv, n, s, self.d).reshape(
                b, self.h, s, self.d)
            v = v.repeat_interleave(n, dim=1)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                               enable_gqa=True)
        return self.o(y.transpose(1, 2).reshape(b, s, -1))


class GPTJ(nn.Module):
    """Interleaved rotary on the first R channels of each head (partial),
    biases, an explicit scale, no causal mask, a boolean attn_mask input."""

    def __init__(self, e=32, h=2, rot=8, max_pos=8):
        super().__init__()
        self.h, self.d, self.rot = h, e // h, rot
        self.qkv = nn.Linear(e, 3 * e)
        self.o = nn.Linear(e, e)
        f = rope_tables(max_pos, rot)
        self.register_buffer("cos", f.cos().repeat_interleave(2, dim=-1))
        self.register_buffer("sin", f.sin().repeat_interleave(2, dim=-1))

    def rotate(self, x, s):
        r, rest = x[..., : self.rot], x[..., self.rot:]
        x1, x2 = r[..., 0::2], r[..., 1::2]
        rotated = torch.stack((-x2, x1), dim=-1).flatten(-2)
        r = r * self.cos[:s] + rotated * self.sin[:s]
        return torch.cat((r, rest), dim=-1)

    def forward(self, x, mask):
        b, s, e = x.shape
        q, k, v = self.qkv(x).split(e, dim=-1)
        q, k, v = (t.view(b, s, self.h, self.d).transpose(1, 2)
                   for t in (q, k, v))
        q, k = self.rotate(q, s), self.rotate(k, s)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                           scale=0.3)
        return self.o(y.transpose(1, 2).reshape(b, s, e))


class MatMulBlock(nn.Module):
    """Weights as bare parameters applied with `@` (aten.matmul), causal."""

    def __init__(self):
        super().__init__()
        self.w = nn.ParameterList([nn.Parameter(torch.randn(32, 32) / 6)
                                   for _ in range(4)])

    def forward(self, x):
        b, s, _ = x.shape
        heads = lambda t: t.view(b, s, 4, 8).transpose(1, 2)
        y = F.scaled_dot_product_attention(heads(x @ self.w[0]),
                                           heads(x @ self.w[1]),
                                           heads(x @ self.w[2]),
                                           is_causal=True)
        return y.transpose(1, 2).reshape(b, s, 32) @ self.w[3]


class MHA(nn.Module):
    """nn.MultiheadAttention as a module calls it, without weights."""

    def __init__(self, *args, **kwargs):
        super().__init__()
        self.m = nn.MultiheadAttention(*args, **kwargs)

    def forward(self, q, k, v):
        return self.m(q, k, v, need_weights=False)[0]


class MHAPadding(MHA):
    """key_padding_mask: nn.MultiheadAttention fills a float mask from it
    (masked_fill of zeros with -inf) and views it to [B, H, 1, Sk]."""

    def forward(self, x, key_padding_mask):
        return self.m(x, x, x, key_padding_mask=key_padding_mask,
                      need_weights=False)[0]


class MHASelf(MHA):
    def forward(self, x):
        return self.m(x, x, x, need_weights=False)[0]


class SDPA(nn.Module):
    def __init__(self, **kw):
        super().__init__()
        self.kw = kw

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, **self.kw)


class Residual(nn.Module):
    def __init__(self):
        super().__init__()
        self.m = nn.MultiheadAttention(16, 2, batch_first=True)

    def forward(self, x):
        return x + self.m(x, x, x, need_weights=False)[0]


class WithWeights(nn.Module):
    """nn.MultiheadAttention called as it is by default (need_weights=True:
    the attention written out as bmm, softmax, bmm), returning both."""

    def __init__(self, average=True, **kwargs):
        super().__init__()
        self.m = nn.MultiheadAttention(32, 4, **kwargs)
        self.average = average

    def forward(self, q, k, v):
        return self.m(q, k, v, average_attn_weights=self.average)


class WithWeightsMask(nn.Module):
    def __init__(self):
        super().__init__()
        self.m = nn.MultiheadAttention(16, 2, batch_first=True)

    def forward(self, x, mask):
        return self.m(x, x, x, attn_mask=mask)[0]


class Norm(nn.Module):
    def __init__(self):
        super().__init__()
        self.n = nn.LayerNorm(16)
        self.m = nn.MultiheadAttention(16, 2, batch_first=True)

    def forward(self, x):
        y = self.n(x)
        return self.m(y, y, y, need_weights=False)[0]


class Block(nn.Module):
    """A pre-norm decoder block: what the torch.compile backend sees. Its
    attention region (--attention-only) reads the norm's output and
    returns the attention module's."""

    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(32)
        self.attn = Llama()
        self.mlp = nn.Sequential(nn.Linear(32, 64), nn.GELU(),
                                 nn.Linear(64, 32))

    def forward(self, x):
        h = x + self.attn(self.norm(x))
        return h + self.mlp(h)


def main():
    global out
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(29)
    # Core SDPA on inputs, causal, GQA, a scale.
    q, k, v = torch.randn(2, 4, 8, 16), torch.randn(2, 2, 8, 16), \
        torch.randn(2, 2, 8, 8)
    save("sdpa_gqa_causal", SDPA(is_causal=True, enable_gqa=True, scale=0.2),
         (q, k, v))
    # Llama-style block, GQA by enable_gqa; and by repeating heads.
    x = torch.randn(2, 8, 32)
    save("llama", Llama(), (x,))
    save("llama_repeat_kv", Llama(gqa_by_repeat=True), (x,))
    save("matmul", MatMulBlock(), (torch.randn(2, 7, 32),))
    save("llama_dynamic", Llama(), (torch.randn(3, 11, 32),),
         dynamic_shapes={"x": {0: Dim("batch"), 1: Dim("seq", max=16)}})
    # GPT-J style: interleaved, partial rotary, packed biased QKV, a mask.
    x = torch.randn(2, 6, 32)
    mask = torch.rand(2, 1, 6, 6) < 0.7
    mask[..., 0] = True
    save("gptj_mask", GPTJ(), (x, mask))
    # nn.MultiheadAttention: self-attention batch first; cross-attention in
    # [S, B, E] with kdim/vdim; dynamic batch and lengths.
    x = torch.randn(2, 7, 32)
    save("mha_self", MHASelf(32, 4, batch_first=True), (x,))
    q, k, v = torch.randn(5, 3, 32), torch.randn(9, 3, 24), torch.randn(9, 3, 20)
    save("mha_cross_seq_first", MHA(32, 4, kdim=24, vdim=20), (q, k, v))
    x = torch.randn(3, 7, 32)
    save("mha_dynamic", MHASelf(32, 4, batch_first=True), (x,),
         dynamic_shapes={"x": {0: Dim("batch"), 1: Dim("seq", max=64)}})
    # A key padding mask, seq first.
    kpm = torch.zeros(3, 6, dtype=torch.bool)
    kpm[0, 4:] = True
    kpm[2, 0] = True
    save("mha_key_padding", MHAPadding(32, 4), (torch.randn(6, 3, 32), kpm))
    # nn.MultiheadAttention as called by default (need_weights=True): seq
    # first self-attention, the weights averaged; batch first cross
    # attention, the weights per head.
    x = torch.randn(7, 2, 32)
    save("mha_weights_average", WithWeights(), (x, x, x))
    q, k = torch.randn(2, 5, 32), torch.randn(2, 9, 32)
    save("mha_weights_per_head", WithWeights(False, batch_first=True),
         (q, k, k))
    # A block: the attention region's input and output as PyTorch computes
    # them.
    block, x = Block().eval(), torch.randn(2, 8, 32)
    save("block", block, (x,))
    with torch.no_grad():
        h = block.norm(x)
        np.save(os.path.join(out, "block.region_in.npy"), h.numpy())
        np.save(os.path.join(out, "block.region_out.npy"), block.attn(h).numpy())
    # Refused.
    x = torch.randn(2, 5, 16)
    save("refuse_residual", Residual(), (x,), run=False)
    save("refuse_need_weights_mask", WithWeightsMask(), (x, torch.randn(5, 5)),
         run=False)
    save("refuse_norm", Norm(), (x,), run=False)


if __name__ == "__main__":
    main()
