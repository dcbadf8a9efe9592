//===- Passes.h - GPU code generation (the GPU mapping) ---------*- C++ -*-===//

#ifndef MHA_CODEGEN_GPU_PASSES_H
#define MHA_CODEGEN_GPU_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir {
namespace affine {
class AffineDialect;
} // namespace affine
namespace bufferization {
class BufferizationDialect;
} // namespace bufferization
namespace gpu {
class GPUDialect;
} // namespace gpu
namespace memref {
class MemRefDialect;
} // namespace memref
namespace scf {
class SCFDialect;
} // namespace scf
namespace tensor {
class TensorDialect;
} // namespace tensor

class ModuleOp;

namespace mha {

#define GEN_PASS_DECL
#include "mha/Codegen/GPU/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "mha/Codegen/GPU/Passes.h.inc"

} // namespace mha
} // namespace mlir

#endif // MHA_CODEGEN_GPU_PASSES_H
