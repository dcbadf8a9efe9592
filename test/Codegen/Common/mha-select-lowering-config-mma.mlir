// The rule for the tensor-core kernel (mha-attention-to-mma): an f16 or
// bf16 mha.attention without a mask, head dims multiples of 16 (dk) and 8 (dv),
// on CUDA sm_80 or later, gets mma = [16, 8, 16], 4 warps of 16 rows and
// 64-key blocks; everything else gets the register kernel (thread_tile,
// mha-attention-to-simt) where it applies, else the thread-per-row kernel.
// Tile sizes given as overrides set the warps (rows / 16), or keep the
// thread-per-row kernel where they are not multiples of 16.
// RUN: mha-opt %s --split-input-file --mha-select-lowering-config="target={#mha.target<kind = cuda, chip = \"sm_80\">}" | FileCheck %s --check-prefix=SM80
// RUN: mha-opt %s --split-input-file --mha-select-lowering-config="target={#mha.target<kind = cuda, chip = \"sm_90a\">}" | FileCheck %s --check-prefix=SM80
// RUN: mha-opt %s --split-input-file --mha-select-lowering-config="target={#mha.target<kind = cuda, chip = \"sm_75\">}" | FileCheck %s --check-prefix=SIMT
// RUN: mha-opt %s --split-input-file --mha-select-lowering-config="target={#mha.target<kind = vulkan>}" | FileCheck %s --check-prefix=SIMT
// RUN: mha-opt %s --split-input-file --mha-select-lowering-config="target={#mha.target<kind = cuda, chip = \"sm_80\">} overrides={#mha.lowering_config<q_tile = 32>}" | FileCheck %s --check-prefix=Q32
// RUN: mha-opt %s --split-input-file --mha-select-lowering-config="target={#mha.target<kind = cuda, chip = \"sm_90\", max_workgroup_memory = 49152>}" | FileCheck %s --check-prefix=SMEM
// RUN: mha-opt %s --split-input-file --mha-select-lowering-config="target={#mha.target<kind = cuda, chip = \"sm_90\", max_workgroup_memory = 49152>} overrides={#mha.lowering_config<kv_tile = 8>}" | FileCheck %s --check-prefix=SMEM-KV8
// RUN: mha-opt %s --split-input-file --mha-select-lowering-config="target={#mha.target<kind = cuda, chip = \"sm_80\">} overrides={#mha.lowering_config<q_tile = 8>}" | FileCheck %s --check-prefix=Q8
// With allow-tf32, f32 attention on tensor cores as TF32 (mma = [16, 8, 8],
// 64-key blocks while the f32 K and V tiles fit: 35,840 bytes at d = 64;
// 32 keys at d = 96 and 128); not on Vulkan (no tensor cores).
// RUN: mha-opt %s --split-input-file --mha-select-lowering-config="target={#mha.target<kind = cuda, chip = \"sm_90\", max_workgroup_memory = 49152>} allow-tf32" | FileCheck %s --check-prefix=TF32
// RUN: mha-opt %s --split-input-file --mha-select-lowering-config="target={#mha.target<kind = vulkan>} allow-tf32" | FileCheck %s --check-prefix=TF32-VK
// TF32-LABEL: func.func @other
// TF32: mha.lowering_config = #mha.lowering_config<q_tile = 64, kv_tile = 64, mma = [16, 8, 8], warps = 4>}
// TF32-LABEL: func.func @simt_tiles
// TF32: mha.lowering_config = #mha.lowering_config<q_tile = 64, kv_tile = 32, mma = [16, 8, 8], warps = 4>
// TF32: mha.lowering_config = #mha.lowering_config<q_tile = 64, kv_tile = 32, mma = [16, 8, 8], warps = 4>
// TF32: mha.lowering_config = #mha.lowering_config<q_tile = 64, kv_tile = 64, mma = [16, 8, 8], warps = 4>
// TF32-VK-LABEL: func.func @other
// TF32-VK: mha.lowering_config = #mha.lowering_config<q_tile = 8, kv_tile = 32, thread_tile = [4, 4]>}
// RUN: mha-opt %s --split-input-file --mha-select-lowering-config="target={#mha.target<kind = cuda, chip = \"sm_80\">} overrides={#mha.lowering_config<kv_tile = 8>}" | FileCheck %s --check-prefix=Q8

