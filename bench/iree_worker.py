"""bench/iree_worker.py - the IREE peer of bench/peers.py.

IREE from PyPI (the pinned `iree-base-compiler` and `iree-base-runtime` of
bench/requirements-bench.txt, in the environment bench/run.sh makes): an
MLIR compiler with its own attention op, tiling and CPU code generation,
the closest peer of this project. A persistent worker: it compiles each
form of one layer (an .onnx file onnx_models.py wrote, imported with
`iree-import-onnx`, or the torch-dialect .mlir torch_ir.py wrote) with
`iree-compile` for `llvm-cpu` with the host's CPU features, loads it on the `local-task` device with T worker
threads, warms it up, then times calls when peers.py asks. Compile time is
reported, never timed.

    iree_worker.py '{"threads": T, "models": {"primitives": "p.onnx",
                                              "sdpa": "s.mlir"},
                     "inputs": {"x": [B, S, E], ...}, "warmup": 2,
                     "workdir": DIR}'

Protocol, one JSON object per line, as ort_worker.py: first
    {"ready": true, "version": "3.x", "forms": {"primitives": "ok"},
     "compile_s": {"primitives": 1.2}}
then {"cmd": "run", "form": F, "n": N} -> {"ms": [...]}, {"cmd": "quit"}.
A form that could not be imported, compiled or run reports its error once
in "forms" and is never timed.
"""
import json
import os
import subprocess
import sys
import time

import numpy as np

from worker_loop import reply, serve


def compile_form(path, workdir, form):
    """The .vmfb of the model at `path` (an ONNX model, or torch-dialect
    MLIR with a function @main), and its function's name."""
    bin_dir = os.path.dirname(sys.executable)
    stem, ext = os.path.splitext(os.path.join(workdir, os.path.basename(path)))
    vmfb = stem + ".vmfb"
    commands, mlir, name = [], path, "main"
    if ext == ".onnx":
        import onnx
        mlir = stem + ".iree.mlir"
        commands.append([os.path.join(bin_dir, "iree-import-onnx"), path,
                         "-o", mlir])
        name = onnx.load(path, load_external_data=False).graph.name
    commands.append([os.path.join(bin_dir, "iree-compile"), mlir,
                     "--iree-input-type=" + ("onnx" if ext == ".onnx"
                                             else "torch"),
                     "--iree-hal-target-device=local",
                     "--iree-hal-local-target-device-backends=llvm-cpu",
                     "--iree-llvmcpu-target-cpu=host", "-o", vmfb])
    for cmd in commands:
        p = subprocess.run(cmd, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        if p.returncode != 0:
            lines = [l for l in p.stdout.splitlines() if "error" in l]
            raise RuntimeError(f"{os.path.basename(cmd[0])}: " +
                               (lines[0] if lines else p.stdout[-300:]))
    return vmfb, name


def main():
    spec = json.loads(sys.argv[1])
    import iree.runtime as rt
    # T workers, whatever the topology heuristic would pick (one group per
    # physical core: one thread where the two CPUs are SMT siblings).
    rt.flags.parse_flags(f"--task_topology_group_count={spec['threads']}")
    config = rt.Config("local-task")
    rng = np.random.default_rng(0)
    feeds = [rng.uniform(-1, 1, shape).astype(np.float32)
             for shape in spec["inputs"].values()]
    calls, forms, compile_s = {}, {}, {}
    for form, path in spec["models"].items():
        try:
            start = time.perf_counter()
            vmfb, name = compile_form(path, spec["workdir"], form)
            compile_s[form] = round(time.perf_counter() - start, 2)
            context = rt.SystemContext(config=config)
            with open(vmfb, "rb") as f:
                context.add_vm_module(
                    rt.VmModule.copy_buffer(config.vm_instance, f.read()))
            function = context.modules.module[name]
            # Inputs on the device once, as the other peers' stay put; the
            # result read back, as ONNX Runtime returns it.
            args = [rt.asdevicearray(config.device, x) for x in feeds]
            call = lambda f=function, a=args: f(*a).to_host()
            for _ in range(spec.get("warmup", 2)):
                call()
            calls[form] = call
            forms[form] = "ok"
        except Exception as e:  # any failure is this form's, reported
            forms[form] = str(e).strip().splitlines()[0]
    from importlib.metadata import version
    reply({"ready": True, "version": version("iree-base-runtime"),
           "forms": forms, "compile_s": compile_s})
    serve(calls)

if __name__ == "__main__":
    main()
