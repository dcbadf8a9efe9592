// A whole layer through mha-lower-to-vulkan: the Q, K and V projections
// (bias broadcasts fused), the attention and the output projection are five
// kernels; the host code only launches them (no floating-point arithmetic
// of its own). The intermediate buffers only kernels use are device
// buffers from the start (mgpuMemAlloc, freed after the last launch); the
// host's input is copied in once for the three projections that read it,
// the output copied back once.
//
// RUN: mha-opt %s --mha-lower-to-vulkan | FileCheck %s

// CHECK-LABEL: llvm.func @main(
// CHECK-NOT: llvm.fmul
// CHECK-NOT: llvm.fadd
// CHECK-COUNT-5: gpu.launch_func
// CHECK-NOT: gpu.launch_func
// CHECK: llvm.call @mgpuMemcpy
// CHECK: llvm.call @mgpuMemFree
// CHECK: llvm.return
// CHECK-COUNT-5: gpu.binary

func.func @main(%x: tensor<2x64x32xf32>, %wq: tensor<32x32xf32>, %wk: tensor<32x32xf32>,
                %wv: tensor<32x32xf32>, %wo: tensor<32x32xf32>, %bq: tensor<32xf32>,
                %bk: tensor<32xf32>, %bv: tensor<32xf32>, %bo: tensor<32xf32>) -> tensor<2x64x32xf32> {
  %y = mha.multi_head_attention %x, %x, %x, %wq, %wk, %wv, %wo bias(%bq, %bk, %bv, %bo)
         {num_heads = 2 : i64, causal}
         : (tensor<2x64x32xf32>, tensor<2x64x32xf32>, tensor<2x64x32xf32>, tensor<32x32xf32>,
            tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<32xf32>,
            tensor<32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<2x64x32xf32>
  return %y : tensor<2x64x32xf32>
}
