// RUN: mha-opt %s --split-input-file --mha-raise-attention=explain=true -verify-diagnostics | FileCheck %s

// Each case is [N, Sq, Sk] attention around linalg.batch_matmul; the first
// is raised, every other differs from it in one way that makes it something
// else than attention, so it must stay as it was, with a remark saying why
// (explain=true). The forms frontends emit are raised and run in
// test/Integration/CPU/raise-attention.test.

#bq = affine_map<(b, m, n, k) -> (b, m, k)>
#bk = affine_map<(b, m, n, k) -> (b, n, k)>
#bo = affine_map<(b, m, n, k) -> (b, m, n)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// The reference: the key read [Sk, dk] through the maps, scaled scores.
// CHECK-LABEL: func.func @raised
// CHECK: %[[Q:.*]] = tensor.expand_shape %arg0 {{.*}} into tensor<2x1x4x8xf32>
// CHECK: %[[K:.*]] = tensor.expand_shape %arg1 {{.*}} into tensor<2x1x6x8xf32>
// CHECK: %[[V:.*]] = tensor.expand_shape %arg2 {{.*}} into tensor<2x1x6x8xf32>
// CHECK: %[[A:.*]] = mha.attention ins(%[[Q]], %[[K]], %[[V]] : {{.*}}) outs({{.*}}) {scale = 0.353553385 : f32}
// CHECK: %[[R:.*]] = tensor.collapse_shape %[[A]] {{.*}} into tensor<2x4x8xf32>
// CHECK-NOT: linalg.
// CHECK: return %[[R]]
func.func @raised(%q: tensor<2x4x8xf32>, %k: tensor<2x6x8xf32>, %v: tensor<2x6x8xf32>) -> tensor<2x4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %c = arith.constant 0.353553385 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %se = tensor.empty() : tensor<2x4x6xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%se : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %s = linalg.batch_matmul indexing_maps = [#bq, #bk, #bo] ins(%q, %k : tensor<2x4x8xf32>, tensor<2x6x8xf32>) outs(%sz : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %x = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<2x4x6xf32>) outs(%se : tensor<2x4x6xf32>) {
  ^bb0(%a: f32, %out: f32):
    %0 = arith.mulf %a, %c : f32
    linalg.yield %0 : f32
  } -> tensor<2x4x6xf32>
  %p = linalg.softmax dimension(2) ins(%x : tensor<2x4x6xf32>) outs(%se : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %oe = tensor.empty() : tensor<2x4x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%oe : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  // expected-remark @below {{not raised to mha.multi_head_attention: the queries, keys or values are not projections split into heads}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x4x6xf32>, tensor<2x6x8xf32>) outs(%oz : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

#bq = affine_map<(b, m, n, k) -> (b, m, k)>
#bk = affine_map<(b, m, n, k) -> (b, n, k)>
#bo = affine_map<(b, m, n, k) -> (b, m, n)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// Softmax over the queries, not the keys.
// CHECK-LABEL: func.func @softmax_wrong_axis
// CHECK-NOT: mha.attention
// CHECK: linalg.softmax
func.func @softmax_wrong_axis(%q: tensor<2x4x8xf32>, %k: tensor<2x6x8xf32>, %v: tensor<2x6x8xf32>) -> tensor<2x4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %c = arith.constant 0.353553385 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %se = tensor.empty() : tensor<2x4x6xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%se : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  // expected-remark @below {{not raised to mha.attention: the probabilities are not a softmax}}
  %s = linalg.batch_matmul indexing_maps = [#bq, #bk, #bo] ins(%q, %k : tensor<2x4x8xf32>, tensor<2x6x8xf32>) outs(%sz : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %x = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<2x4x6xf32>) outs(%se : tensor<2x4x6xf32>) {
  ^bb0(%a: f32, %out: f32):
    %0 = arith.mulf %a, %c : f32
    linalg.yield %0 : f32
  } -> tensor<2x4x6xf32>
  %p = linalg.softmax dimension(1) ins(%x : tensor<2x4x6xf32>) outs(%se : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %oe = tensor.empty() : tensor<2x4x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%oe : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  // expected-remark @below {{not raised to mha.attention: the probabilities are not a softmax}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x4x6xf32>, tensor<2x6x8xf32>) outs(%oz : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

#bq = affine_map<(b, m, n, k) -> (b, m, k)>
#bk = affine_map<(b, m, n, k) -> (b, n, k)>
#bo = affine_map<(b, m, n, k) -> (b, m, n)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// Scaled by a function argument.
// CHECK-LABEL: func.func @scale_not_constant
// CHECK-NOT: mha.attention
// CHECK: linalg.softmax
func.func @scale_not_constant(%q: tensor<2x4x8xf32>, %k: tensor<2x6x8xf32>, %v: tensor<2x6x8xf32>, %sc: f32) -> tensor<2x4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %c = arith.constant 0.353553385 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %se = tensor.empty() : tensor<2x4x6xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%se : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  // expected-remark @below {{not raised to mha.attention: the probabilities are not a softmax}}
  %s = linalg.batch_matmul indexing_maps = [#bq, #bk, #bo] ins(%q, %k : tensor<2x4x8xf32>, tensor<2x6x8xf32>) outs(%sz : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %x = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<2x4x6xf32>) outs(%se : tensor<2x4x6xf32>) {
  ^bb0(%a: f32, %out: f32):
    %0 = arith.mulf %a, %sc : f32
    linalg.yield %0 : f32
  } -> tensor<2x4x6xf32>
  %p = linalg.softmax dimension(2) ins(%x : tensor<2x4x6xf32>) outs(%se : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %oe = tensor.empty() : tensor<2x4x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%oe : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  // expected-remark @below {{not raised to mha.attention: the scores are scaled by a value that is not a constant}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x4x6xf32>, tensor<2x6x8xf32>) outs(%oz : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

#bq = affine_map<(b, m, n, k) -> (b, m, k)>
#bk = affine_map<(b, m, n, k) -> (b, n, k)>
#bo = affine_map<(b, m, n, k) -> (b, m, n)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// A mask [N, Sk, Sq] read transposed.
// CHECK-LABEL: func.func @mask_not_broadcastable
// CHECK-NOT: mha.attention
// CHECK: linalg.softmax
func.func @mask_not_broadcastable(%q: tensor<2x4x8xf32>, %k: tensor<2x6x8xf32>, %v: tensor<2x6x8xf32>, %mask: tensor<2x6x4xf32>) -> tensor<2x4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %c = arith.constant 0.353553385 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %se = tensor.empty() : tensor<2x4x6xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%se : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  // expected-remark @below {{not raised to mha.attention: the probabilities are not a softmax}}
  %s = linalg.batch_matmul indexing_maps = [#bq, #bk, #bo] ins(%q, %k : tensor<2x4x8xf32>, tensor<2x6x8xf32>) outs(%sz : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %x = linalg.generic {indexing_maps = [#id3, affine_map<(d0, d1, d2) -> (d0, d2, d1)>, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s, %mask : tensor<2x4x6xf32>, tensor<2x6x4xf32>) outs(%se : tensor<2x4x6xf32>) {
  ^bb0(%a: f32, %m: f32, %out: f32):
    %0 = arith.mulf %a, %c : f32
    %1 = arith.addf %0, %m : f32
    linalg.yield %1 : f32
  } -> tensor<2x4x6xf32>
  %p = linalg.softmax dimension(2) ins(%x : tensor<2x4x6xf32>) outs(%se : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %oe = tensor.empty() : tensor<2x4x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%oe : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  // expected-remark @below {{not raised to mha.attention: the mask is not broadcastable to the scores: its dims are not the scores' in order}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x4x6xf32>, tensor<2x6x8xf32>) outs(%oz : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

#bq = affine_map<(b, m, n, k) -> (b, m, k)>
#bk = affine_map<(b, m, n, k) -> (b, n, k)>
#bo = affine_map<(b, m, n, k) -> (b, m, n)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// The rhs [N, dk, Sk] is an argument (kᵀ as a cache keeps it): read in
// place (key_transposed).
// CHECK-LABEL: func.func @keys_given_transposed
// CHECK: %[[K4:.*]] = tensor.expand_shape %arg1 {{.*}} into tensor<2x1x8x6xf32>
// CHECK: mha.attention ins({{.*}}, %[[K4]], {{.*}} : tensor<2x1x4x8xf32>, tensor<2x1x8x6xf32>, tensor<2x1x6x8xf32>) outs({{.*}}) {key_transposed, scale = 0.353553385 : f32}
// CHECK-NOT: linalg.softmax
func.func @keys_given_transposed(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x6xf32>, %v: tensor<2x6x8xf32>) -> tensor<2x4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %c = arith.constant 0.353553385 : f32
  %se = tensor.empty() : tensor<2x4x6xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%se : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<2x4x8xf32>, tensor<2x8x6xf32>) outs(%sz : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %x = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<2x4x6xf32>) outs(%se : tensor<2x4x6xf32>) {
  ^bb0(%a: f32, %out: f32):
    %0 = arith.mulf %a, %c : f32
    linalg.yield %0 : f32
  } -> tensor<2x4x6xf32>
  %p = linalg.softmax dimension(2) ins(%x : tensor<2x4x6xf32>) outs(%se : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %oe = tensor.empty() : tensor<2x4x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%oe : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  // expected-remark @below {{not raised to mha.multi_head_attention: the keys are given transposed ([B, Hkv, dk, Sk])}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x4x6xf32>, tensor<2x6x8xf32>) outs(%oz : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

#bq = affine_map<(b, m, n, k) -> (b, m, k)>
#bk = affine_map<(b, m, n, k) -> (b, n, k)>
#bo = affine_map<(b, m, n, k) -> (b, m, n)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// The rhs [N, dk, Sk] comes from a transpose of [dk, N, Sk] (batch and head
// dims swapped, not the last two): a transpose that is not the key's.
// CHECK-LABEL: func.func @transpose_not_the_keys
// CHECK-NOT: mha.attention
// CHECK: linalg.softmax
func.func @transpose_not_the_keys(%q: tensor<2x4x8xf32>, %kx: tensor<8x2x6xf32>, %v: tensor<2x6x8xf32>) -> tensor<2x4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %c = arith.constant 0.353553385 : f32
  %te = tensor.empty() : tensor<2x8x6xf32>
  %kt = linalg.transpose ins(%kx : tensor<8x2x6xf32>) outs(%te : tensor<2x8x6xf32>) permutation = [1, 0, 2]
  %se = tensor.empty() : tensor<2x4x6xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%se : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  // expected-remark @below {{not raised to mha.attention: the probabilities are not a softmax}}
  %s = linalg.batch_matmul ins(%q, %kt : tensor<2x4x8xf32>, tensor<2x8x6xf32>) outs(%sz : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %x = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<2x4x6xf32>) outs(%se : tensor<2x4x6xf32>) {
  ^bb0(%a: f32, %out: f32):
    %0 = arith.mulf %a, %c : f32
    linalg.yield %0 : f32
  } -> tensor<2x4x6xf32>
  %p = linalg.softmax dimension(2) ins(%x : tensor<2x4x6xf32>) outs(%se : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %oe = tensor.empty() : tensor<2x4x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%oe : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  // expected-remark @below {{not raised to mha.attention: the keys are read through a transpose that is not of their last two dims}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x4x6xf32>, tensor<2x6x8xf32>) outs(%oz : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

#bq = affine_map<(b, m, n, k) -> (b, m, k)>
#bk = affine_map<(b, m, n, k) -> (b, n, k)>
#bo = affine_map<(b, m, n, k) -> (b, m, n)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// The transpose is of the scores, not of the keys: the softmax then runs
// over the queries.
// CHECK-LABEL: func.func @transpose_of_the_scores
// CHECK-NOT: mha.attention
// CHECK: linalg.softmax
func.func @transpose_of_the_scores(%q: tensor<2x4x8xf32>, %k: tensor<2x6x8xf32>, %v: tensor<2x4x8xf32>) -> tensor<2x6x8xf32> {
  %zero = arith.constant 0.0 : f32
  %se = tensor.empty() : tensor<2x4x6xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%se : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  // expected-remark @below {{not raised to mha.attention: the probabilities are not a softmax}}
  %s = linalg.batch_matmul indexing_maps = [#bq, #bk, #bo] ins(%q, %k : tensor<2x4x8xf32>, tensor<2x6x8xf32>) outs(%sz : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %te = tensor.empty() : tensor<2x6x4xf32>
  %st = linalg.transpose ins(%s : tensor<2x4x6xf32>) outs(%te : tensor<2x6x4xf32>) permutation = [0, 2, 1]
  %p = linalg.softmax dimension(2) ins(%st : tensor<2x6x4xf32>) outs(%te : tensor<2x6x4xf32>) -> tensor<2x6x4xf32>
  %oe = tensor.empty() : tensor<2x6x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%oe : tensor<2x6x8xf32>) -> tensor<2x6x8xf32>
  // expected-remark @below {{not raised to mha.attention: the softmax input is not computed from a contraction of queries and keys}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x6x4xf32>, tensor<2x4x8xf32>) outs(%oz : tensor<2x6x8xf32>) -> tensor<2x6x8xf32>
  return %o : tensor<2x6x8xf32>
}

// -----

#bq = affine_map<(b, m, n, k) -> (b, m, k)>
#bk = affine_map<(b, m, n, k) -> (b, n, k)>
#bo = affine_map<(b, m, n, k) -> (b, m, n)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// P·V added to a non-zero init.
// CHECK-LABEL: func.func @accumulates
// CHECK-NOT: mha.attention
// CHECK: linalg.softmax
func.func @accumulates(%q: tensor<2x4x8xf32>, %k: tensor<2x6x8xf32>, %v: tensor<2x6x8xf32>, %init: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %c = arith.constant 0.353553385 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %se = tensor.empty() : tensor<2x4x6xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%se : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  // expected-remark @below {{not raised to mha.attention: the probabilities are not a softmax}}
  %s = linalg.batch_matmul indexing_maps = [#bq, #bk, #bo] ins(%q, %k : tensor<2x4x8xf32>, tensor<2x6x8xf32>) outs(%sz : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %x = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<2x4x6xf32>) outs(%se : tensor<2x4x6xf32>) {
  ^bb0(%a: f32, %out: f32):
    %0 = arith.mulf %a, %c : f32
    linalg.yield %0 : f32
  } -> tensor<2x4x6xf32>
  %p = linalg.softmax dimension(2) ins(%x : tensor<2x4x6xf32>) outs(%se : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %oe = tensor.empty() : tensor<2x4x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%oe : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  // expected-remark @below {{not raised to mha.attention: the op accumulates into a value that is not zero}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x4x6xf32>, tensor<2x6x8xf32>) outs(%init : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

#bq = affine_map<(b, m, n, k) -> (b, m, k)>
#bk = affine_map<(b, m, n, k) -> (b, n, k)>
#bo = affine_map<(b, m, n, k) -> (b, m, n)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// A float mask added before the scale (the mask is scaled too).
// CHECK-LABEL: func.func @mask_before_scale
// CHECK-NOT: mha.attention
// CHECK: linalg.softmax
func.func @mask_before_scale(%q: tensor<2x4x8xf32>, %k: tensor<2x6x8xf32>, %v: tensor<2x6x8xf32>, %mask: tensor<2x4x6xf32>) -> tensor<2x4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %c = arith.constant 0.353553385 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %se = tensor.empty() : tensor<2x4x6xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%se : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  // expected-remark @below {{not raised to mha.attention: the probabilities are not a softmax}}
  %s = linalg.batch_matmul indexing_maps = [#bq, #bk, #bo] ins(%q, %k : tensor<2x4x8xf32>, tensor<2x6x8xf32>) outs(%sz : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %x = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s, %mask : tensor<2x4x6xf32>, tensor<2x4x6xf32>) outs(%se : tensor<2x4x6xf32>) {
  ^bb0(%a: f32, %m: f32, %out: f32):
    %0 = arith.addf %a, %m : f32
    %1 = arith.mulf %0, %c : f32
    linalg.yield %1 : f32
  } -> tensor<2x4x6xf32>
  %p = linalg.softmax dimension(2) ins(%x : tensor<2x4x6xf32>) outs(%se : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %oe = tensor.empty() : tensor<2x4x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%oe : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  // expected-remark @below {{not raised to mha.attention: the mask is scaled with the scores (it is added before the scale)}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x4x6xf32>, tensor<2x6x8xf32>) outs(%oz : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

#bq = affine_map<(b, m, n, k) -> (b, m, k)>
#bk = affine_map<(b, m, n, k) -> (b, n, k)>
#bo = affine_map<(b, m, n, k) -> (b, m, n)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// A boolean mask whose fill (-1) does not hide the key.
// CHECK-LABEL: func.func @small_fill
// CHECK-NOT: mha.attention
// CHECK: linalg.softmax
func.func @small_fill(%q: tensor<2x4x8xf32>, %k: tensor<2x6x8xf32>, %v: tensor<2x6x8xf32>, %mask: tensor<2x4x6xi1>) -> tensor<2x4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %c = arith.constant 0.353553385 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %se = tensor.empty() : tensor<2x4x6xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%se : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  // expected-remark @below {{not raised to mha.attention: the probabilities are not a softmax}}
  %s = linalg.batch_matmul indexing_maps = [#bq, #bk, #bo] ins(%q, %k : tensor<2x4x8xf32>, tensor<2x6x8xf32>) outs(%sz : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %x = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s, %mask : tensor<2x4x6xf32>, tensor<2x4x6xi1>) outs(%se : tensor<2x4x6xf32>) {
  ^bb0(%a: f32, %m: i1, %out: f32):
    %0 = arith.mulf %a, %c : f32
    %fill = arith.constant -1.0 : f32
    %1 = arith.select %m, %0, %fill : f32
    linalg.yield %1 : f32
  } -> tensor<2x4x6xf32>
  %p = linalg.softmax dimension(2) ins(%x : tensor<2x4x6xf32>) outs(%se : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %oe = tensor.empty() : tensor<2x4x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%oe : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  // expected-remark @below {{not raised to mha.attention: the scores are masked with a fill value that is neither -inf nor at most -1e4}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x4x6xf32>, tensor<2x6x8xf32>) outs(%oz : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

#bq = affine_map<(b, m, n, k) -> (b, m, k)>
#bk = affine_map<(b, m, n, k) -> (b, n, k)>
#bo = affine_map<(b, m, n, k) -> (b, m, n)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// Scaled by a negative constant.
// CHECK-LABEL: func.func @scale_negative
// CHECK-NOT: mha.attention
// CHECK: linalg.softmax
func.func @scale_negative(%q: tensor<2x4x8xf32>, %k: tensor<2x6x8xf32>, %v: tensor<2x6x8xf32>) -> tensor<2x4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %c = arith.constant 0.353553385 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %se = tensor.empty() : tensor<2x4x6xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%se : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  // expected-remark @below {{not raised to mha.attention: the probabilities are not a softmax}}
  %s = linalg.batch_matmul indexing_maps = [#bq, #bk, #bo] ins(%q, %k : tensor<2x4x8xf32>, tensor<2x6x8xf32>) outs(%sz : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %x = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<2x4x6xf32>) outs(%se : tensor<2x4x6xf32>) {
  ^bb0(%a: f32, %out: f32):
    %m1 = arith.constant -0.5 : f32
    %0 = arith.mulf %a, %m1 : f32
    linalg.yield %0 : f32
  } -> tensor<2x4x6xf32>
  %p = linalg.softmax dimension(2) ins(%x : tensor<2x4x6xf32>) outs(%se : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %oe = tensor.empty() : tensor<2x4x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%oe : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  // expected-remark @below {{not raised to mha.attention: the scores are scaled by a non-positive constant}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x4x6xf32>, tensor<2x6x8xf32>) outs(%oz : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

#bq = affine_map<(b, m, n, k) -> (b, m, k)>
#bk = affine_map<(b, m, n, k) -> (b, n, k)>
#bo = affine_map<(b, m, n, k) -> (b, m, n)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// Two float masks.
// CHECK-LABEL: func.func @two_masks
// CHECK-NOT: mha.attention
// CHECK: linalg.softmax
func.func @two_masks(%q: tensor<2x4x8xf32>, %k: tensor<2x6x8xf32>, %v: tensor<2x6x8xf32>, %mask: tensor<2x4x6xf32>, %mask2: tensor<4x6xf32>) -> tensor<2x4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %c = arith.constant 0.353553385 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %se = tensor.empty() : tensor<2x4x6xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%se : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  // expected-remark @below {{not raised to mha.attention: the probabilities are not a softmax}}
  %s = linalg.batch_matmul indexing_maps = [#bq, #bk, #bo] ins(%q, %k : tensor<2x4x8xf32>, tensor<2x6x8xf32>) outs(%sz : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %x = linalg.generic {indexing_maps = [#id3, #id3, affine_map<(d0, d1, d2) -> (d1, d2)>, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s, %mask, %mask2 : tensor<2x4x6xf32>, tensor<2x4x6xf32>, tensor<4x6xf32>) outs(%se : tensor<2x4x6xf32>) {
  ^bb0(%a: f32, %m: f32, %n: f32, %out: f32):
    %0 = arith.mulf %a, %c : f32
    %1 = arith.addf %0, %m : f32
    %2 = arith.addf %1, %n : f32
    linalg.yield %2 : f32
  } -> tensor<2x4x6xf32>
  %p = linalg.softmax dimension(2) ins(%x : tensor<2x4x6xf32>) outs(%se : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %oe = tensor.empty() : tensor<2x4x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%oe : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  // expected-remark @below {{not raised to mha.attention: the scores have more than one mask}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x4x6xf32>, tensor<2x6x8xf32>) outs(%oz : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

#q = affine_map<(b, h, m, n, k) -> (b, h, m, k)>
#k = affine_map<(b, h, m, n, k) -> (b, h, n, k)>
#v = affine_map<(b, h, m, n, k) -> (b, h, k, n)>
#o = affine_map<(b, h, m, n, k) -> (b, h, m, n)>

// A whole layer (2-d projections without biases, keys and values sharing one projection): raised to mha.multi_head_attention.
// CHECK-LABEL: func.func @layer
// CHECK: %[[Y:.*]] = mha.multi_head_attention %arg0, %arg0, %arg0, %arg1, %arg1, %arg1, %arg1 {num_heads = 2 : i64, scale = 1.000000e+00 : f32}
// CHECK-NOT: linalg.
// CHECK: return %[[Y]]
func.func @layer(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %x2 = tensor.collapse_shape %x [[0, 1], [2]] : tensor<2x4x8xf32> into tensor<8x8xf32>
  %e2 = tensor.empty() : tensor<8x8xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %e4 = tensor.empty() : tensor<2x2x4x4xf32>
  %pq = linalg.matmul ins(%x2, %w : tensor<8x8xf32>, tensor<8x8xf32>) outs(%z2 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %q3 = tensor.expand_shape %pq [[0, 1], [2, 3]] output_shape [2, 4, 2, 4] : tensor<8x8xf32> into tensor<2x4x2x4xf32>
  %q = linalg.transpose ins(%q3 : tensor<2x4x2x4xf32>) outs(%e4 : tensor<2x2x4x4xf32>) permutation = [0, 2, 1, 3]
  %pk = linalg.matmul ins(%x2, %w : tensor<8x8xf32>, tensor<8x8xf32>) outs(%z2 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %k3 = tensor.expand_shape %pk [[0, 1], [2, 3]] output_shape [2, 4, 2, 4] : tensor<8x8xf32> into tensor<2x4x2x4xf32>
  %k = linalg.transpose ins(%k3 : tensor<2x4x2x4xf32>) outs(%e4 : tensor<2x2x4x4xf32>) permutation = [0, 2, 1, 3]
  %se = tensor.empty() : tensor<2x2x4x4xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%se : tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %s = linalg.generic {indexing_maps = [#q, #k, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) outs(%sz : tensor<2x2x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %0 = arith.mulf %a, %b : f32
    %1 = arith.addf %acc, %0 : f32
    linalg.yield %1 : f32
  } -> tensor<2x2x4x4xf32>
  %p = linalg.softmax dimension(3) ins(%s : tensor<2x2x4x4xf32>) outs(%se : tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %a = linalg.generic {indexing_maps = [#q, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %k : tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) outs(%sz : tensor<2x2x4x4xf32>) {
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

// -----

#q = affine_map<(b, h, m, n, k) -> (b, h, m, k)>
#k = affine_map<(b, h, m, n, k) -> (b, h, n, k)>
#v = affine_map<(b, h, m, n, k) -> (b, h, k, n)>
#o = affine_map<(b, h, m, n, k) -> (b, h, m, n)>

// The heads are not moved back after the sequence before the merge: only the core is raised.
// CHECK-LABEL: func.func @layer_heads_not_merged
// CHECK: mha.attention
// CHECK-NOT: mha.multi_head_attention
func.func @layer_heads_not_merged(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %x2 = tensor.collapse_shape %x [[0, 1], [2]] : tensor<2x4x8xf32> into tensor<8x8xf32>
  %e2 = tensor.empty() : tensor<8x8xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %e4 = tensor.empty() : tensor<2x2x4x4xf32>
  // expected-remark @below {{not raised to mha.attention: the probabilities are not a softmax}}
  %pq = linalg.matmul ins(%x2, %w : tensor<8x8xf32>, tensor<8x8xf32>) outs(%z2 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %q3 = tensor.expand_shape %pq [[0, 1], [2, 3]] output_shape [2, 4, 2, 4] : tensor<8x8xf32> into tensor<2x4x2x4xf32>
  %q = linalg.transpose ins(%q3 : tensor<2x4x2x4xf32>) outs(%e4 : tensor<2x2x4x4xf32>) permutation = [0, 2, 1, 3]
  // expected-remark @below {{not raised to mha.attention: the probabilities are not a softmax}}
  %pk = linalg.matmul ins(%x2, %w : tensor<8x8xf32>, tensor<8x8xf32>) outs(%z2 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %k3 = tensor.expand_shape %pk [[0, 1], [2, 3]] output_shape [2, 4, 2, 4] : tensor<8x8xf32> into tensor<2x4x2x4xf32>
  %k = linalg.transpose ins(%k3 : tensor<2x4x2x4xf32>) outs(%e4 : tensor<2x2x4x4xf32>) permutation = [0, 2, 1, 3]
  %se = tensor.empty() : tensor<2x2x4x4xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%se : tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %s = linalg.generic {indexing_maps = [#q, #k, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) outs(%sz : tensor<2x2x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %0 = arith.mulf %a, %b : f32
    %1 = arith.addf %acc, %0 : f32
    linalg.yield %1 : f32
  } -> tensor<2x2x4x4xf32>
  %p = linalg.softmax dimension(3) ins(%s : tensor<2x2x4x4xf32>) outs(%se : tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  // expected-remark @below {{not raised to mha.multi_head_attention: the attention's result is not moved back after the sequence}}
  %a = linalg.generic {indexing_maps = [#q, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %k : tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) outs(%sz : tensor<2x2x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %0 = arith.mulf %a, %b : f32
    %1 = arith.addf %acc, %0 : f32
    linalg.yield %1 : f32
  } -> tensor<2x2x4x4xf32>
  %me = tensor.empty() : tensor<2x4x4x2xf32>
  %m4 = linalg.transpose ins(%a : tensor<2x2x4x4xf32>) outs(%me : tensor<2x4x4x2xf32>) permutation = [0, 2, 3, 1]
  %m2 = tensor.collapse_shape %m4 [[0, 1], [2, 3]] : tensor<2x4x4x2xf32> into tensor<8x8xf32>
  // expected-remark @below {{not raised to mha.attention: the probabilities are not a softmax}}
  %y2 = linalg.matmul ins(%m2, %w : tensor<8x8xf32>, tensor<8x8xf32>) outs(%z2 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %y = tensor.expand_shape %y2 [[0, 1], [2]] output_shape [2, 4, 8] : tensor<8x8xf32> into tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// -----

#q = affine_map<(b, h, m, n, k) -> (b, h, m, k)>
#k = affine_map<(b, h, m, n, k) -> (b, h, n, k)>
#v = affine_map<(b, h, m, n, k) -> (b, h, k, n)>
#o = affine_map<(b, h, m, n, k) -> (b, h, m, n)>

// The queries are an input split into heads, not a projection: only the core is raised.
// CHECK-LABEL: func.func @layer_query_not_projected
// CHECK: mha.attention
// CHECK-NOT: mha.multi_head_attention
func.func @layer_query_not_projected(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>, %xq: tensor<2x2x16xf32>) -> tensor<2x4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %x2 = tensor.collapse_shape %x [[0, 1], [2]] : tensor<2x4x8xf32> into tensor<8x8xf32>
  %e2 = tensor.empty() : tensor<8x8xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %e4 = tensor.empty() : tensor<2x2x4x4xf32>
  %q = tensor.expand_shape %xq [[0], [1], [2, 3]] output_shape [2, 2, 4, 4] : tensor<2x2x16xf32> into tensor<2x2x4x4xf32>
  // expected-remark @below {{not raised to mha.attention: the probabilities are not a softmax}}
  %pk = linalg.matmul ins(%x2, %w : tensor<8x8xf32>, tensor<8x8xf32>) outs(%z2 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %k3 = tensor.expand_shape %pk [[0, 1], [2, 3]] output_shape [2, 4, 2, 4] : tensor<8x8xf32> into tensor<2x4x2x4xf32>
  %k = linalg.transpose ins(%k3 : tensor<2x4x2x4xf32>) outs(%e4 : tensor<2x2x4x4xf32>) permutation = [0, 2, 1, 3]
  %se = tensor.empty() : tensor<2x2x4x4xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%se : tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %s = linalg.generic {indexing_maps = [#q, #k, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) outs(%sz : tensor<2x2x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %0 = arith.mulf %a, %b : f32
    %1 = arith.addf %acc, %0 : f32
    linalg.yield %1 : f32
  } -> tensor<2x2x4x4xf32>
  %p = linalg.softmax dimension(3) ins(%s : tensor<2x2x4x4xf32>) outs(%se : tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  // expected-remark @below {{not raised to mha.multi_head_attention: the queries, keys or values are not projections split into heads}}
  %a = linalg.generic {indexing_maps = [#q, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %k : tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) outs(%sz : tensor<2x2x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %0 = arith.mulf %a, %b : f32
    %1 = arith.addf %acc, %0 : f32
    linalg.yield %1 : f32
  } -> tensor<2x2x4x4xf32>
  %me = tensor.empty() : tensor<2x4x2x4xf32>
  %m4 = linalg.transpose ins(%a : tensor<2x2x4x4xf32>) outs(%me : tensor<2x4x2x4xf32>) permutation = [0, 2, 1, 3]
  %m2 = tensor.collapse_shape %m4 [[0, 1], [2, 3]] : tensor<2x4x2x4xf32> into tensor<8x8xf32>
  // expected-remark @below {{not raised to mha.attention: the probabilities are not a softmax}}
  %y2 = linalg.matmul ins(%m2, %w : tensor<8x8xf32>, tensor<8x8xf32>) outs(%z2 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %y = tensor.expand_shape %y2 [[0, 1], [2]] output_shape [2, 4, 8] : tensor<8x8xf32> into tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// -----

// TOSA: tosa.matmul with the key given [dk, Sk], the softmax as reduce_max/sub/exp/reduce_sum/reciprocal/mul.
// CHECK-LABEL: func.func @tosa_raised
// CHECK: mha.attention
// CHECK-SAME: {scale = 0.353553385 : f32}
// CHECK-NOT: tosa.matmul
func.func @tosa_raised(%q: tensor<2x4x8xf32>, %k: tensor<2x6x8xf32>, %v: tensor<2x6x8xf32>) -> tensor<2x4x8xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %c = "tosa.const"() <{values = dense<0.353553385> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %kt = tosa.transpose %k {perms = array<i32: 0, 2, 1>} : (tensor<2x6x8xf32>) -> tensor<2x8x6xf32>
  %s = tosa.matmul %q, %kt, %zp, %zp : (tensor<2x4x8xf32>, tensor<2x8x6xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x4x6xf32>
  %x = tosa.mul %s, %c, %shift : (tensor<2x4x6xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<2x4x6xf32>
  %m = tosa.reduce_max %x {axis = 2 : i32} : (tensor<2x4x6xf32>) -> tensor<2x4x1xf32>
  %d = tosa.sub %x, %m : (tensor<2x4x6xf32>, tensor<2x4x1xf32>) -> tensor<2x4x6xf32>
  %e = tosa.exp %d : (tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %sum = tosa.reduce_sum %e {axis = 2 : i32} : (tensor<2x4x6xf32>) -> tensor<2x4x1xf32>
  %r = tosa.reciprocal %sum : (tensor<2x4x1xf32>) -> tensor<2x4x1xf32>
  %p = tosa.mul %e, %r, %shift : (tensor<2x4x6xf32>, tensor<2x4x1xf32>, tensor<1xi8>) -> tensor<2x4x6xf32>
  // expected-remark @below {{not raised to mha.multi_head_attention: the queries, keys or values are not projections split into heads}}
  %o = tosa.matmul %p, %v, %zp, %zp : (tensor<2x4x6xf32>, tensor<2x6x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

// TOSA softmax over the queries (axis 1).
// CHECK-LABEL: func.func @tosa_wrong_axis
// CHECK-NOT: mha.attention
func.func @tosa_wrong_axis(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x6xf32>, %v: tensor<2x6x8xf32>) -> tensor<2x4x8xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %c = "tosa.const"() <{values = dense<0.353553385> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  // expected-remark @below {{not raised to mha.attention: the probabilities are not a softmax}}
  %s = tosa.matmul %q, %kt, %zp, %zp : (tensor<2x4x8xf32>, tensor<2x8x6xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x4x6xf32>
  %x = tosa.mul %s, %c, %shift : (tensor<2x4x6xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<2x4x6xf32>
  %m = tosa.reduce_max %x {axis = 1 : i32} : (tensor<2x4x6xf32>) -> tensor<2x1x6xf32>
  %d = tosa.sub %x, %m : (tensor<2x4x6xf32>, tensor<2x1x6xf32>) -> tensor<2x4x6xf32>
  %e = tosa.exp %d : (tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %sum = tosa.reduce_sum %e {axis = 1 : i32} : (tensor<2x4x6xf32>) -> tensor<2x1x6xf32>
  %r = tosa.reciprocal %sum : (tensor<2x1x6xf32>) -> tensor<2x1x6xf32>
  %p = tosa.mul %e, %r, %shift : (tensor<2x4x6xf32>, tensor<2x1x6xf32>, tensor<1xi8>) -> tensor<2x4x6xf32>
  // expected-remark @below {{not raised to mha.attention: the probabilities are not a softmax: no division by the row sum}}
  %o = tosa.matmul %p, %v, %zp, %zp : (tensor<2x4x6xf32>, tensor<2x6x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

// The key [dk, Sk] is an argument (not a transpose): read in place.
// CHECK-LABEL: func.func @tosa_key_given_transposed
// CHECK: mha.attention ins({{.*}} : tensor<2x1x4x8xf32>, tensor<2x1x8x6xf32>, tensor<2x1x6x8xf32>) outs({{.*}}) {key_transposed, scale = 0.353553385 : f32}
// CHECK-NOT: tosa.matmul
func.func @tosa_key_given_transposed(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x6xf32>, %v: tensor<2x6x8xf32>) -> tensor<2x4x8xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %c = "tosa.const"() <{values = dense<0.353553385> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %s = tosa.matmul %q, %kt, %zp, %zp : (tensor<2x4x8xf32>, tensor<2x8x6xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x4x6xf32>
  %x = tosa.mul %s, %c, %shift : (tensor<2x4x6xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<2x4x6xf32>
  %m = tosa.reduce_max %x {axis = 2 : i32} : (tensor<2x4x6xf32>) -> tensor<2x4x1xf32>
  %d = tosa.sub %x, %m : (tensor<2x4x6xf32>, tensor<2x4x1xf32>) -> tensor<2x4x6xf32>
  %e = tosa.exp %d : (tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %sum = tosa.reduce_sum %e {axis = 2 : i32} : (tensor<2x4x6xf32>) -> tensor<2x4x1xf32>
  %r = tosa.reciprocal %sum : (tensor<2x4x1xf32>) -> tensor<2x4x1xf32>
  %p = tosa.mul %e, %r, %shift : (tensor<2x4x6xf32>, tensor<2x4x1xf32>, tensor<1xi8>) -> tensor<2x4x6xf32>
  // expected-remark @below {{not raised to mha.multi_head_attention: the keys are given transposed ([B, Hkv, dk, Sk])}}
  %o = tosa.matmul %p, %v, %zp, %zp : (tensor<2x4x6xf32>, tensor<2x6x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

#bq = affine_map<(b, m, n, k) -> (b, m, k)>
#bk = affine_map<(b, m, n, k) -> (b, n, k)>
#bo = affine_map<(b, m, n, k) -> (b, m, n)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// A predicate on the positions that is not a triangle (key <= 2 * query).
// CHECK-LABEL: func.func @not_causal
// CHECK-NOT: mha.attention
func.func @not_causal(%q: tensor<2x4x8xf32>, %k: tensor<2x6x8xf32>, %v: tensor<2x6x8xf32>) -> tensor<2x4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %c = arith.constant 0.353553385 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %se = tensor.empty() : tensor<2x4x6xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%se : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  // expected-remark @below {{not raised to mha.attention: the probabilities are not a softmax}}
  %s = linalg.batch_matmul indexing_maps = [#bq, #bk, #bo] ins(%q, %k : tensor<2x4x8xf32>, tensor<2x6x8xf32>) outs(%sz : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %x = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<2x4x6xf32>) outs(%se : tensor<2x4x6xf32>) {
  ^bb0(%a: f32, %out: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %two = arith.constant 2 : index
    %i2 = arith.muli %i, %two : index
    %vis = arith.cmpi sle, %j, %i2 : index
    %0 = arith.mulf %a, %c : f32
    %1 = arith.select %vis, %0, %ninf : f32
    linalg.yield %1 : f32
  } -> tensor<2x4x6xf32>
  %p = linalg.softmax dimension(2) ins(%x : tensor<2x4x6xf32>) outs(%se : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %oe = tensor.empty() : tensor<2x4x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%oe : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  // expected-remark @below {{not raised to mha.attention: the mask predicate is neither `key <= query + c` nor a function of one tensor}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x4x6xf32>, tensor<2x6x8xf32>) outs(%oz : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

#bq = affine_map<(b, m, n, k) -> (b, m, k)>
#bk = affine_map<(b, m, n, k) -> (b, n, k)>
#bo = affine_map<(b, m, n, k) -> (b, m, n)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// exp(x) / sum(exp(x)) without the row maximum subtracted (overflows where the softmax does not).
// CHECK-LABEL: func.func @no_max
// CHECK-NOT: mha.attention
func.func @no_max(%q: tensor<2x4x8xf32>, %k: tensor<2x6x8xf32>, %v: tensor<2x6x8xf32>) -> tensor<2x4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %c = arith.constant 0.353553385 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %se = tensor.empty() : tensor<2x4x6xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%se : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  // expected-remark @below {{not raised to mha.attention: the probabilities are not a softmax}}
  %s = linalg.batch_matmul indexing_maps = [#bq, #bk, #bo] ins(%q, %k : tensor<2x4x8xf32>, tensor<2x6x8xf32>) outs(%sz : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %x = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<2x4x6xf32>) outs(%se : tensor<2x4x6xf32>) {
  ^bb0(%a: f32, %out: f32):
    %0 = arith.mulf %a, %c : f32
    linalg.yield %0 : f32
  } -> tensor<2x4x6xf32>
  %e = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : tensor<2x4x6xf32>) outs(%se : tensor<2x4x6xf32>) {
  ^bb0(%a: f32, %out: f32):
    %0 = math.exp %a : f32
    linalg.yield %0 : f32
  } -> tensor<2x4x6xf32>
  %re = tensor.empty() : tensor<2x4xf32>
  %rz = linalg.fill ins(%zero : f32) outs(%re : tensor<2x4xf32>) -> tensor<2x4xf32>
  %sum = linalg.generic {indexing_maps = [#id3, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%e : tensor<2x4x6xf32>) outs(%rz : tensor<2x4xf32>) {
  ^bb0(%a: f32, %out: f32):
    %0 = arith.addf %a, %out : f32
    linalg.yield %0 : f32
  } -> tensor<2x4xf32>
  %p = linalg.generic {indexing_maps = [#id3, affine_map<(d0, d1, d2) -> (d0, d1)>, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%e, %sum : tensor<2x4x6xf32>, tensor<2x4xf32>) outs(%se : tensor<2x4x6xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %0 = arith.divf %a, %b : f32
    linalg.yield %0 : f32
  } -> tensor<2x4x6xf32>
  %oe = tensor.empty() : tensor<2x4x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%oe : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  // expected-remark @below {{not raised to mha.attention: the probabilities are not a softmax: not exp(x - max(x))}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x4x6xf32>, tensor<2x6x8xf32>) outs(%oz : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

#bq = affine_map<(b, m, n, k) -> (b, m, k)>
#bk = affine_map<(b, m, n, k) -> (b, n, k)>
#bo = affine_map<(b, m, n, k) -> (b, m, n)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// A constant boolean mask that is not a triangle: raised as a mask, not as causal.
// CHECK-LABEL: func.func @constant_not_triangle
// CHECK: arith.constant dense<{{.*}}> : tensor<4x6xi1>
// CHECK: mha.attention {{.*}} mask(%{{.*}} : tensor<1x1x4x6xi1>)
// CHECK-NOT: causal
func.func @constant_not_triangle(%q: tensor<2x4x8xf32>, %k: tensor<2x6x8xf32>, %v: tensor<2x6x8xf32>) -> tensor<2x4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %c = arith.constant 0.353553385 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %se = tensor.empty() : tensor<2x4x6xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%se : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %s = linalg.batch_matmul indexing_maps = [#bq, #bk, #bo] ins(%q, %k : tensor<2x4x8xf32>, tensor<2x6x8xf32>) outs(%sz : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %m = arith.constant dense<[[true, false, true, true, true, true], [true, true, false, true, true, true], [true, true, true, false, true, true], [true, true, true, true, false, true]]> : tensor<4x6xi1>
  %x = linalg.generic {indexing_maps = [#id3, affine_map<(d0, d1, d2) -> (d1, d2)>, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s, %m : tensor<2x4x6xf32>, tensor<4x6xi1>) outs(%se : tensor<2x4x6xf32>) {
  ^bb0(%a: f32, %b: i1, %out: f32):
    %0 = arith.mulf %a, %c : f32
    %1 = arith.select %b, %0, %ninf : f32
    linalg.yield %1 : f32
  } -> tensor<2x4x6xf32>
  %p = linalg.softmax dimension(2) ins(%x : tensor<2x4x6xf32>) outs(%se : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %oe = tensor.empty() : tensor<2x4x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%oe : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  // expected-remark @below {{not raised to mha.multi_head_attention: the queries, keys or values are not projections split into heads}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x4x6xf32>, tensor<2x6x8xf32>) outs(%oz : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

#bq = affine_map<(b, m, n, k) -> (b, m, k)>
#bk = affine_map<(b, m, n, k) -> (b, n, k)>
#bo = affine_map<(b, m, n, k) -> (b, m, n)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// The scale as SSA arithmetic on constants a frontend left unfolded:
// sqrt(float(dk)) from an integer dk, the scores divided by it.
// CHECK-LABEL: func.func @scale_computed
// CHECK: mha.attention {{.*}} {scale = 0.353553385 : f32}
func.func @scale_computed(%q: tensor<2x4x8xf32>, %k: tensor<2x6x8xf32>, %v: tensor<2x6x8xf32>) -> tensor<2x4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %dk = arith.constant 8 : i64
  %dkf = arith.sitofp %dk : i64 to f32
  %root = math.sqrt %dkf : f32
  %se = tensor.empty() : tensor<2x4x6xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%se : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %s = linalg.batch_matmul indexing_maps = [#bq, #bk, #bo] ins(%q, %k : tensor<2x4x8xf32>, tensor<2x6x8xf32>) outs(%sz : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %x = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<2x4x6xf32>) outs(%se : tensor<2x4x6xf32>) {
  ^bb0(%a: f32, %out: f32):
    %0 = arith.divf %a, %root : f32
    linalg.yield %0 : f32
  } -> tensor<2x4x6xf32>
  %p = linalg.softmax dimension(2) ins(%x : tensor<2x4x6xf32>) outs(%se : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %oe = tensor.empty() : tensor<2x4x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%oe : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  // expected-remark @below {{not raised to mha.multi_head_attention: the queries, keys or values are not projections split into heads}}
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x4x6xf32>, tensor<2x6x8xf32>) outs(%oz : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

// A dynamic batch that only the (non-linalg) result could give: the check
// fails after the operands' views were built, and they are erased again
// (a failed raise changes nothing).
// CHECK-LABEL: func.func @tosa_dynamic_batch
// CHECK-NOT: tensor.expand_shape
// CHECK-NOT: tensor.collapse_shape
// CHECK-NOT: tensor.dim
// CHECK-NOT: mha.attention
// CHECK: return
func.func @tosa_dynamic_batch(%q: tensor<?x4x8xf32>, %k: tensor<?x6x8xf32>, %v: tensor<?x6x8xf32>) -> tensor<?x4x8xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %c = "tosa.const"() <{values = dense<0.353553385> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %kt = tosa.transpose %k {perms = array<i32: 0, 2, 1>} : (tensor<?x6x8xf32>) -> tensor<?x8x6xf32>
  // expected-remark @below {{not raised to mha.attention: the probabilities are not a softmax}}
  %s = tosa.matmul %q, %kt, %zp, %zp : (tensor<?x4x8xf32>, tensor<?x8x6xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<?x4x6xf32>
  %x = tosa.mul %s, %c, %shift : (tensor<?x4x6xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<?x4x6xf32>
  %m = tosa.reduce_max %x {axis = 2 : i32} : (tensor<?x4x6xf32>) -> tensor<?x4x1xf32>
  %d = tosa.sub %x, %m : (tensor<?x4x6xf32>, tensor<?x4x1xf32>) -> tensor<?x4x6xf32>
  %e = tosa.exp %d : (tensor<?x4x6xf32>) -> tensor<?x4x6xf32>
  %sum = tosa.reduce_sum %e {axis = 2 : i32} : (tensor<?x4x6xf32>) -> tensor<?x4x1xf32>
  %r = tosa.reciprocal %sum : (tensor<?x4x1xf32>) -> tensor<?x4x1xf32>
  %p = tosa.mul %e, %r, %shift : (tensor<?x4x6xf32>, tensor<?x4x1xf32>, tensor<1xi8>) -> tensor<?x4x6xf32>
  // expected-remark @below {{not raised to mha.attention: the result has dynamic batch dims and no init to read them from}}
  %o = tosa.matmul %p, %v, %zp, %zp : (tensor<?x4x6xf32>, tensor<?x6x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<?x4x8xf32>
  return %o : tensor<?x4x8xf32>
}
