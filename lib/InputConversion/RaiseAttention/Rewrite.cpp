//===- Rewrite.cpp - mha.attention and the layer built from a match ------===//
//
// The rewrite: a plan (Matcher.h) applied, the operands viewed as
// mha.attention takes them ([B, H, S, d]), the mask broadcast to [B|1, H|1,
// Sq|1, Sk|1], the mha.attention built and the chain it replaces erased
// where unused; the same for mha.multi_head_attention over its projections.
// Every check ran while planning, so nothing here fails or has to undo IR.
//
//===----------------------------------------------------------------------===//

#include "Matcher.h"

#include "mha/Dialect/MHA/IR/MHADialect.h"
#include "mha/InputConversion/RaiseAttention.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::mha;
using namespace mlir::mha::raise;

namespace {

/// `v` [batch..., a, b] as [N, a, b] (N = 1 without batch dims).
static Value flattenBatch(OpBuilder &b, Location loc, Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  int64_t numBatch = type.getRank() - 2;
  if (numBatch == 1)
    return v;
  if (numBatch == 0) {
    auto t = RankedTensorType::get(
        {1, type.getDimSize(0), type.getDimSize(1)}, type.getElementType());
    SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1)};
    llvm::append_range(sizes, tensor::getMixedSizes(b, loc, v));
    return tensor::ExpandShapeOp::create(b, loc, t, v, {{0, 1}, {2}}, sizes);
  }
  ReassociationIndices first =
      llvm::to_vector(llvm::seq<int64_t>(0, numBatch));
  return tensor::CollapseShapeOp::create(
      b, loc, v,
      ArrayRef<ReassociationIndices>{first, {numBatch}, {numBatch + 1}});
}

/// `v` [batch..., a, b] with its batch dims reshaped to `batch` (sizes whose
/// product is that of v's batch dims).
static Value reshapeBatch(OpBuilder &b, Location loc, Value v,
                          ArrayRef<OpFoldResult> batch) {
  v = flattenBatch(b, loc, v);
  if (batch.size() == 1)
    return v;
  if (batch.empty())
    return tensor::CollapseShapeOp::create(
        b, loc, v, ArrayRef<ReassociationIndices>{{0, 1}, {2}});
  auto flat = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> shape;
  SmallVector<OpFoldResult> sizes(batch);
  for (OpFoldResult size : batch)
    shape.push_back(getConstantIntValue(size).value_or(ShapedType::kDynamic));
  shape.append({flat.getDimSize(1), flat.getDimSize(2)});
  sizes.push_back(tensor::getMixedSize(b, loc, v, 1));
  sizes.push_back(tensor::getMixedSize(b, loc, v, 2));
  int64_t n = batch.size();
  ReassociationIndices first = llvm::to_vector(llvm::seq<int64_t>(0, n));
  return tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get(shape, flat.getElementType()), v,
      {first, {n}, {n + 1}}, sizes);
}

/// The boolean `predicate` of the mask tensor (or its negation) as a new
/// i1 tensor of the mask's shape.
static Value materializePredicate(OpBuilder &b, Location loc, Value mask,
                                  const TermRef &predicate, bool negate) {
  auto type = cast<RankedTensorType>(mask.getType());
  SmallVector<AffineMap> maps(
      2, AffineMap::getMultiDimIdentityMap(type.getRank(), b.getContext()));
  Value empty = tensor::EmptyOp::create(b, loc,
                                        tensor::getMixedSizes(b, loc, mask),
                                        b.getI1Type());
  auto generic = linalg::GenericOp::create(
      b, loc, type.clone(b.getI1Type()), ValueRange{mask}, ValueRange{empty},
      maps,
      SmallVector<utils::IteratorType>(type.getRank(),
                                       utils::IteratorType::parallel),
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        std::function<Value(const TermRef &)> emit =
            [&](const TermRef &t) -> Value {
          if (t->kind == Term::Kind::Leaf)
            return args[0];
          if (t->kind == Term::Kind::Constant)
            return arith::ConstantOp::create(nb, nloc, t->value);
          SmallVector<Value> operands;
          for (const TermRef &o : t->operands)
            operands.push_back(emit(o));
          Operation *clone = nb.clone(*t->op);
          clone->setOperands(operands);
          return clone->getResult(0);
        };
        Value v = predicate ? emit(predicate) : args[0];
        if (negate)
          v = arith::XOrIOp::create(
              nb, nloc, v,
              arith::ConstantOp::create(nb, nloc, nb.getBoolAttr(true)));
        linalg::YieldOp::create(nb, nloc, v);
      });
  return generic.getResult(0);
}

