// f32 attention through mha-lower-to-cuda runs as the register kernel
// (mha-attention-to-simt). What ptxas makes of it, for sm_80 and sm_90
// (scripts/ptx_report.py): no spills; no tensor cores; the Q tile and the
// K and V blocks as the shared memory, rows padded by 16 bytes (d = 64: 64
// rows and 32 keys, (64 + 32) * 68 * 4 + 32 * 68 * 4 = 34816 bytes;
// d = 128: 32 rows and 16 keys, 33792 bytes); per key block and thread,
// the row maxima and sums of its 4 rows over a group of 8 lanes (3 + 3
// shuffles a row) and the probabilities of the 7 other lanes (7 * keys
// per thread * 4 rows): 136 shuffles at 4 keys a thread, 80 at 2; two
// barriers per key block and one after the kernel's thread loop.
//
// REQUIRES: ptxas
// RUN: mha-opt %s --mha-lower-to-cuda="chip=sm_80 format=isa" -o %t80.mlir
// RUN: %python %{mha_src_root}/scripts/ptx_report.py %t80.mlir --chip sm_80 | FileCheck %s
// RUN: mha-opt %s --mha-lower-to-cuda="chip=sm_90 format=isa" -o %t90.mlir
// RUN: %python %{mha_src_root}/scripts/ptx_report.py %t90.mlir --chip sm_90 | FileCheck %s

// CHECK: kernel f32_d64_kernel: registers {{[0-9]+}}, spill stores 0, spill loads 0, shared 34816 bytes, mma.sync 0, ldmatrix 0, cp.async 0, shfl.sync 136, {{.*}} bar.sync 3,
// CHECK: kernel f32_d64_causal_kernel: registers {{[0-9]+}}, spill stores 0, spill loads 0, shared 34816 bytes, mma.sync 0, ldmatrix 0, cp.async 0, shfl.sync 136, {{.*}} bar.sync 3,
// CHECK: kernel f32_d128_kernel: registers {{[0-9]+}}, spill stores 0, spill loads 0, shared 33792 bytes, mma.sync 0, ldmatrix 0, cp.async 0, shfl.sync 80, {{.*}} bar.sync 3,

func.func @f32_d64(%q: tensor<1x12x1024x64xf32>, %k: tensor<1x12x1024x64xf32>, %v: tensor<1x12x1024x64xf32>) -> tensor<1x12x1024x64xf32> {
  %init = tensor.empty() : tensor<1x12x1024x64xf32>
  %y = mha.attention ins(%q, %k, %v : tensor<1x12x1024x64xf32>, tensor<1x12x1024x64xf32>, tensor<1x12x1024x64xf32>)
         outs(%init : tensor<1x12x1024x64xf32>) -> tensor<1x12x1024x64xf32>
  return %y : tensor<1x12x1024x64xf32>
}
func.func @f32_d64_causal(%q: tensor<1x12x1024x64xf32>, %k: tensor<1x12x1024x64xf32>, %v: tensor<1x12x1024x64xf32>) -> tensor<1x12x1024x64xf32> {
  %init = tensor.empty() : tensor<1x12x1024x64xf32>
  %y = mha.attention ins(%q, %k, %v : tensor<1x12x1024x64xf32>, tensor<1x12x1024x64xf32>, tensor<1x12x1024x64xf32>)
         outs(%init : tensor<1x12x1024x64xf32>) {causal} -> tensor<1x12x1024x64xf32>
  return %y : tensor<1x12x1024x64xf32>
}
func.func @f32_d128(%q: tensor<1x12x1024x128xf32>, %k: tensor<1x12x1024x128xf32>, %v: tensor<1x12x1024x128xf32>) -> tensor<1x12x1024x128xf32> {
  %init = tensor.empty() : tensor<1x12x1024x128xf32>
  %y = mha.attention ins(%q, %k, %v : tensor<1x12x1024x128xf32>, tensor<1x12x1024x128xf32>, tensor<1x12x1024x128xf32>)
         outs(%init : tensor<1x12x1024x128xf32>) {causal} -> tensor<1x12x1024x128xf32>
  return %y : tensor<1x12x1024x128xf32>
}
