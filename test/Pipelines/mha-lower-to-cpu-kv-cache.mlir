// RUN: mha-opt %s --mha-lower-to-cpu --mlir-print-ir-after=mha-return-arguments-in-place 2>&1 >/dev/null | FileCheck %s

// A decoding step on static KV caches [B, Hkv, Smax, d] = [2, 2, 4096, 64]
// that are arguments of the entry function: the step's keys and values are
// written into the caches' buffers (B·Hkv·Sn·d elements), the attention
// reads them there, and the updated caches are returned as the argument
// buffers. Nothing cache-sized is allocated (no copy of the caches, no
// transposed copy of the keys: each key block is transposed where it is
// read) and nothing cache-sized is copied or cloned.

// CHECK-LABEL: func.func @step
// CHECK-SAME: %[[KC:arg3]]: memref<2x2x4096x64xf32>, %[[VC:arg4]]: memref<2x2x4096x64xf32>
// CHECK-NOT: bufferization.clone
// CHECK-NOT: memref.alloc({{.*}}) {{.*}} : memref<2x2x
// CHECK-NOT: memref.alloc() {{.*}} : memref<2x2x
// CHECK-NOT: memref.copy {{.*}} to memref<2x2x4096x64xf32>
// The step's rows, written at each batch's length.
// CHECK: memref.subview %[[KC]][%{{.*}}, 0, %{{.*}}, 0] [1, 2, 1, 64]
// CHECK-NOT: bufferization.clone
// CHECK-NOT: memref.alloc({{.*}}) {{.*}} : memref<2x2x
// CHECK-NOT: memref.alloc() {{.*}} : memref<2x2x
// CHECK-NOT: memref.copy {{.*}} to memref<2x2x4096x64xf32>
// CHECK: return %{{.*}}, %[[KC]], %[[VC]] :
func.func @step(%q: tensor<2x8x1x64xf32>, %k: tensor<2x2x1x64xf32>, %v: tensor<2x2x1x64xf32>,
                %kc: tensor<2x2x4096x64xf32>, %vc: tensor<2x2x4096x64xf32>, %len: tensor<2xi32>)
    -> (tensor<2x8x1x64xf32>, tensor<2x2x4096x64xf32>, tensor<2x2x4096x64xf32>) {
  %kc2 = mha.cache_append ins(%k : tensor<2x2x1x64xf32>) lengths(%len : tensor<2xi32>)
           outs(%kc : tensor<2x2x4096x64xf32>) -> tensor<2x2x4096x64xf32>
  %vc2 = mha.cache_append ins(%v : tensor<2x2x1x64xf32>) lengths(%len : tensor<2xi32>)
           outs(%vc : tensor<2x2x4096x64xf32>) -> tensor<2x2x4096x64xf32>
  %one = arith.constant dense<1> : tensor<2xi32>
  %total = arith.addi %len, %one : tensor<2xi32>
  %init = tensor.empty() : tensor<2x8x1x64xf32>
  %o = mha.attention ins(%q, %kc2, %vc2 : tensor<2x8x1x64xf32>, tensor<2x2x4096x64xf32>, tensor<2x2x4096x64xf32>)
         key_lengths(%total : tensor<2xi32>) outs(%init : tensor<2x8x1x64xf32>) {causal}
         -> tensor<2x8x1x64xf32>
  return %o, %kc2, %vc2 : tensor<2x8x1x64xf32>, tensor<2x2x4096x64xf32>, tensor<2x2x4096x64xf32>
}
