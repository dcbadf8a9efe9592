// RUN: mha-opt %s --split-input-file --resolve-ranked-shaped-type-result-dims | FileCheck %s

// Dynamic result dims of the `mha` ops are reified from their operands
// (ReifyRankedShapedTypeOpInterface), so `tensor.dim` of a result folds to a
// `tensor.dim` of an input and the op itself need not be computed first.

// CHECK-LABEL: func.func @multi_head_attention_dims
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<?x?x32xf32>
// CHECK-DAG: %[[C0:.+]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.+]] = arith.constant 1 : index
// CHECK-DAG: %[[B:.+]] = tensor.dim %[[Q]], %[[C0]]
// CHECK-DAG: %[[SQ:.+]] = tensor.dim %[[Q]], %[[C1]]
// CHECK: return %[[B]], %[[SQ]]
func.func @multi_head_attention_dims(%q: tensor<?x?x32xf32>, %kv: tensor<?x?x32xf32>, %w: tensor<32x32xf32>)
    -> (index, index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %y = mha.multi_head_attention %q, %kv, %kv, %w, %w, %w, %w {num_heads = 2 : i64}
       : (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<32x32xf32>,
          tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<?x?x32xf32>
  %b = tensor.dim %y, %c0 : tensor<?x?x32xf32>
  %sq = tensor.dim %y, %c1 : tensor<?x?x32xf32>
  return %b, %sq : index, index
}

// -----

// CHECK-LABEL: func.func @attention_dims
// CHECK-SAME: %[[INIT:[^:]+]]: tensor<?x4x?x16xf32>)
// CHECK-DAG: %[[C0:.+]] = arith.constant 0 : index
// CHECK-DAG: %[[C2:.+]] = arith.constant 2 : index
// CHECK-DAG: %[[B:.+]] = tensor.dim %[[INIT]], %[[C0]]
// CHECK-DAG: %[[SQ:.+]] = tensor.dim %[[INIT]], %[[C2]]
// CHECK-NOT: mha.attention
// CHECK: return %[[B]], %[[SQ]]
func.func @attention_dims(%q: tensor<?x4x?x16xf32>, %k: tensor<?x1x?x16xf32>, %v: tensor<?x1x?x16xf32>,
                          %init: tensor<?x4x?x16xf32>) -> (index, index) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %o = mha.attention ins(%q, %k, %v : tensor<?x4x?x16xf32>, tensor<?x1x?x16xf32>, tensor<?x1x?x16xf32>)
         outs(%init : tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32>
  %b = tensor.dim %o, %c0 : tensor<?x4x?x16xf32>
  %sq = tensor.dim %o, %c2 : tensor<?x4x?x16xf32>
  return %b, %sq : index, index
}
