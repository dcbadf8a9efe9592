// RUN: mha-opt %s --split-input-file --verify-diagnostics --mha-map-forall-to-gpu --canonicalize | FileCheck %s

// The threads per workgroup from the function's mha.lowering_config (16);
// without one (and no option) the count is refused.

// CHECK-LABEL: func.func @launch
// CHECK: gpu.launch {{.*}} threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c16, %{{.*}} = %c1, %{{.*}} = %c1)
func.func @launch(%out: memref<64xf32>, %x: f32) attributes {mha.lowering_config = #mha.lowering_config<threads = 16>} {
  scf.forall (%i) = (0) to (64) step (16) {
    scf.forall (%t) in (16) {
      %j = arith.addi %i, %t : index
      memref.store %x, %out[%j] : memref<64xf32>
    } {mapping = [#gpu.thread<linear_dim_0>]}
  }
  return
}

// -----

// A thread loop that states its own thread count (the tensor-core kernel's
// warps, mha-attention-to-mma) widens its launch to it; the other loops of
// the launch run on the first threads.
// CHECK-LABEL: func.func @own_threads
// CHECK: gpu.launch {{.*}} threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c128, %{{.*}} = %c1, %{{.*}} = %c1)
// CHECK: scf.if
// CHECK: gpu.barrier
// CHECK-NOT: scf.if
// CHECK: memref.store
func.func @own_threads(%out: memref<128xf32>, %x: f32) attributes {mha.lowering_config = #mha.lowering_config<threads = 16>} {
  scf.forall (%i) = (0) to (1) step (1) {
    scf.forall (%t) in (16) {
      memref.store %x, %out[%t] : memref<128xf32>
    } {mapping = [#gpu.thread<linear_dim_0>]}
    scf.forall (%t) in (128) {
      memref.store %x, %out[%t] : memref<128xf32>
    } {mapping = [#gpu.thread<x>], mha.lowering_config = #mha.lowering_config<threads = 128>}
  }
  return
}

// -----

// expected-error @+1 {{threads per workgroup must be positive, found 0 (0: from the function's mha.lowering_config, which sets none)}}
func.func @none(%out: memref<64xf32>) {
  return
}
