// One self-attention layer wide enough for 16-lane vectors: E = 64, 4 heads.
func.func @main(%x: tensor<1x32x64xf32>, %w: tensor<64x64xf32>, %b: tensor<64xf32>) -> tensor<1x32x64xf32> {
  %y = mha.multi_head_attention %x, %x, %x, %w, %w, %w, %w bias(%b, %b, %b, %b) {num_heads = 4 : i64}
       : (tensor<1x32x64xf32>, tensor<1x32x64xf32>, tensor<1x32x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>,
          tensor<64x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<1x32x64xf32>
  return %y : tensor<1x32x64xf32>
}
