//===- StageKernelBuffers.cpp - host buffers of launches through device memory
//--===//
//
// For targets whose kernels cannot read host memory: each host buffer a
// gpu.launch uses copied into device memory around it (in only when it holds
// something before the launch), back only when the kernel may write it
// (mha-stage-kernel-buffers).
//
//===----------------------------------------------------------------------===//

#include "GPUMapping.h"

#include "mha/Codegen/GPU/Passes.h"
#include "mha/Codegen/GPU/Transforms.h"
#include "mha/Dialect/MHA/Transforms/Transforms.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir::mha {
#define GEN_PASS_DEF_MHASTAGEKERNELBUFFERSPASS
#include "mha/Codegen/GPU/Passes.h.inc"
} // namespace mlir::mha

using namespace mlir;
using namespace mlir::mha::detail;

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

/// Whether nothing reads or writes `host`'s allocation before `launch`: a
/// buffer allocated (in the launch's block) for what the kernel computes,
/// whose contents are undefined until then, so that copying them in would
/// move bytes for nothing.
static bool isUninitializedAt(Value host, gpu::LaunchOp launch) {
  Operation *alloc = allocationOf(host);
  if (!isa_and_present<memref::AllocOp, memref::AllocaOp>(alloc) ||
      alloc->getBlock() != launch->getBlock())
    return false;
  SmallVector<Value> worklist = {alloc->getResult(0)};
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    for (Operation *user : value.getUsers()) {
      if (user == launch || launch->isProperAncestor(user) ||
          isa<memref::DimOp>(user))
        continue;
      if (auto view = dyn_cast<ViewLikeOpInterface>(user);
          view && view.getViewSource() == value) {
        worklist.push_back(view.getViewDest());
        continue;
      }
      Operation *at = launch->getBlock()->findAncestorOpInBlock(*user);
      if (!at || at->isBeforeInBlock(launch))
        return false;
    }
  }
  return true;
}

/// Whether `host` is only read, by the host and every kernel: one device copy
/// then serves all the launches of a block (the layer's input, read by the
/// Q, K and V projections).
static bool isReadOnly(Value host) {
  SmallVector<Value> worklist = {host};
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    for (OpOperand &use : value.getUses()) {
      Operation *user = use.getOwner();
      // Kernels' writes are counted per launch (mayWriteInside).
      if (user->getParentOfType<gpu::LaunchOp>())
        continue;
      if (auto view = dyn_cast<ViewLikeOpInterface>(user);
          view && view.getViewSource() == value) {
        worklist.push_back(view.getViewDest());
        continue;
      }
      auto effects = dyn_cast<MemoryEffectOpInterface>(user);
      if (!effects || effects.getEffectOnValue<MemoryEffects::Write>(value) ||
          effects.getEffectOnValue<MemoryEffects::Free>(value))
        return false;
    }
  }
  return true;
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
  // The buffers each launch uses from outside, whether it may write them,
  // and per buffer the launches that read and write it. (Staging a launch
  // changes what it uses, not what the others do.)
  SmallVector<SmallVector<std::pair<Value, bool>>> uses;
  DenseMap<Value, int64_t> readers, writers;
  for (gpu::LaunchOp launch : launches) {
    SetVector<Value> captured;
    getUsedValuesDefinedAbove(launch.getBody(), captured);
    auto &used = uses.emplace_back();
    for (Value host : captured) {
      bool written = isa<MemRefType>(host.getType()) &&
                     mayWriteInside(host, launch.getBody());
      used.push_back({host, written});
      ++(written ? writers : readers)[host];
    }
  }
  // The device copy of such a buffer already made for a launch of the same
  // block, and the op freeing it (moved after each launch that reuses it).
  DenseMap<std::pair<Block *, Value>, std::pair<Value, Operation *>> copies;
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
          isa_and_present<gpu::AllocOp>(allocationOf(host)))
        continue;
      if (!type.getLayout().isIdentity())
        return launch.emitOpError()
               << "uses a view of layout " << type.getLayout()
               << " of a host buffer; device copies are made of whole "
                  "buffers of identity layout";
      bool shared = !written && !writers.count(host) &&
                    readers.lookup(host) > 1 && isReadOnly(host);
      if (shared) {
        auto it = copies.find({launch->getBlock(), host});
        if (it != copies.end()) {
          Value device = it->second.first;
          rewriter.replaceUsesWithIf(host, device, [&](OpOperand &use) {
            return launch->isProperAncestor(use.getOwner());
          });
          rewriter.moveOpAfter(it->second.second, launch);
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
      if (shared)
        copies[{launch->getBlock(), host}] = {device, free};
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

struct MHAStageKernelBuffersPass final
    : mha::impl::MHAStageKernelBuffersPassBase<MHAStageKernelBuffersPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    if (failed(mha::stageKernelBuffers(rewriter, getOperation())))
      signalPassFailure();
  }
};

} // namespace
