//===- Terms.cpp - The expressions values compute, for the raise ---------===//
//
// Terms (see Terms.h): the expression each value computes, read through
// linalg bodies, TOSA elementwise ops and reshapes of the batch dims.
//
//===----------------------------------------------------------------------===//

#include "Terms.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::mha;
using namespace mlir::mha::raise;

Fn raise::fnOf(Operation *op) {
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

bool raise::equalTerms(const TermRef &a, const TermRef &b) {
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

TypedAttr raise::getConstantValue(Value v) {
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

bool raise::isFn(const TermRef &t, Fn fn) {
  return t && (t->kind == Term::Kind::Op || t->kind == Term::Kind::Reduction) &&
         fnOf(t->op) == fn;
}

std::optional<double> raise::getFloat(const TermRef &t) {
  if (!t || t->kind != Term::Kind::Constant)
    return std::nullopt;
  if (auto f = dyn_cast<FloatAttr>(t->value))
    return f.getValueAsDouble();
  return std::nullopt;
}

Operation *raise::singleUser(Value v) {
  return v.hasOneUse() ? *v.getUsers().begin() : nullptr;
}

bool raise::isContraction(Operation *op) {
  if (isa_and_nonnull<tosa::MatMulOp>(op))
    return true;
  auto linalgOp = dyn_cast_or_null<linalg::LinalgOp>(op);
  return linalgOp && linalg::isaContractionOpInterface(linalgOp);
}

bool raise::isBatchReshape(Operation *op) {
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
