// RUN: mha-opt %s --split-input-file --verify-diagnostics

// One case per verifier message of the `mha` ops.

func.func @num_heads_zero(%q: tensor<2x16x64xf32>, %k: tensor<2x16x64xf32>, %v: tensor<2x16x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>) -> tensor<2x16x64xf32> {
  // expected-error @+1 {{'num_heads' must be positive, found 0}}
  %y = mha.multi_head_attention %q, %k, %v, %wq, %wk, %wv, %wo {num_heads = 0 : i64}
       : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}

// -----

func.func @num_kv_heads_negative(%q: tensor<2x16x64xf32>, %k: tensor<2x16x64xf32>, %v: tensor<2x16x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>) -> tensor<2x16x64xf32> {
  // expected-error @+1 {{'num_kv_heads' must be positive, found -2}}
  %y = mha.multi_head_attention %q, %k, %v, %wq, %wk, %wv, %wo {num_heads = 4 : i64, num_kv_heads = -2 : i64}
       : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}

// -----

func.func @num_kv_heads_not_dividing(%q: tensor<2x16x64xf32>, %k: tensor<2x16x64xf32>, %v: tensor<2x16x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x48xf32>, %wv: tensor<64x48xf32>, %wo: tensor<64x64xf32>) -> tensor<2x16x64xf32> {
  // expected-error @+1 {{'num_kv_heads' must divide 'num_heads': 3 does not divide 4}}
  %y = mha.multi_head_attention %q, %k, %v, %wq, %wk, %wv, %wo {num_heads = 4 : i64, num_kv_heads = 3 : i64}
       : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x64xf32>, tensor<64x48xf32>, tensor<64x48xf32>, tensor<64x64xf32>) -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}

// -----

func.func @scale_negative(%q: tensor<2x16x64xf32>, %k: tensor<2x16x64xf32>, %v: tensor<2x16x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>) -> tensor<2x16x64xf32> {
  // expected-error @+1 {{'scale' must be a positive finite number, found -1}}
  %y = mha.multi_head_attention %q, %k, %v, %wq, %wk, %wv, %wo {num_heads = 4 : i64, scale = -1.0 : f32}
       : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}

// -----

func.func @scale_zero(%q: tensor<2x16x64xf32>, %k: tensor<2x16x64xf32>, %v: tensor<2x16x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>) -> tensor<2x16x64xf32> {
  // expected-error @+1 {{'scale' must be a positive finite number, found 0}}
  %y = mha.multi_head_attention %q, %k, %v, %wq, %wk, %wv, %wo {num_heads = 4 : i64, scale = 0.0 : f32}
       : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}

// -----

func.func @scale_inf(%q: tensor<2x16x64xf32>, %k: tensor<2x16x64xf32>, %v: tensor<2x16x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>) -> tensor<2x16x64xf32> {
  // expected-error @+1 {{'scale' must be a positive finite number, found INF}}
  %y = mha.multi_head_attention %q, %k, %v, %wq, %wk, %wv, %wo {num_heads = 4 : i64, scale = 0x7F800000 : f32}
       : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}

// -----

func.func @query_rank(%q: tensor<16x64xf32>, %k: tensor<2x16x64xf32>, %v: tensor<2x16x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>) -> tensor<2x16x64xf32> {
  // expected-error @+1 {{'query' must have rank 3 ([B, Sq, Eq]), found rank 2}}
  %y = mha.multi_head_attention %q, %k, %v, %wq, %wk, %wv, %wo {num_heads = 4 : i64}
       : (tensor<16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}

// -----

func.func @key_rank(%q: tensor<2x16x64xf32>, %k: tensor<2x1x16x64xf32>, %v: tensor<2x16x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>) -> tensor<2x16x64xf32> {
  // expected-error @+1 {{'key' must have rank 3 ([B, Sk, Ek]), found rank 4}}
  %y = mha.multi_head_attention %q, %k, %v, %wq, %wk, %wv, %wo {num_heads = 4 : i64}
       : (tensor<2x16x64xf32>, tensor<2x1x16x64xf32>, tensor<2x16x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}

// -----

func.func @value_rank(%q: tensor<2x16x64xf32>, %k: tensor<2x16x64xf32>, %v: tensor<16x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>) -> tensor<2x16x64xf32> {
  // expected-error @+1 {{'value' must have rank 3 ([B, Sk, Ev]), found rank 2}}
  %y = mha.multi_head_attention %q, %k, %v, %wq, %wk, %wv, %wo {num_heads = 4 : i64}
       : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<16x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}

// -----

func.func @w_q_rank(%q: tensor<2x16x64xf32>, %k: tensor<2x16x64xf32>, %v: tensor<2x16x64xf32>, %wq: tensor<64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>) -> tensor<2x16x64xf32> {
  // expected-error @+1 {{'w_q' must have rank 2 ([Eq, H*dk]), found rank 1}}
  %y = mha.multi_head_attention %q, %k, %v, %wq, %wk, %wv, %wo {num_heads = 4 : i64}
       : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}

// -----

func.func @w_k_rank(%q: tensor<2x16x64xf32>, %k: tensor<2x16x64xf32>, %v: tensor<2x16x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<1x64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>) -> tensor<2x16x64xf32> {
  // expected-error @+1 {{'w_k' must have rank 2 ([Ek, Hkv*dk]), found rank 3}}
  %y = mha.multi_head_attention %q, %k, %v, %wq, %wk, %wv, %wo {num_heads = 4 : i64}
       : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x64xf32>, tensor<1x64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}

// -----

func.func @w_v_rank(%q: tensor<2x16x64xf32>, %k: tensor<2x16x64xf32>, %v: tensor<2x16x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64xf32>, %wo: tensor<64x64xf32>) -> tensor<2x16x64xf32> {
  // expected-error @+1 {{'w_v' must have rank 2 ([Ev, Hkv*dv]), found rank 1}}
  %y = mha.multi_head_attention %q, %k, %v, %wq, %wk, %wv, %wo {num_heads = 4 : i64}
       : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>) -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}

// -----

func.func @w_o_rank(%q: tensor<2x16x64xf32>, %k: tensor<2x16x64xf32>, %v: tensor<2x16x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<1x64x64xf32>) -> tensor<2x16x64xf32> {
  // expected-error @+1 {{'w_o' must have rank 2 ([H*dv, Eo]), found rank 3}}
  %y = mha.multi_head_attention %q, %k, %v, %wq, %wk, %wv, %wo {num_heads = 4 : i64}
       : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<1x64x64xf32>) -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}

// -----

func.func @result_rank(%q: tensor<2x16x64xf32>, %k: tensor<2x16x64xf32>, %v: tensor<2x16x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>) -> tensor<16x64xf32> {
  // expected-error @+1 {{'result' must have rank 3 ([B, Sq, Eo]), found rank 2}}
  %y = mha.multi_head_attention %q, %k, %v, %wq, %wk, %wv, %wo {num_heads = 4 : i64}
       : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<16x64xf32>
  return %y : tensor<16x64xf32>
}

// -----

func.func @element_type_mismatch(%q: tensor<2x16x64xf32>, %k: tensor<2x16x64xf32>, %v: tensor<2x16x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf16>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>) -> tensor<2x16x64xf32> {
  // expected-error @+1 {{'w_k' element type must match 'query' element type: expected 'f32', found 'f16'}}
  %y = mha.multi_head_attention %q, %k, %v, %wq, %wk, %wv, %wo {num_heads = 4 : i64}
       : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x64xf32>, tensor<64x64xf16>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}

// -----

func.func @result_element_type(%q: tensor<2x16x64xf32>, %k: tensor<2x16x64xf32>, %v: tensor<2x16x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>) -> tensor<2x16x64xbf16> {
  // expected-error @+1 {{'result' element type must match 'query' element type: expected 'f32', found 'bf16'}}
  %y = mha.multi_head_attention %q, %k, %v, %wq, %wk, %wv, %wo {num_heads = 4 : i64}
       : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<2x16x64xbf16>
  return %y : tensor<2x16x64xbf16>
}

// -----

