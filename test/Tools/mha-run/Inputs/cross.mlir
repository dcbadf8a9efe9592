func.func @main(%q: tensor<?x?x8xf32>, %k: tensor<?x?x8xf32>, %v: tensor<?x?x8xf32>, %w: tensor<8x8xf32>) -> tensor<?x?x8xf32> {
  %y = mha.multi_head_attention %q, %k, %v, %w, %w, %w, %w {num_heads = 2 : i64}
       : (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>,
          tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}
