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
#include "mha/Dialect/MHA/Utils/LinalgBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
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

/// The layer's mask with every dynamic dim that broadcasts at run time (a
/// rank-4 mask dim that is 1 when its score dim is not) expanded to the
/// score size, so that mha.attention, whose dynamic mask dims must match the
/// scores, receives it. Static size-1 dims stay: they broadcast through the
/// indexing maps. The expansion only runs when a dim is 1 at run time.
Value expandRuntimeMaskBroadcasts(OpBuilder &b, Location loc, Value mask,
                                  ArrayRef<OpFoldResult> scoreSizes) {
  auto type = cast<RankedTensorType>(mask.getType());
  MaskLayout layout = *getMaskLayout(type.getRank());
  if (!layout.broadcasts)
    return mask;
  for (auto [d, scoreDim] : llvm::enumerate(layout.scoreDims)) {
    if (!type.isDynamicDim(d) || isConstantIntValue(scoreSizes[scoreDim], 1))
      continue;
    Value isOne = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::eq, tensor::DimOp::create(b, loc, mask, d),
        arith::ConstantIndexOp::create(b, loc, 1));
    Value current = mask;
    auto ifOp = scf::IfOp::create(
        b, loc, isOne,
        [&](OpBuilder &tb, Location tloc) {
          // mask[.., 0:1, ..] with dim d folded into a neighbour, broadcast
          // along d. Not a rank-reducing slice: with other unit dims (a batch
          // of 1) which unit dim it drops is ambiguous, and after
          // bufferization expand-strided-metadata, deciding by the (dynamic)
          // strides, dropped the wrong one.
          int64_t rank = type.getRank();
          SmallVector<OpFoldResult> sizes =
              tensor::getMixedSizes(tb, tloc, current);
          SmallVector<OpFoldResult> fullSizes = sizes;
          sizes[d] = tb.getIndexAttr(1);
          fullSizes[d] = scoreSizes[scoreDim];
          SmallVector<int64_t> sliceShape(type.getShape());
          sliceShape[d] = 1;
          Value slice = tensor::ExtractSliceOp::create(
              tb, tloc,
              RankedTensorType::get(sliceShape, type.getElementType()),
              current, SmallVector<OpFoldResult>(rank, tb.getIndexAttr(0)),
              sizes, SmallVector<OpFoldResult>(rank, tb.getIndexAttr(1)));
          SmallVector<ReassociationIndices> groups;
          for (int64_t i = 0; i < rank; ++i)
            if (i != int64_t(d))
              groups.push_back({i});
          int64_t into = d > 0 ? int64_t(d) - 1 : 0;
          groups[into].insert(d > 0 ? groups[into].end()
                                    : groups[into].begin(),
                              int64_t(d));
          Value row = tensor::CollapseShapeOp::create(tb, tloc, slice, groups);
          Value empty = tensor::EmptyOp::create(tb, tloc, fullSizes,
                                                type.getElementType());
          Value expanded =
              linalg::BroadcastOp::create(tb, tloc, row, empty,
                                          ArrayRef<int64_t>{int64_t(d)})
                  ->getResult(0);
          scf::YieldOp::create(
              tb, tloc,
              Value(tensor::CastOp::create(tb, tloc, type, expanded)));
        },
        [&](OpBuilder &eb, Location eloc) {
          scf::YieldOp::create(eb, eloc, current);
        });
    mask = ifOp.getResult(0);
  }
  return mask;
}

/// A projection: its contraction and its result in the layer's element type.
struct Projection {
  Operation *contraction;
  Value result;
};

/// `value` with its dim `dim` (of size heads * d) split into [heads, d]: a
/// reshape (a view after bufferization, no copy) that lets the projections
/// read a head's columns through a plain permutation map, which the
/// vectorizer takes.
static Value splitHeads(OpBuilder &b, Location loc, Value value, int64_t dim,
                        int64_t heads, int64_t d) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape[dim] = d;
  shape.insert(shape.begin() + dim, heads);
  SmallVector<ReassociationIndices> reassociation;
  for (int64_t i = 0, r = type.getRank(); i < r; ++i) {
    int64_t first = i <= dim ? i : i + 1;
    reassociation.push_back(i == dim ? ReassociationIndices{first, first + 1}
                                     : ReassociationIndices{first});
  }
  SmallVector<OpFoldResult> outputShape;
  for (int64_t i = 0, r = type.getRank(); i < r; ++i) {
    if (i == dim) {
      outputShape.push_back(b.getIndexAttr(heads));
      outputShape.push_back(b.getIndexAttr(d));
    } else {
      outputShape.push_back(tensor::getMixedSize(b, loc, value, i));
    }
  }
  return tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get(shape, type.getElementType()), value,
      reassociation, outputShape);
}

