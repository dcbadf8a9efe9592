// RUN: mha-opt %s --split-input-file --mha-decompose-aggregates -verify-diagnostics | FileCheck %s

// linalg.softmax becomes its AggregatedOpInterface decomposition: a max
// reduction, exp(x - max), a sum reduction and the division.

// CHECK-LABEL: func.func @softmax
// CHECK-NOT: linalg.softmax
// CHECK: linalg.fill
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK: arith.maxnumf
// CHECK: linalg.generic
// CHECK: arith.subf
// CHECK: math.exp
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK: arith.addf
// CHECK: linalg.generic
// CHECK: arith.divf
// CHECK-NOT: linalg.softmax
func.func @softmax(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %e = tensor.empty() : tensor<4x16xf32>
  %s = linalg.softmax dimension(1) ins(%x : tensor<4x16xf32>)
         outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %s : tensor<4x16xf32>
}

// -----

// mha ops implement the interface too; their own passes lower them.

// CHECK-LABEL: func.func @mha_untouched
// CHECK: mha.attention
func.func @mha_untouched(%q: tensor<1x2x8x4xf32>, %k: tensor<1x2x8x4xf32>,
                         %v: tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32> {
  %init = tensor.empty() : tensor<1x2x8x4xf32>
  %o = mha.attention ins(%q, %k, %v : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>)
         outs(%init : tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32>
  return %o : tensor<1x2x8x4xf32>
}

// -----

// Upstream's decomposition builds tensor ops: the buffer form is refused.
func.func @softmax_on_buffers(%x: memref<4xf32>, %y: memref<4xf32>) {
  // expected-error @+1 {{on buffers cannot be decomposed: only the tensor form of 'linalg.softmax' can (run this before bufferization)}}
  linalg.softmax dimension(0) ins(%x : memref<4xf32>) outs(%y : memref<4xf32>)
  return
}
