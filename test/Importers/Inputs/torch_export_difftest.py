"""A randomized differential test of the torch.export importer: random
attention blocks (sizes, layouts, biases, GQA by enable_gqa or repeated
heads, causal, rotary half-rotated/interleaved/partial, masks, packed QKV,
nn.MultiheadAttention with and without weights and padding masks, dynamic
sizes) exported by PyTorch 2, imported, run by mha-run and compared with
PyTorch's own forward. A program the importer refuses must say so with an
error (counted, never compared); one it imports must match. Needs PyTorch 2
(the bench's environment):

    bench/work/venv/bin/python test/Importers/Inputs/torch_export_difftest.py \\
        --mha-run build/bin/mha-run --workdir /tmp/tedt --minutes 5 --seed 1

Prints one line per trial and a summary; exits 1 on a mismatch.
"""
import argparse
import os
import random
import subprocess
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.export import Dim

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)),
                                "..", "python"))
from mha_importers.torch_export import (import_program,  # noqa: E402
                                        UnsupportedProgram)


class Block(nn.Module):
    """A block drawn from `c`: projections (packed or not, biased or
    not), heads split by view+transpose, rotary, GQA, SDPA, output."""

    def __init__(self, c):
        super().__init__()
        self.c = c
        e, h, hkv, d = c["e"], c["h"], c["hkv"], c["d"]
        if c["packed"]:
            self.qkv = nn.Linear(e, (h + 2 * hkv) * d, bias=c["bias"])
        else:
            self.q = nn.Linear(e, h * d, bias=c["bias"])
            self.k = nn.Linear(c["ek"], hkv * d, bias=c["bias"])
            self.v = nn.Linear(c["ek"], hkv * d, bias=c["bias"])
        self.o = nn.Linear(h * d, e, bias=c["bias"])
        if c["rotary"]:
            r = c["rot"]
            inv = 1.0 / (10000 ** (torch.arange(0, r, 2).float() / r))
            f = torch.outer(torch.arange(c["max_pos"]).float(), inv)
            if c["rotary"] == "half":
                f = torch.cat([f, f], dim=-1)
            else:
                f = f.repeat_interleave(2, dim=-1)
            self.register_buffer("cos", f.cos(), persistent=False)
            self.register_buffer("sin", f.sin(), persistent=False)

    def rotate(self, x, s):
        c, r = self.c, self.c["rot"]
        xr, rest = x[..., :r], x[..., r:]
        if c["rotary"] == "half":
            x1, x2 = xr[..., : r // 2], xr[..., r // 2:]
            turned = torch.cat((-x2, x1), dim=-1)
        else:
            x1, x2 = xr[..., 0::2], xr[..., 1::2]
            turned = torch.stack((-x2, x1), dim=-1).flatten(-2)
        xr = xr * self.cos[:s] + turned * self.sin[:s]
        return torch.cat((xr, rest), dim=-1)

    def forward(self, x, *rest):
        c = self.c
        kv = rest[0] if c["cross"] else x
        mask = rest[-1] if c["mask"] else None
        b, s, _ = x.shape
        sk = kv.shape[1]
        h, hkv, d = c["h"], c["hkv"], c["d"]
        if c["packed"]:
            q, k, v = self.qkv(x).split([h * d, hkv * d, hkv * d], dim=-1)
        else:
            q, k, v = self.q(x), self.k(kv), self.v(kv)
        q = q.view(b, s, h, d).transpose(1, 2)
        k = k.view(b, sk, hkv, d).transpose(1, 2)
        v = v.view(b, sk, hkv, d).transpose(1, 2)
        if c["rotary"]:
            q, k = self.rotate(q, s), self.rotate(k, sk)
        gqa = hkv != h
        if gqa and c["repeat"]:
            k = k.repeat_interleave(h // hkv, dim=1)
            v = v.repeat_interleave(h // hkv, dim=1)
        if mask is not None and c["mask"] == "padding":
            mask = mask[:, None, None, :]
        y = F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, is_causal=c["causal"],
            scale=c["scale"], enable_gqa=gqa and not c["repeat"])
        return self.o(y.transpose(1, 2).reshape(b, s, h * d))


class MHA(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.m = nn.MultiheadAttention(c["e"], c["h"], bias=c["bias"],
                                       batch_first=c["batch_first"],
                                       kdim=c["ek"] if c["cross"] else None,
                                       vdim=c["ek"] if c["cross"] else None)

    def forward(self, x, *rest):
        c = self.c
        kv = rest[0] if c["cross"] else x
        kpm = rest[-1] if c["mask"] else None
        y, w = self.m(x, kv, kv, key_padding_mask=kpm,
                      need_weights=c["weights"] is not None,
                      average_attn_weights=c["weights"] == "average")
        return (y, w) if c["weights"] else y


def draw(rng):
    kind = rng.choice(["block", "block", "mha"])
    d = rng.choice([4, 8, 16])
    hkv = rng.choice([1, 2, 3])
    h = hkv * rng.choice([1, 2, 3])
    b, s = rng.randint(1, 3), rng.randint(1, 9)
    cross = rng.random() < 0.25
    c = dict(kind=kind, d=d, h=h, hkv=hkv, b=b, s=s,
             sk=rng.randint(1, 9) if cross else s, cross=cross,
             bias=rng.random() < 0.5, dynamic=rng.random() < 0.25)
    if kind == "mha":
        c.update(h=hkv * rng.choice([1, 2]), hkv=None)
        c.update(e=c["h"] * d, batch_first=rng.random() < 0.5,
                 weights=rng.choice([None, None, "average", "per_head"]),
                 mask="padding" if rng.random() < 0.3 else None)
        c["ek"] = rng.choice([c["e"], c["e"] + 4]) if cross else c["e"]
        if c["mask"] and c["weights"]:
            c["weights"] = None  # baddbmm: refused by design
        return c
    c.update(e=rng.choice([h * d, h * d + 8]), packed=not cross and
             rng.random() < 0.3, repeat=rng.random() < 0.5,
             causal=not cross and rng.random() < 0.5,
             scale=rng.choice([None, 0.3]),
             mask=rng.choice([None, None, "full", "padding"]))
    c["ek"] = rng.choice([c["e"], c["e"] + 4]) if cross else c["e"]
    rot = None if cross or rng.random() < 0.5 else rng.choice(
        ["half", "interleaved"])
    c.update(rotary=rot, rot=rng.choice([d, d // 2 if d >= 8 else d]),
             max_pos=16)
    if rot and c["rot"] % 2:
        c["rot"] = d
    return c


def inputs_of(c, rng_t):
    b, s, sk = c["b"], c["s"], c["sk"]
    seq_first = c["kind"] == "mha" and not c["batch_first"]
    shape = (lambda n, e: (n, b, e)) if seq_first else \
        (lambda n, e: (b, n, e))
    args = [torch.randn(*shape(s, c["e"]), generator=rng_t)]
    if c["cross"]:
        args.append(torch.randn(*shape(sk, c["ek"]), generator=rng_t))
    if c["mask"] == "full":
        m = torch.rand(b, 1, s, sk, generator=rng_t) < 0.7
        m[..., 0] = True
        args.append(m)
    elif c["mask"] == "padding":
        m = torch.rand(b, sk, generator=rng_t) < 0.7
        m[:, 0] = True
        args.append(m if c["kind"] == "block" else ~m)
    return args


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mha-run", required=True)
    p.add_argument("--workdir", required=True)
    p.add_argument("--minutes", type=float, default=2)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    rng = random.Random(a.seed)
    os.makedirs(a.workdir, exist_ok=True)
    end = time.time() + 60 * a.minutes
    ok = refused = bad = 0
    trial = 0
    while time.time() < end:
        trial += 1
        c = draw(rng)
        torch.manual_seed(rng.randrange(1 << 30))
        model = (MHA if c["kind"] == "mha" else Block)(c).eval()
        args = inputs_of(c, torch.Generator().manual_seed(trial))
        dyn = None
        if c["dynamic"]:
            seq_dim = 0 if c["kind"] == "mha" and not c["batch_first"] else 1
            batch = Dim("batch", max=64)
            seq = Dim("seq", max=16)
            spec = {0: batch, 1: seq} if seq_dim == 1 else {1: batch,
                                                           0: seq}
            dyn = [spec] + [None] * (len(args) - 1)
            if c["cross"] or c["mask"]:
                dyn = None  # keep the draw simple: static
        label = f"trial {trial}: {c}"
        try:
            ep = torch.export.export(model, tuple(args),
                                     dynamic_shapes=dyn and tuple(dyn))
        except Exception as e:  # noqa: BLE001 - PyTorch's own limits
            print(f"{label}: not exported ({str(e).splitlines()[0][:80]})")
            continue
        out = os.path.join(a.workdir, f"t{trial}")
        try:
            path, names = import_program(ep, out)
        except UnsupportedProgram as e:
            refused += 1
            print(f"{label}: REFUSED {e}")
            continue
        user = [s.arg.name for s in ep.graph_signature.input_specs
                if s.kind.name == "USER_INPUT"]
        by_name = dict(zip(user, args))
        files = []
        for n in names:
            f = os.path.join(out, f"in_{n}.npy")
            np.save(f, by_name[n].numpy())
            files.append(f"--input=@{f}")
        with torch.no_grad():
            y = model(*args)
        ys = y if isinstance(y, tuple) else (y,)
        expected = []
        for i, t in enumerate(ys):
            f = os.path.join(out, f"expected{i}.npy")
            np.save(f, t.numpy())
            expected.append(f"--expected-output=@{f}")
        r = subprocess.run([a.mha_run, path] + files +
                           [f"@{os.path.join(out, 'main.rsp')}",
                            "--pipeline=cpu", "--atol=2e-5", "--rtol=2e-4"]
                           + expected, capture_output=True, text=True)
        lines = (r.stdout + r.stderr).strip().splitlines()
        if r.returncode == 0 and sum("OK" in l for l in lines) == len(ys):
            ok += 1
            print(f"{label}: OK")
        else:
            bad += 1
            print(f"{label}: MISMATCH\n  " + "\n  ".join(lines[-4:]))
    print(f"{ok + refused + bad} trials: {ok} OK, {refused} refused, "
          f"{bad} mismatched")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
