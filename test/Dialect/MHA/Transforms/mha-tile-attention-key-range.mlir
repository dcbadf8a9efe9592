// RUN: mha-opt %s --split-input-file --mha-tile-attention="q-tile-size=64 kv-tile-size=32 decompose=false" --canonicalize --cse | FileCheck %s

// Blocks outside every row's window are never visited, in both directions:
// the keys of query tile i0 before the first one its first row sees
// (max(0, i0 - 40): window_left = 40 on the diagonal i0 + Sk - Sq) are sliced
// off, and the key loop over the rest ends at the last key its last row
// sees (i0 + 64, causal), counted from that first key.
// CHECK-DAG: #[[LAST_ROW:.+]] = affine_map<()[s0] -> (0, s0 + 64)>
// CHECK-DAG: #[[FIRST_ROW:.+]] = affine_map<()[s0] -> (0, s0 - 40)>
// CHECK-DAG: #[[SLICED_END:.+]] = affine_map<()[s0, s1] -> (0, s0 - s1 + 64)>
// CHECK-LABEL: func.func @causal_window
// CHECK: scf.forall (%[[H:.+]], %[[I0:.+]]) = (0, 0) to (2, 256) step (1, 64)
// CHECK:   %[[K:.+]] = tensor.extract_slice %{{.+}}[0, %[[H]], 0, 0] [1, 1, 256, 16]
// CHECK:   %[[LAST:.+]] = affine.max #[[LAST_ROW]]()[%[[I0]]]
// CHECK:   %[[END:.+]] = affine.min #{{.+}}()[%[[LAST]]]
// CHECK:   %[[START:.+]] = affine.max #[[FIRST_ROW]]()[%[[I0]]]
// CHECK:   %[[FIRST:.+]] = affine.min #{{.+}}()[%[[START]], %[[LAST]]]
// CHECK:   %[[COUNT:.+]] = arith.subi %[[END]], %[[FIRST]] : index
// CHECK:   %[[KW:.+]] = tensor.extract_slice %[[K]][0, 0, %[[FIRST]], 0] [1, 1, %[[COUNT]], 16]
// CHECK:   %[[DIAG_END:.+]] = affine.max #[[SLICED_END]]()[%[[I0]], %[[FIRST]]]
// CHECK:   %[[UB:.+]] = affine.min #{{.+}}()[%[[COUNT]], %[[DIAG_END]]]
// CHECK:   scf.for %[[J0:.+]] = %c0 to %{{.+}} step %c32
// CHECK:     tensor.extract_slice %[[KW]][0, 0, %[[J0]], 0] [1, 1, 32, 16]
// CHECK:     mha.online_attention {{.*}} causal_offset(%{{.+}}) outs({{.*}}) {causal, window_left = 40 : i64}
func.func @causal_window(%q: tensor<1x2x256x16xf32>, %init: tensor<1x2x256x16xf32>) -> tensor<1x2x256x16xf32> {
  %o = mha.attention ins(%q, %q, %q : tensor<1x2x256x16xf32>, tensor<1x2x256x16xf32>, tensor<1x2x256x16xf32>)
         outs(%init : tensor<1x2x256x16xf32>) {causal, window_left = 40 : i64} -> tensor<1x2x256x16xf32>
  return %o : tensor<1x2x256x16xf32>
}

// -----

// Per-batch key lengths: each batch's key loop ends at its length (the
// tile has one batch), and each block counts its keys from its offset j0
// (key_offset) against the length; causal is aligned to the length (the
// diagonal -1 - j0 plus the length: the one query sees every valid key).
// CHECK-DAG: #[[DIAG:.+]] = affine_map<()[s0] -> (-s0 - 1)>
// CHECK-LABEL: func.func @decode_lengths
// CHECK-SAME: %[[LEN:[^:]+]]: tensor<4xi32>
// CHECK: scf.forall (%[[B:.+]], %[[H:.+]]) in (4, 2)
// CHECK:   %[[LT:.+]] = tensor.extract_slice %[[LEN]][%[[B]]] [1] [1]
// CHECK:   %[[L:.+]] = tensor.extract %[[LT]][%c0] : tensor<1xi32>
// CHECK:   %[[LI:.+]] = arith.index_cast %[[L]] : i32 to index
// CHECK:   scf.for %[[J0:.+]] = %c0 to %{{.+}} step %c32
// CHECK:     %[[OFF:.+]] = affine.apply #[[DIAG]]()[%[[J0]]]
// CHECK:     mha.online_attention {{.*}} key_lengths(%[[LT]] : tensor<1xi32>) key_offset(%[[J0]]) causal_offset(%[[OFF]])
// One query tile (here one query) reads each key block: the key loop says so
// (mha-vectorize then transposes the blocks where they are read).
// CHECK:   } {mha.causal_key_loop, mha.key_blocks_read_once}
func.func @decode_lengths(%q: tensor<4x2x1x16xf32>, %k: tensor<4x2x256x16xf32>, %len: tensor<4xi32>, %init: tensor<4x2x1x16xf32>) -> tensor<4x2x1x16xf32> {
  %o = mha.attention ins(%q, %k, %k : tensor<4x2x1x16xf32>, tensor<4x2x256x16xf32>, tensor<4x2x256x16xf32>)
         key_lengths(%len : tensor<4xi32>) outs(%init : tensor<4x2x1x16xf32>) {causal} -> tensor<4x2x1x16xf32>
  return %o : tensor<4x2x1x16xf32>
}

// -----

// Decoding with grouped-query heads: the query heads of a group (4 here) are
// one tile, so each key block is read once for all of them (head_tile, which
// mha-select-lowering-config chooses for such an op).
// CHECK-LABEL: func.func @decode_gqa
// CHECK: scf.forall (%[[B:.+]], %[[H:.+]]) = (0, 0) to (2, 8) step (1, 4)
// CHECK:   mha.online_attention ins(%{{.+}}, %{{.+}}, %{{.+}} : tensor<1x4x1x16xf32>, tensor<1x1x32x16xf32>, tensor<1x1x32x16xf32>)
func.func @decode_gqa(%q: tensor<2x8x1x16xf32>, %k: tensor<2x2x256x16xf32>, %init: tensor<2x8x1x16xf32>) -> tensor<2x8x1x16xf32> {
  %o = mha.attention ins(%q, %k, %k : tensor<2x8x1x16xf32>, tensor<2x2x256x16xf32>, tensor<2x2x256x16xf32>)
         outs(%init : tensor<2x8x1x16xf32>) {mha.lowering_config = #mha.lowering_config<head_tile = 4>} -> tensor<2x8x1x16xf32>
  return %o : tensor<2x8x1x16xf32>
}
