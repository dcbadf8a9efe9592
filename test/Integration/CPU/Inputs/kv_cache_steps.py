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

With layer=1 the step is the whole layer instead: @step(x [B, Sn, E],
w_q, w_k, w_v, w_o, k_cache, v_cache, lengths, cos, sin) -> (y, k_cache',
v_cache'), one mha.multi_head_attention with kv_cache and rotary (E = H·d),
each step against the reference layer on the caches this script keeps, and
the last step of the batch that starts empty against a full recompute: the
reference layer without a cache over every token that batch was given.
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

DEFAULTS = dict(b=3, h=4, hkv=2, d=16, smax=40, sn=1, steps=5, seed=0,
                layer=0)


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
    if c["layer"]:
        return run_layer(args, c)

    q_t = f"tensor<{b}x{h}x{sn}x{d}xf32>"
    kv_t = f"tensor<{b}x{hkv}x{sn}x{d}xf32>"
    cache_t = f"tensor<{b}x{hkv}x{smax}x{d}xf32>"
    len_t = f"tensor<{b}xi32>"
    library = compile_step(args, f"""\
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
""", (3, 4))
    if library is None:
        return 1
    step = library.step

    rng = np.random.default_rng(c["seed"])
    uniform = lambda *shape: rng.uniform(-1, 1, shape).astype(np.float32)
    lengths, k_cache, v_cache = draw_caches(c, rng)
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
        status = report_step(t, lengths, out, expected, args.atol) or status
        lengths = lengths + sn
    same = (k_cache.tobytes() == k_ref.tobytes() and
            v_cache.tobytes() == v_ref.tobytes())
    print(f"caches after {c['steps']} steps: "
          f"{'OK' if same else 'MISMATCH'}")
    return status or (0 if same else 1)


def report_step(t, lengths, out, expected, atol):
    """Prints step t's error against the reference; 1 on a mismatch."""
    error = np.abs(out - expected).max()
    ok = error <= atol
    print(f"step {t}: lengths {lengths.tolist()}: max abs error "
          f"{error:e}: {'OK' if ok else 'MISMATCH'}")
    return 0 if ok else 1


def draw_caches(c, rng):
    """The lengths before the first step (batch 0 empty, batch 1 with room
    for the steps only, the others drawn) and the caches [B, Hkv, Smax, d]:
    random keys and values before each batch's length, NaN past it (as
    uninitialized memory may hold): neither is to be seen past a length."""
    b, hkv, d, smax = c["b"], c["hkv"], c["d"], c["smax"]
    room = smax - c["sn"] * c["steps"]
    lengths = np.array([0, room] + list(rng.integers(0, room + 1, b - 2)),
                       np.int32)[:b]
    caches = [rng.uniform(-1, 1, (b, hkv, smax, d)).astype(np.float32)
              for _ in range(2)]
    for cache in caches:
        for i, n in enumerate(lengths):
            cache[i, :, n:] = np.nan
    return lengths, caches[0], caches[1]


def compile_step(args, text, written):
    """Compiles @step with mha-aot; returns the shared object (its `step`
    returning int), or None when its header does not declare the arguments
    `written` (the caches) as written in place."""
    mlir = os.path.join(args.workdir, "step.mlir")
    with open(mlir, "w") as f:
        f.write(text)
    prefix = os.path.join(args.workdir, "step")
    subprocess.run([args.mha_aot, mlir, f"--pipeline={args.pipeline}",
                    "--entry=step", "-o", prefix], check=True,
                   stdout=subprocess.DEVNULL)
    with open(prefix + ".h") as header:
        text = header.read()
    for i in written:
        if f"float *arg{i}," not in text or f"const float *arg{i}" in text:
            print(f"step.h: arg{i} is not declared as written in place")
            return None
    library = ctypes.CDLL(os.path.abspath(prefix + ".so"))
    library.step.restype = ctypes.c_int
    return library


def run_layer(args, c):
    """layer=1: the steps of one mha.multi_head_attention with kv_cache and
    rotary."""
    b, h, hkv, d, smax, sn = (c[k] for k in ("b", "h", "hkv", "d", "smax",
                                             "sn"))
    e, half, rows = h * d, d // 2, smax + 1
    x_t = f"tensor<{b}x{sn}x{e}xf32>"
    cache_t = f"tensor<{b}x{hkv}x{smax}x{d}xf32>"
    len_t = f"tensor<{b}xi32>"
    wq_t, wkv_t = f"tensor<{e}x{e}xf32>", f"tensor<{e}x{hkv * d}xf32>"
    table_t = f"tensor<{rows}x{half}xf32>"
    library = compile_step(args, f"""\
func.func @step(%x: {x_t}, %wq: {wq_t} {{mha.weight}}, %wk: {wkv_t} {{mha.weight}},
                %wv: {wkv_t} {{mha.weight}}, %wo: {wq_t} {{mha.weight}},
                %kc: {cache_t}, %vc: {cache_t}, %len: {len_t},
                %cos: {table_t}, %sin: {table_t})
    -> ({x_t}, {cache_t}, {cache_t}) {{
  %y, %kc1, %vc1 = mha.multi_head_attention %x, %x, %x, %wq, %wk, %wv, %wo
      kv_cache(%kc, %vc, %len) rotary(%cos, %sin)
      {{num_heads = {h} : i64, num_kv_heads = {hkv} : i64, causal}}
      : ({x_t}, {x_t}, {x_t}, {wq_t}, {wkv_t}, {wkv_t}, {wq_t}, {cache_t},
         {cache_t}, {len_t}, {table_t}, {table_t})
      -> ({x_t}, {cache_t}, {cache_t})
  return %y, %kc1, %vc1 : {x_t}, {cache_t}, {cache_t}
}}
""", (5, 6))
    if library is None:
        return 1
    # The weights prepared once (step_prepare); odd steps call step_prepared
    # with them, even ones step (which prepares them itself): both write the
    # caches in place.
    prepared = ctypes.c_void_p()
    library.step_prepare.restype = library.step_prepared.restype = \
        ctypes.c_int
    rng = np.random.default_rng(c["seed"])
    uniform = lambda *shape: rng.uniform(-1, 1, shape).astype(np.float32)
    weights = [(uniform(n, m) / np.sqrt(n)).astype(np.float32)
               for n, m in ((e, e), (e, hkv * d), (e, hkv * d), (e, e))]
    angles = np.arange(rows)[:, None] * 10000.0 ** (-np.arange(half) / half)
    cos, sin = (np.cos(angles).astype(np.float32),
                np.sin(angles).astype(np.float32))
    # Batch 0 starts empty: its last step is checked against a full
    # recompute too.
    lengths, k_cache, v_cache = draw_caches(c, rng)
    k_ref, v_ref = k_cache.copy(), v_cache.copy()
    pointer = lambda a: a.ctypes.data_as(ctypes.c_void_p)
    status, tokens = 0, []
    for t in range(c["steps"]):
        x = uniform(b, sn, e)
        tokens.append(x[0])
        out = np.zeros((b, sn, e), np.float32)
        inputs = [a.copy() for a in [x, lengths] + weights]
        rest = [pointer(k_cache), pointer(v_cache), pointer(lengths),
                pointer(cos), pointer(sin), pointer(out), pointer(k_cache),
                pointer(v_cache)]
        if t % 2:
            if not prepared.value and library.step_prepare(
                    *map(pointer, weights), ctypes.byref(prepared)):
                print("step_prepare failed")
                return 1
            rc = library.step_prepared(prepared, pointer(x), *rest)
        else:
            rc = library.step(pointer(x), *map(pointer, weights), *rest)
        if rc != 0:
            print(f"step {t}: returned {rc}")
            return 1
        if any(a.tobytes() != i.tobytes()
               for a, i in zip([x, lengths] + weights, inputs)):
            print(f"step {t}: an argument other than the caches was written")
            return 1
        expected, k_ref, v_ref = mha_reference.multi_head_attention(
            x, x, x, *weights, num_heads=h, num_kv_heads=hkv, causal=True,
            kv_cache=(k_ref, v_ref, lengths, lambda a: a.astype(np.float32)),
            rotary=(cos, sin, False))
        status = report_step(t, lengths, out, expected, args.atol) or status
        lengths = lengths + sn
    library.step_release(prepared)
    every = np.concatenate(tokens)[None]
    full = mha_reference.multi_head_attention(
        every, every, every, *weights, num_heads=h, num_kv_heads=hkv,
        causal=True, rotary=(cos, sin, False))[0, -sn:]
    error = np.abs(out[0] - full).max()
    ok = error <= args.atol
    print(f"batch 0 against a full recompute of its {len(every[0])} "
          f"tokens: max abs error {error:e}: {'OK' if ok else 'MISMATCH'}")
    # The caches hold the projections in f32: the script's own copies are
    # rounded from float64, so they agree to rounding, not bitwise.
    same = all(np.allclose(a, r, atol=1e-5, equal_nan=True)
               for a, r in ((k_cache, k_ref), (v_cache, v_ref)))
    print(f"caches after {c['steps']} steps: "
          f"{'OK' if same else 'MISMATCH'}")
    return status or (0 if ok and same else 1)


if __name__ == "__main__":
    sys.exit(main())
