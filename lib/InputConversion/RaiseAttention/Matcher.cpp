//===- Matcher.cpp - Attention read off linalg and TOSA ops ---------------===//
//
// The matcher (see Matcher.h): the softmax, the scores' scale and masks,
// the contraction of queries and keys and the layouts of Q, K and V, read
// off terms; the projections of the layer around an mha.attention; the
// plans, with every check mha.attention and mha.multi_head_attention need.
//
//===----------------------------------------------------------------------===//

#include "Matcher.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "mlir/IR/Matchers.h"

#include <cmath>

using namespace mlir;
using namespace mlir::mha;
using namespace mlir::mha::raise;

/// True if `map` is (d0, ..., d{n-1}) -> (dims...) exactly.
static bool isMapTo(AffineMap map, ArrayRef<unsigned> dims) {
  if (map.getNumResults() != dims.size())
    return false;
  for (auto [expr, dim] : llvm::zip_equal(map.getResults(), dims))
    if (expr != getAffineDimExpr(dim, map.getContext()))
      return false;
  return true;
}

/// The permutation and the source of `v` when a transpose op made it
/// (tosa.transpose, linalg.transpose or a transposing generic).
static std::optional<SmallVector<int64_t>> transposeOf(Value v,
                                                       Value &source) {
  if (auto transpose = v.getDefiningOp<tosa::TransposeOp>()) {
    source = transpose.getInput1();
    return SmallVector<int64_t>(transpose.getPerms());
  }
  auto op = v.getDefiningOp<linalg::LinalgOp>();
  if (!op || !op.hasPureTensorSemantics())
    return std::nullopt;
  std::optional<SmallVector<int64_t>> p;
  if (auto transpose = dyn_cast<linalg::TransposeOp>(op.getOperation()))
    p = llvm::to_vector(transpose.getPermutation());
  else if (auto generic = dyn_cast<linalg::GenericOp>(op.getOperation()))
    p = linalg::isaTransposeOpInterface(generic);
  if (p)
    source = op.getDpsInputOperand(0)->get();
  return p;
}

/// The source of `v` if `v` is a transpose of it by `perm`.
static Value lookThroughTranspose(Value v, ArrayRef<int64_t> perm) {
  Value source;
  std::optional<SmallVector<int64_t>> p = transposeOf(v, source);
  return p && ArrayRef<int64_t>(*p) == perm ? source : Value();
}

/// `v` without an elementwise multiplication (or division) by a constant,
/// which is folded into `scale`.
static Value peelConstantScale(Value v, double &scale) {
  // One producer deep: its input is the source (not what made that input,
  // e.g. a key transpose the caller still has to see).
  TermBuilder builder(/*maxDepth=*/1);
  AffineMap id = AffineMap::getMultiDimIdentityMap(
      cast<RankedTensorType>(v.getType()).getRank(), v.getContext());
  TermRef t = builder.ofTensor(v, id);
  if (!t || t->kind != Term::Kind::Op || t->operands.size() != 2)
    return v;
  TermRef lhs = t->operands[0], rhs = t->operands[1];
  auto isSource = [&](const TermRef &x) {
    return x->kind == Term::Kind::Leaf && x->map == id && x->tensor &&
           x->tensor.getType() == v.getType();
  };
  if (isFn(t, Fn::Mul)) {
    if (std::optional<double> c = getFloat(rhs); c && isSource(lhs)) {
      scale *= *c;
      return lhs->tensor;
    }
    if (std::optional<double> c = getFloat(lhs); c && isSource(rhs)) {
      scale *= *c;
      return rhs->tensor;
    }
  }
  if (isFn(t, Fn::Div))
    if (std::optional<double> c = getFloat(rhs); c && *c != 0 && isSource(lhs)) {
      scale /= *c;
      return lhs->tensor;
    }
  return v;
}

/// A contraction `out[batch..., m, n] = sum_k lhs * rhs` into a zero-filled
/// init, with its operands' layouts: `lhsReducedLast`/`rhsReducedLast` hold,
/// for the lhs (m, k) and the rhs, whether the reduced dim comes last.
namespace {
struct Contraction {
  Value lhs, rhs;
  bool lhsReducedLast, rhsReducedLast;
  unsigned numBatch;
};
} // namespace

static FailureOr<Contraction> matchContraction(Operation *contraction,
                                               StringRef what, Why &why) {
  if (auto matmul = dyn_cast_or_null<tosa::MatMulOp>(contraction)) {
    // [N, M, K] x [N, K, N2], zero points 0.
    for (Value zp : {matmul.getAZp(), matmul.getBZp()}) {
      TypedAttr v = getConstantValue(zp);
      auto f = dyn_cast_or_null<FloatAttr>(v);
      auto i = dyn_cast_or_null<IntegerAttr>(v);
      if (!(f && f.getValue().isZero()) && !(i && i.getValue().isZero()))
        return why(what + " has a non-zero zero point");
    }
    return Contraction{matmul.getA(), matmul.getB(), /*lhsReducedLast=*/true,
                       /*rhsReducedLast=*/false, /*numBatch=*/1};
  }
  auto op = dyn_cast_or_null<linalg::LinalgOp>(contraction);
  if (!op || !op.hasPureTensorSemantics() ||
      !linalg::isaContractionOpInterface(op) || op.getNumDpsInputs() != 2)
    return why(what + " is not a contraction on tensors");
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (failed(dims) || dims->m.size() != 1 || dims->n.size() != 1 ||
      dims->k.size() != 1)
    return why(what + " is not a contraction over one dim");
  auto outType = cast<RankedTensorType>(op->getResult(0).getType());
  unsigned numBatch = dims->batch.size();
  if (outType.getRank() != numBatch + 2)
    return why(what + " has dims that are neither batch, rows, columns "
                      "nor the reduction");
  TypedAttr zero = getConstantValue(op.getDpsInitOperand(0)->get());
  auto zeroFloat = dyn_cast_or_null<FloatAttr>(zero);
  if (!zeroFloat || !zeroFloat.getValue().isZero())
    return why(what + " accumulates into a value that is not zero");
  SmallVector<unsigned> batch(dims->batch.begin(), dims->batch.end());
  auto with = [&](unsigned a, unsigned b) {
    SmallVector<unsigned> all = batch;
    all.push_back(a);
    all.push_back(b);
    return all;
  };
  unsigned m = dims->m[0], n = dims->n[0], k = dims->k[0];
  if (!isMapTo(op.getMatchingIndexingMap(op.getDpsInitOperand(0)),
               with(m, n)))
    return why(what + " writes its result transposed or with the batch "
                      "dims out of order");
  Contraction c;
  c.numBatch = numBatch;
  c.lhs = op.getDpsInputOperand(0)->get();
  c.rhs = op.getDpsInputOperand(1)->get();
  // Whether input `i` is read [batch..., rows, k] (true) or [batch..., k,
  // rows] (false); none when its batch dims are out of order.
  auto reducedLast = [&](unsigned i, unsigned rows) -> std::optional<bool> {
    AffineMap map = op.getMatchingIndexingMap(op.getDpsInputOperand(i));
    if (isMapTo(map, with(rows, k)))
      return true;
    if (isMapTo(map, with(k, rows)))
      return false;
    return std::nullopt;
  };
  std::optional<bool> lhs = reducedLast(0, m), rhs = reducedLast(1, n);
  if (!lhs)
    return why(what + " reads its lhs with the batch dims out of order");
  if (!rhs)
    return why(what + " reads its rhs with the batch dims out of order");
  c.lhsReducedLast = *lhs;
  c.rhsReducedLast = *rhs;
  return c;
}

