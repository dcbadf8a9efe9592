"""PyTorch 2 programs (`torch.export`) to MHA-MLIR.

    from mha_importers.torch_export import import_program
    import_program(ep, "out")          # an ExportedProgram (needs torch)
    import_program("model.pt2", "out")  # torch.export.save's archive (no torch)

    python3 -m mha_importers.torch_export model.pt2 -o out

writes out/main.mlir, out/main.weights/*.npy and out/main.rsp, as the other
importers do (docs/Integration.md). The archive is read without PyTorch:
its graph is JSON and its weights raw bytes, so the importer, and its
tests, need no PyTorch installation.

How it works. The graph is interpreted once. Values computed from the
module's parameters, buffers and constants alone are evaluated with NumPy
(weight splits, rotary tables, ...). Every other value is symbolic: per
element, a sum of terms `coef * base[idx]`, where `base` is a user input,
a projection (`aten.linear` of a symbolic value by a constant weight) or an
attention (`aten.scaled_dot_product_attention`), `idx` an array of flat
element indices into it and `coef` a constant factor. View operations
(view, reshape, transpose, permute, unflatten, select, slice, cat,
expand, ...) move indices; `neg` and `mul` by constants change factors.
So whatever way the program splits heads (Llama's view + transpose,
nn.MultiheadAttention's seq-first reshapes, GQA by `enable_gqa` or by
repeating heads), what reaches the attention is compared element by
element with the one layout mha's layer has: the heads of a projection of
the inputs (with rotary embeddings: two terms whose factors are the
tables). Dynamic sizes are given distinct representative values while
interpreting, so that no two of them can be confused.

What maps (one attention per program: its output, and optionally its
probabilities as a second output):
- `aten.scaled_dot_product_attention` on inputs [B, H, S, d]: `mha.attention`
  (`is_causal`, `scale`, `enable_gqa`, `attn_mask` given as an input).
- the layer: projections (`aten.linear` or `@`, with or without biases,
  separate or packed as in nn.MultiheadAttention's `in_proj_weight`) of
  one, two or three inputs ([B, S, E], or [S, B, E] for the whole layer),
  heads split in any way, optional rotary embeddings on q and k computed
  from constants (half-rotated or interleaved, partial), the attention
  (SDPA, or written out as bmm/softmax/bmm as nn.MultiheadAttention does
  with need_weights=True, its probabilities returned averaged or per
  head), masks given as inputs (through views, or a boolean input filled
  with -inf: a key padding mask), the heads merged and the output
  projection: `mha.multi_head_attention`, weights marked `mha.weight`.
Anything else is refused, naming the node.
"""
from dataclasses import dataclass
import io
import json
import math
import os
import re
import zipfile
from typing import Optional

import numpy as np

from .layer import Layer, MaskInput, tensor_type, write, write_function


class UnsupportedProgram(ValueError):
    """A program this importer cannot map (the message names the node)."""


def _fail(msg):
    raise UnsupportedProgram(msg)


# torch.export's serialized ScalarType codes.
_DTYPES = {1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64,
           6: np.float16, 7: np.float32, 8: np.float64, 12: np.bool_}
_BF16 = 13


# ---------------------------------------------------------------------------
# Reading the archive.

@dataclass
class Program:
    """The parts of an ExportedProgram the importer reads."""
    nodes: list           # the graph's nodes (JSON objects)
    inputs: list          # user inputs: (name, sizes, dtype)
    outputs: list         # user outputs: names
    constants: dict       # placeholder name -> ndarray (params, buffers)
    ranges: dict          # symbol -> (min, max)
    tensor_values: dict   # tensor name -> its metadata (JSON)


def _symbol(expr):
    m = re.fullmatch(r"Symbol\('(\w+)'.*\)", expr) or \
        re.fullmatch(r"(\w+)", expr)
    return m.group(1) if m else None


def _tensor(raw, meta, name):
    dtype = meta["dtype"]
    if dtype == _BF16:
        _fail(f"'{name}' is bfloat16, which this importer does not take "
              "(export the module in float32 or float16)")
    if dtype not in _DTYPES:
        _fail(f"'{name}' has element type code {dtype}, which this importer "
              "does not take")
    flat = np.frombuffer(raw, dtype=_DTYPES[dtype])
    sizes = [s["as_int"] for s in meta["sizes"]]
    strides = [s["as_int"] for s in meta["strides"]]
    offset = meta["storage_offset"]["as_int"]
    item = flat.itemsize
    view = np.lib.stride_tricks.as_strided(
        flat[offset:], shape=sizes, strides=[s * item for s in strides])
    return np.array(view)


def load(source):
    """A Program from torch.export.save's archive (a path or a file object)
    or from an ExportedProgram (saved to memory first, which needs torch)."""
    if hasattr(source, "graph_module") and hasattr(source, "state_dict"):
        import torch
        buf = io.BytesIO()
        torch.export.save(source, buf)
        buf.seek(0)
        source = buf
    try:
        z = zipfile.ZipFile(source)
    except (zipfile.BadZipFile, OSError) as e:
        _fail(f"'{getattr(source, 'name', source)}' is not a torch.export "
              f"archive (torch.export.save): {e}")
    with z:
        names = z.namelist()

        def find(suffix, required=True):
            hits = [n for n in names if n.endswith(suffix)]
            if not hits and required:
                _fail(f"the archive has no '{suffix}': not a torch.export "
                      "archive (torch.export.save)")
            return hits[0] if hits else None
        order = find("byteorder", required=False)
        if order and z.read(order).decode().strip() != "little":
            _fail("the archive's tensors are big-endian")
        model = json.loads(z.read(find("models/model.json")))
        root = find("models/model.json")[:-len("models/model.json")]
        tensors = {}
        for kind in ("weights", "constants"):
            cfg = find(f"data/{kind}/model_{kind}_config.json",
                       required=False)
            if cfg is None:
                continue
            for fqn, entry in json.loads(z.read(cfg))["config"].items():
                if entry.get("use_pickle"):
                    _fail(f"'{fqn}' is stored pickled, which this importer "
                          "cannot read without PyTorch")
                raw = z.read(f"{root}data/{kind}/{entry['path_name']}")
                tensors[fqn] = _tensor(raw, entry["tensor_meta"], fqn)
    gm = model["graph_module"]
    graph, sig = gm["graph"], gm["signature"]
    constants, inputs = {}, []
    for spec in sig["input_specs"]:
        (kind, body), = spec.items()
        if kind == "user_input":
            arg = body["arg"]
            if "as_tensor" not in arg:
                _fail(f"a user input that is not a tensor ({arg}) is not "
                      "supported")
            name = arg["as_tensor"]["name"]
            inputs.append(_input(name, graph["tensor_values"][name]))
        elif kind in ("parameter", "buffer", "tensor_constant"):
            fqn = body.get("parameter_name") or body.get("buffer_name") or \
                body.get("tensor_constant_name")
            if fqn not in tensors:
                _fail(f"the archive has no data for '{fqn}'")
            constants[body["arg"]["name"]] = tensors[fqn]
        else:
            _fail(f"a '{kind}' input is not supported")
    outputs = []
    for spec in sig["output_specs"]:
        (kind, body), = spec.items()
        if kind != "user_output":
            _fail(f"a '{kind}' output (a mutated buffer or input) is not "
                  "supported")
        if "as_tensor" not in body["arg"]:
            _fail(f"an output that is not a tensor ({body['arg']}) is not "
                  "supported")
        outputs.append(body["arg"]["as_tensor"]["name"])
    ranges = {k: (v.get("min_val"), v.get("max_val"))
              for k, v in model.get("range_constraints", {}).items()}
    return Program(graph["nodes"], inputs, outputs, constants,
                   ranges,
                   graph["tensor_values"])


def _input(name, meta):
    """(name, sizes with symbol names for dynamic ones, numpy dtype) of a
    tensor the function takes."""
    if meta["dtype"] == _BF16:
        _fail(f"input '{name}' is bfloat16, which this importer does not "
              "take")
    sizes = []
    for s in meta["sizes"]:
        if "as_int" in s:
            sizes.append(s["as_int"])
            continue
        sym = _symbol(s["as_expr"]["expr_str"])
        if sym is None:
            _fail(f"input '{name}' has a size '{s['as_expr']['expr_str']}' "
                  "that is not one symbol")
        sizes.append(sym)
    return (name, sizes, _DTYPES.get(meta["dtype"]))


# ---------------------------------------------------------------------------
# Symbolic values.

class Base:
    """What symbolic values index: a user input, a projection, an
    attention. `shape` is its (representative) shape."""

    def __init__(self, kind, shape, node, **fields):
        self.kind, self.shape, self.node = kind, tuple(shape), node
        self.__dict__.update(fields)

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))


@dataclass
class Term:
    base: Base
    idx: np.ndarray                # flat indices into base, the value's shape
    coef: Optional[np.ndarray]     # factors (None: 1), the value's shape


