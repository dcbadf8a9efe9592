#!/usr/bin/env python3
"""Runs one mha.multi_head_attention configuration through mha-run and checks
it against the independent numpy reference (mha_reference.py).

    check_mha.py --mha-run BIN --workdir DIR [--pipeline P]...
                 [--atol A] [--rtol R] [--benchmark N] [--mlir FILE]
                 [--mha-aot BIN] key=value ...

With --mha-aot, each pipeline is compiled ahead of time instead and the
executable mha-aot writes is run on the inputs ([aot P] reports).

Keys (defaults in CONFIG_DEFAULTS): b sq sk eq ek ev h hkv dk dv eo,
bias=0|1, causal=0|1, scale=<float>, seed=<int>,
mask=none|bool|float with mask_shape=<comma-separated dims> (rank 2, 3 or 4,
default [Sq, Sk]), masked_row=<query index whose keys are all masked>,
weight_gain=<factor on the weights, for large logits>,
dynamic=<comma-separated subset of b,sq,sk declared as ? in the IR>,
cross=0|1 (distinct key/value inputs; always on when sq != sk or ek/ev differ),
dtype=f32|f16|bf16 (the reference computes on the rounded inputs in float64;
bf16 arrays go to mha-run as uint16 .npy of their bits, NumPy having no
bfloat16, and the expected output stays f32),
mask_dynamic=1 (every mask dim declared ?, even those of size 1),
mask_dynamic_dims=<comma-separated mask dims declared ?> (the others static),
masked_row=all (every score masked), zero_wq=1 (w_q = 0: all scores equal),
weights=const (the layer's weights and biases as dense_resource
constants in the IR instead of arguments),
prepare=1 (the layer's weights and biases marked mha.weight and prepared
once: mha-run --prepare-weights; the executable mha-aot writes calls the
whole entry),
core=1 (one mha.attention on head-split inputs q, k, v instead of the layer;
with causal_offset=<int> and key_transposed=1; causal_offset also sets the
diagonal of the windows),
kv_splits=<int > 0> (core: the op's lowering configuration splits its keys
into that many chunks, folded in parallel and merged: flash-decoding),
head_tile=<int > 0> (core: the op's lowering configuration computes that
many query heads of a key/value head's group together),
softcap=<float c > 0> (scores c * tanh(s / c) before any mask),
window_left=<int >= 0>, window_right=<int >= 0> (query i sees key j iff
i + D - window_left <= j <= i + D + window_right, D the causal diagonal;
the generator emits both whatever causal is: the ops decide what they take),
key_lengths=<comma-separated ints, one per batch>|random (batch b sees keys
j < key_lengths[b] and its diagonal moves with them; random: each drawn
uniformly in [0, Sk]; an i32 input `key_lengths` of type tensor<Bxi32>, B
dynamic with b, after the mask),
kv_cache=<Smax> (a decoding step on a static cache; sk is the step's
new keys Sn, appended with mha.cache_append to caches k_cache, v_cache
[B, Hkv, Smax, d] at key_lengths (the lengths before the step: random draws
them in [0, Smax - Sn]; the caches hold NaN past them), and the attention
reads the caches with key lengths
key_lengths + Sn; the mask, if any, is [Sq, Smax]; the results are the
output and both updated caches, each compared; dynamic=smax declares the
caches' Smax as ?; the layer takes them as kv_cache(%k_cache, %v_cache,
%cache_lengths), the lengths being drawn as key_lengths),
rotary=half|interleaved (mha.rotary on q and k before the
attention, or before the cache append, with tables cos, sin [P, R/2] of
R = rotary_dim (default dk, or dk - 1 when odd) channels; positions are offsets [B]: the
key_lengths with kv_cache, else an input rotary_positions drawn in
[0, P - max(Sq, Sk)] (the layer: 0, with sq == sk; rotary(%cos, %sin))).

Writes DIR/case.mlir (or uses --mlir FILE, whose @main must take the
arguments in the order generated here: query, [key, value,] w_q, w_k, w_v,
w_o, [b_q, b_k, b_v, b_o,] [mask,] [key_lengths | cache_lengths, k_cache,
v_cache,] [cos, sin]; the core: q, k, v,
[k_cache, v_cache,] [mask,] [key_lengths,] [cos, sin, [rotary_positions]]), the inputs and the expected output, runs
mha-run with --expected-output (and --benchmark) once per --pipeline
(default: loops and cpu), prints each report prefixed with [pipeline], and
exits non-zero if any run failed. A cpu pipeline runs at --threads=2 and
again at --threads=1 ([cpu threads=1]), whose results must be bitwise equal,
unless --mha-run-arg sets the thread count.
"""

import argparse
import json
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mha_reference  # noqa: E402

