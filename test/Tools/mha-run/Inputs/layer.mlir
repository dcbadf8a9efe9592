func.func @main(%x: tensor<?x4x8xf32>, %w: tensor<8x8xf32>, %m: tensor<4x4xi1>) -> tensor<?x4x8xf32> {
  %y = mha.multi_head_attention %x, %x, %x, %w, %w, %w, %w mask(%m) {num_heads = 2 : i64}
       : (tensor<?x4x8xf32>, tensor<?x4x8xf32>, tensor<?x4x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>,
          tensor<8x8xf32>, tensor<8x8xf32>, tensor<4x4xi1>) -> tensor<?x4x8xf32>
  return %y : tensor<?x4x8xf32>
}
