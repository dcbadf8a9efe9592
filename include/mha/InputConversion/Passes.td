//===- Passes.td - Input conversion: raising frontend IR to mha ops --*- tablegen -*-===//
//
// Input conversion: raising frontend IR to mha ops. Each pass is a thin wrapper
// around a library function that transform ops and users' own pipelines call as
// well.
//
//===----------------------------------------------------------------------===//

#ifndef MHA_INPUTCONVERSION_PASSES_TD
#define MHA_INPUTCONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def MHARaiseAttentionPass : Pass<"mha-raise-attention"> {
  let summary = "Raise scaled dot-product attention in linalg ops to "
                "mha.attention";
  let description = [{
    Frontends (torch-mlir, ONNX importers, StableHLO/TOSA lowerings) hand
    attention over as linalg ops: a contraction of queries and keys, a
    scale, an optional mask, a softmax over the keys and a contraction with
    the values. This pass finds that chain and replaces it by one
    `mha.attention`, so that the tiled, vectorized and GPU lowerings apply.
    It anchors on each contraction whose lhs is a softmax and reads:

    - **Q·Kᵀ**: any linalg contraction (`linalg.matmul`/`batch_matmul`,
      their `indexing_maps` forms, `linalg.generic`, `linalg.contract`)
      with 0, 1 or 2 batch dims into a zero-filled init; the key read with
      its head dim last through the maps, or first through a
      `linalg.transpose` (or transposing generic) of the last two dims, which
      is then skipped, or first as it is when no transpose op made it (an
      argument, a cache kept transposed): then the op reads it in place
      (`key_transposed`). The same for P·V (values with the head dim last, or
      transposed through an op).
    - **scale**: multiplications or divisions by positive constants (or
      scalars computed from constants, folded), on the scores or as an
      elementwise op on Q or K; their product becomes `scale`.
    - **mask**: a float tensor added to the scaled scores, or
      `select(m, scores, fill)` / `select(m, fill, scores)` with a boolean
      `m` and `fill` -inf or at most -1e4 (a predicate computed from one
      tensor, such as `m == 0`, is materialized as an i1 tensor). The mask
      must be broadcastable to the scores in order; size-1 and missing dims
      broadcast. A predicate on the positions (`linalg.index`) or a constant
      mask that is the triangle `key <= query + c` becomes `causal`, with
      `causal_offset` unless `c` is `Sk - Sq`.
    - **softmax** over the last dim: `linalg.softmax`, or
      `exp(x - max(x)) / sum(exp(x - max(x)))` split into linalg ops in any
      way (fused or not, keepdim reductions through reshapes or size-1 dims,
      division or multiplication by the reciprocal).
    - reshapes of the batch dims between the steps (`[B, H]` collapsed to
      `[B*H]` around `linalg.batch_matmul`); key/value heads repeated for
      grouped-query attention (a broadcast over a group dim collapsed into
      the heads) become `Hkv` heads.

    TOSA is read the same way: `tosa.matmul` (zero points 0) as the
    contractions, `tosa.transpose`, `tosa.reshape` of the batch dims,
    `tosa.mul` (shift 0), `tosa.add`, `tosa.sub`, `tosa.exp`,
    `tosa.reduce_max`/`reduce_sum` (keepdim), `tosa.reciprocal`,
    `tosa.select`, size-1 dims broadcast; so are arith/math ops applied to
    whole tensors. Not raised yet: a scale that is not a constant (scales
    computed from constants are folded), a key made by a transpose of other
    dims than its last two, causal predicates in TOSA (`tosa.greater` on
    iota tensors).

    Every `mha-lower-to-*` pipeline runs this pass first
    (`raise-attention=true`, their default).

    With `layers` (default), each `mha.attention` whose queries, keys and
    values are projections split into heads (`x · W (+ b)`, 2-d or 3-d, the
    weight read `[in, out]` or `[out, in]` through maps, a transpose or a
    batch broadcast, the bias added after or as the initial value; then
    `expand_shape` to `[B, S, H, d]` and a transpose to `[B, H, S, d]`) and
    whose result is moved back (transpose), merged (`collapse_shape`) and
    projected the same way becomes one `mha.multi_head_attention`: weights
    given `[out, in]` get a `linalg.transpose` (the one the frontend made
    becomes dead), a missing bias is zeros when others are there. A layer
    whose causal diagonal is not bottom-right stays at `mha.attention`.

    Rank-3 operands `[N, S, d]` become `[N, 1, S, d]` (or `[B, H, S, d]` when
    they are collapses of that), rank-2 ones `[1, 1, S, d]`; the result is
    reshaped back. Ops the raised chain no longer needs are erased.
    Anything that does not match exactly stays as it was; the reason is
    given by `explain=true` as a remark at each contraction that was not
    raised (and by the transform op, as its error). Semantics: a query whose keys are all masked gets zeros where the
    unraised IR gives NaN (fill -inf) or the mean of the values (finite fill)
    (docs/Semantics.md).
  }];
  let options = [
    Option<"explain", "explain", "bool", /*default=*/"false",
           "Emit a remark at each contraction that was not raised, with the "
           "reason">,
    Option<"layers", "layers", "bool", /*default=*/"true",
           "Raise the layer around each mha.attention (projections, head "
           "split and merge) to mha.multi_head_attention where it is all "
           "there">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::mha::MHADialect",
    "::mlir::tensor::TensorDialect",
  ];
}

#endif // MHA_INPUTCONVERSION_PASSES_TD
