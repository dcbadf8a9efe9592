// RUN: mha-opt %s --split-input-file --verify-diagnostics --mha-emulate-tensor-cores --canonicalize --cse | FileCheck %s

// The subgroup matrix ops of the cooperative-matrix kernel, emulated: each
// 16 x 16 matrix is 8 elements a lane, the 2 x 4 block at rows 2 (l / 4),
// columns 4 (l % 4) of lane l of its subgroup (thread / 32). A product writes
// the lane's elements of A and B into its subgroup's part of two workgroup
// buffers, a barrier, reads 2 rows of A and 4 columns of B (16 each), 128
// FMAs in f32, a barrier. The loop carries the accumulator as 8 scalars;
// gpu.subgroup_id and gpu.lane_id become thread / 32 and thread % 32.

#wg = #gpu.address_space<workgroup>

// CHECK-LABEL: func.func @product_in_loop
// CHECK:       gpu.launch
// CHECK-SAME:    workgroup(%[[TILE:.*]] : memref<32x24xf16, #gpu.address_space<workgroup>>,
// CHECK-SAME:      %[[OUT:.*]] : memref<32x20xf32, #gpu.address_space<workgroup>>,
// CHECK-SAME:      %[[A:.*]] : memref<2x16x16xf16, #gpu.address_space<workgroup>>,
// CHECK-SAME:      %[[B:.*]] : memref<2x16x16xf16, #gpu.address_space<workgroup>>)
// CHECK:         %[[X:.*]] = gpu.thread_id x
// CHECK:         %[[SG:.*]] = arith.divui %[[X]], %[[C32:.*]] : index
// CHECK:         %[[LANE:.*]] = arith.remui %[[X]], %[[C32]] : index
// CHECK:         %[[ROW:.*]] = arith.muli %[[SG]], %{{.*}} : index
// CHECK:         scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (f32, f32, f32, f32, f32, f32, f32, f32)
// CHECK-COUNT-16: memref.load %[[TILE]]
// CHECK-COUNT-8:  memref.store %{{.*}}, %[[A]][%[[SG]],
// CHECK-COUNT-8:  memref.store %{{.*}}, %[[B]][%[[SG]],
// CHECK-NEXT:    gpu.barrier
// Per k: 2 elements of A (rows), 4 of B (columns), widened to f32.
// CHECK:         memref.load %[[A]][%[[SG]], %{{.*}}, %c0]
// CHECK-NEXT:    arith.extf
// CHECK:         memref.load %[[A]][%[[SG]], %{{.*}}, %c0]
// CHECK-NEXT:    arith.extf
// CHECK-NEXT:    memref.load %[[B]][%[[SG]], %c0, %{{.*}}]
// CHECK-NEXT:    arith.extf
// CHECK-NEXT:    memref.load %[[B]][%[[SG]], %c0, %{{.*}}]
// CHECK-NEXT:    arith.extf
// CHECK-NEXT:    memref.load %[[B]][%[[SG]], %c0, %{{.*}}]
// CHECK-NEXT:    arith.extf
// CHECK-NEXT:    memref.load %[[B]][%[[SG]], %c0, %{{.*}}]
// CHECK-NEXT:    arith.extf
// CHECK-NEXT:    memref.load %[[A]][%[[SG]], %{{.*}}, %c1]
// CHECK-COUNT-128: math.fma
// CHECK-NOT:     math.fma
// CHECK:         gpu.barrier
// CHECK:         scf.yield
// CHECK-COUNT-8: memref.store %{{.*}}, %[[OUT]]
// CHECK-NOT:     gpu.subgroup_mma
// CHECK-NOT:     vector.
func.func @product_in_loop(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1)
             workgroup(%tile : memref<32x24xf16, #wg>, %out : memref<32x20xf32, #wg>) {
    %sg = gpu.subgroup_id : index
    %row = arith.muli %sg, %c16 : index
    %init = gpu.subgroup_mma_constant_matrix %zero : !gpu.mma_matrix<16x16xf32, "COp">
    %acc = scf.for %i = %c0 to %n step %c1 iter_args(%c = %init) -> (!gpu.mma_matrix<16x16xf32, "COp">) {
      %a = gpu.subgroup_mma_load_matrix %tile[%row, %c0] {leadDimension = 24 : index} : memref<32x24xf16, #wg> -> !gpu.mma_matrix<16x16xf16, "AOp">
      %b = gpu.subgroup_mma_load_matrix %tile[%c0, %c0] {leadDimension = 24 : index, transpose} : memref<32x24xf16, #wg> -> !gpu.mma_matrix<16x16xf16, "BOp">
      %d = gpu.subgroup_mma_compute %a, %b, %c : !gpu.mma_matrix<16x16xf16, "AOp">, !gpu.mma_matrix<16x16xf16, "BOp"> -> !gpu.mma_matrix<16x16xf32, "COp">
      scf.yield %d : !gpu.mma_matrix<16x16xf32, "COp">
    }
    gpu.subgroup_mma_store_matrix %acc, %out[%row, %c0] {leadDimension = 20 : index} : !gpu.mma_matrix<16x16xf32, "COp">, memref<32x20xf32, #wg>
    gpu.terminator
  }
  return
}

