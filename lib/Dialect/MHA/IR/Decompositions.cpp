//===- Decompositions.cpp - mha ops as linalg (AggregatedOpInterface) -----===//
//
// The two steps that take the attention ops down to linalg, each the op's
// `AggregatedOpInterface::decomposeOperation` (so upstream's
// `transform.structured.decompose_interface` applies them too):
//
//   mha.attention         -> f32 state fills, one mha.online_attention over
//                            all keys, normalization out = acc / sum
//   mha.online_attention  -> linalg ops on tensors for its block of keys:
//
//     s     = mask(q · kᵀ · scale)                   [B, H, Sq, Sk]
//     max'  = max(max, rowmax(s))
//     a     = exp(max - max')       (0 on rows with max' = -inf)
//     p     = exp(s - max')         (0 on rows with max' = -inf)
//     sum'  = a · sum + rowsum(p)
//     acc'  = a · acc + p · v
//
// Decomposing the whole op materializes the whole score matrix (the
// reference lowering); decomposing a tile of keys made by tiling the online
// op's reduction dimension is the body of the FlashAttention loop.
//
//===----------------------------------------------------------------------===//

#include "mha/Dialect/MHA/IR/MHAOps.h"
#include "mha/Dialect/MHA/Utils/LinalgBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

using namespace mlir;
using namespace mlir::mha;
using utils::IteratorType;

namespace {

Value f32Constant(OpBuilder &b, Location loc, double value) {
  return arith::ConstantOp::create(b, loc,
                                   b.getFloatAttr(b.getF32Type(), value));
}

Value negInf(OpBuilder &b, Location loc) {
  return arith::ConstantOp::create(
      b, loc,
      b.getFloatAttr(b.getF32Type(),
                     APFloat::getInf(APFloat::IEEEsingle(), /*Negative=*/true)));
}

/// `score` (of the scaled query) capped (`softcap · tanh(score / softcap)`),
/// then with the float mask added, or the bool mask / key visibility as
/// -inf. `maskValue` and `visible` may be null.
Value buildLogit(OpBuilder &b, Location loc, Value score, Value maskValue,
                 Value visible, std::optional<double> softcap) {
  Value x = score;
  if (softcap) {
    x = arith::MulFOp::create(b, loc, x, f32Constant(b, loc, 1.0 / *softcap));
    x = arith::MulFOp::create(b, loc, math::TanhOp::create(b, loc, x),
                              f32Constant(b, loc, *softcap));
  }
  if (maskValue) {
    if (maskValue.getType().isInteger(1))
      x = arith::SelectOp::create(b, loc, maskValue, x, negInf(b, loc));
    else
      x = arith::AddFOp::create(
          b, loc, x,
          convertScalarToDtype(b, loc, maskValue, b.getF32Type(),
                               /*isUnsignedCast=*/false));
  }
  if (visible)
    x = arith::SelectOp::create(b, loc, visible, x, negInf(b, loc));
  return x;
}

/// exp(x - rowMax), with rowMax taken as 0 when it is -inf (the row has seen
/// no key yet; x is -inf too): exp(-inf - -inf) would be NaN, exp(-inf) is
/// 0, and a NaN x still gives NaN.
Value buildSafeExp(OpBuilder &b, Location loc, Value x, Value rowMax) {
  Value noKey = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                      rowMax, negInf(b, loc));
  Value max = arith::SelectOp::create(b, loc, noKey, f32Constant(b, loc, 0.0),
                                      rowMax);
  return math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, x, max));
}

/// The indexing map that reads a mask over the score loops (b, h, i, j):
/// the dims it stands for, with a broadcasting dim of size 1 read at 0.
AffineMap getMaskMap(MLIRContext *ctx, ShapedType maskType) {
  MaskLayout layout = *getMaskLayout(maskType.getRank());
  SmallVector<AffineExpr> exprs;
  for (auto [d, scoreDim] : llvm::enumerate(layout.scoreDims))
    exprs.push_back(layout.broadcasts && maskType.getDimSize(d) == 1
                        ? getAffineConstantExpr(0, ctx)
                        : getAffineDimExpr(scoreDim, ctx));
  return AffineMap::get(4, 0, exprs, ctx);
}

/// The maps of scores [B, H, Sq, Sk] and of their rows [B, H, Sq] over the
/// scores' loops.
static std::pair<AffineMap, AffineMap> scoreAndRowMaps(MLIRContext *ctx) {
  AffineExpr bb, h, i, j;
  bindDims(ctx, bb, h, i, j);
  return {AffineMap::get(4, 0, {bb, h, i, j}, ctx),
          AffineMap::get(4, 0, {bb, h, i}, ctx)};
}

/// `combine` of each row of `scores` [B, H, Sq, Sk] into `init` [B, H, Sq].
static Value buildRowReduction(OpBuilder &b, Location loc, Value scores,
                               Value init, Combine combine) {
  auto [scoresMap, rowsMap] = scoreAndRowMaps(b.getContext());
  SmallVector<IteratorType> iterators(3, IteratorType::parallel);
  iterators.push_back(IteratorType::reduction);
  return buildCombine(b, loc, scores, init, {scoresMap, rowsMap}, iterators,
                      combine);
}

/// exp(s - r) for the scores `s` [B, H, Sq, Sk] and a value `r` per row
/// [B, H, Sq] (0 where r = -inf: a row that sees no key), in place of `s`.
static Value buildRowExp(OpBuilder &b, Location loc, Value scores,
                         Value rows) {
  auto [scoresMap, rowsMap] = scoreAndRowMaps(b.getContext());
  return buildGeneric(
      b, loc, rows, scores, {rowsMap, scoresMap},
      SmallVector<IteratorType>(4, IteratorType::parallel),
      [](OpBuilder &gb, Location gloc, ValueRange args) {
        linalg::YieldOp::create(gb, gloc,
                                buildSafeExp(gb, gloc, args[1], args[0]));
      });
}