/// The key/value heads [B, Hkv, S, d] that `x` [B, H, S, d] repeats, each
/// `group` times in a row (a broadcast over a group dim collapsed into the
/// heads, as frontends materialize grouped-query attention).
static Value lookThroughHeadRepeat(Value x, int64_t &group) {
  auto collapse = x.getDefiningOp<tensor::CollapseShapeOp>();
  if (!collapse || collapse.getSrcType().getRank() != 5 ||
      collapse.getReassociationIndices() !=
          SmallVector<ReassociationIndices>{{0}, {1, 2}, {3}, {4}})
    return {};
  auto op = collapse.getSrc().getDefiningOp<linalg::LinalgOp>();
  if (!op || !op.hasPureTensorSemantics() || op.getNumDpsInputs() != 1)
    return {};
  std::optional<SmallVector<int64_t>> dims;
  if (auto broadcast = dyn_cast<linalg::BroadcastOp>(op.getOperation()))
    dims = llvm::to_vector(broadcast.getDimensions());
  else if (auto generic = dyn_cast<linalg::GenericOp>(op.getOperation()))
    dims = linalg::isaBroadcastOpInterface(generic);
  if (!dims || *dims != SmallVector<int64_t>{2} ||
      collapse.getSrcType().isDynamicDim(2))
    return {};
  group = collapse.getSrcType().getDimSize(2);
  return op.getDpsInputOperand(0)->get();
}

/// The operand `v` of a contraction, [batch..., rows, reduced] when
/// `reducedLast`, else [batch..., reduced, rows] made by a transpose op: the
/// tensor it is computed from in the layout [batch..., rows, reduced], through
/// that transpose, reshapes of the batch dims and multiplications by
/// constants (folded into `scale`; none when it is null: a scale on the
/// values does not fold into the attention's), in any order (they commute).
/// The result may have other batch dims than `v` (same count of elements).
/// When `v` needs a transpose and none is there: null, or with
/// `keptTransposed` (an operand that can be read in that layout, the keys)
/// the tensor in the layout [batch..., reduced, rows], and
/// `*keptTransposed` set. A transpose op of other dims is not the one
/// expected (null).
static Value resolveOperand(Value v, bool reducedLast, double *scale,
                            bool *keptTransposed = nullptr) {
  bool transposed = !reducedLast;
  int64_t group;
  while (true) {
    // Heads repeated for grouped-query attention stay (the view reads them).
    if (!transposed && lookThroughHeadRepeat(v, group))
      return v;
    if (isBatchReshape(v.getDefiningOp())) {
      v = v.getDefiningOp()->getOperand(0);
      continue;
    }
    Value unscaled = scale ? peelConstantScale(v, *scale) : v;
    if (unscaled != v) {
      v = unscaled;
      continue;
    }
    if (transposed) {
      int64_t rank = cast<RankedTensorType>(v.getType()).getRank();
      SmallVector<int64_t> perm = llvm::to_vector(llvm::seq<int64_t>(0, rank));
      std::swap(perm[rank - 2], perm[rank - 1]);
      Value source;
      std::optional<SmallVector<int64_t>> p = transposeOf(v, source);
      if (p && ArrayRef<int64_t>(*p) == ArrayRef<int64_t>(perm)) {
        v = source;
        transposed = false;
        continue;
      }
      if (!keptTransposed || p)
        return {};
      *keptTransposed = true;
      return v;
    }
    return v;
  }
}

static bool isNegativeInfOrLarge(const TermRef &t) {
  std::optional<double> c = getFloat(t);
  return c && (std::isinf(*c) ? *c < 0 : *c <= -1.0e4);
}

/// A linear form `sum coef * term` of index terms, constants and captured
/// SSA index values.
namespace {
struct Linear {
  int64_t query = 0, key = 0, constant = 0;
  SmallVector<std::pair<Value, int64_t>> values;
};
} // namespace

