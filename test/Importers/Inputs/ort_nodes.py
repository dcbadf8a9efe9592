"""com.microsoft.GroupQueryAttention models (onnx helper API) run by ONNX
Runtime itself (CPUExecutionProvider, the reference) and through the
importer and mha-run (mha_importers.onnx_backend); every output (the
attention's and the present K/V) must agree within 1e-4. Then the inputs
the importer refuses, and the run-time checks of what only the data shows.

Usage: ort_gqa.py WORKDIR [PIPELINE]
"""
import sys

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper

from mha_importers.onnx_backend import MhaBackend
from mha_importers.onnx_mha import ImportError_

WORK = sys.argv[1]
PIPELINE = sys.argv[2] if len(sys.argv) > 2 else "cpu"
F = TensorProto.FLOAT


def model(b, s, n, nkv, h, past, attrs, rotary=None, extra_inputs=(),
          names=None, F=F, packed=False, grow=False):
    if packed:  # Q, K and V in one input [B, S, (n + 2 nkv) * h].
        ins = [helper.make_tensor_value_info("q", F, [b, s, (n + 2 * nkv) * h])]
        node_inputs = ["q", "", ""]
    else:
        ins = [helper.make_tensor_value_info("q", F, [b, s, n * h]),
               helper.make_tensor_value_info("k", F, [b, s, nkv * h]),
               helper.make_tensor_value_info("v", F, [b, s, nkv * h])]
        node_inputs = ["q", "k", "v"]
    if past:
        ins += [helper.make_tensor_value_info("pk", F, [b, nkv, past, h]),
                helper.make_tensor_value_info("pv", F, [b, nkv, past, h])]
        node_inputs += ["pk", "pv"]
    else:
        node_inputs += ["", ""]
    ins += [helper.make_tensor_value_info("sl", TensorProto.INT32, [b]),
            helper.make_tensor_value_info("tot", TensorProto.INT32, [])]
    node_inputs += ["sl", "tot"]
    if rotary:
        m, r2 = rotary
        ins += [helper.make_tensor_value_info("cos", F, [m, r2]),
                helper.make_tensor_value_info("sin", F, [m, r2])]
        node_inputs += ["cos", "sin"]
    for name, vi, position in extra_inputs:
        while len(node_inputs) < position:
            node_inputs.append("")
        node_inputs.append(name)
        ins.append(vi)
    # The present: the past buffer, or (grow) the past plus the new tokens.
    present = past + s if grow else past if past else s
    outs = [helper.make_tensor_value_info("y", F, [b, s, n * h]),
            helper.make_tensor_value_info("pko", F, [b, nkv, present, h]),
            helper.make_tensor_value_info("pvo", F, [b, nkv, present, h])]
    node = helper.make_node("GroupQueryAttention", names or node_inputs,
                            ["y", "pko", "pvo"], domain="com.microsoft",
                            num_heads=n, kv_num_heads=nkv, **attrs)
    g = helper.make_graph([node], "gqa", ins, outs)
    return helper.make_model(
        g, opset_imports=[helper.make_opsetid("", 21),
                          helper.make_opsetid("com.microsoft", 1)],
        ir_version=10)


def feeds_for(m, lens, total, seed, rotary):
    rng = np.random.default_rng(seed)
    feeds = {}
    for vi in m.graph.input:
        shape = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        if vi.name == "sl":
            feeds["sl"] = np.array(lens, np.int32) - 1
        elif vi.name == "tot":
            feeds["tot"] = np.array(total, np.int32)
        elif vi.name in ("cos", "sin"):
            continue
        else:
            dtype = (np.float16 if vi.type.tensor_type.elem_type ==
                     TensorProto.FLOAT16 else np.float32)
            feeds[vi.name] = rng.standard_normal(shape).astype(dtype)
    if rotary:
        angles = rng.uniform(0, 2 * np.pi, rotary).astype(np.float32)
        feeds["cos"], feeds["sin"] = np.cos(angles), np.sin(angles)
    return feeds


