//===- StageKernelBuffers.cpp - host buffers of launches through device memory
//--===//
//
// For targets whose kernels cannot read host memory: each host buffer a
// gpu.launch uses copied into device memory around it (in only when it holds
// something before the launch), back only when the kernel may write it
// (mha-stage-kernel-buffers). The buffers of a function marked
// mha.device_resident are device memory already: its arguments are not
// copied, and its results are written into device buffers its caller
// passes.
//
//===----------------------------------------------------------------------===//

#include "GPUMapping.h"

#include "mha/Codegen/GPU/Passes.h"
#include "mha/Codegen/GPU/Transforms.h"
#include "mha/Dialect/MHA/Transforms/Transforms.h"

#include "mha/Dialect/MHA/IR/MHADialect.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/Support/FormatVariadic.h"

namespace mlir::mha {
#define GEN_PASS_DEF_MHASTAGEKERNELBUFFERSPASS
#include "mha/Codegen/GPU/Passes.h.inc"
} // namespace mlir::mha

using namespace mlir;
using namespace mlir::mha::detail;

/// The first use of `buffer`, or of a view of it (views are followed, not
/// visited), for which `stops` holds; null if none.
static OpOperand *findUse(Value buffer, function_ref<bool(OpOperand &)> stops) {
  SmallVector<Value> worklist = {buffer};
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    for (OpOperand &use : value.getUses()) {
      if (auto view = dyn_cast<ViewLikeOpInterface>(use.getOwner());
          view && view.getViewSource() == value) {
        worklist.push_back(view.getViewDest());
        continue;
      }
      if (stops(use))
        return &use;
    }
  }
  return nullptr;
}

/// Whether `use` may write or free what it uses (unknown effects: yes).
static bool mayWrite(OpOperand &use) {
  auto effects = dyn_cast<MemoryEffectOpInterface>(use.getOwner());
  return !effects ||
         effects.getEffectOnValue<MemoryEffects::Write>(use.get()) ||
         effects.getEffectOnValue<MemoryEffects::Free>(use.get());
}

/// Whether the kernel may write `buffer` (uses through views included);
/// ops whose effects are unknown count as writes.
static bool mayWriteInside(Value buffer, Region &region) {
  return findUse(buffer, [&](OpOperand &use) {
    return region.isAncestor(use.getOwner()->getParentRegion()) &&
           mayWrite(use);
  });
}

/// The value `value` is a view of (itself if none).
static Value viewSourceOf(Value value) {
  while (auto view =
             dyn_cast_if_present<ViewLikeOpInterface>(value.getDefiningOp()))
    value = view.getViewSource();
  return value;
}

/// The allocation `value` is a view of, if any.
static Operation *allocationOf(Value value) {
  return viewSourceOf(value).getDefiningOp();
}

/// Whether nothing reads or writes `host`'s allocation before `launch`: a
/// buffer allocated (in the launch's block) for what the kernel computes,
/// whose contents are undefined until then, so that copying them in would
/// move bytes for nothing.
static bool isUninitializedAt(Value host, gpu::LaunchOp launch) {
  Operation *alloc = allocationOf(host);
  if (!isa_and_present<memref::AllocOp, memref::AllocaOp>(alloc) ||
      alloc->getBlock() != launch->getBlock())
    return false;
  return !findUse(alloc->getResult(0), [&](OpOperand &use) {
    Operation *user = use.getOwner();
    if (user == launch || launch->isProperAncestor(user) ||
        isa<memref::DimOp>(user))
      return false;
    Operation *at = launch->getBlock()->findAncestorOpInBlock(*user);
    return !at || at->isBeforeInBlock(launch);
  });
}

/// Whether `host` is only read, by the host and every kernel: one device copy
/// then serves all the launches of a block (the layer's input, read by the
/// Q, K and V projections).
static bool isReadOnly(Value host) {
  // Kernels' writes are counted per launch (mayWriteInside).
  return !findUse(host, [](OpOperand &use) {
    return !use.getOwner()->getParentOfType<gpu::LaunchOp>() && mayWrite(use);
  });
}

