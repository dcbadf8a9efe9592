//===- MHAOps.h - MHA dialect ops -------------------------------*- C++ -*-===//
//
// Declares the ops of the `mha` dialect.
//
//===----------------------------------------------------------------------===//

#ifndef MHA_DIALECT_MHA_IR_MHAOPS_H
#define MHA_DIALECT_MHA_IR_MHAOPS_H

#include "mha/Dialect/MHA/IR/MHADialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/TilingInterface.h"

#define GET_OP_CLASSES
#include "mha/Dialect/MHA/IR/MHAOps.h.inc"

#endif // MHA_DIALECT_MHA_IR_MHAOPS_H
