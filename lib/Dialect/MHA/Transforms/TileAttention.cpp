//===- TileAttention.cpp - FlashAttention-style mha.attention ---*- C++ -*-===//
//
// mha.attention -> an scf.forall over (batch, head, query tile), built by
// upstream scf::tileUsingSCF through the op's TilingInterface, and in each
// tile the key loop: the tile's online form (mha.online_attention) with its
// key dimension, a reduction of its TilingInterface, tiled by the same
// upstream utility, and each block of keys decomposed into linalg. No
// [Sq, Sk] tensor is ever formed: the largest intermediate is a
// [q-tile, kv-tile] block of scores.
//
//===----------------------------------------------------------------------===//

#include "mha/Dialect/MHA/IR/MHAOps.h"
#include "mha/Dialect/MHA/Transforms/Passes.h"
#include "mha/Dialect/MHA/Transforms/Transforms.h"
#include "mha/Codegen/Common/KernelConfig.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::mha {
#define GEN_PASS_DEF_MHATILEATTENTIONPASS
#include "mha/Dialect/MHA/Transforms/Passes.h.inc"
} // namespace mlir::mha

using namespace mlir;
using namespace mlir::mha;

ArrayAttr mha::workgroupMapping(MLIRContext *context, unsigned rank) {
  SmallVector<Attribute> blocks;
  for (unsigned i = 0; i < rank; ++i)
    blocks.push_back(gpu::GPUBlockMappingAttr::get(
        context, static_cast<gpu::MappingId>(
                     static_cast<unsigned>(gpu::MappingId::LinearDim0) + i)));
  return ArrayAttr::get(context, blocks);
}

LogicalResult mha::checkTileOptions(Operation *op,
                                    const TileOptions &options) {
  if (options.qTileSize >= 0 && options.kvTileSize > 0)
    return success();
  return op->emitOpError()
         << "tile sizes must be positive (q-tile-size may be 0: chosen from "
            "the shape), found q-tile-size="
         << options.qTileSize << " kv-tile-size=" << options.kvTileSize;
}

LogicalResult mha::sliceToVisibleKeys(RewriterBase &rewriter,
                                      OnlineAttentionOp &op) {
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  Location loc = op.getLoc();
  auto [first, end] = op.getVisibleKeyRange(rewriter);
  if (isConstantIntValue(first, 0))
    return success();
  SmallVector<OpFoldResult> offsets(4, rewriter.getIndexAttr(0)), sizes;
  for (int64_t d = 0; d < 3; ++d)
    sizes.push_back(tensor::getMixedSize(rewriter, loc, op.getQuery(), d));
  // The count as an arith op, not an affine.apply that later affine maps
  // would compose through: the key loop's upper bound must stay this value,
  // which the bounded tile sizes min(tile, ub - j0) then name, for the
  // peeling to prove the full blocks full.
  offsets[kKeys] = first;
  sizes.push_back(arith::SubIOp::create(
                      rewriter, loc,
                      getValueOrCreateConstantIndexOp(rewriter, loc, end),
                      getValueOrCreateConstantIndexOp(rewriter, loc, first))
                      .getResult());
  FailureOr<TilingResult> sliced =
      op.getTiledImplementation(rewriter, offsets, sizes);
  if (failed(sliced))
    return failure();
  SmallVector<Value> results;
  for (auto [value, old] : llvm::zip_equal(sliced->tiledValues,
                                           op->getResults()))
    results.push_back(value.getType() == old.getType()
                          ? value
                          : tensor::CastOp::create(rewriter, loc,
                                                   old.getType(), value)
                                .getResult());
  rewriter.replaceOp(op, results);
  op = cast<OnlineAttentionOp>(sliced->tiledOps.front());
  return success();
}

