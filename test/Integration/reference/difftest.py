#!/usr/bin/env python3
"""Randomized differential tester: seeded draws of attention configurations
crossed with pipelines, pipeline options and thread counts, each run against
the independent numpy reference (through check_mha.py).

    difftest.py --mha-run BIN [--mha-aot BIN] --workdir DIR
                [--seed S] [--count N | --minutes M]
                [--targets loops,cpu,vulkan,mma,coop,aot] [--no-minimize]

A trial is one configuration (the layer, or with core=1 one mha.attention:
B, Sq, Sk drawn as 1, around the tile sizes in use +-1, or long; E, H, Hkv
(GQA/MQA), dk != dv, kdim/vdim, causal and causal_offset, key_transposed,
masks of every rank, element type and broadcast, bias, static or dynamic
dims, f32/f16/bf16, softcap, sliding windows (window_left/window_right,
never window_right with causal), random per-batch key lengths, a step on a
static KV cache (kv_cache=Smax: the layer's kv_cache, the core's
mha.cache_append), rotary embeddings of q and k (mha.rotary, the layer's
rotary), the layer's weights prepared once
(prepare=1) or given as constants (weights=const) on the CPU targets;
the GPU kernels' key splits (kv_splits) and packed heads of GQA decoding
(head_tile) on a quarter of their core trials) on one target
drawn for it: `loops`, `cpu` with drawn options (query/key tile sizes,
register tiles, chunk, panel reduction, openmp on/off, raise-attention),
`vulkan` (static shapes; the rules' kernels, the register kernel with
drawn tiles and thread tiles, or the thread-per-row kernel with drawn
tiles; a third of the GPU trials on device buffers, mha-run
--device-resident), `mma` (the CUDA pipeline's
tensor-core kernels run on the Vulkan device with their tensor-core ops
emulated, `vulkan{emulate-tensor-cores}`: static shapes, f16 (or f32 with
`allow-tf32`, checked at the tf32 tolerance), head dims
mostly multiples of 16, query tiles of whole warps, half the trials with
drawn GEMM tiles and stages for the layers' projections, most trials
without transposed keys), `coop` (the Vulkan pipeline's cooperative-matrix
kernel with its matrix ops emulated, `vulkan{cooperative-matrix
emulate-tensor-cores}`: static shapes, f16, head dims mostly multiples of
16 up to 48, the rule's tiles or drawn ones of whole subgroups) or an
`mha-aot`
executable of `cpu`; on 1, 2 or more threads than cores, with
threaded runs repeated (`--repeat`: every call bitwise equal to the first,
since races are intermittent). Results must match the reference at the
suite's tolerances (f32 1e-4; TF32 5e-3; f16 2e-3/1e-2; bf16 2e-2/3e-2).

Each trial prints one line (`trial N: <target> <config>: OK|REFUSED|FAILED`;
REFUSED: an error that names a documented limit, e.g. lavapipe's loop
iterations, which the Vulkan pipeline refuses to pass); a
failure is then minimized (smaller sizes, fewer features, one thread where
it still fails) and printed as a check_mha.py command line to turn into a lit
regression test. The last line is `N of M trials OK` (exit 1 if any failed).
--count runs a fixed sample (what CI runs); --minutes runs a campaign until
the time is up. Same seed, same trials.
"""

import argparse
import os
import random
import shlex
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = os.path.join(HERE, "check_mha.py")
# tf32: f32 data on tensor cores with allow-tf32 (10-bit mantissas).
TOLERANCES = {"f32": ("1e-4", "1e-4"), "tf32": ("5e-3", "5e-3"),
              "f16": ("2e-3", "1e-2"),
              "bf16": ("2e-2", "3e-2")}
TARGETS = ["loops", "cpu", "vulkan", "mma", "coop", "aot"]
# How often each target is drawn (the cpu pipeline has the most options).
WEIGHTS = {"loops": 1, "cpu": 5, "vulkan": 2, "mma": 1, "coop": 1, "aot": 1}


def lengths_around(rng, tile, long_ok):
    """A length drawn as 1, a tile boundary +-1, a random one below three
    tiles, or (rarely) a long one."""
    r = rng.random()
    if r < 0.1:
        return 1
    if r < 0.6:
        return max(1, rng.choice([tile - 1, tile, tile + 1, 2 * tile - 1,
                                  2 * tile, 2 * tile + 1]))
    if r < 0.95 or not long_ok:
        return rng.randint(1, 3 * tile)
    return rng.randint(300, 1100)