def make_dynamic(m):
    """The model with its batch, sequence, past and present lengths
    symbolic, as ONNX Runtime's exporters write them."""
    params = {"q": {0: "batch", 1: "seq"}, "k": {0: "batch", 1: "seq"},
              "v": {0: "batch", 1: "seq"}, "pk": {0: "batch", 2: "past"},
              "pv": {0: "batch", 2: "past"}, "sl": {0: "batch"},
              "pos": {0: "batch", 1: "seq"}, "y": {0: "batch", 1: "seq"},
              "pko": {0: "batch", 2: "total"}, "pvo": {0: "batch", 2: "total"}}
    for vi in list(m.graph.input) + list(m.graph.output):
        for i, name in params.get(vi.name, {}).items():
            vi.type.tensor_type.shape.dim[i].dim_param = name
    return m


def dynamic_or_skip(name, m):
    """make_dynamic(m), or None (said) on the Vulkan pipeline, which takes
    static shapes."""
    if PIPELINE.startswith("vulkan"):
        print(f"{name}: skipped: the Vulkan pipeline takes static shapes")
        return None
    return make_dynamic(m)


def case(name, b, s, n, nkv, h, past, lens, total, attrs=None, rotary=None,
         seed=0, dtype=F, packed=False, positions=None, grow=False,
         dynamic=False):
    extra = ()
    if positions is not None:  # position_ids [B, S], int64
        extra = [("pos", helper.make_tensor_value_info(
            "pos", TensorProto.INT64, [b, s]), 9)]
    m = model(b, s, n, nkv, h, past, attrs or {}, rotary, F=dtype,
              packed=packed, extra_inputs=extra, grow=grow)
    feeds = feeds_for(m, lens, total, seed, rotary)
    if dynamic and not (m := dynamic_or_skip(name, m)):
        return
    if positions is not None:
        feeds["pos"] = np.array(positions, np.int64)
    compare(name, m, feeds, 2e-3 if dtype == TensorProto.FLOAT16 else 1e-4)


def compare(name, m, feeds, tolerance=1e-4):
    """Runs `m` on `feeds` with ONNX Runtime and through the importer; every
    output must agree within `tolerance`."""
    ref = ort.InferenceSession(m.SerializeToString(),
                               providers=["CPUExecutionProvider"]).run(
        None, feeds)
    ours = MhaBackend.prepare(m, pipeline=PIPELINE,
                              workdir=f"{WORK}/{name}").run(
        [feeds[vi.name] for vi in m.graph.input])
    errors = [float(np.abs(a.astype(np.float32) - r.astype(np.float32)).max())
              for a, r in zip(ours, ref)]
    ok = all(e <= tolerance for e in errors) and len(ours) == len(ref)
    print(f"{name}: max abs error {max(errors):.1e}: "
          f"{'OK' if ok else 'MISMATCH'}")


# Decoding on separate past/present buffers, batches of different lengths.
case("decode", 2, 1, 8, 2, 16, 32, [10, 25], 26)
case("decode_window_softcap", 2, 1, 8, 2, 16, 32, [10, 25], 26,
     dict(local_window_size=5, softcap=3.0))
case("decode_rotary_half", 2, 1, 8, 2, 16, 32, [10, 25], 26,
     dict(do_rotary=1), rotary=(64, 8))
case("decode_rotary_interleaved_partial", 2, 1, 4, 1, 32, 40, [3, 40], 40,
     dict(do_rotary=1, rotary_interleaved=1), rotary=(64, 8))
case("decode_scale", 3, 1, 4, 4, 16, 16, [1, 16, 7], 16, dict(scale=0.2))
case("decode_f16", 2, 1, 8, 2, 16, 32, [10, 25], 26, dict(softcap=2.0),
     dtype=TensorProto.FLOAT16)
# A subsequent prompt (B = 1, 1 < S < T) with a window.
case("subsequent_prompt", 1, 4, 4, 2, 16, 32, [12], 12,
     dict(local_window_size=3, do_rotary=1), rotary=(32, 8))
# First prompts: no past; one batch right-padded (tot < S).
case("first_prompt", 2, 6, 4, 2, 16, 0, [6, 6], 6,
     dict(local_window_size=2))
case("first_prompt_padded_rotary", 2, 6, 4, 2, 16, 0, [6, 4], 6,
     dict(do_rotary=1, scale=0.3), rotary=(16, 8))
# Packed QKV (no key and value inputs): a decode step with rotary and a
# first prompt.
case("packed_qkv_decode_rotary", 2, 1, 8, 2, 16, 32, [10, 25], 26,
     dict(do_rotary=1), rotary=(64, 8), packed=True)
