// One decoding step: 32 query heads in groups of 4 over 8 key/value heads
// of 4096 keys (test/Integration/CPU/decode.test).
func.func @main(%q: tensor<1x32x1x128xf32>, %k: tensor<1x8x4096x128xf32>, %v: tensor<1x8x4096x128xf32>) -> tensor<1x32x1x128xf32> {
  %init = tensor.empty() : tensor<1x32x1x128xf32>
  %o = mha.attention ins(%q, %k, %v : tensor<1x32x1x128xf32>, tensor<1x8x4096x128xf32>, tensor<1x8x4096x128xf32>)
         outs(%init : tensor<1x32x1x128xf32>) {causal} -> tensor<1x32x1x128xf32>
  return %o : tensor<1x32x1x128xf32>
}
