// Layers that also return their attention probabilities
// (return_weights); attention-weights.test runs them against numpy.

// Per head, causal, grouped-query, with biases.
func.func @per_head(%x: tensor<2x12x32xf32>, %wq: tensor<32x32xf32>,
                    %wk: tensor<32x16xf32>, %wv: tensor<32x16xf32>,
                    %wo: tensor<32x32xf32>, %bq: tensor<32xf32>,
                    %bk: tensor<16xf32>, %bv: tensor<16xf32>,
                    %bo: tensor<32xf32>)
    -> (tensor<2x12x32xf32>, tensor<2x4x12x12xf32>) {
  %y, %p = mha.multi_head_attention %x, %x, %x, %wq, %wk, %wv, %wo
             bias(%bq, %bk, %bv, %bo)
             {num_heads = 4 : i64, num_kv_heads = 2 : i64, causal,
              return_weights = "per_head"}
           : (tensor<2x12x32xf32>, tensor<2x12x32xf32>, tensor<2x12x32xf32>,
              tensor<32x32xf32>, tensor<32x16xf32>, tensor<32x16xf32>,
              tensor<32x32xf32>, tensor<32xf32>, tensor<16xf32>,
              tensor<16xf32>, tensor<32xf32>)
           -> (tensor<2x12x32xf32>, tensor<2x4x12x12xf32>)
  return %y, %p : tensor<2x12x32xf32>, tensor<2x4x12x12xf32>
}

// Averaged over the heads (PyTorch's default), cross-attention with a
// boolean mask whose first query sees no key (zero probabilities), dynamic
// lengths.
func.func @average(%q: tensor<2x?x32xf32>, %kv: tensor<2x?x32xf32>,
                   %m: tensor<2x?x?xi1>, %w: tensor<32x32xf32>)
    -> (tensor<2x?x32xf32>, tensor<2x?x?xf32>) {
  %y, %p = mha.multi_head_attention %q, %kv, %kv, %w, %w, %w, %w mask(%m)
             {num_heads = 4 : i64, return_weights = "average"}
           : (tensor<2x?x32xf32>, tensor<2x?x32xf32>, tensor<2x?x32xf32>,
              tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>,
              tensor<32x32xf32>, tensor<2x?x?xi1>)
           -> (tensor<2x?x32xf32>, tensor<2x?x?xf32>)
  return %y, %p : tensor<2x?x32xf32>, tensor<2x?x?xf32>
}
