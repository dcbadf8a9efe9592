//===- MHATransformOps.td - transform ops for mha ----------*- tablegen -*-===//
//
// Transform-dialect ops that apply the MHA lowerings to the payload ops a
// handle points to, so that schedules can be scripted with
// --transform-interpreter. Each calls the same library function as the pass
// of the same name (mha/Dialect/MHA/Transforms/Transforms.h).
//
//===----------------------------------------------------------------------===//

#ifndef MHA_DIALECT_MHA_TRANSFORMOPS_MHATRANSFORMOPS_TD
#define MHA_DIALECT_MHA_TRANSFORMOPS_MHATRANSFORMOPS_TD

include "mlir/Dialect/Transform/IR/TransformDialect.td"
include "mlir/Dialect/Transform/Interfaces/TransformInterfaces.td"
include "mlir/Dialect/Transform/IR/TransformTypes.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/OpBase.td"

class MHA_TransformOp<string mnemonic, list<Trait> traits = []>
    : Op<Transform_Dialect, "mha." # mnemonic,
         !listconcat([FunctionalStyleTransformOpTrait, MemoryEffectsOpInterface,
                      TransformOpInterface, TransformEachOpTrait,
                      ReportTrackingListenerFailuresOpTrait], traits)> {
  let assemblyFormat =
      "$target attr-dict `:` functional-type(operands, results)";
}

def MHADecomposeOp : MHA_TransformOp<"decompose"> {
  let summary = "Decompose mha.multi_head_attention (as --mha-decompose)";
  let description = [{
    Rewrites each targeted `mha.multi_head_attention` into its projections
    around one `mha.attention` (see `--mha-decompose`). Returns a handle to the
    `mha.attention` ops created. Consumes the target handle; other ops than
    `mha.multi_head_attention` make the transform fail definitely.

    ```mlir
    %att = transform.mha.decompose %layer : (!transform.any_op) -> !transform.any_op
    ```
  }];
  let arguments = (ins TransformHandleTypeInterface:$target);
  let results = (outs TransformHandleTypeInterface:$attention);
  let extraClassDeclaration = [{
    ::mlir::DiagnosedSilenceableFailure applyToOne(
        ::mlir::transform::TransformRewriter &rewriter,
        ::mlir::mha::MultiHeadAttentionOp target,
        ::mlir::transform::ApplyToEachResultList &results,
        ::mlir::transform::TransformState &state);
  }];
}

def MHATileAttentionOp : MHA_TransformOp<"tile_attention"> {
  let summary = "Tile mha.attention FlashAttention-style (as "
                "--mha-tile-attention)";
  let description = [{
    Rewrites each targeted `mha.attention` into an `scf.forall` over batches,
    heads and tiles of `q_tile_size` queries around the online-softmax loop
    over tiles of `kv_tile_size` keys (see `--mha-tile-attention`). Returns a
    handle to the `scf.forall` and one to the key loop (`scf.for`) of each
    target, so that a schedule can map the first to threads or workgroups.
    `head_tile` query heads make a tile (the heads of a group, for
    decoding). With `kv_splits` above 1 the keys are split into that many chunks as
    well (flash-decoding): the `scf.forall` then runs over (batch, head,
    query tile, chunk) and a second one merges the chunks' states.
    `prefetch_blocks` above 0 marks the key loop for
    `mha-prefetch-key-blocks` (that many key blocks ahead).

    ```mlir
    %forall, %keys = transform.mha.tile_attention %att {q_tile_size = 64, kv_tile_size = 32}
      : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    ```
  }];
  let arguments = (ins TransformHandleTypeInterface:$target,
                   DefaultValuedAttr<I64Attr, "64">:$q_tile_size,
                   DefaultValuedAttr<I64Attr, "64">:$kv_tile_size,
                   DefaultValuedAttr<I64Attr, "1">:$kv_splits,
                   DefaultValuedAttr<I64Attr, "1">:$head_tile,
                   DefaultValuedAttr<I64Attr, "0">:$prefetch_blocks);
  let results = (outs TransformHandleTypeInterface:$forall,
                      TransformHandleTypeInterface:$key_loop);
  let extraClassDeclaration = [{
    ::mlir::DiagnosedSilenceableFailure applyToOne(
        ::mlir::transform::TransformRewriter &rewriter,
        ::mlir::mha::AttentionOp target,
        ::mlir::transform::ApplyToEachResultList &results,
        ::mlir::transform::TransformState &state);
  }];
}

