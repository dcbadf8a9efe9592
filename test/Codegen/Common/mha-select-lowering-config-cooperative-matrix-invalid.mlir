// RUN: mha-opt %s --split-input-file --verify-diagnostics --mha-select-lowering-config='target={#mha.target<kind = vulkan, features = "+cooperative_matrix", subgroup_size = 32, max_workgroup_threads = 1024, max_workgroup_memory = 32768>}'
// RUN: not mha-opt %s --split-input-file --mha-select-lowering-config='target={#mha.target<kind = vulkan, subgroup_size = 32>}' 2>&1 | FileCheck %s --check-prefix=FEATURE
// RUN: not mha-opt %s --split-input-file --mha-select-lowering-config='target={#mha.target<kind = vulkan, features = "+cooperative_matrix", subgroup_size = 64>}' 2>&1 | FileCheck %s --check-prefix=SUBGROUP

// The cooperative-matrix kernel's configuration (mma = [16, 16, 16]) is
// refused where the kernel cannot compute the op, with the reason.
// FEATURE: mma = [16, 16, 16] (the cooperative-matrix kernel) cannot compute this op: it needs a vulkan target with cooperative matrices (features = "+cooperative_matrix")
// SUBGROUP: mma = [16, 16, 16] (the cooperative-matrix kernel) cannot compute this op: it needs subgroups of 32 invocations, the target has 64
func.func @bf16(%q: tensor<1x2x64x64xbf16>) -> tensor<1x2x64x64xbf16> {
  // expected-error @+1 {{lowering_config: mma = [16, 16, 16] (the cooperative-matrix kernel) cannot compute this op: it needs query, key, value and result all f16}}
  %o = mha.attention ins(%q, %q, %q : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>) outs(%q : tensor<1x2x64x64xbf16>) {mha.lowering_config = #mha.lowering_config<q_tile = 64, kv_tile = 32, mma = [16, 16, 16], warps = 4>} -> tensor<1x2x64x64xbf16>
  return %o : tensor<1x2x64x64xbf16>
}

// -----

func.func @head_dim(%q: tensor<1x2x64x40xf16>) -> tensor<1x2x64x40xf16> {
  // expected-error @+1 {{lowering_config: mma = [16, 16, 16] (the cooperative-matrix kernel) cannot compute this op: it needs static head dims that are multiples of 16 up to 256}}
  %o = mha.attention ins(%q, %q, %q : tensor<1x2x64x40xf16>, tensor<1x2x64x40xf16>, tensor<1x2x64x40xf16>) outs(%q : tensor<1x2x64x40xf16>) {mha.lowering_config = #mha.lowering_config<q_tile = 64, kv_tile = 32, mma = [16, 16, 16], warps = 4>} -> tensor<1x2x64x40xf16>
  return %o : tensor<1x2x64x40xf16>
}

// -----

func.func @rows(%q: tensor<1x2x64x64xf16>) -> tensor<1x2x64x64xf16> {
  // expected-error @+1 {{lowering_config: with mma = [16, 16, 16], warps must give the subgroups (of 32 invocations, 16 rows each) and q_tile their rows, found warps = 2 and q_tile = 64}}
  %o = mha.attention ins(%q, %q, %q : tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16>) outs(%q : tensor<1x2x64x64xf16>) {mha.lowering_config = #mha.lowering_config<q_tile = 64, kv_tile = 32, mma = [16, 16, 16], warps = 2>} -> tensor<1x2x64x64xf16>
  return %o : tensor<1x2x64x64xf16>
}

// -----

func.func @keys(%q: tensor<1x2x64x64xf16>) -> tensor<1x2x64x64xf16> {
  // expected-error @+1 {{lowering_config: with mma = [16, 16, 16], kv_tile must be a positive multiple of 16, found 24}}
  %o = mha.attention ins(%q, %q, %q : tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16>) outs(%q : tensor<1x2x64x64xf16>) {mha.lowering_config = #mha.lowering_config<q_tile = 64, kv_tile = 24, mma = [16, 16, 16], warps = 4>} -> tensor<1x2x64x64xf16>
  return %o : tensor<1x2x64x64xf16>
}

// -----

func.func @memory(%q: tensor<1x2x64x128xf16>) -> tensor<1x2x64x128xf16> {
  // expected-error @+1 {{lowering_config: the cooperative-matrix kernel's tiles take 83968 bytes of workgroup memory, above the target's 32768 (max_workgroup_memory): give smaller tiles}}
  %o = mha.attention ins(%q, %q, %q : tensor<1x2x64x128xf16>, tensor<1x2x64x128xf16>, tensor<1x2x64x128xf16>) outs(%q : tensor<1x2x64x128xf16>) {mha.lowering_config = #mha.lowering_config<q_tile = 64, kv_tile = 64, mma = [16, 16, 16], warps = 4>} -> tensor<1x2x64x128xf16>
  return %o : tensor<1x2x64x128xf16>
}

// -----

func.func @tensor_core_shape(%q: tensor<1x2x64x64xf16>) -> tensor<1x2x64x64xf16> {
  // expected-error @+1 {{lowering_config: mma = [16, 8, 16] (the tensor-core kernel) cannot compute this op: it needs a cuda target of sm_80 or later}}
  %o = mha.attention ins(%q, %q, %q : tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16>) outs(%q : tensor<1x2x64x64xf16>) {mha.lowering_config = #mha.lowering_config<q_tile = 64, kv_tile = 32, mma = [16, 8, 16], warps = 4>} -> tensor<1x2x64x64xf16>
  return %o : tensor<1x2x64x64xf16>
}
