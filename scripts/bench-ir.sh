#!/usr/bin/env bash
#===- scripts/bench-ir.sh OUT [BUILD] - lowered IR of the bench configurations ===#
#
# Lowers every configuration of the bench (bench/peers.py CONFIGS, the rows
# of docs/Performance.md), examples/bert-base.mlir and the frontend inputs of
# the raising tests through each pipeline with BUILD's mha-opt, and writes
# OUT/<pipeline>/<input>.mlir (the LLVM dialect), .ll (LLVM IR, where
# mlir-translate takes the module) and .err (diagnostics). A change that must
# not alter generated code (issue 26's redesign) compares two runs:
#
#   git worktree add /tmp/base <commit> && cmake/ninja there (or any build)
#   scripts/bench-ir.sh /tmp/ir-base /tmp/base/build
#   scripts/bench-ir.sh /tmp/ir-new build
#   diff -r /tmp/ir-base /tmp/ir-new      # empty: byte-identical
#
# Lowering only: nothing runs, so it works on any host (the cpu rows are
# lowered for both vector widths, AVX-512 and AVX2).
#===----------------------------------------------------------------------===#
set -euo pipefail
OUT=${1:?usage: bench-ir.sh OUT [BUILD]}
BUILD=${2:-build}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OPT=$BUILD/bin/mha-opt
TRANSLATE=${MLIR_TRANSLATE:-/usr/lib/llvm-22/bin/mlir-translate}
PYTHON=${PYTHON:-/usr/bin/python3}

mkdir -p "$OUT/in"
"$PYTHON" - "$ROOT/bench" "$OUT/in" <<'EOF'
import sys
sys.path.insert(0, sys.argv[1])
import peers  # the bench's configurations; standard library only
for c in peers.CONFIGS:
    with open(f"{sys.argv[2]}/{c.name}.mlir", "w") as f:
        f.write(peers.mlir_for(c))
EOF
cp "$ROOT/examples/bert-base.mlir" \
   "$ROOT"/test/Integration/CPU/Inputs/{raise-attention,frontend-block}.mlir \
   "$OUT/in/"

PIPELINES=(
  "cpu512:mha-lower-to-cpu{vector-width=512}"
  "cpu256:mha-lower-to-cpu{vector-width=256}"
  "cpu-panel:mha-lower-to-cpu{vector-width=512 panel-reduction-tile=256}"
  "cpu-serial:mha-lower-to-cpu{vector-width=512 openmp=false}"
  "loops:mha-lower-to-loops"
  "vulkan:mha-lower-to-vulkan"
  "cuda80:mha-lower-to-cuda{format=isa}"
  "cuda90:mha-lower-to-cuda{chip=sm_90 format=isa}"
)
OPT=$(cd "$(dirname "$OPT")" && pwd)/$(basename "$OPT")
OUT=$(cd "$OUT" && pwd)
# Inputs by relative name: run-time check messages quote the input's path.
cd "$OUT/in"
for input in *.mlir; do
  name=${input%.mlir}
  for entry in "${PIPELINES[@]}"; do
    tag=${entry%%:*}
    mkdir -p "$OUT/$tag"
    out=$OUT/$tag/$name
    status=0
    "$OPT" --mlir-disable-threading "$input" \
      --pass-pipeline="builtin.module(${entry#*:})" -o "$out.mlir" \
      2>"$out.err" || status=$?
    # Compile times that gpu-module-to-binary records in the binaries.
    [ -f "$out.mlir" ] && sed -i -E 's/(LLVMIRToISA|ISAToBinary)TimeInMs = [0-9]+ : i64, //g' "$out.mlir"
    if [ "$status" -ne 0 ]; then
      echo "lowering failed: exit $status" >>"$out.err"
      rm -f "$out.mlir"
    elif ! "$TRANSLATE" --mlir-to-llvmir "$out.mlir" -o "$out.ll" \
           2>>"$out.err"; then
      # GPU modules keep their targets' attributes, which stock
      # mlir-translate does not take: the .mlir is what is compared.
      echo "translation failed" >>"$out.err"
      rm -f "$out.ll"
    fi
  done
done
echo "bench-ir.sh: $(ls "$OUT"/in/*.mlir | wc -l) inputs x ${#PIPELINES[@]} pipelines in $OUT"