/// Projects `input [B, S, E]` with `weight [E, heads * d]` (+ `bias`) straight
/// into the head-split layout `[B, heads, S, d]`: loops (b, h, s, e, i),
/// weight read as [E, heads, d] at (e, h, i). The reduction over e is outside
/// the loop over i, so the innermost loop walks a row of the weight and of
/// the result.
Projection buildInputProjection(OpBuilder &b, Location loc, Value input,
                                Value weight, Value bias, int64_t heads,
                                int64_t d, Type elementType) {
  MLIRContext *ctx = b.getContext();
  AffineExpr bb, h, s, e, i;
  bindDims(ctx, bb, h, s, e, i);
  SmallVector<OpFoldResult> shape = {tensor::getMixedSize(b, loc, input, 0),
                                     b.getIndexAttr(heads),
                                     tensor::getMixedSize(b, loc, input, 1),
                                     b.getIndexAttr(d)};
  // The bias, as [heads, d], over the result's dims (b, h, s, i).
  Value acc = buildAccumulatorInit(
      b, loc, shape, b.getF32Type(),
      bias ? splitHeads(b, loc, bias, 0, heads, d) : Value(),
      AffineMap::get(4, 0, {getAffineDimExpr(1, ctx), getAffineDimExpr(3, ctx)},
                     ctx));
  acc = buildContraction(b, loc, input, splitHeads(b, loc, weight, 1, heads, d),
                         acc,
                         {AffineMap::get(5, 0, {bb, s, e}, ctx),
                          AffineMap::get(5, 0, {e, h, i}, ctx),
                          AffineMap::get(5, 0, {bb, h, s, i}, ctx)});
  return {acc.getDefiningOp(), convertTensor(b, loc, acc, elementType)};
}

/// Merges the heads `[B, H, Sq, dv]` and projects them with `weight
/// [H * dv, Eo]` (+ `bias`) into `[B, Sq, Eo]`: loops (b, s, h, i, o), weight
/// read as [H, dv, Eo] at (h, i, o). The merge is the reduction over h and i,
/// outside the loop over o, which walks a row of the weight and of the
/// result.
Projection buildOutputProjection(OpBuilder &b, Location loc, Value heads,
                                 Value weight, Value bias, int64_t dv,
                                 Type elementType) {
  MLIRContext *ctx = b.getContext();
  AffineExpr bb, s, h, i, o;
  bindDims(ctx, bb, s, h, i, o);
  int64_t eo = cast<ShapedType>(weight.getType()).getDimSize(1);
  int64_t numHeads = cast<ShapedType>(heads.getType()).getDimSize(1);
  SmallVector<OpFoldResult> shape = {tensor::getMixedSize(b, loc, heads, 0),
                                     tensor::getMixedSize(b, loc, heads, 2),
                                     b.getIndexAttr(eo)};
  // The bias over the result's dims (b, s, o).
  Value acc = buildAccumulatorInit(b, loc, shape, b.getF32Type(), bias,
                                   AffineMap::get(3, 0, {getAffineDimExpr(2, ctx)},
                                                  ctx));
  acc = buildContraction(b, loc, heads,
                         splitHeads(b, loc, weight, 0, numHeads, dv), acc,
                         {AffineMap::get(5, 0, {bb, h, s, i}, ctx),
                          AffineMap::get(5, 0, {h, i, o}, ctx),
                          AffineMap::get(5, 0, {bb, s, o}, ctx)});
  return {acc.getDefiningOp(), convertTensor(b, loc, acc, elementType)};
}

/// `input [B, heads, S, d]` rotated by the layer's tables (mha.rotary),
/// token s of batch b at `offsets[b] + s`.
static Value buildRotary(OpBuilder &b, Location loc, MultiHeadAttentionOp op,
                         Value input, Value offsets) {
  Value init = tensor::EmptyOp::create(
      b, loc, tensor::getMixedSizes(b, loc, input),
      getElementTypeOrSelf(input.getType()));
  return RotaryOp::create(b, loc, input.getType(), input, op.getRotaryCos(),
                          op.getRotarySin(), offsets, init,
                          op.getRotaryInterleavedAttr())
      .getResult();
}

