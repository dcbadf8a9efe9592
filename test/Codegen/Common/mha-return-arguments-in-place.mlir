// RUN: mha-opt %s --mha-return-arguments-in-place | FileCheck %s

// An argument updated in place (a KV cache) is returned as itself where the
// deallocation pipeline returned a clone of it, in the functions nothing in
// the module calls.

// CHECK-LABEL: func.func @step
// CHECK-SAME: (%[[CACHE:.+]]: memref<2x16xf32>, %[[OUT:.+]]: memref<2xf32>)
// CHECK-NOT: bufferization.clone %[[CACHE]]
// CHECK: %[[OWN:.+]] = bufferization.clone %[[OUT]]
// CHECK: return %[[CACHE]], %[[OWN]], %[[CACHE]]
func.func @step(%cache: memref<2x16xf32>, %out: memref<2xf32>) -> (memref<2x16xf32>, memref<2xf32>, memref<2x16xf32>) {
  %c0 = arith.constant 0 : index
  %x = arith.constant 1.0 : f32
  memref.store %x, %cache[%c0, %c0] : memref<2x16xf32>
  %a = bufferization.clone %cache : memref<2x16xf32> to memref<2x16xf32>
  // The clone of an argument the function reads after the return's
  // operands were built stays (it has another use).
  %b = bufferization.clone %out : memref<2xf32> to memref<2xf32>
  %l = memref.load %b[%c0] : memref<2xf32>
  %c = bufferization.clone %cache : memref<2x16xf32> to memref<2x16xf32>
  return %a, %b, %c : memref<2x16xf32>, memref<2xf32>, memref<2x16xf32>
}

// A function called in the module keeps its clones: the caller owns and
// deallocates what it returns.
// CHECK-LABEL: func.func @called
// CHECK: %[[C:.+]] = bufferization.clone
// CHECK: return %[[C]]
func.func @called(%cache: memref<4xf32>) -> memref<4xf32> {
  %a = bufferization.clone %cache : memref<4xf32> to memref<4xf32>
  return %a : memref<4xf32>
}

// CHECK-LABEL: func.func @caller
// CHECK: call @called
func.func @caller(%cache: memref<4xf32>) {
  %r = call @called(%cache) : (memref<4xf32>) -> memref<4xf32>
  memref.dealloc %r : memref<4xf32>
  return
}

// A clone of a buffer the function allocated, or of a value that is not
// an argument of the entry block, stays.
// CHECK-LABEL: func.func @not_argument
// CHECK: %[[A:.+]] = memref.alloc
// CHECK: %[[C:.+]] = bufferization.clone %[[A]]
// CHECK: return %[[C]]
func.func @not_argument() -> memref<4xf32> {
  %alloc = memref.alloc() : memref<4xf32>
  %a = bufferization.clone %alloc : memref<4xf32> to memref<4xf32>
  memref.dealloc %alloc : memref<4xf32>
  return %a : memref<4xf32>
}
