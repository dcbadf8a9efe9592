func.func @layer(%x: tensor<1x32x128xf32>, %wq: tensor<128x128xf32>, %wk: tensor<128x32xf32>,
                 %wv: tensor<128x32xf32>, %wo: tensor<128x128xf32>) -> tensor<1x32x128xf32> {
  %y = mha.multi_head_attention %x, %x, %x, %wq, %wk, %wv, %wo {num_heads = 8 : i64, num_kv_heads = 2 : i64}
       : (tensor<1x32x128xf32>, tensor<1x32x128xf32>, tensor<1x32x128xf32>, tensor<128x128xf32>,
          tensor<128x32xf32>, tensor<128x32xf32>, tensor<128x128xf32>) -> tensor<1x32x128xf32>
  return %y : tensor<1x32x128xf32>
}
