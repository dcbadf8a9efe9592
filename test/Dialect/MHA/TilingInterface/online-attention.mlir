// RUN: mha-opt %s --split-input-file --transform-interpreter --canonicalize --cse | FileCheck %s

// mha.online_attention's key dimension is a reduction of its TilingInterface:
// upstream tile_using_for makes the key loop, carrying acc, max and sum. With
// `causal`, the loop ends at min(Sk, max(0, Sq + Sk - Sq)) and each block of
// keys at j0 gets the diagonal Sk - Sq - j0; key, value and mask are sliced
// along the keys, the queries and the state are whole.

// CHECK-DAG: #[[LAST:.+]] = affine_map<()[s0, s1, s2] -> (0, s0 - s1 + s2)>
// CHECK-DAG: #[[END:.+]] = affine_map<()[s0, s1] -> (s1, s0)>
// CHECK-DAG: #[[KT:.+]] = affine_map<(d0)[s0] -> (-d0 + s0, 16)>
// CHECK-DAG: #[[DIAG:.+]] = affine_map<()[s0, s1, s2] -> (-s0 - s1 + s2)>
// CHECK-LABEL: func.func @keys
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<1x2x?x16xf32>, %[[K:[^:]+]]: tensor<1x1x?x16xf32>, %[[V:[^:]+]]: tensor<1x1x?x8xf32>, %[[M:[^:]+]]: tensor<1x1x?x?xi1>, %[[ACC:[^:]+]]: tensor<1x2x?x8xf32>, %[[MAX:[^:]+]]: tensor<1x2x?xf32>, %[[SUM:[^:]+]]: tensor<1x2x?xf32>)
// CHECK: %[[SQ:.+]] = tensor.dim %[[Q]], %c2
// CHECK: %[[SK:.+]] = tensor.dim %[[K]], %c2
// CHECK: %[[POS:.+]] = affine.max #[[LAST]]()[%[[SQ]], %[[SQ]], %[[SK]]]
// CHECK: %[[E:.+]] = affine.min #[[END]]()[%[[SK]], %[[POS]]]
// CHECK: scf.for %[[J0:.+]] = %c0 to %[[E]] step %c16 iter_args(%[[A:.+]] = %[[ACC]], %[[MX:.+]] = %[[MAX]], %[[S:.+]] = %[[SUM]])
// CHECK:   %[[N:.+]] = affine.min #[[KT]](%[[J0]])[%[[E]]]
// CHECK:   %[[KB:.+]] = tensor.extract_slice %[[K]][0, 0, %[[J0]], 0] [1, 1, %[[N]], 16]
// CHECK:   %[[VB:.+]] = tensor.extract_slice %[[V]][0, 0, %[[J0]], 0] [1, 1, %[[N]], 8]
// CHECK:   %[[MB:.+]] = tensor.extract_slice %[[M]][0, 0, 0, %[[J0]]] [1, 1, %[[SQ]], %[[N]]]
// CHECK:   %[[OFF:.+]] = affine.apply #[[DIAG]]()[%[[J0]], %[[SQ]], %[[SK]]]
// CHECK:   mha.online_attention ins(%{{.*}}, %[[KB]], %[[VB]] : {{.*}}) mask(%[[MB]] : tensor<1x1x?x?xi1>) causal_offset(%[[OFF]])
// CHECK:   scf.yield
func.func @keys(%q: tensor<1x2x?x16xf32>, %k: tensor<1x1x?x16xf32>, %v: tensor<1x1x?x8xf32>,
                %m: tensor<1x1x?x?xi1>, %acc: tensor<1x2x?x8xf32>, %max: tensor<1x2x?xf32>, %sum: tensor<1x2x?xf32>)
    -> (tensor<1x2x?x8xf32>, tensor<1x2x?xf32>, tensor<1x2x?xf32>) {
  %r:3 = mha.online_attention ins(%q, %k, %v : tensor<1x2x?x16xf32>, tensor<1x1x?x16xf32>, tensor<1x1x?x8xf32>)
           mask(%m : tensor<1x1x?x?xi1>)
           outs(%acc, %max, %sum : tensor<1x2x?x8xf32>, tensor<1x2x?xf32>, tensor<1x2x?xf32>)
           {causal} -> tensor<1x2x?x8xf32>, tensor<1x2x?xf32>, tensor<1x2x?xf32>
  return %r#0, %r#1, %r#2 : tensor<1x2x?x8xf32>, tensor<1x2x?xf32>, tensor<1x2x?xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["mha.online_attention"]} in %root : (!transform.any_op) -> !transform.any_op
    %tiled, %loop = transform.structured.tile_using_for %op tile_sizes [0, 0, 0, 16]
      : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}

// -----

// Queries first (a forall over 32-query tiles), then keys: the key loop of
// each query tile ends at the tile's own causal bound min(128, i0 + 32), so
// blocks above the diagonal are never created.

