"""The part both importers share: a layer description and its MLIR text."""
from dataclasses import dataclass, field
import os
from typing import List, Optional

import numpy as np

_ELT = {np.dtype(np.float32): "f32", np.dtype(np.float16): "f16"}


def tensor_type(shape, elt):
    dims = "x".join("?" if d is None else str(d) for d in shape)
    return f"tensor<{dims}x{elt}>" if dims else f"tensor<{elt}>"


@dataclass
class MaskInput:
    """A mask the caller passes as the frontend defines it.

    `shape`: its shape (None for a dynamic dim); `dims`: the letters of
    [B, H, Sq, Sk] it has, in order (e.g. "BK" for a key padding mask
    [B, Sk], "QK" for [Sq, Sk]); a dim 'N' is B*H (split on import);
    `is_bool`: boolean (else additive float); `true_attends`: for a boolean,
    whether true means the query may attend (mha's convention) or may not
    (PyTorch's). `padding_fill`: the mask is int32, nonzero where the key
    is attended, and `padding_fill` is added to the scores where it is 0
    (ONNX Runtime's key padding mask). `constant`: the mask's values when
    the model holds them (an argument after the runtime ones, saved with the
    weights). `key_pad`: keys the mask is short of along its last (static)
    dim, appended as not attended (ONNX Attention pads a short attn_mask
    with -inf, a boolean one with false); it does not broadcast there.
    """
    name: str
    shape: tuple
    dims: str
    is_bool: bool
    true_attends: bool = True
    padding_fill: Optional[float] = None
    constant: Optional[np.ndarray] = None
    key_pad: int = 0

    def element_type(self, elt):
        if self.padding_fill is not None:
            return "i32"
        return "i1" if self.is_bool else elt


@dataclass
class KeyLengths:
    """Per batch the number of valid keys (mha's `key_lengths` operand,
    e.g. ONNX Attention's `nonpad_kv_seqlen`): an argument of `shape` [B]
    (None: dynamic) and element type `element` ("i64" or "i32");
    `constant`: its values when the model holds them (an argument after the
    runtime ones, saved with the weights)."""
    name: str
    shape: tuple
    element: str = "i64"
    constant: Optional[np.ndarray] = None


@dataclass
class PastKV:
    """A layer's past keys and values (ONNX Attention's past_key and
    past_value, [B, Hkv, P, dk] and [B, Hkv, P, dv]; None: a dynamic dim),
    runtime arguments of those names: the attention sees the past and then
    the step's keys (Sk after P), and returns the present keys and values,
    the two concatenated ([B, Hkv, P + Sk, d])."""
    key_name: str
    value_name: str
    key_shape: tuple
    value_shape: tuple


@dataclass
class Layer:
    """A multi-head attention layer in mha's terms (docs/Semantics.md)."""
    num_heads: int
    num_kv_heads: int
    w_q: np.ndarray  # [Eq, H*dk]
    w_k: np.ndarray  # [Ek, Hkv*dk]
    w_v: np.ndarray  # [Ev, Hkv*dv]
    w_o: np.ndarray  # [H*dv, Eo]
    b_q: Optional[np.ndarray] = None
    b_k: Optional[np.ndarray] = None
    b_v: Optional[np.ndarray] = None
    b_o: Optional[np.ndarray] = None
    scale: Optional[float] = None
    causal: bool = False
    # Input shapes [B, Sq, Eq], [B, Sk, Ek], [B, Sk, Ev] (None: dynamic).
    batch: Optional[int] = None
    q_len: Optional[int] = None
    kv_len: Optional[int] = None
    # The inputs come [S, B, E] (PyTorch's batch_first=False).
    seq_first: bool = False
    # key and value are the query (one argument).
    self_attention: bool = False
    # value is the key (one argument).
    kv_shared: bool = False
    # Also return the attention probabilities: None, "per_head" [B, H, Sq,
    # Sk] or "average" [B, Sq, Sk] (return_weights).
    return_weights: Optional[str] = None
    masks: List[MaskInput] = field(default_factory=list)
    # Scores capped to softcap * tanh(s / softcap) before the masks (None:
    # no cap).
    softcap: Optional[float] = None
    # A sliding window around the diagonal (None: unbounded on that side;
    # with causal, window_right stays None).
    window_left: Optional[int] = None
    window_right: Optional[int] = None
    # Valid keys per batch; the diagonal of causal and the windows is then
    # len[b] - Sq (docs/Semantics.md).
    key_lengths: Optional[KeyLengths] = None
    # Rotary embeddings of the projected queries and keys (self-attention):
    # (cos [P, R/2], sin [P, R/2], interleaved), token s at row s.
    rotary: Optional[tuple] = None
    # Past keys and values before the step's (PastKV); the present keys and
    # values are then results too.
    past: Optional[PastKV] = None
    # The results in order, of "y" (the output), "weights" (return_weights),
    # "present_key" and "present_value" (with past); None: "y", then
    # "weights" where asked.
    results: Optional[List[str]] = None

    def total_keys(self):
        """Keys the attention sees: Sk, or P + Sk with past (None:
        dynamic)."""
        if self.past is None:
            return self.kv_len
        p = self.past.key_shape[2]
        return None if p is None or self.kv_len is None else p + self.kv_len

    def weights(self):
        names = ["w_q", "w_k", "w_v", "w_o"]
        if self.b_q is not None:
            names += ["b_q", "b_k", "b_v", "b_o"]
        return [(n, getattr(self, n)) for n in names]


