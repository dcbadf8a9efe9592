#!/usr/bin/env python3
"""Our attention layer against what a user would otherwise run, side by side.

    bench/run.sh [--configs bert-s128,gpt2-*] [--threads 1,2] [--rounds 5]
                 [--quick] [--markdown out.md] [--json out.json] [-v]

(run.sh installs what is missing and builds first; this file is the harness
itself and may be run directly with /usr/bin/python3 once everything is
there: `bench/peers.py --mha-run build/bin/mha-run ...`.)

Peers, each at every thread count:

  ours          build/bin/mha-run --pipeline=cpu --random-inputs
                --benchmark=N --threads=T on a generated .mlir of the layer.
                Its compile time is reported apart and never timed. Two
                forms of a layer: `cpu`, the weights packed on every call,
                and `prepared`, packed once beforehand (--prepare-weights:
                the weights are marked mha.weight), as ONNX Runtime packs
                its initializers when the session is made.
  torch2        PyTorch 2 from PyPI (pinned in bench/requirements-bench.txt,
                in bench/work/venv; MKL and oneDNN as shipped, threads set
                to ours): nn.MultiheadAttention, and the layer written with
                F.scaled_dot_product_attention (`sdpa`), the faster
                reported; SDPA alone on the core rows (decoding and prefill
                over a cache included).
  torch         PyTorch 1.13 (Debian's python3-torch) nn.MultiheadAttention,
                in the environment as it is ("out of the box").
  torch-tuned   the same in a tuned environment, set for that process only:
                OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset, OMP_WAIT_POLICY
                =PASSIVE, ATEN_CPU_CAPABILITY=avx512 (avx2 on a host
                without AVX-512F), jemalloc preloaded.
  iree          IREE from PyPI (iree-base-compiler and iree-base-runtime,
                pinned in bench/requirements-bench.txt, in bench/work/venv):
                the layer's ONNX model in plain ops (onnx_models.py's
                `primitives`) imported by iree-import-onnx, and the layer
                with scaled_dot_product_attention in the torch dialect
                (torch_ir.py's `sdpa`, as iree-turbine exports a PyTorch 2
                module; IREE's attention op), compiled by iree-compile for
                llvm-cpu with the host's CPU features, run on its
                local-task device with T workers (iree_worker.py); compile
                time excluded. Not on the cache rows.
  ort           ONNX Runtime from PyPI (the onnxruntime pinned in
                python/requirements-onnx.txt, in bench/work/venv) on the
                layer as an ONNX model in two forms (onnx_models.py), the
                faster one reported (ort_worker.py); on the rows of a step
                over a K/V cache (decoding, prefill with a cache), ONNX's
                opset-24 Attention over a static cache and ONNX Runtime's
                GroupQueryAttention with past buffers.

Ceilings: the measured f32 FMA peak per thread count (fma_peak.c), which
every GFLOP/s figure is also given as a percentage of, and the best sgemm
PyTorch reaches on the layer's projection shape [B*S, E] x [E, E]. Decode
rows (one query per head against a long K/V, bound by reading it) are given
as GB/s of K/V read per call too, and as a percentage of the read
bandwidth at that thread count (bw_probe.c), which runs in every round of
those rows beside the peers: the percentage is the median of the rounds'.

Interleaving. Machine speed drifts (turbo, other load, thermal), so peers
are never timed one after the other in long blocks: for each configuration
and thread count the harness runs R rounds, and in each round every peer
(every form of it) runs N timed calls. The order of the peers rotates from
round to round so that no peer always follows the same one. The torch and
ONNX Runtime peers are persistent worker processes (torch_worker.py,
ort_worker.py) that load the layer once and time calls when asked, so that
process start-up and model loading never enter a round; mha-run is started
once per round, and only its per-call times are used. A short pause after
each step lets the previous peer's spinning thread pool go to sleep before
the next peer starts.

Numbers. Per peer: the median over rounds of each round's median call time,
and the smallest and largest call time of all rounds. GFLOP/s counts the
four projections (2*B*(Sq*E*H*d + 2*Sk*E*Hkv*d + Sq*H*d*E)) plus the
attention (2*B*H*pairs*2d), where pairs counts only the (query, key) pairs
the causal mask leaves (Sq*(Sq+1)/2 for Sq = Sk): work a peer does on masked
pairs is not credited. Softmax, masks and biases are not counted. Every
peer is charged the same count, so GFLOP/s ratios equal time ratios; the
ratio column is peer_ms / ours_ms (> 1: we are faster).
"""

import argparse
import dataclasses
import datetime
import fnmatch
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
JEMALLOC = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"


# --------------------------------------------------------------------------
# Configurations
# --------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Config:
    name: str
    title: str
    b: int
    sq: int
    sk: int
    e: int
    h: int
    hkv: int
    d: int
    bias: bool = True
    causal: bool = False
    cross: bool = False
    core: bool = False   # mha.attention alone on [B, H, S, d]: ours only
    decode: bool = False  # bound by reading K/V: GB/s against bw_probe.c
    # A step over a K/V cache (decoding, prefill with a cache): ONNX
    # Runtime's forms are the cache ones (onnx_models.CACHE_FORMS).
    cache: bool = False
    # Element type of every input and the output (core rows): f32 or bf16.
    dtype: str = "f32"

    def shape(self):
        s = f"Sq={self.sq} Sk={self.sk}" if self.sk != self.sq else f"S={self.sq}"
        parts = [f"B={self.b}", s]
        if not self.core:
            parts.append(f"E={self.e}")
        parts.append(f"H={self.h}")
        if self.hkv != self.h:
            parts.append(f"Hkv={self.hkv}")
        parts.append(f"d={self.d}")
        if self.causal:
            parts.append("causal")
        if self.cross:
            parts.append("cross")
        if self.bias and not self.core:
            parts.append("biases")
        if self.dtype != "f32":
            parts.append(self.dtype)
        return " ".join(parts)

    def pairs(self):
        """(query, key) pairs the attention computes: all of them, or only
        those the bottom-right aligned causal mask leaves visible."""
        if not self.causal:
            return self.sq * self.sk
        off = self.sk - self.sq
        return sum(max(0, min(self.sk, i + off + 1)) for i in range(self.sq))

    def kv_bytes(self):
        """Bytes of keys and values one call reads (and of the weights, for
        a layer)."""
        size = 2 if self.dtype == "bf16" else 4
        weights = 0 if self.core else 2 * self.e * (
            self.h + self.hkv) * self.d * size
        return 2 * self.b * self.hkv * self.sk * self.d * size + weights

    def flops(self):
        attention = 2 * self.b * self.h * self.pairs() * (2 * self.d)
        if self.core:
            return attention
        # K and V of the keys, or over a cache of the step's tokens only.
        kv_rows = self.sq if self.cache else self.sk
        projections = 2 * self.b * (self.sq * self.e * self.h * self.d
                                    + 2 * kv_rows * self.e * self.hkv * self.d
                                    + self.sq * self.h * self.d * self.e)
        return projections + attention


