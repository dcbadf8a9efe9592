// RUN: mha-opt %s --split-input-file --mha-tile-attention="q-tile-size=64 kv-tile-size=32" --canonicalize --cse | FileCheck %s
// RUN: mha-opt %s --split-input-file --mha-tile-attention="q-tile-size=64 kv-tile-size=32 workgroups=true" --canonicalize --cse | FileCheck %s --check-prefix=WORKGROUPS

// workgroups=true (the GPU pipelines): the loop is mapped to workgroups, so
// canonicalization keeps it whole, batch dimension of one iteration included.
// WORKGROUPS-LABEL: func.func @causal_gqa_bool_mask
// WORKGROUPS: scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) = (0, 0, 0) to (1, 2, 256) step (1, 1, 64)
// WORKGROUPS: } {mapping = [#gpu.block<linear_dim_0>, #gpu.block<linear_dim_1>, #gpu.block<linear_dim_2>]}

// FlashAttention-2 structure: an scf.forall over (head, 64-query tile)
// (batch 1 folds away), the tile's online form (f32 state fills), and the key
// loop that upstream tiling makes of the online op's reduction dimension,
// carrying acc, max and sum. Causal: the key range of query tile i0 ends at
// min(Sk, max(0, i0 + 64 + Sk - Sq)) (part of the online op's iteration
// domain), and a key block at j0 gets the diagonal i0 - j0 (Sq = Sk here);
// only blocks whose last key exceeds it evaluate the causal predicate. The
// mask is read through an indexing map. No 256x256 tensor exists.

// CHECK-DAG: #[[LAST_ROW:.+]] = affine_map<()[s0] -> (0, s0 + 64)>
// CHECK-DAG: #[[KV_END:.+]] = affine_map<()[s0] -> (256, s0)>
// CHECK-DAG: #[[FULL_END:.+]] = affine_map<()[s0] -> ((s0 floordiv 32) * 32)>
// CHECK-DAG: #[[KT:.+]] = affine_map<(d0)[s0] -> (-d0 + s0)>
// CHECK-DAG: #[[DIAG:.+]] = affine_map<()[s0, s1] -> (s0 - s1)>
// CHECK-DAG: #[[MASK_MAP:.+]] = affine_map<(d0, d1, d2, d3) -> (d2, d3)>

// CHECK-LABEL: func.func @causal_gqa_bool_mask
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<1x2x256x16xf32>, %[[K:[^:]+]]: tensor<1x1x256x16xf32>, %[[V:[^:]+]]: tensor<1x1x256x8xf32>, %[[M:[^:]+]]: tensor<256x256xi1>, %[[INIT:[^:]+]]: tensor<1x2x256x8xf32>)
// CHECK-NOT: 256x256xf32
// CHECK: scf.forall (%[[H:.+]], %[[I0:.+]]) = (0, 0) to (2, 256) step (1, 64) shared_outs(%[[OUT:.+]] = %[[INIT]])
// CHECK:   %[[QT:.+]] = tensor.extract_slice %[[Q]][0, %[[H]], %[[I0]], 0] [1, 1, 64, 16]
// CHECK:   %[[MT:.+]] = tensor.extract_slice %[[M]][%[[I0]], 0] [64, 256]
// CHECK:   %[[DEST:.+]] = tensor.extract_slice %[[OUT]][0, %[[H]], %[[I0]], 0] [1, 1, 64, 8]
// CHECK:   %[[POS:.+]] = affine.max #[[LAST_ROW]]()[%[[I0]]]
// CHECK:   %[[END:.+]] = affine.min #[[KV_END]]()[%[[POS]]]

