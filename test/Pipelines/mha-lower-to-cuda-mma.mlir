// f16 attention through mha-lower-to-cuda runs as the tensor-core kernel
// (mha-attention-to-mma). What ptxas makes of it, for sm_80 and sm_90
// (scripts/ptx_report.py): no spills, at most 168 registers at head dim 64
// (3 workgroups of 128 threads per SM fit); the mma.sync count of the tile
// arithmetic in the key loop (2 * 64 keys * d / 128 per warp: 64 at d = 64,
// 128 at d = 128) with their operands from shared memory by ldmatrix (x4:
// d / 4 for K and as many for V per key block: 32 at d = 64, 64 at 128)
// and no other shared-memory access; the tiles filled by cp.async (per key
// block, thread and tile, 64 * d / 8 / 128 16-byte copies, a commit and a
// wait: 12 at d = 64, 20 at d = 128); shuffles for the row statistics; the
// K and V tiles, rows padded by 16 bytes, as the shared memory (64 * (64 +
// 8) * 2 * 2 = 18432 bytes at d = 64); two barriers per key block; and no
// constants passed that the kernel could compute
// (gpu-launch-sink-index-computations).
//
// REQUIRES: ptxas
// RUN: mha-opt %s --mha-lower-to-cuda="chip=sm_80 format=isa" -o %t80.mlir
// RUN: %python %{mha_src_root}/scripts/ptx_report.py %t80.mlir --chip sm_80 | FileCheck %s
// RUN: mha-opt %s --mha-lower-to-cuda="chip=sm_90 format=isa" -o %t90.mlir
// RUN: %python %{mha_src_root}/scripts/ptx_report.py %t90.mlir --chip sm_90 | FileCheck %s
// RUN: FileCheck %s --check-prefix=HOST < %t90.mlir
// RUN: %python %{mha_src_root}/scripts/ptx_report.py %t90.mlir --ptx-out %t90.ptx > /dev/null
// RUN: FileCheck %s --check-prefix=PTX < %t90.ptx

// CHECK: kernel d64_kernel: registers {{(1[0-5][0-9]|16[0-8]|[1-9][0-9])}}, spill stores 0, spill loads 0, shared 18432 bytes, mma.sync 64 (loop 64), ldmatrix 32 (loop 32), cp.async 18 (loop 12), shfl.sync 8 (loop 4), ld.shared 0 (loop 0), st.shared 0 (loop 0), ld.global {{[0-9]+}} (loop 0), {{.*}} bar.sync {{[0-9]+}} (loop 2)
// CHECK: kernel d64_causal_kernel: registers {{(1[0-5][0-9]|16[0-8]|[1-9][0-9])}}, spill stores 0, spill loads 0, shared 18432 bytes, mma.sync 64 (loop 64), ldmatrix 32 (loop 32), cp.async 18 (loop 12), shfl.sync 8 (loop 4), ld.shared 0 (loop 0), st.shared 0 (loop 0), ld.global {{[0-9]+}} (loop 0), {{.*}} bar.sync {{[0-9]+}} (loop 2)
// CHECK: kernel bf16_kernel: registers {{(1[0-5][0-9]|16[0-8]|[1-9][0-9])}}, spill stores 0, spill loads 0, shared 18432 bytes, mma.sync 64 (loop 64), ldmatrix 32 (loop 32), cp.async 18 (loop 12), shfl.sync 8 (loop 4), ld.shared 0 (loop 0), st.shared 0 (loop 0),
// CHECK: kernel d128_kernel: registers {{[0-9]+}}, spill stores 0, spill loads 0, shared 34816 bytes, mma.sync 128 (loop 128), ldmatrix 64 (loop 64), cp.async 30 (loop 20), {{.*}} ld.shared 0 (loop 0), st.shared 0 (loop 0), ld.global {{[0-9]+}} (loop 0), {{.*}} bar.sync {{[0-9]+}} (loop 2)