def _check(layer):
    ws = [layer.w_q, layer.w_k, layer.w_v, layer.w_o]
    biases = [layer.b_q, layer.b_k, layer.b_v, layer.b_o]
    if any(b is None for b in biases) and any(b is not None for b in biases):
        zeros = [np.zeros(w.shape[1], w.dtype) for w in ws]
        layer.b_q, layer.b_k, layer.b_v, layer.b_o = [
            z if b is None else b for b, z in zip(biases, zeros)]
    dtypes = {w.dtype for w in ws}
    if len(dtypes) != 1 or ws[0].dtype not in _ELT:
        raise ValueError("weights must share one type, float32 or float16")


class _Emitter:
    """SSA text for the body of the entry function."""

    def __init__(self):
        self.lines = []
        self.count = 0

    def value(self, text):
        name = f"%v{self.count}"
        self.count += 1
        self.lines.append(f"    {name} = {text}")
        return name

    def dims(self, value, shape, type_):
        """Per dim of `value`: the index value of its size where dynamic,
        None where static."""
        out = []
        for i, d in enumerate(shape):
            if d is None:
                c = self.value(f"arith.constant {i} : index")
                out.append(self.value(f"tensor.dim {value}, {c} : {type_}"))
            else:
                out.append(None)
        return out

    def empty(self, shape, elt, dyn):
        return self.value(f"tensor.empty({', '.join(dyn)}) : "
                          f"{tensor_type(shape, elt)}")

    def transpose(self, value, shape, elt, perm, dyn_source):
        out_shape = [shape[p] for p in perm]
        dyn = [dyn_source[p] for p in perm if shape[p] is None]
        init = self.empty(out_shape, elt, dyn)
        return self.value(
            f"linalg.transpose ins({value} : {tensor_type(shape, elt)}) "
            f"outs({init} : {tensor_type(out_shape, elt)}) "
            f"permutation = [{', '.join(map(str, perm))}]"), out_shape


# -inf, as arith.constant spells it per float type.
_NEG_INF = {"f32": "0xFF800000", "f16": "0xFC00", "bf16": "0xFF80"}


def _pad_keys(em, value, shape, m, elt):
    """`value` (a mask of `shape`) with m.key_pad not-attended keys appended
    along its last dim: a fill and an insert_slice, which every pipeline
    bufferizes. Returns the new (value, shape, type)."""
    e = m.element_type(elt)
    if m.is_bool:
        hidden = "false" if m.true_attends else "true"
        fill = em.value(f"arith.constant {hidden}")
    else:
        fill = em.value(f"arith.constant {_NEG_INF[e]} : {e}")
    mtype = tensor_type(shape, e)
    dyn = em.dims(value, shape, mtype)
    padded = shape[:-1] + [shape[-1] + m.key_pad]
    ptype = tensor_type(padded, e)
    init = em.empty(padded, e, [d for d in dyn if d is not None])
    init = em.value(f"linalg.fill ins({fill} : {e}) outs({init} : {ptype}) "
                    f"-> {ptype}")
    sizes = ", ".join(str(s) if d is None else d for s, d in zip(shape, dyn))
    zeros, ones = ", ".join(["0"] * len(shape)), ", ".join(["1"] * len(shape))
    value = em.value(f"tensor.insert_slice {value} into {init}[{zeros}] "
                     f"[{sizes}] [{ones}] : {mtype} into {ptype}")
    return value, padded, ptype


