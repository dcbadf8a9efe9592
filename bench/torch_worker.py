"""The PyTorch peer of peers.py: a persistent worker timing one layer.

    python3 torch_worker.py '{"threads": T, "config": {...Config fields...}}'

peers.py starts one worker per environment ("out of the box" and "tuned")
and thread count, so that environment variables that act at load time
(LD_PRELOAD, ATEN_CPU_CAPABILITY, OMP_WAIT_POLICY) take effect, and so that
the interleaved rounds measure calls rather than process start-up.

Protocol, one JSON object per line. At start the worker prints
    {"ready": true, "forms": [...], "info": {...}}
and then answers each line read from stdin:
    {"cmd": "run", "form": F, "n": N}    -> {"ms": [t1, ..., tN]}
    {"cmd": "sgemm", "m": M, "n": N, "k": K, "seconds": S}
                                          -> {"gflops": X, "how": "torch.mm"}
    {"cmd": "quit"}                       -> exits

Forms: what a PyTorch 1.13 user has for this layer, and with PyTorch 2 (the
bench's PyPI environment) `sdpa`: the layer written with
F.scaled_dot_product_attention (grouped-query natively), which is also the
one form of the core-attention rows (decoding and prefill over a cache
included). `nn.MultiheadAttention`
(eval, no_grad, batch_first, need_weights=False; query is key is value for
self-attention, which is what lets 1.13 take its fused fast path when no
mask is given). Causal attention goes through `attn_mask`, either boolean
(True = masked) or additive float (-inf above the diagonal); 1.13 converts a
boolean mask to a float one on every call, so both are timed and peers.py
keeps the faster. PyTorch 1.13 has no grouped-query attention: for GQA the
layer's K/V weights are widened to all H heads (each K/V head repeated) in
`nn.MultiheadAttention`, and a hand-written form projects K/V at Hkv*d and
repeats the projected heads (`manual`), as GQA code for 1.13 would do.
"""

import json
import math
import os
import sys
import time

import torch
import torch.nn.functional as F

# Every reply goes to the real stdout; anything else a library prints must
# not corrupt the protocol.
from worker_loop import reply, serve  # noqa: E402 (before the redirect)

sys.stdout = sys.stderr


def loaded_libraries(*needles):
    """Paths of the shared objects in this process whose name contains one
    of `needles`: which BLAS and which allocator are actually in use."""
    found = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            name = os.path.basename(path)
            if any(n in name for n in needles):
                found.add(os.path.realpath(path))
    return sorted(found)


def sdpa(q, k, v, c):
    """F.scaled_dot_product_attention (PyTorch 2) on head-split q [B, H, Sq,
    d] and k, v [B, Hkv, Sk, d]: grouped-query heads natively, causal at the
    bottom right (docs/Semantics.md): `is_causal` where Sq == Sk, an
    explicit mask otherwise (a step at the end of a cache)."""
    gqa = {"enable_gqa": True} if c["hkv"] != c["h"] else {}
    sq, sk = c["sq"], c["sk"]
    if not c["causal"] or sq == 1:
        return F.scaled_dot_product_attention(q, k, v, **gqa)
    if sq == sk:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, **gqa)
    visible = torch.ones(sq, sk, dtype=torch.bool).tril(sk - sq)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=visible, **gqa)


class CoreAttention:
    """The core-attention rows (mha.attention alone, decoding and prefill
    over a cache included) as PyTorch 2 runs them: SDPA on head-split
    tensors."""

    def __init__(self, c):
        torch.manual_seed(0)
        b, h, hkv, sq, sk, d = c["b"], c["h"], c["hkv"], c["sq"], c["sk"], c["d"]
        dtype = {"f32": torch.float32, "bf16": torch.bfloat16}[
            c.get("dtype", "f32")]
        q = (torch.rand(b, h, sq, d) * 2 - 1).to(dtype)
        k = (torch.rand(b, hkv, sk, d) * 2 - 1).to(dtype)
        v = (torch.rand(b, hkv, sk, d) * 2 - 1).to(dtype)
        self.forms = {}
        if hasattr(F, "scaled_dot_product_attention"):
            self.forms["sdpa"] = lambda: sdpa(q, k, v, c)