/// The shape [B, H, Sq, Sk] of the scores of `query` [B, H, Sq, dk] against
/// `key`, whose dim `keySeqDim` is Sk.
static SmallVector<OpFoldResult> buildScoreShape(OpBuilder &b, Location loc,
                                                 Value query, Value key,
                                                 int64_t keySeqDim) {
  return {tensor::getMixedSize(b, loc, query, 0),
          tensor::getMixedSize(b, loc, query, 1),
          tensor::getMixedSize(b, loc, query, 2),
          tensor::getMixedSize(b, loc, key, keySeqDim)};
}

/// How a contraction over loops (b, h, ...) reads the keys or values `kv`
/// ([B, Hkv, ...]) of query head h: head h floordiv `group`, as the value
/// and the leading results (b, h floordiv group) of its map. Where every
/// query head of the op reads one key/value head (Hkv = 1 with H > 1: a
/// tile of one group's heads, as decoding tiles grouped-query attention),
/// `kv` without that head dim instead and (b): a map with floordiv is no
/// projected permutation, and linalg then neither takes the op for a
/// contraction nor vectorizes it.
static std::pair<Value, SmallVector<AffineExpr>>
readKeyValueHead(OpBuilder &b, Location loc, Value kv, AffineExpr bb,
                 AffineExpr h, int64_t group) {
  auto type = cast<RankedTensorType>(kv.getType());
  if (type.getDimSize(1) != 1 || group == 1)
    return {kv, {bb, h.floorDiv(group)}};
  SmallVector<ReassociationIndices> groups = {{0, 1}};
  for (int64_t d = 2; d < type.getRank(); ++d)
    groups.push_back({d});
  Value collapsed = tensor::CollapseShapeOp::create(b, loc, kv, groups);
  return {collapsed, {bb}};
}

/// `prefix` followed by `rest`.
static SmallVector<AffineExpr> concat(ArrayRef<AffineExpr> prefix,
                                      ArrayRef<AffineExpr> rest) {
  SmallVector<AffineExpr> all(prefix);
  llvm::append_range(all, rest);
  return all;
}

/// The scores of the scaled queries against the keys, in f32:
/// `s[b, h, i, j] = (q[b, h, i, :] · scale) · k[b, h / group, j, :]` over
/// `scoreShape` [B, H, Sq, Sk], computed over loops (b, h, i, c, j) with kᵀ
/// materialized ([B, Hkv, dk, Sk]; one copy of the keys, none when they come
/// in that layout, `keysTransposed`): the innermost loop
/// then walks rows of kᵀ and of s contiguously, so each reduction step is an
/// outer product of a query column and a kᵀ row (FMAs on whole vectors)
/// instead of a dot product along the channels per score. The scale goes on
/// q (in f32), not on the scores: q is the same for every key block of a
/// query tile, so loop-invariant code motion takes it out of the key loop.
Value buildScaledScores(OpBuilder &b, Location loc, Value query, Value keys,
                        bool keysTransposed, double scale,
                        ArrayRef<OpFoldResult> scoreShape) {
  MLIRContext *ctx = b.getContext();
  int64_t numHeads = cast<ShapedType>(query.getType()).getDimSize(1);
  auto keyType = cast<ShapedType>(keys.getType());
  int64_t group = numHeads / keyType.getDimSize(1);
  AffineExpr bb, h, i, j, c;
  bindDims(ctx, bb, h, i, j, c);
  auto map5 = [&](ArrayRef<AffineExpr> e) {
    return AffineMap::get(5, 0, e, ctx);
  };
  Value keyT = keys;
  if (!keysTransposed) {
    SmallVector<OpFoldResult> keyTShape = {
        tensor::getMixedSize(b, loc, keys, 0),
        tensor::getMixedSize(b, loc, keys, 1),
        tensor::getMixedSize(b, loc, keys, 3), scoreShape[3]};
    keyT = linalg::TransposeOp::create(
               b, loc, keys,
               tensor::EmptyOp::create(b, loc, keyTShape,
                                       keyType.getElementType()),
               ArrayRef<int64_t>{0, 1, 3, 2})
               ->getResult(0);
  }
  SmallVector<AffineMap> queryMaps(2, b.getMultiDimIdentityMap(4));
  Value scaledQuery = buildGeneric(
      b, loc, query,
      tensor::EmptyOp::create(b, loc, tensor::getMixedSizes(b, loc, query),
                              b.getF32Type()),
      queryMaps, SmallVector<IteratorType>(4, IteratorType::parallel),
      [scale](OpBuilder &gb, Location gloc, ValueRange args) {
        Value x = convertScalarToDtype(gb, gloc, args[0], gb.getF32Type(),
                                       /*isUnsignedCast=*/false);
        Value scaled =
            arith::MulFOp::create(gb, gloc, x, f32Constant(gb, gloc, scale));
        linalg::YieldOp::create(gb, gloc, scaled);
      });
  auto [keyOperand, keyHead] = readKeyValueHead(b, loc, keyT, bb, h, group);
  return buildContraction(
      b, loc, scaledQuery, keyOperand,
      buildIdentityFill(b, loc, scoreShape, Combine::Add),
      // Loop 3 is the channel, loop 4 the key here.
      {map5({bb, h, i, j}), map5(concat(keyHead, {j, c})),
       map5({bb, h, i, c})});
}

