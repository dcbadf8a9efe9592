"""ONNX Runtime's contrib attention nodes alone on graph inputs as mha ops:
`GroupQueryAttention` (import_gqa_node) and `MultiHeadAttention` with a
KV cache (import_mha_node), as ONNX Runtime's CPU kernels compute them
(docs/Integration.md).

GroupQueryAttention: query, key and value [B, S, heads * H] split into
heads; `seqlens_k` (int32 [B]) gives each batch's total length
tot[b] = seqlens_k[b] + 1, of which the last S are the new tokens.

- With `past_key`/`past_value` ([B, Hkv, P, H], separate buffers): the
  present K/V are the past's first tot[b] - S rows (the rows past them
  zeroed, as the kernel leaves them), the new rows appended at tot[b] - S
  (`mha.cache_append`, whose run-time check stops a batch with
  tot[b] < S), rows past tot[b] zero. The attention reads the present K/V
  with `key_lengths` = tot, query s of batch b at position tot[b] - S + s
  (mha's diagonal with key lengths). The present is as long as the graph
  declares it: P (a buffer shared with the past; `total_sequence_length`
  must not exceed P) or P + S (a growing cache; `total_sequence_length`
  must be P + S), checked at run time.
- Without a past: the first prompt; `total_sequence_length` must be S
  (checked at run time); the present K/V are the new ones; query s sees
  keys j <= s with j < tot[b] (a right-padded prompt: a key mask).
- `local_window_size` W: the W keys up to and including the query's own
  (`window_left` = W - 1); `softcap` before the softmax; `scale` (0: mha's
  default 1/sqrt(H)); `do_rotary` with `cos_cache`/`sin_cache` [M, R/2]
  (half-rotated, or `rotary_interleaved`; partial when R < H) on the new
  queries and keys at their positions (`mha.rotary`, positions the past
  length per batch, or `position_ids` [B, S] when given with a past: each
  token's row of the tables; without do_rotary ONNX Runtime ignores them,
  and so does the import; with rotary on a first prompt they are refused,
  ONNX Runtime's CPU kernel reading only their first element there).

Packed QKV (a query [B, S, (num_heads + 2 kv_num_heads) * H] without key
and value) is sliced into the three. Batch, sequence and past lengths may
be dynamic (as ONNX Runtime's exporters write them); the present is then
max(T, P) long, as ONNX Runtime makes it. Everything else is refused with a
message naming it: `attention_bias`, `head_sink`, `smooth_softmax`,
`causal = 0`, `qk_output`, quantized or sliding-window caches,
`local_window_size = 0`, and other dynamic dims.
"""
import onnx

from .attention_node import (Function, Refused, _Tensor, _concat, _empty,
                             _fail, _merge_heads, _split_heads, tensor_type)

INPUTS = ("query", "key", "value", "past_key", "past_value", "seqlens_k",
          "total_sequence_length", "cos_cache", "sin_cache", "position_ids",
          "attention_bias", "head_sink", "k_scale", "v_scale",
          "q_norm_weight", "k_norm_weight")
OUTPUTS = ("output", "present_key", "present_value", "output_qk")
# Attribute: the values that mean "not used" (refused otherwise).
_INERT = {"causal": (1,), "smooth_softmax": (-1, 0), "qk_output": (0,),
          "sliding_window_cache": (0,), "k_quant_type": (b"NONE", "NONE"),
          "v_quant_type": (b"NONE", "NONE"), "kv_cache_bit_width": (0,),
          "qk_norm_epsilon": None}
_TAKEN = {"num_heads", "kv_num_heads", "scale", "softcap",
          "local_window_size", "do_rotary", "rotary_interleaved"}


def _by_name(op, node, in_names, out_names):
    """The node's inputs and outputs by the operator's names ('' where
    absent); more than the operator has is refused."""
    if len(node.input) > len(in_names) or len(node.output) > len(out_names):
        _fail(f"{op} has {len(node.input)} inputs and {len(node.output)} "
              f"outputs; the importer knows {len(in_names)} and "
              f"{len(out_names)}")
    return (dict(zip(in_names, list(node.input) + [""] * len(in_names))),
            dict(zip(out_names, list(node.output) + [""] * len(out_names))))


