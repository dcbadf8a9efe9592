//===- LinalgBuilders.cpp - linalg building blocks of the lowerings -------===//
//
// Small builders shared by the decompositions of the `mha` ops into linalg.
//
//===----------------------------------------------------------------------===//

#include "mha/Dialect/MHA/Utils/LinalgBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::mha;
using utils::IteratorType;

/// Float-to-float conversion of a scalar (extf/truncf; no-op on equal types).
static Value convertScalar(OpBuilder &b, Location loc, Value v, Type to) {
  return convertScalarToDtype(b, loc, v, to, /*isUnsignedCast=*/false);
}

Value mha::buildContraction(OpBuilder &b, Location loc, Value lhs, Value rhs,
                            Value acc, ArrayRef<AffineMap> maps) {
  AffineMap out = maps.back();
  SmallVector<IteratorType> iterators;
  for (unsigned d = 0, e = out.getNumDims(); d < e; ++d)
    iterators.push_back(out.isFunctionOfDim(d) ? IteratorType::parallel
                                               : IteratorType::reduction);
  return buildGeneric(b, loc, ValueRange{lhs, rhs}, acc, maps, iterators,
                      [](OpBuilder &nb, Location nloc, ValueRange args) {
                        Type accType = args[2].getType();
                        Value l = convertScalar(nb, nloc, args[0], accType);
                        Value r = convertScalar(nb, nloc, args[1], accType);
                        Value mul = arith::MulFOp::create(nb, nloc, l, r);
                        linalg::YieldOp::create(
                            nb, nloc,
                            Value(arith::AddFOp::create(nb, nloc, args[2], mul)));
                      });
}

Value mha::convertTensor(OpBuilder &b, Location loc, Value tensor,
                         Type elementType) {
  auto type = cast<RankedTensorType>(tensor.getType());
  if (type.getElementType() == elementType)
    return tensor;
  unsigned rank = type.getRank();
  return buildAccumulatorInit(b, loc, tensor::getMixedSizes(b, loc, tensor),
                              elementType, tensor,
                              b.getMultiDimIdentityMap(rank));
}

Value mha::buildGeneric(
    OpBuilder &b, Location loc, ValueRange inputs, Value init,
    ArrayRef<AffineMap> maps, ArrayRef<IteratorType> iterators,
    function_ref<void(OpBuilder &, Location, ValueRange)> body) {
  return linalg::GenericOp::create(b, loc, init.getType(), inputs,
                                   ValueRange{init}, maps, iterators, body)
      .getResult(0);
}

Value mha::buildIdentityFill(OpBuilder &b, Location loc,
                             ArrayRef<OpFoldResult> shape, Combine combine,
                             Type elementType) {
  Type type = elementType ? elementType : b.getF32Type();
  arith::AtomicRMWKind kind = combine == Combine::Max ? arith::AtomicRMWKind::maximumf
                              : combine == Combine::Add ? arith::AtomicRMWKind::addf
                                                        : arith::AtomicRMWKind::mulf;
  Value identity = arith::getIdentityValue(kind, type, b, loc);
  Value empty = tensor::EmptyOp::create(b, loc, shape, type);
  return linalg::FillOp::create(b, loc, identity, empty).getResult(0);
}

Value mha::buildAccumulatorInit(OpBuilder &b, Location loc,
                                ArrayRef<OpFoldResult> shape, Type elementType,
                                Value source, AffineMap sourceMap) {
  if (!source)
    return buildIdentityFill(b, loc, shape, Combine::Add, elementType);
  Value empty = tensor::EmptyOp::create(b, loc, shape, elementType);
  unsigned rank = shape.size();
  return buildGeneric(
      b, loc, source, empty, {sourceMap, b.getMultiDimIdentityMap(rank)},
      SmallVector<IteratorType>(rank, IteratorType::parallel),
      [](OpBuilder &nb, Location nloc, ValueRange args) {
        linalg::YieldOp::create(
            nb, nloc, convertScalar(nb, nloc, args[0], args[1].getType()));
      });
}

Value mha::buildCombine(OpBuilder &b, Location loc, Value input, Value init,
                        ArrayRef<AffineMap> maps,
                        ArrayRef<IteratorType> iterators, Combine combine) {
  return buildGeneric(
      b, loc, input, init, maps, iterators,
      [combine](OpBuilder &nb, Location nloc, ValueRange args) {
        Value in = args[0], out = args[1], result;
        switch (combine) {
        case Combine::Max:
          // maxnum (NaN-ignoring): its vector reductions are trees of
          // vmaxps, where NaN-propagating maximum reductions are scalar
          // code. NaN still reaches the result, through exp and the sums.
          result = arith::MaxNumFOp::create(nb, nloc, out, in);
          break;
        case Combine::Add:
          result = arith::AddFOp::create(nb, nloc, out, in);
          break;
        case Combine::Mul:
          result = arith::MulFOp::create(nb, nloc, out, in);
          break;
        }
        linalg::YieldOp::create(nb, nloc, result);
      });
}
