"""ONNX's published node tests of the Attention operator through the
importer and mha-run (mha_importers.onnx_backend), as ONNX's backend test
runner checks them: each output against the expected one with the case's
rtol and atol (ONNX's defaults: 1e-3, 1e-7), of the same type. bfloat16
outputs are compared with the float64 evaluation of the same model
(onnx.reference) within half a bfloat16 ulp instead: ONNX computes their
expected values in bfloat16 step by step, up to an ulp off the exact
result, where mha computes in f32 and rounds once (1e-3 is below
bfloat16's resolution, 2^-8).

The cases are ONNX's own (onnx/backend/test/case/node/attention.py; their
expected outputs are computed there with onnx.reference): they are
collected from the installed onnx, which needs no test data files (onnx
1.23 no longer ships them). The `_expanded` variants are the operator's
function body as a graph of primitive operators, not an Attention node:
they are not imported.

Prints a line per case, PASS, REFUSED (the importer's message) or FAIL,
then "N cases: P passed, R refused, F failed"; exits 1 on a failure.

Usage: onnx_node_tests.py --mha-run PATH --workdir DIR [--pipeline P]
                          [--jobs N] [-k SUBSTRING] [--skip SUBSTRING]
"""
import argparse
import concurrent.futures
import os
import sys
import warnings

import numpy as np

from mha_importers.onnx_backend import MhaBackend
from mha_importers.onnx_mha import ImportError_


def collect():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from onnx.backend.test.case.node import collect_testcases
        cases = collect_testcases("Attention")
    return [c for c in cases if "_expanded" not in c.name]


def as_float(a):
    return np.asarray(a).astype(np.float64) if a.dtype.name == "bfloat16" \
        else np.asarray(a)


def float64_outputs(model, inputs):
    """The outputs of `model` with its bfloat16 inputs and outputs made
    float64, by onnx.reference: the exact result bf16 is rounded from."""
    import copy
    import onnx
    from onnx.reference import ReferenceEvaluator
    m = copy.deepcopy(model)
    for v in list(m.graph.input) + list(m.graph.output):
        if v.type.tensor_type.elem_type == onnx.TensorProto.BFLOAT16:
            v.type.tensor_type.elem_type = onnx.TensorProto.DOUBLE
    names = [i.name for i in m.graph.input]
    feeds = {n: as_float(np.asarray(a)) for n, a in zip(names, inputs)}
    return ReferenceEvaluator(m).run(None, feeds)


# Half an ulp of bfloat16 relative (8 significant bits), and f32 rounding.
BF16_RTOL = 2.0 ** -8 + 1e-5


def check(case, args):
    """(status, detail) for one case."""
    try:
        rep = MhaBackend.prepare(case.model, mha_run=args.mha_run,
                                 pipeline=args.pipeline,
                                 workdir=os.path.join(args.workdir, case.name))
    except ImportError_ as e:
        return "REFUSED", str(e)
    notes = []
    for inputs, expected in case.data_sets:
        try:
            outputs = rep.run(inputs)
        except RuntimeError as e:
            return "FAIL", str(e).splitlines()[0]
        if len(outputs) != len(expected):
            return "FAIL", f"{len(outputs)} outputs, expected {len(expected)}"
        for i, (out, ref) in enumerate(zip(outputs, expected)):
            ref = np.asarray(ref)
            if out.dtype != ref.dtype or out.shape != ref.shape:
                return "FAIL", (f"output {i}: {out.dtype}{list(out.shape)}, "
                                f"expected {ref.dtype}{list(ref.shape)}")
            if ref.dtype.name == "bfloat16":
                # ONNX's expected bf16 outputs are computed in bf16 step by
                # step, up to an ulp off the exact result; mha computes in
                # f32 and rounds once: compared with the float64 result.
                exact = float64_outputs(case.model, inputs)[i]
                rtol, ref, note = BF16_RTOL, exact, "bf16"
            else:
                rtol, note = case.rtol, ""
            try:
                np.testing.assert_allclose(as_float(out), as_float(ref),
                                           rtol=rtol, atol=case.atol)
            except AssertionError as e:
                lines = [l.strip() for l in str(e).splitlines() if l.strip()]
                return "FAIL", f"output {i}: " + "; ".join(lines[1:4])
            if note:
                error = np.abs(as_float(out) - ref) / np.maximum(
                    np.abs(ref), np.finfo(np.float32).tiny)
                notes.append(f"output {i} {note}: within {error.max():.2e} "
                             f"of float64")
    return "PASS", "; ".join(notes)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mha-run", required=True)
    p.add_argument("--workdir", required=True)
    p.add_argument("--pipeline", default="cpu")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("-k", default="", help="only cases whose name has this")
    p.add_argument("--skip", default=None,
                   help="leave out the cases whose name has this")
    args = p.parse_args()
    cases = [c for c in collect() if args.k in c.name and
             not (args.skip and args.skip in c.name)]
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(lambda c: check(c, args), cases))
    counts = {"PASS": 0, "REFUSED": 0, "FAIL": 0}
    for c, (status, detail) in sorted(zip(cases, results),
                                      key=lambda x: x[0].name):
        counts[status] += 1
        print(f"{status} {c.name}" + (f": {detail}" if detail else ""))
    print(f"{len(cases)} cases: {counts['PASS']} passed, "
          f"{counts['REFUSED']} refused, {counts['FAIL']} failed")
    return 1 if counts["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
