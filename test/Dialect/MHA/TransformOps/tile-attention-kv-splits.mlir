// RUN: mha-opt %s --transform-interpreter --canonicalize | FileCheck %s

// transform.mha.tile_attention with kv_splits: the forall it returns runs
// over (batch, head, chunk) here (one query tile), and the state of each
// chunk is merged after it; prefetch_blocks marks the key loop for
// mha-prefetch-key-blocks.
// CHECK-LABEL: func.func @split
// CHECK: scf.forall ({{.*}}) in (2, 4, 4) shared_outs({{.*}}) -> (tensor<4x2x4x1x8xf32>, tensor<4x2x4x1xf32>, tensor<4x2x4x1xf32>)
// CHECK:   scf.for {{.*}} step %c32
// CHECK:   } {mha.key_blocks_read_once, mha.prefetch_blocks = 2 : i64, test.key_loop}
// CHECK: } {test.forall}
// CHECK: scf.forall ({{.*}}) in (2, 4)
func.func @split(%q: tensor<2x4x1x8xf32>, %k: tensor<2x4x128x8xf32>, %init: tensor<2x4x1x8xf32>) -> tensor<2x4x1x8xf32> {
  %o = mha.attention ins(%q, %k, %k : tensor<2x4x1x8xf32>, tensor<2x4x128x8xf32>, tensor<2x4x128x8xf32>)
         outs(%init : tensor<2x4x1x8xf32>) -> tensor<2x4x1x8xf32>
  return %o : tensor<2x4x1x8xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %att = transform.structured.match ops{["mha.attention"]} in %root : (!transform.any_op) -> !transform.any_op
    %forall, %keys = transform.mha.tile_attention %att {q_tile_size = 16, kv_tile_size = 32, kv_splits = 4, prefetch_blocks = 2}
      : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.annotate %forall "test.forall" : !transform.any_op
    transform.annotate %keys "test.key_loop" : !transform.any_op
    transform.yield
  }
}