case("packed_qkv_first_prompt", 2, 5, 4, 1, 16, 0, [5, 3], 5, packed=True)
# A growing cache: past buffers of the past length, presents of the past
# plus the new tokens (total_sequence_length = P + S); batches of different
# lengths within it; a subsequent prompt with rotary.
case("grow_decode", 2, 1, 8, 2, 16, 20, [21, 9], 21, grow=True)
case("grow_prompt_rotary", 1, 3, 4, 2, 16, 10, [13], 13,
     dict(do_rotary=1, local_window_size=4), rotary=(32, 8), grow=True)
# Dynamic batch, sequence, past and present lengths: the present is
# max(T, P) long (a growing cache, a shared buffer), a subsequent prompt
# with rotary and position_ids, a first prompt of packed QKV.
case("dynamic_decode_grow", 2, 1, 8, 2, 16, 20, [21, 9], 21, grow=True,
     dynamic=True)
case("dynamic_decode_shared", 2, 1, 8, 2, 16, 32, [10, 25], 26,
     dict(softcap=3.0), dynamic=True)
case("dynamic_subsequent_prompt", 1, 3, 4, 2, 16, 10, [13], 13,
     dict(do_rotary=1, local_window_size=4), rotary=(32, 8), grow=True,
     positions=[[10, 11, 12]], dynamic=True)
case("dynamic_first_prompt_packed", 2, 5, 4, 1, 16, 0, [5, 3], 5,
     packed=True, dynamic=True)
# position_ids: rotary rows other than the past lengths' (decode), per token
# out of order (a subsequent prompt); without do_rotary they are not read.
case("position_ids_decode", 2, 1, 8, 2, 16, 32, [10, 25], 26,
     dict(do_rotary=1), rotary=(64, 8), positions=[[3], [40]])
case("position_ids_subsequent_prompt", 1, 4, 4, 2, 16, 32, [12], 12,
     dict(do_rotary=1, rotary_interleaved=1), rotary=(32, 8),
     positions=[[5, 0, 9, 2]])
case("position_ids_no_rotary", 2, 1, 4, 2, 16, 8, [3, 8], 8,
     positions=[[0], [1]])

# Refused: each by its name.
I32 = TensorProto.INT32
refusals = {
    "key_without_value": dict(names=["q", "k", "", "pk", "pv", "sl",
                                     "tot"]),
    "position_ids_shape": dict(extra_inputs=[(
        "pos", helper.make_tensor_value_info("pos", TensorProto.INT64, [1, 2]),
        9)]),
    "attention_bias": dict(extra_inputs=[(
        "ab", helper.make_tensor_value_info("ab", F, [1, 1, 1, 8]), 10)]),
    "smooth_softmax": dict(attrs=dict(smooth_softmax=1)),
    "not_causal": dict(attrs=dict(causal=0)),
    "window_0": dict(attrs=dict(local_window_size=0)),
    "qk_output": dict(attrs=dict(qk_output=1)),
    "rotary_no_cache": dict(attrs=dict(do_rotary=1)),
}
m = model(1, 2, 2, 1, 16, 0, dict(do_rotary=1), rotary=(8, 8),
          extra_inputs=[("pos", helper.make_tensor_value_info(
              "pos", TensorProto.INT64, [1, 2]), 9)])
try:
    MhaBackend.prepare(m, workdir=f"{WORK}/position_ids_first_prompt")
    print("position_ids_first_prompt: imported")
except ImportError_ as e:
    print(f"position_ids_first_prompt: refused: {e}")
# A dynamic head count: only batch, sequence and past lengths may be.
m = make_dynamic(model(1, 1, 2, 1, 16, 8, {}))
m.graph.input[3].type.tensor_type.shape.dim[1].dim_param = "heads"
try:
    MhaBackend.prepare(m, workdir=f"{WORK}/dynamic_heads")
    print("dynamic_heads: imported")
except ImportError_ as e:
    print(f"dynamic_heads: refused: {e}")
for name, kw in refusals.items():
    m = model(1, 1, 2, 1, 16, 8, kw.get("attrs", {}),
              extra_inputs=kw.get("extra_inputs", ()), names=kw.get("names"))
    try:
        MhaBackend.prepare(m, workdir=f"{WORK}/{name}")
        print(f"{name}: imported")
    except ImportError_ as e:
        print(f"{name}: refused: {e}")