def _check_inputs(op, ins, outs, refused, qk_output, where="",
                  packed=False):
    """Refuses the inputs `refused` and the output `qk_output` where
    present, packed QKV (no key or value; taken where `packed`), a key
    without a value or the reverse, and a past key without a past value
    or the reverse."""
    for k in refused:
        if ins[k]:
            _fail(f"{op} input {k} is not supported{where}")
    if outs[qk_output]:
        _fail(f"{op} output {qk_output} is not supported")
    if not ins["key"] and not ins["value"] and not packed:
        _fail(f"{op} without key and value inputs (packed QKV) is not "
              f"supported")
    if bool(ins["key"]) != bool(ins["value"]):
        _fail(f"{op} needs key and value together (or neither: packed "
              f"QKV)")
    if bool(ins["past_key"]) != bool(ins["past_value"]):
        _fail(f"{op} needs past_key and past_value together")


def _load_heads(fn, op, ins, roles, n, nkv, dynamic=None):
    """Loads `roles` (static shapes, but for the dims `dynamic[role]` lists:
    batch and sequence lengths) and returns query, key and value split into
    heads ([B, heads, S, H]), batch, sequence length (None where dynamic)
    and element type."""
    for role in roles:
        if ins[role]:
            t = fn.load(ins[role], role)
            free = (dynamic or {}).get(role, ())
            if any(d is None and i not in free
                   for i, d in enumerate(t.shape)):
                _fail(f"{role} '{ins[role]}' has a dynamic shape; the "
                      f"importer takes static ones"
                      + (" but for the batch and sequence lengths"
                         if role in dynamic else ""))
    v = fn.values
    if not ins["key"]:
        q, k, val = _unpack_qkv(fn.em, v[ins["query"]], n, nkv)
    else:
        q, k, val = v[ins["query"]], v[ins["key"]], v[ins["value"]]
    elt = q.elt
    if elt not in ("f32", "f16"):
        _fail(f"query is {elt}; {op} takes float32 or float16")
    for t, r in ((q, "query"), (k, "key"), (val, "value")):
        if t.elt != elt or len(t.shape) != 3:
            _fail(f"{r} is not 3-d [batch, seq, hidden] of the query's type")
    b, s = q.shape[0], q.shape[1]
    if not _agree(k.shape[:2], [b, s]) or not _agree(val.shape[:2], [b, s]):
        _fail("key and value must have the query's batch and sequence "
              "lengths")
    em = fn.em
    return (_split_heads(em, q, n, "query", "num_heads"),
            _split_heads(em, k, nkv, "key", "kv_num_heads"),
            _split_heads(em, val, nkv, "value", "kv_num_heads"), b, s, elt)


def _agree(shape, expected):
    """Whether `shape` matches `expected` wherever both are static."""
    return len(shape) == len(expected) and all(
        a is None or e is None or a == e for a, e in zip(shape, expected))


def _declared_length(model, name):
    """The sequence length (dim 2) a graph output `name` is declared with,
    or None."""
    for o in model.graph.output:
        if o.name == name:
            dims = o.type.tensor_type.shape.dim
            if len(dims) == 4 and dims[2].HasField("dim_value"):
                return dims[2].dim_value
    return None


def _unpack_qkv(em, packed, n, nkv):
    """Packed QKV [B, S, (n + 2 nkv) * H] (GroupQueryAttention's query
    without key and value): its slices [B, S, n * H], [B, S, nkv * H] and
    [B, S, nkv * H], in that order along the hidden dim."""
    if len(packed.shape) != 3:
        _fail("packed QKV query is not 3-d [batch, seq, hidden]")
    b, s, hidden = packed.shape
    bs, ss = packed.sizes[0], packed.sizes[1]
    if hidden % (n + 2 * nkv):
        _fail(f"packed QKV hidden size {hidden} does not split into "
              f"num_heads + 2 * kv_num_heads = {n + 2 * nkv} heads")
    hd = hidden // (n + 2 * nkv)
    parts, offset = [], 0
    for heads in (n, nkv, nkv):
        part = _Tensor(None, [b, s, heads * hd], packed.elt,
                       [bs, ss, heads * hd])
        part.value = em.value(
            f"tensor.extract_slice {packed.value}[0, 0, {offset}] "
            f"[{bs}, {ss}, {heads * hd}] [1, 1, 1] : {packed.type} to "
            f"{part.type}")
        parts.append(part)
        offset += heads * hd
    return parts