static bool addLinear(const TermRef &t, int64_t sign, unsigned queryDim,
                      unsigned keyDim, Linear &out) {
  switch (t->kind) {
  case Term::Kind::Index:
    if (t->dim == queryDim)
      out.query += sign;
    else if (t->dim == keyDim)
      out.key += sign;
    else
      return false;
    return true;
  case Term::Kind::Constant:
    if (auto i = dyn_cast<IntegerAttr>(t->value)) {
      out.constant += sign * i.getInt();
      return true;
    }
    return false;
  case Term::Kind::Leaf:
    if (t->map || !t->tensor.getType().isIndex())
      return false;
    out.values.push_back({t->tensor, sign});
    return true;
  case Term::Kind::Op:
    if (isa<arith::AddIOp>(t->op))
      return addLinear(t->operands[0], sign, queryDim, keyDim, out) &&
             addLinear(t->operands[1], sign, queryDim, keyDim, out);
    if (isa<arith::SubIOp>(t->op))
      return addLinear(t->operands[0], sign, queryDim, keyDim, out) &&
             addLinear(t->operands[1], -sign, queryDim, keyDim, out);
    if (isa<arith::IndexCastOp, arith::IndexCastUIOp>(t->op))
      return addLinear(t->operands[0], sign, queryDim, keyDim, out);
    return false;
  default:
    return false;
  }
}

/// The causal visibility a predicate on (query, key) positions states, if
/// it is `key <= query + offset` (`attend`: true where the query sees the
/// key; false: true where it does not).
static std::optional<CausalUse> matchCausalPredicate(const TermRef &pred,
                                                     bool attend,
                                                     unsigned rank) {
  if (pred->kind != Term::Kind::Op)
    return std::nullopt;
  if (auto xori = dyn_cast<arith::XOrIOp>(pred->op)) {
    auto isTrue = [](const TermRef &t) {
      auto i = t->kind == Term::Kind::Constant
                   ? dyn_cast<IntegerAttr>(t->value)
                   : IntegerAttr();
      return i && i.getType().isInteger(1) && i.getValue().isAllOnes();
    };
    if (isTrue(pred->operands[1]))
      return matchCausalPredicate(pred->operands[0], !attend, rank);
    if (isTrue(pred->operands[0]))
      return matchCausalPredicate(pred->operands[1], !attend, rank);
    return std::nullopt;
  }
  auto cmp = dyn_cast<arith::CmpIOp>(pred->op);
  if (!cmp)
    return std::nullopt;
  // lhs - rhs as a linear form; the predicate is `lhs - rhs <op> 0`.
  Linear lhs, rhs;
  if (!addLinear(pred->operands[0], 1, rank - 2, rank - 1, lhs) ||
      !addLinear(pred->operands[1], 1, rank - 2, rank - 1, rhs))
    return std::nullopt;
  Linear diff = lhs;
  diff.query -= rhs.query;
  diff.key -= rhs.key;
  diff.constant -= rhs.constant;
  for (auto [value, coef] : rhs.values)
    diff.values.push_back({value, -coef});
  using P = arith::CmpIPredicate;
  P p = cmp.getPredicate();
  // Unsigned orders agree with signed ones on sums of positions and
  // non-negative constants.
  auto nonNegative = [](const Linear &l) {
    return l.values.empty() && l.constant >= 0 && l.query >= 0 && l.key >= 0;
  };
  bool unsignedOk = nonNegative(lhs) && nonNegative(rhs);
  switch (p) {
  case P::ult: case P::ule: case P::ugt: case P::uge:
    if (!unsignedOk)
      return std::nullopt;
    break;
  default:
    break;
  }
  // Normalize to `e <= 0` with e = sign * diff + bias.
  int64_t sign = 1, bias = 0;
  switch (p) {
  case P::sle: case P::ule: sign = 1; bias = 0; break;
  case P::slt: case P::ult: sign = 1; bias = 1; break;
  case P::sge: case P::uge: sign = -1; bias = 0; break;
  case P::sgt: case P::ugt: sign = -1; bias = 1; break;
  default: return std::nullopt;
  }
  if (!attend) {
    // The predicate holds where the key is hidden:
    // not(e <= 0)  <=>  -e + 1 <= 0.
    sign = -sign;
    bias = 1 - bias;
  }
  // key - query + c <= 0  <=>  key <= query - c.
  if (sign * diff.key != 1 || sign * diff.query != -1)
    return std::nullopt;
  CausalUse causal;
  causal.constant = -(sign * diff.constant + bias);
  for (auto [value, coef] : diff.values)
    causal.values.push_back({value, -sign * coef});
  return causal;
}

/// The causal offset of a constant mask (`true`, or 0 for a float mask,
/// where visible; the opposite with `negate`), if it is the triangle
/// `key <= query + offset` with some key of some row visible and some hidden.
static std::optional<CausalUse> matchCausalConstant(Value tensor,
                                                    AffineMap map,
                                                    unsigned rank,
                                                    bool negate) {
  DenseElementsAttr attr;
  if (!matchPattern(tensor, m_Constant(&attr)))
    return std::nullopt;
  auto type = cast<RankedTensorType>(tensor.getType());
  if (!type.hasStaticShape())
    return std::nullopt;
  // Its (query, key) dims; every other dim is a unit dim.
  std::optional<int64_t> rowDim, colDim;
  for (auto [i, e] : llvm::enumerate(map.getResults())) {
    auto d = dyn_cast<AffineDimExpr>(e);
    if (d && d.getPosition() == rank - 2)
      rowDim = i;
    else if (d && d.getPosition() == rank - 1)
      colDim = i;
    else if (type.getDimSize(i) != 1)
      return std::nullopt;
  }
  if (!rowDim || !colDim)
    return std::nullopt;
  SmallVector<int64_t> strides = computeStrides(type.getShape());
  int64_t rows = type.getDimSize(*rowDim), cols = type.getDimSize(*colDim);
  SmallVector<int8_t> visible(rows * cols);
  Type elt = type.getElementType();
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      int64_t index = i * strides[*rowDim] + j * strides[*colDim];
      bool v;
      if (elt.isInteger(1)) {
        v = attr.getValues<bool>()[index];
      } else if (isa<FloatType>(elt)) {
        APFloat f = attr.getValues<APFloat>()[index];
        if (f.isZero())
          v = true;
        else if (f.isInfinity() && f.isNegative())
          v = false;
        else
          return std::nullopt;
      } else {
        return std::nullopt;
      }
      visible[i * cols + j] = v != negate;
    }
  std::optional<int64_t> offset;
  for (int64_t i = 0; i < rows && !offset; ++i) {
    int64_t count = 0;
    while (count < cols && visible[i * cols + count])
      ++count;
    if (count > 0 && count < cols)
      offset = count - 1 - i;
  }
  if (!offset)
    return std::nullopt;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      if (static_cast<bool>(visible[i * cols + j]) != (j <= i + *offset))
        return std::nullopt;
  CausalUse causal;
  causal.constant = *offset;
  return causal;
}

