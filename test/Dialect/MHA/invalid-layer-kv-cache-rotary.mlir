// RUN: mha-opt %s --split-input-file --verify-diagnostics

// One case per verifier message of mha.multi_head_attention's kv_cache and
// rotary (the other messages: invalid.mlir).

func.func @rotary_cross(%x: tensor<2x1x16xf32>, %kv: tensor<2x3x16xf32>, %wq: tensor<16x16xf32>, %wkv: tensor<16x8xf32>, %wo: tensor<16x16xf32>, %c: tensor<32x4xf32>, %s: tensor<32x4xf32>) -> tensor<2x1x16xf32> {
  // expected-error @+1 {{'rotary' needs as many queries as keys (the step's tokens, each at one position): 'key' dimension 1 (Sk) must match 'query' dimension 1 (Sq): expected 1, found 3}}
  %y = mha.multi_head_attention %x, %kv, %kv, %wq, %wkv, %wkv, %wo rotary(%c, %s) {num_heads = 2 : i64, num_kv_heads = 1 : i64}
       : (tensor<2x1x16xf32>, tensor<2x3x16xf32>, tensor<2x3x16xf32>, tensor<16x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x16xf32>, tensor<32x4xf32>, tensor<32x4xf32>) -> tensor<2x1x16xf32>
  return %y : tensor<2x1x16xf32>
}

// -----

// The generic form: the custom one writes the three cache operands, and the
// two tables, together.
func.func @cache_partial(%x: tensor<2x1x16xf32>, %wq: tensor<16x16xf32>, %wkv: tensor<16x8xf32>, %wo: tensor<16x16xf32>, %kc: tensor<2x1x8x8xf32>) -> tensor<2x1x16xf32> {
  // expected-error @+1 {{'k_cache', 'v_cache' and 'cache_lengths' must be given all three or none, found 1}}
  %y = "mha.multi_head_attention"(%x, %x, %x, %wq, %wkv, %wkv, %wo, %kc) <{num_heads = 2 : i64, num_kv_heads = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0>}>
       : (tensor<2x1x16xf32>, tensor<2x1x16xf32>, tensor<2x1x16xf32>, tensor<16x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x16xf32>, tensor<2x1x8x8xf32>) -> tensor<2x1x16xf32>
  return %y : tensor<2x1x16xf32>
}

// -----

func.func @rotary_sin_alone(%x: tensor<2x1x16xf32>, %wq: tensor<16x16xf32>, %wkv: tensor<16x8xf32>, %wo: tensor<16x16xf32>, %s: tensor<32x4xf32>) -> tensor<2x1x16xf32> {
  // expected-error @+1 {{'rotary_sin' needs 'rotary_cos' (rotary(%cos, %sin))}}
  %y = "mha.multi_head_attention"(%x, %x, %x, %wq, %wkv, %wkv, %wo, %s) <{num_heads = 2 : i64, num_kv_heads = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1>}>
       : (tensor<2x1x16xf32>, tensor<2x1x16xf32>, tensor<2x1x16xf32>, tensor<16x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x16xf32>, tensor<32x4xf32>) -> tensor<2x1x16xf32>
  return %y : tensor<2x1x16xf32>
}

// -----

func.func @rotary_cos_alone(%x: tensor<2x1x16xf32>, %wq: tensor<16x16xf32>, %wkv: tensor<16x8xf32>, %wo: tensor<16x16xf32>, %c: tensor<32x4xf32>) -> tensor<2x1x16xf32> {
  // expected-error @+1 {{'rotary_sin' must be given with 'rotary_cos'}}
  %y = "mha.multi_head_attention"(%x, %x, %x, %wq, %wkv, %wkv, %wo, %c) <{num_heads = 2 : i64, num_kv_heads = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0>}>
       : (tensor<2x1x16xf32>, tensor<2x1x16xf32>, tensor<2x1x16xf32>, tensor<16x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x16xf32>, tensor<32x4xf32>) -> tensor<2x1x16xf32>
  return %y : tensor<2x1x16xf32>
}

// -----

