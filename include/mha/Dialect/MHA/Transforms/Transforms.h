//===- Transforms.h - MHA transformations as library calls ------*- C++ -*-===//
//
// The rewrites of mha ops behind the passes of this directory's Passes.td,
// callable from passes, transform ops and users' own pipelines. Code
// generation (mha/Codegen/...), raising (mha/InputConversion) and
// conversions (mha/Conversion) have their own headers.
//
//===----------------------------------------------------------------------===//

#ifndef MHA_DIALECT_MHA_TRANSFORMS_TRANSFORMS_H
#define MHA_DIALECT_MHA_TRANSFORMS_TRANSFORMS_H

#include "mha/Dialect/MHA/IR/MHAOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"

#include <string>

namespace mlir {
class OpBuilder;
class Operation;
class RewriterBase;
class Value;
class RewritePatternSet;

namespace mha {

/// What decomposeMultiHeadAttention made.
struct DecomposedLayer {
  /// The contractions of the query, key, value and output projections
  /// (linalg.generic). Each reads its bias, if any, as the initial value of
  /// its accumulator.
  Operation *queryProjection = nullptr;
  Operation *keyProjection = nullptr;
  Operation *valueProjection = nullptr;
  Operation *outputProjection = nullptr;
  /// The attention on the head-split projections.
  AttentionOp attention;
  /// The value that replaced the layer's result.
  Value result;
  /// The mha.attention_weights result that replaced the layer's weights
  /// (null without `return_weights`).
  Value weights;
};

/// Replaces `op` by its input projections, one `mha.attention` on the
/// head-split projections, and the output projection (see the description of
/// `mha-decompose`).
FailureOr<DecomposedLayer> decomposeMultiHeadAttention(RewriterBase &rewriter,
                                                       MultiHeadAttentionOp op);

/// Tiles a projection of a decomposed layer (a linalg.generic contraction
/// whose accumulator is its operand 2) by `tileSizes` into an scf.forall
/// (threads), its accumulator's initialization (zeros or the bias) fused
/// into each tile. Returns the loop.
FailureOr<LoopLikeOpInterface>
tileProjectionForThreads(RewriterBase &rewriter, Operation *projection,
                         ArrayRef<int64_t> tileSizes);

/// Tiles the four projections of `layer` for threads: the input
/// projections over (batch, head, `rowTile` rows), the output projection
/// over (batch, `rowTile` rows).
LogicalResult tileProjectionsForThreads(RewriterBase &rewriter,
                                        const DecomposedLayer &layer,
                                        int64_t rowTile);

/// Why mha-fuse-layer does not fuse `op` (it returns its weights, updates
/// KV caches or rotates its queries and keys: it is decomposed and its
/// attention tiled on its own), or an empty string when it does.
StringRef getUnfusedReason(MultiHeadAttentionOp op);

/// Adds the pattern that applies decomposeMultiHeadAttention (to the layers
/// mha-fuse-layer does not fuse only, with `unfusedOnly`), then, with
/// `projectionRows` > 0, tileProjectionsForThreads.
void populateDecomposeMultiHeadAttentionPatterns(RewritePatternSet &patterns,
                                                 bool unfusedOnly = false,
                                                 int64_t projectionRows = 0);

/// Inserts before `op` (an mha op) its run-time checks
/// (RuntimeVerifiableOpInterface): one cf.assert per pair of sizes that must
/// agree and that are not both static, so that dynamic sizes that disagree at
/// run time stop the program with the verifier's message, prefixed with the
/// op's name and source location, instead of being read out of bounds.
void insertRuntimeShapeChecks(OpBuilder &builder, Operation *op);

/// Tile sizes of the FlashAttention-style lowering.
struct TileOptions {
  /// Queries per tile: the rows of the [q, kv] score block. 0 leaves it to
  /// the shape: 64 for mha.attention; for a whole layer (fused), 128 when
  /// B * Sq >= 512, else 64.
  int64_t qTileSize = 64;
  /// Keys per step of the online softmax: the columns of the score block.
  int64_t kvTileSize = 64;
  /// Decompose each key block (mha.online_attention) into linalg right away;
  /// when false the blocks stay, for a later decomposition stage
  /// (mha-attention-to-linalg) after other transformations of the loops.
  bool decompose = true;
  /// Mark the loop over tiles as a grid of GPU workgroups (a
  /// `#gpu.block<linear_dim_i>` mapping per dimension): canonicalization keeps
  /// a mapped loop even when it has one iteration, where it would fold an
  /// unmapped one into its body and leave no kernel to launch.
  bool workgroups = false;
  /// Query heads per tile of the parallel loop of an mha.attention (its
  /// lowering configuration's head_tile: the heads of a group when it
  /// decodes); 0 or 1: one. CPU only.
  int64_t headTile = 0;
  /// Chunks the keys of an mha.attention are split into, folded in parallel
  /// and merged exactly after (flash-decoding); 0 or 1: not split. CPU only.
  int64_t kvSplits = 0;
  /// Key blocks ahead whose rows the key loop prefetches (its lowering
  /// configuration's prefetch_blocks): set on the key loop as
  /// kPrefetchBlocksAttrName for mha-prefetch-key-blocks; 0: none. CPU only.
  int64_t prefetchBlocks = 0;
};

/// The mapping that marks an scf.forall of `rank` dimensions as a grid of
/// GPU workgroups: `#gpu.block<linear_dim_i>` for dimension i.
ArrayAttr workgroupMapping(MLIRContext *context, unsigned rank);

/// Replaces `op` by its online form (its AggregatedOpInterface
/// decomposition): f32 fills of the softmax state, one mha.online_attention
/// over all keys, and the normalization into `init`. Returns the online op.
FailureOr<OnlineAttentionOp> convertToOnlineAttention(RewriterBase &rewriter,
                                                      AttentionOp op);

/// Replaces `op` by linalg ops on tensors (its AggregatedOpInterface
/// decomposition; see mha.online_attention). Returns the new state values.
FailureOr<SmallVector<Value>> decomposeOnlineAttention(RewriterBase &rewriter,
                                                       OnlineAttentionOp op);

/// Tiles `root` (a TilingInterface op on tensors) by `tileSizes` (0: not
/// tiled) into an scf.forall with upstream tile-and-fuse, fusing the linalg
/// ops that produce its operands, destinations included, except those that
/// read i1 (GPU kernels cannot load it). Returns the loop.
FailureOr<Operation *> tileAndFuseIntoForall(RewriterBase &rewriter,
                                             Operation *root,
                                             ArrayRef<int64_t> tileSizes);

/// The i1 mask of `op` (an mha.attention or mha.attention_weights) replaced
/// by the equivalent additive mask of the data's element type (0 where true,
/// -inf where false), computed by a linalg.generic before `op`: for GPU
/// kernels, which cannot load i1 from SPIR-V storage buffers. Fully masked
/// rows stay zero (docs/Semantics.md). Fails (nothing changed) when `op` has
/// no i1 mask.
LogicalResult boolMaskToAdditive(RewriterBase &rewriter, Operation *op);

/// Checks that the tile sizes are positive; the error names `op`.
LogicalResult checkTileOptions(Operation *op, const TileOptions &options);

/// Replaces `op` by its tile of the keys some query sees from the first on
/// (a left window skips the keys before it), updating `op` to that tile; a
/// no-op when that first key is 0.
LogicalResult sliceToVisibleKeys(RewriterBase &rewriter, OnlineAttentionOp &op);

/// The unit attribute tileAttentionKeys puts on the key loops of a causal
/// op: their trip count grows with the query tile's position (the key range
/// ends at the diagonal). mha-dynamic-schedule-openmp reads it to hand the
/// parallel iterations that hold such a loop out last first.
inline constexpr llvm::StringLiteral kCausalKeyLoopAttrName =
    "mha.causal_key_loop";

/// What tileAttentionKeys made.
struct AttentionKeyLoop {
  /// The scf.for over key tiles, carrying the online-softmax state.
  LoopLikeOpInterface keyLoop;
  /// The mha.online_attention of one key block inside it; null once
  /// decomposed.
  Operation *block = nullptr;
  /// The value that replaced the op's result.
  Value result;
};

/// Replaces `op` by its online form (mha.attention's decomposition: state
/// fills, mha.online_attention, normalization), tiles the key dimension of
/// the online op by `kvTileSize` with upstream scf::tileUsingSCF (the key
/// range ends at the causal bound of the op's queries, so blocks above the
/// diagonal are never created), and (with `decompose`) decomposes the tiled
/// online op into linalg. `op` is usually one tile of queries of one head;
/// `kvTileSize` must be positive (checkTileOptions).
/// With `keyBlocksReadOnce` (the op is the only tile of its queries, as in
/// decoding), the key loops get kKeyBlocksReadOnceAttrName.
FailureOr<AttentionKeyLoop> tileAttentionKeys(RewriterBase &rewriter,
                                              AttentionOp op,
                                              int64_t kvTileSize,
                                              bool decompose = true,
                                              bool keyBlocksReadOnce = false);

/// tileAttentionKeys on the online form itself: tiles the key dimension of
/// `online` (its first visible key sliced off first) into the key loop,
/// peels the partial block, and (with `decompose`) decomposes the blocks.
/// The result's `result` is the loop's acc.
FailureOr<AttentionKeyLoop>
tileOnlineAttentionKeys(RewriterBase &rewriter, OnlineAttentionOp online,
                        int64_t kvTileSize, bool decompose = true,
                        bool keyBlocksReadOnce = false);

/// What splitOnlineAttentionKeys made.
struct SplitAttentionKeys {
  /// The scf.forall over the row tiles and the key chunks.
  scf::ForallOp loop;
  /// The mha.online_attention of one tile of rows and one chunk of keys in
  /// it, folding its keys from the empty state.
  OnlineAttentionOp chunk;
  /// The linalg ops after the loop that merge the chunks' states.
  SmallVector<Operation *> mergeOps;
};

/// Replaces `op` by partial states (the op's PartialReductionOpInterface,
/// upstream's PartialReductionOuterParallel form) computed by one scf.forall
/// over tiles of `rowTiles` (B, H, Sq; 0: not tiled) and chunks of
/// `chunkKeys` keys, and their exact merge after it. Upstream's
/// scf::tileUsingSCF builds this loop for the chunks alone; here the row
/// tiles are dims of the same loop, so that a CPU runs them all in one
/// parallel region (a loop nested in another parallel loop runs serially).
FailureOr<SplitAttentionKeys>
splitOnlineAttentionKeys(RewriterBase &rewriter, OnlineAttentionOp op,
                         ArrayRef<int64_t> rowTiles, OpFoldResult chunkKeys);

/// The unit attribute tileAttentionKeys puts on the key loops of an op whose
/// queries are one tile (Sq no more than the query tile size: decoding): each
/// key block is then read by one tile only, so mha-vectorize transposes it
/// where it is read instead of making a transposed copy of all the keys
/// first, which would cost a whole extra pass over a long cache per call
/// (and could not skip the keys past a batch's length).
inline constexpr llvm::StringLiteral kKeyBlocksReadOnceAttrName =
    "mha.key_blocks_read_once";

/// The integer attribute tileAttention puts on the key loop of an op whose
/// lowering configuration sets prefetch_blocks: how many key blocks ahead
/// mha-prefetch-key-blocks prefetches the rows the loop reads.
inline constexpr llvm::StringLiteral kPrefetchBlocksAttrName =
    "mha.prefetch_blocks";

/// Whether `op` has a static batch, query or key length of 0: there is
/// nothing to tile, and the tiling entry points lower it to the reference
/// form instead (their loops are then null).
bool hasStaticEmptyScores(AttentionOp op);

/// What tileAttention made.
struct TiledAttention {
  /// The scf.forall over (batch, head, query tile); null when there was
  /// nothing to tile (hasStaticEmptyScores).
  LoopLikeOpInterface parallelLoop;
  /// The scf.for over key tiles inside it (see tileAttentionKeys).
  LoopLikeOpInterface keyLoop;
  /// The value that replaced the op's result.
  Value result;
};

/// Rewrites `op` FlashAttention-2 style: an scf.forall over batches, heads
/// and tiles of `qTileSize` queries (upstream scf::tileUsingSCF over the op's
/// TilingInterface), and in each the key loop of tileAttentionKeys. Sizes
/// that are not multiples of the tiles, and dynamic sizes, are handled.
/// Tiles of `options.headTile` query heads (the heads of a grouped-query
/// op's group when it decodes: each key block is then read once per group).
FailureOr<TiledAttention> tileAttention(RewriterBase &rewriter, AttentionOp op,
                                        const TileOptions &options);

/// What fuseMultiHeadAttention made.
struct FusedLayer {
  /// The scf.forall over (batch, query tile): each iteration computes its
  /// rows of the output projection, with no state shared across iterations.
  /// The loops are null when there was nothing to tile
  /// (hasStaticEmptyScores).
  LoopLikeOpInterface parallelLoop;
  /// The scf.for over query heads inside it, accumulating each head's share
  /// of the output projection.
  LoopLikeOpInterface headLoop;
  /// The scf.for over key tiles inside the head loop.
  LoopLikeOpInterface keyLoop;
  /// The value that replaced the layer's result.
  Value result;
  /// The scf.foralls over (batch, kv head, key tile) of the key and of the
  /// value projection, in that order, before the nest (each computed once).
  SmallVector<LoopLikeOpInterface> projectionLoops;
};

/// Lowers the whole layer with upstream tile-and-fuse: the layer is
/// decomposed, its output projection tiled over (batch, query tile) as an
/// scf.forall with the attention, the query projection (bias and scale
/// included) and the output bias fused as producers; the output projection's
/// reduction over heads is then tiled with the attention and query
/// projection of one head fused into it; the attention of one head and
/// query tile becomes the key loop of tileAttentionKeys. The key and value
/// projections are computed once, before the loop nest, for all batches and
/// key/value heads, each tiled as an scf.forall over (batch, kv head, tile of
/// `qTileSize` keys) with its bias initialization fused.
FailureOr<FusedLayer> fuseMultiHeadAttention(RewriterBase &rewriter,
                                             MultiHeadAttentionOp op,
                                             const TileOptions &options);

/// Replaces `op` by the reference linalg form: its two decompositions
/// (mha.attention -> online form -> linalg) without tiling, so the scores
/// [B, H, Sq, Sk] are materialized in f32. Returns the value that replaced
/// the op's result.
FailureOr<Value> lowerAttentionToLinalg(RewriterBase &rewriter, AttentionOp op);

/// Adds the pattern that decomposes mha.attention and mha.online_attention
/// (their AggregatedOpInterface); driven to a fixpoint it lowers both to
/// linalg, as lowerAttentionToLinalg and decomposeOnlineAttention do.
void populateAttentionToLinalgPatterns(RewritePatternSet &patterns);

} // namespace mha
} // namespace mlir

#endif // MHA_DIALECT_MHA_TRANSFORMS_TRANSFORMS_H