/// The tensor leaf terms `t` reads, in `leaves`; `other` set when it also
/// reads something that is neither those nor a constant (positions,
/// scalars).
static void collectLeaves(const TermRef &t, SmallVector<const Term *> &leaves,
                          bool &other) {
  switch (t->kind) {
  case Term::Kind::Leaf:
    if (!t->map)
      other = true;
    leaves.push_back(t.get());
    return;
  case Term::Kind::Constant:
    return;
  case Term::Kind::Op:
    for (const TermRef &o : t->operands)
      collectLeaves(o, leaves, other);
    return;
  default:
    other = true;
  }
}

namespace {

class AttentionMatcher {
public:
  explicit AttentionMatcher(Why &why) : why(why) {}
  FailureOr<AttentionMatch> match(Operation *pv);

private:
  /// The scores below the softmax: scale, mask and causal, down to the
  /// contraction of queries and keys.
  LogicalResult matchScores(TermRef x, AttentionMatch &m);
  LogicalResult addMask(const TermRef &side, bool isBool, bool negate,
                        unsigned rank, AttentionMatch &m);
  bool hasScorePath(const TermRef &t);
  Why &why;
  /// The static shape of the scores at the current step of matchScores.
  SmallVector<int64_t> spaceShape;
};

} // namespace

bool AttentionMatcher::hasScorePath(const TermRef &t) {
  if (t->kind == Term::Kind::Leaf) {
    return t->map && t->map.isIdentity() &&
           isContraction(t->tensor.getDefiningOp());
  }
  return llvm::any_of(t->operands,
                      [&](const TermRef &o) { return hasScorePath(o); });
}

LogicalResult AttentionMatcher::addMask(const TermRef &side, bool isBool,
                                        bool negate, unsigned rank,
                                        AttentionMatch &m) {
  if (side->tensor && side->map) {
    if (std::optional<CausalUse> c =
            matchCausalConstant(side->tensor, side->map, rank, negate)) {
      if (m.causal)
        return why("the scores have more than one causal mask");
      m.causal = *c;
      return success();
    }
  }
  if (m.mask)
    return why("the scores have more than one mask");
  if (side->tensor && side->map) {
    m.mask = MaskUse{side->tensor, side->map, nullptr, negate, spaceShape};
    return success();
  }
  if (!isBool)
    return why("the mask added to the scores is not a tensor");
  SmallVector<const Term *> leaves;
  bool other = false;
  collectLeaves(side, leaves, other);
  if (other || leaves.empty() ||
      llvm::any_of(leaves, [&](const Term *l) {
        return l->tensor != leaves[0]->tensor || l->map != leaves[0]->map;
      }))
    return why("the mask predicate is neither `key <= query + c` nor a "
               "function of one tensor");
  m.mask =
      MaskUse{leaves[0]->tensor, leaves[0]->map, side, negate, spaceShape};
  return success();
}

LogicalResult AttentionMatcher::matchScores(TermRef x, AttentionMatch &m) {
  unsigned rank = x->map ? x->map.getNumDims() : 0;
  // Walks from the softmax input down to the contraction: a scale met
  // before a float mask would scale the mask too.
  bool scaled = false;
  auto setSpace = [&](const TermRef &t) {
    unsigned r = t->map ? t->map.getNumDims() : rank;
    spaceShape.assign(r, ShapedType::kDynamic);
    if (t->tensor && t->map && t->map.isIdentity())
      spaceShape = llvm::to_vector(
          cast<RankedTensorType>(t->tensor.getType()).getShape());
  };
  setSpace(x);
  while (true) {
    if (x->tensor && x->map && x->map.isIdentity())
      setSpace(x);
    if (x->kind == Term::Kind::Leaf) {
      if (!hasScorePath(x))
        return why("the softmax input is not computed from a contraction "
                   "of queries and keys");
      m.qk = x->tensor.getDefiningOp();
      return success();
    }
    if (x->kind == Term::Kind::Reshape) {
      x = x->operands[0];
      rank = x->map.getNumDims();
      setSpace(x);
      continue;
    }
    if (x->kind != Term::Kind::Op)
      return why("the scores go through something other than elementwise "
                 "arithmetic and reshapes of the batch dims");
    Operation *op = x->op;
    Fn fn = fnOf(op);
    auto operandIsScores = [&](unsigned i) {
      return hasScorePath(x->operands[i]);
    };
    if (fn == Fn::Mul || fn == Fn::Div) {
      unsigned s = operandIsScores(0) ? 0 : 1;
      if (fn == Fn::Div && s != 0)
        return why("the scores divide a value");
      std::optional<double> c = getFloat(x->operands[1 - s]);
      if (!c)
        return why("the scores are scaled by a value that is not a "
                   "constant");
      if (*c <= 0)
        return why("the scores are scaled by a non-positive constant");
      m.scale *= fn == Fn::Mul ? *c : 1.0 / *c;
      scaled = true;
      x = x->operands[s];
      continue;
    }
    if (fn == Fn::Add) {
      unsigned s = operandIsScores(0) ? 0 : 1;
      if (operandIsScores(1 - s))
        return why("the scores are added to themselves");
      if (scaled)
        return why("the mask is scaled with the scores (it is added before "
                   "the scale)");
      if (failed(addMask(x->operands[1 - s], /*isBool=*/false, false, rank,
                         m)))
        return failure();
      x = x->operands[s];
      continue;
    }
    if (fn == Fn::Sub)
      return why("a value is subtracted from the scores");
    if (fn == Fn::Select) {
      const TermRef &pred = x->operands[0];
      bool scoresTrue = operandIsScores(1);
      if (scoresTrue == operandIsScores(2))
        return why("a select on the scores does not choose between the "
                   "scores and a fill value");
      const TermRef &fill = x->operands[scoresTrue ? 2 : 1];
      if (!isNegativeInfOrLarge(fill))
        return why("the scores are masked with a fill value that is "
                   "neither -inf nor at most -1e4");
      if (std::optional<CausalUse> c =
              matchCausalPredicate(pred, scoresTrue, rank)) {
        if (m.causal)
          return why("the scores have more than one causal mask");
        m.causal = *c;
      } else if (failed(addMask(pred, /*isBool=*/true, !scoresTrue, rank,
                                m))) {
        return failure();
      }
      x = x->operands[scoresTrue ? 1 : 2];
      continue;
    }
    return why("the scores go through '" + op->getName().getStringRef() +
               "', which is not a scale or a mask");
  }
}

