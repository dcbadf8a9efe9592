"""A torch.compile backend that runs a graph's attention through MHA-MLIR.

    from mha_importers.torch_compile import mha_backend
    compiled = torch.compile(model, backend=mha_backend)
    compiled = torch.compile(model, backend=make_backend(pipeline="cpu"))

Per graph Dynamo hands it: the graph is exported (`torch.export`, with the
module's parameters and buffers as constants), each attention region is
found and imported as mha_importers.torch_export does
(`attention_regions`: from the projections' inputs to the output
projection), compiled by `mha-aot` into a shared object loaded into the
process with ctypes, and replaces its nodes in the exported graph; the
rest (norms, residuals, MLPs, ...) runs as PyTorch runs it. A region the
importer cannot map stays PyTorch's, with a warning that says why.

- Inference only: a call with gradients enabled on a graph whose
  attention was replaced stops with an error, and so does a call after
  one of the region's parameters changed (the weights are prepared once,
  `NAME_prepare`): call `torch._dynamo.reset()` and compile again.
- Static shapes: a graph Dynamo traces with dynamic sizes
  (`torch.compile(dynamic=True)`, or after a recompilation) runs as
  PyTorch runs it, with a warning.
- `mha-aot` is `$MHA_AOT`, else found on `PATH`. The objects go into a
  new directory per graph, under `$MHA_TORCH_COMPILE_DIR` if set, else the
  system's temporary directory, left in place (the process has them
  loaded). The compiled code's threads are libomp's (`OMP_NUM_THREADS`;
  `KMP_BLOCKTIME` defaults to 0 so that they leave the cores to PyTorch's
  threads between calls).
- A parameter changed through `.data` keeps its version counter, so the
  check above does not see it.
"""
import ctypes
import os
import shutil
import subprocess
import tempfile
import warnings

import numpy as np
import torch

from . import torch_export as te


def _placeholder_is_constant(node, example):
    """Whether a Dynamo graph input is a parameter or buffer of the
    module (constant while the compiled graph is used)."""
    if isinstance(example, torch.nn.Parameter):
        return True
    arg = node.meta.get("grapharg")
    source = getattr(arg, "source", None)
    name = getattr(source, "name", "")
    name = name() if callable(name) else name
    return "_buffers" in str(name) or "_parameters" in str(name)


class _ArrayInfo(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_char_p), ("rank", ctypes.c_int64),
                ("shape", ctypes.POINTER(ctypes.c_int64))]


class _Signature(ctypes.Structure):
    _fields_ = [("entry", ctypes.c_char_p),
                ("num_inputs", ctypes.c_int64),
                ("inputs", ctypes.POINTER(_ArrayInfo)),
                ("num_outputs", ctypes.c_int64),
                ("outputs", ctypes.POINTER(_ArrayInfo))]


_TORCH_DTYPES = {b"<f4": torch.float32, b"<f2": torch.float16,
                 b"|b1": torch.bool, b"<i4": torch.int32,
                 b"<i8": torch.int64}


def _arrays(infos, count):
    return [(infos[i].dtype, [infos[i].shape[d] for d in
                              range(infos[i].rank)]) for i in range(count)]


