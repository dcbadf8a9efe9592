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
