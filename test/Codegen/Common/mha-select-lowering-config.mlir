// RUN: mha-opt %s --split-input-file --mha-select-lowering-config | FileCheck %s --check-prefix=AVX512
// RUN: mha-opt %s --split-input-file --mha-select-lowering-config="target={#mha.target<kind = cpu, chip = \"haswell\", vector_bits = 256>}" | FileCheck %s --check-prefix=AVX2
// RUN: mha-opt %s --split-input-file --mha-select-lowering-config="target={#mha.target<kind = cpu, vector_bits = 128>}" | FileCheck %s --check-prefix=SSE
// RUN: mha-opt %s --split-input-file --mha-select-lowering-config="target={#mha.target<kind = cuda, chip = \"sm_80\", subgroup_size = 32, max_workgroup_threads = 1024>}" | FileCheck %s --check-prefix=GPU
// RUN: mha-opt %s --split-input-file --mha-select-lowering-config="target={#mha.target<kind = cuda, chip = \"sm_90\", features = \"+ptx80\">}" | FileCheck %s --check-prefix=GPU
// RUN: mha-opt %s --split-input-file --mha-select-lowering-config="target={#mha.target<kind = vulkan, subgroup_size = 32, max_workgroup_threads = 1024, max_workgroup_memory = 32768>}" | FileCheck %s --check-prefix=GPU
// RUN: mha-opt %s --split-input-file --mha-select-lowering-config="target={#mha.target<kind = vulkan>} overrides={#mha.lowering_config<q_tile = 64>}" | FileCheck %s --check-prefix=GPU64
// RUN: mha-opt %s --split-input-file --mha-select-lowering-config="overrides={#mha.lowering_config<q_tile = 16, register_tile = [2, 16]>}" | FileCheck %s --check-prefix=OVER

// The rules of the CPU (q_tile from B·Sq of a layer: 512 and more -> 128,
// 4096 and more -> 256 with kv_tile 128, else 64; kv_tile 128 when
// decoding, else 64; register tiles from the
// vector width) and of the GPU (a thread per
// query row of 32; workgroup tiles of as many rows); the target is recorded
// on the module; overrides replace any field.

