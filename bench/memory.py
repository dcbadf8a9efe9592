#!/usr/bin/env python3
"""Peak memory of the tiled path: O(S·d), not O(S²).

Runs `mha-run --pipeline=cpu --random-inputs` on a causal self-attention layer
(B=1, E=64, H=1) at a small and a large sequence length, each in a fresh
process, and reports the difference of their peak RSS against what the score
matrix alone would take at the large length.

    bench/memory.py --mha-run build/bin/mha-run [--small 1024] [--large 16384]
                    [--limit-mib 64] [--pipeline cpu]

Exits 1 when the difference is not under --limit-mib.
"""

import argparse
import os
import resource
import subprocess
import sys
import tempfile

LAYER = """func.func @main(%x: tensor<1x{s}x64xf32>, %w: tensor<64x64xf32>) -> tensor<1x{s}x64xf32> {{
  %y = mha.multi_head_attention %x, %x, %x, %w, %w, %w, %w {{num_heads = 1 : i64, causal}}
       : (tensor<1x{s}x64xf32>, tensor<1x{s}x64xf32>, tensor<1x{s}x64xf32>, tensor<64x64xf32>,
          tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<1x{s}x64xf32>
  return %y : tensor<1x{s}x64xf32>
}}
"""


def peak_rss_kib(mha_run, pipeline, s, workdir):
    path = os.path.join(workdir, f"layer-{s}.mlir")
    with open(path, "w") as f:
        f.write(LAYER.format(s=s))
    # A child that forks nothing else: RUSAGE_CHILDREN after waiting for it
    # alone is its own peak. Run each length through a fresh python so that
    # the maxima do not mix.
    probe = (
        "import resource, subprocess, sys\n"
        "r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
        "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    out = subprocess.run([sys.executable, "-c", probe, mha_run, path,
                          f"--pipeline={pipeline}", "--random-inputs=1"],
                         check=True, stdout=subprocess.PIPE, text=True).stdout
    code, kib = out.split()
    if code != "0":
        sys.exit(f"memory.py: mha-run failed on S={s} (exit {code})")
    return int(kib)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mha-run", required=True)
    parser.add_argument("--pipeline", default="cpu")
    parser.add_argument("--small", type=int, default=1024)
    parser.add_argument("--large", type=int, default=16384)
    parser.add_argument("--limit-mib", type=float, default=64)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        small = peak_rss_kib(args.mha_run, args.pipeline, args.small, workdir)
        large = peak_rss_kib(args.mha_run, args.pipeline, args.large, workdir)
    diff_mib = (large - small) / 1024
    scores_mib = args.large * args.large * 4 / 2**20
    ok = diff_mib < args.limit_mib
    print(f"peak RSS S={args.small}: {small / 1024:.1f} MiB, S={args.large}: "
          f"{large / 1024:.1f} MiB, difference {diff_mib:.1f} MiB "
          f"(limit {args.limit_mib:g} MiB; the f32 scores of S={args.large} "
          f"alone: {scores_mib:.0f} MiB): {'OK' if ok else 'TOO MUCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
