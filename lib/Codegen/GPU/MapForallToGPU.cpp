//===- MapForallToGPU.cpp - workgroup tiles on buffers as gpu.launch ------===//
//
// On buffers: each top-level scf.forall becomes a gpu.launch with one
// workgroup per iteration (grid sizes computed at run time from the loop
// bounds), and upstream's mapNestedForallToThreadsImpl maps the thread
// loops inside it, with a barrier after each; workgroup allocations become
// the launch's workgroup attributions (mha-map-forall-to-gpu).
//
//===----------------------------------------------------------------------===//

#include "GPUMapping.h"

#include "mha/Codegen/GPU/Passes.h"
#include "mha/Codegen/Common/KernelConfig.h"
#include "mha/Codegen/GPU/Transforms.h"
#include "mha/Dialect/MHA/Transforms/Transforms.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/TransformOps/GPUTransformOps.h"
#include "mlir/Dialect/GPU/Utils/GPUUtils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir::mha {
#define GEN_PASS_DEF_MHAMAPFORALLTOGPUPASS
#include "mha/Codegen/GPU/Passes.h.inc"
} // namespace mlir::mha

using namespace mlir;
using namespace mlir::mha::detail;

/// The workgroup-memory allocations in `launch`'s body as workgroup
/// attributions of the launch: the GPU dialect's form of memory that lives
/// as long as the workgroup, which every target lowers (NVVM turns a
/// `memref.alloc` in a kernel into a per-thread malloc instead). An
/// allocation inside a loop of the kernel is one buffer reused by every
/// iteration, as a workgroup variable would be. With `dynamicAbove` > 0,
/// allocations of more bytes than that in all are views of the launch's
/// dynamic workgroup memory instead (CUDA's static shared memory stops at
/// 48 KiB; more is dynamic, opted into at launch).
static LogicalResult allocsToWorkgroupAttributions(RewriterBase &rewriter,
                                                   gpu::LaunchOp launch,
                                                   int64_t dynamicAbove) {
  SmallVector<memref::AllocOp> allocs;
  launch.getBody().walk([&](memref::AllocOp alloc) {
    auto space = dyn_cast_if_present<gpu::AddressSpaceAttr>(
        alloc.getType().getMemorySpace());
    if (space && space.getValue() == gpu::AddressSpace::Workgroup)
      allocs.push_back(alloc);
  });
  SmallVector<Type> types;
  for (memref::AllocOp alloc : allocs) {
    if (!alloc.getType().hasStaticShape())
      return alloc.emitOpError()
             << "allocates workgroup memory of dynamic size "
             << alloc.getType() << "; workgroup memory has static sizes";
    types.push_back(alloc.getType());
  }
  // Each buffer's offset, aligned as mha-align-workgroup-memory aligns the
  // attributions.
  SmallVector<int64_t> offsets;
  int64_t bytes = mha::layOutWorkgroupBuffers(types, &offsets);
  if (dynamicAbove > 0 && bytes > dynamicAbove) {
    MLIRContext *ctx = rewriter.getContext();
    Location loc = launch.getLoc();
    rewriter.setInsertionPoint(launch);
    launch.getDynamicSharedMemorySizeMutable().assign(
        arith::ConstantIntOp::create(rewriter, loc, bytes, 32));
    rewriter.setInsertionPointToStart(&launch.getBody().front());
    auto space = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
    Value base = gpu::DynamicSharedMemoryOp::create(
        rewriter, loc,
        MemRefType::get({ShapedType::kDynamic}, rewriter.getI8Type(),
                        MemRefLayoutAttrInterface(), space));
    for (auto [alloc, offset] : llvm::zip(allocs, offsets)) {
      Value view = memref::ViewOp::create(
          rewriter, alloc.getLoc(), alloc.getType(), base,
          arith::ConstantIndexOp::create(rewriter, loc, offset), ValueRange());
      for (Operation *user : llvm::make_early_inc_range(alloc->getUsers()))
        if (isa<memref::DeallocOp>(user))
          rewriter.eraseOp(user);
      rewriter.replaceOp(alloc, view);
    }
    return success();
  }
  for (memref::AllocOp alloc : allocs) {
    BlockArgument buffer =
        launch.addWorkgroupAttribution(alloc.getType(), alloc.getLoc());
    for (Operation *user : llvm::make_early_inc_range(alloc->getUsers()))
      if (isa<memref::DeallocOp>(user))
        rewriter.eraseOp(user);
    rewriter.replaceOp(alloc, buffer);
  }
  return success();
}