func.func @key_lengths_with_cache(%x: tensor<2x1x16xf32>, %wq: tensor<16x16xf32>, %wkv: tensor<16x8xf32>, %wo: tensor<16x16xf32>, %kc: tensor<2x1x8x8xf32>, %vc: tensor<2x1x8x8xf32>, %len: tensor<2xi32>) -> (tensor<2x1x16xf32>, tensor<2x1x8x8xf32>, tensor<2x1x8x8xf32>) {
  // expected-error @+1 {{'key_lengths' cannot be combined with 'kv_cache': the caches' lengths bound the keys each batch sees}}
  %y, %k1, %v1 = mha.multi_head_attention %x, %x, %x, %wq, %wkv, %wkv, %wo key_lengths(%len) kv_cache(%kc, %vc, %len) {num_heads = 2 : i64, num_kv_heads = 1 : i64}
       : (tensor<2x1x16xf32>, tensor<2x1x16xf32>, tensor<2x1x16xf32>, tensor<16x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x16xf32>, tensor<2xi32>, tensor<2x1x8x8xf32>, tensor<2x1x8x8xf32>, tensor<2xi32>) -> (tensor<2x1x16xf32>, tensor<2x1x8x8xf32>, tensor<2x1x8x8xf32>)
  return %y, %k1, %v1 : tensor<2x1x16xf32>, tensor<2x1x8x8xf32>, tensor<2x1x8x8xf32>
}

// -----

func.func @weights_with_cache(%x: tensor<2x1x16xf32>, %wq: tensor<16x16xf32>, %wkv: tensor<16x8xf32>, %wo: tensor<16x16xf32>, %kc: tensor<2x1x8x8xf32>, %vc: tensor<2x1x8x8xf32>, %len: tensor<2xi32>) -> (tensor<2x1x16xf32>, tensor<2x1x8x8xf32>, tensor<2x1x8x8xf32>) {
  // expected-error @+1 {{'return_weights' cannot be combined with 'kv_cache'}}
  %y, %k1, %v1 = mha.multi_head_attention %x, %x, %x, %wq, %wkv, %wkv, %wo kv_cache(%kc, %vc, %len) {num_heads = 2 : i64, num_kv_heads = 1 : i64, return_weights = "average"}
       : (tensor<2x1x16xf32>, tensor<2x1x16xf32>, tensor<2x1x16xf32>, tensor<16x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x16xf32>, tensor<2x1x8x8xf32>, tensor<2x1x8x8xf32>, tensor<2xi32>) -> (tensor<2x1x16xf32>, tensor<2x1x8x8xf32>, tensor<2x1x8x8xf32>)
  return %y, %k1, %v1 : tensor<2x1x16xf32>, tensor<2x1x8x8xf32>, tensor<2x1x8x8xf32>
}

// -----

func.func @cache_rank(%x: tensor<2x1x16xf32>, %wq: tensor<16x16xf32>, %wkv: tensor<16x8xf32>, %wo: tensor<16x16xf32>, %kc: tensor<2x8x8xf32>, %vc: tensor<2x1x8x8xf32>, %len: tensor<2xi32>) -> (tensor<2x1x16xf32>, tensor<2x8x8xf32>, tensor<2x1x8x8xf32>) {
  // expected-error @+1 {{'k_cache' must have rank 4 ([B, Hkv, Smax, dk]), found rank 3}}
  %y, %k1, %v1 = mha.multi_head_attention %x, %x, %x, %wq, %wkv, %wkv, %wo kv_cache(%kc, %vc, %len) {num_heads = 2 : i64, num_kv_heads = 1 : i64}
       : (tensor<2x1x16xf32>, tensor<2x1x16xf32>, tensor<2x1x16xf32>, tensor<16x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x16xf32>, tensor<2x8x8xf32>, tensor<2x1x8x8xf32>, tensor<2xi32>) -> (tensor<2x1x16xf32>, tensor<2x8x8xf32>, tensor<2x1x8x8xf32>)
  return %y, %k1, %v1 : tensor<2x1x16xf32>, tensor<2x8x8xf32>, tensor<2x1x8x8xf32>
}

// -----

