// RUN: mha-opt %s --split-input-file --verify-diagnostics --mha-select-lowering-config="overrides={#mha.lowering_config<kv_splits = 3>}" | FileCheck %s
// RUN: not mha-opt %s --split-input-file --mha-select-lowering-config="target={#mha.target<kind = vulkan, max_workgroup_threads = 1024>} overrides={#mha.lowering_config<kv_splits = 3>}" -o - 2>&1 | FileCheck %s --check-prefix=GPU
// RUN: not mha-opt %s --split-input-file --mha-select-lowering-config="target={#mha.target<kind = vulkan, max_workgroup_threads = 1024>} overrides={#mha.lowering_config<q_tile = 16, kv_tile = 16, kv_splits = 3>}" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ROWS
// RUN: not mha-opt %s --split-input-file --mha-select-lowering-config="target={#mha.target<kind = vulkan, max_workgroup_threads = 1024>} overrides={#mha.lowering_config<kv_splits = 33>}" -o /dev/null 2>&1 | FileCheck %s --check-prefix=MANY
// RUN: not mha-opt %s --split-input-file --mha-select-lowering-config="overrides={#mha.lowering_config<kv_splits = 0>}" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ZERO

// The key split given for a pipeline (its kv-splits option) applies to each
// mha.attention; a layer's attention is fused with its projections and
// takes none. On a GPU target the register and tensor-core kernels split
// keys (the register kernel here), at most 32 chunks; the thread-per-row
// kernel (tile sizes given) refuses it.
// CHECK-LABEL: func.func @given
// CHECK: mha.attention {{.*}}#mha.lowering_config<q_tile = 64, kv_tile = 64, kv_splits = 3>
// CHECK: mha.multi_head_attention {{.*}}#mha.lowering_config<q_tile = 64, kv_tile = 64>,
// GPU-LABEL: func.func @given
// GPU: mha.attention {{.*}}#mha.lowering_config<q_tile = 64, kv_tile = 32, kv_splits = 3, thread_tile = [4, 4]>
// ROWS: error: lowering_config: kv_splits is implemented on cpu targets and by the tensor-core and register attention kernels (mma, thread_tile) only, not by the thread-per-row kernel on a vulkan target
// MANY: error: lowering_config: kv_splits = 33 on a vulkan target: the attention kernels merge at most 32 chunks
// ZERO: error: kv_splits must be positive, found 0
func.func @given(%q: tensor<1x2x100x16xf32>, %x: tensor<2x16x32xf32>, %w: tensor<32x32xf32>) -> (tensor<1x2x100x16xf32>, tensor<2x16x32xf32>) {
  %o = mha.attention ins(%q, %q, %q : tensor<1x2x100x16xf32>, tensor<1x2x100x16xf32>, tensor<1x2x100x16xf32>) outs(%q : tensor<1x2x100x16xf32>) -> tensor<1x2x100x16xf32>
  %y = mha.multi_head_attention %x, %x, %x, %w, %w, %w, %w {num_heads = 2 : i64}
    : (tensor<2x16x32xf32>, tensor<2x16x32xf32>, tensor<2x16x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<2x16x32xf32>
  return %o, %y : tensor<1x2x100x16xf32>, tensor<2x16x32xf32>
}

// -----

// A layer's own kv_splits is refused.
func.func @layer(%x: tensor<2x16x32xf32>, %w: tensor<32x32xf32>) -> tensor<2x16x32xf32> {
  // expected-error @+1 {{lowering_config: kv_splits applies to mha.attention only (a layer's attention is fused with its projections)}}
  %y = mha.multi_head_attention %x, %x, %x, %w, %w, %w, %w {num_heads = 2 : i64, mha.lowering_config = #mha.lowering_config<kv_splits = 2>}
    : (tensor<2x16x32xf32>, tensor<2x16x32xf32>, tensor<2x16x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<2x16x32xf32>
  return %y : tensor<2x16x32xf32>
}

