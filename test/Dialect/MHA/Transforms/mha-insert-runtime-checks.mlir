// RUN: mha-opt %s --split-input-file --allow-unregistered-dialect --mha-insert-runtime-checks | FileCheck %s

// Dynamic sizes the verifier could not compare get a cf.assert each, with
// the verifier's wording; sizes it compared (static on both sides, or the
// same value) get none.

// CHECK-LABEL: func.func @cross
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<?x?x16xf32>, %[[K:[^:]+]]: tensor<?x?x8xf32>, %[[V:[^:]+]]: tensor<2x?x8xf32>
// CHECK: %[[KB:.+]] = tensor.dim %[[K]], %c0
// CHECK: %[[QB:.+]] = tensor.dim %[[Q]], %c0
// CHECK: %[[OK:.+]] = arith.cmpi eq, %[[KB]], %[[QB]]
// CHECK: cf.assert %[[OK]], "mha.multi_head_attention at {{.*}}mha-insert-runtime-checks.mlir:{{[0-9]+}}:{{[0-9]+}}: 'key' dimension 0 (B) must match 'query' dimension 0 at run time"
// CHECK: cf.assert %{{.*}}, "{{.*}}'value' dimension 0 (B) must match 'query' dimension 0 at run time"
// CHECK: cf.assert %{{.*}}, "{{.*}}'value' dimension 1 (Sk) must match 'key' dimension 1 at run time"
// CHECK: cf.assert %{{.*}}, "{{.*}}'query' dimension 1 (Sq) must match the result type (5) at run time"
// CHECK: %[[ONE:.+]] = arith.cmpi eq, %{{.*}}, %c1
// CHECK: %[[EQ_OR_ONE:.+]] = arith.ori
// CHECK: cf.assert %[[EQ_OR_ONE]], "{{.*}}'mask' dimension 0 (B) must be 1 or match 'query' dimension 0 at run time"
// CHECK: cf.assert %{{.*}}, "{{.*}}'mask' dimension 1 (H) must be 1 or match the number of heads (2) at run time"
// CHECK-NOT: 'mask' dimension 2
// CHECK: cf.assert %{{.*}}, "{{.*}}'mask' dimension 3 (Sk) must be 1 or match 'key' dimension 1 at run time"
// CHECK: mha.multi_head_attention
func.func @cross(%q: tensor<?x?x16xf32>, %k: tensor<?x?x8xf32>, %v: tensor<2x?x8xf32>, %wq: tensor<16x8xf32>,
                 %wk: tensor<8x8xf32>, %wo: tensor<8x4xf32>, %m: tensor<?x?x1x?xi1>) -> tensor<?x5x4xf32> {
  %y = mha.multi_head_attention %q, %k, %v, %wq, %wk, %wk, %wo mask(%m) {num_heads = 2 : i64}
       : (tensor<?x?x16xf32>, tensor<?x?x8xf32>, tensor<2x?x8xf32>, tensor<16x8xf32>, tensor<8x8xf32>,
          tensor<8x8xf32>, tensor<8x4xf32>, tensor<?x?x1x?xi1>) -> tensor<?x5x4xf32>
  return %y : tensor<?x5x4xf32>
}

// -----

// Static sizes: nothing to check at run time.
// CHECK-LABEL: func.func @static
// CHECK-NOT: cf.assert
func.func @static(%q: tensor<1x2x4x8xf32>, %k: tensor<1x1x6x8xf32>, %m: tensor<4x6xi1>,
                  %init: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %o = mha.attention ins(%q, %k, %k : tensor<1x2x4x8xf32>, tensor<1x1x6x8xf32>, tensor<1x1x6x8xf32>)
         mask(%m : tensor<4x6xi1>) outs(%init : tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// On mha.attention (and mha.online_attention) only a static 1 broadcasts: a
// dynamic mask dim must match its score dim exactly (the layer's
// decomposition has expanded dims that are 1 at run time).
// CHECK-LABEL: func.func @core_op_mask
// CHECK-NOT: 'mask' dimension 1
// CHECK: cf.assert %{{.*}}, "{{.*}}'mask' dimension 2 (Sq) must match 'query' dimension 2 at run time"
// CHECK: cf.assert %{{.*}}, "{{.*}}'mask' dimension 3 (Sk) must match 'key' dimension 2 at run time"
// CHECK: mha.attention
func.func @core_op_mask(%q: tensor<1x2x?x8xf32>, %k: tensor<1x2x?x8xf32>, %m: tensor<1x1x?x?xi1>,
                        %init: tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32> {
  %o = mha.attention ins(%q, %k, %k : tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>)
         mask(%m : tensor<1x1x?x?xi1>) outs(%init : tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32>
  return %o : tensor<1x2x?x8xf32>
}

// -----

// The online form gets the same checks, its state included.
// CHECK-LABEL: func.func @online
// CHECK: cf.assert %{{.*}}, "mha.online_attention at {{.*}}: 'acc' dimension 2 (Sq) must match 'query' dimension 2 at run time"
// CHECK: cf.assert %{{.*}}, "{{.*}}'max' dimension 2 (Sq) must match 'query' dimension 2 at run time"
// CHECK: cf.assert %{{.*}}, "{{.*}}'value' dimension 2 (Sk) must match 'key' dimension 2 at run time"
// CHECK: mha.online_attention
func.func @online(%q: tensor<1x2x?x8xf32>, %k: tensor<1x2x?x8xf32>, %v: tensor<1x2x?x8xf32>,
                  %acc: tensor<1x2x4x8xf32>, %max: tensor<1x2x?xf32>, %sum: tensor<1x2x4xf32>)
    -> tensor<1x2x?xf32> {
  %r:3 = mha.online_attention ins(%q, %k, %v : tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>)
           outs(%acc, %max, %sum : tensor<1x2x4x8xf32>, tensor<1x2x?xf32>, tensor<1x2x4xf32>)
           -> tensor<1x2x4x8xf32>, tensor<1x2x?xf32>, tensor<1x2x4xf32>
  return %r#1 : tensor<1x2x?xf32>
}

// -----

// The checks are the ops' RuntimeVerifiableOpInterface, so upstream's
// --generate-runtime-verification inserts them too, with its own framing.
// RUN: mha-opt %s --split-input-file --allow-unregistered-dialect --generate-runtime-verification | FileCheck %s --check-prefix=UPSTREAM
// UPSTREAM-LABEL: func.func @core_op_mask
// UPSTREAM: cf.assert %{{.*}}, "ERROR: Runtime op verification failed{{.*}}mha.attention{{.*}}'mask' dimension 2 (Sq) must match 'query' dimension 2 at run time

// -----

// Ops of unregistered dialects (allowed by --allow-unregistered-dialect)
// have no dialect object; they are skipped, not a crash.

// CHECK-LABEL: func.func @unregistered
// CHECK-NEXT: "frontend.op"
// CHECK-NOT: cf.assert
func.func @unregistered(%x: f32) -> f32 {
  %y = "frontend.op"(%x) : (f32) -> f32
  return %y : f32
}