FailureOr<AttentionKeyLoop>
mha::tileOnlineAttentionKeys(RewriterBase &rewriter, OnlineAttentionOp online,
                             int64_t kvTileSize, bool decompose,
                             bool keyBlocksReadOnce) {
  assert(kvTileSize > 0 && "the key tile size must be positive");
  OpBuilder::InsertionGuard guard(rewriter);
  bool causal = online.getCausal();

  // A left window: the keys before the first one the first row sees are
  // sliced off first (the op's own tile of those keys, which moves its
  // diagonal and key lengths with them), so that the key loop starts at 0
  // of what is left. The iteration domain cannot start there itself:
  // upstream's tiling reads a range's size as the loop's upper bound when
  // it tiles a dim and as the tile's size when it does not.
  rewriter.setInsertionPoint(online);
  if (failed(sliceToVisibleKeys(rewriter, online)))
    return failure();

  // Keys are the online op's reduction dim (3): tiling it carries the state.
  scf::SCFTilingOptions tiling;
  tiling.setTileSizes({rewriter.getIndexAttr(0), rewriter.getIndexAttr(0),
                       rewriter.getIndexAttr(0),
                       rewriter.getIndexAttr(kvTileSize)});
  FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
      rewriter, cast<TilingInterface>(online.getOperation()), tiling);
  if (failed(tiled))
    return failure();
  rewriter.replaceOp(online, tiled->replacements);

  auto block = cast<OnlineAttentionOp>(tiled->tiledOps.front());
  AttentionKeyLoop result{tiled->loops.front(), block,
                          tiled->replacements.front()};
  // The full key blocks get the loop to themselves, with static shapes
  // (what the vectorizer takes); the partial block at the end of the keys
  // (an odd length, or a causal bound), if any, is peeled off after it
  // (upstream scf::peelForLoopAndSimplifyBounds).
  // The block's operands take their static types (the constant sizes of
  // the slices folded in, upstream's tensor.cast folding into the op).
  auto keyLoop = cast<scf::ForOp>(result.keyLoop.getOperation());
  scf::ForOp partial;
  if (succeeded(scf::peelForLoopAndSimplifyBounds(rewriter, keyLoop,
                                                  partial))) {
    MLIRContext *ctx = rewriter.getContext();
    RewritePatternSet patterns(ctx);
    tensor::ExtractSliceOp::getCanonicalizationPatterns(patterns, ctx);
    ctx->getLoadedDialect<tensor::TensorDialect>()->getCanonicalizationPatterns(
        patterns);
    if (failed(applyPatternsGreedily(keyLoop.getRegion(), std::move(patterns))))
      return failure();
  }
  // Causal: the key range ends at the diagonal, so the loop's trip count
  // grows with the query tile's position; mha-dynamic-schedule-openmp hands
  // the query tiles whose body holds such a loop out largest first.
  for (auto [name, set] : {std::pair(kCausalKeyLoopAttrName, causal),
                            std::pair(kKeyBlocksReadOnceAttrName,
                                      keyBlocksReadOnce)}) {
    if (!set)
      continue;
    keyLoop->setAttr(name, rewriter.getUnitAttr());
    if (partial)
      partial->setAttr(name, rewriter.getUnitAttr());
  }
  SmallVector<OnlineAttentionOp> blocks;
  keyLoop->walk([&](OnlineAttentionOp b) { blocks.push_back(b); });
  result.block = blocks.front();
  if (partial)
    partial->walk([&](OnlineAttentionOp b) { blocks.push_back(b); });
  if (!decompose)
    return result;
  for (OnlineAttentionOp b : blocks)
    if (failed(decomposeOnlineAttention(rewriter, b)))
      return failure();
  result.block = nullptr;
  return result;
}

FailureOr<AttentionKeyLoop> mha::tileAttentionKeys(RewriterBase &rewriter,
                                                   AttentionOp op,
                                                   int64_t kvTileSize,
                                                   bool decompose,
                                                   bool keyBlocksReadOnce) {
  FailureOr<OnlineAttentionOp> online = convertToOnlineAttention(rewriter, op);
  if (failed(online))
    return failure();
  // The normalization that replaced `op` reads the online op's results.
  Operation *normalize = *online->getResult(0).getUsers().begin();
  FailureOr<AttentionKeyLoop> keys = tileOnlineAttentionKeys(
      rewriter, *online, kvTileSize, decompose, keyBlocksReadOnce);
  if (failed(keys))
    return failure();
  keys->result = normalize->getResult(0);
  return keys;
}

