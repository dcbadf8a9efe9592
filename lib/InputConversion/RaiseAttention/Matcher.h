//===- Matcher.h - Attention read off linalg and TOSA ops -------*- C++ -*-===//
//
// Internal to lib/InputConversion/RaiseAttention: what the matcher finds in
// frontend IR, the attention (queries, keys, values, scale, mask, causal
// visibility) a contraction of probabilities with values ends, and the
// projections of the layer around an mha.attention; and the plans of what
// the rewrite builds from them. A plan holds every decision and every check
// (on types and existing values), so planning creates no IR and applying a
// plan cannot fail.
//
//===----------------------------------------------------------------------===//

#ifndef MHA_LIB_INPUTCONVERSION_RAISEATTENTION_MATCHER_H
#define MHA_LIB_INPUTCONVERSION_RAISEATTENTION_MATCHER_H

#include "Terms.h"

#include "mha/Dialect/MHA/IR/MHAOps.h"

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

/// How a mask becomes the [B|1, H|1, Sq|1, Sk|1] tensor mha.attention
/// takes, decided from types: the rewrite follows it step by step.
struct MaskPlan {
  /// The mask, or (with `predicate` or `negate`) a boolean of it to
  /// materialize as a new i1 tensor.
  Value tensor;
  TermRef predicate;
  bool negate = false;
  /// Its unit dims read at 0 dropped, when some are.
  std::optional<SmallVector<ReassociationIndices>> collapse;
  /// Then, when the mask lacks some dims of the scores' space (or has them
  /// elsewhere), the expand to the space's rank: its groups, its static
  /// shape and for each space dim the collapsed dim it takes its size from
  /// (-1: a new unit dim). Empty when the mask has the space's dims already.
  SmallVector<ReassociationIndices> expand;
  SmallVector<int64_t> expandShape;
  SmallVector<int64_t> expandSizeOf;
  /// Its batch dims: the view's already, all broadcast, or all present (and
  /// then flattened and split as the view's).
  enum class Batch { AsIs, AllUnit, AllFull } batch = Batch::AsIs;
};

/// Everything the rewrite of a match builds, decided without creating IR:
/// applying it cannot fail.
struct AttentionPlan {
  AttentionMatch match;
  /// The 4-d view [B, H, S, d] of Q, K and V: the operands themselves when
  /// all is rank 4 (Direct), the 4-d sources of their collapses (From4D),
  /// or [N, 1, S, d] reshapes to build (Flatten).
  enum class View { Direct, From4D, Flatten } view = View::Flatten;
  /// The views when they exist (not Flatten), keys and values through a
  /// head repeat.
  Value q4, k4, v4;
  std::optional<MaskPlan> mask;
  /// The causal offset to build; none when the attention is not causal or
  /// the offset is provably the default (Sk - Sq).
  std::optional<CausalUse> causalOffset;
  /// The one user of the op that reshapes its result back to the view's
  /// shape: the attention replaces it (a frontend's head split).
  Operation *userReshape = nullptr;
  /// The init of the op to read the result's dynamic batch sizes from.
  Value resultBatchInit;
};

/// The plan to raise `op` to mha.attention; failure with `why` when it is
/// not exactly attention or mha.attention cannot take it. Creates no IR.
FailureOr<AttentionPlan> planAttention(Operation *op, Why &why);

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

/// The layer around an mha.attention, as the rewrite needs it.
struct LayerPlan {
  Projection q, k, v, o;
  /// The output projection's result (with its bias), which the layer
  /// replaces.
  Value out;
};

/// The plan to raise `att` and the layer around it to
/// mha.multi_head_attention; failure with `why`. Creates no IR.
FailureOr<LayerPlan> planLayer(AttentionOp att, Why &why);

} // namespace mlir::mha::raise

#endif // MHA_LIB_INPUTCONVERSION_RAISEATTENTION_MATCHER_H