/// The mask as mha.attention takes it, [B|1, H|1, Sq|1, Sk|1], as `plan`
/// says (`viewBatch` the view's batch sizes).
static Value buildMask(OpBuilder &b, Location loc, const MaskPlan &plan,
                       ArrayRef<OpFoldResult> viewBatch) {
  Value mask = plan.tensor;
  auto type = cast<RankedTensorType>(mask.getType());
  if (plan.predicate || plan.negate)
    mask = materializePredicate(b, loc, mask, plan.predicate, plan.negate);

  // To the rank of the space: unit dims read at 0 dropped, a unit dim for
  // each space dim the mask lacks.
  if (plan.collapse)
    mask = tensor::CollapseShapeOp::create(b, loc, mask, *plan.collapse);
  if (!plan.expand.empty()) {
    SmallVector<OpFoldResult> sizes;
    for (int64_t g : plan.expandSizeOf)
      sizes.push_back(g < 0 ? OpFoldResult(b.getIndexAttr(1))
                            : tensor::getMixedSize(b, loc, mask, g));
    mask = tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get(plan.expandShape, type.getElementType()),
        mask, plan.expand, sizes);
  }

  switch (plan.batch) {
  case MaskPlan::Batch::AsIs:
    return mask;
  case MaskPlan::Batch::AllUnit: {
    SmallVector<OpFoldResult> ones(viewBatch.size(), b.getIndexAttr(1));
    return reshapeBatch(b, loc, mask, ones);
  }
  case MaskPlan::Batch::AllFull:
    return reshapeBatch(b, loc, mask, viewBatch);
  }
  llvm_unreachable("unknown batch plan");
}

/// `last` and the ops of its block it is computed from: what a raise may
/// leave unused.
static SetVector<Operation *> chainEndingAt(Operation *last) {
  SetVector<Operation *> slice;
  BackwardSliceOptions options;
  options.omitBlockArguments = true;
  options.omitUsesFromAbove = false;
  options.filter = [&](Operation *o) {
    return o->getBlock() == last->getBlock();
  };
  (void)getBackwardSlice(last, &slice, options);
  slice.insert(last);
  return slice;
}

/// Erases the ops of `slice` (the ops the raised op was computed from) that
/// nothing uses any more. The slice is in topological order (a backward
/// slice), so walking it backwards meets every user before its producers.
static void eraseDeadSlice(RewriterBase &rewriter,
                           const SetVector<Operation *> &slice) {
  for (Operation *op : llvm::reverse(slice))
    if (isOpTriviallyDead(op))
      rewriter.eraseOp(op);
}