FailureOr<SplitAttentionKeys>
mha::splitOnlineAttentionKeys(RewriterBase &rewriter, OnlineAttentionOp op,
                              ArrayRef<int64_t> rowTiles,
                              OpFoldResult chunkKeys) {
  assert(rowTiles.size() == kKeys && "a tile size per (B, H, Sq) dim");
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  Location loc = op.getLoc();
  MLIRContext *ctx = rewriter.getContext();
  auto partial = cast<PartialReductionOpInterface>(op.getOperation());
  SmallVector<Range> domain = partial.getIterationDomain(rewriter);
  SetVector<unsigned> reductionDims;
  reductionDims.insert(kKeys);
  constexpr auto strategy =
      ReductionTilingStrategy::PartialReductionOuterParallel;
  AffineExpr d0, s0, s1;
  bindDims(ctx, d0);
  bindSymbols(ctx, s0, s1);

  // The partial states: a chunk dim of ceil(keys / chunk).
  SmallVector<OpFoldResult> extents =
      llvm::map_to_vector(domain, [](Range r) { return r.size; });
  extents[kKeys] = affine::makeComposedFoldedAffineApply(
      rewriter, loc, s0.ceilDiv(s1), {domain[kKeys].size, chunkKeys});
  FailureOr<SmallVector<Value>> inits =
      partial.generateInitialTensorForPartialReduction(rewriter, loc, extents,
                                                       reductionDims);
  if (failed(inits))
    return failure();

  // One loop over the row tiles (dims with one tile are left out) and the
  // chunks: a single parallel region however the work is cut. The chunks
  // are iterated by their index (step 1), which the vectorizer does not
  // peel: a chunk's key loop takes its partial block itself.
  SmallVector<OpFoldResult> lbs, ubs, steps;
  SmallVector<unsigned> loopDims;
  for (unsigned d = 0; d < kKeys; ++d) {
    std::optional<int64_t> extent = getConstantIntValue(domain[d].size);
    if (rowTiles[d] == 0 || (extent && *extent <= rowTiles[d]))
      continue;
    lbs.push_back(domain[d].offset);
    ubs.push_back(domain[d].size);
    steps.push_back(rewriter.getIndexAttr(rowTiles[d]));
    loopDims.push_back(d);
  }
  lbs.push_back(rewriter.getIndexAttr(0));
  ubs.push_back(extents[kKeys]);
  steps.push_back(rewriter.getIndexAttr(1));
  auto forall = scf::ForallOp::create(rewriter, loc, lbs, ubs, steps, *inits,
                                      /*mapping=*/std::nullopt);
  rewriter.setInsertionPointToStart(forall.getBody());
  SmallVector<OpFoldResult> offsets, sizes;
  for (const Range &r : domain) {
    offsets.push_back(r.offset);
    sizes.push_back(r.size);
  }
  for (auto [i, d] : llvm::enumerate(loopDims)) {
    Value iv = forall.getInductionVars()[i];
    offsets[d] = iv;
    // min(step, ub - iv); the step where it divides a static extent, and
    // a step of 1 (iv < ub), so that a dynamic batch's tiles stay static.
    std::optional<int64_t> step = getConstantIntValue(steps[i]),
                           extent = getConstantIntValue(ubs[i]);
    sizes[d] = step && (*step == 1 || (extent && *extent % *step == 0))
                   ? steps[i]
                   : affine::makeComposedFoldedAffineMin(
                         rewriter, loc,
                         AffineMap::get(1, 2, {s0, s1 - d0}, ctx),
                         {iv, steps[i], ubs[i]});
  }
  // Chunk c: keys [c * chunk, min((c + 1) * chunk, keys)).
  Value chunk = forall.getInductionVars().back();
  // (A dynamic chunk size makes the product no affine expression.)
  if (std::optional<int64_t> keysPerChunk = getConstantIntValue(chunkKeys))
    offsets[kKeys] = affine::makeComposedFoldedAffineApply(
        rewriter, loc, d0 * *keysPerChunk, {chunk});
  else
    offsets[kKeys] =
        arith::MulIOp::create(rewriter, loc, chunk,
                              getValueOrCreateConstantIndexOp(
                                  rewriter, loc, chunkKeys))
            .getResult();
  sizes[kKeys] = affine::makeComposedFoldedAffineMin(
      rewriter, loc, AffineMap::get(1, 2, {s0, s1 - d0}, ctx),
      {offsets[kKeys], chunkKeys, domain[kKeys].size});
  ValueRange partialStates = forall.getRegionIterArgs();
  FailureOr<TilingResult> tiled = partial.tileToPartialReduction(
      rewriter, loc, strategy, partialStates, offsets, sizes, reductionDims,
      {OpFoldResult(chunk)});
  if (failed(tiled))
    return failure();
  rewriter.setInsertionPointToStart(forall.getTerminator().getBody());
  for (auto [i, value, state] :
       llvm::enumerate(tiled->tiledValues, partialStates)) {
    SmallVector<OpFoldResult> stateOffsets, stateSizes;
    if (failed(partial.getPartialResultTilePosition(
            rewriter, i, strategy, offsets, sizes, reductionDims,
            {OpFoldResult(chunk)}, stateOffsets, stateSizes)))
      return failure();
    tensor::ParallelInsertSliceOp::create(
        rewriter, loc, value, state, stateOffsets, stateSizes,
        SmallVector<OpFoldResult>(stateOffsets.size(),
                                  rewriter.getIndexAttr(1)));
  }

  rewriter.setInsertionPointAfter(forall);
  FailureOr<MergeResult> merged = partial.mergeReductions(
      rewriter, loc, forall.getResults(), reductionDims);
  if (failed(merged))
    return failure();
  rewriter.replaceOp(op, merged->replacements);
  return SplitAttentionKeys{
      forall, cast<OnlineAttentionOp>(tiled->tiledOps.front()),
      merged->mergeOps};
}

