//===- PipelineEdges.cpp - What pipelines take in and hand out ------------===//
//
// The two ends of every mha-lower-to-* pipeline: upstream aggregate ops that
// frontends emit (linalg.softmax) decomposed on the way in, and a check on
// the way out that nothing but LLVM-translatable IR is left, with an error
// at the op that was not lowered.
//
//===----------------------------------------------------------------------===//

#include "mha/Codegen/Common/Passes.h"
#include "mha/Codegen/Common/Transforms.h"
#include "mha/Dialect/MHA/IR/MHADialect.h"
#include "mha/Dialect/MHA/IR/MHAOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/SmallBitVector.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"

namespace mlir::mha {
#define GEN_PASS_DEF_MHADECOMPOSEAGGREGATESPASS
#define GEN_PASS_DEF_MHACHECKLOWEREDPASS
#define GEN_PASS_DEF_MHARETURNARGUMENTSINPLACEPASS
#define GEN_PASS_DEF_MHAMARKREADONLYARGUMENTSPASS
#include "mha/Codegen/Common/Passes.h.inc"
} // namespace mlir::mha

using namespace mlir;

LogicalResult mha::decomposeAggregateOps(RewriterBase &rewriter,
                                         Operation *root,
                                         bool serialCacheAppends) {
  SmallVector<linalg::AggregatedOpInterface> aggregates;
  // mha.attention_weights, mha.cache_append and mha.rotary have no lowering
  // but their decompositions either; the other mha ops have their own
  // passes.
  root->walk([&](linalg::AggregatedOpInterface op) {
    if (!isa_and_present<MHADialect>(op->getDialect()) ||
        isa<AttentionWeightsOp, CacheAppendOp, RotaryOp>(op.getOperation()))
      aggregates.push_back(op);
  });
  for (linalg::AggregatedOpInterface op : aggregates) {
    // Upstream's decompositions build tensor ops (on buffers they would
    // produce invalid IR).
    auto dps = dyn_cast<DestinationStyleOpInterface>(op.getOperation());
    if (dps && !dps.hasPureTensorSemantics())
      return op->emitError()
             << "on buffers cannot be decomposed: only the tensor form of '"
             << op->getName() << "' can (run this before bufferization)";
    rewriter.setInsertionPoint(op);
    auto append = dyn_cast<CacheAppendOp>(op.getOperation());
    FailureOr<SmallVector<Value>> values =
        append ? append.decompose(rewriter, !serialCacheAppends)
               : op.decomposeOperation(rewriter);
    if (failed(values))
      return op->emitError() << "could not be decomposed into linalg ops";
    rewriter.replaceOp(op, *values);
  }
  return success();
}

/// Ops the translation to LLVM IR takes: the LLVM and OpenMP dialects, the
/// modules around them, and the GPU host forms (an embedded binary and the
/// launches of its kernels).
static bool isTranslatable(Operation *op) {
  return isa_and_present<LLVM::LLVMDialect, omp::OpenMPDialect>(
             op->getDialect()) ||
         isa<ModuleOp, gpu::BinaryOp, gpu::LaunchFuncOp>(op);
}

LogicalResult mha::checkLoweredToLLVM(Operation *root) {
  // A mark only the GPU pipelines honour: elsewhere the caller's device
  // buffers would be read as host memory, and its results expected back.
  bool ignoredMark = false;
  root->walk([&](LLVM::LLVMFuncOp func) {
    if (func->hasAttr(kDeviceResidentAttrName) &&
        !func->hasAttr(kDeviceResultsAttrName)) {
      emitError(func.getLoc())
          << "@" << func.getSymName() << " is marked '"
          << kDeviceResidentAttrName
          << "', which this pipeline does not honour: only the GPU "
             "pipelines (mha-stage-kernel-buffers) keep a function's "
             "buffers on the device";
      ignoredMark = true;
    }
  });
  if (ignoredMark)
    return failure();
  SmallVector<Operation *> leftovers, casts;
  root->walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (op == root || isTranslatable(op))
      return WalkResult::advance();
    (isa<UnrealizedConversionCastOp>(op) ? casts : leftovers).push_back(op);
    return WalkResult::skip();
  });
  // Errors at the op's location without the op printed after them: a
  // leftover function or loop would print whole.
  for (Operation *op : leftovers)
    emitError(op->getLoc()) << "'" << op->getName()
                    << "' was not lowered to the LLVM dialect: the pipeline "
                       "has no lowering for it";
  if (leftovers.empty())
    for (Operation *op : casts)
      emitError(op->getLoc()) << "a type conversion was left unresolved: '"
                      << op->getName() << "' from "
                      << op->getOperandTypes() << " to "
                      << op->getResultTypes();
  return success(leftovers.empty() && casts.empty());
}

int64_t mha::getUpdatedArgument(func::FuncOp func, unsigned result) {
  if (func.isExternal() || !func.getBody().hasOneBlock())
    return -1;
  Block &entry = func.getBody().front();
  Value value = entry.getTerminator()->getOperand(result);
  while (auto opResult = dyn_cast<OpResult>(value)) {
    // A layer's updated caches: written into its caches once decomposed.
    if (auto layer = dyn_cast<MultiHeadAttentionOp>(opResult.getOwner())) {
      OpOperand *cache = layer.getTiedCache(opResult);
      if (!cache)
        return -1;
      value = cache->get();
      continue;
    }
    auto dps = dyn_cast<DestinationStyleOpInterface>(opResult.getOwner());
    if (!dps || !dps.hasPureTensorSemantics())
      return -1;
    value = dps.getTiedOpOperand(opResult)->get();
  }
  auto argument = cast<BlockArgument>(value);
  return argument.getOwner() == &entry ? argument.getArgNumber() : -1;
}

