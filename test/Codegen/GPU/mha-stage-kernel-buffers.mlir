// RUN: mha-opt %s --split-input-file --verify-diagnostics --mha-stage-kernel-buffers | FileCheck %s

// Host buffers a kernel uses go through device copies of their run-time
// sizes: copied in before the launch, copied back after it only when the
// kernel writes them (through a view here), freed. Scalars and workgroup
// buffers are left alone.

// CHECK-LABEL: func.func @stage
// CHECK-SAME: (%[[IN:.+]]: memref<?x8xf32>, %[[OUT:.+]]: memref<4x8xf32>, %[[S:.+]]: f32)
// CHECK-DAG: %[[N:.+]] = memref.dim %[[IN]], %c0
// CHECK-DAG: %[[DIN:.+]] = gpu.alloc  (%[[N]]) : memref<?x8xf32>
// CHECK-DAG: gpu.memcpy  %[[DIN]], %[[IN]] :
// CHECK-DAG: %[[DOUT:.+]] = gpu.alloc  () : memref<4x8xf32>
// CHECK-DAG: gpu.memcpy  %[[DOUT]], %[[OUT]] :
// CHECK: gpu.launch
// CHECK:   memref.load %[[DIN]]
// CHECK:   arith.mulf %{{.*}}, %[[S]]
// CHECK:   memref.subview %[[DOUT]]
// CHECK: gpu.terminator
// CHECK-NOT: gpu.memcpy  %[[IN]],
// CHECK-DAG: gpu.memcpy  %[[OUT]], %[[DOUT]] :
// CHECK-DAG: gpu.dealloc  %[[DIN]] :
// CHECK-DAG: gpu.dealloc  %[[DOUT]] :
// CHECK: return
func.func @stage(%in: memref<?x8xf32>, %out: memref<4x8xf32>, %s: f32) {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  gpu.launch blocks(%b, %by, %bz) in (%gx = %c4, %gy = %c1, %gz = %c1)
             threads(%i, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1)
             workgroup(%row : memref<8xf32, #gpu.address_space<workgroup>>) {
    %x = memref.load %in[%b, %i] : memref<?x8xf32>
    %y = arith.mulf %x, %s : f32
    memref.store %y, %row[%i] : memref<8xf32, #gpu.address_space<workgroup>>
    %r = memref.subview %out[%b, 0] [1, 8] [1, 1] : memref<4x8xf32> to memref<8xf32, strided<[1], offset: ?>>
    memref.store %y, %r[%i] : memref<8xf32, strided<[1], offset: ?>>
    gpu.terminator
  }
  return
}

// -----

func.func @strided(%in: memref<8x8xf32>) {
  %c1 = arith.constant 1 : index
  %v = memref.subview %in[0, 0] [4, 8] [2, 1] : memref<8x8xf32> to memref<4x8xf32, strided<[16, 1]>>
  // expected-error @below {{'gpu.launch' op uses a view of layout strided<[16, 1]> of a host buffer; device copies are made of whole buffers of identity layout}}
  gpu.launch blocks(%b, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%i, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %x = memref.load %v[%b, %i] : memref<4x8xf32, strided<[16, 1]>>
    gpu.terminator
  }
  return
}

// -----

func.func @async(%in: memref<8xf32>) {
  %c1 = arith.constant 1 : index
  %t = gpu.wait async
  // expected-error @below {{'gpu.launch' op is asynchronous; stage its buffers before making it async}}
  %done = gpu.launch async [%t] blocks(%b, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%i, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %x = memref.load %in[%i] : memref<8xf32>
    gpu.terminator
  }
  gpu.wait [%done]
  return
}

// -----

// A buffer only kernels use lives in device memory from the start: no
// copies in or out.

