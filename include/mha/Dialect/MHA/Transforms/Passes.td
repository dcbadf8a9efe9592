//===- Passes.td - MHA dialect passes ----------------------*- tablegen -*-===//
//
// Rewrites of `mha` ops (decomposition, tiling, lowering to linalg). Each
// pass is a thin wrapper around a library function of
// mha/Dialect/MHA/Transforms/Transforms.h, which transform ops and users'
// own pipelines call as well. The other areas (input conversion, code
// generation, conversions) have their own Passes.td; mha/Passes.td gathers
// them all for the pass reference.
//
//===----------------------------------------------------------------------===//

#ifndef MHA_DIALECT_MHA_TRANSFORMS_PASSES_TD
#define MHA_DIALECT_MHA_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

// The tile sizes of mha-tile-attention and mha-fuse-layer, declared once.
defvar MHA_AttentionTileOptions = [
    Option<"qTileSize", "q-tile-size", "int64_t", /*default=*/"0",
           "Queries per tile (rows of the score block); 0: the op's "
           "mha.lowering_config q_tile (mha-select-lowering-config chooses "
           "it from the target and shape), else 64">,
    Option<"kvTileSize", "kv-tile-size", "int64_t", /*default=*/"0",
           "Keys per online-softmax step (columns of the score block); 0: "
           "the op's mha.lowering_config kv_tile, else 64">,
    Option<"decompose", "decompose", "bool", /*default=*/"true",
           "Decompose each key block into linalg; false leaves the "
           "mha.online_attention blocks for a later mha-attention-to-linalg">,
];

