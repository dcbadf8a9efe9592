func.func @main(%a: tensor<4xi32>) -> tensor<4xi32> {
  return %a : tensor<4xi32>
}
func.func @mha_aot_layer_impl(%a: tensor<4xf32>) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}