bool mha::hasStaticEmptyScores(AttentionOp op) {
  auto query = cast<ShapedType>(op.getQuery().getType());
  auto key = cast<ShapedType>(op.getKey().getType());
  return query.getDimSize(0) == 0 || query.getDimSize(2) == 0 ||
         key.getDimSize(op.getKeySeqDim()) == 0;
}

/// tileAttention with the keys split into `options.kvSplits` chunks of
/// whole key tiles (flash-decoding): the online form of `op`, one
/// scf.forall over (batch, head tile, query tile, chunk) that folds each
/// chunk from the empty state (splitOnlineAttentionKeys), each chunk's key
/// loop (tileOnlineAttentionKeys), then a second scf.forall over (batch,
/// head tile) with the exact merge of the chunks' states and the
/// normalization fused.
static FailureOr<TiledAttention>
tileAttentionWithKeySplits(RewriterBase &rewriter, AttentionOp op,
                           const TileOptions &options, int64_t headTile,
                           int64_t qTile, bool oneQueryTile) {
  if (options.workgroups)
    return op.emitOpError()
           << "cannot split its keys across GPU workgroups (kv_splits = "
           << options.kvSplits << "): the split is implemented on CPU only";
  Location loc = op.getLoc();
  FailureOr<OnlineAttentionOp> online = convertToOnlineAttention(rewriter, op);
  if (failed(online))
    return failure();
  Operation *normalize = *online->getResult(0).getUsers().begin();
  // The chunks divide the keys some row sees (from a left window's first).
  rewriter.setInsertionPoint(*online);
  if (failed(sliceToVisibleKeys(rewriter, *online)))
    return failure();
  rewriter.setInsertionPoint(*online);
  OpFoldResult keys =
      cast<TilingInterface>(online->getOperation())
          .getIterationDomain(rewriter)[kKeys]
          .size;
  // ceil(keys / splits) rounded up to whole key tiles, at least one tile.
  int64_t kvTile = options.kvTileSize;
  AffineExpr s0;
  bindSymbols(rewriter.getContext(), s0);
  OpFoldResult chunkKeys = affine::makeComposedFoldedAffineMax(
      rewriter, loc,
      AffineMap::get(0, 1,
                     {s0.ceilDiv(options.kvSplits).ceilDiv(kvTile) * kvTile,
                      rewriter.getAffineConstantExpr(kvTile)},
                     rewriter.getContext()),
      {keys});
  FailureOr<SplitAttentionKeys> split = splitOnlineAttentionKeys(
      rewriter, *online, {1, headTile, qTile}, chunkKeys);
  if (failed(split))
    return failure();
  FailureOr<AttentionKeyLoop> keyLoop = tileOnlineAttentionKeys(
      rewriter, split->chunk, kvTile, options.decompose, oneQueryTile);
  if (failed(keyLoop))
    return failure();
  FailureOr<Operation *> mergeLoop =
      tileAndFuseIntoForall(rewriter, normalize, {1, headTile});
  if (failed(mergeLoop))
    return failure();
  return TiledAttention{split->loop, keyLoop->keyLoop,
                        (*mergeLoop)->getResult(0)};
}

static FailureOr<TiledAttention> tileAttentionLoops(RewriterBase &rewriter,
                                                    AttentionOp op,
                                                    const TileOptions &options);

