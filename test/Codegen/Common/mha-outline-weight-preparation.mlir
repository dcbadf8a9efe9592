// RUN: mha-opt %s --split-input-file --verify-diagnostics \
// RUN:   --mha-outline-weight-preparation | FileCheck %s

// What the weights alone give (a packed copy of %w, the bias scaled) moves
// to @f_prepare; @f_prepared takes it, read-only, before the other
// arguments; @f calls the two. A weight the rest uses as it is (%b2) comes
// back as a copy; a reshape of a weight (%w2) stays with the rest, which
// takes the weight itself. Constants are cloned where they are used.

// CHECK-LABEL: func.func @f(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<4x8xf32>, %[[W:[a-z0-9]+]]: tensor<16x8xf32>, %[[B:[a-z0-9]+]]: tensor<16xf32>, %[[B2:[a-z0-9]+]]: tensor<16xf32>, %[[W2:[a-z0-9]+]]: tensor<128xf32>)
// CHECK-NOT: mha.weight
// CHECK-NEXT: %[[P:.+]]:4 = call @f_prepare(%[[W]], %[[B]], %[[B2]], %[[W2]])
// CHECK-NEXT: %[[R:.+]]:2 = call @f_prepared(%[[P]]#0, %[[P]]#1, %[[P]]#2, %[[P]]#3, %[[X]])
// CHECK-NEXT: return %[[R]]#0, %[[R]]#1

// CHECK-LABEL: func.func @f_prepare(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<16x8xf32>, %[[B:[a-z0-9]+]]: tensor<16xf32>, %[[B2:[a-z0-9]+]]: tensor<16xf32>, %[[W2:[a-z0-9]+]]: tensor<128xf32>)
// CHECK-SAME: -> (tensor<16xf32>, tensor<128xf32>, tensor<8x16xf32>, tensor<16xf32>)
// CHECK-NOT: mha.weight
// CHECK-DAG: %[[T:.+]] = linalg.transpose ins(%[[W]]
// CHECK-DAG: %[[S:.+]] = linalg.generic {{.*}} ins(%[[B]]
// CHECK-DAG: %[[C2:.+]] = linalg.copy ins(%[[B2]]
// CHECK-DAG: %[[CW2:.+]] = linalg.copy ins(%[[W2]]
// CHECK: return %[[C2]], %[[CW2]], %[[T]], %[[S]]

