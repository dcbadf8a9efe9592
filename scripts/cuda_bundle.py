#!/usr/bin/env python3
"""CUDA checks for a machine with an NVIDIA GPU but no LLVM.

  cuda_bundle.py prepare --build build --out build/cuda-bundle
                         [--chip sm_90] [--bench] [CASE ...]
      here: for each case (check_mha.py configuration words, with an
      optional pipeline=cuda{...}; the built-in list when none), the numpy
      inputs and reference output (check_mha.py) and an mha-aot executable
      of --pipeline=cuda{chip=CHIP ...}, built for a generic x86-64 CPU,
      plus the CUDA runtime library and this script, in one directory.
      A case with the word resident=1 is also compiled with its entry on
      device buffers (mha-aot --device-entry), which `run` calls.
      With --bench, also an executable for each benchmark configuration
      (BENCH, or each --bench-case), without inputs: those are drawn on the
      device.
  cuda_bundle.py run [--dir DIR] [--repeat N] [--bench [--calls N]]
      there (Python 3 with numpy): runs every executable on its inputs N
      times and compares the first result with the reference at the suite's
      tolerances and the others bitwise with the first; one line per case
      and a summary; exit status 1 if any case fails.
      With --bench (Python with PyTorch and a GPU), then for each benchmark
      configuration: inputs drawn with numpy, our executable timed over
      --calls calls ($MHA_CUDA_PROFILE: kernel time by CUDA events, bytes
      copied per call; the kernels' time is each kernel's median launch
      times its launches per call) and checked against PyTorch in float64,
      and PyTorch's
      own time on the same inputs (scaled_dot_product_attention, flash
      backend for f16/bf16, TF32 off for f32; nn.MultiheadAttention for
      layers); then the same calls on device buffers (the executable's
      --device-resident: inputs uploaded once, the call time without
      copies, the bytes the calls copied, from the profile); for layers,
      their projections' GEMM kernels (named *_gemm in the profile) against
      the same four GEMMs by torch.matmul (cuBLAS); markdown tables, and
      bench.json in the bundle.

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
    # test/Integration/CUDA/attention.test's, at the default tiles.
    "b=2 sq=64 eq=32 h=2 bias=1",
    "b=2 sq=37 sk=50 eq=32 h=2 causal=1 bias=1",
    "b=2 sq=1 sk=100 eq=64 h=4 hkv=1 mask=float mask_shape=2,1,1,100",
    "b=1 sq=100 sk=37 eq=32 h=4 hkv=2 causal=1",
    "b=2 sq=45 h=2 eq=32 dynamic=b,sq mask=float causal=1",
    "b=1 sq=128 eq=768 h=12 bias=1",
    # f16 and bf16 at head dim 64 and 128.
    "core=1 b=1 h=2 dk=64 dv=64 sq=200 sk=200 dtype=f16",
    "core=1 b=1 h=2 dk=128 dv=128 sq=100 sk=100 causal=1 dtype=bf16 pipeline=cuda{q-tile-size=16 kv-tile-size=16}",
    # The tensor-core kernel (f16): partial query and key tiles, GQA,
    # causal with Sq < Sk, Sq > Sk (rows without keys) and an explicit
    # offset, dynamic sizes, dv != dk, one warp, whole layers.
    "core=1 b=2 h=4 hkv=2 dk=64 dv=64 sq=100 sk=333 dtype=f16",
    "core=1 b=1 h=2 dk=128 dv=64 sq=77 sk=130 causal=1 dtype=f16",
    "core=1 b=1 h=2 dk=32 dv=16 sq=130 sk=50 causal=1 dtype=f16",
    "core=1 b=1 h=2 dk=64 dv=64 sq=64 sk=64 causal=1 causal_offset=-3 dtype=f16",
    "core=1 b=2 h=2 dk=64 dv=64 sq=65 sk=129 dtype=f16 dynamic=b,sq,sk",
    "core=1 b=1 h=2 dk=64 dv=64 sq=50 sk=300 causal=1 dtype=f16 pipeline=cuda{q-tile-size=16 kv-tile-size=32}",
    "b=2 sq=37 eq=64 h=2 dtype=f16 causal=1",
    "b=2 sq=100 eq=128 h=2 dtype=f16 bias=1",
    # Odd counts of k16 steps and output tiles (x2 ldmatrix), head dim 256
    # (32-key blocks to fit the shared memory).
    "core=1 b=1 h=2 dk=48 dv=8 sq=40 sk=70 dtype=f16",
    "core=1 b=1 h=2 dk=80 dv=24 sq=33 sk=65 causal=1 dtype=f16",
    "core=1 b=1 h=1 dk=256 dv=256 sq=70 sk=100 causal=1 dtype=f16",
    # Layers whose projections are tensor-core GEMMs: partial M, N and K
    # tiles, dynamic M, cross attention, GQA, bf16.
    "b=3 sq=37 eq=64 h=2 dtype=f16",
    "b=1 sq=100 eq=96 h=3 causal=1 dtype=f16",
    "b=2 sq=45 h=2 eq=64 dynamic=b,sq causal=1 dtype=f16",
    "b=2 sq=20 sk=37 eq=64 ek=48 ev=32 eo=40 h=2 cross=1 dtype=f16",
    "b=2 sq=33 eq=64 h=4 hkv=2 dtype=bf16",
    # One workgroup (the grid of one tile is kept).
    "core=1 b=1 h=1 dk=64 dv=64 sq=40 sk=40 dtype=f16",
    # bf16 on the tensor cores.
    "core=1 b=2 h=4 hkv=2 dk=64 dv=64 sq=100 sk=333 dtype=bf16",
    "core=1 b=1 h=2 dk=128 dv=64 sq=77 sk=130 causal=1 dtype=bf16",
    "b=2 sq=37 eq=64 h=2 dtype=bf16 causal=1",
    # The tensor-core kernels' features of session 37 (checked on lavapipe
    # through the emulation only): key lengths with causal and a window,
    # both windows, a softcap, a step on a KV cache (its tail NaN), biases
    # in the GEMM epilogue, bf16 with lengths, additive masks.
    "core=1 b=3 h=4 hkv=2 dk=48 dv=24 sq=130 sk=61 key_lengths=random causal=1 window_left=9 dtype=f16",
    "core=1 b=1 h=2 dk=32 dv=16 sq=100 sk=150 window_left=20 window_right=5 dtype=f16",
    "core=1 b=2 h=2 dk=64 dv=64 sq=70 sk=90 softcap=5.0 dtype=f16",
    "b=2 sq=33 eq=64 h=2 kv_cache=70 causal=1 dtype=f16",
    "b=2 sq=20 sk=37 eq=64 ek=48 ev=32 eo=40 h=2 cross=1 bias=1 causal=1 dtype=f16",
    "core=1 b=2 h=4 hkv=2 dk=64 dv=64 sq=1 sk=300 key_lengths=random dtype=bf16",
    "core=1 b=2 h=2 dk=32 dv=16 sq=40 sk=77 mask=float mask_shape=1,2,1,77 softcap=5.0 causal=1 key_lengths=random dtype=f16",
    "b=2 sq=64 eq=128 h=2 mask=bool mask_shape=2,64,64 bias=1 dtype=f16",
    # Session 38 (lavapipe only so far): f32 on the register kernel
    # (mha-attention-to-simt; GQA, causal, lengths, d = 128, a layer), and
    # f32 on tensor cores as TF32 (allow-tf32: checked at the tf32
    # tolerance).
    "core=1 b=2 h=4 hkv=2 dk=64 dv=64 sq=100 sk=333 causal=1 pipeline=cuda",
    "core=1 b=2 h=2 dk=128 dv=128 sq=70 sk=200 causal=1 key_lengths=random pipeline=cuda",
    "b=2 sq=37 eq=64 h=2 mask=float pipeline=cuda",
    "core=1 b=2 h=4 hkv=2 dk=64 dv=32 sq=100 sk=150 causal=1 pipeline=cuda{allow-tf32}",
    "core=1 b=2 h=2 dk=40 dv=24 sq=70 sk=90 mask=float key_lengths=random softcap=5.0 window_left=20 pipeline=cuda{allow-tf32}",
    # Session 40: decoding steps on device buffers (resident=1): the new
    # keys and values written into the caches by a kernel, rotary by
    # kernels; f16 on the tensor cores, f32 on the register kernel.
    "b=2 sq=1 sk=1 eq=256 h=8 hkv=2 kv_cache=300 key_lengths=random rotary=half causal=1 dtype=f16 resident=1",
    "b=3 sq=4 sk=4 eq=128 h=4 hkv=1 kv_cache=100 key_lengths=random rotary=interleaved causal=1 resident=1",
    # Decoding with its keys split across workgroups by the rule
    # (flash-decoding: 16 and 15 chunks), on the tensor-core and register
    # kernels.
    "core=1 b=1 h=8 hkv=2 dk=128 dv=128 sq=1 sk=4096 dtype=f16",
    "core=1 b=2 h=4 hkv=2 dk=64 dv=64 sq=1 sk=2000 key_lengths=random",
    # A split given by hand, with dynamic sizes and causal rows.
    "core=1 b=2 h=2 dk=64 dv=64 sq=65 sk=700 causal=1 kv_splits=3 dtype=f16 dynamic=b,sq,sk",
    # Session 42: the GEMM kernel's tiles and stages from its configuration
    # (the rule's 128 x 128 over warps of 64 x 64 and 128 x 64, given here
    # on small layers, with the rule's 4 stages: 75,776 and 59,392 bytes of
    # dynamic shared memory, the kernels opted in by the runtime; partial
    # tiles, biases, K of 10 and 3 steps).
    "b=2 sq=100 sk=45 eq=320 ek=96 ev=160 eo=200 h=4 cross=1 bias=1 dtype=f16 pipeline=cuda{gemm-tile=128,128}",
    "b=2 sq=70 eq=256 h=4 causal=1 dtype=bf16 pipeline=cuda{gemm-tile=128,64}",
]

# Benchmark configurations, written as CASES: f16 and bf16 attention run on
# the tensor cores (mha-attention-to-mma), f32 on the register kernel
# (mha-attention-to-simt), or with allow-tf32 on the tensor cores as TF32.
BENCH = [
    "core=1 b=1 h=12 dk=64 dv=64 sq=1024 dtype=f16",
    "core=1 b=1 h=12 dk=64 dv=64 sq=4096 dtype=f16",
    "core=1 b=1 h=12 dk=64 dv=64 sq=8192 dtype=f16",
    "core=1 b=1 h=12 dk=64 dv=64 sq=4096 dtype=f16 causal=1",
    "core=1 b=1 h=12 dk=128 dv=128 sq=4096 dtype=f16",
    "core=1 b=1 h=12 dk=128 dv=128 sq=4096 dtype=f16 causal=1",
    "core=1 b=8 h=16 dk=128 dv=128 sq=2048 dtype=f16 causal=1",
    "core=1 b=4 h=32 dk=64 dv=64 sq=2048 dtype=f16",
    "core=1 b=1 h=12 dk=64 dv=64 sq=4096 dtype=bf16",
    "core=1 b=1 h=12 dk=64 dv=64 sq=1024 dtype=f32",
    "core=1 b=1 h=12 dk=64 dv=64 sq=4096 dtype=f32",
    "core=1 b=1 h=12 dk=64 dv=64 sq=4096 dtype=f32 pipeline=cuda{allow-tf32}",
    "b=32 sq=128 eq=768 h=12 dtype=f16",
    "b=8 sq=1024 eq=768 h=12 causal=1 dtype=f16",
    # The layers' GEMM tiles side by side: the rule's (128 x 64 for
    # BERT-base, 128 x 128 for GPT-2, 4 stages in dynamic shared memory)
    # against 64 x 64 with 2 stages (the kernel's tiles before session 42),
    # BERT at 128 x 128, GPT-2 with 2 stages (static shared memory).
    "b=32 sq=128 eq=768 h=12 dtype=f16 pipeline=cuda{gemm-tile=64,64 gemm-stages=2}",
    "b=32 sq=128 eq=768 h=12 dtype=f16 pipeline=cuda{gemm-tile=128,128}",
    "b=8 sq=1024 eq=768 h=12 causal=1 dtype=f16 pipeline=cuda{gemm-tile=64,64 gemm-stages=2}",
    "b=8 sq=1024 eq=768 h=12 causal=1 dtype=f16 pipeline=cuda{gemm-stages=2}",
    # Decoding (one query): keys split across workgroups by the rule (8 and
    # 2 chunks); with GQA (Llama-3-8B's 32 query heads on 8) a group's 4
    # heads share a workgroup (head_tile), each K and V row read once.
    "core=1 b=1 h=32 dk=128 dv=128 sq=1 sk=32768 dtype=f16",
    "core=1 b=4 h=32 dk=128 dv=128 sq=1 sk=8192 dtype=f16",
    "core=1 b=1 h=32 hkv=8 dk=128 dv=128 sq=1 sk=32768 dtype=f16",
]

# tf32: f32 data on the tensor cores (allow-tf32), 10-bit mantissas.
TOLERANCES = {"f32": (1e-4, 1e-4), "tf32": (5e-3, 5e-3), "f16": (2e-3, 1e-2),
              "bf16": (2e-2, 3e-2)}


def split_case(case):
    """check_mha.py's words and the options of pipeline=cuda{OPTIONS}."""
    # The braces may hold spaces.
    match = re.search(r"pipeline=cuda(\{[^}]*\})?", case)
    if not match:
        return case.split(), ""
    return (case[:match.start()] + case[match.end():]).split(), \
        match.group(1)[1:-1] if match.group(1) else ""


