// RUN: mha-opt %s --split-input-file --allow-unregistered-dialect --mha-rejoin-peeled-loops | FileCheck %s

// The loops mha-vectorize peeled off one parallel loop (mapping #mha.peeled)
// join again after bufferization: one scf.forall over both ranges, whose
// body runs the full tiles' code below the split and the partial tile's at
// it, so that threads share every iteration. The mapping goes.

// CHECK-LABEL: func.func @rejoin
// CHECK: scf.forall (%[[I:.+]]) = (0) to (200) step (64) {
// CHECK:   %[[FULL:.+]] = arith.cmpi slt, %[[I]], %[[C192:.+]] : index
// CHECK:   scf.if %[[FULL]] {
// CHECK:     memref.subview %{{.*}}[%[[I]], 0] [64, 32] [1, 1]
// CHECK:     "test.full"
// CHECK:   } else {
// CHECK:     memref.subview %{{.*}}[192, 0] [8, 32] [1, 1]
// CHECK:     "test.partial"
// CHECK:   }
// CHECK: }
// CHECK-NOT: mapping
// CHECK-NOT: scf.forall
func.func @rejoin(%out: memref<200x32xf32>) {
  scf.forall (%i) = (0) to (192) step (64) {
    %tile = memref.subview %out[%i, 0] [64, 32] [1, 1] : memref<200x32xf32> to memref<64x32xf32, strided<[32, 1], offset: ?>>
    "test.full"(%tile) : (memref<64x32xf32, strided<[32, 1], offset: ?>>) -> ()
  } {mapping = [#mha.peeled<0>]}
  %c0 = arith.constant 0 : index
  scf.forall (%i) = (192) to (200) step (64) {
    %tile = memref.subview %out[192, 0] [8, 32] [1, 1] : memref<200x32xf32> to memref<8x32xf32, strided<[32, 1], offset: 6144>>
    "test.partial"(%tile) : (memref<8x32xf32, strided<[32, 1], offset: 6144>>) -> ()
  } {mapping = [#mha.peeled<0>]}
  return
}

// -----

// A dynamic split, and a loop peeled along two dims (four loops: the full
// one, its partial in dim 1, then the partial in dim 0 and its partial in
// dim 1) joins pair by pair into one loop of nested ifs.

// CHECK-LABEL: func.func @rejoin_2d
// CHECK-SAME: (%[[OUT:.+]]: memref<?x?xf32>, %[[S0:.+]]: index, %[[N0:.+]]: index, %[[S1:.+]]: index, %[[N1:.+]]: index)
// CHECK: scf.forall (%[[I:.+]], %[[J:.+]]) = (0, 0) to (%[[N0]], %[[N1]]) step (8, 16) {
// CHECK:   %[[IN0:.+]] = arith.cmpi slt, %[[I]], %[[S0]] : index
// CHECK:   scf.if %[[IN0]] {
// CHECK:     %[[IN1:.+]] = arith.cmpi slt, %[[J]], %[[S1]] : index
// CHECK:     scf.if %[[IN1]] {
// CHECK:       "test.body"(%[[I]], %[[J]]) {part = 0
// CHECK:     } else {
// CHECK:       "test.body"(%[[I]], %[[J]]) {part = 1
// CHECK:     }
// CHECK:   } else {
// CHECK:     %[[IN1B:.+]] = arith.cmpi slt, %[[J]], %[[S1]] : index
// CHECK:     scf.if %[[IN1B]] {
// CHECK:       "test.body"(%[[I]], %[[J]]) {part = 2
// CHECK:     } else {
// CHECK:       "test.body"(%[[I]], %[[J]]) {part = 3
// CHECK:     }
// CHECK:   }
// CHECK: }
// CHECK-NOT: scf.forall
func.func @rejoin_2d(%out: memref<?x?xf32>, %s0: index, %n0: index, %s1: index, %n1: index) {
  scf.forall (%i, %j) = (0, 0) to (%s0, %s1) step (8, 16) {
    "test.body"(%i, %j) {part = 0} : (index, index) -> ()
  } {mapping = [#mha.peeled<0>, #mha.peeled<1>]}
  scf.forall (%i, %j) = (0, %s1) to (%s0, %n1) step (8, 16) {
    "test.body"(%i, %j) {part = 1} : (index, index) -> ()
  } {mapping = [#mha.peeled<0>, #mha.peeled<1>]}
  scf.forall (%i, %j) = (%s0, 0) to (%n0, %s1) step (8, 16) {
    "test.body"(%i, %j) {part = 2} : (index, index) -> ()
  } {mapping = [#mha.peeled<0>, #mha.peeled<1>]}
  scf.forall (%i, %j) = (%s0, %s1) to (%n0, %n1) step (8, 16) {
    "test.body"(%i, %j) {part = 3} : (index, index) -> ()
  } {mapping = [#mha.peeled<0>, #mha.peeled<1>]}
  return
}

// -----

// An op with effects between the loops: they stay apart (it could read what
// the first wrote), without their mapping. Loops without the mapping, or
// whose ranges do not continue each other, are left alone.

// CHECK-LABEL: func.func @apart
// CHECK: scf.forall (%{{.+}}) = (0) to (192) step (64) {
// CHECK: }
// CHECK-NEXT: memref.store
// CHECK-NEXT: scf.forall (%{{.+}}) = (192) to (200) step (64) {
// CHECK: scf.forall (%{{.+}}) = (0) to (192) step (64) {
// CHECK: scf.forall (%{{.+}}) = (192) to (200) step (64) {
// CHECK: scf.forall (%{{.+}}) = (0) to (128) step (64) {
// CHECK: scf.forall (%{{.+}}) = (192) to (200) step (64) {
// CHECK-NOT: mapping
func.func @apart(%out: memref<200xf32>) {
  %c0 = arith.constant 0 : index
  %f = arith.constant 1.0 : f32
  scf.forall (%i) = (0) to (192) step (64) {
    "test.full"(%i) : (index) -> ()
  } {mapping = [#mha.peeled<0>]}
  memref.store %f, %out[%c0] : memref<200xf32>
  scf.forall (%i) = (192) to (200) step (64) {
    "test.partial"(%i) : (index) -> ()
  } {mapping = [#mha.peeled<0>]}
  scf.forall (%i) = (0) to (192) step (64) {
    "test.full"(%i) : (index) -> ()
  }
  scf.forall (%i) = (192) to (200) step (64) {
    "test.partial"(%i) : (index) -> ()
  }
  scf.forall (%i) = (0) to (128) step (64) {
    "test.full"(%i) : (index) -> ()
  } {mapping = [#mha.peeled<0>]}
  scf.forall (%i) = (192) to (200) step (64) {
    "test.partial"(%i) : (index) -> ()
  } {mapping = [#mha.peeled<0>]}
  return
}
