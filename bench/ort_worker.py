"""bench/ort_worker.py - the ONNX Runtime peer of bench/peers.py.

ONNX Runtime from PyPI (the pinned `onnxruntime` of
python/requirements-onnx.txt, in the environment bench/run.sh makes). A
persistent worker: it loads every form of one layer (the .onnx files
onnx_models.py wrote) into its own InferenceSession once, warms each up,
then times `session.run` when peers.py asks, so that the interleaved rounds
measure calls and not process start-up or model loading.

    ort_worker.py '{"threads": T, "models": {"attention": "a.onnx", ...},
                    "inputs": {"x": [B, S, E], ...}, "warmup": 2}'

("form_inputs": {form: {"floats": {name: shape}, "ints": {name: [dtype,
shape, value]}}} gives a form inputs of its own, e.g. a decoding step's
cache lengths.)

Protocol, one JSON object per line: first the worker prints
    {"ready": true, "version": "1.x", "forms": {"attention": "ok", "mha": "<error>"}}
then answers each line read from stdin,
    {"cmd": "run", "form": "attention", "n": N}  ->  {"ms": [t1, ..., tN]}
    {"cmd": "quit"}                               ->  exits
A form whose session could not be created or run reports its error once in
"forms" and is never timed.
"""
import json
import sys

import numpy as np
import onnxruntime as ort

from worker_loop import reply, serve


def main():
    spec = json.loads(sys.argv[1])
    # What the issue asks of every peer: T threads inside the operator, none
    # between operators (the graph is a chain), every graph optimization on.
    options = ort.SessionOptions()
    options.intra_op_num_threads = spec["threads"]
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    rng = np.random.default_rng(0)
    sessions, forms = {}, {}
    for form, path in spec["models"].items():
        # Per form: float inputs by shape (random), integer ones by value.
        form_inputs = spec.get("form_inputs", {}).get(form, {})
        feeds = {name: rng.uniform(-1, 1, shape).astype(np.float32)
                 for name, shape in form_inputs.get(
                     "floats", spec.get("inputs", {})).items()}
        for name, (dtype, shape, value) in form_inputs.get("ints",
                                                           {}).items():
            feeds[name] = np.full(shape, value, dtype)
        try:
            session = ort.InferenceSession(
                path, options, providers=["CPUExecutionProvider"])
            for _ in range(spec.get("warmup", 2)):
                session.run(None, feeds)
            sessions[form] = (session, feeds)
            forms[form] = "ok"
        except Exception as e:  # any failure is this form's, reported
            forms[form] = str(e).splitlines()[0]
    reply({"ready": True, "version": ort.__version__, "forms": forms})
    serve({form: lambda s=session, f=feeds: s.run(None, f)
           for form, (session, feeds) in sessions.items()})

if __name__ == "__main__":
    main()
