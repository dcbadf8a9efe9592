//===- MHATransformOps.h - transform ops for mha ----------------*- C++ -*-===//

#ifndef MHA_DIALECT_MHA_TRANSFORMOPS_MHATRANSFORMOPS_H
#define MHA_DIALECT_MHA_TRANSFORMOPS_MHATRANSFORMOPS_H

#include "mha/Dialect/MHA/IR/MHAOps.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Transform/IR/TransformDialect.h"
#include "mlir/Dialect/Transform/Interfaces/TransformInterfaces.h"
#include "mlir/IR/OpImplementation.h"

#define GET_OP_CLASSES
#include "mha/Dialect/MHA/TransformOps/MHATransformOps.h.inc"

namespace mlir {
class DialectRegistry;
namespace mha {
/// Registers the `transform.mha.*` ops with the transform dialect.
void registerTransformDialectExtension(DialectRegistry &registry);
} // namespace mha
} // namespace mlir

#endif // MHA_DIALECT_MHA_TRANSFORMOPS_MHATRANSFORMOPS_H
