// A causal GQA layer with enough query tiles (S=96, 16-query tiles: 12 per
// batch) for the parallel loop to spread over threads.
func.func @main(%x: tensor<2x96x32xf32>, %wq: tensor<32x32xf32>, %wkv: tensor<32x16xf32>,
                %wo: tensor<32x32xf32>) -> tensor<2x96x32xf32> {
  %y = mha.multi_head_attention %x, %x, %x, %wq, %wkv, %wkv, %wo
       {num_heads = 4 : i64, num_kv_heads = 2 : i64, causal}
       : (tensor<2x96x32xf32>, tensor<2x96x32xf32>, tensor<2x96x32xf32>, tensor<32x32xf32>,
          tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x32xf32>) -> tensor<2x96x32xf32>
  return %y : tensor<2x96x32xf32>
}
