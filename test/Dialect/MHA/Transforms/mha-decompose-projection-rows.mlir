// RUN: mha-opt %s --mha-decompose="projection-rows=16" | FileCheck %s
// RUN: not mha-opt %s --mha-decompose="projection-rows=-1" 2>&1 | FileCheck %s --check-prefix=NEGATIVE

// The projections of a decomposed layer tiled for threads, as
// mha-fuse-layer tiles K and V: the input projections over (batch, head,
// 16 rows), each tile's accumulator initialized from its bias inside the
// loop; the output projection over (batch, 16 rows), reducing over the
// heads it merges.

// CHECK-LABEL: func.func @layer
// CHECK: %[[Q:.+]] = scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) = (0, 0, 0) to (2, 4, 40) step (1, 1, 16) shared_outs({{.*}}) -> (tensor<2x4x40x8xf32>)
// CHECK:   linalg.generic {{.*}} ins(%{{.*}} : tensor<1x8xf32>) outs(%{{.*}} : tensor<1x1x?x8xf32>)
// CHECK:   linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]
// CHECK: %[[K:.+]] = scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) = (0, 0, 0) to (2, 2, 40) step (1, 1, 16)
// CHECK: %[[V:.+]] = scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) = (0, 0, 0) to (2, 2, 40) step (1, 1, 16)
// CHECK: %[[O:.+]] = mha.attention ins(%[[Q]], %[[K]], %[[V]] :
// CHECK: scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (2, 40) step (1, 16) shared_outs({{.*}}) -> (tensor<2x40x32xf32>)
// CHECK:   linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction", "reduction", "parallel"]
// NEGATIVE: projection-rows must be positive, or 0 to leave the projections whole, found -1
func.func @layer(%x: tensor<2x40x32xf32>, %wq: tensor<32x32xf32>, %wkv: tensor<32x16xf32>,
                 %wo: tensor<32x32xf32>, %bq: tensor<32xf32>, %bkv: tensor<16xf32>)
    -> tensor<2x40x32xf32> {
  %y = mha.multi_head_attention %x, %x, %x, %wq, %wkv, %wkv, %wo bias(%bq, %bkv, %bkv, %bq)
       {num_heads = 4 : i64, num_kv_heads = 2 : i64, causal}
       : (tensor<2x40x32xf32>, tensor<2x40x32xf32>, tensor<2x40x32xf32>, tensor<32x32xf32>,
          tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x32xf32>, tensor<32xf32>,
          tensor<16xf32>, tensor<16xf32>, tensor<32xf32>) -> tensor<2x40x32xf32>
  return %y : tensor<2x40x32xf32>
}