CONFIG_DEFAULTS = dict(b=2, sq=5, sk=None, eq=16, ek=None, ev=None, h=2,
                       hkv=None, dk=None, dv=None, eo=None, bias=0, causal=0,
                       scale=None, seed=0, mask="none", mask_shape=None,
                       masked_row=None, weight_gain=1.0, dynamic="", cross=0,
                       dtype="f32", mask_dynamic=0, mask_dynamic_dims=None,
                       zero_wq=0, core=0, causal_offset=None, key_transposed=0,
                       softcap=None, window_left=None, window_right=None,
                       key_lengths=None, kv_cache=None, rotary=None,
                       rotary_dim=None, prepare=0, weights="args",
                       kv_splits=None, head_tile=None)


def round_to_bf16(a):
    """float32 values rounded to the nearest bfloat16 (ties to even)."""
    bits = a.astype(np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    rounded = bits.astype(np.uint32).view(np.float32)
    return np.where(np.isnan(a), a, rounded).astype(np.float32)


def bf16_bits(a):
    """The bfloat16 bits of float32 values that are bfloat16 already."""
    return (a.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)


def parse_config(pairs):
    config = dict(CONFIG_DEFAULTS)
    for pair in pairs:
        key, _, value = pair.partition("=")
        if key not in config:
            sys.exit(f"check_mha.py: unknown key '{key}'")
        config[key] = value
    ints = ["b", "sq", "sk", "eq", "ek", "ev", "h", "hkv", "dk", "dv", "eo",
            "bias", "causal", "seed", "cross", "mask_dynamic", "zero_wq",
            "core", "causal_offset", "key_transposed", "window_left",
            "window_right", "kv_cache", "rotary_dim", "prepare", "kv_splits",
            "head_tile"]
    for key in ints:
        if config[key] is not None:
            config[key] = int(config[key])
    c = config
    for key in ("kv_splits", "head_tile"):
        if c[key] and not c["core"]:
            sys.exit(f"check_mha.py: {key} is a configuration of the core "
                     "op: it needs core=1")
    c["sk"] = c["sk"] if c["sk"] is not None else c["sq"]
    c["ek"] = c["ek"] if c["ek"] is not None else c["eq"]
    c["ev"] = c["ev"] if c["ev"] is not None else c["ek"]
    c["hkv"] = c["hkv"] if c["hkv"] is not None else c["h"]
    c["dk"] = c["dk"] if c["dk"] is not None else c["eq"] // c["h"]
    c["dv"] = c["dv"] if c["dv"] is not None else c["dk"]
    c["eo"] = c["eo"] if c["eo"] is not None else c["eq"]
    c["weight_gain"] = float(c["weight_gain"])
    if c["scale"] is not None:
        c["scale"] = float(c["scale"])
    if c["softcap"] is not None:
        c["softcap"] = float(c["softcap"])
    if c["masked_row"] not in (None, "all"):
        c["masked_row"] = int(c["masked_row"])
    c["cross"] = int(c["cross"] or c["sq"] != c["sk"] or c["ek"] != c["eq"]
                     or c["ev"] != c["eq"])
    return c


def float_attr(value):
    """An f32 attribute's literal (MLIR wants a '.' before an exponent)."""
    text = repr(float(value))
    if "." not in text and "e" in text:
        text = text.replace("e", ".0e", 1)
    return f"{text} : f32"


def tensor_type(shape, element, dynamic_dims=()):
    dims = ["?" if i in dynamic_dims else str(d) for i, d in enumerate(shape)]
    return "tensor<" + "x".join(dims + [element]) + ">"


def check_aot(args, case, inputs, expected_paths):
    """mha-aot for each pipeline, then its executable on the inputs; each
    result is compared with its expected output like mha-run does."""
    expected = ([np.load(p) for p in expected_paths] if args.aot_repeat
                else [])
    status = 0
    for pipeline in args.pipeline or ["cpu"]:
        label = f"aot {pipeline}"
        prefix = os.path.join(args.workdir, "aot-" + pipeline.split("{")[0],
                              "layer")
        outputs = [prefix + "-result.npy"] + [
            f"{prefix}-result-{j}.npy" for j in range(1, len(expected))]
        compile_ = [args.mha_aot, case, f"--pipeline={pipeline}", "-o",
                    prefix] + args.mha_run_arg
        execute = [prefix] + args.aot_run_arg + inputs
        for output in outputs:
            execute += ["-o", output]
        first = None
        for i, command in enumerate([compile_] + [execute] * args.aot_repeat):
            result = subprocess.run(command, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True)
            for line in result.stdout.splitlines():
                print(f"[{label}] {line}")
            if result.returncode:
                status = 1
                break
            if i == 0:
                continue
            got = []
            for output in outputs:
                array = np.load(output)
                if array.dtype == np.uint16:  # bf16 bits (no NumPy bfloat16)
                    array = (array.astype(np.uint32) << 16).view(np.float32)
                got.append(array)
            if first is None:
                first = got
                for j, (g, e, path) in enumerate(zip(got, expected,
                                                     expected_paths)):
                    same = g.shape == e.shape
                    error = np.abs(g.astype(np.float64) -
                                   e.astype(np.float64)) if same else \
                        np.zeros(0)
                    error[np.isnan(g) & np.isnan(e)] = 0  # NaN equals NaN
                    ok = same and np.allclose(
                        g, e, atol=float(args.atol), rtol=float(args.rtol),
                        equal_nan=True)
                    print(f"[{label}] result {j} vs "
                          f"{os.path.basename(path)}: max abs error "
                          f"{error.max() if error.size else 0:e}: "
                          f"{'OK' if ok else 'MISMATCH'}")
                    status = status or (0 if ok else 1)
            elif any(g.tobytes() != f.tobytes() for g, f in zip(got, first)):
                print(f"[{label}] run {i} differs bitwise from run 1: "
                      "NONDETERMINISTIC")
                status = 1
    return status


NP_TYPES = {"f32": np.float32, "f16": np.float16, "bf16": np.float32}


def input_dtype(c, array):
    """An input's element type as inputs.json names it."""
    if array.dtype == np.bool_:
        return "i1"
    if array.dtype == np.int32:
        return "i32"
    return c["dtype"]


def caster(dtype):
    """Rounds float arrays to the element type (bf16 kept in float32)."""
    if dtype == "bf16":
        return lambda a: round_to_bf16(np.asarray(a, np.float32))
    return lambda a: np.asarray(a).astype(NP_TYPES[dtype])


def draw_mask(c, rng, cast, arrays, dyn):
    """The mask of the config (None without one), added to `arrays`."""
    if c["mask"] == "none":
        return None
    sq, sk = c["sq"], c["sk"]
    shape = ([int(d) for d in c["mask_shape"].split(",")]
             if c["mask_shape"] else [sq, sk])
    if c["mask"] == "bool":
        mask = rng.uniform(0, 1, shape) < 0.7
        element = "i1"
    else:
        mask = cast(np.where(rng.uniform(0, 1, shape) < 0.7,
                             rng.uniform(-2, 2, shape), -np.inf))
        element = c["dtype"]
    if c["masked_row"] is not None:
        rows = slice(None) if c["masked_row"] == "all" else c["masked_row"]
        mask[..., rows, :] = False if c["mask"] == "bool" else -np.inf
    # The mask's Sq/Sk/B dims are dynamic where the data's are (unless 1).
    rank = len(shape)
    symbols = {2: ["sq", "sk"], 3: ["b", "sq", "sk"],
               4: ["b", "h", "sq", "sk"]}[rank]
    mdyn = {i for i, s in enumerate(symbols) if s in dyn and shape[i] != 1}
    if c["mask_dynamic"]:
        mdyn = set(range(rank))
    if c["mask_dynamic_dims"]:
        mdyn = {int(d) for d in c["mask_dynamic_dims"].split(",")}
    arrays["mask"] = (mask, tensor_type(shape, element, mdyn))
    return mask


def draw_key_lengths(c, rng, arrays, dyn):
    """The key lengths of the config (None without them): an int32 [B]
    array added to `arrays` (drawn last, so the other inputs do not change
    with it)."""
    if c["key_lengths"] is None and not c["kv_cache"]:
        return None
    b, sk = c["b"], c["sk"]
    if c["kv_cache"]:
        # The lengths before a decoding step: room for its sk keys.
        sk = c["kv_cache"] - sk
    if c["key_lengths"] in ("random", None):
        lengths = rng.integers(0, sk + 1, size=b)
    else:
        lengths = [int(n) for n in str(c["key_lengths"]).split(",")]
        if len(lengths) != b:
            sys.exit(f"check_mha.py: key_lengths has {len(lengths)} values, "
                     f"b is {b}")
    lengths = np.asarray(lengths, np.int32)
    arrays["key_lengths"] = (lengths, tensor_type(
        lengths.shape, "i32", {0} if "b" in dyn else set()))
    return lengths


def feature_attrs(c):
    """The attributes of softcap and the windows."""
    attrs = []
    if c["softcap"] is not None:
        attrs.append(f"softcap = {float_attr(c['softcap'])}")
    for key in ("window_left", "window_right"):
        if c[key] is not None:
            attrs.append(f"{key} = {c[key]} : i64")
    return attrs


def feature_kwargs(c, key_lengths):
    """The reference's arguments for softcap, the windows, key lengths."""
    return dict(softcap=c["softcap"], window_left=c["window_left"],
                window_right=c["window_right"], key_lengths=key_lengths)



def layer_case(c, rng):
    """The layer's inputs (name -> (array, IR type)), its IR and a function
    that computes the reference output."""
    b, sq, sk, h, hkv = c["b"], c["sq"], c["sk"], c["h"], c["hkv"]
    dk, dv = c["dk"], c["dv"]
    gain = c["weight_gain"]
    element_type = c["dtype"]
    cast = caster(c["dtype"])
    uniform = lambda *shape: cast(rng.uniform(-1, 1, shape))
    # Weights scaled by 1/sqrt(fan-in) keep activations O(1).
    weight = lambda n, m: cast(rng.uniform(-1, 1, (n, m)) * gain / np.sqrt(n))

    arrays = {}  # name -> (array, IR type)
    dyn = set(c["dynamic"].split(",")) - {""}
    qdyn = {i for i, k in [(0, "b"), (1, "sq")] if k in dyn}
    kdyn = {i for i, k in [(0, "b"), (1, "sk")] if k in dyn}
    query = uniform(b, sq, c["eq"])
    arrays["query"] = (query, tensor_type(query.shape, element_type, qdyn))
    if c["cross"]:
        key = uniform(b, sk, c["ek"])
        value = uniform(b, sk, c["ev"])
        arrays["key"] = (key, tensor_type(key.shape, element_type, kdyn))
        arrays["value"] = (value, tensor_type(value.shape, element_type, kdyn))
    else:
        key = value = query
    for name, shape in [("w_q", (c["eq"], h * dk)), ("w_k", (c["ek"], hkv * dk)),
                        ("w_v", (c["ev"], hkv * dv)), ("w_o", (h * dv, c["eo"]))]:
        arrays[name] = (weight(*shape), tensor_type(shape, element_type))
    if c["zero_wq"]:
        arrays["w_q"] = (np.zeros_like(arrays["w_q"][0]), arrays["w_q"][1])
    biases = None
    if c["bias"]:
        for name, n in [("b_q", h * dk), ("b_k", hkv * dk), ("b_v", hkv * dv),
                        ("b_o", c["eo"])]:
            arrays[name] = (cast(uniform(n) * 0.5),
                            tensor_type((n,), element_type))
        biases = tuple(arrays[n][0] for n in ["b_q", "b_k", "b_v", "b_o"])
    smax = c["kv_cache"]
    if smax and smax < sk:
        sys.exit("check_mha.py: kv_cache needs kv_cache >= sk")
    mask = draw_mask(dict(c, sk=smax) if smax else c, rng, cast, arrays, dyn)
    key_lengths = draw_key_lengths(c, rng, arrays, dyn)
    cache = None
    if smax:
        # The lengths before the step, then the caches, which hold NaN past
        # them (as uninitialized memory may).
        arrays["cache_lengths"] = arrays.pop("key_lengths")
        cdyn = {i for i, n in [(0, "b"), (2, "smax")] if n in dyn}
        for name, d in (("k_cache", dk), ("v_cache", dv)):
            array = uniform(b, hkv, smax, d) * 4
            for i, n in enumerate(key_lengths):
                array[i, :, n:] = np.nan
            arrays[name] = (array, tensor_type(array.shape, element_type,
                                               cdyn))
        cache = (arrays["k_cache"][0], arrays["v_cache"][0], key_lengths,
                 cast)
    rotary = draw_rotary(c, rng, cast, arrays, key_lengths, layer=True)
    w = {n: arrays[n][0] for n in ("w_q", "w_k", "w_v", "w_o")}
    features = feature_kwargs(c, None if smax else key_lengths)
    expected = lambda: mha_reference.multi_head_attention(
        query, key, value, w["w_q"], w["w_k"], w["w_v"], w["w_o"],
        biases=biases, mask=mask, num_heads=h,
        num_kv_heads=hkv, scale=c["scale"], causal=bool(c["causal"]),
        kv_cache=cache,
        rotary=rotary and (rotary["cos"], rotary["sin"],
                           c["rotary"] == "interleaved"),
        **features)
    if smax:
        expected_one = expected
        expected = lambda: list(expected_one())
    out_type = tensor_type((b, sq, c["eo"]), element_type, qdyn)
    result_types = [out_type] + (
        [arrays["k_cache"][1], arrays["v_cache"][1]] if smax else [])

    names = list(arrays)
    attrs = [f"num_heads = {h} : i64"]
    if hkv != h:
        attrs.append(f"num_kv_heads = {hkv} : i64")
    if c["scale"] is not None:
        attrs.append(f"scale = {float_attr(c['scale'])}")
    if c["causal"]:
        attrs.append("causal")
    attrs += feature_attrs(c)
    operands = ["%query", "%key" if c["cross"] else "%query",
                "%value" if c["cross"] else "%query",
                "%w_q", "%w_k", "%w_v", "%w_o"]
    operand_types = [arrays["query"][1],
                     arrays["key"][1] if c["cross"] else arrays["query"][1],
                     arrays["value"][1] if c["cross"] else arrays["query"][1]]
    operand_types += [arrays[n][1] for n in ["w_q", "w_k", "w_v", "w_o"]]
    clauses = ""
    if c["bias"]:
        clauses += " bias(%b_q, %b_k, %b_v, %b_o)"
        operand_types += [arrays[n][1] for n in ["b_q", "b_k", "b_v", "b_o"]]
    if mask is not None:
        clauses += " mask(%mask)"
        operand_types.append(arrays["mask"][1])
    if key_lengths is not None and not smax:
        clauses += " key_lengths(%key_lengths)"
        operand_types.append(arrays["key_lengths"][1])
    if smax:
        clauses += " kv_cache(%k_cache, %v_cache, %cache_lengths)"
        operand_types += [arrays[n][1]
                          for n in ("k_cache", "v_cache", "cache_lengths")]
    if rotary:
        clauses += " rotary(%cos, %sin)"
        operand_types += [arrays["cos"][1], arrays["sin"][1]]
        if c["rotary"] == "interleaved":
            attrs.append("rotary_interleaved")
    # prepare=1: the weights marked, prepared once (mha-run
    # --prepare-weights); weights=const: the weights and biases are
    # dense_resource constants in the IR (packed at compile time), not
    # arguments.
    weight_names = {"w_q", "w_k", "w_v", "w_o", "b_q", "b_k", "b_v", "b_o"}
    constants = [n for n in names if n in weight_names] \
        if c["weights"] == "const" else []
    signature = ", ".join(
        f"%{n}: {arrays[n][1]}" +
        (" {mha.weight}" if c["prepare"] and n in weight_names else "")
        for n in names if n not in constants)
    body = "".join(f"  %{n} = arith.constant dense_resource<{n}> : "
                   f"{arrays[n][1]}\n" for n in constants)
    results = ", ".join(result_types)
    returned = ", ".join(["%y", "%k_cache_1", "%v_cache_1"][:len(result_types)])
    ir = (f"func.func @main({signature}) -> ({results}) {{\n{body}"
          f"  {returned} = mha.multi_head_attention "
          f"{', '.join(operands)}{clauses}\n"
          f"         {{{', '.join(attrs)}}}\n"
          f"         : ({', '.join(operand_types)}) -> ({results})\n"
          f"  return {returned} : {results}\n}}\n")
    if constants:
        bf16 = c["dtype"] == "bf16"
        blobs = ",\n".join(
            f'      {n}: "0x10000000' +
            (bf16_bits(arrays[n][0]) if bf16 else arrays[n][0])
            .astype(arrays[n][0].dtype if not bf16 else np.uint16)
            .tobytes().hex().upper() + '"' for n in constants)
        ir += ("\n{-#\n  dialect_resources: {\n    builtin: {\n" + blobs +
               "\n    }\n  }\n#-}\n")
        arrays = {n: a for n, a in arrays.items() if n not in constants}
    return arrays, ir, expected


def draw_rotary(c, rng, cast, arrays, key_lengths, layer=False):
    """The rotary tables (and positions) of the config, None without them:
    cos, sin [P, R/2] of the usual angles p / 10000^(2i/R) in the data's
    type, and the positions' offsets [B] (the key lengths with kv_cache, else
    an int32 input rotary_positions; zeros for the layer, whose tokens
    are at 0.. without a cache), added to `arrays`."""
    if not c["rotary"]:
        return None
    if layer and c["sq"] != c["sk"]:
        sys.exit("check_mha.py: the layer's rotary needs sq == sk (the "
                 "step's tokens)")
    if c["rotary"] not in ("half", "interleaved") or c["key_transposed"]:
        sys.exit("check_mha.py: rotary is half or interleaved, without "
                 "key_transposed")
    dim = c["rotary_dim"] or c["dk"] - c["dk"] % 2
    if dim % 2 or not 2 <= dim <= c["dk"]:
        sys.exit(f"check_mha.py: rotary_dim {dim} must be even, in [2, dk]")
    span = max(c["sq"], c["sk"])
    # With a cache, positions run from a batch's length (at most
    # Smax - Sk) over the step's queries, which may outnumber its keys.
    rows = (c["kv_cache"] or 0) + span + 3
    angles = np.arange(rows)[:, None] * 10000.0 ** (
        -np.arange(dim // 2) / (dim // 2))[None, :]
    tables = {}
    for name, fn in (("cos", np.cos), ("sin", np.sin)):
        tables[name] = cast(fn(angles))
        arrays[name] = (tables[name], tensor_type(tables[name].shape,
                                                  c["dtype"]))
    if c["kv_cache"]:
        tables["positions"] = key_lengths
    elif layer:
        tables["positions"] = np.zeros(c["b"], np.int32)
    else:
        dyn = set(c["dynamic"].split(",")) - {""}
        offsets = rng.integers(0, rows - span + 1, size=c["b"]).astype(
            np.int32)
        arrays["rotary_positions"] = (offsets, tensor_type(
            offsets.shape, "i32", {0} if "b" in dyn else set()))
        tables["positions"] = offsets
    return tables


def core_case(c, rng):
    """core=1: one mha.attention on head-split inputs q [B, H, Sq, dk],
    k [B, Hkv, Sk, dk] (or kᵀ [B, Hkv, dk, Sk] with key_transposed=1) and
    v [B, Hkv, Sk, dv], with causal_offset=<int> as an operand and
    key_lengths as a key_lengths(...) clause."""
    b, sq, sk, h, hkv = c["b"], c["sq"], c["sk"], c["h"], c["hkv"]
    dk, dv, t = c["dk"], c["dv"], c["dtype"]
    cast = caster(t)
    uniform = lambda *shape: cast(rng.uniform(-1, 1, shape))
    dyn = set(c["dynamic"].split(",")) - {""}
    dims = lambda *names: {i for i, n in enumerate(names) if n in dyn}
    q, k, v = uniform(b, h, sq, dk), uniform(b, hkv, sk, dk), uniform(b, hkv, sk, dv)
    arrays = {"q": (q, tensor_type(q.shape, t, dims("b", "", "sq")))}
    if c["key_transposed"]:
        kt = np.ascontiguousarray(k.transpose(0, 1, 3, 2))
        arrays["k"] = (kt, tensor_type(kt.shape, t, dims("b", "", "", "sk")))
    else:
        arrays["k"] = (k, tensor_type(k.shape, t, dims("b", "", "sk")))
    arrays["v"] = (v, tensor_type(v.shape, t, dims("b", "", "sk")))
    smax = c["kv_cache"]
    if smax:
        if c["key_transposed"] or smax < sk:
            sys.exit("check_mha.py: kv_cache needs kv_cache >= sk and no "
                     "key_transposed")
        for name, d in (("k_cache", dk), ("v_cache", dv)):
            cache = uniform(b, hkv, smax, d) * 4
            arrays[name] = (cache, tensor_type(cache.shape, t,
                                               dims("b", "", "smax")))
    mask = draw_mask(dict(c, sk=smax) if smax else c, rng, cast, arrays, dyn)
    key_lengths = draw_key_lengths(c, rng, arrays, dyn)
    if smax:
        # Past each batch's length the caches hold NaN (as uninitialized
        # memory may): the attention must neither see those keys nor
        # multiply their values by a zero probability.
        for name in ("k_cache", "v_cache"):
            for i, n in enumerate(key_lengths):
                arrays[name][0][i, :, n:] = np.nan
    offset = c["causal_offset"]
    rotary = draw_rotary(c, rng, cast, arrays, key_lengths)
    if rotary:
        positions = rotary["positions"]
        q, k = (mha_reference.rotary(x, rotary["cos"], rotary["sin"],
                                     positions,
                                     interleaved=c["rotary"] == "interleaved")
                for x in (q, k))
        if smax:  # the cache holds the rotated keys, in the data's type
            k = cast(k)
    if smax:
        caches = []
        for name, new in (("k_cache", k), ("v_cache", v)):
            cache = arrays[name][0].copy()
            for i, n in enumerate(key_lengths):
                cache[i, :, n:n + sk] = new[i]
            caches.append(cache)
        expected = lambda: [mha_reference.attention(
            q, caches[0], caches[1], mask=mask, scale=c["scale"],
            causal=bool(c["causal"]), causal_offset=offset,
            **feature_kwargs(c, key_lengths + sk))] + caches
    else:
        expected = lambda: mha_reference.attention(
            q, k, v, mask=mask, scale=c["scale"], causal=bool(c["causal"]),
            causal_offset=offset, **feature_kwargs(c, key_lengths))
    out_type = tensor_type((b, h, sq, dv), t, dims("b", "", "sq"))
    body = []
    sizes = []
    for d, name in [(0, "b"), (2, "sq")]:
        if name in dyn:
            body.append(f"  %c{d} = arith.constant {d} : index")
            body.append(f"  %{name} = tensor.dim %q, %c{d} : {arrays['q'][1]}")
            sizes.append(f"%{name}")
    body.append(f"  %init = tensor.empty({', '.join(sizes)}) : {out_type}")
    if rotary:
        table = arrays["cos"][1]
        where = "key_lengths" if smax else "rotary_positions"
        interleaved = " {interleaved}" if c["rotary"] == "interleaved" else ""
        for name, seq in (("q", "sq"), ("k", "sk")):
            x_type = arrays[name][1]
            dyn_sizes = []
            for d, dim in [(0, "b"), (2, seq)]:
                if dim in dyn:
                    body.append(f"  %{name}_c{d} = arith.constant {d} : index")
                    body.append(f"  %{name}_d{d} = tensor.dim %{name}, "
                                f"%{name}_c{d} : {x_type}")
                    dyn_sizes.append(f"%{name}_d{d}")
            body.append(f"  %{name}_rinit = tensor.empty("
                        f"{', '.join(dyn_sizes)}) : {x_type}")
            body.append(
                f"  %{name}_r = mha.rotary ins(%{name} : {x_type}) "
                f"cos_sin(%cos, %sin : {table}, {table}) "
                f"positions(%{where} : {arrays[where][1]}) "
                f"outs(%{name}_rinit : {x_type}){interleaved} -> {x_type}")
    clauses = ""
    if mask is not None:
        clauses += f" mask(%mask : {arrays['mask'][1]})"
    keys, values = ("%k_r" if rotary else "%k"), "%v"
    types = ", ".join(arrays[n][1] for n in ["q", "k", "v"])
    results = [out_type]
    if smax:
        lengths_type = arrays["key_lengths"][1]
        for name in ("k_cache", "v_cache"):
            new = name[0]
            ssa = new + "_r" if rotary and new == "k" else new
            body.append(
                f"  %{name}_1 = mha.cache_append ins(%{ssa} : "
                f"{arrays[new][1]}) lengths(%key_lengths : {lengths_type}) "
                f"outs(%{name} : {arrays[name][1]}) -> {arrays[name][1]}")
            results.append(arrays[name][1])
        keys, values = "%k_cache_1", "%v_cache_1"
        types = ", ".join(arrays[n][1] for n in ["q", "k_cache", "v_cache"])
        # The attention sees each batch's lengths after the step.
        sizes = ""
        if "b" in dyn:
            body.append("  %c0_l = arith.constant 0 : index")
            body.append(f"  %b_l = tensor.dim %key_lengths, %c0_l : "
                        f"{lengths_type}")
            sizes = "[%b_l]"
        body.append(f"  %sn = arith.constant {sk} : i32")
        body.append(f"  %step = tensor.splat %sn{sizes} : {lengths_type}")
        body.append(f"  %lengths_1 = arith.addi %key_lengths, %step : "
                    f"{lengths_type}")
        clauses += f" key_lengths(%lengths_1 : {lengths_type})"
    elif key_lengths is not None:
        clauses += (" key_lengths(%key_lengths : "
                    f"{arrays['key_lengths'][1]})")
    if offset is not None:
        body.append(f"  %offset = arith.constant {offset} : index")
        clauses += " causal_offset(%offset)"
    attrs = []
    if c["scale"] is not None:
        attrs.append(f"scale = {float_attr(c['scale'])}")
    if c["causal"]:
        attrs.append("causal")
    attrs += feature_attrs(c)
    if c["key_transposed"]:
        attrs.append("key_transposed")
    fields = [f"{key} = {c[key]}" for key in ("kv_splits", "head_tile")
              if c[key]]
    if fields:
        attrs.append("mha.lowering_config = #mha.lowering_config<"
                     + ", ".join(fields) + ">")
    signature = ", ".join(f"%{n}: {arrays[n][1]}" for n in arrays)
    returned = ["%y"] + (["%k_cache_1", "%v_cache_1"] if smax else [])
    ir = (f"func.func @main({signature}) -> ({', '.join(results)}) {{\n" +
          "\n".join(body) + "\n"
          f"  %y = mha.attention ins({'%q_r' if rotary else '%q'}, "
          f"{keys}, {values} : {types})"
          f"{clauses}\n"
          f"         outs(%init : {out_type}) {{{', '.join(attrs)}}}"
          f" -> {out_type}\n"
          f"  return {', '.join(returned)} : {', '.join(results)}\n}}\n")
    return arrays, ir, expected

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mha-run", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--pipeline", action="append",
                        help="mha-run --pipeline value (repeatable; default "
                             "loops and cpu)")
    parser.add_argument("--atol", default="1e-4")
    parser.add_argument("--rtol", default="1e-4")
    parser.add_argument("--benchmark", type=int, default=0)
    parser.add_argument("--mha-run-arg", action="append", default=[],
                        help="extra mha-run argument (repeatable), e.g. "
                        "--target-cpu=haswell")
    parser.add_argument("--mlir", help="use this file instead of generating one")
    parser.add_argument("--mha-aot",
                        help="compile each --pipeline ahead of time with this "
                        "mha-aot and run the executable it writes instead of "
                        "mha-run ([aot PIPELINE] reports)")
    parser.add_argument("--aot-run-arg", action="append", default=[],
                        help="extra argument of the executable mha-aot "
                        "writes (repeatable); its --threads takes the count "
                        "as the next argument: --aot-run-arg=--threads "
                        "--aot-run-arg=2")
    parser.add_argument("--aot-repeat", type=int, default=1,
                        help="run the executable this many times: every "
                        "run's result must be bitwise the first's")
    parser.add_argument("--no-reference", action="store_true",
                        help="write case.mlir and inputs.json (each input's "
                        "name, shape and dtype) only, and with --mha-aot "
                        "compile it; no input arrays, no reference (for "
                        "benchmarks that draw their inputs elsewhere)")
    parser.add_argument("config", nargs="*")
    args = parser.parse_args()
    c = parse_config(args.config)
    os.makedirs(args.workdir, exist_ok=True)
    rng = np.random.default_rng(c["seed"])

    arrays, ir, expected = (core_case if c["core"] else layer_case)(c, rng)
    names = list(arrays)
    np_type = NP_TYPES[c["dtype"]]
    bf16 = c["dtype"] == "bf16"
    case = args.mlir or os.path.join(args.workdir, "case.mlir")
    if not args.mlir:
        with open(case, "w") as f:
            f.write(ir)
    if args.no_reference:
        with open(os.path.join(args.workdir, "inputs.json"), "w") as f:
            json.dump([{"name": n, "shape": list(arrays[n][0].shape),
                        "dtype": input_dtype(c, arrays[n][0])}
                       for n in names], f)
        args.aot_repeat = 0
        return check_aot(args, case, [], []) if args.mha_aot else 0
    command = [args.mha_run, case, f"--atol={args.atol}", f"--rtol={args.rtol}"]
    for n in names:
        path = os.path.join(args.workdir, n + ".npy")
        array = arrays[n][0]
        np.save(path, bf16_bits(array) if bf16 and array.dtype == np.float32
                else array)
        command.append(f"--input=@{path}")
    expected_path = os.path.join(args.workdir, "expected.npy")
    expected = expected()
    # More than one result (the caches of kv_cache): expected.npy is the
    # first, expected-<i>.npy the others.
    expected = expected if isinstance(expected, list) else [expected]
    expected_paths = [expected_path] + [
        os.path.join(args.workdir, f"expected-{i}.npy")
        for i in range(1, len(expected))]
    for path, array in zip(expected_paths, expected):
        np.save(path, array.astype(np_type))
        command.append(f"--expected-output=@{path}")
    if c["prepare"] and not args.mha_aot:
        command.append("--prepare-weights")
    if args.benchmark:
        command.append(f"--benchmark={args.benchmark}")
    command += args.mha_run_arg
    if not np.all(np.isfinite(expected[0])):
        print("check_mha.py: the reference output is not finite", file=sys.stderr)
        return 1
    if args.mha_aot:
        return check_aot(args, case, [os.path.join(args.workdir, n + ".npy")
                                      for n in names], expected_paths)
    status = 0
    for pipeline in args.pipeline or ["loops", "cpu"]:
        # The CPU pipeline also runs on 1 thread (unless the test sets the
        # count) and must give bitwise the same result as on 2.
        threaded = pipeline.startswith("cpu") and not any(
            a.startswith("--threads") for a in args.mha_run_arg)
        runs = [(pipeline, [])]
        if threaded:
            runs = [(pipeline, ["--threads=2"]),
                    (f"{pipeline} threads=1", ["--threads=1"])]
        outputs = []
        for label, extra in runs:
            files = [os.path.join(args.workdir,
                                  f"result-{len(outputs)}-{i}.npy")
                     for i in range(len(expected))]
            outputs.append(files)
            result = subprocess.run(
                command + [f"--pipeline={pipeline}"] +
                [f"--output=@{f}" for f in files] + extra,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            for line in result.stdout.splitlines():
                print(f"[{label}] {line}")
            status = status or result.returncode
        if threaded and result.returncode == 0:
            two, one = ([open(f, "rb").read() for f in o] for o in outputs)
            if two != one:
                print(f"[{pipeline}] results at 2 and 1 threads differ bitwise")
                status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