/// The logits: `scores` capped by `softcap`, with the mask applied (added, or
/// -inf where an i1 mask is false) and, with `visibility`, -inf where a key
/// is invisible (mha::buildKeyVisible); in place. Without any of them,
/// `scores`.
Value buildLogits(OpBuilder &b, Location loc, Value scores, Value mask,
                  const KeyVisibility *visibility,
                  std::optional<double> softcap) {
  if (!mask && !visibility && !softcap)
    return scores;
  MLIRContext *ctx = b.getContext();
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  if (mask) {
    inputs.push_back(mask);
    maps.push_back(getMaskMap(ctx, cast<ShapedType>(mask.getType())));
  }
  Value lengths = visibility ? visibility->keyLengths : Value();
  if (lengths) {
    inputs.push_back(lengths);
    maps.push_back(AffineMap::get(4, 0, getAffineDimExpr(0, ctx), ctx));
  }
  maps.push_back(b.getMultiDimIdentityMap(4));
  return buildGeneric(
      b, loc, inputs, scores, maps,
      SmallVector<IteratorType>(4, IteratorType::parallel),
      [&](OpBuilder &gb, Location gloc, ValueRange args) {
        Value visible;
        if (visibility) {
          Value length;
          if (lengths)
            length = arith::IndexCastOp::create(gb, gloc, gb.getIndexType(),
                                                args[mask ? 1 : 0]);
          visible = buildKeyVisible(gb, gloc, *visibility, length,
                                    linalg::IndexOp::create(gb, gloc, 2),
                                    linalg::IndexOp::create(gb, gloc, 3));
        }
        linalg::YieldOp::create(
            gb, gloc,
            buildLogit(gb, gloc, args.back(), mask ? args[0] : Value(),
                       visible, softcap));
      });
}

/// `x` converted to the element type of `init`, written into it (same
/// shape, elementwise).
Value buildConversion(OpBuilder &b, Location loc, Value x, Value init) {
  int64_t rank = cast<ShapedType>(init.getType()).getRank();
  Type elementType = getElementTypeOrSelf(init.getType());
  SmallVector<AffineMap> identity(2, b.getMultiDimIdentityMap(rank));
  return buildGeneric(
      b, loc, x, init, identity,
      SmallVector<IteratorType>(rank, IteratorType::parallel),
      [&](OpBuilder &gb, Location gloc, ValueRange args) {
        linalg::YieldOp::create(
            gb, gloc,
            convertScalarToDtype(gb, gloc, args[0], elementType,
                                 /*isUnsignedCast=*/false));
      });
}

} // namespace

/// `acc + p · v` over loops (b, h, i, j, c) with `maps` (p, v, acc): the
/// contraction (buildContraction), except that in a block that reaches past
/// a batch's length the values of the keys past it count as 0 (a select in
/// the contraction's body): those keys get probability 0, but 0 · NaN is
/// NaN, and the rows of a static KV cache past its length may be
/// uninitialized memory, which the key block straddling the length reads. Both forms accumulate into `acc`, so the branch of
/// the `scf.if` between them keeps one buffer.
static Value buildProbsTimesValues(OpBuilder &b, Location loc,
                                   const KeyVisibility &visibility,
                                   Value probs, Value values, Value acc,
                                   ArrayRef<AffineMap> maps,
                                   OpFoldResult sk) {
  Value mayPass = buildMayPassLength(b, loc, visibility, sk);
  if (!mayPass)
    return buildContraction(b, loc, probs, values, acc, maps);
  // The lengths as an input indexed by the batch loop, as the logits read
  // them.
  SmallVector<AffineMap> withLengths = {maps[0], maps[1]};
  withLengths.push_back(AffineMap::get(5, 0, getAffineDimExpr(0, b.getContext()),
                                       b.getContext()));
  withLengths.push_back(maps[2]);
  auto withinLengths = [&](OpBuilder &cb, Location cloc) -> Value {
    return buildGeneric(
        cb, cloc, ValueRange{probs, values, visibility.keyLengths}, acc,
        withLengths,
        {IteratorType::parallel, IteratorType::parallel,
         IteratorType::parallel, IteratorType::reduction,
         IteratorType::parallel},
        [&](OpBuilder &gb, Location gloc, ValueRange args) {
          Type accType = args[3].getType();
          Value key = linalg::IndexOp::create(gb, gloc, 3);
          if (visibility.keyOffset)
            key = arith::AddIOp::create(gb, gloc, key, visibility.keyOffset);
          Value within = arith::CmpIOp::create(
              gb, gloc, arith::CmpIPredicate::slt, key,
              arith::IndexCastOp::create(gb, gloc, gb.getIndexType(),
                                         args[2]));
          auto f = [&](Value v) {
            return convertScalarToDtype(gb, gloc, v, accType,
                                        /*isUnsignedCast=*/false);
          };
          Value zero = arith::ConstantOp::create(gb, gloc,
                                                 gb.getZeroAttr(accType));
          Value v = arith::SelectOp::create(gb, gloc, within, f(args[1]),
                                            zero);
          Value mul = arith::MulFOp::create(gb, gloc, f(args[0]), v);
          linalg::YieldOp::create(
              gb, gloc,
              Value(arith::AddFOp::create(gb, gloc, args[3], mul)));
        });
  };
  if (std::optional<int64_t> known = getConstantIntValue(mayPass))
    return *known ? withinLengths(b, loc)
                  : buildContraction(b, loc, probs, values, acc, maps);
  // A GPU thread per row gains nothing from the plain form (no register
  // tiles), and the workgroup buffers of the two branches would differ.
  if (TargetAttr target = getTarget(b.getInsertionBlock()->getParentOp());
      target && target.isGPU())
    return withinLengths(b, loc);
  return scf::IfOp::create(
             b, loc, mayPass,
             [&](OpBuilder &tb, Location tloc) {
               scf::YieldOp::create(tb, tloc, withinLengths(tb, tloc));
             },
             [&](OpBuilder &eb, Location eloc) {
               scf::YieldOp::create(
                   eb, eloc,
                   buildContraction(eb, eloc, probs, values, acc, maps));
             })
      .getResult(0);
}

