// RUN: mha-opt %s --split-input-file --mha-decompose | FileCheck %s
// RUN: mha-opt %s --split-input-file --mha-decompose=unfused-only | FileCheck %s --check-prefix=UNFUSED

// A layer's decoding step on KV caches with rotary embeddings: the step's
// projected Q and K rotated at the cache lengths (mha.rotary), K and V
// written into the caches at those lengths (mha.cache_append), and the
// attention over the caches with the lengths after the step (+ Sk = 2);
// the updated caches replace the layer's extra results.

// CHECK-LABEL: func.func @step
// CHECK-SAME: %[[KC:[a-z0-9]+]]: tensor<?x2x128x16xf32>, %[[VC:[a-z0-9]+]]: tensor<?x2x128x16xf32>, %[[LEN:[a-z0-9]+]]: tensor<?xi32>, %[[COS:[a-z0-9]+]]: tensor<256x8xf32>, %[[SIN:[a-z0-9]+]]: tensor<256x8xf32>
// CHECK-DAG: %[[TWO:.+]] = arith.constant 2 : i32
// CHECK: %[[QR:.+]] = mha.rotary ins(%{{.*}} : tensor<?x4x2x16xf32>) cos_sin(%[[COS]], %[[SIN]] : {{.*}}) positions(%[[LEN]] : tensor<?xi32>) {{.*}} {interleaved}
// CHECK: %[[KR:.+]] = mha.rotary ins(%{{.*}} : tensor<?x2x2x16xf32>) cos_sin(%[[COS]], %[[SIN]] : {{.*}}) positions(%[[LEN]] : tensor<?xi32>) {{.*}} {interleaved}
// CHECK: %[[K1:.+]] = mha.cache_append ins(%[[KR]] : tensor<?x2x2x16xf32>) lengths(%[[LEN]] : tensor<?xi32>) outs(%[[KC]] : tensor<?x2x128x16xf32>)
// CHECK: %[[V1:.+]] = mha.cache_append ins(%{{.*}} : tensor<?x2x2x16xf32>) lengths(%[[LEN]] : tensor<?xi32>) outs(%[[VC]] : tensor<?x2x128x16xf32>)
// CHECK: %[[TOTAL:.+]] = linalg.generic {{.*}} ins(%[[LEN]] : tensor<?xi32>)
// CHECK:   arith.addi %{{.*}}, %[[TWO]] : i32
// CHECK: %[[O:.+]] = mha.attention ins(%[[QR]], %[[K1]], %[[V1]] : {{.*}}) mask(%{{.*}} : tensor<2x128xi1>) key_lengths(%[[TOTAL]] : tensor<?xi32>) {{.*}} {causal}
// CHECK: %[[Y:.+]] = linalg.generic {{.*}} ins(%[[O]],
// CHECK: return %[[Y]], %[[K1]], %[[V1]]
// UNFUSED-LABEL: func.func @step
// UNFUSED-NOT: mha.multi_head_attention
// UNFUSED: mha.cache_append
func.func @step(%x: tensor<?x2x64xf32>, %wq: tensor<64x64xf32>, %wkv: tensor<64x32xf32>,
                %wo: tensor<64x64xf32>, %m: tensor<2x128xi1>,
                %kc: tensor<?x2x128x16xf32>, %vc: tensor<?x2x128x16xf32>,
                %len: tensor<?xi32>, %cos: tensor<256x8xf32>, %sin: tensor<256x8xf32>)
    -> (tensor<?x2x64xf32>, tensor<?x2x128x16xf32>, tensor<?x2x128x16xf32>) {
  %y, %k1, %v1 = mha.multi_head_attention %x, %x, %x, %wq, %wkv, %wkv, %wo mask(%m)
      kv_cache(%kc, %vc, %len) rotary(%cos, %sin)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, causal, rotary_interleaved}
      : (tensor<?x2x64xf32>, tensor<?x2x64xf32>, tensor<?x2x64xf32>, tensor<64x64xf32>,
         tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x64xf32>, tensor<2x128xi1>,
         tensor<?x2x128x16xf32>, tensor<?x2x128x16xf32>, tensor<?xi32>,
         tensor<256x8xf32>, tensor<256x8xf32>)
      -> (tensor<?x2x64xf32>, tensor<?x2x128x16xf32>, tensor<?x2x128x16xf32>)
  return %y, %k1, %v1 : tensor<?x2x64xf32>, tensor<?x2x128x16xf32>, tensor<?x2x128x16xf32>
}

// -----

// Rotary without a cache: the tokens are at 0..S-1 (zero offsets).
// CHECK-LABEL: func.func @rotary_prefill
// CHECK-DAG: %[[ZERO:.+]] = arith.constant 0 : i32
// CHECK: %[[EMPTY:.+]] = tensor.empty(%{{.*}}) : tensor<?xi32>
// CHECK: %[[OFFSETS:.+]] = linalg.fill ins(%[[ZERO]] : i32) outs(%[[EMPTY]] : tensor<?xi32>)
// CHECK: mha.rotary {{.*}} positions(%[[OFFSETS]] : tensor<?xi32>)
// CHECK-NOT: {interleaved}
// CHECK: mha.rotary {{.*}} positions(%[[OFFSETS]] : tensor<?xi32>)
// CHECK-NOT: mha.cache_append
// CHECK: mha.attention
// UNFUSED-LABEL: func.func @rotary_prefill
// UNFUSED-NOT: mha.multi_head_attention
// UNFUSED: mha.rotary
func.func @rotary_prefill(%x: tensor<?x?x64xf32>, %w: tensor<64x64xf32>, %cos: tensor<4096x8xf32>,
                          %sin: tensor<4096x8xf32>) -> tensor<?x?x64xf32> {
  %y = mha.multi_head_attention %x, %x, %x, %w, %w, %w, %w rotary(%cos, %sin)
      {num_heads = 4 : i64, causal}
      : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<64x64xf32>,
         tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<4096x8xf32>,
         tensor<4096x8xf32>) -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}

// -----

// unfused-only leaves the layers mha-fuse-layer fuses (and decomposes the
// ones that return their weights).
// UNFUSED-LABEL: func.func @plain_and_weights
// UNFUSED: mha.multi_head_attention
// UNFUSED-NOT: mha.multi_head_attention
// UNFUSED: mha.attention_weights
func.func @plain_and_weights(%x: tensor<1x8x16xf32>, %w: tensor<16x16xf32>)
    -> (tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<1x8x8xf32>) {
  %a = mha.multi_head_attention %x, %x, %x, %w, %w, %w, %w {num_heads = 2 : i64}
       : (tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<1x8x16xf32>
  %y, %p = mha.multi_head_attention %x, %x, %x, %w, %w, %w, %w {num_heads = 2 : i64, return_weights = "average"}
       : (tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> (tensor<1x8x16xf32>, tensor<1x8x8xf32>)
  return %a, %y, %p : tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<1x8x8xf32>
}