def _layer(name, title, b, s, e, h, hkv=None, sk=None, **kw):
    return Config(name, title, b, s, sk or s, e, h, hkv or h, e // h, **kw)


CONFIGS = [
    _layer("bert-s128", "BERT-base", 1, 128, 768, 12),
    _layer("bert-s512", "BERT-base", 1, 512, 768, 12),
    _layer("bert-b8-s128", "BERT-base, batch 8", 8, 128, 768, 12),
    _layer("gpt2-s1024", "GPT-2 (small), causal", 1, 1024, 768, 12, causal=True),
    _layer("gpt2-s2048", "GPT-2 (small), causal", 1, 2048, 768, 12, causal=True),
    _layer("e512-s4096", "long sequence", 1, 4096, 512, 8),
    _layer("e512-s4096-causal", "long sequence, causal", 1, 4096, 512, 8,
           causal=True),
    _layer("cross-128x1024", "cross attention", 1, 128, 512, 8, sk=1024,
           cross=True),
    _layer("gqa-s1024", "grouped-query (Llama-like), causal", 1, 1024, 2048,
           32, hkv=8, causal=True, bias=False),
    Config("core-s1024", "core attention alone (mha.attention), causal",
           1, 1024, 1024, 0, 12, 12, 64, bias=False, causal=True, core=True),
    Config("core-s2048", "core attention alone (mha.attention), causal",
           1, 2048, 2048, 0, 12, 12, 64, bias=False, causal=True, core=True),
] + [
    Config(f"decode-b{b}-{sk // 1024}k",
           "decoding (mha.attention, one query per head, grouped-query)",
           b, 1, sk, 0, 32, 8, 128, bias=False, causal=True, core=True,
           decode=True, cache=True)
    for b, sk in ((1, 4096), (1, 32768), (8, 4096), (8, 32768))
] + [
    Config("decode-mqa-b1-32k",
           "decoding, multi-query (one key/value head): the key split "
           "across threads",
           1, 1, 32768, 0, 16, 1, 128, bias=False, causal=True, core=True,
           decode=True, cache=True),
] + [
    Config(f"decode-b{b}-{sk // 1024}k-bf16",
           "decoding with bf16 inputs and caches",
           b, 1, sk, 0, 32, 8, 128, bias=False, causal=True, core=True,
           decode=True, cache=True, dtype="bf16")
    for b, sk in ((1, 32768), (8, 4096))
] + [
    Config("decode-layer-b8-4k",
           "decoding step of a Llama-size layer on KV caches "
           "(mha.multi_head_attention kv_cache: projections of the new token, "
           "the caches appended in place)",
           8, 1, 4096, 4096, 32, 8, 128, bias=False, causal=True,
           decode=True, cache=True),
    Config("prefill-cache-512x4k",
           "prefill with a cache (mha.attention, 512 new queries at the end "
           "of 4096 keys, grouped-query)",
           1, 512, 4096, 0, 32, 8, 128, bias=False, causal=True, core=True,
           cache=True),
]


def mlir_for(c):
    """The .mlir mha-run times: the layer as one mha.multi_head_attention
    (as examples/bert-base.mlir), or the core op alone for `core` rows."""
    t = lambda *dims: ("tensor<" + "x".join(map(str, dims)) +
                       f"x{c.dtype}>")
    if c.core:
        q, kv, out = (t(c.b, c.h, c.sq, c.d), t(c.b, c.hkv, c.sk, c.d),
                      t(c.b, c.h, c.sq, c.d))
        attrs = " {causal}" if c.causal else ""
        return (f"// {c.name}: {c.title}, {c.shape()} (generated by bench/peers.py)\n"
                f"func.func @main(%q: {q}, %k: {kv}, %v: {kv}) -> {out} {{\n"
                f"  %init = tensor.empty() : {out}\n"
                f"  %o = mha.attention ins(%q, %k, %v : {q}, {kv}, {kv})\n"
                f"         outs(%init : {out}){attrs} -> {out}\n"
                f"  return %o : {out}\n}}\n")
    hd, kvd = c.h * c.d, c.hkv * c.d
    if c.cache:
        return layer_cache_mlir(c, t)
    args = [("x", t(c.b, c.sq, c.e))]
    if c.cross:
        args.append(("kv", t(c.b, c.sk, c.e)))
    args += [("w_q", t(c.e, hd)), ("w_k", t(c.e, kvd)), ("w_v", t(c.e, kvd)),
             ("w_o", t(hd, c.e))]
    if c.bias:
        args += [("b_q", t(hd)), ("b_k", t(kvd)), ("b_v", t(kvd)), ("b_o", t(c.e))]
    src = "%kv" if c.cross else "%x"
    operands = ["%x", src, src, "%w_q", "%w_k", "%w_v", "%w_o"]
    types = [args[0][1], dict(args).get("kv", args[0][1]),
             dict(args).get("kv", args[0][1])] + [ty for n, ty in args if n[0] == "w"]
    clause = ""
    if c.bias:
        clause = " bias(%b_q, %b_k, %b_v, %b_o)"
        types += [ty for n, ty in args if n[0] == "b"]
    attrs = [f"num_heads = {c.h} : i64"]
    if c.hkv != c.h:
        attrs.append(f"num_kv_heads = {c.hkv} : i64")
    if c.causal:
        attrs.append("causal")
    out = t(c.b, c.sq, c.e)
    # The weights marked: the `prepared` form calls @main_prepare once.
    sig = ", ".join(f"%{n}: {ty}" + (" {mha.weight}" if n[:2] in ("w_", "b_")
                                      else "") for n, ty in args)
    return (f"// {c.name}: {c.title}, {c.shape()} (generated by bench/peers.py)\n"
            f"func.func @main({sig}) -> {out} {{\n"
            f"  %y = mha.multi_head_attention {', '.join(operands)}{clause}\n"
            f"         {{{', '.join(attrs)}}}\n"
            f"         : ({', '.join(types)}) -> {out}\n"
            f"  return %y : {out}\n}}\n")


def layer_cache_mlir(c, t):
    """A cache row's layer: its step's tokens over caches [B, Hkv, Sk, d]
    full but for the step (the lengths a constant Sk - Sq in the function,
    so that mha-run's random inputs leave them alone), the caches returned
    updated."""
    hd, kvd = c.h * c.d, c.hkv * c.d
    x, cache = t(c.b, c.sq, c.e), t(c.b, c.hkv, c.sk, c.d)
    weights = [("w_q", t(c.e, hd)), ("w_k", t(c.e, kvd)),
               ("w_v", t(c.e, kvd)), ("w_o", t(hd, c.e))]
    sig = ", ".join([f"%x: {x}"] + [f"%{n}: {ty} {{mha.weight}}"
                                    for n, ty in weights] +
                    [f"%k_cache: {cache}", f"%v_cache: {cache}"])
    lengths = f"tensor<{c.b}xi32>"
    types = ", ".join([x] * 3 + [ty for _, ty in weights] +
                      [cache, cache, lengths])
    results = f"{x}, {cache}, {cache}"
    attrs = [f"num_heads = {c.h} : i64", f"num_kv_heads = {c.hkv} : i64"]
    if c.causal:
        attrs.append("causal")
    return (f"// {c.name}: {c.title}, {c.shape()} (generated by bench/peers.py)\n"
            f"func.func @main({sig}) -> ({results}) {{\n"
            f"  %len = arith.constant dense<{c.sk - c.sq}> : {lengths}\n"
            f"  %y, %k, %v = mha.multi_head_attention %x, %x, %x, %w_q, %w_k, "
            f"%w_v, %w_o\n"
            f"         kv_cache(%k_cache, %v_cache, %len) {{{', '.join(attrs)}}}\n"
            f"         : ({types}) -> ({results})\n"
            f"  return %y, %k, %v : {results}\n}}\n")


# --------------------------------------------------------------------------
# Peers
# --------------------------------------------------------------------------

class PeerError(Exception):
    pass


@dataclasses.dataclass
class Round:
    median: float
    min: float
    max: float


def summarize(ms):
    return Round(statistics.median(ms), min(ms), max(ms))


class Ours:
    """mha-run, one process per round: its JIT compile time is printed
    apart and is not in the call times."""

    key, label = "ours", "ours (mha-run cpu)"

    def __init__(self, args, cfg, threads, workdir):
        self.cmd = [args.mha_run, "--pipeline=cpu", "--random-inputs",
                    f"--threads={threads}",
                    os.path.join(workdir, "mlir", cfg.name + ".mlir")]
        # Layers also with their weights prepared once (mha-run
        # --prepare-weights), as ONNX Runtime packs its initializers when
        # the session is made.
        self.forms = ["cpu"] if cfg.core else ["cpu", "prepared"]
        self.form_errors = {}
        self.compile_ms = []
        self.info = {}

    def start(self):
        # One call to catch a failing compile early and to size the rounds.
        return {form: self.run(form, 1).median for form in self.forms}

    def run(self, form, n):
        extra = ["--prepare-weights"] if form == "prepared" else []
        p = subprocess.run(self.cmd + extra + [f"--benchmark={n}"],
                           stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        bench = re.search(r"benchmark: \d+ calls, median ([\d.]+) ms, "
                          r"min ([\d.]+) ms, max ([\d.]+) ms", p.stdout)
        if p.returncode != 0 or not bench:
            tail = " | ".join(p.stdout.strip().splitlines()[-3:])
            raise PeerError(f"mha-run exit {p.returncode}: {tail}")
        compile_ = re.search(r"compile: lowering ([\d.]+) ms, JIT[^\d]*([\d.]+) ms",
                             p.stdout)
        if compile_:
            self.compile_ms.append(float(compile_[1]) + float(compile_[2]))
        return Round(*map(float, bench.groups()))

    def stop(self):
        pass


class Worker:
    """A persistent process speaking the line-JSON protocol of
    torch_worker.py and ort_worker.py."""

    def __init__(self, key, label, cmd, env, log_path):
        self.key, self.label, self.cmd, self.env = key, label, cmd, env
        self.log_path = log_path
        self.proc = None
        self.forms, self.form_errors, self.info = [], {}, {}

    def _request(self, obj=None):
        if obj is not None:
            self.proc.stdin.write(json.dumps(obj) + "\n")
            self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait()
            with open(self.log_path) as f:
                err = f.read().strip().splitlines()[-3:]
            raise PeerError(f"{self.key} worker exit {self.proc.returncode}: "
                            f"{' | '.join(err)} (log: {self.log_path})")
        answer = json.loads(line)
        if "error" in answer:
            raise PeerError(f"{self.key}: {answer['error']}")
        return answer

    def start(self):
        # stderr to a file: a pipe nobody reads would block a chatty worker.
        with open(self.log_path, "w") as log_file:
            self.proc = subprocess.Popen(self.cmd, env=self.env, text=True,
                                         stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE,
                                         stderr=log_file, cwd=BENCH)
        return self.ready(self._request())

    def run(self, form, n):
        return summarize(self._request({"cmd": "run", "form": form, "n": n})["ms"])

    def stop(self):
        if self.proc and self.proc.poll() is None:
            try:
                self.proc.stdin.write('{"cmd": "quit"}\n')
                self.proc.stdin.flush()
                self.proc.wait(timeout=30)
            except (BrokenPipeError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()


def _log_path(args, cfg, key, threads):
    return os.path.join(args.workdir, "logs", f"{cfg.name}-{key}-T{threads}.log")


class Torch(Worker):
    """PyTorch: Debian's 1.13 out of the box (`torch`) and tuned
    (`torch-tuned`), or PyTorch 2 from PyPI in the bench's environment
    (`torch2`: oneDNN and MKL as shipped, the thread count set)."""

    def __init__(self, args, cfg, threads, key):
        tuned = key == "torch-tuned"
        env = dict(os.environ)
        # The thread count is the one thing set in both environments: ATen
        # takes it from set_num_threads, a threaded BLAS from its own variable.
        env["OPENBLAS_NUM_THREADS"] = str(threads)
        if tuned:
            env.pop("OPENBLAS_CORETYPE", None)
            env.pop("OPENBLAS_L2_SIZE", None)
            env["OMP_WAIT_POLICY"] = "PASSIVE"
            # ATen 1.13 takes the variable as it is: AVX-512 kernels on a
            # host without them die of SIGILL.
            env["ATEN_CPU_CAPABILITY"] = (
                "avx512" if "avx512f" in host_cpu_flags() else "avx2")
            if os.path.exists(JEMALLOC):
                env["LD_PRELOAD"] = " ".join(
                    filter(None, [JEMALLOC, env.get("LD_PRELOAD")]))
        python = sys.executable
        if key == "torch2":
            env.pop("OPENBLAS_CORETYPE", None)
            env.pop("OPENBLAS_L2_SIZE", None)
            python = args.venv_python
            if not os.access(python, os.X_OK):
                raise PeerError(f"no Python with PyTorch 2 at {python} "
                                f"(bench/run.sh makes it)")
        spec = {"threads": threads, "warmup": args.warmup,
                "config": dataclasses.asdict(cfg) if cfg else None}
        super().__init__(key, {"torch": "PyTorch", "torch-tuned": "PyTorch tuned",
                               "torch2": "PyTorch"}[key],
                         [python, os.path.join(BENCH, "torch_worker.py"),
                          json.dumps(spec)], env,
                         _log_path(args, cfg, key, threads))

    def ready(self, msg):
        self.forms, self.info = msg["forms"], msg["info"]
        if self.key == "torch2":
            self.label = f"PyTorch {msg['info']['torch'].split('+')[0]}"
        if not self.forms:
            raise PeerError(f"torch {msg['info']['torch']} has no form for "
                            f"this configuration")
        return self.time_forms()

    def time_forms(self):
        # One call per form sizes the rounds; the warm-up calls are done.
        return {f: self.run(f, 1).median for f in self.forms}

    def sgemm(self, m, n, k, seconds):
        a = self._request({"cmd": "sgemm", "m": m, "n": n, "k": k,
                           "seconds": seconds})
        return a["gflops"], a["how"]


class OnnxPeer(Worker):
    """A peer that runs the layer's ONNX models (onnx_models.py) in a worker
    under the bench's PyPI environment: ONNX Runtime (ort_worker.py) on the
    forms with an attention node; IREE (iree_worker.py) on the form in plain
    ops, which its ONNX import takes (it has neither ONNX's Attention nor
    ONNX Runtime's contrib ops), and on the layer with
    `scaled_dot_product_attention` in the torch dialect (torch_ir.py: what
    its PyTorch path hands it, which it maps to its attention op)."""
    built = set()  # models written by this run, shared by the thread counts
    PEERS = {"ort": ("ONNX Runtime", "ort_worker.py", "onnxruntime"),
             "iree": ("IREE", "iree_worker.py", "IREE")}

    def __init__(self, key, args, cfg, threads, workdir):
        import onnx_models  # only these peers need onnx
        label, script, what = self.PEERS[key]
        if key == "iree":
            forms = (() if cfg.core else onnx_models.PRIMITIVE_FORMS) + \
                ("sdpa",)
        else:
            forms = (onnx_models.FORMS if not cfg.cache else
                     onnx_models.CACHE_FORMS if cfg.core else
                     onnx_models.LAYER_CACHE_FORMS)
        models, form_inputs = {}, {}
        for form in forms:
            # Each form's model: a cache step's (with its own inputs), the
            # torch dialect's (torch_ir.py: IREE's PyTorch input) or ONNX's.
            ext = ".mlir" if form == "sdpa" else ".onnx"
            path = os.path.join(workdir, "models", f"{cfg.name}-{form}{ext}")
            if cfg.cache:
                floats, ints = onnx_models.build_cache_step(cfg, form, path)
                form_inputs[form] = {"floats": floats, "ints": ints}
            elif path not in OnnxPeer.built:
                if form == "sdpa":
                    import torch_ir
                    torch_ir.build(cfg, path)
                else:
                    onnx_models.build(cfg, form, path)
                OnnxPeer.built.add(path)
            models[form] = path
        inputs = {"x": [cfg.b, cfg.sq, cfg.e]}
        if cfg.cross:
            inputs["kv"] = [cfg.b, cfg.sk, cfg.e]
        if cfg.core:
            inputs = {"q": [cfg.b, cfg.h, cfg.sq, cfg.d],
                      "k": [cfg.b, cfg.hkv, cfg.sk, cfg.d],
                      "v": [cfg.b, cfg.hkv, cfg.sk, cfg.d]}
        # IREE's first calls are slower for longer (its thread pool).
        spec = {"threads": threads, "models": models, "inputs": inputs,
                "form_inputs": form_inputs,
                "warmup": max(args.warmup, 5) if key == "iree" else args.warmup,
                "workdir": os.path.join(workdir, "models")}
        if not os.access(args.venv_python, os.X_OK):
            raise PeerError(f"no Python with {what} at {args.venv_python} "
                            f"(bench/run.sh makes it)")
        super().__init__(key, label,
                         [args.venv_python, os.path.join(BENCH, script),
                          json.dumps(spec)], dict(os.environ),
                         _log_path(args, cfg, key, threads))

    def ready(self, msg):
        self.info = {"version": msg["version"]}
        self.label = f"{self.label} {msg['version']}"
        self.forms = [f for f, s in msg["forms"].items() if s == "ok"]
        self.form_errors = {f: s for f, s in msg["forms"].items() if s != "ok"}
        return {f: self.run(f, 1).median for f in self.forms}


# --------------------------------------------------------------------------
# Ceilings
# --------------------------------------------------------------------------

def host_cpu_flags():
    """The CPU flags /proc/cpuinfo lists (avx2, avx512f, ...)."""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    return set()


def probe_runs(args, name, argv, repeats=None):
    """The outputs of `repeats` (default args.peak_repeats) runs of
    bench/NAME.c with `argv` (built here when missing or older than its
    source), a pause between them."""
    binary = os.path.join(args.workdir, name)
    source = os.path.join(BENCH, name + ".c")
    if (not os.path.exists(binary)
            or os.path.getmtime(binary) < os.path.getmtime(source)):
        subprocess.run([args.cc, "-O2", "-pthread", "-o", binary, source],
                       check=True)
    outs = []
    for _ in range(repeats or args.peak_repeats):
        outs.append(subprocess.run([binary] + argv, check=True,
                                   stdout=subprocess.PIPE, text=True).stdout)
        time.sleep(args.gap)
    return outs


def bw_probe(args, threads):
    """One run of bw_probe.c (1 GiB read by `threads` threads, best of 3
    passes), GB/s: run in every round of a decode row, beside its peers."""
    out = probe_runs(args, "bw_probe", [str(threads), "1024", "3"],
                     repeats=1)[0]
    return float(re.search(r"([\d.]+) GB/s", out)[1])


def fma_peak(args, threads):
    """Best of a few runs of fma_peak.c, GFLOP/s. Its kernel is chosen at
    run time (zmm with AVX-512F, else ymm), and named in args.peak_kernel."""
    outs = probe_runs(args, "fma_peak", [str(threads), str(args.peak_seconds)])
    args.peak_kernel = {"avx512f": "16 zmm FMA chains per thread",
                        "avx2": "12 ymm FMA chains per thread, no AVX-512 "
                                "on this host"}.get(
        re.search(r"threads, (\w+),", outs[-1])[1], "?")
    return max(float(re.search(r"([\d.]+) GFLOP/s", out)[1]) for out in outs)


# --------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------

@dataclasses.dataclass
class Result:
    """All rounds of one form of one peer, at one configuration and thread
    count."""
    peer: str
    label: str
    form: str
    rounds: list = dataclasses.field(default_factory=list)
    error: str = ""

    @property
    def median(self):
        return statistics.median(r.median for r in self.rounds)

    @property
    def min(self):
        return min(r.min for r in self.rounds)

    @property
    def max(self):
        return max(r.max for r in self.rounds)


_T0 = time.monotonic()


def log(*a):
    print(f"[{time.monotonic() - _T0:6.1f}s]", *a, file=sys.stderr, flush=True)


def iterations(args, estimate_ms):
    """Timed calls per round for one form: about --round-seconds of work,
    at least --min-iters so that a round's median means something."""
    n = round(args.round_seconds * 1e3 / max(estimate_ms, 1e-3))
    return max(args.min_iters, min(args.max_iters, n))


def bench_one(args, cfg, threads):
    """Every peer at one configuration and thread count, interleaved."""
    factories = [("ours", lambda: Ours(args, cfg, threads, args.workdir))]
    onnx_peer = lambda key: (key, lambda: OnnxPeer(key, args, cfg, threads,
                                                   args.workdir))
    refused = {}  # peers that cannot run this configuration, and why
    if cfg.cache and "ort" in args.peers and cfg.dtype != "f32":
        refused["ort"] = (f"ONNX Runtime's CPU Attention and "
                         f"GroupQueryAttention have no {cfg.dtype} kernels")
    elif cfg.cache and "ort" in args.peers:
        factories.append(onnx_peer("ort"))
    if cfg.core and not cfg.cache and "iree" in args.peers:
        factories.append(onnx_peer("iree"))
    if cfg.core and not cfg.cache and "ort" in args.peers:
        refused["ort"] = ("no model of attention alone is built for ONNX "
                          "Runtime here; its attention is timed inside the "
                          "layer rows and on the cache rows")
    if cfg.core and cfg.cache and "iree" in args.peers:
        refused["iree"] = ("IREE's ONNX importer takes neither ONNX "
                           "Runtime's GroupQueryAttention nor ONNX Attention "
                           "(the cache rows' models)")
    torch_peer = lambda key: (key, lambda: Torch(args, cfg, threads, key))
    if cfg.core and "torch2" in args.peers:
        factories.append(torch_peer("torch2"))
    if not cfg.core and cfg.cache:
        # A layer's step on caches: PyTorch 2's SDPA form (1.13 has no
        # SDPA); ONNX Runtime's GQA form above.
        if "torch2" in args.peers:
            factories.append(torch_peer("torch2"))
        for key in ("torch", "torch-tuned"):
            if key in args.peers:
                refused[key] = ("a step on KV caches is written with "
                                "PyTorch 2's scaled_dot_product_attention")
        if "iree" in args.peers:
            refused["iree"] = "no KV-cache form of the layer for IREE here"
    elif not cfg.core:
        factories += [torch_peer(key) for key in ("torch2", "torch", "torch-tuned")
                      if key in args.peers]
        factories += [onnx_peer(key) for key in ("ort", "iree")
                      if key in args.peers]

    peers, results, steps, errors, info = [], [], [], dict(refused), {}
    bandwidth = []  # bw_probe.c's GB/s per round (decode rows)
    for key, make in factories:
        peer = None
        try:
            peer = make()
            estimates = peer.start()
        except (PeerError, OSError, ValueError, ImportError) as e:
            errors[key] = str(e)
            log(f"  {key}: n/a ({e})")
            if peer:
                peer.stop()
            continue
        peers.append(peer)
        log(f"  T={threads} {peer.key} ready: " + ", ".join(
            f"{f} {ms:.2f} ms" for f, ms in estimates.items()))
        info[peer.key] = peer.info
        for form, why in peer.form_errors.items():
            results.append(Result(peer.key, peer.label, form, error=why))
            log(f"  {peer.key} form {form}: n/a ({why})")
        for form in peer.forms:
            results.append(Result(peer.key, peer.label, form))
            steps.append((peer, results[-1], iterations(args, estimates[form])))

    # The matmul ceiling, from the torch workers already running.
    sgemm = None
    if not cfg.core:
        m, n = cfg.b * cfg.sq, cfg.e
        for peer in peers:
            if isinstance(peer, Torch):
                try:
                    gflops, how = peer.sgemm(m, n, n, args.sgemm_seconds)
                except PeerError as e:
                    log(f"  sgemm on {peer.key}: n/a ({e})")
                    continue
                if not sgemm or gflops > sgemm["gflops"]:
                    sgemm = {"gflops": gflops, "how": f"{how}, {peer.label}",
                             "shape": [m, n, n]}
                time.sleep(args.gap)

    for r in range(args.rounds):
        # Rotate the order: no form always runs right after the same one.
        k = r % len(steps) if steps else 0
        for peer, result, n in steps[k:] + steps[:k]:
            if result.error:
                continue
            try:
                result.rounds.append(peer.run(result.form, n))
            except PeerError as e:
                result.error = str(e)
                log(f"  {peer.key} {result.form}: n/a ({e})")
            time.sleep(args.gap)
        done = [f"{x.peer}/{x.form} {x.rounds[-1].median:.2f}"
                for x in results if x.rounds and not x.error]
        # A decode row's ceiling, measured in the same round as the peers.
        if cfg.decode:
            bandwidth.append(bw_probe(args, threads))
            done.append(f"bw_probe {bandwidth[-1]:.1f} GB/s")
            time.sleep(args.gap)
        log(f"  T={threads} round {r + 1}/{args.rounds} (ms): " + ", ".join(done))

    for peer in peers:
        peer.stop()
    ours = next((p for p in peers if isinstance(p, Ours)), None)
    compile_ms = (statistics.median(ours.compile_ms)
                  if ours and ours.compile_ms else None)
    return {"config": cfg, "threads": threads, "results": results,
            "errors": errors, "info": info, "sgemm": sgemm,
            "peak": None, "bandwidth": bandwidth, "compile_ms": compile_ms}


def best_per_peer(run):
    """The fastest form of each peer (by median), in peer order."""
    best = {}
    for r in run["results"]:
        if r.rounds and not r.error and (r.peer not in best
                                         or r.median < best[r.peer].median):
            best[r.peer] = r
    return best


# --------------------------------------------------------------------------
# Reports
# --------------------------------------------------------------------------

PEER_ORDER = ["ours", "torch2", "torch", "torch-tuned", "ort", "iree"]


def gflops(cfg, ms):
    return cfg.flops() / (ms * 1e-3) / 1e9


def kv_read(run):
    """For a decode row: its K/V GB/s (ours) and % of the measured read
    bandwidth, as a sentence; else None."""
    cfg, ours = run["config"], best_per_peer(run).get("ours")
    if not cfg.decode or not ours:
        return None
    gbs = cfg.kv_bytes() / (ours.median * 1e-3) / 1e9
    pct = ""
    bw = run["bandwidth"]
    if bw and len(bw) == len(ours.rounds):
        # Round by round: ours and the probe ran minutes apart otherwise.
        shares = [cfg.kv_bytes() / (x.median * 1e-3) / 1e9 / b
                  for x, b in zip(ours.rounds, bw)]
        pct = (f" = {100 * statistics.median(shares):.0f}% of the read "
               f"bandwidth (bw_probe.c in the same rounds: "
               f"{statistics.median(bw):.1f} GB/s median)")
    what = "K/V" if cfg.core else "K/V and weights"
    return (f"{what} {cfg.kv_bytes() / 1e6:.0f} MB per call, ours "
            f"{gbs:.1f} GB/s{pct}")


def detail_rows(run, verbose):
    """(T, peer, form, median, min, max, GFLOP/s, %peak, ratio) per peer:
    the best form, and with `verbose` every form."""
    cfg, best = run["config"], best_per_peer(run)
    ours = best.get("ours")
    rows = []
    for key in PEER_ORDER:
        forms = [r for r in run["results"] if r.peer == key]
        if not forms and key in run["errors"]:
            rows.append((run["threads"], key, "", None, None, None, None, None,
                         None, run["errors"][key]))
        for r in forms:
            is_best = best.get(key) is r
            if not (is_best or verbose or (r.error and key not in best)):
                continue
            if r.error or not r.rounds:
                rows.append((run["threads"], r.label, r.form, None, None, None,
                             None, None, None, r.error))
                continue
            g = gflops(cfg, r.median)
            rows.append((run["threads"], r.label, r.form + ("" if is_best or len(forms) == 1
                                                             else " (slower)"),
                         r.median, r.min, r.max, g,
                         100 * g / run["peak"] if run["peak"] else None,
                         r.median / ours.median if ours else None, ""))
    return rows


def fmt(v, spec, na="n/a"):
    return na if v is None else format(v, spec)


def print_text(runs, header, verbose):
    print()
    for line in header:
        print(line)
    last = None
    for run in runs:
        cfg = run["config"]
        if cfg.name != last:
            last = cfg.name
            print(f"\n== {cfg.name}: {cfg.title}; {cfg.shape()}; "
                  f"{cfg.flops() / 1e9:.3f} GFLOP per call ==")
            print(f"{'T':>2}  {'peer':<22} {'form':<22} {'median ms':>10} "
                  f"{'min':>9} {'max':>9} {'GFLOP/s':>8} {'%peak':>6} {'peer/ours':>9}")
        for t, label, form, med, lo, hi, g, pk, ratio, err in detail_rows(run, verbose):
            if med is None:
                print(f"{t:>2}  {label:<22} {form:<22} n/a: {err}")
                continue
            print(f"{t:>2}  {label:<22} {form:<22} {med:>10.2f} {lo:>9.2f} {hi:>9.2f} "
                  f"{g:>8.1f} {fmt(pk, '5.1f'):>5}% {fmt(ratio, '9.2f'):>9}")
        extras = []
        if run["sgemm"]:
            s = run["sgemm"]
            extras.append(f"best sgemm [{s['shape'][0]}x{s['shape'][2]}]x"
                          f"[{s['shape'][2]}x{s['shape'][1]}]: {s['gflops']:.1f} GFLOP/s "
                          f"({s['how']})")
        if kv_read(run):
            extras.append(kv_read(run))
        if run["compile_ms"] is not None:
            extras.append(f"ours compile {run['compile_ms']:.0f} ms (not timed)")
        if extras:
            print(f"    T={run['threads']}: " + "; ".join(extras))


def summary_markdown(runs):
    # The peers of this run: those with a result or an error somewhere.
    peers = [p for p in PEER_ORDER if p != "ours" and any(
        p in run["errors"] or any(r.peer == p for r in run["results"])
        for run in runs)]
    labels = {}
    for run in runs:
        for r in run["results"]:
            labels.setdefault(r.peer, r.label)
    head = ["config", "T", "ours ms", "GFLOP/s", "% peak"] + [
        f"{labels.get(p, p)} ms (×)" for p in peers]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for run in runs:
        cfg, best = run["config"], best_per_peer(run)
        ours = best.get("ours")
        cells = [f"`{cfg.name}`", str(run["threads"])]
        if ours:
            g = gflops(cfg, ours.median)
            cells += [f"{ours.median:.2f}", f"{g:.1f}",
                      fmt(100 * g / run["peak"] if run["peak"] else None, ".1f")]
        else:
            cells += ["n/a"] * 3
        for p in peers:
            r = best.get(p)
            if cfg.core and not r:
                cells.append("")
            elif not r:
                cells.append("n/a")
            else:
                ratio = f" ({r.median / ours.median:.2f}×)" if ours else ""
                cells.append(f"{r.median:.2f}{ratio}")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def write_markdown(path, runs, header, args):
    out = ["# Attention layer: ours against PyTorch, ONNX Runtime and IREE", ""]
    out += [f"- {line}" for line in header]
    out += ["",
            f"{args.rounds} interleaved rounds per configuration and thread count; "
            "ms is the median over rounds of each round's median call time; "
            "(×) is peer ms / ours ms, above 1 where ours is faster; % peak is of "
            "the measured FMA peak at that thread count. FLOPs count the four "
            "projections and only the attention pairs the causal mask leaves. "
            "Generated by `bench/run.sh`.", ""]
    out += summary_markdown(runs)
    out += ["", "## Every peer and form", "",
            "| config | T | peer | form | median ms | min | max | GFLOP/s | % peak | peer/ours |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for run in runs:
        for t, label, form, med, lo, hi, g, pk, ratio, err in detail_rows(run, True):
            if med is None:
                out.append(f"| `{run['config'].name}` | {t} | {label} | {form} | "
                           f"n/a: {err} | | | | | |")
            else:
                out.append(f"| `{run['config'].name}` | {t} | {label} | {form} | "
                           f"{med:.2f} | {lo:.2f} | {hi:.2f} | {g:.1f} | "
                           f"{fmt(pk, '.1f')} | {fmt(ratio, '.2f')} |")
    out += ["", "Configurations:", ""]
    for cfg in dict.fromkeys(run["config"] for run in runs):
        out.append(f"- `{cfg.name}`: {cfg.title}; {cfg.shape()}; "
                   f"{cfg.flops() / 1e9:.3f} GFLOP per call")
    decode = [(run["config"].name, run["threads"], kv_read(run))
              for run in runs if kv_read(run)]
    if decode:
        out += ["", "Decoding, K/V read per call:", ""]
        out += [f"- `{n}`, T={t}: {text}" for n, t, text in decode]
    sg = [(run["config"].name, run["threads"], run["sgemm"]) for run in runs
          if run["sgemm"]]
    if sg:
        out += ["", "Best sgemm on the projection shape [B·S, E]·[E, E]:", ""]
        out += [f"- `{n}`, T={t}: {s['gflops']:.1f} GFLOP/s ({s['how']})"
                for n, t, s in sg]
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def machine_header(args, peaks, runs):
    cpu = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    try:
        rev = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             text=True).stdout.strip()
    except OSError:
        rev = "?"
    lines = [f"{datetime.date.today()}, commit {rev or '?'}, {cpu}, "
             f"{os.cpu_count()} CPUs, {platform.system()} {platform.release()}",
             f"FMA peak (fma_peak.c, {args.peak_kernel}): " +
             ", ".join(f"T={t} {p:.1f} GFLOP/s" for t, p in peaks.items())]
    seen = set()
    for run in runs:
        for key, info in run["info"].items():
            if key in seen or not info:
                continue
            seen.add(key)
            if key == "torch2":
                lines.append(f"torch2: torch {info['torch']} (PyPI), kernels "
                             f"{info['cpu_capability']}, MKL and oneDNN as "
                             f"shipped, {info['threads']} threads")
            elif key.startswith("torch"):
                lines.append(f"{key}: torch {info['torch']}, kernels "
                             f"{info['cpu_capability']}, BLAS "
                             f"{', '.join(info['blas']) or 'none found'}, jemalloc "
                             f"{'yes' if info['jemalloc'] else 'no'}")
                # Debian's torch does its matmuls through whatever
                # libblas.so.3 the alternatives system points at; the
                # reference BLAS (libblas3) is some 30x slower than OpenBLAS.
                if any("/blas/libblas.so" in b for b in info["blas"]):
                    lines.append(f"WARNING: {key} runs on the reference BLAS "
                                 "(libblas3), not an optimized one: install "
                                 "libopenblas0-pthread (bench/run.sh does)")
            elif key == "ort":
                lines.append(f"ort: onnxruntime {info['version']} (PyPI)")
            elif key == "iree":
                lines.append(f"iree: iree-base-compiler and -runtime "
                             f"{info['version']} (PyPI), llvm-cpu for the host "
                             f"CPU, local-task with T workers; compile "
                             f"times not timed")
    return lines


def main():
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="configurations: " + ", ".join(c.name for c in CONFIGS))
    p.add_argument("--configs", default="*",
                   help="comma-separated names or globs (default: all)")
    p.add_argument("--threads", default="1,2", help="thread counts (default 1,2)")
    p.add_argument("--rounds", type=int, default=5, help="interleaved rounds")
    p.add_argument("--round-seconds", type=float, default=1.0,
                   help="timed work per form per round (sets the calls per round)")
    p.add_argument("--min-iters", type=int, default=3)
    p.add_argument("--max-iters", type=int, default=50)
    p.add_argument("--warmup", type=int, default=2, help="untimed calls per worker form")
    p.add_argument("--gap", type=float, default=0.3,
                   help="pause in seconds between steps (idle thread pools settle)")
    p.add_argument("--peers", default="torch2,torch,torch-tuned,ort,iree",
                   help="peers besides ours (default "
                        "torch2,torch,torch-tuned,ort,iree)")
    p.add_argument("--quick", action="store_true",
                   help="smoke test: 1 round of 2 calls, short ceilings")
    p.add_argument("--markdown", metavar="OUT.md", help="also write a markdown report")
    p.add_argument("--json", metavar="OUT.json", help="also write the raw numbers")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="every form of every peer, not only the fastest")
    p.add_argument("--mha-run", default=os.path.join(ROOT, "build", "bin", "mha-run"))
    p.add_argument("--venv-python", "--ort-python", dest="venv_python",
                   default=os.path.join(BENCH, "work", "venv", "bin", "python"),
                   help="the Python of the bench's PyPI environment (ONNX "
                        "Runtime, IREE, PyTorch 2), which the ort, iree and "
                        "torch2 peers run under (default: the one "
                        "bench/run.sh makes)")
    p.add_argument("--cc", default="clang-22", help="C compiler for fma_peak.c")
    p.add_argument("--workdir", default=os.path.join(BENCH, "work"),
                   help="generated .mlir, .onnx and binaries (default bench/work)")
    args = p.parse_args()
    args.peak_seconds, args.peak_repeats, args.sgemm_seconds = 0.3, 3, 0.3
    if args.quick:
        args.rounds, args.round_seconds, args.min_iters, args.max_iters = 1, 0, 2, 2
        args.warmup, args.gap = 1, 0.05
        args.peak_seconds, args.peak_repeats, args.sgemm_seconds = 0.1, 1, 0.05
    args.venv_python = os.path.abspath(args.venv_python)  # workers run in bench/
    args.peers = [x for x in args.peers.split(",") if x]
    unknown = set(args.peers) - {"torch2", "torch", "torch-tuned", "ort", "iree"}
    if unknown:
        p.error(f"unknown peers {', '.join(sorted(unknown))}")
    threads = [int(t) for t in args.threads.split(",")]
    patterns = args.configs.split(",")
    configs = [c for c in CONFIGS if any(fnmatch.fnmatch(c.name, pat) for pat in patterns)]
    if not configs:
        p.error(f"no configuration matches {args.configs!r}; "
                f"known: {', '.join(c.name for c in CONFIGS)}")
    if not os.access(args.mha_run, os.X_OK):
        p.error(f"no mha-run at {args.mha_run} (bench/run.sh builds it)")
    sys.path.insert(0, BENCH)
    for sub in ("mlir", "models", "logs"):
        os.makedirs(os.path.join(args.workdir, sub), exist_ok=True)
    for cfg in configs:
        with open(os.path.join(args.workdir, "mlir", cfg.name + ".mlir"), "w") as f:
            f.write(mlir_for(cfg))

    # The peak is a ceiling: the best of a measurement before and one after
    # the runs, so that a moment of other load on the machine does not lower it.
    log("FMA peak ...")
    peaks = {t: fma_peak(args, t) for t in threads}
    log("  " + ", ".join(f"T={t}: {g:.1f} GFLOP/s" for t, g in peaks.items()))
    runs = []
    for cfg in configs:
        log(f"{cfg.name}: {cfg.shape()}")
        for t in threads:
            runs.append(bench_one(args, cfg, t))
    if not args.quick:
        log("FMA peak again ...")
        peaks = {t: max(g, fma_peak(args, t)) for t, g in peaks.items()}
        log("  " + ", ".join(f"T={t}: {g:.1f} GFLOP/s" for t, g in peaks.items()))
    for run in runs:
        run["peak"] = peaks[run["threads"]]

    header = machine_header(args, peaks, runs)
    bandwidth = {}
    for run in runs:
        bandwidth.setdefault(run["threads"], []).extend(run["bandwidth"])
    if any(bandwidth.values()):
        header.append(
            "read bandwidth (bw_probe.c, 1 GiB, in every round of the decode "
            "rows): " + ", ".join(f"T={t} {min(g):.1f}-{max(g):.1f} GB/s"
                                  for t, g in bandwidth.items() if g))
    print_text(runs, header, args.verbose)
    if args.markdown:
        write_markdown(args.markdown, runs, header, args)
        log(f"wrote {args.markdown}")
    if args.json:
        raw = [{"config": dataclasses.asdict(r["config"]), "threads": r["threads"],
                "flops": r["config"].flops(), "peak_gflops": r["peak"],
                "bandwidth_gbs_per_round": r["bandwidth"],
                "sgemm": r["sgemm"], "compile_ms": r["compile_ms"],
                "errors": r["errors"], "info": r["info"],
                "results": [{"peer": x.peer, "form": x.form, "error": x.error,
                             "rounds": [dataclasses.asdict(y) for y in x.rounds]}
                            for x in r["results"]]} for r in runs]
        with open(args.json, "w") as f:
            json.dump({"header": header, "runs": raw}, f, indent=1)
        log(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
