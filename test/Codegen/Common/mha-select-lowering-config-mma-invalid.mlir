// A configuration with mma set by hand is checked as it is: the kernel must
// compute the op, and its tiles must fit the warps.
// RUN: mha-opt %s --split-input-file --verify-diagnostics --mha-select-lowering-config="target={#mha.target<kind = cuda, chip = \"sm_80\", max_workgroup_threads = 256>}"

func.func @mask(%q: tensor<1x2x8x64xf16>, %m: tensor<8x8xi1>) -> tensor<1x2x8x64xf16> {
  %i = tensor.empty() : tensor<1x2x8x64xf16>
  // expected-error @below {{lowering_config: mma = [16, 8, 16] (the tensor-core kernel) cannot compute this op: it takes an additive (float) mask only, not an i1 one}}
  %o = mha.attention ins(%q, %q, %q : tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16>) mask(%m : tensor<8x8xi1>) outs(%i : tensor<1x2x8x64xf16>) {mha.lowering_config = #mha.lowering_config<q_tile = 64, kv_tile = 64, mma = [16, 8, 16], warps = 4>} -> tensor<1x2x8x64xf16>
  return %o : tensor<1x2x8x64xf16>
}

// -----

func.func @f32(%q: tensor<1x2x8x64xf32>) -> tensor<1x2x8x64xf32> {
  %i = tensor.empty() : tensor<1x2x8x64xf32>
  // expected-error @below {{cannot compute this op: it needs query, key, value and result all f16 or all bf16}}
  %o = mha.attention ins(%q, %q, %q : tensor<1x2x8x64xf32>, tensor<1x2x8x64xf32>, tensor<1x2x8x64xf32>) outs(%i : tensor<1x2x8x64xf32>) {mha.lowering_config = #mha.lowering_config<mma = [16, 8, 16], warps = 4>} -> tensor<1x2x8x64xf32>
  return %o : tensor<1x2x8x64xf32>
}

// -----

func.func @head_dim(%q: tensor<1x2x8x40xf16>) -> tensor<1x2x8x40xf16> {
  %i = tensor.empty() : tensor<1x2x8x40xf16>
  // expected-error @below {{cannot compute this op: it needs a static query/key head dim that is a multiple of 16 up to 256}}
  %o = mha.attention ins(%q, %q, %q : tensor<1x2x8x40xf16>, tensor<1x2x8x40xf16>, tensor<1x2x8x40xf16>) outs(%i : tensor<1x2x8x40xf16>) {mha.lowering_config = #mha.lowering_config<mma = [16, 8, 16], warps = 4>} -> tensor<1x2x8x40xf16>
  return %o : tensor<1x2x8x40xf16>
}

// -----

func.func @rows(%q: tensor<1x2x8x64xf16>) -> tensor<1x2x8x64xf16> {
  %i = tensor.empty() : tensor<1x2x8x64xf16>
  // expected-error @below {{lowering_config: with mma, q_tile must be 16 rows per warp (32 for 2 warps), found 64}}
  %o = mha.attention ins(%q, %q, %q : tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16>) outs(%i : tensor<1x2x8x64xf16>) {mha.lowering_config = #mha.lowering_config<mma = [16, 8, 16], warps = 2>} -> tensor<1x2x8x64xf16>
  return %o : tensor<1x2x8x64xf16>
}

// -----

func.func @keys(%q: tensor<1x2x8x64xf16>) -> tensor<1x2x8x64xf16> {
  %i = tensor.empty() : tensor<1x2x8x64xf16>
  // expected-error @below {{lowering_config: with mma, kv_tile must be a positive multiple of 16, found 24}}
  %o = mha.attention ins(%q, %q, %q : tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16>) outs(%i : tensor<1x2x8x64xf16>) {mha.lowering_config = #mha.lowering_config<kv_tile = 24, mma = [16, 8, 16], warps = 4>} -> tensor<1x2x8x64xf16>
  return %o : tensor<1x2x8x64xf16>
}

// -----

func.func @too_many_warps(%q: tensor<1x2x8x64xf16>) -> tensor<1x2x8x64xf16> {
  %i = tensor.empty() : tensor<1x2x8x64xf16>
  // expected-error @below {{lowering_config: 16 warps exceed the target's 256 threads per workgroup}}
  %o = mha.attention ins(%q, %q, %q : tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16>) outs(%i : tensor<1x2x8x64xf16>) {mha.lowering_config = #mha.lowering_config<q_tile = 256, mma = [16, 8, 16], warps = 16>} -> tensor<1x2x8x64xf16>
  return %o : tensor<1x2x8x64xf16>
}

// -----

func.func @no_warps(%q: tensor<1x2x8x64xf16>) -> tensor<1x2x8x64xf16> {
  %i = tensor.empty() : tensor<1x2x8x64xf16>
  // The rule's 4 warps are not taken for a configuration given by hand
  // with 8 rows, which no whole warp fits.
  // expected-error @below {{lowering_config: with mma, q_tile must be 16 rows per warp (64 for 4 warps), found 8}}
  %o = mha.attention ins(%q, %q, %q : tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16>, tensor<1x2x8x64xf16>) outs(%i : tensor<1x2x8x64xf16>) {mha.lowering_config = #mha.lowering_config<q_tile = 8, mma = [16, 8, 16]>} -> tensor<1x2x8x64xf16>
  return %o : tensor<1x2x8x64xf16>
}

// -----

func.func @key_offset(%q: tensor<2x2x8x64xf16>, %len: tensor<2xi32>, %off: index) -> tensor<2x2x8x64xf16> {
  %i = tensor.empty() : tensor<2x2x8x64xf16>
  // expected-error @below {{cannot compute this op: it takes no key_offset (a block of keys of a larger op)}}
  %o = mha.attention ins(%q, %q, %q : tensor<2x2x8x64xf16>, tensor<2x2x8x64xf16>, tensor<2x2x8x64xf16>) key_lengths(%len : tensor<2xi32>) key_offset(%off) outs(%i : tensor<2x2x8x64xf16>) {mha.lowering_config = #mha.lowering_config<mma = [16, 8, 16], warps = 4>} -> tensor<2x2x8x64xf16>
  return %o : tensor<2x2x8x64xf16>
}