func.func @cache_element_type(%x: tensor<2x1x16xf32>, %wq: tensor<16x16xf32>, %wkv: tensor<16x8xf32>, %wo: tensor<16x16xf32>, %kc: tensor<2x1x8x8xf32>, %vc: tensor<2x1x8x8xf16>, %len: tensor<2xi32>) -> (tensor<2x1x16xf32>, tensor<2x1x8x8xf32>, tensor<2x1x8x8xf16>) {
  // expected-error @+1 {{'v_cache' element type must match 'query' element type: expected 'f32', found 'f16'}}
  %y, %k1, %v1 = mha.multi_head_attention %x, %x, %x, %wq, %wkv, %wkv, %wo kv_cache(%kc, %vc, %len) {num_heads = 2 : i64, num_kv_heads = 1 : i64}
       : (tensor<2x1x16xf32>, tensor<2x1x16xf32>, tensor<2x1x16xf32>, tensor<16x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x16xf32>, tensor<2x1x8x8xf32>, tensor<2x1x8x8xf16>, tensor<2xi32>) -> (tensor<2x1x16xf32>, tensor<2x1x8x8xf32>, tensor<2x1x8x8xf16>)
  return %y, %k1, %v1 : tensor<2x1x16xf32>, tensor<2x1x8x8xf32>, tensor<2x1x8x8xf16>
}

// -----

func.func @cache_batch(%x: tensor<2x1x16xf32>, %wq: tensor<16x16xf32>, %wkv: tensor<16x8xf32>, %wo: tensor<16x16xf32>, %kc: tensor<3x1x8x8xf32>, %vc: tensor<2x1x8x8xf32>, %len: tensor<2xi32>) -> (tensor<2x1x16xf32>, tensor<3x1x8x8xf32>, tensor<2x1x8x8xf32>) {
  // expected-error @+1 {{'k_cache' dimension 0 (B) must match the batch size: expected 2, found 3}}
  %y, %k1, %v1 = mha.multi_head_attention %x, %x, %x, %wq, %wkv, %wkv, %wo kv_cache(%kc, %vc, %len) {num_heads = 2 : i64, num_kv_heads = 1 : i64}
       : (tensor<2x1x16xf32>, tensor<2x1x16xf32>, tensor<2x1x16xf32>, tensor<16x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x16xf32>, tensor<3x1x8x8xf32>, tensor<2x1x8x8xf32>, tensor<2xi32>) -> (tensor<2x1x16xf32>, tensor<3x1x8x8xf32>, tensor<2x1x8x8xf32>)
  return %y, %k1, %v1 : tensor<2x1x16xf32>, tensor<3x1x8x8xf32>, tensor<2x1x8x8xf32>
}

// -----

func.func @cache_heads_dynamic(%x: tensor<2x1x16xf32>, %wq: tensor<16x16xf32>, %wkv: tensor<16x8xf32>, %wo: tensor<16x16xf32>, %kc: tensor<2x?x8x8xf32>, %vc: tensor<2x1x8x8xf32>, %len: tensor<2xi32>) -> (tensor<2x1x16xf32>, tensor<2x?x8x8xf32>, tensor<2x1x8x8xf32>) {
  // expected-error @+1 {{'k_cache' dimension 1 (Hkv) must be static, found '?'}}
  %y, %k1, %v1 = mha.multi_head_attention %x, %x, %x, %wq, %wkv, %wkv, %wo kv_cache(%kc, %vc, %len) {num_heads = 2 : i64, num_kv_heads = 1 : i64}
       : (tensor<2x1x16xf32>, tensor<2x1x16xf32>, tensor<2x1x16xf32>, tensor<16x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x16xf32>, tensor<2x?x8x8xf32>, tensor<2x1x8x8xf32>, tensor<2xi32>) -> (tensor<2x1x16xf32>, tensor<2x?x8x8xf32>, tensor<2x1x8x8xf32>)
  return %y, %k1, %v1 : tensor<2x1x16xf32>, tensor<2x?x8x8xf32>, tensor<2x1x8x8xf32>
}

// -----