def MHAFuseLayerOp : MHA_TransformOp<"fuse_layer"> {
  let summary = "Lower mha.multi_head_attention into one fused loop nest (as "
                "--mha-fuse-layer)";
  let description = [{
    Rewrites each targeted `mha.multi_head_attention` into the fused, tiled
    loop nest of `--mha-fuse-layer`. Returns handles to its loops: the
    `scf.forall` over (batch, query tile), the `scf.for` over query heads
    inside it, the `scf.for` over key tiles inside that, and the
    `scf.forall`s of the key and of the value projection before the nest.
    `q_tile_size = 0` chooses the query tile from the shape (128 rows when
    B * Sq >= 512, else 64), as `mha-lower-to-cpu` does by default.

    ```mlir
    %forall, %heads, %keys, %k, %v = transform.mha.fuse_layer %layer {q_tile_size = 64, kv_tile_size = 64}
      : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op,
                                !transform.any_op, !transform.any_op)
    ```
  }];
  let arguments = (ins TransformHandleTypeInterface:$target,
                   DefaultValuedAttr<I64Attr, "64">:$q_tile_size,
                   DefaultValuedAttr<I64Attr, "64">:$kv_tile_size);
  let results = (outs TransformHandleTypeInterface:$forall,
                      TransformHandleTypeInterface:$head_loop,
                      TransformHandleTypeInterface:$key_loop,
                      TransformHandleTypeInterface:$key_projection_loop,
                      TransformHandleTypeInterface:$value_projection_loop);
  let extraClassDeclaration = [{
    ::mlir::DiagnosedSilenceableFailure applyToOne(
        ::mlir::transform::TransformRewriter &rewriter,
        ::mlir::mha::MultiHeadAttentionOp target,
        ::mlir::transform::ApplyToEachResultList &results,
        ::mlir::transform::TransformState &state);
  }];
}

def MHAAttentionToLinalgOp : MHA_TransformOp<"attention_to_linalg"> {
  let summary = "Lower mha.attention to the reference linalg form (as "
                "--mha-attention-to-linalg)";
  let description = [{
    Rewrites each targeted `mha.attention` into linalg with materialized
    scores (see `--mha-attention-to-linalg`). Returns a handle to the op that
    produces the result (the final `linalg.generic`).
  }];
  let arguments = (ins TransformHandleTypeInterface:$target);
  let results = (outs TransformHandleTypeInterface:$transformed);
  let extraClassDeclaration = [{
    ::mlir::DiagnosedSilenceableFailure applyToOne(
        ::mlir::transform::TransformRewriter &rewriter,
        ::mlir::mha::AttentionOp target,
        ::mlir::transform::ApplyToEachResultList &results,
        ::mlir::transform::TransformState &state);
  }];
}

