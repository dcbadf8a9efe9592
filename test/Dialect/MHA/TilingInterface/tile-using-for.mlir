// RUN: mha-opt %s --split-input-file --transform-interpreter --canonicalize | FileCheck %s

// mha.attention implements TilingInterface over (B, H, Sq): upstream
// transform.structured.tile_using_for tiles it. A tile of 4 query heads of a
// group of 4 reads the one kv head h0 floordiv 4; the causal diagonal of the
// tile is i0 + Sk - Sq; the rank-4 mask is sliced along B and Sq and keeps
// its broadcast head dim.

// CHECK-DAG: #[[MIN:.+]] = affine_map<(d0)[s0] -> (-d0 + s0, 32)>
// CHECK-DAG: #[[KV:.+]] = affine_map<(d0) -> (d0 floordiv 4)>
// CHECK-DAG: #[[DIAG:.+]] = affine_map<()[s0, s1, s2] -> (s0 - s1 + s2)>
// CHECK-LABEL: func.func @gqa_causal_mask
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<2x8x?x16xf32>, %[[K:[^:]+]]: tensor<2x2x?x16xf32>, %[[V:[^:]+]]: tensor<2x2x?x16xf32>, %[[M:[^:]+]]: tensor<2x1x?x?xi1>, %[[INIT:[^:]+]]: tensor<2x8x?x16xf32>)
// CHECK: scf.for %[[B:.+]] = %c0 to %c2 step %c1
// CHECK:   scf.for %[[H:.+]] = %c0 to %c8 step %c4
// CHECK:     scf.for %[[I:.+]] = %c0 to %{{.*}} step %c32 iter_args(%[[ACC:.+]] = %{{.*}})
// CHECK:       %[[SZ:.+]] = affine.min #[[MIN]](%[[I]])
// CHECK:       %[[G:.+]] = affine.apply #[[KV]](%[[H]])
// CHECK:       %[[QT:.+]] = tensor.extract_slice %[[Q]][%[[B]], %[[H]], %[[I]], 0] [1, 4, %[[SZ]], 16]
// CHECK:       %[[KT:.+]] = tensor.extract_slice %[[K]][%[[B]], %[[G]], 0, 0] [1, 1, %{{.*}}, 16]
// CHECK:       %[[VT:.+]] = tensor.extract_slice %[[V]][%[[B]], %[[G]], 0, 0] [1, 1, %{{.*}}, 16]
// CHECK:       %[[MT:.+]] = tensor.extract_slice %[[M]][%[[B]], 0, %{{.*}}, 0] [1, 1, %{{.*}}, %{{.*}}]
// CHECK:       %[[OFF:.+]] = affine.apply #[[DIAG]]()[%[[I]], %{{.*}}, %{{.*}}]
// CHECK:       %[[OT:.+]] = tensor.extract_slice %[[ACC]][%[[B]], %[[H]], %[[I]], 0] [1, 4, %[[SZ]], 16]
// CHECK:       %[[R:.+]] = mha.attention ins(%[[QT]], %[[KT]], %[[VT]] : tensor<1x4x?x16xf32>, tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>) mask(%[[MT]] : tensor<1x1x?x?xi1>) causal_offset(%[[OFF]]) outs(%[[OT]] : tensor<1x4x?x16xf32>) {causal}
// CHECK:       tensor.insert_slice %[[R]] into %[[ACC]][%[[B]], %[[H]], %[[I]], 0] [1, 4, %[[SZ]], 16]
func.func @gqa_causal_mask(%q: tensor<2x8x?x16xf32>, %k: tensor<2x2x?x16xf32>, %v: tensor<2x2x?x16xf32>,
                           %m: tensor<2x1x?x?xi1>, %init: tensor<2x8x?x16xf32>) -> tensor<2x8x?x16xf32> {
  %o = mha.attention ins(%q, %k, %v : tensor<2x8x?x16xf32>, tensor<2x2x?x16xf32>, tensor<2x2x?x16xf32>)
         mask(%m : tensor<2x1x?x?xi1>) outs(%init : tensor<2x8x?x16xf32>) {causal} -> tensor<2x8x?x16xf32>
  return %o : tensor<2x8x?x16xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %att = transform.structured.match ops{["mha.attention"]} in %root : (!transform.any_op) -> !transform.any_op
    %tiled, %loops:3 = transform.structured.tile_using_for %att tile_sizes [1, 4, 32]
      : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op)
    transform.yield
  }
}

// -----

// Two query heads of a group of 4 share one kv head; a rank-2 mask is sliced
// along Sq only; without causal there is no causal_offset.

// CHECK-LABEL: func.func @half_group_rank2_mask
// CHECK:   scf.for %[[H:.+]] = %c0 to %c8 step %c2
// CHECK:     %[[G:.+]] = affine.apply #{{.+}}(%[[H]])
// CHECK:     tensor.extract_slice %{{.*}}[0, %[[G]], 0, 0] [1, 1, 12, 16]
// CHECK:     %[[MT:.+]] = tensor.extract_slice %{{.*}}[%{{.*}}, 0] [4, 12] [1, 1] : tensor<8x12xf32> to tensor<4x12xf32>
// CHECK:     mha.attention ins({{.*}} : tensor<1x2x4x16xf32>, tensor<1x1x12x16xf32>, tensor<1x1x12x16xf32>) mask(%[[MT]] : tensor<4x12xf32>) outs({{.*}}) -> tensor<1x2x4x16xf32>
func.func @half_group_rank2_mask(%q: tensor<1x8x8x16xf32>, %k: tensor<1x2x12x16xf32>, %m: tensor<8x12xf32>,
                                 %init: tensor<1x8x8x16xf32>) -> tensor<1x8x8x16xf32> {
  %o = mha.attention ins(%q, %k, %k : tensor<1x8x8x16xf32>, tensor<1x2x12x16xf32>, tensor<1x2x12x16xf32>)
         mask(%m : tensor<8x12xf32>) outs(%init : tensor<1x8x8x16xf32>) -> tensor<1x8x8x16xf32>
  return %o : tensor<1x8x8x16xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %att = transform.structured.match ops{["mha.attention"]} in %root : (!transform.any_op) -> !transform.any_op
    %tiled, %loops:3 = transform.structured.tile_using_for %att tile_sizes [1, 2, 4]
      : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op)
    transform.yield
  }
}
