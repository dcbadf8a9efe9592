//===- RaiseAttention.cpp - Attention in linalg raised to mha.attention ---===//
//
// Frontends hand attention over as a contraction of queries and keys, a
// scale, a mask, a softmax and a contraction with the values, split into
// linalg ops in many ways: named or generic contractions, transposes as ops
// or as indexing maps, softmax as one op or as max/sub/exp/sum/div generics,
// fused or not, with reshapes of the batch dims in between. The matcher
// first turns each value on the way from the scores to the probabilities
// into a *term*: the expression it computes, with every elementwise linalg
// op inlined, so that fused and unfused forms compare equal. It then reads
// the attention off the terms and rewrites only when every piece is there.
//
//===----------------------------------------------------------------------===//

#include "mha/InputConversion/RaiseAttention.h"
#include "mha/Dialect/MHA/IR/MHADialect.h"
#include "mha/InputConversion/Passes.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <memory>

namespace mlir::mha {
#define GEN_PASS_DEF_MHARAISEATTENTIONPASS
#include "mha/InputConversion/Passes.h.inc"
} // namespace mlir::mha

using namespace mlir;

namespace {

//===----------------------------------------------------------------------===//
// Terms
//===----------------------------------------------------------------------===//

struct Term;
using TermRef = std::shared_ptr<const Term>;

/// What a value computes at each point of an iteration space (the "space":
/// the loops of the scores, [batch..., query, key]).
struct Term {
  enum class Kind {
    /// A tensor read at `map`, or a scalar SSA value (`map` null) that is
    /// not a constant: nothing more is known of it.
    Leaf,
    /// An op of a linalg body (arith/math) applied to `operands`.
    Op,
    /// A constant (`value`).
    Constant,
    /// The position along dim `dim` of the space (linalg.index).
    Index,
    /// A reduction over dim `dim` of the space: `op` is the combiner, the
    /// initial value is `value`, `operands[0]` the reduced term.
    Reduction,
    /// linalg.softmax over the last dim of `operands[0]`.
    Softmax,
    /// A reshape of the batch dims (`op`): `operands[0]` in the space of the
    /// reshape's source.
    Reshape,
  };
  Kind kind;
  /// The tensor that holds this term and the map from the space to its
  /// dims, when the term is a whole tensor (always for Leaf).
  Value tensor;
  AffineMap map;
  Operation *op = nullptr;
  SmallVector<TermRef> operands;
  TypedAttr value;
  unsigned dim = 0;
};

/// The functions terms are made of, whether a linalg body (arith, math) or
/// TOSA computes them.
enum class Fn { Add, Sub, Mul, Div, Exp, Max, Select, Reciprocal, Other };

static Fn fnOf(Operation *op) {
  if (!op)
    return Fn::Other;
  return TypeSwitch<Operation *, Fn>(op)
      .Case<arith::AddFOp, tosa::AddOp, tosa::ReduceSumOp>(
          [](auto) { return Fn::Add; })
      .Case<arith::SubFOp, tosa::SubOp>([](auto) { return Fn::Sub; })
      .Case<arith::MulFOp, tosa::MulOp>([](auto) { return Fn::Mul; })
      .Case<arith::DivFOp>([](auto) { return Fn::Div; })
      .Case<math::ExpOp, tosa::ExpOp>([](auto) { return Fn::Exp; })
      .Case<arith::MaxNumFOp, arith::MaximumFOp, tosa::MaximumOp,
            tosa::ReduceMaxOp>([](auto) { return Fn::Max; })
      .Case<arith::SelectOp, tosa::SelectOp>([](auto) { return Fn::Select; })
      .Case<tosa::ReciprocalOp>([](auto) { return Fn::Reciprocal; })
      .Default([](Operation *) { return Fn::Other; });
}

/// True if `t` is an op term computing `fn`.
static bool isFn(const TermRef &t, Fn fn);

static bool equalTerms(const TermRef &a, const TermRef &b) {
  if (a == b)
    return true;
  if (!a || !b || a->kind != b->kind)
    return false;
  switch (a->kind) {
  case Term::Kind::Leaf:
    return a->tensor == b->tensor && a->map == b->map;
  case Term::Kind::Constant:
    return a->value == b->value;
  case Term::Kind::Index:
    return a->dim == b->dim;
  case Term::Kind::Op: {
    if (a->op->getName() != b->op->getName() ||
        a->operands.size() != b->operands.size())
      return false;
    auto predicate = [](Operation *op) -> Attribute {
      return op->getAttr("predicate");
    };
    if (predicate(a->op) != predicate(b->op))
      return false;
    break;
  }
  case Term::Kind::Reduction:
    if (a->op->getName() != b->op->getName() || a->value != b->value ||
        a->dim != b->dim)
      return false;
    break;
  case Term::Kind::Softmax:
  case Term::Kind::Reshape:
    if (a->op != b->op)
      return false;
    break;
  }
  return llvm::all_of(llvm::zip_equal(a->operands, b->operands),
                      [](auto pair) {
                        return equalTerms(std::get<0>(pair),
                                          std::get<1>(pair));
                      });
}

/// The splat value of a constant-filled tensor or of a scalar constant.
static TypedAttr getConstantValue(Value v);

/// A scalar computed by pure arith/math ops from constants (e.g. a scale
/// `1 / sqrt(dk)` a frontend left unfolded), folded; null otherwise.
static TypedAttr foldScalar(Value v, unsigned depth = 0) {
  Operation *op = v.getDefiningOp();
  if (!op || isa<ShapedType>(v.getType()) || op->getNumResults() != 1 ||
      depth > 8 || !isPure(op) ||
      !isa<arith::ArithDialect, math::MathDialect>(op->getDialect()))
    return {};
  SmallVector<Attribute> operands;
  for (Value operand : op->getOperands()) {
    Attribute attr;
    if (!matchPattern(operand, m_Constant(&attr)))
      attr = foldScalar(operand, depth + 1);
    if (!attr)
      return {};
    operands.push_back(attr);
  }
  SmallVector<OpFoldResult> folded;
  if (failed(op->fold(operands, folded)) || folded.size() != 1)
    return {};
  return dyn_cast_if_present<TypedAttr>(dyn_cast<Attribute>(folded[0]));
}

static TypedAttr getConstantValue(Value v) {
  Attribute attr;
  if (matchPattern(v, m_Constant(&attr))) {
    if (auto splat = dyn_cast<SplatElementsAttr>(attr))
      return splat.getSplatValue<TypedAttr>();
    if (isa<ElementsAttr>(attr))
      return {};
    return dyn_cast<TypedAttr>(attr);
  }
  if (auto fill = v.getDefiningOp<linalg::FillOp>())
    return getConstantValue(fill.getInputs()[0]);
  return foldScalar(v);
}

static bool isFn(const TermRef &t, Fn fn) {
  return t && (t->kind == Term::Kind::Op || t->kind == Term::Kind::Reduction) &&
         fnOf(t->op) == fn;
}

static std::optional<double> getFloat(const TermRef &t) {
  if (!t || t->kind != Term::Kind::Constant)
    return std::nullopt;
  if (auto f = dyn_cast<FloatAttr>(t->value))
    return f.getValueAsDouble();
  return std::nullopt;
}

/// The single user of `v`, if it has one.
static Operation *singleUser(Value v) {
  return v.hasOneUse() ? *v.getUsers().begin() : nullptr;
}

/// True if `op` is a contraction the raise reads: a linalg contraction or
/// tosa.matmul.
static bool isContraction(Operation *op) {
  if (isa_and_nonnull<tosa::MatMulOp>(op))
    return true;
  auto linalgOp = dyn_cast_or_null<linalg::LinalgOp>(op);
  return linalgOp && linalg::isaContractionOpInterface(linalgOp);
}

/// True if `op` reshapes only the batch dims (all but the last two).
static bool isBatchReshape(Operation *op) {
  if (auto reshape = dyn_cast_or_null<tosa::ReshapeOp>(op)) {
    auto in = cast<RankedTensorType>(reshape.getInput1().getType());
    auto out = cast<RankedTensorType>(reshape.getType());
    return in.hasStaticShape() && out.hasStaticShape() && in.getRank() >= 2 &&
           out.getRank() >= 2 &&
           in.getShape().take_back(2) == out.getShape().take_back(2);
  }
  SmallVector<ReassociationIndices> groups;
  if (auto c = dyn_cast_or_null<tensor::CollapseShapeOp>(op))
    groups = c.getReassociationIndices();
  else if (auto e = dyn_cast_or_null<tensor::ExpandShapeOp>(op))
    groups = e.getReassociationIndices();
  else
    return false;
  return groups.size() >= 2 && groups.back().size() == 1 &&
         groups[groups.size() - 2].size() == 1;
}

/// Builds the terms of values, reading through their producers.
class TermBuilder {
public:
  /// Reads through at most `maxDepth` producers; deeper values are leaves.
  explicit TermBuilder(unsigned maxDepth = 64) : maxDepth(maxDepth) {}
  /// The term of `tensor` read at `map` (from the space to its dims).
  TermRef ofTensor(Value tensor, AffineMap map);

private:
  TermRef ofScalar(Value v);
  TermRef ofBody(linalg::LinalgOp op, Value v, AffineMap loops);
  TermRef ofLinalgOp(linalg::LinalgOp op, Value tensor, AffineMap map);
  TermRef ofTosaOp(Operation *op, Value tensor, AffineMap map);
  /// The map from the space to the loops of `op`, whose result `op`'s init
  /// maps by `outMap` is read at `map`; a reduction loop goes to the one dim
  /// of the space that `map` does not read (`reducedDim`).
  FailureOr<AffineMap> loopsInSpace(linalg::LinalgOp op, AffineMap outMap,
                                    AffineMap map, unsigned &reducedDim);
  unsigned depth = 0, maxDepth;
};

static TermRef makeLeaf(Value tensor, AffineMap map) {
  auto t = std::make_shared<Term>();
  t->kind = Term::Kind::Leaf;
  t->tensor = tensor;
  t->map = map;
  return t;
}

/// A term of `kind` for the whole of `tensor` read at `map`, made by `op`
/// from `operand`.
static TermRef makeWhole(Term::Kind kind, Operation *op, Value tensor,
                         AffineMap map, TermRef operand) {
  auto t = std::make_shared<Term>();
  t->kind = kind;
  t->op = op;
  t->tensor = tensor;
  t->map = map;
  t->operands.push_back(std::move(operand));
  return t;
}

/// An op term: `op` applied to `operands`, for `tensor` read at `map` (none
/// for scalars in a body).
static TermRef makeOp(Operation *op, Value tensor, AffineMap map,
                      SmallVector<TermRef> operands) {
  auto t = std::make_shared<Term>();
  t->kind = Term::Kind::Op;
  t->op = op;
  t->tensor = tensor;
  t->map = map;
  t->operands = std::move(operands);
  return t;
}

/// A reduction term: `combiner` folding `operand` along the space dim `dim`
/// from `init`, for `tensor` read at `map`.
static TermRef makeReduction(Operation *combiner, Value tensor, AffineMap map,
                             TermRef operand, TypedAttr init, unsigned dim) {
  auto t = std::make_shared<Term>();
  t->kind = Term::Kind::Reduction;
  t->op = combiner;
  t->tensor = tensor;
  t->map = map;
  t->operands.push_back(std::move(operand));
  t->value = init;
  t->dim = dim;
  return t;
}

/// The one dim of the space that `map` does not read (a reduced dim), if
/// there is exactly one.
static std::optional<unsigned> unreadDim(AffineMap map) {
  llvm::SmallBitVector used(map.getNumDims());
  for (AffineExpr e : map.getResults())
    e.walk([&](AffineExpr sub) {
      if (auto d = dyn_cast<AffineDimExpr>(sub))
        used.set(d.getPosition());
    });
  if (used.count() + 1 != map.getNumDims())
    return std::nullopt;
  return used.find_first_unset();
}

static TermRef makeConstant(TypedAttr value) {
  auto t = std::make_shared<Term>();
  t->kind = Term::Kind::Constant;
  t->value = value;
  return t;
}

TermRef TermBuilder::ofScalar(Value v) {
  if (TypedAttr value = getConstantValue(v))
    return makeConstant(value);
  return makeLeaf(v, AffineMap());
}

TermRef TermBuilder::ofTensor(Value tensor, AffineMap map) {
  if (TypedAttr value = getConstantValue(tensor))
    return makeConstant(value);
  if (++depth > maxDepth) {
    --depth;
    return makeLeaf(tensor, map);
  }
  auto done = llvm::scope_exit([&] { --depth; });
  Operation *def = tensor.getDefiningOp();
  auto type = cast<RankedTensorType>(tensor.getType());
  int64_t rank = type.getRank();

  if (auto softmax = dyn_cast_or_null<linalg::SoftmaxOp>(def)) {
    if (!map.isIdentity() ||
        softmax.getDimension() != static_cast<uint64_t>(rank - 1) ||
        !softmax.hasPureTensorSemantics())
      return makeLeaf(tensor, map);
    return makeWhole(Term::Kind::Softmax, softmax, tensor, map,
                     ofTensor(softmax.getInput(), map));
  }

  // Reshapes: of the batch dims (the last two dims kept), or that only add
  // or drop unit dims read as constants (keepdim reductions).
  if (isa_and_nonnull<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(def)) {
    Value source = def->getOperand(0);
    auto sourceType = cast<RankedTensorType>(source.getType());
    SmallVector<ReassociationIndices> groups =
        isa<tensor::ExpandShapeOp>(def)
            ? cast<tensor::ExpandShapeOp>(def).getReassociationIndices()
            : cast<tensor::CollapseShapeOp>(def).getReassociationIndices();
    if (isa<tensor::ExpandShapeOp>(def) && !map.isIdentity()) {
      // Each group: one source dim, the others unit dims read at 0.
      SmallVector<AffineExpr> results;
      for (const ReassociationIndices &group : groups) {
        SmallVector<int64_t> kept;
        for (int64_t d : group)
          if (type.getDimSize(d) != 1 ||
              !isa<AffineConstantExpr>(map.getResult(d)))
            kept.push_back(d);
        if (kept.size() > 1)
          return makeLeaf(tensor, map);
        results.push_back(kept.empty()
                              ? getAffineConstantExpr(0, map.getContext())
                              : map.getResult(kept.front()));
      }
      return ofTensor(source, AffineMap::get(map.getNumDims(), 0, results,
                                             map.getContext()));
    }
    if (!map.isIdentity() || !isBatchReshape(def))
      return makeLeaf(tensor, map);
    return makeWhole(
        Term::Kind::Reshape, def, tensor, map,
        ofTensor(source, AffineMap::getMultiDimIdentityMap(
                             sourceType.getRank(), map.getContext())));
  }

  // arith/math applied to whole tensors (elementwise-mappable ops).
  if (def && def->hasTrait<OpTrait::Elementwise>() &&
      def->getNumResults() == 1 &&
      isa<arith::ArithDialect, math::MathDialect>(def->getDialect()) &&
      llvm::all_of(def->getOperandTypes(),
                   [&](Type t) { return t == def->getResult(0).getType() ||
                                        (isa<RankedTensorType>(t) &&
                                         cast<RankedTensorType>(t).getShape() ==
                                             type.getShape()); })) {
    SmallVector<TermRef> operands;
    for (Value operand : def->getOperands())
      operands.push_back(ofTensor(operand, map));
    return makeOp(def, tensor, map, std::move(operands));
  }
  if (def && isa<tosa::TosaDialect>(def->getDialect()) && !isContraction(def)) {
    TermRef t = ofTosaOp(def, tensor, map);
    return t ? t : makeLeaf(tensor, map);
  }
  auto linalgOp = dyn_cast_or_null<linalg::LinalgOp>(def);
  if (!linalgOp || !linalgOp.hasPureTensorSemantics() ||
      linalg::isaContractionOpInterface(linalgOp))
    return makeLeaf(tensor, map);
  TermRef t = ofLinalgOp(linalgOp, tensor, map);
  return t ? t : makeLeaf(tensor, map);
}

FailureOr<AffineMap> TermBuilder::loopsInSpace(linalg::LinalgOp op,
                                               AffineMap outMap,
                                               AffineMap map,
                                               unsigned &reducedDim) {
  unsigned numLoops = op.getNumLoops();
  SmallVector<AffineExpr> loops(numLoops);
  for (auto [i, expr] : llvm::enumerate(outMap.getResults())) {
    if (auto d = dyn_cast<AffineDimExpr>(expr))
      loops[d.getPosition()] = map.getResult(i);
    else if (!isa<AffineConstantExpr>(expr))
      return failure();
  }
  std::optional<unsigned> unread = unreadDim(map);
  unsigned missing = 0;
  for (AffineExpr &e : loops) {
    if (e)
      continue;
    // One reduction loop: the one dim of the space the result is not read
    // along.
    if (++missing > 1 || !unread)
      return failure();
    reducedDim = *unread;
    e = getAffineDimExpr(reducedDim, map.getContext());
  }
  return AffineMap::get(map.getNumDims(), 0, loops, map.getContext());
}

TermRef TermBuilder::ofLinalgOp(linalg::LinalgOp op, Value tensor,
                                AffineMap map) {
  // The result `tensor` is, its init and the value yielded for it; other
  // results (the index of torch-mlir's max, an argmax) are not read.
  unsigned resultNumber = cast<OpResult>(tensor).getResultNumber();
  OpOperand *init = op.getDpsInitOperand(resultNumber);
  AffineMap outMap = op.getMatchingIndexingMap(init);
  unsigned numReductions = op.getNumReductionLoops();
  if (numReductions > 1 || outMap.getNumResults() != map.getNumResults())
    return nullptr;
  unsigned reducedDim = 0;
  FailureOr<AffineMap> loops = loopsInSpace(op, outMap, map, reducedDim);
  if (failed(loops))
    return nullptr;
  Block *body = op.getBlock();
  Value yielded = body->getTerminator()->getOperand(resultNumber);
  BlockArgument initArg = op.getMatchingBlockArgument(init);

  // (A body that reads an init gives no term: ofBody fails on it.)
  if (numReductions == 0) {
    auto t = std::const_pointer_cast<Term>(ofBody(op, yielded, *loops));
    if (!t)
      return nullptr;
    if (t->kind == Term::Kind::Leaf || t->kind == Term::Kind::Constant)
      return t;
    auto copy = std::make_shared<Term>(*t);
    copy->tensor = tensor;
    copy->map = map;
    return copy;
  }

  // A reduction: yield combiner(x, acc), x not reading any accumulator
  // (other uses of acc, such as an argmax's comparison, feed other
  // results).
  Operation *combiner = yielded.getDefiningOp();
  if (!combiner || combiner->getBlock() != body)
    return nullptr;
  Value reduced;
  if (isa<arith::AddFOp, arith::MaxNumFOp, arith::MaximumFOp>(combiner)) {
    if (combiner->getOperand(0) == initArg)
      reduced = combiner->getOperand(1);
    else if (combiner->getOperand(1) == initArg)
      reduced = combiner->getOperand(0);
  } else if (auto select = dyn_cast<arith::SelectOp>(combiner)) {
    // max as select(x > acc, x, acc).
    auto cmp = select.getCondition().getDefiningOp<arith::CmpFOp>();
    if (cmp && select.getFalseValue() == initArg &&
        cmp.getRhs() == initArg && cmp.getLhs() == select.getTrueValue() &&
        llvm::is_contained({arith::CmpFPredicate::OGT,
                            arith::CmpFPredicate::OGE,
                            arith::CmpFPredicate::UGT,
                            arith::CmpFPredicate::UGE},
                           cmp.getPredicate()))
      reduced = select.getTrueValue();
  }
  TypedAttr initValue = getConstantValue(init->get());
  if (!reduced || !initValue)
    return nullptr;
  TermRef operand = ofBody(op, reduced, *loops);
  if (!operand)
    return nullptr;
  return makeReduction(combiner, tensor, map, operand, initValue, reducedDim);
}

TermRef TermBuilder::ofTosaOp(Operation *op, Value tensor, AffineMap map) {
  MLIRContext *ctx = map.getContext();
  auto type = cast<RankedTensorType>(tensor.getType());
  int64_t rank = type.getRank();
  if (isBatchReshape(op) && map.isIdentity()) {
    Value source = op->getOperand(0);
    return makeWhole(
        Term::Kind::Reshape, op, tensor, map,
        ofTensor(source, AffineMap::getMultiDimIdentityMap(
                             cast<RankedTensorType>(source.getType()).getRank(),
                             ctx)));
  }
  if (auto transpose = dyn_cast<tosa::TransposeOp>(op)) {
    // output[i] = input[perms[i]].
    SmallVector<AffineExpr> results(rank);
    for (auto [i, p] : llvm::enumerate(transpose.getPerms()))
      results[p] = getAffineDimExpr(i, ctx);
    return ofTensor(transpose.getInput1(),
                    AffineMap::get(rank, 0, results, ctx).compose(map));
  }
  if (isa<tosa::ReduceMaxOp, tosa::ReduceSumOp>(op)) {
    // Kept as a unit dim read at 0; the space dim the result is not read
    // along is the one reduced.
    int64_t axis = op->getAttrOfType<IntegerAttr>("axis").getInt();
    if (!isa<AffineConstantExpr>(map.getResult(axis)))
      return nullptr;
    std::optional<unsigned> reduced = unreadDim(map);
    if (!reduced)
      return nullptr;
    SmallVector<AffineExpr> results(map.getResults());
    results[axis] = getAffineDimExpr(*reduced, ctx);
    TermRef operand = ofTensor(
        op->getOperand(0), AffineMap::get(map.getNumDims(), 0, results, ctx));
    auto elt = cast<FloatType>(type.getElementType());
    auto init = FloatAttr::get(
        elt, isa<tosa::ReduceSumOp>(op)
                 ? APFloat::getZero(elt.getFloatSemantics())
                 : APFloat::getInf(elt.getFloatSemantics(), /*Negative=*/true));
    return makeReduction(op, tensor, map, operand, init, *reduced);
  }
  // Elementwise ops: operands of the result's rank, size-1 dims broadcast.
  SmallVector<Value> data;
  if (isa<tosa::AddOp, tosa::SubOp, tosa::MaximumOp>(op))
    data = {op->getOperand(0), op->getOperand(1)};
  else if (auto mul = dyn_cast<tosa::MulOp>(op)) {
    TypedAttr shift = getConstantValue(mul.getShift());
    auto shiftInt = dyn_cast_or_null<IntegerAttr>(shift);
    if (!shiftInt || shiftInt.getInt() != 0)
      return nullptr;
    data = {mul.getInput1(), mul.getInput2()};
  } else if (isa<tosa::ExpOp, tosa::ReciprocalOp>(op))
    data = {op->getOperand(0)};
  else if (isa<tosa::SelectOp>(op))
    data = llvm::to_vector(op->getOperands());
  else
    return nullptr;
  SmallVector<TermRef> operands;
  for (Value operand : data) {
    auto operandType = cast<RankedTensorType>(operand.getType());
    if (operandType.getRank() != rank)
      return nullptr;
    SmallVector<AffineExpr> results;
    for (int64_t d = 0; d < rank; ++d)
      results.push_back(operandType.getDimSize(d) == 1 &&
                                type.getDimSize(d) != 1
                            ? getAffineConstantExpr(0, ctx)
                            : getAffineDimExpr(d, ctx));
    operands.push_back(
        ofTensor(operand, AffineMap::get(rank, 0, results, ctx).compose(map)));
  }
  return makeOp(op, tensor, map, std::move(operands));
}

TermRef TermBuilder::ofBody(linalg::LinalgOp op, Value v, AffineMap loops) {
  Block *body = op.getBlock();
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    if (arg.getOwner() != body)
      return ofScalar(v);
    OpOperand &operand = op->getOpOperand(arg.getArgNumber());
    if (op.isDpsInit(&operand))
      return nullptr;
    if (!isa<RankedTensorType>(operand.get().getType()))
      return ofScalar(operand.get());
    return ofTensor(operand.get(),
                    op.getMatchingIndexingMap(&operand).compose(loops));
  }
  Operation *def = v.getDefiningOp();
  if (def->getBlock() != body)
    return ofScalar(v);
  if (auto index = dyn_cast<linalg::IndexOp>(def)) {
    AffineExpr e = loops.getResult(index.getDim());
    auto t = std::make_shared<Term>();
    if (auto d = dyn_cast<AffineDimExpr>(e)) {
      t->kind = Term::Kind::Index;
      t->dim = d.getPosition();
      return t;
    }
    if (auto c = dyn_cast<AffineConstantExpr>(e))
      return makeConstant(
          IntegerAttr::get(IndexType::get(v.getContext()), c.getValue()));
    return nullptr;
  }
  if (auto constant = dyn_cast<arith::ConstantOp>(def))
    return makeConstant(constant.getValue());
  if (def->getNumResults() != 1 || def->getNumRegions() != 0)
    return nullptr;
  SmallVector<TermRef> operands;
  for (Value operand : def->getOperands()) {
    TermRef sub = ofBody(op, operand, loops);
    if (!sub)
      return nullptr;
    operands.push_back(sub);
  }
  return makeOp(def, Value(), AffineMap(), std::move(operands));
}