func.func @unsupported_element_type(%q: tensor<2x16x64xf64>, %k: tensor<2x16x64xf32>, %v: tensor<2x16x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>) -> tensor<2x16x64xf32> {
  // expected-error @+1 {{operand #0 must be ranked tensor of 16-bit float or bfloat16 type or 32-bit float values, but got 'tensor<2x16x64xf64>'}}
  %y = mha.multi_head_attention %q, %k, %v, %wq, %wk, %wv, %wo {num_heads = 4 : i64}
       : (tensor<2x16x64xf64>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}

// -----

func.func @dynamic_embedding(%q: tensor<2x16x?xf32>, %k: tensor<2x16x64xf32>, %v: tensor<2x16x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>) -> tensor<2x16x64xf32> {
  // expected-error @+1 {{'query' dimension 2 (Eq) must be static, found '?'}}
  %y = mha.multi_head_attention %q, %k, %v, %wq, %wk, %wv, %wo {num_heads = 4 : i64}
       : (tensor<2x16x?xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}

// -----

func.func @dynamic_key_embedding(%q: tensor<2x16x64xf32>, %k: tensor<2x16x?xf32>, %v: tensor<2x16x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>) -> tensor<2x16x64xf32> {
  // expected-error @+1 {{'key' dimension 2 (Ek) must be static, found '?'}}
  %y = mha.multi_head_attention %q, %k, %v, %wq, %wk, %wv, %wo {num_heads = 4 : i64}
       : (tensor<2x16x64xf32>, tensor<2x16x?xf32>, tensor<2x16x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}

// -----

func.func @dynamic_value_embedding(%q: tensor<2x16x64xf32>, %k: tensor<2x16x64xf32>, %v: tensor<2x16x?xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>) -> tensor<2x16x64xf32> {
  // expected-error @+1 {{'value' dimension 2 (Ev) must be static, found '?'}}
  %y = mha.multi_head_attention %q, %k, %v, %wq, %wk, %wv, %wo {num_heads = 4 : i64}
       : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x?xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}

// -----

func.func @dynamic_weight(%q: tensor<2x16x64xf32>, %k: tensor<2x16x64xf32>, %v: tensor<2x16x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x?xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>) -> tensor<2x16x64xf32> {
  // expected-error @+1 {{'w_k' dimension 1 (Hkv*dk) must be static, found '?'}}
  %y = mha.multi_head_attention %q, %k, %v, %wq, %wk, %wv, %wo {num_heads = 4 : i64}
       : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x64xf32>, tensor<64x?xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}

// -----

func.func @dynamic_w_o(%q: tensor<2x16x64xf32>, %k: tensor<2x16x64xf32>, %v: tensor<2x16x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<?x64xf32>) -> tensor<2x16x64xf32> {
  // expected-error @+1 {{'w_o' dimension 0 (H*dv) must be static, found '?'}}
  %y = mha.multi_head_attention %q, %k, %v, %wq, %wk, %wv, %wo {num_heads = 4 : i64}
       : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<?x64xf32>) -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}

// -----

func.func @batch_mismatch(%q: tensor<2x16x64xf32>, %k: tensor<3x16x64xf32>, %v: tensor<3x16x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>) -> tensor<2x16x64xf32> {
  // expected-error @+1 {{'key' dimension 0 (B) must match 'query' dimension 0: expected 2, found 3}}
  %y = mha.multi_head_attention %q, %k, %v, %wq, %wk, %wv, %wo {num_heads = 4 : i64}
       : (tensor<2x16x64xf32>, tensor<3x16x64xf32>, tensor<3x16x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}

// -----

// A dynamic query batch does not hide a mismatch between key and value.
func.func @batch_mismatch_dynamic_query(%q: tensor<?x16x64xf32>, %k: tensor<3x16x64xf32>, %v: tensor<4x16x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>) -> tensor<?x16x64xf32> {
  // expected-error @+1 {{'value' dimension 0 (B) must match 'key' dimension 0: expected 3, found 4}}
  %y = mha.multi_head_attention %q, %k, %v, %wq, %wk, %wv, %wo {num_heads = 4 : i64}
       : (tensor<?x16x64xf32>, tensor<3x16x64xf32>, tensor<4x16x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<?x16x64xf32>
  return %y : tensor<?x16x64xf32>
}

// -----

func.func @result_batch(%q: tensor<2x16x64xf32>, %k: tensor<2x16x64xf32>, %v: tensor<2x16x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>) -> tensor<1x16x64xf32> {
  // expected-error @+1 {{'result' dimension 0 (B) must match 'query' dimension 0: expected 2, found 1}}
  %y = mha.multi_head_attention %q, %k, %v, %wq, %wk, %wv, %wo {num_heads = 4 : i64}
       : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<1x16x64xf32>
  return %y : tensor<1x16x64xf32>
}

// -----

func.func @query_length(%q: tensor<2x16x64xf32>, %k: tensor<2x16x64xf32>, %v: tensor<2x16x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>) -> tensor<2x8x64xf32> {
  // expected-error @+1 {{'result' dimension 1 (Sq) must match 'query' dimension 1: expected 16, found 8}}
  %y = mha.multi_head_attention %q, %k, %v, %wq, %wk, %wv, %wo {num_heads = 4 : i64}
       : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<2x8x64xf32>
  return %y : tensor<2x8x64xf32>
}

// -----

func.func @key_length(%q: tensor<2x16x64xf32>, %k: tensor<2x10x64xf32>, %v: tensor<2x12x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>) -> tensor<2x16x64xf32> {
  // expected-error @+1 {{'value' dimension 1 (Sk) must match 'key' dimension 1: expected 10, found 12}}
  %y = mha.multi_head_attention %q, %k, %v, %wq, %wk, %wv, %wo {num_heads = 4 : i64}
       : (tensor<2x16x64xf32>, tensor<2x10x64xf32>, tensor<2x12x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}

// -----

func.func @w_q_heads(%q: tensor<2x16x64xf32>, %k: tensor<2x16x64xf32>, %v: tensor<2x16x64xf32>, %wq: tensor<64x66xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>) -> tensor<2x16x64xf32> {
  // expected-error @+1 {{'w_q' dimension 1 (H*dk) must be a positive multiple of 'num_heads' (4), found 66}}
  %y = mha.multi_head_attention %q, %k, %v, %wq, %wk, %wv, %wo {num_heads = 4 : i64}
       : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x66xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}

// -----

func.func @w_v_heads(%q: tensor<2x16x64xf32>, %k: tensor<2x16x64xf32>, %v: tensor<2x16x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x32xf32>, %wv: tensor<64x33xf32>, %wo: tensor<64x64xf32>) -> tensor<2x16x64xf32> {
  // expected-error @+1 {{'w_v' dimension 1 (Hkv*dv) must be a positive multiple of 'num_kv_heads' (2), found 33}}
  %y = mha.multi_head_attention %q, %k, %v, %wq, %wk, %wv, %wo {num_heads = 4 : i64, num_kv_heads = 2 : i64}
       : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x64xf32>, tensor<64x32xf32>, tensor<64x33xf32>, tensor<64x64xf32>) -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}

// -----

func.func @w_q_rows(%q: tensor<2x16x64xf32>, %k: tensor<2x16x64xf32>, %v: tensor<2x16x64xf32>, %wq: tensor<32x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>) -> tensor<2x16x64xf32> {
  // expected-error @+1 {{'w_q' dimension 0 (Eq) must match 'query' dimension 2: expected 64, found 32}}
  %y = mha.multi_head_attention %q, %k, %v, %wq, %wk, %wv, %wo {num_heads = 4 : i64}
       : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}

// -----

func.func @w_k_rows(%q: tensor<2x16x64xf32>, %k: tensor<2x16x48xf32>, %v: tensor<2x16x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>) -> tensor<2x16x64xf32> {
  // expected-error @+1 {{'w_k' dimension 0 (Ek) must match 'key' dimension 2: expected 48, found 64}}
  %y = mha.multi_head_attention %q, %k, %v, %wq, %wk, %wv, %wo {num_heads = 4 : i64}
       : (tensor<2x16x64xf32>, tensor<2x16x48xf32>, tensor<2x16x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}

// -----

func.func @w_k_heads(%q: tensor<2x16x64xf32>, %k: tensor<2x16x64xf32>, %v: tensor<2x16x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x32xf32>, %wo: tensor<64x64xf32>) -> tensor<2x16x64xf32> {
  // expected-error @+1 {{'w_k' dimension 1 (Hkv*dk) must match num_kv_heads * dk = 2 * 16: expected 32, found 64}}
  %y = mha.multi_head_attention %q, %k, %v, %wq, %wk, %wv, %wo {num_heads = 4 : i64, num_kv_heads = 2 : i64}
       : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x32xf32>, tensor<64x64xf32>) -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}

// -----

func.func @w_v_rows(%q: tensor<2x16x64xf32>, %k: tensor<2x16x64xf32>, %v: tensor<2x16x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<48x64xf32>, %wo: tensor<64x64xf32>) -> tensor<2x16x64xf32> {
  // expected-error @+1 {{'w_v' dimension 0 (Ev) must match 'value' dimension 2: expected 64, found 48}}
  %y = mha.multi_head_attention %q, %k, %v, %wq, %wk, %wv, %wo {num_heads = 4 : i64}
       : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<48x64xf32>, tensor<64x64xf32>) -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}

// -----

func.func @w_o_rows(%q: tensor<2x16x64xf32>, %k: tensor<2x16x64xf32>, %v: tensor<2x16x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x32xf32>, %wo: tensor<64x64xf32>) -> tensor<2x16x64xf32> {
  // expected-error @+1 {{'w_o' dimension 0 (H*dv) must match num_heads * dv = 4 * 8: expected 32, found 64}}
  %y = mha.multi_head_attention %q, %k, %v, %wq, %wk, %wv, %wo {num_heads = 4 : i64}
       : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x32xf32>, tensor<64x64xf32>) -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}

// -----

func.func @result_width(%q: tensor<2x16x64xf32>, %k: tensor<2x16x64xf32>, %v: tensor<2x16x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>) -> tensor<2x16x32xf32> {
  // expected-error @+1 {{'result' dimension 2 (Eo) must match 'w_o' dimension 1: expected 64, found 32}}
  %y = mha.multi_head_attention %q, %k, %v, %wq, %wk, %wv, %wo {num_heads = 4 : i64}
       : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<2x16x32xf32>
  return %y : tensor<2x16x32xf32>
}

// -----

func.func @bias_rank(%q: tensor<2x16x64xf32>, %k: tensor<2x16x64xf32>, %v: tensor<2x16x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>, %bq: tensor<1x64xf32>, %bk: tensor<64xf32>, %bv: tensor<64xf32>, %bo: tensor<64xf32>) -> tensor<2x16x64xf32> {
  // expected-error @+1 {{'b_q' must have rank 1 ([H*dk]), found rank 2}}
  %y = mha.multi_head_attention %q, %k, %v, %wq, %wk, %wv, %wo bias(%bq, %bk, %bv, %bo) {num_heads = 4 : i64}
       : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<1x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}

// -----

func.func @bias_width(%q: tensor<2x16x64xf32>, %k: tensor<2x16x64xf32>, %v: tensor<2x16x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>, %bq: tensor<64xf32>, %bk: tensor<64xf32>, %bv: tensor<32xf32>, %bo: tensor<64xf32>) -> tensor<2x16x64xf32> {
  // expected-error @+1 {{'b_v' dimension 0 (Hkv*dv) must match the projection width: expected 64, found 32}}
  %y = mha.multi_head_attention %q, %k, %v, %wq, %wk, %wv, %wo bias(%bq, %bk, %bv, %bo) {num_heads = 4 : i64}
       : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<32xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}

// -----

func.func @bias_out_width(%q: tensor<2x16x64xf32>, %k: tensor<2x16x64xf32>, %v: tensor<2x16x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>, %bq: tensor<64xf32>, %bk: tensor<64xf32>, %bv: tensor<64xf32>, %bo: tensor<16xf32>) -> tensor<2x16x64xf32> {
  // expected-error @+1 {{'b_o' dimension 0 (Eo) must match the projection width: expected 64, found 16}}
  %y = mha.multi_head_attention %q, %k, %v, %wq, %wk, %wv, %wo bias(%bq, %bk, %bv, %bo) {num_heads = 4 : i64}
       : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<16xf32>) -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}

// -----

func.func @bias_element_type(%q: tensor<2x16x64xf32>, %k: tensor<2x16x64xf32>, %v: tensor<2x16x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>, %bq: tensor<64xf32>, %bk: tensor<64xf16>, %bv: tensor<64xf32>, %bo: tensor<64xf32>) -> tensor<2x16x64xf32> {
  // expected-error @+1 {{'b_k' element type must match 'query' element type: expected 'f32', found 'f16'}}
  %y = mha.multi_head_attention %q, %k, %v, %wq, %wk, %wv, %wo bias(%bq, %bk, %bv, %bo) {num_heads = 4 : i64}
       : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf16>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}

// -----

func.func @bias_dynamic(%q: tensor<2x16x64xf32>, %k: tensor<2x16x64xf32>, %v: tensor<2x16x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>, %bq: tensor<64xf32>, %bk: tensor<64xf32>, %bv: tensor<64xf32>, %bo: tensor<?xf32>) -> tensor<2x16x64xf32> {
  // expected-error @+1 {{'b_o' dimension 0 (Eo) must be static, found '?'}}
  %y = mha.multi_head_attention %q, %k, %v, %wq, %wk, %wv, %wo bias(%bq, %bk, %bv, %bo) {num_heads = 4 : i64}
       : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<?xf32>) -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}

