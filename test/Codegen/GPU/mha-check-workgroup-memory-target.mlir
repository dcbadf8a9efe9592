// RUN: mha-opt %s --split-input-file --verify-diagnostics --mha-check-workgroup-memory

// Without max-bytes, the target's limit: its max_workgroup_memory_optin
// where it has one (what a kernel may use with dynamic workgroup memory,
// which counts), else its max_workgroup_memory; no target, no limit.

module attributes {mha.target = #mha.target<kind = cuda, chip = "sm_75", max_workgroup_memory = 8192>} {
func.func @static_limit() {
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{the kernel's workgroup memory, 8196 bytes, exceeds the target's 8192 (max_workgroup_memory): give smaller tiles (q-tile-size, kv-tile-size, gemm-tile, gemm-stages)}}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1)
      workgroup(%a : memref<2049xf32, #gpu.address_space<workgroup>>) {
    gpu.terminator
  }
  return
}
}

// -----

module attributes {mha.target = #mha.target<kind = cuda, chip = "sm_80", max_workgroup_memory = 8192, max_workgroup_memory_optin = 16384>} {
func.func @optin() {
  %c1 = arith.constant 1 : index
  %within = arith.constant 16384 : i32
  %over = arith.constant 16385 : i32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1)
      dynamic_shared_memory_size %within {
    gpu.terminator
  }
  // expected-error @+1 {{the kernel's workgroup memory, 16385 bytes, exceeds the target's 16384 (max_workgroup_memory_optin)}}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1)
      dynamic_shared_memory_size %over {
    gpu.terminator
  }
  return
}
}

// -----

func.func @no_target() {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1)
      workgroup(%a : memref<100000xf32, #gpu.address_space<workgroup>>) {
    gpu.terminator
  }
  return
}