def import_gqa_node(model, node, attrs, arrays, out_dir, name, inputs=None):
    """Writes NAME.mlir and NAME.rsp for a graph that is one
    GroupQueryAttention node; returns the path of NAME.mlir."""
    op = "com.microsoft.GroupQueryAttention"
    ins, outs = _by_name(op, node, INPUTS, OUTPUTS)
    for k in sorted(attrs):
        if k in _TAKEN:
            continue
        if k not in _INERT:
            _fail(f"{op} attribute {k} is not supported")
        if _INERT[k] is not None and attrs[k] not in _INERT[k]:
            _fail(f"{op} attribute {k} = {attrs[k]!r} is not supported")
    _check_inputs(op, ins, outs, ("attention_bias", "head_sink", "k_scale", "v_scale",
                                  "q_norm_weight", "k_norm_weight"),
                  "output_qk", packed=True)
    if not ins["seqlens_k"] or not ins["total_sequence_length"]:
        _fail(f"{op} needs seqlens_k and total_sequence_length")
    n, nkv = attrs.get("num_heads"), attrs.get("kv_num_heads")
    if not n or not nkv or n <= 0 or nkv <= 0 or n % nkv:
        _fail(f"num_heads = {n} is not a positive multiple of kv_num_heads "
              f"= {nkv}")
    window = attrs.get("local_window_size", -1)
    if window == 0 or window < -1:
        _fail(f"{op} attribute local_window_size = {window} is not "
              f"supported (-1: none, or a window of at least one key)")
    rotary = attrs.get("do_rotary", 0)
    if rotary and not (ins["cos_cache"] and ins["sin_cache"]):
        _fail(f"{op} do_rotary needs cos_cache and sin_cache")

    fn = Function(model, arrays)
    em, v = fn.em, fn.values
    roles = ["query", "key", "value", "past_key", "past_value", "seqlens_k",
             "total_sequence_length"]
    q, k, val, b, s, elt = _load_heads(
        fn, op, ins, roles + (["cos_cache", "sin_cache"] if rotary else []) +
        (["position_ids"] if ins["position_ids"] else []), n, nkv,
        dynamic={"query": (0, 1), "key": (0, 1), "value": (0, 1),
                 "past_key": (0, 2), "past_value": (0, 2), "seqlens_k": (0,),
                 "position_ids": (0, 1)})
    # Batch and new tokens: an int, or the SSA index of a dynamic size.
    bsz, ssz = q.sizes[0], q.sizes[2]
    lens = v[ins["seqlens_k"]]
    if lens.elt != "i32" or not _agree(lens.shape, [b]):
        _fail(f"seqlens_k is not int32 [{b or 'B'}]")
    total = v[ins["total_sequence_length"]]
    if total.elt != "i32" or total.shape not in ([], [1]):
        _fail("total_sequence_length is not an int32 scalar")
    hd = q.shape[3]
    if k.shape[3] != hd or val.shape[3] != hd:
        _fail("query, key and value heads differ in size")

    # tot = seqlens_k + 1; the past length tot - S; T.
    i32 = tensor_type([b], "i32")

    def scalar_i32(size):
        """A size (int or index value) as an i32 value."""
        if isinstance(size, int):
            return em.value(f"arith.constant {size} : i32")
        return em.value(f"arith.index_cast {size} : index to i32")

    def splat(value):
        """An i32 value as a [B] tensor."""
        dims = "" if b is not None else f"[{bsz}]"
        return em.value(f"tensor.splat {value}{dims} : {i32}")

    s_i32 = scalar_i32(ssz)
    tot = em.value(f"arith.addi {lens.value}, {splat(scalar_i32(1))} : "
                   f"{i32}")
    zero_idx = em.value("arith.constant 0 : index")
    t_value = em.value(
        f"tensor.extract {total.value}[{', '.join([zero_idx] * len(total.shape))}]"
        f" : {total.type}")

    def assert_(cond, msg):
        em.lines.append(f'    cf.assert {cond}, "{msg}"')

    if ins["past_key"]:
        pk, pv = v[ins["past_key"]], v[ins["past_value"]]
        for t, r in ((pk, "past_key"), (pv, "past_value")):
            if t.elt != elt or len(t.shape) != 4 or \
                    not _agree(t.shape, [b, nkv, None, hd]):
                _fail(f"{r} is not [{b or 'B'}, {nkv}, P, {hd}] of the "
                      f"query's type")
        if not _agree(pk.shape, pv.shape):
            _fail("past_key and past_value differ in shape")
        p = pk.shape[2]
        # The present K/V's length: ONNX Runtime's max(T, P). Where the
        # graph declares it statically: the past buffer's (a shared buffer,
        # T <= P) or P + S (a growing cache, T = P + S); else max(T, P) at
        # run time.
        present_len = None
        if p is not None and s is not None:
            present_len = p
            for r in ("present_key", "present_value"):
                if outs[r]:
                    declared = _declared_length(model, outs[r])
                    if declared not in (p, p + s, None):
                        _fail(f"{r} has {declared} positions; the importer "
                              f"takes past_key's ({p}) or past_key's plus "
                              f"the new tokens ({p + s})")
                    present_len = declared
        if present_len is not None and present_len == p:
            pc = em.value(f"arith.constant {p} : i32")
            ok = em.value(f"arith.cmpi sle, {t_value}, {pc} : i32")
            assert_(ok, f"total_sequence_length must not exceed past_key's "
                        f"length ({p}): the present K/V are that long")
        elif present_len is not None:
            pc = em.value(f"arith.constant {p + s} : i32")
            ok = em.value(f"arith.cmpi eq, {t_value}, {pc} : i32")
            assert_(ok, f"total_sequence_length must be past_key's length "
                        f"plus the new tokens ({p + s}): the present K/V "
                        f"are that long")
        else:
            t_index = em.value(f"arith.index_cast {t_value} : i32 to index")
            p_index = pk.sizes[2] if p is None else \
                em.value(f"arith.constant {p} : index")
            present_len = em.value(f"arith.maxsi {t_index}, {p_index} : "
                                   f"index")
        past_len = em.value(f"arith.subi {tot}, {splat(s_i32)} : {i32}")
        positions = past_len
    else:
        ok = em.value(f"arith.cmpi eq, {t_value}, {s_i32} : i32")
        assert_(ok, f"without past_key, total_sequence_length must be the "
                    f"sequence length ({s or 'S'}): a first prompt")
        past_len = None
        positions = splat(scalar_i32(0))

    # position_ids [B, S]: each new token's row of the rotary tables (ONNX
    # Runtime reads them only with do_rotary).
    positions_type = i32
    if ins["position_ids"]:
        pos = v[ins["position_ids"]]
        if pos.elt not in ("i64", "i32") or not _agree(pos.shape, [b, s]):
            _fail(f"position_ids is not int64 [{b or 'B'}, {s or 'S'}]")
        if rotary and past_len is None:
            # Measured on onnxruntime 1.32: without a past its CPU kernel
            # rotates every batch's prompt from the first position given,
            # whatever the others.
            _fail(f"{op} input position_ids without past_key (a first "
                  f"prompt) is not supported: ONNX Runtime reads only its "
                  f"first element there")
        if rotary:
            positions, positions_type = pos.value, pos.type

    if rotary:
        cos, sin = v[ins["cos_cache"]], v[ins["sin_cache"]]
        for t, r in ((cos, "cos_cache"), (sin, "sin_cache")):
            if t.elt != elt or len(t.shape) != 2:
                _fail(f"{r} is not a 2-d tensor of the query's type")
        flag = " {interleaved}" if attrs.get("rotary_interleaved", 0) else ""

        def rotate(x):
            init = _empty(em, x.sizes, elt)
            out = _Tensor(None, x.shape, elt, x.sizes)
            out.value = em.value(
                f"mha.rotary ins({x.value} : {x.type}) cos_sin({cos.value}, "
                f"{sin.value} : {cos.type}, {sin.type}) positions("
                f"{positions} : {positions_type}) outs({init} : {x.type})"
                f"{flag} -> "
                f"{x.type}")
            return out
        q, k = rotate(q), rotate(k)

    if past_len is not None:
        def present(past, new):
            # The past's first past_len[b] rows, zeros after them, then the
            # new rows appended at past_len[b] (in a present of present_len
            # rows).
            zero = em.value(f"arith.constant 0.0 : {elt}")
            init = _empty(em, past.sizes, elt)
            kept = em.value(
                f"linalg.generic {{indexing_maps = [affine_map<(b, h, j, c) "
                f"-> (b, h, j, c)>, affine_map<(b, h, j, c) -> (b)>, "
                f"affine_map<(b, h, j, c) -> (b, h, j, c)>], iterator_types "
                f"= [\"parallel\", \"parallel\", \"parallel\", \"parallel\"]}} "
                f"ins({past.value}, {past_len} : {past.type}, {i32}) "
                f"outs({init} : {past.type}) {{\n"
                f"    ^bb0(%x: {elt}, %len: i32, %o: {elt}):\n"
                f"      %j = linalg.index 2 : index\n"
                f"      %l = arith.index_cast %len : i32 to index\n"
                f"      %in = arith.cmpi slt, %j, %l : index\n"
                f"      %y = arith.select %in, %x, {zero} : {elt}\n"
                f"      linalg.yield %y : {elt}\n"
                f"    }} -> {past.type}")
            static = isinstance(present_len, int)
            out = _Tensor(None, [b, nkv, present_len if static else None,
                                 hd], elt, [bsz, nkv, present_len, hd])
            if present_len != p:
                zeros = em.value(
                    f"linalg.fill ins({zero} : {elt}) outs("
                    f"{_empty(em, out.sizes, elt)} : {out.type}) -> "
                    f"{out.type}")
                kept = em.value(
                    f"tensor.insert_slice {kept} into {zeros}[0, 0, 0, 0] "
                    f"[{bsz}, {nkv}, {past.sizes[2]}, {hd}] [1, 1, 1, 1] : "
                    f"{past.type} into {out.type}")
            out.value = em.value(
                f"mha.cache_append ins({new.value} : {new.type}) lengths("
                f"{past_len} : {i32}) outs({kept} : {out.type}) -> "
                f"{out.type}")
            return out
        k = present(pk, k)
        val = present(pv, val)

    attrs_text = ["causal"]
    if attrs.get("scale", 0.0):
        attrs_text.append(f"scale = {float(attrs['scale']):.9e} : f32")
    if attrs.get("softcap", 0.0) > 0:
        attrs_text.append(f"softcap = {float(attrs['softcap']):.9e} : f32")
    if window > 0:
        attrs_text.append(f"window_left = {int(window) - 1} : i64")
    y_sizes = [bsz, n, ssz, hd]
    y = _Tensor(None, [b, n, s, hd], elt, y_sizes)
    init = _empty(em, y_sizes, elt)
    operands = (f"ins({q.value}, {k.value}, {val.value} : {q.type}, "
                f"{k.type}, {val.type})")
    if past_len is not None:
        operands += f" key_lengths({tot} : {i32})"
    else:
        # Keys j < tot[b] (a right-padded prompt), the diagonal at 0.
        mtype = tensor_type([b, 1, 1, k.shape[2]], "i1")
        minit = _empty(em, [bsz, 1, 1, k.sizes[2]], "i1")
        mask = em.value(
            f"linalg.generic {{indexing_maps = [affine_map<(b, h, i, j) -> "
            f"(b)>, affine_map<(b, h, i, j) -> (b, h, i, j)>], "
            f"iterator_types = [\"parallel\", \"parallel\", \"parallel\", "
            f"\"parallel\"]}} ins({tot} : {i32}) outs({minit} : {mtype}) {{\n"
            f"    ^bb0(%len: i32, %o: i1):\n"
            f"      %j = linalg.index 3 : index\n"
            f"      %l = arith.index_cast %len : i32 to index\n"
            f"      %in = arith.cmpi slt, %j, %l : index\n"
            f"      linalg.yield %in : i1\n"
            f"    }} -> {mtype}")
        operands += f" mask({mask} : {mtype}) causal_offset({zero_idx})"
    y.value = em.value(f"mha.attention {operands} outs({init} : {y.type}) "
                       f"{{{', '.join(attrs_text)}}} -> {y.type}")
    y = _merge_heads(em, y)
    results = {"output": y, "present_key": k, "present_value": val}
    returned = [results[r] for r in ("output", "present_key", "present_value")
                if outs[r]]
    graph_outputs = [o.name for o in model.graph.output]
    if graph_outputs != [outs[r] for r in ("output", "present_key",
                                           "present_value") if outs[r]]:
        _fail("the graph's outputs are not the node's outputs, in order")
    return fn.write(out_dir, name, "com.microsoft.GroupQueryAttention",
                    returned, inputs)


