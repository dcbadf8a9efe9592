// RUN: mha-opt %s --transform-interpreter --verify-diagnostics

// A head tile of 3 neither divides nor is a multiple of the group size 4: the
// tile's query heads would not map uniformly onto kv heads.
func.func @bad_head_tile(%q: tensor<1x8x8x16xf32>, %k: tensor<1x2x8x16xf32>, %init: tensor<1x8x8x16xf32>) -> tensor<1x8x8x16xf32> {
  // expected-error @+3 {{cannot tile 8 query heads over 2 key/value heads with a head tile size that neither divides nor is a multiple of the group size 4}}
  // expected-error @+2 {{faild to tile operation}}
  // expected-error @+1 {{failed to generate tiling loops}}
  %o = mha.attention ins(%q, %k, %k : tensor<1x8x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
         outs(%init : tensor<1x8x8x16xf32>) -> tensor<1x8x8x16xf32>
  return %o : tensor<1x8x8x16xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %att = transform.structured.match ops{["mha.attention"]} in %root : (!transform.any_op) -> !transform.any_op
    %tiled, %loops:3 = transform.structured.tile_using_for %att tile_sizes [1, 3, 4]
      : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op)
    transform.yield
  }
}
