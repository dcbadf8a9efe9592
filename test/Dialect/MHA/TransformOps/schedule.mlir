// RUN: mha-opt %s --transform-preload-library=transform-library-paths=%S/../../../Integration/CPU/Inputs/flash-schedule.mlir --transform-interpreter --canonicalize --cse | FileCheck %s

// The whole layer scheduled in the transform dialect (the schedule is
// test/Integration/CPU/Inputs/flash-schedule.mlir, which
// Integration/CPU/transform-schedule.test also runs against the reference):
// an scf.forall over (batch, query tile) with the Q projection and its bias
// fused as producers, the output projection fused as a consumer, K and V
// projected once outside, and inside the key loop of the online form (a
// reduction tile of 8 keys ending at the causal bound) decomposed into linalg.

// CHECK-DAG: #[[KV_END:.+]] = affine_map<()[s0] -> (40, s0)>
// CHECK-LABEL: func.func @scripted
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x40x32xf32>, %[[WQ:[^:]+]]: tensor<32x32xf32>, %[[WKV:[^:]+]]: tensor<32x16xf32>, %[[WO:[^:]+]]: tensor<32x32xf32>, %[[BQ:[^:]+]]: tensor<32xf32>, %[[BKV:[^:]+]]: tensor<16xf32>, %[[BO:[^:]+]]: tensor<32xf32>)
// CHECK-NOT: mha.
// CHECK: %[[WKVS:.+]] = tensor.expand_shape %[[WKV]] {{.*}} into tensor<32x2x8xf32>
// CHECK: %[[KV:.+]] = linalg.generic {{.*}} ins(%[[X]], %[[WKVS]] : tensor<2x40x32xf32>, tensor<32x2x8xf32>) outs(%{{.*}} : tensor<2x2x40x8xf32>)
// CHECK: %[[Y0:.+]] = linalg.generic {{.*}} ins(%[[BO]] : tensor<32xf32>) outs(%{{.*}} : tensor<2x40x32xf32>)
// CHECK: scf.forall (%[[B:.+]], %[[T:.+]]) in (2, 3) shared_outs(%[[Y:.+]] = %[[Y0]])
// CHECK:   %[[QACC:.+]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<4x8xf32>)
// CHECK:   %[[Q:.+]] = linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x?x32xf32>, tensor<32x4x8xf32>) outs(%[[QACC]] : tensor<1x4x?x8xf32>)
// CHECK:   %[[KVB:.+]] = tensor.extract_slice %[[KV]][%[[B]], 0, 0, 0] [1, 2, 40, 8]
// CHECK:   %[[END:.+]] = affine.min #[[KV_END]]()
// CHECK:   %[[STATE:.+]]:3 = scf.for %{{.*}} = %c0 to %[[END]] step %c8
// CHECK:     tensor.extract_slice %[[KVB]]
// CHECK:     linalg.generic
// CHECK:     scf.if
// CHECK:     math.exp
// CHECK:     scf.yield
// CHECK:   %[[O:.+]] = linalg.generic {{.*}} ins(%[[STATE]]#0, %[[STATE]]#2 : tensor<1x4x?x8xf32>, tensor<1x4x?xf32>)
// CHECK:   %[[YT:.+]] = tensor.extract_slice %[[Y]][%[[B]], %{{.*}}, 0] [1, %{{.*}}, 32]
// CHECK:   %[[YN:.+]] = linalg.generic {{.*}} ins(%[[O]], %{{.*}} : tensor<1x4x?x8xf32>, tensor<4x8x32xf32>) outs(%[[YT]] : tensor<1x?x32xf32>)
// CHECK:   scf.forall.in_parallel
// CHECK:     tensor.parallel_insert_slice %[[YN]] into %[[Y]][%[[B]], %{{.*}}, 0] [1, %{{.*}}, 32]
// CHECK-NOT: mha.
func.func @scripted(%x: tensor<2x40x32xf32>, %wq: tensor<32x32xf32>, %wkv: tensor<32x16xf32>,
                    %wo: tensor<32x32xf32>, %bq: tensor<32xf32>, %bkv: tensor<16xf32>,
                    %bo: tensor<32xf32>) -> tensor<2x40x32xf32> {
  %y = mha.multi_head_attention %x, %x, %x, %wq, %wkv, %wkv, %wo bias(%bq, %bkv, %bkv, %bo)
       {num_heads = 4 : i64, num_kv_heads = 2 : i64, causal}
       : (tensor<2x40x32xf32>, tensor<2x40x32xf32>, tensor<2x40x32xf32>, tensor<32x32xf32>,
          tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x32xf32>, tensor<32xf32>,
          tensor<16xf32>, tensor<16xf32>, tensor<32xf32>) -> tensor<2x40x32xf32>
  return %y : tensor<2x40x32xf32>
}
