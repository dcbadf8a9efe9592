// RUN: mha-opt %s --split-input-file --verify-diagnostics --mha-select-lowering-config | FileCheck %s
// RUN: not mha-opt %s --split-input-file --mha-select-lowering-config="target={#mha.target<kind = vulkan, max_workgroup_threads = 1024>}" -o /dev/null 2>&1 | FileCheck %s --check-prefix=GPU
// RUN: not mha-opt %s --split-input-file --mha-select-lowering-config="overrides={#mha.lowering_config<prefetch_blocks = 0>}" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: mha-opt %s --split-input-file --verify-diagnostics --mha-select-lowering-config="overrides={#mha.lowering_config<prefetch_blocks = 3>}" | FileCheck %s --check-prefix=OVER

// The CPU rule prefetches one key block ahead where a decoding attention
// (the queries one tile) reads keys and values of 32 MiB or more (bf16,
// f16, f32), or of dynamic size; not K/V that stay in the last-level cache
// (16 MiB here), not a prefill (more queries than a tile).
// CHECK-LABEL: func.func @rule
// CHECK: mha.attention {{.*}}#mha.lowering_config<q_tile = 64, kv_tile = 128, kv_splits = 2, head_tile = 4, prefetch_blocks = 1>
// CHECK: mha.attention {{.*}}#mha.lowering_config<q_tile = 64, kv_tile = 128, kv_splits = 2, head_tile = 4, prefetch_blocks = 1>
// CHECK: mha.attention {{.*}}#mha.lowering_config<q_tile = 64, kv_tile = 128, kv_splits = 2, head_tile = 4, prefetch_blocks = 1>
// CHECK: mha.attention {{.*}}#mha.lowering_config<q_tile = 64, kv_tile = 128, kv_splits = 2, head_tile = 4>
// CHECK: mha.attention {{.*}}#mha.lowering_config<q_tile = 64, kv_tile = 128, kv_splits = 2, head_tile = 4, prefetch_blocks = 1>
// CHECK: mha.attention {{.*}}#mha.lowering_config<q_tile = 64, kv_tile = 64>
// ZERO: error: prefetch_blocks must be positive, found 0
func.func @rule(%q: tensor<1x32x1x128xbf16>, %k: tensor<1x8x32768x128xbf16>,
                %qh: tensor<1x32x1x128xf16>, %kh: tensor<1x8x32768x128xf16>,
                %qf: tensor<1x32x1x128xf32>, %kf: tensor<1x8x32768x128xf32>,
                %ks: tensor<1x8x4096x128xbf16>, %kd: tensor<1x8x?x128xbf16>,
                %qp: tensor<1x32x100x128xbf16>) {
  %bf16 = mha.attention ins(%q, %k, %k : tensor<1x32x1x128xbf16>, tensor<1x8x32768x128xbf16>, tensor<1x8x32768x128xbf16>) outs(%q : tensor<1x32x1x128xbf16>) {causal} -> tensor<1x32x1x128xbf16>
  %f16 = mha.attention ins(%qh, %kh, %kh : tensor<1x32x1x128xf16>, tensor<1x8x32768x128xf16>, tensor<1x8x32768x128xf16>) outs(%qh : tensor<1x32x1x128xf16>) {causal} -> tensor<1x32x1x128xf16>
  %f32 = mha.attention ins(%qf, %kf, %kf : tensor<1x32x1x128xf32>, tensor<1x8x32768x128xf32>, tensor<1x8x32768x128xf32>) outs(%qf : tensor<1x32x1x128xf32>) {causal} -> tensor<1x32x1x128xf32>
  %small = mha.attention ins(%q, %ks, %ks : tensor<1x32x1x128xbf16>, tensor<1x8x4096x128xbf16>, tensor<1x8x4096x128xbf16>) outs(%q : tensor<1x32x1x128xbf16>) {causal} -> tensor<1x32x1x128xbf16>
  %dynamic = mha.attention ins(%q, %kd, %kd : tensor<1x32x1x128xbf16>, tensor<1x8x?x128xbf16>, tensor<1x8x?x128xbf16>) outs(%q : tensor<1x32x1x128xbf16>) {causal} -> tensor<1x32x1x128xbf16>
  %prefill = mha.attention ins(%qp, %k, %k : tensor<1x32x100x128xbf16>, tensor<1x8x32768x128xbf16>, tensor<1x8x32768x128xbf16>) outs(%qp : tensor<1x32x100x128xbf16>) {causal} -> tensor<1x32x100x128xbf16>
  return
}

// -----

// Given by hand: kept on the CPU; GPU targets refuse it (the prefetch is
// built on CPU only). A pipeline's (overrides) goes to the attentions, not
// to the layers.
// CHECK-LABEL: func.func @given
// CHECK: mha.attention {{.*}}#mha.lowering_config<q_tile = 64, kv_tile = 64, prefetch_blocks = 2>
// OVER-LABEL: func.func @given
// OVER: mha.attention {{.*}}#mha.lowering_config<q_tile = 64, kv_tile = 64, prefetch_blocks = 3>
// OVER: mha.multi_head_attention {{.*}}#mha.lowering_config<q_tile = 64, kv_tile = 64>,
// GPU: error: lowering_config: prefetch_blocks is implemented on cpu targets only, not on a vulkan target
func.func @given(%q: tensor<1x2x100x16xf32>, %x: tensor<2x16x32xf32>, %w: tensor<32x32xf32>) -> (tensor<1x2x100x16xf32>, tensor<2x16x32xf32>) {
  %o = mha.attention ins(%q, %q, %q : tensor<1x2x100x16xf32>, tensor<1x2x100x16xf32>, tensor<1x2x100x16xf32>) outs(%q : tensor<1x2x100x16xf32>) {mha.lowering_config = #mha.lowering_config<prefetch_blocks = 2>} -> tensor<1x2x100x16xf32>
  %y = mha.multi_head_attention %x, %x, %x, %w, %w, %w, %w {num_heads = 2 : i64}
    : (tensor<2x16x32xf32>, tensor<2x16x32xf32>, tensor<2x16x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<2x16x32xf32>
  return %o, %y : tensor<1x2x100x16xf32>, tensor<2x16x32xf32>
}

// -----

// A layer's own prefetch_blocks is refused.
func.func @layer(%x: tensor<2x16x32xf32>, %w: tensor<32x32xf32>) -> tensor<2x16x32xf32> {
  // expected-error @+1 {{lowering_config: prefetch_blocks applies to mha.attention only (a layer's attention is fused with its projections)}}
  %y = mha.multi_head_attention %x, %x, %x, %w, %w, %w, %w {num_heads = 2 : i64, mha.lowering_config = #mha.lowering_config<prefetch_blocks = 1>}
    : (tensor<2x16x32xf32>, tensor<2x16x32xf32>, tensor<2x16x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<2x16x32xf32>
  return %y : tensor<2x16x32xf32>
}
