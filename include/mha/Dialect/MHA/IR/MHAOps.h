//===- MHAOps.h - MHA dialect ops -------------------------------*- C++ -*-===//
//
// Declares the ops of the `mha` dialect.
//
//===----------------------------------------------------------------------===//

#ifndef MHA_DIALECT_MHA_IR_MHAOPS_H
#define MHA_DIALECT_MHA_IR_MHAOPS_H

#include "mha/Dialect/MHA/IR/MHADialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/RuntimeVerifiableOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/TilingInterface.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"

namespace mlir::mha {
// Used by the ops' own accessors, so declared before them.
/// The key's sequence (Sk) dim: 2 of [B, Hkv, Sk, dk], or 3 of
/// [B, Hkv, dk, Sk] when the op has `key_transposed`.
inline unsigned getKeySeqDim(bool keyTransposed) {
  return keyTransposed ? 3 : 2;
}
/// The key's head-channel (dk) dim: the other of its last two.
inline unsigned getKeyChannelDim(bool keyTransposed) {
  return keyTransposed ? 2 : 3;
}

/// `scale`, or 1/sqrt(dk) of `query` [B, H, Sq, dk] (the attention ops'
/// getScaleOrDefault).
double getScaleOrDefault(std::optional<APFloat> scale, Value query);

/// `offset`, or the default diagonal of `query` [B, H, Sq, dk] and `key`
/// whose dim `keySeqDim` is Sk, built at the builder's insertion point (the
/// attention ops' getCausalOffsetOrDefault): Sk - Sq, or -keyOffset - Sq
/// with `keyLengths` (the diagonal of batch b is then that plus
/// keyLengths[b]: bottom-right aligned to each batch's valid keys).
Value getCausalOffsetOrDefault(OpBuilder &b, Location loc, Value offset,
                               Value query, Value key, int64_t keySeqDim,
                               Value keyLengths, Value keyOffset);

/// Which keys a query of an attention op sees beyond its mask, in the op's
/// own coordinates (docs/Semantics.md): query i of batch b sees key j iff
///   j + keyOffset < keyLengths[b]                  (with keyLengths)
///   j <= i + D_b                                   (with causal)
///   j >= i + D_b - windowLeft                      (with windowLeft)
///   j <= i + D_b + windowRight                     (with windowRight)
/// where D_b = diagonal (+ keyLengths[b] with keyLengths).
struct KeyVisibility {
  Value keyLengths;
  /// Null: 0.
  Value keyOffset;
  /// The diagonal's scalar part; set exactly when hasDiagonal().
  Value diagonal;
  bool causal = false;
  std::optional<int64_t> windowLeft, windowRight;

  bool hasDiagonal() const { return causal || windowLeft || windowRight; }
  /// Whether any key may be invisible (besides the mask).
  bool restricts() const { return keyLengths || hasDiagonal(); }
};

} // namespace mlir::mha

#define GET_OP_CLASSES
#include "mha/Dialect/MHA/IR/MHAOps.h.inc"

namespace mlir::mha {

//===----------------------------------------------------------------------===//
// The rules every op, lowering and run-time check shares (one definition each)
//===----------------------------------------------------------------------===//

/// The dims of the scores an attention mask applies to, in order.
enum ScoreDim : unsigned { kBatch = 0, kHeads = 1, kQueries = 2, kKeys = 3 };

/// `B`, `H`, `Sq` or `Sk`: how diagnostics name a score dim.
StringRef getScoreDimSymbol(unsigned scoreDim);

/// How a mask's dims map onto the scores [B, H, Sq, Sk]: rank 2 is
/// [Sq, Sk], rank 3 [B, Sq, Sk], both exact; rank 4 is [B|1, H|1, Sq|1, Sk|1]
/// and broadcasts along its dims of size 1. mha.multi_head_attention also
/// broadcasts a dynamic dim that is 1 at run time (its decomposition expands
/// such dims); on mha.attention and mha.online_attention a dynamic dim must
/// match the scores. Returns std::nullopt for other ranks.
struct MaskLayout {
  /// The score dim each mask dim stands for.
  SmallVector<unsigned, 4> scoreDims;
  /// Whether a mask dim of size 1 broadcasts along its score dim.
  bool broadcasts;
};
std::optional<MaskLayout> getMaskLayout(int64_t rank);

/// Slices a mask to the block of scores `offsets` / `sizes` (over B, H, Sq,
/// Sk). Broadcasting dims (static size 1) stay at offset 0 and size 1.
Value sliceMaskForTile(OpBuilder &b, Location loc, Value mask,
                       ArrayRef<OpFoldResult> offsets,
                       ArrayRef<OpFoldResult> sizes);

/// The default causal diagonal `Sk - Sq` (bottom-right alignment): query i
/// sees key j iff j <= i + (Sk - Sq).
OpFoldResult getDefaultCausalOffset(OpBuilder &b, Location loc,
                                    OpFoldResult sq, OpFoldResult sk);

/// `1 / sqrt(dk)`, the default scale of a query of head width `dk`.
double getDefaultScale(int64_t dk);

/// Whether key `j` is visible to query `i` of a batch whose key length is
/// `length` (index; null without key lengths) under `visibility`; null when
/// every key is (no lengths, no diagonal).
Value buildKeyVisible(OpBuilder &b, Location loc,
                      const KeyVisibility &visibility, Value length, Value i,
                      Value j);

/// The keys [first, end) that some query of an op with `sq` queries and `sk`
/// keys may see under `visibility`: the causal diagonal and the right window
/// end the range at the last query's last key, the left window starts it at
/// the first query's first key, key lengths end it at the batch's length.
/// Per-batch bounds (key lengths) narrow it only for one batch (lengths of
/// static size 1: the tiles of the lowerings).
std::pair<OpFoldResult, OpFoldResult>
getVisibleKeyRange(OpBuilder &b, Location loc,
                   const KeyVisibility &visibility, OpFoldResult sq,
                   OpFoldResult sk);

/// An i1 that is false only when every query of a block of `sq` queries and
/// `sk` keys sees every key under `visibility` (so the per-element
/// predicate can be skipped); null when that holds whatever the sizes.
Value buildMayHideKeys(OpBuilder &b, Location loc,
                       const KeyVisibility &visibility, OpFoldResult sq,
                       OpFoldResult sk);

/// An i1 that is false only when all `sk` keys of a block are before every
/// batch's length (true when the lengths have several batches); null
/// without key lengths.
Value buildMayPassLength(OpBuilder &b, Location loc,
                         const KeyVisibility &visibility, OpFoldResult sk);

} // namespace mlir::mha

#endif // MHA_DIALECT_MHA_IR_MHAOPS_H
