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
step "Running mha-opt on examples/bert-base.mlir (B=1, S=128, E=768, H=12)"
"$BUILD_DIR/bin/mha-opt" "$EXAMPLE"
cat <<MSG

The layer above parsed and verified: one mha.multi_head_attention with
12 heads of width 64 (768 / 12) and the four projection biases.
Next:  $BUILD_DIR/bin/mha-opt --help | grep mha   (the passes)
       docs/Semantics.md                          (what the op computes)
MSG
