"""torch.compile with mha_backend against PyTorch's eager forward and its
own torch.compile (inductor), on Llama-style attention blocks (rotary,
GQA, causal) alone and inside decoder blocks (norm, residual, MLP).
Interleaved rounds; the median per variant; outputs checked against eager.

PyTorch's wheel runs its threads on GNU libgomp, whose idle threads spin
(GOMP_SPINCOUNT) on the cores the compiled attention's libomp threads need
right after them: the script sets GOMP_SPINCOUNT=0 unless given (eager and
inductor run as fast with it). Run under the bench's environment
(bench/run.sh makes it), with the build's mha-aot:

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE MHA_AOT=build/bin/mha-aot \\
        OMP_NUM_THREADS=2 PYTHONPATH=python \\
        bench/work/venv/bin/python bench/torch_compile.py --threads 2
"""
import argparse
import os
import statistics
import sys
import time

import torch
import torch._dynamo
import torch.nn as nn

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "test", "Importers", "Inputs"))
sys.path.insert(0, os.path.join(ROOT, "python"))
from torch_export_fixtures import Llama  # noqa: E402
from mha_importers.torch_compile import mha_backend  # noqa: E402


class Block(nn.Module):
    def __init__(self, e, h, hkv, s):
        super().__init__()
        self.norm = nn.LayerNorm(e)
        self.attn = Llama(e, h, hkv, max_pos=s)
        self.mlp = nn.Sequential(nn.Linear(e, 4 * e), nn.GELU(),
                                 nn.Linear(4 * e, e))

    def forward(self, x):
        h = x + self.attn(self.norm(x))
        return h + self.mlp(h)


def main():
    if "GOMP_SPINCOUNT" not in os.environ:  # read when libgomp loads
        os.execve(sys.executable, [sys.executable] + sys.argv,
                  dict(os.environ, GOMP_SPINCOUNT="0"))
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--iterations", type=int, default=5)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    configs = [("attention E=768 H=12 Hkv=4 S=512", False, 768, 512),
               ("attention E=768 H=12 Hkv=4 S=2048", False, 768, 2048),
               ("2 decoder blocks E=768 S=512", True, 768, 512)]
    print(f"PyTorch {torch.__version__}, {args.threads} threads, "
          f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}, "
          f"GOMP_SPINCOUNT={os.environ['GOMP_SPINCOUNT']}")
    print("| configuration | eager ms | inductor ms | mha_backend ms | "
          "vs eager | vs inductor | max abs error |")
    print("|---|---|---|---|---|---|---|")
    for name, blocks, e, s in configs:
        model = (nn.Sequential(Block(e, 12, 4, s), Block(e, 12, 4, s))
                 if blocks else Llama(e, 12, 4, max_pos=s)).eval()
        x = torch.randn(1, s, e)
        with torch.no_grad():
            torch._dynamo.reset()
            ours = torch.compile(model, backend=mha_backend, dynamic=False)
            ours(x)
            torch._dynamo.reset()
            inductor = torch.compile(model, dynamic=False)
            inductor(x)
            variants = {"eager": model, "inductor": inductor, "ours": ours}
            times = {k: [] for k in variants}
            for _ in range(args.rounds):
                for k, f in variants.items():
                    f(x)
                    t0 = time.perf_counter()
                    for _ in range(args.iterations):
                        f(x)
                    times[k].append((time.perf_counter() - t0) * 1e3 /
                                    args.iterations)
            err = (ours(x) - model(x)).abs().max().item()
        med = {k: statistics.median(v) for k, v in times.items()}
        print(f"| {name} | {med['eager']:.2f} | {med['inductor']:.2f} | "
              f"{med['ours']:.2f} | {med['eager'] / med['ours']:.2f}x | "
              f"{med['inductor'] / med['ours']:.2f}x | {err:.1e} |")


if __name__ == "__main__":
    main()