// A whole f16 layer: the Q, K and V projections and the output projection
// are tensor-core GEMM kernels (mha-contraction-to-mma), the attention
// between them the attention kernel. At 256 rows, 64 x 64 output tiles
// (warps of 32 x 32) and 4 stages of padded shared tiles (38912 bytes): per
// k step of 32 and warp 16 mma.sync, 8 ldmatrix, 4 16-byte cp.async with a
// commit and a wait, one barrier; 3 steps' copies (15) before the loop.
// CHECK-COUNT-3: kernel layer_gemm: registers {{[0-9]+}}, spill stores 0, spill loads 0, shared 38912 bytes, mma.sync 16 (loop 16), ldmatrix 8 (loop 8), cp.async 22 (loop 6), shfl.sync 0 (loop 0), ld.shared 0 (loop 0), st.shared 0 (loop 0), ld.global 0 (loop 0), {{.*}} bar.sync {{[0-9]+}} (loop 1)
// CHECK-NEXT: kernel layer_kernel: registers {{[0-9]+}}, spill stores 0, spill loads 0, shared 18432 bytes, mma.sync 64 (loop 64), ldmatrix 32 (loop 32)
// CHECK-NEXT: kernel layer_gemm: registers {{[0-9]+}}, spill stores 0, spill loads 0, shared 38912 bytes, mma.sync 16 (loop 16), ldmatrix 8 (loop 8), cp.async 22 (loop 6)
// With biases, the same GEMM kernels, each adding its bias in the epilogue
// (a pair of columns for each of a thread's 4 output tiles: 8 loads, outside
// the k loop).
// CHECK-COUNT-3: kernel layer_bias_gemm: registers {{[0-9]+}}, spill stores 0, spill loads 0, shared 38912 bytes, mma.sync 16 (loop 16), ldmatrix 8 (loop 8), cp.async 22 (loop 6), shfl.sync 0 (loop 0), ld.shared 0 (loop 0), st.shared 0 (loop 0), ld.global 8 (loop 0),
// CHECK-NEXT: kernel layer_bias_kernel: registers {{[0-9]+}}, spill stores 0, spill loads 0, shared 18432 bytes, mma.sync 64 (loop 64)
// CHECK-NEXT: kernel layer_bias_gemm: registers {{[0-9]+}}, spill stores 0, spill loads 0, shared 38912 bytes, mma.sync 16 (loop 16), ldmatrix 8 (loop 8), cp.async 22 (loop 6), shfl.sync 0 (loop 0), ld.shared 0 (loop 0), st.shared 0 (loop 0), ld.global 8 (loop 0),
// Key lengths, causal, a left window, a softcap and a mask: the same tile
// arithmetic and no spills (the cap's tanh is libdevice's, on ex2; the mask
// read from device memory in the key loop).
// CHECK-NEXT: kernel features_kernel: registers {{[0-9]+}}, spill stores 0, spill loads 0, shared 18432 bytes, mma.sync 64 (loop 64), ldmatrix 32 (loop 32), cp.async 18 (loop 12), shfl.sync 8 (loop 4), ld.shared 0 (loop 0), st.shared 0 (loop 0),

// GPT-2's layer (B=8 S=1024 E=768): its projections in 128 x 128 tiles
// (warps of 64 x 64: 32 accumulator fragments, 128 of the registers, no
// spills), 4 stages of 18,944 bytes as dynamic shared memory (over the 48
// KiB of static shared memory; sm_80 and sm_90 let a kernel opt into 163
// and 227 KiB); per k step and warp 64 mma.sync from 16 ldmatrix (8 per
// k16 step: 4 A, 4 B), 8 copies, one barrier. BERT-base's (B=32 S=128):
// 128 x 64 tiles (warps of 64 x 32), 4 stages of 14,848 bytes, 32 mma.sync
// from 12 ldmatrix.
// CHECK: kernel gpt2_layer_gemm: registers {{[0-9]+}}, spill stores 0, spill loads 0, shared 75776 bytes (dynamic), mma.sync 64 (loop 64), ldmatrix 16 (loop 16), cp.async 38 (loop 10), shfl.sync 0 (loop 0), ld.shared 0 (loop 0), st.shared 0 (loop 0), ld.global 0 (loop 0), st.global 64 (loop 0), bar.sync {{[0-9]+}} (loop 1)
// CHECK: kernel bert_layer_gemm: registers {{[0-9]+}}, spill stores 0, spill loads 0, shared 59392 bytes (dynamic), mma.sync 32 (loop 32), ldmatrix 12 (loop 12), cp.async 30 (loop 8), shfl.sync 0 (loop 0), ld.shared 0 (loop 0), st.shared 0 (loop 0), ld.global 0 (loop 0), st.global 32 (loop 0), bar.sync {{[0-9]+}} (loop 1)

