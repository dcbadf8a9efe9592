//===- StridedCopiesToLoops.cpp - strided memref.copy as linalg.copy ------===//
//
// memref.copy ops that the LLVM lowering would turn into calls of the runner
// library's element-by-element memrefCopy become linalg.copy ops, lowered to
// loops with the other linalg ops (see the pass description).
//
//===----------------------------------------------------------------------===//

#include "mha/Codegen/CPU/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::mha {
#define GEN_PASS_DEF_MHASTRIDEDCOPIESTOLOOPSPASS
#include "mha/Codegen/CPU/Passes.h.inc"
} // namespace mlir::mha

using namespace mlir;

/// Whether finalize-memref-to-llvm copies `type` with llvm.memcpy (the same
/// test as its memref.copy lowering): an identity layout, or a static shape
/// laid out contiguously in row-major order.
static bool copiedAsBytes(Type type) {
  auto memref = dyn_cast<MemRefType>(type);
  return memref && (memref.getLayout().isIdentity() ||
                    (memref.hasStaticShape() && memref.getNumElements() > 0 &&
                     memref::isStaticShapeAndContiguousRowMajor(memref)));
}

namespace {

struct MHAStridedCopiesToLoopsPass final
    : mha::impl::MHAStridedCopiesToLoopsPassBase<MHAStridedCopiesToLoopsPass> {
  void runOnOperation() override {
    SmallVector<memref::CopyOp> copies;
    getOperation()->walk([&](memref::CopyOp copy) {
      if (!copiedAsBytes(copy.getSource().getType()) ||
          !copiedAsBytes(copy.getTarget().getType()))
        copies.push_back(copy);
    });
    IRRewriter rewriter(&getContext());
    for (memref::CopyOp copy : copies) {
      // Unranked memrefs (no loops to make) stay for memrefCopy.
      if (!isa<MemRefType>(copy.getSource().getType()) ||
          !isa<MemRefType>(copy.getTarget().getType()))
        continue;
      rewriter.setInsertionPoint(copy);
      rewriter.replaceOpWithNewOp<linalg::CopyOp>(copy, copy.getSource(),
                                                  copy.getTarget());
    }
  }
};

} // namespace
