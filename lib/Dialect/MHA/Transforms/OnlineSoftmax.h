//===- OnlineSoftmax.h - FlashAttention-2 inner loop -----------*- C++ -*-===//
//
// Internal to lib/Dialect/MHA/Transforms: the online-softmax loop over key /
// value tiles for one tile of queries of one head, shared by the tiled
// lowering of mha.attention and by the fused lowering of the whole layer.
//
//===----------------------------------------------------------------------===//

#ifndef MHA_LIB_DIALECT_MHA_TRANSFORMS_ONLINESOFTMAX_H
#define MHA_LIB_DIALECT_MHA_TRANSFORMS_ONLINESOFTMAX_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Value.h"

namespace mlir::mha {

/// How the scores of one query tile are masked. All indices are local to the
/// query tile (row i) and absolute along the keys (column j).
struct ScoreMask {
  /// The attention's mask, already sliced to the query tile: [qt, Sk],
  /// [1, qt, Sk] or [1|1, 1|1, qt|1, Sk|1]; null without a mask. Size-1 dims
  /// (static, or dynamic and 1 at run time) broadcast.
  Value mask;
  /// Query row i sees key j iff j <= i + causalOffset; null when not causal.
  Value causalOffset;
};

// Scalar pieces shared with the reference lowering (AttentionToLinalg.cpp),
// so that every lowering computes the same thing.

/// `x * scale`, then the float mask added or the bool mask / causal
/// predicate as -inf. `maskValue` may be null; `visible` may be null.
Value buildLogit(OpBuilder &b, Location loc, Value score, double scale,
                 Value maskValue, Value visible);

/// exp(x - rowMax), or 0 when rowMax is -inf (the row sees no key).
Value buildSafeExp(OpBuilder &b, Location loc, Value x, Value rowMax);

/// acc / l, or 0 where l = 0 (the row saw no key), converted to `resultType`.
Value buildNormalize(OpBuilder &b, Location loc, Value acc, Value l,
                     Type resultType);

/// Reads the mask element for the score at `scoreIndices` = (batch, head,
/// query, key): rank 2 masks are [Sq, Sk], rank 3 [B, Sq, Sk], rank 4
/// [B|1, H|1, Sq|1, Sk|1], reading index 0 along size-1 dims (static, or
/// dynamic and 1 at run time).
Value readMaskElement(OpBuilder &b, Location loc, Value mask,
                      ArrayRef<Value> scoreIndices);

/// FlashAttention-2 for one query tile: `query [qt, dk]`, `key [Sk, dk]`,
/// `value [Sk, dv]` and `dest [qt, dv]`, each possibly with the same number of
/// leading unit dims (any float element type). Keeps the running maximum m,
/// sum l and accumulator in f32, visits key tiles of `kvTileSize` (with a
/// causal mask, only up to the last key the tile's last row sees, and applies
/// the causal predicate only on tiles that straddle the diagonal), and writes
/// acc / l (rows with l = 0 are zeros) into `dest` [qt, dv], converted to its
/// element type. Returns the updated `dest`.
Value buildOnlineSoftmaxAttention(OpBuilder &b, Location loc, Value query,
                                  Value key, Value value, double scale,
                                  const ScoreMask &mask, int64_t kvTileSize,
                                  Value dest);

} // namespace mlir::mha

#endif // MHA_LIB_DIALECT_MHA_TRANSFORMS_ONLINESOFTMAX_H
