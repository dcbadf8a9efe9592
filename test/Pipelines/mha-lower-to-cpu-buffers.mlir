// RUN: mha-opt %s --mha-lower-to-cpu --mlir-print-ir-after=buffer-loop-hoisting 2>&1 >/dev/null | FileCheck %s

// The buffers of a key block (the scores, the row max and sum) are allocated
// once per query tile, inside the parallel loop (each thread its own) but
// before the key loop (upstream buffer-loop-hoisting), instead of a
// malloc/free pair each per key block. The scores start from zero in the
// registers of the q·kᵀ tiles (mha-vectorize fuses their fill), so no block
// is zero-filled by a copy either. kᵀ has no buffer per block: the keys are
// transposed block by block once, before the query tiles ([H, Sk/64, 1, d,
// 64], on threads), and each key block reads its kᵀ from there.

// CHECK: %[[ZERO:.+]] = arith.constant dense<0.000000e+00> : vector<8x32xf32>
// CHECK: %[[KT:.+]] = memref.alloc() {{.*}} : memref<2x2x1x64x64xf32>
// CHECK: scf.forall (%{{.*}}) in (2)
// CHECK:   vector.transpose
// CHECK: scf.forall
// The state (row max and sum) of the query tile, then the key block's
// buffers, then the key loop.
// CHECK:        memref.copy {{.*}} : memref<1x1x64xf32> to memref<1x1x64xf32>
// CHECK-NEXT:   memref.alloc
// CHECK-NEXT:   memref.copy {{.*}} : memref<1x1x64xf32> to memref<1x1x64xf32>
// CHECK-NEXT:   memref.alloc() {{.*}} : memref<1x1x64x64xf32>
// CHECK-NEXT:   memref.alloc() {{.*}} : memref<1x1x64xf32>
// CHECK-NEXT:   memref.alloc() {{.*}} : memref<1x1x64xf32>
// CHECK-NEXT:   scf.for %{{.*}} = %c0 to %c128 step %c64 {
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.copy {{.*}} : memref<1x1x64x64xf32>
// CHECK:       memref.subview %[[KT]]
// CHECK-NOT: memref.alloc
// CHECK:     scf.for %{{.*}} iter_args(%{{.*}} = %[[ZERO]]) -> (vector<8x32xf32>)
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.copy {{.*}} : memref<1x1x64x64xf32>
// CHECK: return

func.func @attention(%q: tensor<1x2x128x64xf32>, %k: tensor<1x2x128x64xf32>, %v: tensor<1x2x128x64xf32>) -> tensor<1x2x128x64xf32> {
  %e = tensor.empty() : tensor<1x2x128x64xf32>
  %o = mha.attention ins(%q, %k, %v : tensor<1x2x128x64xf32>, tensor<1x2x128x64xf32>, tensor<1x2x128x64xf32>) outs(%e : tensor<1x2x128x64xf32>) -> tensor<1x2x128x64xf32>
  return %o : tensor<1x2x128x64xf32>
}
