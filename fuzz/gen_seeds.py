#!/usr/bin/env python3
"""Writes random well-formed `mha` modules as seeds for mha-fuzz.

    gen_seeds.py OUT_DIR [COUNT] [SEED]

Random text rarely gets past the parser; mutations of valid IR reach the
verifiers and the passes. Each seed holds one mha.multi_head_attention or
mha.attention with random sizes (static or dynamic), heads and kv heads,
head dims, element type, bias, mask kind/rank/broadcasting, causal and scale.
"""

import os
import random
import sys


def ttype(dims, elem):
    return "tensor<" + "x".join([str(d) for d in dims] + [elem]) + ">"


def maybe_dyn(rng, d):
    return "?" if rng.random() < 0.3 else d


def mask_clause(rng, b, h, sq, sk, elem, layer):
    kind = rng.choice([None, "i1", elem])
    if kind is None:
        return None
    rank = rng.choice([2, 3, 4])
    full = {2: [sq, sk], 3: [b, sq, sk], 4: [b, h, sq, sk]}[rank]
    dims = [1 if (rank == 4 and rng.random() < 0.4) else maybe_dyn(rng, d)
            for d in full]
    return ttype(dims, kind)


def attrs(rng, h, hkv, layer):
    a = [f"num_heads = {h} : i64"] if layer else []
    if layer and (hkv != h or rng.random() < 0.3):
        a.append(f"num_kv_heads = {hkv} : i64")
    if rng.random() < 0.3:
        a.append(f"scale = {rng.choice([0.125, 0.5, 1.0, 3.0, 1e-3])} : f32")
    if rng.random() < 0.5:
        a.append("causal")
    return "{" + ", ".join(a) + "}" if a else ""


def layer(rng):
    elem = rng.choice(["f32", "f32", "f16", "bf16"])
    hkv = rng.choice([1, 2, 3])
    h = hkv * rng.choice([1, 2, 4])
    dk, dv = rng.choice([1, 2, 4, 8]), rng.choice([1, 2, 4, 8])
    b, sq, sk = rng.randint(1, 3), rng.randint(1, 40), rng.randint(1, 40)
    eq, ek, ev, eo = (rng.choice([4, 8, 16]) for _ in range(4))
    q = ttype([maybe_dyn(rng, b), maybe_dyn(rng, sq), eq], elem)
    k = ttype([maybe_dyn(rng, b), maybe_dyn(rng, sk), ek], elem)
    v = ttype([maybe_dyn(rng, b), maybe_dyn(rng, sk), ev], elem)
    types = [q, k, v, ttype([eq, h * dk], elem), ttype([ek, hkv * dk], elem),
             ttype([ev, hkv * dv], elem), ttype([h * dv, eo], elem)]
    names = ["q", "k", "v", "wq", "wk", "wv", "wo"]
    clauses = ""
    if rng.random() < 0.5:
        types += [ttype([n], elem) for n in (h * dk, hkv * dk, hkv * dv, eo)]
        names += ["bq", "bk", "bv", "bo"]
        clauses += " bias(%bq, %bk, %bv, %bo)"
    m = mask_clause(rng, b, h, sq, sk, elem, True)
    if m:
        types.append(m)
        names.append("m")
        clauses += " mask(%m)"
    res = ttype([maybe_dyn(rng, b), maybe_dyn(rng, sq), eo], elem)
    args = ", ".join(f"%{n}: {t}" for n, t in zip(names, types))
    return (f"func.func @f({args}) -> {res} {{\n"
            f"  %y = mha.multi_head_attention %q, %k, %v, %wq, %wk, %wv, %wo{clauses}"
            f" {attrs(rng, h, hkv, True)}\n"
            f"       : ({', '.join(types)}) -> {res}\n"
            f"  return %y : {res}\n}}\n")


def attention(rng):
    elem = rng.choice(["f32", "f16"])
    hkv = rng.choice([1, 2])
    h = hkv * rng.choice([1, 2, 4])
    b, sq, sk = rng.randint(1, 3), rng.randint(1, 70), rng.randint(1, 70)
    dk, dv = rng.choice([1, 4, 8]), rng.choice([1, 4, 8])
    bd, sqd, skd = maybe_dyn(rng, b), maybe_dyn(rng, sq), maybe_dyn(rng, sk)
    q, k = ttype([bd, h, sqd, dk], elem), ttype([bd, hkv, skd, dk], elem)
    v, o = ttype([bd, hkv, skd, dv], elem), ttype([bd, h, sqd, dv], elem)
    m = mask_clause(rng, b, h, sq, sk, elem, False)
    margs = f", %m: {m}" if m else ""
    mclause = f" mask(%m : {m})" if m else ""
    return (f"func.func @f(%q: {q}, %k: {k}, %v: {v}{margs}, %init: {o}) -> {o} {{\n"
            f"  %o = mha.attention ins(%q, %k, %v : {q}, {k}, {v}){mclause}"
            f" outs(%init : {o}) {attrs(rng, h, hkv, False)} -> {o}\n"
            f"  return %o : {o}\n}}\n")


def main():
    out = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 0)
    os.makedirs(out, exist_ok=True)
    for i in range(count):
        text = layer(rng) if rng.random() < 0.6 else attention(rng)
        with open(os.path.join(out, f"gen-{i:04d}.mlir"), "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
