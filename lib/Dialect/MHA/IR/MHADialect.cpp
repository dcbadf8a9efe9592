//===- MHADialect.cpp - MHA dialect -----------------------------*- C++ -*-===//
//
// Registers the ops of the `mha` dialect.
//
//===----------------------------------------------------------------------===//

#include "mha/Dialect/MHA/IR/MHADialect.h"
#include "mha/Dialect/MHA/IR/MHAOps.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::mha;

#include "mha/Dialect/MHA/IR/MHADialect.cpp.inc"

void MHADialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "mha/Dialect/MHA/IR/MHAOps.cpp.inc"
      >();
}
