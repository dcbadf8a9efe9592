// RUN: mha-opt %s --mha-mark-read-only-arguments | FileCheck %s

// Tensor arguments are marked read-only for one-shot bufferization, except
// those a returned value is written into through destination-passing ops
// (a KV cache): an elementwise op on an argument must not overwrite the
// caller's array.

// CHECK-LABEL: func.func @step
// CHECK-SAME: (%{{.*}}: tensor<2x2x1x8xf32> {bufferization.writable = false},
// CHECK-SAME: %{{.*}}: tensor<2x2x16x8xf32>,
// CHECK-SAME: %{{.*}}: tensor<2xi32> {bufferization.writable = false},
// CHECK-SAME: %{{.*}}: tensor<2x2x16x8xf32> {bufferization.writable = true},
// CHECK-SAME: %{{.*}}: index)
func.func @step(%k: tensor<2x2x1x8xf32>, %cache: tensor<2x2x16x8xf32>, %len: tensor<2xi32>,
                %other: tensor<2x2x16x8xf32> {bufferization.writable = true}, %n: index)
    -> (tensor<2x2x16x8xf32>, tensor<2xi32>) {
  %c = mha.cache_append ins(%k : tensor<2x2x1x8xf32>) lengths(%len : tensor<2xi32>)
         outs(%cache : tensor<2x2x16x8xf32>) -> tensor<2x2x16x8xf32>
  %one = arith.constant dense<1> : tensor<2xi32>
  %e = tensor.empty() : tensor<2xi32>
  %sum = linalg.add ins(%len, %one : tensor<2xi32>, tensor<2xi32>) outs(%e : tensor<2xi32>) -> tensor<2xi32>
  return %c, %sum : tensor<2x2x16x8xf32>, tensor<2xi32>
}

// A chain of destinations back to an argument: the argument is updated.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: (%{{.*}}: tensor<4xf32>, %{{.*}}: tensor<4xf32> {bufferization.writable = false})
func.func @chain(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %f = arith.constant 1.0 : f32
  %x = linalg.fill ins(%f : f32) outs(%a : tensor<4xf32>) -> tensor<4xf32>
  %y = linalg.add ins(%x, %b : tensor<4xf32>, tensor<4xf32>) outs(%x : tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
