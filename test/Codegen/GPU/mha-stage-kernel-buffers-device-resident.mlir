// RUN: mha-opt %s --split-input-file --verify-diagnostics --mha-stage-kernel-buffers | FileCheck %s

// A function marked mha.device_resident takes device buffers: its arguments
// are used by the kernel as they are (no copies), its result becomes a new
// trailing argument that the kernel writes (the buffer it allocated is
// gone, the function returns nothing), the result's dynamic size is checked
// against the caller's buffer when it runs. A buffer only the kernels use
// is device memory as in any function. mha.device_results says where the
// result went.

// CHECK-LABEL: func.func @resident
// CHECK-SAME: (%[[IN:.+]]: memref<?x8xf32>, %[[OUT:.+]]: memref<?x8xf32>)
// CHECK-SAME: attributes {mha.device_resident, mha.device_results = array<i64: -1>}
// CHECK-NOT: gpu.memcpy
// CHECK: %[[N:.+]] = memref.dim %[[IN]], %c0
// CHECK-DAG: %[[TMP:.+]] = gpu.alloc  (%[[N]]) : memref<?x8xf32>
// CHECK-DAG: %[[GIVEN:.+]] = memref.dim %[[OUT]], %c0
// CHECK: %[[SAME:.+]] = arith.cmpi eq, %[[GIVEN]], %[[N]]
// CHECK: cf.assert %[[SAME]], "mha: the device buffer given for result 0 of @resident differs from the result in dimension 0"
// CHECK-NOT: gpu.memcpy
// CHECK: gpu.launch
// CHECK:   memref.load %[[IN]]
// CHECK:   memref.store %{{.*}}, %[[TMP]]
// CHECK:   memref.store %{{.*}}, %[[OUT]]
// CHECK: gpu.terminator
// CHECK-NOT: gpu.memcpy
// CHECK: gpu.dealloc  %[[TMP]]
// CHECK: return{{$}}
func.func @resident(%in: memref<?x8xf32>) -> memref<?x8xf32> attributes {mha.device_resident} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %n = memref.dim %in, %c0 : memref<?x8xf32>
  %tmp = memref.alloc(%n) : memref<?x8xf32>
  %out = memref.alloc(%n) : memref<?x8xf32>
  gpu.launch blocks(%b, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
             threads(%i, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {
    %x = memref.load %in[%b, %i] : memref<?x8xf32>
    memref.store %x, %tmp[%b, %i] : memref<?x8xf32>
    memref.store %x, %out[%b, %i] : memref<?x8xf32>
    gpu.terminator
  }
  memref.dealloc %tmp : memref<?x8xf32>
  return %out : memref<?x8xf32>
}

// -----

// A result that is an argument (a KV cache updated in place) needs no
// buffer: the function returns nothing, and the argument is written by
// the kernel where it is.

// CHECK-LABEL: func.func @in_place
// CHECK-SAME: (%[[CACHE:.+]]: memref<4x8xf32>)
// CHECK-SAME: mha.device_results = array<i64: 0>
// CHECK-NOT: gpu.memcpy
// CHECK: gpu.launch
// CHECK:   memref.store %{{.*}}, %[[CACHE]]
// CHECK-NOT: gpu.memcpy
// CHECK: return{{$}}
func.func @in_place(%cache: memref<4x8xf32>) -> memref<4x8xf32> attributes {mha.device_resident} {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  gpu.launch blocks(%b, %by, %bz) in (%gx = %c4, %gy = %c1, %gz = %c1)
             threads(%i, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {
    memref.store %zero, %cache[%b, %i] : memref<4x8xf32>
    gpu.terminator
  }
  return %cache : memref<4x8xf32>
}

// -----

// Host code that reads an argument (a run-time check of key lengths)
// reads a host copy of it, downloaded when the function starts; a view the
// host reads is taken of the copy too (the kernel keeps the argument's).

// CHECK-LABEL: func.func @host_read
// CHECK-SAME: (%[[LEN:.+]]: memref<4xi32>, %[[OUT:.+]]: memref<4xi32>)
// CHECK: %[[COPY:.+]] = memref.alloc() : memref<4xi32>
// CHECK-NEXT: gpu.memcpy  %[[COPY]], %[[LEN]] : memref<4xi32>, memref<4xi32>
// CHECK-DAG: %[[VIEW:.+]] = memref.subview %[[LEN]][1] [2] [1]
// CHECK-DAG: %[[VIEWCOPY:.+]] = memref.subview %[[COPY]][1] [2] [1]
// CHECK: %[[X:.+]] = memref.load %[[VIEWCOPY]][%c0]
// CHECK: cf.assert
// CHECK: gpu.launch
// CHECK:   memref.load %[[VIEW]]
// CHECK:   memref.store %{{.*}}, %[[OUT]]
// CHECK: gpu.terminator
// CHECK: memref.dealloc %[[COPY]]
// CHECK-NEXT: return
func.func @host_read(%len: memref<4xi32>) -> memref<4xi32> attributes {mha.device_resident} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0 : i32
  %v = memref.subview %len[1] [2] [1] : memref<4xi32> to memref<2xi32, strided<[1], offset: 1>>
  %x = memref.load %v[%c0] : memref<2xi32, strided<[1], offset: 1>>
  %ok = arith.cmpi sge, %x, %zero : i32
  cf.assert %ok, "length below 0"
  %out = memref.alloc() : memref<4xi32>
  gpu.launch blocks(%b, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%i, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %y = memref.load %v[%c0] : memref<2xi32, strided<[1], offset: 1>>
    memref.store %y, %out[%c0] : memref<4xi32>
    gpu.terminator
  }
  return %out : memref<4xi32>
}

// -----

// Nor one that a kernel writes (a result, read by the host after the
// kernel): a copy taken when the function starts would be stale.

// expected-note @below {{the function}}
func.func @host_read_after_kernel() -> memref<4xf32> attributes {mha.device_resident} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f32
  %out = memref.alloc() : memref<4xf32>
  gpu.launch blocks(%b, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%i, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    memref.store %one, %out[%c0] : memref<4xf32>
    gpu.terminator
  }
  // expected-error @below {{'memref.load' op runs on the host and reads argument 0 of @host_read_after_kernel, which is marked 'mha.device_resident' and which a kernel writes: its buffers are device memory, and a host copy would not see the kernel's writes}}
  %x = memref.load %out[%c0] : memref<4xf32>
  %ok = arith.cmpf oeq, %x, %one : f32
  cf.assert %ok, "not written"
  return %out : memref<4xf32>
}