// CHECK-LABEL: func.func @device_resident
// CHECK-SAME: (%[[OUT:.+]]: memref<8xf32>
// CHECK: %[[TMP:.+]] = gpu.alloc  () : memref<8xf32>
// CHECK-NOT: gpu.memcpy  %[[TMP]]
// CHECK: gpu.launch
// CHECK: gpu.launch
// CHECK: gpu.memcpy  %[[OUT]], %{{.*}} :
// CHECK: gpu.dealloc  %[[TMP]] :
// CHECK-NOT: memref.dealloc
func.func @device_resident(%out: memref<8xf32>, %x: f32) {
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %tmp = memref.alloc() : memref<8xf32>
  gpu.launch blocks(%b, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%i, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {
    memref.store %x, %tmp[%i] : memref<8xf32>
    gpu.terminator
  }
  gpu.launch blocks(%b, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%i, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {
    %y = memref.load %tmp[%i] : memref<8xf32>
    memref.store %y, %out[%i] : memref<8xf32>
    gpu.terminator
  }
  memref.dealloc %tmp : memref<8xf32>
  return
}

// -----

// A host buffer allocated for what the kernel computes (a result): nothing
// is in it before the launch, so it is not copied in, only back out. One the
// host writes first is copied in.

// CHECK-LABEL: func.func @fresh_result
// CHECK: %[[RES:.+]] = memref.alloc() : memref<8xf32>
// CHECK: %[[PRE:.+]] = memref.alloc() : memref<8xf32>
// CHECK: memref.store %{{.+}}, %[[PRE]]
// CHECK: %[[DPRE:.+]] = gpu.alloc  () : memref<8xf32>
// CHECK-NEXT: gpu.memcpy  %[[DPRE]], %[[PRE]] :
// CHECK-NEXT: %[[DRES:.+]] = gpu.alloc  () : memref<8xf32>
// CHECK-NEXT: gpu.launch
// CHECK: memref.store %{{.+}}, %[[DRES]]
// CHECK-DAG: gpu.memcpy  %[[RES]], %[[DRES]] :
// CHECK-DAG: gpu.memcpy  %[[PRE]], %[[DPRE]] :
// CHECK: return %[[RES]], %[[PRE]]
func.func @fresh_result(%x: f32) -> (memref<8xf32>, memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %res = memref.alloc() : memref<8xf32>
  %pre = memref.alloc() : memref<8xf32>
  memref.store %x, %pre[%c0] : memref<8xf32>
  gpu.launch blocks(%b, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%i, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {
    %y = memref.load %pre[%c0] : memref<8xf32>
    memref.store %y, %res[%i] : memref<8xf32>
    memref.store %y, %pre[%i] : memref<8xf32>
    gpu.terminator
  }
  return %res, %pre : memref<8xf32>, memref<8xf32>
}

// -----

// A host buffer that nothing writes, read by several launches of a block
// (a layer's input, read by each projection): one device copy for all of
// them, freed after the last. One that only kernels use, all in one block
// (a KV cache a step appends to, then reads), also has one device copy,
// copied in before the first launch and back after the last.

// CHECK-LABEL: func.func @shared_input
// CHECK-SAME: (%[[X:.+]]: memref<8xf32>, %[[Y:.+]]: memref<8xf32>, %[[OUT:.+]]: memref<8xf32>)
// CHECK: %[[DX:.+]] = gpu.alloc  () : memref<8xf32>
// CHECK-NEXT: gpu.memcpy  %[[DX]], %[[X]] :
// CHECK: %[[DY:.+]] = gpu.alloc  () : memref<8xf32>
// CHECK-NEXT: gpu.memcpy  %[[DY]], %[[Y]] :
// CHECK: gpu.launch
// CHECK: memref.load %[[DX]]
// CHECK: memref.store %{{.*}}, %[[DY]]
// CHECK-NOT: gpu.memcpy  %{{.+}}, %[[X]] :
// CHECK-NOT: gpu.memcpy  %{{.+}}, %[[Y]] :
// CHECK-NOT: gpu.memcpy  %[[Y]],
// CHECK-NOT: gpu.dealloc  %[[DX]] :
// CHECK: gpu.launch
// CHECK: memref.load %[[DX]]
// CHECK: memref.load %[[DY]]
// CHECK: gpu.terminator
// CHECK-DAG: gpu.dealloc  %[[DX]] :
// CHECK-DAG: gpu.memcpy  %[[Y]], %[[DY]] :
// CHECK-DAG: gpu.dealloc  %[[DY]] :
// CHECK-NOT: gpu.dealloc  %[[DX]] :
// CHECK: return
func.func @shared_input(%x: memref<8xf32>, %y: memref<8xf32>, %out: memref<8xf32>) {
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  gpu.launch blocks(%b, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%i, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {
    %v = memref.load %x[%i] : memref<8xf32>
    memref.store %v, %y[%i] : memref<8xf32>
    gpu.terminator
  }
  gpu.launch blocks(%b, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%i, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {
    %v = memref.load %x[%i] : memref<8xf32>
    %w = memref.load %y[%i] : memref<8xf32>
    %s = arith.addf %v, %w : f32
    memref.store %s, %out[%i] : memref<8xf32>
    gpu.terminator
  }
  return
}

// -----

// A buffer a kernel writes and the host reads between two launches: copied
// around each launch, so the host reads what the first wrote.

// CHECK-LABEL: func.func @host_between
// CHECK-SAME: (%[[Y:.+]]: memref<8xf32>, %[[OUT:.+]]: memref<8xf32>)
// CHECK: %[[D1:.+]] = gpu.alloc  () : memref<8xf32>
// CHECK-NEXT: gpu.memcpy  %[[D1]], %[[Y]] :
// CHECK: gpu.launch
// CHECK: gpu.memcpy  %[[Y]], %[[D1]] :
// CHECK: gpu.dealloc  %[[D1]] :
// CHECK: memref.load %[[Y]]
// CHECK: %[[D2:.+]] = gpu.alloc  () : memref<8xf32>
// CHECK-NEXT: gpu.memcpy  %[[D2]], %[[Y]] :
// CHECK: gpu.launch
// CHECK: memref.load %[[D2]]
func.func @host_between(%y: memref<8xf32>, %out: memref<8xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %one = arith.constant 1.0 : f32
  gpu.launch blocks(%b, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%i, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {
    memref.store %one, %y[%i] : memref<8xf32>
    gpu.terminator
  }
  %first = memref.load %y[%c0] : memref<8xf32>
  gpu.launch blocks(%b, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%i, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {
    %w = memref.load %y[%i] : memref<8xf32>
    memref.store %w, %out[%i] : memref<8xf32>
    gpu.terminator
  }
  return %first : f32
}
