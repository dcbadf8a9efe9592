"""ONNX's bare `Attention` node (opsets 23-25) as `mha.attention`.

The node's Q, K and V are graph inputs (no projections around it): 4-d
[batch, heads, seq, head_size], or 3-d [batch, seq, heads * head_size] with
q_num_heads and kv_num_heads, split into heads (tensor.expand_shape and a
linalg.transpose) and the output merged back. The rest as the spec and
onnx.reference define it (docs/Integration.md):

- past_key/past_value are concatenated before the new keys (tensor.concat
  along the sequence); present_key/present_value are those concatenations;
- is_causal and the windows are aligned at the past length (0 without a
  past: top-left), or per batch at nonpad_kv_seqlen[b] - Sq, which is also
  the key_lengths operand;
- attn_mask (rank 1 to 4, bool or the inputs' float type) broadcasts
  right-aligned to [B, Hq, Sq, Sk], a last dim shorter than the keys padded
  as not attended;
- qk_matmul_output is an `mha.attention_weights` of the same operands: mode
  0 (no softcap) and 1 `scores`, 2 `logits`, 3 `probabilities`, as
  onnx.reference computes them.

An input or attribute this cannot honour is an error naming it.
"""
import re

import onnx

from .layer import (MaskInput, _Emitter, _pad_keys, tensor_type,
                    write_function)

ELEMENT = {onnx.TensorProto.FLOAT: "f32", onnx.TensorProto.FLOAT16: "f16",
           onnx.TensorProto.BFLOAT16: "bf16"}


class Refused(Exception):
    pass


def _fail(msg):
    raise Refused(msg)


def _ssa_name(name, taken):
    base = re.sub(r"[^A-Za-z0-9_$.]", "_", name) or "arg"
    if not re.match(r"[A-Za-z_]", base):
        base = "a" + base
    out, n = base, 1
    while out in taken:
        out, n = f"{base}_{n}", n + 1
    taken.add(out)
    return out


class _Tensor:
    """An SSA value with its shape (int, or None where dynamic) and element
    type; `sizes` per dim an int or the SSA index value of the size."""

    def __init__(self, value, shape, elt, sizes):
        self.value, self.shape, self.elt, self.sizes = \
            value, list(shape), elt, list(sizes)

    @property
    def type(self):
        return tensor_type(self.shape, self.elt)


def _dynamic_sizes(em, value, shape, elt):
    sizes = []
    for i, d in enumerate(shape):
        if d is None:
            c = em.value(f"arith.constant {i} : index")
            sizes.append(em.value(
                f"tensor.dim {value}, {c} : {tensor_type(shape, elt)}"))
        else:
            sizes.append(d)
    return sizes


def _empty(em, sizes, elt):
    shape = [s if isinstance(s, int) else None for s in sizes]
    dyn = [s for s in sizes if not isinstance(s, int)]
    return em.value(f"tensor.empty({', '.join(dyn)}) : "
                    f"{tensor_type(shape, elt)}")


def _size_text(s):
    return str(s) if isinstance(s, int) else s


def _split_heads(em, x, heads, what, head_attr):
    """[B, S, heads * d] -> [B, heads, S, d]."""
    hidden = x.shape[2]
    if hidden is None:
        _fail(f"{what} has a dynamic hidden size; {head_attr} splits a "
              f"static one")
    if hidden % heads:
        _fail(f"{what}'s hidden size {hidden} does not split into "
              f"{head_attr} = {heads} heads")
    d = hidden // heads
    shape = [x.shape[0], x.shape[1], heads, d]
    sizes = [x.sizes[0], x.sizes[1], heads, d]
    out_sizes = ", ".join(_size_text(s) for s in sizes)
    t = tensor_type(shape, x.elt)
    v = em.value(f"tensor.expand_shape {x.value} [[0], [1], [2, 3]] "
                 f"output_shape [{out_sizes}] : {x.type} into {t}")
    perm = [0, 2, 1, 3]
    out = _Tensor(None, [shape[p] for p in perm], x.elt,
                  [sizes[p] for p in perm])
    init = _empty(em, out.sizes, x.elt)
    out.value = em.value(
        f"linalg.transpose ins({v} : {t}) outs({init} : {out.type}) "
        f"permutation = [0, 2, 1, 3]")
    return out