// The full key blocks (static [64, 32] score blocks) get the loop to
// themselves; the partial block at the end, if any, is peeled off after it.
// CHECK:   %[[FULL:.+]] = affine.apply #[[FULL_END]]()[%[[END]]]
// CHECK:   %[[R0:.+]]:3 = scf.for %[[J0:.+]] = %c0 to %[[FULL]] step %c32 iter_args(%[[ACC:.+]] = %{{.*}}, %[[MAX:.+]] = %{{.*}}, %[[SUM:.+]] = %{{.*}}) -> (tensor<1x1x64x8xf32>, tensor<1x1x64xf32>, tensor<1x1x64xf32>)
// CHECK:     %[[MB:.+]] = tensor.extract_slice %[[MT]][0, %[[J0]]] [64, 32]
// CHECK:     %[[OFF:.+]] = affine.apply #[[DIAG]]()[%[[I0]], %[[J0]]]
// CHECK:     %[[KBT:.+]] = linalg.transpose ins(%{{.*}} : tensor<1x1x32x16xf32>) outs(%{{.*}} : tensor<1x1x16x32xf32>)
// CHECK:     %[[QS:.+]] = linalg.generic {{.*}} ins(%[[QT]] : tensor<1x1x64x16xf32>)
// CHECK:     %[[S:.+]] = linalg.generic {{.*}} ins(%[[QS]], %[[KBT]] : tensor<1x1x64x16xf32>, tensor<1x1x16x32xf32>) outs(%{{.*}} : tensor<1x1x64x32xf32>)
// A full block straddles the diagonal iff 31 > offset.
// CHECK:     %[[STRADDLES:.+]] = arith.cmpi slt, %[[OFF]], %c31
// CHECK:     %[[LOGITS:.+]] = scf.if %[[STRADDLES]] -> (tensor<1x1x64x32xf32>)
// CHECK:       linalg.generic {indexing_maps = [#[[MASK_MAP]], {{.*}}]{{.*}} ins(%[[MB]] : tensor<64x32xi1>)
// CHECK:         arith.cmpi sle
// CHECK:     } else {
// CHECK:       linalg.generic {indexing_maps = [#[[MASK_MAP]], {{.*}}]{{.*}} ins(%[[MB]] : tensor<64x32xi1>)
// CHECK-NOT:     arith.cmpi sle
// CHECK:     }
// CHECK:     %[[TMAX:.+]] = linalg.generic {{.*}} ins(%[[LOGITS]] : tensor<1x1x64x32xf32>)
// CHECK:       arith.maxnumf
// CHECK:     %[[ALPHA:.+]] = linalg.generic {{.*}} ins(%[[MAX]], %[[TMAX]] : tensor<1x1x64xf32>, tensor<1x1x64xf32>)
// CHECK:       math.exp
// CHECK:     %[[NEW_MAX:.+]] = linalg.generic {{.*}} ins(%[[TMAX]] : tensor<1x1x64xf32>) outs(%[[MAX]] : tensor<1x1x64xf32>)
// CHECK:     %[[P:.+]] = linalg.generic {{.*}} ins(%[[NEW_MAX]] : tensor<1x1x64xf32>) outs(%[[LOGITS]] : tensor<1x1x64x32xf32>)
// CHECK:       math.exp
// CHECK:     %[[SUM_SCALED:.+]] = linalg.generic {{.*}} ins(%[[ALPHA]] : tensor<1x1x64xf32>) outs(%[[SUM]] : tensor<1x1x64xf32>)
// CHECK:     %[[NEW_SUM:.+]] = linalg.generic {{.*}} ins(%[[P]] : tensor<1x1x64x32xf32>) outs(%[[SUM_SCALED]] : tensor<1x1x64xf32>)
// CHECK:     %[[ACC_SCALED:.+]] = linalg.generic {{.*}} ins(%[[ALPHA]] : tensor<1x1x64xf32>) outs(%[[ACC]] : tensor<1x1x64x8xf32>)
// CHECK:     %[[NEW_ACC:.+]] = linalg.generic {{.*}} ins(%[[P]], %{{.*}} : tensor<1x1x64x32xf32>, tensor<1x1x32x8xf32>) outs(%[[ACC_SCALED]] : tensor<1x1x64x8xf32>)
// CHECK:     scf.yield %[[NEW_ACC]], %[[NEW_MAX]], %[[NEW_SUM]]
// Both key loops end at the diagonal: their trip count grows with the query
// tile, which mha-dynamic-schedule-openmp reads from this attribute.
// CHECK:   } {mha.causal_key_loop}
// CHECK:   %[[R:.+]]:3 = scf.for %[[J1:.+]] = %[[FULL]] to %[[END]] step %c32 iter_args(%{{.*}} = %[[R0]]#0, %{{.*}} = %[[R0]]#1, %{{.*}} = %[[R0]]#2)
// CHECK:     %[[KT_SIZE:.+]] = affine.apply #[[KT]](%[[J1]])[%[[END]]]
// CHECK:     tensor.extract_slice %[[MT]][0, %[[J1]]] [64, %[[KT_SIZE]]]
// CHECK:     linalg.generic {{.*}} outs(%{{.*}} : tensor<1x1x64x?xf32>)
// CHECK:     %[[BLOCK_LAST:.+]] = arith.subi %[[KT_SIZE]], %c1
// CHECK:     arith.cmpi sgt, %[[BLOCK_LAST]], %{{.*}}
// CHECK:     scf.yield
// CHECK:   } {mha.causal_key_loop}
// CHECK:   %[[O:.+]] = linalg.generic {{.*}} ins(%[[R]]#0, %[[R]]#2 : tensor<1x1x64x8xf32>, tensor<1x1x64xf32>) outs(%[[DEST]] : tensor<1x1x64x8xf32>)
// CHECK:     arith.divf
// CHECK:   scf.forall.in_parallel
// CHECK:     tensor.parallel_insert_slice %[[O]] into %[[OUT]][0, %[[H]], %[[I0]], 0] [1, 1, 64, 8]
// CHECK-NOT: mha.
// CHECK-NOT: tensor.extract %
func.func @causal_gqa_bool_mask(%q: tensor<1x2x256x16xf32>, %k: tensor<1x1x256x16xf32>, %v: tensor<1x1x256x8xf32>,
                                %m: tensor<256x256xi1>, %init: tensor<1x2x256x8xf32>) -> tensor<1x2x256x8xf32> {
  %o = mha.attention ins(%q, %k, %v : tensor<1x2x256x16xf32>, tensor<1x1x256x16xf32>, tensor<1x1x256x8xf32>)
         mask(%m : tensor<256x256xi1>) outs(%init : tensor<1x2x256x8xf32>) {causal} -> tensor<1x2x256x8xf32>
  return %o : tensor<1x2x256x8xf32>
}

