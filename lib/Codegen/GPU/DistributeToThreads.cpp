//===- DistributeToThreads.cpp - the linalg ops of tiles over GPU threads
//--===//
//
// On tensors, inside each top-level scf.forall (a workgroup tile): each linalg
// op tiled again with upstream scf::tileUsingSCF into an scf.forall mapped to
// #gpu.thread<linear_dim_0> (a thread per row, or per few rows when there are
// more rows than threads), and the tile-local tensors allocated in workgroup
// memory (mha-distribute-to-threads).
//
//===----------------------------------------------------------------------===//

#include "GPUMapping.h"

#include "mha/Codegen/GPU/Passes.h"
#include "mha/Codegen/Common/KernelConfig.h"
#include "mha/Codegen/GPU/Transforms.h"
#include "mha/Dialect/MHA/Transforms/Transforms.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/ValueBoundsOpInterface.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::mha {
#define GEN_PASS_DEF_MHADISTRIBUTETOTHREADSPASS
#include "mha/Codegen/GPU/Passes.h.inc"
} // namespace mlir::mha

using namespace mlir;
using namespace mlir::mha::detail;

/// The scf.forall ops not nested in another scf.forall.
SmallVector<scf::ForallOp> mha::detail::topLevelForalls(Operation *root) {
  SmallVector<scf::ForallOp> loops;
  root->walk<WalkOrder::PreOrder>([&](scf::ForallOp loop) {
    loops.push_back(loop);
    return WalkResult::skip();
  });
  return loops;
}

/// The loop of `op` that distributeOp spreads over threads: its first
/// parallel loop of more than one iteration, else its first parallel loop.
static std::optional<unsigned> threadLoop(linalg::LinalgOp op) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  std::optional<unsigned> unitLoop;
  for (auto [i, iterator] : llvm::enumerate(op.getIteratorTypesArray())) {
    if (iterator != utils::IteratorType::parallel)
      continue;
    if (ranges[i] != 1)
      return i;
    if (!unitLoop)
      unitLoop = i;
  }
  return unitLoop;
}

/// `input` of `op` replaced by a copy of it into a new tile tensor (made
/// right before `op`; workgroup memory once distributeToThreads allocates
/// it), which the threads then share.
void mha::detail::stageInput(RewriterBase &rewriter, linalg::LinalgOp op,
                             OpOperand *input) {
  auto type = cast<RankedTensorType>(input->get().getType());
  rewriter.setInsertionPoint(op);
  Location loc = op.getLoc();
  Value empty = tensor::EmptyOp::create(
      rewriter, loc, tensor::getMixedSizes(rewriter, loc, input->get()),
      type.getElementType());
  Value staged =
      linalg::CopyOp::create(rewriter, loc, input->get(), empty).getResult(0);
  rewriter.modifyOpInPlace(op, [&] { input->set(staged); });
}

/// The inputs of the contractions in `block` that every thread reads whole
/// (their indexing map does not use the loop spread over threads: the value
/// block of P·V) and that come from device memory (not made in the tile)
/// copied into tile tensors first, so that a workgroup reads them from
/// device memory once. The key block is staged already (its transpose).
static void stageSharedInputs(RewriterBase &rewriter, scf::ForallOp block) {
  SmallVector<linalg::LinalgOp> contractions;
  block.getBody()->walk([&](linalg::LinalgOp op) {
    if (op.hasPureTensorSemantics() && op.getNumReductionLoops() > 0)
      contractions.push_back(op);
  });
  for (linalg::LinalgOp op : contractions) {
    std::optional<unsigned> loop = threadLoop(op);
    if (!loop)
      continue;
    for (OpOperand *input : op.getDpsInputOperands()) {
      auto type = dyn_cast<RankedTensorType>(input->get().getType());
      Operation *producer = input->get().getDefiningOp();
      if (!type || op.getMatchingIndexingMap(input).isFunctionOfDim(*loop) ||
          (producer && block->isProperAncestor(producer) &&
           !isa<tensor::ExtractSliceOp>(producer)))
        continue;
      stageInput(rewriter, op, input);
    }
  }
}