/// The softmax input if `p` is a softmax over its last dim: linalg.softmax,
/// or exp(x - max(x)) / sum(exp(x - max(x))) in any split into linalg ops.
static TermRef matchSoftmax(const TermRef &p, unsigned rank, Why &why) {
  if (p->kind == Term::Kind::Softmax)
    return p->operands[0];
  auto isReduction = [&](const TermRef &t, bool max) {
    if (t->kind != Term::Kind::Reduction || t->dim != rank - 1)
      return false;
    auto init = dyn_cast<FloatAttr>(t->value);
    if (!init)
      return false;
    if (!max)
      return fnOf(t->op) == Fn::Add && init.getValue().isZero();
    // -inf or the lowest float; NaN for maxnumf, which skips it (upstream's
    // decomposition of linalg.softmax).
    double v = init.getValueAsDouble();
    return fnOf(t->op) == Fn::Max &&
           (v < -1.0e30 || (std::isnan(v) && isa<arith::MaxNumFOp>(t->op)));
  };
  if (p->kind != Term::Kind::Op) {
    why.note("the probabilities are not a softmax");
    return nullptr;
  }
  // e / sum(e), or e * (1 / sum(e)).
  TermRef e, sum;
  if (isFn(p, Fn::Div)) {
    e = p->operands[0];
    sum = p->operands[1];
  } else if (isFn(p, Fn::Mul)) {
    for (unsigned i = 0; i < 2 && !e; ++i) {
      const TermRef &r = p->operands[1 - i];
      if (isFn(r, Fn::Reciprocal)) {
        e = p->operands[i];
        sum = r->operands[0];
        continue;
      }
      std::optional<double> one =
          isFn(r, Fn::Div) ? getFloat(r->operands[0]) : std::nullopt;
      if (one && *one == 1.0) {
        e = p->operands[i];
        sum = r->operands[1];
      }
    }
  }
  if (!e || !isReduction(sum, /*max=*/false) ||
      !equalTerms(sum->operands[0], e)) {
    why.note("the probabilities are not a softmax: no division by the row sum");
    return nullptr;
  }
  if (!isFn(e, Fn::Exp) || !isFn(e->operands[0], Fn::Sub)) {
    why.note("the probabilities are not a softmax: not exp(x - max(x))");
    return nullptr;
  }
  TermRef x = e->operands[0]->operands[0];
  const TermRef &max = e->operands[0]->operands[1];
  if (!isReduction(max, /*max=*/true) || !equalTerms(max->operands[0], x)) {
    why.note("the probabilities are not a softmax: the subtracted value is not "
        "the row maximum");
    return nullptr;
  }
  return x;
}

FailureOr<AttentionMatch> AttentionMatcher::match(Operation *pv) {
  AttentionMatch m;
  m.pv = pv;
  FailureOr<Contraction> pvc = matchContraction(pv, "the op", why);
  if (failed(pvc))
    return failure();
  if (!pvc->lhsReducedLast)
    return why("the probabilities are read transposed");
  TermBuilder builder;
  auto pType = cast<RankedTensorType>(pvc->lhs.getType());
  TermRef p = builder.ofTensor(
      pvc->lhs,
      AffineMap::getMultiDimIdentityMap(pType.getRank(), pv->getContext()));
  while (p->kind == Term::Kind::Reshape)
    p = p->operands[0];
  unsigned rank = p->map ? p->map.getNumDims() : pType.getRank();
  TermRef x = matchSoftmax(p, rank, why);
  if (!x)
    return failure();
  m.value = resolveOperand(pvc->rhs, !pvc->rhsReducedLast, nullptr);
  if (!m.value)
    return why("the values are read transposed and not through a transpose "
               "op");
  if (failed(matchScores(x, m)))
    return failure();

  FailureOr<Contraction> qkc = matchContraction(m.qk, "the scores", why);
  if (failed(qkc))
    return failure();
  // Scales on Q and K, before or after their transposes (PyTorch's math
  // path scales q and kᵀ by sqrt(scale) each).
  double qScale = 1.0, kScale = 1.0;
  m.query = resolveOperand(qkc->lhs, qkc->lhsReducedLast, &qScale);
  // Keys read with the head dim first and not through a transpose op stay
  // in that layout (mha.attention's `key_transposed`): no copy.
  m.key = resolveOperand(qkc->rhs, qkc->rhsReducedLast, &kScale,
                         &m.keyTransposed);
  if (!m.query)
    return why("the queries are read transposed and not through a "
               "transpose op");
  if (!m.key)
    return why("the keys are read through a transpose that is not of their "
               "last two dims");
  if (qScale <= 0 || kScale <= 0)
    return why("the queries or keys are scaled by a non-positive constant");
  m.scale *= qScale * kScale;

  // Types and sizes mha.attention takes.
  Type elt = getElementTypeOrSelf(m.query.getType());
  for (Value v : {m.key, m.value, Value(pv->getResult(0)), Value(m.qk->getResult(0))})
    if (getElementTypeOrSelf(v.getType()) != elt)
      return why("queries, keys, values, scores and result do not share "
                 "one element type");
  if (!isa<FloatType>(elt))
    return why("the element type is not a float");
  auto lastDimsStatic = [](Value v) {
    auto t = cast<RankedTensorType>(v.getType());
    return !t.isDynamicDim(t.getRank() - 1);
  };
  if (!lastDimsStatic(m.query) || !lastDimsStatic(m.value))
    return why("the head dims are dynamic");
  // Probabilities returned too would be computed twice.
  if (!pvc->lhs.hasOneUse())
    return why("the probabilities have other users");
  return m;
}

