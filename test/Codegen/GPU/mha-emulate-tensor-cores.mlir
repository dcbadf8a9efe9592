// RUN: mha-opt %s --split-input-file --verify-diagnostics --mha-emulate-tensor-cores | FileCheck %s

// Two ldmatrix (transposed and not) feeding two mma that share their A
// operand: the row addresses go through one buffer slot each in phase 0,
// the mma operands through the slots of phase 1 (A written once for both);
// a barrier ends each phase and one follows the last reads. The result is
// read back as scalars: no vector and no nvgpu op is left.

#wg = #gpu.address_space<workgroup>

// CHECK-LABEL: func.func @mma_after_ldmatrix
// CHECK:       gpu.launch
// CHECK-SAME:    workgroup(%[[TILE:.*]] : memref<16x24xf16, #gpu.address_space<workgroup>>,
// CHECK-SAME:      %[[A:.*]] : memref<2x1x2x16x16xf16, #gpu.address_space<workgroup>>,
// CHECK-SAME:      %[[B:.*]] : memref<2x2x2x8x16xf16, #gpu.address_space<workgroup>>,
// CHECK-SAME:      %[[ADDR:.*]] : memref<2x2x2x32x2xi32, #gpu.address_space<workgroup>>)
// CHECK:         %[[X:.*]] = gpu.thread_id x
// CHECK:         %[[WARP:.*]] = arith.divui %[[X]], %[[C32:.*]] : index
// CHECK:         %[[LANE:.*]] = arith.remui %[[X]], %[[C32]] : index
// CHECK:         %[[G:.*]] = arith.divui %[[LANE]], %{{.*}} : index
// CHECK:         %[[T2:.*]] = arith.muli
// Phase 0: each lane's row address of both ldmatrix.
// CHECK:         memref.store %{{.*}}, %[[ADDR]][%[[P0:.*]], %[[P0]], %[[WARP]], %[[LANE]], %[[P0]]]
// CHECK:         memref.store %{{.*}}, %[[ADDR]][%[[P0]], %[[P0]], %[[WARP]], %[[LANE]], %[[P1:.*]]]
// CHECK:         memref.store %{{.*}}, %[[ADDR]][%[[P0]], %[[P1]], %[[WARP]], %[[LANE]], %[[P0]]]
// CHECK:         memref.store %{{.*}}, %[[ADDR]][%[[P0]], %[[P1]], %[[WARP]], %[[LANE]], %[[P1]]]
// CHECK-NEXT:    gpu.barrier
// The transposed load: element j of matrix 0 from the row lane t2 + j gave,
// column g.
// CHECK:         %[[R0:.*]] = memref.load %[[ADDR]][%[[P0]], %[[P0]], %[[WARP]], %[[T2]], %[[P0]]]
// CHECK:         %[[ROW0:.*]] = arith.index_cast %[[R0]] : i32 to index
// CHECK:         %[[C0:.*]] = memref.load %[[ADDR]][%[[P0]], %[[P0]], %[[WARP]], %[[T2]], %[[P1]]]
// CHECK:         %[[COL0:.*]] = arith.index_cast %[[C0]] : i32 to index
// CHECK:         %[[COLG:.*]] = arith.addi %[[COL0]], %[[G]] : index
// CHECK:         memref.load %[[TILE]][%[[ROW0]], %[[COLG]]]
// The other: element j of matrix 0 from the row lane g gave, column t2 + j.
// CHECK:         memref.load %[[ADDR]][%[[P0]], %[[P1]], %[[WARP]], %[[G]], %[[P0]]]
// Phase 1: A once (8 elements), both B operands (4 each).
// CHECK-COUNT-8: memref.store %{{.*}}, %[[A]][%[[P1]], %[[P0]], %[[WARP]],
// CHECK-COUNT-4: memref.store %{{.*}}, %[[B]][%[[P1]], %[[P0]], %[[WARP]], %[[G]],
// CHECK-COUNT-4: memref.store %{{.*}}, %[[B]][%[[P1]], %[[P1]], %[[WARP]], %[[G]],
// CHECK-NEXT:    gpu.barrier
// D = A B + C over k, the second mma's C the first's D.
// CHECK:         %[[D0:.*]]:4 = scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32)
// CHECK:           memref.load %[[A]][%[[P1]], %[[P0]], %[[WARP]], %[[G]], %[[K]]]
// CHECK:           memref.load %[[B]][%[[P1]], %[[P0]], %[[WARP]], %[[T2]], %[[K]]]
// CHECK:         scf.for {{.*}} iter_args(%{{.*}} = %[[D0]]#0, %{{.*}} = %[[D0]]#1, %{{.*}} = %[[D0]]#2, %{{.*}} = %[[D0]]#3)
// CHECK:           memref.load %[[B]][%[[P1]], %[[P1]], %[[WARP]], %[[T2]], %{{.*}}]
// CHECK:         gpu.barrier
// CHECK-NOT:     gpu.barrier
// CHECK:         gpu.terminator
// CHECK-NOT:   nvgpu.
// CHECK-NOT:   vector<
func.func @mma_after_ldmatrix(%out: memref<16x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1)
             workgroup(%tile : memref<16x24xf16, #wg>) {
    %lane = arith.remui %tx, %c32 : index
    %row = arith.remui %lane, %c16 : index
    %a = arith.constant dense<1.0> : vector<4x2xf16>
    %acc = arith.constant dense<0.0> : vector<2x2xf32>
    %b0 = nvgpu.ldmatrix %tile[%row, %c0] {numTiles = 2 : i32, transpose = true}
        : memref<16x24xf16, #wg> -> vector<2x2xf16>
    %b1 = nvgpu.ldmatrix %tile[%row, %c8] {numTiles = 2 : i32, transpose = false}
        : memref<16x24xf16, #wg> -> vector<2x2xf16>
    %d0 = nvgpu.mma.sync(%a, %b0, %acc) {mmaShape = [16, 8, 16]}
        : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
    %d1 = nvgpu.mma.sync(%a, %b1, %d0) {mmaShape = [16, 8, 16]}
        : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
    %r = vector.extract %d1[0] : vector<2xf32> from vector<2x2xf32>
    vector.store %r, %out[%row, %c0] : memref<16x8xf32>, vector<2xf32>
    gpu.terminator
  }
  return
}