class CompiledAttention:
    """One region compiled by mha-aot: called with the region's input
    tensors (and the parameters it was prepared from, to check them)."""

    def __init__(self, library_path, name, constants, weights, params):
        _quiet_threads()
        self.lib = ctypes.CDLL(library_path)
        self.name = self.__name__ = name
        sig = _Signature.in_dll(self.lib, f"{name}_signature")
        self.inputs = _arrays(sig.inputs, sig.num_inputs)
        self.outputs = _arrays(sig.outputs, sig.num_outputs)
        self.constants = [np.ascontiguousarray(c) for c in constants]
        self.params = [(p, p._version, p.data_ptr()) for p in params]
        self.entry = getattr(self.lib, name)
        self.entry.restype = ctypes.c_int
        self.prepared = None
        self.weights = [np.ascontiguousarray(w) for w in weights]
        if weights and hasattr(self.lib, f"{name}_prepare"):
            prepare = getattr(self.lib, f"{name}_prepare")
            prepare.restype = ctypes.c_int
            handle = ctypes.c_void_p()
            if prepare(*[ctypes.c_void_p(w.ctypes.data)
                         for w in self.weights], ctypes.byref(handle)):
                raise RuntimeError(f"{name}_prepare refused the weights")
            self.prepared = handle
            self.entry = getattr(self.lib, f"{name}_prepared")
            self.entry.restype = ctypes.c_int
            release = getattr(self.lib, f"{name}_release")
            release.argtypes = [ctypes.c_void_p]
            self._release = release

    def __del__(self):
        if getattr(self, "prepared", None) is not None:
            self._release(self.prepared)

    def __call__(self, *tensors):
        runtime = tensors[:len(tensors) - len(self.params)]
        for p, version, ptr in self.params:
            if p._version != version or p.data_ptr() != ptr:
                raise RuntimeError(
                    "mha_backend: a parameter of a compiled attention "
                    "changed after compilation; its weights were prepared "
                    "once: call torch._dynamo.reset() and compile again")
        if torch.is_grad_enabled() and any(t.requires_grad
                                           for t in tensors):
            raise RuntimeError(
                "mha_backend compiles attention for inference: run under "
                "torch.no_grad() or torch.inference_mode()")
        args, keep = [], []
        arrays = list(runtime) + self.constants
        if self.prepared is None:
            arrays += self.weights
        infos = self.inputs if self.prepared is None else \
            [i for i in self.inputs[:len(runtime) + len(self.constants)]]
        for a, (dtype, shape) in zip(arrays, infos):
            if isinstance(a, torch.Tensor):
                want = _TORCH_DTYPES[dtype]
                a = a.detach().to(want).contiguous()
                keep.append(a)
                args.append(ctypes.c_void_p(a.data_ptr()))
                sizes = list(a.shape)
            else:
                args.append(ctypes.c_void_p(a.ctypes.data))
                sizes = list(a.shape)
            args += [ctypes.c_int64(s) for d, s in zip(shape, sizes)
                     if d < 0]
        (dtype, shape), = self.outputs
        out_shape = [s if s >= 0 else None for s in shape]
        if None in out_shape:
            raise RuntimeError("mha_backend: a dynamic result shape")
        out = torch.empty(out_shape, dtype=_TORCH_DTYPES[dtype])
        args.append(ctypes.c_void_p(out.data_ptr()))
        head = [self.prepared] if self.prepared is not None else []
        rc = self.entry(*head, *args)
        if rc:
            raise RuntimeError(f"{self.name} returned {rc} (a shape the "
                               "compiled attention does not take)")
        return out


def _quiet_threads():
    """libomp's threads spin 200 ms after each parallel loop by default,
    on the cores PyTorch's own threads need next (its MLPs, norms):
    unless the user set it, they sleep at once. Read when libomp starts,
    i.e. before the first compiled attention is loaded."""
    os.environ.setdefault("KMP_BLOCKTIME", "0")


def _mha_aot():
    path = os.environ.get("MHA_AOT") or shutil.which("mha-aot")
    if not path:
        raise RuntimeError("mha_backend needs mha-aot: set $MHA_AOT or put "
                           "it on PATH")
    return path


def _compile_region(region, workdir, index, pipeline):
    """Imports and compiles one region; returns (CompiledAttention args
    except params: library, name, constants, weights)."""
    name = f"attention{index}"
    out = os.path.join(workdir, name)
    path, arg_names = te.import_program(region.program, out, name)
    # NAME.rsp lists the constants and the weights after the runtime
    # arguments (none saved): their arrays, in the function's order.
    with open(os.path.join(out, f"{name}.rsp")) as f:
        files = [line.split("@", 1)[1].strip() for line in f
                 if line.startswith("--input=@")]
    arrays = [np.load(f) for f in files]
    with open(path) as f:
        signature = next(line for line in f if line.startswith("func.func"))
    num_weights = signature.count("{mha.weight}")
    constants = arrays[:len(arrays) - num_weights]
    weights = arrays[len(arrays) - num_weights:]
    prefix = os.path.join(out, name)
    result = subprocess.run(
        [_mha_aot(), path, f"--pipeline={pipeline}", "-o", prefix,
         "--name", name, f"--entry={name}"], capture_output=True, text=True)
    if result.returncode:
        raise te.UnsupportedProgram(
            f"mha-aot failed on the attention region of "
            f"'{region.attention}':\n{result.stderr}")
    return prefix + ".so", name, constants, weights, arg_names