/// Whether every write to `buffer` (through any view of it) happens before
/// `load`, in the block of `load` or inside an op before it there: the value
/// `load` reads is then the one a kernel launched after it would read.
static bool isWrittenOnlyBefore(Value buffer, Operation *load) {
  SmallVector<Value> worklist = {buffer};
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    for (Operation *user : value.getUsers()) {
      if (auto view = dyn_cast<ViewLikeOpInterface>(user);
          view && view.getViewSource() == value) {
        worklist.push_back(view.getViewDest());
        continue;
      }
      auto effects = dyn_cast<MemoryEffectOpInterface>(user);
      if (effects && !effects.getEffectOnValue<MemoryEffects::Write>(value))
        continue;
      Operation *writer = load->getBlock()->findAncestorOpInBlock(*user);
      if (!writer || !writer->isBeforeInBlock(load))
        return false;
    }
  }
  return true;
}

/// Whether the host computation `op`, used by a kernel, is better done in
/// the kernel: integer arithmetic (a loop bound, an offset), and scalar reads
/// of a buffer that nothing writes after them (per-batch key lengths, given
/// as an argument or computed on the host, e.g. `len + Sn` after a KV cache
/// append; CSE may have shared the read with a host-side run-time check).
/// Such values would otherwise become kernel arguments, which Vulkan kernels
/// cannot take.
static bool isBeneficiaryToSink(Operation *op) {
  auto integers = [](TypeRange types) {
    return llvm::all_of(types, [](Type t) { return t.isIntOrIndex(); });
  };
  if (isPure(op) && op->getNumRegions() == 0 && integers(op->getResultTypes()))
    return true;
  auto load = dyn_cast<memref::LoadOp>(op);
  if (!load || !integers(load.getResult().getType()))
    return false;
  Value buffer = load.getMemRef();
  auto argument = dyn_cast<BlockArgument>(buffer);
  bool fromFunction =
      argument && isa<FunctionOpInterface>(argument.getOwner()->getParentOp());
  bool allocated = isa_and_present<memref::AllocOp, memref::AllocaOp>(
      buffer.getDefiningOp());
  return (fromFunction || allocated) && isWrittenOnlyBefore(buffer, load);
}

/// Whether `op` is a view of a buffer (a subview, a cast, a reshape).
static bool isView(Operation *op) {
  return isa_and_present<memref::SubViewOp, memref::CastOp,
                         memref::ExpandShapeOp, memref::CollapseShapeOp>(op);
}

/// Collects into `ops` (operands first) the host ops that compute `value`
/// when all of them are worth sinking: the integer computations and scalar
/// reads isBeneficiaryToSink takes, and views of buffers. Their operands are
/// sunk too, or are values the kernel takes anyway (`used`), or buffers,
/// which the kernel takes whole as arguments.
static bool collectSinkable(Value value, const SetVector<Value> &used,
                            SetVector<Operation *> &ops) {
  Operation *op = value.getDefiningOp();
  if (!op || !(isView(op) || isBeneficiaryToSink(op)))
    return false;
  if (ops.contains(op))
    return true;
  for (Value operand : op->getOperands()) {
    bool buffer = isa<MemRefType>(operand.getType());
    if ((buffer && !isView(operand.getDefiningOp())) ||
        collectSinkable(operand, used, ops) || used.contains(operand))
      continue;
    return false;
  }
  ops.insert(op);
  return true;
}

