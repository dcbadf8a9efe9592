//===- Terms.h - The expressions values compute, for the raise --*- C++ -*-===//
//
// Internal to lib/InputConversion/RaiseAttention: the term of a value is the
// expression it computes at each point of an iteration space, with every
// elementwise linalg (or TOSA) op inlined, so that fused and unfused forms
// of the same computation compare equal (equalTerms). The matcher reads
// attention off terms; nothing here creates IR.
//
//===----------------------------------------------------------------------===//

#ifndef MHA_LIB_INPUTCONVERSION_RAISEATTENTION_TERMS_H
#define MHA_LIB_INPUTCONVERSION_RAISEATTENTION_TERMS_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"

#include <memory>
#include <optional>

namespace mlir::mha::raise {

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

Fn fnOf(Operation *op);

/// True if `t` is an op term computing `fn`.
bool isFn(const TermRef &t, Fn fn);

bool equalTerms(const TermRef &a, const TermRef &b);

/// The splat value of a constant-filled tensor or of a scalar constant.
TypedAttr getConstantValue(Value v);

std::optional<double> getFloat(const TermRef &t);

/// The single user of `v`, if it has one.
Operation *singleUser(Value v);

/// True if `op` is a contraction the raise reads: a linalg contraction or
/// tosa.matmul.
bool isContraction(Operation *op);

/// True if `op` reshapes only the batch dims (all but the last two).
bool isBatchReshape(Operation *op);

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

} // namespace mlir::mha::raise

#endif // MHA_LIB_INPUTCONVERSION_RAISEATTENTION_TERMS_H
