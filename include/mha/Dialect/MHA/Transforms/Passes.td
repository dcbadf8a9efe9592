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

#endif // MHA_DIALECT_MHA_TRANSFORMS_PASSES_TD
