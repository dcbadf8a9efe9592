func.func @main(%k: tensor<2x2x3x8xf32>, %cache: tensor<2x2x?x8xf32>, %len: tensor<2xi32>) -> tensor<2x2x?x8xf32> {
  %r = mha.cache_append ins(%k : tensor<2x2x3x8xf32>) lengths(%len : tensor<2xi32>)
         outs(%cache : tensor<2x2x?x8xf32>) -> tensor<2x2x?x8xf32>
  return %r : tensor<2x2x?x8xf32>
}
