// RUN: mha-opt %s --mha-return-arguments-in-place | FileCheck %s

// An argument updated in place (a KV cache) is returned as itself where the
// deallocation pipeline returned a clone of it, in the functions nothing in
// the module calls, and in those whose callers return the result as it is.

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

// An entry's NAME_prepared (mha-outline-weight-preparation): its only
// caller is an entry that passes its own argument and returns the call's
// result as it is (the deallocation's bookkeeping reads its pointer): the
// callee returns the argument, so the entry returns its own.
// CHECK-LABEL: func.func @entry
// CHECK: %[[R:.+]]:2 = call @entry_prepared
// CHECK: return %[[R]]#0, %[[R]]#1
// CHECK-LABEL: func.func @entry_prepared
// CHECK-SAME: (%[[W:.+]]: memref<4xf32>, %[[CACHE:.+]]: memref<8xf32>)
// CHECK-NOT: bufferization.clone %[[CACHE]]
// CHECK: return %{{.*}}, %[[CACHE]]
func.func @entry(%w: memref<4xf32>, %cache: memref<8xf32>) -> (memref<4xf32>, memref<8xf32>) {
  %r:2 = call @entry_prepared(%w, %cache) : (memref<4xf32>, memref<8xf32>) -> (memref<4xf32>, memref<8xf32>)
  %p = memref.extract_aligned_pointer_as_index %r#1 : memref<8xf32> -> index
  return %r#0, %r#1 : memref<4xf32>, memref<8xf32>
}
func.func @entry_prepared(%w: memref<4xf32>, %cache: memref<8xf32>) -> (memref<4xf32>, memref<8xf32>) {
  %o = memref.alloc() : memref<4xf32>
  memref.copy %w, %o : memref<4xf32> to memref<4xf32>
  %c = bufferization.clone %cache : memref<8xf32> to memref<8xf32>
  return %o, %c : memref<4xf32>, memref<8xf32>
}

// A callee whose caller passes a buffer it allocated (and frees) keeps its
// clone: returning the argument would hand the caller a freed buffer.
// CHECK-LABEL: func.func @owner
// CHECK-LABEL: func.func @owner_callee
// CHECK: %[[C:.+]] = bufferization.clone
// CHECK: return %[[C]]
func.func @owner() -> memref<8xf32> {
  %a = memref.alloc() : memref<8xf32>
  %r = call @owner_callee(%a) : (memref<8xf32>) -> memref<8xf32>
  memref.dealloc %a : memref<8xf32>
  return %r : memref<8xf32>
}
func.func @owner_callee(%cache: memref<8xf32>) -> memref<8xf32> {
  %c = bufferization.clone %cache : memref<8xf32> to memref<8xf32>
  return %c : memref<8xf32>
}
