//===- MapToGPU.cpp - tiled loop nests onto GPU workgroups and threads ----===//
//
// The tiled form (scf.forall over independent tiles, each a loop nest of
// linalg ops) onto the GPU:
//   - on tensors (tileForWorkgroups): each linalg op not yet in a loop (the
//     projections) tiled into an scf.forall of workgroup tiles;
//   - on tensors (distributeToThreads): each linalg op inside a top-level
//     scf.forall is tiled again with upstream scf::tileUsingSCF into an
//     scf.forall mapped to #gpu.thread<x> (a thread per row, or per few
//     rows when there are more rows than threads), and the tile-local
//     tensors are allocated in workgroup memory;
//   - on buffers (mapForallsToGPULaunch): each top-level scf.forall becomes a
//     gpu.launch with one workgroup per iteration (grid sizes computed at run
//     time from the loop bounds), and upstream's
//     mapNestedForallToThreadsImpl maps the thread loops inside it, with a
//     barrier after each; workgroup allocations become the launch's
//     workgroup attributions;
//   - boolean masks as the equivalent additive float masks (host code),
//     for targets whose kernels cannot load i1 (SPIR-V storage buffers);
//   - for targets whose kernels cannot read host memory
//     (stageKernelBuffers): each host buffer a launch uses copied into
//     device memory around it.
//
//===----------------------------------------------------------------------===//

#include "mha/Dialect/MHA/Transforms/Passes.h"
#include "mha/Dialect/MHA/Transforms/Transforms.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/TransformOps/GPUTransformOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/RegionUtils.h"

#include <array>
#include <cmath>
#include "mlir/Interfaces/ValueBoundsOpInterface.h"

namespace mlir::mha {
#define GEN_PASS_DEF_MHADISTRIBUTETOTHREADSPASS
#define GEN_PASS_DEF_MHAMAPFORALLTOGPUPASS
#define GEN_PASS_DEF_MHASTAGEKERNELBUFFERSPASS
#define GEN_PASS_DEF_MHAADDITIVEMASKPASS
#define GEN_PASS_DEF_MHATILEFORWORKGROUPSPASS
#include "mha/Dialect/MHA/Transforms/Passes.h.inc"
} // namespace mlir::mha

using namespace mlir;