def _merge_heads(em, y):
    """[B, H, S, d] -> [B, S, H * d]."""
    perm = [0, 2, 1, 3]
    t = _Tensor(None, [y.shape[p] for p in perm], y.elt,
                [y.sizes[p] for p in perm])
    init = _empty(em, t.sizes, y.elt)
    t.value = em.value(
        f"linalg.transpose ins({y.value} : {y.type}) outs({init} : {t.type}) "
        f"permutation = [0, 2, 1, 3]")
    shape = [t.shape[0], t.shape[1], t.shape[2] * t.shape[3]]
    out = _Tensor(None, shape, y.elt, [t.sizes[0], t.sizes[1], shape[2]])
    out.value = em.value(f"tensor.collapse_shape {t.value} [[0], [1], "
                         f"[2, 3]] : {t.type} into {out.type}")
    return out


def _concat(em, past, new, what):
    """The past and the new keys (or values) along the sequence dim."""
    for i, c in ((0, "batch size"), (1, "number of heads"),
                 (3, "head size")):
        if not (past.shape[i] is None or new.shape[i] is None or
                past.shape[i] == new.shape[i]):
            _fail(f"past_{what} dimension {i} is {past.shape[i]}, not the "
                  f"{c} of {what} ({new.shape[i]})")
        if past.shape[i] is None and i != 0:
            _fail(f"past_{what} dimension {i} is dynamic; the {c} is static")
    total = None
    if past.shape[2] is not None and new.shape[2] is not None:
        total = past.shape[2] + new.shape[2]
    shape = [new.shape[0], new.shape[1], total, new.shape[3]]
    out = _Tensor(None, shape, new.elt, [])
    out.value = em.value(
        f"tensor.concat dim(2) {past.value}, {new.value} : ({past.type}, "
        f"{new.type}) -> {out.type}")
    out.sizes = _dynamic_sizes(em, out.value, shape, new.elt)
    return out


def _mask(em, m, target):
    """attn_mask broadcast right-aligned to [B, Hq, Sq, Sk] (`target`: the
    sizes), as mha's [B|1, H|1, Sq|1, Sk] operand: a last dim shorter than
    the keys padded as not attended, missing leading dims added as 1."""
    rank = len(m.shape)
    if not 1 <= rank <= 4:
        _fail(f"attn_mask has rank {rank}; ONNX broadcasts ranks 1 to 4 to "
              f"[batch, heads, q_seq, kv_seq]")
    names = ["batch size", "number of query heads", "query length",
             "key length"][4 - rank:]
    tgt = target[4 - rank:]
    for i, (d, t, what) in enumerate(zip(m.shape, tgt, names)):
        last = i == rank - 1
        if d == 1 and not last:
            continue
        if isinstance(t, int) and d == t:
            continue
        if last:
            if isinstance(d, int) and isinstance(t, int):
                if d > t:
                    _fail(f"attn_mask dimension {i} is {d}, longer than the "
                          f"key length ({t})")
                continue  # padded below
            if d is not None and d == 1 and t == 1:
                continue
            _fail(f"attn_mask dimension {i} is not known to be the key "
                  f"length; ONNX pads a shorter mask with -inf, which the "
                  f"importer does for static lengths only")
        if d is None and not isinstance(t, int):
            continue  # both dynamic: checked by mha-run at run time
        _fail(f"attn_mask dimension {i} is {d if d is not None else '?'}, "
              f"not 1 or the {what} "
              f"({t if isinstance(t, int) else '?'})")
    value, shape, sizes = m.value, list(m.shape), list(m.sizes)
    pad = tgt[-1] - shape[-1] if isinstance(tgt[-1], int) else 0
    if pad:
        short = MaskInput("attn_mask", tuple(shape), "", m.elt == "i1",
                          key_pad=pad)
        value, shape, _ = _pad_keys(em, value, shape, short, m.elt)
        sizes = sizes[:-1] + [shape[-1]]
    if rank < 4:
        groups = [list(range(0, 4 - rank + 1))] + \
            [[j] for j in range(4 - rank + 1, 4)]
        new_shape = [1] * (4 - rank) + shape
        new_sizes = [1] * (4 - rank) + sizes
        value = em.value(
            f"tensor.expand_shape {value} {groups} output_shape "
            f"[{', '.join(_size_text(s) for s in new_sizes)}] : "
            f"{tensor_type(shape, m.elt)} into "
            f"{tensor_type(new_shape, m.elt)}")
        shape, sizes = new_shape, new_sizes
    return _Tensor(value, shape, m.elt, sizes)


