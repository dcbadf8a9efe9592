//===- MHATransformOps.cpp - transform ops for mha --------------*- C++ -*-===//
//
// Thin wrappers: each op calls the library function its pass calls. Handle
// effects (consume the target, produce the result) come from
// FunctionalStyleTransformOpTrait.
//
//===----------------------------------------------------------------------===//

#include "mha/Dialect/MHA/TransformOps/MHATransformOps.h"

#include "mha/Dialect/MHA/Transforms/Transforms.h"
#include "mha/InputConversion/RaiseAttention.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Transform/IR/TransformDialect.h"

using namespace mlir;
using namespace mlir::mha;

/// The target had a static length of 0, so it was lowered without loops and
/// there is no loop to return a handle to.
static DiagnosedSilenceableFailure emitEmptyScoresFailure(Operation *transform,
                                                          Value result) {
  DiagnosedSilenceableFailure diag =
      emitSilenceableFailure(transform)
      << "the target has a static batch, query or key length of 0: it was "
         "lowered without loops";
  diag.attachNote(result.getLoc()) << "target";
  return diag;
}

//===----------------------------------------------------------------------===//
// RaiseAttentionOp
//===----------------------------------------------------------------------===//

/// The raised op as the transform's result, or a silenceable failure with
/// the reason the raise gave (written by the call that made `raised`: held
/// by reference, whatever the order the arguments were evaluated in) and a
/// note at the target.
template <typename OpTy>
static DiagnosedSilenceableFailure
yieldRaised(Operation *transformOp, Operation *target, StringRef to,
            FailureOr<OpTy> raised, const std::string &reason,
            transform::ApplyToEachResultList &results) {
  if (failed(raised)) {
    DiagnosedSilenceableFailure diag =
        emitSilenceableFailure(transformOp)
        << "could not raise to " << to << ": " << reason;
    diag.attachNote(target->getLoc()) << "target";
    return diag;
  }
  results.push_back(*raised);
  return DiagnosedSilenceableFailure::success();
}

DiagnosedSilenceableFailure transform::MHARaiseAttentionOp::applyToOne(
    transform::TransformRewriter &rewriter, Operation *target,
    transform::ApplyToEachResultList &results,
    transform::TransformState &state) {
  std::string reason;
  return yieldRaised(getOperation(), target, "mha.attention",
                     raiseAttention(rewriter, target, &reason), reason,
                     results);
}

DiagnosedSilenceableFailure transform::MHARaiseLayerOp::applyToOne(
    transform::TransformRewriter &rewriter, AttentionOp target,
    transform::ApplyToEachResultList &results,
    transform::TransformState &state) {
  std::string reason;
  return yieldRaised(getOperation(), target, "mha.multi_head_attention",
                     raiseMultiHeadAttention(rewriter, target, &reason),
                     reason, results);
}

//===----------------------------------------------------------------------===//
// DecomposeOp
//===----------------------------------------------------------------------===//

DiagnosedSilenceableFailure transform::MHADecomposeOp::applyToOne(
    transform::TransformRewriter &rewriter, MultiHeadAttentionOp target,
    transform::ApplyToEachResultList &results,
    transform::TransformState &state) {
  FailureOr<DecomposedLayer> layer =
      decomposeMultiHeadAttention(rewriter, target);
  if (failed(layer))
    return emitDefaultDefiniteFailure(target);
  results.push_back(layer->attention);
  return DiagnosedSilenceableFailure::success();
}

//===----------------------------------------------------------------------===//
// TileAttentionOp
//===----------------------------------------------------------------------===//

DiagnosedSilenceableFailure transform::MHATileAttentionOp::applyToOne(
    transform::TransformRewriter &rewriter, AttentionOp target,
    transform::ApplyToEachResultList &results,
    transform::TransformState &state) {
  TileOptions options{static_cast<int64_t>(getQTileSize()),
                      static_cast<int64_t>(getKvTileSize())};
  options.kvSplits = static_cast<int64_t>(getKvSplits());
  options.headTile = static_cast<int64_t>(getHeadTile());
  options.prefetchBlocks = static_cast<int64_t>(getPrefetchBlocks());
  FailureOr<TiledAttention> tiled = tileAttention(rewriter, target, options);
  if (failed(tiled))
    return emitDefaultDefiniteFailure(target);
  if (!tiled->parallelLoop)
    return emitEmptyScoresFailure(getOperation(), tiled->result);
  results.push_back(tiled->parallelLoop);
  results.push_back(tiled->keyLoop);
  return DiagnosedSilenceableFailure::success();
}