def make_backend(pipeline="cpu"):
    """A torch.compile backend compiling attention with `pipeline`."""
    def backend(gm, example_inputs):
        return _compile(gm, example_inputs, pipeline)
    return backend


def mha_backend(gm, example_inputs):
    """torch.compile(model, backend=mha_backend): the cpu pipeline."""
    return _compile(gm, example_inputs, "cpu")


def _compile(gm, example_inputs, pipeline):
    try:
        return _replace_attention(gm, example_inputs, pipeline)
    except te.UnsupportedProgram as e:
        warnings.warn(f"mha_backend: the graph runs as PyTorch runs it: {e}")
        return gm.forward


def _replace_attention(gm, example_inputs, pipeline):
    if any(not isinstance(t, torch.Tensor) for t in example_inputs):
        warnings.warn("mha_backend: the graph has dynamic sizes; it runs as "
                      "PyTorch runs it (compile with dynamic=False)")
        return gm.forward
    if any(t.device.type != "cpu" for t in example_inputs):
        warnings.warn("mha_backend: the graph's tensors are not on the CPU; "
                      "it runs as PyTorch runs it (the backend compiles for "
                      "the CPU)")
        return gm.forward
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    constant_pos = [i for i, (n, t) in
                    enumerate(zip(placeholders, example_inputs))
                    if _placeholder_is_constant(n, t)]
    try:
        with torch.no_grad():
            ep = torch.export.export(gm, tuple(example_inputs), strict=False)
    except Exception as e:  # noqa: BLE001 - any failure: PyTorch runs it
        raise te.UnsupportedProgram(f"torch.export failed: {e}") from e
    program = te.load(ep)
    names = [n for n, _, _ in program.inputs]
    for i in constant_pos:
        t = example_inputs[i]
        if t.dtype == torch.bfloat16:
            continue  # stays an input: its regions are refused
        program.constants[names[i]] = t.detach().cpu().numpy()
    program.inputs = [x for i, x in enumerate(program.inputs)
                      if names[i] not in program.constants]
    regions = te.attention_regions(program)
    if not regions:
        return gm.forward
    module = ep.module()
    graph = module.graph
    by_name = {n.name: n for n in graph.nodes}
    placeholder_nodes = [n for n in graph.nodes if n.op == "placeholder"]
    # A directory per graph: a shared object's path is loaded once per
    # process, so no two graphs may write the same one.
    base = os.environ.get("MHA_TORCH_COMPILE_DIR")
    if base:
        os.makedirs(base, exist_ok=True)
    workdir = tempfile.mkdtemp(prefix="graph_" if base else "mha_backend_",
                               dir=base)
    replaced = 0
    for index, region in enumerate(regions):
        try:
            lib, name, constants, weights, arg_names = _compile_region(
                region, workdir, index, pipeline)
        except te.UnsupportedProgram as e:
            warnings.warn(f"mha_backend: the attention '{region.attention}' "
                          f"runs as PyTorch runs it: {e}")
            continue
        # The parameters the region reads, to check them per call.
        used = set()
        for n in region.program.nodes:
            used.update(te._node_inputs(n))
        params = [(placeholder_nodes[i], example_inputs[i])
                  for i in constant_pos if names[i] in used]
        call = CompiledAttention(lib, name, constants, weights,
                                 [t for _, t in params])
        output = by_name[region.output]
        with graph.inserting_after(output):
            new = graph.call_function(
                call, tuple(by_name[a] for a in arg_names) +
                tuple(n for n, _ in params))
        output.replace_all_uses_with(new)
        replaced += 1
    if not replaced:
        return gm.forward
    graph.eliminate_dead_code()
    graph.lint()
    module.recompile()
    return module