//===----------------------------------------------------------------------===//
// The match
//===----------------------------------------------------------------------===//

/// A mask found on the scores: a tensor read at `map` from a space of rank
/// `rank`; `negate` for a boolean that is true where the query may not
/// attend.
struct MaskUse {
  Value tensor;
  AffineMap map;
  /// A boolean predicate of one tensor computed in the body: materialized
  /// by a new generic before the rewrite.
  TermRef predicate;
  bool negate = false;
  /// The static shape of the scores where the mask is applied (dynamic
  /// where unknown).
  SmallVector<int64_t> spaceShape;
};

/// Causal visibility `key <= query + offset`, with the offset a constant
/// plus SSA index values.
struct CausalUse {
  int64_t constant = 0;
  SmallVector<std::pair<Value, int64_t>> values;
};

struct AttentionMatch {
  Operation *qk = nullptr, *pv = nullptr;
  /// Q [batch..., Sq, dk], K [batch..., Sk, dk] (or [batch..., dk, Sk] with
  /// `keyTransposed`), V [batch..., Sk, dv] at the ranks of their
  /// contractions.
  Value query, key, value;
  bool keyTransposed = false;
  double scale = 1.0;
  std::optional<MaskUse> mask;
  std::optional<CausalUse> causal;
};

/// Failure with a reason, for notifyMatchFailure and transform diagnostics.
struct Why {
  std::string text;
  LogicalResult operator()(const Twine &reason) {
    note(reason);
    return failure();
  }
  void note(const Twine &reason) { text = reason.str(); }
};

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
struct Contraction {
  Value lhs, rhs;
  bool lhsReducedLast, rhsReducedLast;
  unsigned numBatch;
};

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
struct Linear {
  int64_t query = 0, key = 0, constant = 0;
  SmallVector<std::pair<Value, int64_t>> values;
};

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
// The rewrite
//===----------------------------------------------------------------------===//

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
  AttentionMatcher matcher(why);
  FailureOr<AttentionMatch> m = matcher.match(op);
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

