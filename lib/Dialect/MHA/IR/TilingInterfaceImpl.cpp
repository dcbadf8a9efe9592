//===- TilingInterfaceImpl.cpp - TilingInterface of the attention ops -----===//
//
// TilingInterface of mha.attention and mha.online_attention (their ODS
// declarations list the methods): the iteration domains, the slices of the
// operands for a tile of it, and result tiles (fusion into consumers). The
// loops are (B, H, Sq), all parallel, for mha.attention; mha.online_attention
// adds Sk as a reduction that carries the softmax state.
//
//===----------------------------------------------------------------------===//

#include "mha/Dialect/MHA/IR/MHAOps.h"
#include "mha/Dialect/MHA/Utils/LinalgBuilders.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::mha;

namespace {

/// The operands of an attention op sliced to a block of its scores.
struct AttentionTile {
  Value query, key, value, mask, keyLengths, keyOffset, causalOffset;
  SmallVector<Operation *> slices;
};

/// Slices query, key, value, mask and key lengths of an attention op to the
/// block of scores `offsets` / `sizes` over (B, H, Sq, Sk), and moves the
/// diagonal (`causalOffset`, null without one) and the key lengths into the
/// block's coordinates: query i0 + i sees key j0 + j iff
/// j <= i + (causalOffset + i0 - j0) (+ the batch's length), and key j0 + j
/// counts against the lengths as key j + (keyOffset + j0). A tile of query
/// heads reads the key/value heads of its groups; head tiles that neither
/// divide nor are a multiple of the group size are rejected.
FailureOr<AttentionTile>
sliceAttentionOperands(OpBuilder &b, Operation *op, Value query, Value key,
                       bool keyTransposed, Value value, Value mask,
                       Value keyLengths, Value keyOffset, Value causalOffset,
                       ArrayRef<OpFoldResult> offsets,
                       ArrayRef<OpFoldResult> sizes) {
  Location loc = op->getLoc();
  int64_t numHeads = cast<ShapedType>(query.getType()).getDimSize(1);
  int64_t numKvHeads = cast<ShapedType>(key.getType()).getDimSize(1);
  int64_t group = numHeads / numKvHeads;
  OpFoldResult zero = b.getIndexAttr(0);

  // Key/value heads of the query-head tile [h0, h0 + hs).
  OpFoldResult kvOffset = zero, kvSize = b.getIndexAttr(numKvHeads);
  std::optional<int64_t> headTile = getConstantIntValue(sizes[kHeads]);
  if (!headTile || *headTile != numHeads) {
    if (!headTile || (*headTile % group != 0 && group % *headTile != 0))
      return op->emitOpError()
             << "cannot tile " << numHeads << " query heads over "
             << numKvHeads
             << " key/value heads with a head tile size that neither divides "
                "nor is a multiple of the group size "
             << group;
    AffineExpr h0;
    bindDims(b.getContext(), h0);
    kvOffset = affine::makeComposedFoldedAffineApply(b, loc, h0.floorDiv(group),
                                                     {offsets[kHeads]});
    kvSize = b.getIndexAttr(std::max<int64_t>(*headTile / group, 1));
  }

  AttentionTile tile;
  auto slice = [&](Value source, ArrayRef<OpFoldResult> sliceOffsets,
                   ArrayRef<OpFoldResult> sliceSizes) -> Value {
    SmallVector<OpFoldResult> strides(sliceOffsets.size(), b.getIndexAttr(1));
    auto op = tensor::ExtractSliceOp::create(b, loc, source, sliceOffsets,
                                             sliceSizes, strides);
    tile.slices.push_back(op);
    return op;
  };
  auto dimOf = [&](Value v, int64_t d) {
    return tensor::getMixedSize(b, loc, v, d);
  };
  tile.query = slice(query,
                     {offsets[kBatch], offsets[kHeads], offsets[kQueries], zero},
                     {sizes[kBatch], sizes[kHeads], sizes[kQueries],
                      dimOf(query, 3)});
  unsigned keySeq = getKeySeqDim(keyTransposed),
           keyChannel = getKeyChannelDim(keyTransposed);
  SmallVector<OpFoldResult> keyOffsets = {offsets[kBatch], kvOffset, zero,
                                          zero};
  SmallVector<OpFoldResult> keySizes = {sizes[kBatch], kvSize, {}, {}};
  keyOffsets[keySeq] = offsets[kKeys];
  keySizes[keySeq] = sizes[kKeys];
  keySizes[keyChannel] = dimOf(key, keyChannel);
  tile.key = slice(key, keyOffsets, keySizes);
  tile.value = slice(value, {offsets[kBatch], kvOffset, offsets[kKeys], zero},
                     {sizes[kBatch], kvSize, sizes[kKeys], dimOf(value, 3)});
  if (mask) {
    tile.mask = sliceMaskForTile(b, loc, mask, offsets, sizes);
    tile.slices.push_back(tile.mask.getDefiningOp());
  }
  if (keyLengths) {
    tile.keyLengths =
        slice(keyLengths, {offsets[kBatch]}, {sizes[kBatch]});
    AffineExpr start, j0;
    bindSymbols(b.getContext(), start, j0);
    OpFoldResult keyStart = affine::makeComposedFoldedAffineApply(
        b, loc, start + j0,
        {keyOffset ? OpFoldResult(keyOffset) : zero, offsets[kKeys]});
    if (!isConstantIntValue(keyStart, 0))
      tile.keyOffset = getValueOrCreateConstantIndexOp(b, loc, keyStart);
  }
  if (causalOffset) {
    AffineExpr off, i0, j0;
    bindSymbols(b.getContext(), off, i0, j0);
    tile.causalOffset = getValueOrCreateConstantIndexOp(
        b, loc,
        affine::makeComposedFoldedAffineApply(
            b, loc, off + i0 - j0,
            {causalOffset, offsets[kQueries], offsets[kKeys]}));
  }
  return tile;
}

/// A [B, H, Sq] or [B, H, Sq, dv] destination sliced to a block of queries.
Value sliceOut(OpBuilder &b, Location loc, Value out,
               ArrayRef<OpFoldResult> offsets, ArrayRef<OpFoldResult> sizes,
               SmallVector<Operation *> &slices) {
  auto type = cast<ShapedType>(out.getType());
  SmallVector<OpFoldResult> outOffsets(offsets.take_front(3));
  SmallVector<OpFoldResult> outSizes(sizes.take_front(3));
  if (type.getRank() == 4) {
    outOffsets.push_back(b.getIndexAttr(0));
    outSizes.push_back(b.getIndexAttr(type.getDimSize(3)));
  }
  SmallVector<OpFoldResult> strides(type.getRank(), b.getIndexAttr(1));
  auto slice =
      tensor::ExtractSliceOp::create(b, loc, out, outOffsets, outSizes, strides);
  slices.push_back(slice);
  return slice;
}

/// The position of the [B, H, Sq(, dv)] result tile of a tile of the
/// iteration domain.
void getOutTilePosition(OpBuilder &b, ShapedType resultType,
                        ArrayRef<OpFoldResult> offsets,
                        ArrayRef<OpFoldResult> sizes,
                        SmallVector<OpFoldResult> &resultOffsets,
                        SmallVector<OpFoldResult> &resultSizes) {
  resultOffsets.assign(offsets.begin(), offsets.begin() + 3);
  resultSizes.assign(sizes.begin(), sizes.begin() + 3);
  if (resultType.getRank() == 4) {
    resultOffsets.push_back(b.getIndexAttr(0));
    resultSizes.push_back(b.getIndexAttr(resultType.getDimSize(3)));
  }
}

/// Whether a result tile covers the whole head dim (the ops compute it whole).
bool coversHeadDim(ShapedType resultType, ArrayRef<OpFoldResult> offsets,
                   ArrayRef<OpFoldResult> sizes) {
  return resultType.getRank() != 4 ||
         (isConstantIntValue(offsets[3], 0) &&
          isConstantIntValue(sizes[3], resultType.getDimSize(3)));
}

/// The (B, H, Sq) loops of the attention ops' iteration domains.
SmallVector<Range> getQueryDomain(OpBuilder &b, Location loc, Value query) {
  OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1);
  SmallVector<Range> domain;
  for (int64_t d = 0; d < 3; ++d)
    domain.push_back({zero, tensor::getMixedSize(b, loc, query, d), one});
  return domain;
}

