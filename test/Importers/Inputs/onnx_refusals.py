"""Builds ONNX attention layers that mha_importers.onnx_mha must refuse, one
per input, output, attribute or shape it does not implement, saves each as
DIR/NAME.onnx and runs the importer's command line on it in this process
(one Python start for all). Prints "NAME: exit CODE: MESSAGE" per model,
MESSAGE without the prefix naming the program and the file.

Usage: onnx_refusals.py DIR
"""
import contextlib
import io
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

from mha_importers.onnx_mha import main

out = sys.argv[1]
F32, BOOL, I32, I64 = (TensorProto.FLOAT, TensorProto.BOOL, TensorProto.INT32,
                       TensorProto.INT64)
w8 = np.full((8, 8), 0.1, np.float32)


def layer(attrs=None, inputs=("q", "k", "v"), outputs=("a",), x=(1, 4, 8),
          extra=(), nodes=(), weights=None, ms=False, heads=True, opset=23):
    """x [1, 4, 8] (x=None: no shape) projected by MatMuls into q, k, v, the
    attention node (two heads unless `heads` is false) with `attrs`, and the
    output MatMul. `extra`: more graph inputs (name, element type, shape);
    `nodes`: more nodes before the attention; `weights`: replacements for
    w8."""
    w = {**dict(wq=w8, wk=w8, wv=w8, wo=w8), **(weights or {})}
    base = {} if not heads else dict(num_heads=2) if ms else \
        dict(q_num_heads=2, kv_num_heads=2)
    graph = [helper.make_node("MatMul", ["x", f"w{n}"], [n]) for n in "qkv"]
    graph += list(nodes)
    graph.append(helper.make_node(
        "MultiHeadAttention" if ms else "Attention", list(inputs),
        list(outputs), domain="com.microsoft" if ms else "",
        **{**base, **(attrs or {})}))
    graph.append(helper.make_node("MatMul", ["a", "wo"], ["y"]))
    g = helper.make_graph(
        graph, "attention",
        [helper.make_tensor_value_info("x", F32, x)] +
        [helper.make_tensor_value_info(*e) for e in extra],
        [helper.make_tensor_value_info("y", F32, None)],
        [numpy_helper.from_array(np.ascontiguousarray(a), n)
         for n, a in w.items()])
    opsets = [helper.make_opsetid("", opset)]
    if ms:
        opsets.append(helper.make_opsetid("com.microsoft", 1))
    m = helper.make_model(g, opset_imports=opsets)
    m.ir_version = 10
    return m


def ms_layer(attrs=None, **kw):
    return layer(attrs, ms=True, **kw)


def mask(elem_type, shape):
    return dict(inputs=("q", "k", "v", "m"), extra=[("m", elem_type, shape)])


def cross(kv_len=6, x=(1, 4, 8)):
    """Keys and values from a second input xkv [1, kv_len, 8]: Sq = 4 is
    not Sk (or lengths the importer cannot compare)."""
    return dict(inputs=("q", "kx", "vx"), x=x,
                extra=[("xkv", F32, [1, kv_len, 8])],
                nodes=[helper.make_node("MatMul", ["xkv", "wk"], ["kx"]),
                       helper.make_node("MatMul", ["xkv", "wv"], ["vx"])])


def nonpad(elem_type=I64, shape=(1,), opset=24, inputs=("q", "k", "v")):
    return dict(inputs=inputs + ("", "", "", "n")[len(inputs) - 3:],
                extra=[("n", elem_type, list(shape))], opset=opset)