/// Moves into `launch` (as clones) the host computations of the scalars and
/// the views it uses that collectSinkable takes. Upstream's
/// sinkOperationsIntoLaunchOp does this for ops whose operands the kernel
/// already uses; here a read or a view is also sunk when the kernel does
/// not use its buffer yet (it then takes the buffer). A kernel so takes
/// whole buffers, never a view: Vulkan binds a kernel argument's buffer
/// from its sizes, which a strided view's elements do not span (a view of
/// every other channel of a host buffer read half of the wrong elements).
static void sinkHostComputations(gpu::LaunchOp launch) {
  SetVector<Value> used;
  getUsedValuesDefinedAbove(launch.getBody(), used);
  OpBuilder b = OpBuilder::atBlockBegin(&launch.getBody().front());
  IRMapping mapping;
  for (Value value : used) {
    if (!value.getType().isIntOrIndex() && !isView(value.getDefiningOp()))
      continue;
    SetVector<Operation *> ops;
    if (!collectSinkable(value, used, ops))
      continue;
    for (Operation *op : ops)
      if (!mapping.contains(op->getResult(0)))
        b.clone(*op, mapping);
    replaceAllUsesInRegionWith(value, mapping.lookup(value), launch.getBody());
  }
}

BufferUses mha::detail::classifyUses(Value buffer) {
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

LogicalResult mha::mapForallsToGPULaunch(RewriterBase &rewriter,
                                         Operation *root, int64_t threads,
                                         int64_t dynamicAbove) {
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
    // A thread loop that states its own thread count (a kernel built for
    // its threads: mha-attention-to-mma, -to-simt) sets the workgroup's
    // size to it: its barriers must be reached by every thread, so the
    // workgroup has no thread outside the loop (which upstream's mapping
    // would leave out with an scf.if around the barriers).
    int64_t ownThreads = 0;
    loop.getBody()->walk([&](scf::ForallOp inner) {
      if (auto own = inner->getAttrOfType<LoweringConfigAttr>(
              kLoweringConfigAttrName))
        ownThreads = std::max(ownThreads, own.getThreads().value_or(0));
    });
    int64_t blockThreads = ownThreads ? ownThreads : threads;
    Value blockX =
        arith::ConstantIndexOp::create(rewriter, loc, blockThreads);
    auto launch = gpu::LaunchOp::create(rewriter, loc, grid[0], grid[1],
                                        grid[2], blockX, one, one);
    // The kernel's own name (outlining takes it; a second one of the
    // function gets a module name of its own).
    if (auto name = loop->getAttrOfType<StringAttr>(kKernelNameAttrName))
      if (auto func = loop->getParentOfType<FunctionOpInterface>())
        launch.setFunctionAttr(FlatSymbolRefAttr::get(
            rewriter.getStringAttr(func.getName() + "_" + name.getValue())));
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

    if (failed(allocsToWorkgroupAttributions(rewriter, launch, dynamicAbove)))
      return failure();
    sinkHostComputations(launch);

    rewriter.setInsertionPointToStart(&body);
    DiagnosedSilenceableFailure mapped =
        transform::gpu::mapNestedForallToThreadsImpl(
            rewriter, std::nullopt, launch, {blockThreads, 1, 1},
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

namespace {

struct MHAMapForallToGPUPass final
    : mha::impl::MHAMapForallToGPUPassBase<MHAMapForallToGPUPass> {
  using MHAMapForallToGPUPassBase::MHAMapForallToGPUPassBase;
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    for (FunctionOpInterface func : mha::functionsUnder(getOperation())) {
      FailureOr<int64_t> count = resolveThreads(func, threads);
      // Dynamic workgroup memory above the static limit, where the target
      // opts into more.
      mha::TargetAttr target = mha::getTarget(func);
      int64_t dynamicAbove = dynamicWorkgroupMemory && target &&
                                     target.getMaxWorkgroupMemoryOptin()
                                 ? target.getMaxWorkgroupMemory()
                                 : 0;
      if (failed(count) || failed(mha::mapForallsToGPULaunch(
                               rewriter, func, *count, dynamicAbove)))
        return signalPassFailure();
    }
  }
};

} // namespace
