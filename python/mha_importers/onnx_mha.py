"""ONNX attention layers to MHA-MLIR.

    python3 -m mha_importers.onnx_mha MODEL.onnx -o DIR [--name NAME]

The model's graph is one attention layer: per input a projection (MatMul
with a weight initializer, optionally an Add of a bias initializer), an
ONNX `Attention` (opset 23: 3-d inputs with q_num_heads/kv_num_heads,
is_causal, scale, an optional attn_mask) or `com.microsoft.MultiHeadAttention`
(ONNX Runtime's: num_heads, scale, unidirectional, a packed q/k/v bias, a
[B, Sk] int32 key padding mask and an additive attention_bias), then the
output projection. It becomes NAME.mlir (one mha.multi_head_attention; the
graph inputs, then the weights, as arguments), NAME.weights/*.npy and
NAME.rsp (docs/Integration.md). What does not fit is an error naming it.
"""
import argparse
import sys

import numpy as np
import onnx
from onnx import numpy_helper

from .layer import Layer, MaskInput, write

_FLOAT = {onnx.TensorProto.FLOAT: np.float32,
          onnx.TensorProto.FLOAT16: np.float16}


class ImportError_(Exception):
    pass



def _np_dtype(elem_type):
    """The numpy dtype of an ONNX element type: onnx.helper's function where
    it exists (1.13 on; onnx.mapping is gone from 1.19), onnx.mapping on
    Debian's 1.12."""
    convert = getattr(onnx.helper, "tensor_dtype_to_np_dtype", None)
    if convert is not None:
        return np.dtype(convert(elem_type))
    return np.dtype(onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[elem_type])

def _fail(msg):
    raise ImportError_(msg)


