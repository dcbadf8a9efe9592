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
    Rewrites each targeted `mha.attention` into loops over batches, heads and
    tiles of `q_tile_size` queries around the online-softmax loop over tiles
    of `kv_tile_size` keys (see `--mha-tile-attention`). Returns a handle to
    the outermost loop created for each target.

    ```mlir
    %loop = transform.mha.tile_attention %att {q_tile_size = 64, kv_tile_size = 32}
      : (!transform.any_op) -> !transform.any_op
    ```
  }];
  let arguments = (ins TransformHandleTypeInterface:$target,
                   DefaultValuedAttr<I64Attr, "64">:$q_tile_size,
                   DefaultValuedAttr<I64Attr, "64">:$kv_tile_size);
  let results = (outs TransformHandleTypeInterface:$loop);
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
    loop nest of `--mha-fuse-layer`. Returns a handle to its outermost loop.

    ```mlir
    %loop = transform.mha.fuse_layer %layer {q_tile_size = 64, kv_tile_size = 64}
      : (!transform.any_op) -> !transform.any_op
    ```
  }];
  let arguments = (ins TransformHandleTypeInterface:$target,
                   DefaultValuedAttr<I64Attr, "64">:$q_tile_size,
                   DefaultValuedAttr<I64Attr, "64">:$kv_tile_size);
  let results = (outs TransformHandleTypeInterface:$loop);
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

#endif // MHA_DIALECT_MHA_TRANSFORMOPS_MHATRANSFORMOPS_TD
