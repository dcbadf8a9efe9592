//===- FuseLayer.cpp - the whole layer by upstream tile-and-fuse -*- C++ -*-===//
//
// mha.multi_head_attention -> the layer decomposed (mha-decompose), then
// tiled and fused with upstream scf::tileConsumerAndFuseProducersUsingSCF,
// the output projection being the root:
//
//   K, V = key · w_k (+ b_k), value · w_v (+ b_v)   [B, Hkv, Sk, d], once
//   scf.forall (b, query tile i0)                    parallel, nothing shared
//     Y = b_o (or 0)                                 [1, qt, Eo], f32
//     scf.for query head h                           reduction of the output
//       Q = query[b, i0:] · w_q[:, h] (+ b_q[h])     projection over heads
//       O = attention of Q over K, V of h's kv head  (scf.for over key tiles)
//       Y += O · w_o[h, :]
//
// Head split and merge are indexing maps of the projections, so the tiles of
// the weights are slices (no copies); no [B, Sq, H·dv] or [Sq, Sk] tensor
// exists. Each iteration of the forall owns its rows of Y, so the loop can
// be distributed to threads or GPU workgroups as it stands.
//
//===----------------------------------------------------------------------===//

#include "mha/Dialect/MHA/IR/MHAOps.h"
#include "mha/Dialect/MHA/Transforms/Passes.h"
#include "mha/Dialect/MHA/Transforms/Transforms.h"
#include "mha/Codegen/Common/KernelConfig.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir::mha {
#define GEN_PASS_DEF_MHAFUSELAYERPASS
#include "mha/Dialect/MHA/Transforms/Passes.h.inc"
} // namespace mlir::mha

using namespace mlir;
using namespace mlir::mha;