func.func @cache_heads(%x: tensor<2x1x16xf32>, %wq: tensor<16x16xf32>, %wkv: tensor<16x8xf32>, %wo: tensor<16x16xf32>, %kc: tensor<2x1x8x8xf32>, %vc: tensor<2x2x8x8xf32>, %len: tensor<2xi32>) -> (tensor<2x1x16xf32>, tensor<2x1x8x8xf32>, tensor<2x2x8x8xf32>) {
  // expected-error @+1 {{'v_cache' dimension 1 (Hkv) must match the number of key/value heads: expected 1, found 2}}
  %y, %k1, %v1 = mha.multi_head_attention %x, %x, %x, %wq, %wkv, %wkv, %wo kv_cache(%kc, %vc, %len) {num_heads = 2 : i64, num_kv_heads = 1 : i64}
       : (tensor<2x1x16xf32>, tensor<2x1x16xf32>, tensor<2x1x16xf32>, tensor<16x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x16xf32>, tensor<2x1x8x8xf32>, tensor<2x2x8x8xf32>, tensor<2xi32>) -> (tensor<2x1x16xf32>, tensor<2x1x8x8xf32>, tensor<2x2x8x8xf32>)
  return %y, %k1, %v1 : tensor<2x1x16xf32>, tensor<2x1x8x8xf32>, tensor<2x2x8x8xf32>
}

// -----

func.func @cache_head_dim(%x: tensor<2x1x16xf32>, %wq: tensor<16x16xf32>, %wkv: tensor<16x8xf32>, %wo: tensor<16x16xf32>, %kc: tensor<2x1x8x4xf32>, %vc: tensor<2x1x8x8xf32>, %len: tensor<2xi32>) -> (tensor<2x1x16xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8x8xf32>) {
  // expected-error @+1 {{'k_cache' dimension 3 (dk) must match the head dim of the projections: expected 8, found 4}}
  %y, %k1, %v1 = mha.multi_head_attention %x, %x, %x, %wq, %wkv, %wkv, %wo kv_cache(%kc, %vc, %len) {num_heads = 2 : i64, num_kv_heads = 1 : i64}
       : (tensor<2x1x16xf32>, tensor<2x1x16xf32>, tensor<2x1x16xf32>, tensor<16x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x16xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8x8xf32>, tensor<2xi32>) -> (tensor<2x1x16xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8x8xf32>)
  return %y, %k1, %v1 : tensor<2x1x16xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8x8xf32>
}

// -----

func.func @cache_lengths_differ(%x: tensor<2x1x16xf32>, %wq: tensor<16x16xf32>, %wkv: tensor<16x8xf32>, %wo: tensor<16x16xf32>, %kc: tensor<2x1x8x8xf32>, %vc: tensor<2x1x6x8xf32>, %len: tensor<2xi32>) -> (tensor<2x1x16xf32>, tensor<2x1x8x8xf32>, tensor<2x1x6x8xf32>) {
  // expected-error @+1 {{'v_cache' dimension 2 (Smax) must match 'k_cache' dimension 2: expected 8, found 6}}
  %y, %k1, %v1 = mha.multi_head_attention %x, %x, %x, %wq, %wkv, %wkv, %wo kv_cache(%kc, %vc, %len) {num_heads = 2 : i64, num_kv_heads = 1 : i64}
       : (tensor<2x1x16xf32>, tensor<2x1x16xf32>, tensor<2x1x16xf32>, tensor<16x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x16xf32>, tensor<2x1x8x8xf32>, tensor<2x1x6x8xf32>, tensor<2xi32>) -> (tensor<2x1x16xf32>, tensor<2x1x8x8xf32>, tensor<2x1x6x8xf32>)
  return %y, %k1, %v1 : tensor<2x1x16xf32>, tensor<2x1x8x8xf32>, tensor<2x1x6x8xf32>
}

// -----

