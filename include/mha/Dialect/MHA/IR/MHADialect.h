//===- MHADialect.h - MHA dialect -------------------------------*- C++ -*-===//
//
// Declares the `mha` dialect class.
//
//===----------------------------------------------------------------------===//

#ifndef MHA_DIALECT_MHA_IR_MHADIALECT_H
#define MHA_DIALECT_MHA_IR_MHADIALECT_H

#include "mlir/Dialect/SCF/IR/DeviceMappingInterface.h"
#include "mlir/IR/Dialect.h"

#include "mha/Dialect/MHA/IR/MHADialect.h.inc"

#define GET_ATTRDEF_CLASSES
#include "mha/Dialect/MHA/IR/MHAAttrs.h.inc"

#endif // MHA_DIALECT_MHA_IR_MHADIALECT_H