# Run-time checks: a total length beyond the past buffer, a batch whose
# length is shorter than the new tokens, a first prompt whose total length
# is not its own.
m = model(1, 1, 2, 1, 16, 8, {}, grow=True)
feeds = feeds_for(m, [8], 8, 0, None)
try:
    MhaBackend.prepare(m, pipeline=PIPELINE,
                       workdir=f"{WORK}/grow_total_short").run(
        [feeds[vi.name] for vi in m.graph.input])
    print("grow_total_short: ran")
except RuntimeError as e:
    print(f"grow_total_short: stopped: {str(e).splitlines()[0]}")
for name, args in (("total_too_long", (1, 1, 2, 1, 16, 8, [8], 9)),
                   ("length_below_new", (1, 2, 2, 1, 16, 8, [1], 8)),
                   ("first_prompt_total", (1, 2, 2, 1, 16, 0, [2], 3))):
    b, s, n, nkv, h, past, lens, total = args
    m = model(b, s, n, nkv, h, past, {})
    feeds = feeds_for(m, lens, total, 0, None)
    try:
        MhaBackend.prepare(m, pipeline=PIPELINE,
                           workdir=f"{WORK}/{name}").run(
            [feeds[vi.name] for vi in m.graph.input])
        print(f"{name}: ran")
    except RuntimeError as e:
        print(f"{name}: stopped: {str(e).splitlines()[0]}")


# com.microsoft.MultiHeadAttention on graph inputs, with a KV cache.
def mha_model(b, s, n, h, past, attrs, extra=()):
    ins = [helper.make_tensor_value_info(x, F, [b, s, n * h])
           for x in ("q", "k", "v")]
    node_inputs = ["q", "k", "v"]
    outs = [helper.make_tensor_value_info("y", F, [b, s, n * h])]
    out_names = ["y"]
    if past:
        ins += [helper.make_tensor_value_info(x, F, [b, n, past, h])
                for x in ("pk", "pv")]
        node_inputs += ["", "", "", "pk", "pv"]
        outs += [helper.make_tensor_value_info(x, F, [b, n, past + s, h])
                 for x in ("pko", "pvo")]
        out_names += ["pko", "pvo"]
    for name, vi, position in extra:
        while len(node_inputs) < position:
            node_inputs.append("")
        node_inputs[position:position + 1] = [name]
        ins.append(vi)
    node = helper.make_node("MultiHeadAttention", node_inputs, out_names,
                            domain="com.microsoft", num_heads=n, **attrs)
    g = helper.make_graph([node], "mha", ins, outs)
    return helper.make_model(
        g, opset_imports=[helper.make_opsetid("", 21),
                          helper.make_opsetid("com.microsoft", 1)],
        ir_version=10)


def mha_case(name, b, s, n, h, past, attrs=None, seed=0, dynamic=False):
    m = mha_model(b, s, n, h, past, attrs or {})
    feeds = feeds_for(m, [], 0, seed, None)
    if dynamic and not (m := dynamic_or_skip(name, m)):
        return
    compare(name, m, feeds)


mha_case("mha_decode_unidirectional", 2, 1, 4, 16, 20,
         dict(unidirectional=1))
mha_case("mha_prompt_past_unidirectional_scale", 1, 5, 2, 32, 7,
         dict(unidirectional=1, scale=0.2))
mha_case("mha_no_past", 2, 6, 4, 8, 0)
# Dynamic batch, sequence and past lengths (the present past + new).
mha_case("mha_dynamic_decode", 2, 1, 4, 16, 20, dict(unidirectional=1),
         dynamic=True)
mha_case("mha_dynamic_prompt", 3, 4, 2, 16, 0, dynamic=True)
for name, extra in (
        ("mha_bias", [("bias", helper.make_tensor_value_info(
            "bias", F, [3 * 2 * 16]), 3)]),
        ("mha_key_padding_mask", [("kpm", helper.make_tensor_value_info(
            "kpm", TensorProto.INT32, [1, 9]), 4)])):
    m = mha_model(1, 1, 2, 16, 8, {}, extra)
    try:
        MhaBackend.prepare(m, workdir=f"{WORK}/{name}")
        print(f"{name}: imported")
    except ImportError_ as e:
        print(f"{name}: refused: {e}")
