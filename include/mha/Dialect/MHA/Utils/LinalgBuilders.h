//===- LinalgBuilders.h - linalg building blocks of the lowerings -*- C++ -*-===//
//
// Small builders that the decompositions of the `mha` ops into linalg share:
// contractions that accumulate in f32, row reductions and rescales, fills
// with the identity of a reduction, and element type conversions.
//
//===----------------------------------------------------------------------===//

#ifndef MHA_DIALECT_MHA_UTILS_LINALGBUILDERS_H
#define MHA_DIALECT_MHA_UTILS_LINALGBUILDERS_H

#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Value.h"

namespace mlir::mha {

/// Builds `acc[out] += lhs[lhsMap] * rhs[rhsMap]` (maps in that order),
/// accumulating in the element type of `acc` whatever the element type of the
/// inputs. The loops the output map does not use are the reductions, in
/// whatever position the maps put them: the loop order is the order of the
/// scalar loops linalg-to-loops makes, so a contraction whose innermost loop
/// is parallel and walks both `rhs` and `acc` contiguously is one that LLVM
/// vectorizes.
Value buildContraction(OpBuilder &b, Location loc, Value lhs, Value rhs,
                       Value acc, ArrayRef<AffineMap> maps);

/// Converts a tensor elementwise to `elementType` (a no-op when it has it).
Value convertTensor(OpBuilder &b, Location loc, Value tensor, Type elementType);

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

/// A tensor of `shape` (f32 unless `elementType` is given) filled with the
/// identity of `combine` (-inf for Max, 0 for Add, 1 for Mul): the start of a
/// reduction with it.
Value buildIdentityFill(OpBuilder &b, Location loc,
                        ArrayRef<OpFoldResult> shape, Combine combine,
                        Type elementType = {});

/// A tensor of `shape` and `elementType` initialized with `source` read
/// through `sourceMap` (a broadcast, converted to `elementType`), or with
/// zeros when `source` is null. Starting an accumulator from the bias folds
/// the bias add into the contraction that accumulates into it.
Value buildAccumulatorInit(OpBuilder &b, Location loc,
                           ArrayRef<OpFoldResult> shape, Type elementType,
                           Value source, AffineMap sourceMap);

} // namespace mlir::mha

#endif // MHA_DIALECT_MHA_UTILS_LINALGBUILDERS_H
