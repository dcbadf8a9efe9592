// RUN: mha-opt %s --transform-interpreter --canonicalize | FileCheck %s

// transform.structured.tile_using_forall tiles mha.attention too: one
// parallel tile per (batch, 16 queries), all heads.

// CHECK-LABEL: func.func @forall
// CHECK: scf.forall (%[[B:.+]], %[[T:.+]]) in (2, 4) shared_outs(%[[OUT:.+]] = %{{.*}})
// CHECK:   %[[I:.+]] = affine.apply #{{.+}}(%[[T]])
// CHECK:   %[[R:.+]] = mha.attention ins({{.*}} : tensor<1x4x16x8xf32>, tensor<1x4x64x8xf32>, tensor<1x4x64x8xf32>) outs({{.*}} : tensor<1x4x16x8xf32>)
// CHECK:   scf.forall.in_parallel
// CHECK:     tensor.parallel_insert_slice %[[R]] into %[[OUT]][%[[B]], 0, %[[I]], 0] [1, 4, 16, 8]
func.func @forall(%q: tensor<2x4x64x8xf32>, %init: tensor<2x4x64x8xf32>) -> tensor<2x4x64x8xf32> {
  %o = mha.attention ins(%q, %q, %q : tensor<2x4x64x8xf32>, tensor<2x4x64x8xf32>, tensor<2x4x64x8xf32>)
         outs(%init : tensor<2x4x64x8xf32>) -> tensor<2x4x64x8xf32>
  return %o : tensor<2x4x64x8xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %att = transform.structured.match ops{["mha.attention"]} in %root : (!transform.any_op) -> !transform.any_op
    %tiled, %loop = transform.structured.tile_using_forall %att tile_sizes [1, 0, 16]
      : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}