def MHADecomposeOnlineAttentionOp
    : MHA_TransformOp<"decompose_online_attention"> {
  let summary = "Decompose mha.online_attention into linalg";
  let description = [{
    Rewrites each targeted `mha.online_attention` into linalg ops on tensors
    (its `AggregatedOpInterface` decomposition: scores, logits, the running
    maximum, rescaling and the two updates; see the op's description).
    Upstream `transform.structured.decompose_interface` does the same for
    single-result ops such as `mha.attention`; this op handles the three
    results of the online form. Returns a handle to the contraction that
    produces the new accumulator.

    ```mlir
    %acc = transform.mha.decompose_online_attention %block
      : (!transform.any_op) -> !transform.any_op
    ```
  }];
  let arguments = (ins TransformHandleTypeInterface:$target);
  let results = (outs TransformHandleTypeInterface:$accumulator);
  let extraClassDeclaration = [{
    ::mlir::DiagnosedSilenceableFailure applyToOne(
        ::mlir::transform::TransformRewriter &rewriter,
        ::mlir::mha::OnlineAttentionOp target,
        ::mlir::transform::ApplyToEachResultList &results,
        ::mlir::transform::TransformState &state);
  }];
}

def MHARaiseAttentionOp : MHA_TransformOp<"raise_attention"> {
  let summary = "Raise the attention ending at a contraction to "
                "mha.attention (as --mha-raise-attention)";
  let description = [{
    Each target is a linalg contraction of attention probabilities with
    values; it and the chain it is computed from (Q·Kᵀ, scale, mask,
    softmax) are replaced by one `mha.attention` (see
    `--mha-raise-attention`). Returns a handle to the `mha.attention` ops.
    Consumes the target handle. A target that is not the end of exactly such
    a chain makes the transform fail silenceably, with the reason, and is
    left as it was.

    ```mlir
    %pv = transform.structured.match ops{["linalg.batch_matmul"]} in %f
      : (!transform.any_op) -> !transform.any_op
    %att = transform.mha.raise_attention %pv
      : (!transform.any_op) -> !transform.any_op
    ```
  }];
  let arguments = (ins TransformHandleTypeInterface:$target);
  let results = (outs TransformHandleTypeInterface:$attention);
  let extraClassDeclaration = [{
    ::mlir::DiagnosedSilenceableFailure applyToOne(
        ::mlir::transform::TransformRewriter &rewriter,
        ::mlir::Operation *target,
        ::mlir::transform::ApplyToEachResultList &results,
        ::mlir::transform::TransformState &state);
  }];
}

def MHARaiseLayerOp : MHA_TransformOp<"raise_layer"> {
  let summary = "Raise the layer around an mha.attention to "
                "mha.multi_head_attention (as --mha-raise-attention)";
  let description = [{
    Each target is an `mha.attention` (e.g. from
    `transform.mha.raise_attention`); where its queries, keys and values are
    projections split into heads and its result is merged back and
    projected, that whole layer is replaced by one
    `mha.multi_head_attention` (see `--mha-raise-attention`). Returns a
    handle to the new ops. Consumes the target handle; a target whose layer
    is not all there makes the transform fail silenceably with the reason.
  }];
  let arguments = (ins TransformHandleTypeInterface:$target);
  let results = (outs TransformHandleTypeInterface:$layer);
  let extraClassDeclaration = [{
    ::mlir::DiagnosedSilenceableFailure applyToOne(
        ::mlir::transform::TransformRewriter &rewriter,
        ::mlir::mha::AttentionOp target,
        ::mlir::transform::ApplyToEachResultList &results,
        ::mlir::transform::TransformState &state);
  }];
}

def MHAFuseConsumerOp : Op<Transform_Dialect, "mha.fuse_consumer",
    [DeclareOpInterfaceMethods<TransformOpInterface>,
     DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
     ReportTrackingListenerFailuresOpTrait]> {
  let summary = "Fuse a consumer into the loop nest that produces its operand "
                "(upstream scf::tileAndFuseConsumer)";
  let description = [{
    Moves the single payload op of `consumer` into the loop nest `loops`
    (outermost first, one payload op each; the loops tiling made, e.g. by
    `transform.structured.tile_using_forall`) that produces one of its
    operands: each iteration computes the consumer on the tile its operand
    tile feeds (`TilingInterface::getIterationDomainTileFromOperandTiles`), and
    the loops yield the consumer's result. This is upstream's consumer fusion
    (`scf::tileAndFuseConsumer`), which MLIR 22 only exposes as a test op.
    An output projection fused into the attention's loop over query tiles
    keeps the projection's accumulation local to each iteration.

    Returns a handle to the fused consumer and one to each loop of the
    updated nest. Consumes `consumer` and `loops`; fails silenceably when the
    consumer cannot be fused.

    ```mlir
    %fused, %forall2 = transform.mha.fuse_consumer %out_proj into %forall
      : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)
    ```
  }];
  let arguments = (ins TransformHandleTypeInterface:$consumer,
                   Variadic<TransformHandleTypeInterface>:$loops);
  let results = (outs TransformHandleTypeInterface:$fused_consumer,
                      Variadic<TransformHandleTypeInterface>:$updated_loops);
  let assemblyFormat = [{
    $consumer `into` $loops attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // MHA_DIALECT_MHA_TRANSFORMOPS_MHATRANSFORMOPS_TD
