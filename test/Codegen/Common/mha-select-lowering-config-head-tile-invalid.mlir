// RUN: mha-opt %s --split-input-file --verify-diagnostics --mha-select-lowering-config='target={#mha.target<kind = cuda, chip = "sm_80", features = "+ptx80", subgroup_size = 32, max_workgroup_threads = 1024, max_workgroup_memory = 49152>}'

// A head tile the kernel cannot take: not a divisor of the group, or more
// rows than the tile.
func.func @not_divisor(%q: tensor<1x8x1x64xf16>, %k: tensor<1x2x512x64xf16>) -> tensor<1x8x1x64xf16> {
  // expected-error @+1 {{lowering_config: head_tile = 3 (query heads per workgroup) needs a static query length, a divisor of the 4 query heads per key/value head, and head_tile * Sq at most q_tile (16)}}
  %o = mha.attention ins(%q, %k, %k : tensor<1x8x1x64xf16>, tensor<1x2x512x64xf16>, tensor<1x2x512x64xf16>) outs(%q : tensor<1x8x1x64xf16>) {mha.lowering_config = #mha.lowering_config<head_tile = 3>} -> tensor<1x8x1x64xf16>
  return %o : tensor<1x8x1x64xf16>
}

// -----

func.func @too_many_rows(%q: tensor<1x8x10x64xf16>, %k: tensor<1x2x512x64xf16>) -> tensor<1x8x10x64xf16> {
  // expected-error @+1 {{lowering_config: head_tile = 4 (query heads per workgroup) needs a static query length, a divisor of the 4 query heads per key/value head, and head_tile * Sq at most q_tile (16)}}
  %o = mha.attention ins(%q, %k, %k : tensor<1x8x10x64xf16>, tensor<1x2x512x64xf16>, tensor<1x2x512x64xf16>) outs(%q : tensor<1x8x10x64xf16>) {mha.lowering_config = #mha.lowering_config<q_tile = 16, kv_tile = 64, head_tile = 4>} -> tensor<1x8x10x64xf16>
  return %o : tensor<1x8x10x64xf16>
}
