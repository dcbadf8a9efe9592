//===- DynamicScheduleOpenMP.cpp - balance parallel loops over threads ----===//
//
// omp.wsloop -> omp.wsloop schedule(dynamic): causal query tiles do unequal
// work, so threads take them one at a time (see the pass description).
//
//===----------------------------------------------------------------------===//

#include "mha/Dialect/MHA/Transforms/Passes.h"

#include "mlir/Dialect/OpenMP/OpenMPDialect.h"

namespace mlir::mha {
#define GEN_PASS_DEF_MHADYNAMICSCHEDULEOPENMPPASS
#include "mha/Dialect/MHA/Transforms/Passes.h.inc"
} // namespace mlir::mha

using namespace mlir;

namespace {

struct MHADynamicScheduleOpenMPPass final
    : mha::impl::MHADynamicScheduleOpenMPPassBase<
          MHADynamicScheduleOpenMPPass> {
  void runOnOperation() override {
    auto dynamic = omp::ClauseScheduleKindAttr::get(
        &getContext(), omp::ClauseScheduleKind::Dynamic);
    getOperation()->walk(
        [&](omp::WsloopOp loop) { loop.setScheduleKindAttr(dynamic); });
  }
};

} // namespace