/// TilingInterface::generateResultTileValue of the attention ops: the tile of
/// the iteration domain that produces the result tile, then that tile.
template <typename OpTy>
FailureOr<TilingResult> generateResultTile(OpTy op, OpBuilder &b,
                                           unsigned resultNumber,
                                           ArrayRef<OpFoldResult> offsets,
                                           ArrayRef<OpFoldResult> sizes) {
  SmallVector<OpFoldResult> domainOffsets, domainSizes;
  if (failed(op.getIterationDomainTileFromResultTile(
          b, resultNumber, offsets, sizes, domainOffsets, domainSizes)))
    return failure();
  return op.getTiledImplementation(b, domainOffsets, domainSizes);
}

} // namespace

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

// TilingInterface: the loops are (B, H, Sq), all parallel. Keys are a
// reduction only in the online form (mha.online_attention), whose state
// makes them tileable; here a tile reads every key.

SmallVector<utils::IteratorType> AttentionOp::getLoopIteratorTypes() {
  return SmallVector<utils::IteratorType>(3, utils::IteratorType::parallel);
}

SmallVector<Range> AttentionOp::getIterationDomain(OpBuilder &b) {
  return getQueryDomain(b, getLoc(), getQuery());
}

LogicalResult AttentionOp::getResultTilePosition(
    OpBuilder &b, unsigned resultNumber, ArrayRef<OpFoldResult> offsets,
    ArrayRef<OpFoldResult> sizes, SmallVector<OpFoldResult> &resultOffsets,
    SmallVector<OpFoldResult> &resultSizes) {
  getOutTilePosition(b, getType(), offsets, sizes, resultOffsets, resultSizes);
  return success();
}

