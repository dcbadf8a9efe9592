#!/usr/bin/env bash
#===- scripts/check-asan.sh - AddressSanitizer on the compiler's passes -----===#
#
# Builds mha-opt with AddressSanitizer in its own build directory and runs
# the lit tests that drive mha-opt (Codegen, Dialect, InputConversion,
# Conversion, Pipelines, Transforms) with it in place of the build's, so
# that a pass reading freed IR fails the run instead of producing, now and
# then, a different lowering. Such a bug (mha-outline-weight-preparation
# reading results of ops it had erased) gave wrong numbers in about one
# compilation in six before c6e04e4; this script reports it at once.
#
# libMLIR.so is not instrumented: LLVM's allocators, inlined into the
# instrumented binary, poison memory libMLIR later uses unpoisoned, so
# manual poisoning is ignored (allow_user_poisoning=0); leaks are not
# reported (MLIR's contexts outlive main).
#
# About 5 minutes the first time on a 2-core host (67 compile steps), then
# seconds. Environment: BUILD_DIR (the regular build, default build),
# ASAN_BUILD_DIR (default build-asan).
#
#===----------------------------------------------------------------------===#
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=$(cd "${BUILD_DIR:-$ROOT/build}" && pwd)
ASAN_BUILD_DIR=${ASAN_BUILD_DIR:-$ROOT/build-asan}
LLVM_PREFIX=/usr/lib/llvm-22
if [ ! -f "$ASAN_BUILD_DIR/build.ninja" ]; then
  cmake -G Ninja -S "$ROOT" -B "$ASAN_BUILD_DIR" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DLLVM_USE_LINKER=lld -DMLIR_DIR=$LLVM_PREFIX/lib/cmake/mlir \
    -DCMAKE_CXX_FLAGS="-fsanitize=address -fno-omit-frame-pointer" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address" >/dev/null
fi
ninja -C "$ASAN_BUILD_DIR" mha-opt >/dev/null
# The tests' substitutions name the build's tools: swap mha-opt for the run.
saved=$(mktemp)
cp "$BUILD_DIR/bin/mha-opt" "$saved"
trap 'cp "$saved" "$BUILD_DIR/bin/mha-opt"; rm -f "$saved"' EXIT
cp "$ASAN_BUILD_DIR/bin/mha-opt" "$BUILD_DIR/bin/mha-opt"
cd "$BUILD_DIR"
ASAN_OPTIONS=detect_leaks=0:allow_user_poisoning=0 \
  "$LLVM_PREFIX/bin/lit" -sv test/Codegen test/Dialect test/InputConversion \
  test/Conversion test/Pipelines test/Transforms
