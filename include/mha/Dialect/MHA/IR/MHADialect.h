//===- MHADialect.h - MHA dialect -------------------------------*- C++ -*-===//
//
// Declares the `mha` dialect class.
//
//===----------------------------------------------------------------------===//

#ifndef MHA_DIALECT_MHA_IR_MHADIALECT_H
#define MHA_DIALECT_MHA_IR_MHADIALECT_H

#include "mlir/IR/Dialect.h"

#include "mha/Dialect/MHA/IR/MHADialect.h.inc"

#endif // MHA_DIALECT_MHA_IR_MHADIALECT_H