/// Whether host code does nothing with `host` but return it or its sizes:
/// kernels are then the only ones to read or write it, and one device copy
/// serves all the launches of a block (a KV cache a step's kernels write
/// and then read).
static bool isOnlyKernels(Value host) {
  return !findUse(host, [](OpOperand &use) {
    Operation *user = use.getOwner();
    return !user->getParentOfType<gpu::LaunchOp>() &&
           !isa<func::ReturnOp, memref::DimOp, memref::DeallocOp>(user);
  });
}

/// Whether `value` is (a view of) an argument of a device-resident function.
static bool isDeviceArgument(Value value) {
  auto argument = dyn_cast<BlockArgument>(viewSourceOf(value));
  if (!argument)
    return false;
  auto func = dyn_cast<func::FuncOp>(argument.getOwner()->getParentOp());
  return func && func->hasAttr(mha::kDeviceResidentAttrName) &&
         argument.getOwner() == &func.getBody().front();
}

/// `func`'s results written into device buffers its caller passes, as new
/// trailing arguments (in order): each is a buffer the function allocates
/// in its entry block, replaced by the argument, whose dynamic sizes are
/// checked against the ones it computes when it runs (cf.assert). A result
/// that is an argument (updated in place: a KV cache) needs no buffer.
/// Records which is which (kDeviceResultsAttrName).
static LogicalResult writeResultsIntoArguments(RewriterBase &rewriter,
                                               func::FuncOp func) {
  if (!func.getBody().hasOneBlock())
    return func.emitOpError()
           << "is marked '" << mha::kDeviceResidentAttrName
           << "' but has more than one block: its results cannot be "
              "written into the caller's device buffers";
  Block &entry = func.getBody().front();
  auto ret = cast<func::ReturnOp>(entry.getTerminator());
  SmallVector<int64_t> placement;
  for (OpOperand &operand : ret->getOpOperands()) {
    unsigned j = operand.getOperandNumber();
    Value value = operand.get();
    if (auto argument = dyn_cast<BlockArgument>(value);
        argument && argument.getOwner() == &entry) {
      placement.push_back(argument.getArgNumber());
      continue;
    }
    auto alloc = value.getDefiningOp<memref::AllocOp>();
    bool returnedOnce = llvm::count(ret->getOperands(), value) == 1;
    if (!alloc || alloc->getBlock() != &entry || !returnedOnce ||
        !alloc.getType().getLayout().isIdentity())
      return ret.emitOpError()
             << "returns result " << j << " of a function marked '"
             << mha::kDeviceResidentAttrName
             << "' that is neither an argument nor a buffer of its own "
                "(identity layout, allocated in the function's body, "
                "returned once): it cannot be written into a device "
                "buffer of the caller";
    if (failed(func.insertArgument(func.getNumArguments(), alloc.getType(), {},
                                   alloc.getLoc())))
      return func.emitOpError() << "could not take a buffer for result " << j;
    BlockArgument out = entry.getArguments().back();
    rewriter.setInsertionPoint(alloc);
    Location loc = alloc.getLoc();
    unsigned next = 0;
    for (int64_t d = 0; d < alloc.getType().getRank(); ++d) {
      if (!alloc.getType().isDynamicDim(d))
        continue;
      Value given = memref::DimOp::create(rewriter, loc, out, d);
      Value same =
          arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::eq, given,
                                alloc.getDynamicSizes()[next++]);
      cf::AssertOp::create(
          rewriter, loc, same,
          llvm::formatv("mha: the device buffer given for result {0} of "
                        "@{1} differs from the result in dimension {2}",
                        j, func.getSymName(), d)
              .str());
    }
    rewriter.replaceAllUsesWith(alloc.getResult(), out);
    rewriter.eraseOp(alloc);
    for (Operation *user : out.getUsers())
      if (isa<memref::DeallocOp>(user))
        return user->emitOpError()
               << "frees result " << j << " of a function marked '"
               << mha::kDeviceResidentAttrName << "'";
    placement.push_back(-1);
  }
  ret->setOperands({});
  func.setType(
      FunctionType::get(func.getContext(), func.getArgumentTypes(), {}));
  func.setAllResultAttrs(ArrayRef<DictionaryAttr>());
  func->setAttr(mha::kDeviceResultsAttrName,
                rewriter.getDenseI64ArrayAttr(placement));
  return success();
}