// -----

// Without causal the key loop covers every key and no predicate is built;
// dynamic lengths make the last query and key tiles partial.

// CHECK-LABEL: func.func @dynamic_not_causal
// CHECK-SAME: (%{{[^:]+}}: tensor<2x4x?x8xf16>, %[[K:[^:]+]]: tensor<2x4x?x8xf16>
// CHECK: scf.forall (%{{.*}}, %{{.*}}, %[[I0:.+]]) = (0, 0, 0) to (2, 4, %{{.*}}) step (1, 1, 64)
// CHECK:   %[[QT:.+]] = affine.min
// CHECK:   %[[SK:.+]] = tensor.dim %[[K]], %c2
// CHECK:   %[[FULL:.+]] = affine.apply #{{.+}}()[%[[SK]]]
// CHECK:   scf.for %{{.*}} = %c0 to %[[FULL]] step %c32
// CHECK-NOT: scf.if
// CHECK-NOT: arith.cmpi sle
// CHECK:     scf.yield
// CHECK-NOT: mha.causal_key_loop
// CHECK:   linalg.generic
// CHECK:     arith.truncf %{{.*}} : f32 to f16
func.func @dynamic_not_causal(%q: tensor<2x4x?x8xf16>, %k: tensor<2x4x?x8xf16>, %init: tensor<2x4x?x8xf16>) -> tensor<2x4x?x8xf16> {
  %o = mha.attention ins(%q, %k, %k : tensor<2x4x?x8xf16>, tensor<2x4x?x8xf16>, tensor<2x4x?x8xf16>)
         outs(%init : tensor<2x4x?x8xf16>) -> tensor<2x4x?x8xf16>
  return %o : tensor<2x4x?x8xf16>
}

// -----

// Tile sizes must be positive.
// RUN: not mha-opt %s --split-input-file --mha-tile-attention="q-tile-size=-1" 2>&1 | FileCheck %s --check-prefix=ERROR
// ERROR: error: 'mha.attention' op tile sizes must be positive (q-tile-size may be 0: chosen from the shape), found q-tile-size=-1 kv-tile-size=64

// -----

// With decompose=false (as the mha-lower-to-cpu tiling stage runs it) each
// key block stays an mha.online_attention inside the key loop, for a later
// decomposition stage (mha-attention-to-linalg).
// RUN: mha-opt %s --split-input-file --mha-tile-attention="q-tile-size=16 kv-tile-size=8 decompose=false" | FileCheck %s --check-prefix=BLOCKS
// BLOCKS-LABEL: func.func @blocks
// BLOCKS: scf.forall
// BLOCKS:   scf.for
// BLOCKS:     mha.online_attention {{.*}} -> tensor<1x1x16x8xf32>, tensor<1x1x16xf32>, tensor<1x1x16xf32>
// BLOCKS-NOT: linalg.generic {{.*}}"reduction"
// BLOCKS:   linalg.generic
// BLOCKS:     arith.divf
func.func @blocks(%q: tensor<1x2x32x8xf32>, %init: tensor<1x2x32x8xf32>) -> tensor<1x2x32x8xf32> {
  %o = mha.attention ins(%q, %q, %q : tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>)
         outs(%init : tensor<1x2x32x8xf32>) -> tensor<1x2x32x8xf32>
  return %o : tensor<1x2x32x8xf32>
}
