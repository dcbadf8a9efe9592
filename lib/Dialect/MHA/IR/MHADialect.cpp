//===- MHADialect.cpp - MHA dialect -----------------------------*- C++ -*-===//
//
// Registers the ops and attributes of the `mha` dialect.
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
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::mha;

#include "mha/Dialect/MHA/IR/MHADialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "mha/Dialect/MHA/IR/MHAAttrs.cpp.inc"

void MHADialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "mha/Dialect/MHA/IR/MHAOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "mha/Dialect/MHA/IR/MHAAttrs.cpp.inc"
      >();
}

// #mha.peeled as an scf.forall mapping: one id per dim, none of them a
// linear mapping of hardware ids.
int64_t PeeledDimAttr::getMappingId() const { return getDim(); }
bool PeeledDimAttr::isLinearMapping() const { return false; }
int64_t PeeledDimAttr::getRelativeIndex() const { return getDim(); }
