// RUN: mha-opt %s --verify-diagnostics --mha-check-workgroup-memory

// The limit from the target: 8 KiB, and a kernel of 8 KiB + 4 bytes.
module attributes {mha.target = #mha.target<kind = cuda, max_workgroup_memory = 8192>} {
  func.func @over() {
    %c1 = arith.constant 1 : index
    // expected-error @+1 {{the kernel's workgroup memory, 8196 bytes, exceeds the target's 8192 (max_workgroup_memory)}}
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1)
        workgroup(%a : memref<32x64xf32, #gpu.address_space<workgroup>>,
                  %m : memref<1xf32, #gpu.address_space<workgroup>>) {
      gpu.terminator
    }
    return
  }
}
