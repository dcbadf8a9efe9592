//===- TileAttention.cpp - FlashAttention-style mha.attention ---*- C++ -*-===//
//
// mha.attention -> loops over (batch, head, query tile), built by upstream
// scf::tileUsingSCF through the op's TilingInterface, around the online-
// softmax loop over key/value tiles (OnlineSoftmax.h). No [Sq, Sk] tensor is
// ever formed: the largest intermediate is a [q-tile, kv-tile] block.
//
//===----------------------------------------------------------------------===//

#include "mha/Dialect/MHA/IR/MHAOps.h"
#include "mha/Dialect/MHA/Transforms/Passes.h"
#include "mha/Dialect/MHA/Transforms/Transforms.h"
#include "LinalgBuilders.h"
#include "OnlineSoftmax.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::mha {
#define GEN_PASS_DEF_MHATILEATTENTIONPASS
#include "mha/Dialect/MHA/Transforms/Passes.h.inc"
} // namespace mlir::mha

using namespace mlir;
using namespace mlir::mha;

/// Replaces a one-batch, one-head tile of mha.attention ([1, 1, qt, d]) by
/// the online-softmax loop, written into the tile's destination.
static Value lowerHeadTile(RewriterBase &rewriter, AttentionOp tile,
                           int64_t kvTileSize) {
  rewriter.setInsertionPoint(tile);
  ScoreMask mask{tile.getMask(),
                 tile.getCausal() ? tile.getCausalOffsetOrDefault(rewriter)
                                  : Value()};
  return buildOnlineSoftmaxAttention(
      rewriter, tile.getLoc(), tile.getQuery(), tile.getKey(), tile.getValue(),
      tile.getScaleOrDefault(), mask, kvTileSize, tile.getInit());
}

FailureOr<TiledAttention> mha::tileAttention(RewriterBase &rewriter,
                                             AttentionOp op,
                                             const TileOptions &options) {
  if (options.qTileSize <= 0 || options.kvTileSize <= 0)
    return op.emitOpError() << "tile sizes must be positive, found q-tile-size="
                            << options.qTileSize
                            << " kv-tile-size=" << options.kvTileSize;
  scf::SCFTilingOptions tiling;
  tiling.setTileSizes({rewriter.getIndexAttr(1), rewriter.getIndexAttr(1),
                       rewriter.getIndexAttr(options.qTileSize)});
  FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
      rewriter, cast<TilingInterface>(op.getOperation()), tiling);
  if (failed(tiled))
    return failure();
  rewriter.replaceOp(op, tiled->replacements);

  auto tile = cast<AttentionOp>(tiled->tiledOps.back());
  Value result = lowerHeadTile(rewriter, tile, options.kvTileSize);
  rewriter.replaceOp(tile, result);
  return TiledAttention{tiled->loops, tiled->replacements.front()};
}

namespace {

struct MHATileAttentionPass final
    : mha::impl::MHATileAttentionPassBase<MHATileAttentionPass> {
  using MHATileAttentionPassBase::MHATileAttentionPassBase;

  void runOnOperation() override {
    SmallVector<AttentionOp> ops;
    getOperation()->walk([&](AttentionOp op) { ops.push_back(op); });
    IRRewriter rewriter(&getContext());
    TileOptions options{qTileSize, kvTileSize};
    for (AttentionOp op : ops) {
      rewriter.setInsertionPoint(op);
      if (failed(tileAttention(rewriter, op, options)))
        return signalPassFailure();
    }
  }
};

} // namespace