//===----------------------------------------------------------------------===//
// AttentionOp -> online form
//===----------------------------------------------------------------------===//

FailureOr<SmallVector<Value>> AttentionOp::decomposeOperation(OpBuilder &b) {
  Location loc = getLoc();
  MLIRContext *ctx = b.getContext();
  SmallVector<OpFoldResult> accShape = tensor::getMixedSizes(b, loc, getInit());
  ArrayRef<OpFoldResult> rowShape = ArrayRef(accShape).take_front(3);
  Value acc = buildIdentityFill(b, loc, accShape, Combine::Add);
  Value max = buildIdentityFill(b, loc, rowShape, Combine::Max);
  Value sum = buildIdentityFill(b, loc, rowShape, Combine::Add);
  auto online = OnlineAttentionOp::create(
      b, loc, TypeRange{acc.getType(), max.getType(), sum.getType()},
      getQuery(), getKey(), getValue(), getMask(), getKeyLengths(),
      getKeyOffset(), getCausalOffset(), acc, max, sum, getScaleAttr(),
      getCausalAttr(), getKeyTransposedAttr(), getSoftcapAttr(),
      getWindowLeftAttr(), getWindowRightAttr());

  // out = acc / sum, 0 where sum = 0 (a row that saw no key), converted to
  // the element type and written into `init`.
  AffineExpr bb, h, i, c;
  bindDims(ctx, bb, h, i, c);
  AffineMap id = AffineMap::get(4, 0, {bb, h, i, c}, ctx);
  AffineMap rows = AffineMap::get(4, 0, {bb, h, i}, ctx);
  Value out = buildGeneric(
      b, loc, ValueRange{online.getResultAcc(), online.getResultSum()},
      getInit(), {id, rows, id},
      SmallVector<IteratorType>(4, IteratorType::parallel),
      [](OpBuilder &nb, Location nloc, ValueRange args) {
        Value zero = f32Constant(nb, nloc, 0.0);
        Value noKey = arith::CmpFOp::create(nb, nloc, arith::CmpFPredicate::OEQ,
                                            args[1], zero);
        Value div = arith::DivFOp::create(nb, nloc, args[0], args[1]);
        Value normalized = arith::SelectOp::create(nb, nloc, noKey, zero, div);
        linalg::YieldOp::create(
            nb, nloc,
            convertScalarToDtype(nb, nloc, normalized, args[2].getType(),
                                 /*isUnsignedCast=*/false));
      });
  return SmallVector<Value>{out};
}

//===----------------------------------------------------------------------===//
// OnlineAttentionOp -> linalg
//===----------------------------------------------------------------------===//

FailureOr<SmallVector<Value>>
OnlineAttentionOp::decomposeOperation(OpBuilder &b) {
  Location loc = getLoc();
  MLIRContext *ctx = b.getContext();
  auto queryType = cast<ShapedType>(getQuery().getType());
  int64_t numHeads = queryType.getDimSize(1);
  int64_t group =
      numHeads / cast<ShapedType>(getKey().getType()).getDimSize(1);
  SmallVector<OpFoldResult> scoreShape =
      buildScoreShape(b, loc, getQuery(), getKey(), getKeySeqDim());
  ArrayRef<OpFoldResult> rowShape = ArrayRef(scoreShape).take_front(3);

  // Loops (b, h, i, j, c): batch, query head, query, key, head channel.
  // Query head h reads key/value head h floordiv group, without copies
  // (readKeyValueHead).
  AffineExpr bb, h, i, j, c;
  bindDims(ctx, bb, h, i, j, c);
  auto map5 = [&](ArrayRef<AffineExpr> e) {
    return AffineMap::get(5, 0, e, ctx);
  };
  auto map3 = [&](ArrayRef<AffineExpr> e) {
    return AffineMap::get(3, 0, e, ctx);
  };
  auto [scoresMap, rowsOfScores] = scoreAndRowMaps(ctx);
  AffineMap rowsMap = map3({bb, h, i});
  SmallVector<IteratorType> parallel3(3, IteratorType::parallel);
  SmallVector<IteratorType> parallel4(4, IteratorType::parallel);

  Value scores =
      buildScaledScores(b, loc, getQuery(), getKey(), getKeyTransposed(),
                        getScaleOrDefault(), scoreShape);

  // Logits, in place: the cap, the mask, and the key visibility predicate
  // only where it can fail (a block inside the visible keys of every row
  // skips it at run time).
  Value mask = getMask();
  std::optional<double> softcap = getSoftcapValue();
  KeyVisibility visibility = getKeyVisibility(b);
  Value mayHide =
      buildMayHideKeys(b, loc, visibility, scoreShape[2], scoreShape[3]);
  std::optional<int64_t> knownMayHide =
      mayHide ? getConstantIntValue(mayHide) : std::optional<int64_t>(0);
  Value logits;
  if (knownMayHide) {
    logits = buildLogits(b, loc, scores, mask,
                         *knownMayHide ? &visibility : nullptr, softcap);
  } else {
    auto ifOp = scf::IfOp::create(
        b, loc, mayHide,
        [&](OpBuilder &tb, Location tloc) {
          scf::YieldOp::create(tb, tloc,
                               buildLogits(tb, tloc, scores, mask,
                                           &visibility, softcap));
        },
        [&](OpBuilder &eb, Location eloc) {
          scf::YieldOp::create(
              eb, eloc, buildLogits(eb, eloc, scores, mask, nullptr, softcap));
        });
    logits = ifOp.getResult(0);
  }

  // The state is updated in place (bufferization keeps loop-carried tensors
  // in place only when the new value is written into the old one), so the
  // rescaling a = exp(max - max') is computed before max is overwritten.
  Value max = getMax(), sum = getSum(), acc = getAcc();
  Value blockMax = buildRowReduction(
      b, loc, logits, buildIdentityFill(b, loc, rowShape, Combine::Max),
      Combine::Max);
  Value rescale = buildGeneric(
      b, loc, ValueRange{max, blockMax},
      tensor::EmptyOp::create(b, loc, rowShape, b.getF32Type()),
      {rowsMap, rowsMap, rowsMap}, parallel3,
      [](OpBuilder &gb, Location gloc, ValueRange args) {
        Value newMax = arith::MaxNumFOp::create(gb, gloc, args[0], args[1]);
        linalg::YieldOp::create(gb, gloc,
                                buildSafeExp(gb, gloc, args[0], newMax));
      });
  Value newMax = buildCombine(b, loc, blockMax, max, {rowsMap, rowsMap},
                              parallel3, Combine::Max);
  // p = exp(s - max'), in place of the logits.
  Value probs = buildRowExp(b, loc, logits, newMax);
  // sum' = a · sum + rowsum(p).
  Value newSum = buildRowReduction(
      b, loc, probs,
      buildCombine(b, loc, rescale, sum, {rowsMap, rowsMap}, parallel3,
                   Combine::Mul),
      Combine::Add);
  // acc' = a · acc + p · v, over loops (b, h, i, j, c): the reduction over
  // keys outside the loop over channels, which walks rows of v and acc.
  Value accScaled =
      buildCombine(b, loc, rescale, acc, {rowsOfScores, scoresMap},
                   parallel4, Combine::Mul);
  auto [values, valueHead] =
      readKeyValueHead(b, loc, getValue(), bb, h, group);
  Value newAcc = buildProbsTimesValues(
      b, loc, visibility, probs, values, accScaled,
      {map5({bb, h, i, j}), map5(concat(valueHead, {j, c})),
       map5({bb, h, i, c})},
      scoreShape[3]);
  return SmallVector<Value>{newAcc, newMax, newSum};
}

