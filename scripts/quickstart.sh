#!/usr/bin/env bash
#===- scripts/quickstart.sh - set up, build, run the bundled example -------===#
#
# Installs what is missing, builds, and runs the main job on a BERT-base layer
# (examples/bert-base.mlir): parse, verify, and print it back.
#
#===----------------------------------------------------------------------===#
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

EXAMPLE=$MHA_ROOT/examples/bert-base.mlir
MHA_OPT=$BUILD_DIR/bin/mha-opt

step "Parsing and verifying examples/bert-base.mlir (B=1, S=128, E=768, H=12)"
"$MHA_OPT" "$EXAMPLE" | grep -o 'mha.multi_head_attention.*{num_heads[^}]*}'

step "Decomposing it: mha-opt --mha-decompose examples/bert-base.mlir"
decomposed=$("$MHA_OPT" --mha-decompose "$EXAMPLE")
printf '%s\n' "$decomposed" | grep -E 'mha\.attention' | sed 's/^ *//'
cat <<MSG

The layer became $(printf '%s\n' "$decomposed" | grep -c 'linalg.generic') linalg.generic ops (3 input projections
writing [B, heads, S, d] directly, 1 output projection, and the bias
broadcasts that start their accumulators) around one mha.attention.

Next:  $MHA_OPT --help | grep -A1 ' --mha-'     the passes
       docs/Semantics.md                                 what the op computes
       ./scripts/check.sh                                the test suite
MSG