def _mask_to_mha(em, layer, elt, args, sizes):
    """One mask operand [B|1, H|1, Sq, Sk] from the frontend's masks."""
    if not layer.masks:
        return None, None
    b, h, sq, sk = sizes  # SSA index values or ints
    full = {"B": layer.batch, "H": layer.num_heads, "Q": layer.q_len,
            "K": layer.total_keys()}
    any_float = any(not m.is_bool or m.padding_fill is not None
                    for m in layer.masks)
    out_elt = elt if any_float else "i1"
    # The combined mask's dims: B and H where some mask has them.
    has = lambda c: any(c in m.dims or (c in "BH" and "N" in m.dims)
                        for m in layer.masks)
    out_dims = [("B", full["B"]) if has("B") else ("1", 1),
                ("H", full["H"]) if has("H") else ("1", 1),
                ("Q", full["Q"]) if has("Q") else ("1", 1),
                ("K", full["K"]) if has("K") else ("1", 1)]
    out_shape = [s for _, s in out_dims]
    inputs, maps = [], []
    for m in layer.masks:
        value, shape, dims = args[m.name], list(m.shape), m.dims
        mtype = tensor_type(shape, m.element_type(elt))
        if m.key_pad:
            value, shape, mtype = _pad_keys(em, value, shape, m, elt)
        if "N" in dims:  # [B*H, ...] split into [B, H, ...]
            i = dims.index("N")
            new_shape = shape[:i] + [full["B"], full["H"]] + shape[i + 1:]
            groups = [[j] for j in range(i)] + [[i, i + 1]] + \
                [[j + 1] for j in range(i + 1, len(shape))]
            out_sizes = []
            for j, d in enumerate(new_shape):
                if d is not None:
                    out_sizes.append(str(d))
                else:
                    out_sizes.append({"B": b, "Q": sq, "K": sk}[
                        (dims[:i] + "BH" + dims[i + 1:])[j]])
            new_type = tensor_type(new_shape, m.element_type(elt))
            value = em.value(
                f"tensor.expand_shape {value} {groups} output_shape "
                f"[{', '.join(out_sizes)}] : {mtype} into {new_type}")
            shape, dims, mtype = new_shape, dims[:i] + "BH" + dims[i + 1:], \
                new_type
        results = []
        for c, d in zip(dims, shape):
            pos = "bhij"["BHQK".index(c)]
            results.append(pos if d != 1 else "0")  # size 1 broadcasts
        inputs.append((value, mtype, m))
        maps.append(f"affine_map<(b, h, i, j) -> ({', '.join(results)})>")
    dyn = []
    for c, d in out_dims:
        if d is None:
            dyn.append({"B": b, "H": None, "Q": sq, "K": sk}[c])
    init = em.empty(out_shape, out_elt, dyn)
    out_type = tensor_type(out_shape, out_elt)
    body = []
    arg_names = [f"%a{i}" for i in range(len(inputs))]
    block_args = ", ".join(
        f"{a}: {m.element_type(elt)}" for a, (_, _, m) in
        zip(arg_names, inputs)) + f", %out: {out_elt}"
    # Combine: booleans into one "attends" (and), floats added.
    n = 0

    def emit(rhs):
        nonlocal n
        n += 1
        body.append(f"%t{n} = {rhs}")
        return f"%t{n}"

    def combine(acc, v, op, type_):
        return v if acc is None else emit(f"{op} {acc}, {v} : {type_}")

    def fill_where(cond, value):  # value where cond, else 0
        zero = emit(f"arith.constant 0.0 : {elt}")
        return emit(f"arith.select {cond}, {value}, {zero} : {elt}")
    acc = attend = None
    for a, (_, _, m) in zip(arg_names, inputs):
        if m.padding_fill is not None:  # padding_fill where the int is 0
            zero = emit("arith.constant 0 : i32")
            pad = emit(f"arith.cmpi eq, {a}, {zero} : i32")
            fill = emit(f"arith.constant {m.padding_fill!r} : {elt}")
            acc = combine(acc, fill_where(pad, fill), "arith.addf", elt)
        elif m.is_bool:
            v = a if m.true_attends else emit(
                f"arith.xori {a}, {emit('arith.constant true')} : i1")
            attend = combine(attend, v, "arith.andi", "i1")
        else:
            acc = combine(acc, a, "arith.addf", elt)
    result = attend
    if any_float:
        if attend is not None:  # -inf where not attended
            hidden = emit(f"arith.xori {attend}, "
                          f"{emit('arith.constant true')} : i1")
            ninf = emit("arith.constant 0xFF800000 : f32")
            if elt != "f32":
                ninf = emit(f"arith.truncf {ninf} : f32 to {elt}")
            acc = combine(acc, fill_where(hidden, ninf), "arith.addf", elt)
        result = acc
    body.append(f"linalg.yield {result} : {out_elt}")
    maps.append("affine_map<(b, h, i, j) -> (b, h, i, j)>")
    ins = ", ".join(v for v, _, _ in inputs)
    ins_types = ", ".join(t for _, t, _ in inputs)
    text = (f"linalg.generic {{indexing_maps = [{', '.join(maps)}], "
            f"iterator_types = [\"parallel\", \"parallel\", \"parallel\", "
            f"\"parallel\"]}} ins({ins} : {ins_types}) outs({init} : "
            f"{out_type}) {{\n    ^bb0({block_args}):\n      " +
            "\n      ".join(body) + f"\n    }} -> {out_type}")
    return em.value(text), out_type