// PartialReductionOpInterface::mergeReductions: the states of key chunks
// folded independently (partial tensors [chunks, B, H, Sq(, dv)], see
// TilingInterfaceImpl.cpp) combined with the op's own state, exactly, as the
// online update combines two blocks: m = max(max, max_c m_c), then
// sum' = a · sum + Σ_c a_c · sum_c and acc' = a · acc + Σ_c a_c · acc_c with
// a = exp(max - m), a_c = exp(m_c - m) (0 for a state that saw no key).
FailureOr<MergeResult>
OnlineAttentionOp::mergeReductions(OpBuilder &b, Location loc,
                                   ValueRange partialReduce,
                                   const SetVector<unsigned> &reductionDims) {
  if (failed(checkKeySplit(
          reductionDims,
          ReductionTilingStrategy::PartialReductionOuterParallel)))
    return failure();
  MLIRContext *ctx = b.getContext();
  Value partialAcc = partialReduce[0], partialMax = partialReduce[1],
        partialSum = partialReduce[2];
  // Loops (b, h, i, c, d): batch, head, query, chunk, value channel.
  AffineExpr bb, h, i, c, d;
  bindDims(ctx, bb, h, i, c, d);
  auto map4 = [&](ArrayRef<AffineExpr> e) {
    return AffineMap::get(4, 0, e, ctx);
  };
  auto map5 = [&](ArrayRef<AffineExpr> e) {
    return AffineMap::get(5, 0, e, ctx);
  };
  using IteratorType = utils::IteratorType;
  IteratorType par = IteratorType::parallel, red = IteratorType::reduction;
  SmallVector<Operation *> mergeOps;
  auto record = [&](Value v) {
    mergeOps.push_back(v.getDefiningOp());
    return v;
  };

  // The chunks' maximum, then the op's state rescaled to the overall one
  // (every read of the op's max before the max is written in place).
  Value chunksMax = record(buildCombine(
      b, loc, partialMax,
      record(buildIdentityFill(b, loc, tensor::getMixedSizes(b, loc, getMax()),
                               Combine::Max)),
      {map4({c, bb, h, i}), map4({bb, h, i})}, {par, par, par, red},
      Combine::Max));
  auto rescaleOwn = [&](Value state, ArrayRef<AffineMap> maps,
                        ArrayRef<IteratorType> iterators) {
    return record(buildGeneric(
        b, loc, ValueRange{getMax(), chunksMax}, state, maps, iterators,
        [](OpBuilder &gb, Location gloc, ValueRange args) {
          Value max = arith::MaxNumFOp::create(gb, gloc, args[0], args[1]);
          Value scaled = arith::MulFOp::create(
              gb, gloc, args[2], buildSafeExp(gb, gloc, args[0], max));
          linalg::YieldOp::create(gb, gloc, scaled);
        }));
  };
  AffineMap rows3 = AffineMap::get(3, 0, {bb, h, i}, ctx),
            rows4 = map4({bb, h, i});
  Value sum = rescaleOwn(getSum(), {rows3, rows3, rows3}, {par, par, par});
  // (Over acc's loops (b, h, i, d), d bound to the fourth dim here.)
  Value acc = rescaleOwn(getAcc(), {rows4, rows4, map4({bb, h, i, c})},
                         {par, par, par, par});
  Value max = record(buildCombine(b, loc, chunksMax, getMax(),
                                  {rows3, rows3}, {par, par, par},
                                  Combine::Max));
  // Each chunk's state rescaled to the overall max, added.
  auto addChunks = [&](Value partial, Value state, ArrayRef<AffineMap> maps,
                       ArrayRef<IteratorType> iterators) {
    return record(buildGeneric(
        b, loc, ValueRange{partial, partialMax, max}, state, maps, iterators,
        [](OpBuilder &gb, Location gloc, ValueRange args) {
          Value scaled = arith::MulFOp::create(
              gb, gloc, args[0], buildSafeExp(gb, gloc, args[1], args[2]));
          linalg::YieldOp::create(
              gb, gloc,
              arith::AddFOp::create(gb, gloc, args[3], scaled).getResult());
        }));
  };
  AffineMap chunks4 = map4({c, bb, h, i});
  sum = addChunks(partialSum, sum, {chunks4, chunks4, rows4, rows4},
                  {par, par, par, red});
  acc = addChunks(partialAcc, acc,
                  {map5({c, bb, h, i, d}), map5({c, bb, h, i}),
                   map5({bb, h, i}), map5({bb, h, i, d})},
                  {par, par, par, red, par});
  return MergeResult{mergeOps, {acc, max, sum}};
}