class Sym:
    """A tensor computed from user inputs: per element, the sum of its
    terms' coef * base[idx]."""

    def __init__(self, terms, node, shape=None):
        self.shape = tuple(terms[0].idx.shape if terms else shape)
        self.terms, self.node = _canonical(terms), node

    def map(self, f, node):
        """The value with the view `f` (on arrays) applied."""
        if not self.terms:  # zero everywhere (e.g. sin at position 0)
            return Sym([], node, f(np.zeros(self.shape, np.int8)).shape)
        return Sym([Term(t.base, f(t.idx),
                         None if t.coef is None else f(t.coef))
                    for t in self.terms], node)


class Filled:
    """A mask computed from a boolean input: `fill` where the input's
    element idx is true, `other` where it is false (masked_fill of
    constants, as nn.MultiheadAttention makes its key padding mask)."""

    def __init__(self, base, idx, fill, other, node):
        self.base, self.idx, self.node = base, idx, node
        self.fill = np.broadcast_to(np.asarray(fill, np.float64), idx.shape)
        self.other = np.broadcast_to(np.asarray(other, np.float64),
                                     idx.shape)

    @property
    def shape(self):
        return self.idx.shape

    def map(self, f, node):
        return Filled(self.base, f(self.idx), f(self.fill), f(self.other),
                      node)


def _support(t):
    return np.ones(t.idx.shape, bool) if t.coef is None else t.coef != 0


def _canonical(terms):
    """Drops terms that are zero everywhere and merges terms of one base
    whose nonzero elements do not overlap (what cat makes of slices)."""
    out = []
    for t in terms:
        if t.coef is not None and not np.any(t.coef):
            continue
        for i, u in enumerate(out):
            if u.base is t.base and not np.any(_support(u) & _support(t)):
                s = _support(t)
                idx = np.where(s, t.idx, u.idx)
                cu = np.ones(u.idx.shape) if u.coef is None else u.coef
                ct = np.ones(t.idx.shape) if t.coef is None else t.coef
                out[i] = Term(u.base, idx, np.where(s, ct, cu))
                break
        else:
            out.append(t)
    return out


def _arange_sym(base, node):
    return Sym([Term(base, np.arange(base.size).reshape(base.shape), None)],
               node)


def _full_coef(t):
    return np.ones(t.idx.shape) if t.coef is None else t.coef


# ---------------------------------------------------------------------------
# The interpreter.

def _dims(d, rank):
    return d + rank if d < 0 else d


def _view_shape(shape, total):
    shape = list(shape)
    if -1 in shape:
        i = shape.index(-1)
        rest = int(np.prod([s for j, s in enumerate(shape) if j != i]))
        shape[i] = total // rest if rest else 0
    return shape


def _slice(a, dim, start, end, step):
    dim = _dims(dim, a.ndim)
    n = a.shape[dim]
    start = 0 if start is None else start
    end = n if end is None else min(end, n)
    sl = [slice(None)] * a.ndim
    sl[dim] = slice(start, end, step or 1)
    return a[tuple(sl)]


def _squeeze(a, dims):
    dims = [_dims(d, a.ndim) for d in dims]
    return a.reshape([s for i, s in enumerate(a.shape)
                      if not (i in dims and s == 1)])


# View operations: (array, args) -> array, applied alike to constants and
# to the indices and factors of symbolic values.
_VIEWS = {
    "aten.view.default": lambda a, g: a.reshape(_view_shape(g["size"],
                                                            a.size)),
    "aten.reshape.default": lambda a, g: a.reshape(_view_shape(g["shape"],
                                                               a.size)),
    "aten._unsafe_view.default": lambda a, g: a.reshape(
        _view_shape(g["size"], a.size)),
    "aten.transpose.int": lambda a, g: np.swapaxes(a, g["dim0"], g["dim1"]),
    "aten.permute.default": lambda a, g: np.transpose(
        a, [_dims(d, a.ndim) for d in g["dims"]]),
    "aten.t.default": lambda a, g: a.T,
    "aten.unsqueeze.default": lambda a, g: np.expand_dims(
        a, _dims(g["dim"], a.ndim + 1)),
    "aten.squeeze.dim": lambda a, g: _squeeze(a, [g["dim"]]),
    "aten.squeeze.dims": lambda a, g: _squeeze(a, g["dim"]),
    "aten.squeeze.default": lambda a, g: _squeeze(a, range(a.ndim)),
    "aten.contiguous.default": lambda a, g: a,
    "aten.clone.default": lambda a, g: a,
    "aten.alias.default": lambda a, g: a,
    "aten.detach.default": lambda a, g: a,
    "aten.lift_fresh_copy.default": lambda a, g: a,
    "aten.unflatten.int": lambda a, g: a.reshape(
        a.shape[:_dims(g["dim"], a.ndim)] + tuple(_view_shape(
            g["sizes"], a.shape[_dims(g["dim"], a.ndim)])) +
        a.shape[_dims(g["dim"], a.ndim) + 1:]),
    "aten.flatten.using_ints": lambda a, g: a.reshape(
        a.shape[:_dims(g.get("start_dim", 0), a.ndim)] + (-1,) +
        a.shape[_dims(g.get("end_dim", -1), a.ndim) + 1:]) if a.ndim else
    a.reshape(1),
    "aten.select.int": lambda a, g: np.take(a, g["index"], axis=g["dim"]),
    "aten.slice.Tensor": lambda a, g: _slice(
        a, g.get("dim", 0), g.get("start"), g.get("end"), g.get("step", 1)),
    "aten.expand.default": lambda a, g: np.broadcast_to(
        a, [a.shape[i - (len(g["size"]) - a.ndim)] if s == -1 else s
            for i, s in enumerate(g["size"])]),
    "aten.repeat_interleave.self_int": lambda a, g: np.repeat(
        a, g["repeats"], axis=g["dim"]),
}

