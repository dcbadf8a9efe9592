//===- Decompose.cpp - mha.multi_head_attention -> projections + attention ===//
//
// The first step down the lowering ladder: the layer becomes three input
// projections, one mha.attention and the output projection. The projections
// are linalg.generic contractions whose indexing maps do the head split and
// merge, so no transposed copy of Q, K, V or the heads is ever made.
//
//===----------------------------------------------------------------------===//

#include "mha/Dialect/MHA/IR/MHAOps.h"
#include "mha/Dialect/MHA/Transforms/Passes.h"
#include "mha/Dialect/MHA/Transforms/Transforms.h"
#include "LinalgBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::mha {
#define GEN_PASS_DEF_MHADECOMPOSEPASS
#include "mha/Dialect/MHA/Transforms/Passes.h.inc"
} // namespace mlir::mha

using namespace mlir;
using namespace mlir::mha;
using utils::IteratorType;

namespace {

/// An f32 accumulator of `shape`: the broadcast `bias` read through
/// `biasMap`, or zeros without a bias. Starting from the bias folds the bias
/// add into the contraction instead of a second pass over the result.
Value buildAccumulator(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> shape,
                       Value bias, AffineMap biasMap) {
  Type f32 = b.getF32Type();
  Value empty = tensor::EmptyOp::create(b, loc, shape, f32);
  if (!bias) {
    Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(f32));
    return linalg::FillOp::create(b, loc, zero, empty).getResult(0);
  }
  unsigned rank = shape.size();
  auto generic = linalg::GenericOp::create(
      b, loc, empty.getType(), ValueRange{bias}, ValueRange{empty},
      ArrayRef<AffineMap>{biasMap, b.getMultiDimIdentityMap(rank)},
      SmallVector<IteratorType>(rank, IteratorType::parallel),
      [](OpBuilder &nb, Location nloc, ValueRange args) {
        linalg::YieldOp::create(
            nb, nloc, convertFloat(nb, nloc, args[0], args[1].getType()));
      });
  return generic.getResult(0);
}

/// Projects `input [B, S, E]` with `weight [E, heads * d]` (+ `bias`) straight
/// into the head-split layout `[B, heads, S, d]`: loops (b, h, s, i, e),
/// weight read at (e, h * d + i).
Value buildInputProjection(OpBuilder &b, Location loc, Value input,
                           Value weight, Value bias, int64_t heads, int64_t d,
                           Type elementType) {
  MLIRContext *ctx = b.getContext();
  AffineExpr bb, h, s, i, e;
  bindDims(ctx, bb, h, s, i, e);
  SmallVector<OpFoldResult> shape = {tensor::getMixedSize(b, loc, input, 0),
                                     b.getIndexAttr(heads),
                                     tensor::getMixedSize(b, loc, input, 1),
                                     b.getIndexAttr(d)};
  Value acc = buildAccumulator(b, loc, shape, bias,
                               AffineMap::get(4, 0, {h * d + i}, ctx));
  acc = buildContraction(b, loc, input, weight, acc,
                         {AffineMap::get(5, 0, {bb, s, e}, ctx),
                          AffineMap::get(5, 0, {e, h * d + i}, ctx),
                          AffineMap::get(5, 0, {bb, h, s, i}, ctx)},
                         /*numReductions=*/1);
  return convertTensor(b, loc, acc, elementType);
}

/// Merges the heads `[B, H, Sq, dv]` and projects them with `weight
/// [H * dv, Eo]` (+ `bias`) into `[B, Sq, Eo]`: loops (b, s, o, h, i), weight
/// read at (h * dv + i, o). The merge is the reduction over h and i.
Value buildOutputProjection(OpBuilder &b, Location loc, Value heads,
                            Value weight, Value bias, int64_t dv,
                            Type elementType) {
  MLIRContext *ctx = b.getContext();
  AffineExpr bb, s, o, h, i;
  bindDims(ctx, bb, s, o, h, i);
  int64_t eo = cast<ShapedType>(weight.getType()).getDimSize(1);
  SmallVector<OpFoldResult> shape = {tensor::getMixedSize(b, loc, heads, 0),
                                     tensor::getMixedSize(b, loc, heads, 2),
                                     b.getIndexAttr(eo)};
  Value acc =
      buildAccumulator(b, loc, shape, bias, AffineMap::get(3, 0, {o}, ctx));
  acc = buildContraction(b, loc, heads, weight, acc,
                         {AffineMap::get(5, 0, {bb, h, s, i}, ctx),
                          AffineMap::get(5, 0, {h * dv + i, o}, ctx),
                          AffineMap::get(5, 0, {bb, s, o}, ctx)},
                         /*numReductions=*/2);
  return convertTensor(b, loc, acc, elementType);
}

struct DecomposeMultiHeadAttention final
    : OpRewritePattern<MultiHeadAttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MultiHeadAttentionOp op,
                                PatternRewriter &rewriter) const override {
    if (failed(decomposeMultiHeadAttention(rewriter, op)))
      return rewriter.notifyMatchFailure(op, "could not decompose");
    return success();
  }
};

struct MHADecomposePass final
    : mha::impl::MHADecomposePassBase<MHADecomposePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateDecomposeMultiHeadAttentionPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace

FailureOr<AttentionOp>
mha::decomposeMultiHeadAttention(RewriterBase &rewriter,
                                 MultiHeadAttentionOp op) {
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  Location loc = op.getLoc();
  Type elementType = getElementTypeOrSelf(op.getQuery().getType());
  int64_t numHeads = op.getNumHeads();
  int64_t numKvHeads = op.getNumKvHeadsOrDefault();
  int64_t dk = op.getHeadDimQK();
  int64_t dv = op.getHeadDimV();

  Value q = buildInputProjection(rewriter, loc, op.getQuery(), op.getWQ(),
                                 op.getBQ(), numHeads, dk, elementType);
  Value k = buildInputProjection(rewriter, loc, op.getKey(), op.getWK(),
                                 op.getBK(), numKvHeads, dk, elementType);
  Value v = buildInputProjection(rewriter, loc, op.getValue(), op.getWV(),
                                 op.getBV(), numKvHeads, dv, elementType);

  SmallVector<OpFoldResult> headsShape = {
      tensor::getMixedSize(rewriter, loc, q, 0), rewriter.getIndexAttr(numHeads),
      tensor::getMixedSize(rewriter, loc, q, 2), rewriter.getIndexAttr(dv)};
  Value init = tensor::EmptyOp::create(rewriter, loc, headsShape, elementType);
  auto attention = AttentionOp::create(
      rewriter, loc, init.getType(), q, k, v, op.getMask(),
      /*causal_offset=*/Value(), init, op.getScaleAttr(), op.getCausalAttr());

  Value result =
      buildOutputProjection(rewriter, loc, attention.getResult(), op.getWO(),
                            op.getBO(), dv, elementType);
  // The result type may know more static sizes than the query did.
  if (result.getType() != op.getType())
    result = tensor::CastOp::create(rewriter, loc, op.getType(), result);
  rewriter.replaceOp(op, result);
  return attention;
}

void mha::populateDecomposeMultiHeadAttentionPatterns(
    RewritePatternSet &patterns) {
  patterns.add<DecomposeMultiHeadAttention>(patterns.getContext());
}