// -----

// A row-major load: the lane's element (r, c) from (row + r, col + c); a
// transposed one from (row + c, col + r); an elementwise product per element.

#wg = #gpu.address_space<workgroup>

// CHECK-LABEL: func.func @load_layouts
// CHECK:         %[[X:.*]] = gpu.thread_id x
// CHECK:         %[[LANE:.*]] = arith.remui %[[X]], %{{.*}} : index
// CHECK:         %[[Q:.*]] = arith.divui %[[LANE]], %[[C4:.*]] : index
// CHECK:         %[[R:.*]] = arith.muli %[[Q]], %{{.*}} : index
// CHECK:         %[[M:.*]] = arith.remui %[[LANE]], %[[C4]] : index
// CHECK:         %[[C:.*]] = arith.muli %[[M]], %[[C4]] : index
// CHECK:         memref.load %{{.*}}[%[[R]], %[[C]]]
// CHECK:         %[[C1:.*]] = arith.addi %[[C]], %{{.*}} : index
// CHECK:         memref.load %{{.*}}[%[[R]], %[[C1]]]
// CHECK:         %[[R1:.*]] = arith.addi %[[R]], %{{.*}} : index
// CHECK-NEXT:    memref.load %{{.*}}[%[[R1]], %[[C]]]
// CHECK-COUNT-3: memref.load
// CHECK-NEXT:    memref.load %{{.*}}[%[[C]], %[[R]]]
// CHECK-NEXT:    memref.load %{{.*}}[%[[C1]], %[[R]]]
// CHECK-COUNT-6: memref.load
// CHECK-COUNT-8: arith.mulf %{{.*}}, %{{.*}} : f32
func.func @load_layouts() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1)
             workgroup(%tile : memref<16x20xf32, #wg>) {
    %x = gpu.subgroup_mma_load_matrix %tile[%c0, %c0] {leadDimension = 20 : index} : memref<16x20xf32, #wg> -> !gpu.mma_matrix<16x16xf32, "COp">
    %y = gpu.subgroup_mma_load_matrix %tile[%c0, %c0] {leadDimension = 20 : index, transpose} : memref<16x20xf32, #wg> -> !gpu.mma_matrix<16x16xf32, "COp">
    %z = gpu.subgroup_mma_elementwise mulf %x, %y : (!gpu.mma_matrix<16x16xf32, "COp">, !gpu.mma_matrix<16x16xf32, "COp">) -> !gpu.mma_matrix<16x16xf32, "COp">
    gpu.subgroup_mma_store_matrix %z, %tile[%c0, %c0] {leadDimension = 20 : index} : !gpu.mma_matrix<16x16xf32, "COp">, memref<16x20xf32, #wg>
    gpu.terminator
  }
  return
}

// -----

// What it does not emulate stops it, naming the op.

#wg = #gpu.address_space<workgroup>
func.func @product_under_if(%p: i1, %a: !gpu.mma_matrix<16x16xf16, "AOp">, %b: !gpu.mma_matrix<16x16xf16, "BOp">, %c: !gpu.mma_matrix<16x16xf32, "COp">) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    scf.if %p {
      // expected-error @below {{cannot be emulated inside 'scf.if': its exchange between lanes needs every thread of the workgroup at its barriers}}
      %d = gpu.subgroup_mma_compute %a, %b, %c : !gpu.mma_matrix<16x16xf16, "AOp">, !gpu.mma_matrix<16x16xf16, "BOp"> -> !gpu.mma_matrix<16x16xf32, "COp">
    }
    gpu.terminator
  }
  return
}

// -----

#wg = #gpu.address_space<workgroup>
func.func @lead_dimension() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1)
             workgroup(%tile : memref<32x32xf16, #wg>) {
    // expected-error @below {{cannot be emulated: only accesses to 2-D memrefs of identity layout whose rows are leadDimension elements apart are}}
    %x = gpu.subgroup_mma_load_matrix %tile[%c0, %c0] {leadDimension = 16 : index} : memref<32x32xf16, #wg> -> !gpu.mma_matrix<16x16xf16, "AOp">
    gpu.terminator
  }
  return
}

// -----

#wg = #gpu.address_space<workgroup>
func.func @shape() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1)
             workgroup(%tile : memref<32x32xf16, #wg>) {
    // expected-error @below {{cannot be emulated: only 16 x 16 matrices are}}
    %x = gpu.subgroup_mma_load_matrix %tile[%c0, %c0] {leadDimension = 32 : index} : memref<32x32xf16, #wg> -> !gpu.mma_matrix<32x8xf16, "AOp">
    gpu.terminator
  }
  return
}

// -----

func.func @threads(%n: index, %v: f32) {
  %c1 = arith.constant 1 : index
  // expected-error @below {{cannot have its subgroup matrix ops emulated: it needs a constant number of threads in x that is a multiple of 32 (whole subgroups), and one in y and z}}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %n, %sy = %c1, %sz = %c1) {
    %x = gpu.subgroup_mma_constant_matrix %v : !gpu.mma_matrix<16x16xf32, "COp">
    gpu.terminator
  }
  return
}
