func.func @main(%q: tensor<2x?x8xf32>, %kv: tensor<2x?x8xf32>, %w: tensor<8x8xf32>, %cos: tensor<?x2xf32>, %sin: tensor<?x2xf32>) -> tensor<2x?x8xf32> {
  %y = mha.multi_head_attention %q, %kv, %kv, %w, %w, %w, %w rotary(%cos, %sin) {num_heads = 2 : i64}
       : (tensor<2x?x8xf32>, tensor<2x?x8xf32>, tensor<2x?x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<2x?x8xf32>
  return %y : tensor<2x?x8xf32>
}