class LayerCacheStep:
    """A cache row's layer (a decoding step on KV caches) as PyTorch 2 code
    writes it: F.linear projections of the step's tokens, their keys and
    values written into the caches at the length before the step (Sk - Sq:
    the caches are then full), SDPA over the caches, the output
    projection."""

    def __init__(self, c):
        torch.manual_seed(0)
        self.c = c
        b, sq, sk, e, h, hkv, d = (c["b"], c["sq"], c["sk"], c["e"], c["h"],
                                   c["hkv"], c["d"])
        rand = lambda *shape: torch.rand(*shape) * 2 - 1
        self.x = rand(b, sq, e)
        self.wq, self.wo = rand(h * d, e) / math.sqrt(e), rand(e, h * d)
        self.wk, self.wv = (rand(hkv * d, e) / math.sqrt(e) for _ in "kv")
        self.k_cache, self.v_cache = rand(b, hkv, sk, d), rand(b, hkv, sk, d)
        self.forms = {}
        if hasattr(F, "scaled_dot_product_attention"):  # PyTorch 2
            self.forms["sdpa-cache"] = self.step

    def step(self):
        c = self.c
        b, sq, sk, h, hkv, d = c["b"], c["sq"], c["sk"], c["h"], c["hkv"], c["d"]
        heads = lambda w, n: F.linear(self.x, w).view(b, sq, n, d).transpose(
            1, 2)
        q, k, v = heads(self.wq, h), heads(self.wk, hkv), heads(self.wv, hkv)
        self.k_cache[:, :, sk - sq:] = k
        self.v_cache[:, :, sk - sq:] = v
        out = sdpa(q, self.k_cache, self.v_cache, c)
        return F.linear(out.transpose(1, 2).reshape(b, sq, h * d), self.wo)


