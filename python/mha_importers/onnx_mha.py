"""ONNX attention layers to MHA-MLIR.

    python3 -m mha_importers.onnx_mha MODEL.onnx -o DIR [--name NAME]

The model's graph is one attention layer: per input a projection (MatMul
with a weight initializer, optionally an Add of a bias initializer), an
ONNX `Attention` (opsets 23-25: 3-d inputs with q_num_heads/kv_num_heads,
is_causal, scale, softcap, left/right_window_size, an optional attn_mask,
nonpad_kv_seqlen, past_key/past_value with present_key/present_value) or
`com.microsoft.MultiHeadAttention`
(ONNX Runtime's: num_heads, scale, unidirectional, a packed q/k/v bias, a
[B, Sk] int32 key padding mask and an additive attention_bias), then the
output projection. It becomes NAME.mlir (one mha.multi_head_attention; the
graph inputs, then the weights, as arguments), NAME.weights/*.npy and
NAME.rsp (docs/Integration.md). An input, output or attribute the importer
does not implement is an error naming it (exit code 1), never dropped.
A graph that is ONNX's Attention node alone on its inputs becomes one
mha.attention (attention_node.py); one that is ONNX Runtime's
com.microsoft.GroupQueryAttention alone, a decoding step, and one that is
com.microsoft.MultiHeadAttention alone on its inputs, an attention with
an optional KV cache (ort_nodes.py).
"""
import argparse
import sys

import numpy as np
import onnx
from onnx import numpy_helper

from . import attention_node, ort_nodes
from .layer import KeyLengths, Layer, MaskInput, PastKV, write

_FLOAT = {onnx.TensorProto.FLOAT: np.float32,
          onnx.TensorProto.FLOAT16: np.float16}


class ImportError_(Exception):
    pass


# Each operator's inputs and outputs by position, and the attributes the
# importer reads: any other attribute, and an unsupported input or output
# that is present, stops the import (an ignored one would change numbers).
_ATTENTION_INPUTS = ("Q", "K", "V", "attn_mask", "past_key", "past_value",
                     "nonpad_kv_seqlen")
_ATTENTION_OUTPUTS = ("Y", "present_key", "present_value", "qk_matmul_output")
_ATTENTION_ATTRS = {"q_num_heads", "kv_num_heads", "is_causal", "scale",
                    "softcap", "softmax_precision", "qk_matmul_output_mode",
                    "left_window_size", "right_window_size"}
_MS_INPUTS = ("query", "key", "value", "bias", "key_padding_mask",
              "attention_bias", "past_key", "past_value",
              "past_sequence_length", "cache_indirection")
_MS_OUTPUTS = ("output", "present_key", "present_value", "qk")
_MS_ATTRS = {"num_heads", "scale", "unidirectional", "mask_filter_value"}
# Present, these need a KV cache or outputs mha does not have in a layer
# (com.microsoft.MultiHeadAttention's; ONNX Attention's cache maps).
_MS_REFUSED = ("past_key", "past_value", "past_sequence_length",
               "cache_indirection", "present_key", "present_value", "qk")

_SOFTMAX_PRECISIONS = (onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16,
                       onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE)


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


def _dims(value_info):
    """Per dim its size, its name (dim_param) or None: dims of one name
    are the same size."""
    return tuple(d.dim_value if d.HasField("dim_value") else
                 (d.dim_param or None)
                 for d in value_info.type.tensor_type.shape.dim)


def _shape(value_info):
    return tuple(d if isinstance(d, int) else None
                 for d in _dims(value_info))


def _dim_text(d):
    return "?" if d is None else f"'{d}'" if isinstance(d, str) else str(d)


