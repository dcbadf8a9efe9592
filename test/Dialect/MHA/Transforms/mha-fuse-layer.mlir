// RUN: mha-opt %s --mha-fuse-layer="q-tile-size=64 kv-tile-size=64" --canonicalize --cse | FileCheck %s

// The whole layer in one loop nest. B=2, S=512, 4 query heads over 2 kv heads
// (group 2), dk=16, dv=8, Eo=64:
// - K and V of kv head g are projected once per (batch, g), outside the loops
//   over the group's query heads and query tiles, from column slices of w_k /
//   w_v (head split = weight slice, no transposed copy), biases as the
//   accumulator's initial value;
// - Q is projected inside the query-tile loop (producer fusion) and scaled in
//   its epilogue;
// - the output projection consumes each finished tile with the rows of w_o of
//   its head, accumulating into the [1, qt, Eo] slice of the result;
// - neither the 512x512 scores nor the concatenated heads [2, 512, 32] exist.

// CHECK-LABEL: func.func @layer
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x512x64xf32>, %[[KV:[^:]+]]: tensor<2x512x48xf32>, %[[WQ:[^:]+]]: tensor<64x64xf32>, %[[WK:[^:]+]]: tensor<48x32xf32>, %[[WV:[^:]+]]: tensor<48x16xf32>, %[[WO:[^:]+]]: tensor<32x64xf32>, %[[BQ:[^:]+]]: tensor<64xf32>, %[[BK:[^:]+]]: tensor<32xf32>, %[[BV:[^:]+]]: tensor<16xf32>, %[[BO:[^:]+]]: tensor<64xf32>)
// CHECK-NOT: 512x512
// CHECK-NOT: 2x512x32
// CHECK-DAG: %[[SCALE:.+]] = arith.constant 2.500000e-01 : f32
// CHECK: %[[Y0:.+]] = linalg.generic {{.*}} ins(%[[BO]] : tensor<64xf32>) outs(%{{.*}} : tensor<2x512x64xf32>)
// CHECK: scf.for %[[B:.+]] = %c0 to %c2 step %c1 iter_args(%{{.*}} = %[[Y0]])
// CHECK:   scf.for %[[G:.+]] = %c0 to %c2 step %c1
// CHECK:     %[[KVB:.+]] = tensor.extract_slice %[[KV]][%[[B]], 0, 0] [1, 512, 48]
// CHECK:     %[[WKG:.+]] = tensor.extract_slice %[[WK]][0, %{{.*}}] [48, 16]
// CHECK:     %[[BKG:.+]] = tensor.extract_slice %[[BK]][%{{.*}}] [16]
// CHECK:     %[[KACC:.+]] = linalg.generic {{.*}} ins(%[[BKG]] : tensor<16xf32>) outs(%{{.*}} : tensor<512x16xf32>)
// CHECK:     %[[K:.+]] = linalg.generic {{.*}} ins(%[[KVB]], %[[WKG]] : tensor<1x512x48xf32>, tensor<48x16xf32>) outs(%[[KACC]] : tensor<512x16xf32>)
// CHECK:     %[[WVG:.+]] = tensor.extract_slice %[[WV]][0, %{{.*}}] [48, 8]
// CHECK:     %[[V:.+]] = linalg.generic {{.*}} ins(%[[KVB]], %[[WVG]] : tensor<1x512x48xf32>, tensor<48x8xf32>) outs(%{{.*}} : tensor<512x8xf32>)
// CHECK:     scf.for %[[HH:.+]] = %c0 to %c2 step %c1
// CHECK:       %[[WOH:.+]] = tensor.extract_slice %[[WO]][%{{.*}}, 0] [8, 64]
// CHECK:       scf.for %[[I0:.+]] = %c0 to %c512 step %c64 iter_args(%[[Y:.+]] = %{{.*}})
// CHECK:         %[[XT:.+]] = tensor.extract_slice %[[X]][%[[B]], %[[I0]], 0] [1, %{{.*}}, 64]
// CHECK:         %[[WQH:.+]] = tensor.extract_slice %[[WQ]][0, %{{.*}}] [64, 16]
// CHECK:         %[[QP:.+]] = linalg.generic {{.*}} ins(%[[XT]], %[[WQH]] : tensor<1x?x64xf32>, tensor<64x16xf32>)
// CHECK:         %[[Q:.+]] = linalg.generic {{.*}} outs(%[[QP]] : tensor<?x16xf32>)
// CHECK:           arith.mulf %{{.*}}, %[[SCALE]]
// CHECK:         %[[ATT:.+]]:3 = scf.for
// CHECK:           tensor.extract_slice %[[K]]
// CHECK:           tensor.extract_slice %[[V]]
// CHECK:         %[[O:.+]] = linalg.generic {{.*}} ins(%[[ATT]]#2, %[[ATT]]#1 : tensor<?x8xf32>, tensor<?xf32>)
// CHECK:         %[[YT:.+]] = tensor.extract_slice %[[Y]][%[[B]], %[[I0]], 0] [1, %{{.*}}, 64]
// CHECK:         %[[YN:.+]] = linalg.generic {{.*}} ins(%[[O]], %[[WOH]] : tensor<?x8xf32>, tensor<8x64xf32>) outs(%[[YT]] : tensor<1x?x64xf32>)
// CHECK:         tensor.insert_slice %[[YN]] into %[[Y]][%[[B]], %[[I0]], 0] [1, %{{.*}}, 64]
// CHECK-NOT: mha.multi_head_attention
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
// ERROR: error: 'mha.multi_head_attention' op tile sizes must be positive, found q-tile-size=64 kv-tile-size=-4