def write(layer: Layer, out_dir: str, name: str = "main",
          inputs: Optional[dict] = None):
    """Writes NAME.mlir, NAME.weights/*.npy and NAME.rsp into out_dir.

    The function takes the runtime arguments (query, then key and value
    unless self-attention, then the masks, then the key lengths), the
    constant masks and key lengths, and then the weights. NAME.rsp
    (an mha-run response file) names the entry and the weight files;
    `inputs` (arrays for the runtime arguments, by name) are saved next to
    the weights and named in it too, else the caller passes them before it:
    `mha-run NAME.mlir --input=@query.npy ... @NAME.rsp`. Returns the path of
    NAME.mlir.
    """
    _check(layer)
    os.makedirs(out_dir, exist_ok=True)
    elt = _ELT[layer.w_q.dtype]
    eq, ek, ev = layer.w_q.shape[0], layer.w_k.shape[0], layer.w_v.shape[0]
    eo = layer.w_o.shape[1]
    B, Sq, Sk = layer.batch, layer.q_len, layer.kv_len

    def outer(seq, e):  # argument shape in the caller's layout
        return [seq, B, e] if layer.seq_first else [B, seq, e]
    runtime = [("query", outer(Sq, eq), elt)]
    if not layer.self_attention:
        runtime += [("key", outer(Sk, ek), elt)]
        if not layer.kv_shared:
            runtime += [("value", outer(Sk, ev), elt)]
    for m in layer.masks:
        if m.constant is None:
            runtime.append((m.name, list(m.shape), m.element_type(elt)))
    constants = [(m.name, list(m.shape), m.element_type(elt), m.constant)
                 for m in layer.masks if m.constant is not None]
    lengths = layer.key_lengths
    if lengths is not None:
        if lengths.constant is None:
            runtime.append((lengths.name, list(lengths.shape),
                            lengths.element))
        else:
            constants.append((lengths.name, list(lengths.shape),
                              lengths.element, lengths.constant))
    past = layer.past
    if past is not None:
        runtime += [(past.key_name, list(past.key_shape), elt),
                    (past.value_name, list(past.value_shape), elt)]
    if layer.rotary is not None:
        cos, sin, _ = layer.rotary
        dt = layer.w_q.dtype
        constants += [("rotary_cos", list(cos.shape), elt, cos.astype(dt)),
                      ("rotary_sin", list(sin.shape), elt, sin.astype(dt))]
    weights = layer.weights()
    em = _Emitter()
    args = {n: f"%{n}" for n, *_ in runtime + constants}
    # Inputs in [B, S, E].
    batch_first = {}
    num_data = 1 if layer.self_attention else 2 if layer.kv_shared else 3
    for n, shape, _ in runtime[:num_data]:
        value, t = args[n], tensor_type(shape, elt)
        if layer.seq_first:
            value, shape = em.transpose(value, shape, elt, [1, 0, 2],
                                        em.dims(value, shape, t))
        batch_first[n] = (value, shape)
    q, qshape = batch_first["query"]
    k, kshape = batch_first.get("key", batch_first["query"])
    v, vshape = batch_first.get("value", (k, kshape))
    # Sizes for masks.
    def size_of(value, shape, i):
        if shape[i] is not None:
            return shape[i]
        c = em.value(f"arith.constant {i} : index")
        return em.value(f"tensor.dim {value}, {c} : {tensor_type(shape, elt)}")
    # With past, the kv_cache operands (key cache, value cache, lengths):
    # caches of P + Sk rows holding the past, into which the layer writes
    # the step's keys and values at P (the lengths); the updated caches it
    # returns are the present keys and values.
    kv_cache = None
    if past is not None:
        zero = em.value(f"arith.constant 0.0 : {elt}")
        step = size_of(k, kshape, 1)
        kv_cache = []
        for nm, shape in ((past.key_name, past.key_shape),
                          (past.value_name, past.value_shape)):
            shape = list(shape)
            out = shape[:2] + [layer.total_keys()] + shape[3:]
            kv_cache.append((em.value(
                f"tensor.pad {args[nm]} low[0, 0, 0, 0] high[0, 0, {step}, 0] "
                f"{{\n    ^bb0(%i0: index, %i1: index, %i2: index, "
                f"%i3: index):\n      tensor.yield {zero} : {elt}\n    }} : "
                f"{tensor_type(shape, elt)} to {tensor_type(out, elt)}"),
                tensor_type(out, elt)))
        p = past.key_shape[2]
        if p is None:
            c2 = em.value("arith.constant 2 : index")
            p = em.value(f"tensor.dim {args[past.key_name]}, {c2} : "
                         f"{tensor_type(list(past.key_shape), elt)}")
            p = em.value(f"arith.index_cast {p} : index to i32")
        else:
            p = em.value(f"arith.constant {p} : i32")
        batch = qshape[0]
        dyn = "" if batch is not None else f"[{size_of(q, qshape, 0)}]"
        lengths_type = tensor_type([batch], "i32")
        kv_cache.append((em.value(f"tensor.splat {p}{dyn} : {lengths_type}"),
                         lengths_type))
    mask, mask_type = None, None
    if layer.masks:
        if past is None:
            total = size_of(k, kshape, 1)
        else:  # the padded key cache's rows
            total = layer.total_keys()
            if total is None:
                c2 = em.value("arith.constant 2 : index")
                total = em.value(f"tensor.dim {kv_cache[0][0]}, {c2} : "
                                 f"{kv_cache[0][1]}")
        sizes = (size_of(q, qshape, 0), layer.num_heads, size_of(q, qshape, 1),
                 total)
        mask, mask_type = _mask_to_mha(em, layer, elt, args, sizes)
    operands = [q, k, v] + [f"%{n}" for n, _ in weights[:4]]
    types = [tensor_type(qshape, elt), tensor_type(kshape, elt),
             tensor_type(vshape, elt)] + \
        [tensor_type(list(w.shape), elt) for _, w in weights[:4]]
    text = f"mha.multi_head_attention {', '.join(operands)}"
    if len(weights) > 4:
        text += f" bias({', '.join(f'%{n}' for n, _ in weights[4:])})"
        types += [tensor_type(list(w.shape), elt) for _, w in weights[4:]]
    if mask is not None:
        text += f" mask({mask})"
        types.append(mask_type)
    if lengths is not None:
        text += f" key_lengths({args[lengths.name]})"
        types.append(tensor_type(list(lengths.shape), lengths.element))
    if kv_cache is not None:
        text += f" kv_cache({', '.join(v for v, _ in kv_cache)})"
        types += [t for _, t in kv_cache]
    if layer.rotary is not None:
        text += f" rotary({args['rotary_cos']}, {args['rotary_sin']})"
        types += [tensor_type(list(layer.rotary[0].shape), elt)] * 2
    attrs = [f"num_heads = {layer.num_heads} : i64"]
    if layer.num_kv_heads != layer.num_heads:
        attrs.append(f"num_kv_heads = {layer.num_kv_heads} : i64")
    if layer.scale is not None:
        attrs.append(f"scale = {float(layer.scale):.9e} : f32")
    if layer.causal:
        attrs.append("causal")
    if layer.softcap is not None:
        attrs.append(f"softcap = {float(layer.softcap):.9e} : f32")
    if layer.window_left is not None:
        attrs.append(f"window_left = {int(layer.window_left)} : i64")
    if layer.window_right is not None:
        attrs.append(f"window_right = {int(layer.window_right)} : i64")
    if layer.rotary is not None and layer.rotary[2]:
        attrs.append("rotary_interleaved")
    result_shape = [qshape[0], qshape[1], eo]
    result_types = [tensor_type(result_shape, elt)]
    if layer.return_weights:
        attrs.append(f'return_weights = "{layer.return_weights}"')
        heads = [] if layer.return_weights == "average" else [layer.num_heads]
        result_types.append(
            tensor_type([qshape[0]] + heads + [qshape[1], kshape[1]], elt))
    if kv_cache is not None:
        result_types += [kv_cache[0][1], kv_cache[1][1]]
    text += (f" {{{', '.join(attrs)}}} : ({', '.join(types)}) -> "
             f"({', '.join(result_types)})")
    y = em.value(text)
    extra = (["weights"] if layer.return_weights else []) + \
        (["present_key", "present_value"] if kv_cache is not None else [])
    named = {}
    if extra:
        em.lines[-1] = em.lines[-1].replace(
            f"{y} =", f"{y}:{len(result_types)} =", 1)
        for i, what in enumerate(extra, 1):
            named[what] = (f"{y}#{i}", result_types[i])
        y = f"{y}#0"
    result_type = tensor_type(outer(Sq, eo), elt)
    if layer.seq_first:
        y, _ = em.transpose(
            y, result_shape, elt, [1, 0, 2],
            em.dims(y, result_shape, tensor_type(result_shape, elt)))
    params = [f"%{n}: {tensor_type(s, e)}" for n, s, e in runtime] + \
        [f"%{n}: {tensor_type(s, e)}" for n, s, e, _ in constants] + \
        [f"%{n}: {tensor_type(list(w.shape), elt)} {{mha.weight}}"
         for n, w in weights]
    named["y"] = (y, result_type)
    returned = [named[r] for r in layer.results or ["y"] + extra]
    # The runtime arguments come first: in the response file when given,
    # else the caller passes them before it.
    arrays = [(n, inputs[n]) for n, _, _ in runtime
              if inputs is not None and n in inputs]
    arrays += [(n, c) for n, _, _, c in constants] + weights
    return write_function(out_dir, name, f"weights in {name}.weights/, "
                          f"arguments in order in {name}.rsp", params,
                          em.lines, returned, arrays)


