//===- Passes.td - MHA dialect passes ----------------------*- tablegen -*-===//
//
// Passes over `mha` ops. Each is a thin wrapper around a library function of
// mha/Dialect/MHA/Transforms/Transforms.h, which transform ops and users'
// own pipelines call as well.
//
//===----------------------------------------------------------------------===//

#ifndef MHA_DIALECT_MHA_TRANSFORMS_PASSES_TD
#define MHA_DIALECT_MHA_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

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

    Example: `mha-opt --mha-decompose layer.mlir`.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def MHAAttentionToLinalgPass : Pass<"mha-attention-to-linalg"> {
  let summary = "Lower mha.attention to linalg with materialized scores "
                "(the reference lowering)";
  let description = [{
    Rewrites every `mha.attention` into `linalg.generic` ops on tensors:

    1. `s = q · kᵀ` into an f32 `[B, H, Sq, Sk]` tensor; query head `h` reads
       key/value head `h floordiv (H / Hkv)` through the indexing map;
    2. the logits: `s · scale`, plus the float mask, or `-inf` where the bool
       mask is false or the key is after the query's causal limit
       (`j > i + Sk - Sq`); masks broadcast through their indexing maps;
    3. a stable softmax: the row maximum `m`, `p = exp(s - m)` (0 on rows whose
       maximum is `-inf`), the row sum `l`;
    4. `acc = p · v` and `out = acc / l` (0 where `l = 0`: a query that sees no
       key gives zeros, not NaN), converted to the element type and written into
       the op's destination.

    This is the simple form that every faster lowering is checked against: it
    holds the whole score matrix. Dynamic `B`, `Sq` and `Sk` are supported; a
    rank-4 mask broadcasts along its static size-1 dims.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def MHATileAttentionPass : Pass<"mha-tile-attention"> {
  let summary = "Tile mha.attention FlashAttention-style (online softmax over "
                "key/value tiles)";
  let description = [{
    Rewrites every `mha.attention` into loops over batches, heads and tiles of
    `q-tile-size` queries (upstream `scf::tileUsingSCF` through the op's
    `TilingInterface`), each holding the FlashAttention-2 loop over tiles of
    `kv-tile-size` keys:

    ```
    m = -inf, l = 0, acc = 0                      (f32, per query row)
    for each key tile:
      s = mask(q · kᵀ · scale)                    [q-tile, kv-tile]
      m' = max(m, rowmax(s)); p = exp(s - m'); alpha = exp(m - m')
      l = alpha · l + rowsum(p); acc = alpha · acc + p · v; m = m'
    out = acc / l                                 (0 where l = 0)
    ```

    Memory is O(S·d): the largest intermediate is one `[q-tile, kv-tile]`
    block of scores. With `causal`, the key loop of a query tile stops after
    the last key its last row sees, so tiles wholly above the diagonal are
    never visited, and the causal predicate is only evaluated on tiles that
    straddle the diagonal. Masks are read per tile. Sizes that are not
    multiples of the tiles and dynamic sizes are handled (the last tiles are
    smaller). Query head `h` reads key/value head `h / (H / Hkv)`.
  }];
  let options = [
    Option<"qTileSize", "q-tile-size", "int64_t", /*default=*/"64",
           "Queries per tile (rows of the score block)">,
    Option<"kvTileSize", "kv-tile-size", "int64_t", /*default=*/"64",
           "Keys per online-softmax step (columns of the score block)">,
  ];
  let dependentDialects = [
    "::mlir::affine::AffineDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def MHAFuseLayerPass : Pass<"mha-fuse-layer"> {
  let summary = "Lower mha.multi_head_attention into one fused, tiled loop "
                "nest (projections fused around FlashAttention)";
  let description = [{
    Rewrites every `mha.multi_head_attention` into

    ```
    Y = b_o (or 0)                                        [B, Sq, Eo], f32
    for b < B, for kv head g < Hkv:
      K = key[b] · w_k[:, g] (+ b_k[g])                  [Sk, dk], once per (b, g)
      V = value[b] · w_v[:, g] (+ b_v[g])                [Sk, dv]
      for query head h of group g, for query tile i0:
        Q = (query[b, i0:] · w_q[:, h] (+ b_q[h])) · scale      [q-tile, dk]
        O = online softmax of Q over key tiles of K, V          [q-tile, dv]
        Y[b, i0:] += O · w_o[h, :]
    ```

    The head split and merge are column and row slices of the weights
    (strided views, no copies). K and V are computed once per batch and kv
    head and reused by every query head of the group (GQA/MQA) and every query
    tile; Q is computed per query tile inside the loop (producer fusion), with
    the bias as its accumulator's initial value and the scale as its epilogue;
    the output projection consumes each finished tile, so the concatenated
    heads `[B, Sq, H·dv]` never exist. The attention itself is the loop of
    `mha-tile-attention` (same options, same causal tile skipping).
  }];
  let options = [
    Option<"qTileSize", "q-tile-size", "int64_t", /*default=*/"64",
           "Queries per tile (rows of the score block)">,
    Option<"kvTileSize", "kv-tile-size", "int64_t", /*default=*/"64",
           "Keys per online-softmax step (columns of the score block)">,
  ];
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
    batch sizes, mask dims, result sizes) and that are not both static, with
    the verifier's wording. A mismatch then stops the program with a message.
    Both `mha-lower-to-*` pipelines run it first.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::cf::ControlFlowDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

#endif // MHA_DIALECT_MHA_TRANSFORMS_PASSES_TD