// -----

// Biases come all four or none. The custom form cannot say otherwise, so this
// case is in the generic form.
func.func @bias_partial(%x: tensor<2x16x64xf32>, %w: tensor<64x64xf32>, %b: tensor<64xf32>) -> tensor<2x16x64xf32> {
  // expected-error @+1 {{bias operands 'b_q', 'b_k', 'b_v' and 'b_o' must be given all four or none, found 2}}
  %y = "mha.multi_head_attention"(%x, %x, %x, %w, %w, %w, %w, %b, %b) <{num_heads = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0>}>
       : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}

// -----

func.func @mask_element_type(%q: tensor<2x16x64xf32>, %k: tensor<2x16x64xf32>, %v: tensor<2x16x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>, %m: tensor<16x16xf16>) -> tensor<2x16x64xf32> {
  // expected-error @+1 {{'mask' element type must be i1 or the element type of 'query' ('f32'), found 'f16'}}
  %y = mha.multi_head_attention %q, %k, %v, %wq, %wk, %wv, %wo mask(%m) {num_heads = 4 : i64}
       : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<16x16xf16>) -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}

// -----

func.func @mask_integer(%q: tensor<2x16x64xf32>, %k: tensor<2x16x64xf32>, %v: tensor<2x16x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>, %m: tensor<16x16xi8>) -> tensor<2x16x64xf32> {
  // expected-error @+1 {{operand #7 must be ranked tensor of 1-bit signless integer or 16-bit float or bfloat16 type or 32-bit float values, but got 'tensor<16x16xi8>'}}
  %y = mha.multi_head_attention %q, %k, %v, %wq, %wk, %wv, %wo mask(%m) {num_heads = 4 : i64}
       : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<16x16xi8>) -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}

// -----

func.func @mask_rank(%q: tensor<2x16x64xf32>, %k: tensor<2x16x64xf32>, %v: tensor<2x16x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>, %m: tensor<16xi1>) -> tensor<2x16x64xf32> {
  // expected-error @+1 {{'mask' must have rank 2 ([Sq, Sk]), 3 ([B, Sq, Sk]) or 4 ([B|1, H|1, Sq|1, Sk|1]), found rank 1}}
  %y = mha.multi_head_attention %q, %k, %v, %wq, %wk, %wv, %wo mask(%m) {num_heads = 4 : i64}
       : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<16xi1>) -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}

// -----

// Ranks 2 and 3 are exact; only rank 4 broadcasts.
func.func @mask_rank2_no_broadcast(%q: tensor<2x16x64xf32>, %k: tensor<2x16x64xf32>, %v: tensor<2x16x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>, %m: tensor<1x16xi1>) -> tensor<2x16x64xf32> {
  // expected-error @+1 {{'mask' dimension 0 (Sq) must match the query length: expected 16, found 1}}
  %y = mha.multi_head_attention %q, %k, %v, %wq, %wk, %wv, %wo mask(%m) {num_heads = 4 : i64}
       : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<1x16xi1>) -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}

// -----

func.func @mask_rank3_batch(%q: tensor<2x16x64xf32>, %k: tensor<2x16x64xf32>, %v: tensor<2x16x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>, %m: tensor<3x16x16xi1>) -> tensor<2x16x64xf32> {
  // expected-error @+1 {{'mask' dimension 0 (B) must match the batch size: expected 2, found 3}}
  %y = mha.multi_head_attention %q, %k, %v, %wq, %wk, %wv, %wo mask(%m) {num_heads = 4 : i64}
       : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<3x16x16xi1>) -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}

// -----

func.func @mask_rank4_heads(%q: tensor<2x16x64xf32>, %k: tensor<2x16x64xf32>, %v: tensor<2x16x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>, %m: tensor<1x2x16x16xi1>) -> tensor<2x16x64xf32> {
  // expected-error @+1 {{'mask' dimension 1 (H) must be 1 or match the number of heads: expected 4, found 2}}
  %y = mha.multi_head_attention %q, %k, %v, %wq, %wk, %wv, %wo mask(%m) {num_heads = 4 : i64}
       : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<1x2x16x16xi1>) -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}

// -----

func.func @mask_rank4_keys(%q: tensor<2x16x64xf32>, %k: tensor<2x10x64xf32>, %v: tensor<2x10x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>, %m: tensor<2x4x16x16xf32>) -> tensor<2x16x64xf32> {
  // expected-error @+1 {{'mask' dimension 3 (Sk) must be 1 or match the key length: expected 10, found 16}}
  %y = mha.multi_head_attention %q, %k, %v, %wq, %wk, %wv, %wo mask(%m) {num_heads = 4 : i64}
       : (tensor<2x16x64xf32>, tensor<2x10x64xf32>, tensor<2x10x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<2x4x16x16xf32>) -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}

// -----

func.func @att_scale(%q: tensor<2x8x16x64xf32>, %k: tensor<2x2x16x64xf32>, %v: tensor<2x2x16x32xf32>, %init: tensor<2x8x16x32xf32>) -> tensor<2x8x16x32xf32> {
  // expected-error @+1 {{'scale' must be a positive finite number, found -0.5}}
  %o = mha.attention ins(%q, %k, %v : tensor<2x8x16x64xf32>, tensor<2x2x16x64xf32>, tensor<2x2x16x32xf32>)
         outs(%init : tensor<2x8x16x32xf32>) {scale = -0.5 : f32} -> tensor<2x8x16x32xf32>
  return %o : tensor<2x8x16x32xf32>
}

// -----

func.func @att_query_rank(%q: tensor<2x16x64xf32>, %k: tensor<2x2x16x64xf32>, %v: tensor<2x2x16x32xf32>, %init: tensor<2x8x16x32xf32>) -> tensor<2x8x16x32xf32> {
  // expected-error @+1 {{'query' must have rank 4 ([B, H, Sq, dk]), found rank 3}}
  %o = mha.attention ins(%q, %k, %v : tensor<2x16x64xf32>, tensor<2x2x16x64xf32>, tensor<2x2x16x32xf32>)
         outs(%init : tensor<2x8x16x32xf32>) -> tensor<2x8x16x32xf32>
  return %o : tensor<2x8x16x32xf32>
}

// -----

func.func @att_key_rank(%q: tensor<2x8x16x64xf32>, %k: tensor<2x16x64xf32>, %v: tensor<2x2x16x32xf32>, %init: tensor<2x8x16x32xf32>) -> tensor<2x8x16x32xf32> {
  // expected-error @+1 {{'key' must have rank 4 ([B, Hkv, Sk, dk]), found rank 3}}
  %o = mha.attention ins(%q, %k, %v : tensor<2x8x16x64xf32>, tensor<2x16x64xf32>, tensor<2x2x16x32xf32>)
         outs(%init : tensor<2x8x16x32xf32>) -> tensor<2x8x16x32xf32>
  return %o : tensor<2x8x16x32xf32>
}

// -----

func.func @att_value_rank(%q: tensor<2x8x16x64xf32>, %k: tensor<2x2x16x64xf32>, %v: tensor<2x2x16x32x1xf32>, %init: tensor<2x8x16x32xf32>) -> tensor<2x8x16x32xf32> {
  // expected-error @+1 {{'value' must have rank 4 ([B, Hkv, Sk, dv]), found rank 5}}
  %o = mha.attention ins(%q, %k, %v : tensor<2x8x16x64xf32>, tensor<2x2x16x64xf32>, tensor<2x2x16x32x1xf32>)
         outs(%init : tensor<2x8x16x32xf32>) -> tensor<2x8x16x32xf32>
  return %o : tensor<2x8x16x32xf32>
}

// -----

func.func @att_init_rank(%q: tensor<2x8x16x64xf32>, %k: tensor<2x2x16x64xf32>, %v: tensor<2x2x16x32xf32>, %init: tensor<2x16x32xf32>) -> tensor<2x16x32xf32> {
  // expected-error @+1 {{'init' must have rank 4 ([B, H, Sq, dv]), found rank 3}}
  %o = mha.attention ins(%q, %k, %v : tensor<2x8x16x64xf32>, tensor<2x2x16x64xf32>, tensor<2x2x16x32xf32>)
         outs(%init : tensor<2x16x32xf32>) -> tensor<2x16x32xf32>
  return %o : tensor<2x16x32xf32>
}

