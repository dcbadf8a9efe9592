// A transform schedule for transform-preload-library: decompose each layer,
// tile the core over (batch, 2 heads) with upstream tile_using_for, then the
// FlashAttention tiling of transform.mha.tile_attention.
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %layer = transform.structured.match ops{["mha.multi_head_attention"]} in %root
      : (!transform.any_op) -> !transform.any_op
    %att = transform.mha.decompose %layer : (!transform.any_op) -> !transform.any_op
    %tiled, %loops:2 = transform.structured.tile_using_for %att tile_sizes [1, 2]
      : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    %flash = transform.mha.tile_attention %tiled {q_tile_size = 16, kv_tile_size = 8}
      : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}
