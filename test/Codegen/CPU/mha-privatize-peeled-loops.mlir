// RUN: mha-opt %s --split-input-file --mha-privatize-peeled-loops | FileCheck %s
// RUN: mha-opt %s --split-input-file --mha-privatize-peeled-loops --one-shot-bufferize=bufferize-function-boundaries | FileCheck %s --check-prefix=BUF

// Two peeled loops of one iteration each (one full query tile, then the
// partial one) that write a key block's kᵀ into one empty tensor from
// outside: each gets a new empty tensor at the start of its body, so that
// bufferization allocates a buffer per loop, inside it, rather than one
// before both (a loop of one iteration is not a parallel region to it), which
// the two iterations of the rejoined loop would share.

// CHECK-LABEL: func.func @empty_from_outside
// CHECK: %[[OUTER:.+]] = tensor.empty() : tensor<16x64xf32>
// CHECK: scf.forall
// CHECK-NEXT: %[[E0:.+]] = tensor.empty() : tensor<16x64xf32>
// CHECK: linalg.transpose ins(%{{.+}} : tensor<64x16xf32>) outs(%[[E0]] : tensor<16x64xf32>)
// CHECK: mapping = [#mha.peeled<0>]
// CHECK: scf.forall
// CHECK-NEXT: %[[E1:.+]] = tensor.empty() : tensor<16x64xf32>
// CHECK: linalg.transpose ins(%{{.+}} : tensor<64x16xf32>) outs(%[[E1]] : tensor<16x64xf32>)
// CHECK: mapping = [#mha.peeled<0>]
// A loop that is not peeled is bufferization's to privatize.
// CHECK: scf.forall
// CHECK-NOT: tensor.empty
// CHECK: linalg.transpose ins(%{{.+}} : tensor<64x16xf32>) outs(%[[OUTER]] : tensor<16x64xf32>)

// BUF-LABEL: func.func @empty_from_outside
// BUF: scf.forall
// BUF-NEXT: memref.alloc() {{.*}} : memref<16x64xf32>
// BUF: scf.forall
// BUF-NEXT: memref.alloc() {{.*}} : memref<16x64xf32>
func.func @empty_from_outside(%k: tensor<64x16xf32>, %out: tensor<100x64xf32>) -> (tensor<100x64xf32>, tensor<100x64xf32>) {
  %kt = tensor.empty() : tensor<16x64xf32>
  %0 = scf.forall (%i) = (0) to (64) step (64) shared_outs(%o = %out) -> (tensor<100x64xf32>) {
    %t = linalg.transpose ins(%k : tensor<64x16xf32>) outs(%kt : tensor<16x64xf32>) permutation = [1, 0]
    %s = tensor.extract_slice %t[0, 0] [16, 64] [1, 1] : tensor<16x64xf32> to tensor<16x64xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %s into %o[%i, 0] [16, 64] [1, 1] : tensor<16x64xf32> into tensor<100x64xf32>
    }
  } {mapping = [#mha.peeled<0>]}
  %1 = scf.forall (%i) = (64) to (100) step (64) shared_outs(%o = %0) -> (tensor<100x64xf32>) {
    %t = linalg.transpose ins(%k : tensor<64x16xf32>) outs(%kt : tensor<16x64xf32>) permutation = [1, 0]
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %t into %o[%i, 0] [16, 64] [1, 1] : tensor<16x64xf32> into tensor<100x64xf32>
    }
  } {mapping = [#mha.peeled<0>]}
  %2 = scf.forall (%i) = (0) to (64) step (64) shared_outs(%o = %out) -> (tensor<100x64xf32>) {
    %t = linalg.transpose ins(%k : tensor<64x16xf32>) outs(%kt : tensor<16x64xf32>) permutation = [1, 0]
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %t into %o[%i, 0] [16, 64] [1, 1] : tensor<16x64xf32> into tensor<100x64xf32>
    }
  }
  return %1, %2 : tensor<100x64xf32>, tensor<100x64xf32>
}

// -----

// A tensor with contents from outside that the loop writes into gets a
// copy (bufferization.alloc_tensor copy); one it only reads stays shared.

// CHECK-LABEL: func.func @written_and_read
// CHECK-SAME: (%[[IN:.+]]: tensor<16xf32>, %[[ACC:.+]]: tensor<16xf32>
// CHECK: scf.forall
// CHECK-NEXT: %[[COPY:.+]] = bufferization.alloc_tensor() copy(%[[ACC]]) : tensor<16xf32>
// CHECK-NOT: alloc_tensor
// CHECK: linalg.add ins(%[[IN]], %[[IN]] : tensor<16xf32>, tensor<16xf32>) outs(%[[COPY]] : tensor<16xf32>)
func.func @written_and_read(%in: tensor<16xf32>, %acc: tensor<16xf32>, %out: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %0 = scf.forall (%i) = (0) to (8) step (8) shared_outs(%o = %out) -> (tensor<8x16xf32>) {
    %s = linalg.add ins(%in, %in : tensor<16xf32>, tensor<16xf32>) outs(%acc : tensor<16xf32>) -> tensor<16xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %s into %o[%i, 0] [1, 16] [1, 1] : tensor<16xf32> into tensor<8x16xf32>
    }
  } {mapping = [#mha.peeled<0>]}
  return %0 : tensor<8x16xf32>
}

// -----

// A slice of a tensor from outside, written: the tensor gets a copy (the
// write would go through the slice into its buffer).

// CHECK-LABEL: func.func @written_through_slice
// CHECK-SAME: (%[[ACC:.+]]: tensor<16xf32>
// CHECK: scf.forall
// CHECK-NEXT: %[[COPY:.+]] = bufferization.alloc_tensor() copy(%[[ACC]]) : tensor<16xf32>
// CHECK: tensor.extract_slice %[[COPY]][0] [8] [1]
func.func @written_through_slice(%acc: tensor<16xf32>, %out: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %cst = arith.constant 1.0 : f32
  %0 = scf.forall (%i) = (0) to (8) step (8) shared_outs(%o = %out) -> (tensor<8x8xf32>) {
    %s = tensor.extract_slice %acc[0] [8] [1] : tensor<16xf32> to tensor<8xf32>
    %f = linalg.fill ins(%cst : f32) outs(%s : tensor<8xf32>) -> tensor<8xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %f into %o[%i, 0] [1, 8] [1, 1] : tensor<8xf32> into tensor<8x8xf32>
    }
  } {mapping = [#mha.peeled<0>]}
  return %0 : tensor<8x8xf32>
}

// -----

// Read only, through a slice: no copy.

// CHECK-LABEL: func.func @read_through_slice
// CHECK-NOT: alloc_tensor
// CHECK-NOT: tensor.empty
func.func @read_through_slice(%in: tensor<16xf32>, %out: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = scf.forall (%i) = (0) to (8) step (8) shared_outs(%o = %out) -> (tensor<8x8xf32>) {
    %s = tensor.extract_slice %in[0] [8] [1] : tensor<16xf32> to tensor<8xf32>
    %d = tensor.extract_slice %o[%i, 0] [1, 8] [1, 1] : tensor<8x8xf32> to tensor<8xf32>
    %c = linalg.copy ins(%s : tensor<8xf32>) outs(%d : tensor<8xf32>) -> tensor<8xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %c into %o[%i, 0] [1, 8] [1, 1] : tensor<8xf32> into tensor<8x8xf32>
    }
  } {mapping = [#mha.peeled<0>]}
  return %0 : tensor<8x8xf32>
}
