#!/usr/bin/env bash
#===- scripts/check.sh - set up, build, run the whole test suite -----------===#
#
# Installs what is missing, builds, and runs every lit test (check-mha). The
# last lines are lit's summary.
#
#===----------------------------------------------------------------------===#
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

step "Running the test suite"
exec ninja -C "$BUILD_DIR" check-mha
