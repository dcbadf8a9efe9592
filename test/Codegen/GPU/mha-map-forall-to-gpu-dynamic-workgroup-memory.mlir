// RUN: mha-opt %s --split-input-file --mha-map-forall-to-gpu="threads=32 dynamic-workgroup-memory" --canonicalize | FileCheck %s
// RUN: mha-opt %s --split-input-file --mha-map-forall-to-gpu="threads=32" --canonicalize | FileCheck %s --check-prefix=STATIC

// Workgroup buffers over the target's max_workgroup_memory (what CUDA lets a
// kernel declare statically), on a target with an opt-in: views of the
// launch's dynamic workgroup memory at offsets aligned to 16 bytes (an
// f16 buffer of 40,000 bytes, then an f32 one of 16,384), its size the
// launch's dynamic_shared_memory_size. Without dynamic-workgroup-memory
// (the Vulkan pipelines), workgroup attributions.

// CHECK-LABEL: func.func @over
// CHECK: %[[BYTES:.+]] = arith.constant 56384 : i32
// CHECK: gpu.launch {{.*}} dynamic_shared_memory_size %[[BYTES]]
// CHECK-NOT: workgroup(
// CHECK: %[[BASE:.+]] = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// CHECK-DAG: %[[A:.+]] = memref.view %[[BASE]][%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<100x200xf16, #gpu.address_space<workgroup>>
// CHECK-DAG: %[[B:.+]] = memref.view %[[BASE]][%c40000][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<4096xf32, #gpu.address_space<workgroup>>
// CHECK-DAG: memref.store %{{.+}}, %[[A]]
// CHECK-DAG: memref.store %{{.+}}, %[[B]]
// STATIC-LABEL: func.func @over
// STATIC: gpu.launch {{.*}} workgroup(%{{.+}} : memref<100x200xf16, #gpu.address_space<workgroup>>, %{{.+}} : memref<4096xf32, #gpu.address_space<workgroup>>)
// STATIC-NOT: dynamic_shared_memory
module attributes {mha.target = #mha.target<kind = cuda, chip = "sm_80", max_workgroup_memory = 49152, max_workgroup_memory_optin = 166912>} {
func.func @over(%x: f16, %y: f32) {
  scf.forall (%i) in (4) {
    %a = memref.alloc() : memref<100x200xf16, #gpu.address_space<workgroup>>
    %b = memref.alloc() : memref<4096xf32, #gpu.address_space<workgroup>>
    scf.forall (%t) in (32) {
      memref.store %x, %a[%t, %i] : memref<100x200xf16, #gpu.address_space<workgroup>>
      memref.store %y, %b[%t] : memref<4096xf32, #gpu.address_space<workgroup>>
    } {mapping = [#gpu.thread<linear_dim_0>]}
  } {mapping = [#gpu.block<linear_dim_0>]}
  return
}
}

// -----

// Within the static limit, or on a target without an opt-in: attributions.

// CHECK-LABEL: func.func @within
// CHECK: gpu.launch {{.*}} workgroup(%{{.+}} : memref<1000xf32, #gpu.address_space<workgroup>>)
// CHECK-NOT: dynamic_shared_memory
// CHECK-LABEL: func.func @no_optin
// CHECK: gpu.launch {{.*}} workgroup(%{{.+}} : memref<20000xf32, #gpu.address_space<workgroup>>)
// CHECK-NOT: dynamic_shared_memory
module attributes {mha.target = #mha.target<kind = cuda, chip = "sm_80", max_workgroup_memory = 49152, max_workgroup_memory_optin = 166912>} {
func.func @within(%y: f32) {
  scf.forall (%i) in (4) {
    %b = memref.alloc() : memref<1000xf32, #gpu.address_space<workgroup>>
    scf.forall (%t) in (32) {
      memref.store %y, %b[%t] : memref<1000xf32, #gpu.address_space<workgroup>>
    } {mapping = [#gpu.thread<linear_dim_0>]}
  } {mapping = [#gpu.block<linear_dim_0>]}
  return
}
func.func @no_optin(%y: f32) attributes {mha.target = #mha.target<kind = cuda, chip = "sm_75", max_workgroup_memory = 49152>} {
  scf.forall (%i) in (4) {
    %b = memref.alloc() : memref<20000xf32, #gpu.address_space<workgroup>>
    scf.forall (%t) in (32) {
      memref.store %y, %b[%t] : memref<20000xf32, #gpu.address_space<workgroup>>
    } {mapping = [#gpu.thread<linear_dim_0>]}
  } {mapping = [#gpu.block<linear_dim_0>]}
  return
}
}