void mha::markReadOnlyArguments(ModuleOp module) {
  module.walk([&](func::FuncOp func) {
    if (func.isExternal())
      return;
    llvm::SmallBitVector updated(func.getNumArguments());
    for (unsigned j = 0, e = func.getNumResults(); j < e; ++j)
      if (int64_t i = getUpdatedArgument(func, j); i >= 0)
        updated.set(i);
    for (auto [i, type] : llvm::enumerate(func.getArgumentTypes()))
      if (isa<TensorType>(type) && !updated.test(i) &&
          !func.getArgAttr(i, bufferization::BufferizationDialect::
                                  kWritableAttrName))
        func.setArgAttr(i,
                        bufferization::BufferizationDialect::kWritableAttrName,
                        BoolAttr::get(func.getContext(), false));
  });
}

/// The argument of `func`'s entry block that its returned operand `operand`
/// is a clone of (used only by the return), or null.
static BlockArgument clonedArgument(func::FuncOp func, OpOperand &operand) {
  auto clone = operand.get().getDefiningOp<bufferization::CloneOp>();
  if (!clone || !clone->hasOneUse())
    return {};
  auto argument = dyn_cast<BlockArgument>(clone.getInput());
  if (!argument || argument.getOwner() != &func.getBody().front() ||
      argument.getType() != clone.getType())
    return {};
  return argument;
}

/// Returns the argument in place of the clone `operand` holds.
static void returnInPlace(OpOperand &operand, BlockArgument argument) {
  Operation *clone = operand.get().getDefiningOp();
  operand.set(argument);
  clone->erase();
}

void mha::returnArgumentsInPlace(ModuleOp module) {
  SymbolTableCollection symbols;
  SymbolUserMap users(symbols, module);
  module.walk([&](func::FuncOp func) {
    if (func.isExternal() || !func.getBody().hasOneBlock())
      return;
    ArrayRef<Operation *> calls = users.getUsers(func);
    func.walk([&](func::ReturnOp ret) {
      for (OpOperand &operand : ret->getOpOperands()) {
        BlockArgument argument = clonedArgument(func, operand);
        if (!argument)
          continue;
        // Nothing in the module calls it: the callers outside (mha-run, the
        // functions mha-aot writes, C) compare the result's pointer with
        // their arguments'.
        if (calls.empty()) {
          returnInPlace(operand, argument);
          continue;
        }
        // Called (an entry calling its NAME_prepared): only where every
        // caller is an entry that passes, for the argument, an argument of
        // its own and returns the call's result as it is, so that no caller
        // frees the buffer; the callers then return their arguments.
        unsigned result = operand.getOperandNumber();
        bool safe = llvm::all_of(calls, [&](Operation *user) {
          auto call = dyn_cast<func::CallOp>(user);
          if (!call)
            return false;
          auto caller = call->getParentOfType<func::FuncOp>();
          auto passed =
              dyn_cast<BlockArgument>(call.getOperand(argument.getArgNumber()));
          Value value = call.getResult(result);
          // Returned; otherwise only compared by the deallocation's
          // bookkeeping (which keeps what is returned).
          bool returned = llvm::any_of(value.getUsers(), [](Operation *u) {
            return isa<func::ReturnOp>(u);
          });
          bool onlyReturned = llvm::all_of(value.getUsers(), [](Operation *u) {
            return isa<func::ReturnOp, memref::ExtractAlignedPointerAsIndexOp>(
                u);
          });
          return caller && users.getUsers(caller).empty() && passed &&
                 passed.getOwner() == &caller.getBody().front() && returned &&
                 onlyReturned;
        });
        if (safe)
          returnInPlace(operand, argument);
      }
    });
  });
}

namespace {

struct MHADecomposeAggregatesPass final
    : mha::impl::MHADecomposeAggregatesPassBase<MHADecomposeAggregatesPass> {
  using MHADecomposeAggregatesPassBase::MHADecomposeAggregatesPassBase;
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    if (failed(mha::decomposeAggregateOps(rewriter, getOperation(),
                                          serialCacheAppends)))
      signalPassFailure();
  }
};

struct MHAMarkReadOnlyArgumentsPass final
    : mha::impl::MHAMarkReadOnlyArgumentsPassBase<
          MHAMarkReadOnlyArgumentsPass> {
  void runOnOperation() override {
    mha::markReadOnlyArguments(getOperation());
  }
};

struct MHAReturnArgumentsInPlacePass final
    : mha::impl::MHAReturnArgumentsInPlacePassBase<
          MHAReturnArgumentsInPlacePass> {
  void runOnOperation() override {
    mha::returnArgumentsInPlace(getOperation());
  }
};

struct MHACheckLoweredPass final
    : mha::impl::MHACheckLoweredPassBase<MHACheckLoweredPass> {
  void runOnOperation() override {
    if (failed(mha::checkLoweredToLLVM(getOperation())))
      signalPassFailure();
  }
};

} // namespace
