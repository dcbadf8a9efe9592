//===- Transforms.h - MHA transformations as library calls ------*- C++ -*-===//
//
// The algorithms behind the `mha` passes, callable from passes, transform ops
// and users' own pipelines.
//
//===----------------------------------------------------------------------===//

#ifndef MHA_DIALECT_MHA_TRANSFORMS_TRANSFORMS_H
#define MHA_DIALECT_MHA_TRANSFORMS_TRANSFORMS_H

#include "mha/Dialect/MHA/IR/MHAOps.h"
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

/// Adds the pattern that applies decomposeMultiHeadAttention.
void populateDecomposeMultiHeadAttentionPatterns(RewritePatternSet &patterns);

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
FailureOr<SmallVector<Value>>
decomposeOnlineAttention(RewriterBase &rewriter, OnlineAttentionOp op);

/// Register tiles of the vector code (see mha-vectorize).
struct VectorizeOptions {
  /// The target's vector registers, in bits (512: AVX-512, 256: AVX2, 128:
  /// SSE or NEON): what the register tiles below default to.
  int64_t vectorWidth = 512;
  /// Rows of a contraction's output tile (one broadcast operand each); 0:
  /// from the vector width (defaultRegisterTile).
  int64_t registerTileRows = 0;
  /// Columns of a contraction's output tile, along the contiguous output
  /// dim: a multiple of the vector width; 0: from the vector width.
  int64_t registerTileCols = 0;
  /// Elements per step along the innermost loop of the other ops.
  int64_t chunk = 64;
  /// Contractions whose rhs rows are at least this many elements apart read
  /// it by contiguous column panels: packed once per call when the rhs is
  /// defined outside every loop, else copied per panel (negative: never).
  int64_t packMinStride = 256;
  /// Reduction steps per pass of the row tiles over a packed column panel
  /// (the classic kc blocking): a chunk of the panel stays in L1 while every
  /// row tile reads it, where the whole panel ([E x cols]: 48-96 KiB for
  /// E = 768) would stream from L2 for each. 0: the whole reduction.
  int64_t panelReductionTile = 0;
};

/// The register tile [rows, cols] of f32 contractions for vector registers of
/// `vectorWidth` bits: two vectors of columns per row, and as many rows as
/// the register file holds accumulators for, with the operands besides
/// (8x32 for AVX-512: 16 of its 32 zmm registers; 4x16 for AVX2 or 128-bit
/// vectors: 8 of 16). Rows are kept a power of two so that they divide the
/// tile sizes of the tiling stage. Fails on a width that is not a positive
/// multiple of 32 bits.
FailureOr<std::pair<int64_t, int64_t>> defaultRegisterTile(int64_t vectorWidth);

/// Cuts every linalg op on tensors under `root` into register tiles (upstream
/// scf::tileUsingSCF) and vectorizes the full ones (upstream
/// linalg::vectorize); contractions become outer products whose accumulator
/// is carried in registers across the reduction loop (starting there from a
/// fused fill or elementwise producer of it), and the strided weight panels
/// of long reductions are packed first. Parallel loops with a partial
/// last tile are peeled first (peelParallelLoop) and ops of dynamic size
/// padded to their static bounds; ops the vectorizer does not take stay
/// linalg ops (scalar loops later). Fails only
/// on non-positive tile sizes or vector widths.
LogicalResult vectorizeLinalgOps(RewriterBase &rewriter, Operation *root,
                                 const VectorizeOptions &options);

/// GPU mapping, on tensors: inside each top-level scf.forall (one workgroup
/// per iteration later), every linalg op tiled into an scf.forall over
/// `threads` GPU threads along its first parallel loop, and the tile's own
/// tensors allocated in workgroup memory.
LogicalResult distributeToThreads(RewriterBase &rewriter, Operation *root,
                                  int64_t threads);

/// Fully unrolls the innermost scf.for loops inside gpu.launch bodies whose
/// trip count is a constant of at most `maxTripCount`.
void unrollKernelLoops(Operation *root, int64_t maxTripCount);

/// Bounds the loop iterations one invocation of each gpu.launch may run, as
/// lavapipe counts them (each scf.for's trip count, bounded by the
/// value-bounds or integer range analysis, plus one for the test that ends
/// it, times the trip counts of the loops around it, summed) and emits an
/// error where the bound exceeds
/// `maxIterations` or a loop has no bound. Lavapipe ends every loop of an
/// invocation after 65535 iterations in all, silently.
LogicalResult checkKernelLoopIterations(Operation *root,
                                        int64_t maxIterations);

/// GPU mapping, on buffers: each top-level scf.forall as a gpu.launch, one
/// workgroup per iteration (grid from the loop bounds at run time) of
/// `threads` threads, its #gpu.thread loops mapped with barriers after them,
/// its workgroup allocations as the launch's workgroup attributions.
LogicalResult mapForallsToGPULaunch(RewriterBase &rewriter, Operation *root,
                                    int64_t threads);

/// Tiles `root` (a TilingInterface op on tensors) by `tileSizes` (0: not
/// tiled) into an scf.forall with upstream tile-and-fuse, fusing the linalg
/// ops that produce its operands, destinations included. Returns the loop.
FailureOr<Operation *> tileAndFuseIntoForall(RewriterBase &rewriter,
                                             Operation *root,
                                             ArrayRef<int64_t> tileSizes);

