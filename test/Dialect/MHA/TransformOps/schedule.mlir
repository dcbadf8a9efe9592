// RUN: mha-opt %s --transform-interpreter --canonicalize --cse | FileCheck %s

// A whole schedule scripted with the transform dialect: decompose the layer,
// tile the resulting mha.attention with upstream tile_using_for over (B, H),
// then apply the FlashAttention tiling of transform.mha.tile_attention to the
// per-head tiles, and check that nothing of mha is left.

// CHECK-LABEL: func.func @scripted
// CHECK-NOT: = mha.
// CHECK: scf.for %{{.*}} = %c0 to %c2 step %c1
// CHECK:   scf.for %{{.*}} = %c0 to %c4 step %c2
// CHECK:     scf.for %{{.*}} = %c0 to %c2 step %c1
// CHECK:       scf.for %{{.*}} = %c0 to %c40 step %c16
// CHECK:         scf.for %{{.*}} = %c0 to %{{.*}} step %c8 iter_args({{.*}}) -> (tensor<?xf32>, tensor<?xf32>, tensor<?x8xf32>)
// CHECK:           math.exp
// CHECK-NOT: = mha.
func.func @scripted(%x: tensor<2x40x32xf32>, %wq: tensor<32x32xf32>, %wkv: tensor<32x16xf32>,
                    %wo: tensor<32x32xf32>) -> tensor<2x40x32xf32> {
  %y = mha.multi_head_attention %x, %x, %x, %wq, %wkv, %wkv, %wo
       {num_heads = 4 : i64, num_kv_heads = 2 : i64, causal}
       : (tensor<2x40x32xf32>, tensor<2x40x32xf32>, tensor<2x40x32xf32>, tensor<32x32xf32>,
          tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x32xf32>) -> tensor<2x40x32xf32>
  return %y : tensor<2x40x32xf32>
}
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
