//===- Transforms.h - Code generation for every target ----------*- C++ -*-===//
//
// The algorithms behind mha/Codegen/Common/Passes.td.
//
//===----------------------------------------------------------------------===//

#ifndef MHA_CODEGEN_COMMON_TRANSFORMS_H
#define MHA_CODEGEN_COMMON_TRANSFORMS_H

#include "mlir/Support/LLVM.h"

namespace mlir {
class Operation;
class RewriterBase;

namespace mha {

/// Replaces every op under `root` that implements linalg's
/// AggregatedOpInterface and is not an mha op (linalg.softmax), and every
/// mha.attention_weights, by its decomposition. Fails, with an error at the op, where one cannot be
/// decomposed.
LogicalResult decomposeAggregateOps(RewriterBase &rewriter, Operation *root);

/// Emits an error at every outermost op under `root` that the translation
/// to LLVM IR cannot take (see mha-check-lowered) and fails if there was one.
LogicalResult checkLoweredToLLVM(Operation *root);

} // namespace mha
} // namespace mlir

#endif // MHA_CODEGEN_COMMON_TRANSFORMS_H
