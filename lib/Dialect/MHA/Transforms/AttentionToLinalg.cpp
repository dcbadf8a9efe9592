//===- AttentionToLinalg.cpp - mha.attention -> linalg (reference) --------===//
//
// The reference lowering of mha.attention: the scores [B, H, Sq, Sk] are
// materialized, then masked, normalized by a stable softmax and multiplied by
// V, each step a linalg.generic on tensors. Simple on purpose: every faster
// path (tiled, CPU, GPU) is held against the numbers this one produces.
//
// Softmax is written out rather than taken from linalg.softmax because a row
// that sees no key must give zeros, where exp(-inf - -inf) would give NaN.
//
//===----------------------------------------------------------------------===//

#include "mha/Dialect/MHA/IR/MHAOps.h"
#include "mha/Dialect/MHA/Transforms/Passes.h"
#include "mha/Dialect/MHA/Transforms/Transforms.h"
#include "LinalgBuilders.h"
#include "OnlineSoftmax.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <limits>

namespace mlir::mha {
#define GEN_PASS_DEF_MHAATTENTIONTOLINALGPASS
#include "mha/Dialect/MHA/Transforms/Passes.h.inc"
} // namespace mlir::mha

using namespace mlir;
using namespace mlir::mha;
using utils::IteratorType;

namespace {

/// The indexing map of a mask over the loops (b, h, i, j) of the scores.
/// Rank 2 is [Sq, Sk], rank 3 [B, Sq, Sk]; rank 4 reads index 0 along its
/// static size-1 dims (broadcast). The verifier guarantees the rank.
AffineMap getMaskMap(MLIRContext *ctx, ShapedType maskType) {
  AffineExpr b, h, i, j;
  bindDims(ctx, b, h, i, j);
  switch (maskType.getRank()) {
  case 2:
    return AffineMap::get(4, 0, {i, j}, ctx);
  case 3:
    return AffineMap::get(4, 0, {b, i, j}, ctx);
  default: {
    SmallVector<AffineExpr> exprs = {b, h, i, j};
    for (auto [dim, expr] : llvm::enumerate(exprs))
      if (maskType.getDimSize(dim) == 1)
        expr = getAffineConstantExpr(0, ctx);
    return AffineMap::get(4, 0, exprs, ctx);
  }
  }
}

struct LowerAttentionToLinalg final : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    FailureOr<Value> result = lowerAttentionToLinalg(rewriter, op);
    if (failed(result))
      return rewriter.notifyMatchFailure(op, "could not lower to linalg");
    rewriter.replaceOp(op, *result);
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

} // namespace

