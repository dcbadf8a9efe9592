#!/usr/bin/env python3
"""CUDA checks for a machine with an NVIDIA GPU but no LLVM.

  cuda_bundle.py prepare --build build --out build/cuda-bundle [CASE ...]
      here: for each case (check_mha.py configuration words, with an
      optional pipeline=cuda{...}; the built-in list when none), the numpy
      inputs and reference output (check_mha.py) and an mha-aot executable
      of --pipeline=cuda, built for a generic x86-64 CPU, plus the CUDA
      runtime library and this script, in one directory.
  cuda_bundle.py run [--dir DIR] [--repeat N]
      there (Python 3 with numpy): runs every executable on its inputs N
      times and compares the first result with the reference at the suite's
      tolerances and the others bitwise with the first; one line per case
      and a summary; exit status 1 if any case fails.

The bundle travels to the device machine as an ignored path (the device
tool's `carry`); its executables find the runtime through LD_LIBRARY_PATH,
which `run` sets.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK_MHA = os.path.join(HERE, "..", "test", "Integration", "reference",
                         "check_mha.py")

# Shapes that exercise what changed in the GPU mapping: a single tile (one
# workgroup), no query, decoding, partial tiles, causal, GQA, masks, f16, and
# long keys (no loop limit on CUDA).
CASES = [
    "core=1 b=1 h=1 hkv=1 dk=64 dv=64 sq=16 sk=100 pipeline=cuda{q-tile-size=16 kv-tile-size=16}",
    "core=1 b=2 h=1 hkv=1 dk=64 dv=64 sq=16 sk=8192 seed=5 pipeline=cuda{q-tile-size=16 kv-tile-size=16}",
    "core=1 b=1 h=4 hkv=2 dk=32 dv=16 sq=1 sk=300 pipeline=cuda{q-tile-size=32 kv-tile-size=32}",
    "core=1 b=2 h=2 hkv=1 dk=16 dv=8 sq=20 sk=37 causal=1 seed=1 pipeline=cuda{q-tile-size=16 kv-tile-size=16}",
    "core=1 b=1 h=2 dk=64 dv=64 sq=70 sk=70 causal=1 dtype=f16 pipeline=cuda{q-tile-size=16 kv-tile-size=16}",
    "b=1 h=1 dk=16 dv=16 sq=8 sk=8 seed=1 pipeline=cuda{q-tile-size=16 kv-tile-size=16}",
    "b=1 sq=1 sk=40 eq=32 h=2 pipeline=cuda",
    "b=2 sq=20 eq=32 h=2 mask=float masked_row=3 pipeline=cuda",
    "b=1 h=1 dk=64 dv=64 eq=32 eo=3 sq=65 sk=561 seed=364593 pipeline=cuda{q-tile-size=16 kv-tile-size=16}",
    "b=3 sq=33 sk=47 eq=48 h=4 hkv=2 bias=1 causal=1 pipeline=cuda{q-tile-size=16 kv-tile-size=8}",
]

TOLERANCES = {"f32": (1e-4, 1e-4), "f16": (2e-3, 1e-2), "bf16": (2e-2, 3e-2)}


def prepare(args):
    build = os.path.abspath(args.build)
    out = os.path.abspath(args.out)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    manifest = []
    for i, case in enumerate(args.cases or CASES):
        # pipeline=NAME{OPTIONS} may hold spaces inside its braces.
        match = re.search(r"pipeline=(\S*\{[^}]*\}|\S+)", case)
        pipeline = match.group(1) if match else "cuda"
        config = (case[:match.start()] + case[match.end():]).split() \
            if match else case.split()
        name = f"case{i:02d}"
        work = os.path.join(out, name)
        # check_mha.py writes the inputs and the reference, and compiles the
        # executable; --aot-repeat=0 runs nothing here.
        result = subprocess.run(
            [sys.executable, CHECK_MHA, "--mha-run",
             os.path.join(build, "bin", "mha-run"), "--workdir", work,
             "--pipeline", pipeline, "--mha-aot",
             os.path.join(build, "bin", "mha-aot"), "--aot-repeat", "0",
             "--mha-run-arg=--target-cpu=x86-64-v3", *config],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if result.returncode:
            errors = [line for line in result.stdout.splitlines()
                      if "error" in line]
            print(f"{name}: {case}: not built: " +
                  (errors[0] if errors else result.stdout[-400:]))
            shutil.rmtree(work, ignore_errors=True)
            continue
        inputs = sorted(n for n in os.listdir(work)
                        if n.endswith(".npy") and n != "expected.npy")
        # check_mha.py passes the inputs in the order the function takes
        # them: the order of the case's arguments.
        with open(os.path.join(work, "case.mlir")) as f:
            header = f.read().split("{", 1)[0]
        order = [token.split(":")[0].strip().lstrip("%")
                 for token in header.split("(", 1)[1].split(")")[0].split(",")
                 if ":" in token]
        order = [n + ".npy" for n in order if n + ".npy" in inputs]
        dtype = next((w.split("=")[1] for w in config
                      if w.startswith("dtype=")), "f32")
        manifest.append({"name": name, "case": case, "inputs": order,
                         "dtype": dtype,
                         "executable": os.path.join("aot-cuda", "layer")})
        print(f"{name}: {case}: built")
    shutil.copy(os.path.join(build, "lib", "libmha_cuda_runtime.so"), out)
    shutil.copy(os.path.abspath(__file__), out)
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    return 0


def run(args):
    import numpy as np
    bundle = os.path.abspath(args.dir)
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = bundle + os.pathsep + env.get(
        "LD_LIBRARY_PATH", "")
    with open(os.path.join(bundle, "manifest.json")) as f:
        manifest = json.load(f)
    failed = 0
    for entry in manifest:
        work = os.path.join(bundle, entry["name"])
        executable = os.path.join(work, entry["executable"])
        output = os.path.join(work, "result.npy")
        expected = np.load(os.path.join(work, "expected.npy"))
        atol, rtol = TOLERANCES[entry["dtype"]]
        verdict, first = "OK", None
        for attempt in range(args.repeat):
            result = subprocess.run(
                [executable] + [os.path.join(work, n) for n in entry["inputs"]]
                + ["-o", output], stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, text=True, env=env)
            if result.returncode:
                verdict = f"FAILED (exit {result.returncode}): " + \
                    result.stdout.strip()[-400:]
                break
            got = np.load(output)
            if got.dtype == np.uint16:  # bf16 bits
                got = (got.astype(np.uint32) << 16).view(np.float32)
            if first is None:
                first = got
                error = np.abs(got.astype(np.float64) -
                               expected.astype(np.float64))
                worst = error.max() if error.size else 0.0
                if got.shape != expected.shape or not np.allclose(
                        got, expected, atol=atol, rtol=rtol):
                    verdict = f"MISMATCH (max abs error {worst:e})"
                    break
                verdict = f"OK (max abs error {worst:e})"
            elif got.tobytes() != first.tobytes():
                verdict = f"NONDETERMINISTIC (run {attempt + 1})"
                break
        failed += not verdict.startswith("OK")
        print(f"{entry['name']}: {verdict}: {entry['case']}", flush=True)
    print(f"{len(manifest) - failed} of {len(manifest)} cases OK")
    return 1 if failed else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--build", default="build")
    p.add_argument("--out", default="build/cuda-bundle")
    p.add_argument("cases", nargs="*")
    r = sub.add_parser("run")
    r.add_argument("--dir", default=os.path.dirname(os.path.abspath(__file__)))
    r.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    return prepare(args) if args.command == "prepare" else run(args)


if __name__ == "__main__":
    sys.exit(main())
