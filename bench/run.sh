#!/usr/bin/env bash
#===- bench/run.sh - our layer against PyTorch and ONNX Runtime -----------===#
#
# One command: installs what is missing, builds, and runs bench/peers.py,
# which times our layer (mha-run --pipeline=cpu), PyTorch 2 (from PyPI),
# Debian's PyTorch 1.13 out of the box and tuned, ONNX Runtime and IREE
# (from PyPI) side by side in interleaved rounds, against the measured FMA
# peak.
#
#   bench/run.sh                                  every configuration, 1 and 2 threads
#   bench/run.sh --quick --configs bert-s128      smoke test (seconds)
#   bench/run.sh --markdown docs/bench.md         also write a markdown table
#   bench/run.sh --help                           every option
#
# --no-setup (first argument) skips the package install and the build, for
# a tree that is already built. Environment: BUILD_DIR, CMAKE_ARGS as for
# scripts/setup.sh.
#
#===----------------------------------------------------------------------===#
set -euo pipefail
BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

if [ "${1:-}" = "--no-setup" ]; then
  shift
  MHA_ROOT=$(cd "$BENCH_DIR/.." && pwd)
  BUILD_DIR=${BUILD_DIR:-$MHA_ROOT/build}
  export PATH=/usr/lib/llvm-22/bin:$PATH
  step() { printf '\n==> %s\n' "$*"; }
else
  # The peers' packages on top of the build's (python3-venv: the PyPI
  # environment of the ONNX Runtime peer). libopenblas0-pthread: Debian's torch does its matmuls through the
  # libblas.so.3 alternative, which without OpenBLAS is the reference BLAS
  # (libblas3, ~5 GFLOP/s here against ~200 with OpenBLAS); a PyTorch user
  # has OpenBLAS, and the OPENBLAS_* variables the tuned peer unsets act on it.
  EXTRA_PACKAGES="${EXTRA_PACKAGES:-} python3-torch python3-onnx python3-venv libjemalloc2 libopenblas0-pthread"
  source "$BENCH_DIR/../scripts/setup.sh"
fi

# ONNX Runtime, IREE and PyTorch 2 from PyPI, pinned
# (python/requirements-onnx.txt, bench/requirements-bench.txt), in a virtual
# environment of the bench's own (PyTorch's wheel pulls some 5 GB of CUDA
# libraries: this environment only, never CI's); rebuilt when the pins
# change.
VENV=$BENCH_DIR/work/venv
REQS=("$BENCH_DIR/../python/requirements-onnx.txt" "$BENCH_DIR/requirements-bench.txt")
if ! cat "${REQS[@]}" | cmp -s - "$VENV/requirements.txt"; then
  step "PyPI: onnxruntime, IREE and PyTorch 2 into bench/work/venv"
  rm -rf "$VENV"
  mkdir -p "$(dirname "$VENV")"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check --no-input \
    -r "${REQS[0]}" -r "${REQS[1]}"
  cat "${REQS[@]}" > "$VENV/requirements.txt"
fi

step "Benchmark (bench/peers.py)"
# Debian's python3, which has python3-torch and python3-onnx, whatever
# python3 comes first on PATH.
exec /usr/bin/python3 "$BENCH_DIR/peers.py" --mha-run "$BUILD_DIR/bin/mha-run" \
  --venv-python "$VENV/bin/python" "$@"
