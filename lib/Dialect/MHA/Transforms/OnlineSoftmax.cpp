//===- OnlineSoftmax.cpp - FlashAttention-2 inner loop ----------*- C++ -*-===//
//
// For one tile of queries Q [qt, dk] of one head, the loop over key/value
// tiles that never holds more than a [qt, kt] block of scores:
//
//   m = -inf, l = 0, acc = 0                                  (f32)
//   for each key tile j0 (causal: only up to the tile's last visible key)
//     s     = mask(Q · K[j0:j0+kt]ᵀ · scale)                  [qt, kt]
//     m'    = max(m, rowmax(s))
//     p     = exp(s - m')          (0 on rows with m' = -inf)
//     alpha = exp(m - m')          (0 on rows with m' = -inf)
//     l     = alpha · l + rowsum(p)
//     acc   = alpha · acc + p · V[j0:j0+kt]
//     m     = m'
//   out = acc / l                  (0 where l = 0: the row saw no key)
//
//===----------------------------------------------------------------------===//

#include "OnlineSoftmax.h"
#include "LinalgBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <limits>

using namespace mlir;
using namespace mlir::mha;
using utils::IteratorType;

static Value negInfF32(OpBuilder &b, Location loc) {
  Type f32 = b.getF32Type();
  return arith::ConstantOp::create(
      b, loc,
      b.getFloatAttr(f32, APFloat::getInf(APFloat::IEEEsingle(), true)));
}

Value mha::buildLogit(OpBuilder &b, Location loc, Value score, double scale,
                      Value maskValue, Value visible) {
  Type f32 = b.getF32Type();
  Value x = arith::MulFOp::create(
      b, loc, score,
      arith::ConstantOp::create(b, loc, b.getFloatAttr(f32, scale)));
  Value negInf = negInfF32(b, loc);
  if (maskValue) {
    if (maskValue.getType().isInteger(1))
      x = arith::SelectOp::create(b, loc, maskValue, x, negInf);
    else
      x = arith::AddFOp::create(b, loc, x,
                                convertFloat(b, loc, maskValue, f32));
  }
  if (visible)
    x = arith::SelectOp::create(b, loc, visible, x, negInf);
  return x;
}

Value mha::buildSafeExp(OpBuilder &b, Location loc, Value x, Value rowMax) {
  Value noKey = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                      rowMax, negInfF32(b, loc));
  Value e = math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, x, rowMax));
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(b.getF32Type()));
  return arith::SelectOp::create(b, loc, noKey, zero, e);
}

Value mha::buildNormalize(OpBuilder &b, Location loc, Value acc, Value l,
                          Type resultType) {
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(b.getF32Type()));
  Value noKey =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, l, zero);
  Value div = arith::DivFOp::create(b, loc, acc, l);
  Value out = arith::SelectOp::create(b, loc, noKey, zero, div);
  return convertFloat(b, loc, out, resultType);
}

Value mha::readMaskElement(OpBuilder &b, Location loc, Value mask,
                           ArrayRef<Value> scoreIndices) {
  auto type = cast<ShapedType>(mask.getType());
  int64_t rank = type.getRank();
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  // The score dims the mask's dims stand for: (i, j), (b, i, j) or all four.
  SmallVector<Value> indices =
      rank == 2   ? SmallVector<Value>{scoreIndices[2], scoreIndices[3]}
      : rank == 3 ? SmallVector<Value>{scoreIndices[0], scoreIndices[2],
                                       scoreIndices[3]}
                  : SmallVector<Value>(scoreIndices);
  // Rank 4 broadcasts: index 0 where the dim is 1, statically or at run time.
  if (rank == 4) {
    for (int64_t d = 0; d < 4; ++d) {
      if (type.getDimSize(d) == 1) {
        indices[d] = zero;
      } else if (type.isDynamicDim(d)) {
        Value size = tensor::DimOp::create(b, loc, mask, d);
        Value isOne = arith::CmpIOp::create(
            b, loc, arith::CmpIPredicate::eq, size,
            arith::ConstantIndexOp::create(b, loc, 1));
        indices[d] = arith::SelectOp::create(b, loc, isOne, zero, indices[d]);
      }
    }
  }
  return tensor::ExtractOp::create(b, loc, mask, indices);
}

