// RUN: not mha-opt %s --mha-lower-to-cuda="format=isa q-tile-size=32 kv-tile-size=32" 2>&1 | FileCheck %s
// RUN: mha-opt %s --mha-lower-to-cuda="format=isa q-tile-size=16 kv-tile-size=16" -o /dev/null
// RUN: mha-opt %s --mha-lower-to-cuda="format=isa" -mlir-print-ir-after=mha-select-lowering-config -o /dev/null 2>&1 | FileCheck %s --check-prefix=RULE

// Causal f32 attention at head dim 64 with tiles of 32 queries and 32 keys
// stages ~64 KiB in shared memory, over CUDA's 48 KiB of static shared
// memory: refused after the GPU mapping, naming the sizes, instead of by
// ptxas at the end with the whole module. Tiles of 16 fit. The
// configuration rule gives it the register kernel, whose Q, K and V tiles
// take 34,816 bytes (64 rows, 32 keys).
// RULE: mha.attention {{.*}}mha.lowering_config = #mha.lowering_config<q_tile = 64, kv_tile = 32, thread_tile = [4, 4]>
// CHECK: error: the kernel's workgroup memory, {{[0-9]+}} bytes, exceeds the target's 49152 (max_workgroup_memory)
// CHECK-NOT: ptxas
func.func @main(%q: tensor<1x1x1024x64xf32>, %init: tensor<1x1x1024x64xf32>) -> tensor<1x1x1024x64xf32> {
  %o = mha.attention ins(%q, %q, %q : tensor<1x1x1024x64xf32>, tensor<1x1x1024x64xf32>, tensor<1x1x1024x64xf32>) outs(%init : tensor<1x1x1024x64xf32>) {causal} -> tensor<1x1x1024x64xf32>
  return %o : tensor<1x1x1024x64xf32>
}