FailureOr<TilingResult>
AttentionOp::getTiledImplementation(OpBuilder &b,
                                    ArrayRef<OpFoldResult> offsets,
                                    ArrayRef<OpFoldResult> sizes) {
  Location loc = getLoc();
  // All keys: the block of scores is [offsets, sizes] x [0, Sk).
  SmallVector<OpFoldResult> scoreOffsets(offsets), scoreSizes(sizes);
  scoreOffsets.push_back(b.getIndexAttr(0));
  scoreSizes.push_back(tensor::getMixedSize(b, loc, getKey(), getKeySeqDim()));
  FailureOr<AttentionTile> tile = sliceAttentionOperands(
      b, getOperation(), getQuery(), getKey(), getKeyTransposed(), getValue(),
      getMask(), getKeyLengths(), getKeyOffset(),
      hasDiagonal() ? getCausalOffsetOrDefault(b) : Value(), scoreOffsets,
      scoreSizes);
  if (failed(tile))
    return failure();
  Value init = sliceOut(b, loc, getInit(), offsets, sizes, tile->slices);
  auto tiled = AttentionOp::create(
      b, loc, init.getType(), tile->query, tile->key, tile->value, tile->mask,
      tile->keyLengths, tile->keyOffset, tile->causalOffset, init,
      getScaleAttr(), getCausalAttr(), getKeyTransposedAttr(),
      getSoftcapAttr(), getWindowLeftAttr(), getWindowRightAttr());
  return TilingResult{{tiled}, {tiled.getResult()}, tile->slices};
}

LogicalResult AttentionOp::getIterationDomainTileFromResultTile(
    OpBuilder &b, unsigned resultNumber, ArrayRef<OpFoldResult> offsets,
    ArrayRef<OpFoldResult> sizes,
    SmallVectorImpl<OpFoldResult> &iterDomainOffsets,
    SmallVectorImpl<OpFoldResult> &iterDomainSizes) {
  if (!coversHeadDim(getType(), offsets, sizes))
    return failure();
  iterDomainOffsets.assign(offsets.begin(), offsets.begin() + 3);
  iterDomainSizes.assign(sizes.begin(), sizes.begin() + 3);
  return success();
}

