// The whole layer scheduled with upstream transform ops plus ours:
//   1. transform.mha.decompose: projections around one mha.attention;
//   2. upstream tile_using_forall: an scf.forall over (batch, 16-query tile),
//      all heads per tile;
//   3. upstream fuse_into_containing_op: the Q projection and its bias
//      initialization fused as producers (K and V stay outside, computed once);
//   4. upstream decompose_interface: the attention tile into its online form;
//   5. transform.mha.fuse_consumer: the output projection fused as a consumer
//      (each iteration owns its rows of the result);
//   6. upstream tile_using_for: the online op's key dimension, a reduction,
//      tiled by 8 (the FlashAttention key loop, ending at the causal bound);
//   7. transform.mha.decompose_online_attention: each key block into linalg.
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %layer = transform.structured.match ops{["mha.multi_head_attention"]} in %root
      : (!transform.any_op) -> !transform.any_op
    %att = transform.mha.decompose %layer : (!transform.any_op) -> !transform.any_op
    %q_proj = transform.get_producer_of_operand %att[0] : (!transform.any_op) -> !transform.any_op
    %q_init = transform.get_producer_of_operand %q_proj[2] : (!transform.any_op) -> !transform.any_op
    %out_proj = transform.get_consumers_of_result %att[0] : (!transform.any_op) -> !transform.any_op
    %tiled, %forall = transform.structured.tile_using_forall %att tile_sizes [1, 0, 16]
      : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %q_tile, %forall_1 = transform.structured.fuse_into_containing_op %q_proj into %forall
      : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)
    %q_init_tile, %forall_2 = transform.structured.fuse_into_containing_op %q_init into %forall_1
      : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)
    %normalized = transform.structured.decompose_interface %tiled
      : (!transform.any_op) -> !transform.any_op
    %out_tile, %forall_3 = transform.mha.fuse_consumer %out_proj into %forall_2
      : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)
    %online = transform.structured.match ops{["mha.online_attention"]} in %forall_3
      : (!transform.any_op) -> !transform.any_op
    %block, %keys = transform.structured.tile_using_for %online tile_sizes [0, 0, 0, 8]
      : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %acc = transform.mha.decompose_online_attention %block
      : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}