/// `lengths + amount` elementwise (a linalg.generic over [B]).
static Value addToLengths(OpBuilder &b, Location loc, Value lengths,
                          OpFoldResult amount) {
  auto type = cast<RankedTensorType>(lengths.getType());
  Type elementType = type.getElementType();
  Value step = arith::IndexCastOp::create(
      b, loc, elementType, getValueOrCreateConstantIndexOp(b, loc, amount));
  Value init = tensor::EmptyOp::create(
      b, loc, tensor::getMixedSizes(b, loc, lengths), elementType);
  AffineMap identity = b.getMultiDimIdentityMap(1);
  return linalg::GenericOp::create(
             b, loc, type, lengths, init,
             ArrayRef<AffineMap>{identity, identity},
             ArrayRef<IteratorType>{IteratorType::parallel},
             [&](OpBuilder &nb, Location nloc, ValueRange args) {
               linalg::YieldOp::create(
                   nb, nloc,
                   Value(arith::AddIOp::create(nb, nloc, args[0], step)));
             })
      .getResult(0);
}

/// The zero offsets [B] (i32) of rotary positions without a cache: token s
/// at position s.
static Value buildZeroOffsets(OpBuilder &b, Location loc, Value query) {
  Type i32 = b.getI32Type();
  Value init = tensor::EmptyOp::create(
      b, loc, ArrayRef<OpFoldResult>{tensor::getMixedSize(b, loc, query, 0)},
      i32);
  return linalg::FillOp::create(
             b, loc, Value(arith::ConstantIntOp::create(b, loc, i32, 0)), init)
      .getResult(0);
}

struct DecomposeMultiHeadAttention final
    : OpRewritePattern<MultiHeadAttentionOp> {
  DecomposeMultiHeadAttention(MLIRContext *context, bool unfusedOnly,
                              int64_t projectionRows)
      : OpRewritePattern(context), unfusedOnly(unfusedOnly),
        projectionRows(projectionRows) {}

  LogicalResult matchAndRewrite(MultiHeadAttentionOp op,
                                PatternRewriter &rewriter) const override {
    if (unfusedOnly && getUnfusedReason(op).empty())
      return rewriter.notifyMatchFailure(op, "fused by mha-fuse-layer");
    FailureOr<DecomposedLayer> layer = decomposeMultiHeadAttention(rewriter, op);
    if (failed(layer))
      return rewriter.notifyMatchFailure(op, "could not decompose");
    // A projection tiling does not take stays whole: the same numbers, on
    // one thread.
    if (projectionRows > 0)
      (void)tileProjectionsForThreads(rewriter, *layer, projectionRows);
    return success();
  }

private:
  bool unfusedOnly;
  int64_t projectionRows;
};

