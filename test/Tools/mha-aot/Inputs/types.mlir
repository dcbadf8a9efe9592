func.func @main(%a: tensor<4xi8>) -> tensor<4xi8> {
  return %a : tensor<4xi8>
}
func.func @mha_aot_layer_impl(%a: tensor<4xf32>) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}