//===----------------------------------------------------------------------===//
// AttentionWeightsOp -> linalg
//===----------------------------------------------------------------------===//

// p = exp(s - rowmax(s)) / rowsum(...) over the whole score matrix (0 on rows
// that see no key), written into `init`; averaged over the heads in f32
// first with `average_heads`. An earlier `stage`: the (capped) scores, or
// the logits, converted into `init`.
FailureOr<SmallVector<Value>>
AttentionWeightsOp::decomposeOperation(OpBuilder &b) {
  Location loc = getLoc();
  MLIRContext *ctx = b.getContext();
  int64_t numHeads = cast<ShapedType>(getQuery().getType()).getDimSize(1);
  SmallVector<OpFoldResult> scoreShape =
      buildScoreShape(b, loc, getQuery(), getKey(), getKeySeqDim());
  ArrayRef<OpFoldResult> rowShape = ArrayRef(scoreShape).take_front(3);
  AffineExpr bb, h, i, j;
  bindDims(ctx, bb, h, i, j);
  auto map4 = [&](ArrayRef<AffineExpr> e) {
    return AffineMap::get(4, 0, e, ctx);
  };
  auto [scoresMap, rowsOfScores] = scoreAndRowMaps(ctx);
  SmallVector<IteratorType> parallel4(4, IteratorType::parallel);

  Value scores =
      buildScaledScores(b, loc, getQuery(), getKey(), getKeyTransposed(),
                        getScaleOrDefault(), scoreShape);
  Value init = getInit();
  Type elementType = getElementTypeOrSelf(init.getType());
  if (getStage() == WeightsStage::Scores) {
    Value capped = buildLogits(b, loc, scores, Value(), nullptr,
                               getSoftcapValue());
    return SmallVector<Value>{buildConversion(b, loc, capped, init)};
  }
  KeyVisibility visibility = getKeyVisibility(b);
  Value logits =
      buildLogits(b, loc, scores, getMask(),
                  visibility.restricts() ? &visibility : nullptr,
                  getSoftcapValue());
  if (getStage() == WeightsStage::Logits)
    return SmallVector<Value>{buildConversion(b, loc, logits, init)};
  Value rowMax = buildRowReduction(
      b, loc, logits, buildIdentityFill(b, loc, rowShape, Combine::Max),
      Combine::Max);
  Value exps = buildRowExp(b, loc, logits, rowMax);
  Value rowSum = buildRowReduction(
      b, loc, exps, buildIdentityFill(b, loc, rowShape, Combine::Add),
      Combine::Add);
  // e / sum, 0 where the row saw no key (sum = 0), times `factor`.
  auto normalize = [](double factor) {
    return [factor](OpBuilder &gb, Location gloc, Value e, Value sum) {
      Value zero = f32Constant(gb, gloc, 0.0);
      Value none = arith::CmpFOp::create(gb, gloc, arith::CmpFPredicate::OEQ,
                                         sum, zero);
      Value p = arith::DivFOp::create(gb, gloc, e, sum);
      if (factor != 1.0)
        p = arith::MulFOp::create(gb, gloc, p, f32Constant(gb, gloc, factor));
      return arith::SelectOp::create(gb, gloc, none, zero, p).getResult();
    };
  };
  if (!getAverageHeads()) {
    Value p = buildGeneric(
        b, loc, ValueRange{exps, rowSum}, init,
        {scoresMap, rowsOfScores, scoresMap}, parallel4,
        [&](OpBuilder &gb, Location gloc, ValueRange args) {
          Value v = normalize(1.0)(gb, gloc, args[0], args[1]);
          linalg::YieldOp::create(
              gb, gloc,
              convertScalarToDtype(gb, gloc, v, elementType,
                                   /*isUnsignedCast=*/false));
        });
    return SmallVector<Value>{p};
  }
  // The mean over the heads: sum of p / H in f32, then into `init`.
  SmallVector<OpFoldResult> meanShape = {scoreShape[0], scoreShape[2],
                                         scoreShape[3]};
  AffineMap meanMap = map4({bb, i, j});
  SmallVector<IteratorType> headReduction = {
      IteratorType::parallel, IteratorType::reduction, IteratorType::parallel,
      IteratorType::parallel};
  Value mean = buildGeneric(
      b, loc, ValueRange{exps, rowSum},
      buildIdentityFill(b, loc, meanShape, Combine::Add),
      {scoresMap, rowsOfScores, meanMap}, headReduction,
      [&](OpBuilder &gb, Location gloc, ValueRange args) {
        Value v = normalize(1.0 / numHeads)(gb, gloc, args[0], args[1]);
        Value sum = arith::AddFOp::create(gb, gloc, args[2], v);
        linalg::YieldOp::create(gb, gloc, sum);
      });
  return SmallVector<Value>{buildConversion(b, loc, mean, init)};
}