// -----

// cp.async copies done at once, element by element, zero past srcElements
// where it is given; the group tokens, carried through the loop, gone.

#wg = #gpu.address_space<workgroup>

// CHECK-LABEL: func.func @copies
// CHECK-SAME:    (%[[SRC:.*]]: memref<64x16xf16>, %[[N:.*]]: index)
// CHECK:       gpu.launch
// CHECK-SAME:    workgroup(%[[TILE:.*]] : memref<16x24xf16, #gpu.address_space<workgroup>>)
// CHECK:         %[[ROW:.*]] = arith.remui
// CHECK:         %[[IN:.*]] = arith.cmpi sgt, %[[N]], %{{.*}} : index
// CHECK:         %[[V:.*]] = scf.if %[[IN]] -> (f16) {
// CHECK:           %[[L:.*]] = memref.load %[[SRC]][%[[ROW]], %{{.*}}]
// CHECK:           scf.yield %[[L]] : f16
// CHECK:         } else {
// CHECK:           scf.yield %{{.*}} : f16
// CHECK:         }
// CHECK:         memref.store %[[V]], %[[TILE]][%[[ROW]], %{{.*}}]
// CHECK-COUNT-7: scf.if
// CHECK:         scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-COUNT-8:   memref.load %[[SRC]][%[[K]],
// CHECK:         }
// CHECK-NEXT:    gpu.terminator
// CHECK-NOT:   nvgpu
func.func @copies(%src: memref<64x16xf16>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1)
             workgroup(%tile : memref<16x24xf16, #wg>) {
    %row = arith.remui %tx, %c8 : index
    %t0 = nvgpu.device_async_copy %src[%row, %c0], %tile[%row, %c0], 8, %n {bypassL1}
        : memref<64x16xf16> to memref<16x24xf16, #wg>
    %g0 = nvgpu.device_async_create_group %t0
    %last = scf.for %k = %c0 to %c4 step %c1 iter_args(%g = %g0) -> (!nvgpu.device.async.token) {
      nvgpu.device_async_wait %g {numGroups = 0 : i32}
      %t1 = nvgpu.device_async_copy %src[%k, %c8], %tile[%row, %c8], 8
          : memref<64x16xf16> to memref<16x24xf16, #wg>
      %g1 = nvgpu.device_async_create_group %t1
      scf.yield %g1 : !nvgpu.device.async.token
    }
    nvgpu.device_async_wait %last {numGroups = 0 : i32}
    gpu.terminator
  }
  return
}