// SM80-LABEL: func.func @f16
// SM80-SAME: mha.lowering_config = #mha.lowering_config<workgroup_tile = [32, 64], threads = 32>
// SM80: mha.attention
// SM80-SAME: mha.lowering_config = #mha.lowering_config<q_tile = 64, kv_tile = 64, mma = [16, 8, 16], warps = 4>
// SIMT-LABEL: func.func @f16
// SIMT: mha.attention
// SIMT-SAME: mha.lowering_config = #mha.lowering_config<q_tile = 64, kv_tile = 32, thread_tile = [4, 4]>}
// Q32-LABEL: func.func @f16
// Q32: mha.lowering_config = #mha.lowering_config<q_tile = 32, kv_tile = 64, mma = [16, 8, 16], warps = 2>
// Q8-LABEL: func.func @f16
// Q8: mha.attention
// Q8-NOT: mma
// Q8-SAME: }
func.func @f16(%q: tensor<2x4x?x64xf16>, %k: tensor<2x2x?x64xf16>, %v: tensor<2x2x?x32xf16>, %init: tensor<2x4x?x32xf16>) -> tensor<2x4x?x32xf16> {
  %o = mha.attention ins(%q, %k, %v : tensor<2x4x?x64xf16>, tensor<2x2x?x64xf16>, tensor<2x2x?x32xf16>)
         outs(%init : tensor<2x4x?x32xf16>) {causal} -> tensor<2x4x?x32xf16>
  return %o : tensor<2x4x?x32xf16>
}

// -----

