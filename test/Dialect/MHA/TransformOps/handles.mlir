// RUN: mha-opt %s --split-input-file --transform-interpreter --verify-diagnostics | FileCheck %s

// transform.mha.fuse_layer returns a handle to each loop of the fused nest
// (the forall over batch and query tiles, the head loop, the key loop, and
// the foralls of the K and V projections),
// transform.mha.tile_attention to its forall and key loop, and
// transform.mha.attention_to_linalg to the linalg.generic that produces the
// reference result.

// CHECK-LABEL: func.func @fused
// CHECK: scf.forall
// CHECK: } {key_projection}
// CHECK: scf.forall
// CHECK: } {value_projection}
// CHECK: scf.forall
// CHECK:   scf.for
// CHECK:     scf.for
// CHECK:     } {key_loop}
// CHECK:   } {head_loop}
// CHECK: } {layer_forall}
// CHECK-LABEL: func.func @tiled
// CHECK: scf.forall
// CHECK:   scf.for
// CHECK:   } {key_loop}
// CHECK: } {attention_forall}
// CHECK-LABEL: func.func @reference
// CHECK: linalg.generic {{.*}} attrs = {reference_result}
func.func @fused(%x: tensor<1x8x16xf32>, %w: tensor<16x16xf32>) -> tensor<1x8x16xf32> {
  %y = mha.multi_head_attention %x, %x, %x, %w, %w, %w, %w {num_heads = 2 : i64}
       : (tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<16x16xf32>,
          tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<1x8x16xf32>
  return %y : tensor<1x8x16xf32>
}
func.func @tiled(%q: tensor<1x2x8x4xf32>, %init: tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32> {
  %o = mha.attention ins(%q, %q, %q : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>)
         outs(%init : tensor<1x2x8x4xf32>) {tile_me} -> tensor<1x2x8x4xf32>
  return %o : tensor<1x2x8x4xf32>
}
func.func @reference(%q: tensor<1x2x8x4xf32>, %init: tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32> {
  %o = mha.attention ins(%q, %q, %q : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>)
         outs(%init : tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32>
  return %o : tensor<1x2x8x4xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %layer = transform.structured.match ops{["mha.multi_head_attention"]} in %root
      : (!transform.any_op) -> !transform.any_op
    %forall, %heads, %keys, %k, %v = transform.mha.fuse_layer %layer {q_tile_size = 4, kv_tile_size = 4}
      : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op,
                                !transform.any_op, !transform.any_op)
    transform.annotate %k "key_projection" : !transform.any_op
    transform.annotate %v "value_projection" : !transform.any_op
    transform.annotate %forall "layer_forall" : !transform.any_op
    transform.annotate %heads "head_loop" : !transform.any_op
    transform.annotate %keys "key_loop" : !transform.any_op
    %to_tile = transform.structured.match ops{["mha.attention"]} attributes {tile_me} in %root
      : (!transform.any_op) -> !transform.any_op
    %att_forall, %att_keys = transform.mha.tile_attention %to_tile {q_tile_size = 4, kv_tile_size = 4}
      : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.annotate %att_forall "attention_forall" : !transform.any_op
    transform.annotate %att_keys "key_loop" : !transform.any_op
    %att = transform.structured.match ops{["mha.attention"]} in %root
      : (!transform.any_op) -> !transform.any_op
    %result = transform.mha.attention_to_linalg %att : (!transform.any_op) -> !transform.any_op
    transform.annotate %result "reference_result" : !transform.any_op
    transform.yield
  }
}

// -----

// Applied to an op of the wrong kind, the transform fails definitely.
func.func @wrong_target(%q: tensor<1x2x8x4xf32>, %init: tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32> {
  // expected-note @below {{when applied to this op}}
  %o = mha.attention ins(%q, %q, %q : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>)
         outs(%init : tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32>
  return %o : tensor<1x2x8x4xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %att = transform.structured.match ops{["mha.attention"]} in %root
      : (!transform.any_op) -> !transform.any_op
    // expected-error @below {{transform applied to the wrong op kind}}
    %bad = transform.mha.decompose %att : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}

// -----

// transform.mha.fuse_consumer needs one result handle per loop handle.
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %a = transform.structured.match ops{["linalg.generic"]} in %root : (!transform.any_op) -> !transform.any_op
    %b = transform.structured.match ops{["scf.forall"]} in %root : (!transform.any_op) -> !transform.any_op
    // expected-error @below {{expects one result per loop handle: 1 loops, 0 loop results}}
    %fused = transform.mha.fuse_consumer %a into %b : (!transform.any_op, !transform.any_op) -> !transform.any_op
    transform.yield
  }
}

// -----

// A consumer that does not read the loop nest's result cannot be fused: the
// transform fails silenceably and says which op.
func.func @not_a_consumer(%x: tensor<8xf32>, %y: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %loop = scf.forall (%i) in (2) shared_outs(%o = %x) -> (tensor<8xf32>) {
    scf.forall.in_parallel {}
  }
  // expected-note @below {{consumer}}
  %c = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
         outs(%y : tensor<8xf32>) {
  ^bb0(%out: f32):
    linalg.yield %out : f32
  } -> tensor<8xf32>
  return %loop, %c : tensor<8xf32>, tensor<8xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %c = transform.structured.match ops{["linalg.generic"]} in %root : (!transform.any_op) -> !transform.any_op
    %l = transform.structured.match ops{["scf.forall"]} in %root : (!transform.any_op) -> !transform.any_op
    // expected-error @below {{could not fuse the consumer into the loops}}
    %fused, %l2 = transform.mha.fuse_consumer %c into %l
      : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}

// -----

// ... and at least one loop.
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %a = transform.structured.match ops{["linalg.generic"]} in %root : (!transform.any_op) -> !transform.any_op
    // expected-error @below {{expects at least one loop handle}}
    %fused = transform.mha.fuse_consumer %a into : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}

// -----

// A static length of 0 leaves nothing to tile: the op is lowered without
// loops and the transform fails silenceably, as there is no loop handle.
func.func @empty(%q: tensor<1x2x0x4xf32>, %init: tensor<1x2x0x4xf32>) -> tensor<1x2x0x4xf32> {
  // expected-note @below {{target}}
  %o = mha.attention ins(%q, %q, %q : tensor<1x2x0x4xf32>, tensor<1x2x0x4xf32>, tensor<1x2x0x4xf32>)
         outs(%init : tensor<1x2x0x4xf32>) -> tensor<1x2x0x4xf32>
  return %o : tensor<1x2x0x4xf32>
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %att = transform.structured.match ops{["mha.attention"]} in %root : (!transform.any_op) -> !transform.any_op
    // expected-error @below {{the target has a static batch, query or key length of 0: it was lowered without loops}}
    %forall, %keys = transform.mha.tile_attention %att : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}
