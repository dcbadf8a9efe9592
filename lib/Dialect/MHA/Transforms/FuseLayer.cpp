//===- FuseLayer.cpp - the whole layer in one fused loop nest ---*- C++ -*-===//
//
// mha.multi_head_attention -> one loop nest, with no tensor of the layer's
// intermediates materialized whole:
//
//   Y = b_o (or 0), [B, Sq, Eo] in f32
//   for b < B, for kv head g < Hkv:
//     K = key[b] · w_k[:, g]  (+ b_k[g])         [Sk, dk]  once per (b, g),
//     V = value[b] · w_v[:, g] (+ b_v[g])        [Sk, dv]  reused by every
//     for query head h of group g:                         query head and tile
//       for query tile i0:
//         Q = (query[b, i0:] · w_q[:, h] (+ b_q[h])) · scale      [qt, dk]
//         O = online softmax over key tiles of Q, K, V            [qt, dv]
//         Y[b, i0:] += O · w_o[h, :]
//
// Head split and merge are column / row slices of the weights (strided
// views, no copies); biases initialize the accumulators and the scale is the
// Q projection's epilogue; the output projection consumes each finished
// query tile, so there is no [B, Sq, H·dv] round trip.
//
//===----------------------------------------------------------------------===//

#include "mha/Dialect/MHA/IR/MHAOps.h"
#include "mha/Dialect/MHA/Transforms/Passes.h"
#include "mha/Dialect/MHA/Transforms/Transforms.h"
#include "LinalgBuilders.h"
#include "OnlineSoftmax.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::mha {
#define GEN_PASS_DEF_MHAFUSELAYERPASS
#include "mha/Dialect/MHA/Transforms/Passes.h.inc"
} // namespace mlir::mha

using namespace mlir;
using namespace mlir::mha;
using utils::IteratorType;

namespace {

/// The f32 projection of `input` ([1, S, E], one batch) onto columns
/// [column, column + width) of `weight` ([E, N]): input · weight[:, cols]
/// (+ bias[cols]) (· scale), as [S, width]. The bias is the accumulator's
/// initial value and the scale an epilogue on the tile.
Value buildHeadProjection(OpBuilder &b, Location loc, Value input,
                          Value weight, Value bias, Value column,
                          int64_t width, double scale) {
  MLIRContext *ctx = b.getContext();
  int64_t e = cast<ShapedType>(weight.getType()).getDimSize(0);
  OpFoldResult rows = tensor::getMixedSize(b, loc, input, 1);
  OpFoldResult one = b.getIndexAttr(1), zero = b.getIndexAttr(0);
  Value weightCols = tensor::ExtractSliceOp::create(
      b, loc, weight, ArrayRef<OpFoldResult>{zero, column},
      ArrayRef<OpFoldResult>{b.getIndexAttr(e), b.getIndexAttr(width)},
      ArrayRef<OpFoldResult>{one, one});
  AffineExpr s, c, k;
  bindDims(ctx, s, c, k);
  SmallVector<IteratorType> par2(2, IteratorType::parallel);
  AffineMap id2 = AffineMap::getMultiDimIdentityMap(2, ctx);

  Value acc;
  if (bias) {
    Value biasCols = tensor::ExtractSliceOp::create(
        b, loc, bias, ArrayRef<OpFoldResult>{column},
        ArrayRef<OpFoldResult>{b.getIndexAttr(width)},
        ArrayRef<OpFoldResult>{one});
    acc = buildGeneric(
        b, loc, biasCols,
        tensor::EmptyOp::create(b, loc,
                                ArrayRef<OpFoldResult>{rows, b.getIndexAttr(width)},
                                b.getF32Type()),
        {AffineMap::get(2, 0, {c}, ctx), id2}, par2,
        [](OpBuilder &nb, Location nloc, ValueRange args) {
          linalg::YieldOp::create(
              nb, nloc, convertFloat(nb, nloc, args[0], args[1].getType()));
        });
  } else {
    acc = buildFilled(b, loc, {rows, b.getIndexAttr(width)}, 0.0);
  }
  acc = buildContraction(b, loc, input, weightCols, acc,
                         {AffineMap::get(3, 0, {getAffineConstantExpr(0, ctx), s, k}, ctx),
                          AffineMap::get(3, 0, {k, c}, ctx),
                          AffineMap::get(3, 0, {s, c}, ctx)},
                         /*numReductions=*/1);
  if (scale == 1.0)
    return acc;
  Value factor = arith::ConstantOp::create(
      b, loc, b.getFloatAttr(b.getF32Type(), scale));
  return buildGeneric(b, loc, ValueRange{}, acc, {id2}, par2,
                      [&](OpBuilder &nb, Location nloc, ValueRange args) {
                        linalg::YieldOp::create(
                            nb, nloc,
                            Value(arith::MulFOp::create(nb, nloc, args[0],
                                                        factor)));
                      });
}

/// A [1, S, E] slice of a [B, S, E] tensor: batch `batch`, rows
/// [row, row + rows).
Value sliceBatchRows(OpBuilder &b, Location loc, Value source, Value batch,
                     OpFoldResult row, OpFoldResult rows) {
  int64_t e = cast<ShapedType>(source.getType()).getDimSize(2);
  OpFoldResult one = b.getIndexAttr(1);
  return tensor::ExtractSliceOp::create(
      b, loc, source, ArrayRef<OpFoldResult>{batch, row, b.getIndexAttr(0)},
      ArrayRef<OpFoldResult>{one, rows, b.getIndexAttr(e)},
      ArrayRef<OpFoldResult>{one, one, one});
}

struct FuseMultiHeadAttention final : OpRewritePattern<MultiHeadAttentionOp> {
  FuseMultiHeadAttention(MLIRContext *ctx, TileOptions options)
      : OpRewritePattern(ctx), options(options) {}