// CHECK-LABEL: func.func @f_prepared(
// CHECK-SAME: %[[B2:[a-z0-9]+]]: tensor<16xf32> {bufferization.writable = false}, %[[W2:[a-z0-9]+]]: tensor<128xf32> {bufferization.writable = false}, %[[T:[a-z0-9]+]]: tensor<8x16xf32> {bufferization.writable = false}, %[[S:[a-z0-9]+]]: tensor<16xf32> {bufferization.writable = false}, %[[X:[a-z0-9]+]]: tensor<4x8xf32>)
// CHECK-NOT: linalg.transpose
// CHECK: linalg.matmul ins(%[[X]], %[[T]]
// CHECK: linalg.generic {{.*}} ins(%[[S]], %[[B2]]
// CHECK-NOT: linalg.transpose
// CHECK: %[[V:.+]] = tensor.expand_shape %[[W2]]
// CHECK: return %{{.+}}, %[[V]]
func.func @f(%x: tensor<4x8xf32>, %w: tensor<16x8xf32> {mha.weight},
             %b: tensor<16xf32> {mha.weight}, %b2: tensor<16xf32> {mha.weight},
             %w2: tensor<128xf32> {mha.weight})
    -> (tensor<4x16xf32>, tensor<8x16xf32>) {
  %two = arith.constant 2.0 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  %t = linalg.transpose ins(%w : tensor<16x8xf32>) outs(%e : tensor<8x16xf32>) permutation = [1, 0]
  %eb = tensor.empty() : tensor<16xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                       iterator_types = ["parallel"]}
      ins(%b : tensor<16xf32>) outs(%eb : tensor<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %two : f32
    linalg.yield %m : f32
  } -> tensor<16xf32>
  %zero = arith.constant 0.0 : f32
  %e2 = tensor.empty() : tensor<4x16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e2 : tensor<4x16xf32>) -> tensor<4x16xf32>
  %y = linalg.matmul ins(%x, %t : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  %yb = linalg.generic {indexing_maps = [affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
                        iterator_types = ["parallel", "parallel"]}
      ins(%s, %b2 : tensor<16xf32>, tensor<16xf32>) outs(%y : tensor<4x16xf32>) {
  ^bb0(%in: f32, %in2: f32, %out: f32):
    %a = arith.addf %in, %in2 : f32
    %r = arith.addf %out, %a : f32
    linalg.yield %r : f32
  } -> tensor<4x16xf32>
  %w2r = tensor.expand_shape %w2 [[0, 1]] output_shape [8, 16] : tensor<128xf32> into tensor<8x16xf32>
  return %yb, %w2r : tensor<4x16xf32>, tensor<8x16xf32>
}

// -----

// A function that updates an argument in place (a KV cache) keeps its body:
// a call of @g_prepared would return a copy of the cache.

// CHECK-LABEL: func.func @g(
// CHECK-NOT: call
// CHECK: linalg.transpose
// CHECK: tensor.insert_slice
// CHECK-LABEL: func.func @g_prepare(
// CHECK-LABEL: func.func @g_prepared(
// CHECK-SAME: %{{.+}}: tensor<4x4xf32> {bufferization.writable = false}, %{{.+}}: tensor<8x4xf32>, %{{.+}}: tensor<4xf32>)
func.func @g(%cache: tensor<8x4xf32>, %w: tensor<4x4xf32> {mha.weight},
             %x: tensor<4xf32>) -> (tensor<8x4xf32>, tensor<4x4xf32>) {
  %e = tensor.empty() : tensor<4x4xf32>
  %t = linalg.transpose ins(%w : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) permutation = [1, 0]
  %r = tensor.insert_slice %x into %cache[0, 0] [1, 4] [1, 1] : tensor<4xf32> into tensor<8x4xf32>
  return %r, %t : tensor<8x4xf32>, tensor<4x4xf32>
}

// -----

// A view of a weight used by both sides (the packing copies read the
// weights through reshapes the attention reads too) is made by each from
// what it views: the weight, copied.

// CHECK-LABEL: func.func @shared_view_prepare(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<128xf32>) -> (tensor<128xf32>, tensor<16x8xf32>)
// CHECK-DAG: %[[V:.+]] = tensor.expand_shape %[[W]]
// CHECK-DAG: %[[T:.+]] = linalg.transpose ins(%[[V]]
// CHECK-DAG: %[[C:.+]] = linalg.copy ins(%[[W]]
// CHECK: return %[[C]], %[[T]]
// CHECK-LABEL: func.func @shared_view_prepared(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<128xf32> {bufferization.writable = false}, %[[T:[a-z0-9]+]]: tensor<16x8xf32> {bufferization.writable = false}, %[[X:[a-z0-9]+]]: tensor<8x16xf32>)
// CHECK-NEXT: %[[V:.+]] = tensor.expand_shape %[[W]]
// CHECK-NEXT: %[[S:.+]] = arith.addf %[[X]], %[[V]]
// CHECK-NEXT: return %[[S]], %[[T]]
func.func @shared_view(%x: tensor<8x16xf32>, %w: tensor<128xf32> {mha.weight}) -> (tensor<8x16xf32>, tensor<16x8xf32>) {
  %v = tensor.expand_shape %w [[0, 1]] output_shape [8, 16] : tensor<128xf32> into tensor<8x16xf32>
  %e = tensor.empty() : tensor<16x8xf32>
  %t = linalg.transpose ins(%v : tensor<8x16xf32>) outs(%e : tensor<16x8xf32>) permutation = [1, 0]
  %s = arith.addf %x, %v : tensor<8x16xf32>
  return %s, %t : tensor<8x16xf32>, tensor<16x8xf32>
}

// -----

// Weights taken as they are (nothing packed from them: a decoding step's
// projections of one row): NAME_prepare copies them for the handle it
// returns, but NAME passes its own weights to NAME_prepared rather than
// copying them on every call.

// CHECK-LABEL: func.func @as_is(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<4xf32>, %[[W:[a-z0-9]+]]: tensor<4xf32>)
// CHECK-NOT: call @as_is_prepare(
// CHECK: %[[R:.+]] = call @as_is_prepared(%[[W]], %[[X]])
// CHECK: return %[[R]]
// CHECK-LABEL: func.func @as_is_prepare(
// CHECK: linalg.copy
func.func @as_is(%x: tensor<4xf32>, %w: tensor<4xf32> {mha.weight}) -> tensor<4xf32> {
  %s = arith.addf %x, %w : tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

// Functions without weights are left alone.

// CHECK-LABEL: func.func @h(
// CHECK-NOT: func.func @h_prepare
func.func @h(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// expected-error @below {{updates its argument #0 in place (result #0), which is marked 'mha.weight': a weight must be the same on every call}}
func.func @weight_updated(%cache: tensor<8x4xf32> {mha.weight}, %x: tensor<4xf32>) -> tensor<8x4xf32> {
  %r = tensor.insert_slice %x into %cache[0, 0] [1, 4] [1, 1] : tensor<4xf32> into tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

// -----

func.func private @taken_prepare()

// expected-error @below {{cannot be split into its weights' preparation: the symbol '@taken_prepare' exists}}
func.func @taken(%w: tensor<4xf32> {mha.weight}) -> tensor<4xf32> {
  return %w : tensor<4xf32>
}

// -----

// expected-error @below {{has 'mha.weight' arguments but several blocks: only a function of one block can be split into its weights' preparation and the rest}}
func.func @blocks(%w: tensor<4xf32> {mha.weight}, %c: i1) -> tensor<4xf32> {
  cf.cond_br %c, ^a, ^b
^a:
  return %w : tensor<4xf32>
^b:
  return %w : tensor<4xf32>
}

// -----

// expected-error @below {{marks its argument #0 of type 'memref<4xf32>' 'mha.weight': only ranked tensors are prepared (run this before bufferization)}}
func.func @memref_weight(%w: memref<4xf32> {mha.weight}) {
  return
}
