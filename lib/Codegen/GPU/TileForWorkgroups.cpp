//===- TileForWorkgroups.cpp - linalg ops not in a loop into workgroup tiles
//--===//
//
// On tensors: each linalg op not yet in a loop (the projections) tiled into
// an scf.forall of workgroup tiles mapped to #gpu.block, producers fused,
// with the reductions staged in steps through workgroup memory, and the
// scf.forall ops already there mapped to #gpu.block as they are
// (mha-tile-for-workgroups).
//
//===----------------------------------------------------------------------===//

#include "GPUMapping.h"

#include "mha/Codegen/GPU/Passes.h"
#include "mha/Codegen/Common/KernelConfig.h"
#include "mha/Codegen/GPU/Transforms.h"
#include "mha/Dialect/MHA/Transforms/Transforms.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"

namespace mlir::mha {
#define GEN_PASS_DEF_MHATILEFORWORKGROUPSPASS
#include "mha/Codegen/GPU/Passes.h.inc"
} // namespace mlir::mha

using namespace mlir;
using namespace mlir::mha::detail;

/// A workgroup's reduction (a projection tile: rows x cols outputs over the
/// whole embedding) as a loop over steps of `depth` along its innermost
/// reduction loop (1 along the others), each step's input tiles copied into
/// workgroup tensors first: the copies and the contraction are then spread
/// over the threads with a barrier between them, so that each input element
/// is read from device memory once per workgroup rather than once per
/// thread that needs it.
static LogicalResult stageReductionSteps(RewriterBase &rewriter,
                                         linalg::LinalgOp op, int64_t depth) {
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  SmallVector<int64_t> tiles(iterators.size(), 0);
  std::optional<unsigned> innermost;
  for (auto [i, iterator] : llvm::enumerate(iterators))
    if (iterator == utils::IteratorType::reduction) {
      tiles[i] = 1;
      innermost = i;
    }
  tiles[*innermost] = depth;
  scf::SCFTilingOptions tiling;
  tiling.setLoopType(scf::SCFTilingOptions::LoopType::ForOp);
  tiling.setTileSizes(getAsIndexOpFoldResult(rewriter.getContext(), tiles));
  rewriter.setInsertionPoint(op);
  FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
      rewriter, cast<TilingInterface>(op.getOperation()), tiling);
  if (failed(tiled))
    return op.emitOpError() << "could not be tiled along its reduction";
  rewriter.replaceOp(op, tiled->replacements);
  for (Operation *step : tiled->tiledOps) {
    auto stepOp = cast<linalg::LinalgOp>(step);
    for (OpOperand *input : stepOp.getDpsInputOperands())
      if (isa<RankedTensorType>(input->get().getType()))
        stageInput(rewriter, stepOp, input);
  }
  return success();
}

LogicalResult mha::tileForWorkgroups(RewriterBase &rewriter, Operation *root,
                                     int64_t rows, int64_t cols,
                                     int64_t depth) {
  if (rows <= 0 || cols <= 0 || depth < 0)
    return root->emitError() << "workgroup tile sizes must be positive, found "
                             << rows << "x" << cols << " (depth " << depth
                             << ")";
  // The last linalg op of each chain: its producers are fused into its loop.
  SmallVector<linalg::LinalgOp> roots;
  auto readsBool = [](linalg::LinalgOp op) {
    return llvm::any_of(op->getOperandTypes(), [](Type type) {
      return getElementTypeOrSelf(type).isInteger(1);
    });
  };
  root->walk([&](linalg::LinalgOp op) {
    // Ops on i1 (a boolean mask turned additive) stay host loops: SPIR-V
    // storage buffers hold no i1.
    if (!op.hasPureTensorSemantics() || readsBool(op) ||
        !isa<FunctionOpInterface>(op->getParentOp()))
      return;
    if (llvm::none_of(op->getUsers(), [](Operation *user) {
          return isa<linalg::LinalgOp>(user);
        }))
      roots.push_back(op);
  });
  MLIRContext *ctx = root->getContext();
  // The parallel loops already there (a KV cache append's, one iteration per
  // batch and head) are grids of workgroups too: mapped, which also keeps
  // the canonicalizer from inlining a loop of one iteration into host code.
  for (scf::ForallOp loop : topLevelForalls(root))
    if (!loop.getMapping())
      loop.setMappingAttr(workgroupMapping(ctx, loop.getRank()));
  for (linalg::LinalgOp op : llvm::reverse(roots)) {
    // What nothing uses (the initial value of a contraction the tensor-core
    // kernels replaced) is no kernel.
    if (op->use_empty()) {
      rewriter.eraseOp(op);
      continue;
    }
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    SmallVector<unsigned> parallel;
    for (auto [i, iterator] : llvm::enumerate(op.getIteratorTypesArray()))
      if (iterator == utils::IteratorType::parallel)
        parallel.push_back(i);
    if (parallel.empty())
      return op.emitOpError()
             << "has no parallel loop to spread over workgroups";
    SmallVector<int64_t> tiles(ranges.size(), 0);
    for (unsigned i : parallel)
      tiles[i] = 1;
    unsigned inner = parallel.back();
    tiles[inner] = ShapedType::isDynamic(ranges[inner])
                       ? cols
                       : std::min<int64_t>(ranges[inner], cols);
    if (parallel.size() > 1)
      tiles[parallel[parallel.size() - 2]] = rows;
    FailureOr<Operation *> loop = tileAndFuseIntoForall(rewriter, op, tiles);
    if (failed(loop))
      return op.emitOpError() << "could not be tiled into workgroups";
    // `op` is gone: replaced by the loop.
    auto forall = cast<scf::ForallOp>(*loop);
    forall.setMappingAttr(workgroupMapping(ctx, forall.getRank()));
    if (depth <= 0)
      continue;
    SmallVector<linalg::LinalgOp> reductions;
    (*loop)->walk([&](linalg::LinalgOp tiled) {
      if (tiled.getNumReductionLoops() > 0)
        reductions.push_back(tiled);
    });
    for (linalg::LinalgOp tiled : reductions)
      if (failed(stageReductionSteps(rewriter, tiled, depth)))
        return failure();
  }
  return success();
}

namespace {

struct MHATileForWorkgroupsPass final
    : mha::impl::MHATileForWorkgroupsPassBase<MHATileForWorkgroupsPass> {
  using MHATileForWorkgroupsPassBase::MHATileForWorkgroupsPassBase;
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    for (FunctionOpInterface func : mha::functionsUnder(getOperation())) {
      // A given size, else the function's lowering configuration (rows have
      // no default: they must match the attention's query tile).
      mha::LoweringConfigAttr config = mha::getLoweringConfig(func);
      ArrayRef<int64_t> tile =
          config ? config.getWorkgroupTile() : ArrayRef<int64_t>();
      int64_t tileRows = rows ? rows : tile.empty() ? 0 : tile[0];
      int64_t tileCols = cols ? cols : tile.empty() ? 64 : tile[1];
      if (failed(mha::tileForWorkgroups(rewriter, func, tileRows, tileCols,
                                        depth)))
        return signalPassFailure();
    }
  }
};

} // namespace