/// Builds the mha.attention of `plan` in place of `op` and erases what
/// becomes unused. The ops come in the order the raise has always built
/// them (the raise tests capture SSA names in that order).
static AttentionOp applyAttentionPlan(RewriterBase &rewriter, Operation *op,
                                      const AttentionPlan &plan) {
  const AttentionMatch *m = &plan.match;
  Location loc = op->getLoc();
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  auto dimOf = [](Value x, int64_t d) {
    return cast<RankedTensorType>(x.getType()).getDimSize(d);
  };

  Value q4 = plan.q4, k4 = plan.k4, v4 = plan.v4;
  if (plan.view == AttentionPlan::View::Flatten) {
    auto to4 = [&](Value x) {
      Value flat = flattenBatch(rewriter, loc, x);
      return reshapeBatch(rewriter, loc, flat,
                          {tensor::getMixedSize(rewriter, loc, flat, 0),
                           rewriter.getIndexAttr(1)});
    };
    q4 = to4(m->query), k4 = to4(m->key), v4 = to4(m->value);
  }

  Value mask;
  if (plan.mask) {
    SmallVector<OpFoldResult> viewBatch = {
        tensor::getMixedSize(rewriter, loc, q4, 0),
        tensor::getMixedSize(rewriter, loc, q4, 1)};
    mask = buildMask(rewriter, loc, *plan.mask, viewBatch);
  }

  Value causalOffset;
  if (plan.causalOffset) {
    causalOffset = arith::ConstantIndexOp::create(rewriter, loc,
                                                  plan.causalOffset->constant);
    for (auto [value, coef] : plan.causalOffset->values) {
      Value c = arith::ConstantIndexOp::create(rewriter, loc, coef);
      causalOffset = arith::AddIOp::create(
          rewriter, loc, causalOffset,
          arith::MulIOp::create(rewriter, loc, value, c));
    }
  }

  SmallVector<OpFoldResult> outSizes = {
      tensor::getMixedSize(rewriter, loc, q4, 0),
      tensor::getMixedSize(rewriter, loc, q4, 1),
      tensor::getMixedSize(rewriter, loc, q4, 2),
      rewriter.getIndexAttr(dimOf(v4, 3))};
  Value init = tensor::EmptyOp::create(rewriter, loc, outSizes,
                                       getElementTypeOrSelf(q4.getType()));
  auto attention = AttentionOp::create(
      rewriter, loc, init.getType(), q4, k4, v4, mask,
      /*key_lengths=*/Value(), /*key_offset=*/Value(), causalOffset, init,
      rewriter.getF32FloatAttr(static_cast<float>(m->scale)),
      m->causal.has_value(), m->keyTransposed, /*softcap=*/nullptr,
      /*window_left=*/nullptr, /*window_right=*/nullptr);

  // Back to the shape of the op's result, or in place of its one user when
  // that reshapes it to the attention's shape.
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  Value result = attention.getResult();
  if (plan.userReshape) {
    SetVector<Operation *> slice = chainEndingAt(op);
    rewriter.replaceOp(plan.userReshape, result);
    eraseDeadSlice(rewriter, slice);
    return attention;
  }
  if (plan.view != AttentionPlan::View::Direct) {
    // The batch sizes: static, or those of the op's init.
    SmallVector<OpFoldResult> batch;
    for (int64_t d = 0; d + 2 < resultType.getRank(); ++d) {
      if (!resultType.isDynamicDim(d))
        batch.push_back(rewriter.getIndexAttr(resultType.getDimSize(d)));
      else
        batch.push_back(
            tensor::getMixedSize(rewriter, loc, plan.resultBatchInit, d));
    }
    result = reshapeBatch(rewriter, loc, result, batch);
  }
  if (result.getType() != resultType)
    result = tensor::CastOp::create(rewriter, loc, resultType, result);

  SetVector<Operation *> slice = chainEndingAt(op);
  slice.remove(op);
  rewriter.replaceOp(op, result);
  eraseDeadSlice(rewriter, slice);
  return attention;
}

//===----------------------------------------------------------------------===//
// The layer around it
//===----------------------------------------------------------------------===//