def draw_target(rng, targets):
    """(target, pipeline text, q tile, kv tile) for one trial."""
    target = rng.choices(targets, [WEIGHTS[t] for t in targets])[0]
    if target == "loops":
        return target, "loops", 64, 64
    if target == "vulkan":
        draw = rng.random()
        if draw < 0.2:
            # The rules' kernels (the register kernel for attention).
            return target, "vulkan", 64, 32
        if draw < 0.6:
            # The register kernel: rows per thread times row groups, the
            # lanes of a group (`KEYS`) drawn with the value head dim in
            # draw_trial.
            rows = rng.choice([1, 2, 4])
            q = rows * rng.choice([1, 2, 4, 8, 16])
            kv = rng.choice([8, 16, 32, 64])
            return (target, f"vulkan{{q-tile-size={q} kv-tile-size={kv} "
                    f"thread-tile={rows},KEYS}}", q, kv)
        # The thread-per-row kernel (tile sizes alone).
        q, kv = rng.choice([16, 32, 64]), rng.choice([8, 16, 32, 64])
        options = [f"q-tile-size={q}", f"kv-tile-size={kv}"]
        return target, "vulkan{" + " ".join(options) + "}", q, kv
    if target == "mma":
        # The rule's tiles (64 rows over 4 warps, 64 keys), or drawn ones:
        # whole warps of 16 rows, key blocks of 16 to 64.
        options = ["emulate-tensor-cores"]
        if rng.random() < 0.25:
            options.append("allow-tf32")  # f32 trials (draw_trial)
        q, kv = 64, 64
        if rng.random() < 0.5:
            q, kv = rng.choice([16, 32, 64]), rng.choice([16, 32, 64])
            options += [f"q-tile-size={q}", f"kv-tile-size={kv}"]
        if rng.random() < 0.5:
            # The layers' GEMM kernel (4 warps): output tiles of whole
            # 16 x 16 warp shares and 16-byte copies, stages within the
            # 48 KiB of workgroup memory (mha-contraction-to-mma).
            rows, cols = rng.choice([32, 64, 96, 128]), rng.choice([32, 64, 96, 128])
            stages = [n for n in range(2, 9)
                      if n * (rows * 40 + 32 * (cols + 8)) * 2 <= 49152]
            options += [f"gemm-tile={rows},{cols}",
                        f"gemm-stages={rng.choice(stages)}"]
        return target, "vulkan{" + " ".join(options) + "}", q, kv
    if target == "coop":
        # The rule's tiles (4 subgroups of 16 rows, 32 keys; fewer for
        # fewer queries), or drawn ones: whole subgroups, key blocks of 16
        # to 64.
        options = ["cooperative-matrix", "emulate-tensor-cores"]
        q, kv = 64, 32
        if rng.random() < 0.5:
            q, kv = rng.choice([16, 32, 64]), rng.choice([16, 32, 64])
            options += [f"q-tile-size={q}", f"kv-tile-size={kv}"]
        return target, "vulkan{" + " ".join(options) + "}", q, kv
    # cpu, or cpu ahead of time.
    options = []
    q = rng.choice([0, 0, 0, 1, 7, 16, 24, 32, 64, 128])
    kv = rng.choice([64, 64, 8, 16, 32, 48, 100, 128])
    if q:
        options.append(f"q-tile-size={q}")
    if kv != 64:
        options.append(f"kv-tile-size={kv}")
    if rng.random() < 0.3:
        options.append(f"register-tile-rows={rng.choice([1, 2, 3, 4, 8])}")
    if rng.random() < 0.3:
        options.append(f"register-tile-cols={rng.choice([8, 16, 24, 32])}")
    if rng.random() < 0.15:
        options.append(f"chunk={rng.choice([8, 16, 32])}")
    if rng.random() < 0.15:
        options.append(f"panel-reduction-tile={rng.choice([8, 16, 128])}")
    if rng.random() < 0.15:
        options.append("openmp=false")
    if rng.random() < 0.2:
        options.append("raise-attention=false")
    pipeline = "cpu{" + " ".join(options) + "}" if options else "cpu"
    return target, pipeline, q or 64, kv


