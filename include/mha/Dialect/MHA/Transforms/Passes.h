//===- Passes.h - MHA dialect passes ----------------------------*- C++ -*-===//

#ifndef MHA_DIALECT_MHA_TRANSFORMS_PASSES_H
#define MHA_DIALECT_MHA_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir {
namespace mha {

#define GEN_PASS_DECL
#include "mha/Dialect/MHA/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "mha/Dialect/MHA/Transforms/Passes.h.inc"

} // namespace mha
} // namespace mlir

#endif // MHA_DIALECT_MHA_TRANSFORMS_PASSES_H
