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

// Fewer rows per batch than a tile (a decoding step): every batch in a
// tile, so that each weight is read once per call; the inputs over (head,
// rows), the output over (rows, 128 columns).
// CHECK-LABEL: func.func @decode
// CHECK: scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (4, 1) step (1, 16) shared_outs({{.*}}) -> (tensor<8x4x1x64xf32>)
// CHECK:   linalg.fill {{.*}} -> tensor<8x1x?x64xf32>
// CHECK: scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (1, 256) step (16, 128) shared_outs({{.*}}) -> (tensor<8x1x256xf32>)
// CHECK:   linalg.fill {{.*}} -> tensor<8x?x128xf32>
func.func @decode(%x: tensor<8x1x256xf32>, %w: tensor<256x256xf32>, %kc: tensor<8x4x32x64xf32>,
                  %len: tensor<8xi32>) -> (tensor<8x1x256xf32>, tensor<8x4x32x64xf32>, tensor<8x4x32x64xf32>) {
  %y, %k, %v = mha.multi_head_attention %x, %x, %x, %w, %w, %w, %w kv_cache(%kc, %kc, %len)
       {num_heads = 4 : i64, causal}
       : (tensor<8x1x256xf32>, tensor<8x1x256xf32>, tensor<8x1x256xf32>, tensor<256x256xf32>,
          tensor<256x256xf32>, tensor<256x256xf32>, tensor<256x256xf32>, tensor<8x4x32x64xf32>,
          tensor<8x4x32x64xf32>, tensor<8xi32>) -> (tensor<8x1x256xf32>, tensor<8x4x32x64xf32>, tensor<8x4x32x64xf32>)
  return %y, %k, %v : tensor<8x1x256xf32>, tensor<8x4x32x64xf32>, tensor<8x4x32x64xf32>
}
