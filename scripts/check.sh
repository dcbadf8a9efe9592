#!/usr/bin/env bash
#===- scripts/check.sh - set up, build, run the whole test suite -----------===#
#
# Installs what is missing, builds, and runs every lit test (check-mha). Ends
# with lit's summary and a one-line "N passed, N failed".
#
#===----------------------------------------------------------------------===#
set -euo pipefail
# PyTorch cross-checks the numpy reference (test/Integration/torch-cross-check.test);
# the importer tests build PyTorch modules and ONNX models (test/Importers);
# LLVM's ThreadSanitizer runtime runs the threaded code under TSan
# (test/Integration/CPU/tsan.test, test/Tools/mha-aot/sanitize-thread.test).
# python3-venv makes the pinned PyPI environment of the ONNX node tests
# (python/requirements-onnx.txt) in $BUILD_DIR/onnx-venv.
EXTRA_PACKAGES="python3-torch python3-onnx python3-venv libclang-rt-22-dev ${EXTRA_PACKAGES:-}"
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

# Rebuilt when the requirements change (a copy of them marks it complete).
onnx_venv() {
  local venv=$BUILD_DIR/onnx-venv req=$MHA_ROOT/python/requirements-onnx.txt
  if cmp -s "$req" "$venv/requirements-onnx.txt"; then
    step "ONNX test environment: present"
    return
  fi
  step "Making the ONNX test environment ($venv, from PyPI)"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check --no-input -r "$req"
  cp "$req" "$venv/requirements-onnx.txt"
}
onnx_venv

step "Running the test suite"
log=$BUILD_DIR/check-mha.log
status=0
ninja -C "$BUILD_DIR" check-mha 2>&1 | tee "$log" || status=$?
passed=$(sed -nE 's/^ *Passed *: *([0-9]+).*/\1/p' "$log" | tail -n 1)
failed=$(sed -nE 's/^ *Failed *: *([0-9]+).*/\1/p' "$log" | tail -n 1)
unsupported=$(sed -nE 's/^ *Unsupported *: *([0-9]+).*/\1/p' "$log" | tail -n 1)
echo "lit: ${passed:-0} passed, ${failed:-0} failed, ${unsupported:-0} skipped"
exit "$status"