FailureOr<TilingResult>
AttentionOp::generateResultTileValue(OpBuilder &b, unsigned resultNumber,
                                     ArrayRef<OpFoldResult> offsets,
                                     ArrayRef<OpFoldResult> sizes) {
  return generateResultTile(*this, b, resultNumber, offsets, sizes);
}

bool AttentionOp::isOpFusableWithConsumerSlice(unsigned resultNumber,
                                               ArrayRef<OpFoldResult> offsets,
                                               ArrayRef<OpFoldResult> sizes) {
  return coversHeadDim(getType(), offsets, sizes);
}

//===----------------------------------------------------------------------===//
// OnlineAttentionOp
//===----------------------------------------------------------------------===//

// TilingInterface: (B, H, Sq) parallel, Sk a reduction that carries the
// softmax state. With `causal`, the key range ends at the last key the last
// query row sees, so that tiling keys never creates a block wholly above the
// diagonal.

SmallVector<utils::IteratorType> OnlineAttentionOp::getLoopIteratorTypes() {
  SmallVector<utils::IteratorType> types(3, utils::IteratorType::parallel);
  types.push_back(utils::IteratorType::reduction);
  return types;
}

std::pair<OpFoldResult, OpFoldResult>
OnlineAttentionOp::getVisibleKeyRange(OpBuilder &b) {
  Location loc = getLoc();
  return mha::getVisibleKeyRange(
      b, loc, getKeyVisibility(b), tensor::getMixedSize(b, loc, getQuery(), 2),
      tensor::getMixedSize(b, loc, getKey(), getKeySeqDim()));
}

SmallVector<Range> OnlineAttentionOp::getIterationDomain(OpBuilder &b) {
  // Keys after the last one some row sees are not part of the domain.
  SmallVector<Range> domain = getQueryDomain(b, getLoc(), getQuery());
  domain.push_back(
      {b.getIndexAttr(0), getVisibleKeyRange(b).second, b.getIndexAttr(1)});
  return domain;
}

LogicalResult OnlineAttentionOp::getResultTilePosition(
    OpBuilder &b, unsigned resultNumber, ArrayRef<OpFoldResult> offsets,
    ArrayRef<OpFoldResult> sizes, SmallVector<OpFoldResult> &resultOffsets,
    SmallVector<OpFoldResult> &resultSizes) {
  getOutTilePosition(b, cast<ShapedType>(getResult(resultNumber).getType()),
                     offsets, sizes, resultOffsets, resultSizes);
  return success();
}

/// The tile `offsets` / `sizes` of `op`, its state destinations given by
/// `sliceInit` (the tile of each of acc, max and sum, in that order).
static FailureOr<TilingResult>
tileOnlineAttention(OnlineAttentionOp op, OpBuilder &b,
                    ArrayRef<OpFoldResult> offsets,
                    ArrayRef<OpFoldResult> sizes,
                    function_ref<Value(unsigned, SmallVector<Operation *> &)>
                        sliceInit) {
  FailureOr<AttentionTile> tile = sliceAttentionOperands(
      b, op, op.getQuery(), op.getKey(), op.getKeyTransposed(), op.getValue(),
      op.getMask(), op.getKeyLengths(), op.getKeyOffset(),
      op.hasDiagonal() ? op.getCausalOffsetOrDefault(b) : Value(), offsets,
      sizes);
  if (failed(tile))
    return failure();
  SmallVector<Value> inits;
  for (unsigned i = 0; i < 3; ++i)
    inits.push_back(sliceInit(i, tile->slices));
  auto tiled = OnlineAttentionOp::create(
      b, op.getLoc(), TypeRange(ValueRange(inits)), tile->query, tile->key,
      tile->value, tile->mask, tile->keyLengths, tile->keyOffset,
      tile->causalOffset, inits[0], inits[1], inits[2], op.getScaleAttr(),
      op.getCausalAttr(), op.getKeyTransposedAttr(), op.getSoftcapAttr(),
      op.getWindowLeftAttr(), op.getWindowRightAttr());
  return TilingResult{
      {tiled}, SmallVector<Value>(tiled->getResults()), tile->slices};
}

