func.func @main(%x: tensor<1x3x8xf32>, %w: tensor<8x8xf32> {mha.weight}) -> tensor<1x3x8xf32> {
  %y = mha.multi_head_attention %x, %x, %x, %w, %w, %w, %w {num_heads = 2 : i64, causal}
       : (tensor<1x3x8xf32>, tensor<1x3x8xf32>, tensor<1x3x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>,
          tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<1x3x8xf32>
  return %y : tensor<1x3x8xf32>
}
