// RUN: mha-opt %s --split-input-file --transform-interpreter --verify-diagnostics
// RUN: mha-opt %s --split-input-file --mha-fuse-layer | FileCheck %s --check-prefix=PASS

// A layer that returns its attention weights (they need the whole score
// matrix), updates KV caches or rotates its queries and keys is not fused.
// transform.mha.fuse_layer says so; the mha-fuse-layer pass decomposes
// such a layer instead (its attention is tiled later by mha-tile-attention;
// its caches' appends and rotations become linalg with it,
// mha-attention-to-linalg).

// PASS-LABEL: func.func @weights
// PASS-NOT: scf.forall
// PASS: mha.attention ins
// PASS: mha.attention_weights
func.func @weights(%x: tensor<1x8x16xf32>, %w: tensor<16x16xf32>) -> (tensor<1x8x16xf32>, tensor<1x8x8xf32>) {
  // expected-error @+2 {{returns its attention weights, which need the whole score matrix: decompose it (mha-decompose) and tile its attention instead of fusing the layer}}
  // expected-note @+1 {{attempted to apply to this op}}
  %y, %p = mha.multi_head_attention %x, %x, %x, %w, %w, %w, %w {num_heads = 2 : i64, return_weights = "average"}
       : (tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> (tensor<1x8x16xf32>, tensor<1x8x8xf32>)
  return %y, %p : tensor<1x8x16xf32>, tensor<1x8x8xf32>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %layer = transform.structured.match ops{["mha.multi_head_attention"]} in %root : (!transform.any_op) -> !transform.any_op
    // expected-error @+1 {{failed to apply}}
    %a:5 = transform.mha.fuse_layer %layer : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op)
    transform.yield
  }
}

// -----

// PASS-LABEL: func.func @kv_cache
// PASS-NOT: scf.forall
// PASS: mha.cache_append
// PASS: mha.cache_append
// PASS: mha.attention ins
func.func @kv_cache(%x: tensor<1x1x16xf32>, %w: tensor<16x16xf32>, %c: tensor<1x2x32x8xf32>, %len: tensor<1xi32>)
    -> (tensor<1x1x16xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>) {
  // expected-error @+2 {{updates KV caches (kv_cache): decompose it (mha-decompose) and tile its attention instead of fusing the layer}}
  // expected-note @+1 {{attempted to apply to this op}}
  %y, %k, %v = mha.multi_head_attention %x, %x, %x, %w, %w, %w, %w kv_cache(%c, %c, %len) {num_heads = 2 : i64}
       : (tensor<1x1x16xf32>, tensor<1x1x16xf32>, tensor<1x1x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>, tensor<1xi32>)
       -> (tensor<1x1x16xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>)
  return %y, %k, %v : tensor<1x1x16xf32>, tensor<1x2x32x8xf32>, tensor<1x2x32x8xf32>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %layer = transform.structured.match ops{["mha.multi_head_attention"]} in %root : (!transform.any_op) -> !transform.any_op
    // expected-error @+1 {{failed to apply}}
    %a:5 = transform.mha.fuse_layer %layer : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op)
    transform.yield
  }
}

// -----

// PASS-LABEL: func.func @rotary
// PASS-NOT: scf.forall
// PASS: mha.rotary
// PASS: mha.rotary
// PASS: mha.attention ins
func.func @rotary(%x: tensor<1x8x16xf32>, %w: tensor<16x16xf32>, %t: tensor<8x4xf32>) -> tensor<1x8x16xf32> {
  // expected-error @+2 {{rotates its queries and keys (rotary): decompose it (mha-decompose) and tile its attention instead of fusing the layer}}
  // expected-note @+1 {{attempted to apply to this op}}
  %y = mha.multi_head_attention %x, %x, %x, %w, %w, %w, %w rotary(%t, %t) {num_heads = 2 : i64}
       : (tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<1x8x16xf32>
  return %y : tensor<1x8x16xf32>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %layer = transform.structured.match ops{["mha.multi_head_attention"]} in %root : (!transform.any_op) -> !transform.any_op
    // expected-error @+1 {{failed to apply}}
    %a:5 = transform.mha.fuse_layer %layer : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op)
    transform.yield
  }
}
