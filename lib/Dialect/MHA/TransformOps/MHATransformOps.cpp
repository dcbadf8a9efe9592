//===- MHATransformOps.cpp - transform ops for mha --------------*- C++ -*-===//
//
// Thin wrappers: each op calls the library function its pass calls. Handle
// effects (consume the target, produce the result) come from
// FunctionalStyleTransformOpTrait.
//
//===----------------------------------------------------------------------===//

#include "mha/Dialect/MHA/TransformOps/MHATransformOps.h"

#include "mha/Dialect/MHA/Transforms/Transforms.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Transform/IR/TransformDialect.h"

using namespace mlir;
using namespace mlir::mha;

//===----------------------------------------------------------------------===//
// DecomposeOp
//===----------------------------------------------------------------------===//

DiagnosedSilenceableFailure transform::MHADecomposeOp::applyToOne(
    transform::TransformRewriter &rewriter, MultiHeadAttentionOp target,
    transform::ApplyToEachResultList &results,
    transform::TransformState &state) {
  FailureOr<AttentionOp> attention =
      decomposeMultiHeadAttention(rewriter, target);
  if (failed(attention))
    return emitDefaultDefiniteFailure(target);
  results.push_back(*attention);
  return DiagnosedSilenceableFailure::success();
}

//===----------------------------------------------------------------------===//
// TileAttentionOp
//===----------------------------------------------------------------------===//

DiagnosedSilenceableFailure transform::MHATileAttentionOp::applyToOne(
    transform::TransformRewriter &rewriter, AttentionOp target,
    transform::ApplyToEachResultList &results,
    transform::TransformState &state) {
  rewriter.setInsertionPoint(target);
  FailureOr<TiledAttention> tiled = tileAttention(
      rewriter, target,
      TileOptions{static_cast<int64_t>(getQTileSize()),
                  static_cast<int64_t>(getKvTileSize())});
  if (failed(tiled))
    return emitDefaultDefiniteFailure(target);
  results.push_back(tiled->loops.front());
  return DiagnosedSilenceableFailure::success();
}

//===----------------------------------------------------------------------===//
// FuseLayerOp
//===----------------------------------------------------------------------===//

DiagnosedSilenceableFailure transform::MHAFuseLayerOp::applyToOne(
    transform::TransformRewriter &rewriter, MultiHeadAttentionOp target,
    transform::ApplyToEachResultList &results,
    transform::TransformState &state) {
  FailureOr<Value> fused = fuseMultiHeadAttention(
      rewriter, target,
      TileOptions{static_cast<int64_t>(getQTileSize()),
                  static_cast<int64_t>(getKvTileSize())});
  if (failed(fused))
    return emitDefaultDefiniteFailure(target);
  // The outermost loop of the nest, behind the final conversion or cast.
  Operation *loop = fused->getDefiningOp();
  while (loop && !isa<scf::ForOp>(loop))
    loop = loop->getNumOperands() ? loop->getOperand(0).getDefiningOp()
                                  : nullptr;
  rewriter.replaceOp(target, *fused);
  if (!loop)
    return emitDefaultDefiniteFailure(getOperation());
  results.push_back(loop);
  return DiagnosedSilenceableFailure::success();
}

//===----------------------------------------------------------------------===//
// AttentionToLinalgOp
//===----------------------------------------------------------------------===//

DiagnosedSilenceableFailure transform::MHAAttentionToLinalgOp::applyToOne(
    transform::TransformRewriter &rewriter, AttentionOp target,
    transform::ApplyToEachResultList &results,
    transform::TransformState &state) {
  FailureOr<Value> lowered = lowerAttentionToLinalg(rewriter, target);
  if (failed(lowered))
    return emitDefaultDefiniteFailure(target);
  rewriter.replaceOp(target, *lowered);
  results.push_back(lowered->getDefiningOp());
  return DiagnosedSilenceableFailure::success();
}

//===----------------------------------------------------------------------===//
// Extension
//===----------------------------------------------------------------------===//

#define GET_OP_CLASSES
#include "mha/Dialect/MHA/TransformOps/MHATransformOps.cpp.inc"

namespace {
class MHATransformDialectExtension
    : public transform::TransformDialectExtension<
          MHATransformDialectExtension> {
public:
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(MHATransformDialectExtension)
  using Base::Base;

  void init() {
    declareDependentDialect<MHADialect>();
    // Dialects whose ops the transforms create.
    declareGeneratedDialect<affine::AffineDialect>();
    declareGeneratedDialect<arith::ArithDialect>();
    declareGeneratedDialect<linalg::LinalgDialect>();
    declareGeneratedDialect<math::MathDialect>();
    declareGeneratedDialect<scf::SCFDialect>();
    declareGeneratedDialect<tensor::TensorDialect>();
    registerTransformOps<
#define GET_OP_LIST
#include "mha/Dialect/MHA/TransformOps/MHATransformOps.cpp.inc"
        >();
  }
};
} // namespace

void mha::registerTransformDialectExtension(DialectRegistry &registry) {
  registry.addExtensions<MHATransformDialectExtension>();
}