def write_function(out_dir, name, comment, params, lines, returned, arrays):
    """Writes NAME.mlir, one func.func @NAME (`params`: "%x: type" texts;
    `lines`: its body; `returned`: (value, type) pairs), and NAME.rsp, an
    mha-run response file naming the entry and the .npy files of `arrays`
    ((file name, array) pairs, saved in NAME.weights/) in order. Returns the
    path of NAME.mlir."""
    os.makedirs(out_dir, exist_ok=True)
    values = ", ".join(v for v, _ in returned)
    types_ = ", ".join(t for _, t in returned)
    mlir = (f"// Imported by mha_importers; {comment}.\n"
            f"func.func @{name}({', '.join(params)}) -> "
            f"{types_ if len(returned) == 1 else f'({types_})'} {{\n" +
            "\n".join(lines) + f"\n    return {values} : {types_}\n}}\n")
    path = os.path.join(out_dir, f"{name}.mlir")
    with open(path, "w") as f:
        f.write(mlir)
    wdir = os.path.join(out_dir, f"{name}.weights")
    os.makedirs(wdir, exist_ok=True)
    rsp = [f"--entry={name}"]
    for n, arr in arrays:
        p = os.path.join(wdir, f"{n}.npy")
        np.save(p, to_npy(arr))
        rsp.append(f"--input=@{os.path.abspath(p)}")
    with open(os.path.join(out_dir, f"{name}.rsp"), "w") as f:
        f.write("\n".join(rsp) + "\n")
    return path


def to_npy(arr):
    """`arr` as mha-run reads it: contiguous, bfloat16 (ml_dtypes) as its
    uint16 bits, which NumPy's .npy has no type for."""
    arr = np.require(arr, requirements="C")  # keeps 0-d arrays 0-d
    if arr.dtype.name == "bfloat16":
        return arr.view(np.uint16)
    return arr