//===----------------------------------------------------------------------===//
// The plan
//===----------------------------------------------------------------------===//

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

/// The type of the view [N, 1, S, d] the rewrite builds of `x` [batch..., S,
/// d] (flattenBatch, then reshapeBatch to [N, 1]): N is the product of the
/// batch dims (1 without any), dynamic when one of them is.
static RankedTensorType flattenedViewType(Value x) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rank = type.getRank(), n = 1;
  for (int64_t size : type.getShape().drop_back(2))
    n = ShapedType::isDynamic(n) || ShapedType::isDynamic(size)
            ? ShapedType::kDynamic
            : n * size;
  return RankedTensorType::get(
      {n, 1, type.getDimSize(rank - 2), type.getDimSize(rank - 1)},
      type.getElementType());
}

/// The mask as mha.attention takes it, [B|1, H|1, Sq|1, Sk|1], from the
/// tensor read at `use.map` in the scores' space: as it is when that space
/// is the view (`viewShape` the queries' static shape), else with its batch
/// dims flattened and split as the view's. Failure, with `why`, where the
/// broadcast cannot be expressed.
static FailureOr<MaskPlan> planMask(const MaskUse &use,
                                    ArrayRef<int64_t> viewShape, Why &why) {
  MaskPlan plan;
  plan.tensor = use.tensor;
  plan.predicate = use.predicate;
  plan.negate = use.negate;
  AffineMap map = use.map;
  auto type = cast<RankedTensorType>(use.tensor.getType());
  int64_t rank = map.getNumDims();
  // For each mask dim, the space dim it is read along (-1: a unit dim read
  // at 0); the space dims must come in order.
  SmallVector<int64_t> spaceDim;
  int64_t last = -1;
  for (auto [i, e] : llvm::enumerate(map.getResults())) {
    if (auto c = dyn_cast<AffineConstantExpr>(e)) {
      if (c.getValue() != 0 || type.getDimSize(i) != 1)
        return why("the mask is read at a fixed position");
      spaceDim.push_back(-1);
      continue;
    }
    auto d = dyn_cast<AffineDimExpr>(e);
    if (!d || d.getPosition() <= last)
      return why("the mask is not broadcastable to the scores: its dims are "
                 "not the scores' in order");
    last = d.getPosition();
    spaceDim.push_back(last);
  }
  if (last < 0)
    return why("the mask has no dim of the scores");

  // To the rank of the space: unit dims read at 0 dropped, a unit dim for
  // each space dim the mask lacks.
  SmallVector<int64_t> shape(type.getShape());
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
    if (collapse.size() != kept.size())
      return why("the mask's unit dims cannot be dropped");
    if (static_cast<int64_t>(collapse.size()) != type.getRank())
      plan.collapse = collapse;
    // The collapsed shape, as collapse_shape infers it.
    SmallVector<int64_t> collapsed;
    for (const ReassociationIndices &group : collapse) {
      int64_t size = 1;
      for (int64_t i : group)
        size = ShapedType::isDynamic(size) || type.isDynamicDim(i)
                   ? ShapedType::kDynamic
                   : size * type.getDimSize(i);
      collapsed.push_back(size);
    }
    // Expand: kept dim g owns the space dims after the previous one up to
    // its own (the last one also those after it).
    plan.expand.resize(kept.size());
    shape.clear();
    for (int64_t d = 0, g = 0; d < rank; ++d) {
      while (g + 1 < static_cast<int64_t>(kept.size()) && d > kept[g])
        ++g;
      plan.expand[g].push_back(d);
      bool isKept = d == kept[g];
      shape.push_back(isKept ? collapsed[g] : 1);
      plan.expandSizeOf.push_back(isKept ? g : -1);
    }
    plan.expandShape = shape;
  }

  // The space is the view when both have batch dims [B, H] with the same
  // static H (B then agrees too).
  ArrayRef<int64_t> spaceBatch = ArrayRef(use.spaceShape).drop_back(2);
  if (rank == 4 && spaceBatch[1] == viewShape[1] &&
      !ShapedType::isDynamic(spaceBatch[1]))
    return plan;
  // The batch dims: all broadcast, or all present (flattened and split as
  // the view).
  bool allUnit = true, allFull = true;
  for (int64_t d = 0; d + 2 < rank; ++d) {
    allUnit &= shape[d] == 1;
    allFull &= shape[d] != 1 || spaceBatch[d] == 1;
  }
  if (allUnit) {
    plan.batch = MaskPlan::Batch::AllUnit;
    return plan;
  }
  if (allFull) {
    plan.batch = MaskPlan::Batch::AllFull;
    return plan;
  }
  return why("the mask is broadcast over some of the batch dims of scores "
             "whose batch dims are reshaped");
}