FailureOr<TilingResult>
OnlineAttentionOp::getTiledImplementation(OpBuilder &b,
                                          ArrayRef<OpFoldResult> offsets,
                                          ArrayRef<OpFoldResult> sizes) {
  return tileOnlineAttention(
      *this, b, offsets, sizes,
      [&](unsigned i, SmallVector<Operation *> &slices) {
        return sliceOut(b, getLoc(), getDpsInits()[i], offsets, sizes, slices);
      });
}

LogicalResult OnlineAttentionOp::getIterationDomainTileFromResultTile(
    OpBuilder &b, unsigned resultNumber, ArrayRef<OpFoldResult> offsets,
    ArrayRef<OpFoldResult> sizes,
    SmallVectorImpl<OpFoldResult> &iterDomainOffsets,
    SmallVectorImpl<OpFoldResult> &iterDomainSizes) {
  if (!coversHeadDim(cast<ShapedType>(getResult(resultNumber).getType()),
                     offsets, sizes))
    return failure();
  // A tile of the state needs every key of the domain.
  Range keys = getIterationDomain(b)[kKeys];
  iterDomainOffsets.assign(offsets.begin(), offsets.begin() + 3);
  iterDomainSizes.assign(sizes.begin(), sizes.begin() + 3);
  iterDomainOffsets.push_back(keys.offset);
  iterDomainSizes.push_back(keys.size);
  return success();
}

FailureOr<TilingResult> OnlineAttentionOp::generateResultTileValue(
    OpBuilder &b, unsigned resultNumber, ArrayRef<OpFoldResult> offsets,
    ArrayRef<OpFoldResult> sizes) {
  return generateResultTile(*this, b, resultNumber, offsets, sizes);
}

bool OnlineAttentionOp::isOpFusableWithConsumerSlice(
    unsigned resultNumber, ArrayRef<OpFoldResult> offsets,
    ArrayRef<OpFoldResult> sizes) {
  return coversHeadDim(cast<ShapedType>(getResult(resultNumber).getType()),
                       offsets, sizes);
}

// PartialReductionOpInterface: chunks of keys folded independently, each
// from the empty state, into partial states with a leading chunk dim
// (acc [chunks, B, H, Sq, dv], max and sum [chunks, B, H, Sq]), merged after
// (mergeReductions, in Decompositions.cpp). Only upstream's
// PartialReductionOuterParallel (chunks as iterations of a parallel loop):
// the other strategy would keep a state per key of a tile. The chunk dim
// leads so that a chunk's slice, rank-reduced, drops the first of its unit
// dims: MLIR 22's folding of constant offsets into a rank-reducing
// tensor.extract_slice re-derives the sizes as if the leading unit dims
// were the dropped ones.

static constexpr unsigned kChunkDim = 0;

LogicalResult
OnlineAttentionOp::checkKeySplit(const SetVector<unsigned> &reductionDims,
                                 ReductionTilingStrategy strategy) {
  if (reductionDims.size() == 1 && reductionDims.front() == kKeys &&
      strategy == ReductionTilingStrategy::PartialReductionOuterParallel)
    return success();
  return emitOpError(
      "splits only its key dimension (3), in chunks folded in parallel "
      "(PartialReductionOuterParallel)");
}