/// `value`, a view of `source` (through a chain of views), as the same view
/// of `copy` (a buffer of `source`'s type): the views cloned after their
/// originals, once each (`clones`).
static Value viewOfCopy(RewriterBase &rewriter, Value value, Value source,
                        Value copy, DenseMap<Value, Value> &clones) {
  if (value == source)
    return copy;
  if (Value done = clones.lookup(value))
    return done;
  auto view = cast<ViewLikeOpInterface>(value.getDefiningOp());
  Value base = viewOfCopy(rewriter, view.getViewSource(), source, copy, clones);
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointAfter(view);
  Operation *clone = rewriter.clone(*view);
  clone->replaceUsesOfWith(view.getViewSource(), base);
  Value cloned = clone->getResult(cast<OpResult>(value).getResultNumber());
  clones[value] = cloned;
  return cloned;
}

/// Whether `op` (host code of a device-resident function) may run in a
/// kernel as part of a run-time check of argument values: it writes
/// nothing, and reads memory only through the function's arguments
/// (`reads` is set where it does).
static bool isCheckPart(Operation *op, bool &reads) {
  if (auto load = dyn_cast<memref::LoadOp>(op)) {
    reads = true;
    return isDeviceArgument(load.getMemRef());
  }
  return isPure(op) || isa<scf::YieldOp, cf::AssertOp>(op) ||
         op->hasTrait<OpTrait::HasRecursiveMemoryEffects>();
}

/// Whether `op` and every op nested in it are check parts (isCheckPart);
/// `asserts` is set where one is a cf.assert.
static bool isCheckOp(Operation *op, bool &reads, bool &asserts) {
  return !op->walk([&](Operation *nested) {
              asserts |= isa<cf::AssertOp>(nested);
              return isCheckPart(nested, reads) ? WalkResult::advance()
                                                : WalkResult::interrupt();
            }).wasInterrupted();
}

/// Whether `op`, in the body of a device-resident function, is a run-time
/// check of its arguments' values with regions: it returns nothing, reads
/// memory only through the function's arguments (at least once), writes
/// nothing and asserts (mha-insert-runtime-checks' loop over key lengths).
static bool isArgumentCheckLoop(Operation *op) {
  if (op->getNumResults() || op->getNumRegions() == 0 || isa<gpu::LaunchOp>(op))
    return false;
  bool asserts = false, reads = false;
  return isCheckOp(op, reads, asserts) && asserts && reads;
}

