//===- RuntimeChecks.cpp - dynamic sizes checked at run time ----*- C++ -*-===//
//
// --mha-insert-runtime-checks: the run-time checks of the mha ops
// (RuntimeVerifiableOpInterface, see lib/Dialect/MHA/IR/RuntimeVerification.cpp)
// inserted before each mha op, and only those: upstream's
// --generate-runtime-verification would also check every tensor and memref
// op. Messages name the op and its source location, so a mismatch in a
// user's input stops the program with a line that points at the layer.
//
//===----------------------------------------------------------------------===//

#include "mha/Dialect/MHA/IR/MHAOps.h"
#include "mha/Dialect/MHA/Transforms/Passes.h"
#include "mha/Dialect/MHA/Transforms/Transforms.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/RuntimeVerifiableOpInterface.h"

namespace mlir::mha {
#define GEN_PASS_DEF_MHAINSERTRUNTIMECHECKSPASS
#include "mha/Dialect/MHA/Transforms/Passes.h.inc"
} // namespace mlir::mha

using namespace mlir;
using namespace mlir::mha;

namespace {

/// `file:line:col` of `loc` where it has one, for messages printed at run
/// time.
std::string describe(Location loc) {
  if (auto fileLoc = dyn_cast<FileLineColLoc>(loc))
    return (fileLoc.getFilename().getValue() + ":" +
            Twine(fileLoc.getLine()) + ":" + Twine(fileLoc.getColumn()))
        .str();
  std::string text;
  llvm::raw_string_ostream os(text);
  os << loc;
  return text;
}

struct MHAInsertRuntimeChecksPass final
    : mha::impl::MHAInsertRuntimeChecksPassBase<MHAInsertRuntimeChecksPass> {
  void runOnOperation() override {
    OpBuilder b(&getContext());
    getOperation()->walk([&](Operation *op) {
      if (isa_and_present<MHADialect>(op->getDialect()))
        insertRuntimeShapeChecks(b, op);
    });
  }
};

} // namespace

void mha::insertRuntimeShapeChecks(OpBuilder &b, Operation *op) {
  auto verifiable = dyn_cast<RuntimeVerifiableOpInterface>(op);
  if (!verifiable)
    return;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(op);
  verifiable.generateRuntimeVerification(
      b, op->getLoc(), [](Operation *op, StringRef text) {
        return (op->getName().getStringRef() + " at " +
                describe(op->getLoc()) + ": " + text)
            .str();
      });
}
