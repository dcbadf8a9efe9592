// RUN: mha-opt %s --mha-select-lowering-config='target={#mha.target<kind = cuda, chip = "sm_80", features = "+ptx80", subgroup_size = 32, max_workgroup_threads = 1024, max_workgroup_memory = 49152>}' | FileCheck %s
// RUN: mha-opt %s --mha-select-lowering-config='target={#mha.target<kind = vulkan, subgroup_size = 32, max_workgroup_threads = 1024>}' | FileCheck %s --check-prefix=VULKAN
// RUN: mha-opt %s --mha-select-lowering-config='target={#mha.target<kind = vulkan, features = "+cooperative_matrix", subgroup_size = 32, max_workgroup_threads = 1024>}' | FileCheck %s --check-prefix=COOP
// RUN: mha-opt %s --mha-select-lowering-config='overrides={#mha.lowering_config<q_tile = 16>}' | FileCheck %s --check-prefix=CPU
// RUN: not mha-opt %s --mha-select-lowering-config='target={#mha.target<kind = vulkan, subgroup_size = 32, max_workgroup_threads = 1024>} overrides={#mha.lowering_config<q_tile = 16, kv_tile = 16>}' -o /dev/null 2>&1 | FileCheck %s --check-prefix=ROWS

// Decoding with GQA packs a key/value head's group into one workgroup
// (head_tile = the group) in the attention kernels built as IR, in the rows
// its queries need: 8 heads on 2 with one query -> 4 heads; 3 queries
// (speculative decoding) -> 12 rows; 2 heads on 1 with 40 queries -> 80
// rows are more than a tile: no head tile. Without GQA none. A head_tile
// given by hand is kept where the kernel can take it. CUDA: the tensor-core
// kernel, one warp (the 512 keys in 2 chunks: few workgroups); Vulkan: the
// register kernel, or the cooperative-matrix kernel, one subgroup. The
// thread-per-row kernel (tile sizes alone) refuses it.
// CHECK-LABEL: func.func @decode
// CHECK: #mha.lowering_config<q_tile = 16, kv_tile = 64, mma = [16, 8, 16], warps = 1, kv_splits = 2, head_tile = 4>
// CHECK: #mha.lowering_config<q_tile = 16, kv_tile = 64, mma = [16, 8, 16], warps = 1, kv_splits = 2, head_tile = 4>
// CHECK: #mha.lowering_config<q_tile = 64, kv_tile = 64, mma = [16, 8, 16], warps = 4, kv_splits = 2>
// CHECK: #mha.lowering_config<q_tile = 64, kv_tile = 64, mma = [16, 8, 16], warps = 4>
// CHECK: #mha.lowering_config<q_tile = 16, kv_tile = 64, mma = [16, 8, 16], warps = 1, kv_splits = 2, head_tile = 2>
// VULKAN-LABEL: func.func @decode
// VULKAN: #mha.lowering_config<q_tile = 4, kv_tile = 32, head_tile = 4, thread_tile = [4, 4]>
// VULKAN: #mha.lowering_config<q_tile = 16, kv_tile = 32, head_tile = 4, thread_tile = [4, 4]>
// VULKAN: #mha.lowering_config<q_tile = 64, kv_tile = 32, thread_tile = [4, 4]>
// VULKAN: #mha.lowering_config<q_tile = 1, kv_tile = 32, thread_tile = [1, 4]>
// VULKAN: #mha.lowering_config<q_tile = 4, kv_tile = 32, head_tile = 2, thread_tile = [4, 4]>
// COOP-LABEL: func.func @decode
// COOP: #mha.lowering_config<q_tile = 16, kv_tile = 32, mma = [16, 16, 16], warps = 1, head_tile = 4>
// COOP: #mha.lowering_config<q_tile = 16, kv_tile = 32, mma = [16, 16, 16], warps = 1, head_tile = 4>
// COOP: #mha.lowering_config<q_tile = 64, kv_tile = 32, mma = [16, 16, 16], warps = 4>
// COOP: #mha.lowering_config<q_tile = 16, kv_tile = 32, mma = [16, 16, 16], warps = 1>
// COOP: #mha.lowering_config<q_tile = 16, kv_tile = 32, mma = [16, 16, 16], warps = 1, head_tile = 2>
// On a CPU a head tile is a loop of its own: a query tile given keeps the
// rule's.
// CPU-LABEL: func.func @decode
// CPU: #mha.lowering_config<q_tile = 16, {{.*}}head_tile = 4>
// ROWS: error: lowering_config: head_tile is implemented on cpu targets and by the tensor-core and register attention kernels (mma, thread_tile) only, not by the thread-per-row kernel on a vulkan target
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

// Query tiles given by hand are the user's rows: no packed heads (on Vulkan,
// a query tile alone is the thread-per-row kernel's).
// CHECK-LABEL: func.func @given_rows
// CHECK: #mha.lowering_config<q_tile = 32, kv_tile = 64, mma = [16, 8, 16], warps = 2>
// VULKAN-LABEL: func.func @given_rows
// VULKAN: #mha.lowering_config<q_tile = 32, kv_tile = 32>
func.func @given_rows(%q: tensor<1x8x1x64xf16>, %k: tensor<1x2x64x64xf16>) -> tensor<1x8x1x64xf16> {
  %o = mha.attention ins(%q, %k, %k : tensor<1x8x1x64xf16>, tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16>) outs(%q : tensor<1x8x1x64xf16>) {mha.lowering_config = #mha.lowering_config<q_tile = 32>} -> tensor<1x8x1x64xf16>
  return %o : tensor<1x8x1x64xf16>
}
