// RUN: mha-opt %s --transform-interpreter --mha-tile-attention --canonicalize | FileCheck %s

// A transform script sets the lowering configuration with upstream ops
// (transform.param.constant, transform.annotate); mha-tile-attention reads it.
// CHECK-LABEL: func.func @attention
// CHECK: scf.forall ({{.*}}) = (0, 0) to (2, 100) step (1, 16)
// CHECK: scf.for {{.*}} step %c8
module attributes {transform.with_named_sequence} {
  func.func @attention(%q: tensor<1x2x100x16xf32>, %init: tensor<1x2x100x16xf32>) -> tensor<1x2x100x16xf32> {
    %o = mha.attention ins(%q, %q, %q : tensor<1x2x100x16xf32>, tensor<1x2x100x16xf32>, tensor<1x2x100x16xf32>) outs(%init : tensor<1x2x100x16xf32>) -> tensor<1x2x100x16xf32>
    return %o : tensor<1x2x100x16xf32>
  }

  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %attention = transform.structured.match ops{["mha.attention"]} in %root : (!transform.any_op) -> !transform.any_op
    %config = transform.param.constant #mha.lowering_config<q_tile = 16, kv_tile = 8> -> !transform.any_param
    transform.annotate %attention "mha.lowering_config" = %config : !transform.any_op, !transform.any_param
    transform.yield
  }
}
