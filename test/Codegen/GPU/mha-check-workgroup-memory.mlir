// RUN: mha-opt %s --split-input-file --verify-diagnostics --mha-check-workgroup-memory="max-bytes=10240"
// RUN: not mha-opt %s --mha-check-workgroup-memory="max-bytes=10239" 2>&1 | FileCheck %s --check-prefix=OVER
// RUN: echo 'module {}' | not mha-opt --mha-check-workgroup-memory="max-bytes=-1" 2>&1 | FileCheck %s --check-prefix=NEGATIVE

// 32x64 f32 and 32x32 f16 tiles: 8192 + 2048 = 10240 bytes, one byte over a
// limit of 10239 (the target's limits: mha-check-workgroup-memory-target.mlir).
// OVER: error: the kernel's workgroup memory, 10240 bytes, exceeds the target's 10239 (max-bytes): give smaller tiles (q-tile-size, kv-tile-size, gemm-tile, gemm-stages)
// NEGATIVE: error: max-bytes must be positive (0: the target's), found -1
func.func @tiles() {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1)
      workgroup(%a : memref<32x64xf32, #gpu.address_space<workgroup>>,
                %b : memref<32x32xf16, #gpu.address_space<workgroup>>) {
    gpu.terminator
  }
  return
}
