// The rule for the register kernel (mha-attention-to-simt) and the checks
// of a thread_tile written by hand. Where the tensor-core kernel does not
// apply, a GPU target's mha.attention gets thread_tile = [4, 4] (4 rows by
// 4 keys a thread), 32-key blocks and 64 rows in 16 groups of 8 lanes; the
// lanes halve until they divide the value head dim, the rows follow a
// static Sq below 64, and the tiles shrink until they fit the target's
// workgroup memory (48 KiB without a limit). A target with smaller
// subgroups gets smaller groups. (The other functions' configurations are
// refused: mha-opt fails, checked below.)
// RUN: not mha-opt %s --split-input-file --mha-select-lowering-config="target={#mha.target<kind = vulkan>}" 2>/dev/null | FileCheck %s --check-prefix=RULE
// RUN: not mha-opt %s --split-input-file --mha-select-lowering-config="target={#mha.target<kind = cuda, chip = \"sm_80\", max_workgroup_memory = 49152>}" 2>/dev/null | FileCheck %s --check-prefix=RULE
// RUN: not mha-opt %s --split-input-file --mha-select-lowering-config="target={#mha.target<kind = vulkan, subgroup_size = 4>}" 2>/dev/null | FileCheck %s --check-prefix=SUB4
// RUN: mha-opt %s --split-input-file --verify-diagnostics --mha-select-lowering-config="target={#mha.target<kind = vulkan, subgroup_size = 4, max_workgroup_threads = 256, max_workgroup_memory = 16384>}" -o /dev/null

// RULE-LABEL: func.func @rule
// RULE: mha.lowering_config = #mha.lowering_config<q_tile = 64, kv_tile = 32, thread_tile = [4, 4]>
// dv = 20: groups of 4 lanes, 8 keys a thread.
// RULE: mha.lowering_config = #mha.lowering_config<q_tile = 64, kv_tile = 32, thread_tile = [4, 8]>
// Sq = 1 (decoding): one row, one group of 8 lanes.
// RULE: mha.lowering_config = #mha.lowering_config<q_tile = 1, kv_tile = 32, thread_tile = [1, 4]>
// Sq = 6: 8 rows, two groups.
// RULE: mha.lowering_config = #mha.lowering_config<q_tile = 8, kv_tile = 32, thread_tile = [4, 4]>
// d = 128: 16 keys (50,688 bytes), then 32 rows (33,792 bytes).
// RULE: mha.lowering_config = #mha.lowering_config<q_tile = 32, kv_tile = 16, thread_tile = [4, 2]>
// SUB4-LABEL: func.func @rule
// SUB4: mha.lowering_config = #mha.lowering_config<q_tile = 64, kv_tile = 32, thread_tile = [4, 8]>
func.func @rule(%a: tensor<2x4x?x64xf32>, %b: tensor<1x2x100x20xf32>, %c: tensor<1x8x1x64xf32>, %ck: tensor<1x8x?x64xf32>, %d: tensor<1x8x6x64xf32>, %e: tensor<1x2x300x128xf32>) {
  %0 = mha.attention ins(%a, %a, %a : tensor<2x4x?x64xf32>, tensor<2x4x?x64xf32>, tensor<2x4x?x64xf32>) outs(%a : tensor<2x4x?x64xf32>) {causal} -> tensor<2x4x?x64xf32>
  %1 = mha.attention ins(%b, %b, %b : tensor<1x2x100x20xf32>, tensor<1x2x100x20xf32>, tensor<1x2x100x20xf32>) outs(%b : tensor<1x2x100x20xf32>) -> tensor<1x2x100x20xf32>
  %2 = mha.attention ins(%c, %ck, %ck : tensor<1x8x1x64xf32>, tensor<1x8x?x64xf32>, tensor<1x8x?x64xf32>) outs(%c : tensor<1x8x1x64xf32>) -> tensor<1x8x1x64xf32>
  %3 = mha.attention ins(%d, %d, %d : tensor<1x8x6x64xf32>, tensor<1x8x6x64xf32>, tensor<1x8x6x64xf32>) outs(%d : tensor<1x8x6x64xf32>) -> tensor<1x8x6x64xf32>
  %4 = mha.attention ins(%e, %e, %e : tensor<1x2x300x128xf32>, tensor<1x2x300x128xf32>, tensor<1x2x300x128xf32>) outs(%e : tensor<1x2x300x128xf32>) -> tensor<1x2x300x128xf32>
  return
}

// -----

