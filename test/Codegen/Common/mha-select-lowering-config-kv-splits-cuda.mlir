// RUN: mha-opt %s --mha-select-lowering-config='target={#mha.target<kind = cuda, chip = "sm_90", features = "+ptx80", subgroup_size = 32, max_workgroup_threads = 1024, max_workgroup_memory = 49152>}' | FileCheck %s --check-prefix=SPLIT

// On cuda targets a decoding attention with few batches times heads splits its keys
// for about 256 workgroups, in chunks of at least 4 key blocks, at most 32
// (flash-decoding). With GQA on the tensor-core kernel the group's heads
// share a workgroup (head_tile: 4 heads of one query each, one warp), so the
// workgroups are B x Hkv: B=1, Hkv=8 -> 32 chunks of the 32768 keys; B=8,
// Hkv=8 -> 4. The register kernel's B=2, H=4 -> 32 (4096 / (4 * 32) = 32).
// A query tile per head of more than one row tile: no split, no head tile.
// SPLIT-LABEL: func.func @decode
// SPLIT: #mha.lowering_config<q_tile = 16, kv_tile = 64, mma = [16, 8, 16], warps = 1, kv_splits = 32, head_tile = 4>
// SPLIT: #mha.lowering_config<q_tile = 1, kv_tile = 32, kv_splits = 32, thread_tile = [1, 4]>
// SPLIT: #mha.lowering_config<q_tile = 16, kv_tile = 64, mma = [16, 8, 16], warps = 1, kv_splits = 4, head_tile = 4>
// SPLIT: #mha.lowering_config<q_tile = 64, kv_tile = 64, mma = [16, 8, 16], warps = 4>
func.func @decode(%q: tensor<1x32x1x128xf16>, %k: tensor<1x8x32768x128xf16>,
                  %q2: tensor<2x4x1x64xf32>, %k2: tensor<2x4x4096x64xf32>,
                  %q3: tensor<8x32x1x128xf16>, %k3: tensor<8x8x4096x128xf16>,
                  %q4: tensor<1x2x100x64xf16>, %k4: tensor<1x2x8192x64xf16>)
    -> (tensor<1x32x1x128xf16>, tensor<2x4x1x64xf32>, tensor<8x32x1x128xf16>, tensor<1x2x100x64xf16>) {
  %o = mha.attention ins(%q, %k, %k : tensor<1x32x1x128xf16>, tensor<1x8x32768x128xf16>, tensor<1x8x32768x128xf16>) outs(%q : tensor<1x32x1x128xf16>) -> tensor<1x32x1x128xf16>
  %o2 = mha.attention ins(%q2, %k2, %k2 : tensor<2x4x1x64xf32>, tensor<2x4x4096x64xf32>, tensor<2x4x4096x64xf32>) outs(%q2 : tensor<2x4x1x64xf32>) -> tensor<2x4x1x64xf32>
  %o3 = mha.attention ins(%q3, %k3, %k3 : tensor<8x32x1x128xf16>, tensor<8x8x4096x128xf16>, tensor<8x8x4096x128xf16>) outs(%q3 : tensor<8x32x1x128xf16>) -> tensor<8x32x1x128xf16>
  %o4 = mha.attention ins(%q4, %k4, %k4 : tensor<1x2x100x64xf16>, tensor<1x2x8192x64xf16>, tensor<1x2x8192x64xf16>) outs(%q4 : tensor<1x2x100x64xf16>) -> tensor<1x2x100x64xf16>
  return %o, %o2, %o3, %o4 : tensor<1x32x1x128xf16>, tensor<2x4x1x64xf32>, tensor<8x32x1x128xf16>, tensor<1x2x100x64xf16>
}
