func.func @main(%x: tensor<2x2x3x8xf32>, %cos: tensor<?x4xf32>, %sin: tensor<?x4xf32>, %pos: tensor<2xi32>) -> tensor<2x2x3x8xf32> {
  %init = tensor.empty() : tensor<2x2x3x8xf32>
  %r = mha.rotary ins(%x : tensor<2x2x3x8xf32>) cos_sin(%cos, %sin : tensor<?x4xf32>, tensor<?x4xf32>)
         positions(%pos : tensor<2xi32>) outs(%init : tensor<2x2x3x8xf32>) -> tensor<2x2x3x8xf32>
  return %r : tensor<2x2x3x8xf32>
}