class Layer:
    """The forms of one configuration, on fixed random inputs."""

    def __init__(self, c):
        self.c = c
        torch.manual_seed(0)
        self.x = torch.rand(c["b"], c["sq"], c["e"]) * 2 - 1
        self.kv = (torch.rand(c["b"], c["sk"], c["e"]) * 2 - 1
                   if c["cross"] else self.x)
        self.forms = {}
        h, hkv, e = c["h"], c["hkv"], c["e"]
        # nn.MultiheadAttention needs H*d == E; every configuration here has it.
        mha = torch.nn.MultiheadAttention(e, h, bias=c["bias"],
                                          batch_first=True).eval()
        self.mha = mha
        if not c["causal"]:
            self.forms["nn"] = lambda: mha(self.x, self.kv, self.kv,
                                           need_weights=False)[0]
        else:
            # Bottom-right aligned as in docs/Semantics.md; Sq == Sk in every
            # causal configuration, where it is the usual upper triangle.
            sq, sk = c["sq"], c["sk"]
            masked = torch.ones(sq, sk, dtype=torch.bool).triu(sk - sq + 1)
            additive = torch.zeros(sq, sk).masked_fill(masked, float("-inf"))
            self.forms["nn-bool-mask"] = lambda: mha(
                self.x, self.kv, self.kv, attn_mask=masked, need_weights=False)[0]
            self.forms["nn-float-mask"] = lambda: mha(
                self.x, self.kv, self.kv, attn_mask=additive, need_weights=False)[0]
            self.additive = additive
        if hkv != h:
            self.forms["manual"] = self.manual_gqa
        if hasattr(F, "scaled_dot_product_attention"):  # PyTorch 2
            self.forms["sdpa"] = self.sdpa_layer

    def sdpa_layer(self):
        """The layer as PyTorch 2 code writes it: F.linear projections (K/V
        at Hkv*d), F.scaled_dot_product_attention, the output projection."""
        c = self.c
        q, k, v = self.project_gqa()
        out = sdpa(q, k, v, c).transpose(1, 2).reshape(
            c["b"], c["sq"], c["h"] * c["d"])
        return self.mha.out_proj(out)

    def project_gqa(self):
        """q [B, H, Sq, d] and k, v [B, Hkv, Sk, d], projected with F.linear
        by the first Hkv*d rows of the K and V blocks of the module's
        weights, which stand for the GQA weights: the values do not matter
        for timing, the shapes do."""
        c = self.c
        b, sq, sk, h, hkv, d, e = (c["b"], c["sq"], c["sk"], c["h"], c["hkv"],
                                   c["d"], c["e"])
        w, bias = self.mha.in_proj_weight, self.mha.in_proj_bias
        wq, wk, wv = w[:e], w[e:e + hkv * d], w[2 * e:2 * e + hkv * d]
        bq = bk = bv = None
        if bias is not None:
            bq, bk, bv = bias[:e], bias[e:e + hkv * d], bias[2 * e:2 * e + hkv * d]
        return (F.linear(self.x, wq, bq).view(b, sq, h, d).transpose(1, 2),
                F.linear(self.kv, wk, bk).view(b, sk, hkv, d).transpose(1, 2),
                F.linear(self.kv, wv, bv).view(b, sk, hkv, d).transpose(1, 2))

    def manual_gqa(self):
        """GQA by hand: K/V projected to Hkv heads only, then each head
        repeated H/Hkv times, then the same bmm-softmax-bmm core as
        nn.MultiheadAttention's slow path."""
        c = self.c
        b, sq, sk, h, hkv, d = c["b"], c["sq"], c["sk"], c["h"], c["hkv"], c["d"]
        q, k, v = self.project_gqa()
        k = k.repeat_interleave(h // hkv, dim=1).reshape(b * h, sk, d)
        v = v.repeat_interleave(h // hkv, dim=1).reshape(b * h, sk, d)
        q = q.reshape(b * h, sq, d)
        scores = (torch.baddbmm(self.additive, q, k.transpose(1, 2),
                                alpha=1 / math.sqrt(d))
                  if c["causal"] else
                  torch.bmm(q, k.transpose(1, 2)) / math.sqrt(d))
        out = torch.bmm(torch.softmax(scores, dim=-1), v)
        out = out.view(b, h, sq, d).transpose(1, 2).reshape(b, sq, h * d)
        return self.mha.out_proj(out)


def sgemm(m, n, k, seconds):
    """Best GFLOP/s of torch.mm and F.linear on [m,k]x[k,n]: the matmul
    rate PyTorch gets on this layer's projection shape, as a ceiling the
    layer's GFLOP/s can be read against."""
    a = torch.rand(m, k)
    b = torch.rand(k, n)
    bt = b.t().contiguous()
    best = (0.0, "")
    for how, fn in (("torch.mm", lambda: torch.mm(a, b)),
                    ("F.linear", lambda: F.linear(a, bt))):
        fn()
        t_end = time.perf_counter() + seconds
        fastest = float("inf")
        while True:
            t0 = time.perf_counter()
            fn()
            t1 = time.perf_counter()
            fastest = min(fastest, t1 - t0)
            if t1 > t_end:
                break
        best = max(best, (2.0 * m * n * k / fastest / 1e9, how))
    return best


def main():
    spec = json.loads(sys.argv[1])
    threads = spec["threads"]
    torch.set_num_threads(threads)
    config = spec.get("config")
    kind = (None if not config else CoreAttention if config["core"] else
            LayerCacheStep if config.get("cache") else Layer)
    layer = kind(config) if kind else None
    forms = list(layer.forms) if layer else []
    with torch.no_grad():
        for form in forms:
            for _ in range(spec.get("warmup", 2)):
                layer.forms[form]()
        # 1.13 has no API for the vector ISA its kernels dispatch to (which
        # ATEN_CPU_CAPABILITY picks); its build summary names it.
        capability = next((line.split(":")[-1].strip()
                           for line in torch.__config__.show().splitlines()
                           if "CPU capability usage" in line), "?")
        reply({"ready": True, "forms": forms, "info": {
            "torch": torch.__version__,
            "threads": torch.get_num_threads(),
            "cpu_capability": capability,
            "blas": loaded_libraries("blas"),
            "jemalloc": bool(loaded_libraries("jemalloc")),
        }})
        serve(layer.forms, {"sgemm": lambda cmd: dict(zip(
            ("gflops", "how"), sgemm(cmd["m"], cmd["n"], cmd["k"],
                                     cmd["seconds"])))})

if __name__ == "__main__":
    main()