# Several outputs: (array, args) -> list of arrays.
_SPLITS = {
    "aten.split_with_sizes.default": lambda a, g: np.split(
        a, np.cumsum(g["split_sizes"])[:-1], axis=g.get("dim", 0)),
    "aten.split.Tensor": lambda a, g: np.split(
        a, range(g["split_size"], a.shape[g.get("dim", 0)],
                 g["split_size"]), axis=g.get("dim", 0)),
    # torch.chunk: chunks of ceil(n / chunks), the last shorter (not
    # NumPy's array_split, which spreads the remainder).
    "aten.chunk.default": lambda a, g: np.split(
        a, range(-(-a.shape[g.get("dim", 0)] // g["chunks"]),
                 a.shape[g.get("dim", 0)],
                 -(-a.shape[g.get("dim", 0)] // g["chunks"])),
        axis=g.get("dim", 0)),
    "aten.unbind.int": lambda a, g: [np.take(a, i, axis=g.get("dim", 0))
                                     for i in range(a.shape[g.get("dim", 0)])],
}

# Element-wise and creation operations on constants only.
_CONSTANT_OPS = {
    "aten.cos.default": lambda g: np.cos(g["self"]),
    "aten.sin.default": lambda g: np.sin(g["self"]),
    "aten.exp.default": lambda g: np.exp(g["self"]),
    "aten.reciprocal.default": lambda g: 1 / g["self"],
    "aten.pow.Tensor_Scalar": lambda g: np.power(g["self"], g["exponent"]),
    "aten.pow.Scalar": lambda g: np.power(g["self"], g["exponent"]),
    "aten.outer.default": lambda g: np.outer(g["self"], g["vec2"]),
    "aten.matmul.default": lambda g: np.matmul(g["self"], g["other"]),
    "aten.tril.default": lambda g: np.tril(g["self"], g.get("diagonal", 0)),
    "aten.triu.default": lambda g: np.triu(g["self"], g.get("diagonal", 0)),
    "aten.ones.default": lambda g: np.ones(g["size"], g.get("dtype") or
                                           np.float32),
    "aten.zeros.default": lambda g: np.zeros(g["size"], g.get("dtype") or
                                             np.float32),
    "aten.arange.default": lambda g: np.arange(
        g["end"], dtype=g.get("dtype") or _int_or_float(g["end"])),
    "aten.arange.start": lambda g: np.arange(
        g["start"], g["end"], dtype=g.get("dtype") or
        _int_or_float(g["start"], g["end"])),
    "aten.arange.start_step": lambda g: np.arange(
        g["start"], g["end"], g["step"], dtype=g.get("dtype") or
        _int_or_float(g["start"], g["end"], g["step"])),
    "aten.logical_not.default": lambda g: np.logical_not(g["self"]),
    "aten.bitwise_not.default": lambda g: ~g["self"],
    "aten.eq.Scalar": lambda g: g["self"] == g["other"],
    "aten.masked_fill.Scalar": lambda g: np.where(
        g["mask"], np.asarray(g["value"], g["self"].dtype), g["self"]),
}


def _int_or_float(*xs):
    return np.int64 if all(isinstance(x, int) for x in xs) else np.float32


def _cast(a, dtype):
    return np.asarray(a).astype(dtype) if dtype is not None else a


class _Interpreter:
    def __init__(self, program, sizes=None):
        """`sizes`: values for some symbols (the others get
        representatives)."""
        self.p = program
        self.env = {}
        self.symbols = self._representatives()
        self.symbols.update(sizes or {})
        for name, sizes, dtype in program.inputs:
            shape = [self.symbols[s] if isinstance(s, str) else s
                     for s in sizes]
            base = Base("input", shape, name, name=name, sizes=sizes,
                        dtype=dtype)
            self.env[name] = _arange_sym(base, name)
        self.env.update(program.constants)

    def _representatives(self):
        """Distinct values, no static size among them, for the symbols."""
        static = set()
        for _, sizes, _ in self.p.inputs:
            static.update(s for s in sizes if isinstance(s, int))
        for c in self.p.constants.values():
            static.update(c.shape)
        reps, candidate = {}, 5
        for _, sizes, _ in self.p.inputs:
            for s in sizes:
                if not isinstance(s, str) or s in reps:
                    continue
                lo, hi = self.p.ranges.get(s, (None, None))
                candidate = max(candidate, (lo or 0))
                while candidate in static or candidate in reps.values() or \
                        any(candidate % p == 0 for p in (2, 3)):
                    candidate += 1
                if hi is not None and candidate > hi:
                    _fail(f"the dynamic size '{s}' has a maximum of {hi}, too "
                          "small for the importer to tell it from the other "
                          "sizes; export it with static sizes")
                reps[s] = candidate
                candidate += 1
        return reps

    def arg(self, a):
        (kind, v), = a.items()
        if kind == "as_none":
            return None
        if kind == "as_tensor":
            return self.env[v["name"]]
        if kind == "as_tensors":
            return [self.env[t["name"]] for t in v]
        if kind == "as_optional_tensors":
            return [None if "as_none" in t else self.env[t["as_tensor"]["name"]]
                    for t in v]
        if kind in ("as_sym_int", "as_sym_float", "as_sym_bool"):
            return self.sym(v)
        if kind in ("as_sym_ints", "as_sym_floats", "as_sym_bools"):
            return [self.sym(x) for x in v]
        if kind == "as_scalar_type":
            if v == _BF16:
                return "bfloat16"
            return _DTYPES.get(v, v)
        return v  # ints, floats, bools, strings, layouts, devices

    def sym(self, v):
        (kind, x), = v.items()
        if kind == "as_name":
            if x not in self.env:
                _fail(f"the size '{x}' is used before it is computed")
            return self.env[x]
        return x

    def run(self):
        for node in self.p.nodes:
            self.node(node)
        return [self.env[n] for n in self.p.outputs]

    def node(self, node):
        target = node["target"].removeprefix("torch.ops.")
        name = node["name"]
        g = {a["name"]: self.arg(a["arg"]) for a in node["inputs"]}
        try:
            result = self.evaluate(target, g, name)
        except UnsupportedProgram:
            raise
        except (ValueError, IndexError, TypeError, KeyError) as e:
            _fail(f"node '{name}' ({target}): {e}")
        outs = node["outputs"]
        if len(outs) == 1 and "as_tensors" in outs[0]:
            outs = [{"as_tensor": t} for t in outs[0]["as_tensors"]]
            result = list(result)
        elif len(outs) == 1:
            result = [result]
        for o, r in zip(outs, result):
            (kind, v), = o.items()
            if kind == "as_tensor":
                self.env[v["name"]] = r
            elif kind in ("as_sym_int", "as_sym_float", "as_sym_bool"):
                self.env[v["as_name"]] = r
            elif kind != "as_none":
                _fail(f"node '{name}' ({target}): an output of kind "
                      f"'{kind}' is not supported")

    def evaluate(self, target, g, name):
        def refuse(why):
            _fail(f"node '{name}' ({target}) {why}")
        symbolic = [v for v in g.values() if isinstance(v, (Sym, Filled))] + \
            [x for v in g.values() if isinstance(v, list) for x in v
             if isinstance(x, (Sym, Filled))]
        if target in ("aten.sym_size.int",):
            return g["self"].shape[_dims(g["dim"], len(g["self"].shape))]
        if target.startswith("aten._assert") or target in (
                "aten.sym_constrain_range_for_size.default",
                "aten.sym_constrain_range.default"):
            return None
        if target.startswith("_operator.") or target.startswith("operator."):
            op = target.split(".")[-1]
            ops = {"mul": lambda a, b: a * b, "add": lambda a, b: a + b,
                   "sub": lambda a, b: a - b, "floordiv": lambda a, b: a // b,
                   "getitem": lambda a, b: a[b]}
            if op not in ops:
                refuse("is not supported")
            vals = list(g.values())
            return ops[op](*vals)
        if target in _VIEWS:
            f = _VIEWS[target]
            x = g["self"]
            if isinstance(x, (Sym, Filled)):
                return x.map(lambda a: f(a, g), name)
            return f(np.asarray(x), g)
        if target in _SPLITS:
            f = _SPLITS[target]
            x = g["self"]
            if isinstance(x, Sym):
                n = len(f(np.zeros(x.shape, np.int8), g))
                return [x.map(lambda a, i=i: f(a, g)[i], name)
                        for i in range(n)]
            return f(np.asarray(x), g)
        if target == "aten.cat.default":
            return self.cat(g["tensors"], g.get("dim", 0), name)
        if target == "aten.stack.default":
            ts, dim = g["tensors"], g.get("dim", 0)
            dim = _dims(dim, len(np.shape(ts[0]) if not isinstance(
                ts[0], Sym) else ts[0].shape) + 1)
            f = _VIEWS["aten.unsqueeze.default"]
            parts = [t.map(lambda a: f(a, {"dim": dim}), name)
                     if isinstance(t, Sym) else np.expand_dims(t, dim)
                     for t in ts]
            return self.cat(parts, dim, name)
        if target in ("aten._to_copy.default", "aten.to.dtype",
                      "aten.to.dtype_layout", "aten.type_as.default"):
            x = g["self"]
            dtype = g.get("dtype")
            if target == "aten.type_as.default":
                other = g["other"]
                dtype = None if isinstance(other, Sym) else other.dtype
            if isinstance(x, Filled) and (dtype is None or np.issubdtype(
                    np.dtype(dtype), np.floating)):
                return x  # -inf and 0 in any float type
            if isinstance(x, Sym):
                if dtype is not None and dtype != self.dtype_of(x):
                    refuse(f"converts the data to {np.dtype(dtype).name}; "
                           "the attention runs in its inputs' type")
                return x
            if dtype == "bfloat16":
                refuse("converts to bfloat16, which this importer does not "
                       "take")
            return _cast(x, dtype)
        if target == "aten.neg.default":
            return self.scale(g["self"], -1.0, name) if symbolic else \
                -g["self"]
        if target in ("aten.mul.Tensor", "aten.mul.Scalar"):
            a, b = g["self"], g["other"]
            if isinstance(a, Sym) and isinstance(b, Sym):
                refuse("multiplies two values computed from the inputs "
                       "(rotary tables must be the module's constants)")
            if isinstance(b, Sym):
                a, b = b, a
            if isinstance(a, Sym):
                return self.scale(a, b, name)
            return np.multiply(a, b)
        if target in ("aten.div.Tensor", "aten.div.Scalar"):
            a, b = g["self"], g["other"]
            if isinstance(b, Sym):
                refuse("divides by a value computed from the inputs")
            if isinstance(a, Sym):
                return self.scale(a, 1.0 / np.asarray(b, np.float64), name)
            return np.divide(a, b)
        if target in ("aten.add.Tensor", "aten.sub.Tensor",
                      "aten.add.Scalar", "aten.sub.Scalar"):
            a, b = g["self"], g["other"]
            alpha = g.get("alpha", 1)
            if target.startswith("aten.sub"):
                alpha = -alpha
            if isinstance(a, Sym) and isinstance(b, Sym):
                b = self.scale(b, alpha, name)
                shape = np.broadcast_shapes(a.shape, b.shape)
                terms = [Term(t.base, np.broadcast_to(t.idx, shape),
                              None if t.coef is None else
                              np.broadcast_to(t.coef, shape))
                         for t in a.terms + b.terms]
                return Sym(terms, name, shape)
            if isinstance(a, Sym) or isinstance(b, Sym):
                refuse("adds a constant to a value computed from the inputs "
                       "(a bias outside aten.linear, or a residual)")
            return np.add(a, np.multiply(b, alpha))
        if target in _PROJECTIONS and symbolic:
            return self.linear(target, g, name)
        if target in ("aten.zeros_like.default", "aten.ones_like.default",
                      "aten.full_like.default") and \
                isinstance(g["self"], Sym):
            # Only the shape of a value computed from the inputs.
            value = {"aten.zeros_like.default": 0,
                     "aten.ones_like.default": 1}.get(target,
                                                      g.get("fill_value"))
            return np.full(g["self"].shape, value,
                           g.get("dtype") or np.float32)
        if target in ("aten.masked_fill.Scalar", "aten.masked_fill_.Scalar"):
            x, m = g["self"], g["mask"]
            if isinstance(m, Sym) and not isinstance(x, Sym):
                t = m.terms[0] if len(m.terms) == 1 else None
                if t is None or t.base.kind != "input" or \
                        t.base.dtype != np.bool_ or t.coef is not None:
                    refuse("fills where a value that is not a boolean input "
                           "is true")
                shape = np.broadcast_shapes(np.shape(x), m.shape)
                return Filled(t.base, np.broadcast_to(t.idx, shape),
                              g["value"], np.broadcast_to(x, shape), name)
        if target in _CONSTANT_OPS:
            if symbolic:
                refuse("on values computed from the inputs is not part of an "
                       "attention block this importer maps")
            return _CONSTANT_OPS[target](g)
        if target == "aten.scaled_dot_product_attention.default":
            return self.attention(g, name)
        if target == "aten.bmm.default" and len(symbolic) == 2:
            return self.bmm(g["self"], g["mat2"], name)
        if target in ("aten.softmax.int", "aten._softmax.default") and \
                symbolic:
            return self.softmax(g["self"], g["dim"], name)
        if target == "aten.mean.dim" and symbolic:
            return self.mean(g["self"], g["dim"], g.get("keepdim", False),
                             name)
        if target == "aten.baddbmm.default":
            refuse("adds a mask to the scores of an attention written out "
                   "as matrix products (nn.MultiheadAttention with a mask "
                   "and need_weights=True), which this importer does not "
                   "map: call it with need_weights=False")
        if target.startswith("aten._scaled_dot_product"):
            refuse("is a decomposed form of scaled_dot_product_attention; "
                   "import the program before run_decompositions()")
        if not symbolic:
            refuse("is not supported on constants by this importer")
        refuse("is not part of an attention block this importer maps")

    def dtype_of(self, s):
        b = s.terms[0].base
        while b.kind != "input":
            b = b.source if b.kind == "projection" else b.q.terms[0].base
        return b.dtype

    def scale(self, s, factor, name):
        factor = np.asarray(factor, np.float64)
        shape = np.broadcast_shapes(s.shape, factor.shape)
        if not s.terms:
            return Sym([], name, shape)
        terms = []
        for t in s.terms:
            terms.append(Term(t.base, np.broadcast_to(t.idx, shape),
                              np.broadcast_to(_full_coef(t), shape) * factor))
        return Sym(terms, name)

    def cat(self, values, dim, name):
        if not any(isinstance(v, Sym) for v in values):
            return np.concatenate([np.asarray(v) for v in values], axis=dim)
        if not all(isinstance(v, Sym) for v in values):
            _fail(f"node '{name}' (aten.cat.default) joins constants with "
                  "values computed from the inputs")
        dim = _dims(dim, len(values[0].shape))
        terms = []
        for i, v in enumerate(values):
            for t in v.terms:
                parts_idx, parts_coef = [], []
                for j, w in enumerate(values):
                    if j == i:
                        parts_idx.append(t.idx)
                        parts_coef.append(_full_coef(t))
                    else:
                        shape = list(w.shape)
                        parts_idx.append(np.zeros(shape, np.int64))
                        parts_coef.append(np.zeros(shape))
                terms.append(Term(t.base, np.concatenate(parts_idx, dim),
                                  np.concatenate(parts_coef, dim)))
        shape = list(values[0].shape)
        shape[dim] = sum(v.shape[dim] for v in values)
        return Sym(terms, name, shape)

    def linear(self, target, g, name):
        x = g.get("input", g.get("self"))
        w = g.get("weight", g.get("other"))
        b = g.get("bias")
        if not isinstance(x, Sym):
            return np.matmul(x, np.swapaxes(w, -1, -2) if target.endswith(
                "linear.default") else w) + (0 if b is None else b)
        if isinstance(w, Sym) or isinstance(b, Sym):
            _fail(f"node '{name}' ({target}) multiplies by a weight computed "
                  "from the inputs")
        w = np.asarray(w)
        if w.ndim != 2:
            _fail(f"node '{name}' ({target}) multiplies by a {w.ndim}-d "
                  "tensor, not a weight matrix")
        if target == "aten.matmul.default":
            w = w.T  # x @ w: w is [in, out]
        if not x.terms:
            _fail(f"node '{name}' ({target}) projects a value that is zero "
                  "everywhere")
        if len(x.terms) != 1 or (x.terms[0].coef is not None and
                                 not np.all(x.terms[0].coef == 1)):
            _fail(f"node '{name}' ({target}) projects a value that is not "
                  "an input or an attention's output as it is (scaled, "
                  "rotated or summed)")
        t = x.terms[0]
        if x.shape[-1] != w.shape[1]:
            _fail(f"node '{name}' ({target}): input width {x.shape[-1]}, "
                  f"weight {list(w.shape)}")
        rows = t.idx.reshape(-1, w.shape[1])
        base = Base("projection", x.shape[:-1] + (w.shape[0],), name,
                    source=t.base, in_idx=rows, weight=w, bias=b)
        return _arange_sym(base, name)

    # The attention written out (nn.MultiheadAttention's need_weights=True
    # path): bmm(q·c, kᵀ), softmax over the keys, bmm(p, v), over
    # [B·H, S, d]; the probabilities may also be returned, averaged over
    # the heads (mean) or not.
    def bmm(self, a, b, name):
        pa = a.terms[0].base if len(a.terms) == 1 else None
        if pa is not None and pa.kind == "probabilities":
            return self.attention_from_probabilities(a, b, name)
        if len(a.shape) != 3 or len(b.shape) != 3:
            _fail(f"node '{name}' (aten.bmm.default) multiplies values of "
                  "ranks other than 3")
        return _arange_sym(Base("scores", a.shape[:2] + b.shape[2:], name,
                                q=a, kt=b), name)

    def softmax(self, x, dim, name):
        t = x.terms[0] if len(x.terms) == 1 else None
        if t is None or t.base.kind != "scores" or \
                _dims(dim, len(x.shape)) != len(x.shape) - 1 or \
                not np.array_equal(t.idx, np.arange(t.base.size).reshape(
                    t.base.shape)) or (t.coef is not None and
                                       not np.all(t.coef == t.coef.flat[0])):
            _fail(f"node '{name}' (softmax) is not a softmax over the keys "
                  "of scores q·kᵀ (bmm) as they are")
        factor = 1.0 if t.coef is None else float(t.coef.flat[0])
        return _arange_sym(Base("probabilities", x.shape, name,
                                scores=t.base, factor=factor), name)

    def attention_from_probabilities(self, p, v, name):
        t = p.terms[0]
        probs = t.base
        if t.coef is not None or not np.array_equal(
                t.idx, np.arange(probs.size).reshape(probs.shape)):
            _fail(f"node '{name}' (aten.bmm.default) multiplies the "
                  "probabilities of an attention in another layout")
        scores = probs.scores
        q, kt = scores.q, scores.kt
        n, m, d = q.shape
        lk, dv = v.shape[1], v.shape[2]
        # Heads: the distinct column blocks of the query's projection its
        # rows read (the layout itself is checked with the layer's).
        pq = q.terms[0].base
        if len(q.terms) != 1 or pq.kind != "projection":
            _fail(f"node '{name}': the query of the written-out attention "
                  "is not the heads of a projection")
        heads = len(np.unique(q.terms[0].idx[:, 0, 0] % pq.shape[-1]))
        if n % heads:
            _fail(f"node '{name}': {n} rows of scores for {heads} heads")
        b = n // heads
        split = lambda shape: (lambda a: a.reshape(shape))
        k = kt.map(lambda a: np.swapaxes(a, -1, -2), name)
        q4 = q.map(split((b, heads, m, d)), q.node)
        k4 = k.map(split((b, heads, lk, d)), kt.node)
        v4 = v.map(split((b, heads, lk, dv)), v.node)
        # The factor on q (nn.MultiheadAttention scales it) and on the
        # scores set the scale; an explicit one, since mha's default is
        # 1/sqrt(d) only when nothing scales.
        attn = Base("attention", (b, heads, m, dv), name, q=q4, k=k4, v=v4,
                    mask=None, causal=False, scale=probs.factor, gqa=False,
                    probabilities=probs)
        return _arange_sym(attn, name).map(split((n, m, dv)), name)

    def mean(self, x, dims, keepdim, name):
        t = x.terms[0] if len(x.terms) == 1 else None
        if t is None or t.base.kind != "probabilities" or t.coef is not None:
            _fail(f"node '{name}' (aten.mean.dim) averages something other "
                  "than an attention's probabilities")
        return _arange_sym(Base("mean", np.mean(np.zeros(x.shape), axis=tuple(
            dims), keepdims=keepdim).shape, name, probabilities=t.base,
            view=t.idx, dims=tuple(_dims(d, len(x.shape)) for d in dims)),
            name)

    def attention(self, g, name):
        q, k, v = g["query"], g["key"], g["value"]
        for role, x in (("query", q), ("key", k), ("value", v)):
            if not isinstance(x, Sym):
                _fail(f"node '{name}': its {role} is a constant")
        if g.get("dropout_p", 0.0):
            _fail(f"node '{name}' has dropout_p = {g['dropout_p']}; "
                  "inference has none (export the module in eval mode)")
        if len(q.shape) != 4 or len(k.shape) != 4 or len(v.shape) != 4:
            _fail(f"node '{name}': scaled_dot_product_attention on rank "
                  f"{len(q.shape)} inputs; the importer takes [B, H, S, d]")
        shape = q.shape[:-1] + (v.shape[-1],)
        mask = g.get("attn_mask")
        return _arange_sym(Base(
            "attention", shape, name, q=q, k=k, v=v, mask=mask,
            causal=bool(g.get("is_causal", False)), scale=g.get("scale"),
            gqa=bool(g.get("enable_gqa", False))), name)


# ---------------------------------------------------------------------------
# Matching what reaches the attention against mha's layouts.

def _tokens(base, layout, b, s):
    """Flat row index of token (b, s) in an input [B, S, E] or [S, B, E]."""
    if layout == "bf":
        return b * base.shape[1] + s
    return s * base.shape[1] + b


def _heads(x, attn, role):
    """The projection, its token layout and column offset and the number of
    heads behind operand `x` [B, Hx, S, d] of attention `attn`, or a
    refusal. Returns dict(proj, layout, offset, heads, rotary)."""
    what = f"the {role} of '{attn.node}' (from node '{x.node}')"
    terms = x.terms
    if not terms:
        _fail(f"{what} is zero everywhere")
    if len({id(t.base) for t in terms}) != 1:
        _fail(f"{what} combines several tensors")
    proj = terms[0].base
    if proj.kind != "projection" or proj.source.kind != "input":
        _fail(f"{what} is not the heads of a projection (aten.linear) of an "
              "input")
    B, Hx, S, d = x.shape
    n = proj.shape[-1]
    src = proj.source
    if len(src.shape) != 3:
        _fail(f"{what} projects an input of rank {len(src.shape)}; the layer "
              "takes [B, S, E] or [S, B, E]")
    E = src.shape[2]
    # The projection's rows must be whole rows of its input.
    rows = proj.in_idx
    if not np.array_equal(rows, rows[:, :1] + np.arange(E)) or \
            np.any(rows[:, 0] % E):
        _fail(f"{what} projects the input '{src.name}' not row by row")
    xrow = rows[:, 0] // E
    bi = np.arange(B)[:, None, None, None]
    hi = np.arange(Hx)[None, :, None, None]
    si = np.arange(S)[None, None, :, None]
    ji = np.arange(d)[None, None, None, :]
    layouts = [l for l in ("bf", "sf")
               if src.shape[:2] == ((B, S) if l == "bf" else (S, B))]
    if not layouts:
        _fail(f"{what}: input '{src.name}' {list(src.shape)} is neither "
              f"[B, S, E] nor [S, B, E] for B = {B}, S = {S}")

    def tokens_match(t, layout):
        s = _support(t)
        tok = xrow[t.idx // n]
        want = np.broadcast_to(_tokens(src, layout, bi, si), tok.shape)
        return np.array_equal(tok[s], want[s])
    found = next((l for l in layouts
                  if all(tokens_match(t, l) for t in terms)), None)
    if found is None:
        _fail(f"{what}: its elements are not the tokens of '{src.name}' in "
              "order")

    def layout_of(t, s):
        return t.idx % n
    # The direct term: columns offset + (head / group) * d + j.
    direct = None
    for t in terms:
        s = _support(t)
        col = layout_of(t, s)
        for hk in range(1, Hx + 1):
            if Hx % hk:
                continue
            diff = (col - (hi // (Hx // hk)) * d - ji)[s]
            if diff.size and np.all(diff == diff[0]):
                direct = (t, (hk, int(diff[0])), col)
                break
        if direct is not None:
            break
    if direct is None:
        _fail(f"{what}: its elements are not heads of width {d} of the "
              f"projection '{proj.node}'")
    t, (hk, off), col = direct
    rotary = None
    others = [u for u in terms if u is not t]
    if others:
        if len(others) != 1:
            _fail(f"{what} is a sum of more than two terms")
        rotary = _rotary(t, others[0], off, hk, Hx, d, n, what)
    elif t.coef is not None:
        c = t.coef
        if not np.all(c == c.flat[0]):
            _fail(f"{what} is multiplied by a tensor that is not a rotary "
                  "embedding (no rotated term)")
    factor = 1.0 if t.coef is None or rotary else float(t.coef.flat[0])
    if off < 0 or off + hk * d > n:
        _fail(f"{what}: columns out of the projection")
    return dict(proj=proj, layout=found, offset=int(off), heads=hk,
                head_dim=d, factor=factor, rotary=rotary)


def _rotary(direct, rotated, off, hk, hx, d, n, what):
    """(cos [S, R/2], sin [S, R/2], interleaved) from the two terms of a
    rotated operand, or a refusal."""
    c1, c2 = _full_coef(direct), _full_coef(rotated)
    s2 = c2 != 0
    rcol = rotated.idx % n
    g_ = hx // hk
    hi = np.arange(hx)[None, :, None, None]
    j = np.broadcast_to(np.arange(d), rotated.idx.shape)
    jr = rcol - off - (hi // g_) * d
    used = np.any(s2, axis=(0, 1, 2))
    R = int(np.max(np.nonzero(used)[0])) + 1 if used.any() else 0
    if R < 2 or R % 2 or np.any(~used[:R]):
        _fail(f"{what} has a second term that is not a rotation of pairs")
    half = np.where(j < R // 2, j + R // 2, j - R // 2)
    inter = j ^ 1
    if np.array_equal(np.where(s2, jr, 0), np.where(s2, half, 0)):
        interleaved = False
    elif np.array_equal(np.where(s2, jr, 0), np.where(s2, inter, 0)):
        interleaved = True
    else:
        _fail(f"{what} has a second term that rotates neither halves "
              "(Llama, GPT-NeoX) nor adjacent pairs (GPT-J)")
    ct, st = c1[0, 0], c2[0, 0]  # [S, d]
    if not (np.array_equal(c1, np.broadcast_to(ct, c1.shape)) and
            np.array_equal(c2, np.broadcast_to(st, c2.shape))):
        _fail(f"{what}: its rotary factors differ between batches or heads "
              "(positions other than 0..S-1 are not supported)")
    if np.any(ct[:, R:] != 1):
        _fail(f"{what}: the channels past the rotated {R} are scaled")
    if interleaved:
        cos, cos2 = ct[:, 0:R:2], ct[:, 1:R:2]
        sin, msin = st[:, 1:R:2], -st[:, 0:R:2]
    else:
        cos, cos2 = ct[:, :R // 2], ct[:, R // 2:R]
        sin, msin = st[:, R // 2:R], -st[:, :R // 2]
    if not (np.allclose(cos, cos2, rtol=0, atol=1e-6) and
            np.allclose(sin, msin, rtol=0, atol=1e-6)):
        _fail(f"{what}: its factors are not cos and sin tables of a "
              "rotation (x·cos + rotate(x)·sin)")
    return cos, sin, interleaved


def _check_output(out, attn_base, program_out):
    """Checks that `out` is the output projection of the attention's heads
    merged, in the queries' token layout; returns (proj, layout)."""
    what = f"the output '{program_out}'"
    if len(out.terms) != 1 or out.terms[0].coef is not None and \
            not np.all(out.terms[0].coef == 1):
        _fail(f"{what} is not the output projection as it is (scaled or "
              "summed with something, e.g. a residual)")
    t = out.terms[0]
    proj = t.base
    if proj.kind != "projection" or proj.source is not attn_base:
        _fail(f"{what} is not a projection of the attention "
              f"'{attn_base.node}'")
    B, H, S, dv = attn_base.shape
    eo = proj.shape[-1]
    if len(out.shape) != 3 or out.shape[2] != eo:
        _fail(f"{what} has shape {list(out.shape)}, not [B, S, E] or "
              "[S, B, E]")
    idx = t.idx
    if not np.array_equal(idx, idx[..., :1] + np.arange(eo)) or \
            np.any(idx[..., 0] % eo):
        _fail(f"{what} is not whole rows of '{proj.node}'")
    prow = idx[..., 0] // eo  # [d0, d1]
    layouts = [l for l in ("bf", "sf")
               if out.shape[:2] == ((B, S) if l == "bf" else (S, B))]
    merged = np.arange(attn_base.size).reshape(B, H, S, dv).transpose(
        0, 2, 1, 3).reshape(B, S, H * dv)
    for layout in layouts:
        rows = prow if layout == "bf" else prow.T  # [B, S]
        if proj.in_idx.shape[1] != H * dv:
            break
        if np.array_equal(proj.in_idx[rows.reshape(-1)].reshape(
                B, S, H * dv), merged):
            return proj, layout
    _fail(f"{what}: the projection '{proj.node}' does not read the heads of "
          f"'{attn_base.node}' merged per token ([B, S, H·d])")


def _check_mask(mask, attn_name):
    """The input that is SDPA's attn_mask as it is, or None."""
    if mask is None:
        return None
    if not isinstance(mask, Sym):
        _fail(f"the attn_mask of '{attn_name}' is a constant; pass it as an "
              "input (or use is_causal)")
    if len(mask.terms) != 1:
        _fail(f"the attn_mask of '{attn_name}' (node '{mask.node}') is not "
              "an input as it is")
    t = mask.terms[0]
    base = t.base
    if base.kind != "input" or t.coef is not None \
            or t.idx.shape != base.shape or \
            not np.array_equal(t.idx, np.arange(base.size).reshape(
                base.shape)):
        _fail(f"the attn_mask of '{attn_name}' (node '{mask.node}') is not "
              "an input as it is")
    rank = len(base.shape)
    if rank < 2 or rank > 4:
        _fail(f"the attn_mask of '{attn_name}' has rank {rank}; 2 to 4 are "
              "taken")
    return base


def _rotary_tables_for_any_length(program, attn, symbol, tables):
    """The rotary tables of a program whose sequence length `symbol` is
    dynamic: the program interpreted again at the longest length it
    takes (its export's maximum, where the tables it slices end), the
    rotation read off there; its first rows must be those found at the
    representative length."""
    hi = program.ranges.get(symbol, (None, None))[1]
    if hi is None or hi > 1 << 20:
        _fail(f"'{attn.node}' has rotary embeddings and a sequence length "
              f"'{symbol}' without a maximum; export it with one "
              "(Dim(..., max=P), the tables' length)")
    again = _Interpreter(program, {symbol: hi})
    again.run()
    base = next((b for v in again.env.values() if isinstance(v, Sym)
                 for t in v.terms for b in [t.base]
                 if b.kind == "attention" and b.node == attn.node), None)
    if base is None:
        _fail(f"'{attn.node}' was not found at the sequence length {hi}")
    q = _heads(base.q, base, "query")["rotary"]
    k = _heads(base.k, base, "key")["rotary"]
    if q is None or k is None or q[2] != tables[2] or \
            not (np.array_equal(q[0], k[0]) and np.array_equal(q[1], k[1])):
        _fail(f"the rotary embeddings of '{attn.node}' differ at the "
              f"sequence length {hi}")
    s = tables[0].shape[0]
    if not (np.allclose(q[0][:s], tables[0], rtol=0, atol=1e-6) and
            np.allclose(q[1][:s], tables[1], rtol=0, atol=1e-6)):
        _fail(f"the rotary tables of '{attn.node}' at the sequence length "
              f"{hi} do not begin with those at {s}")
    return q


def _layer_mask(attn):
    """The layer's MaskInput for SDPA's attn_mask [B|1, H|1, Sq, Sk]: an
    input (bool or float), or a boolean input filled with -inf where true
    or where false (nn.MultiheadAttention's key padding mask), seen through
    any view that puts each of its dims on one of the four (or broadcasts
    it); None without a mask."""
    mask = attn.mask
    if mask is None:
        return None
    what = f"the attn_mask of '{attn.node}'"
    if isinstance(mask, Filled):
        base, idx = mask.base, mask.idx
        fill, other = np.unique(mask.fill), np.unique(mask.other)
        if (fill.tolist(), other.tolist()) == ([-np.inf], [0.0]):
            true_attends = False
        elif (fill.tolist(), other.tolist()) == ([0.0], [-np.inf]):
            true_attends = True
        else:
            _fail(f"{what} (node '{mask.node}') fills a boolean input with "
                  f"{fill.tolist()} and {other.tolist()}; -inf and 0 map")
        is_bool = True
    elif isinstance(mask, Sym):
        t = mask.terms[0] if len(mask.terms) == 1 else None
        if t is None or t.base.kind != "input" or t.coef is not None:
            _fail(f"{what} (node '{mask.node}') is not an input, or a "
                  "boolean input filled with -inf")
        base, idx = t.base, t.idx
        is_bool, true_attends = base.dtype == np.bool_, True
    else:
        _fail(f"{what} is a constant; pass it as an input (or use "
              "is_causal)")
    # Each operand dim of the view: broadcast (stride 0) or one input dim.
    op_shape = (1,) * (4 - idx.ndim) + idx.shape
    idx = idx.reshape(op_shape)
    strides = [int(np.prod(base.shape[k + 1:])) for k in range(
        len(base.shape))]
    letters = [None] * len(base.shape)
    expected = np.zeros(op_shape, np.int64) + idx.flat[0]
    for a in range(4):
        if op_shape[a] == 1:
            continue
        step = np.take(idx, 1, axis=a).flat[0] - idx.flat[0]
        if step == 0:
            continue
        k = next((k for k in range(len(strides)) if strides[k] == step and
                  base.shape[k] == op_shape[a] and letters[k] is None), None)
        if k is None:
            _fail(f"{what} (node '{mask.node}') reads its input "
                  f"'{base.name}' in a layout the importer does not map")
        letters[k] = "BHQK"[a]
        shape = [1] * 4
        shape[a] = op_shape[a]
        expected = expected + np.arange(op_shape[a]).reshape(shape) * step
    if idx.flat[0] != 0 or not np.array_equal(idx, expected) or \
            any(l is None and base.shape[k] != 1
                for k, l in enumerate(letters)):
        _fail(f"{what} (node '{mask.node}') reads its input '{base.name}' "
              "in a layout the importer does not map")
    free = [c for c in "BHQK" if c not in letters]
    letters = [l if l is not None else free.pop() for l in letters]
    return MaskInput(base.name, tuple(_static(base, i) for i in range(
        len(base.shape))), "".join(letters), is_bool,
        true_attends=true_attends)


def _static(base, i):
    s = base.sizes[i]
    return None if isinstance(s, str) else s


# ---------------------------------------------------------------------------
# Attention regions of a larger program (what the torch.compile backend
# replaces).

# Operations a region may hold between its inputs and the attention.
_DATA_OPS = set(_VIEWS) | set(_SPLITS) | {
    "aten.cat.default", "aten.stack.default", "aten.neg.default",
    "aten.mul.Tensor", "aten.mul.Scalar", "aten.div.Tensor",
    "aten.div.Scalar", "aten.add.Tensor", "aten.sub.Tensor",
    "aten._to_copy.default", "aten.to.dtype", "aten.type_as.default"}
_PROJECTIONS = ("aten.linear.default", "aten.matmul.default")
_SDPA = "aten.scaled_dot_product_attention.default"


def _tensor_names(arg):
    (kind, v), = arg.items()
    if kind == "as_tensor":
        return [v["name"]]
    if kind == "as_tensors":
        return [t["name"] for t in v]
    if kind == "as_optional_tensors":
        return [t["as_tensor"]["name"] for t in v if "as_tensor" in t]
    return []


def _node_inputs(node):
    return [t for a in node["inputs"] for t in _tensor_names(a["arg"])]


def _node_outputs(node):
    out = []
    for o in node["outputs"]:
        (kind, v), = o.items()
        if kind == "as_tensor":
            out.append(v["name"])
        elif kind == "as_tensors":
            out += [t["name"] for t in v]
        elif kind in ("as_sym_int", "as_sym_float", "as_sym_bool"):
            out.append(v["as_name"])
    return out


def _target(node):
    return node["target"].removeprefix("torch.ops.")


def _written_out(nodes, producer, node):
    """Whether bmm `node` multiplies a softmax of a bmm (an attention
    written out, as nn.MultiheadAttention's need_weights path does)."""
    p = producer.get(_node_inputs(node)[0])
    if p is None or _target(nodes[p]) not in ("aten.softmax.int",
                                               "aten._softmax.default"):
        return False
    q = producer.get(_node_inputs(nodes[p])[0])
    return q is not None and _target(nodes[q]) == "aten.bmm.default"


@dataclass
class Region:
    """One attention of a program and what maps with it: `program` (its
    nodes, taking as inputs the tensors of the program it reads, and
    returning `output`)."""
    program: Program
    output: str
    attention: str


def attention_regions(program):
    """Per attention of `program` (scaled_dot_product_attention, or
    bmm(softmax(bmm)) written out), the region around it
    that the importer may map: back through data operations to the
    projections (whose inputs become the region's inputs) or to anything
    else (an input then), forward through views to an output projection.
    A region none of whose intermediate values is used outside it."""
    nodes = program.nodes
    producer, users = {}, {}
    for i, n in enumerate(nodes):
        for t in _node_outputs(n):
            producer[t] = i
        for t in _node_inputs(n):
            users.setdefault(t, set()).add(i)
    constant = set(program.constants)
    for n in nodes:
        ins = _node_inputs(n)
        data = [t for t in ins if t not in constant]
        if not data and _target(n) not in (_SDPA,) and \
                not _target(n).startswith("aten.sym_size"):
            constant.update(_node_outputs(n))
    # Users that nothing returned depends on (nn.MultiheadAttention's
    # weights when the caller drops them) do not count.
    live, need = set(), list(program.outputs)
    while need:
        p = producer.get(need.pop())
        if p is not None and p not in live:
            live.add(p)
            need += _node_inputs(nodes[p])
    users = {t: {u for u in us if u in live} for t, us in users.items()}
    sym_nodes = [i for i, n in enumerate(nodes)
                 if any("as_sym_int" in o for o in n["outputs"])]
    regions = []
    for a, node in enumerate(nodes):
        if _target(node) == _SDPA:
            region, stack = {a}, list(_node_inputs(node))
        elif _target(node) == "aten.bmm.default" and \
                _written_out(nodes, producer, node):
            # bmm(softmax(bmm(q, kᵀ)), v): both products and the softmax.
            softmax = producer[_node_inputs(node)[0]]
            scores = producer[_node_inputs(nodes[softmax])[0]]
            region = {a, softmax, scores}
            stack = _node_inputs(node)[1:] + _node_inputs(nodes[scores])
        else:
            continue
        boundary = []
        while stack:
            t = stack.pop()
            if t in constant or t in boundary:
                continue
            p = producer.get(t)
            if p is None:  # a program input
                boundary.append(t)
                continue
            if p in region:
                continue
            pn = nodes[p]
            target = _target(pn)
            if target in _PROJECTIONS and all(
                    x in constant for x in _node_inputs(pn)[1:]):
                region.add(p)
                x = _node_inputs(pn)[0]
                # Back through views only the projections read (e.g.
                # nn.MultiheadAttention's batch-first input transposed).
                while producer.get(x) is not None and \
                        _target(nodes[producer[x]]) in _VIEWS and \
                        users.get(x, set()) <= region and x not in boundary:
                    region.add(producer[x])
                    x = _node_inputs(nodes[producer[x]])[0]
                if x not in constant and x not in boundary:
                    boundary.append(x)
            elif target in _DATA_OPS:
                region.add(p)
                stack += _node_inputs(pn)
            else:
                boundary.append(t)
        # Forward: views, then an output projection.
        out = cur = _node_outputs(node)[0]
        chain = []
        while len(users.get(cur, ())) == 1:
            u = next(iter(users[cur]))
            un = nodes[u]
            target = _target(un)
            if target in _VIEWS and _node_inputs(un)[0] == cur:
                chain.append(u)
                cur = _node_outputs(un)[0]
                continue
            if target in _PROJECTIONS and _node_inputs(un)[0] == cur and \
                    all(x in constant for x in _node_inputs(un)[1:]):
                chain.append(u)
                cur = _node_outputs(un)[0]
                # And the views after it (nn.MultiheadAttention's back to
                # [S, B, E] and batch first).
                while len(users.get(cur, ())) == 1:
                    un = nodes[next(iter(users[cur]))]
                    if _target(un) not in _VIEWS or \
                            _node_inputs(un)[0] != cur:
                        break
                    chain.append(next(iter(users[cur])))
                    cur = _node_outputs(un)[0]
                region.update(chain)
                out = cur
            break
        # Nothing computed from the data in the region may be used outside.
        closed = True
        for i in region:
            for t in _node_outputs(nodes[i]):
                if t != out and t not in constant and \
                        not users.get(t, set()) <= region:
                    closed = False
        if not closed:
            continue
        # The constants' nodes and the sizes the region reads.
        keep = set(region)
        need = [t for i in region for t in _node_inputs(nodes[i])]
        while need:
            t = need.pop()
            p = producer.get(t)
            if p is not None and p not in keep and t in constant:
                keep.add(p)
                need += _node_inputs(nodes[p])
        keep.update(sym_nodes)
        sub_nodes = [nodes[i] for i in sorted(keep)]
        known = set(boundary) | constant | {
            t for n in sub_nodes for t in _node_outputs(n)}
        if any(t not in known for n in sub_nodes for t in _node_inputs(n)):
            sub_nodes = [n for n in sub_nodes
                         if all(t in known for t in _node_inputs(n))]
        inputs = [_input(t, program.tensor_values[t]) for t in boundary]
        sub = Program(sub_nodes, inputs, [out], program.constants,
                      program.ranges,
                      program.tensor_values)
        regions.append(Region(sub, out, node["name"]))
    return regions


def import_program(source, out_dir, name="main", inputs=None):
    """Imports an ExportedProgram, or torch.export.save's archive, into
    OUT_DIR/NAME.mlir (+ NAME.weights/, NAME.rsp). `inputs`: arrays by the
    program's input names to save with the weights (NAME.rsp then names
    them). Returns (path of NAME.mlir, the program's input names in the
    function's argument order)."""
    program = source if isinstance(source, Program) else load(source)
    interp = _Interpreter(program)
    outs = interp.run()
    weights = outs[1] if len(outs) == 2 else None
    if not 1 <= len(outs) <= 2 or not isinstance(outs[0], Sym) or \
            (weights is not None and not _is_weights(weights)):
        _fail(f"the program has {len(outs)} outputs "
              f"({', '.join(program.outputs)}); the importer takes the "
              "attention's, and its probabilities (nn.MultiheadAttention's "
              "need_weights) as a second")
    out = outs[0]
    bases = {id(t.base): t.base for t in out.terms}
    if len(bases) != 1 or len(out.terms) != 1:
        _fail(f"the output '{program.outputs[0]}' is not one attention's "
              "output or its projection as it is (it sums several values, "
              "e.g. a residual)")
    attn = None
    for b in bases.values():
        attn = b if b.kind == "attention" else \
            b.source if b.kind == "projection" and \
            b.source.kind == "attention" else None
    if attn is None:
        _fail(f"the output '{program.outputs[0]}' is not computed by "
              "scaled_dot_product_attention")
    if bases and next(iter(bases.values())).kind == "attention":
        if weights is not None:
            _fail("the attention's probabilities are an output of a program "
                  "without projections; the importer returns them from the "
                  "layer only")
        return _import_core(program, interp, out, attn, out_dir, name, inputs)
    return _import_layer(program, interp, out, attn, out_dir, name, inputs,
                         probabilities=weights)


def _is_weights(x):
    return isinstance(x, Sym) and len(x.terms) == 1 and \
        x.terms[0].base.kind in ("mean", "probabilities")


def _weights_form(weights, attn, program_out):
    """'average' or 'per_head' for a program output `weights` that is the
    probabilities of `attn` ([B, Sq, Sk] averaged over the heads, or
    [B, H, Sq, Sk]), or a refusal."""
    what = f"the output '{program_out}'"
    probs = getattr(attn, "probabilities", None)
    B, H, Sq, _ = attn.shape
    t = weights.terms[0]
    base = t.base
    p = base.probabilities if base.kind == "mean" else base
    if p is not probs or t.coef is not None:
        _fail(f"{what} is not the probabilities of '{attn.node}' as they are")
    Sk = probs.shape[-1]
    per_head = np.arange(probs.size).reshape(B, H, Sq, Sk)
    if base.kind == "probabilities":
        if np.array_equal(t.idx, per_head):
            return "per_head"
    elif base.dims == (1,) and np.array_equal(base.view, per_head) and \
            np.array_equal(t.idx, np.arange(base.size).reshape(
                base.shape)) and tuple(base.shape) in ((B, Sq, Sk),):
        return "average"
    _fail(f"{what} is neither the probabilities per head [B, H, Sq, Sk] nor "
          "their mean over the heads [B, Sq, Sk]")


def _import_layer(program, interp, out, attn, out_dir, name, inputs,
                  probabilities=None):
    proj_o, layout = _check_output(out, attn, program.outputs[0])
    q = _heads(attn.q, attn, "query")
    k = _heads(attn.k, attn, "key")
    v = _heads(attn.v, attn, "value")
    B, H, Sq, d = attn.q.shape
    dv = attn.v.shape[-1]
    if q["heads"] != H:
        _fail(f"the query of '{attn.node}' repeats heads")
    hkv = k["heads"]
    if v["heads"] != hkv:
        _fail(f"the key and value of '{attn.node}' have {hkv} and "
              f"{v['heads']} heads")
    for name_, x in (("query", q), ("key", k), ("value", v)):
        if x["layout"] != layout:
            _fail(f"the {name_} of '{attn.node}' and the output are in "
                  "different layouts ([B, S, E] and [S, B, E])")
    if v["rotary"] is not None:
        _fail(f"the value of '{attn.node}' is rotated")
    if (q["rotary"] is None) != (k["rotary"] is None):
        _fail(f"only one of the query and key of '{attn.node}' is rotated")
    rotary = None
    if q["rotary"] is not None:
        (cq, sq, iq), (ck, sk, ik) = q["rotary"], k["rotary"]
        if iq != ik or not (np.array_equal(cq, ck) and
                            np.array_equal(sq, sk)):
            _fail(f"the query and key of '{attn.node}' are rotated by "
                  "different tables")
        rotary = (cq, sq, iq)

    def weights(x, heads, width):
        p = x["proj"]
        cols = slice(x["offset"], x["offset"] + heads * width)
        w = p.weight[cols].T.copy()
        b = None if p.bias is None else np.asarray(p.bias)[cols].copy()
        return w, b
    wq, bq = weights(q, H, d)
    wk, bk = weights(k, hkv, d)
    wv, bv = weights(v, hkv, dv)
    wo = proj_o.weight.T.copy()
    bo = None if proj_o.bias is None else np.asarray(proj_o.bias).copy()
    dtype = wq.dtype
    srcs = [q["proj"].source, k["proj"].source, v["proj"].source]
    for s in srcs:
        if s.dtype != dtype:
            _fail(f"input '{s.name}' is {np.dtype(s.dtype).name} and the "
                  f"weights {dtype.name}")
    scale = attn.scale if attn.scale is not None else 1 / math.sqrt(d)
    scale *= q["factor"] * k["factor"]
    if v["factor"] != 1:
        _fail(f"the value of '{attn.node}' is scaled")
    layer = Layer(num_heads=H, num_kv_heads=hkv, w_q=wq, w_k=wk, w_v=wv,
                  w_o=wo, b_q=bq, b_k=bk, b_v=bv, b_o=bo,
                  scale=None if attn.scale is None and
                  q["factor"] * k["factor"] == 1 else scale,
                  causal=attn.causal)
    if attn.causal and Sq != attn.k.shape[2]:
        # SDPA's is_causal is top-left; mha's diagonal is bottom-right.
        _fail(f"'{attn.node}' is causal with {Sq} queries and "
              f"{attn.k.shape[2]} keys: PyTorch aligns the diagonal top-left,"
              " mha bottom-right; only equal lengths map")
    if probabilities is not None:
        layer.return_weights = _weights_form(probabilities, attn,
                                             program.outputs[1])
    seq_dim = 1 if layout == "bf" else 0
    batch_dim = 1 - seq_dim
    layer.seq_first = layout == "sf"
    layer.batch = _static(srcs[0], batch_dim)
    layer.q_len = _static(srcs[0], seq_dim)
    layer.kv_len = _static(srcs[1], seq_dim)
    layer.self_attention = srcs[0] is srcs[1] is srcs[2]
    layer.kv_shared = not layer.self_attention and srcs[1] is srcs[2]
    if not layer.self_attention and not layer.kv_shared and \
            srcs[0] in (srcs[1], srcs[2]):
        _fail(f"the query of '{attn.node}' shares its input with only one "
              "of key and value")
    names = {"query": srcs[0].name}
    if not layer.self_attention:
        names["key"] = srcs[1].name
        if not layer.kv_shared:
            names["value"] = srcs[2].name
    mask = _layer_mask(attn)
    if mask is not None:
        layer.masks.append(mask)
        names[mask.name] = mask.name
    if rotary is not None:
        if layer.q_len is None:
            rotary = _rotary_tables_for_any_length(
                program, attn, srcs[0].sizes[seq_dim], rotary)
        layer.rotary = rotary
    arrays = None
    if inputs is not None:
        arrays = {k_: inputs[v_] for k_, v_ in names.items() if v_ in inputs}
    path = write(layer, out_dir, name, arrays)
    return path, list(names.values())


def _import_core(program, interp, out, attn, out_dir, name, inputs):
    what = f"the output '{program.outputs[0]}'"
    t = out.terms[0]
    if t.coef is not None or \
            t.idx.shape != attn.shape or \
            not np.array_equal(t.idx, np.arange(attn.size).reshape(
                attn.shape)):
        _fail(f"{what} is not the output of '{attn.node}' as it is "
              "([B, H, S, d])")
    args = []
    for role in ("query", "key", "value"):
        x = getattr(attn, role[0])
        u = x.terms[0] if len(x.terms) == 1 else None
        if u is None or u.base.kind != "input" or \
                u.idx.shape != u.base.shape or \
                not np.array_equal(u.idx, np.arange(u.base.size).reshape(
                    u.base.shape)):
            _fail(f"the {role} of '{attn.node}' (node '{x.node}') is not an "
                  "input as it is; the importer maps SDPA on inputs "
                  "[B, H, S, d], or the whole layer")
        if u.coef is not None:
            _fail(f"the {role} of '{attn.node}' is scaled")
        args.append(u.base)
    if attn.causal and attn.q.shape[2] != attn.k.shape[2]:
        _fail(f"'{attn.node}' is causal with {attn.q.shape[2]} queries and "
              f"{attn.k.shape[2]} keys: PyTorch aligns the diagonal top-left,"
              " mha bottom-right; only equal lengths map")
    hq, hk = attn.q.shape[1], attn.k.shape[1]
    if hk != hq and not attn.gqa:
        _fail(f"'{attn.node}' has {hq} query and {hk} key heads without "
              "enable_gqa")
    mbase = _check_mask(attn.mask, attn.node)
    if mbase is not None:
        args.append(mbase)
    dtype = args[0].dtype
    elt = {np.float32: "f32", np.float16: "f16"}.get(dtype)
    if elt is None:
        _fail(f"the query of '{attn.node}' is "
              f"{np.dtype(dtype).name}; f32 and f16 are taken")
    ts = []
    for a in args:
        e = "i1" if a.dtype == np.bool_ else elt
        ts.append(tensor_type([_static(a, i) for i in range(len(a.shape))],
                              e))
    params, seen = [], []
    for a, ty in zip(args, ts):
        if a.name not in seen:
            params.append(f"%{a.name}: {ty}")
            seen.append(a.name)
    lines = []
    qb = args[0]
    out_shape = [_static(qb, 0), _static(qb, 1), _static(qb, 2),
                 _static(args[2], 3)]
    dyn = []
    for i, s in enumerate(out_shape):
        if s is None:
            src, dim = (args[2], 3) if i == 3 else (qb, i)
            lines.append(f"    %c{i} = arith.constant {dim} : index")
            lines.append(f"    %d{i} = tensor.dim %{src.name}, %c{i} : "
                         f"{ts[args.index(src)]}")
            dyn.append(f"%d{i}")
    out_t = tensor_type(out_shape, elt)
    lines.append(f"    %init = tensor.empty({', '.join(dyn)}) : {out_t}")
    attrs = []
    if attn.causal:
        attrs.append("causal")
    if attn.scale is not None:
        attrs.append(f"scale = {float(attn.scale):.9e} : f32")
    text = (f"    %out = mha.attention ins(%{args[0].name}, %{args[1].name}, "
            f"%{args[2].name} : {ts[0]}, {ts[1]}, {ts[2]})")
    if mbase is not None:
        text += f" mask(%{mbase.name} : {ts[3]})"
    text += f" outs(%init : {out_t})"
    if attrs:
        text += f" {{{', '.join(attrs)}}}"
    text += f" -> {out_t}"
    lines.append(text)
    arrays = []
    if inputs is not None:
        arrays = [(n, inputs[n]) for n in seen if n in inputs]
    path = write_function(out_dir, name, "arguments in order in "
                          f"{name}.rsp", params, lines, [("%out", out_t)],
                          arrays)
    return path, seen


def main(argv=None):
    """python3 -m mha_importers.torch_export PROGRAM.pt2 -o DIR"""
    import argparse
    p = argparse.ArgumentParser(
        prog="python3 -m mha_importers.torch_export",
        description="Import the attention of a torch.export archive "
                    "(torch.export.save) into DIR/NAME.mlir, "
                    "DIR/NAME.weights/ and DIR/NAME.rsp. Needs no PyTorch.")
    p.add_argument("program", help="the .pt2 archive torch.export.save wrote")
    p.add_argument("-o", "--output", required=True, help="output directory")
    p.add_argument("--name", default="main", help="entry function name")
    p.add_argument("--attention-only", action="store_true",
                   help="import the attention of a larger program (what "
                   "the torch.compile backend replaces): the region around "
                   "its one scaled_dot_product_attention, from the "
                   "projections' inputs to the output projection")
    args = p.parse_args(argv)
    try:
        program = load(args.program)
        if args.attention_only:
            regions = attention_regions(program)
            if len(regions) != 1:
                _fail(f"the program has {len(regions)} attention regions "
                      "that can be replaced; --attention-only takes one")
            program = regions[0].program
        path, names = import_program(program, args.output, args.name)
    except UnsupportedProgram as e:
        p.exit(1, f"error: {e}\n")
    print(path)
    print("arguments: " + ", ".join(names))
    if args.attention_only:
        print(f"result: {program.outputs[0]}")


if __name__ == "__main__":
    main()