Value mha::buildOnlineSoftmaxAttention(OpBuilder &b, Location loc, Value query,
                                       Value key, Value value, double scale,
                                       const ScoreMask &scoreMask,
                                       int64_t kvTileSize, Value dest) {
  MLIRContext *ctx = b.getContext();
  // Operands may carry leading unit dims (a [1, 1, S, d] tile of one batch
  // and head): they are read through maps with 0 there, so no reshape or
  // slice stands between them and the tensors they were tiled from.
  int64_t rank = cast<ShapedType>(query.getType()).getRank();
  OpFoldResult qt = tensor::getMixedSize(b, loc, query, rank - 2);
  OpFoldResult sk = tensor::getMixedSize(b, loc, key, rank - 2);
  int64_t dk = cast<ShapedType>(key.getType()).getDimSize(rank - 1);
  int64_t dv = cast<ShapedType>(value.getType()).getDimSize(rank - 1);
  auto withUnitDims = [&](unsigned numDims, AffineExpr row, AffineExpr col) {
    SmallVector<AffineExpr> exprs(rank - 2, getAffineConstantExpr(0, ctx));
    exprs.push_back(row);
    exprs.push_back(col);
    return AffineMap::get(numDims, 0, exprs, ctx);
  };
  AffineExpr i, j, c;
  bindDims(ctx, i, j, c);
  auto map3 = [&](ArrayRef<AffineExpr> e) { return AffineMap::get(3, 0, e, ctx); };
  auto map2 = [&](ArrayRef<AffineExpr> e) { return AffineMap::get(2, 0, e, ctx); };
  AffineMap tileMap = map2({i, j}), rowMap = map2({i}), vecMap = AffineMap::get(1, 0, {i}, ctx);
  SmallVector<IteratorType> par2(2, IteratorType::parallel);
  SmallVector<IteratorType> rowReduce = {IteratorType::parallel,
                                         IteratorType::reduction};

  Value m0 = buildFilled(b, loc, {qt}, -std::numeric_limits<double>::infinity());
  Value l0 = buildFilled(b, loc, {qt}, 0.0);
  Value acc0 = buildFilled(b, loc, {qt, b.getIndexAttr(dv)}, 0.0);

  // Keys to visit: all, or (causal) up to the last key the last row sees.
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value kvEnd = getValueOrCreateConstantIndexOp(b, loc, sk);
  Value causalOffset = scoreMask.causalOffset;
  if (causalOffset) {
    Value lastRowEnd = arith::AddIOp::create(
        b, loc, getValueOrCreateConstantIndexOp(b, loc, qt), causalOffset);
    kvEnd = arith::MinSIOp::create(
        b, loc, kvEnd, arith::MaxSIOp::create(b, loc, lastRowEnd, zero));
  }
  Value step = arith::ConstantIndexOp::create(b, loc, kvTileSize);

  auto loop = scf::ForOp::create(
      b, loc, zero, kvEnd, step, ValueRange{m0, l0, acc0},
      [&](OpBuilder &lb, Location lloc, Value j0, ValueRange iterArgs) {
        Value m = iterArgs[0], l = iterArgs[1], acc = iterArgs[2];
        Value remaining = arith::SubIOp::create(lb, lloc, kvEnd, j0);
        Value kt = arith::MinSIOp::create(lb, lloc, step, remaining);
        auto sliceRows = [&](Value source, int64_t width) -> Value {
          SmallVector<OpFoldResult> offsets(rank, lb.getIndexAttr(0));
          SmallVector<OpFoldResult> sizes(rank, lb.getIndexAttr(1));
          SmallVector<OpFoldResult> strides(rank, lb.getIndexAttr(1));
          offsets[rank - 2] = j0;
          sizes[rank - 2] = kt;
          sizes[rank - 1] = lb.getIndexAttr(width);
          return tensor::ExtractSliceOp::create(lb, lloc, source, offsets,
                                                sizes, strides);
        };
        Value keyTile = sliceRows(key, dk);
        Value valueTile = sliceRows(value, dv);

        // s = Q · Kᵀ over (i, j, c).
        Value scores = buildContraction(
            lb, lloc, query, keyTile, buildFilled(lb, lloc, {qt, kt}, 0.0),
            {withUnitDims(3, i, c), withUnitDims(3, j, c), map3({i, j})},
            /*numReductions=*/1);

        // Scale and masks; the causal predicate only where it can fail.
        auto buildLogits = [&](OpBuilder &nb, Location nloc,
                               bool withCausal) -> Value {
          return buildGeneric(
              nb, nloc, ValueRange{}, scores, {tileMap}, par2,
              [&](OpBuilder &gb, Location gloc, ValueRange args) {
                Value row = linalg::IndexOp::create(gb, gloc, 0);
                Value col = arith::AddIOp::create(
                    gb, gloc, j0, linalg::IndexOp::create(gb, gloc, 1));
                // The mask is sliced to this (batch, head, query tile).
                Value zero = arith::ConstantIndexOp::create(gb, gloc, 0);
                Value maskValue =
                    scoreMask.mask
                        ? readMaskElement(gb, gloc, scoreMask.mask,
                                          {zero, zero, row, col})
                        : Value();
                Value visible;
                if (withCausal)
                  visible = arith::CmpIOp::create(
                      gb, gloc, arith::CmpIPredicate::sle, col,
                      arith::AddIOp::create(gb, gloc, row, causalOffset));
                linalg::YieldOp::create(
                    gb, gloc,
                    buildLogit(gb, gloc, args[0], scale, maskValue, visible));
              });
        };
        Value logits;
        if (causalOffset) {
          // The tile straddles the diagonal iff its last key is beyond what
          // row 0 sees: j0 + kt - 1 > causalOffset.
          Value lastKey = arith::SubIOp::create(
              lb, lloc, arith::AddIOp::create(lb, lloc, j0, kt),
              arith::ConstantIndexOp::create(lb, lloc, 1));
          Value straddles = arith::CmpIOp::create(
              lb, lloc, arith::CmpIPredicate::sgt, lastKey, causalOffset);
          auto ifOp = scf::IfOp::create(
              lb, lloc, straddles,
              [&](OpBuilder &tb, Location tloc) {
                scf::YieldOp::create(tb, tloc, buildLogits(tb, tloc, true));
              },
              [&](OpBuilder &eb, Location eloc) {
                scf::YieldOp::create(eb, eloc, buildLogits(eb, eloc, false));
              });
          logits = ifOp.getResult(0);
        } else {
          logits = buildLogits(lb, lloc, false);
        }

        // The running maximum is updated in place (one-shot bufferization
        // keeps loop-carried tensors in place only if the yielded value is
        // written into the iteration argument), so alpha = exp(m - m'), the
        // rescaling of what was accumulated so far, reads m before.
        Value tileMax = buildCombine(
            lb, lloc, logits,
            buildFilled(lb, lloc, {qt}, -std::numeric_limits<double>::infinity()),
            {tileMap, rowMap}, rowReduce, Combine::Max);
        Value alpha = buildGeneric(
            lb, lloc, ValueRange{m, tileMax},
            tensor::EmptyOp::create(lb, lloc, ArrayRef<OpFoldResult>{qt},
                                    lb.getF32Type()),
            {vecMap, vecMap, vecMap}, {IteratorType::parallel},
            [](OpBuilder &gb, Location gloc, ValueRange args) {
              Value mNew = arith::MaximumFOp::create(gb, gloc, args[0], args[1]);
              linalg::YieldOp::create(gb, gloc,
                                      buildSafeExp(gb, gloc, args[0], mNew));
            });
        // m' = max(m, rowmax(s)).
        Value mNew = buildCombine(lb, lloc, tileMax, m, {vecMap, vecMap},
                                  {IteratorType::parallel}, Combine::Max);
        // p = exp(s - m').
        Value probs = buildGeneric(
            lb, lloc, mNew, logits, {rowMap, tileMap}, par2,
            [](OpBuilder &gb, Location gloc, ValueRange args) {
              linalg::YieldOp::create(gb, gloc,
                                      buildSafeExp(gb, gloc, args[1], args[0]));
            });
        // l = alpha · l + rowsum(p).
        Value lScaled = buildCombine(lb, lloc, alpha, l, {vecMap, vecMap},
                                     {IteratorType::parallel}, Combine::Mul);
        Value lNew = buildCombine(lb, lloc, probs, lScaled, {tileMap, rowMap},
                                  rowReduce, Combine::Add);
        // acc = alpha · acc + p · V, over (i, c, j).
        Value accScaled = buildCombine(lb, lloc, alpha, acc, {rowMap, tileMap},
                                       par2, Combine::Mul);
        AffineExpr ch = getAffineDimExpr(1, ctx), key3 = getAffineDimExpr(2, ctx);
        Value accNew = buildContraction(
            lb, lloc, probs, valueTile, accScaled,
            {map3({i, key3}), withUnitDims(3, key3, ch), map3({i, ch})},
            /*numReductions=*/1);
        scf::YieldOp::create(lb, lloc, ValueRange{mNew, lNew, accNew});
      });

  // out = acc / l, 0 where l = 0, converted to dest's element type and
  // written into it.
  Value acc = loop.getResult(2), l = loop.getResult(1);
  return buildGeneric(
      b, loc, ValueRange{acc, l}, dest,
      {tileMap, rowMap, withUnitDims(2, i, j)}, par2,
      [](OpBuilder &gb, Location gloc, ValueRange args) {
        linalg::YieldOp::create(
            gb, gloc,
            buildNormalize(gb, gloc, args[0], args[1], args[2].getType()));
      });
}
