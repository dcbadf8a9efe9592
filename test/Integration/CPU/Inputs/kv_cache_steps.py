#!/usr/bin/env python3
"""Decoding on a static KV cache over several calls of an mha-aot shared
object, against a full recompute by the numpy reference.

    kv_cache_steps.py --mha-aot BIN --workdir DIR [--pipeline P]
                      [b=.. h=.. hkv=.. d=.. smax=.. sn=.. steps=.. seed=..]

Writes DIR/step.mlir: one decoding step @step(q [B, H, Sn, d], k, v
[B, Hkv, Sn, d], k_cache, v_cache [B, Hkv, Smax, d], lengths [B] i32) ->
(out, k_cache', v_cache') that appends the step's keys and values to the
caches at each batch's length (mha.cache_append) and attends causally over
the caches with lengths + Sn. mha-aot compiles it to DIR/step.so, which this
script loads with ctypes and calls `steps` times, passing each cache as both
its argument and its result (the header says they are updated in place),
the lengths growing by Sn per call from different starting lengths per
batch. Each step's output is compared with the reference attention over a
cache this script keeps itself (every key written so far, the rest of the
caches NaN: a key past a length must not be seen, nor its value multiplied
by a zero probability); the other arguments
must be left as they were (the lengths' `+ Sn` is not written into them);
at the end, the caller's cache arrays must hold every step's keys and
values bitwise.
Prints one line per step and exits non-zero on a mismatch.
"""

import argparse
import ctypes
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "reference"))
import mha_reference  # noqa: E402

DEFAULTS = dict(b=3, h=4, hkv=2, d=16, smax=40, sn=1, steps=5, seed=0)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mha-aot", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--pipeline", default="cpu")
    parser.add_argument("--atol", type=float, default=1e-4)
    parser.add_argument("config", nargs="*")
    args = parser.parse_args()
    c = dict(DEFAULTS)
    for pair in args.config:
        key, _, value = pair.partition("=")
        if key not in c:
            sys.exit(f"kv_cache_steps.py: unknown key '{key}'")
        c[key] = int(value)
    b, h, hkv, d, smax, sn = (c[k] for k in ("b", "h", "hkv", "d", "smax",
                                             "sn"))
    os.makedirs(args.workdir, exist_ok=True)

    q_t = f"tensor<{b}x{h}x{sn}x{d}xf32>"
    kv_t = f"tensor<{b}x{hkv}x{sn}x{d}xf32>"
    cache_t = f"tensor<{b}x{hkv}x{smax}x{d}xf32>"
    len_t = f"tensor<{b}xi32>"
    mlir = os.path.join(args.workdir, "step.mlir")
    with open(mlir, "w") as f:
        f.write(f"""\
func.func @step(%q: {q_t}, %k: {kv_t}, %v: {kv_t}, %kc: {cache_t},
                %vc: {cache_t}, %len: {len_t}) -> ({q_t}, {cache_t}, {cache_t}) {{
  %kc1 = mha.cache_append ins(%k : {kv_t}) lengths(%len : {len_t})
           outs(%kc : {cache_t}) -> {cache_t}
  %vc1 = mha.cache_append ins(%v : {kv_t}) lengths(%len : {len_t})
           outs(%vc : {cache_t}) -> {cache_t}
  %step = arith.constant dense<{sn}> : {len_t}
  %len1 = arith.addi %len, %step : {len_t}
  %init = tensor.empty() : {q_t}
  %o = mha.attention ins(%q, %kc1, %vc1 : {q_t}, {cache_t}, {cache_t})
         key_lengths(%len1 : {len_t}) outs(%init : {q_t}) {{causal}} -> {q_t}
  return %o, %kc1, %vc1 : {q_t}, {cache_t}, {cache_t}
}}
""")
    prefix = os.path.join(args.workdir, "step")
    subprocess.run([args.mha_aot, mlir, f"--pipeline={args.pipeline}",
                    "--entry=step", "-o", prefix], check=True,
                   stdout=subprocess.DEVNULL)
    with open(prefix + ".h") as header:
        text = header.read()
    # The header declares the caches written: not const.
    for i in (3, 4):
        if f"float *arg{i}," not in text or f"const float *arg{i}" in text:
            print(f"step.h: arg{i} is not declared as written in place")
            return 1
    library = ctypes.CDLL(os.path.abspath(prefix + ".so"))
    step = library.step
    step.restype = ctypes.c_int

    rng = np.random.default_rng(c["seed"])
    uniform = lambda *shape: rng.uniform(-1, 1, shape).astype(np.float32)
    room = smax - sn * c["steps"]
    lengths = np.array([0, room] + list(rng.integers(0, room + 1, b - 2)),
                       np.int32)[:b]
    # Random keys and values before each batch's length, NaN past it (as
    # uninitialized memory may hold): neither is to be seen past a length.
    k_cache, v_cache = uniform(b, hkv, smax, d), uniform(b, hkv, smax, d)
    for i, n in enumerate(lengths):
        k_cache[i, :, n:] = np.nan
        v_cache[i, :, n:] = np.nan
    k_ref, v_ref = k_cache.copy(), v_cache.copy()
    pointer = lambda a: a.ctypes.data_as(ctypes.c_void_p)
    status = 0
    for t in range(c["steps"]):
        q, k, v = uniform(b, h, sn, d), uniform(b, hkv, sn, d), uniform(
            b, hkv, sn, d)
        out = np.zeros((b, h, sn, d), np.float32)
        inputs = [a.copy() for a in (q, k, v, lengths)]
        rc = step(pointer(q), pointer(k), pointer(v), pointer(k_cache),
                  pointer(v_cache), pointer(lengths), pointer(out),
                  pointer(k_cache), pointer(v_cache))
        if rc != 0:
            print(f"step {t}: returned {rc}")
            return 1
        # The other arguments are the caller's: not written.
        if any(a.tobytes() != c.tobytes()
               for a, c in zip((q, k, v, lengths), inputs)):
            print(f"step {t}: an argument other than the caches was written")
            return 1
        for i, n in enumerate(lengths):
            k_ref[i, :, n:n + sn] = k[i]
            v_ref[i, :, n:n + sn] = v[i]
        expected = mha_reference.attention(q, k_ref, v_ref, causal=True,
                                           key_lengths=lengths + sn)
        error = np.abs(out - expected).max()
        ok = error <= args.atol
        print(f"step {t}: lengths {lengths.tolist()}: max abs error "
              f"{error:e}: {'OK' if ok else 'MISMATCH'}")
        status = status or (0 if ok else 1)
        lengths = lengths + sn
    same = (k_cache.tobytes() == k_ref.tobytes() and
            v_cache.tobytes() == v_ref.tobytes())
    print(f"caches after {c['steps']} steps: "
          f"{'OK' if same else 'MISMATCH'}")
    return status or (0 if same else 1)


if __name__ == "__main__":
    sys.exit(main())
