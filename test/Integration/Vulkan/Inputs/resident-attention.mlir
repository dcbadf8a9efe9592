// Causal attention on static shapes, for device_resident_call.c.
func.func @main(%q: tensor<1x2x40x16xf32>, %k: tensor<1x2x40x16xf32>, %v: tensor<1x2x40x16xf32>) -> tensor<1x2x40x16xf32> {
  %init = tensor.empty() : tensor<1x2x40x16xf32>
  %o = mha.attention ins(%q, %k, %v : tensor<1x2x40x16xf32>, tensor<1x2x40x16xf32>, tensor<1x2x40x16xf32>)
         outs(%init : tensor<1x2x40x16xf32>) {causal} -> tensor<1x2x40x16xf32>
  return %o : tensor<1x2x40x16xf32>
}