/// `op` tiled into an scf.forall over GPU threads along its first parallel
/// loop (not of size 1): ceil(n / threads) iterations per thread. On tensors
/// or buffers; `op` is replaced.
LogicalResult mha::detail::distributeOp(RewriterBase &rewriter,
                                        linalg::LinalgOp op, int64_t threads) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  std::optional<unsigned> loop = threadLoop(op);
  if (!loop)
    return op.emitOpError()
           << "has no parallel loop to give to a thread (a reduction to a "
              "scalar)";
  // Nothing to spread (a single query row: decoding): one thread runs the
  // op, not every thread of the workgroup racing on its outputs.
  if (ranges[*loop] == 1)
    threads = 1;
  // A normalized loop over min(n, threads) threads (what the thread mapping
  // takes; all `threads` when n is dynamic, those past n getting empty
  // tiles), each with ceil(n / threads) iterations.
  SmallVector<OpFoldResult> numThreads(iterators.size(),
                                       rewriter.getIndexAttr(0));
  numThreads[*loop] = rewriter.getIndexAttr(
      ShapedType::isDynamic(ranges[*loop])
          ? threads
          : std::min<int64_t>(ranges[*loop], threads));
  scf::SCFTilingOptions tiling;
  tiling.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp);
  tiling.setNumThreads(numThreads);
  tiling.setMapping({gpu::GPUThreadMappingAttr::get(
      op.getContext(), gpu::MappingId::LinearDim0)});
  rewriter.setInsertionPoint(op);
  FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
      rewriter, cast<TilingInterface>(op.getOperation()), tiling);
  if (failed(tiled))
    return op.emitOpError() << "could not be distributed over threads";
  if (op->getNumResults())
    rewriter.replaceOp(op, tiled->replacements);
  else
    rewriter.eraseOp(op);
  return success();
}

/// `empty` (a tile-local tensor) allocated in workgroup memory, which has
/// static sizes: a tensor of dynamic size (the partial key block) becomes a
/// slice of one of its static upper bound (ValueBounds).
static LogicalResult allocateInWorkgroupMemory(RewriterBase &rewriter,
                                               tensor::EmptyOp empty,
                                               Attribute workgroup) {
  rewriter.setInsertionPoint(empty);
  RankedTensorType type = empty.getType();
  SmallVector<int64_t> bound(type.getShape());
  for (auto [dim, size] : llvm::enumerate(bound)) {
    if (!ShapedType::isDynamic(size))
      continue;
    FailureOr<int64_t> ub = ValueBoundsConstraintSet::computeConstantBound(
        presburger::BoundType::UB, {empty.getResult(), int64_t(dim)},
        /*stopCondition=*/nullptr, /*closedUB=*/true);
    if (failed(ub))
      return empty.emitOpError()
             << "has no static bound along dimension " << dim
             << ", which workgroup memory needs";
    size = *ub;
  }
  Value full = bufferization::AllocTensorOp::create(
      rewriter, empty.getLoc(), type.clone(bound), ValueRange(),
      /*copy=*/Value(), /*size_hint=*/Value(), workgroup);
  if (type.hasStaticShape()) {
    rewriter.replaceOp(empty, full);
    return success();
  }
  SmallVector<OpFoldResult> offsets(type.getRank(), rewriter.getIndexAttr(0));
  SmallVector<OpFoldResult> strides(type.getRank(), rewriter.getIndexAttr(1));
  rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(
      empty, type, full, offsets, empty.getMixedSizes(), strides);
  return success();
}

FailureOr<int64_t> mha::detail::resolveThreads(FunctionOpInterface func,
                                               int64_t given) {
  mha::LoweringConfigAttr config = mha::getLoweringConfig(func);
  int64_t threads =
      given ? given : config ? config.getThreads().value_or(0) : 0;
  if (threads <= 0)
    return func.emitError()
           << "threads per workgroup must be positive, found " << threads
           << " (0: from the function's mha.lowering_config, which sets none)";
  return threads;
}