/// The slice of the partial state of a state of type `stateType` (acc, max
/// or sum) that the tile `offsets` / `sizes` of the iteration domain writes
/// as chunk `chunk`.
static void getPartialStateTile(OpBuilder &b, ShapedType stateType,
                                ArrayRef<OpFoldResult> offsets,
                                ArrayRef<OpFoldResult> sizes,
                                OpFoldResult chunk,
                                SmallVector<OpFoldResult> &tileOffsets,
                                SmallVector<OpFoldResult> &tileSizes) {
  tileOffsets = {chunk};
  tileSizes = {b.getIndexAttr(1)};
  tileOffsets.append(offsets.begin(), offsets.begin() + kKeys);
  tileSizes.append(sizes.begin(), sizes.begin() + kKeys);
  if (stateType.getRank() == 4) {
    tileOffsets.push_back(b.getIndexAttr(0));
    tileSizes.push_back(b.getIndexAttr(stateType.getDimSize(3)));
  }
}

FailureOr<SmallVector<Value>>
OnlineAttentionOp::generateInitialTensorForPartialReduction(
    OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes,
    const SetVector<unsigned> &reductionDims) {
  if (failed(checkKeySplit(
          reductionDims,
          ReductionTilingStrategy::PartialReductionOuterParallel)))
    return failure();
  // `sizes[kKeys]` is the number of chunks; each chunk starts empty.
  SmallVector<Value> inits;
  const Combine identities[] = {Combine::Add, Combine::Max, Combine::Add};
  for (auto [init, combine] : llvm::zip_equal(getDpsInits(), identities)) {
    SmallVector<OpFoldResult> shape = tensor::getMixedSizes(b, loc, init);
    shape.insert(shape.begin() + kChunkDim, sizes[kKeys]);
    inits.push_back(buildIdentityFill(b, loc, shape, combine));
  }
  return inits;
}

FailureOr<TilingResult> OnlineAttentionOp::tileToPartialReduction(
    OpBuilder &b, Location loc, ReductionTilingStrategy strategy,
    ValueRange init, ArrayRef<OpFoldResult> offsets,
    ArrayRef<OpFoldResult> sizes, const SetVector<unsigned> &reductionDims,
    ArrayRef<OpFoldResult> splitReductionIvs) {
  if (failed(checkKeySplit(reductionDims, strategy)))
    return failure();
  return tileOnlineAttention(
      *this, b, offsets, sizes,
      [&](unsigned i, SmallVector<Operation *> &slices) -> Value {
        auto partialType = cast<RankedTensorType>(init[i].getType());
        SmallVector<OpFoldResult> tileOffsets, tileSizes;
        getPartialStateTile(
            b, cast<ShapedType>(getDpsInits()[i].getType()), offsets, sizes,
            splitReductionIvs.front(), tileOffsets, tileSizes);
        // The chunk's state: the tile without the chunk dim.
        SmallVector<int64_t> shape;
        for (auto [d, size] : llvm::enumerate(tileSizes))
          if (d != kChunkDim)
            shape.push_back(
                getConstantIntValue(size).value_or(ShapedType::kDynamic));
        auto slice = tensor::ExtractSliceOp::create(
            b, loc, RankedTensorType::get(shape, partialType.getElementType()),
            init[i], tileOffsets, tileSizes,
            SmallVector<OpFoldResult>(tileSizes.size(), b.getIndexAttr(1)));
        slices.push_back(slice);
        return slice;
      });
}

LogicalResult OnlineAttentionOp::getPartialResultTilePosition(
    OpBuilder &b, unsigned resultNumber, ReductionTilingStrategy strategy,
    ArrayRef<OpFoldResult> offsets, ArrayRef<OpFoldResult> sizes,
    const SetVector<unsigned> &reductionDims,
    ArrayRef<OpFoldResult> splitReductionIvs,
    SmallVector<OpFoldResult> &resultOffsets,
    SmallVector<OpFoldResult> &resultSizes) {
  if (failed(checkKeySplit(reductionDims, strategy)))
    return failure();
  getPartialStateTile(b, cast<ShapedType>(getResult(resultNumber).getType()),
                      offsets, sizes, splitReductionIvs.front(),
                      resultOffsets, resultSizes);
  return success();
}

#define GET_OP_CLASSES
#include "mha/Dialect/MHA/IR/MHAOps.cpp.inc"
