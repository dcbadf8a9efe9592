//===- RaiseAttention.h - Raising frontend IR to mha ops --------*- C++ -*-===//
//
// The library functions behind mha-raise-attention.
//
//===----------------------------------------------------------------------===//

#ifndef MHA_INPUTCONVERSION_RAISEATTENTION_H
#define MHA_INPUTCONVERSION_RAISEATTENTION_H

#include "mha/Dialect/MHA/IR/MHAOps.h"
#include "mlir/Support/LLVM.h"

namespace mlir {
class Operation;
class RewriterBase;
class RewritePatternSet;

namespace mha {

/// Replaces `op`, a contraction of attention probabilities with values, and
/// the chain it is computed from (Q·Kᵀ, scale, mask, softmax) by one
/// `mha.attention` (see the description of `mha-raise-attention`), erasing
/// the ops of the chain that become unused. Fails without changing anything
/// when the chain is not exactly attention; `reason` then says why.
FailureOr<AttentionOp> raiseAttention(RewriterBase &rewriter, Operation *op,
                                      std::string *reason = nullptr);

/// Replaces `op` and the layer around it — Q, K and V projections (with
/// biases) split into heads, the heads merged back and the output
/// projection — by one `mha.multi_head_attention` (see
/// `mha-raise-attention`). Fails without changing anything when the layer is
/// not all there; `reason` then says why.
FailureOr<MultiHeadAttentionOp>
raiseMultiHeadAttention(RewriterBase &rewriter, AttentionOp op,
                        std::string *reason = nullptr);

/// Adds the pattern that applies raiseAttention to linalg contractions.
void populateRaiseAttentionPatterns(RewritePatternSet &patterns);

} // namespace mha
} // namespace mlir

#endif // MHA_INPUTCONVERSION_RAISEATTENTION_H