def _check_node(att, a, opset, bare=False):
    """Refuses what `att` has beyond what the importer implements, by the
    operator's own names; returns its inputs and outputs by those names
    ('' where absent). `opset`: the model's ai.onnx opset; `bare`: a bare
    Attention node (attention_node.py), which takes past/present and every
    qk_matmul_output_mode."""
    ms = att.op_type == "MultiHeadAttention"
    op = "com.microsoft.MultiHeadAttention" if ms else "Attention"
    in_names = _MS_INPUTS if ms else _ATTENTION_INPUTS
    out_names = _MS_OUTPUTS if ms else _ATTENTION_OUTPUTS
    if len(att.input) > len(in_names) or len(att.output) > len(out_names):
        _fail(f"{op} has {len(att.input)} inputs and {len(att.output)} "
              f"outputs; the importer knows {len(in_names)} "
              f"({', '.join(in_names)}) and {len(out_names)} "
              f"({', '.join(out_names)})")
    for k in sorted(set(a) - (_MS_ATTRS if ms else _ATTENTION_ATTRS)):
        _fail(f"{op} attribute {k} is not supported")
    ins = dict(zip(in_names, list(att.input) + [""] * len(in_names)))
    outs = dict(zip(out_names, list(att.output) + [""] * len(out_names)))
    if not ms and ins["nonpad_kv_seqlen"] and (ins["past_key"] or
                                               ins["past_value"]):
        _fail("Attention input nonpad_kv_seqlen together with past_key and "
              "past_value is not supported (ONNX does not allow it: "
              "nonpad_kv_seqlen describes a cache kept outside the operator)")
    for n in _MS_REFUSED if ms and not bare else ():
        if ins.get(n) or outs.get(n):
            kind = "input" if n in in_names else "output"
            _fail(f"{op} {kind} {n} is not supported")
    if not ms:
        # What Attention gained after opset 23: a model of an older opset
        # that has it is not valid ONNX.
        for k, kind, since in (("nonpad_kv_seqlen", "input", 24),
                               ("left_window_size", "attribute", 25),
                               ("right_window_size", "attribute", 25)):
            present = ins[k] if kind == "input" else k in a
            if present and opset is not None and opset < since:
                _fail(f"Attention {kind} {k} is not in opset {opset} (it "
                      f"came in opset {since})")
        # mha computes the softmax in f32 whatever the inputs' type: at
        # least the precision a float type asks for (DOUBLE: f32 rounding).
        precision = a.get("softmax_precision")
        if precision is not None and precision not in _SOFTMAX_PRECISIONS:
            _fail(f"Attention attribute softmax_precision = "
                  f"{onnx.TensorProto.DataType.Name(precision)} is not "
                  f"supported (a float type: mha's softmax is f32)")
        softcap = a.get("softcap", 0.0)
        if softcap != 0.0 and not (np.isfinite(softcap) and softcap > 0):
            _fail(f"Attention attribute softcap = {softcap} is not supported "
                  f"(0: no soft cap, or a positive and finite cap)")
        for k in ("left_window_size", "right_window_size"):
            if a.get(k, -1) < -1:
                _fail(f"Attention attribute {k} = {a[k]} is not supported "
                      f"(-1: unbounded, or a size >= 0)")
        if outs["qk_matmul_output"] and a.get("qk_matmul_output_mode",
                                              0) != 3 and not bare:
            _fail("Attention output qk_matmul_output is supported after the "
                  "softmax only (qk_matmul_output_mode = 3)")
    scale = a.get("scale")
    if scale is not None and not (np.isfinite(scale) and scale > 0):
        _fail(f"{op} attribute scale = {scale} is not supported (mha's "
              f"scale is positive and finite)")
    if not all(list(att.input[:3]) + [""] * (3 - len(att.input))):
        if not ms:
            _fail("Attention needs Q, K and V")
        _fail(f"{op} without key and value inputs (packed QKV or KV) is not "
              f"supported")
    return ins, outs


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
            found = "a graph input" if node is None else node.op_type
            _fail(f"the {what} input is not a MatMul with a weight "
                  f"initializer (found {found})")
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
    gqa = [n for n in g.nodes if n.op_type == "GroupQueryAttention"]
    if gqa:
        if len(g.nodes) != 1 or gqa[0].domain != "com.microsoft":
            _fail("GroupQueryAttention is taken alone on graph inputs, in "
                  "the com.microsoft domain")
        try:
            return ort_nodes.import_gqa_node(model, gqa[0], _attrs(gqa[0]),
                                           g.inits, out_dir, name, inputs)
        except attention_node.Refused as e:
            _fail(str(e))
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
    opset = next((o.version for o in model.opset_import
                  if o.domain in ("", "ai.onnx")), None)
    q_in, k_in, v_in = (list(att.input) + ["", "", ""])[:3]
    if ms and all(x and x not in g.producer for x in (q_in, k_in, v_in)):
        # ONNX Runtime's MultiHeadAttention on graph inputs (a KV cache).
        if len(g.nodes) != 1:
            _fail("a graph with MultiHeadAttention on its inputs has other "
                  "nodes; the importer takes the node alone or a whole layer")
        try:
            return ort_nodes.import_mha_node(model, att, a, g.inits, out_dir,
                                             name, inputs)
        except attention_node.Refused as e:
            _fail(str(e))
    if not ms and all(x and x not in g.producer for x in (q_in, k_in, v_in)):
        # Q, K and V are graph inputs: the bare operator.
        ins, outs = _check_node(att, a, opset, bare=True)
        if len(g.nodes) != 1:
            _fail(f"a graph with Attention on its inputs has other nodes "
                  f"({', '.join(sorted({n.op_type for n in g.nodes} - {'Attention'}))}); "
                  f"the importer takes the node alone or a whole layer")
        try:
            return attention_node.import_node(model, att, a, ins, outs,
                                              g.inits, out_dir, name, inputs)
        except attention_node.Refused as e:
            _fail(str(e))
    ins, outs = _check_node(att, a, opset)
    xq, wq, bq = g.projection(q_in, "query")
    xk, wk, bk = g.projection(k_in, "key")
    xv, wv, bv = g.projection(v_in, "value")
    # A MatMul keeps its input's rank: Q, K and V have the graph inputs'.
    for x, what in ((xq, "query"), (xk, "key"), (xv, "value")):
        if x not in g.inputs:
            _fail(f"'{x}' is not a graph input")
        if not g.inputs[x].type.tensor_type.HasField("shape"):
            _fail(f"the {what} input '{x}' has no shape")
        rank = len(_dims(g.inputs[x]))
        if rank == 4 and not ms:
            _fail("Attention on 4-d Q, K, V ([batch, heads, seq, head_size], "
                  "heads already split) is not supported: the importer takes "
                  "3-d [batch, seq, hidden] inputs with q_num_heads and "
                  "kv_num_heads")
        if rank != 3:
            _fail(f"the {what} input '{x}' has rank {rank}; the importer "
                  f"takes 3-d [batch, seq, hidden] inputs")
    q_elem = g.inputs[xq].type.tensor_type.elem_type
    elt = _FLOAT.get(q_elem)
    if elt is None:
        _fail("the inputs are neither float nor float16")
    q_dtype = _np_dtype(q_elem)
    masks = []
    causal = False
    softcap = window_left = window_right = None
    lengths_name = ""
    if ms:
        h = a.get("num_heads")
        if h is None:
            _fail("MultiHeadAttention has no num_heads")
        hkv = h
        if ins["bias"]:  # packed q/k/v bias, added after the projections
            if ins["bias"] not in g.inits:
                _fail("the MultiHeadAttention bias is not an initializer")
            if bq is not None or bk is not None or bv is not None:
                _fail("both Add nodes and the MultiHeadAttention bias")
            bq, bk, bv = np.split(g.inits[ins["bias"]], 3)
        causal = bool(a.get("unidirectional", 0))
        fill = float(a.get("mask_filter_value", -10000.0))
        kpm_name, bias_name = ins["key_padding_mask"], ins["attention_bias"]
        heads_q = heads_kv = "num_heads"
    else:
        h, hkv = a.get("q_num_heads"), a.get("kv_num_heads")
        if h is None or hkv is None:
            _fail("Attention on 3-d inputs needs q_num_heads and kv_num_heads")
        causal = bool(a.get("is_causal", 0))
        if a.get("softcap", 0.0) > 0:
            softcap = float(a["softcap"])
        # -1: unbounded (no attribute). With is_causal a right window is
        # subsumed by causal (j <= i + offset) and dropped, which is exact.
        if a.get("left_window_size", -1) >= 0:
            window_left = int(a["left_window_size"])
        if a.get("right_window_size", -1) >= 0 and not causal:
            window_right = int(a["right_window_size"])
        lengths_name = ins["nonpad_kv_seqlen"]
        kpm_name, bias_name = "", ins["attn_mask"]
        heads_q, heads_kv = "q_num_heads", "kv_num_heads"
    if h <= 0 or hkv <= 0 or h % hkv:
        _fail(f"{heads_q} = {h} is not a positive multiple of {heads_kv} = "
              f"{hkv}")
    for w, n, what in ((wq, h, "query"), (wk, hkv, "key"), (wv, hkv, "value")):
        if w.shape[1] % n:
            _fail(f"the {what} projection's width {w.shape[1]} does not "
                  f"split into {n} heads")
    if wq.shape[1] // h != wk.shape[1] // hkv:
        _fail("the query and key heads differ in size")
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
    weights_out = "" if ms else outs["qk_matmul_output"]
    presents = {} if ms else {outs[n]: n for n in ("present_key",
                                                   "present_value") if outs[n]}
    past_k = "" if ms else ins["past_key"]
    past_v = "" if ms else ins["past_value"]
    if bool(past_k) != bool(past_v):
        _fail("Attention has one of past_key and past_value; ONNX takes both "
              "or neither")
    if presents and not past_k:
        _fail("Attention outputs present_key/present_value without "
              "past_key and past_value, which a layer does not support (the "
              "present keys would be the projected keys alone)")
    if past_k and weights_out:
        _fail("Attention output qk_matmul_output together with past_key and "
              "past_value is not supported in a layer")
    produced = {out: "y", **({weights_out: "weights"} if weights_out else {}),
                **presents}
    graph_outs = [o.name for o in g.outputs]
    if out not in graph_outs or set(graph_outs) != set(produced):
        _fail("the graph's outputs are not the output projection (and the "
              "attention probabilities, or present_key and present_value)")

    sq_shape, sk_shape = _shape(g.inputs[xq]), _shape(g.inputs[xk])
    layer = Layer(num_heads=h, num_kv_heads=hkv, w_q=wq, w_k=wk, w_v=wv,
                  w_o=wo, b_q=bq, b_k=bk, b_v=bv, b_o=bo, scale=scale,
                  batch=sq_shape[0], q_len=sq_shape[1], kv_len=sk_shape[1])
    if weights_out:  # [B, H, Sq, Sk] probabilities
        layer.return_weights = "per_head"
    layer.results = [produced[o] for o in graph_outs]
    layer.self_attention = xq == xk == xv
    layer.kv_shared = xk == xv != xq
    if past_k:
        dk, dv = wq.shape[1] // h, wv.shape[1] // hkv
        pdims = []
        for nm, role, d in ((past_k, "past_key", dk), (past_v, "past_value",
                                                      dv)):
            if nm not in g.inputs:
                _fail(f"{role} '{nm}' is not a graph input")
            dims = _dims(g.inputs[nm])
            if len(dims) != 4:
                _fail(f"{role} '{nm}' has rank {len(dims)}; ONNX's is 4-d "
                      f"[batch, kv_num_heads, past_sequence_length, "
                      f"head_size]")
            if g.inputs[nm].type.tensor_type.elem_type != q_elem:
                _fail(f"{role} '{nm}' is not of the inputs' type")
            for i, (got, want, what) in enumerate(
                    ((dims[0], _dims(g.inputs[xq])[0], "the batch size"),
                     (dims[1], hkv, "kv_num_heads"),
                     (dims[3], d, "the head size"))):
                if got is None or got != want:
                    _fail(f"{role} '{nm}' dimension {[0, 1, 3][i]} "
                          f"({_dim_text(got)}) is not known to be {what} "
                          f"({_dim_text(want)})")
            pdims.append(dims[2])
        if pdims[0] is None or pdims[0] != pdims[1]:
            _fail(f"past_key and past_value lengths ({_dim_text(pdims[0])}, "
                  f"{_dim_text(pdims[1])}) are not known to be the same")
        layer.past = PastKV(past_k, past_v, _shape(g.inputs[past_k]),
                            _shape(g.inputs[past_v]))
    if not layer.self_attention and (xq == xk or xq == xv):
        _fail("the query input is also the key or the value input, but not "
              "both")
    # The diagonal of causal and the windows: mha's is bottom-right (Sk - Sq,
    # or len[b] - Sq with key lengths). ONNX Attention's is the same with
    # nonpad_kv_seqlen (offset nonpad_kv_seqlen[b] - q_len, the current
    # spec; onnx 1.22 aligned it top-left) and 0 (top-left) without it, as
    # is ONNX Runtime's unidirectional: those agree only where Sq = Sk.
    if not lengths_name:
        square = layer.self_attention or (layer.q_len is not None and
                                          layer.q_len == layer.kv_len)
        where = "" if ms else (" offset by the past length" if past_k
                               else " without nonpad_kv_seqlen")
        for what, used in (("causal attention", causal),
                           (f"left_window_size = {window_left}",
                            window_left is not None),
                           (f"right_window_size = {window_right}",
                            window_right is not None)):
            if used and not square:
                _fail(f"{what} with query and key lengths that are not the "
                      f"same static size (ONNX aligns it top-left{where}, "
                      f"mha bottom-right; they agree only then)")
    layer.causal = causal
    layer.softcap = softcap
    layer.window_left, layer.window_right = window_left, window_right

    # Masks (graph inputs, or initializers: then constant arguments), each
    # checked against the scores [B, H, Sq, Sk] it applies to: a size the
    # importer cannot prove right would make IR that mha-run rejects, or
    # read out of bounds.
    qd, kd = _dims(g.inputs[xq]), _dims(g.inputs[xk])
    target = {"B": qd[0], "H": h, "Q": qd[1], "K": kd[1]}
    if past_k:  # the mask spans the past and the step's keys
        total = layer.total_keys()
        target["K"] = total if total is not None else "past + keys"
    meaning = {"B": "batch size", "H": "number of heads",
               "Q": "query length", "K": "key length"}

    def mask_input(role, nm, dims_for_rank, broadcast, pad_keys=False):
        """`role`: the ONNX input's name; `broadcast`: the dims (of BHQK)
        that may be 1; `pad_keys`: a static last dim shorter than the keys
        is padded as not attended (ONNX Attention's attn_mask)."""
        if nm in g.inputs:
            shape = _dims(g.inputs[nm])
            dtype = _np_dtype(g.inputs[nm].type.tensor_type.elem_type)
        elif nm in g.inits:
            shape, dtype = g.inits[nm].shape, g.inits[nm].dtype
        else:
            _fail(f"{role} '{nm}' is neither a graph input nor an "
                  f"initializer")
        dims = dims_for_rank.get(len(shape))
        if dims is None:
            forms = " or ".join(
                "[" + ", ".join({"Q": "Sq", "K": "Sk"}.get(c, c) for c in d) +
                "]" for d in dims_for_rank.values())
            _fail(f"{role} '{nm}' has rank {len(shape)}; the importer takes "
                  f"{forms}")
        key_pad = 0
        for i, (c, d) in enumerate(zip(dims, shape)):
            t = target[c]
            if d is not None and d == t or c in broadcast and d == 1:
                continue
            static = isinstance(d, int) and isinstance(t, int)
            if c == "K" and pad_keys:
                if static and d < t:
                    key_pad = t - d
                    continue
                if static:
                    _fail(f"{role} '{nm}' dimension {i} is {d}, longer than "
                          f"the key length ({t})")
                _fail(f"{role} '{nm}' dimension {i} ({_dim_text(d)}) is not "
                      f"known to be the key length ({_dim_text(t)}); ONNX "
                      f"pads a shorter mask with -inf, which the importer "
                      f"does for static lengths only")
            allowed = (f"1 or the {meaning[c]}" if c in broadcast
                       else f"the {meaning[c]}")
            if static:
                _fail(f"{role} '{nm}' dimension {i} is {d}, not {allowed} "
                      f"({t})")
            _fail(f"{role} '{nm}' dimension {i} ({_dim_text(d)}) is not "
                  f"known to be {allowed} ({_dim_text(t)})")
        mask = MaskInput(nm, tuple(d if isinstance(d, int) else None
                                   for d in shape), dims,
                         dtype == np.bool_, constant=g.inits.get(nm),
                         key_pad=key_pad)
        return mask, dtype
    if bias_name and not ms:
        # ONNX: broadcast right-aligned to [B, H, Sq, Sk], a short last dim
        # padded with -inf (false).
        mask, dtype = mask_input("attn_mask", bias_name,
                                 {2: "QK", 3: "HQK", 4: "BHQK"}, "BHQ",
                                 pad_keys=True)
        if dtype not in (np.bool_, q_dtype):
            _fail(f"attn_mask '{bias_name}' is {dtype}, neither bool nor "
                  f"the inputs' type ({q_dtype})")
        masks.append(mask)
    if bias_name and ms:
        mask, dtype = mask_input("attention_bias", bias_name,
                                 {2: "QK", 3: "HQK", 4: "BHQK"}, "BH")
        if dtype != q_dtype:
            _fail(f"attention_bias '{bias_name}' is {dtype}, not the "
                  f"query's type ({q_dtype})")
        masks.append(mask)
    if kpm_name:
        mask, dtype = mask_input("key_padding_mask", kpm_name, {2: "BK"}, "")
        if dtype != np.int32:
            _fail(f"key_padding_mask '{kpm_name}' is {dtype}, not int32")
        mask.is_bool, mask.padding_fill = False, fill
        masks.append(mask)
    layer.masks = masks
    if lengths_name:
        # int64 [B]: the first nonpad_kv_seqlen[b] keys of batch b are valid.
        nm = lengths_name
        if nm in g.inputs:
            shape = _dims(g.inputs[nm])
            elem = g.inputs[nm].type.tensor_type.elem_type
            dtype = _np_dtype(elem)
        elif nm in g.inits:
            shape, dtype = g.inits[nm].shape, g.inits[nm].dtype
        else:
            _fail(f"nonpad_kv_seqlen '{nm}' is neither a graph input nor an "
                  f"initializer")
        if dtype != np.int64:
            _fail(f"nonpad_kv_seqlen '{nm}' is {dtype}, not int64")
        if len(shape) != 1:
            _fail(f"nonpad_kv_seqlen '{nm}' has rank {len(shape)}; the "
                  f"importer takes [B]")
        d, t = shape[0], qd[0]
        if d is None or d != t:
            if isinstance(d, int) and isinstance(t, int):
                _fail(f"nonpad_kv_seqlen '{nm}' dimension 0 is {d}, not the "
                      f"batch size ({t})")
            _fail(f"nonpad_kv_seqlen '{nm}' dimension 0 ({_dim_text(d)}) is "
                  f"not known to be the batch size ({_dim_text(t)})")
        layer.key_lengths = KeyLengths(
            nm, (d if isinstance(d, int) else None,), "i64",
            constant=g.inits.get(nm))
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