// -----

func.func @att_result_type(%q: tensor<2x8x16x64xf32>, %k: tensor<2x2x16x64xf32>, %v: tensor<2x2x16x32xf32>, %init: tensor<2x8x16x32xf32>) -> tensor<2x8x?x32xf32> {
  // expected-error @+1 {{result type must match 'init' type: expected 'tensor<2x8x16x32xf32>', found 'tensor<2x8x?x32xf32>'}}
  %o = mha.attention ins(%q, %k, %v : tensor<2x8x16x64xf32>, tensor<2x2x16x64xf32>, tensor<2x2x16x32xf32>)
         outs(%init : tensor<2x8x16x32xf32>) -> tensor<2x8x?x32xf32>
  return %o : tensor<2x8x?x32xf32>
}

// -----

func.func @att_element_type(%q: tensor<2x8x16x64xf32>, %k: tensor<2x2x16x64xf32>, %v: tensor<2x2x16x32xbf16>, %init: tensor<2x8x16x32xf32>) -> tensor<2x8x16x32xf32> {
  // expected-error @+1 {{'value' element type must match 'query' element type: expected 'f32', found 'bf16'}}
  %o = mha.attention ins(%q, %k, %v : tensor<2x8x16x64xf32>, tensor<2x2x16x64xf32>, tensor<2x2x16x32xbf16>)
         outs(%init : tensor<2x8x16x32xf32>) -> tensor<2x8x16x32xf32>
  return %o : tensor<2x8x16x32xf32>
}

// -----

func.func @att_dynamic_heads(%q: tensor<2x?x16x64xf32>, %k: tensor<2x2x16x64xf32>, %v: tensor<2x2x16x32xf32>, %init: tensor<2x?x16x32xf32>) -> tensor<2x?x16x32xf32> {
  // expected-error @+1 {{'query' dimension 1 (H) must be static, found '?'}}
  %o = mha.attention ins(%q, %k, %v : tensor<2x?x16x64xf32>, tensor<2x2x16x64xf32>, tensor<2x2x16x32xf32>)
         outs(%init : tensor<2x?x16x32xf32>) -> tensor<2x?x16x32xf32>
  return %o : tensor<2x?x16x32xf32>
}

// -----

func.func @att_dynamic_head_dim(%q: tensor<2x8x16x?xf32>, %k: tensor<2x2x16x64xf32>, %v: tensor<2x2x16x32xf32>, %init: tensor<2x8x16x32xf32>) -> tensor<2x8x16x32xf32> {
  // expected-error @+1 {{'query' dimension 3 (dk) must be static, found '?'}}
  %o = mha.attention ins(%q, %k, %v : tensor<2x8x16x?xf32>, tensor<2x2x16x64xf32>, tensor<2x2x16x32xf32>)
         outs(%init : tensor<2x8x16x32xf32>) -> tensor<2x8x16x32xf32>
  return %o : tensor<2x8x16x32xf32>
}

// -----

func.func @att_dynamic_kv_heads(%q: tensor<2x8x16x64xf32>, %k: tensor<2x?x16x64xf32>, %v: tensor<2x2x16x32xf32>, %init: tensor<2x8x16x32xf32>) -> tensor<2x8x16x32xf32> {
  // expected-error @+1 {{'key' dimension 1 (Hkv) must be static, found '?'}}
  %o = mha.attention ins(%q, %k, %v : tensor<2x8x16x64xf32>, tensor<2x?x16x64xf32>, tensor<2x2x16x32xf32>)
         outs(%init : tensor<2x8x16x32xf32>) -> tensor<2x8x16x32xf32>
  return %o : tensor<2x8x16x32xf32>
}

// -----

func.func @att_dynamic_value_dim(%q: tensor<2x8x16x64xf32>, %k: tensor<2x2x16x64xf32>, %v: tensor<2x2x16x?xf32>, %init: tensor<2x8x16x32xf32>) -> tensor<2x8x16x32xf32> {
  // expected-error @+1 {{'value' dimension 3 (dv) must be static, found '?'}}
  %o = mha.attention ins(%q, %k, %v : tensor<2x8x16x64xf32>, tensor<2x2x16x64xf32>, tensor<2x2x16x?xf32>)
         outs(%init : tensor<2x8x16x32xf32>) -> tensor<2x8x16x32xf32>
  return %o : tensor<2x8x16x32xf32>
}

// -----

func.func @att_batch(%q: tensor<2x8x16x64xf32>, %k: tensor<2x2x16x64xf32>, %v: tensor<2x2x16x32xf32>, %init: tensor<4x8x16x32xf32>) -> tensor<4x8x16x32xf32> {
  // expected-error @+1 {{'init' dimension 0 (B) must match 'query' dimension 0: expected 2, found 4}}
  %o = mha.attention ins(%q, %k, %v : tensor<2x8x16x64xf32>, tensor<2x2x16x64xf32>, tensor<2x2x16x32xf32>)
         outs(%init : tensor<4x8x16x32xf32>) -> tensor<4x8x16x32xf32>
  return %o : tensor<4x8x16x32xf32>
}

// -----

func.func @att_key_dim(%q: tensor<2x8x16x64xf32>, %k: tensor<2x2x16x32xf32>, %v: tensor<2x2x16x32xf32>, %init: tensor<2x8x16x32xf32>) -> tensor<2x8x16x32xf32> {
  // expected-error @+1 {{'key' dimension 3 (dk) must match 'query' dimension 3: expected 64, found 32}}
  %o = mha.attention ins(%q, %k, %v : tensor<2x8x16x64xf32>, tensor<2x2x16x32xf32>, tensor<2x2x16x32xf32>)
         outs(%init : tensor<2x8x16x32xf32>) -> tensor<2x8x16x32xf32>
  return %o : tensor<2x8x16x32xf32>
}

// -----

func.func @att_value_heads(%q: tensor<2x8x16x64xf32>, %k: tensor<2x2x16x64xf32>, %v: tensor<2x4x16x32xf32>, %init: tensor<2x8x16x32xf32>) -> tensor<2x8x16x32xf32> {
  // expected-error @+1 {{'value' dimension 1 (Hkv) must match 'key' dimension 1: expected 2, found 4}}
  %o = mha.attention ins(%q, %k, %v : tensor<2x8x16x64xf32>, tensor<2x2x16x64xf32>, tensor<2x4x16x32xf32>)
         outs(%init : tensor<2x8x16x32xf32>) -> tensor<2x8x16x32xf32>
  return %o : tensor<2x8x16x32xf32>
}

// -----

func.func @att_init_heads(%q: tensor<2x8x16x64xf32>, %k: tensor<2x2x16x64xf32>, %v: tensor<2x2x16x32xf32>, %init: tensor<2x4x16x32xf32>) -> tensor<2x4x16x32xf32> {
  // expected-error @+1 {{'init' dimension 1 (H) must match 'query' dimension 1: expected 8, found 4}}
  %o = mha.attention ins(%q, %k, %v : tensor<2x8x16x64xf32>, tensor<2x2x16x64xf32>, tensor<2x2x16x32xf32>)
         outs(%init : tensor<2x4x16x32xf32>) -> tensor<2x4x16x32xf32>
  return %o : tensor<2x4x16x32xf32>
}

// -----

func.func @att_init_value_dim(%q: tensor<2x8x16x64xf32>, %k: tensor<2x2x16x64xf32>, %v: tensor<2x2x16x32xf32>, %init: tensor<2x8x16x64xf32>) -> tensor<2x8x16x64xf32> {
  // expected-error @+1 {{'init' dimension 3 (dv) must match 'value' dimension 3: expected 32, found 64}}
  %o = mha.attention ins(%q, %k, %v : tensor<2x8x16x64xf32>, tensor<2x2x16x64xf32>, tensor<2x2x16x32xf32>)
         outs(%init : tensor<2x8x16x64xf32>) -> tensor<2x8x16x64xf32>
  return %o : tensor<2x8x16x64xf32>
}

// -----

func.func @att_query_length(%q: tensor<2x8x16x64xf32>, %k: tensor<2x2x16x64xf32>, %v: tensor<2x2x16x32xf32>, %init: tensor<2x8x12x32xf32>) -> tensor<2x8x12x32xf32> {
  // expected-error @+1 {{'init' dimension 2 (Sq) must match 'query' dimension 2: expected 16, found 12}}
  %o = mha.attention ins(%q, %k, %v : tensor<2x8x16x64xf32>, tensor<2x2x16x64xf32>, tensor<2x2x16x32xf32>)
         outs(%init : tensor<2x8x12x32xf32>) -> tensor<2x8x12x32xf32>
  return %o : tensor<2x8x12x32xf32>
}

// -----

func.func @att_key_length(%q: tensor<2x8x16x64xf32>, %k: tensor<2x2x16x64xf32>, %v: tensor<2x2x20x32xf32>, %init: tensor<2x8x16x32xf32>) -> tensor<2x8x16x32xf32> {
  // expected-error @+1 {{'value' dimension 2 (Sk) must match 'key' dimension 2: expected 16, found 20}}
  %o = mha.attention ins(%q, %k, %v : tensor<2x8x16x64xf32>, tensor<2x2x16x64xf32>, tensor<2x2x20x32xf32>)
         outs(%init : tensor<2x8x16x32xf32>) -> tensor<2x8x16x32xf32>
  return %o : tensor<2x8x16x32xf32>
}

// -----

