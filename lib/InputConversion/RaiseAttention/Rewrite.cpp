//===- Rewrite.cpp - mha.attention and the layer built from a match ------===//
//
// The rewrite: the operands of a match viewed as mha.attention takes them
// ([B, H, S, d]), the mask broadcast to [B|1, H|1, Sq|1, Sk|1], the
// mha.attention built and the chain it replaces erased where unused; the
// same for mha.multi_head_attention over its projections.
//
//===----------------------------------------------------------------------===//

#include "Matcher.h"

#include "mha/Dialect/MHA/IR/MHADialect.h"
#include "mha/InputConversion/RaiseAttention.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
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

/// The 4-d source of `v` [N, S, d] if it is a collapse of [B, H, S, d].
static Value collapsedFrom4D(Value v) {
  if (auto reshape = v.getDefiningOp<tosa::ReshapeOp>()) {
    auto in = cast<RankedTensorType>(reshape.getInput1().getType());
    auto out = cast<RankedTensorType>(reshape.getType());
    if (isBatchReshape(reshape) && in.getRank() == 4 && out.getRank() == 3)
      return reshape.getInput1();
    return {};
  }
  auto collapse = v.getDefiningOp<tensor::CollapseShapeOp>();
  if (!collapse || collapse.getSrcType().getRank() != 4 ||
      collapse.getReassociationIndices() !=
          SmallVector<ReassociationIndices>{{0, 1}, {2}, {3}})
    return {};
  return collapse.getSrc();
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

/// The mask as mha.attention takes it, [B|1, H|1, Sq|1, Sk|1], from the
/// tensor read at `use.map` in the scores' space: as it is when that space
/// is the view (`viewBatch` sizes, `viewShape` the queries' static shape),
/// else with its batch dims flattened and split as the view's. Null, with
/// `why`, where the broadcast cannot be expressed.
static Value buildMask(OpBuilder &b, Location loc, const MaskUse &use,
                       ArrayRef<OpFoldResult> viewBatch,
                       ArrayRef<int64_t> viewShape, Why &why) {
  Value mask = use.tensor;
  AffineMap map = use.map;
  auto type = cast<RankedTensorType>(mask.getType());
  int64_t rank = map.getNumDims();
  // For each mask dim, the space dim it is read along (-1: a unit dim read
  // at 0); the space dims must come in order.
  SmallVector<int64_t> spaceDim;
  int64_t last = -1;
  for (auto [i, e] : llvm::enumerate(map.getResults())) {
    if (auto c = dyn_cast<AffineConstantExpr>(e)) {
      if (c.getValue() != 0 || type.getDimSize(i) != 1) {
        why.note("the mask is read at a fixed position");
        return {};
      }
      spaceDim.push_back(-1);
      continue;
    }
    auto d = dyn_cast<AffineDimExpr>(e);
    if (!d || d.getPosition() <= last) {
      why.note("the mask is not broadcastable to the scores: its dims are not "
          "the scores' in order");
      return {};
    }
    last = d.getPosition();
    spaceDim.push_back(last);
  }
  if (last < 0) {
    why.note("the mask has no dim of the scores");
    return {};
  }
  if (use.predicate || use.negate)
    mask = materializePredicate(b, loc, mask, use.predicate, use.negate);

  // To the rank of the space: unit dims read at 0 dropped, a unit dim for
  // each space dim the mask lacks.
  bool aligned = type.getRank() == rank;
  for (int64_t i = 0; aligned && i < rank; ++i)
    aligned = spaceDim[i] == i || spaceDim[i] == -1;
  if (!aligned) {
    // Each kept dim with the unit dims after it (the first also those
    // before it).
    SmallVector<ReassociationIndices> collapse;
    SmallVector<int64_t> kept;
    bool groupHasKept = false;
    for (int64_t i = 0; i < type.getRank(); ++i) {
      bool isKept = spaceDim[i] >= 0;
      if (collapse.empty() || (isKept && groupHasKept)) {
        collapse.push_back({i});
        groupHasKept = isKept;
      } else {
        collapse.back().push_back(i);
        groupHasKept |= isKept;
      }
      if (isKept)
        kept.push_back(spaceDim[i]);
    }
    if (collapse.size() != kept.size()) {
      why.note("the mask's unit dims cannot be dropped");
      return {};
    }
    if (static_cast<int64_t>(collapse.size()) != type.getRank())
      mask = tensor::CollapseShapeOp::create(b, loc, mask, collapse);
    // Expand: kept dim g owns the space dims after the previous one up to
    // its own (the last one also those after it).
    SmallVector<ReassociationIndices> expand(kept.size());
    SmallVector<int64_t> shape;
    SmallVector<OpFoldResult> sizes;
    for (int64_t d = 0, g = 0; d < rank; ++d) {
      while (g + 1 < static_cast<int64_t>(kept.size()) && d > kept[g])
        ++g;
      expand[g].push_back(d);
      if (d == kept[g]) {
        shape.push_back(cast<ShapedType>(mask.getType()).getDimSize(g));
        sizes.push_back(tensor::getMixedSize(b, loc, mask, g));
      } else {
        shape.push_back(1);
        sizes.push_back(b.getIndexAttr(1));
      }
    }
    mask = tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get(shape, type.getElementType()), mask,
        expand, sizes);
  }
  type = cast<RankedTensorType>(mask.getType());

  // The space is the view when both have batch dims [B, H] with the same
  // static H (B then agrees too).
  ArrayRef<int64_t> spaceBatch = ArrayRef(use.spaceShape).drop_back(2);
  if (rank == 4 && spaceBatch[1] == viewShape[1] &&
      !ShapedType::isDynamic(spaceBatch[1]))
    return mask;
  // The batch dims: all broadcast, or all present (flattened and split as
  // the view).
  bool allUnit = true, allFull = true;
  for (int64_t d = 0; d + 2 < rank; ++d) {
    allUnit &= type.getDimSize(d) == 1;
    allFull &= type.getDimSize(d) != 1 || spaceBatch[d] == 1;
  }
  if (allUnit) {
    SmallVector<OpFoldResult> ones(viewBatch.size(), b.getIndexAttr(1));
    return reshapeBatch(b, loc, mask, ones);
  }
  if (allFull)
    return reshapeBatch(b, loc, mask, viewBatch);
  why.note("the mask is broadcast over some of the batch dims of scores whose "
      "batch dims are reshaped");
  return {};
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

/// Records the ops `rewriter` creates while it is alive (forwarding every
/// notification to the rewriter's own listener), so that a rewrite whose
/// later checks fail can erase what it built: a failed raise leaves the IR
/// as it was.
class CreatedOps : public RewriterBase::ForwardingListener {
public:
  explicit CreatedOps(RewriterBase &rewriter)
      : ForwardingListener(rewriter.getListener()), rewriter(rewriter),
        previous(rewriter.getListener()) {
    rewriter.setListener(this);
  }
  ~CreatedOps() override { rewriter.setListener(previous); }

  void notifyOperationInserted(Operation *op,
                               OpBuilder::InsertPoint where) override {
    created.push_back(op);
    ForwardingListener::notifyOperationInserted(op, where);
  }

  /// Erases the ops created so far, the last first (none is used by an op
  /// that existed before).
  void eraseAll() {
    SmallVector<Operation *> ops = std::move(created);
    for (Operation *op : llvm::reverse(ops))
      rewriter.eraseOp(op);
  }

private:
  RewriterBase &rewriter;
  OpBuilder::Listener *previous;
  SmallVector<Operation *> created;
};

} // namespace

