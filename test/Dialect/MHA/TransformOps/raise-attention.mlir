// RUN: mha-opt %s --split-input-file --transform-interpreter --verify-diagnostics | FileCheck %s

// transform.mha.raise_attention on the contraction with the values returns
// a handle to the mha.attention that replaced the chain; the schedule can
// go on with it (here: tile it).

// CHECK-LABEL: func.func @raise
// CHECK-NOT: linalg.softmax
// CHECK: scf.forall
// CHECK: } {raised_forall}
#bq = affine_map<(b, m, n, k) -> (b, m, k)>
#bk = affine_map<(b, m, n, k) -> (b, n, k)>
#bo = affine_map<(b, m, n, k) -> (b, m, n)>
func.func @raise(%q: tensor<2x4x8xf32>, %k: tensor<2x6x8xf32>, %v: tensor<2x6x8xf32>) -> tensor<2x4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %se = tensor.empty() : tensor<2x4x6xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%se : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %s = linalg.batch_matmul indexing_maps = [#bq, #bk, #bo] ins(%q, %k : tensor<2x4x8xf32>, tensor<2x6x8xf32>) outs(%sz : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %p = linalg.softmax dimension(2) ins(%s : tensor<2x4x6xf32>) outs(%se : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %oe = tensor.empty() : tensor<2x4x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%oe : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %o = linalg.batch_matmul {pv} ins(%p, %v : tensor<2x4x6xf32>, tensor<2x6x8xf32>) outs(%oz : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %pv = transform.structured.match attributes {pv} in %root : (!transform.any_op) -> !transform.any_op
    %att = transform.mha.raise_attention %pv : (!transform.any_op) -> !transform.any_op
    %forall, %loop = transform.mha.tile_attention %att {q_tile_size = 2}
      : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.annotate %forall "raised_forall" : !transform.any_op
    transform.yield
  }
}

// -----

// A target that does not end attention (here: the contraction of queries
// and keys) fails silenceably with the reason (the pass test shows such IR
// left as it was).

func.func @not_attention(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x6xf32>, %v: tensor<2x6x8xf32>) -> tensor<2x4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %se = tensor.empty() : tensor<2x4x6xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%se : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  // expected-note @below {{target}}
  %s = linalg.batch_matmul {qk} ins(%q, %kt : tensor<2x4x8xf32>, tensor<2x8x6xf32>) outs(%sz : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %p = linalg.softmax dimension(2) ins(%s : tensor<2x4x6xf32>) outs(%se : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %oe = tensor.empty() : tensor<2x4x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%oe : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x4x6xf32>, tensor<2x6x8xf32>) outs(%oz : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %qk = transform.structured.match attributes {qk} in %root : (!transform.any_op) -> !transform.any_op
    // expected-error @below {{could not raise to mha.attention: the probabilities are not a softmax}}
    %att = transform.mha.raise_attention %qk : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}

// -----

// transform.mha.raise_layer raises the layer around an mha.attention.

// CHECK-LABEL: func.func @layer
// CHECK: mha.multi_head_attention %arg0, %arg0, %arg0, %arg1, %arg1, %arg1, %arg1 {num_heads = 2 : i64, scale = 1.000000e+00 : f32, transformed}
#q = affine_map<(b, h, m, n, k) -> (b, h, m, k)>
#k = affine_map<(b, h, m, n, k) -> (b, h, n, k)>
#v = affine_map<(b, h, m, n, k) -> (b, h, k, n)>
#o = affine_map<(b, h, m, n, k) -> (b, h, m, n)>
func.func @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %x2 = tensor.collapse_shape %x [[0, 1], [2]] : tensor<2x4x8xf32> into tensor<8x8xf32>
  %e2 = tensor.empty() : tensor<8x8xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %e4 = tensor.empty() : tensor<2x2x4x4xf32>
  %pq = linalg.matmul ins(%x2, %w : tensor<8x8xf32>, tensor<8x8xf32>) outs(%z2 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %q3 = tensor.expand_shape %pq [[0, 1], [2, 3]] output_shape [2, 4, 2, 4] : tensor<8x8xf32> into tensor<2x4x2x4xf32>
  %q = linalg.transpose ins(%q3 : tensor<2x4x2x4xf32>) outs(%e4 : tensor<2x2x4x4xf32>) permutation = [0, 2, 1, 3]
  %se = tensor.empty() : tensor<2x2x4x4xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%se : tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %s = linalg.generic {indexing_maps = [#q, #k, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %q : tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) outs(%sz : tensor<2x2x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %0 = arith.mulf %a, %b : f32
    %1 = arith.addf %acc, %0 : f32
    linalg.yield %1 : f32
  } -> tensor<2x2x4x4xf32>
  %p = linalg.softmax dimension(3) ins(%s : tensor<2x2x4x4xf32>) outs(%se : tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %a = linalg.generic {indexing_maps = [#q, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %q : tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) outs(%sz : tensor<2x2x4x4xf32>) attrs = {pv} {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %0 = arith.mulf %a, %b : f32
    %1 = arith.addf %acc, %0 : f32
    linalg.yield %1 : f32
  } -> tensor<2x2x4x4xf32>
  %me = tensor.empty() : tensor<2x4x2x4xf32>
  %m4 = linalg.transpose ins(%a : tensor<2x2x4x4xf32>) outs(%me : tensor<2x4x2x4xf32>) permutation = [0, 2, 1, 3]
  %m2 = tensor.collapse_shape %m4 [[0, 1], [2, 3]] : tensor<2x4x2x4xf32> into tensor<8x8xf32>
  %y2 = linalg.matmul ins(%m2, %w : tensor<8x8xf32>, tensor<8x8xf32>) outs(%z2 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %y = tensor.expand_shape %y2 [[0, 1], [2]] output_shape [2, 4, 8] : tensor<8x8xf32> into tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %pv = transform.structured.match attributes {pv} in %root : (!transform.any_op) -> !transform.any_op
    %att = transform.mha.raise_attention %pv : (!transform.any_op) -> !transform.any_op
    %layer = transform.mha.raise_layer %att : (!transform.any_op) -> !transform.any_op
    transform.annotate %layer "transformed" : !transform.any_op
    transform.yield
  }
}

// -----

// A target whose layer is not all there fails silenceably with the reason.
func.func @core(%q: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %e = tensor.empty() : tensor<1x2x4x8xf32>
  // expected-note @below {{target}}
  %o = mha.attention ins(%q, %q, %q : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) outs(%e : tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %att = transform.structured.match ops{["mha.attention"]} in %root : (!transform.any_op) -> !transform.any_op
    // expected-error @below {{could not raise to mha.multi_head_attention: the queries, keys or values are not projections split into heads}}
    %layer = transform.mha.raise_layer %att : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}