//===----------------------------------------------------------------------===//
// CacheAppendOp -> slices inserted per batch
//===----------------------------------------------------------------------===//

FailureOr<SmallVector<Value>> CacheAppendOp::decomposeOperation(OpBuilder &b) {
  return decompose(b, /*parallel=*/true);
}

FailureOr<SmallVector<Value>> CacheAppendOp::decompose(OpBuilder &b,
                                                       bool parallel) {
  Location loc = getLoc();
  Value update = getUpdate(), lengths = getLengths(), cache = getCache();
  int64_t rank = cast<ShapedType>(update.getType()).getRank();
  int64_t seqDim = getSeqDim();
  // A loop over the batch and, when parallel, the dims before the sequence
  // dim (at most two of them: a GPU grid has three dimensions), each
  // iteration copying its rows (the dims left) into the cache at
  // lengths[b]. The slices bufferize in place into the cache's buffer.
  int64_t outer = parallel ? std::min<int64_t>(seqDim, 3) : 1;
  SmallVector<OpFoldResult> sizes(outer, b.getIndexAttr(1));
  for (int64_t dim = outer; dim < rank; ++dim)
    sizes.push_back(tensor::getMixedSize(b, loc, update, dim));
  SmallVector<OpFoldResult> strides(rank, b.getIndexAttr(1));
  // The rows of iteration `ivs` copied into their slot of `into`; returns
  // the copy and where it goes.
  auto copyRows = [&](OpBuilder &nb, Location nloc, ValueRange ivs,
                      Value into) {
    Value length = arith::IndexCastOp::create(
        nb, nloc, nb.getIndexType(),
        tensor::ExtractOp::create(nb, nloc, lengths, ivs[0]));
    SmallVector<OpFoldResult> from(rank, nb.getIndexAttr(0));
    for (auto [dim, iv] : llvm::enumerate(ivs))
      from[dim] = iv;
    SmallVector<OpFoldResult> to = from;
    to[seqDim] = length;
    Value rows =
        tensor::ExtractSliceOp::create(nb, nloc, update, from, sizes, strides);
    // An explicit copy into the cache's slice (rather than inserting `rows`
    // itself): it bufferizes to a linalg.copy between subviews, which every
    // pipeline lowers (loops, or a GPU thread loop).
    Value slot =
        tensor::ExtractSliceOp::create(nb, nloc, into, to, sizes, strides);
    Value copied = linalg::CopyOp::create(nb, nloc, rows, slot).getResult(0);
    return std::make_pair(copied, to);
  };
  if (!parallel) {
    // A serial loop over batches (the CPU pipelines: a step writes too few
    // elements for threads to pay off).
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    Value batches = tensor::DimOp::create(b, loc, cache, 0);
    auto loop = scf::ForOp::create(
        b, loc, zero, batches, one, ValueRange{cache},
        [&](OpBuilder &nb, Location nloc, Value batch, ValueRange iterArgs) {
          auto [copied, to] = copyRows(nb, nloc, batch, iterArgs[0]);
          Value written = tensor::InsertSliceOp::create(
              nb, nloc, copied, iterArgs[0], to, sizes, strides);
          scf::YieldOp::create(nb, nloc, written);
        });
    return SmallVector<Value>{loop.getResult(0)};
  }
  // An scf.forall: the slices of different iterations are disjoint, so the
  // copies may run in any order (the GPU pipelines launch one workgroup per
  // iteration).
  SmallVector<OpFoldResult> bounds;
  for (int64_t dim = 0; dim < outer; ++dim)
    bounds.push_back(tensor::getMixedSize(b, loc, cache, dim));
  auto loop = scf::ForallOp::create(
      b, loc, bounds, ValueRange{cache}, /*mapping=*/std::nullopt,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value into = args.back();
        auto [copied, to] = copyRows(nb, nloc, args.take_front(outer), into);
        auto inParallel = scf::InParallelOp::create(nb, nloc);
        OpBuilder::InsertionGuard guard(nb);
        nb.setInsertionPointToStart(inParallel.getBody());
        tensor::ParallelInsertSliceOp::create(nb, nloc, copied, into, to, sizes,
                                              strides);
      });
  return SmallVector<Value>{loop.getResult(0)};
}

//===----------------------------------------------------------------------===//
// RotaryOp -> linalg
//===----------------------------------------------------------------------===//

