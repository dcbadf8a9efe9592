// f32 causal attention at head dim 64 with 32-row tiles: 65,664 bytes of
// workgroup memory, over CUDA's 48 KiB (errors.test).
func.func @main(%q: tensor<1x2x64x64xf32>) -> tensor<1x2x64x64xf32> {
  %init = tensor.empty() : tensor<1x2x64x64xf32>
  %y = mha.attention ins(%q, %q, %q : tensor<1x2x64x64xf32>, tensor<1x2x64x64xf32>, tensor<1x2x64x64xf32>) outs(%init : tensor<1x2x64x64xf32>) {causal} -> tensor<1x2x64x64xf32>
  return %y : tensor<1x2x64x64xf32>
}