FailureOr<AttentionPlan> raise::planAttention(Operation *op, Why &why) {
  if (!isContraction(op))
    return why("not a contraction");
  AttentionMatcher matcher(why);
  FailureOr<AttentionMatch> m = matcher.match(op);
  if (failed(m))
    return failure();
  AttentionPlan plan;
  plan.match = *m;
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
  auto as4D = [&](Value x) {
    return rankOf(x) == 4 ? x : collapsedFrom4D(x);
  };
  Value qs = as4D(q), ks = as4D(k), vs = as4D(v);
  bool direct = rankOf(q) == 4 && rankOf(k) == 4 && rankOf(v) == 4 &&
                rankOf(op->getResult(0)) == 4;
  RankedTensorType q4Type, k4Type, v4Type;
  if (qs && ks && vs && !ShapedType::isDynamic(dimOf(qs, 1)) &&
      dimOf(qs, 1) == dimOf(ks, 1) && dimOf(qs, 1) == dimOf(vs, 1)) {
    plan.view =
        direct ? AttentionPlan::View::Direct : AttentionPlan::View::From4D;
    plan.q4 = qs, plan.k4 = ks, plan.v4 = vs;
    // Grouped-query attention: key and value heads repeated alike. (The
    // flattened views are expand_shapes, which repeat no heads.)
    int64_t kGroup = 0, vGroup = 0;
    Value kHeads = lookThroughHeadRepeat(plan.k4, kGroup),
          vHeads = lookThroughHeadRepeat(plan.v4, vGroup);
    if (kHeads && vHeads && kGroup == vGroup) {
      plan.k4 = kHeads;
      plan.v4 = vHeads;
    }
    q4Type = cast<RankedTensorType>(plan.q4.getType());
    k4Type = cast<RankedTensorType>(plan.k4.getType());
    v4Type = cast<RankedTensorType>(plan.v4.getType());
  } else {
    plan.view = AttentionPlan::View::Flatten;
    q4Type = flattenedViewType(q);
    k4Type = flattenedViewType(k);
    v4Type = flattenedViewType(v);
  }
  if (q4Type.isDynamicDim(1) || k4Type.isDynamicDim(1))
    return why("the head counts are dynamic");

  if (m->mask) {
    FailureOr<MaskPlan> mask = planMask(*m->mask, q4Type.getShape(), why);
    if (failed(mask))
      return failure();
    // A materialized predicate is i1, but an expand to the space's rank
    // takes the type of the mask it was computed from.
    Type maskElt = mask->expand.empty() && (mask->predicate || mask->negate)
                       ? IntegerType::get(op->getContext(), 1)
                       : getElementTypeOrSelf(mask->tensor.getType());
    if (maskElt != q4Type.getElementType() && !maskElt.isInteger(1))
      return why("the mask's element type is neither i1 nor the scores'");
    plan.mask = std::move(*mask);
  }

  // The causal offset, left to its default (Sk - Sq) when it provably is.
  if (m->causal) {
    int64_t sq = q4Type.getDimSize(2),
            sk = k4Type.getDimSize(getKeySeqDim(m->keyTransposed));
    bool isDefault = m->causal->values.empty() &&
                     !ShapedType::isDynamic(sq) &&
                     !ShapedType::isDynamic(sk) &&
                     m->causal->constant == sk - sq;
    if (!isDefault)
      plan.causalOffset = m->causal;
  }

  // Back to the shape of the op's result; or straight to its one user when
  // that reshapes it back to [B, H, Sq, dv] (a frontend's head split).
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  auto attentionType =
      RankedTensorType::get({q4Type.getDimSize(0), q4Type.getDimSize(1),
                             q4Type.getDimSize(2), v4Type.getDimSize(3)},
                            q4Type.getElementType());
  if (Operation *user = singleUser(op->getResult(0));
      user && attentionType != resultType && isBatchReshape(user) &&
      user->getResult(0).getType() == attentionType) {
    plan.userReshape = user;
    return plan;
  }
  if (plan.view != AttentionPlan::View::Direct) {
    // The batch sizes: static, or those of a linalg op's init.
    auto pvLinalg = dyn_cast<linalg::LinalgOp>(op);
    if (pvLinalg)
      plan.resultBatchInit = pvLinalg.getDpsInitOperand(0)->get();
    for (int64_t d = 0; d + 2 < resultType.getRank(); ++d)
      if (resultType.isDynamicDim(d) && !pvLinalg)
        return why("the result has dynamic batch dims and no init to read "
                   "them from");
  }
  return plan;
}

//===----------------------------------------------------------------------===//
// The layer around it
//===----------------------------------------------------------------------===//