// 4 warps per workgroup; only buffers and run-time sizes as arguments.
// HOST-LABEL: llvm.func @d64(
// HOST: gpu.launch_func {{.*}} threads in (%[[T:.+]], %{{.+}}, %{{.+}}) : i64 args(%{{[^:]+}} : !llvm.ptr, %{{[^:]+}} : !llvm.ptr
// HOST-NOT: vector<

func.func @d64(%q: tensor<1x12x1024x64xf16>, %k: tensor<1x12x1024x64xf16>, %v: tensor<1x12x1024x64xf16>) -> tensor<1x12x1024x64xf16> {
  %init = tensor.empty() : tensor<1x12x1024x64xf16>
  %y = mha.attention ins(%q, %k, %v : tensor<1x12x1024x64xf16>, tensor<1x12x1024x64xf16>, tensor<1x12x1024x64xf16>)
         outs(%init : tensor<1x12x1024x64xf16>) -> tensor<1x12x1024x64xf16>
  return %y : tensor<1x12x1024x64xf16>
}

func.func @d64_causal(%q: tensor<?x12x?x64xf16>, %k: tensor<?x4x?x64xf16>, %v: tensor<?x4x?x64xf16>) -> tensor<?x12x?x64xf16> {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %b = tensor.dim %q, %c0 : tensor<?x12x?x64xf16>
  %s = tensor.dim %q, %c2 : tensor<?x12x?x64xf16>
  %init = tensor.empty(%b, %s) : tensor<?x12x?x64xf16>
  %y = mha.attention ins(%q, %k, %v : tensor<?x12x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>)
         outs(%init : tensor<?x12x?x64xf16>) {causal} -> tensor<?x12x?x64xf16>
  return %y : tensor<?x12x?x64xf16>
}

// bf16 operands: the same kernel with nvvm.mma.sync on bf16.
// PTX-LABEL: .entry bf16_kernel
// PTX: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// PTX-LABEL: .entry d128_kernel
// PTX: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
func.func @bf16(%q: tensor<1x12x1024x64xbf16>, %k: tensor<1x12x1024x64xbf16>, %v: tensor<1x12x1024x64xbf16>) -> tensor<1x12x1024x64xbf16> {
  %init = tensor.empty() : tensor<1x12x1024x64xbf16>
  %y = mha.attention ins(%q, %k, %v : tensor<1x12x1024x64xbf16>, tensor<1x12x1024x64xbf16>, tensor<1x12x1024x64xbf16>)
         outs(%init : tensor<1x12x1024x64xbf16>) -> tensor<1x12x1024x64xbf16>
  return %y : tensor<1x12x1024x64xbf16>
}

func.func @d128(%q: tensor<2x16x2048x128xf16>, %k: tensor<2x16x2048x128xf16>, %v: tensor<2x16x2048x128xf16>) -> tensor<2x16x2048x128xf16> {
  %init = tensor.empty() : tensor<2x16x2048x128xf16>
  %y = mha.attention ins(%q, %k, %v : tensor<2x16x2048x128xf16>, tensor<2x16x2048x128xf16>, tensor<2x16x2048x128xf16>)
         outs(%init : tensor<2x16x2048x128xf16>) {causal} -> tensor<2x16x2048x128xf16>
  return %y : tensor<2x16x2048x128xf16>
}

