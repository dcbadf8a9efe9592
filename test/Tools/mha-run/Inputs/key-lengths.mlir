func.func @main(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>, %len: tensor<2xi32>) -> tensor<2x4x8xf32> {
  %y = mha.multi_head_attention %x, %x, %x, %w, %w, %w, %w key_lengths(%len) {num_heads = 2 : i64, causal}
         : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>,
            tensor<8x8xf32>, tensor<8x8xf32>, tensor<2xi32>) -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}
