#!/usr/bin/env bash
#===- fuzz/run.sh - build and run the mha-fuzz libFuzzer target ------------===#
#
#   fuzz/run.sh [SECONDS=600] [extra libFuzzer flags...]
#
# Builds build-fuzz/ (MHA_ENABLE_FUZZER=ON: coverage + ASan + UBSan), makes
# the seed corpus (the test .mlir files split at `// -----`, without their
# comment lines and without the large ones, plus 300 generated well-formed
# mha modules), and fuzzes for SECONDS. Each input goes through one pipeline
# drawn from its hash (tools/mha-fuzz/mha-fuzz.cpp). The corpus grows in
# fuzz/corpus (not committed); crashes land in fuzz/artifacts, and the run
# ends by printing the mha-opt command that replays each new one. Each
# finding becomes a regression test and a fix (docs/Reliability.md).
#
# Environment: FUZZ_ALL_SEEDS=1 keeps the large test seeds; SEED seeds
# gen_seeds.py (default 1); JOBS caps the parallel jobs of a first build
# (default 2).
#
#===----------------------------------------------------------------------===#
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$here/..
seconds=${1:-600}
shift || true

export BUILD_DIR=${BUILD_DIR:-$root/build-fuzz}
# A job pool caps the build setup.sh runs (all of MHA, instrumented) when it
# configures: the fuzzing hosts have few cores, shared.
jobs=${JOBS:-2}
export CMAKE_ARGS="-DMHA_ENABLE_FUZZER=ON -DCMAKE_JOB_POOLS=fuzz=$jobs \
  -DCMAKE_JOB_POOL_COMPILE=fuzz -DCMAKE_JOB_POOL_LINK=fuzz ${CMAKE_ARGS:-}"
export EXTRA_PACKAGES="libclang-rt-22-dev ${EXTRA_PACKAGES:-}"
source "$root/scripts/setup.sh"
ninja -C "$BUILD_DIR" mha-fuzz | tail -n 1

seeds=$BUILD_DIR/fuzz-seeds
rm -rf "$seeds" && mkdir -p "$seeds" "$here/corpus" "$here/artifacts"
all=()
[ "${FUZZ_ALL_SEEDS:-0}" = 1 ] && all=(--all)
/usr/bin/python3 "$here/test_seeds.py" "$root/test" "$seeds" "${all[@]}"
/usr/bin/python3 "$here/gen_seeds.py" "$seeds" 300 "${SEED:-1}"

# allow_user_poisoning=0: see test/lit.cfg.py (LLVM's allocators, shared by
# our instrumented code and the uninstrumented libMLIR).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:allow_user_poisoning=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
step "Fuzzing for $seconds s"
# -timeout: an input goes through one pipeline; the slowest seeds take up to
# 10 s with coverage, ASan and UBSan on a loaded 2-core host, so 30 s means
# a lowering that blew up. -detect_leaks=0 as in ASAN_OPTIONS: otherwise
# libFuzzer runs every input that mallocs more than it frees (MLIR's and
# LLVM's caches) a second time, to look for a leak it would not report.
marker=$(mktemp)
status=0
"$BUILD_DIR/bin/mha-fuzz" "$here/corpus" "$seeds" \
  -max_total_time="$seconds" -timeout=30 -rss_limit_mb=4096 -detect_leaks=0 \
  -artifact_prefix="$here/artifacts/" -print_final_stats=1 "$@" || status=$?

# The pipeline drawn for each new crash, timeout or out-of-memory input
# (MHA_FUZZ_PRINT=only: printed, not lowered).
find "$here/artifacts" -type f -newer "$marker" | sort | while read -r unit; do
  MHA_FUZZ_PRINT=only "$BUILD_DIR/bin/mha-fuzz" "$unit" 2>&1 |
    sed -n "s|^mha-fuzz: mha-opt INPUT|$(basename "$unit"): mha-opt $unit|p"
done
rm -f "$marker"
exit "$status"