/// Reads a projection ending in `out` ([B, S, Eout], or [B*S, Eout] from a
/// [B, S, Ein] input collapsed to 2-d): a contraction over the input's last
/// dim with a weight read [Ein, Eout] or [Eout, Ein] (through maps, a
/// transpose or a broadcast over the batch), and a bias [Eout] added after
/// it or used as its initial value.
static FailureOr<Projection> matchProjection(Value out, Why &why) {
  Projection proj;
  auto outType = cast<RankedTensorType>(out.getType());
  int64_t rank = outType.getRank();
  AffineMap id = AffineMap::getMultiDimIdentityMap(rank, out.getContext());
  TermBuilder builder;
  Value c = out;
  // A bias added after the contraction.
  TermRef t = builder.ofTensor(out, id);
  auto biasOf = [&](const TermRef &x) -> Value {
    if (x->kind != Term::Kind::Leaf || !x->map || x->map.getNumResults() != 1 ||
        x->map.getResult(0) != getAffineDimExpr(rank - 1, out.getContext()))
      return {};
    return x->tensor;
  };
  if (isFn(t, Fn::Add)) {
    for (unsigned i = 0; i < 2 && !proj.bias; ++i) {
      const TermRef &x = t->operands[i];
      if (x->kind != Term::Kind::Leaf || x->map != id)
        continue;
      if (Value bias = biasOf(t->operands[1 - i])) {
        proj.bias = bias;
        c = x->tensor;
      }
    }
  }
  // A [B*S, Eout] projection expanded to [B, S, Eout].
  if (auto expand = c.getDefiningOp<tensor::ExpandShapeOp>();
      expand && expand.getSrcType().getRank() == 2 &&
      expand.getReassociationIndices() ==
          SmallVector<ReassociationIndices>{{0, 1}, {2}}) {
    c = expand.getSrc();
    rank = 2;
    id = AffineMap::getMultiDimIdentityMap(rank, out.getContext());
  }
  auto op = c.getDefiningOp<linalg::LinalgOp>();
  if (!op || !op.hasPureTensorSemantics() ||
      !linalg::isaContractionOpInterface(op) || op.getNumDpsInputs() != 2)
    return why("a projection is not a contraction");
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (failed(dims) || dims->n.size() != 1 || dims->k.size() != 1 ||
      dims->m.size() + dims->batch.size() + 1 != static_cast<size_t>(rank))
    return why("a projection is not a contraction over one dim");
  proj.contraction = op;
  OpOperand *init = op.getDpsInitOperand(0);
  AffineMap outMap = op.getMatchingIndexingMap(init);
  // Rows (batch and m dims) in order, then the output features.
  SmallVector<unsigned> rows(dims->batch.begin(), dims->batch.end());
  rows.append(dims->m.begin(), dims->m.end());
  llvm::sort(rows);
  SmallVector<unsigned> outDims(rows);
  outDims.push_back(dims->n[0]);
  if (!isMapTo(outMap, outDims))
    return why("a projection writes its result transposed");
  TypedAttr zero = getConstantValue(init->get());
  if (auto f = dyn_cast_or_null<FloatAttr>(zero); !f || !f.getValue().isZero()) {
    Value bias = proj.bias
                     ? Value()
                     : biasOf(builder.ofTensor(init->get(), id));
    if (!bias)
      return why("a projection accumulates into something other than zero "
                 "or a bias");
    proj.bias = bias;
  }
  // The input: [rows..., Ein].
  SmallVector<unsigned> inDims(rows);
  inDims.push_back(dims->k[0]);
  OpOperand *lhs = op.getDpsInputOperand(0), *rhs = op.getDpsInputOperand(1);
  if (!isMapTo(op.getMatchingIndexingMap(lhs), inDims))
    return why("a projection reads its input transposed");
  proj.input = lhs->get();
  // [B*S, Ein] collapsed from [B, S, Ein]: the 3-d input.
  if (auto collapse = proj.input.getDefiningOp<tensor::CollapseShapeOp>();
      rank == 2 && collapse && collapse.getSrcType().getRank() == 3 &&
      collapse.getReassociationIndices() ==
          SmallVector<ReassociationIndices>{{0, 1}, {2}})
    proj.input = collapse.getSrc();
  // The weight, through broadcasts over the batch and transposes: a 2-d
  // tensor read at (k, n) or (n, k) of the contraction's loops.
  unsigned numLoops = op.getNumLoops();
  AffineMap loops = AffineMap::getMultiDimIdentityMap(numLoops, op.getContext());
  TermRef w = builder.ofTensor(
      rhs->get(), op.getMatchingIndexingMap(rhs).compose(loops));
  if (w->kind != Term::Kind::Leaf || !w->map ||
      cast<RankedTensorType>(w->tensor.getType()).getRank() != 2)
    return why("a projection's weight is not a 2-d tensor");
  if (isMapTo(w->map, {dims->k[0], dims->n[0]}))
    proj.weightOutIn = false;
  else if (isMapTo(w->map, {dims->n[0], dims->k[0]}))
    proj.weightOutIn = true;
  else
    return why("a projection reads its weight along other dims");
  proj.weight = w->tensor;
  return proj;
}

/// The projection [B, S, H*d] whose heads `x4` [B, H, S, d] are: split by
/// an expand_shape and moved before the sequence by a transpose.
static Value matchHeadSplit(Value x4) {
  Value split = lookThroughTranspose(x4, {0, 2, 1, 3});
  auto expand = split ? split.getDefiningOp<tensor::ExpandShapeOp>()
                      : tensor::ExpandShapeOp();
  if (!expand)
    return {};
  SmallVector<ReassociationIndices> groups = expand.getReassociationIndices();
  if ((expand.getSrcType().getRank() == 3 &&
       groups == SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}}) ||
      (expand.getSrcType().getRank() == 2 &&
       groups == SmallVector<ReassociationIndices>{{0, 1}, {2, 3}}))
    return expand.getSrc();
  return {};
}
FailureOr<LayerPlan> raise::planLayer(AttentionOp att, Why &why) {
  if (att.getCausalOffset())
    return why("the attention's causal diagonal is not bottom-right");
  if (att.getKeyTransposed())
    return why("the keys are given transposed ([B, Hkv, dk, Sk])");
  if (att.getKeyOffset())
    return why("the attention's key lengths count from a key offset");
  Value pq = matchHeadSplit(att.getQuery()), pk = matchHeadSplit(att.getKey()),
        pv = matchHeadSplit(att.getValue());
  if (!pq || !pk || !pv)
    return why("the queries, keys or values are not projections split "
               "into heads");
  FailureOr<Projection> q = matchProjection(pq, why);
  FailureOr<Projection> k = failed(q) ? q : matchProjection(pk, why);
  FailureOr<Projection> v = failed(k) ? k : matchProjection(pv, why);
  if (failed(v))
    return failure();
  for (Projection *p : {&*q, &*k, &*v})
    if (cast<RankedTensorType>(p->input.getType()).getRank() != 3)
      return why("a projection's input is not [B, S, E]");

  // The heads merged back and projected: transpose, collapse, projection.
  Operation *merge = singleUser(att.getResult());
  if (!merge || merge->getNumResults() != 1 ||
      lookThroughTranspose(merge->getResult(0), {0, 2, 1, 3}) !=
          att.getResult())
    return why("the attention's result is not moved back after the "
               "sequence");
  auto collapse =
      dyn_cast_or_null<tensor::CollapseShapeOp>(singleUser(merge->getResult(0)));
  if (!collapse ||
      (collapse.getReassociationIndices() !=
           SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}} &&
       collapse.getReassociationIndices() !=
           SmallVector<ReassociationIndices>{{0, 1}, {2, 3}}))
    return why("the heads are not merged by a collapse_shape");
  // The output projection: the contraction reading the merged heads, and
  // its bias add if that is its one user.
  auto outContraction =
      dyn_cast_or_null<linalg::LinalgOp>(singleUser(collapse.getResult()));
  if (!outContraction || outContraction->getNumResults() != 1)
    return why("the merged heads are not projected");
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
    return failure();
  if (o->input != collapse.getResult())
    return why("the output projection does not read the merged heads");

  // Types: one float type; biases on all four or none (zeros added).
  Type elt = getElementTypeOrSelf(att.getType());
  for (Projection *p : {&*q, &*k, &*v, &*o})
    for (Value x : {p->input, p->weight, p->bias})
      if (x && getElementTypeOrSelf(x.getType()) != elt)
        return why("the projections' element types differ from the "
                   "attention's");
  return LayerPlan{*q, *k, *v, *o, out};
}
