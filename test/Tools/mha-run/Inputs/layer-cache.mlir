func.func @main(%x: tensor<2x?x8xf32>, %w: tensor<8x8xf32>, %kc: tensor<2x2x?x4xf32>, %vc: tensor<2x2x?x4xf32>, %len: tensor<2xi32>, %cos: tensor<?x2xf32>, %sin: tensor<?x2xf32>) -> (tensor<2x?x8xf32>, tensor<2x2x?x4xf32>, tensor<2x2x?x4xf32>) {
  %y, %k, %v = mha.multi_head_attention %x, %x, %x, %w, %w, %w, %w kv_cache(%kc, %vc, %len) rotary(%cos, %sin) {num_heads = 2 : i64, causal}
       : (tensor<2x?x8xf32>, tensor<2x?x8xf32>, tensor<2x?x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<2x2x?x4xf32>, tensor<2x2x?x4xf32>, tensor<2xi32>, tensor<?x2xf32>, tensor<?x2xf32>)
       -> (tensor<2x?x8xf32>, tensor<2x2x?x4xf32>, tensor<2x2x?x4xf32>)
  return %y, %k, %v : tensor<2x?x8xf32>, tensor<2x2x?x4xf32>, tensor<2x2x?x4xf32>
}