FailureOr<TiledAttention> mha::tileAttention(RewriterBase &rewriter,
                                             AttentionOp op,
                                             const TileOptions &options) {
  if (failed(checkTileOptions(op, options)))
    return failure();
  if (options.prefetchBlocks > 0 && options.workgroups)
    return op.emitOpError()
           << "cannot prefetch key blocks in GPU workgroups (prefetch_blocks "
              "= "
           << options.prefetchBlocks
           << "): the prefetch is implemented on CPU only";
  FailureOr<TiledAttention> tiled = tileAttentionLoops(rewriter, op, options);
  if (succeeded(tiled) && tiled->keyLoop && options.prefetchBlocks > 0)
    tiled->keyLoop->setAttr(kPrefetchBlocksAttrName,
                            rewriter.getI64IntegerAttr(options.prefetchBlocks));
  return tiled;
}

/// tileAttention once its options are checked.
static FailureOr<TiledAttention>
tileAttentionLoops(RewriterBase &rewriter, AttentionOp op,
                   const TileOptions &options) {
  // Nothing to tile (and tiles of a static 0 would be out of bounds): the
  // reference form computes the empty result, or the zeros of rows with no
  // key.
  if (hasStaticEmptyScores(op)) {
    FailureOr<Value> result = lowerAttentionToLinalg(rewriter, op);
    if (failed(result))
      return failure();
    return TiledAttention{nullptr, nullptr, *result};
  }
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  scf::SCFTilingOptions tiling;
  tiling.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp);
  int64_t qTile = options.qTileSize > 0
                      ? options.qTileSize
                      : selectLoweringConfig(op, getTarget(op))
                            .getQTile()
                            .value_or(64);
  int64_t queries = cast<ShapedType>(op.getQuery().getType()).getDimSize(2);
  bool oneQueryTile = !ShapedType::isDynamic(queries) && queries <= qTile;
  // The query heads of a group as one tile (decoding: each key block is
  // then read once for all of them), as the configuration says.
  int64_t headTile = std::max<int64_t>(options.headTile, 1);
  if (headTile > 1 && options.workgroups)
    return op.emitOpError()
           << "cannot tile " << headTile
           << " query heads per GPU workgroup (head_tile): head tiles are "
              "implemented on CPU only";
  if (options.kvSplits > 1)
    return tileAttentionWithKeySplits(rewriter, op, options, headTile, qTile,
                                      oneQueryTile);
  tiling.setTileSizes({rewriter.getIndexAttr(1),
                       rewriter.getIndexAttr(headTile),
                       rewriter.getIndexAttr(qTile)});
  FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
      rewriter, cast<TilingInterface>(op.getOperation()), tiling);
  if (failed(tiled))
    return failure();
  rewriter.replaceOp(op, tiled->replacements);
  if (options.workgroups) {
    auto forall = cast<scf::ForallOp>(tiled->loops.front().getOperation());
    forall.setMappingAttr(
        workgroupMapping(rewriter.getContext(), forall.getRank()));
  }

  auto tile = cast<AttentionOp>(tiled->tiledOps.front());
  FailureOr<AttentionKeyLoop> keys = tileAttentionKeys(
      rewriter, tile, options.kvTileSize, options.decompose, oneQueryTile);
  if (failed(keys))
    return failure();
  return TiledAttention{tiled->loops.front(), keys->keyLoop,
                        tiled->replacements.front()};
}

namespace {

struct MHATileAttentionPass final
    : mha::impl::MHATileAttentionPassBase<MHATileAttentionPass> {
  using MHATileAttentionPassBase::MHATileAttentionPassBase;

  void runOnOperation() override {
    SmallVector<AttentionOp> ops;
    getOperation()->walk([&](AttentionOp op) { ops.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (AttentionOp op : ops) {
      TileOptions options{qTileSize, kvTileSize, decompose, workgroups};
      std::tie(options.qTileSize, options.kvTileSize) =
          resolveTileSizes(op, qTileSize, kvTileSize);
      options.kvSplits = resolveKeySplits(op, kvSplits);
      options.headTile = resolveHeadTile(op);
      options.prefetchBlocks = resolvePrefetchBlocks(op);
      if (failed(tileAttention(rewriter, op, options)))
        return signalPassFailure();
    }
  }
};

} // namespace