struct MHADecomposePass final
    : mha::impl::MHADecomposePassBase<MHADecomposePass> {
  using MHADecomposePassBase::MHADecomposePassBase;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    if (projectionRows < 0) {
      getOperation()->emitError()
          << "projection-rows must be positive, or 0 to leave the "
             "projections whole, found "
          << static_cast<int64_t>(projectionRows);
      return signalPassFailure();
    }
    populateDecomposeMultiHeadAttentionPatterns(patterns, unfusedOnly,
                                                projectionRows);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace

FailureOr<DecomposedLayer>
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

  DecomposedLayer layer;
  Projection q = buildInputProjection(rewriter, loc, op.getQuery(), op.getWQ(),
                                      op.getBQ(), numHeads, dk, elementType);
  Projection k = buildInputProjection(rewriter, loc, op.getKey(), op.getWK(),
                                      op.getBK(), numKvHeads, dk, elementType);
  Projection v = buildInputProjection(rewriter, loc, op.getValue(), op.getWV(),
                                      op.getBV(), numKvHeads, dv, elementType);
  layer.queryProjection = q.contraction;
  layer.keyProjection = k.contraction;
  layer.valueProjection = v.contraction;

  // Rotary embeddings of the step's queries and keys, at the positions
  // after the cache's (or from 0).
  Value queries = q.result, keys = k.result, values = v.result;
  if (op.getRotaryCos()) {
    Value offsets = op.hasKvCache()
                        ? op.getCacheLengths()
                        : buildZeroOffsets(rewriter, loc, op.getQuery());
    queries = buildRotary(rewriter, loc, op, queries, offsets);
    keys = buildRotary(rewriter, loc, op, keys, offsets);
  }
  // A step on KV caches: its keys and values written at each batch's
  // length, the attention over the caches' first lengths + Sk positions.
  Value keyLengths = op.getKeyLengths();
  if (op.hasKvCache()) {
    Value lengths = op.getCacheLengths();
    keys = CacheAppendOp::create(rewriter, loc, op.getKCache().getType(), keys,
                                 lengths, op.getKCache())
               .getResult();
    values = CacheAppendOp::create(rewriter, loc, op.getVCache().getType(),
                                   values, lengths, op.getVCache())
                 .getResult();
    keyLengths = addToLengths(rewriter, loc, lengths,
                              tensor::getMixedSize(rewriter, loc, k.result, 2));
  }

  SmallVector<OpFoldResult> headsShape = {
      tensor::getMixedSize(rewriter, loc, q.result, 0),
      rewriter.getIndexAttr(numHeads),
      tensor::getMixedSize(rewriter, loc, q.result, 2),
      rewriter.getIndexAttr(dv)};
  Value init = tensor::EmptyOp::create(rewriter, loc, headsShape, elementType);
  Value mask = op.getMask();
  if (mask)
    mask = expandRuntimeMaskBroadcasts(
        rewriter, loc, mask,
        {headsShape[0], headsShape[1], headsShape[2],
         tensor::getMixedSize(rewriter, loc, keys, 2)});
  layer.attention = AttentionOp::create(
      rewriter, loc, init.getType(), queries, keys, values, mask, keyLengths,
      /*key_offset=*/Value(), /*causal_offset=*/Value(), init,
      op.getScaleAttr(), op.getCausalAttr(),
      /*key_transposed=*/UnitAttr(), op.getSoftcapAttr(),
      op.getWindowLeftAttr(), op.getWindowRightAttr());

  Projection out =
      buildOutputProjection(rewriter, loc, layer.attention.getResult(),
                            op.getWO(), op.getBO(), dv, elementType);
  layer.outputProjection = out.contraction;
  Value result = out.result;
  // The result type may know more static sizes than the query did.
  if (result.getType() != op.getResult().getType())
    result = tensor::CastOp::create(rewriter, loc, op.getResult().getType(),
                                    result);
  // The probabilities, when asked for: beside the attention, from the same
  // head-split projections.
  SmallVector<Value> results = {result};
  if (std::optional<StringRef> mode = op.getReturnWeights()) {
    SmallVector<OpFoldResult> shape = {headsShape[0]};
    if (*mode != "average")
      shape.push_back(headsShape[1]);
    shape.push_back(headsShape[2]);
    shape.push_back(tensor::getMixedSize(rewriter, loc, keys, 2));
    Value init = tensor::EmptyOp::create(rewriter, loc, shape, elementType);
    Value weights =
        AttentionWeightsOp::create(
            rewriter, loc, init.getType(), queries, keys, mask,
            op.getKeyLengths(), /*key_offset=*/Value(),
            /*causal_offset=*/Value(), init, op.getScaleAttr(),
            op.getCausalAttr(),
            *mode == "average" ? rewriter.getUnitAttr() : UnitAttr(),
            /*key_transposed=*/UnitAttr(), op.getSoftcapAttr(),
            op.getWindowLeftAttr(), op.getWindowRightAttr(),
            WeightsStageAttr::get(rewriter.getContext(),
                                  WeightsStage::Probabilities))
            .getResult();
    if (weights.getType() != op.getWeights().getType())
      weights = tensor::CastOp::create(rewriter, loc,
                                       op.getWeights().getType(), weights);
    layer.weights = weights;
    results.push_back(weights);
  }
  // The updated caches (typed as the caches, as the verifier requires).
  if (op.hasKvCache())
    results.append({layer.attention.getKey(), layer.attention.getValue()});
  rewriter.replaceOp(op, results);
  layer.result = result;
  return layer;
}

StringRef mha::getUnfusedReason(MultiHeadAttentionOp op) {
  if (op.getReturnWeights())
    return "returns its attention weights, which need the whole score matrix";
  if (op.hasKvCache())
    return "updates KV caches (kv_cache)";
  if (op.getRotaryCos())
    return "rotates its queries and keys (rotary)";
  return "";
}

void mha::populateDecomposeMultiHeadAttentionPatterns(
    RewritePatternSet &patterns, bool unfusedOnly, int64_t projectionRows) {
  patterns.add<DecomposeMultiHeadAttention>(patterns.getContext(), unfusedOnly,
                                            projectionRows);
}
