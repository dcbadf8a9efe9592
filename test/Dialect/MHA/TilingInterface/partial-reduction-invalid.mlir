// RUN: not mha-opt %s --transform-interpreter 2>&1 | FileCheck %s

// mha.online_attention's PartialReductionOpInterface splits its keys into
// chunks folded in parallel (PartialReductionOuterParallel, the key split of
// mha-tile-attention): upstream's other strategy, a partial state per key of
// a tile (transform.structured.tile_reduction_using_for), is refused.
// CHECK: error: 'mha.online_attention' op splits only its key dimension (3), in chunks folded in parallel (PartialReductionOuterParallel)
func.func @outer_reduction(%q: tensor<1x4x1x16xf32>, %k: tensor<1x1x1000x16xf32>, %acc: tensor<1x4x1x16xf32>, %max: tensor<1x4x1xf32>, %sum: tensor<1x4x1xf32>)
    -> (tensor<1x4x1x16xf32>, tensor<1x4x1xf32>, tensor<1x4x1xf32>) {
  %a, %m, %s = mha.online_attention ins(%q, %k, %k : tensor<1x4x1x16xf32>, tensor<1x1x1000x16xf32>, tensor<1x1x1000x16xf32>)
      outs(%acc, %max, %sum : tensor<1x4x1x16xf32>, tensor<1x4x1xf32>, tensor<1x4x1xf32>)
      -> tensor<1x4x1x16xf32>, tensor<1x4x1xf32>, tensor<1x4x1xf32>
  return %a, %m, %s : tensor<1x4x1x16xf32>, tensor<1x4x1xf32>, tensor<1x4x1xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["mha.online_attention"]} in %root : (!transform.any_op) -> !transform.any_op
    %fill, %split, %merge, %loop = transform.structured.tile_reduction_using_for %op by tile_sizes = [0, 0, 0, 256]
      : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op)
    transform.yield
  }
}