def draw_config(rng, q_tile, kv_tile, static, long_ok):
    hkv = rng.choice([1, 1, 2, 3, 4])
    h = hkv * rng.choice([1, 2, 3])
    b = rng.choice([1, 1, 2, 3])
    sq = lengths_around(rng, q_tile, long_ok)
    sk = lengths_around(rng, kv_tile, long_ok) if rng.random() < 0.7 else sq
    core = rng.random() < 0.25
    dk = rng.choice([1, 3, 8, 16, 32, 64])
    c = dict(b=b, sq=sq, sk=sk, h=h, hkv=hkv, dk=dk,
             dv=dk if rng.random() < 0.5 else rng.choice([1, 4, 8, 16, 40]),
             causal=int(rng.random() < 0.4), seed=rng.randint(0, 10**6))
    if core:
        c["core"] = 1
        if c["causal"] and rng.random() < 0.5:
            c["causal_offset"] = rng.randint(-sq, sk)
        if rng.random() < 0.3:
            c["key_transposed"] = 1
    else:
        c["eq"] = rng.choice([4, 12, 16, 32, 48, 64, 96])
        if rng.random() < 0.4:
            c["cross"] = 1
            c["ek"] = rng.choice([4, 12, 32, 64])
            c["ev"] = rng.choice([4, 12, 32, 64])
        c["eo"] = rng.choice([c["eq"], 3, 8, 16, 40])
        c["bias"] = int(rng.random() < 0.4)
    if rng.random() < 0.25:
        c["scale"] = rng.choice([0.05, 0.5, 2.0])
    mask = rng.choice(["none", "none", "bool", "float"])
    if mask != "none":
        c["mask"] = mask
        # Rank 3 ([B, Sq, Sk]) is the layer's; a rank-4 mask broadcasts
        # its dims of size 1.
        rank = rng.choice([2, 4] if core else [2, 3, 4])
        full = {2: [sq, sk], 3: [b, sq, sk], 4: [b, h, sq, sk]}[rank]
        shape = [1 if rank == 4 and rng.random() < 0.3 else d for d in full]
        c["mask_shape"] = ",".join(map(str, shape))
        if rng.random() < 0.2 and shape[-2] != 1:
            c["masked_row"] = rng.randrange(sq)
    dyn = [d for d in ("b", "sq", "sk") if rng.random() < 0.25]
    if dyn and not static:
        c["dynamic"] = ",".join(dyn)
    c["dtype"] = rng.choices(["f32", "f16", "bf16"], [6, 1, 1])[0]
    draw_features(rng, c, core)
    return c


def window_size(rng, sk):
    """A window side: 0, 1, 2, a small one up to Sk + 2, or one past Sk."""
    kind = rng.choice(["0", "1", "2", "small", "past"])
    if kind == "small":
        return rng.randint(0, sk + 2)
    if kind == "past":
        return sk + rng.randint(1, 2 * sk + 8)
    return int(kind)