func.func @att_kv_heads_divide(%q: tensor<2x8x16x64xf32>, %k: tensor<2x3x16x64xf32>, %v: tensor<2x3x16x32xf32>, %init: tensor<2x8x16x32xf32>) -> tensor<2x8x16x32xf32> {
  // expected-error @+1 {{'key' dimension 1 (Hkv) must be positive and divide 'query' dimension 1 (H = 8), found 3}}
  %o = mha.attention ins(%q, %k, %v : tensor<2x8x16x64xf32>, tensor<2x3x16x64xf32>, tensor<2x3x16x32xf32>)
         outs(%init : tensor<2x8x16x32xf32>) -> tensor<2x8x16x32xf32>
  return %o : tensor<2x8x16x32xf32>
}

// -----

func.func @att_mask_heads(%q: tensor<2x8x16x64xf32>, %k: tensor<2x2x16x64xf32>, %v: tensor<2x2x16x32xf32>, %m: tensor<2x2x16x16xi1>, %init: tensor<2x8x16x32xf32>) -> tensor<2x8x16x32xf32> {
  // expected-error @+1 {{'mask' dimension 1 (H) must be 1 or match the number of heads: expected 8, found 2}}
  %o = mha.attention ins(%q, %k, %v : tensor<2x8x16x64xf32>, tensor<2x2x16x64xf32>, tensor<2x2x16x32xf32>) mask(%m : tensor<2x2x16x16xi1>)
         outs(%init : tensor<2x8x16x32xf32>) -> tensor<2x8x16x32xf32>
  return %o : tensor<2x8x16x32xf32>
}

// -----

func.func @att_mask_length(%q: tensor<2x8x16x64xf32>, %k: tensor<2x2x16x64xf32>, %v: tensor<2x2x16x32xf32>, %m: tensor<16x17xi1>, %init: tensor<2x8x16x32xf32>) -> tensor<2x8x16x32xf32> {
  // expected-error @+1 {{'mask' dimension 1 (Sk) must match the key length: expected 16, found 17}}
  %o = mha.attention ins(%q, %k, %v : tensor<2x8x16x64xf32>, tensor<2x2x16x64xf32>, tensor<2x2x16x32xf32>) mask(%m : tensor<16x17xi1>)
         outs(%init : tensor<2x8x16x32xf32>) -> tensor<2x8x16x32xf32>
  return %o : tensor<2x8x16x32xf32>
}


// -----

func.func @att_causal_offset_without_causal(%q: tensor<1x2x4x8xf32>, %off: index, %init: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  // expected-error @+1 {{'causal_offset' requires the 'causal' attribute or a window ('window_left', 'window_right')}}
  %o = mha.attention ins(%q, %q, %q : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>)
         causal_offset(%off) outs(%init : tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

func.func @att_zero_head_dim(%q: tensor<1x2x4x0xf32>, %init: tensor<1x2x4x0xf32>) -> tensor<1x2x4x0xf32> {
  // expected-error @+1 {{'query' dimension 3 (dk) must be positive, found 0}}
  %o = mha.attention ins(%q, %q, %q : tensor<1x2x4x0xf32>, tensor<1x2x4x0xf32>, tensor<1x2x4x0xf32>)
         outs(%init : tensor<1x2x4x0xf32>) -> tensor<1x2x4x0xf32>
  return %o : tensor<1x2x4x0xf32>
}

// -----

func.func @online_acc_rank(%q: tensor<1x2x4x8xf32>, %acc: tensor<1x2x4xf32>, %m: tensor<1x2x4xf32>) -> tensor<1x2x4xf32> {
  // expected-error @+1 {{'acc' must have rank 4 ([B, H, Sq, dv]), found rank 3}}
  %r:3 = mha.online_attention ins(%q, %q, %q : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>)
           outs(%acc, %m, %m : tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>)
           -> tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>
  return %r#1 : tensor<1x2x4xf32>
}

// -----

func.func @online_max_rank(%q: tensor<1x2x4x8xf32>, %acc: tensor<1x2x4x8xf32>, %m: tensor<1x2x4x1xf32>, %s: tensor<1x2x4xf32>) -> tensor<1x2x4xf32> {
  // expected-error @+1 {{'max' must have rank 3 ([B, H, Sq]), found rank 4}}
  %r:3 = mha.online_attention ins(%q, %q, %q : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>)
           outs(%acc, %m, %s : tensor<1x2x4x8xf32>, tensor<1x2x4x1xf32>, tensor<1x2x4xf32>)
           -> tensor<1x2x4x8xf32>, tensor<1x2x4x1xf32>, tensor<1x2x4xf32>
  return %r#2 : tensor<1x2x4xf32>
}

// -----

func.func @online_sum_queries(%q: tensor<1x2x4x8xf32>, %acc: tensor<1x2x4x8xf32>, %m: tensor<1x2x4xf32>, %s: tensor<1x2x5xf32>) -> tensor<1x2x5xf32> {
  // expected-error @+1 {{'sum' dimension 2 (Sq) must match 'query' dimension 2: expected 4, found 5}}
  %r:3 = mha.online_attention ins(%q, %q, %q : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>)
           outs(%acc, %m, %s : tensor<1x2x4x8xf32>, tensor<1x2x4xf32>, tensor<1x2x5xf32>)
           -> tensor<1x2x4x8xf32>, tensor<1x2x4xf32>, tensor<1x2x5xf32>
  return %r#2 : tensor<1x2x5xf32>
}

// -----

func.func @online_acc_heads(%q: tensor<1x2x4x8xf32>, %acc: tensor<1x3x4x8xf32>, %m: tensor<1x2x4xf32>) -> tensor<1x3x4x8xf32> {
  // expected-error @+1 {{'acc' dimension 1 (H) must match 'query' dimension 1: expected 2, found 3}}
  %r:3 = mha.online_attention ins(%q, %q, %q : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>)
           outs(%acc, %m, %m : tensor<1x3x4x8xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>)
           -> tensor<1x3x4x8xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>
  return %r#0 : tensor<1x3x4x8xf32>
}

// -----

func.func @online_result_type(%q: tensor<1x2x4x8xf32>, %acc: tensor<1x2x4x8xf32>, %m: tensor<1x2x4xf32>) -> tensor<1x2x?xf32> {
  // expected-error @+1 {{result type must match 'max' type: expected 'tensor<1x2x4xf32>', found 'tensor<1x2x?xf32>'}}
  %r:3 = mha.online_attention ins(%q, %q, %q : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>)
           outs(%acc, %m, %m : tensor<1x2x4x8xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>)
           -> tensor<1x2x4x8xf32>, tensor<1x2x?xf32>, tensor<1x2x4xf32>
  return %r#1 : tensor<1x2x?xf32>
}

// -----

func.func @online_state_type(%q: tensor<1x2x4x8xf16>, %acc: tensor<1x2x4x8xf16>, %m: tensor<1x2x4xf32>) -> tensor<1x2x4xf32> {
  // expected-error @+1 {{operand #3 must be ranked tensor of 32-bit float values, but got 'tensor<1x2x4x8xf16>'}}
  %r:3 = mha.online_attention ins(%q, %q, %q : tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16>)
           outs(%acc, %m, %m : tensor<1x2x4x8xf16>, tensor<1x2x4xf32>, tensor<1x2x4xf32>)
           -> tensor<1x2x4x8xf16>, tensor<1x2x4xf32>, tensor<1x2x4xf32>
  return %r#1 : tensor<1x2x4xf32>
}

// -----

func.func @online_mask_keys(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x6x8xf32>, %mask: tensor<1x1x4x5xi1>, %acc: tensor<1x2x4x8xf32>, %m: tensor<1x2x4xf32>) -> tensor<1x2x4xf32> {
  // expected-error @+1 {{'mask' dimension 3 (Sk) must be 1 or match the key length: expected 6, found 5}}
  %r:3 = mha.online_attention ins(%q, %k, %k : tensor<1x2x4x8xf32>, tensor<1x2x6x8xf32>, tensor<1x2x6x8xf32>)
           mask(%mask : tensor<1x1x4x5xi1>)
           outs(%acc, %m, %m : tensor<1x2x4x8xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>)
           -> tensor<1x2x4x8xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>
  return %r#1 : tensor<1x2x4xf32>
}

// -----

func.func @return_weights_unknown(%x: tensor<2x8x16xf32>, %w: tensor<16x16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8x8xf32>) {
  // expected-error @+1 {{'return_weights' must be "per_head" or "average", found "mean"}}
  %y, %p = mha.multi_head_attention %x, %x, %x, %w, %w, %w, %w {num_heads = 2 : i64, return_weights = "mean"}
       : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8x8xf32>)
  return %y, %p : tensor<2x8x16xf32>, tensor<2x8x8xf32>
}

// -----

func.func @return_weights_without_result(%x: tensor<2x8x16xf32>, %w: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{the 'weights' result is present exactly when 'return_weights' is: found the attribute without the result}}
  %y = mha.multi_head_attention %x, %x, %x, %w, %w, %w, %w {num_heads = 2 : i64, return_weights = "average"}
       : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

func.func @weights_result_without_attribute(%x: tensor<2x8x16xf32>, %w: tensor<16x16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8x8xf32>) {
  // expected-error @+1 {{the 'weights' result is present exactly when 'return_weights' is: found the result without the attribute}}
  %y, %p = mha.multi_head_attention %x, %x, %x, %w, %w, %w, %w {num_heads = 2 : i64}
       : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8x8xf32>)
  return %y, %p : tensor<2x8x16xf32>, tensor<2x8x8xf32>
}

// -----

func.func @weights_per_head_rank(%x: tensor<2x8x16xf32>, %w: tensor<16x16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8x8xf32>) {
  // expected-error @+1 {{'weights' must have rank 4 ([B, H, Sq, Sk]), found rank 3}}
  %y, %p = mha.multi_head_attention %x, %x, %x, %w, %w, %w, %w {num_heads = 2 : i64, return_weights = "per_head"}
       : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8x8xf32>)
  return %y, %p : tensor<2x8x16xf32>, tensor<2x8x8xf32>
}

// -----

