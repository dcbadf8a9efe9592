//===- Passes.h - Code generation for every target --------------*- C++ -*-===//

#ifndef MHA_CODEGEN_COMMON_PASSES_H
#define MHA_CODEGEN_COMMON_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir {
namespace mha {

#define GEN_PASS_DECL
#include "mha/Codegen/Common/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "mha/Codegen/Common/Passes.h.inc"

} // namespace mha
} // namespace mlir

#endif // MHA_CODEGEN_COMMON_PASSES_H
