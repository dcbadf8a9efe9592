//===- Transforms.h - Code generation for every target ----------*- C++ -*-===//
//
// The algorithms behind mha/Codegen/Common/Passes.td.
//
//===----------------------------------------------------------------------===//

#ifndef MHA_CODEGEN_COMMON_TRANSFORMS_H
#define MHA_CODEGEN_COMMON_TRANSFORMS_H

#include "mlir/Support/LLVM.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir {
class Operation;
class RewriterBase;

namespace mha {

/// Replaces every op under `root` that implements linalg's
/// AggregatedOpInterface and is not an mha op (linalg.softmax), and every
/// mha.attention_weights, mha.cache_append and mha.rotary, by its
/// decomposition (a cache append's a serial loop over batches with
/// `serialCacheAppends`, else a parallel one). Fails, with an error at the
/// op, where one cannot be decomposed.
LogicalResult decomposeAggregateOps(RewriterBase &rewriter, Operation *root,
                                    bool serialCacheAppends = false);

/// The argument of `func` whose buffer its result `result` is written into:
/// where the chain of destination-passing ops the returned value comes from
/// starts at an argument of the entry block (a KV cache updated by
/// mha.cache_append, or by a layer's kv_cache); -1 if it does not, or if
/// `func` has several blocks.
int64_t getUpdatedArgument(func::FuncOp func, unsigned result);

/// Marks every tensor argument of the functions in `module` that no result
/// is written into (getUpdatedArgument) `bufferization.writable = false`
/// (see mha-mark-read-only-arguments).
void markReadOnlyArguments(ModuleOp module);

/// In each function of `module` that nothing in it calls, returns an
/// argument of the entry block where a `bufferization.clone` of it (used
/// only by the return) was returned (see mha-return-arguments-in-place).
void returnArgumentsInPlace(ModuleOp module);

/// Adds `@NAME_prepare` (what `func` computes from its `mha.weight`
/// arguments alone, once) and `@NAME_prepared` (the rest, taking those
/// values) beside `func` (see mha-outline-weight-preparation). Nothing is
/// done for a function without such arguments. Fails, with an error at
/// `func`, where a weight is updated in place, the function has several
/// blocks, or one of the two names is taken.
LogicalResult outlineWeightPreparation(func::FuncOp func);

/// Emits an error at every outermost op under `root` that the translation
/// to LLVM IR cannot take (see mha-check-lowered) and fails if there was one.
LogicalResult checkLoweredToLLVM(Operation *root);

} // namespace mha
} // namespace mlir

#endif // MHA_CODEGEN_COMMON_TRANSFORMS_H