MHA_INPUTS = ("query", "key", "value", "bias", "key_padding_mask",
              "attention_bias", "past_key", "past_value",
              "past_sequence_length", "cache_indirection")
MHA_OUTPUTS = ("output", "present_key", "present_value", "qk")


def import_mha_node(model, node, attrs, arrays, out_dir, name, inputs=None):
    """`com.microsoft.MultiHeadAttention` alone on graph inputs: query, key
    and value [B, S, heads * H] (the same sequence length) split into heads;
    `past_key`/`past_value` [B, N, P, H] concatenated before the new keys
    and values (`tensor.concat`), which `present_key`/`present_value`
    return; `unidirectional` causal at the past length (mha's bottom-right
    diagonal: Sk - Sq = P); `scale`; batch, sequence and past lengths
    static or dynamic. Masks, the packed bias, the cache indirection and
    the qk output are refused by name (the layer form, onnx_mha.py, takes
    the bias and masks)."""
    op = "com.microsoft.MultiHeadAttention"
    ins, outs = _by_name(op, node, MHA_INPUTS, MHA_OUTPUTS)
    for k in sorted(attrs):
        if k not in ("num_heads", "scale", "unidirectional",
                     "mask_filter_value"):
            _fail(f"{op} attribute {k} is not supported")
    _check_inputs(op, ins, outs, ("bias", "key_padding_mask",
                                  "attention_bias", "past_sequence_length",
                                  "cache_indirection"), "qk",
                  " on the bare node")
    n = attrs.get("num_heads")
    if not n or n <= 0:
        _fail(f"{op} needs a positive num_heads")
    scale = attrs.get("scale", 0.0)
    if scale < 0:
        _fail(f"{op} attribute scale = {scale} is not supported")
    fn = Function(model, arrays)
    em, v = fn.em, fn.values
    q, k, val, b, s, elt = _load_heads(
        fn, op, ins, ("query", "key", "value", "past_key", "past_value"), n,
        n, dynamic={"query": (0, 1), "key": (0, 1), "value": (0, 1),
                    "past_key": (0, 2), "past_value": (0, 2)})
    if ins["past_key"]:
        pk, pv = v[ins["past_key"]], v[ins["past_value"]]
        for past, new, r in ((pk, k, "past_key"), (pv, val, "past_value")):
            if past.elt != elt or len(past.shape) != 4 or not _agree(
                    past.shape, [b, n, None, new.shape[3]]):
                _fail(f"{r} is not [{b or 'B'}, {n}, P, {new.shape[3]}] of "
                      f"the query's type")
        k = _concat(em, pk, k, "key")
        val = _concat(em, pv, val, "value")
    attrs_text = []
    if scale:
        attrs_text.append(f"scale = {float(scale):.9e} : f32")
    if attrs.get("unidirectional", 0):
        attrs_text.append("causal")
    y_sizes = [q.sizes[0], n, q.sizes[2], val.shape[3]]
    y = _Tensor(None, [b, n, s, val.shape[3]], elt, y_sizes)
    init = _empty(em, y_sizes, elt)
    attr_dict = f" {{{', '.join(attrs_text)}}}" if attrs_text else ""
    y.value = em.value(
        f"mha.attention ins({q.value}, {k.value}, {val.value} : {q.type}, "
        f"{k.type}, {val.type}) outs({init} : {y.type}){attr_dict} -> "
        f"{y.type}")
    y = _merge_heads(em, y)
    results = {"output": y, "present_key": k, "present_value": val}
    names = [r for r in ("output", "present_key", "present_value") if outs[r]]
    if [o.name for o in model.graph.output] != [outs[r] for r in names]:
        _fail("the graph's outputs are not the node's outputs, in order")
    return fn.write(out_dir, name, op, [results[r] for r in names], inputs)


__all__ = ["import_gqa_node", "import_mha_node", "Refused"]