// What the kernel does not compute gets the register kernel (f32, head dims
// that are not multiples of 16, transposed keys: 8 query rows, 2 groups of
// 8 lanes), or, for an i1 mask, the thread-per-row kernel; bf16, key
// lengths, a softcap and windows run on tensor cores.
// SM80-LABEL: func.func @other
// SM80: mha.lowering_config = #mha.lowering_config<q_tile = 8, kv_tile = 32, thread_tile = [4, 4]>}
// SM80: mha.lowering_config = #mha.lowering_config<q_tile = 64, kv_tile = 64, mma = [16, 8, 16], warps = 4>}
// SM80: mha.lowering_config = #mha.lowering_config<q_tile = 8, kv_tile = 32, thread_tile = [4, 4]>}
// SM80: mha.lowering_config = #mha.lowering_config<q_tile = 32, kv_tile = 32>}
// SM80: mha.lowering_config = #mha.lowering_config<q_tile = 8, kv_tile = 32, thread_tile = [4, 4]>{{[,}]}}
// SM80-COUNT-3: mha.lowering_config = #mha.lowering_config<q_tile = 64, kv_tile = 64, mma = [16, 8, 16], warps = 4>{{[,}]}}
// SM80-NOT: mma
func.func @other(%q16: tensor<1x2x8x64xf16>, %q32: tensor<1x2x8x64xf32>,
                 %qb: tensor<1x2x8x64xbf16>, %q40: tensor<1x2x8x40xf16>,
                 %kt: tensor<1x2x64x8xf16>, %m: tensor<8x8xi1>,
                 %len: tensor<1xi32>) {
  %i16 = tensor.empty() : tensor<1x2x8x64xf16>
  %i32 = tensor.empty() : tensor<1x2x8x64xf32>
  %ib = tensor.empty() : tensor<1x2x8x64xbf16>
  %i40 = tensor.empty() : tensor<1x2x8x40xf16>
  // f32, bf16
  %0 = mha.attention ins(%q32, %q32, %q32 : tensor<1x2x8x64xf32>, tensor<1x2x8x64xf32>, tensor<1x2x8x64xf32>) outs(%i32 : tensor<1x2x8x64xf32>) -> tensor<1x2x8x64xf32>
  %1 = mha.attention ins(%qb, %qb, %qb : tensor<1x2x8x64xbf16>, tensor<1x2x8x64xbf16>, tensor<1x2x8x64xbf16>) outs(%ib : tensor<1x2x8x64xbf16>) -> tensor<1x2x8x64xbf16>
  // a head dim that is not a multiple of 16
  %2 = mha.attention ins(%q40, %q40, %q40 : tensor<1x2x8x40xf16>, tensor<1x2x8x40xf16>, tensor<1x2x8x40xf16>) outs(%i40 : tensor<1x2x8x40xf16>) -> tensor<1x2x8x40xf16>
  // an i1 mask (the GPU pipelines make it additive first); transposed keys
  %3 = mha.attention ins(%q16, %q16, %q16 : tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16>) mask(%m : tensor<8x8xi1>) outs(%i16 : tensor<1x2x8x64xf16>) -> tensor<1x2x8x64xf16>
  %4 = mha.attention ins(%q16, %kt, %q16 : tensor<1x2x8x64xf16>, tensor<1x2x64x8xf16>, tensor<1x2x8x64xf16>) outs(%i16 : tensor<1x2x8x64xf16>) {key_transposed} -> tensor<1x2x8x64xf16>
  // key lengths, a softcap, a window
  %5 = mha.attention ins(%q16, %q16, %q16 : tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16>) key_lengths(%len : tensor<1xi32>) outs(%i16 : tensor<1x2x8x64xf16>) -> tensor<1x2x8x64xf16>
  %6 = mha.attention ins(%q16, %q16, %q16 : tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16>) outs(%i16 : tensor<1x2x8x64xf16>) {softcap = 20.0 : f32} -> tensor<1x2x8x64xf16>
  %7 = mha.attention ins(%q16, %q16, %q16 : tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16>) outs(%i16 : tensor<1x2x8x64xf16>) {window_left = 3 : i64} -> tensor<1x2x8x64xf16>
  return
}

// -----

// Head dim 256: 64-key K and V tiles would take 67,584 bytes of the 48 KiB,
// 32-key ones 33,792.
// SM80-LABEL: func.func @d256
// SMEM-LABEL: func.func @d256
// SMEM: mha.lowering_config = #mha.lowering_config<q_tile = 64, kv_tile = 32, mma = [16, 8, 16], warps = 4>
// SMEM-LABEL: func.func @d128
// SMEM: mha.lowering_config = #mha.lowering_config<q_tile = 64, kv_tile = 64, mma = [16, 8, 16], warps = 4>
func.func @d256(%q: tensor<1x2x8x256xf16>) -> tensor<1x2x8x256xf16> {
  %o = mha.attention ins(%q, %q, %q : tensor<1x2x8x256xf16>, tensor<1x2x8x256xf16>, tensor<1x2x8x256xf16>) outs(%q : tensor<1x2x8x256xf16>) -> tensor<1x2x8x256xf16>
  return %o : tensor<1x2x8x256xf16>
}
func.func @d128(%q: tensor<1x2x8x128xf16>) -> tensor<1x2x8x128xf16> {
  %o = mha.attention ins(%q, %q, %q : tensor<1x2x8x128xf16>, tensor<1x2x8x128xf16>, tensor<1x2x8x128xf16>) outs(%q : tensor<1x2x8x128xf16>) -> tensor<1x2x8x128xf16>
  return %o : tensor<1x2x8x128xf16>
}

// -----