namespace {

/// Tiles `root` by `tileSizes` and fuses the producers `canFuse` accepts
/// (never along destination operands when `fuseDestinations` is false: a
/// destination of a tiled reduction is the loop's initial value). Replaces
/// `root` and returns the result of tile-and-fuse.
FailureOr<scf::SCFTileAndFuseResult>
tileAndFuse(RewriterBase &rewriter, Operation *root,
            ArrayRef<int64_t> tileSizes,
            scf::SCFTilingOptions::LoopType loopType, bool fuseDestinations,
            function_ref<bool(Operation *)> canFuse) {
  scf::SCFTileAndFuseOptions options;
  scf::SCFTilingOptions tiling;
  tiling.setLoopType(loopType);
  tiling.setTileSizes(getAsIndexOpFoldResult(rewriter.getContext(), tileSizes));
  options.setTilingOptions(tiling);
  options.setFusionControlFn(
      [&](tensor::ExtractSliceOp, OpResult producer, bool isDestination)
          -> std::optional<scf::SCFTileAndFuseOptions::ControlFnResult> {
        if ((isDestination && !fuseDestinations) ||
            !canFuse(producer.getOwner()))
          return std::nullopt;
        return scf::SCFTileAndFuseOptions::ControlFnResult{};
      });
  rewriter.setInsertionPoint(root);
  FailureOr<scf::SCFTileAndFuseResult> result =
      scf::tileConsumerAndFuseProducersUsingSCF(
          rewriter, cast<TilingInterface>(root), options);
  if (failed(result))
    return failure();
  rewriter.replaceOp(root, result->replacements.lookup(root->getResult(0)));
  return result;
}

/// Erases the ops of `ops` left without uses, consumers first (after the
/// slices that fusion leaves behind in `loop`).
void eraseDead(RewriterBase &rewriter, LoopLikeOpInterface loop,
               ArrayRef<Operation *> ops) {
  (void)runRegionDCE(rewriter, loop->getRegions());
  for (Operation *op : llvm::reverse(ops))
    if (op->use_empty() && isPure(op))
      rewriter.eraseOp(op);
}

struct MHAFuseLayerPass final
    : mha::impl::MHAFuseLayerPassBase<MHAFuseLayerPass> {
  using MHAFuseLayerPassBase::MHAFuseLayerPassBase;

  void runOnOperation() override {
    SmallVector<MultiHeadAttentionOp> ops;
    getOperation()->walk([&](MultiHeadAttentionOp op) { ops.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (MultiHeadAttentionOp op : ops) {
      TileOptions options{qTileSize, kvTileSize, decompose};
      std::tie(options.qTileSize, options.kvTileSize) =
          resolveTileSizes(op, qTileSize, kvTileSize);
      // With its probabilities (beside which the attention is tiled on its
      // own, from whole projections), KV caches or rotary, the layer is
      // decomposed instead (the CPU pipelines did so already, before
      // choosing the lowering configuration: mha-decompose{unfused-only}).
      if (!getUnfusedReason(op).empty()) {
        if (failed(decomposeMultiHeadAttention(rewriter, op)))
          return signalPassFailure();
        continue;
      }
      if (failed(fuseMultiHeadAttention(rewriter, op, options)))
        return signalPassFailure();
    }
  }
};

} // namespace

FailureOr<Operation *> mha::tileAndFuseIntoForall(RewriterBase &rewriter,
                                                  Operation *root,
                                                  ArrayRef<int64_t> tileSizes) {
  FailureOr<scf::SCFTileAndFuseResult> result = tileAndFuse(
      rewriter, root, tileSizes, scf::SCFTilingOptions::LoopType::ForallOp,
      /*fuseDestinations=*/true, [](Operation *producer) {
        auto linalgOp = dyn_cast<linalg::LinalgOp>(producer);
        // A producer reading i1 (a boolean mask made additive) stays on the
        // host: GPU kernels cannot load i1 from SPIR-V storage buffers.
        return linalgOp && linalgOp.hasPureTensorSemantics() &&
               llvm::none_of(linalgOp.getDpsInputs(), [](Value input) {
                 return getElementTypeOrSelf(input.getType()).isInteger(1);
               });
      });
  if (failed(result) || result->loops.empty())
    return failure();
  return result->loops.front().getOperation();
}

FailureOr<FusedLayer> mha::fuseMultiHeadAttention(RewriterBase &rewriter,
                                                  MultiHeadAttentionOp op,
                                                  const TileOptions &requested) {
  if (failed(checkTileOptions(op, requested)))
    return failure();
  if (StringRef reason = getUnfusedReason(op); !reason.empty())
    return op.emitOpError()
           << reason
           << ": decompose it (mha-decompose) and tile its attention instead "
              "of fusing the layer";
  TileOptions options = requested;
  if (options.qTileSize == 0)
    options.qTileSize =
        selectLoweringConfig(op, getTarget(op)).getQTile().value_or(64);
  // Every query in one row tile: each key block is read once.
  int64_t queries = op.getQuery().getType().getDimSize(1);
  bool oneQueryTile =
      !ShapedType::isDynamic(queries) && queries <= options.qTileSize;
  OpBuilder::InsertionGuard guard(rewriter);

  // The ops the decomposition creates, in order: the only ones fusion may
  // move into the loops (the layer's inputs may have producers of their own).
  Block *block = op->getBlock();
  Operation *before = op->getPrevNode();
  FailureOr<DecomposedLayer> layer = decomposeMultiHeadAttention(rewriter, op);
  if (failed(layer))
    return failure();
  if (hasStaticEmptyScores(layer->attention)) {
    // Nothing to tile: the projections stay whole around the reference form
    // of the attention (an empty result, or b_o where rows see no key).
    if (failed(lowerAttentionToLinalg(rewriter, layer->attention)))
      return failure();
    return FusedLayer{nullptr, nullptr, nullptr, layer->result, {}};
  }
  SmallVector<Operation *> created;
  for (Operation &o : llvm::make_range(
           before ? std::next(before->getIterator()) : block->begin(),
           layer->outputProjection->getIterator()))
    created.push_back(&o);
  llvm::SmallPtrSet<Operation *, 16> fusable(created.begin(), created.end());
  // K and V stay outside: computed once for every query tile and head.
  BackwardSliceOptions sliceOptions;
  sliceOptions.filter = [&](Operation *o) { return fusable.contains(o); };
  SetVector<Operation *> keyValueOps;
  for (Value kv : {layer->attention.getKey(), layer->attention.getValue()}) {
    if (Operation *producer = kv.getDefiningOp()) {
      (void)getBackwardSlice(producer, &keyValueOps, sliceOptions);
      keyValueOps.insert(producer);
    }
  }
  for (Operation *o : keyValueOps)
    fusable.erase(o);

  // Output projection over (b, s, h, i, o): an scf.forall over batches and
  // query tiles; the attention, Q projection and bias inits fused into it.
  Value layerResult = layer->result;
  bool resultIsProjection =
      layerResult.getDefiningOp() == layer->outputProjection;
  FailureOr<scf::SCFTileAndFuseResult> rows = tileAndFuse(
      rewriter, layer->outputProjection, {1, options.qTileSize, 0, 0, 0},
      scf::SCFTilingOptions::LoopType::ForallOp, /*fuseDestinations=*/true,
      [&](Operation *o) { return fusable.contains(o); });
  if (failed(rows))
    return failure();
  LoopLikeOpInterface parallelLoop = rows->loops.front();
  if (resultIsProjection)
    layerResult = parallelLoop->getResult(0);
  eraseDead(rewriter, parallelLoop, created);

  // Within a row tile: the reduction over query heads as an scf.for carrying
  // the rows of Y, with one head's attention and Q projection fused in.
  Operation *rowProjection = rows->tiledAndFusedOps.front();
  llvm::SmallPtrSet<Operation *, 16> rowFusable(
      rows->tiledAndFusedOps.begin(), rows->tiledAndFusedOps.end());
  FailureOr<scf::SCFTileAndFuseResult> heads = tileAndFuse(
      rewriter, rowProjection, {0, 0, 1, 0, 0},
      scf::SCFTilingOptions::LoopType::ForOp, /*fuseDestinations=*/false,
      [&](Operation *o) { return rowFusable.contains(o); });
  if (failed(heads))
    return failure();
  // The row-level tiles the head loop replaced are dead now.
  eraseDead(rewriter, parallelLoop, {});

  AttentionOp headAttention;
  for (Operation *o : heads->tiledAndFusedOps)
    if (auto attention = dyn_cast<AttentionOp>(o))
      headAttention = attention;
  // The layer op is gone (decomposed): report on the loop nest.
  if (!headAttention)
    return parallelLoop->emitOpError()
           << "could not fuse the attention into the head loop";
  FailureOr<AttentionKeyLoop> keys =
      tileAttentionKeys(rewriter, headAttention, options.kvTileSize,
                        options.decompose, oneQueryTile);
  if (failed(keys))
    return failure();
  FusedLayer fused{parallelLoop, heads->loops.front(), keys->keyLoop,
                   layerResult, {}};

  // K and V (loops b, h, s, e, i): computed once, but in parallel too, over
  // (batch, kv head, key tile), each tile initialized from its bias.
  for (Operation *projection :
       {layer->keyProjection, layer->valueProjection}) {
    FailureOr<LoopLikeOpInterface> loop = tileProjectionForThreads(
        rewriter, projection, {1, 1, options.qTileSize, 0, 0});
    if (failed(loop))
      return failure();
    fused.projectionLoops.push_back(*loop);
  }
  return fused;
}

FailureOr<LoopLikeOpInterface>
mha::tileProjectionForThreads(RewriterBase &rewriter, Operation *projection,
                              ArrayRef<int64_t> tileSizes) {
  Operation *init = projection->getOperand(2).getDefiningOp();
  FailureOr<scf::SCFTileAndFuseResult> tiled = tileAndFuse(
      rewriter, projection, tileSizes,
      scf::SCFTilingOptions::LoopType::ForallOp, /*fuseDestinations=*/true,
      [&](Operation *o) { return o == init; });
  if (failed(tiled) || tiled->loops.empty())
    return failure();
  LoopLikeOpInterface loop = tiled->loops.front();
  eraseDead(rewriter, loop,
            init ? ArrayRef(init) : ArrayRef<Operation *>());
  return loop;
}

/// Columns of the output projection per tile of tileProjectionsForThreads.
static constexpr int64_t kOutputColumnTile = 128;

LogicalResult mha::tileProjectionsForThreads(RewriterBase &rewriter,
                                             const DecomposedLayer &layer,
                                             int64_t rowTile) {
  // Inputs over (batch, head, row tile); the output over (batch, row tile),
  // the heads it merges being its reduction. With fewer (static) rows per
  // batch than a tile (decoding), every batch in a tile instead, so that
  // the weights are read once per call, not once per batch: the inputs
  // over heads, the output over its columns.
  auto queries = cast<ShapedType>(layer.queryProjection->getResult(0).getType());
  int64_t rows = queries.getDimSize(2);
  bool fewRows = !ShapedType::isDynamic(rows) && rows < rowTile;
  int64_t batchTile = fewRows ? 0 : 1;
  for (Operation *projection : {layer.queryProjection, layer.keyProjection,
                                layer.valueProjection})
    if (failed(tileProjectionForThreads(rewriter, projection,
                                        {batchTile, 1, rowTile, 0, 0})))
      return failure();
  return tileProjectionForThreads(
      rewriter, layer.outputProjection,
      {batchTile, rowTile, 0, 0, fewRows ? kOutputColumnTile : 0});
}