cases = {
    # Attention (ai.onnx): a KV cache (past_key, past_value) that is not
    # whole or does not fit the layer, present_key without it.
    "past_key_only": layer(inputs=("q", "k", "v", "", "pk"),
                           extra=[("pk", F32, [1, 2, 3, 4])]),
    "present_key": layer(outputs=("a", "pk")),
    "past_qk": layer(dict(qk_matmul_output_mode=3),
                     inputs=("q", "k", "v", "", "pk", "pv"),
                     outputs=("a", "", "", "qk"),
                     extra=[("pk", F32, [1, 2, 3, 4]),
                            ("pv", F32, [1, 2, 3, 4])]),
    "past_heads": layer(inputs=("q", "k", "v", "", "pk", "pv"),
                        extra=[("pk", F32, [1, 3, 3, 4]),
                               ("pv", F32, [1, 2, 3, 4])]),
    "past_lengths": layer(inputs=("q", "k", "v", "", "pk", "pv"),
                          extra=[("pk", F32, [1, 2, 3, 4]),
                                 ("pv", F32, [1, 2, 5, 4])]),
    "qk_mode_0": layer(outputs=("a", "", "", "qk")),
    "too_many_inputs": layer(inputs=("q", "k", "v", "", "", "", "", "z")),
    "no_value": layer(inputs=("q", "k")),
    # nonpad_kv_seqlen (opset 24: int64 [B], the key lengths) with a KV
    # cache, in opset 23, or not [B] int64.
    "nonpad_past_key": layer(**{**nonpad(), "extra": [
        ("n", I64, [1]), ("pk", F32, [1, 2, 3, 4]), ("pv", F32, [1, 2, 3, 4])],
        "inputs": ("q", "k", "v", "", "pk", "pv", "n")}),
    "nonpad_opset_23": layer(**nonpad(opset=23)),
    "nonpad_type": layer(**nonpad(I32)),
    "nonpad_batch": layer(**nonpad(shape=(2,))),
    "nonpad_dynamic": layer(**nonpad(shape=("b",))),
    "nonpad_rank": layer(**nonpad(shape=(1, 1))),
    # Attributes out of their range, or unknown.
    "softcap_negative": layer(dict(softcap=-1.0)),
    "softcap_inf": layer(dict(softcap=float("inf"))),
    "left_window_size": layer(dict(left_window_size=-2), opset=25),
    "right_window_size_opset_24": layer(dict(right_window_size=1),
                                        opset=24),
    "softmax_precision": layer(dict(softmax_precision=TensorProto.INT32)),
    "unknown_attribute": layer(dict(sliding=1)),
    "scale": layer(dict(scale=-1.0)),
    "kv_num_heads": layer(dict(q_num_heads=2, kv_num_heads=3)),
    "q_num_heads": layer(dict(q_num_heads=3, kv_num_heads=3)),
    "head_size": layer(weights=dict(wk=w8[:, :4], wv=w8[:, :4])),
    # Causal and windows where ONNX's diagonal (top-left without
    # nonpad_kv_seqlen) is not mha's (bottom-right): Sq != Sk, or lengths
    # of a cross attention that are not static (self-attention's are the
    # same).
    "causal_cross": layer(dict(is_causal=1), **cross()),
    "left_window_cross": layer(dict(left_window_size=2), opset=25,
                               **cross()),
    "right_window_cross": layer(dict(right_window_size=0), opset=25,
                                **cross()),
    "window_dynamic": layer(dict(left_window_size=2), opset=25,
                            **cross("s", x=(1, "s", 8))),
    # Q, K, V that are not 3-d projections.
    "4d": layer(heads=False, x=(1, 2, 4, 8)),
    "no_shape": layer(x=None),
    "transpose": layer(inputs=("qt", "k", "v"), nodes=[
        helper.make_node("Transpose", ["q"], ["qt"], perm=[0, 2, 1])]),
    # attn_mask shapes and types ([B, H, Sq, Sk] = [1, 2, 4, 4]).
    "mask_longer": layer(**mask(F32, [4, 6])),
    "mask_heads": layer(**mask(F32, [3, 4, 4])),
    "mask_dynamic_keys": layer(**mask(BOOL, [4, "n"])),
    "mask_dynamic_queries": layer(**mask(BOOL, ["n", 4])),
    "mask_rank": layer(**mask(F32, [1, 1, 1, 4, 4])),
    "mask_type": layer(**mask(I64, [4, 4])),
    # com.microsoft.MultiHeadAttention.
    "ms_past_sequence_length": ms_layer(
        inputs=("q", "k", "v", "", "", "", "", "", "p"),
        extra=[("p", I32, [1])]),
    "ms_cache_indirection": ms_layer(
        inputs=("q", "k", "v", "", "", "", "", "", "", "c"),
        extra=[("c", I32, [1, 1, 4])]),
    "ms_qk": ms_layer(outputs=("a", "", "", "qk")),
    "ms_unknown_attribute": ms_layer(dict(do_rotary=1)),
    "ms_packed_qkv": ms_layer(inputs=("q",)),
    "ms_key_padding_mask": ms_layer(inputs=("q", "k", "v", "", "kpm"),
                                    extra=[("kpm", I32, [1, 3])]),
    "ms_key_lengths": ms_layer(inputs=("q", "k", "v", "", "kpm"),
                               extra=[("kpm", I32, [1])]),
    "ms_attention_bias": ms_layer(inputs=("q", "k", "v", "", "", "ab"),
                                 extra=[("ab", BOOL, [1, 2, 4, 4])]),
}
for name, m in cases.items():
    path = f"{out}/{name}.onnx"
    onnx.save(m, path)
    text = io.StringIO()
    with contextlib.redirect_stderr(text), contextlib.redirect_stdout(text):
        code = main([path, "-o", f"{out}/{name}"])
    message = text.getvalue().strip().split(f"{path}: ")[-1]
    print(f"{name}: exit {code}: {message}")