def with_chip(options, chip):
    """cuda{chip=CHIP OPTIONS}."""
    return "cuda{" + " ".join(["chip=" + chip] + options.split()) + "}"


def compile_case(build, work, pipeline, config, extra=()):
    """check_mha.py's IR for `config` compiled by mha-aot into
    WORK/aot-cuda/layer; an error line, or None."""
    result = subprocess.run(
        [sys.executable, CHECK_MHA, "--mha-run",
         os.path.join(build, "bin", "mha-run"), "--workdir", work,
         "--pipeline", pipeline, "--mha-aot",
         os.path.join(build, "bin", "mha-aot"), "--aot-repeat", "0",
         "--mha-run-arg=--target-cpu=x86-64-v3", *extra, *config],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if not result.returncode:
        return None
    shutil.rmtree(work, ignore_errors=True)
    errors = [line for line in result.stdout.splitlines() if "error" in line]
    return errors[0] if errors else result.stdout[-400:]


def prepare(args):
    build = os.path.abspath(args.build)
    out = os.path.abspath(args.out)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    manifest = []
    for i, case in enumerate(args.cases or CASES):
        config, options = split_case(case)
        # resident=1: the executable also gets the entry on device buffers,
        # which `run` calls (--device-resident).
        resident = "resident=1" in config
        config = [w for w in config if w != "resident=1"]
        name = f"case{i:02d}"
        work = os.path.join(out, name)
        # check_mha.py writes the inputs and the reference, and compiles the
        # executable; --aot-repeat=0 runs nothing here.
        error = compile_case(build, work, with_chip(options, args.chip),
                             config,
                             ["--mha-run-arg=--device-entry"] if resident
                             else [])
        if error:
            print(f"{name}: {case}: not built: {error}")
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
        if "allow-tf32" in case:
            dtype = "tf32"  # its tolerance
        manifest.append({"name": name, "case": case, "inputs": order,
                         "dtype": dtype, "resident": resident,
                         "executable": os.path.join("aot-cuda", "layer")})
        print(f"{name}: {case}: built")
    bench = []
    for i, case in enumerate((args.bench_case or BENCH) if args.bench
                             else []):
        config, options = split_case(case)
        name = f"bench{i:02d}"
        work = os.path.join(out, name)
        error = compile_case(build, work, with_chip(options, args.chip),
                             config, ["--no-reference",
                                      "--mha-run-arg=--device-entry"])
        if error:
            print(f"{name}: {case}: not built: {error}")
            continue
        with open(os.path.join(work, "inputs.json")) as f:
            inputs = json.load(f)
        bench.append({"name": name, "case": " ".join(config),
                      "options": options, "inputs": inputs,
                      "executable": os.path.join("aot-cuda", "layer")})
        print(f"{name}: {case}: built")
    shutil.copy(os.path.join(build, "lib", "libmha_cuda_runtime.so"), out)
    shutil.copy(os.path.abspath(__file__), out)
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump({"chip": args.chip, "cases": manifest, "bench": bench}, f,
                  indent=1)
    return 0


def run(args):
    import numpy as np
    bundle = os.path.abspath(args.dir)
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = bundle + os.pathsep + env.get(
        "LD_LIBRARY_PATH", "")
    with open(os.path.join(bundle, "manifest.json")) as f:
        manifest = json.load(f)
    bench = manifest["bench"]
    manifest = manifest["cases"]
    failed = 0
    for entry in manifest:
        work = os.path.join(bundle, entry["name"])
        executable = os.path.join(work, entry["executable"])
        output = os.path.join(work, "result.npy")
        expected = np.load(os.path.join(work, "expected.npy"))
        atol, rtol = TOLERANCES[entry["dtype"]]
        verdict, first = "OK", None
        for attempt in range(args.repeat):
            # A resident case's calls run on device buffers: the inputs
            # uploaded once, the caches updated in place there.
            resident = ["--device-resident"] if entry.get("resident") else []
            result = subprocess.run(
                [executable] + resident +
                [os.path.join(work, n) for n in entry["inputs"]]
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
    print(f"{len(manifest) - failed} of {len(manifest)} cases OK",
          flush=True)
    if args.bench:
        failed += run_bench(args, bundle, bench, env)
    return 1 if failed else 0


# Dense peaks in TFLOP/s (NVIDIA's data sheets): fp16/bf16 tensor cores,
# and f32 FMA (what exact f32 can use), by device name.
PEAKS = [("H100 PCIe", 756.0, 51.2), ("H100", 989.4, 66.9),
         ("H200", 989.4, 66.9)]


def parse_words(case):
    words = dict(w.split("=", 1) for w in case.split())
    get = lambda key, default=None: int(words[key]) if key in words else default
    c = {"core": get("core", 0), "b": get("b"), "h": get("h"),
         "sq": get("sq"), "causal": get("causal", 0),
         "dtype": words.get("dtype", "f32")}
    c["sk"] = get("sk", c["sq"])
    if c["core"]:
        c["dk"], c["dv"] = get("dk"), get("dv")
    else:
        c["eq"] = get("eq")
        c["dk"] = c["dv"] = c["eq"] // c["h"]
    return c


def flops(c):
    """Multiply-adds counted as 2; causal attention halves the scores'."""
    attention = 2 * c["b"] * c["h"] * c["sq"] * c["sk"] * (c["dk"] + c["dv"])
    if c["causal"]:
        attention /= 2
    if c["core"]:
        return attention
    rows, e = c["b"] * c["sq"], c["eq"]
    return attention + 2 * rows * e * (3 * c["h"] * c["dk"]) + \
        2 * rows * c["h"] * c["dv"] * e


def draw_inputs(entry, work, np):
    """Uniform(-1, 1) activations, weights scaled by 1/sqrt(fan-in); saved
    as .npy (bf16 as uint16 bits); returns name -> float32 array."""
    rng = np.random.default_rng(0)
    arrays, paths = {}, []
    for spec in entry["inputs"]:
        shape = spec["shape"]
        a = rng.uniform(-1, 1, shape).astype(np.float32)
        if spec["name"].startswith("w_"):
            a /= np.sqrt(shape[0])
        path = os.path.join(work, spec["name"] + ".npy")
        if spec["dtype"] == "bf16":
            bits = a.view(np.uint32).astype(np.uint64)
            bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(
                np.uint16)
            a = (bits.astype(np.uint32) << 16).view(np.float32)
            np.save(path, bits)
        elif spec["dtype"] == "f16":
            a = a.astype(np.float16)
            np.save(path, a)
            a = a.astype(np.float32)
        else:
            np.save(path, a)
        arrays[spec["name"]] = a
        paths.append(path)
    return arrays, paths


def torch_side(c, arrays, torch, dev="cuda"):
    """PyTorch's float64 reference and a function timing PyTorch itself on
    the same inputs (ms per call, median of CUDA-event timings)."""
    import torch.nn.functional as F

    dtype = {"f32": torch.float32, "f16": torch.float16,
             "bf16": torch.bfloat16}[c["dtype"]]
    t = {n: torch.from_numpy(a).to(dev) for n, a in arrays.items()}
    if c["core"]:
        q, k, v = (t[n].double() for n in "qkv")
        # GQA: each key/value head serves h / hkv query heads.
        group = c["h"] // c["hkv"]
        k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
        scores = q @ k.transpose(-1, -2) / c["dk"] ** 0.5
        if c["causal"]:
            keep = torch.ones(c["sq"], c["sk"], dtype=torch.bool,
                              device=dev).tril(c["sk"] - c["sq"])
            scores = scores.masked_fill(~keep, float("-inf"))
        reference = (scores.softmax(-1) @ v).cpu().numpy()
        del scores
        q, k, v = (t[n].to(dtype) for n in "qkv")

        gqa = {"enable_gqa": True} if group > 1 else {}

        def call():
            return F.scaled_dot_product_attention(q, k, v,
                                                  is_causal=bool(c["causal"]),
                                                  **gqa)
        backend = ["FLASH_ATTENTION"] if c["dtype"] != "f32" else ["MATH"]
        label = "SDPA flash" if c["dtype"] != "f32" else "SDPA math"
    else:
        e, s = c["eq"], c["sq"]
        module = torch.nn.MultiheadAttention(e, c["h"], bias=False,
                                             batch_first=True).to(dev)
        with torch.no_grad():
            module.in_proj_weight.copy_(torch.cat(
                [t["w_q"].T, t["w_k"].T, t["w_v"].T]))
            module.out_proj.weight.copy_(t["w_o"].T)
        mask = torch.ones(s, s, dtype=torch.bool, device=dev).triu(1) \
            if c["causal"] else None
        # is_causal: the hint that lets PyTorch pick its causal kernels.
        hint = {"is_causal": True} if c["causal"] else {}
        x = t["query"]
        with torch.no_grad():
            module64 = module.double()
            reference = module64(x.double(), x.double(), x.double(),
                                 attn_mask=mask, need_weights=False,
                                 **hint)[0].cpu().numpy()
            module_t = module64.to(dtype)
        x = x.to(dtype)

        def call():
            return module_t(x, x, x, attn_mask=mask, need_weights=False,
                            **hint)[0]
        backend = None
        label = "nn.MultiheadAttention"

    def timed(repeats=20):
        context = None
        if backend:
            try:
                from torch.nn.attention import SDPBackend, sdpa_kernel
                context = sdpa_kernel([getattr(SDPBackend, b)
                                       for b in backend])
            except ImportError:  # PyTorch before 2.3
                flash = backend == ["FLASH_ATTENTION"]
                context = torch.backends.cuda.sdp_kernel(
                    enable_flash=flash, enable_math=not flash,
                    enable_mem_efficient=False)
        with context or torch.no_grad():
            return cuda_time(call, torch, repeats)
    return reference, timed, label


def cuda_time(call, torch, repeats=20):
    """The median of `repeats` CUDA-event timings of `call` (ms), after 3
    warm-up calls."""
    times = []
    with torch.no_grad():
        for _ in range(3):
            call()
        for _ in range(repeats):
            start = torch.cuda.Event(enable_timing=True)
            stop = torch.cuda.Event(enable_timing=True)
            start.record()
            call()
            stop.record()
            stop.synchronize()
            times.append(start.elapsed_time(stop))
    return sorted(times)[len(times) // 2]


def cublas_projections_ms(c, torch):
    """A layer's four projections ([B*S, E] x [E, E]) as torch.matmul
    calls (cuBLAS) on random operands of its dtype: ms per layer."""
    dtype = {"f32": torch.float32, "f16": torch.float16,
             "bf16": torch.bfloat16}[c["dtype"]]
    rows, e = c["b"] * c["sq"], c["eq"]
    x = torch.randn(rows, e, dtype=dtype, device="cuda")
    weights = [torch.randn(e, e, dtype=dtype, device="cuda") / e ** 0.5
               for _ in range(4)]
    return cuda_time(lambda: [torch.matmul(x, w) for w in weights], torch)


def run_bench(args, bundle, bench, env):
    """The benchmark configurations: ours against PyTorch; returns the
    number of configurations that failed."""
    import time
    import numpy as np
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    name = torch.cuda.get_device_name()
    peak16, peak32 = next(((p16, p32) for key, p16, p32 in PEAKS
                           if key in name), (None, None))
    print(f"device: {name}; torch {torch.__version__}; peaks fp16 {peak16}, "
          f"f32 {peak32} TFLOP/s", flush=True)
    env = dict(env, MHA_CUDA_PROFILE="1")
    results, failed, start = [], 0, time.time()
    for entry in bench:
        if time.time() - start > args.budget:
            print(f"{entry['name']}: skipped (over --budget)", flush=True)
            continue
        c = parse_words(entry["case"])
        work = os.path.join(bundle, entry["name"])
        row = {"name": entry["name"], "case": entry["case"],
               "options": entry["options"], "gflop": flops(c) / 1e9}
        try:
            arrays, paths = draw_inputs(entry, work, np)
            output = os.path.join(work, "result.npy")
            result = subprocess.run(
                [os.path.join(work, entry["executable"]), "--benchmark",
                 str(args.calls)] + paths + ["-o", output],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                env=env, timeout=args.timeout)
            text = result.stdout
            if result.returncode:
                raise RuntimeError(f"exit {result.returncode}: {text[-400:]}")
            calls = args.calls + 2  # the checked call and the warm-up
            row["call_ms"] = float(re.search(r"median ([\d.]+) ms",
                                             text).group(1))
            row["busy_ms"] = float(re.search(r"busy ([\d.]+) ms",
                                             text).group(1)) / calls
            # The GPU time of a call: each kernel's median launch, as many
            # times as a call launches it (the busy time above also holds
            # the first call's one-time costs).
            row["kernel_ms"] = sum(
                float(median) * int(launches) / calls
                for launches, median in re.findall(
                    r"kernel \S+: (\d+) launches, median ([\d.]+) ms", text))
            row["launches"] = sum(int(n) for n in re.findall(
                r"kernel \S+: (\d+) launches", text)) // calls
            # A layer's projections: the GEMM kernels (named *_gemm), against
            # the same GEMMs by cuBLAS (the issue's >= 70 % target).
            gemms = re.findall(r"kernel \S+_gemm: (\d+) launches, median "
                               r"([\d.]+) ms", text)
            if gemms and not c["core"]:
                row["gemm_ms"] = sum(float(median) * int(launches) / calls
                                     for launches, median in gemms)
                row["cublas_ms"] = cublas_projections_ms(c, torch)
            copies = dict(re.findall(r"(H2D|D2H) (\d+) bytes", text))
            row["h2d_mb"] = int(copies.get("H2D", 0)) / calls / 1e6
            row["d2h_mb"] = int(copies.get("D2H", 0)) / calls / 1e6
            # The same calls on device buffers (NAME_device): the inputs
            # uploaded once; what the profile counts beyond that upload and
            # the one download is what the calls copied.
            resident_output = os.path.join(work, "result-resident.npy")
            result = subprocess.run(
                [os.path.join(work, entry["executable"]), "--device-resident",
                 "--benchmark", str(args.calls)] + paths +
                ["-o", resident_output],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                env=env, timeout=args.timeout)
            text = result.stdout
            if result.returncode:
                raise RuntimeError(f"--device-resident: exit "
                                   f"{result.returncode}: {text[-400:]}")
            once = re.search(r"device-resident: (\d+) bytes uploaded once, "
                             r"(\d+) bytes downloaded once", text)
            row["resident_call_ms"] = float(re.search(
                r"benchmark \(device-resident\): \d+ calls, median "
                r"([\d.]+) ms", text).group(1))
            copies = dict(re.findall(r"(H2D|D2H) (\d+) bytes", text))
            row["resident_bytes_per_call"] = (
                int(copies.get("H2D", 0)) - int(once.group(1)) +
                int(copies.get("D2H", 0)) - int(once.group(2))) / calls
            reference, timed, row["peer"] = torch_side(c, arrays, torch)
            atol, rtol = TOLERANCES[
                "tf32" if "allow-tf32" in row.get("case", "") else c["dtype"]]
            row["ok"] = True
            for key, path in (("max_error", output),
                              ("resident_max_error", resident_output)):
                got = np.load(path)
                if got.dtype == np.uint16:
                    got = (got.astype(np.uint32) << 16).view(np.float32)
                row[key] = float(np.abs(got.astype(np.float64) -
                                        reference).max())
                row["ok"] &= bool(got.shape == reference.shape and
                                  np.allclose(got, reference, atol=atol,
                                              rtol=rtol))
            row["peer_ms"] = timed()
            row["tflops"] = row["gflop"] / row["kernel_ms"]  # GFLOP/ms
            peak = peak32 if c["dtype"] == "f32" else peak16
            row["peak_pct"] = 100 * row["tflops"] / peak if peak else None
            row["ratio"] = row["peer_ms"] / row["kernel_ms"]
            failed += not row["ok"]
            print(f"{entry['name']}: {entry['case']}: kernels "
                  f"{row['kernel_ms']:.3f} ms ({row['tflops']:.3f} TFLOP/s), "
                  f"busy {row['busy_ms']:.3f} ms, call {row['call_ms']:.3f} ms, "
                  f"resident call {row['resident_call_ms']:.3f} ms "
                  f"({row['resident_bytes_per_call']:.0f} B copied per call), "
                  f"{row['peer']} "
                  f"{row['peer_ms']:.3f} ms, ratio {row['ratio']:.4f}, "
                  f"H2D {row['h2d_mb']:.1f} MB D2H {row['d2h_mb']:.1f} MB "
                  f"per call, max error {row['max_error']:.2e} "
                  f"(resident {row['resident_max_error']:.2e}) "
                  f"{'OK' if row['ok'] else 'MISMATCH'}" +
                  (f"; projections {row['gemm_ms']:.3f} ms, cuBLAS "
                   f"{row['cublas_ms']:.3f} ms, ratio "
                   f"{row['cublas_ms'] / row['gemm_ms']:.3f}"
                   if "gemm_ms" in row else ""), flush=True)
        except Exception as error:  # one configuration's failure, reported
            failed += 1
            row["error"] = str(error)[-400:]
            print(f"{entry['name']}: {entry['case']}: FAILED: {error}",
                  flush=True)
        finally:
            torch.cuda.empty_cache()
        results.append(row)
    with open(os.path.join(bundle, "bench.json"), "w") as f:
        json.dump({"device": name, "torch": torch.__version__,
                   "results": results}, f, indent=1)
    print("\n| configuration | GFLOP | ours: kernels ms | TFLOP/s | % peak "
          "| call ms | PCIe MB/call | resident call ms | resident B/call "
          "| peer | peer ms | peer/ours |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        if "error" in r:
            print(f"| {r['case']} | {r['gflop']:.1f} | failed "
                  "| | | | | | | | | |")
            continue
        pct = f"{r['peak_pct']:.2f}" if r["peak_pct"] is not None else "?"
        print(f"| {r['case']} {r['options']} | {r['gflop']:.1f} | "
              f"{r['kernel_ms']:.3f} | {r['tflops']:.3f} | {pct} | "
              f"{r['call_ms']:.3f} | {r['h2d_mb'] + r['d2h_mb']:.1f} | "
              f"{r['resident_call_ms']:.3f} | "
              f"{r['resident_bytes_per_call']:.0f} | "
              f"{r['peer']} | {r['peer_ms']:.3f} | {r['ratio']:.4f} |")
    print("\n| layer | ours: projections ms | cuBLAS ms | cuBLAS/ours |")
    print("|---|---|---|---|")
    for r in results:
        if "gemm_ms" in r:
            print(f"| {r['case']} {r['options']} | {r['gemm_ms']:.3f} | "
                  f"{r['cublas_ms']:.3f} | "
                  f"{r['cublas_ms'] / r['gemm_ms']:.3f} |")
    return failed


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--build", default="build")
    p.add_argument("--out", default="build/cuda-bundle")
    p.add_argument("--chip", default="sm_90",
                   help="the device's architecture (H100, H200: sm_90)")
    p.add_argument("--bench", action="store_true")
    p.add_argument("--bench-case", action="append",
                   help="a benchmark configuration instead of BENCH's "
                   "(repeatable; written as a CASE)")
    p.add_argument("cases", nargs="*")
    r = sub.add_parser("run")
    r.add_argument("--dir", default=os.path.dirname(os.path.abspath(__file__)))
    r.add_argument("--repeat", type=int, default=3)
    r.add_argument("--bench", action="store_true")
    r.add_argument("--calls", type=int, default=5,
                   help="timed calls per benchmark configuration")
    r.add_argument("--budget", type=float, default=300,
                   help="seconds after which the remaining benchmark "
                   "configurations are skipped")
    r.add_argument("--timeout", type=float, default=120,
                   help="seconds one executable may run")
    args = parser.parse_args()
    return prepare(args) if args.command == "prepare" else run(args)


if __name__ == "__main__":
    sys.exit(main())
