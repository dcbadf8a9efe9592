// One BERT-base self-attention layer: batch 1, sequence 128, embedding 768,
// 12 heads of width 64, with the four projection biases.
//
//   mha-opt examples/bert-base.mlir
func.func @main(%x: tensor<1x128x768xf32>,
                %w_q: tensor<768x768xf32>, %w_k: tensor<768x768xf32>,
                %w_v: tensor<768x768xf32>, %w_o: tensor<768x768xf32>,
                %b_q: tensor<768xf32>, %b_k: tensor<768xf32>,
                %b_v: tensor<768xf32>, %b_o: tensor<768xf32>) -> tensor<1x128x768xf32> {
  %y = mha.multi_head_attention %x, %x, %x, %w_q, %w_k, %w_v, %w_o
         bias(%b_q, %b_k, %b_v, %b_o) {num_heads = 12 : i64}
         : (tensor<1x128x768xf32>, tensor<1x128x768xf32>, tensor<1x128x768xf32>,
            tensor<768x768xf32>, tensor<768x768xf32>, tensor<768x768xf32>,
            tensor<768x768xf32>, tensor<768xf32>, tensor<768xf32>, tensor<768xf32>,
            tensor<768xf32>) -> tensor<1x128x768xf32>
  return %y : tensor<1x128x768xf32>
}