func.func @layer(%x: tensor<2x128x256xf16>, %wq: tensor<256x256xf16>, %wk: tensor<256x256xf16>, %wv: tensor<256x256xf16>, %wo: tensor<256x256xf16>) -> tensor<2x128x256xf16> {
  %y = mha.multi_head_attention %x, %x, %x, %wq, %wk, %wv, %wo {num_heads = 4 : i64, causal}
         : (tensor<2x128x256xf16>, tensor<2x128x256xf16>, tensor<2x128x256xf16>, tensor<256x256xf16>, tensor<256x256xf16>, tensor<256x256xf16>, tensor<256x256xf16>) -> tensor<2x128x256xf16>
  return %y : tensor<2x128x256xf16>
}

func.func @layer_bias(%x: tensor<2x128x256xf16>, %wq: tensor<256x256xf16>, %wk: tensor<256x256xf16>, %wv: tensor<256x256xf16>, %wo: tensor<256x256xf16>, %bq: tensor<256xf16>, %bk: tensor<256xf16>, %bv: tensor<256xf16>, %bo: tensor<256xf16>) -> tensor<2x128x256xf16> {
  %y = mha.multi_head_attention %x, %x, %x, %wq, %wk, %wv, %wo bias(%bq, %bk, %bv, %bo) {num_heads = 4 : i64}
         : (tensor<2x128x256xf16>, tensor<2x128x256xf16>, tensor<2x128x256xf16>, tensor<256x256xf16>, tensor<256x256xf16>, tensor<256x256xf16>, tensor<256x256xf16>, tensor<256xf16>, tensor<256xf16>, tensor<256xf16>, tensor<256xf16>) -> tensor<2x128x256xf16>
  return %y : tensor<2x128x256xf16>
}

// Per-batch key lengths, causal, a left window, a softcap and an additive
// mask in the tensor-core kernel: the same mma count per key block, still
// no spills.
func.func @features(%q: tensor<2x12x512x64xf16>, %k: tensor<2x4x512x64xf16>, %v: tensor<2x4x512x64xf16>, %len: tensor<2xi32>, %m: tensor<2x1x512x512xf16>) -> tensor<2x12x512x64xf16> {
  %init = tensor.empty() : tensor<2x12x512x64xf16>
  %y = mha.attention ins(%q, %k, %v : tensor<2x12x512x64xf16>, tensor<2x4x512x64xf16>, tensor<2x4x512x64xf16>) mask(%m : tensor<2x1x512x512xf16>) key_lengths(%len : tensor<2xi32>)
         outs(%init : tensor<2x12x512x64xf16>) {causal, window_left = 128 : i64, softcap = 30.0 : f32} -> tensor<2x12x512x64xf16>
  return %y : tensor<2x12x512x64xf16>
}

func.func @gpt2_layer(%x: tensor<8x1024x768xf16>, %wq: tensor<768x768xf16>, %wk: tensor<768x768xf16>, %wv: tensor<768x768xf16>, %wo: tensor<768x768xf16>) -> tensor<8x1024x768xf16> {
  %y = mha.multi_head_attention %x, %x, %x, %wq, %wk, %wv, %wo {num_heads = 12 : i64, causal}
         : (tensor<8x1024x768xf16>, tensor<8x1024x768xf16>, tensor<8x1024x768xf16>, tensor<768x768xf16>, tensor<768x768xf16>, tensor<768x768xf16>, tensor<768x768xf16>) -> tensor<8x1024x768xf16>
  return %y : tensor<8x1024x768xf16>
}
func.func @bert_layer(%x: tensor<32x128x768xf16>, %wq: tensor<768x768xf16>, %wk: tensor<768x768xf16>, %wv: tensor<768x768xf16>, %wo: tensor<768x768xf16>) -> tensor<32x128x768xf16> {
  %y = mha.multi_head_attention %x, %x, %x, %wq, %wk, %wv, %wo {num_heads = 12 : i64}
         : (tensor<32x128x768xf16>, tensor<32x128x768xf16>, tensor<32x128x768xf16>, tensor<768x768xf16>, tensor<768x768xf16>, tensor<768x768xf16>, tensor<768x768xf16>) -> tensor<32x128x768xf16>
  return %y : tensor<32x128x768xf16>
}