func.func @step_exceeds_cache(%x: tensor<2x9x16xf32>, %wq: tensor<16x16xf32>, %wkv: tensor<16x8xf32>, %wo: tensor<16x16xf32>, %kc: tensor<2x1x8x8xf32>, %vc: tensor<2x1x8x8xf32>, %len: tensor<2xi32>) -> (tensor<2x9x16xf32>, tensor<2x1x8x8xf32>, tensor<2x1x8x8xf32>) {
  // expected-error @+1 {{'key' dimension 1 (Sk) must not exceed 'k_cache' dimension 2 (Smax): expected at most 8, found 9}}
  %y, %k1, %v1 = mha.multi_head_attention %x, %x, %x, %wq, %wkv, %wkv, %wo kv_cache(%kc, %vc, %len) {num_heads = 2 : i64, num_kv_heads = 1 : i64}
       : (tensor<2x9x16xf32>, tensor<2x9x16xf32>, tensor<2x9x16xf32>, tensor<16x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x16xf32>, tensor<2x1x8x8xf32>, tensor<2x1x8x8xf32>, tensor<2xi32>) -> (tensor<2x9x16xf32>, tensor<2x1x8x8xf32>, tensor<2x1x8x8xf32>)
  return %y, %k1, %v1 : tensor<2x9x16xf32>, tensor<2x1x8x8xf32>, tensor<2x1x8x8xf32>
}

// -----

func.func @cache_lengths_batch(%x: tensor<2x1x16xf32>, %wq: tensor<16x16xf32>, %wkv: tensor<16x8xf32>, %wo: tensor<16x16xf32>, %kc: tensor<2x1x8x8xf32>, %vc: tensor<2x1x8x8xf32>, %len: tensor<3xi32>) -> (tensor<2x1x16xf32>, tensor<2x1x8x8xf32>, tensor<2x1x8x8xf32>) {
  // expected-error @+1 {{'cache_lengths' dimension 0 (B) must match the batch size: expected 2, found 3}}
  %y, %k1, %v1 = mha.multi_head_attention %x, %x, %x, %wq, %wkv, %wkv, %wo kv_cache(%kc, %vc, %len) {num_heads = 2 : i64, num_kv_heads = 1 : i64}
       : (tensor<2x1x16xf32>, tensor<2x1x16xf32>, tensor<2x1x16xf32>, tensor<16x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x16xf32>, tensor<2x1x8x8xf32>, tensor<2x1x8x8xf32>, tensor<3xi32>) -> (tensor<2x1x16xf32>, tensor<2x1x8x8xf32>, tensor<2x1x8x8xf32>)
  return %y, %k1, %v1 : tensor<2x1x16xf32>, tensor<2x1x8x8xf32>, tensor<2x1x8x8xf32>
}

// -----

func.func @cache_lengths_constant(%x: tensor<2x1x16xf32>, %wq: tensor<16x16xf32>, %wkv: tensor<16x8xf32>, %wo: tensor<16x16xf32>, %kc: tensor<2x1x8x8xf32>, %vc: tensor<2x1x8x8xf32>) -> (tensor<2x1x16xf32>, tensor<2x1x8x8xf32>, tensor<2x1x8x8xf32>) {
  %len = arith.constant dense<[0, 8]> : tensor<2xi32>
  // expected-error @+1 {{'cache_lengths' element 1 must be in [0, Smax - Sk = 7], found 8}}
  %y, %k1, %v1 = mha.multi_head_attention %x, %x, %x, %wq, %wkv, %wkv, %wo kv_cache(%kc, %vc, %len) {num_heads = 2 : i64, num_kv_heads = 1 : i64}
       : (tensor<2x1x16xf32>, tensor<2x1x16xf32>, tensor<2x1x16xf32>, tensor<16x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x16xf32>, tensor<2x1x8x8xf32>, tensor<2x1x8x8xf32>, tensor<2xi32>) -> (tensor<2x1x16xf32>, tensor<2x1x8x8xf32>, tensor<2x1x8x8xf32>)
  return %y, %k1, %v1 : tensor<2x1x16xf32>, tensor<2x1x8x8xf32>, tensor<2x1x8x8xf32>
}

// -----

func.func @cache_results_missing(%x: tensor<2x1x16xf32>, %wq: tensor<16x16xf32>, %wkv: tensor<16x8xf32>, %wo: tensor<16x16xf32>, %kc: tensor<2x1x8x8xf32>, %vc: tensor<2x1x8x8xf32>, %len: tensor<2xi32>) -> (tensor<2x1x16xf32>) {
  // expected-error @+1 {{expects 3 results with 'kv_cache' (the output and the updated caches), found 1}}
  %y = mha.multi_head_attention %x, %x, %x, %wq, %wkv, %wkv, %wo kv_cache(%kc, %vc, %len) {num_heads = 2 : i64, num_kv_heads = 1 : i64}
       : (tensor<2x1x16xf32>, tensor<2x1x16xf32>, tensor<2x1x16xf32>, tensor<16x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x16xf32>, tensor<2x1x8x8xf32>, tensor<2x1x8x8xf32>, tensor<2xi32>) -> (tensor<2x1x16xf32>)
  return %y : tensor<2x1x16xf32>
}

