//===- AdditiveMask.cpp - boolean attention masks as additive masks -------===//
//
// A boolean mask of mha.attention as the equivalent additive float mask
// (host code), for targets whose kernels cannot load i1 (SPIR-V storage
// buffers) (mha-additive-mask).
//
//===----------------------------------------------------------------------===//

#include "mha/Dialect/MHA/Transforms/Passes.h"
#include "mha/Dialect/MHA/Transforms/Transforms.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>

namespace mlir::mha {
#define GEN_PASS_DEF_MHAADDITIVEMASKPASS
#include "mha/Dialect/MHA/Transforms/Passes.h.inc"
} // namespace mlir::mha

using namespace mlir;

LogicalResult mha::boolMaskToAdditive(RewriterBase &rewriter,
                                      mha::AttentionOp op) {
  Value mask = op.getMask();
  auto maskType = mask ? cast<RankedTensorType>(mask.getType()) : nullptr;
  if (!maskType || !maskType.getElementType().isInteger(1))
    return failure();
  Type element = cast<ShapedType>(op.getQuery().getType()).getElementType();
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  Value empty = tensor::EmptyOp::create(
      rewriter, loc, tensor::getMixedSizes(rewriter, loc, mask), element);
  Value zero = arith::ConstantOp::create(rewriter, loc,
                                         rewriter.getFloatAttr(element, 0.0));
  Value minusInf = arith::ConstantOp::create(
      rewriter, loc, rewriter.getFloatAttr(element, -INFINITY));
  AffineMap identity = rewriter.getMultiDimIdentityMap(maskType.getRank());
  auto additive = linalg::GenericOp::create(
      rewriter, loc, empty.getType(), mask, empty, {identity, identity},
      SmallVector<utils::IteratorType>(maskType.getRank(),
                                       utils::IteratorType::parallel),
      [&](OpBuilder &b, Location l, ValueRange args) {
        linalg::YieldOp::create(
            b, l, arith::SelectOp::create(b, l, args[0], zero, minusInf)
                      .getResult());
      });
  rewriter.modifyOpInPlace(
      op, [&] { op.getMaskMutable().assign(additive.getResult(0)); });
  return success();
}

namespace {

struct MHAAdditiveMaskPass final
    : mha::impl::MHAAdditiveMaskPassBase<MHAAdditiveMaskPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    getOperation()->walk(
        [&](mha::AttentionOp op) { (void)mha::boolMaskToAdditive(rewriter, op); });
  }
};

} // namespace