func.func @weights_key_length(%x: tensor<2x8x16xf32>, %w: tensor<16x16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8x9xf32>) {
  // expected-error @+1 {{'weights' dimension 2 (Sk) must match the scores: expected 8, found 9}}
  %y, %p = mha.multi_head_attention %x, %x, %x, %w, %w, %w, %w {num_heads = 2 : i64, return_weights = "average"}
       : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8x9xf32>)
  return %y, %p : tensor<2x8x16xf32>, tensor<2x8x9xf32>
}

// -----

func.func @attention_weights_heads(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x6x16xf32>, %init: tensor<1x2x8x6xf32>) -> tensor<1x2x8x6xf32> {
  // expected-error @+1 {{'init' dimension 1 (H) must match the scores: expected 4, found 2}}
  %p = mha.attention_weights ins(%q, %k : tensor<1x4x8x16xf32>, tensor<1x2x6x16xf32>) outs(%init : tensor<1x2x8x6xf32>) -> tensor<1x2x8x6xf32>
  return %p : tensor<1x2x8x6xf32>
}

// -----

func.func @attention_weights_average_rank(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x6x16xf32>, %init: tensor<1x4x8x6xf32>) -> tensor<1x4x8x6xf32> {
  // expected-error @+1 {{'init' must have rank 3 ([B, Sq, Sk]), found rank 4}}
  %p = mha.attention_weights ins(%q, %k : tensor<1x4x8x16xf32>, tensor<1x2x6x16xf32>) outs(%init : tensor<1x4x8x6xf32>) {average_heads} -> tensor<1x4x8x6xf32>
  return %p : tensor<1x4x8x6xf32>
}

// -----

