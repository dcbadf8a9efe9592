// RUN: mha-opt %s --split-input-file --mha-additive-mask | FileCheck %s

// An i1 mask becomes the equivalent additive mask of the data's type
// (select(m, 0, -inf)), of the mask's own (dynamic) shape.

// CHECK-LABEL: func.func @bool_mask
// CHECK-SAME: %[[M:[a-z0-9]+]]: tensor<?x8xi1>
// CHECK: %[[N:.+]] = tensor.dim %[[M]], %c0
// CHECK: %[[E:.+]] = tensor.empty(%[[N]]) : tensor<?x8xf16>
// CHECK-DAG: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f16
// CHECK-DAG: %[[NINF:.+]] = arith.constant 0xFC00 : f16
// CHECK: %[[ADD:.+]] = linalg.generic {{.*}} ins(%[[M]] : tensor<?x8xi1>) outs(%[[E]] : tensor<?x8xf16>)
// CHECK:   arith.select %{{.*}}, %[[ZERO]], %[[NINF]] : f16
// CHECK: mha.attention {{.*}} mask(%[[ADD]] : tensor<?x8xf16>)
func.func @bool_mask(%q: tensor<1x2x?x4xf16>, %k: tensor<1x2x8x4xf16>, %v: tensor<1x2x8x4xf16>,
                     %m: tensor<?x8xi1>, %init: tensor<1x2x?x4xf16>) -> tensor<1x2x?x4xf16> {
  %o = mha.attention ins(%q, %k, %v : tensor<1x2x?x4xf16>, tensor<1x2x8x4xf16>, tensor<1x2x8x4xf16>)
         mask(%m : tensor<?x8xi1>) outs(%init : tensor<1x2x?x4xf16>) -> tensor<1x2x?x4xf16>
  return %o : tensor<1x2x?x4xf16>
}

// -----

// Float masks and no mask are left alone.

// CHECK-LABEL: func.func @float_mask
// CHECK-NOT: linalg.generic
// CHECK: mha.attention {{.*}} mask(%{{.*}} : tensor<4x8xf32>)
func.func @float_mask(%q: tensor<1x2x4x4xf32>, %k: tensor<1x2x8x4xf32>, %v: tensor<1x2x8x4xf32>,
                      %m: tensor<4x8xf32>, %init: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %o = mha.attention ins(%q, %k, %v : tensor<1x2x4x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>)
         mask(%m : tensor<4x8xf32>) outs(%init : tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %o : tensor<1x2x4x4xf32>
}

// -----

// The weights' i1 mask too (its decomposition would read i1 in a kernel).

// CHECK-LABEL: func.func @weights_bool_mask
// CHECK: %[[ADD:.+]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<4x8xi1>) outs(%{{.*}} : tensor<4x8xf32>)
// CHECK:   arith.select
// CHECK: mha.attention_weights {{.*}} mask(%[[ADD]] : tensor<4x8xf32>) {{.*}}stage = #mha.weights_stage<logits>
func.func @weights_bool_mask(%q: tensor<1x2x4x4xf32>, %k: tensor<1x2x8x4xf32>, %m: tensor<4x8xi1>,
                             %init: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %w = mha.attention_weights ins(%q, %k : tensor<1x2x4x4xf32>, tensor<1x2x8x4xf32>)
         mask(%m : tensor<4x8xi1>) outs(%init : tensor<1x2x4x8xf32>) {stage = #mha.weights_stage<logits>}
         -> tensor<1x2x4x8xf32>
  return %w : tensor<1x2x4x8xf32>
}
