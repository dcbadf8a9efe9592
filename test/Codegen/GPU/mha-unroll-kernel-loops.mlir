// RUN: mha-opt %s --split-input-file --mha-unroll-kernel-loops=max-trip-count=4 | FileCheck %s

// Inside a kernel, the innermost loop of a constant trip count of at most
// max-trip-count is unrolled; the loop around it (and a longer innermost
// loop) stays.

// CHECK-LABEL: func.func @short_innermost
// CHECK: gpu.launch
// CHECK: scf.for %[[I:.+]] = %{{.+}} to %{{.+}} step
// CHECK-NOT: scf.for
// CHECK-COUNT-4: memref.store %{{.+}}, %{{.+}}[%[[I]], %{{.+}}]
// CHECK-NOT: memref.store
// CHECK: gpu.terminator
func.func @short_innermost(%m: memref<8x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %f = arith.constant 1.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    scf.for %i = %c0 to %c8 step %c1 {
      scf.for %j = %c0 to %c4 step %c1 {
        memref.store %f, %m[%i, %j] : memref<8x4xf32>
      }
    }
    gpu.terminator
  }
  return
}

// -----

// A longer innermost loop, one of a dynamic trip count, and a loop outside
// any kernel stay loops.

// CHECK-LABEL: func.func @kept
// CHECK: scf.for
// CHECK: gpu.launch
// CHECK: scf.for
// CHECK: scf.for
func.func @kept(%m: memref<8xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %f = arith.constant 1.0 : f32
  scf.for %i = %c0 to %c1 step %c1 {
    memref.store %f, %m[%i] : memref<8xf32>
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    scf.for %i = %c0 to %c8 step %c1 {
      memref.store %f, %m[%i] : memref<8xf32>
    }
    scf.for %i = %c0 to %n step %c1 {
      memref.store %f, %m[%i] : memref<8xf32>
    }
    gpu.terminator
  }
  return
}