/// The scf.forall ops not nested in another scf.forall.
static SmallVector<scf::ForallOp> topLevelForalls(Operation *root) {
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
static void stageInput(RewriterBase &rewriter, linalg::LinalgOp op,
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
static LogicalResult distributeOp(RewriterBase &rewriter, linalg::LinalgOp op,
                                  int64_t threads) {
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

/// The workgroup-memory allocations in `launch`'s body as workgroup
/// attributions of the launch: the GPU dialect's form of memory that lives
/// as long as the workgroup, which every target lowers (NVVM turns a
/// `memref.alloc` in a kernel into a per-thread malloc instead). An
/// allocation inside a loop of the kernel is one buffer reused by every
/// iteration, as a workgroup variable would be.
static LogicalResult allocsToWorkgroupAttributions(RewriterBase &rewriter,
                                                   gpu::LaunchOp launch) {
  SmallVector<memref::AllocOp> allocs;
  launch.getBody().walk([&](memref::AllocOp alloc) {
    auto space = dyn_cast_if_present<gpu::AddressSpaceAttr>(
        alloc.getType().getMemorySpace());
    if (space && space.getValue() == gpu::AddressSpace::Workgroup)
      allocs.push_back(alloc);
  });
  for (memref::AllocOp alloc : allocs) {
    if (!alloc.getType().hasStaticShape())
      return alloc.emitOpError()
             << "allocates workgroup memory of dynamic size "
             << alloc.getType() << "; workgroup memory has static sizes";
    BlockArgument buffer =
        launch.addWorkgroupAttribution(alloc.getType(), alloc.getLoc());
    for (Operation *user : llvm::make_early_inc_range(alloc->getUsers()))
      if (isa<memref::DeallocOp>(user))
        rewriter.eraseOp(user);
    rewriter.replaceOp(alloc, buffer);
  }
  return success();
}

namespace {
/// Where the buffer an allocation made is used, views included.
struct BufferUses {
  bool host = false;   // read or written by host code
  bool escapes = false; // returned, or given to something unknown
};
} // namespace

static BufferUses classifyUses(Value buffer) {
  BufferUses uses;
  SmallVector<Value> worklist = {buffer};
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    for (OpOperand &use : value.getUses()) {
      Operation *user = use.getOwner();
      if (user->getParentOfType<gpu::LaunchOp>())
        continue; // A kernel's use.
      if (auto view = dyn_cast<ViewLikeOpInterface>(user);
          view && view.getViewSource() == value) {
        worklist.push_back(view.getViewDest());
        continue;
      }
      if (isa<memref::DeallocOp>(user))
        continue;
      if (isa<func::ReturnOp, CallOpInterface>(user) ||
          !isa<MemoryEffectOpInterface>(user))
        uses.escapes = true;
      else
        uses.host = true;
    }
  }
  return uses;
}

/// Host buffers of `func` freed where it returns: its allocations in the
/// entry block that are not returned (the GPU pipelines do not run the
/// ownership-based deallocation, which does not know gpu.launch; host code
/// around launches is straight-line and synchronous, so the end of the
/// function is after every use).
static void freeHostBuffersAtReturn(RewriterBase &rewriter,
                                    FunctionOpInterface func) {
  if (func.isExternal())
    return;
  Block &entry = func.getFunctionBody().front();
  Operation *terminator = entry.getTerminator();
  SmallVector<memref::AllocOp> allocs;
  for (auto alloc : entry.getOps<memref::AllocOp>())
    if (!alloc.getType().getMemorySpace() &&
        llvm::none_of(alloc->getUsers(), [](Operation *user) {
          return isa<memref::DeallocOp>(user);
        }) &&
        !classifyUses(alloc.getResult()).escapes)
      allocs.push_back(alloc);
  rewriter.setInsertionPoint(terminator);
  for (memref::AllocOp alloc : allocs)
    memref::DeallocOp::create(rewriter, alloc.getLoc(), alloc.getResult());
}

/// Results of scf.if ops inside kernels whose branches both yield the same
/// buffer (one masked for causality, one not), cast to a less static type
/// (the branches were refined on tensors, the if was not), used through one
/// cast of that buffer made after the if: canonicalization then folds it
/// into its users, and SPIR-V has no lowering for memref.cast.
static void forwardIfYieldedBuffers(RewriterBase &rewriter, Operation *root) {
  root->walk([&](scf::IfOp ifOp) {
    if (!ifOp->getParentOfType<gpu::LaunchOp>() || ifOp.getNumResults() == 0 ||
        ifOp.getElseRegion().empty())
      return;
    for (OpResult result : ifOp->getResults()) {
      auto type = dyn_cast<MemRefType>(result.getType());
      if (!type || result.use_empty())
        continue;
      Value source;
      bool same = true;
      for (Block *branch : {ifOp.thenBlock(), ifOp.elseBlock()}) {
        Value yielded = branch->getTerminator()->getOperand(
            result.getResultNumber());
        if (auto cast = yielded.getDefiningOp<memref::CastOp>())
          yielded = cast.getSource();
        same &= !source || yielded == source;
        source = yielded;
      }
      if (!same ||
          !source.getParentRegion()->isAncestor(ifOp->getParentRegion()))
        continue;
      rewriter.setInsertionPointAfter(ifOp);
      Value forwarded =
          source.getType() == type
              ? source
              : memref::CastOp::create(rewriter, ifOp.getLoc(), type, source)
                    .getResult();
      rewriter.replaceAllUsesWith(result, forwarded);
    }
  });
}

ArrayAttr mha::workgroupMapping(MLIRContext *context, unsigned rank) {
  SmallVector<Attribute> blocks;
  for (unsigned i = 0; i < rank; ++i)
    blocks.push_back(gpu::GPUBlockMappingAttr::get(
        context, static_cast<gpu::MappingId>(
                     static_cast<unsigned>(gpu::MappingId::LinearDim0) + i)));
  return ArrayAttr::get(context, blocks);
}

LogicalResult mha::mapForallsToGPULaunch(RewriterBase &rewriter,
                                         Operation *root, int64_t threads) {
  for (scf::ForallOp loop : topLevelForalls(root)) {
    if (loop.getNumResults() != 0)
      return loop.emitOpError() << "must be bufferized before GPU mapping";
    // Dimensions of one iteration (kept by a workgroup mapping) take no
    // grid dimension; the others take x, y and z in order. A loop with a
    // dimension of no iteration (an empty tensor) launches nothing.
    SmallVector<unsigned> gridDims;
    bool empty = false;
    for (auto [d, lb, ub, step] :
         llvm::enumerate(loop.getMixedLowerBound(), loop.getMixedUpperBound(),
                         loop.getMixedStep())) {
      std::optional<int64_t> l = getConstantIntValue(lb),
                             u = getConstantIntValue(ub),
                             s = getConstantIntValue(step);
      empty |= l && u && *u <= *l;
      if (!(l && u && s && *s > 0 && *u > *l && *u - *l <= *s))
        gridDims.push_back(d);
    }
    if (empty) {
      rewriter.eraseOp(loop);
      continue;
    }
    if (gridDims.size() > 3)
      return loop.emitOpError()
             << "has more than 3 dimensions of more than one iteration for "
                "the grid";
    // Copies bufferization left in the tile: none where source and target
    // are the same buffer, the others spread over the threads like the ops.
    SmallVector<memref::CopyOp> copies;
    loop.getBody()->walk([&](memref::CopyOp copy) { copies.push_back(copy); });
    for (memref::CopyOp copy : copies) {
      if (copy.getSource() == copy.getTarget()) {
        rewriter.eraseOp(copy);
        continue;
      }
      rewriter.setInsertionPoint(copy);
      auto linalgCopy = linalg::CopyOp::create(rewriter, copy.getLoc(),
                                               copy.getSource(),
                                               copy.getTarget());
      rewriter.eraseOp(copy);
      if (failed(distributeOp(rewriter, linalgCopy, threads)))
        return failure();
    }
    Location loc = loop.getLoc();
    rewriter.setInsertionPoint(loop);
    // One workgroup per iteration: grid size ceil((ub - lb) / step).
    SmallVector<Value> grid;
    for (unsigned d : gridDims) {
      AffineExpr l, u, s;
      bindSymbols(rewriter.getContext(), l, u, s);
      grid.push_back(affine::makeComposedAffineApply(
          rewriter, loc, (u - l).ceilDiv(s),
          {loop.getMixedLowerBound()[d], loop.getMixedUpperBound()[d],
           loop.getMixedStep()[d]}));
    }
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    while (grid.size() < 3)
      grid.push_back(one);
    Value blockX = arith::ConstantIndexOp::create(rewriter, loc, threads);
    auto launch = gpu::LaunchOp::create(rewriter, loc, grid[0], grid[1],
                                        grid[2], blockX, one, one);
    Block &body = launch.getBody().front();
    rewriter.setInsertionPointToStart(&body);
    SmallVector<Value> ivs;
    for (auto [d, lb, step] : llvm::enumerate(loop.getMixedLowerBound(),
                                              loop.getMixedStep())) {
      auto gridDim = llvm::find(gridDims, d);
      if (gridDim == gridDims.end()) {
        ivs.push_back(getValueOrCreateConstantIndexOp(rewriter, loc, lb));
        continue;
      }
      AffineExpr id, l, s;
      bindDims(rewriter.getContext(), id);
      bindSymbols(rewriter.getContext(), l, s);
      gpu::KernelDim3 blockIds = launch.getBlockIds();
      Value blockId = std::array{blockIds.x, blockIds.y,
                                 blockIds.z}[gridDim - gridDims.begin()];
      ivs.push_back(affine::makeComposedAffineApply(
          rewriter, loc, id * s + l, {blockId, lb, step}));
    }
    // The loop's body (without its terminator) into the launch.
    Block *loopBody = loop.getBody();
    rewriter.eraseOp(loopBody->getTerminator());
    auto terminator = gpu::TerminatorOp::create(rewriter, loc);
    rewriter.inlineBlockBefore(loopBody, terminator, ivs);
    rewriter.eraseOp(loop);

    if (failed(allocsToWorkgroupAttributions(rewriter, launch)))
      return failure();

    rewriter.setInsertionPointToStart(&body);
    DiagnosedSilenceableFailure mapped =
        transform::gpu::mapNestedForallToThreadsImpl(
            rewriter, std::nullopt, launch, {threads, 1, 1},
            /*warpSize=*/32, /*syncAfterDistribute=*/true);
    if (!mapped.succeeded())
      return launch.emitOpError() << "could not map its thread loops";
  }
  root->walk([&](FunctionOpInterface func) {
    freeHostBuffersAtReturn(rewriter, func);
  });
  forwardIfYieldedBuffers(rewriter, root);
  return success();
}

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
  for (linalg::LinalgOp op : llvm::reverse(roots)) {
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
    auto forall = cast<scf::ForallOp>(*loop);
    forall.setMappingAttr(workgroupMapping(op.getContext(), forall.getRank()));
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

LogicalResult mha::boolMaskToAdditive(RewriterBase &rewriter,
                                      mha::AttentionOp op) {
  Value mask = op.getMask();
  auto maskType = mask ? cast<RankedTensorType>(mask.getType()) : nullptr;
  if (!maskType || !maskType.getElementType().isInteger(1))
    return failure();
  Type element = cast<ShapedType>(op.getQuery().getType()).getElementType();
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  Value empty = tensor::EmptyOp::create(
      rewriter, loc, tensor::getMixedSizes(rewriter, loc, mask), element);
  Value zero = arith::ConstantOp::create(rewriter, loc,
                                         rewriter.getFloatAttr(element, 0.0));
  Value minusInf = arith::ConstantOp::create(
      rewriter, loc, rewriter.getFloatAttr(element, -INFINITY));
  AffineMap identity = rewriter.getMultiDimIdentityMap(maskType.getRank());
  auto additive = linalg::GenericOp::create(
      rewriter, loc, empty.getType(), mask, empty, {identity, identity},
      SmallVector<utils::IteratorType>(maskType.getRank(),
                                       utils::IteratorType::parallel),
      [&](OpBuilder &b, Location l, ValueRange args) {
        linalg::YieldOp::create(
            b, l, arith::SelectOp::create(b, l, args[0], zero, minusInf)
                      .getResult());
      });
  rewriter.modifyOpInPlace(
      op, [&] { op.getMaskMutable().assign(additive.getResult(0)); });
  return success();
}

/// Whether the kernel may write `buffer` (uses through views included);
/// ops whose effects are unknown count as writes.
static bool mayWriteInside(Value buffer, Region &region) {
  SmallVector<Value> worklist = {buffer};
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    for (OpOperand &use : value.getUses()) {
      Operation *user = use.getOwner();
      if (!region.isAncestor(user->getParentRegion()))
        continue;
      if (auto view = dyn_cast<ViewLikeOpInterface>(user)) {
        if (view.getViewSource() == value) {
          worklist.push_back(view.getViewDest());
          continue;
        }
      }
      auto effects = dyn_cast<MemoryEffectOpInterface>(user);
      if (!effects)
        return true;
      if (effects.getEffectOnValue<MemoryEffects::Write>(value) ||
          effects.getEffectOnValue<MemoryEffects::Free>(value))
        return true;
    }
  }
  return false;
}

/// The allocation `value` is a view of, if any.
static Operation *allocationOf(Value value) {
  while (true) {
    Operation *def = value.getDefiningOp();
    if (auto view = dyn_cast_if_present<ViewLikeOpInterface>(def)) {
      value = view.getViewSource();
      continue;
    }
    return def;
  }
}

LogicalResult mha::stageKernelBuffers(RewriterBase &rewriter, Operation *root) {
  // Buffers only kernels use (the projections' outputs, read by the
  // attention kernel) live in device memory from the start: no copies.
  SmallVector<memref::AllocOp> deviceOnly;
  root->walk([&](memref::AllocOp alloc) {
    if (alloc.getType().getMemorySpace() ||
        alloc->getParentOfType<gpu::LaunchOp>())
      return;
    BufferUses uses = classifyUses(alloc.getResult());
    if (!uses.host && !uses.escapes)
      deviceOnly.push_back(alloc);
  });
  for (memref::AllocOp alloc : deviceOnly) {
    for (Operation *user : llvm::make_early_inc_range(alloc->getUsers()))
      if (auto dealloc = dyn_cast<memref::DeallocOp>(user)) {
        rewriter.setInsertionPoint(dealloc);
        rewriter.replaceOpWithNewOp<gpu::DeallocOp>(dealloc, Type(),
                                                    ValueRange(),
                                                    alloc.getResult());
      }
    rewriter.setInsertionPoint(alloc);
    rewriter.replaceOpWithNewOp<gpu::AllocOp>(
        alloc, alloc.getType(), Type(), ValueRange(),
        alloc.getDynamicSizes(), ValueRange());
  }

  SmallVector<gpu::LaunchOp> launches;
  root->walk([&](gpu::LaunchOp launch) { launches.push_back(launch); });
  for (gpu::LaunchOp launch : launches) {
    if (launch.getAsyncToken() || !launch.getAsyncDependencies().empty())
      return launch.emitOpError()
             << "is asynchronous; stage its buffers before making it async";
    SetVector<Value> captured;
    getUsedValuesDefinedAbove(launch.getBody(), captured);
    Location loc = launch.getLoc();
    for (Value host : captured) {
      auto type = dyn_cast<MemRefType>(host.getType());
      // Scalars travel as kernel arguments; workgroup and private memory
      // are the kernel's own.
      if (!type || type.getMemorySpace() ||
          isa_and_present<gpu::AllocOp>(allocationOf(host)))
        continue;
      if (!type.getLayout().isIdentity())
        return launch.emitOpError()
               << "uses a view of layout " << type.getLayout()
               << " of a host buffer; device copies are made of whole "
                  "buffers of identity layout";
      bool written = mayWriteInside(host, launch.getBody());
      rewriter.setInsertionPoint(launch);
      SmallVector<Value> sizes;
      for (int64_t d = 0; d < type.getRank(); ++d)
        if (type.isDynamicDim(d))
          sizes.push_back(memref::DimOp::create(rewriter, loc, host, d));
      Value device = gpu::AllocOp::create(rewriter, loc, type, Type(),
                                          ValueRange(), sizes, ValueRange())
                         .getMemref();
      gpu::MemcpyOp::create(rewriter, loc, Type(), ValueRange(), device, host);
      rewriter.replaceUsesWithIf(host, device, [&](OpOperand &use) {
        return launch->isProperAncestor(use.getOwner());
      });
      rewriter.setInsertionPointAfter(launch);
      auto free = gpu::DeallocOp::create(rewriter, loc, Type(), ValueRange(),
                                         device);
      if (written) {
        rewriter.setInsertionPoint(free);
        gpu::MemcpyOp::create(rewriter, loc, Type(), ValueRange(), host,
                              device);
      }
    }
  }
  return success();
}

namespace {

struct MHADistributeToThreadsPass final
    : mha::impl::MHADistributeToThreadsPassBase<MHADistributeToThreadsPass> {
  using MHADistributeToThreadsPassBase::MHADistributeToThreadsPassBase;
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    if (failed(mha::distributeToThreads(rewriter, getOperation(), threads)))
      signalPassFailure();
  }
};

struct MHAMapForallToGPUPass final
    : mha::impl::MHAMapForallToGPUPassBase<MHAMapForallToGPUPass> {
  using MHAMapForallToGPUPassBase::MHAMapForallToGPUPassBase;
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    if (failed(mha::mapForallsToGPULaunch(rewriter, getOperation(), threads)))
      signalPassFailure();
  }
};

struct MHATileForWorkgroupsPass final
    : mha::impl::MHATileForWorkgroupsPassBase<MHATileForWorkgroupsPass> {
  using MHATileForWorkgroupsPassBase::MHATileForWorkgroupsPassBase;
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    if (failed(mha::tileForWorkgroups(rewriter, getOperation(), rows, cols,
                                      depth)))
      signalPassFailure();
  }
};

struct MHAAdditiveMaskPass final
    : mha::impl::MHAAdditiveMaskPassBase<MHAAdditiveMaskPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    getOperation()->walk(
        [&](mha::AttentionOp op) { (void)mha::boolMaskToAdditive(rewriter, op); });
  }
};

struct MHAStageKernelBuffersPass final
    : mha::impl::MHAStageKernelBuffersPassBase<MHAStageKernelBuffersPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    if (failed(mha::stageKernelBuffers(rewriter, getOperation())))
      signalPassFailure();
  }
};

} // namespace
