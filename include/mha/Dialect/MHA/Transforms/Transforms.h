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
class RewriterBase;
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

} // namespace mha
} // namespace mlir

#endif // MHA_DIALECT_MHA_TRANSFORMS_TRANSFORMS_H