# qk_matmul_output_mode -> mha.attention_weights stage, as onnx.reference
# computes them (softcap before the mask): 0 and 1 the scores (capped), 2
# the logits (capped scores with the mask), 3 the probabilities.
_STAGES = {0: "scores", 1: "scores", 2: "logits", 3: "probabilities"}


class Function:
    """The function an importer writes: the ONNX values it reads as
    arguments (graph inputs first, in the order loaded, then initializers,
    saved), its body (`em`) and what it returns (`write`)."""

    def __init__(self, model, arrays):
        self.infos = {i.name: i for i in model.graph.input}
        self.arrays = arrays
        self.taken = set()
        self.em = _Emitter()
        self.params, self.constants, self.runtime_names = [], [], []
        self.values = {}

    def load(self, name_, role, types=None):
        """The ONNX value `name_` as an argument: a graph input, or an
        initializer (an argument after the graph inputs, saved). `types`:
        ONNX element types it may have besides the floats."""
        if name_ in self.values:
            return self.values[name_]
        if name_ in self.arrays:
            arr = self.arrays[name_]
            shape = list(arr.shape)
            elem = onnx.helper.np_dtype_to_tensor_dtype(arr.dtype)
        elif name_ in self.infos:
            tt = self.infos[name_].type.tensor_type
            if not tt.HasField("shape"):
                _fail(f"{role} '{name_}' has no shape")
            shape = [d.dim_value if d.HasField("dim_value") else None
                     for d in tt.shape.dim]
            elem = tt.elem_type
        else:
            _fail(f"{role} '{name_}' is neither a graph input nor an "
                  f"initializer")
        others = {onnx.TensorProto.BOOL: "i1", onnx.TensorProto.INT64: "i64",
                  onnx.TensorProto.INT32: "i32"}
        elt = ELEMENT.get(elem, others.get(elem))
        if elt is None:
            _fail(f"{role} '{name_}' is "
                  f"{onnx.TensorProto.DataType.Name(elem)}, which mha does "
                  f"not take")
        ssa = "%" + _ssa_name(name_, self.taken)
        t = _Tensor(ssa, shape, elt, [])
        if name_ in self.arrays:
            self.constants.append((name_, t, self.arrays[name_]))
        else:
            self.params.append(t)
            self.runtime_names.append(name_)
        t.sizes = _dynamic_sizes(self.em, ssa, shape, elt)
        self.values[name_] = t
        return t

    def write(self, out_dir, name, op, returned, inputs=None):
        """NAME.mlir returning `returned` (tensors) and NAME.rsp; `inputs`:
        arrays for the graph inputs, by name, saved and named in NAME.rsp
        too."""
        signature = [f"{t.value}: {t.type}" for t in self.params] + \
            [f"{t.value}: {t.type}" for _, t, _ in self.constants]
        saved = [(_ssa_name(n, set()), inputs[n]) for n in self.runtime_names
                 if inputs is not None and n in inputs]
        saved += [(_ssa_name(n, set()), a) for n, _, a in self.constants]
        return write_function(out_dir, name, f"{op}, arguments in order in "
                              f"{name}.rsp", signature, self.em.lines,
                              [(t.value, t.type) for t in returned], saved)