// The rotated pairs as two slices of the channels, (i, i + R/2) or, with
// `interleaved`, (2i, 2i + 1): strided slices of the input and of `init`,
// a linalg.generic over [B, H, S, R/2] per half, and the channels past R
// copied.
FailureOr<SmallVector<Value>> RotaryOp::decomposeOperation(OpBuilder &b) {
  Location loc = getLoc();
  Value input = getInput(), init = getInit();
  Value positions = getPositions(), cos = getCos(), sin = getSin();
  auto inputType = cast<RankedTensorType>(input.getType());
  Type element = inputType.getElementType();
  int64_t half = getRotaryDim() / 2, d = inputType.getDimSize(3);
  bool offsets = cast<ShapedType>(positions.getType()).getRank() == 1;

  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, input);
  sizes[3] = b.getIndexAttr(half);
  SmallVector<OpFoldResult> steps(4, b.getIndexAttr(1));
  steps[3] = b.getIndexAttr(getInterleaved() ? 2 : 1);
  // Where each half's channels start: (0, R/2), or (0, 1) interleaved.
  auto startAt = [&](int64_t first) {
    SmallVector<OpFoldResult> at(4, b.getIndexAttr(0));
    at[3] = b.getIndexAttr(first);
    return at;
  };
  SmallVector<OpFoldResult> at1 = startAt(0),
                            at2 = startAt(getInterleaved() ? 1 : half);
  auto slice = [&](Value from, ArrayRef<OpFoldResult> at) -> Value {
    return tensor::ExtractSliceOp::create(b, loc, from, at, sizes, steps);
  };
  Value x1 = slice(input, at1), x2 = slice(input, at2);

  // Each token's rows of the tables, [B, S, R/2]: a gather read once for
  // every head, so that the rotation itself reads everything through
  // affine maps (which the vectorizer takes; a table read at a loaded
  // position in the rotation's body would be a gather per head).
  Type tableElement = cast<ShapedType>(cos.getType()).getElementType();
  SmallVector<OpFoldResult> rowSizes = {sizes[0], sizes[2],
                                        b.getIndexAttr(half)};
  auto gatherRows = [&](Value table) {
    Value rowsInit = tensor::EmptyOp::create(b, loc, rowSizes, tableElement);
    return linalg::GenericOp::create(
               b, loc, TypeRange{rowsInit.getType()}, ValueRange{},
               ValueRange{rowsInit}, b.getMultiDimIdentityMap(3),
               SmallVector<utils::IteratorType>(3,
                                                utils::IteratorType::parallel),
               [&](OpBuilder &gb, Location gloc, ValueRange) {
                 Value batch = linalg::IndexOp::create(gb, gloc, 0);
                 Value token = linalg::IndexOp::create(gb, gloc, 1);
                 Value pair = linalg::IndexOp::create(gb, gloc, 2);
                 Value position;
                 if (offsets) {
                   Value offset =
                       tensor::ExtractOp::create(gb, gloc, positions, batch);
                   position = arith::AddIOp::create(
                       gb, gloc,
                       arith::IndexCastOp::create(gb, gloc, gb.getIndexType(),
                                                  offset),
                       token);
                 } else {
                   position = arith::IndexCastOp::create(
                       gb, gloc, gb.getIndexType(),
                       tensor::ExtractOp::create(gb, gloc, positions,
                                                 ValueRange{batch, token}));
                 }
                 linalg::YieldOp::create(
                     gb, gloc,
                     Value(tensor::ExtractOp::create(
                         gb, gloc, table, ValueRange{position, pair})));
               })
        .getResult(0);
  };
  Value cosRows = gatherRows(cos), sinRows = gatherRows(sin);

  // One generic per half (single-result ops, which every tiling takes),
  // both reading the pair and the token's rows of the tables.
  MLIRContext *ctx = b.getContext();
  AffineMap id = b.getMultiDimIdentityMap(4);
  AffineMap row = AffineMap::get(
      4, 0,
      {getAffineDimExpr(0, ctx), getAffineDimExpr(2, ctx),
       getAffineDimExpr(3, ctx)},
      ctx);
  auto rotate = [&](Value out, bool isFirst) {
    return linalg::GenericOp::create(
        b, loc, TypeRange{out.getType()},
        ValueRange{x1, x2, cosRows, sinRows}, ValueRange{out},
        SmallVector<AffineMap>{id, id, row, row, id},
        SmallVector<utils::IteratorType>(4, utils::IteratorType::parallel),
        [&](OpBuilder &gb, Location gloc, ValueRange args) {
          auto f32 = [&](Value v) {
            return convertScalarToDtype(gb, gloc, v, gb.getF32Type(),
                                        /*isUnsignedCast=*/false);
          };
          Value c = f32(args[2]), s = f32(args[3]);
          Value a = f32(args[0]), bb = f32(args[1]);
          auto mul = [&](Value l, Value r) {
            return arith::MulFOp::create(gb, gloc, l, r);
          };
          // (x1, x2) -> (x1 cos - x2 sin, x2 cos + x1 sin).
          Value rotated =
              isFirst ? arith::SubFOp::create(gb, gloc, mul(a, c), mul(bb, s))
                            .getResult()
                      : arith::AddFOp::create(gb, gloc, mul(bb, c), mul(a, s))
                            .getResult();
          linalg::YieldOp::create(
              gb, gloc,
              convertScalarToDtype(gb, gloc, rotated, element,
                                   /*isUnsignedCast=*/false));
        })
        .getResult(0);
  };
  // The channels past R as they are, then each half, each writing a slice
  // of the previous one's result: a chain that bufferizes in place into
  // one buffer (two slices of `init` itself would make the second half a
  // buffer of its own, copied into the result afterwards).
  Value result = init;
  if (2 * half < d) {
    SmallVector<OpFoldResult> at(4, b.getIndexAttr(0)),
        rest = tensor::getMixedSizes(b, loc, input), ones(4, b.getIndexAttr(1));
    at[3] = b.getIndexAttr(2 * half);
    rest[3] = b.getIndexAttr(d - 2 * half);
    Value from = tensor::ExtractSliceOp::create(b, loc, input, at, rest, ones);
    Value into = tensor::ExtractSliceOp::create(b, loc, result, at, rest, ones);
    Value copied = linalg::CopyOp::create(b, loc, from, into).getResult(0);
    result = tensor::InsertSliceOp::create(b, loc, copied, result, at, rest,
                                           ones);
  }
  for (auto [at, isFirst] : {std::pair(at1, true), std::pair(at2, false)}) {
    Value rotated = rotate(slice(result, at), isFirst);
    result = tensor::InsertSliceOp::create(b, loc, rotated, result, at, sizes,
                                           steps);
  }
  return SmallVector<Value>{result};
}
