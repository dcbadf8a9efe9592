//===- AttentionToLinalg.cpp - mha.attention -> linalg (reference) --------===//
//
// The reference lowering of mha.attention: the op's two decompositions
// (AggregatedOpInterface) applied without tiling, so the scores
// [B, H, Sq, Sk] are materialized and the online-softmax update runs once
// over all keys from the empty state. Simple on purpose: every faster path
// (tiled, CPU, GPU) is the same decomposition applied to tiles, and all of
// them are held against an independent reference in the integration tests.
//
//===----------------------------------------------------------------------===//

#include "mha/Dialect/MHA/IR/MHAOps.h"
#include "mha/Dialect/MHA/Transforms/Passes.h"
#include "mha/Dialect/MHA/Transforms/Transforms.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::mha {
#define GEN_PASS_DEF_MHAATTENTIONTOLINALGPASS
#include "mha/Dialect/MHA/Transforms/Passes.h.inc"
} // namespace mlir::mha

using namespace mlir;
using namespace mlir::mha;

namespace {

/// Decomposes the attention ops (AggregatedOpInterface) until only linalg is
/// left: mha.attention becomes its online form, whose mha.online_attention the
/// driver then decomposes into linalg; mha.attention_weights, and the
/// mha.cache_append and mha.rotary of a layer decomposed after the
/// pipelines' entry (by mha-fuse-layer), become linalg directly.
struct DecomposeAttentionOps final
    : OpInterfaceRewritePattern<linalg::AggregatedOpInterface> {
  using OpInterfaceRewritePattern::OpInterfaceRewritePattern;

  LogicalResult matchAndRewrite(linalg::AggregatedOpInterface op,
                                PatternRewriter &rewriter) const override {
    if (!isa<AttentionOp, OnlineAttentionOp, AttentionWeightsOp,
             CacheAppendOp, RotaryOp>(op.getOperation()))
      return rewriter.notifyMatchFailure(op, "not an mha attention op");
    FailureOr<SmallVector<Value>> values = op.decomposeOperation(rewriter);
    if (failed(values))
      return rewriter.notifyMatchFailure(op, "could not decompose");
    rewriter.replaceOp(op, *values);
    return success();
  }
};

struct MHAAttentionToLinalgPass final
    : mha::impl::MHAAttentionToLinalgPassBase<MHAAttentionToLinalgPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateAttentionToLinalgPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

/// Replaces `op` by its decomposition (AggregatedOpInterface).
FailureOr<SmallVector<Value>> decompose(RewriterBase &rewriter,
                                        linalg::AggregatedOpInterface op) {
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  FailureOr<SmallVector<Value>> values = op.decomposeOperation(rewriter);
  if (failed(values))
    return failure();
  rewriter.replaceOp(op, *values);
  return values;
}

} // namespace

FailureOr<OnlineAttentionOp> mha::convertToOnlineAttention(RewriterBase &rewriter,
                                                           AttentionOp op) {
  FailureOr<SmallVector<Value>> values = decompose(rewriter, op);
  if (failed(values))
    return failure();
  // out = normalize(online.acc, online.sum): the online op feeds the
  // normalization.
  auto normalize = values->front().getDefiningOp<linalg::GenericOp>();
  return normalize.getInputs().front().getDefiningOp<OnlineAttentionOp>();
}

FailureOr<SmallVector<Value>>
mha::decomposeOnlineAttention(RewriterBase &rewriter, OnlineAttentionOp op) {
  return decompose(rewriter, op);
}

FailureOr<Value> mha::lowerAttentionToLinalg(RewriterBase &rewriter,
                                             AttentionOp op) {
  FailureOr<OnlineAttentionOp> online = convertToOnlineAttention(rewriter, op);
  if (failed(online))
    return failure();
  // The normalization that replaced `op` reads the online op's results.
  Operation *normalize = *online->getResult(0).getUsers().begin();
  if (failed(decomposeOnlineAttention(rewriter, *online)))
    return failure();
  return normalize->getResult(0);
}

void mha::populateAttentionToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<DecomposeAttentionOps>(patterns.getContext());
}