/// GPU mapping, on tensors: every linalg op directly in a function body
/// (the projections and their bias broadcasts: what is not yet in a loop)
/// tiled into an scf.forall of workgroup tiles with its linalg producers
/// fused: `rows` along its second innermost parallel loop, up to `cols`
/// along its innermost, 1 along the others. Ops reading i1 stay on the host
/// (GPU storage buffers hold no i1). With `depth` > 0 a tile's reduction
/// runs in steps of `depth` whose input tiles are first copied into
/// workgroup tensors (shared-memory tiling of the projection GEMMs).
/// Together with the attention's tiling these loops become the kernels
/// (distributeToThreads, mapForallsToGPULaunch).
LogicalResult tileForWorkgroups(RewriterBase &rewriter, Operation *root,
                                int64_t rows, int64_t cols, int64_t depth);

/// The i1 mask of `op` replaced by the equivalent additive mask of the data's
/// element type (0 where true, -inf where false), computed by a
/// linalg.generic before `op`: for GPU kernels, which cannot load i1 from
/// SPIR-V storage buffers. Fully masked rows stay zero (docs/Semantics.md).
/// Fails (nothing changed) when `op` has no i1 mask.
LogicalResult boolMaskToAdditive(RewriterBase &rewriter, AttentionOp op);

/// For targets whose kernels cannot read host memory (CUDA): every host
/// buffer a `gpu.launch` under `root` uses is copied into device memory
/// before it (`gpu.alloc` of the buffer's run-time sizes, `gpu.memcpy`) and
/// back after it when the kernel may write it, then freed (`gpu.dealloc`).
/// The ops are synchronous (`gpu-async-region` makes them async). Fails on
/// views of non-identity layout and on asynchronous launches.
LogicalResult stageKernelBuffers(RewriterBase &rewriter, Operation *root);

/// Checks that the tile sizes are positive; the error names `op`.
LogicalResult checkTileOptions(Operation *op, const TileOptions &options);

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
FailureOr<AttentionKeyLoop> tileAttentionKeys(RewriterBase &rewriter,
                                              AttentionOp op,
                                              int64_t kvTileSize,
                                              bool decompose = true);

/// Peels the last, partial iteration off every dimension of `loop` (an
/// scf.forall) whose lower bound and step are static and whose upper bound
/// is dynamic or not a multiple of the step away, into a second scf.forall
/// after it that carries on from the first's results. Returns the loops
/// that replace `loop`: first the one with the full steps, then the peeled
/// ones (just `loop` when nothing was peeled). Tile sizes computed in the
/// bodies (`affine.min(step, ub - iv)`) fold to constants (upstream's
/// scf::rewritePeeledMinMaxOp), so every tile of the first loop and of each
/// peeled loop has static sizes (what the vectorizer takes), where before
/// all of them were dynamic. The forall counterpart of upstream's
/// scf::peelForLoopAndSimplifyBounds. The loops (when `loop` has no mapping)
/// get the mapping `[#mha.peeled<0>, ...]`, which keeps the canonicalizer
/// from folding a loop of one iteration away, until rejoinPeeledLoops.
SmallVector<LoopLikeOpInterface> peelParallelLoop(RewriterBase &rewriter,
                                                  LoopLikeOpInterface loop);

/// Gives each scf.forall on tensors that peelParallelLoop made (mapping
/// `#mha.peeled`) its own copy of every tensor defined outside it that its
/// body may write into: a new tensor.empty for an empty one, a
/// bufferization.alloc_tensor copy of any other, at the start of the body.
/// One-shot bufferization privatizes such buffers per iteration only in
/// loops of more than one iteration; a peeled loop often has one (the
/// partial tile, or a single full tile), so without this the loops would
/// share buffers that rejoinPeeledLoops then makes concurrent. Run it last
/// before bufferization (CSE would merge the copies back).
void privatizePeeledLoops(RewriterBase &rewriter, Operation *root);

/// The scf.forall loops on memrefs that peelParallelLoop made of one loop
/// (after bufferization) joined again into one scf.forall over their ranges
/// together, whose body is an scf.if on the induction variable that runs the
/// code of the loop the iteration belongs to (the full tiles' or the
/// partial tile's, each with its static sizes), so that a parallel runtime
/// shares all the iterations out at once. Loops with ops other than pure
/// ones between them stay apart. Removes the `#mha.peeled` mapping from
/// every loop.
void rejoinPeeledLoops(RewriterBase &rewriter, Operation *root);

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

/// Replaces every op under `root` that implements linalg's
/// AggregatedOpInterface and is not an mha op (linalg.softmax), and every
/// mha.attention_weights, by its decomposition. Fails, with an error at the op, where one cannot be
/// decomposed.
LogicalResult decomposeAggregateOps(RewriterBase &rewriter, Operation *root);

/// Emits an error at every outermost op under `root` that the translation
/// to LLVM IR cannot take (see mha-check-lowered) and fails if there was one.
LogicalResult checkLoweredToLLVM(Operation *root);

} // namespace mha
} // namespace mlir

#endif // MHA_DIALECT_MHA_TRANSFORMS_TRANSFORMS_H
