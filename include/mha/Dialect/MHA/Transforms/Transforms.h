//===- Transforms.h - MHA transformations as library calls ------*- C++ -*-===//
//
// The algorithms behind the `mha` passes, callable from passes, transform ops
// and users' own pipelines.
//
//===----------------------------------------------------------------------===//

#ifndef MHA_DIALECT_MHA_TRANSFORMS_TRANSFORMS_H
#define MHA_DIALECT_MHA_TRANSFORMS_TRANSFORMS_H

#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir {
class OpBuilder;
class Operation;
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

/// Inserts before `op` (an mha op) one cf.assert per pair of sizes that must
/// agree and that are not both static, so that dynamic sizes that disagree at
/// run time stop the program with the verifier's message instead of being
/// read out of bounds.
void insertRuntimeShapeChecks(OpBuilder &builder, Operation *op);

/// Tile sizes of the FlashAttention-style lowering.
struct TileOptions {
  /// Queries per tile: the rows of the [q, kv] score block.
  int64_t qTileSize = 64;
  /// Keys per step of the online softmax: the columns of the score block.
  int64_t kvTileSize = 64;
};

/// What tileAttention made.
struct TiledAttention {
  /// The loops over (batch, head, query tile), outermost first.
  SmallVector<LoopLikeOpInterface> loops;
  /// The value that replaced the op's result.
  Value result;
};

/// Rewrites `op` FlashAttention-2 style: loops over batches, heads and query
/// tiles of `qTileSize` (upstream scf::tileUsingSCF over the op's
/// TilingInterface), and in each an online-softmax loop over key/value tiles
/// of `kvTileSize` with running maximum, sum and accumulator in f32. With
/// `causal`, key tiles wholly above the diagonal are never visited and the
/// causal predicate is evaluated only on tiles that straddle it. Sizes that are
/// not multiples of the tiles, and dynamic sizes, are handled.
FailureOr<TiledAttention> tileAttention(RewriterBase &rewriter, AttentionOp op,
                                        const TileOptions &options);

/// Lowers the whole layer into one fused loop nest over (batch, kv head,
/// query head of the group, query tile) around the online-softmax loop over
/// key tiles: K and V projected once per (batch, kv head), Q per query tile
/// (scaled in its epilogue), biases as accumulator initial values, head
/// split/merge as weight slices, and the output projection accumulating each
/// finished query tile into the f32 result. Returns the replacement value.
FailureOr<Value> fuseMultiHeadAttention(RewriterBase &rewriter,
                                        MultiHeadAttentionOp op,
                                        const TileOptions &options);

/// Adds the pattern that applies fuseMultiHeadAttention.
void populateFuseMultiHeadAttentionPatterns(RewritePatternSet &patterns,
                                            const TileOptions &options);

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