FailureOr<Value> mha::lowerAttentionToLinalg(OpBuilder &b, AttentionOp op) {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(op);
  Location loc = op.getLoc();
  MLIRContext *ctx = b.getContext();
  auto queryType = cast<ShapedType>(op.getQuery().getType());
  auto keyType = cast<ShapedType>(op.getKey().getType());
  int64_t numHeads = queryType.getDimSize(1);
  int64_t group = numHeads / keyType.getDimSize(1);

  OpFoldResult batch = tensor::getMixedSize(b, loc, op.getQuery(), 0);
  OpFoldResult sq = tensor::getMixedSize(b, loc, op.getQuery(), 2);
  OpFoldResult sk = tensor::getMixedSize(b, loc, op.getKey(), 2);
  SmallVector<OpFoldResult> scoresShape = {batch, b.getIndexAttr(numHeads), sq,
                                           sk};
  SmallVector<OpFoldResult> rowsShape = {batch, b.getIndexAttr(numHeads), sq};

  // Loops (b, h, i, j, c): batch, query head, query, key, head channel. Query
  // head h reads key/value head h floordiv group, without copying K/V.
  AffineExpr bb, h, i, j, c;
  bindDims(ctx, bb, h, i, j, c);
  AffineExpr kvHead = h.floorDiv(group);
  auto map5 = [&](ArrayRef<AffineExpr> exprs) {
    return AffineMap::get(5, 0, exprs, ctx);
  };
  auto map4 = [&](ArrayRef<AffineExpr> exprs) {
    return AffineMap::get(4, 0, exprs, ctx);
  };
  AffineMap scoresMap = map4({bb, h, i, j});
  AffineMap rowsMap = map4({bb, h, i});
  SmallVector<IteratorType> parallel4(4, IteratorType::parallel);
  SmallVector<IteratorType> rowReduction = {
      IteratorType::parallel, IteratorType::parallel, IteratorType::parallel,
      IteratorType::reduction};

  // s[b, h, i, j] = sum_c q[b, h, i, c] * k[b, h / group, j, c], in f32.
  Value scores = buildContraction(
      b, loc, op.getQuery(), op.getKey(), buildFilled(b, loc, scoresShape, 0.0),
      {map5({bb, h, i, c}), map5({bb, kvHead, j, c}), map5({bb, h, i, j})},
      /*numReductions=*/1);

  // Logits: scale, then the float mask added, or the bool mask and the causal
  // predicate turning invisible scores into -inf.
  Value mask = op.getMask();
  // Query i sees key j iff j <= i + causalOffset (default Sk - Sq).
  Value causalOffset = op.getCausalOffset();
  if (op.getCausal() && !causalOffset)
    causalOffset = arith::SubIOp::create(
        b, loc, getValueOrCreateConstantIndexOp(b, loc, sk),
        getValueOrCreateConstantIndexOp(b, loc, sq));
  double scale = op.getScaleOrDefault();
  // A rank-4 mask broadcasts along its size-1 dims. Static ones are read
  // through the indexing map; a dynamic dim may turn out to be 1 at run time,
  // so such a mask is read with tensor.extract (readMaskElement).
  auto maskType = mask ? cast<ShapedType>(mask.getType()) : ShapedType();
  bool maskByIndex =
      mask && maskType.getRank() == 4 && !maskType.hasStaticShape();
  SmallVector<Value> logitInputs;
  SmallVector<AffineMap> logitMaps;
  if (mask && !maskByIndex) {
    logitInputs.push_back(mask);
    logitMaps.push_back(getMaskMap(ctx, maskType));
  }
  logitMaps.push_back(scoresMap);
  Value logits = buildGeneric(
      b, loc, logitInputs, scores, logitMaps, parallel4,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        SmallVector<Value> index;
        for (int64_t d = 0; d < 4; ++d)
          index.push_back(linalg::IndexOp::create(nb, nloc, d));
        Value maskValue = maskByIndex ? readMaskElement(nb, nloc, mask, index)
                          : mask      ? args[0]
                                      : Value();
        Value visible;
        if (causalOffset)
          visible = arith::CmpIOp::create(
              nb, nloc, arith::CmpIPredicate::sle, index[3],
              arith::AddIOp::create(nb, nloc, index[2], causalOffset));
        linalg::YieldOp::create(
            nb, nloc, buildLogit(nb, nloc, args.back(), scale, maskValue, visible));
      });

  // m[b, h, i] = max_j logits.
  Value rowMax = buildCombine(
      b, loc, logits,
      buildFilled(b, loc, rowsShape, -std::numeric_limits<double>::infinity()),
      {scoresMap, rowsMap}, rowReduction, Combine::Max);

  // p = exp(logits - m), and 0 on rows whose maximum is -inf (no visible
  // key): exp(-inf - -inf) would be NaN.
  Value probs = buildGeneric(
      b, loc, rowMax, logits, {rowsMap, scoresMap}, parallel4,
      [](OpBuilder &nb, Location nloc, ValueRange args) {
        linalg::YieldOp::create(nb, nloc,
                                buildSafeExp(nb, nloc, args[1], args[0]));
      });

  // l[b, h, i] = sum_j p.
  Value rowSum =
      buildCombine(b, loc, probs, buildFilled(b, loc, rowsShape, 0.0),
                   {scoresMap, rowsMap}, rowReduction, Combine::Add);

  // acc[b, h, i, c] = sum_j p[b, h, i, j] * v[b, h / group, j, c]; loops
  // (b, h, i, c, j) so that the reduction is innermost.
  AffineExpr ch = getAffineDimExpr(3, ctx), key = getAffineDimExpr(4, ctx);
  int64_t dv = cast<ShapedType>(op.getValue().getType()).getDimSize(3);
  SmallVector<OpFoldResult> outShape = {batch, b.getIndexAttr(numHeads), sq,
                                        b.getIndexAttr(dv)};
  Value acc = buildContraction(
      b, loc, probs, op.getValue(), buildFilled(b, loc, outShape, 0.0),
      {map5({bb, h, i, key}), map5({bb, kvHead, key, ch}), map5({bb, h, i, ch})},
      /*numReductions=*/1);

  // out = acc / l (0 where l = 0), converted to the element type, written
  // into the destination.
  return buildGeneric(
      b, loc, ValueRange{acc, rowSum}, op.getInit(),
      {scoresMap, rowsMap, scoresMap}, parallel4,
      [](OpBuilder &nb, Location nloc, ValueRange args) {
        linalg::YieldOp::create(
            nb, nloc,
            buildNormalize(nb, nloc, args[0], args[1], args[2].getType()));
      });
}

void mha::populateAttentionToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<LowerAttentionToLinalg>(patterns.getContext());
}