// -----

// TF32's m16n8k8 (the kernels round its f32 operands first): f32 buffers,
// A's 4 registers at rows g, g + 8 and columns t, t + 4, B's 2 at rows t
// and t + 4 of column g (stored transposed), a k loop of 8.
// CHECK-LABEL: func.func @tf32
// CHECK:       gpu.launch
// CHECK-SAME:    workgroup(%[[A:.*]] : memref<2x1x1x16x16xf32, #gpu.address_space<workgroup>>,
// CHECK-SAME:      %[[B:.*]] : memref<2x1x1x8x16xf32, #gpu.address_space<workgroup>>)
// CHECK:         %[[LANE:.*]] = arith.remui
// CHECK:         %[[G:.*]] = arith.divui %[[LANE]]
// CHECK:         %[[T:.*]] = arith.remui %[[LANE]]
// CHECK-COUNT-4: memref.store %{{.*}}, %[[A]]
// CHECK-COUNT-2: memref.store %{{.*}}, %[[B]][%{{.*}}, %{{.*}}, %{{.*}}, %[[G]],
// CHECK-NEXT:    gpu.barrier
// CHECK:         %[[OPAQUE:.*]] = arith.divui %{{.*}}, %c1048576 : index
// CHECK:         %[[K8:.*]] = arith.addi %[[OPAQUE]], %c8{{.*}} : index
// CHECK:         scf.for %{{.*}} = %{{.*}} to %[[K8]] step
// CHECK-NOT:       arith.extf
// CHECK:         gpu.terminator
// CHECK-NOT:   nvgpu.
func.func @tf32(%out: memref<2x2xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %x = arith.index_cast %tx : index to i32
    %f = arith.sitofp %x : i32 to f32
    %a = vector.broadcast %f : f32 to vector<4x1xf32>
    %b = arith.constant dense<0.5> : vector<2x1xf32>
    %c = arith.constant dense<0.0> : vector<2x2xf32>
    %d = nvgpu.mma.sync(%a, %b, %c) {mmaShape = [16, 8, 8], tf32Enabled}
        : (vector<4x1xf32>, vector<2x1xf32>, vector<2x2xf32>) -> vector<2x2xf32>
    %e = vector.extract %d[1, 1] : f32 from vector<2x2xf32>
    memref.store %e, %out[%c0, %c0] : memref<2x2xf32>
    gpu.terminator
  }
  return
}

// -----

// What it does not emulate stops it, naming the op.

func.func @tf32_k4(%a: vector<2x1xf32>, %b: vector<1x1xf32>, %c: vector<2x2xf32>) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    // expected-error @below {{cannot be emulated: only m16n8k16 with f16 operands and m16n8k8 with TF32 ones, f32 accumulators, are}}
    %d = nvgpu.mma.sync(%a, %b, %c) {mmaShape = [16, 8, 4], tf32Enabled}
        : (vector<2x1xf32>, vector<1x1xf32>, vector<2x2xf32>) -> vector<2x2xf32>
    gpu.terminator
  }
  return
}

// -----

func.func @mixed(%a: vector<4x1xf32>, %b: vector<2x1xf32>, %c: vector<2x2xf32>,
                 %h: vector<4x2xf16>, %hb: vector<2x2xf16>) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %d = nvgpu.mma.sync(%a, %b, %c) {mmaShape = [16, 8, 8], tf32Enabled}
        : (vector<4x1xf32>, vector<2x1xf32>, vector<2x2xf32>) -> vector<2x2xf32>
    // expected-error @below {{cannot be emulated: a kernel with both f16 and TF32 mma}}
    %e = nvgpu.mma.sync(%h, %hb, %d) {mmaShape = [16, 8, 16]}
        : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
    gpu.terminator
  }
  return
}