// AVX512: module attributes {mha.target = #mha.target<kind = cpu, vector_bits = 512>}
// AVX512-LABEL: func.func @layer_512
// AVX512-SAME: mha.lowering_config = #mha.lowering_config<register_tile = [8, 32], chunk = 64>
// AVX512: mha.multi_head_attention {{.*}}mha.lowering_config = #mha.lowering_config<q_tile = 128, kv_tile = 64>
// AVX2: module attributes {mha.target = #mha.target<kind = cpu, chip = "haswell", vector_bits = 256>}
// AVX2-LABEL: func.func @layer_512
// AVX2-SAME: #mha.lowering_config<register_tile = [4, 16], chunk = 64>
// AVX2: #mha.lowering_config<q_tile = 128, kv_tile = 64>
// SSE-LABEL: func.func @layer_512
// SSE-SAME: #mha.lowering_config<register_tile = [4, 8], chunk = 64>
// GPU: module attributes {mha.target = #mha.target<kind = {{cuda|vulkan}}
// GPU-LABEL: func.func @layer_512
// GPU-SAME: #mha.lowering_config<workgroup_tile = [32, 64], threads = 32>
// GPU: #mha.lowering_config<q_tile = 32, kv_tile = 32>
// GPU64-LABEL: func.func @layer_512
// GPU64-SAME: #mha.lowering_config<workgroup_tile = [64, 64], threads = 64>
// GPU64: #mha.lowering_config<q_tile = 64, kv_tile = 32>
// OVER-LABEL: func.func @layer_512
// OVER-SAME: #mha.lowering_config<register_tile = [2, 16], chunk = 64>
// OVER: #mha.lowering_config<q_tile = 16, kv_tile = 64>
func.func @layer_512(%x: tensor<2x256x64xf32>, %w: tensor<64x64xf32>) -> tensor<2x256x64xf32> {
  %y = mha.multi_head_attention %x, %x, %x, %w, %w, %w, %w {num_heads = 4 : i64}
    : (tensor<2x256x64xf32>, tensor<2x256x64xf32>, tensor<2x256x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<2x256x64xf32>
  return %y : tensor<2x256x64xf32>
}

// -----

// B·Sq = 4096: a long layer, 256 rows and 128 keys a block on the CPU
// (16 row tiles still); 4095: 128 and 64.
// AVX512-LABEL: func.func @layer_long
// AVX512: #mha.lowering_config<q_tile = 256, kv_tile = 128>
// AVX512: #mha.lowering_config<q_tile = 128, kv_tile = 64>
func.func @layer_long(%x: tensor<2x2048x64xf32>, %y: tensor<1x4095x64xf32>, %w: tensor<64x64xf32>) -> (tensor<2x2048x64xf32>, tensor<1x4095x64xf32>) {
  %a = mha.multi_head_attention %x, %x, %x, %w, %w, %w, %w {num_heads = 4 : i64}
    : (tensor<2x2048x64xf32>, tensor<2x2048x64xf32>, tensor<2x2048x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<2x2048x64xf32>
  %b = mha.multi_head_attention %y, %y, %y, %w, %w, %w, %w {num_heads = 4 : i64}
    : (tensor<1x4095x64xf32>, tensor<1x4095x64xf32>, tensor<1x4095x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<1x4095x64xf32>
  return %a, %b : tensor<2x2048x64xf32>, tensor<1x4095x64xf32>
}

// -----

// B·Sq = 511 and a dynamic batch: 64 rows on the CPU.
// AVX512-LABEL: func.func @layer_511
// AVX512: #mha.lowering_config<q_tile = 64, kv_tile = 64>
// AVX512: #mha.lowering_config<q_tile = 64, kv_tile = 64>
// AVX512-LABEL: func.func @attention
// AVX512: mha.attention {{.*}}#mha.lowering_config<q_tile = 64, kv_tile = 64>
// On a GPU, f32 attention runs on the register kernel (mha-attention-to-simt):
// 64 rows in 16 groups of 8 lanes, each thread 4 rows by 4 of 32 keys.
// GPU-LABEL: func.func @attention
// GPU: mha.attention {{.*}}#mha.lowering_config<q_tile = 64, kv_tile = 32, thread_tile = [4, 4]>
func.func @layer_511(%x: tensor<1x511x64xf32>, %d: tensor<?x600x64xf32>, %w: tensor<64x64xf32>) -> (tensor<1x511x64xf32>, tensor<?x600x64xf32>) {
  %y = mha.multi_head_attention %x, %x, %x, %w, %w, %w, %w {num_heads = 4 : i64}
    : (tensor<1x511x64xf32>, tensor<1x511x64xf32>, tensor<1x511x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<1x511x64xf32>
  %z = mha.multi_head_attention %d, %d, %d, %w, %w, %w, %w {num_heads = 4 : i64}
    : (tensor<?x600x64xf32>, tensor<?x600x64xf32>, tensor<?x600x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<?x600x64xf32>
  return %y, %z : tensor<1x511x64xf32>, tensor<?x600x64xf32>
}
func.func @attention(%q: tensor<1x2x100x16xf32>, %init: tensor<1x2x100x16xf32>) -> tensor<1x2x100x16xf32> {
  %o = mha.attention ins(%q, %q, %q : tensor<1x2x100x16xf32>, tensor<1x2x100x16xf32>, tensor<1x2x100x16xf32>) outs(%init : tensor<1x2x100x16xf32>) -> tensor<1x2x100x16xf32>
  return %o : tensor<1x2x100x16xf32>
}

// -----

// Decoding on the CPU (query rows x query heads per key/value head of at
// most a vector's f32 lanes): 128 keys per tile; a longer step keeps 64.
// Both split their keys in 4 (2 batches x 2 key/value heads x 4 chunks:
// 16 parallel iterations), and tile the 4 query heads of a key/value head
// together (each key block read once for them).
// AVX512-LABEL: func.func @decode
// AVX512: mha.attention {{.*}}#mha.lowering_config<q_tile = 64, kv_tile = 128, kv_splits = 4, head_tile = 4>
// AVX512: mha.attention {{.*}}#mha.lowering_config<q_tile = 64, kv_tile = 64, kv_splits = 4, head_tile = 4>
// AVX2-LABEL: func.func @decode
// AVX2: mha.attention {{.*}}#mha.lowering_config<q_tile = 64, kv_tile = 128, kv_splits = 4, head_tile = 4>
// AVX2: mha.attention {{.*}}#mha.lowering_config<q_tile = 64, kv_tile = 64, kv_splits = 4, head_tile = 4>
// SSE-LABEL: func.func @decode
// SSE: mha.attention {{.*}}#mha.lowering_config<q_tile = 64, kv_tile = 128, kv_splits = 4, head_tile = 4>
// SSE: mha.attention {{.*}}#mha.lowering_config<q_tile = 64, kv_tile = 64, kv_splits = 4, head_tile = 4>
func.func @decode(%q: tensor<2x8x1x64xf32>, %k: tensor<2x2x4096x64xf32>, %q4: tensor<2x8x8x64xf32>) -> (tensor<2x8x1x64xf32>, tensor<2x8x8x64xf32>) {
  %o = mha.attention ins(%q, %k, %k : tensor<2x8x1x64xf32>, tensor<2x2x4096x64xf32>, tensor<2x2x4096x64xf32>) outs(%q : tensor<2x8x1x64xf32>) {causal} -> tensor<2x8x1x64xf32>
  %o4 = mha.attention ins(%q4, %k, %k : tensor<2x8x8x64xf32>, tensor<2x2x4096x64xf32>, tensor<2x2x4096x64xf32>) outs(%q4 : tensor<2x8x8x64xf32>) {causal} -> tensor<2x8x8x64xf32>
  return %o, %o4 : tensor<2x8x1x64xf32>, tensor<2x8x8x64xf32>
}

// -----

// The key split (flash-decoding) on the CPU: the queries one tile, chunks
// for 16 parallel iterations with the batches and key/value heads, of at
// least 512 keys; none with 16 such iterations already, with keys for one
// chunk only, with a dynamic batch, or with more queries than a tile. A
// dynamic key length splits (chunks of at least a key tile).
// Those of 32 MiB of keys and values or more, or of dynamic size, also
// prefetch the next key block (prefetch_blocks).
// AVX512-LABEL: func.func @splits
// AVX512: mha.attention {{.*}}#mha.lowering_config<q_tile = 64, kv_tile = 128, kv_splits = 16, head_tile = 8, prefetch_blocks = 1>
// AVX512: mha.attention {{.*}}#mha.lowering_config<q_tile = 64, kv_tile = 128, kv_splits = 2, head_tile = 8>
// AVX512: mha.attention {{.*}}#mha.lowering_config<q_tile = 64, kv_tile = 128, head_tile = 8>
// AVX512: mha.attention {{.*}}#mha.lowering_config<q_tile = 64, kv_tile = 128, head_tile = 8, prefetch_blocks = 1>
// AVX512: mha.attention {{.*}}#mha.lowering_config<q_tile = 64, kv_tile = 128, kv_splits = 16, head_tile = 8, prefetch_blocks = 1>
// AVX512: mha.attention {{.*}}#mha.lowering_config<q_tile = 64, kv_tile = 128, head_tile = 8, prefetch_blocks = 1>
// AVX512: mha.attention {{.*}}#mha.lowering_config<q_tile = 64, kv_tile = 64>
func.func @splits(%q: tensor<1x8x1x128xf32>, %k: tensor<1x1x32768x128xf32>,
                  %k1k: tensor<1x1x1024x128xf32>, %k1000: tensor<1x1x1000x128xf32>, %qb: tensor<16x8x1x128xf32>,
                  %kb: tensor<16x1x32768x128xf32>, %kd: tensor<1x1x?x128xf32>,
                  %qd: tensor<?x8x1x128xf32>, %kdb: tensor<?x1x4096x128xf32>,
                  %qp: tensor<1x8x100x128xf32>) {
  %mqa = mha.attention ins(%q, %k, %k : tensor<1x8x1x128xf32>, tensor<1x1x32768x128xf32>, tensor<1x1x32768x128xf32>) outs(%q : tensor<1x8x1x128xf32>) -> tensor<1x8x1x128xf32>
  %two = mha.attention ins(%q, %k1k, %k1k : tensor<1x8x1x128xf32>, tensor<1x1x1024x128xf32>, tensor<1x1x1024x128xf32>) outs(%q : tensor<1x8x1x128xf32>) -> tensor<1x8x1x128xf32>
  %one = mha.attention ins(%q, %k1000, %k1000 : tensor<1x8x1x128xf32>, tensor<1x1x1000x128xf32>, tensor<1x1x1000x128xf32>) outs(%q : tensor<1x8x1x128xf32>) -> tensor<1x8x1x128xf32>
  %batches = mha.attention ins(%qb, %kb, %kb : tensor<16x8x1x128xf32>, tensor<16x1x32768x128xf32>, tensor<16x1x32768x128xf32>) outs(%qb : tensor<16x8x1x128xf32>) -> tensor<16x8x1x128xf32>
  %dynkeys = mha.attention ins(%q, %kd, %kd : tensor<1x8x1x128xf32>, tensor<1x1x?x128xf32>, tensor<1x1x?x128xf32>) outs(%q : tensor<1x8x1x128xf32>) -> tensor<1x8x1x128xf32>
  %dynbatch = mha.attention ins(%qd, %kdb, %kdb : tensor<?x8x1x128xf32>, tensor<?x1x4096x128xf32>, tensor<?x1x4096x128xf32>) outs(%qd : tensor<?x8x1x128xf32>) -> tensor<?x8x1x128xf32>
  %prefill = mha.attention ins(%qp, %k, %k : tensor<1x8x100x128xf32>, tensor<1x1x32768x128xf32>, tensor<1x1x32768x128xf32>) outs(%qp : tensor<1x8x100x128xf32>) -> tensor<1x8x100x128xf32>
  return
}
