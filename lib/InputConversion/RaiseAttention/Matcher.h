//===- Matcher.h - Attention read off linalg and TOSA ops -------*- C++ -*-===//
//
// Internal to lib/InputConversion/RaiseAttention: what the matcher finds in
// frontend IR, the attention (queries, keys, values, scale, mask, causal
// visibility) a contraction of probabilities with values ends, and the
// projections of the layer around an mha.attention. Matching creates no IR.
//
//===----------------------------------------------------------------------===//

#ifndef MHA_LIB_INPUTCONVERSION_RAISEATTENTION_MATCHER_H
#define MHA_LIB_INPUTCONVERSION_RAISEATTENTION_MATCHER_H

#include "Terms.h"

#include <string>

namespace mlir::mha::raise {

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

/// The attention that `pv`, a contraction of probabilities with values,
/// ends, read through the softmax, the mask and the scale down to the
/// contraction of queries and keys; failure with `why` otherwise.
FailureOr<AttentionMatch> matchAttention(Operation *pv, Why &why);

/// The source of `v` if `v` is a transpose of it by `perm`.
Value lookThroughTranspose(Value v, ArrayRef<int64_t> perm);

/// The key/value heads [B, Hkv, S, d] that `x` [B, H, S, d] repeats, each
/// `group` times in a row (a broadcast over a group dim collapsed into the
/// heads, as frontends materialize grouped-query attention).
Value lookThroughHeadRepeat(Value x, int64_t &group);

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
FailureOr<Projection> matchProjection(Value out, Why &why);

/// The projection [B, S, H*d] whose heads `x4` [B, H, S, d] are: split by
/// an expand_shape and moved before the sequence by a transpose.
Value matchHeadSplit(Value x4);

} // namespace mlir::mha::raise

#endif // MHA_LIB_INPUTCONVERSION_RAISEATTENTION_MATCHER_H
