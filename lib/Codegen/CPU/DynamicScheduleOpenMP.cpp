//===- DynamicScheduleOpenMP.cpp - balance parallel loops over threads ----===//
//
// omp.wsloop -> omp.wsloop schedule(dynamic), the causal query tiles'
// loops (and optionally all) with the iterations handed out last first:
// causal query tiles do unequal work, growing with the tile's index, so
// threads take them one at a time, largest first (see the pass description).
//
//===----------------------------------------------------------------------===//

#include "mha/Codegen/CPU/Passes.h"
#include "mha/Codegen/CPU/Transforms.h"
#include "mha/Dialect/MHA/Transforms/Transforms.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace mlir::mha {
#define GEN_PASS_DEF_MHADYNAMICSCHEDULEOPENMPPASS
#include "mha/Codegen/CPU/Passes.h.inc"
} // namespace mlir::mha

using namespace mlir;

/// Runs the iterations of `nest` in the reverse order: each induction
/// variable `iv` of [lb, ub) step s is replaced by `lb + last - iv`, where
/// `last = lb + ((ub - lb - 1) / s) * s` is its last value. The same
/// iterations run, so this is only a change of order; bounds that include
/// their upper value are left alone (convert-scf-to-openmp makes none).
static void reverseIterationOrder(omp::LoopNestOp nest) {
  if (nest.getLoopInclusive())
    return;
  Block &body = nest.getRegion().front();
  OpBuilder builder = OpBuilder::atBlockBegin(&body);
  Location loc = nest.getLoc();
  for (auto [iv, lb, ub, step] :
       llvm::zip(body.getArguments(), nest.getLoopLowerBounds(),
                 nest.getLoopUpperBounds(), nest.getLoopSteps())) {
    if (iv.use_empty())
      continue;
    Type type = iv.getType();
    Value one = arith::ConstantOp::create(builder, loc, type,
                                          builder.getIntegerAttr(type, 1));
    Value span = arith::SubIOp::create(
        builder, loc, arith::SubIOp::create(builder, loc, ub, lb), one);
    // last - lb: the whole steps that fit in [lb, ub).
    Value steps = arith::MulIOp::create(
        builder, loc, arith::DivSIOp::create(builder, loc, span, step), step);
    Value base = arith::AddIOp::create(
        builder, loc, arith::AddIOp::create(builder, loc, lb, lb), steps);
    auto reversed = arith::SubIOp::create(builder, loc, base, iv);
    iv.replaceAllUsesExcept(reversed, reversed);
  }
}

/// Whether an iteration of `nest` runs a causal key loop (marked by
/// tileAttentionKeys): its work then grows with the iteration's index.
static bool holdsCausalKeyLoop(omp::LoopNestOp nest) {
  return nest
      ->walk([](scf::ForOp loop) {
        return loop->hasAttr(mha::kCausalKeyLoopAttrName)
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      })
      .wasInterrupted();
}

namespace {

struct MHADynamicScheduleOpenMPPass final
    : mha::impl::MHADynamicScheduleOpenMPPassBase<
          MHADynamicScheduleOpenMPPass> {
  using Base::Base;
  void runOnOperation() override {
    auto dynamic = omp::ClauseScheduleKindAttr::get(
        &getContext(), omp::ClauseScheduleKind::Dynamic);
    getOperation()->walk([&](omp::WsloopOp loop) {
      loop.setScheduleKindAttr(dynamic);
      auto nest = dyn_cast<omp::LoopNestOp>(loop.getWrappedLoop());
      if (nest && (reverse || (reverseCausal && holdsCausalKeyLoop(nest))))
        reverseIterationOrder(nest);
    });
  }
};

} // namespace