LogicalResult mha::distributeToThreads(RewriterBase &rewriter, Operation *root,
                                       int64_t threads) {
  MLIRContext *ctx = root->getContext();
  Attribute workgroup =
      gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  for (scf::ForallOp block : topLevelForalls(root)) {
    // Slices of empty tensors as empty tensors of the slice's size (upstream
    // patterns): a tile of a host-level tensor.empty (an f32 accumulator
    // fused into a projection's tile) is the tile's own tensor.
    {
      RewritePatternSet patterns(ctx);
      tensor::populateFoldTensorEmptyPatterns(patterns);
      GreedyRewriteConfig config;
      config.setScope(&block.getRegion());
      (void)applyPatternsGreedily(block.getRegion(), std::move(patterns),
                                  config);
    }
    // One buffer per op writing a tile tensor, made right before it: CSE
    // merges equal tensor.empty and linalg.fill ops (the -inf of the initial
    // row maximum and of a block's row maximum; a tile's empty with the
    // host's of the same type) and hoists them out of the key loop, and an
    // op writing a buffer that another op (or the next iteration, or the
    // host) still reads makes bufferization copy it: at a dynamic size for
    // a partial tile, in device memory for a host buffer, neither of which
    // a kernel can allocate.
    auto isInit = [](Operation *op) {
      return op && (isa<tensor::EmptyOp>(op) ||
                    (isa<linalg::FillOp>(op) &&
                     op->getOperand(1).getDefiningOp<tensor::EmptyOp>()));
    };
    // The operands that become buffers written in place: destinations of
    // ops, and the initial values of loop-carried state (m, l, acc).
    SmallVector<OpOperand *> inits;
    auto consider = [&](OpOperand &init) {
      Operation *producer = init.get().getDefiningOp();
      if (isInit(producer) &&
          (!block->isProperAncestor(producer) || !producer->hasOneUse()))
        inits.push_back(&init);
    };
    block.getBody()->walk([&](Operation *op) {
      if (auto writer = dyn_cast<DestinationStyleOpInterface>(op))
        for (OpOperand &init : writer.getDpsInitsMutable())
          consider(init);
      if (auto loop = dyn_cast<scf::ForOp>(op))
        for (OpOperand &init : loop.getInitArgsMutable())
          consider(init);
    });
    for (OpOperand *init : inits) {
      Operation *producer = init->get().getDefiningOp();
      rewriter.setInsertionPoint(init->getOwner());
      IRMapping mapping;
      if (isa<linalg::FillOp>(producer)) {
        Value empty = producer->getOperand(1);
        mapping.map(empty,
                    rewriter.clone(*empty.getDefiningOp())->getResult(0));
      }
      Operation *copy = rewriter.clone(*producer, mapping);
      rewriter.modifyOpInPlace(init->getOwner(),
                               [&] { init->set(copy->getResult(0)); });
      if (producer->use_empty() && block->isProperAncestor(producer)) {
        Value empty = isa<linalg::FillOp>(producer) ? producer->getOperand(1)
                                                    : Value();
        rewriter.eraseOp(producer);
        if (empty && empty.use_empty())
          rewriter.eraseOp(empty.getDefiningOp());
      }
    }
    stageSharedInputs(rewriter, block);
    SmallVector<linalg::LinalgOp> ops;
    block.getBody()->walk([&](linalg::LinalgOp op) {
      if (op.hasPureTensorSemantics())
        ops.push_back(op);
    });
    for (linalg::LinalgOp op : ops)
      if (failed(distributeOp(rewriter, op, threads)))
        return failure();
    SmallVector<tensor::EmptyOp> empties;
    block.getBody()->walk([&](tensor::EmptyOp e) { empties.push_back(e); });
    for (tensor::EmptyOp e : empties)
      if (failed(allocateInWorkgroupMemory(rewriter, e, workgroup)))
        return failure();
  }
  return success();
}

namespace {

struct MHADistributeToThreadsPass final
    : mha::impl::MHADistributeToThreadsPassBase<MHADistributeToThreadsPass> {
  using MHADistributeToThreadsPassBase::MHADistributeToThreadsPassBase;
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    for (FunctionOpInterface func : mha::functionsUnder(getOperation())) {
      FailureOr<int64_t> count = resolveThreads(func, threads);
      if (failed(count) || failed(mha::distributeToThreads(rewriter, func, *count)))
        return signalPassFailure();
    }
  }
};

} // namespace