// -----

#wg = #gpu.address_space<workgroup>
func.func @ldmatrix_i8(%i: index) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1)
             workgroup(%tile : memref<16x32xi8, #wg>) {
    // expected-error @below {{cannot be emulated: only matrices of 16-bit elements are}}
    %f = nvgpu.ldmatrix %tile[%i, %i] {numTiles = 4 : i32, transpose = false}
        : memref<16x32xi8, #wg> -> vector<4x4xi8>
    gpu.terminator
  }
  return
}

// -----

// An exchange under a conditional: not every thread would reach its
// barriers.

#wg = #gpu.address_space<workgroup>
func.func @conditional(%i: index, %cond: i1) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1)
             workgroup(%tile : memref<16x24xf16, #wg>) {
    scf.if %cond {
      // expected-error @below {{cannot be emulated inside 'scf.if': its exchange between lanes needs every thread of the workgroup at its barriers}}
      %f = nvgpu.ldmatrix %tile[%i, %i] {numTiles = 4 : i32, transpose = false}
          : memref<16x24xf16, #wg> -> vector<4x2xf16>
    }
    gpu.terminator
  }
  return
}

// -----

// Threads that are not whole warps.

#wg = #gpu.address_space<workgroup>
func.func @partial_warp(%i: index) {
  %c1 = arith.constant 1 : index
  %c48 = arith.constant 48 : index
  // expected-error @below {{cannot have its tensor-core ops emulated: it needs a constant number of threads in x that is a multiple of 32 (whole warps), and one in y and z}}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c48, %sy = %c1, %sz = %c1)
             workgroup(%tile : memref<16x24xf16, #wg>) {
    %f = nvgpu.ldmatrix %tile[%i, %i] {numTiles = 4 : i32, transpose = false}
        : memref<16x24xf16, #wg> -> vector<4x2xf16>
    gpu.terminator
  }
  return
}

// -----

// A group token carried by a conditional, which the emulation does not
// take apart.

#wg = #gpu.address_space<workgroup>
func.func @token_through_if(%src: memref<64x16xf16>, %i: index, %cond: i1) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  // expected-error @below {{cannot have its tensor-core ops emulated: a cp.async token is still carried through its control flow}}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1)
             workgroup(%tile : memref<16x24xf16, #wg>) {
    %g = scf.if %cond -> (!nvgpu.device.async.token) {
      %t = nvgpu.device_async_copy %src[%i, %i], %tile[%i, %i], 8
          : memref<64x16xf16> to memref<16x24xf16, #wg>
      %g0 = nvgpu.device_async_create_group %t
      scf.yield %g0 : !nvgpu.device.async.token
    } else {
      %t = nvgpu.device_async_copy %src[%i, %i], %tile[%i, %c1], 8
          : memref<64x16xf16> to memref<16x24xf16, #wg>
      %g1 = nvgpu.device_async_create_group %t
      scf.yield %g1 : !nvgpu.device.async.token
    }
    nvgpu.device_async_wait %g
    gpu.terminator
  }
  return
}

// -----

// A vector op the kernel's vectors cannot be turned into scalars through.

#wg = #gpu.address_space<workgroup>
func.func @no_scalar_form(%i: index, %out: memref<4xf32>) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  // expected-error @below {{cannot have its tensor-core ops emulated: a vector op of the kernel has no scalar form here}}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1)
             workgroup(%tile : memref<16x24xf16, #wg>) {
    %f = nvgpu.ldmatrix %tile[%i, %i] {numTiles = 4 : i32, transpose = false}
        : memref<16x24xf16, #wg> -> vector<4x2xf16>
    %e = arith.extf %f : vector<4x2xf16> to vector<4x2xf32>
    %r = vector.extract %e[0] : vector<2xf32> from vector<4x2xf32>
    // expected-error @below {{failed to legalize operation 'vector.reduction'}}
    %s = vector.reduction <add>, %r : vector<2xf32> into f32
    memref.store %s, %out[%i] : memref<4xf32>
    gpu.terminator
  }
  return
}
