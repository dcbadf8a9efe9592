//===- LinalgBuilders.h - linalg building blocks of the lowerings -*- C++ -*-===//
//
// Internal to lib/Dialect/MHA/Transforms: small builders that the lowerings
// of the `mha` ops to linalg share.
//
//===----------------------------------------------------------------------===//

#ifndef MHA_LIB_DIALECT_MHA_TRANSFORMS_LINALGBUILDERS_H
#define MHA_LIB_DIALECT_MHA_TRANSFORMS_LINALGBUILDERS_H

#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Value.h"

namespace mlir::mha {

/// Converts a float scalar between widths (a no-op when the types agree).
Value convertFloat(OpBuilder &b, Location loc, Value v, Type to);

/// Builds `acc[out] += lhs[lhsMap] * rhs[rhsMap]` (maps in that order), the
/// last `numReductions` loops being reductions, accumulating in the element
/// type of `acc` whatever the element type of the inputs.
Value buildContraction(OpBuilder &b, Location loc, Value lhs, Value rhs,
                       Value acc, ArrayRef<AffineMap> maps,
                       unsigned numReductions);

/// Converts a tensor elementwise to `elementType` (a no-op when it has it).
Value convertTensor(OpBuilder &b, Location loc, Value acc, Type elementType);

/// A linalg.generic with one result, written into `init`.
Value buildGeneric(
    OpBuilder &b, Location loc, ValueRange inputs, Value init,
    ArrayRef<AffineMap> maps, ArrayRef<utils::IteratorType> iterators,
    function_ref<void(OpBuilder &, Location, ValueRange)> body);

/// How buildCombine merges an input element into the destination element.
enum class Combine { Max, Add, Mul };

/// `init[out] = combine(init[out], input[in])` over `iterators`: a row
/// reduction (max, sum) or an elementwise rescale, depending on the maps.
Value buildCombine(OpBuilder &b, Location loc, Value input, Value init,
                   ArrayRef<AffineMap> maps,
                   ArrayRef<utils::IteratorType> iterators, Combine combine);

/// An f32 tensor of `shape` filled with `value`.
Value buildFilled(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> shape,
                  double value);

} // namespace mlir::mha

#endif // MHA_LIB_DIALECT_MHA_TRANSFORMS_LINALGBUILDERS_H