// -----

func.func @cache_result_type(%x: tensor<2x1x16xf32>, %wq: tensor<16x16xf32>, %wkv: tensor<16x8xf32>, %wo: tensor<16x16xf32>, %kc: tensor<2x1x8x8xf32>, %vc: tensor<2x1x8x8xf32>, %len: tensor<2xi32>) -> (tensor<2x1x16xf32>, tensor<2x1x8x8xf32>, tensor<2x1x?x8xf32>) {
  // expected-error @+1 {{result 2 (the updated 'v_cache') must have the type of 'v_cache': expected 'tensor<2x1x8x8xf32>', found 'tensor<2x1x?x8xf32>'}}
  %y, %k1, %v1 = mha.multi_head_attention %x, %x, %x, %wq, %wkv, %wkv, %wo kv_cache(%kc, %vc, %len) {num_heads = 2 : i64, num_kv_heads = 1 : i64}
       : (tensor<2x1x16xf32>, tensor<2x1x16xf32>, tensor<2x1x16xf32>, tensor<16x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x16xf32>, tensor<2x1x8x8xf32>, tensor<2x1x8x8xf32>, tensor<2xi32>) -> (tensor<2x1x16xf32>, tensor<2x1x8x8xf32>, tensor<2x1x?x8xf32>)
  return %y, %k1, %v1 : tensor<2x1x16xf32>, tensor<2x1x8x8xf32>, tensor<2x1x?x8xf32>
}

// -----

func.func @extra_results_without_cache(%x: tensor<2x1x16xf32>, %wq: tensor<16x16xf32>, %wkv: tensor<16x8xf32>, %wo: tensor<16x16xf32>) -> (tensor<2x1x16xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>) {
  // expected-error @+1 {{expects at most 2 results (the output and 'weights') without 'kv_cache', found 3}}
  %y, %k1, %v1 = mha.multi_head_attention %x, %x, %x, %wq, %wkv, %wkv, %wo {num_heads = 2 : i64, num_kv_heads = 1 : i64, return_weights = "average"}
       : (tensor<2x1x16xf32>, tensor<2x1x16xf32>, tensor<2x1x16xf32>, tensor<16x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x16xf32>) -> (tensor<2x1x16xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>)
  return %y, %k1, %v1 : tensor<2x1x16xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>
}

// -----

func.func @mask_over_cache(%x: tensor<2x1x16xf32>, %wq: tensor<16x16xf32>, %wkv: tensor<16x8xf32>, %wo: tensor<16x16xf32>, %m: tensor<1x1xi1>, %kc: tensor<2x1x8x8xf32>, %vc: tensor<2x1x8x8xf32>, %len: tensor<2xi32>) -> (tensor<2x1x16xf32>, tensor<2x1x8x8xf32>, tensor<2x1x8x8xf32>) {
  // expected-error @+1 {{'mask' dimension 1 (Sk) must match the key length: expected 8, found 1}}
  %y, %k1, %v1 = mha.multi_head_attention %x, %x, %x, %wq, %wkv, %wkv, %wo mask(%m) kv_cache(%kc, %vc, %len) {num_heads = 2 : i64, num_kv_heads = 1 : i64}
       : (tensor<2x1x16xf32>, tensor<2x1x16xf32>, tensor<2x1x16xf32>, tensor<16x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x16xf32>, tensor<1x1xi1>, tensor<2x1x8x8xf32>, tensor<2x1x8x8xf32>, tensor<2xi32>) -> (tensor<2x1x16xf32>, tensor<2x1x8x8xf32>, tensor<2x1x8x8xf32>)
  return %y, %k1, %v1 : tensor<2x1x16xf32>, tensor<2x1x8x8xf32>, tensor<2x1x8x8xf32>
}

