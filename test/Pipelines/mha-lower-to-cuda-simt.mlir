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
// With allow-tf32 the same functions run as the tensor-core kernel with
// TF32 operands (mma = [16, 8, 8]): per key block and warp (d = 64, 64
// keys) 64 m16n8k8 for S and 64 for P V, every operand from shared memory
// by scalar loads (2 per mma: 256), no ldmatrix (it moves 16-bit pairs),
// cp.async of 4 f32 (16 + 4 waits per key block); the row statistics (4
// shuffles) and P's move into A layout (8 per k8 step: 64); f32 K and V
// tiles, rows padded by 4 and 8 elements (64 * (68 + 72) * 4 = 35840
// bytes; d = 128: 32-key blocks, 34304); no spills.
//
// REQUIRES: ptxas
// RUN: mha-opt %s --mha-lower-to-cuda="chip=sm_80 format=isa" -o %t80.mlir
// RUN: %python %{mha_src_root}/scripts/ptx_report.py %t80.mlir --chip sm_80 | FileCheck %s
// RUN: mha-opt %s --mha-lower-to-cuda="chip=sm_90 format=isa" -o %t90.mlir
// RUN: %python %{mha_src_root}/scripts/ptx_report.py %t90.mlir --chip sm_90 | FileCheck %s
// RUN: mha-opt %s --mha-lower-to-cuda="chip=sm_80 format=isa allow-tf32" -o %t80tf32.mlir
// RUN: %python %{mha_src_root}/scripts/ptx_report.py %t80tf32.mlir --chip sm_80 | FileCheck %s --check-prefix=TF32
// RUN: mha-opt %s --mha-lower-to-cuda="chip=sm_90 format=isa allow-tf32" -o %t90tf32.mlir
// RUN: %python %{mha_src_root}/scripts/ptx_report.py %t90tf32.mlir --chip sm_90 | FileCheck %s --check-prefix=TF32

// CHECK: kernel f32_d64_kernel: registers {{[0-9]+}}, spill stores 0, spill loads 0, shared 34816 bytes, mma.sync 0, ldmatrix 0, cp.async 0, shfl.sync 136, {{.*}} bar.sync 3,
// CHECK: kernel f32_d64_causal_kernel: registers {{[0-9]+}}, spill stores 0, spill loads 0, shared 34816 bytes, mma.sync 0, ldmatrix 0, cp.async 0, shfl.sync 136, {{.*}} bar.sync 3,
// CHECK: kernel f32_d128_kernel: registers {{[0-9]+}}, spill stores 0, spill loads 0, shared 33792 bytes, mma.sync 0, ldmatrix 0, cp.async 0, shfl.sync 80, {{.*}} bar.sync 3,
// TF32: kernel f32_d64_kernel: registers {{[0-9]+}}, spill stores 0, spill loads 0, shared 35840 bytes, mma.sync 128 (loop 128), ldmatrix 0 (loop 0), cp.async 30 (loop 20), shfl.sync 72 (loop 68), ld.shared 256 (loop 256), st.shared 0 (loop 0), {{.*}} bar.sync 3 (loop 2),
// TF32: kernel f32_d64_causal_kernel: registers {{[0-9]+}}, spill stores 0, spill loads 0, shared 35840 bytes, mma.sync 128 (loop 128), ldmatrix 0 (loop 0), cp.async 30 (loop 20), shfl.sync 72 (loop 68), ld.shared 256 (loop 256), st.shared 0 (loop 0), {{.*}} bar.sync 3 (loop 2),
// TF32: kernel f32_d128_kernel: registers {{[0-9]+}}, spill stores 0, spill loads 0, shared 34304 bytes, mma.sync 128 (loop 128), ldmatrix 0 (loop 0), cp.async 30 (loop 20), shfl.sync 40 (loop 36), ld.shared 256 (loop 256), st.shared 0 (loop 0), {{.*}} bar.sync 3 (loop 2),

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
