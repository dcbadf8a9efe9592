// RUN: mha-opt %s --split-input-file --mha-select-lowering-config='target={#mha.target<kind = vulkan, features = "+cooperative_matrix", subgroup_size = 32, max_workgroup_threads = 1024>}' | FileCheck %s --check-prefix=COOP
// RUN: mha-opt %s --split-input-file --mha-select-lowering-config='target={#mha.target<kind = vulkan, subgroup_size = 32, max_workgroup_threads = 1024>}' | FileCheck %s --check-prefix=PLAIN

// On a vulkan target with cooperative matrices, f16 attention whose head dims
// are multiples of 16 runs as the cooperative-matrix kernel: 4 subgroups of 16
// rows, 32-key blocks; 16-key blocks, then fewer subgroups, where the tiles
// would pass 48 KiB of workgroup memory (head dim 128: 16 keys; 256: 2
// subgroups); fewer subgroups for fewer queries (decoding: 1). f32, or head
// dims that are not multiples of 16: the register kernel. Without the
// feature: the register kernel for all.
// COOP-LABEL: func.func @shapes
// COOP: #mha.lowering_config<q_tile = 64, kv_tile = 32, mma = [16, 16, 16], warps = 4>
// COOP: #mha.lowering_config<q_tile = 64, kv_tile = 16, mma = [16, 16, 16], warps = 4>
// COOP: #mha.lowering_config<q_tile = 32, kv_tile = 16, mma = [16, 16, 16], warps = 2>
// COOP: #mha.lowering_config<q_tile = 16, kv_tile = 32, mma = [16, 16, 16], warps = 1>
// COOP: thread_tile
// COOP: thread_tile
// PLAIN-LABEL: func.func @shapes
// PLAIN-NOT: mma
func.func @shapes(%q: tensor<1x2x200x64xf16>, %q2: tensor<1x2x200x128xf16>,
                  %q3: tensor<1x2x200x256xf16>, %q4: tensor<1x2x1x64xf16>,
                  %q5: tensor<1x2x200x64xf32>, %q6: tensor<1x2x200x40xf16>)
    -> (tensor<1x2x200x64xf16>, tensor<1x2x200x128xf16>, tensor<1x2x200x256xf16>,
        tensor<1x2x1x64xf16>, tensor<1x2x200x64xf32>, tensor<1x2x200x40xf16>) {
  %o = mha.attention ins(%q, %q, %q : tensor<1x2x200x64xf16>, tensor<1x2x200x64xf16>, tensor<1x2x200x64xf16>) outs(%q : tensor<1x2x200x64xf16>) -> tensor<1x2x200x64xf16>
  %o2 = mha.attention ins(%q2, %q2, %q2 : tensor<1x2x200x128xf16>, tensor<1x2x200x128xf16>, tensor<1x2x200x128xf16>) outs(%q2 : tensor<1x2x200x128xf16>) -> tensor<1x2x200x128xf16>
  %o3 = mha.attention ins(%q3, %q3, %q3 : tensor<1x2x200x256xf16>, tensor<1x2x200x256xf16>, tensor<1x2x200x256xf16>) outs(%q3 : tensor<1x2x200x256xf16>) -> tensor<1x2x200x256xf16>
  %o4 = mha.attention ins(%q4, %q, %q : tensor<1x2x1x64xf16>, tensor<1x2x200x64xf16>, tensor<1x2x200x64xf16>) outs(%q4 : tensor<1x2x1x64xf16>) -> tensor<1x2x1x64xf16>
  %o5 = mha.attention ins(%q5, %q5, %q5 : tensor<1x2x200x64xf32>, tensor<1x2x200x64xf32>, tensor<1x2x200x64xf32>) outs(%q5 : tensor<1x2x200x64xf32>) -> tensor<1x2x200x64xf32>
  %o6 = mha.attention ins(%q6, %q6, %q6 : tensor<1x2x200x40xf16>, tensor<1x2x200x40xf16>, tensor<1x2x200x40xf16>) outs(%q6 : tensor<1x2x200x40xf16>) -> tensor<1x2x200x40xf16>
  return %o, %o2, %o3, %o4, %o5, %o6 : tensor<1x2x200x64xf16>, tensor<1x2x200x128xf16>, tensor<1x2x200x256xf16>, tensor<1x2x1x64xf16>, tensor<1x2x200x64xf32>, tensor<1x2x200x40xf16>
}

// -----

// Tile sizes given: the kernel's subgroups follow the rows (q_tile 32: 2).
// COOP-LABEL: func.func @given_tiles
// COOP: #mha.lowering_config<q_tile = 32, kv_tile = 64, mma = [16, 16, 16], warps = 2>
func.func @given_tiles(%q: tensor<1x2x200x64xf16>) -> tensor<1x2x200x64xf16> {
  %o = mha.attention ins(%q, %q, %q : tensor<1x2x200x64xf16>, tensor<1x2x200x64xf16>, tensor<1x2x200x64xf16>) outs(%q : tensor<1x2x200x64xf16>) {mha.lowering_config = #mha.lowering_config<q_tile = 32, kv_tile = 64>} -> tensor<1x2x200x64xf16>
  return %o : tensor<1x2x200x64xf16>
}
