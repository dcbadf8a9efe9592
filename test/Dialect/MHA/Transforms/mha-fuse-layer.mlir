// RUN: mha-opt %s --mha-fuse-layer="q-tile-size=64 kv-tile-size=64" --canonicalize --cse | FileCheck %s

// The whole layer by upstream tile-and-fuse. B=2, S=512, 4 query heads over
// 2 kv heads (group 2), dk=16, dv=8, Eo=64, causal:
// - K and V are projected once, before the loop nest, each in an scf.forall
//   over (batch, kv head, 64-key tile) (bias as the accumulator's initial
//   value, head split as a column slice of the weight);
// - an scf.forall over (batch, 64-query tile) owns its rows of the result:
//   the output bias initializes them, nothing is carried across iterations;
// - inside, an scf.for over the 4 query heads reduces the output projection:
//   head h's Q projection (columns h*16.. of w_q and b_q) and its attention
//   are fused into it, reading kv head h floordiv 2 and rows h*8.. of w_o;
// - the attention is the key loop of the online form, ending at the causal
//   bound of the query tile;
// - neither the 512x512 scores nor the concatenated heads [2, 512, 32] exist.

// CHECK-DAG: #[[KV_HEAD:.+]] = affine_map<(d0) -> (d0 floordiv 2)>
// CHECK-DAG: #[[LAST_ROW:.+]] = affine_map<()[s0] -> (0, s0 + 64)>
// CHECK-LABEL: func.func @layer
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x512x64xf32>, %[[KV:[^:]+]]: tensor<2x512x48xf32>, %[[WQ:[^:]+]]: tensor<64x64xf32>, %[[WK:[^:]+]]: tensor<48x32xf32>, %[[WV:[^:]+]]: tensor<48x16xf32>, %[[WO:[^:]+]]: tensor<32x64xf32>, %[[BQ:[^:]+]]: tensor<64xf32>, %[[BK:[^:]+]]: tensor<32xf32>, %[[BV:[^:]+]]: tensor<16xf32>, %[[BO:[^:]+]]: tensor<64xf32>)
// CHECK-NOT: 512x512
// CHECK-NOT: 2x512x32
// CHECK-NOT: mha.
// CHECK-DAG: %[[WQS:.+]] = tensor.expand_shape %[[WQ]] {{.*}} into tensor<64x4x16xf32>
// CHECK-DAG: %[[BQS:.+]] = tensor.expand_shape %[[BQ]] {{.*}} into tensor<4x16xf32>
// CHECK-DAG: %[[WKS:.+]] = tensor.expand_shape %[[WK]] {{.*}} into tensor<48x2x16xf32>
// CHECK-DAG: %[[BKS:.+]] = tensor.expand_shape %[[BK]] {{.*}} into tensor<2x16xf32>
// CHECK: %[[K:.+]] = scf.forall (%[[KB:.+]], %[[KG:.+]], %[[KJ:.+]]) = (0, 0, 0) to (2, 2, 512) step (1, 1, 64) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<2x2x512x16xf32>)
// CHECK:   %[[KVT:.+]] = tensor.extract_slice %[[KV]][%[[KB]], %[[KJ]], 0] [1, 64, 48]
// CHECK:   %[[WKG:.+]] = tensor.extract_slice %[[WKS]][0, %[[KG]], 0] [48, 1, 16]
// CHECK:   %[[BKG:.+]] = tensor.extract_slice %[[BKS]][%[[KG]], 0] [1, 16]
// CHECK:   %[[KACC:.+]] = linalg.generic {{.*}} ins(%[[BKG]] : tensor<1x16xf32>) outs(%{{.*}} : tensor<1x1x64x16xf32>)
// CHECK:   linalg.generic {{.*}} ins(%[[KVT]], %[[WKG]] : tensor<1x64x48xf32>, tensor<48x1x16xf32>) outs(%[[KACC]] : tensor<1x1x64x16xf32>)
// CHECK: %[[V:.+]] = scf.forall {{.*}} -> (tensor<2x2x512x8xf32>)
// CHECK:   linalg.generic {{.*}} ins(%{{.*}} : tensor<1x8xf32>)
// CHECK:   linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x64x48xf32>, tensor<48x1x8xf32>)
// CHECK: %[[WOS:.+]] = tensor.expand_shape %[[WO]] {{.*}} into tensor<4x8x64xf32>
// CHECK: scf.forall (%[[B:.+]], %[[I0:.+]]) = (0, 0) to (2, 512) step (1, 64) shared_outs(%[[Y:.+]] = %{{.*}}) -> (tensor<2x512x64xf32>)
// CHECK:   %[[XT:.+]] = tensor.extract_slice %[[X]][%[[B]], %[[I0]], 0] [1, 64, 64]
// CHECK:   %[[KB:.+]] = tensor.extract_slice %[[K]][%[[B]], 0, 0, 0] [1, 2, 512, 16]
// CHECK:   %[[VB:.+]] = tensor.extract_slice %[[V]][%[[B]], 0, 0, 0] [1, 2, 512, 8]
// CHECK:   %[[YT:.+]] = tensor.extract_slice %[[Y]][%[[B]], %[[I0]], 0] [1, 64, 64]
// CHECK:   %[[Y0:.+]] = linalg.generic {{.*}} ins(%[[BO]] : tensor<64xf32>) outs(%[[YT]] : tensor<1x64x64xf32>)
// CHECK:   %[[YH:.+]] = scf.for %[[H:.+]] = %c0 to %c4 step %c1 iter_args(%[[YACC:.+]] = %[[Y0]]) -> (tensor<1x64x64xf32>)
// CHECK:     %[[G:.+]] = affine.apply #[[KV_HEAD]](%[[H]])
// CHECK:     %[[WQH:.+]] = tensor.extract_slice %[[WQS]][0, %[[H]], 0] [64, 1, 16]
// CHECK:     %[[BQH:.+]] = tensor.extract_slice %[[BQS]][%[[H]], 0] [1, 16]
// CHECK:     %[[QACC:.+]] = linalg.generic {{.*}} ins(%[[BQH]] : tensor<1x16xf32>) outs(%{{.*}} : tensor<1x1x64x16xf32>)
// CHECK:     %[[Q:.+]] = linalg.generic {{.*}} ins(%[[XT]], %[[WQH]] : tensor<1x64x64xf32>, tensor<64x1x16xf32>) outs(%[[QACC]] : tensor<1x1x64x16xf32>)
// CHECK:     %[[KG:.+]] = tensor.extract_slice %[[KB]][0, %[[G]], 0, 0] [1, 1, 512, 16]
// CHECK:     %[[VG:.+]] = tensor.extract_slice %[[VB]][0, %[[G]], 0, 0] [1, 1, 512, 8]
// CHECK:     %[[POS:.+]] = affine.max #[[LAST_ROW]]()[%[[I0]]]
// CHECK:     %[[END:.+]] = affine.min #{{.+}}()[%[[POS]]]
// CHECK:     %[[FULL:.+]] = affine.apply #{{.+}}()[%[[END]]]
// CHECK:     %[[FULL_ATT:.+]]:3 = scf.for %{{.*}} = %c0 to %[[FULL]] step %c64
// CHECK:       tensor.extract_slice %[[KG]]
// CHECK:       tensor.extract_slice %[[VG]]
// CHECK:       %[[KTB:.+]] = linalg.transpose ins(%{{.*}} : tensor<1x1x64x16xf32>) outs(%{{.*}} : tensor<1x1x16x64xf32>)
// CHECK:       %[[QS:.+]] = linalg.generic {{.*}} ins(%[[Q]] : tensor<1x1x64x16xf32>)
// CHECK:       linalg.generic {{.*}} ins(%[[QS]], %[[KTB]] : tensor<1x1x64x16xf32>, tensor<1x1x16x64xf32>)
// CHECK:     %[[ATT:.+]]:3 = scf.for %{{.*}} = %[[FULL]] to %[[END]] step %c64 iter_args(%{{.*}} = %[[FULL_ATT]]#0
// CHECK:     %[[O:.+]] = linalg.generic {{.*}} ins(%[[ATT]]#0, %[[ATT]]#2 : tensor<1x1x64x8xf32>, tensor<1x1x64xf32>)
// CHECK:     %[[WOH:.+]] = tensor.extract_slice %[[WOS]][%[[H]], 0, 0] [1, 8, 64]
// CHECK:     %[[YN:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction", "reduction", "parallel"]} ins(%[[O]], %[[WOH]] : tensor<1x1x64x8xf32>, tensor<1x8x64xf32>) outs(%[[YACC]] : tensor<1x64x64xf32>)
// CHECK:     scf.yield %[[YN]]
// CHECK:   scf.forall.in_parallel
// CHECK:     tensor.parallel_insert_slice %[[YH]] into %[[Y]][%[[B]], %[[I0]], 0] [1, 64, 64]
// CHECK-NOT: mha.
func.func @layer(%x: tensor<2x512x64xf32>, %kv: tensor<2x512x48xf32>, %wq: tensor<64x64xf32>,
                 %wk: tensor<48x32xf32>, %wv: tensor<48x16xf32>, %wo: tensor<32x64xf32>,
                 %bq: tensor<64xf32>, %bk: tensor<32xf32>, %bv: tensor<16xf32>, %bo: tensor<64xf32>)
    -> tensor<2x512x64xf32> {
  %y = mha.multi_head_attention %x, %kv, %kv, %wq, %wk, %wv, %wo bias(%bq, %bk, %bv, %bo)
       {num_heads = 4 : i64, num_kv_heads = 2 : i64, causal}
       : (tensor<2x512x64xf32>, tensor<2x512x48xf32>, tensor<2x512x48xf32>, tensor<64x64xf32>,
          tensor<48x32xf32>, tensor<48x16xf32>, tensor<32x64xf32>, tensor<64xf32>, tensor<32xf32>,
          tensor<16xf32>, tensor<64xf32>) -> tensor<2x512x64xf32>
  return %y : tensor<2x512x64xf32>
}

// Tile sizes must be positive.
// RUN: not mha-opt %s --mha-fuse-layer="kv-tile-size=-4" 2>&1 | FileCheck %s --check-prefix=ERROR
// ERROR: error: 'mha.multi_head_attention' op tile sizes must be positive (q-tile-size may be 0: chosen from the shape), found q-tile-size=64 kv-tile-size=-4