// -----

// Host code cannot write device memory (a KV cache written by host loops).

// expected-note @below {{the function}}
func.func @host_copy(%in: memref<4xf32>, %out: memref<4xf32>) attributes {mha.device_resident} {
  // expected-error @below {{'memref.copy' op runs on the host and may write argument 1 of @host_copy, which is marked 'mha.device_resident': its buffers are device memory, which only kernels may write}}
  memref.copy %in, %out : memref<4xf32> to memref<4xf32>
  return
}

// -----

// Through a view too (the host write of a result buffer that became an
// argument).

// expected-note @below {{the function}}
func.func @host_write(%x: f32) -> memref<4xf32> attributes {mha.device_resident} {
  %c0 = arith.constant 0 : index
  %out = memref.alloc() : memref<4xf32>
  %v = memref.subview %out[1] [2] [1] : memref<4xf32> to memref<2xf32, strided<[1], offset: 1>>
  // expected-error @below {{'memref.store' op runs on the host and may write argument 1 of @host_write}}
  memref.store %x, %v[%c0] : memref<2xf32, strided<[1], offset: 1>>
  return %out : memref<4xf32>
}

// -----

// A result that is a view cannot be written into a buffer of the caller.

func.func @view_result(%in: memref<4x8xf32>) -> memref<8xf32, strided<[1], offset: 8>> attributes {mha.device_resident} {
  %v = memref.subview %in[1, 0] [1, 8] [1, 1] : memref<4x8xf32> to memref<8xf32, strided<[1], offset: 8>>
  // expected-error @below {{'func.return' op returns result 0 of a function marked 'mha.device_resident' that is neither an argument nor a buffer of its own (identity layout, allocated in the function's body, returned once): it cannot be written into a device buffer of the caller}}
  return %v : memref<8xf32, strided<[1], offset: 8>>
}

// -----

// Nor one buffer returned twice.

func.func @twice() -> (memref<4xf32>, memref<4xf32>) attributes {mha.device_resident} {
  %out = memref.alloc() : memref<4xf32>
  // expected-error @below {{returns result 0 of a function marked 'mha.device_resident' that is neither an argument nor a buffer of its own}}
  return %out, %out : memref<4xf32>, memref<4xf32>
}

// -----

// expected-error @below {{'func.func' op is marked 'mha.device_resident' but has more than one block: its results cannot be written into the caller's device buffers}}
func.func @blocks(%c: i1) -> memref<4xf32> attributes {mha.device_resident} {
  %out = memref.alloc() : memref<4xf32>
  cf.cond_br %c, ^a, ^b
^a:
  return %out : memref<4xf32>
^b:
  return %out : memref<4xf32>
}
