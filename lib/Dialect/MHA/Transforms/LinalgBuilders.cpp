//===- LinalgBuilders.cpp - linalg building blocks of the lowerings -------===//
//
// Small builders shared by the lowerings of the `mha` ops to linalg.
//
//===----------------------------------------------------------------------===//

#include "LinalgBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::mha;
using utils::IteratorType;

/// Converts a float scalar between widths (a no-op when the types agree).
Value mha::convertFloat(OpBuilder &b, Location loc, Value v, Type to) {
  Type from = v.getType();
  if (from == to)
    return v;
  if (from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth())
    return arith::ExtFOp::create(b, loc, to, v);
  return arith::TruncFOp::create(b, loc, to, v);
}

/// Builds `acc[out] += lhs[lhsMap] * rhs[rhsMap]` over `numLoops` loops, the
/// last `numReductions` of which are reductions, accumulating in the element
/// type of `acc` (f32) whatever the element type of the inputs.
Value mha::buildContraction(OpBuilder &b, Location loc, Value lhs, Value rhs,
                       Value acc, ArrayRef<AffineMap> maps,
                       unsigned numReductions) {
  unsigned numLoops = maps.front().getNumDims();
  SmallVector<IteratorType> iterators(numLoops - numReductions,
                                      IteratorType::parallel);
  iterators.append(numReductions, IteratorType::reduction);
  auto generic = linalg::GenericOp::create(
      b, loc, acc.getType(), ValueRange{lhs, rhs}, ValueRange{acc}, maps,
      iterators, [](OpBuilder &nb, Location nloc, ValueRange args) {
        Type accType = args[2].getType();
        Value l = convertFloat(nb, nloc, args[0], accType);
        Value r = convertFloat(nb, nloc, args[1], accType);
        Value mul = arith::MulFOp::create(nb, nloc, l, r);
        Value sum = arith::AddFOp::create(nb, nloc, args[2], mul);
        linalg::YieldOp::create(nb, nloc, sum);
      });
  return generic.getResult(0);
}

/// Converts an f32 accumulator to `elementType` (a no-op for f32).
Value mha::convertTensor(OpBuilder &b, Location loc, Value acc, Type elementType) {
  auto accType = cast<RankedTensorType>(acc.getType());
  if (accType.getElementType() == elementType)
    return acc;
  SmallVector<OpFoldResult> shape = tensor::getMixedSizes(b, loc, acc);
  Value empty = tensor::EmptyOp::create(b, loc, shape, elementType);
  unsigned rank = accType.getRank();
  AffineMap id = b.getMultiDimIdentityMap(rank);
  auto generic = linalg::GenericOp::create(
      b, loc, empty.getType(), ValueRange{acc}, ValueRange{empty},
      ArrayRef<AffineMap>{id, id},
      SmallVector<IteratorType>(rank, IteratorType::parallel),
      [](OpBuilder &nb, Location nloc, ValueRange args) {
        linalg::YieldOp::create(
            nb, nloc, convertFloat(nb, nloc, args[0], args[1].getType()));
      });
  return generic.getResult(0);
}


Value mha::buildGeneric(
    OpBuilder &b, Location loc, ValueRange inputs, Value init,
    ArrayRef<AffineMap> maps, ArrayRef<IteratorType> iterators,
    function_ref<void(OpBuilder &, Location, ValueRange)> body) {
  return linalg::GenericOp::create(b, loc, init.getType(), inputs,
                                   ValueRange{init}, maps, iterators, body)
      .getResult(0);
}

Value mha::buildFilled(OpBuilder &b, Location loc,
                       ArrayRef<OpFoldResult> shape, double value) {
  Type f32 = b.getF32Type();
  Value empty = tensor::EmptyOp::create(b, loc, shape, f32);
  Value cst = arith::ConstantOp::create(b, loc, b.getFloatAttr(f32, value));
  return linalg::FillOp::create(b, loc, cst, empty).getResult(0);
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
          result = arith::MaximumFOp::create(nb, nloc, out, in);
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
