//===- RaiseAttentionPass.cpp - mha-raise-attention ------------------------===//
//
// Frontends hand attention over as a contraction of queries and keys, a
// scale, a mask, a softmax and a contraction with the values, split into
// linalg ops in many ways: named or generic contractions, transposes as ops
// or as indexing maps, softmax as one op or as max/sub/exp/sum/div generics,
// fused or not, with reshapes of the batch dims in between. The matcher
// first turns each value on the way from the scores to the probabilities
// into a *term*: the expression it computes, with every elementwise linalg
// op inlined, so that fused and unfused forms compare equal. It then reads
// the attention off the terms and rewrites only when every piece is there.
//
// The library is in this directory: Terms (the expressions), Matcher (what
// the match finds), Rewrite (the mha ops built from it); this file holds
// the pattern and the pass.
//
//===----------------------------------------------------------------------===//

#include "Matcher.h"

#include "mha/InputConversion/Passes.h"
#include "mha/InputConversion/RaiseAttention.h"

#include "mlir/IR/PatternMatch.h"

namespace mlir::mha {
#define GEN_PASS_DEF_MHARAISEATTENTIONPASS
#include "mha/InputConversion/Passes.h.inc"
} // namespace mlir::mha

using namespace mlir;
using namespace mlir::mha::raise;

namespace {

struct RaiseAttentionPattern final : RewritePattern {
  explicit RaiseAttentionPattern(MLIRContext *context)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, context) {}
  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    if (!isContraction(op))
      return rewriter.notifyMatchFailure(op, "not a contraction");
    std::string reason;
    if (failed(mha::raiseAttention(rewriter, op, &reason)))
      return rewriter.notifyMatchFailure(op, reason);
    return success();
  }
};

struct MHARaiseAttentionPass final
    : mha::impl::MHARaiseAttentionPassBase<MHARaiseAttentionPass> {
  using Base::Base;
  void runOnOperation() override {
    // One raise at a time: a raise erases other contractions (Q·Kᵀ), so the
    // walk starts over after each. Nothing else is touched.
    IRRewriter rewriter(&getContext());
    auto raiseOne = [&]() {
      WalkResult walk = getOperation()->walk([&](Operation *op) {
        if (isContraction(op) && succeeded(mha::raiseAttention(rewriter, op)))
          return WalkResult::interrupt();
        return WalkResult::advance();
      });
      return walk.wasInterrupted();
    };
    while (raiseOne()) {
    }
    if (layers) {
      SmallVector<mha::AttentionOp> cores;
      getOperation()->walk([&](mha::AttentionOp op) { cores.push_back(op); });
      for (mha::AttentionOp core : cores) {
        std::string reason;
        if (failed(mha::raiseMultiHeadAttention(rewriter, core, &reason)) &&
            explain)
          core->emitRemark()
              << "not raised to mha.multi_head_attention: " << reason;
      }
    }
    if (!explain)
      return;
    // The contractions left, with the reason: planned only, so the walk
    // changes nothing.
    getOperation()->walk([&](Operation *op) {
      Why why;
      if (!isContraction(op) || succeeded(planAttention(op, why)))
        return;
      op->emitRemark() << "not raised to mha.attention: " << why.text;
    });
  }
};

} // namespace

void mha::populateRaiseAttentionPatterns(RewritePatternSet &patterns) {
  patterns.add<RaiseAttentionPattern>(patterns.getContext());
}