func.func @attention_weights_stage_average(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x6x16xf32>, %init: tensor<1x8x6xf32>) -> tensor<1x8x6xf32> {
  // expected-error @+1 {{averages the probabilities only: 'average_heads' with stage 'logits'}}
  %p = mha.attention_weights ins(%q, %k : tensor<1x4x8x16xf32>, tensor<1x2x6x16xf32>) outs(%init : tensor<1x8x6xf32>) {average_heads, stage = #mha.weights_stage<logits>} -> tensor<1x8x6xf32>
  return %p : tensor<1x8x6xf32>
}

// -----

func.func @attention_weights_stage_unknown(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x6x16xf32>, %init: tensor<1x4x8x6xf32>) -> tensor<1x4x8x6xf32> {
  // expected-error @+2 {{expected ::mlir::mha::WeightsStage to be one of: scores, logits, probabilities}}
  // expected-error @+1 {{failed to parse MHA_WeightsStageAttr parameter 'value'}}
  %p = mha.attention_weights ins(%q, %k : tensor<1x4x8x16xf32>, tensor<1x2x6x16xf32>) outs(%init : tensor<1x4x8x6xf32>) {stage = #mha.weights_stage<softmax>} -> tensor<1x4x8x6xf32>
  return %p : tensor<1x4x8x6xf32>
}

// -----

func.func @attention_weights_result(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x6x16xf32>, %init: tensor<1x8x6xf32>) -> tensor<1x8x?xf32> {
  // expected-error @+1 {{result type must match 'init' type: expected 'tensor<1x8x6xf32>', found 'tensor<1x8x?xf32>'}}
  %p = mha.attention_weights ins(%q, %k : tensor<1x4x8x16xf32>, tensor<1x2x6x16xf32>) outs(%init : tensor<1x8x6xf32>) {average_heads} -> tensor<1x8x?xf32>
  return %p : tensor<1x8x?xf32>
}

// -----

func.func @attention_weights_key(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x6x8xf32>, %init: tensor<1x8x6xf32>) -> tensor<1x8x6xf32> {
  // expected-error @+1 {{'key' dimension 3 (dk) must match 'query' dimension 3: expected 16, found 8}}
  %p = mha.attention_weights ins(%q, %k : tensor<1x4x8x16xf32>, tensor<1x2x6x8xf32>) outs(%init : tensor<1x8x6xf32>) {average_heads} -> tensor<1x8x6xf32>
  return %p : tensor<1x8x6xf32>
}

// -----

// key_transposed: the key is [B, Hkv, dk, Sk], so a key in the default layout
// has the wrong dk.
func.func @att_key_transposed_dk(%q: tensor<2x8x16x64xf32>, %k: tensor<2x2x16x64xf32>, %v: tensor<2x2x16x32xf32>, %init: tensor<2x8x16x32xf32>) -> tensor<2x8x16x32xf32> {
  // expected-error @+1 {{'key' dimension 2 (dk) must match 'query' dimension 3: expected 64, found 16}}
  %o = mha.attention ins(%q, %k, %v : tensor<2x8x16x64xf32>, tensor<2x2x16x64xf32>, tensor<2x2x16x32xf32>)
         outs(%init : tensor<2x8x16x32xf32>) {key_transposed} -> tensor<2x8x16x32xf32>
  return %o : tensor<2x8x16x32xf32>
}

// -----

func.func @att_key_transposed_length(%q: tensor<2x8x16x64xf32>, %kt: tensor<2x2x64x16xf32>, %v: tensor<2x2x20x32xf32>, %init: tensor<2x8x16x32xf32>) -> tensor<2x8x16x32xf32> {
  // expected-error @+1 {{'value' dimension 2 (Sk) must match 'key' dimension 3: expected 16, found 20}}
  %o = mha.attention ins(%q, %kt, %v : tensor<2x8x16x64xf32>, tensor<2x2x64x16xf32>, tensor<2x2x20x32xf32>)
         outs(%init : tensor<2x8x16x32xf32>) {key_transposed} -> tensor<2x8x16x32xf32>
  return %o : tensor<2x8x16x32xf32>
}

// -----

func.func @att_key_transposed_rank(%q: tensor<2x8x16x64xf32>, %kt: tensor<2x64x16xf32>, %v: tensor<2x2x16x32xf32>, %init: tensor<2x8x16x32xf32>) -> tensor<2x8x16x32xf32> {
  // expected-error @+1 {{'key' must have rank 4 ([B, Hkv, dk, Sk]), found rank 3}}
  %o = mha.attention ins(%q, %kt, %v : tensor<2x8x16x64xf32>, tensor<2x64x16xf32>, tensor<2x2x16x32xf32>)
         outs(%init : tensor<2x8x16x32xf32>) {key_transposed} -> tensor<2x8x16x32xf32>
  return %o : tensor<2x8x16x32xf32>
}

// -----

func.func @weights_key_transposed_length(%q: tensor<2x8x16x64xf32>, %kt: tensor<2x2x64x16xf32>, %init: tensor<2x8x16x20xf32>) -> tensor<2x8x16x20xf32> {
  // expected-error @+1 {{'init' dimension 3 (Sk) must match the scores: expected 16, found 20}}
  %p = mha.attention_weights ins(%q, %kt : tensor<2x8x16x64xf32>, tensor<2x2x64x16xf32>)
         outs(%init : tensor<2x8x16x20xf32>) {key_transposed} -> tensor<2x8x16x20xf32>
  return %p : tensor<2x8x16x20xf32>
}

// -----

func.func @att_key_offset_without_lengths(%q: tensor<1x2x4x8xf32>, %j0: index, %init: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  // expected-error @+1 {{'key_offset' requires 'key_lengths'}}
  %o = mha.attention ins(%q, %q, %q : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>)
         key_offset(%j0) outs(%init : tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

func.func @att_key_lengths_batch(%q: tensor<2x2x4x8xf32>, %len: tensor<3xi32>, %init: tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32> {
  // expected-error @+1 {{'key_lengths' dimension 0 (B) must match the batch size: expected 2, found 3}}
  %o = mha.attention ins(%q, %q, %q : tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>)
         key_lengths(%len : tensor<3xi32>) outs(%init : tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32>
  return %o : tensor<2x2x4x8xf32>
}

// -----

func.func @att_key_lengths_type(%q: tensor<2x2x4x8xf32>, %len: tensor<2xf32>, %init: tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32> {
  // expected-error @+1 {{operand #3 must be 1D tensor of 32-bit signless integer or 64-bit signless integer values}}
  %o = mha.attention ins(%q, %q, %q : tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>)
         key_lengths(%len : tensor<2xf32>) outs(%init : tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32>
  return %o : tensor<2x2x4x8xf32>
}

// -----

// Lengths known at compile time are checked against the keys.
func.func @att_key_lengths_beyond_keys(%q: tensor<2x2x4x8xf32>, %init: tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32> {
  %len = arith.constant dense<[4, 5]> : tensor<2xi32>
  // expected-error @+1 {{'key_lengths' element 1 must be in [0, Sk = 4], found 5}}
  %o = mha.attention ins(%q, %q, %q : tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>)
         key_lengths(%len : tensor<2xi32>) outs(%init : tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32>
  return %o : tensor<2x2x4x8xf32>
}

// -----

func.func @att_key_lengths_negative(%q: tensor<2x2x4x8xf32>, %init: tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32> {
  %len = arith.constant dense<[-1, 2]> : tensor<2xi64>
  // expected-error @+1 {{'key_lengths' element 0 must be in [0, Sk = 4], found -1}}
  %o = mha.attention ins(%q, %q, %q : tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>)
         key_lengths(%len : tensor<2xi64>) outs(%init : tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32>
  return %o : tensor<2x2x4x8xf32>
}

// -----

func.func @att_window_negative(%q: tensor<1x2x4x8xf32>, %init: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  // expected-error @+1 {{'window_left' must be non-negative, found -1}}
  %o = mha.attention ins(%q, %q, %q : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>)
         outs(%init : tensor<1x2x4x8xf32>) {window_left = -1 : i64} -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

func.func @att_window_right_causal(%q: tensor<1x2x4x8xf32>, %init: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  // expected-error @+1 {{'window_right' cannot be combined with 'causal' (causal is a right window of 0)}}
  %o = mha.attention ins(%q, %q, %q : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>)
         outs(%init : tensor<1x2x4x8xf32>) {causal, window_right = 0 : i64} -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

func.func @att_softcap_zero(%q: tensor<1x2x4x8xf32>, %init: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  // expected-error @+1 {{'softcap' must be a positive finite number, found 0}}
  %o = mha.attention ins(%q, %q, %q : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>)
         outs(%init : tensor<1x2x4x8xf32>) {softcap = 0.0 : f32} -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

func.func @mha_window_negative(%x: tensor<2x4x16xf32>, %w: tensor<16x16xf32>) -> tensor<2x4x16xf32> {
  // expected-error @+1 {{'window_right' must be non-negative, found -2}}
  %y = mha.multi_head_attention %x, %x, %x, %w, %w, %w, %w {num_heads = 2 : i64, window_right = -2 : i64}
         : (tensor<2x4x16xf32>, tensor<2x4x16xf32>, tensor<2x4x16xf32>, tensor<16x16xf32>,
            tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<2x4x16xf32>
  return %y : tensor<2x4x16xf32>
}

// -----

func.func @mha_softcap_inf(%x: tensor<2x4x16xf32>, %w: tensor<16x16xf32>) -> tensor<2x4x16xf32> {
  // expected-error @+1 {{'softcap' must be a positive finite number, found INF}}
  %y = mha.multi_head_attention %x, %x, %x, %w, %w, %w, %w {num_heads = 2 : i64, softcap = 0x7F800000 : f32}
         : (tensor<2x4x16xf32>, tensor<2x4x16xf32>, tensor<2x4x16xf32>, tensor<16x16xf32>,
            tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<2x4x16xf32>
  return %y : tensor<2x4x16xf32>
}

// -----

func.func @mha_key_lengths_batch(%x: tensor<2x4x16xf32>, %w: tensor<16x16xf32>, %len: tensor<1xi32>) -> tensor<2x4x16xf32> {
  // expected-error @+1 {{'key_lengths' dimension 0 (B) must match the batch size: expected 2, found 1}}
  %y = mha.multi_head_attention %x, %x, %x, %w, %w, %w, %w key_lengths(%len) {num_heads = 2 : i64}
         : (tensor<2x4x16xf32>, tensor<2x4x16xf32>, tensor<2x4x16xf32>, tensor<16x16xf32>,
            tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<1xi32>) -> tensor<2x4x16xf32>
  return %y : tensor<2x4x16xf32>
}

// -----

func.func @cache_append_rank(%u: tensor<2x8xf32>, %len: tensor<2xi32>, %c: tensor<2x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'cache' must have rank 3 or more ([B, ..., Smax, d]), found rank 2}}
  %r = mha.cache_append ins(%u : tensor<2x8xf32>) lengths(%len : tensor<2xi32>) outs(%c : tensor<2x8xf32>) -> tensor<2x8xf32>
  return %r : tensor<2x8xf32>
}

// -----

func.func @cache_append_update_rank(%u: tensor<2x1x8xf32>, %len: tensor<2xi32>, %c: tensor<2x2x16x8xf32>) -> tensor<2x2x16x8xf32> {
  // expected-error @+1 {{'update' must have rank 4 (the rank of 'cache': [B, ..., Sn, d]), found rank 3}}
  %r = mha.cache_append ins(%u : tensor<2x1x8xf32>) lengths(%len : tensor<2xi32>) outs(%c : tensor<2x2x16x8xf32>) -> tensor<2x2x16x8xf32>
  return %r : tensor<2x2x16x8xf32>
}

// -----

func.func @cache_append_type(%u: tensor<2x2x1x8xf16>, %len: tensor<2xi32>, %c: tensor<2x2x16x8xf32>) -> tensor<2x2x16x8xf32> {
  // expected-error @+1 {{'update' element type must match 'cache' element type: expected 'f32', found 'f16'}}
  %r = mha.cache_append ins(%u : tensor<2x2x1x8xf16>) lengths(%len : tensor<2xi32>) outs(%c : tensor<2x2x16x8xf32>) -> tensor<2x2x16x8xf32>
  return %r : tensor<2x2x16x8xf32>
}

// -----

func.func @cache_append_heads(%u: tensor<2x4x1x8xf32>, %len: tensor<2xi32>, %c: tensor<2x2x16x8xf32>) -> tensor<2x2x16x8xf32> {
  // expected-error @+1 {{'update' dimension 1 (H) must match 'cache' dimension 1: expected 2, found 4}}
  %r = mha.cache_append ins(%u : tensor<2x4x1x8xf32>) lengths(%len : tensor<2xi32>) outs(%c : tensor<2x2x16x8xf32>) -> tensor<2x2x16x8xf32>
  return %r : tensor<2x2x16x8xf32>
}

// -----

func.func @cache_append_too_long(%u: tensor<2x2x17x8xf32>, %len: tensor<2xi32>, %c: tensor<2x2x16x8xf32>) -> tensor<2x2x16x8xf32> {
  // expected-error @+1 {{'update' dimension 2 (Sn) must not exceed 'cache' dimension 2 (Smax): expected at most 16, found 17}}
  %r = mha.cache_append ins(%u : tensor<2x2x17x8xf32>) lengths(%len : tensor<2xi32>) outs(%c : tensor<2x2x16x8xf32>) -> tensor<2x2x16x8xf32>
  return %r : tensor<2x2x16x8xf32>
}

// -----

func.func @cache_append_batch(%u: tensor<2x2x1x8xf32>, %len: tensor<3xi32>, %c: tensor<2x2x16x8xf32>) -> tensor<2x2x16x8xf32> {
  // expected-error @+1 {{'lengths' dimension 0 (B) must match the batch size: expected 2, found 3}}
  %r = mha.cache_append ins(%u : tensor<2x2x1x8xf32>) lengths(%len : tensor<3xi32>) outs(%c : tensor<2x2x16x8xf32>) -> tensor<2x2x16x8xf32>
  return %r : tensor<2x2x16x8xf32>
}

// -----

func.func @cache_append_full(%u: tensor<2x2x2x8xf32>, %c: tensor<2x2x16x8xf32>) -> tensor<2x2x16x8xf32> {
  %len = arith.constant dense<[14, 15]> : tensor<2xi32>
  // expected-error @+1 {{'lengths' element 1 must be in [0, Smax - Sn = 14], found 15}}
  %r = mha.cache_append ins(%u : tensor<2x2x2x8xf32>) lengths(%len : tensor<2xi32>) outs(%c : tensor<2x2x16x8xf32>) -> tensor<2x2x16x8xf32>
  return %r : tensor<2x2x16x8xf32>
}

// -----

func.func @cache_append_negative(%u: tensor<2x2x2x8xf32>, %c: tensor<2x2x?x8xf32>) -> tensor<2x2x?x8xf32> {
  %len = arith.constant dense<[-1, 0]> : tensor<2xi64>
  // expected-error @+1 {{'lengths' element 0 must be in [0, Smax - Sn], found -1}}
  %r = mha.cache_append ins(%u : tensor<2x2x2x8xf32>) lengths(%len : tensor<2xi64>) outs(%c : tensor<2x2x?x8xf32>) -> tensor<2x2x?x8xf32>
  return %r : tensor<2x2x?x8xf32>
}

// -----

func.func @cache_append_result(%u: tensor<2x2x1x8xf32>, %len: tensor<2xi32>, %c: tensor<2x2x16x8xf32>) -> tensor<2x2x?x8xf32> {
  // expected-error @+1 {{result type must match 'cache' type: expected 'tensor<2x2x16x8xf32>', found 'tensor<2x2x?x8xf32>'}}
  %r = mha.cache_append ins(%u : tensor<2x2x1x8xf32>) lengths(%len : tensor<2xi32>) outs(%c : tensor<2x2x16x8xf32>) -> tensor<2x2x?x8xf32>
  return %r : tensor<2x2x?x8xf32>
}

// -----

func.func @cache_append_lengths_type(%u: tensor<2x2x1x8xf32>, %len: tensor<2xindex>, %c: tensor<2x2x16x8xf32>) -> tensor<2x2x16x8xf32> {
  // expected-error @+1 {{operand #1 must be 1D tensor of 32-bit signless integer or 64-bit signless integer values}}
  %r = mha.cache_append ins(%u : tensor<2x2x1x8xf32>) lengths(%len : tensor<2xindex>) outs(%c : tensor<2x2x16x8xf32>) -> tensor<2x2x16x8xf32>
  return %r : tensor<2x2x16x8xf32>
}

// -----

func.func @rotary_rank(%x: tensor<2x3x16xf32>, %c: tensor<10x8xf32>, %s: tensor<10x8xf32>, %init: tensor<2x3x16xf32>, %p: tensor<2xi32>) -> tensor<2x3x16xf32> {
  // expected-error @+1 {{'input' must have rank 4 ([B, H, S, d]), found rank 3}}
  %r = mha.rotary ins(%x : tensor<2x3x16xf32>) cos_sin(%c, %s : tensor<10x8xf32>, tensor<10x8xf32>) positions(%p : tensor<2xi32>) outs(%init : tensor<2x3x16xf32>) -> tensor<2x3x16xf32>
  return %r : tensor<2x3x16xf32>
}

// -----

func.func @rotary_dynamic_d(%x: tensor<2x2x3x?xf32>, %c: tensor<10x8xf32>, %s: tensor<10x8xf32>, %init: tensor<2x2x3x?xf32>, %p: tensor<2xi32>) -> tensor<2x2x3x?xf32> {
  // expected-error @+1 {{'input' dimension 3 (d) must be static, found '?'}}
  %r = mha.rotary ins(%x : tensor<2x2x3x?xf32>) cos_sin(%c, %s : tensor<10x8xf32>, tensor<10x8xf32>) positions(%p : tensor<2xi32>) outs(%init : tensor<2x2x3x?xf32>) -> tensor<2x2x3x?xf32>
  return %r : tensor<2x2x3x?xf32>
}

// -----

func.func @rotary_cos_rank(%x: tensor<2x2x3x16xf32>, %c: tensor<80xf32>, %s: tensor<80xf32>, %init: tensor<2x2x3x16xf32>, %p: tensor<2xi32>) -> tensor<2x2x3x16xf32> {
  // expected-error @+1 {{'cos' must have rank 2 ([P, R/2]), found rank 1}}
  %r = mha.rotary ins(%x : tensor<2x2x3x16xf32>) cos_sin(%c, %s : tensor<80xf32>, tensor<80xf32>) positions(%p : tensor<2xi32>) outs(%init : tensor<2x2x3x16xf32>) -> tensor<2x2x3x16xf32>
  return %r : tensor<2x2x3x16xf32>
}

// -----

func.func @rotary_cos_type(%x: tensor<2x2x3x16xf32>, %c: tensor<10x8xf16>, %s: tensor<10x8xf16>, %init: tensor<2x2x3x16xf32>, %p: tensor<2xi32>) -> tensor<2x2x3x16xf32> {
  // expected-error @+1 {{'cos' element type must match 'input' element type: expected 'f32', found 'f16'}}
  %r = mha.rotary ins(%x : tensor<2x2x3x16xf32>) cos_sin(%c, %s : tensor<10x8xf16>, tensor<10x8xf16>) positions(%p : tensor<2xi32>) outs(%init : tensor<2x2x3x16xf32>) -> tensor<2x2x3x16xf32>
  return %r : tensor<2x2x3x16xf32>
}

// -----

func.func @rotary_sin_type(%x: tensor<2x2x3x16xf32>, %c: tensor<10x8xf32>, %s: tensor<12x8xf32>, %init: tensor<2x2x3x16xf32>, %p: tensor<2xi32>) -> tensor<2x2x3x16xf32> {
  // expected-error @+1 {{'sin' type must match 'cos' type: expected 'tensor<10x8xf32>', found 'tensor<12x8xf32>'}}
  %r = mha.rotary ins(%x : tensor<2x2x3x16xf32>) cos_sin(%c, %s : tensor<10x8xf32>, tensor<12x8xf32>) positions(%p : tensor<2xi32>) outs(%init : tensor<2x2x3x16xf32>) -> tensor<2x2x3x16xf32>
  return %r : tensor<2x2x3x16xf32>
}

// -----

func.func @rotary_half_dynamic(%x: tensor<2x2x3x16xf32>, %c: tensor<10x?xf32>, %s: tensor<10x?xf32>, %init: tensor<2x2x3x16xf32>, %p: tensor<2xi32>) -> tensor<2x2x3x16xf32> {
  // expected-error @+1 {{'cos' dimension 1 (R/2) must be static, found '?'}}
  %r = mha.rotary ins(%x : tensor<2x2x3x16xf32>) cos_sin(%c, %s : tensor<10x?xf32>, tensor<10x?xf32>) positions(%p : tensor<2xi32>) outs(%init : tensor<2x2x3x16xf32>) -> tensor<2x2x3x16xf32>
  return %r : tensor<2x2x3x16xf32>
}

// -----

func.func @rotary_half_wide(%x: tensor<2x2x3x16xf32>, %c: tensor<10x9xf32>, %s: tensor<10x9xf32>, %init: tensor<2x2x3x16xf32>, %p: tensor<2xi32>) -> tensor<2x2x3x16xf32> {
  // expected-error @+1 {{'cos' dimension 1 (R/2) must be in [1, d/2 = 8], found 9}}
  %r = mha.rotary ins(%x : tensor<2x2x3x16xf32>) cos_sin(%c, %s : tensor<10x9xf32>, tensor<10x9xf32>) positions(%p : tensor<2xi32>) outs(%init : tensor<2x2x3x16xf32>) -> tensor<2x2x3x16xf32>
  return %r : tensor<2x2x3x16xf32>
}

// -----

func.func @rotary_positions_rank(%x: tensor<2x2x3x16xf32>, %c: tensor<10x8xf32>, %s: tensor<10x8xf32>, %init: tensor<2x2x3x16xf32>, %p: tensor<2x3x1xi32>) -> tensor<2x2x3x16xf32> {
  // expected-error @+1 {{'positions' must have rank 1 ([B]: offsets) or 2 ([B, S]), found rank 3}}
  %r = mha.rotary ins(%x : tensor<2x2x3x16xf32>) cos_sin(%c, %s : tensor<10x8xf32>, tensor<10x8xf32>) positions(%p : tensor<2x3x1xi32>) outs(%init : tensor<2x2x3x16xf32>) -> tensor<2x2x3x16xf32>
  return %r : tensor<2x2x3x16xf32>
}

// -----

func.func @rotary_positions_batch(%x: tensor<2x2x3x16xf32>, %c: tensor<10x8xf32>, %s: tensor<10x8xf32>, %init: tensor<2x2x3x16xf32>, %p: tensor<3xi32>) -> tensor<2x2x3x16xf32> {
  // expected-error @+1 {{'positions' dimension 0 (B) must match the batch size: expected 2, found 3}}
  %r = mha.rotary ins(%x : tensor<2x2x3x16xf32>) cos_sin(%c, %s : tensor<10x8xf32>, tensor<10x8xf32>) positions(%p : tensor<3xi32>) outs(%init : tensor<2x2x3x16xf32>) -> tensor<2x2x3x16xf32>
  return %r : tensor<2x2x3x16xf32>
}

// -----

func.func @rotary_positions_tokens(%x: tensor<2x2x3x16xf32>, %c: tensor<10x8xf32>, %s: tensor<10x8xf32>, %init: tensor<2x2x3x16xf32>, %p: tensor<2x4xi32>) -> tensor<2x2x3x16xf32> {
  // expected-error @+1 {{'positions' dimension 1 (S) must match the sequence length: expected 3, found 4}}
  %r = mha.rotary ins(%x : tensor<2x2x3x16xf32>) cos_sin(%c, %s : tensor<10x8xf32>, tensor<10x8xf32>) positions(%p : tensor<2x4xi32>) outs(%init : tensor<2x2x3x16xf32>) -> tensor<2x2x3x16xf32>
  return %r : tensor<2x2x3x16xf32>
}

// -----

func.func @rotary_init_type(%x: tensor<2x2x3x16xf32>, %c: tensor<10x8xf32>, %s: tensor<10x8xf32>, %init: tensor<2x2x?x16xf32>, %p: tensor<2xi32>) -> tensor<2x2x?x16xf32> {
  // expected-error @+1 {{'init' type must match 'input' type: expected 'tensor<2x2x3x16xf32>', found 'tensor<2x2x?x16xf32>'}}
  %r = mha.rotary ins(%x : tensor<2x2x3x16xf32>) cos_sin(%c, %s : tensor<10x8xf32>, tensor<10x8xf32>) positions(%p : tensor<2xi32>) outs(%init : tensor<2x2x?x16xf32>) -> tensor<2x2x?x16xf32>
  return %r : tensor<2x2x?x16xf32>
}

// -----

func.func @rotary_offsets_past(%x: tensor<2x2x3x16xf32>, %c: tensor<10x8xf32>, %s: tensor<10x8xf32>, %init: tensor<2x2x3x16xf32>) -> tensor<2x2x3x16xf32> {
  %p = arith.constant dense<[7, 8]> : tensor<2xi32>
  // expected-error @+1 {{'positions' element 1 must be in [0, P - S = 7], found 8}}
  %r = mha.rotary ins(%x : tensor<2x2x3x16xf32>) cos_sin(%c, %s : tensor<10x8xf32>, tensor<10x8xf32>) positions(%p : tensor<2xi32>) outs(%init : tensor<2x2x3x16xf32>) -> tensor<2x2x3x16xf32>
  return %r : tensor<2x2x3x16xf32>
}

// -----

func.func @rotary_tokens_past(%x: tensor<2x2x3x16xf32>, %c: tensor<10x8xf32>, %s: tensor<10x8xf32>, %init: tensor<2x2x3x16xf32>) -> tensor<2x2x3x16xf32> {
  %p = arith.constant dense<[[0, 1, 2], [3, 10, 5]]> : tensor<2x3xi64>
  // expected-error @+1 {{'positions' element 4 must be in [0, P = 10), found 10}}
  %r = mha.rotary ins(%x : tensor<2x2x3x16xf32>) cos_sin(%c, %s : tensor<10x8xf32>, tensor<10x8xf32>) positions(%p : tensor<2x3xi64>) outs(%init : tensor<2x2x3x16xf32>) -> tensor<2x2x3x16xf32>
  return %r : tensor<2x2x3x16xf32>
}

// -----

func.func @rotary_negative(%x: tensor<2x2x3x16xf32>, %c: tensor<?x8xf32>, %s: tensor<?x8xf32>, %init: tensor<2x2x3x16xf32>) -> tensor<2x2x3x16xf32> {
  %p = arith.constant dense<[-1, 0]> : tensor<2xi32>
  // expected-error @+1 {{'positions' element 0 must be in [0, P - S], found -1}}
  %r = mha.rotary ins(%x : tensor<2x2x3x16xf32>) cos_sin(%c, %s : tensor<?x8xf32>, tensor<?x8xf32>) positions(%p : tensor<2xi32>) outs(%init : tensor<2x2x3x16xf32>) -> tensor<2x2x3x16xf32>
  return %r : tensor<2x2x3x16xf32>
}

// -----

// expected-error @below {{'mha.weight' must be a unit attribute, found 1 : i64}}
func.func @weight_not_unit(%w: tensor<4xf32> {mha.weight = 1}) {
  return
}

// -----

// expected-error @below {{'mha.device_resident' must be a unit attribute, found true}}
func.func @device_resident_not_unit() attributes {mha.device_resident = true} {
  return
}

// -----

// expected-error @below {{'mha.device_resident' marks functions only}}
module attributes {mha.device_resident} {
}