// What the register kernel cannot compute.
func.func @bool_mask(%q: tensor<1x1x16x16xf32>, %m: tensor<16x16xi1>) -> tensor<1x1x16x16xf32> {
  // expected-error @below {{lowering_config: thread_tile (the register kernel) cannot compute this op: it takes an additive (float) mask only, not an i1 one}}
  %o = mha.attention ins(%q, %q, %q : tensor<1x1x16x16xf32>, tensor<1x1x16x16xf32>, tensor<1x1x16x16xf32>) mask(%m : tensor<16x16xi1>) outs(%q : tensor<1x1x16x16xf32>) {mha.lowering_config = #mha.lowering_config<thread_tile = [4, 4]>} -> tensor<1x1x16x16xf32>
  return %o : tensor<1x1x16x16xf32>
}

// -----

func.func @layer(%x: tensor<1x16x16xf32>, %w: tensor<16x16xf32>) -> tensor<1x16x16xf32> {
  // expected-error @below {{lowering_config: thread_tile (the register kernel) cannot compute this op: it computes mha.attention only (decompose layers first)}}
  %y = mha.multi_head_attention %x, %x, %x, %w, %w, %w, %w {num_heads = 2 : i64, mha.lowering_config = #mha.lowering_config<thread_tile = [4, 4]>}
    : (tensor<1x16x16xf32>, tensor<1x16x16xf32>, tensor<1x16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<1x16x16xf32>
  return %y : tensor<1x16x16xf32>
}

// -----

func.func @rows(%q: tensor<1x1x16x16xf32>) -> tensor<1x1x16x16xf32> {
  // expected-error @below {{lowering_config: q_tile and kv_tile must be positive multiples of thread_tile's rows and keys (4, 4), found 6 and 16}}
  %o = mha.attention ins(%q, %q, %q : tensor<1x1x16x16xf32>, tensor<1x1x16x16xf32>, tensor<1x1x16x16xf32>) outs(%q : tensor<1x1x16x16xf32>) {mha.lowering_config = #mha.lowering_config<q_tile = 6, kv_tile = 16, thread_tile = [4, 4]>} -> tensor<1x1x16x16xf32>
  return %o : tensor<1x1x16x16xf32>
}

// -----

// The target's subgroups have 4 lanes: a group of 8 would shuffle across
// subgroups.
func.func @lanes(%q: tensor<1x1x16x16xf32>) -> tensor<1x1x16x16xf32> {
  // expected-error @below {{lowering_config: thread_tile gives 8 threads per row group (kv_tile / keys), which must be a power of two up to 4 (a subgroup) dividing the value head dim 16}}
  %o = mha.attention ins(%q, %q, %q : tensor<1x1x16x16xf32>, tensor<1x1x16x16xf32>, tensor<1x1x16x16xf32>) outs(%q : tensor<1x1x16x16xf32>) {mha.lowering_config = #mha.lowering_config<q_tile = 16, kv_tile = 32, thread_tile = [4, 4]>} -> tensor<1x1x16x16xf32>
  return %o : tensor<1x1x16x16xf32>
}

// -----

func.func @odd_lanes(%q: tensor<1x1x16x16xf32>) -> tensor<1x1x16x16xf32> {
  // expected-error @below {{lowering_config: thread_tile gives 3 threads per row group (kv_tile / keys), which must be a power of two up to 4 (a subgroup) dividing the value head dim 16}}
  %o = mha.attention ins(%q, %q, %q : tensor<1x1x16x16xf32>, tensor<1x1x16x16xf32>, tensor<1x1x16x16xf32>) outs(%q : tensor<1x1x16x16xf32>) {mha.lowering_config = #mha.lowering_config<q_tile = 16, kv_tile = 12, thread_tile = [4, 4]>} -> tensor<1x1x16x16xf32>
  return %o : tensor<1x1x16x16xf32>
}

// -----

func.func @threads(%q: tensor<1x1x16x16xf32>) -> tensor<1x1x16x16xf32> {
  // expected-error @below {{lowering_config: thread_tile gives 512 threads per workgroup, above the target's 256}}
  %o = mha.attention ins(%q, %q, %q : tensor<1x1x16x16xf32>, tensor<1x1x16x16xf32>, tensor<1x1x16x16xf32>) outs(%q : tensor<1x1x16x16xf32>) {mha.lowering_config = #mha.lowering_config<q_tile = 128, kv_tile = 16, thread_tile = [1, 4]>} -> tensor<1x1x16x16xf32>
  return %o : tensor<1x1x16x16xf32>
}

// -----

func.func @memory(%q: tensor<1x1x16x64xf32>) -> tensor<1x1x16x64xf32> {
  // expected-error @below {{lowering_config: the register kernel's tiles take 26112 bytes of workgroup memory, above the target's 16384 (max_workgroup_memory): give smaller tiles}}
  %o = mha.attention ins(%q, %q, %q : tensor<1x1x16x64xf32>, tensor<1x1x16x64xf32>, tensor<1x1x16x64xf32>) outs(%q : tensor<1x1x16x64xf32>) {mha.lowering_config = #mha.lowering_config<q_tile = 64, kv_tile = 16, thread_tile = [16, 4]>} -> tensor<1x1x16x64xf32>
  return %o : tensor<1x1x16x64xf32>
}
