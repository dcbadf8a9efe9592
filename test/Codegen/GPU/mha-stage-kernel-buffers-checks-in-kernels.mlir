// RUN: mha-opt %s --split-input-file --mha-stage-kernel-buffers=checks-in-kernels=true | FileCheck %s

// checks-in-kernels (the CUDA pipeline): a device-resident function's
// run-time check of argument values (a loop that reads only arguments,
// writes nothing and asserts: mha-insert-runtime-checks' loop over key
// lengths) runs in a kernel of one thread, on the argument where it is:
// no host copy, no gpu.memcpy, so a call waits on no copy.

// Consecutive check loops share one kernel.
// CHECK-LABEL: func.func @check
// CHECK-SAME: (%[[LEN:.+]]: memref<4xi32>, %[[OUT:.+]]: memref<4xi32>)
// CHECK-NOT: gpu.memcpy
// CHECK: gpu.launch blocks(%{{.*}}) in (%{{.*}} = %[[ONE:.+]], %{{.*}} = %[[ONE]], %{{.*}} = %[[ONE]]) threads(%{{.*}}) in (%{{.*}} = %[[ONE]], %{{.*}} = %[[ONE]], %{{.*}} = %[[ONE]])
// CHECK-NEXT: scf.for
// CHECK: memref.load %[[LEN]]
// CHECK: cf.assert %{{.*}}, "length below 0"
// CHECK: scf.for
// CHECK: memref.load %[[LEN]]
// CHECK: cf.assert %{{.*}}, "length above 9"
// CHECK: gpu.terminator
// CHECK: gpu.launch
// CHECK: memref.store %{{.*}}, %[[OUT]]
// CHECK-NOT: gpu.memcpy
// CHECK: return
func.func @check(%len: memref<4xi32>) -> memref<4xi32> attributes {mha.device_resident} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0 : i32
  %nine = arith.constant 9 : i32
  scf.for %i = %c0 to %c4 step %c1 {
    %x = memref.load %len[%i] : memref<4xi32>
    %ok = arith.cmpi sge, %x, %zero : i32
    cf.assert %ok, "length below 0"
  }
  scf.for %i = %c0 to %c4 step %c1 {
    %x = memref.load %len[%i] : memref<4xi32>
    %ok = arith.cmpi sle, %x, %nine : i32
    cf.assert %ok, "length above 9"
  }
  %out = memref.alloc() : memref<4xi32>
  gpu.launch blocks(%b, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%t, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    %y = memref.load %len[%t] : memref<4xi32>
    memref.store %y, %out[%t] : memref<4xi32>
    gpu.terminator
  }
  return %out : memref<4xi32>
}

// -----

// A check outside any region moves too, with what its condition depends
// on (the load and constants cloned into the kernel); what is no such check stays on the
// host and reads a host copy: a loop that writes (a boolean mask made
// additive).

// CHECK-LABEL: func.func @host
// CHECK-SAME: (%[[MASK:.+]]: memref<4xi8>, %[[LEN:.+]]: memref<4xi32>, %[[OUT:.+]]: memref<4xf32>)
// CHECK: %[[COPY:.+]] = memref.alloc() : memref<4xi8>
// CHECK-NEXT: gpu.memcpy  %[[COPY]], %[[MASK]]
// CHECK-NOT: gpu.memcpy
// CHECK: scf.for
// CHECK: memref.load %[[COPY]]
// CHECK: memref.store
// CHECK: gpu.launch
// CHECK: memref.load %[[LEN]][%{{.*}}]
// CHECK-NEXT: arith.cmpi
// CHECK-NEXT: cf.assert %{{.*}}, "first length below 0"
// CHECK-NEXT: gpu.terminator
func.func @host(%mask: memref<4xi8>, %len: memref<4xi32>) -> memref<4xf32> attributes {mha.device_resident} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0 : i32
  %additive = memref.alloc() : memref<4xf32>
  scf.for %i = %c0 to %c4 step %c1 {
    %m = memref.load %mask[%i] : memref<4xi8>
    %f = arith.uitofp %m : i8 to f32
    memref.store %f, %additive[%i] : memref<4xf32>
  }
  %x = memref.load %len[%c0] : memref<4xi32>
  %ok = arith.cmpi sge, %x, %zero : i32
  cf.assert %ok, "first length below 0"
  %out = memref.alloc() : memref<4xf32>
  gpu.launch blocks(%b, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%t, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    %y = memref.load %additive[%t] : memref<4xf32>
    memref.store %y, %out[%t] : memref<4xf32>
    gpu.terminator
  }
  return %out : memref<4xf32>
}
