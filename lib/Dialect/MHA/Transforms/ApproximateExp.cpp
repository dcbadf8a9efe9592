//===- ApproximateExp.cpp - math.exp as a polynomial ----------------------===//
//
// math.exp -> upstream's polynomial approximation (arithmetic only, so it
// vectorizes; no libm call per element). See the pass description.
//
//===----------------------------------------------------------------------===//

#include "mha/Dialect/MHA/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::mha {
#define GEN_PASS_DEF_MHAAPPROXIMATEEXPPASS
#include "mha/Dialect/MHA/Transforms/Passes.h.inc"
} // namespace mlir::mha

using namespace mlir;

namespace {

struct MHAApproximateExpPass final
    : mha::impl::MHAApproximateExpPassBase<MHAApproximateExpPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(
        patterns, [](StringRef name) { return name == "math.exp"; });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
