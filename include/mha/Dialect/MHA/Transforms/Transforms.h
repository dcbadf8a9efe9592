//===- Transforms.h - MHA transformations as library calls ------*- C++ -*-===//
//
// The algorithms behind the `mha` passes, callable from passes, transform ops
// and users' own pipelines.
//
//===----------------------------------------------------------------------===//

#ifndef MHA_DIALECT_MHA_TRANSFORMS_TRANSFORMS_H
#define MHA_DIALECT_MHA_TRANSFORMS_TRANSFORMS_H

#include "mlir/Support/LLVM.h"

namespace mlir {
class OpBuilder;
class RewriterBase;
class Value;
class RewritePatternSet;

namespace mha {
class AttentionOp;
class MultiHeadAttentionOp;

/// Replaces `op` by its input projections, one `mha.attention` on the
/// head-split projections, and the output projection (see the description of
/// `mha-decompose`). Returns the `mha.attention` it created.
FailureOr<AttentionOp> decomposeMultiHeadAttention(RewriterBase &rewriter,
                                                   MultiHeadAttentionOp op);

/// Adds the pattern that applies decomposeMultiHeadAttention.
void populateDecomposeMultiHeadAttentionPatterns(RewritePatternSet &patterns);

/// Builds the reference linalg form of `op` before it: the scores
/// [B, H, Sq, Sk] materialized in f32, scaled and masked (float masks added,
/// bool masks and the causal predicate as -inf), a stable softmax that gives
/// zeros on rows with no visible key, and the product with V, written into
/// the op's `init`. Returns the value that replaces the op's result.
FailureOr<Value> lowerAttentionToLinalg(OpBuilder &builder, AttentionOp op);

/// Adds the pattern that replaces mha.attention by lowerAttentionToLinalg.
void populateAttentionToLinalgPatterns(RewritePatternSet &patterns);

} // namespace mha
} // namespace mlir

#endif // MHA_DIALECT_MHA_TRANSFORMS_TRANSFORMS_H