namespace {

/// `out = input · weight (+ bias)` over the last dim of `input`.
struct Projection {
  /// [B, S, Ein].
  Value input;
  /// As the contraction reads it: [Ein, Eout], or [Eout, Ein] with
  /// `weightOutIn`.
  Value weight;
  bool weightOutIn = false;
  /// [Eout] or null.
  Value bias;
  /// The ops whose results end in `out`, for the dead-op cleanup.
  Operation *contraction = nullptr;
};

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

} // namespace

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

namespace {

struct RaiseAttentionPattern final : RewritePattern {
  explicit RaiseAttentionPattern(MLIRContext *context)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, context) {}
  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    if (!isContraction(op))
      return rewriter.notifyMatchFailure(op, "not a contraction");
    std::string reason;
    if (failed(mha::raiseAttention(rewriter, op, &reason)))
      return rewriter.notifyMatchFailure(op, reason);
    return success();
  }
};

struct MHARaiseAttentionPass final
    : mha::impl::MHARaiseAttentionPassBase<MHARaiseAttentionPass> {
  using Base::Base;
  void runOnOperation() override {
    // One raise at a time: a raise erases other contractions (Q·Kᵀ), so the
    // walk starts over after each. Nothing else is touched.
    IRRewriter rewriter(&getContext());
    auto raiseOne = [&]() {
      WalkResult walk = getOperation()->walk([&](Operation *op) {
        if (isContraction(op) && succeeded(mha::raiseAttention(rewriter, op)))
          return WalkResult::interrupt();
        return WalkResult::advance();
      });
      return walk.wasInterrupted();
    };
    while (raiseOne()) {
    }
    if (layers) {
      SmallVector<mha::AttentionOp> cores;
      getOperation()->walk([&](mha::AttentionOp op) { cores.push_back(op); });
      for (mha::AttentionOp core : cores) {
        std::string reason;
        if (failed(mha::raiseMultiHeadAttention(rewriter, core, &reason)) &&
            explain)
          core->emitRemark()
              << "not raised to mha.multi_head_attention: " << reason;
      }
    }
    if (!explain)
      return;
    // The contractions left, with the reason (matching changes nothing).
    getOperation()->walk([&](Operation *op) {
      std::string reason;
      if (!isContraction(op) ||
          succeeded(mha::raiseAttention(rewriter, op, &reason)))
        return;
      op->emitRemark() << "not raised to mha.attention: " << reason;
    });
  }
};

} // namespace

void mha::populateRaiseAttentionPatterns(RewritePatternSet &patterns) {
  patterns.add<RaiseAttentionPattern>(patterns.getContext());
}