  LogicalResult matchAndRewrite(MultiHeadAttentionOp op,
                                PatternRewriter &rewriter) const override {
    FailureOr<Value> fused = fuseMultiHeadAttention(rewriter, op, options);
    if (failed(fused))
      return rewriter.notifyMatchFailure(op, "could not fuse the layer");
    rewriter.replaceOp(op, *fused);
    return success();
  }

  TileOptions options;
};

struct MHAFuseLayerPass final
    : mha::impl::MHAFuseLayerPassBase<MHAFuseLayerPass> {
  using MHAFuseLayerPassBase::MHAFuseLayerPassBase;

  void runOnOperation() override {
    SmallVector<MultiHeadAttentionOp> ops;
    getOperation()->walk([&](MultiHeadAttentionOp op) { ops.push_back(op); });
    IRRewriter rewriter(&getContext());
    TileOptions options{qTileSize, kvTileSize};
    for (MultiHeadAttentionOp op : ops) {
      FailureOr<Value> fused = fuseMultiHeadAttention(rewriter, op, options);
      if (failed(fused))
        return signalPassFailure();
      rewriter.replaceOp(op, *fused);
    }
  }
};

} // namespace

FailureOr<Value> mha::fuseMultiHeadAttention(RewriterBase &rewriter,
                                             MultiHeadAttentionOp op,
                                             const TileOptions &options) {
  if (options.qTileSize <= 0 || options.kvTileSize <= 0)
    return op.emitOpError() << "tile sizes must be positive, found q-tile-size="
                            << options.qTileSize
                            << " kv-tile-size=" << options.kvTileSize;
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  Location loc = op.getLoc();
  MLIRContext *ctx = rewriter.getContext();
  Type elementType = getElementTypeOrSelf(op.getQuery().getType());
  int64_t numKvHeads = op.getNumKvHeadsOrDefault();
  int64_t group = op.getNumHeads() / numKvHeads;
  int64_t dk = op.getHeadDimQK(), dv = op.getHeadDimV();
  int64_t eo = cast<ShapedType>(op.getWO().getType()).getDimSize(1);
  double scale = op.getScaleOrDefault();

  auto index = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(rewriter, loc, v);
  };
  Value zero = index(0), one = index(1);
  Value batch = getValueOrCreateConstantIndexOp(
      rewriter, loc, tensor::getMixedSize(rewriter, loc, op.getQuery(), 0));
  Value sq = getValueOrCreateConstantIndexOp(
      rewriter, loc, tensor::getMixedSize(rewriter, loc, op.getQuery(), 1));
  Value sk = getValueOrCreateConstantIndexOp(
      rewriter, loc, tensor::getMixedSize(rewriter, loc, op.getKey(), 1));
  Value causalBase; // Sk - Sq: query i sees key j iff j <= i + Sk - Sq.
  if (op.getCausal())
    causalBase = arith::SubIOp::create(rewriter, loc, sk, sq);

  // Y = b_o broadcast (or 0), the f32 accumulator of the output projection.
  SmallVector<OpFoldResult> outShape = {batch, sq, rewriter.getIndexAttr(eo)};
  Value y;
  AffineMap id3 = AffineMap::getMultiDimIdentityMap(3, ctx);
  if (Value bias = op.getBO()) {
    y = buildGeneric(
        rewriter, loc, bias,
        tensor::EmptyOp::create(rewriter, loc, outShape, rewriter.getF32Type()),
        {AffineMap::get(3, 0, {getAffineDimExpr(2, ctx)}, ctx), id3},
        SmallVector<IteratorType>(3, IteratorType::parallel),
        [](OpBuilder &nb, Location nloc, ValueRange args) {
          linalg::YieldOp::create(
              nb, nloc, convertFloat(nb, nloc, args[0], args[1].getType()));
        });
  } else {
    y = buildFilled(rewriter, loc, outShape, 0.0);
  }

  Value qTile = index(options.qTileSize);
  auto batchLoop = scf::ForOp::create(
      rewriter, loc, zero, batch, one, ValueRange{y},
      [&](OpBuilder &b, Location l, Value bi, ValueRange bArgs) {
        auto kvLoop = scf::ForOp::create(
            b, l, zero, index(numKvHeads), one, bArgs,
            [&](OpBuilder &b, Location l, Value g, ValueRange gArgs) {
              // K and V of kv head g, computed once for its whole group.
              Value keyB = sliceBatchRows(b, l, op.getKey(), bi, b.getIndexAttr(0), sk);
              Value valueB =
                  sliceBatchRows(b, l, op.getValue(), bi, b.getIndexAttr(0), sk);
              Value k = buildHeadProjection(
                  b, l, keyB, op.getWK(), op.getBK(),
                  arith::MulIOp::create(b, l, g, index(dk)), dk, 1.0);
              Value v = buildHeadProjection(
                  b, l, valueB, op.getWV(), op.getBV(),
                  arith::MulIOp::create(b, l, g, index(dv)), dv, 1.0);
              auto headLoop = scf::ForOp::create(
                  b, l, zero, index(group), one, gArgs,
                  [&](OpBuilder &b, Location l, Value hh, ValueRange hArgs) {
                    Value h = arith::AddIOp::create(
                        b, l, arith::MulIOp::create(b, l, g, index(group)), hh);
                    Value wO = tensor::ExtractSliceOp::create(
                        b, l, op.getWO(),
                        ArrayRef<OpFoldResult>{
                            arith::MulIOp::create(b, l, h, index(dv)).getResult(),
                            b.getIndexAttr(0)},
                        ArrayRef<OpFoldResult>{b.getIndexAttr(dv),
                                               b.getIndexAttr(eo)},
                        ArrayRef<OpFoldResult>{b.getIndexAttr(1),
                                               b.getIndexAttr(1)});
                    auto queryLoop = scf::ForOp::create(
                        b, l, zero, sq, qTile, hArgs,
                        [&](OpBuilder &b, Location l, Value i0,
                            ValueRange iArgs) {
                          Value rows = arith::MinSIOp::create(
                              b, l, qTile, arith::SubIOp::create(b, l, sq, i0));
                          // Q of this tile and head, scaled: producer fusion.
                          Value q = buildHeadProjection(
                              b, l, sliceBatchRows(b, l, op.getQuery(), bi, i0, rows),
                              op.getWQ(), op.getBQ(),
                              arith::MulIOp::create(b, l, h, index(dk)), dk,
                              scale);
                          ScoreMask mask;
                          if (Value fullMask = op.getMask())
                            mask.mask = sliceMaskForTile(
                                b, l, fullMask, {bi, h, i0},
                                {b.getIndexAttr(1), b.getIndexAttr(1), rows});
                          if (causalBase)
                            mask.causalOffset =
                                arith::AddIOp::create(b, l, i0, causalBase);
                          Value heads = buildOnlineSoftmaxAttention(
                              b, l, q, k, v, /*scale=*/1.0, mask,
                              options.kvTileSize,
                              tensor::EmptyOp::create(
                                  b, l,
                                  ArrayRef<OpFoldResult>{rows, b.getIndexAttr(dv)},
                                  b.getF32Type()));
                          // Y[b, i0:] += O · w_o[h]: the output projection
                          // consumes the finished tile.
                          Value yTile = sliceBatchRows(b, l, iArgs[0], bi, i0, rows);
                          AffineExpr i, o, c;
                          bindDims(ctx, i, o, c);
                          yTile = buildContraction(
                              b, l, heads, wO, yTile,
                              {AffineMap::get(3, 0, {i, c}, ctx),
                               AffineMap::get(3, 0, {c, o}, ctx),
                               AffineMap::get(3, 0, {getAffineConstantExpr(0, ctx), i, o}, ctx)},
                              /*numReductions=*/1);
                          Value updated = tensor::InsertSliceOp::create(
                              b, l, yTile, iArgs[0],
                              ArrayRef<OpFoldResult>{bi, i0, b.getIndexAttr(0)},
                              ArrayRef<OpFoldResult>{b.getIndexAttr(1), rows,
                                                     b.getIndexAttr(eo)},
                              ArrayRef<OpFoldResult>{b.getIndexAttr(1),
                                                     b.getIndexAttr(1),
                                                     b.getIndexAttr(1)});
                          scf::YieldOp::create(b, l, updated);
                        });
                    scf::YieldOp::create(b, l, queryLoop.getResults());
                  });
              scf::YieldOp::create(b, l, headLoop.getResults());
            });
        scf::YieldOp::create(b, l, kvLoop.getResults());
      });

  Value result = convertTensor(rewriter, loc, batchLoop.getResult(0), elementType);
  if (result.getType() != op.getType())
    result = tensor::CastOp::create(rewriter, loc, op.getType(), result);
  return result;
}

void mha::populateFuseMultiHeadAttentionPatterns(RewritePatternSet &patterns,
                                                 const TileOptions &options) {
  patterns.add<FuseMultiHeadAttention>(patterns.getContext(), options);
}