/// Builds the mha.multi_head_attention of `plan` in place of the layer
/// around `att`.
static MultiHeadAttentionOp
applyLayerPlan(RewriterBase &rewriter, AttentionOp att, const LayerPlan &plan) {
  const Projection *q = &plan.q, *k = &plan.k, *v = &plan.v, *o = &plan.o;
  Value out = plan.out;
  Type elt = getElementTypeOrSelf(att.getType());
  Location loc = att.getLoc();
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointAfter(out.getDefiningOp());
  auto inOut = [&](const Projection &p) -> Value {
    if (!p.weightOutIn)
      return p.weight;
    auto type = cast<RankedTensorType>(p.weight.getType());
    Value empty = tensor::EmptyOp::create(
        rewriter, loc, {type.getDimSize(1), type.getDimSize(0)},
        type.getElementType());
    return linalg::TransposeOp::create(rewriter, loc, p.weight, empty,
                                       ArrayRef<int64_t>{1, 0})
        ->getResult(0);
  };
  // The operands must dominate the new op (placed at the end of the chain).
  bool anyBias = q->bias || k->bias || v->bias || o->bias;
  auto biasOrZero = [&](const Projection &p) -> Value {
    if (p.bias || !anyBias)
      return p.bias;
    auto type = cast<RankedTensorType>(p.weight.getType());
    int64_t n = type.getDimSize(p.weightOutIn ? 0 : 1);
    auto zeroType = RankedTensorType::get({n}, elt);
    return arith::ConstantOp::create(
        rewriter, loc, zeroType,
        DenseElementsAttr::get(zeroType, rewriter.getZeroAttr(elt)));
  };
  int64_t numHeads = cast<RankedTensorType>(att.getQuery().getType()).getDimSize(1);
  int64_t numKvHeads = cast<RankedTensorType>(att.getKey().getType()).getDimSize(1);
  auto resultType = cast<RankedTensorType>(out.getType());
  Value query = q->input;
  auto queryType = cast<RankedTensorType>(query.getType());
  Value wo = inOut(*o);
  auto layerType = RankedTensorType::get(
      {queryType.getDimSize(0), queryType.getDimSize(1),
       cast<RankedTensorType>(wo.getType()).getDimSize(1)},
      elt);
  auto layer = MultiHeadAttentionOp::create(
      rewriter, loc, TypeRange{layerType}, query, k->input, v->input, inOut(*q),
      inOut(*k), inOut(*v), wo, biasOrZero(*q), biasOrZero(*k),
      biasOrZero(*v), biasOrZero(*o), att.getMask(), att.getKeyLengths(),
      /*k_cache=*/Value(), /*v_cache=*/Value(), /*cache_lengths=*/Value(),
      /*rotary_cos=*/Value(), /*rotary_sin=*/Value(),
      rewriter.getI64IntegerAttr(numHeads),
      numKvHeads == numHeads ? IntegerAttr()
                             : rewriter.getI64IntegerAttr(numKvHeads),
      att.getScaleAttr(), att.getCausalAttr(), /*return_weights=*/nullptr,
      att.getSoftcapAttr(), att.getWindowLeftAttr(),
      att.getWindowRightAttr(), /*rotary_interleaved=*/UnitAttr());
  Value result = layer.getResult();
  if (resultType.getRank() == 2) {
    // The 2-d result is usually expanded back to [B, S, E]: that is ours.
    auto expand = dyn_cast_or_null<tensor::ExpandShapeOp>(singleUser(out));
    if (expand && expand.getType() == layerType) {
      rewriter.replaceOp(expand, result);
      rewriter.setInsertionPointAfter(layer);
    }
    if (!out.use_empty())
      result = tensor::CollapseShapeOp::create(
          rewriter, loc, result, ArrayRef<ReassociationIndices>{{0, 1}, {2}});
  }
  if (!out.use_empty() && result.getType() != resultType)
    result = tensor::CastOp::create(rewriter, loc, resultType, result);

  SetVector<Operation *> slice = chainEndingAt(out.getDefiningOp());
  if (!out.use_empty())
    rewriter.replaceAllUsesWith(out, result);
  eraseDeadSlice(rewriter, slice);
  return layer;
}

} // namespace

/// What `apply` builds of the plan `plan` makes for `op`; when planning
/// fails, nothing is built and `reason` (if asked for) says why.
template <typename OpT, typename Plan, typename Result>
static FailureOr<Result>
planAndApply(RewriterBase &rewriter, OpT op, std::string *reason,
             FailureOr<Plan> (*plan)(OpT, Why &),
             Result (*apply)(RewriterBase &, OpT, const Plan &)) {
  Why why;
  FailureOr<Plan> planned = plan(op, why);
  if (failed(planned)) {
    if (reason)
      *reason = why.text;
    return failure();
  }
  return apply(rewriter, op, *planned);
}

FailureOr<mha::AttentionOp> mha::raiseAttention(RewriterBase &rewriter,
                                                Operation *op,
                                                std::string *reason) {
  return planAndApply(rewriter, op, reason, planAttention, applyAttentionPlan);
}

FailureOr<mha::MultiHeadAttentionOp>
mha::raiseMultiHeadAttention(RewriterBase &rewriter, AttentionOp att,
                             std::string *reason) {
  return planAndApply(rewriter, att, reason, planLayer, applyLayerPlan);
}