FailureOr<mha::AttentionOp> mha::raiseAttention(RewriterBase &rewriter,
                                                Operation *op,
                                                std::string *reason) {
  Why why;
  std::optional<CreatedOps> created;
  auto fail = [&]() -> FailureOr<AttentionOp> {
    if (reason)
      *reason = why.text;
    if (created)
      created->eraseAll();
    return failure();
  };
  if (!isContraction(op)) {
    why.note("not a contraction");
    return fail();
  }
  FailureOr<AttentionMatch> m = matchAttention(op, why);
  if (failed(m))
    return fail();

  Location loc = op->getLoc();
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  // Some checks need the operands' views built first.
  created.emplace(rewriter);
  auto rankOf = [](Value x) {
    return cast<RankedTensorType>(x.getType()).getRank();
  };
  auto dimOf = [](Value x, int64_t d) {
    return cast<RankedTensorType>(x.getType()).getDimSize(d);
  };

  // The 4-d view [B, H, S, d]: the operands themselves when all is rank 4;
  // their 4-d sources when all three are collapses of such with the same
  // static head count; else [N, 1, S, d].
  Value q = m->query, k = m->key, v = m->value;
  Value q4, k4, v4;
  auto as4D = [&](Value x) {
    return rankOf(x) == 4 ? x : collapsedFrom4D(x);
  };
  Value qs = as4D(q), ks = as4D(k), vs = as4D(v);
  bool direct = rankOf(q) == 4 && rankOf(k) == 4 && rankOf(v) == 4 &&
                rankOf(op->getResult(0)) == 4;
  if (qs && ks && vs && !ShapedType::isDynamic(dimOf(qs, 1)) &&
      dimOf(qs, 1) == dimOf(ks, 1) && dimOf(qs, 1) == dimOf(vs, 1)) {
    q4 = qs, k4 = ks, v4 = vs;
  } else {
    direct = false;
    auto to4 = [&](Value x) {
      Value flat = flattenBatch(rewriter, loc, x);
      return reshapeBatch(rewriter, loc, flat,
                          {tensor::getMixedSize(rewriter, loc, flat, 0),
                           rewriter.getIndexAttr(1)});
    };
    q4 = to4(q), k4 = to4(k), v4 = to4(v);
  }
  // Grouped-query attention: key and value heads repeated alike.
  int64_t kGroup = 0, vGroup = 0;
  Value kHeads = lookThroughHeadRepeat(k4, kGroup),
        vHeads = lookThroughHeadRepeat(v4, vGroup);
  if (kHeads && vHeads && kGroup == vGroup) {
    k4 = kHeads;
    v4 = vHeads;
  }
  if (ShapedType::isDynamic(dimOf(q4, 1)) ||
      ShapedType::isDynamic(dimOf(k4, 1))) {
    why.note("the head counts are dynamic");
    return fail();
  }

  Value mask;
  if (m->mask) {
    SmallVector<OpFoldResult> viewBatch = {
        tensor::getMixedSize(rewriter, loc, q4, 0),
        tensor::getMixedSize(rewriter, loc, q4, 1)};
    mask = buildMask(rewriter, loc, *m->mask, viewBatch,
                     cast<RankedTensorType>(q4.getType()).getShape(), why);
    if (!mask)
      return fail();
    Type maskElt = getElementTypeOrSelf(mask.getType());
    if (maskElt != getElementTypeOrSelf(q4.getType()) &&
        !maskElt.isInteger(1)) {
      why.note("the mask's element type is neither i1 nor the scores'");
      return fail();
    }
  }

  // The causal offset, left to its default (Sk - Sq) when it provably is.
  Value causalOffset;
  if (m->causal) {
    int64_t sq = dimOf(q4, 2), sk = dimOf(k4, getKeySeqDim(m->keyTransposed));
    bool isDefault = m->causal->values.empty() &&
                     !ShapedType::isDynamic(sq) &&
                     !ShapedType::isDynamic(sk) &&
                     m->causal->constant == sk - sq;
    if (!isDefault) {
      causalOffset =
          arith::ConstantIndexOp::create(rewriter, loc, m->causal->constant);
      for (auto [value, coef] : m->causal->values) {
        Value c = arith::ConstantIndexOp::create(rewriter, loc, coef);
        causalOffset = arith::AddIOp::create(
            rewriter, loc, causalOffset,
            arith::MulIOp::create(rewriter, loc, value, c));
      }
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
      rewriter, loc, init.getType(), q4, k4, v4, mask, causalOffset, init,
      rewriter.getF32FloatAttr(static_cast<float>(m->scale)),
      m->causal.has_value(), m->keyTransposed);

  // Back to the shape of the op's result; or straight to its one user when
  // that reshapes it back to [B, H, Sq, dv] (a frontend's head split).
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  Value result = attention.getResult();
  if (Operation *user = singleUser(op->getResult(0));
      user && result.getType() != resultType && isBatchReshape(user) &&
      user->getResult(0).getType() == result.getType()) {
    SetVector<Operation *> slice = chainEndingAt(op);
    rewriter.replaceOp(user, result);
    eraseDeadSlice(rewriter, slice);
    return attention;
  }
  if (!direct) {
    // The batch sizes: static, or those of a linalg op's init.
    auto pvLinalg = dyn_cast<linalg::LinalgOp>(m->pv);
    SmallVector<OpFoldResult> batch;
    for (int64_t d = 0; d + 2 < resultType.getRank(); ++d) {
      if (!resultType.isDynamicDim(d))
        batch.push_back(rewriter.getIndexAttr(resultType.getDimSize(d)));
      else if (pvLinalg)
        batch.push_back(tensor::getMixedSize(
            rewriter, loc, pvLinalg.getDpsInitOperand(0)->get(), d));
    }
    if (batch.size() + 2 != static_cast<size_t>(resultType.getRank())) {
      why.note("the result has dynamic batch dims and no init to read them "
               "from");
      return fail();
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

FailureOr<mha::MultiHeadAttentionOp>
mha::raiseMultiHeadAttention(RewriterBase &rewriter, AttentionOp att,
                             std::string *reason) {
  Why why;
  auto fail = [&](const Twine &text) -> FailureOr<MultiHeadAttentionOp> {
    if (reason)
      *reason = text.str();
    return failure();
  };
  if (att.getCausalOffset())
    return fail("the attention's causal diagonal is not bottom-right");
  if (att.getKeyTransposed())
    return fail("the keys are given transposed ([B, Hkv, dk, Sk])");
  Value pq = matchHeadSplit(att.getQuery()), pk = matchHeadSplit(att.getKey()),
        pv = matchHeadSplit(att.getValue());
  if (!pq || !pk || !pv)
    return fail("the queries, keys or values are not projections split "
                "into heads");
  FailureOr<Projection> q = matchProjection(pq, why);
  FailureOr<Projection> k = failed(q) ? q : matchProjection(pk, why);
  FailureOr<Projection> v = failed(k) ? k : matchProjection(pv, why);
  if (failed(v))
    return fail(why.text);
  for (Projection *p : {&*q, &*k, &*v})
    if (cast<RankedTensorType>(p->input.getType()).getRank() != 3)
      return fail("a projection's input is not [B, S, E]");

  // The heads merged back and projected: transpose, collapse, projection.
  Operation *merge = singleUser(att.getResult());
  if (!merge || merge->getNumResults() != 1 ||
      lookThroughTranspose(merge->getResult(0), {0, 2, 1, 3}) !=
          att.getResult())
    return fail("the attention's result is not moved back after the "
                "sequence");
  auto collapse =
      dyn_cast_or_null<tensor::CollapseShapeOp>(singleUser(merge->getResult(0)));
  if (!collapse ||
      (collapse.getReassociationIndices() !=
           SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}} &&
       collapse.getReassociationIndices() !=
           SmallVector<ReassociationIndices>{{0, 1}, {2, 3}}))
    return fail("the heads are not merged by a collapse_shape");
  // The output projection: the contraction reading the merged heads, and
  // its bias add if that is its one user.
  auto outContraction =
      dyn_cast_or_null<linalg::LinalgOp>(singleUser(collapse.getResult()));
  if (!outContraction || outContraction->getNumResults() != 1)
    return fail("the merged heads are not projected");
  // The projection with its bias when the contraction's one user adds it,
  // else the contraction alone.
  Value out = outContraction->getResult(0);
  FailureOr<Projection> o = failure();
  if (Operation *user = singleUser(out)) {
    auto add = dyn_cast<linalg::LinalgOp>(user);
    if (add && add->getNumResults() == 1) {
      Why ignored;
      FailureOr<Projection> withBias =
          matchProjection(add->getResult(0), ignored);
      if (succeeded(withBias) && withBias->bias &&
          withBias->contraction == outContraction.getOperation()) {
        out = add->getResult(0);
        o = withBias;
      }
    }
  }
  if (failed(o))
    o = matchProjection(out, why);
  if (failed(o))
    return fail(why.text);
  if (o->input != collapse.getResult())
    return fail("the output projection does not read the merged heads");

  // Types: one float type; biases on all four or none (zeros added).
  Type elt = getElementTypeOrSelf(att.getType());
  for (Projection *p : {&*q, &*k, &*v, &*o})
    for (Value x : {p->input, p->weight, p->bias})
      if (x && getElementTypeOrSelf(x.getType()) != elt)
        return fail("the projections' element types differ from the "
                    "attention's");
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
      biasOrZero(*v), biasOrZero(*o), att.getMask(),
      rewriter.getI64IntegerAttr(numHeads),
      numKvHeads == numHeads ? IntegerAttr()
                             : rewriter.getI64IntegerAttr(numKvHeads),
      att.getScaleAttr(), att.getCausalAttr(), /*return_weights=*/nullptr);
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