//===----------------------------------------------------------------------===//
// FuseLayerOp
//===----------------------------------------------------------------------===//

DiagnosedSilenceableFailure transform::MHAFuseLayerOp::applyToOne(
    transform::TransformRewriter &rewriter, MultiHeadAttentionOp target,
    transform::ApplyToEachResultList &results,
    transform::TransformState &state) {
  FailureOr<FusedLayer> fused = fuseMultiHeadAttention(
      rewriter, target,
      TileOptions{static_cast<int64_t>(getQTileSize()),
                  static_cast<int64_t>(getKvTileSize())});
  if (failed(fused))
    return emitDefaultDefiniteFailure(target);
  if (!fused->parallelLoop)
    return emitEmptyScoresFailure(getOperation(), fused->result);
  results.push_back(fused->parallelLoop);
  results.push_back(fused->headLoop);
  results.push_back(fused->keyLoop);
  for (LoopLikeOpInterface loop : fused->projectionLoops)
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
  results.push_back(lowered->getDefiningOp());
  return DiagnosedSilenceableFailure::success();
}

//===----------------------------------------------------------------------===//
// DecomposeOnlineAttentionOp
//===----------------------------------------------------------------------===//

DiagnosedSilenceableFailure transform::MHADecomposeOnlineAttentionOp::applyToOne(
    transform::TransformRewriter &rewriter, OnlineAttentionOp target,
    transform::ApplyToEachResultList &results,
    transform::TransformState &state) {
  FailureOr<SmallVector<Value>> decomposed =
      decomposeOnlineAttention(rewriter, target);
  if (failed(decomposed))
    return emitDefaultDefiniteFailure(target);
  results.push_back(decomposed->front().getDefiningOp());
  return DiagnosedSilenceableFailure::success();
}

//===----------------------------------------------------------------------===//
// FuseConsumerOp
//===----------------------------------------------------------------------===//

LogicalResult transform::MHAFuseConsumerOp::verify() {
  if (getLoops().empty())
    return emitOpError() << "expects at least one loop handle";
  if (getLoops().size() != getUpdatedLoops().size())
    return emitOpError() << "expects one result per loop handle: "
                         << getLoops().size() << " loops, "
                         << getUpdatedLoops().size() << " loop results";
  return success();
}

void transform::MHAFuseConsumerOp::getEffects(
    SmallVectorImpl<MemoryEffects::EffectInstance> &effects) {
  consumesHandle(getConsumerMutable(), effects);
  consumesHandle(getLoopsMutable(), effects);
  producesHandle(getOperation()->getOpResults(), effects);
  modifiesPayload(effects);
}

DiagnosedSilenceableFailure
transform::MHAFuseConsumerOp::apply(transform::TransformRewriter &rewriter,
                                    transform::TransformResults &results,
                                    transform::TransformState &state) {
  auto single = [&](Value handle) -> Operation * {
    auto ops = state.getPayloadOps(handle);
    return llvm::hasSingleElement(ops) ? *ops.begin() : nullptr;
  };
  Operation *consumer = single(getConsumer());
  if (!consumer)
    return emitDefiniteFailure() << "expects one consumer payload op";
  SmallVector<LoopLikeOpInterface> loops;
  for (Value handle : getLoops()) {
    auto loop = dyn_cast_or_null<LoopLikeOpInterface>(single(handle));
    if (!loop)
      return emitDefiniteFailure() << "expects one loop payload op per handle";
    loops.push_back(loop);
  }
  FailureOr<scf::SCFFuseConsumerOfSliceResult> fused =
      scf::tileAndFuseConsumer(rewriter, consumer, loops);
  // Upstream succeeds without doing anything when no operand of the
  // consumer comes from the loops.
  if (failed(fused) || fused->tiledOps.empty()) {
    DiagnosedSilenceableFailure diag =
        emitSilenceableError() << "could not fuse the consumer into the loops";
    diag.attachNote(consumer->getLoc()) << "consumer";
    return diag;
  }
  results.set(cast<OpResult>(getFusedConsumer()), fused->tiledOps);
  for (auto [result, loop] : llvm::zip_equal(getUpdatedLoops(), loops))
    results.set(cast<OpResult>(result), {loop.getOperation()});
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