// The projections of f16 layers (a contraction of f16 inputs into f32 from
// a zero fill, rounded back by its one user) get the tensor-core GEMM
// kernel; f32 ones keep the thread-per-row kernel.
// SM80-LABEL: func.func @projections
// SM80: linalg.generic
// SM80-SAME: mha.lowering_config = #mha.lowering_config<workgroup_tile = [64, 64], mma = [16, 8, 16], warps = 4, pipeline_stages = 4>
// SM80: linalg.generic
// SM80-NOT: mma
// SM80: linalg.generic
// SM80-NOT: mma
// SM80: return
// SIMT-LABEL: func.func @projections
// SIMT-NOT: mma
func.func @projections(%x: tensor<64x32xf16>, %w: tensor<32x16xf16>, %x32: tensor<64x32xf32>, %w32: tensor<32x16xf32>) -> (tensor<64x16xf16>, tensor<64x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x16xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<64x16xf32>) -> tensor<64x16xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : tensor<64x32xf16>, tensor<32x16xf16>) outs(%acc : tensor<64x16xf32>) {
  ^bb0(%a: f16, %b: f16, %o: f32):
    %0 = arith.extf %a : f16 to f32
    %1 = arith.extf %b : f16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %o, %2 : f32
    linalg.yield %3 : f32
  } -> tensor<64x16xf32>
  %e16 = tensor.empty() : tensor<64x16xf16>
  %r = linalg.generic {indexing_maps = [affine_map<(m, n) -> (m, n)>, affine_map<(m, n) -> (m, n)>], iterator_types = ["parallel", "parallel"]} ins(%p : tensor<64x16xf32>) outs(%e16 : tensor<64x16xf16>) {
  ^bb0(%a: f32, %o: f16):
    %0 = arith.truncf %a : f32 to f16
    linalg.yield %0 : f16
  } -> tensor<64x16xf16>
  %p32 = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x32, %w32 : tensor<64x32xf32>, tensor<32x16xf32>) outs(%acc : tensor<64x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %2 = arith.mulf %a, %b : f32
    %3 = arith.addf %o, %2 : f32
    linalg.yield %3 : f32
  } -> tensor<64x16xf32>
  return %r, %p32 : tensor<64x16xf16>, tensor<64x16xf32>
}

// -----

// An additive (float) mask: the kernel adds it to each score.
// SM80-LABEL: func.func @float_mask
// SM80: mha.attention
// SM80-SAME: mha.lowering_config = #mha.lowering_config<q_tile = 64, kv_tile = 64, mma = [16, 8, 16], warps = 4>
func.func @float_mask(%q: tensor<1x2x8x64xf16>, %m: tensor<1x2x8x8xf16>) -> tensor<1x2x8x64xf16> {
  %i = tensor.empty() : tensor<1x2x8x64xf16>
  %o = mha.attention ins(%q, %q, %q : tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16>) mask(%m : tensor<1x2x8x8xf16>) outs(%i : tensor<1x2x8x64xf16>) -> tensor<1x2x8x64xf16>
  return %o : tensor<1x2x8x64xf16>
}

// -----

// A projection with its bias (the accumulator starts from the bias extended
// to f32) gets the GEMM kernel too, which adds the bias in its epilogue.
// SM80-LABEL: func.func @projection_bias
// SM80: linalg.generic
// SM80-NOT: mma
// SM80: linalg.generic
// SM80-SAME: mha.lowering_config = #mha.lowering_config<workgroup_tile = [64, 64], mma = [16, 8, 16], warps = 4, pipeline_stages = 4>
// SIMT-LABEL: func.func @projection_bias
// SIMT-NOT: mma
func.func @projection_bias(%x: tensor<64x32xf16>, %w: tensor<32x16xf16>, %bias: tensor<16xf16>) -> tensor<64x16xf16> {
  %e = tensor.empty() : tensor<64x16xf32>
  %acc = linalg.generic {indexing_maps = [affine_map<(m, n) -> (n)>, affine_map<(m, n) -> (m, n)>], iterator_types = ["parallel", "parallel"]} ins(%bias : tensor<16xf16>) outs(%e : tensor<64x16xf32>) {
  ^bb0(%in: f16, %o: f32):
    %0 = arith.extf %in : f16 to f32
    linalg.yield %0 : f32
  } -> tensor<64x16xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : tensor<64x32xf16>, tensor<32x16xf16>) outs(%acc : tensor<64x16xf32>) {
  ^bb0(%a: f16, %b: f16, %o: f32):
    %0 = arith.extf %a : f16 to f32
    %1 = arith.extf %b : f16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %o, %2 : f32
    linalg.yield %3 : f32
  } -> tensor<64x16xf32>
  %e16 = tensor.empty() : tensor<64x16xf16>
  %r = linalg.generic {indexing_maps = [affine_map<(m, n) -> (m, n)>, affine_map<(m, n) -> (m, n)>], iterator_types = ["parallel", "parallel"]} ins(%p : tensor<64x16xf32>) outs(%e16 : tensor<64x16xf16>) {
  ^bb0(%a: f32, %o: f16):
    %0 = arith.truncf %a : f32 to f16
    linalg.yield %0 : f16
  } -> tensor<64x16xf16>
  return %r : tensor<64x16xf16>
}