def _attrs(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _shape(value_info):
    dims = value_info.type.tensor_type.shape.dim
    return tuple(d.dim_value if d.HasField("dim_value") else None
                 for d in dims)


class _Graph:
    def __init__(self, model):
        g = model.graph
        self.inits = {t.name: numpy_helper.to_array(t) for t in g.initializer}
        for n in g.node:  # Constant nodes count as initializers
            if n.op_type == "Constant":
                self.inits[n.output[0]] = numpy_helper.to_array(
                    _attrs(n)["value"])
        self.producer = {o: n for n in g.node for o in n.output}
        self.users = {}
        for n in g.node:
            for i in n.input:
                self.users.setdefault(i, []).append(n)
        self.inputs = {i.name: i for i in g.input if i.name not in self.inits}
        self.outputs = list(g.output)
        self.nodes = [n for n in g.node if n.op_type != "Constant"]

    def projection(self, name, what):
        """(graph input, weight [in, out], bias or None) of a projection."""
        node = self.producer.get(name)
        bias = None
        if node is not None and node.op_type == "Add":
            a, b = node.input
            if b in self.inits and a in self.producer:
                name, bias = a, self.inits[b]
            elif a in self.inits and b in self.producer:
                name, bias = b, self.inits[a]
            else:
                _fail(f"the {what} projection adds something other than a "
                      f"bias initializer")
            node = self.producer[name]
        if node is None or node.op_type != "MatMul" or \
                node.input[1] not in self.inits:
            _fail(f"the {what} input is not a MatMul with a weight "
                  f"initializer")
        x, w = node.input[0], self.inits[node.input[1]]
        if w.ndim != 2:
            _fail(f"the {what} weight is not 2-d")
        return x, w, bias

    def single_user(self, name, op_type):
        users = self.users.get(name, [])
        if len(users) == 1 and users[0].op_type == op_type:
            return users[0]
        return None


def import_model(model, out_dir, name="main", inputs=None):
    """Imports an onnx.ModelProto (see the module's description); `inputs`:
    arrays for the graph inputs to save and name in NAME.rsp. Returns the
    path of NAME.mlir."""
    g = _Graph(model)
    att = [n for n in g.nodes if n.op_type in ("Attention",
                                               "MultiHeadAttention")]
    if len(att) != 1:
        _fail(f"expected one Attention or com.microsoft.MultiHeadAttention "
              f"node, found {len(att)}")
    att = att[0]
    a = _attrs(att)
    ms = att.op_type == "MultiHeadAttention"
    if ms and att.domain != "com.microsoft":
        _fail("MultiHeadAttention must be in the com.microsoft domain")
    if not ms and att.domain not in ("", "ai.onnx"):
        _fail(f"Attention in domain '{att.domain}' is not ONNX's")
    ins = list(att.input) + [""] * 8
    q_in, k_in, v_in = ins[0], ins[1], ins[2]
    xq, wq, bq = g.projection(q_in, "query")
    xk, wk, bk = g.projection(k_in, "key")
    xv, wv, bv = g.projection(v_in, "value")
    masks = []
    causal = False
    if ms:
        h = a.get("num_heads")
        if h is None:
            _fail("MultiHeadAttention has no num_heads")
        hkv = h
        if ins[3]:  # packed q/k/v bias, added after the projections
            if ins[3] not in g.inits:
                _fail("the MultiHeadAttention bias is not an initializer")
            if bq is not None or bk is not None or bv is not None:
                _fail("both Add nodes and the MultiHeadAttention bias")
            bq, bk, bv = np.split(g.inits[ins[3]], 3)
        if any(ins[6:8]):
            _fail("past key/value inputs are not supported")
        causal = bool(a.get("unidirectional", 0))
        fill = float(a.get("mask_filter_value", -10000.0))
        kpm_name, bias_name = ins[4], ins[5]
    else:
        h, hkv = a.get("q_num_heads"), a.get("kv_num_heads")
        if h is None or hkv is None:
            _fail("Attention on 3-d inputs needs q_num_heads and kv_num_heads")
        if ins[4] or ins[5]:
            _fail("past_key/past_value are not supported")
        if a.get("softcap", 0.0) != 0.0:
            _fail("softcap is not supported")
        outs = list(att.output) + [""] * 4
        if outs[1] or outs[2]:
            _fail("present_key/present_value outputs are not supported")
        if outs[3] and a.get("qk_matmul_output_mode", 0) != 3:
            _fail("qk_matmul_output is supported after the softmax only "
                  "(qk_matmul_output_mode = 3)")
        causal = bool(a.get("is_causal", 0))
        kpm_name, bias_name = "", ins[3]
    scale = a.get("scale")

    # The output projection.
    mm = g.single_user(att.output[0], "MatMul")
    if mm is None or mm.input[0] != att.output[0] or mm.input[1] not in \
            g.inits:
        _fail("the attention output is not projected by a MatMul with a "
              "weight initializer")
    wo, bo, out = g.inits[mm.input[1]], None, mm.output[0]
    add = g.single_user(out, "Add")
    if add is not None:
        other = add.input[1] if add.input[0] == out else add.input[0]
        if other not in g.inits:
            _fail("the output projection adds something other than a bias "
                  "initializer")
        bo, out = g.inits[other], add.output[0]
    weights_out = "" if ms else (list(att.output) + [""] * 4)[3]
    if [o.name for o in g.outputs] != [out] + ([weights_out] if weights_out
                                               else []):
        _fail("the graph's outputs are not the output projection (and the "
              "attention probabilities)")

    for x in (xq, xk, xv):
        if x not in g.inputs:
            _fail(f"'{x}' is not a graph input")
    sq_shape, sk_shape = _shape(g.inputs[xq]), _shape(g.inputs[xk])
    elt = _FLOAT.get(g.inputs[xq].type.tensor_type.elem_type)
    if elt is None:
        _fail("the inputs are neither float nor float16")
    layer = Layer(num_heads=h, num_kv_heads=hkv, w_q=wq, w_k=wk, w_v=wv,
                  w_o=wo, b_q=bq, b_k=bk, b_v=bv, b_o=bo, scale=scale,
                  batch=sq_shape[0], q_len=sq_shape[1], kv_len=sk_shape[1])
    if weights_out:  # [B, H, Sq, Sk] probabilities
        layer.return_weights = "per_head"
    layer.self_attention = xq == xk == xv
    layer.kv_shared = xk == xv != xq
    if not layer.self_attention and (xq == xk or xq == xv):
        _fail("the query input is also the key or the value input, but not "
              "both")
    if causal:
        if layer.q_len is None or layer.q_len != layer.kv_len:
            _fail("causal attention with query and key lengths that are not "
                  "the same static size (ONNX aligns it top-left, mha "
                  "bottom-right; they agree only then)")
        layer.causal = True

    # Masks (graph inputs, or initializers: then constant arguments).

    def mask_input(nm, dims_for_rank, is_bool, true_attends=True):
        if nm in g.inputs:
            shape = _shape(g.inputs[nm])
        elif nm in g.inits:
            shape = g.inits[nm].shape
        else:
            _fail(f"mask '{nm}' is neither a graph input nor an initializer")
        dims = dims_for_rank.get(len(shape))
        if dims is None:
            _fail(f"mask '{nm}' has rank {len(shape)}")
        return MaskInput(nm, tuple(shape), dims, is_bool, true_attends,
                         constant=g.inits.get(nm))

    def etype(nm):
        if nm in g.inits:
            return g.inits[nm].dtype
        t = g.inputs[nm].type.tensor_type.elem_type
        return _np_dtype(t)
    if bias_name:
        # Right-aligned (numpy) broadcasting to [B, H, Sq, Sk].
        is_bool = etype(bias_name) == np.bool_
        masks.append(mask_input(bias_name, {2: "QK", 3: "HQK", 4: "BHQK"},
                                is_bool))
    if kpm_name:
        if etype(kpm_name) != np.int32:
            _fail("the key padding mask is not int32")
        masks.append(mask_input(kpm_name, {2: "BK"}, False))
        masks[-1].padding_fill = fill
    layer.masks = masks
    return write(layer, out_dir, name, inputs)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m mha_importers.onnx_mha",
                                description=__doc__.split("\n\n")[1])
    p.add_argument("model", help="the .onnx file")
    p.add_argument("-o", "--output", required=True, help="output directory")
    p.add_argument("--name", default="main", help="entry function name")
    args = p.parse_args(argv)
    try:
        print(import_model(onnx.load(args.model), args.output, args.name))
    except ImportError_ as e:
        print(f"mha_importers.onnx_mha: error: {args.model}: {e}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
