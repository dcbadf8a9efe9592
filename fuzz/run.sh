#!/usr/bin/env bash
#===- fuzz/run.sh - build and run the mha-fuzz libFuzzer target ------------===#
#
#   fuzz/run.sh [SECONDS=600] [extra libFuzzer flags...]
#
# Builds build-fuzz/ (MHA_ENABLE_FUZZER=ON: coverage + ASan + UBSan), makes
# the seed corpus (every test .mlir, split at `// -----`, plus 300 generated
# well-formed mha modules), and fuzzes for SECONDS. The corpus grows in
# fuzz/corpus (not committed); crashes land in fuzz/artifacts. Each finding
# becomes a regression test and a fix (docs/Reliability.md).
#
#===----------------------------------------------------------------------===#
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$here/..
seconds=${1:-600}
shift || true

export BUILD_DIR=${BUILD_DIR:-$root/build-fuzz}
export CMAKE_ARGS="-DMHA_ENABLE_FUZZER=ON ${CMAKE_ARGS:-}"
export EXTRA_PACKAGES="libclang-rt-22-dev ${EXTRA_PACKAGES:-}"
source "$root/scripts/setup.sh"
ninja -C "$BUILD_DIR" mha-fuzz | tail -n 1

seeds=$BUILD_DIR/fuzz-seeds
rm -rf "$seeds" && mkdir -p "$seeds" "$here/corpus" "$here/artifacts"
/usr/bin/python3 - "$root/test" "$seeds" <<'PY'
import os, sys
root, out = sys.argv[1], sys.argv[2]
n = 0
for d, _, files in os.walk(root):
    for f in files:
        if not f.endswith(".mlir"):
            continue
        text = open(os.path.join(d, f)).read()
        for part in text.split("// -----"):
            if "mha." in part:
                open(os.path.join(out, "test-%04d.mlir" % n), "w").write(part)
                n += 1
print(f"seeds from test/: {n}")
PY
/usr/bin/python3 "$here/gen_seeds.py" "$seeds" 300 "${SEED:-1}"

# allow_user_poisoning=0: see test/lit.cfg.py (LLVM's allocators, shared by
# our instrumented code and the uninstrumented libMLIR).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:allow_user_poisoning=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
step "Fuzzing for $seconds s"
# -timeout: a BERT-sized seed through the six pipelines (GPU ones included)
# takes up to ~30 s with coverage, ASan and UBSan on these machines.
"$BUILD_DIR/bin/mha-fuzz" "$here/corpus" "$seeds" \
  -max_total_time="$seconds" -timeout=60 -rss_limit_mb=4096 \
  -artifact_prefix="$here/artifacts/" -print_final_stats=1 "$@"
