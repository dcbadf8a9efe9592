// RUN: mha-opt %s --mha-lower-to-cpu --mlir-print-ir-after=mha-return-arguments-in-place 2>&1 >/dev/null | FileCheck %s
// RUN: mha-opt %s --mha-lower-to-cpu --mlir-print-ir-after=mha-select-lowering-config 2>&1 >/dev/null | FileCheck %s --check-prefix=CONFIG

// A layer's decoding step on static KV caches [B, Hkv, Smax, d] =
// [1, 1, 4096, 64] that are arguments of the entry function (multi-query
// attention, with rotary embeddings): the step's keys and values are
// written into the caches' buffers, and the updated caches are returned as
// the argument buffers; nothing cache-sized is allocated, copied or cloned.
// The layer is decomposed before the lowering configuration is chosen, so
// that its attention, which decodes, is split across threads.

// CONFIG: mha.attention ins({{.*}}) key_lengths({{.*}}) {{.*}} mha.lowering_config = #mha.lowering_config<{{.*}}kv_splits = 8{{.*}}>

// CHECK-LABEL: func.func @step
// CHECK-SAME: %[[KC:arg5]]: memref<1x1x4096x64xf32>, %[[VC:arg6]]: memref<1x1x4096x64xf32>
// CHECK-NOT: bufferization.clone
// CHECK-NOT: memref.alloc({{.*}}) {{.*}} : memref<1x1x4096
// CHECK-NOT: memref.alloc() {{.*}} : memref<1x1x4096
// CHECK-NOT: memref.copy {{.*}} to memref<1x1x4096x64xf32>
// The step's row, written at the batch's length.
// CHECK: memref.subview %[[KC]][0, 0, %{{.*}}, 0] [1, 1, 1, 64]
// CHECK-NOT: bufferization.clone
// CHECK-NOT: memref.alloc({{.*}}) {{.*}} : memref<1x1x4096
// CHECK-NOT: memref.alloc() {{.*}} : memref<1x1x4096
// CHECK-NOT: memref.copy {{.*}} to memref<1x1x4096x64xf32>
// CHECK: return %{{.*}}, %[[KC]], %[[VC]] :
func.func @step(%x: tensor<1x1x512xf32>, %wq: tensor<512x512xf32>, %wkv: tensor<512x64xf32>,
                %wo: tensor<512x512xf32>, %len: tensor<1xi32>,
                %kc: tensor<1x1x4096x64xf32>, %vc: tensor<1x1x4096x64xf32>,
                %cos: tensor<8192x32xf32>, %sin: tensor<8192x32xf32>)
    -> (tensor<1x1x512xf32>, tensor<1x1x4096x64xf32>, tensor<1x1x4096x64xf32>) {
  %y, %k1, %v1 = mha.multi_head_attention %x, %x, %x, %wq, %wkv, %wkv, %wo
      kv_cache(%kc, %vc, %len) rotary(%cos, %sin)
      {num_heads = 8 : i64, num_kv_heads = 1 : i64, causal}
      : (tensor<1x1x512xf32>, tensor<1x1x512xf32>, tensor<1x1x512xf32>, tensor<512x512xf32>,
         tensor<512x64xf32>, tensor<512x64xf32>, tensor<512x512xf32>,
         tensor<1x1x4096x64xf32>, tensor<1x1x4096x64xf32>, tensor<1xi32>,
         tensor<8192x32xf32>, tensor<8192x32xf32>)
      -> (tensor<1x1x512xf32>, tensor<1x1x4096x64xf32>, tensor<1x1x4096x64xf32>)
  return %y, %k1, %v1 : tensor<1x1x512xf32>, tensor<1x1x4096x64xf32>, tensor<1x1x4096x64xf32>
}
