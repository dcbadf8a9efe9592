//===- LegalizeBoolVectorMemory.cpp - i1 vectors as bytes in memory -------===//
//
// llvm.load/llvm.store (plain or masked) of vector<N x i1> -> the same of vector<N x i8> with a
// trunc/zext: memrefs of i1 hold a byte per element, LLVM packs i1 vectors
// as bits (see the pass description).
//
//===----------------------------------------------------------------------===//

#include "mha/Codegen/CPU/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::mha {
#define GEN_PASS_DEF_MHALEGALIZEBOOLVECTORMEMORYPASS
#include "mha/Codegen/CPU/Passes.h.inc"
} // namespace mlir::mha

using namespace mlir;

/// The byte vector that holds `type` in memory when `type` is a vector of i1
/// accessed through `address` as a memref's elements; null otherwise.
static VectorType bytesFor(Type type, Value address) {
  auto vector = dyn_cast<VectorType>(type);
  if (!vector || !vector.getElementType().isInteger(1))
    return {};
  // A memref of vectors: its elements have LLVM's own layout.
  if (auto gep = address.getDefiningOp<LLVM::GEPOp>())
    if (isa<VectorType>(gep.getElemType()))
      return {};
  return vector.clone(IntegerType::get(type.getContext(), 8));
}

/// The load then reads bytes; a trunc gives its users the lanes back.
static void widenLoad(IRRewriter &rewriter, Operation *load,
                      VectorType bytes) {
  Value result = load->getResult(0);
  rewriter.setInsertionPointAfter(load);
  auto lanes = LLVM::TruncOp::create(rewriter, load->getLoc(),
                                     result.getType(), result);
  rewriter.modifyOpInPlace(load, [&] { result.setType(bytes); });
  rewriter.replaceAllUsesExcept(result, lanes, lanes);
}

/// The lanes flowing into `operand` (a stored value, a pass-through) as bytes.
static void widenOperand(IRRewriter &rewriter, OpOperand &operand,
                         VectorType bytes) {
  Operation *op = operand.getOwner();
  rewriter.setInsertionPoint(op);
  Value wide =
      LLVM::ZExtOp::create(rewriter, op->getLoc(), bytes, operand.get());
  rewriter.modifyOpInPlace(op, [&] { operand.set(wide); });
}

namespace {

struct MHALegalizeBoolVectorMemoryPass final
    : mha::impl::MHALegalizeBoolVectorMemoryPassBase<
          MHALegalizeBoolVectorMemoryPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    SmallVector<Operation *> accesses;
    getOperation()->walk([&](Operation *op) {
      if (isa<LLVM::LoadOp, LLVM::MaskedLoadOp, LLVM::StoreOp,
              LLVM::MaskedStoreOp>(op))
        accesses.push_back(op);
    });
    for (Operation *op : accesses) {
      if (auto load = dyn_cast<LLVM::LoadOp>(op)) {
        if (VectorType bytes = bytesFor(load.getType(), load.getAddr()))
          widenLoad(rewriter, load, bytes);
      } else if (auto load = dyn_cast<LLVM::MaskedLoadOp>(op)) {
        VectorType bytes = bytesFor(load.getType(), load.getData());
        if (!bytes)
          continue;
        if (load.getPassThru())
          widenOperand(rewriter, load.getPassThruMutable()[0], bytes);
        widenLoad(rewriter, load, bytes);
      } else if (auto store = dyn_cast<LLVM::StoreOp>(op)) {
        if (VectorType bytes =
                bytesFor(store.getValue().getType(), store.getAddr()))
          widenOperand(rewriter, store.getValueMutable(), bytes);
      } else if (auto store = dyn_cast<LLVM::MaskedStoreOp>(op)) {
        if (VectorType bytes =
                bytesFor(store.getValue().getType(), store.getData()))
          widenOperand(rewriter, store.getValueMutable(), bytes);
      }
    }
  }
};

} // namespace
