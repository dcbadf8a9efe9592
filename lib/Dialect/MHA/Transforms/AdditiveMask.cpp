//===- AdditiveMask.cpp - boolean attention masks as additive masks -------===//
//
// A boolean mask of mha.attention or mha.attention_weights as the
// equivalent additive float mask
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
                                      Operation *op) {
  OpOperand *maskOperand = nullptr;
  Value query;
  if (auto attention = dyn_cast<mha::AttentionOp>(op)) {
    maskOperand = attention.getMask() ? &attention.getMaskMutable()[0]
                                      : nullptr;
    query = attention.getQuery();
  } else if (auto weights = dyn_cast<mha::AttentionWeightsOp>(op)) {
    maskOperand = weights.getMask() ? &weights.getMaskMutable()[0] : nullptr;
    query = weights.getQuery();
  }
  if (!maskOperand)
    return failure();
  Value mask = maskOperand->get();
  auto maskType = cast<RankedTensorType>(mask.getType());
  if (!maskType.getElementType().isInteger(1))
    return failure();
  Type element = cast<ShapedType>(query.getType()).getElementType();
  Location loc = op->getLoc();
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
  rewriter.modifyOpInPlace(op,
                           [&] { maskOperand->set(additive.getResult(0)); });
  return success();
}

namespace {

struct MHAAdditiveMaskPass final
    : mha::impl::MHAAdditiveMaskPassBase<MHAAdditiveMaskPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    getOperation()->walk([&](Operation *op) {
      if (isa<mha::AttentionOp, mha::AttentionWeightsOp>(op))
        (void)mha::boolMaskToAdditive(rewriter, op);
    });
  }
};

} // namespace
