#!/usr/bin/env python3
"""Runs COUNT random layer configurations through check_mha.py (both
pipelines) and prints one line per configuration; exits 1 if any fails.

    random_configs.py --mha-run BIN --workdir DIR [--count 12] [--seed 0]
                      [--pipeline P]... [--static]

Sizes, heads and kv heads, head dims, projection widths, bias, mask kind,
rank and broadcasting, causal, scale and dynamic dims are drawn at random
(deterministically for a seed), so combinations nobody wrote down get
checked against the numpy reference too. --pipeline is passed on to
check_mha.py (default: its own, loops and cpu); --static draws no dynamic
dims (for pipelines that need static shapes, such as vulkan).
"""

import argparse
import os
import random
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def draw(rng, static=False):
    hkv = rng.choice([1, 2, 3])
    h = hkv * rng.choice([1, 2, 3])
    b, sq, sk = rng.randint(1, 3), rng.randint(1, 70), rng.randint(1, 70)
    c = dict(b=b, sq=sq, sk=sk, h=h, hkv=hkv, dk=rng.choice([1, 3, 8, 16]),
             dv=rng.choice([1, 4, 8]), eq=rng.choice([4, 12, 32]),
             ek=rng.choice([4, 12, 32]), ev=rng.choice([4, 12, 32]),
             eo=rng.choice([3, 8, 16]), bias=rng.randint(0, 1),
             causal=rng.randint(0, 1), seed=rng.randint(0, 1000))
    if rng.random() < 0.3:
        c["scale"] = rng.choice([0.05, 0.5, 2.0])
    mask = rng.choice(["none", "bool", "float"])
    if mask != "none":
        c["mask"] = mask
        rank = rng.choice([2, 3, 4])
        full = {2: [sq, sk], 3: [b, sq, sk], 4: [b, h, sq, sk]}[rank]
        shape = [1 if rank == 4 and rng.random() < 0.4 else d for d in full]
        c["mask_shape"] = ",".join(map(str, shape))
        if rng.random() < 0.2 and shape[-2] != 1:
            c["masked_row"] = rng.randrange(sq)
    dyn = [d for d in ("b", "sq", "sk") if rng.random() < 0.3]
    if dyn and not static:
        c["dynamic"] = ",".join(dyn)
    return c


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mha-run", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--count", type=int, default=12)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pipeline", action="append", default=[])
    parser.add_argument("--static", action="store_true")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    failures = 0
    for i in range(args.count):
        config = draw(rng, args.static)
        pairs = [f"{k}={v}" for k, v in config.items()]
        result = subprocess.run(
            [sys.executable, os.path.join(HERE, "check_mha.py"), "--mha-run",
             args.mha_run, "--workdir", os.path.join(args.workdir, str(i))]
            + [f"--pipeline={p}" for p in args.pipeline] + pairs, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        ok = result.returncode == 0
        failures += not ok
        print(f"config {i}: {' '.join(pairs)}: {'OK' if ok else 'FAILED'}")
        if not ok:
            print(result.stdout)
    print(f"{args.count - failures} of {args.count} configurations OK")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
