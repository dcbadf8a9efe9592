// One decoding step of a Llama-style attention layer (docs/Integration.md,
// "Decoding with KV caches"): B=2 sequences, one new token each, E=512,
// 8 query heads sharing 2 key/value heads of 64, rotary embeddings
// (half-rotated, tables for 2048 positions), static KV caches of 1024
// positions holding %len[b] tokens of batch b.
//
// The step projects the new token, rotates its query and key at position
// %len[b], writes its key and value into the caches at %len[b] (in place:
// the updated caches are the caches' buffers), and attends causally over
// the first %len[b] + 1 positions. The caller then adds 1 to %len.
func.func @step(%x: tensor<2x1x512xf32>,
                %w_q: tensor<512x512xf32> {mha.weight}, %w_k: tensor<512x128xf32> {mha.weight},
                %w_v: tensor<512x128xf32> {mha.weight}, %w_o: tensor<512x512xf32> {mha.weight},
                %k_cache: tensor<2x2x1024x64xf32>, %v_cache: tensor<2x2x1024x64xf32>,
                %len: tensor<2xi32>, %cos: tensor<2048x32xf32>, %sin: tensor<2048x32xf32>)
    -> (tensor<2x1x512xf32>, tensor<2x2x1024x64xf32>, tensor<2x2x1024x64xf32>) {
  %y, %k1, %v1 = mha.multi_head_attention %x, %x, %x, %w_q, %w_k, %w_v, %w_o
      kv_cache(%k_cache, %v_cache, %len) rotary(%cos, %sin)
      {num_heads = 8 : i64, num_kv_heads = 2 : i64, causal}
      : (tensor<2x1x512xf32>, tensor<2x1x512xf32>, tensor<2x1x512xf32>,
         tensor<512x512xf32>, tensor<512x128xf32>, tensor<512x128xf32>, tensor<512x512xf32>,
         tensor<2x2x1024x64xf32>, tensor<2x2x1024x64xf32>, tensor<2xi32>,
         tensor<2048x32xf32>, tensor<2048x32xf32>)
      -> (tensor<2x1x512xf32>, tensor<2x2x1024x64xf32>, tensor<2x2x1024x64xf32>)
  return %y, %k1, %v1 : tensor<2x1x512xf32>, tensor<2x2x1024x64xf32>, tensor<2x2x1024x64xf32>
}