// -----

// The register kernel's tiles on a target with a workgroup-memory limit:
// 64 rows and 32 keys, the keys halved (down to half the rows), then the
// rows, while its Q, K and V tiles exceed it (f32, 48 KiB: d=128 32 rows
// and 16 keys, 33,792 bytes; d=96 64 and 16, 38,400; d=64 64 and 32,
// 34,816). The thread-per-row kernel's (a key
// tile given): 32 rows, halved while the estimate of its workgroup memory
// exceeds the limit (causal d=128 8, d=96 16, d=64 32); the projections'
// workgroup tiles as wide as the largest head dim (128).
// SM80-LABEL: func.func @simt_tiles
// SMEM-LABEL: func.func @simt_tiles
// SMEM-SAME: mha.lowering_config = #mha.lowering_config<workgroup_tile = [32, 128], threads = 32>
// SMEM: mha.lowering_config = #mha.lowering_config<q_tile = 32, kv_tile = 16, thread_tile = [4, 2]>
// SMEM: mha.lowering_config = #mha.lowering_config<q_tile = 64, kv_tile = 16, thread_tile = [4, 2]>
// SMEM: mha.lowering_config = #mha.lowering_config<q_tile = 64, kv_tile = 32, thread_tile = [4, 4]>
// SMEM-KV8-LABEL: func.func @simt_tiles
// SMEM-KV8-SAME: mha.lowering_config = #mha.lowering_config<workgroup_tile = [8, 128], threads = 8>
// SMEM-KV8: mha.lowering_config = #mha.lowering_config<q_tile = 8, kv_tile = 8>
// SMEM-KV8: mha.lowering_config = #mha.lowering_config<q_tile = 16, kv_tile = 8>
// SMEM-KV8: mha.lowering_config = #mha.lowering_config<q_tile = 32, kv_tile = 8>
func.func @simt_tiles(%a: tensor<1x2x64x128xf32>, %b: tensor<1x2x64x96xf32>, %c: tensor<1x2x64x64xf32>) {
  %0 = mha.attention ins(%a, %a, %a : tensor<1x2x64x128xf32>, tensor<1x2x64x128xf32>, tensor<1x2x64x128xf32>) outs(%a : tensor<1x2x64x128xf32>) {causal} -> tensor<1x2x64x128xf32>
  %1 = mha.attention ins(%b, %b, %b : tensor<1x2x64x96xf32>, tensor<1x2x64x96xf32>, tensor<1x2x64x96xf32>) outs(%b : tensor<1x2x64x96xf32>) -> tensor<1x2x64x96xf32>
  %2 = mha.attention ins(%c, %c, %c : tensor<1x2x64x64xf32>, tensor<1x2x64x64xf32>, tensor<1x2x64x64xf32>) outs(%c : tensor<1x2x64x64xf32>) -> tensor<1x2x64x64xf32>
  return
}
