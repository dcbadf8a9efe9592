#!/usr/bin/env bash
#===- scripts/check-sanitizers.sh - the test suite under ASan + UBSan ------===#
#
# Builds everything of MHA with -fsanitize=address,undefined in build-asan/
# (MHA_ENABLE_SANITIZERS=ON; installs Debian's libclang-rt-22-dev for the
# runtimes) and runs the whole lit suite there. Any sanitizer report fails the
# test that triggered it. Tests that load our plugin into the stock mlir-opt
# are unsupported in this build (mlir-opt has no ASan runtime).
#
#===----------------------------------------------------------------------===#
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export BUILD_DIR=${BUILD_DIR:-$here/../build-asan}
export CMAKE_ARGS="-DMHA_ENABLE_SANITIZERS=ON ${CMAKE_ARGS:-}"
export EXTRA_PACKAGES="libclang-rt-22-dev ${EXTRA_PACKAGES:-}"
exec "$here/check.sh"