def draw_features(rng, c, core):
    """Softcap, sliding windows and key lengths, each in a fraction of the
    trials (drawn after the rest of the config)."""
    if rng.random() < 0.15:
        c["softcap"] = rng.choice([1.0, 5.0, 30.0])
    if rng.random() < 0.2:
        # causal already means window_right = 0: the ops take window_left
        # only with it.
        sides = ["left"] if c["causal"] else rng.choice(
            [["left"], ["right"], ["left", "right"]])
        for side in sides:
            c["window_" + side] = window_size(rng, c["sk"])
        if core and "causal_offset" not in c and rng.random() < 0.5:
            c["causal_offset"] = rng.randint(-c["sq"], c["sk"])
    if rng.random() < 0.2:
        c["key_lengths"] = "random"
    if not c.get("key_transposed") and rng.random() < 0.15:
        # A step on a static KV cache of Smax >= Sk rows (the layer's
        # kv_cache, or the core's mha.cache_append): the lengths before it
        # are drawn (in [0, Smax - Sk]); a mask spans the whole cache.
        smax = c["sk"] + rng.choice([0, 1, rng.randint(0, 2 * c["sk"] + 8)])
        c["kv_cache"] = smax
        if "mask_shape" in c:
            shape = c["mask_shape"].split(",")
            # A rank-4 mask's 1 broadcasts; the other ranks match exactly.
            if len(shape) != 4 or shape[-1] != "1":
                shape[-1] = str(smax)
            c["mask_shape"] = ",".join(shape)
        if "dynamic" in c and rng.random() < 0.5:
            c["dynamic"] += ",smax"
    if not c.get("key_transposed") and c["dk"] >= 2 and \
            (core or c["sq"] == c["sk"]) and rng.random() < 0.15:
        # Rotary embeddings of q and k (at the cache lengths with a cache;
        # the layer's step has as many queries as keys).
        c["rotary"] = rng.choice(["half", "interleaved"])
        if rng.random() < 0.3:
            c["rotary_dim"] = 2 * rng.randint(1, c["dk"] // 2)


def draw_trial(rng, targets, long_ok, repeat, thread_counts):
    target, pipeline, q_tile, kv_tile = draw_target(rng, targets)
    config = draw_config(rng, q_tile, kv_tile,
                         static=target in ("vulkan", "mma", "coop"),
                         long_ok=long_ok)
    if target == "vulkan" and config["dtype"] == "bf16":
        config["dtype"] = "f16"  # Vulkan kernels take f32 and f16.
    if "KEYS" in pipeline:
        # Lanes dividing the key tile and the value head dim, 8 at most
        # (lavapipe's subgroups); the tiles within 48 KiB of workgroup
        # memory, else the rules' kernel.
        # At most 16 keys a lane where the lanes allow it: lavapipe's
        # shader compiler spends minutes on 4 x 64 scores a lane (LLVM's
        # coroutine frames), which says nothing about the kernel.
        lanes = [n for n in (1, 2, 4, 8)
                 if kv_tile % n == 0 and config["dv"] % n == 0]
        lanes = rng.choice([n for n in lanes if kv_tile // n <= 16]
                           or lanes[-1:])
        size = 4 if config["dtype"] == "f32" else 2
        pad = 16 // size
        memory = ((q_tile + kv_tile) * (config["dk"] + pad)
                  + kv_tile * (config["dv"] + pad)) * size
        pipeline = (pipeline.replace("KEYS", str(kv_tile // lanes))
                    if memory <= 48 * 1024 else "vulkan")
    if target == "mma":
        # f16 (the emulation takes no bf16), or f32 on TF32 tensor cores
        # (allow-tf32); head dims the tensor-core kernels take in most
        # trials (the others run on the register or thread-per-row kernels,
        # as on CUDA).
        tf32 = "allow-tf32" in pipeline
        config["dtype"] = "f32" if tf32 else "f16"
        if rng.random() < 0.8:
            config["dk"] = rng.choice(([8, 24, 40] if tf32 else [])
                                      + [16, 32, 48, 64])
            config["dv"] = rng.choice([config["dk"], 8, 24, 40])
            config.pop("rotary_dim", None)  # drawn for the old dk
        if rng.random() < 0.7:
            # What the attention kernel does not take (it would run on the
            # thread-per-row kernel), left out of most trials.
            config.pop("key_transposed", None)

    if target == "coop":
        # f16; head dims the kernel takes in most trials (the others run on
        # the register kernel), small: lavapipe compiles the emulated
        # products of larger ones slowly.
        config["dtype"] = "f16"
        if rng.random() < 0.8:
            config["dk"] = rng.choice([16, 32, 32, 48])
            config["dv"] = rng.choice([16, 32])
            config.pop("rotary_dim", None)  # drawn for the old dk

    # Weights prepared once (the CPU pipelines' NAME_prepare and
    # NAME_prepared), or constants in the IR (packed at compile time).
    if target in ("cpu", "loops", "aot") and not config.get("core"):
        draw = rng.random()
        if draw < 0.3:
            config["prepare"] = 1
        elif draw < 0.45:
            config["weights"] = "const"
    # The key split of decoding (flash-decoding), forced on any core op the
    # CPU pipelines tile, whatever its shape (the rules choose it for long
    # caches only): 2 to 9 chunks of whole key tiles.
    if target in ("cpu", "aot") and config.get("core") and \
            rng.random() < 0.25:
        config["kv_splits"] = rng.randint(2, 9)
    # On a GPU the register and tensor-core kernels split keys across
    # workgroups, their chunks merged by a kernel: trials whose pipeline
    # picks those kernels (not tile sizes alone, the thread-per-row
    # kernel's), 2 to 9 chunks.
    gpu_split = (target == "vulkan" and
                 (pipeline == "vulkan" or "thread-tile" in pipeline)) or \
        (target in ("mma", "coop") and "q-tile-size" not in pipeline)
    if gpu_split and config.get("core") and rng.random() < 0.25:
        config["kv_splits"] = rng.randint(2, 9)
    # The attention kernels built as IR pack a group's heads into a
    # workgroup (head_tile; the rules do it for decoding with GQA, sizing
    # the tile for the whole group where its queries fit 64 rows): a
    # divisor of the group, on a quarter of the core trials whose rules'
    # tiles take one.
    group = config["h"] // config["hkv"]
    packs = gpu_split and "q-tile-size" not in pipeline
    if packs and config.get("core") and group > 1 and \
            group * config["sq"] <= 64 and rng.random() < 0.25:
        config["head_tile"] = rng.choice(
            [n for n in range(2, group + 1) if group % n == 0])
    threads = 1
    if target in ("cpu", "aot") and "openmp=false" not in pipeline:
        threads = rng.choice(thread_counts)
    # On device buffers (mha-run --device-resident): the results compared
    # are the device-resident copy's (a decoding step's caches updated in
    # place on the device).
    resident = target in ("vulkan", "mma", "coop") and rng.random() < 0.3
    return dict(target=target, pipeline=pipeline, threads=threads,
                repeat=repeat if threads > 1 else 1, config=config,
                resident=resident)


def command(args, trial, workdir):
    """The check_mha.py command line of a trial."""
    c = trial["config"]
    atol, rtol = TOLERANCES[
        "tf32" if "allow-tf32" in trial["pipeline"] else c.get("dtype", "f32")]
    cmd = [sys.executable, CHECK, "--mha-run", args.mha_run, "--workdir",
           workdir, "--pipeline", trial["pipeline"], f"--atol={atol}",
           f"--rtol={rtol}"]
    if trial["target"] == "aot":
        cmd += ["--mha-aot", args.mha_aot,
                "--aot-run-arg=--threads", f"--aot-run-arg={trial['threads']}",
                f"--aot-repeat={trial['repeat']}"]
    elif trial["target"] == "cpu":
        cmd += [f"--mha-run-arg=--threads={trial['threads']}"]
        if trial["repeat"] > 1:
            cmd += [f"--mha-run-arg=--repeat={trial['repeat']}"]
    if trial.get("resident"):
        cmd += ["--mha-run-arg=--device-resident"]
    return cmd + [f"{k}={v}" for k, v in c.items()]


# Documented limits a pipeline refuses with an error that names them: a
# trial past one is REFUSED, neither OK nor FAILED. Lavapipe's loop limit
# (mha-check-kernel-loop-iterations) depends on lengths and tiles together,
# and needs a static bound on each kernel loop (the thread-per-row kernel's
# key loop with a run-time causal offset has none that the analyses prove);
# CUDA's 48 KiB of workgroup memory (mha-check-workgroup-memory, in `mma`
# trials) on the drawn tiles of the thread-per-row kernels.
REFUSALS = ["loop iterations, more than the 65535 the target runs",
            "has no static bound, which the kernel loop iteration limit needs",
            "(max_workgroup_memory): give smaller tiles",
            # kv_splits on an op the rules give to the thread-per-row
            # kernel (the register kernel's tiles would not fit).
            "not by the thread-per-row kernel on a"]


def run(args, trial, workdir):
    """(ok, refused, output) of a trial."""
    result = subprocess.run(command(args, trial, workdir),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    refused = result.returncode != 0 and any(
        r in result.stdout for r in REFUSALS) and "MISMATCH" not in \
        result.stdout
    return result.returncode == 0, refused, result.stdout


def describe(trial):
    c = " ".join(f"{k}={v}" for k, v in trial["config"].items())
    resident = " --device-resident" if trial.get("resident") else ""
    return (f"{trial['target']} --pipeline='{trial['pipeline']}'{resident} "
            f"threads={trial['threads']}: {c}")


def simpler(trial):
    """Trials one step simpler than `trial`, most promising first."""
    c = trial["config"]
    out = []

    def with_config(**changes):
        new = dict(c)
        for k, v in changes.items():
            if v is None:
                new.pop(k, None)
            else:
                new[k] = v
        out.append(dict(trial, config=new))

    if trial["threads"] > 2:
        out.append(dict(trial, threads=2))
    for key in ("mask", "dynamic", "scale", "key_transposed", "softcap",
                "key_lengths", "window_left", "window_right", "kv_cache",
                "rotary", "prepare", "weights", "kv_splits", "head_tile"):
        if key in c:
            extra = {"mask_shape": None, "masked_row": None} \
                if key == "mask" else {}
            if key == "kv_cache":  # its mask spans the cache
                extra = {"mask": None, "mask_shape": None, "masked_row": None}
            if key == "rotary":
                extra = {"rotary_dim": None}
            # causal_offset places the diagonal of causal and the windows:
            # it goes with the last of them.
            other = "window_right" if key == "window_left" else "window_left"
            if key in ("window_left", "window_right") and \
                    not c.get("causal") and other not in c:
                extra = {"causal_offset": None}
            with_config(**{key: None}, **extra)
    if c.get("dtype", "f32") != "f32":
        with_config(dtype="f32")
    for key in ("bias", "causal"):
        if c.get(key):
            with_config(**{key: None, "causal_offset": None})
    if c.get("masked_row") is not None:
        with_config(masked_row=None)
    if "mask_shape" in c:
        shape = [int(d) for d in c["mask_shape"].split(",")]
        if len(shape) > 2:
            full = [c["b"], c["h"], c["sq"], c["sk"]][-len(shape):]
            if shape[-2:] == full[-2:]:
                with_config(mask_shape=",".join(map(str, shape[-2:])))
    if c["b"] > 1:
        with_config(b=1, mask=None, mask_shape=None, masked_row=None)
    if c["h"] > c["hkv"]:
        with_config(h=c["hkv"], mask=None, mask_shape=None, masked_row=None)
    if c["hkv"] > 1:
        with_config(h=c["h"] // c["hkv"], hkv=1, mask=None, mask_shape=None,
                    masked_row=None)
    for key in ("sq", "sk"):
        n = c[key]
        for m in sorted({n // 2, n - 1}):
            if 1 <= m < n:
                with_config(**{key: m, "mask": None, "mask_shape": None,
                               "masked_row": None, "causal_offset": None})
    for key in ("dk", "dv", "eq", "ek", "ev", "eo"):
        if key in c and c[key] > 4 and not (key == "eq" and "dk" in c and
                                             c["dk"] * c["h"] > c[key] // 2):
            with_config(**{key: c[key] // 2},
                        **({"rotary_dim": None} if key == "dk" else {}))
    if trial["threads"] == 2:
        out.append(dict(trial, threads=1, repeat=1))
    return out


def minimize(args, trial, workdir, budget_s=120):
    """The smallest trial found (greedily) that still fails."""
    deadline = time.time() + budget_s
    progress = True
    while progress and time.time() < deadline:
        progress = False
        for candidate in simpler(trial):
            if time.time() > deadline:
                break
            ok, refused, _ = run(args, candidate, workdir)
            if not ok and not refused:
                trial, progress = candidate, True
                break
    return trial


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--mha-run", required=True)
    parser.add_argument("--mha-aot")
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--count", type=int, default=20)
    parser.add_argument("--minutes", type=float,
                        help="run a campaign this long instead of --count")
    parser.add_argument("--targets",
                        default="loops,cpu,vulkan,mma,coop,aot")
    parser.add_argument("--long", action="store_true",
                        help="also draw long sequences (300-1100)")
    parser.add_argument("--threads", default="1,2,2,4,8",
                        help="thread counts threaded trials draw from "
                        "(repeats weigh; default 1,2,2,4,8)")
    parser.add_argument("--repeat", type=int, default=4,
                        help="calls of each threaded run, every result "
                        "bitwise the first's (1: one call)")
    parser.add_argument("--no-minimize", action="store_true")
    args = parser.parse_args()
    targets = [t for t in args.targets.split(",") if t]
    thread_counts = [int(t) for t in args.threads.split(",") if t]
    unknown = set(targets) - set(TARGETS)
    if unknown:
        parser.error(f"unknown target(s) {', '.join(sorted(unknown))}")
    if "aot" in targets and not args.mha_aot:
        parser.error("the aot target needs --mha-aot")
    rng = random.Random(args.seed)
    deadline = time.time() + args.minutes * 60 if args.minutes else None
    trials = failures = refusals = 0
    start = time.time()
    while (trials < args.count) if deadline is None else \
            (time.time() < deadline):
        trial = draw_trial(rng, targets, args.long or deadline is not None,
                           args.repeat, thread_counts)
        workdir = os.path.join(args.workdir, str(trials % 8))
        ok, refused, output = run(args, trial, workdir)
        verdict = "OK" if ok else "REFUSED" if refused else "FAILED"
        print(f"trial {trials}: {describe(trial)}: {verdict}", flush=True)
        trials += 1
        refusals += refused
        if ok or refused:
            continue
        failures += 1
        print(output)
        if not args.no_minimize:
            small = minimize(args, trial, os.path.join(args.workdir, "min"))
            print(f"  minimized: {describe(small)}")
            print("  reproduce: " + " ".join(
                shlex.quote(a) for a in command(
                    args, small, os.path.join(args.workdir, "repro"))),
                flush=True)
    print(f"{trials - failures - refusals} of {trials} trials OK, "
          f"{refusals} refused by a documented limit "
          f"({time.time() - start:.0f} s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