// -----

func.func @rotary_rank(%x: tensor<2x1x16xf32>, %wq: tensor<16x16xf32>, %wkv: tensor<16x8xf32>, %wo: tensor<16x16xf32>, %c: tensor<32xf32>, %s: tensor<32xf32>) -> (tensor<2x1x16xf32>) {
  // expected-error @+1 {{'rotary_cos' must have rank 2 ([P, R/2]), found rank 1}}
  %y = mha.multi_head_attention %x, %x, %x, %wq, %wkv, %wkv, %wo rotary(%c, %s) {num_heads = 2 : i64, num_kv_heads = 1 : i64}
       : (tensor<2x1x16xf32>, tensor<2x1x16xf32>, tensor<2x1x16xf32>, tensor<16x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x16xf32>, tensor<32xf32>, tensor<32xf32>) -> (tensor<2x1x16xf32>)
  return %y : tensor<2x1x16xf32>
}

// -----

func.func @rotary_element_type(%x: tensor<2x1x16xf32>, %wq: tensor<16x16xf32>, %wkv: tensor<16x8xf32>, %wo: tensor<16x16xf32>, %c: tensor<32x4xf16>, %s: tensor<32x4xf16>) -> (tensor<2x1x16xf32>) {
  // expected-error @+1 {{'rotary_cos' element type must match 'query' element type: expected 'f32', found 'f16'}}
  %y = mha.multi_head_attention %x, %x, %x, %wq, %wkv, %wkv, %wo rotary(%c, %s) {num_heads = 2 : i64, num_kv_heads = 1 : i64}
       : (tensor<2x1x16xf32>, tensor<2x1x16xf32>, tensor<2x1x16xf32>, tensor<16x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x16xf32>, tensor<32x4xf16>, tensor<32x4xf16>) -> (tensor<2x1x16xf32>)
  return %y : tensor<2x1x16xf32>
}

// -----

func.func @rotary_half_dynamic(%x: tensor<2x1x16xf32>, %wq: tensor<16x16xf32>, %wkv: tensor<16x8xf32>, %wo: tensor<16x16xf32>, %c: tensor<32x?xf32>, %s: tensor<32x?xf32>) -> (tensor<2x1x16xf32>) {
  // expected-error @+1 {{'rotary_cos' dimension 1 (R/2) must be static, found '?'}}
  %y = mha.multi_head_attention %x, %x, %x, %wq, %wkv, %wkv, %wo rotary(%c, %s) {num_heads = 2 : i64, num_kv_heads = 1 : i64}
       : (tensor<2x1x16xf32>, tensor<2x1x16xf32>, tensor<2x1x16xf32>, tensor<16x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x16xf32>, tensor<32x?xf32>, tensor<32x?xf32>) -> (tensor<2x1x16xf32>)
  return %y : tensor<2x1x16xf32>
}

// -----

func.func @rotary_sin_type(%x: tensor<2x1x16xf32>, %wq: tensor<16x16xf32>, %wkv: tensor<16x8xf32>, %wo: tensor<16x16xf32>, %c: tensor<32x4xf32>, %s: tensor<16x4xf32>) -> (tensor<2x1x16xf32>) {
  // expected-error @+1 {{'rotary_sin' type must match 'rotary_cos' type: expected 'tensor<32x4xf32>', found 'tensor<16x4xf32>'}}
  %y = mha.multi_head_attention %x, %x, %x, %wq, %wkv, %wkv, %wo rotary(%c, %s) {num_heads = 2 : i64, num_kv_heads = 1 : i64}
       : (tensor<2x1x16xf32>, tensor<2x1x16xf32>, tensor<2x1x16xf32>, tensor<16x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x16xf32>, tensor<32x4xf32>, tensor<16x4xf32>) -> (tensor<2x1x16xf32>)
  return %y : tensor<2x1x16xf32>
}

// -----

