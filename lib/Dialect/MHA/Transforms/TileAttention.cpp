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

FailureOr<AttentionKeyLoop> mha::tileAttentionKeys(RewriterBase &rewriter,
                                                   AttentionOp op,
                                                   int64_t kvTileSize,
                                                   bool decompose,
                                                   bool keyBlocksReadOnce) {
  assert(kvTileSize > 0 && "the key tile size must be positive");
  OpBuilder::InsertionGuard guard(rewriter);
  bool causal = op.getCausal(); // `op` is replaced next.
  FailureOr<OnlineAttentionOp> online = convertToOnlineAttention(rewriter, op);
  if (failed(online))
    return failure();
  // The normalization that replaced `op` reads the online op's results.
  Operation *normalize = *online->getResult(0).getUsers().begin();

  // A left window: the keys before the first one the first row sees are
  // sliced off first (the op's own tile of those keys, which moves its
  // diagonal and key lengths with them), so that the key loop starts at 0
  // of what is left. The iteration domain cannot start there itself:
  // upstream's tiling reads a range's size as the loop's upper bound when
  // it tiles a dim and as the tile's size when it does not.
  rewriter.setInsertionPoint(*online);
  if (failed(sliceToVisibleKeys(rewriter, *online)))
    return failure();

  // Keys are the online op's reduction dim (3): tiling it carries the state.
  scf::SCFTilingOptions tiling;
  tiling.setTileSizes({rewriter.getIndexAttr(0), rewriter.getIndexAttr(0),
                       rewriter.getIndexAttr(0),
                       rewriter.getIndexAttr(kvTileSize)});
  FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
      rewriter, cast<TilingInterface>(online->getOperation()), tiling);
  if (failed(tiled))
    return failure();
  rewriter.replaceOp(*online, tiled->replacements);

  auto block = cast<OnlineAttentionOp>(tiled->tiledOps.front());
  AttentionKeyLoop result{tiled->loops.front(), block,
                          normalize->getResult(0)};
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

bool mha::hasStaticEmptyScores(AttentionOp op) {
  auto query = cast<ShapedType>(op.getQuery().getType());
  auto key = cast<ShapedType>(op.getKey().getType());
  return query.getDimSize(0) == 0 || query.getDimSize(2) == 0 ||
         key.getDimSize(op.getKeySeqDim()) == 0;
}

FailureOr<TiledAttention> mha::tileAttention(RewriterBase &rewriter,
                                             AttentionOp op,
                                             const TileOptions &options) {
  if (failed(checkTileOptions(op, options)))
    return failure();
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
  // One query tile (decoding) of a grouped-query op: the query heads of a
  // group are one tile, so that each key block is read once for all of
  // them rather than once per head.
  int64_t group = cast<ShapedType>(op.getQuery().getType()).getDimSize(1) /
                  cast<ShapedType>(op.getKey().getType()).getDimSize(1);
  int64_t headTile = oneQueryTile && !options.workgroups ? group : 1;
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
      if (failed(tileAttention(rewriter, op, options)))
        return signalPassFailure();
    }
  }
};

} // namespace
