// RUN: mha-opt %s --split-input-file --verify-diagnostics --mha-check-kernel-loop-iterations=max-iterations=100
// RUN: not mha-opt %s --split-input-file --mha-check-kernel-loop-iterations=max-iterations=-1 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: not mha-opt %s --split-input-file --mha-unroll-kernel-loops=max-trip-count=-1 2>&1 | FileCheck %s --check-prefix=NEGATIVE-UNROLL
// RUN: mha-opt %s --split-input-file --mha-check-kernel-loop-iterations=max-iterations=0 | FileCheck %s --check-prefix=OFF

// NEGATIVE: max-iterations must not be negative, found -1
// NEGATIVE-UNROLL: max-trip-count must not be negative, found -1
// With a limit of 0 nothing is checked, not even the loops without a bound.
// OFF-LABEL: func.func @unbounded

// Each loop's trip count plus one (the test that ends it, which lavapipe
// counts too), times the trip counts of the loops around it, summed:
// 5 + 4*9 + 17 = 58 per invocation, within the limit.
func.func @within(%m: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %f = arith.constant 1.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    scf.for %i = %c0 to %c4 step %c1 {
      scf.for %j = %c0 to %c8 step %c1 {
        memref.store %f, %m[%j] : memref<64xf32>
      }
    }
    scf.for %i = %c0 to %c16 step %c1 {
      memref.store %f, %m[%i] : memref<64xf32>
    }
    gpu.terminator
  }
  return
}

// -----

// 11 + 10 * 11 = 121.
func.func @nested_past_the_limit(%m: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c10 = arith.constant 10 : index
  %f = arith.constant 1.0 : f32
  // expected-error @+1 {{an invocation of this kernel may run 121 loop iterations, more than the 100 the target runs before it ends every loop without an error}}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    scf.for %i = %c0 to %c10 step %c1 {
      scf.for %j = %c0 to %c10 step %c1 {
        memref.store %f, %m[%j] : memref<64xf32>
      }
    }
    gpu.terminator
  }
  return
}

// -----

// Dynamic bounds: a partial tile min(n - 16 * block, 16) (value bounds: at
// most 16), and the rest of n after its whole blocks of 16 (value bounds
// relate the two bounds: at most 15, step 1), lowered to arith as
// lower-affine leaves them (integer ranges: the thread id is below 32, so
// ceil(n / 32) rows per thread is at most 2 for n <= 64); 4 times: 5 + 4 *
// (17 + 16 + 3) = 149.
func.func @dynamic_bounds(%m: memref<64xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %f = arith.constant 1.0 : f32
  %c4 = arith.constant 4 : index
  // expected-error @+1 {{may run 149 loop iterations, more than the 100}}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    scf.for %k = %c0 to %c4 step %c1 {
      %tile = affine.min affine_map<(d0)[s0] -> (s0 - d0 * 16, 16)>(%bx)[%n]
      scf.for %i = %c0 to %tile step %c1 {
        memref.store %f, %m[%i] : memref<64xf32>
      }
      %whole = affine.apply affine_map<()[s0] -> ((s0 floordiv 16) * 16)>()[%n]
      scf.for %i = %whole to %n step %c1 {
        memref.store %f, %m[%i] : memref<64xf32>
      }
      %rows = arith.minsi %n, %c64 : index
      %rows0 = arith.maxsi %rows, %c0 : index
      %per = arith.ceildivsi %rows0, %c32 : index
      scf.for %i = %c0 to %per step %c1 {
        memref.store %f, %m[%i] : memref<64xf32>
      }
    }
    gpu.terminator
  }
  return
}

// -----

func.func @unbounded(%m: memref<64xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %f = arith.constant 1.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    // expected-error @+1 {{the trip count of this kernel loop has no static bound, which the kernel loop iteration limit needs}}
    scf.for %i = %c0 to %n step %c1 {
      memref.store %f, %m[%c0] : memref<64xf32>
    }
    gpu.terminator
  }
  return
}

// -----

func.func @while_loop(%m: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %true = arith.constant true
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    // expected-error @+1 {{a loop other than scf.for in a kernel: its trip count cannot be bounded for the kernel loop iteration limit}}
    scf.while : () -> () {
      scf.condition(%true)
    } do {
      scf.yield
    }
    gpu.terminator
  }
  return
}

// -----

// Loops outside kernels do not count.
func.func @host_loop(%m: memref<64xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %f = arith.constant 1.0 : f32
  scf.for %i = %c0 to %n step %c1 {
    memref.store %f, %m[%c0] : memref<64xf32>
  }
  return
}
