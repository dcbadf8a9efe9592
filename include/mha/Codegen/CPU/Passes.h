//===- Passes.h - CPU code generation ---------------------------*- C++ -*-===//

#ifndef MHA_CODEGEN_CPU_PASSES_H
#define MHA_CODEGEN_CPU_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir {
namespace LLVM {
class LLVMDialect;
} // namespace LLVM
namespace arith {
class ArithDialect;
} // namespace arith
namespace bufferization {
class BufferizationDialect;
} // namespace bufferization
namespace linalg {
class LinalgDialect;
} // namespace linalg
namespace mha {
class MHADialect;
} // namespace mha
namespace omp {
class OpenMPDialect;
} // namespace omp
namespace scf {
class SCFDialect;
} // namespace scf
namespace tensor {
class TensorDialect;
} // namespace tensor
namespace vector {
class VectorDialect;
} // namespace vector

class ModuleOp;

namespace mha {

#define GEN_PASS_DECL
#include "mha/Codegen/CPU/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "mha/Codegen/CPU/Passes.h.inc"

} // namespace mha
} // namespace mlir

#endif // MHA_CODEGEN_CPU_PASSES_H
