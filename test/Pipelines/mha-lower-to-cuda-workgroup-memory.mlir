// RUN: mha-opt %s --mha-lower-to-cuda="format=isa q-tile-size=32 kv-tile-size=32" | FileCheck %s --check-prefix=DYNAMIC
// RUN: not mha-opt %s --mha-lower-to-cuda="format=isa q-tile-size=64 kv-tile-size=64 chip=sm_86" 2>&1 | FileCheck %s --check-prefix=OPTIN
// RUN: not mha-opt %s --mha-lower-to-cuda="format=isa q-tile-size=32 kv-tile-size=32 chip=sm_75" 2>&1 | FileCheck %s --check-prefix=STATIC
// RUN: mha-opt %s --mha-lower-to-cuda="format=isa q-tile-size=16 kv-tile-size=16" | FileCheck %s --check-prefix=SMALL
// RUN: mha-opt %s --mha-lower-to-cuda="format=isa" -mlir-print-ir-after=mha-select-lowering-config -o /dev/null 2>&1 | FileCheck %s --check-prefix=RULE

// Causal f32 attention at head dim 64 on the thread-per-row kernel with
// tiles of 32 queries and 32 keys stages 65,664 bytes in shared memory,
// over the 48 KiB CUDA lets a kernel declare statically: on sm_80 (163 KiB
// with the opt-in) the kernel gets it as dynamic shared memory, its size
// given at launch (the runtime opts the kernel in). Tiles of 64 (148,224
// bytes) are over sm_86's 99 KiB, and 32 over sm_75's 48 KiB (no opt-in
// known): refused after the GPU mapping, naming the sizes and the limit,
// instead of by ptxas or the driver at the end. Tiles of 16 fit statically.
// The configuration rule gives it the register kernel, whose Q, K and V
// tiles take 34,816 bytes (64 rows, 32 keys).
// DYNAMIC: %[[BYTES:.+]] = llvm.mlir.constant(65664 : i32) : i32
// DYNAMIC: gpu.launch_func {{.*}}@main_kernel::@main_kernel {{.*}} dynamic_shared_memory_size %[[BYTES]]
// OPTIN: error: the kernel's workgroup memory, 148224 bytes, exceeds the target's 101376 (max_workgroup_memory_optin): give smaller tiles (q-tile-size, kv-tile-size, gemm-tile, gemm-stages)
// OPTIN-NOT: ptxas
// STATIC: error: the kernel's workgroup memory, 65664 bytes, exceeds the target's 49152 (max_workgroup_memory): give smaller tiles
// SMALL-NOT: dynamic_shared_memory_size
// RULE: mha.attention {{.*}}mha.lowering_config = #mha.lowering_config<q_tile = 64, kv_tile = 32, thread_tile = [4, 4]>
func.func @main(%q: tensor<1x1x1024x64xf32>, %init: tensor<1x1x1024x64xf32>) -> tensor<1x1x1024x64xf32> {
  %o = mha.attention ins(%q, %q, %q : tensor<1x1x1024x64xf32>, tensor<1x1x1024x64xf32>, tensor<1x1x1024x64xf32>) outs(%init : tensor<1x1x1024x64xf32>) {causal} -> tensor<1x1x1024x64xf32>
  return %o : tensor<1x1x1024x64xf32>
}
