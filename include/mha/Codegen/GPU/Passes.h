//===- Passes.h - GPU code generation (the GPU mapping) ---------*- C++ -*-===//

#ifndef MHA_CODEGEN_GPU_PASSES_H
#define MHA_CODEGEN_GPU_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir {
namespace mha {

#define GEN_PASS_DECL
#include "mha/Codegen/GPU/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "mha/Codegen/GPU/Passes.h.inc"

} // namespace mha
} // namespace mlir

#endif // MHA_CODEGEN_GPU_PASSES_H
