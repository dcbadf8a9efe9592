"""mha-run as an ONNX backend (onnx.backend.base): a model is imported with
mha_importers.onnx_mha and each run JIT-compiles and calls it with mha-run
on .npy files.

    rep = MhaBackend.prepare(model, mha_run="build/bin/mha-run")
    outputs = rep.run([q, k, v])

`pipeline` picks mha-run's --pipeline (cpu, loops, vulkan, cuda). A model
the importer refuses raises onnx_mha.ImportError_ with its message.
"""
import os
import subprocess
import tempfile

import numpy as np
import onnx
from onnx.backend.base import Backend, BackendRep

from .onnx_mha import import_model


def _from_npy(arr, elem_type):
    """A result as ONNX types it: bfloat16 comes back as its uint16 bits."""
    if elem_type == onnx.TensorProto.BFLOAT16:
        import ml_dtypes
        return arr.view(ml_dtypes.bfloat16)
    return arr


class MhaRep(BackendRep):
    def __init__(self, model, mha_run, pipeline, workdir):
        self.model, self.mha_run, self.pipeline = model, mha_run, pipeline
        self.workdir = workdir
        self.runs = 0
        # Imported once without data: a refusal is the prepare's error.
        import_model(model, os.path.join(workdir, "prepared"))

    def run(self, inputs, **kwargs):
        g = self.model.graph
        inits = {t.name for t in g.initializer}
        names = [i.name for i in g.input if i.name not in inits]
        if isinstance(inputs, dict):
            data = dict(inputs)
        else:
            data = dict(zip(names, inputs))
        out_dir = os.path.join(self.workdir, f"run{self.runs}")
        self.runs += 1
        mlir = import_model(self.model, out_dir, "main", data)
        outputs = [os.path.join(out_dir, f"output{i}.npy")
                   for i in range(len(g.output))]
        cmd = [self.mha_run, mlir, "@" + os.path.join(out_dir, "main.rsp"),
               f"--pipeline={self.pipeline}"] + \
            [f"--output=@{p}" for p in outputs]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode:
            # A run-time check's message (cf.assert) is on stdout, before
            # the crash report on stderr.
            raise RuntimeError(f"mha-run failed ({r.returncode}): "
                               f"{(r.stdout + r.stderr).strip()}")
        return [_from_npy(np.load(p), o.type.tensor_type.elem_type)
                for p, o in zip(outputs, g.output)]


class MhaBackend(Backend):
    @classmethod
    def prepare(cls, model, device="CPU", mha_run="mha-run", pipeline="cpu",
                workdir=None, **kwargs):
        super().prepare(model, device, **kwargs)
        workdir = workdir or tempfile.mkdtemp(prefix="mha-onnx-")
        return MhaRep(model, mha_run, pipeline, workdir)

    @classmethod
    def supports_device(cls, device):
        return device in ("CPU", "GPU")
