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

#endif // MHA_DIALECT_MHA_TRANSFORMS_PASSES_TD