/// The run-time checks of the device-resident `func`'s argument values
/// each moved into a kernel of one thread: loops of them
/// (isArgumentCheckLoop) as they are, and an assert of the block with the
/// ops it depends on (cloned; those then unused erased). They then read the
/// arguments on the device, and the call waits on no copy.
static void moveArgumentChecksIntoKernels(RewriterBase &rewriter,
                                          func::FuncOp func) {
  Block &entry = func.getBody().front();
  auto newKernel = [&](Operation *before) {
    Location loc = before->getLoc();
    rewriter.setInsertionPoint(before);
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    auto launch =
        gpu::LaunchOp::create(rewriter, loc, one, one, one, one, one, one);
    rewriter.setInsertionPointToStart(&launch.getBody().front());
    return gpu::TerminatorOp::create(rewriter, loc);
  };
  SmallVector<Operation *> loops;
  SmallVector<cf::AssertOp> asserts;
  for (Operation &op : entry) {
    if (isArgumentCheckLoop(&op))
      loops.push_back(&op);
    if (auto check = dyn_cast<cf::AssertOp>(op))
      asserts.push_back(check);
  }
  // Consecutive loops share a kernel (one launch for a step's checks).
  Operation *lastLaunch = nullptr;
  for (Operation *loop : loops) {
    Operation *terminator =
        lastLaunch && loop->getPrevNode() == lastLaunch
            ? cast<gpu::LaunchOp>(lastLaunch).getBody().front().getTerminator()
            : newKernel(loop);
    rewriter.moveOpBefore(loop, terminator);
    lastLaunch = terminator->getParentOp();
  }
  for (cf::AssertOp check : asserts) {
    // The ops of the block the condition depends on, in block order; all of
    // them check parts, and one a read of an argument.
    SetVector<Operation *> slice;
    BackwardSliceOptions options;
    options.filter = [&](Operation *op) { return op->getBlock() == &entry; };
    options.omitBlockArguments = true;
    if (failed(getBackwardSlice(check.getOperation(), &slice, options)))
      continue;
    bool reads = false, asserts = false;
    if (!llvm::all_of(
            slice,
            [&](Operation *op) { return isCheckOp(op, reads, asserts); }) ||
        !reads)
      continue;
    SmallVector<Operation *> ordered(slice.begin(), slice.end());
    llvm::sort(ordered, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
    Operation *terminator = newKernel(check);
    rewriter.setInsertionPoint(terminator);
    IRMapping mapping;
    for (Operation *op : ordered)
      rewriter.clone(*op, mapping);
    rewriter.moveOpBefore(check, terminator);
    check->replaceUsesOfWith(check.getArg(), mapping.lookup(check.getArg()));
    for (Operation *op : llvm::reverse(ordered))
      if (op->use_empty())
        rewriter.eraseOp(op);
  }
}

/// Host code of the device-resident `func` that reads one of its arguments
/// (the run-time check of key lengths, a boolean mask made additive) reads
/// a host copy of it, downloaded when the function starts: correct, at the
/// cost of that copy on every call (the runtimes' profiles count it).
/// Host code that would write one is refused: its buffers are device
/// memory, which only kernels may write.
static LogicalResult stageHostReads(RewriterBase &rewriter, func::FuncOp func) {
  Block &entry = func.getBody().front();
  for (BlockArgument argument : func.getArguments()) {
    auto type = dyn_cast<MemRefType>(argument.getType());
    if (!type)
      continue;
    SmallVector<OpOperand *> hostReads;
    OpOperand *hostWrite = findUse(argument, [&](OpOperand &use) {
      Operation *user = use.getOwner();
      if (user->getParentOfType<gpu::LaunchOp>() ||
          isa<memref::DimOp, memref::ExtractStridedMetadataOp>(user))
        return false;
      if (mayWrite(use))
        return true;
      if (cast<MemoryEffectOpInterface>(user)
              .getEffectOnValue<MemoryEffects::Read>(use.get()))
        hostReads.push_back(&use);
      return false;
    });
    if (hostWrite) {
      InFlightDiagnostic diag =
          hostWrite->getOwner()->emitOpError()
          << "runs on the host and may write argument "
          << argument.getArgNumber() << " of @" << func.getSymName()
          << ", which is marked '" << mha::kDeviceResidentAttrName
          << "': its buffers are device memory, which only kernels may "
             "write";
      diag.attachNote(func.getLoc()) << "the function";
      return diag;
    }
    if (hostReads.empty())
      continue;
    // The copy is taken when the function starts: a kernel that writes the
    // argument would leave it stale for reads after it.
    WalkResult written = func.walk([&](gpu::LaunchOp launch) {
      return mayWriteInside(argument, launch.getBody())
                 ? WalkResult::interrupt()
                 : WalkResult::advance();
    });
    if (written.wasInterrupted()) {
      InFlightDiagnostic diag =
          hostReads.front()->getOwner()->emitOpError()
          << "runs on the host and reads argument " << argument.getArgNumber()
          << " of @" << func.getSymName() << ", which is marked '"
          << mha::kDeviceResidentAttrName
          << "' and which a kernel writes: its buffers are device memory, "
             "and a host copy would not see the kernel's writes";
      diag.attachNote(func.getLoc()) << "the function";
      return diag;
    }
    if (!type.getLayout().isIdentity())
      return func.emitOpError()
             << "reads argument " << argument.getArgNumber()
             << " on the host, whose layout " << type.getLayout()
             << " has no host copy (identity layouts only)";
    Location loc = argument.getLoc();
    rewriter.setInsertionPointToStart(&entry);
    SmallVector<Value> sizes;
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (type.isDynamicDim(d))
        sizes.push_back(memref::DimOp::create(rewriter, loc, argument, d));
    Value copy = memref::AllocOp::create(rewriter, loc, type, sizes);
    gpu::MemcpyOp::create(rewriter, loc, Type(), ValueRange(), copy, argument);
    DenseMap<Value, Value> clones;
    for (OpOperand *use : hostReads) {
      Value read = viewOfCopy(rewriter, use->get(), argument, copy, clones);
      rewriter.modifyOpInPlace(use->getOwner(), [&] { use->set(read); });
    }
    rewriter.setInsertionPoint(entry.getTerminator());
    memref::DeallocOp::create(rewriter, loc, copy);
  }
  return success();
}

LogicalResult mha::stageKernelBuffers(RewriterBase &rewriter, Operation *root,
                                      bool checksInKernels) {
  // Device-resident functions: results into the caller's buffers first, so
  // that kernels write them directly.
  SmallVector<func::FuncOp> deviceResident;
  root->walk([&](func::FuncOp func) {
    if (func->hasAttr(kDeviceResidentAttrName) &&
        !func->hasAttr(kDeviceResultsAttrName) && !func.isExternal())
      deviceResident.push_back(func);
  });
  for (func::FuncOp func : deviceResident) {
    if (failed(writeResultsIntoArguments(rewriter, func)))
      return failure();
    if (checksInKernels)
      moveArgumentChecksIntoKernels(rewriter, func);
    if (failed(stageHostReads(rewriter, func)))
      return failure();
  }

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
  // The buffers each launch uses from outside, whether it may write them,
  // and per buffer the launches that read and write it. (Staging a launch
  // changes what it uses, not what the others do.)
  SmallVector<SmallVector<std::pair<Value, bool>>> uses;
  DenseMap<Value, int64_t> readers, writers;
  DenseMap<Value, SmallPtrSet<Block *, 2>> blocks;
  for (gpu::LaunchOp launch : launches) {
    SetVector<Value> captured;
    getUsedValuesDefinedAbove(launch.getBody(), captured);
    auto &used = uses.emplace_back();
    for (Value host : captured) {
      bool written = isa<MemRefType>(host.getType()) &&
                     mayWriteInside(host, launch.getBody());
      used.push_back({host, written});
      ++(written ? writers : readers)[host];
      blocks[host].insert(launch->getBlock());
    }
  }
  // The buffers one device copy serves for every launch of a block that
  // uses them: those several launches use and the host only reads (the
  // layer's input, read by each projection), and those only kernels touch,
  // all in one block (a KV cache that a step's kernels append to and then
  // read: copied in once and out once, not around each launch). Decided
  // before any copy is made, which the host would then use.
  DenseSet<Value> shared;
  for (auto [host, count] : readers)
    if (count + writers.lookup(host) > 1 && !writers.count(host) &&
        isReadOnly(host))
      shared.insert(host);
  for (auto [host, count] : writers)
    if (count + readers.lookup(host) > 1 && blocks.lookup(host).size() == 1 &&
        isOnlyKernels(host))
      shared.insert(host);
  // The device copy of such a buffer already made for a launch of the same
  // block, the op freeing it (moved after each launch that reuses it) and
  // the copy back to the host before it, if a launch writes it.
  struct DeviceCopy {
    Value device;
    Operation *free, *copyOut;
  };
  DenseMap<std::pair<Block *, Value>, DeviceCopy> copies;
  for (auto [i, launchOp] : llvm::enumerate(launches)) {
    gpu::LaunchOp launch = launchOp; // captured by the lambdas below
    if (launch.getAsyncToken() || !launch.getAsyncDependencies().empty())
      return launch.emitOpError()
             << "is asynchronous; stage its buffers before making it async";
    Location loc = launch.getLoc();
    for (auto [host, written] : uses[i]) {
      auto type = dyn_cast<MemRefType>(host.getType());
      // Scalars travel as kernel arguments; workgroup and private memory
      // are the kernel's own.
      if (!type || type.getMemorySpace() ||
          isa_and_present<gpu::AllocOp>(allocationOf(host)) ||
          isDeviceArgument(host))
        continue;
      if (!type.getLayout().isIdentity())
        return launch.emitOpError()
               << "uses a view of layout " << type.getLayout()
               << " of a host buffer; device copies are made of whole "
                  "buffers of identity layout";
      bool isShared = shared.contains(host);
      if (isShared) {
        auto it = copies.find({launch->getBlock(), host});
        if (it != copies.end()) {
          DeviceCopy &copy = it->second;
          rewriter.replaceUsesWithIf(host, copy.device, [&](OpOperand &use) {
            return launch->isProperAncestor(use.getOwner());
          });
          rewriter.moveOpAfter(copy.free, launch);
          if (written && !copy.copyOut) {
            rewriter.setInsertionPoint(copy.free);
            copy.copyOut = gpu::MemcpyOp::create(
                rewriter, loc, Type(), ValueRange(), host, copy.device);
          } else if (copy.copyOut) {
            rewriter.moveOpBefore(copy.copyOut, copy.free);
          }
          continue;
        }
      }
      rewriter.setInsertionPoint(launch);
      SmallVector<Value> sizes;
      for (int64_t d = 0; d < type.getRank(); ++d)
        if (type.isDynamicDim(d))
          sizes.push_back(memref::DimOp::create(rewriter, loc, host, d));
      Value device = gpu::AllocOp::create(rewriter, loc, type, Type(),
                                          ValueRange(), sizes, ValueRange())
                         .getMemref();
      if (!isUninitializedAt(host, launch))
        gpu::MemcpyOp::create(rewriter, loc, Type(), ValueRange(), device,
                              host);
      rewriter.replaceUsesWithIf(host, device, [&](OpOperand &use) {
        return launch->isProperAncestor(use.getOwner());
      });
      rewriter.setInsertionPointAfter(launch);
      auto free = gpu::DeallocOp::create(rewriter, loc, Type(), ValueRange(),
                                         device);
      Operation *copyOut = nullptr;
      if (written) {
        rewriter.setInsertionPoint(free);
        copyOut = gpu::MemcpyOp::create(rewriter, loc, Type(), ValueRange(),
                                        host, device);
      }
      if (isShared)
        copies[{launch->getBlock(), host}] = {device, free, copyOut};
    }
  }
  return success();
}

namespace {

struct MHAStageKernelBuffersPass final
    : mha::impl::MHAStageKernelBuffersPassBase<MHAStageKernelBuffersPass> {
  using MHAStageKernelBuffersPassBase::MHAStageKernelBuffersPassBase;
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    if (failed(
            mha::stageKernelBuffers(rewriter, getOperation(), checksInKernels)))
      signalPassFailure();
  }
};

} // namespace
