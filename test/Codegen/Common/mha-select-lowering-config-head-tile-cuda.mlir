// RUN: mha-opt %s --split-input-file --verify-diagnostics --mha-select-lowering-config='target={#mha.target<kind = cuda, chip = "sm_80", features = "+ptx80", subgroup_size = 32, max_workgroup_threads = 1024, max_workgroup_memory = 49152>}' | FileCheck %s
// RUN: not mha-opt %s --split-input-file --mha-select-lowering-config='target={#mha.target<kind = vulkan, subgroup_size = 32, max_workgroup_threads = 1024>}' -o /dev/null 2>&1 | FileCheck %s --check-prefix=VULKAN

// On cuda, decoding with GQA on the tensor-core kernel packs a key/value
// head's group into one workgroup (head_tile = the group), in the warps its
// queries need: 8 heads on 2 with one query -> 4 heads, one warp; 3 queries
// (speculative decoding) -> 12 rows, one warp; 2 heads on 1 with 40 queries
// -> 80 rows are more than 4 warps: no head tile. Without GQA none. A
// head_tile given by hand is kept where the kernel can take it. (The 512
// keys are split in 2 chunks: few workgroups.)
// CHECK-LABEL: func.func @decode
// CHECK: #mha.lowering_config<q_tile = 16, kv_tile = 64, mma = [16, 8, 16], warps = 1, kv_splits = 2, head_tile = 4>
// CHECK: #mha.lowering_config<q_tile = 16, kv_tile = 64, mma = [16, 8, 16], warps = 1, kv_splits = 2, head_tile = 4>
// CHECK: #mha.lowering_config<q_tile = 64, kv_tile = 64, mma = [16, 8, 16], warps = 4, kv_splits = 2>
// CHECK: #mha.lowering_config<q_tile = 64, kv_tile = 64, mma = [16, 8, 16], warps = 4>
// CHECK: #mha.lowering_config<q_tile = 16, kv_tile = 64, mma = [16, 8, 16], warps = 1, kv_splits = 2, head_tile = 2>
// VULKAN: error: lowering_config: head_tile is implemented on cpu targets and by the tensor-core attention kernel (mma = [16, 8, k]) only, not by the other kernels on a vulkan target
func.func @decode(%q: tensor<1x8x1x64xf16>, %k: tensor<1x2x512x64xf16>,
                  %q2: tensor<1x8x3x64xf16>, %q3: tensor<1x2x40x64xf16>,
                  %k3: tensor<1x1x512x64xf16>, %q4: tensor<1x2x1x64xf16>)
    -> (tensor<1x8x1x64xf16>, tensor<1x8x3x64xf16>, tensor<1x2x40x64xf16>, tensor<1x2x1x64xf16>, tensor<1x8x1x64xf16>) {
  %o = mha.attention ins(%q, %k, %k : tensor<1x8x1x64xf16>, tensor<1x2x512x64xf16>, tensor<1x2x512x64xf16>) outs(%q : tensor<1x8x1x64xf16>) -> tensor<1x8x1x64xf16>
  %o2 = mha.attention ins(%q2, %k, %k : tensor<1x8x3x64xf16>, tensor<1x2x512x64xf16>, tensor<1x2x512x64xf16>) outs(%q2 : tensor<1x8x3x64xf16>) -> tensor<1x8x3x64xf16>
  %o3 = mha.attention ins(%q3, %k3, %k3 : tensor<1x2x40x64xf16>, tensor<1x1x512x64xf16>, tensor<1x1x512x64xf16>) outs(%q3 : tensor<1x2x40x64xf16>) -> tensor<1x2x40x64xf16>
  %o4 = mha.attention ins(%q4, %q4, %q4 : tensor<1x2x1x64xf16>, tensor<1x2x1x64xf16>, tensor<1x2x1x64xf16>) outs(%q4 : tensor<1x2x1x64xf16>) -> tensor<1x2x1x64xf16>
  %o5 = mha.attention ins(%q, %k, %k : tensor<1x8x1x64xf16>, tensor<1x2x512x64xf16>, tensor<1x2x512x64xf16>) outs(%q : tensor<1x8x1x64xf16>) {mha.lowering_config = #mha.lowering_config<head_tile = 2>} -> tensor<1x8x1x64xf16>
  return %o, %o2, %o3, %o4, %o5 : tensor<1x8x1x64xf16>, tensor<1x8x3x64xf16>, tensor<1x2x40x64xf16>, tensor<1x2x1x64xf16>, tensor<1x8x1x64xf16>
}

// -----

// A head tile the kernel cannot take: not a divisor of the group, or more
// rows than the tile.
func.func @not_divisor(%q: tensor<1x8x1x64xf16>, %k: tensor<1x2x512x64xf16>) -> tensor<1x8x1x64xf16> {
  // expected-error @+1 {{lowering_config: head_tile = 3 (the tensor-core kernel's heads per workgroup) needs a static query length, a divisor of the 4 query heads per key/value head, and head_tile * Sq at most q_tile (16)}}
  %o = mha.attention ins(%q, %k, %k : tensor<1x8x1x64xf16>, tensor<1x2x512x64xf16>, tensor<1x2x512x64xf16>) outs(%q : tensor<1x8x1x64xf16>) {mha.lowering_config = #mha.lowering_config<head_tile = 3>} -> tensor<1x8x1x64xf16>
  return %o : tensor<1x8x1x64xf16>
}

// -----

func.func @too_many_rows(%q: tensor<1x8x10x64xf16>, %k: tensor<1x2x512x64xf16>) -> tensor<1x8x10x64xf16> {
  // expected-error @+1 {{lowering_config: head_tile = 4 (the tensor-core kernel's heads per workgroup) needs a static query length, a divisor of the 4 query heads per key/value head, and head_tile * Sq at most q_tile (16)}}
  %o = mha.attention ins(%q, %k, %k : tensor<1x8x10x64xf16>, tensor<1x2x512x64xf16>, tensor<1x2x512x64xf16>) outs(%q : tensor<1x8x10x64xf16>) {mha.lowering_config = #mha.lowering_config<q_tile = 16, kv_tile = 64, head_tile = 4>} -> tensor<1x8x10x64xf16>
  return %o : tensor<1x8x10x64xf16>
}