func.func @rotary_too_wide(%x: tensor<2x1x16xf32>, %wq: tensor<16x16xf32>, %wkv: tensor<16x8xf32>, %wo: tensor<16x16xf32>, %c: tensor<32x5xf32>, %s: tensor<32x5xf32>) -> (tensor<2x1x16xf32>) {
  // expected-error @+1 {{'rotary_cos' dimension 1 (R/2) must be in [1, dk/2 = 4], found 5}}
  %y = mha.multi_head_attention %x, %x, %x, %wq, %wkv, %wkv, %wo rotary(%c, %s) {num_heads = 2 : i64, num_kv_heads = 1 : i64}
       : (tensor<2x1x16xf32>, tensor<2x1x16xf32>, tensor<2x1x16xf32>, tensor<16x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x16xf32>, tensor<32x5xf32>, tensor<32x5xf32>) -> (tensor<2x1x16xf32>)
  return %y : tensor<2x1x16xf32>
}

// -----

func.func @rotary_table_short(%x: tensor<2x9x16xf32>, %wq: tensor<16x16xf32>, %wkv: tensor<16x8xf32>, %wo: tensor<16x16xf32>, %c: tensor<8x4xf32>, %s: tensor<8x4xf32>) -> (tensor<2x9x16xf32>) {
  // expected-error @+1 {{'rotary_cos' dimension 0 (P) must cover the positions of the step's tokens: expected at least 9 (Sq), found 8}}
  %y = mha.multi_head_attention %x, %x, %x, %wq, %wkv, %wkv, %wo rotary(%c, %s) {num_heads = 2 : i64, num_kv_heads = 1 : i64}
       : (tensor<2x9x16xf32>, tensor<2x9x16xf32>, tensor<2x9x16xf32>, tensor<16x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x16xf32>, tensor<8x4xf32>, tensor<8x4xf32>) -> (tensor<2x9x16xf32>)
  return %y : tensor<2x9x16xf32>
}

// -----

func.func @rotary_cache_lengths_constant(%x: tensor<2x1x16xf32>, %wq: tensor<16x16xf32>, %wkv: tensor<16x8xf32>, %wo: tensor<16x16xf32>, %kc: tensor<2x1x8x8xf32>, %vc: tensor<2x1x8x8xf32>, %c: tensor<6x4xf32>, %s: tensor<6x4xf32>) -> (tensor<2x1x16xf32>, tensor<2x1x8x8xf32>, tensor<2x1x8x8xf32>) {
  %len = arith.constant dense<[6, 0]> : tensor<2xi32>
  // expected-error @+1 {{'cache_lengths' element 0 must be in [0, P - Sq = 5] (each token's row of the rotary tables), found 6}}
  %y, %k1, %v1 = mha.multi_head_attention %x, %x, %x, %wq, %wkv, %wkv, %wo kv_cache(%kc, %vc, %len) rotary(%c, %s) {num_heads = 2 : i64, num_kv_heads = 1 : i64}
       : (tensor<2x1x16xf32>, tensor<2x1x16xf32>, tensor<2x1x16xf32>, tensor<16x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x16xf32>, tensor<2x1x8x8xf32>, tensor<2x1x8x8xf32>, tensor<2xi32>, tensor<6x4xf32>, tensor<6x4xf32>) -> (tensor<2x1x16xf32>, tensor<2x1x8x8xf32>, tensor<2x1x8x8xf32>)
  return %y, %k1, %v1 : tensor<2x1x16xf32>, tensor<2x1x8x8xf32>, tensor<2x1x8x8xf32>
}

// -----

func.func @rotary_interleaved_alone(%x: tensor<2x1x16xf32>, %wq: tensor<16x16xf32>, %wkv: tensor<16x8xf32>, %wo: tensor<16x16xf32>) -> (tensor<2x1x16xf32>) {
  // expected-error @+1 {{'rotary_interleaved' needs 'rotary_cos' (rotary(%cos, %sin))}}
  %y = mha.multi_head_attention %x, %x, %x, %wq, %wkv, %wkv, %wo {num_heads = 2 : i64, num_kv_heads = 1 : i64, rotary_interleaved}
       : (tensor<2x1x16xf32>, tensor<2x1x16xf32>, tensor<2x1x16xf32>, tensor<16x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x16xf32>) -> (tensor<2x1x16xf32>)
  return %y : tensor<2x1x16xf32>
}

