// RUN: mha-opt %s --split-input-file --mha-tile-attention="q-tile-size=64 kv-tile-size=32" --canonicalize --cse | FileCheck %s

// FlashAttention-2 structure: loops over heads and 64-query tiles (batch 1
// folds away), then the online-softmax loop over 32-key tiles carrying the
// running max m, sum l and accumulator in f32. Causal: the key loop of query
// tile i0 stops at min(Sk, max(i0 + 64 + Sk - Sq, 0)), and only tiles whose
// last key j0 + kt - 1 exceeds the tile's diagonal (i0 + Sk - Sq) evaluate
// the causal predicate. No 256x256 tensor exists.

// CHECK-LABEL: func.func @causal_gqa_bool_mask
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<1x2x256x16xf32>, %[[K:[^:]+]]: tensor<1x1x256x16xf32>, %[[V:[^:]+]]: tensor<1x1x256x8xf32>, %[[M:[^:]+]]: tensor<256x256xi1>, %[[INIT:[^:]+]]: tensor<1x2x256x8xf32>)
// CHECK-NOT: 256x256xf32
// CHECK: scf.for %[[H:.+]] = %c0 to %c2 step %c1
// CHECK:   scf.for %[[I0:.+]] = %c0 to %c256 step %c64 iter_args(%[[OUT:.+]] = %{{.*}})
// CHECK:     %[[QT:.+]] = tensor.extract_slice %[[Q]][0, %[[H]], %[[I0]], 0] [1, 1, 64, 16]
// CHECK:     %[[DEST:.+]] = tensor.extract_slice %[[OUT]][0, %[[H]], %[[I0]], 0] [1, 1, 64, 8]
// CHECK:     %[[MT:.+]] = tensor.extract_slice %[[M]][%[[I0]], 0] [64, 256]
// CHECK:     %[[LAST:.+]] = arith.addi %[[I0]], %c64
// CHECK:     %[[POS:.+]] = arith.maxsi %[[LAST]], %c0
// CHECK:     %[[KV_END:.+]] = arith.minsi %[[POS]], %c256
// CHECK:     %[[R:.+]]:3 = scf.for %[[J0:.+]] = %c0 to %[[KV_END]] step %c32 iter_args(%[[MAX:.+]] = %{{.*}}, %[[SUM:.+]] = %{{.*}}, %[[ACC:.+]] = %{{.*}}) -> (tensor<64xf32>, tensor<64xf32>, tensor<64x8xf32>)
// CHECK:       %[[KT:.+]] = arith.minsi %{{.*}}, %c32
// CHECK:       %[[S:.+]] = linalg.generic {{.*}} ins(%[[QT]], %{{.*}} : tensor<1x1x64x16xf32>, tensor<1x1x?x16xf32>) outs(%{{.*}} : tensor<64x?xf32>)
// CHECK:       %[[END:.+]] = arith.addi %[[J0]], %[[KT]]
// CHECK:       %[[TILE_LAST:.+]] = arith.subi %[[END]], %c1
// CHECK:       %[[STRADDLES:.+]] = arith.cmpi sgt, %[[TILE_LAST]], %[[I0]]
// CHECK:       %[[LOGITS:.+]] = scf.if %[[STRADDLES]] -> (tensor<64x?xf32>)
// CHECK:         tensor.extract %[[MT]]
// CHECK:         arith.cmpi sle
// CHECK:       } else {
// CHECK-NOT:     arith.cmpi sle
// CHECK:         tensor.extract %[[MT]]
// CHECK:       }
// CHECK:       %[[TMAX:.+]] = linalg.generic {{.*}} ins(%[[LOGITS]] : tensor<64x?xf32>)
// CHECK:         arith.maximumf
// CHECK:       %[[ALPHA:.+]] = linalg.generic {{.*}} ins(%[[MAX]], %[[TMAX]] : tensor<64xf32>, tensor<64xf32>)
// CHECK:         math.exp
// CHECK:       %[[NEW_MAX:.+]] = linalg.generic {{.*}} ins(%[[TMAX]] : tensor<64xf32>) outs(%[[MAX]] : tensor<64xf32>)
// CHECK:       %[[P:.+]] = linalg.generic {{.*}} ins(%[[NEW_MAX]] : tensor<64xf32>) outs(%[[LOGITS]] : tensor<64x?xf32>)
// CHECK:         math.exp
// CHECK:       %[[SUM_SCALED:.+]] = linalg.generic {{.*}} ins(%[[ALPHA]] : tensor<64xf32>) outs(%[[SUM]] : tensor<64xf32>)
// CHECK:       %[[NEW_SUM:.+]] = linalg.generic {{.*}} ins(%[[P]] : tensor<64x?xf32>) outs(%[[SUM_SCALED]] : tensor<64xf32>)
// CHECK:       %[[ACC_SCALED:.+]] = linalg.generic {{.*}} ins(%[[ALPHA]] : tensor<64xf32>) outs(%[[ACC]] : tensor<64x8xf32>)
// CHECK:       %[[NEW_ACC:.+]] = linalg.generic {{.*}} ins(%[[P]], %{{.*}} : tensor<64x?xf32>, tensor<1x1x?x8xf32>) outs(%[[ACC_SCALED]] : tensor<64x8xf32>)
// CHECK:       scf.yield %[[NEW_MAX]], %[[NEW_SUM]], %[[NEW_ACC]]
// CHECK:     %[[O:.+]] = linalg.generic {{.*}} ins(%[[R]]#2, %[[R]]#1 : tensor<64x8xf32>, tensor<64xf32>) outs(%[[DEST]] : tensor<1x1x64x8xf32>)
// CHECK:       arith.divf
// CHECK:     tensor.insert_slice %[[O]] into %[[OUT]][0, %[[H]], %[[I0]], 0] [1, 1, 64, 8]
// CHECK-NOT: mha.attention
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
// CHECK: scf.for %[[I0:.+]] = %c0 to %{{.*}} step %c64
// CHECK:   %[[QT:.+]] = affine.min
// CHECK:   %[[SK:.+]] = tensor.dim %[[K]], %c2
// CHECK:   scf.for %{{.*}} = %c0 to %[[SK]] step %c32
// CHECK-NOT: scf.if
// CHECK-NOT: arith.cmpi sle
// CHECK:     scf.yield
// CHECK:   linalg.generic
// CHECK:     arith.truncf %{{.*}} : f32 to f16
func.func @dynamic_not_causal(%q: tensor<2x4x?x8xf16>, %k: tensor<2x4x?x8xf16>, %init: tensor<2x4x?x8xf16>) -> tensor<2x4x?x8xf16> {
  %o = mha.attention ins(%q, %k, %k : tensor<2x4x?x8xf16>, tensor<2x4x?x8xf16>, tensor<2x4x?x8xf16>)
         outs(%init : tensor<2x4x?x8xf16>) -> tensor<2x4x?x8xf16>
  return %o : tensor<2x4x?x8xf16>
}

// -----

// Tile sizes must be positive.
// RUN: not mha-opt %s --split-input-file --mha-tile-attention="q-tile-size=0" 2>&1 | FileCheck %s --check-prefix=ERROR
// ERROR: error: 'mha.attention' op tile sizes must be positive, found q-tile-size=0 kv-tile-size=64
