// RUN: mha-opt %s -mha-strided-copies-to-loops | FileCheck %s
// RUN: mha-opt %s -mha-strided-copies-to-loops -convert-linalg-to-loops -finalize-memref-to-llvm | FileCheck %s --check-prefix=LLVM

// A copy between strided subviews of dynamic size (a partial tile padded
// and sliced back) becomes a linalg.copy, lowered to loops with the other
// linalg ops, instead of a call of the runner library's memrefCopy.

// CHECK-LABEL: func.func @strided
// CHECK-NOT: memref.copy
// CHECK: linalg.copy ins(%{{.*}} : memref<1x?x64xf32, strided<[?, 64, 1], offset: ?>>) outs(%{{.*}} : memref<1x?x64xf32, strided<[4096, 64, 1]>>)
// CHECK-NOT: memref.copy
// LLVM-LABEL: func.func @strided
// LLVM-NOT: memrefCopy
// LLVM: llvm.load
// LLVM: llvm.store
func.func @strided(%a: memref<4x?x64xf32>, %b: memref<2x64x64xf32>, %i: index, %n: index) {
  %src = memref.subview %a[%i, 0, 0] [1, %n, 64] [1, 1, 1] : memref<4x?x64xf32> to memref<1x?x64xf32, strided<[?, 64, 1], offset: ?>>
  %dst = memref.subview %b[0, 0, 0] [1, %n, 64] [1, 1, 1] : memref<2x64x64xf32> to memref<1x?x64xf32, strided<[4096, 64, 1]>>
  memref.copy %src, %dst : memref<1x?x64xf32, strided<[?, 64, 1], offset: ?>> to memref<1x?x64xf32, strided<[4096, 64, 1]>>
  return
}

// One contiguous side is not enough: a static tile copied into a row-strided
// window of a larger buffer.
// CHECK-LABEL: func.func @into_window
// CHECK: linalg.copy
// CHECK-NOT: memref.copy
func.func @into_window(%a: memref<64x63xf32>, %b: memref<64x64xf32>) {
  %dst = memref.subview %b[0, 0] [64, 63] [1, 1] : memref<64x64xf32> to memref<64x63xf32, strided<[64, 1]>>
  memref.copy %a, %dst : memref<64x63xf32> to memref<64x63xf32, strided<[64, 1]>>
  return
}

// Copies LLVM does as one memcpy stay: identity layouts (of any size), and
// a static subview that is contiguous (whole rows). Unranked memrefs, which
// have no loops to become, stay for memrefCopy.
// CHECK-LABEL: func.func @bytes
// CHECK-NOT: linalg.copy
// CHECK: memref.copy %{{.*}}, %{{.*}} : memref<?x64xf32> to memref<?x64xf32>
// CHECK: memref.copy %{{.*}}, %{{.*}} : memref<2x64xf32, strided<[64, 1], offset: 128>> to memref<2x64xf32>
// CHECK: memref.copy %{{.*}}, %{{.*}} : memref<*xf32> to memref<*xf32>
// CHECK-NOT: linalg.copy
// LLVM-LABEL: func.func @bytes
// LLVM: "llvm.intr.memcpy"
// LLVM: "llvm.intr.memcpy"
// LLVM: llvm.call @memrefCopy
func.func @bytes(%a: memref<?x64xf32>, %b: memref<?x64xf32>, %c: memref<4x64xf32>, %d: memref<2x64xf32>, %e: memref<*xf32>, %f: memref<*xf32>) {
  memref.copy %a, %b : memref<?x64xf32> to memref<?x64xf32>
  %rows = memref.subview %c[2, 0] [2, 64] [1, 1] : memref<4x64xf32> to memref<2x64xf32, strided<[64, 1], offset: 128>>
  memref.copy %rows, %d : memref<2x64xf32, strided<[64, 1], offset: 128>> to memref<2x64xf32>
  memref.copy %e, %f : memref<*xf32> to memref<*xf32>
  return
}