def import_node(model, att, attrs, ins, outs, arrays, out_dir, name,
                inputs=None):
    """Writes NAME.mlir (one func.func: the node's present inputs as
    arguments, in order; its present outputs as results) and NAME.rsp (the
    initializers, saved in NAME.weights/). `ins`, `outs`: the node's inputs
    and outputs by ONNX name ('' where absent); `arrays`: the initializers
    and Constant outputs. Returns the path of NAME.mlir."""
    g = model.graph
    fn = Function(model, arrays)
    em, values = fn.em, fn.values
    load = fn.load

    # Arguments in the node's order; the graph inputs first.
    for role in ("Q", "K", "V", "attn_mask", "past_key", "past_value",
                 "nonpad_kv_seqlen"):
        if ins[role]:
            load(ins[role], role)
    q, k, v = (values[ins[r]] for r in ("Q", "K", "V"))
    elt = q.elt
    if elt not in ("f32", "f16", "bf16"):
        _fail(f"Q is {elt}; mha takes float32, float16 or bfloat16")
    for t, r in ((k, "K"), (v, "V")):
        if t.elt != elt:
            _fail(f"{r} is {t.elt}, not Q's type ({elt})")
    rank = len(q.shape)
    if rank not in (3, 4) or len(k.shape) != rank or len(v.shape) != rank:
        _fail(f"Q, K and V have ranks {len(q.shape)}, {len(k.shape)} and "
              f"{len(v.shape)}; Attention takes all 3-d or all 4-d")
    hq_attr, hkv_attr = attrs.get("q_num_heads"), attrs.get("kv_num_heads")
    if rank == 3:
        if hq_attr is None or hkv_attr is None:
            _fail("Attention on 3-d inputs needs q_num_heads and "
                  "kv_num_heads")
        if hq_attr <= 0 or hkv_attr <= 0:
            _fail(f"q_num_heads = {hq_attr} and kv_num_heads = {hkv_attr} "
                  f"must be positive")
        q = _split_heads(em, q, hq_attr, "Q", "q_num_heads")
        k = _split_heads(em, k, hkv_attr, "K", "kv_num_heads")
        v = _split_heads(em, v, hkv_attr, "V", "kv_num_heads")
    hq, hkv = q.shape[1], k.shape[1]
    if rank == 4:
        for attr, have, what in ((hq_attr, hq, "q_num_heads"),
                                 (hkv_attr, hkv, "kv_num_heads")):
            if attr is not None and attr != have:
                _fail(f"{what} = {attr} contradicts the 4-d input's "
                      f"{have} heads")
    for t, r in ((q, "Q"), (k, "K"), (v, "V")):
        if t.shape[1] is None or t.shape[3] is None:
            _fail(f"{r}'s heads and head size must be static")
    if v.shape[1] != hkv:
        _fail(f"K has {hkv} heads and V {v.shape[1]}")
    if hq % hkv:
        _fail(f"the {hq} query heads are not a multiple of the {hkv} "
              f"key/value heads")
    if q.shape[3] != k.shape[3]:
        _fail(f"Q's head size {q.shape[3]} differs from K's {k.shape[3]}")
    for t, r in ((k, "K"), (v, "V")):
        if isinstance(q.shape[0], int) and isinstance(t.shape[0], int) and \
                q.shape[0] != t.shape[0]:
            _fail(f"{r}'s batch size {t.shape[0]} differs from Q's "
                  f"{q.shape[0]}")

    # The KV cache: past before the new keys.
    past_len = 0
    if bool(ins["past_key"]) != bool(ins["past_value"]):
        _fail("past_key and past_value must be given together")
    if ins["past_key"]:
        pk, pv = values[ins["past_key"]], values[ins["past_value"]]
        for t, r in ((pk, "past_key"), (pv, "past_value")):
            if len(t.shape) != 4 or t.elt != elt:
                _fail(f"{r} is not a 4-d tensor of Q's type")
        past_len = pk.sizes[2]
        k = _concat(em, pk, k, "key")
        v = _concat(em, pv, v, "value")
    sk = k.sizes[2]
    target = [q.sizes[0], hq, q.sizes[2], sk]

    mask = None
    if ins["attn_mask"]:
        m = values[ins["attn_mask"]]
        if m.elt not in ("i1", elt):
            _fail(f"attn_mask is {m.elt}, neither bool nor Q's type ({elt})")
        mask = _mask(em, m, target)
    lengths = None
    if ins["nonpad_kv_seqlen"]:
        lengths = values[ins["nonpad_kv_seqlen"]]
        if lengths.elt != "i64" or len(lengths.shape) != 1:
            _fail("nonpad_kv_seqlen is not a 1-d int64 tensor")
        if isinstance(lengths.shape[0], int) and \
                isinstance(q.shape[0], int) and lengths.shape[0] != q.shape[0]:
            _fail(f"nonpad_kv_seqlen has {lengths.shape[0]} elements, not "
                  f"the batch size ({q.shape[0]})")

    causal = bool(attrs.get("is_causal", 0))
    left = attrs.get("left_window_size", -1)
    right = attrs.get("right_window_size", -1)
    attr_text = []
    if attrs.get("scale") is not None:
        attr_text.append(f"scale = {float(attrs['scale']):.9e} : f32")
    if causal:
        attr_text.append("causal")
    if attrs.get("softcap", 0.0) > 0:
        attr_text.append(f"softcap = {float(attrs['softcap']):.9e} : f32")
    if left >= 0:
        attr_text.append(f"window_left = {int(left)} : i64")
    # With is_causal a right window is subsumed (j <= i + offset).
    if right >= 0 and not causal:
        attr_text.append(f"window_right = {int(right)} : i64")
    # The diagonal: mha's default with key lengths is len[b] - Sq, ONNX's
    # with nonpad_kv_seqlen; otherwise ONNX's is the past length.
    offset = None
    if (causal or left >= 0 or right >= 0) and lengths is None:
        offset = past_len if not isinstance(past_len, int) else \
            em.value(f"arith.constant {past_len} : index")

    def operands_text(with_value):
        text = f"ins({q.value}, {k.value}"
        text += f", {v.value}" if with_value else ""
        text += f" : {q.type}, {k.type}"
        text += f", {v.type})" if with_value else ")"
        if mask is not None:
            text += f" mask({mask.value} : {mask.type})"
        if lengths is not None:
            text += f" key_lengths({lengths.value} : {lengths.type})"
        if offset is not None:
            text += f" causal_offset({offset})"
        return text

    def attr_dict(extra=()):
        items = list(extra) + attr_text
        return f" {{{', '.join(items)}}}" if items else ""

    y_sizes = [q.sizes[0], hq, q.sizes[2], v.shape[3]]
    y = _Tensor(None, [s if isinstance(s, int) else None for s in y_sizes],
                elt, y_sizes)
    init = _empty(em, y_sizes, elt)
    y.value = em.value(f"mha.attention {operands_text(True)} outs({init} : "
                       f"{y.type}){attr_dict()} -> {y.type}")
    if rank == 3:
        y = _merge_heads(em, y)
    results = {"Y": y, "present_key": k, "present_value": v}
    if outs["qk_matmul_output"]:
        mode = attrs.get("qk_matmul_output_mode", 0)
        if mode not in _STAGES:
            _fail(f"qk_matmul_output_mode = {mode} is not one of 0-3")
        if mode == 0 and attrs.get("softcap", 0.0) > 0:
            _fail("qk_matmul_output_mode = 0 with softcap is not supported: "
                  "the spec says the output of the QK matmul, onnx.reference "
                  "returns it capped")
        w_sizes = [q.sizes[0], hq, q.sizes[2], sk]
        w = _Tensor(None, [s if isinstance(s, int) else None
                           for s in w_sizes], elt, w_sizes)
        winit = _empty(em, w_sizes, elt)
        stage = _STAGES[mode]
        extra = [] if stage == "probabilities" else \
            [f"stage = #mha.weights_stage<{stage}>"]
        w.value = em.value(
            f"mha.attention_weights {operands_text(False)} outs({winit} : "
            f"{w.type}){attr_dict(extra)} -> {w.type}")
        results["qk_matmul_output"] = w
    returned = [(outs[r], results[r]) for r in
                ("Y", "present_key", "present_value", "qk_matmul_output")
                if outs[r]]
    graph_outputs = [o.name for o in g.output]
    if graph_outputs != [n for n, _ in returned]:
        _fail("the graph's outputs are not the Attention node's outputs, "
              "in order")

    return fn.write(out_dir, name, "ONNX Attention",
                    [t for _, t in returned], inputs)