def MHADecomposePass : Pass<"mha-decompose"> {
  let summary = "Decompose mha.multi_head_attention into projections around "
                "one mha.attention";
  let description = [{
    Rewrites every `mha.multi_head_attention` into

    1. the input projections `Q = query · w_q (+ b_q)`, `K` and `V` as
       `linalg.generic` contractions that write the head-split layout
       `[B, H, S, d]` directly: the weight is read through the indexing map
       `(e, h * d + i)`, so the head split is an indexing map, not a copy. A
       bias initializes the accumulator instead of being added in a second
       pass;
    2. one `mha.attention` on the head-split tensors, with the mask, `scale` and
       `causal` of the layer. Grouped-query heads stay grouped: `K` and `V` have
       `num_kv_heads` heads and are never replicated per query head;
    3. the output projection, which reads the heads through the indexing map
       `(h * dv + i, o)` of `w_o` (the head merge is a reduction over `h` and
       `i`), with `b_o` as the initial accumulator.

    Accumulators are f32 whatever the element type; f16/bf16 results are
    truncated once at the end of each contraction.

    A layer with `rotary` gets an `mha.rotary` of Q and of K between the
    projections and the attention; one with `kv_cache` an
    `mha.cache_append` of K and of V into the caches, which the attention
    reads with key lengths `cache_lengths + Sk`, and whose results replace
    the layer's updated caches.

    With `unfused-only`, only the layers that `mha-fuse-layer` does not fuse
    (those with `return_weights`, `kv_cache` or `rotary`) are decomposed:
    the CPU pipelines do so before `mha-select-lowering-config`, so that
    their attention is configured (for decoding: its key split) and tiled
    as any `mha.attention`. With `projection-rows=N` the projections are
    tiled into `scf.forall` loops, as `mha-fuse-layer` tiles K and V, so
    that they run on threads (the CPU pipelines use 64).

    Example: `mha-opt --mha-decompose layer.mlir`.
  }];
  let options = [
    Option<"unfusedOnly", "unfused-only", "bool", /*default=*/"false",
           "Decompose only the layers mha-fuse-layer does not fuse (with "
           "return_weights, kv_cache or rotary)">,
    Option<"projectionRows", "projection-rows", "int64_t", /*default=*/"0",
           "Tile the projections into scf.forall loops (threads) over "
           "(batch, head, this many rows), the output projection over "
           "(batch, rows); with fewer rows per batch, every batch in a "
           "tile (over heads; the output over 128 columns); 0: leave them "
           "whole">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def MHAAttentionToLinalgPass : Pass<"mha-attention-to-linalg"> {
  let summary = "Lower mha.attention and mha.online_attention to linalg "
                "(the reference lowering; the decomposition stage)";
  let description = [{
    Applies the ops' decompositions (`AggregatedOpInterface`):

    - `mha.attention` becomes its online form (f32 state fills, one
      `mha.online_attention` over all keys, `out = acc / sum`, 0 where
      `sum = 0`, converted to the element type and written into `init`), and
      that online op linalg; untiled, this materializes the scores
      `[B, H, Sq, Sk]`: the reference lowering every faster path is held
      against;
    - `mha.online_attention` (e.g. the key blocks `mha-tile-attention` and
      `mha-fuse-layer` leave with `decompose=false`) becomes linalg ops on
      tensors: `s = q · kᵀ` in f32 (query head `h` reads key/value head
      `h floordiv (H / Hkv)` through the indexing map), the logits (scale, the
      float mask added or the bool mask as `-inf`, the mask read through an
      indexing map that broadcasts its static size-1 dims; the causal
      predicate `j > i + causal_offset` as `-inf`, only in the branch of an
      `scf.if` taken by blocks that straddle the diagonal), the row maximum,
      the rescaling `exp(max - max')` and the updates of `sum` and `acc`, all
      guarded so that rows with no visible key stay at zero.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def MHATileAttentionPass : Pass<"mha-tile-attention"> {
  let summary = "Tile mha.attention FlashAttention-style (online softmax over "
                "key/value tiles)";
  let description = [{
    Rewrites every `mha.attention` with upstream tiling through the ops'
    `TilingInterface`:

    1. an `scf.forall` over batches, heads and tiles of `q-tile-size` queries
       (`scf::tileUsingSCF` on `mha.attention`);
    2. each tile in its online form (`mha.online_attention` between f32 state
       fills and the normalization `acc / sum`);
    3. an `scf.for` over tiles of `kv-tile-size` keys (`scf::tileUsingSCF` on
       the online op's key dimension, a reduction carrying `acc`, `max` and
       `sum`): the FlashAttention-2 loop;
    4. with `decompose` (the default), each key block decomposed into linalg
       (see `mha-attention-to-linalg`).

    Memory is O(S·d): the largest intermediate is one `[q-tile, kv-tile]`
    block of scores. With `causal`, the key range of each query tile ends at
    the last key its last row sees (part of the online op's iteration
    domain), so blocks wholly above the diagonal are never created, and the
    causal predicate is only evaluated on blocks that straddle the diagonal.
    Masks are sliced per block and read through indexing maps. Sizes that
    are not multiples of the tiles and dynamic sizes are handled (the last
    tiles are smaller). Query head `h` reads key/value head `h / (H / Hkv)`.
  }];
  let options = MHA_AttentionTileOptions # [
    Option<"kvSplits", "kv-splits", "int64_t", /*default=*/"0",
           "Chunks the keys are split into, folded in parallel and merged "
           "exactly (flash-decoding; CPU); 0: the op's mha.lowering_config "
           "kv_splits, else 1 (not split)">,
    Option<"workgroups", "workgroups", "bool", /*default=*/"false",
           "Mark the loop over tiles as a grid of GPU workgroups "
           "(#gpu.block mapping), which canonicalization keeps even with "
           "one iteration">,
  ];
  let dependentDialects = [
    "::mlir::gpu::GPUDialect",
    "::mlir::affine::AffineDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def MHAFuseLayerPass : Pass<"mha-fuse-layer"> {
  let summary = "Lower mha.multi_head_attention by upstream tile-and-fuse "
                "(projections fused around FlashAttention)";
  let description = [{
    Decomposes every `mha.multi_head_attention` (as `mha-decompose`) and
    tiles and fuses it with upstream `scf::tileConsumerAndFuseProducersUsingSCF`,
    the output projection being the root:

    ```
    K, V = key · w_k (+ b_k), value · w_v (+ b_v)       once, before the loops,
                                                         each an scf.forall over
                                                         (b, kv head, key tile)
    scf.forall (b, query tile i0)                        parallel
      Y = b_o (or 0)                                     this tile's rows, f32
      scf.for query head h (iter_args Y)
        Q = query[b, i0:] · w_q[:, h] (+ b_q[h])         fused producer
        O = attention of Q over K, V of kv head h / (H / Hkv)
            (the key loop of mha-tile-attention)
        Y += O · w_o[h, :]
    ```

    Each iteration of the forall owns its rows of the result: nothing is
    carried across iterations, so the loop can be distributed to threads or
    GPU workgroups. K and V are computed once for every query tile and every
    query head of their group (GQA/MQA); Q per head and query tile, with the
    bias as its accumulator's initial value. The head split and merge are
    indexing maps of the projections, so the weights are sliced, not copied,
    and the concatenated heads `[B, Sq, H·dv]` never exist. `decompose` as in
    `mha-tile-attention`.
  }];
  let options = MHA_AttentionTileOptions;
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def MHAInsertRuntimeChecksPass : Pass<"mha-insert-runtime-checks"> {
  let summary = "Check at run time the dynamic sizes the verifier could not";
  let description = [{
    The verifiers compare every size the types know; batch and sequence
    lengths may be dynamic, and if they disagree at run time the lowered loops
    read out of bounds. Before each `mha` op, this pass inserts one
    `cf.assert` per pair of sizes that must agree (key and value lengths,
    batch sizes, mask dims, result and state sizes) and that are not both
    static, with the verifier's wording, prefixed by the op's name and source
    location. A mismatch then stops the program with a message. Both
    `mha-lower-to-*` pipelines run it first.

    The checks are the ops' `RuntimeVerifiableOpInterface`, so upstream's
    `--generate-runtime-verification` inserts them as well; this pass checks
    the mha ops only (upstream's also checks every tensor and memref op).
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::cf::ControlFlowDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def MHAAdditiveMaskPass : Pass<"mha-additive-mask"> {
  let summary = "Rewrite i1 masks of mha.attention and mha.attention_weights "
                "as additive float masks";
  let description = [{
    Every `mha.attention` and `mha.attention_weights` with an `i1` mask gets
    instead a mask of the data's
    element type, 0 where the boolean is true and -inf where it is false,
    computed by a `linalg.generic` before it (the two are the same
    attention: a row that sees no key is zero either way). The GPU pipelines
    run it on the host side because SPIR-V storage buffers cannot hold
    `i1`; it costs a mask of the element type's width.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

#endif // MHA_DIALECT_MHA_TRANSFORMS_PASSES_TD
