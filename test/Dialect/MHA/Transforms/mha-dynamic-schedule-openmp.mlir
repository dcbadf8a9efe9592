// RUN: mha-opt %s --mha-dynamic-schedule-openmp | FileCheck %s

// Every OpenMP work-sharing loop gets schedule(dynamic): causal query tiles
// do unequal work, so threads take them one at a time.

// CHECK-LABEL: func.func @tiles
// CHECK: omp.wsloop schedule(dynamic) {
// CHECK:   omp.loop_nest
func.func @tiles(%n: index, %buf: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f32
  omp.parallel {
    omp.wsloop {
      omp.loop_nest (%i) : index = (%c0) to (%n) step (%c1) {
        memref.store %one, %buf[%i] : memref<?xf32>
        omp.yield
      }
    }
    omp.terminator
  }
  return
}