// CHECK-DAG: #[[ROW_END:.+]] = affine_map<(d0) -> (0, d0 * 32 + 32)>
// CHECK-DAG: #[[BOUND:.+]] = affine_map<()[s0] -> (128, s0)>
// CHECK-DAG: #[[TILE_DIAG:.+]] = affine_map<(d0)[s0] -> (d0 * 32 - s0)>
// CHECK-LABEL: func.func @queries_then_keys
// CHECK: scf.forall (%[[T:.+]]) in (4)
// CHECK:   %[[POS:.+]] = affine.max #[[ROW_END]](%[[T]])
// CHECK:   %[[E:.+]] = affine.min #[[BOUND]]()[%[[POS]]]
// CHECK:   scf.for %[[J0:.+]] = %c0 to %[[E]] step %c32
// CHECK:     %[[OFF:.+]] = affine.apply #[[TILE_DIAG]](%[[T]])[%[[J0]]]
// CHECK:     mha.online_attention {{.*}} causal_offset(%[[OFF]])
// CHECK:     mha.online_attention
func.func @queries_then_keys(%q: tensor<1x1x128x16xf32>, %acc: tensor<1x1x128x16xf32>,
                             %max: tensor<1x1x128xf32>, %sum: tensor<1x1x128xf32>)
    -> (tensor<1x1x128x16xf32>, tensor<1x1x128xf32>, tensor<1x1x128xf32>) {
  %r:3 = mha.online_attention ins(%q, %q, %q : tensor<1x1x128x16xf32>, tensor<1x1x128x16xf32>, tensor<1x1x128x16xf32>)
           outs(%acc, %max, %sum : tensor<1x1x128x16xf32>, tensor<1x1x128xf32>, tensor<1x1x128xf32>)
           {causal} -> tensor<1x1x128x16xf32>, tensor<1x1x128xf32>, tensor<1x1x128xf32>
  return %r#0, %r#1, %r#2 : tensor<1x1x128x16xf32>, tensor<1x1x128xf32>, tensor<1x1x128xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["mha.online_attention"]} in %root : (!transform.any_op) -> !transform.any_op
    %rows, %forall = transform.structured.tile_using_forall %op tile_sizes [0, 0, 32]
      : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %block, %keys = transform.structured.tile_using_for %rows tile_sizes [0, 0, 0, 32]
      : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}

// -----

// Upstream decompose_interface takes mha.attention to its online form: f32
// fills of the state, one online op over all keys, the normalization.

// CHECK-LABEL: func.func @to_online
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<1x2x8x4xf32>, %[[INIT:[^:]+]]: tensor<1x2x8x4xf32>)
// CHECK-DAG: %[[NEG_INF:.+]] = arith.constant 0xFF800000 : f32
// CHECK-DAG: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[ACC:.+]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.*}} : tensor<1x2x8x4xf32>)
// CHECK: %[[MAX:.+]] = linalg.fill ins(%[[NEG_INF]] : f32) outs(%{{.*}} : tensor<1x2x8xf32>)
// CHECK: %[[SUM:.+]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.*}} : tensor<1x2x8xf32>)
// CHECK: %[[R:.+]], %[[RM:.+]], %[[RS:.+]] = mha.online_attention ins(%[[Q]], %[[Q]], %[[Q]] : {{.*}}) outs(%[[ACC]], %[[MAX]], %[[SUM]] : {{.*}}) {scale = 5.000000e-01 : f32}
// CHECK: %[[OUT:.+]] = linalg.generic {{.*}} ins(%[[R]], %[[RS]] : tensor<1x2x8x4xf32>, tensor<1x2x8xf32>) outs(%[[INIT]] : tensor<1x2x8x4xf32>)
// CHECK:   arith.divf
// CHECK: return %[[OUT]]
func.func @to_online(%q: tensor<1x2x8x4xf32>, %init: tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32> {
  %o = mha.attention ins(%q, %q, %q : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>)
         outs(%init : tensor<1x2x8x4xf32>) {scale = 0.5 : f32} -> tensor<1x2x8x4xf32>
  return %o : tensor<1x2x8x4xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["mha.attention"]} in %root : (!transform.any_op) -> !transform.any_op
    %d = transform.structured.decompose_interface %op : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}

// -----

// key_transposed: the key [B, Hkv, dk, Sk] is sliced along its last dim, the
// tiled op keeps the layout.
// CHECK-LABEL: func.func @keys_transposed
// CHECK-SAME: (%{{[^:]+}}: tensor<1x2x32x16xf32>, %[[KT:[^:]+]]: tensor<1x1x16x48xf32>
// CHECK: scf.for %[[J0:.+]] = %c0 to %c48 step %c16
// CHECK:   %[[KB:.+]] = tensor.extract_slice %[[KT]][0, 0, 0, %[[J0]]] [1, 1, 16, 16]
// CHECK:   mha.online_attention ins(%{{.*}}, %[[KB]], %{{.*}} : tensor<1x2x32x16xf32>, tensor<1x1x16x16xf32>, tensor<1x1x16x8xf32>) {{.*}} {key_transposed}
func.func @keys_transposed(%q: tensor<1x2x32x16xf32>, %kt: tensor<1x1x16x48xf32>, %v: tensor<1x1x48x8xf32>,
                           %acc: tensor<1x2x32x8xf32>, %max: tensor<1x2x32xf32>, %sum: tensor<1x2x32xf32>)
    -> (tensor<1x2x32x8xf32>, tensor<1x2x32xf32>, tensor<1x2x32xf32>) {
  %r:3 = mha.online_attention ins(%q, %kt, %v : tensor<1x2x32x16xf32>, tensor<1x1x16x48xf32>, tensor<1x1x48x8xf32>)
           outs(%acc, %max, %sum : tensor<1x2x32x8xf32>, tensor<1x2x32xf32>, tensor<1x2x32xf32>)
           {key_transposed} -> tensor<1x2x32x8xf32>, tensor<1x2x32xf32>, tensor<1x2x32xf32>
  return %r#0, %r#1, %r#2 : tensor<1x2x32x8xf32>, tensor<1x2x32xf32>, tensor<1x2x32xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["mha.online_attention"]} in %root : (!transform.any_op) -> !transform.any_op
    %tiled, %loop = transform.structured.tile_using_for %op tile_sizes [0, 0, 0, 16]
      : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}
