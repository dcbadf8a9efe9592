//===- Passes.h - MHA dialect passes ----------------------------*- C++ -*-===//

#ifndef MHA_DIALECT_MHA_TRANSFORMS_PASSES_H
#define MHA_DIALECT_MHA_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir {
namespace affine {
class AffineDialect;
} // namespace affine
namespace cf {
class ControlFlowDialect;
} // namespace cf
namespace scf {
class SCFDialect;
} // namespace scf
namespace arith {
class ArithDialect;
} // namespace arith
namespace math {
class MathDialect;
} // namespace math
namespace linalg {
class LinalgDialect;
} // namespace linalg
namespace tensor {
class TensorDialect;
} // namespace tensor
namespace omp {
class OpenMPDialect;
} // namespace omp
namespace vector {
class VectorDialect;
} // namespace vector
namespace LLVM {
class LLVMDialect;
} // namespace LLVM
namespace spirv {
class SPIRVDialect;
} // namespace spirv
namespace gpu {
class GPUDialect;
} // namespace gpu
namespace bufferization {
class BufferizationDialect;
} // namespace bufferization

class ModuleOp;

namespace mha {

#define GEN_PASS_DECL
#include "mha/Dialect/MHA/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "mha/Dialect/MHA/Transforms/Passes.h.inc"

} // namespace mha
} // namespace mlir

#endif // MHA_DIALECT_MHA_TRANSFORMS_PASSES_H
