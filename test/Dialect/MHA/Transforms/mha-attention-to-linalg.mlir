// RUN: mha-opt %s --split-input-file --mha-attention-to-linalg | FileCheck %s

// GQA (8 query heads over 2 kv heads), a bool mask, causal with Sq != Sk.

// The reference lowering is the op's two decompositions without tiling: f32
// state fills, then one online-softmax update over all keys (scores
// materialized), then the normalization into init.

// Contractions over loops (b, h, i, r, c), r the reduction: lhs (b, h, i, r),
// rhs on the shared kv head (b, h floordiv 4, r, c), result (b, h, i, c).
// CHECK-DAG: #[[MAP_Q:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
// CHECK-DAG: #[[MAP_K:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1 floordiv 4, d3, d4)>
// CHECK-DAG: #[[MAP_S:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[MAP_M2:.+]] = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
// CHECK-DAG: #[[DIAG:.+]] = affine_map<()[s0, s1] -> (-s0 + s1)>

// CHECK-LABEL: func.func @gqa_causal_bool_mask
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<2x8x?x16xf32>, %[[K:[^:]+]]: tensor<2x2x?x16xf32>, %[[V:[^:]+]]: tensor<2x2x?x32xf32>, %[[M:[^:]+]]: tensor<?x?xi1>, %[[INIT:[^:]+]]: tensor<2x8x?x32xf32>)
// CHECK-DAG: %[[NEG_INF:.+]] = arith.constant 0xFF800000 : f32
// CHECK-DAG: %[[SCALE:.+]] = arith.constant 2.500000e-01 : f32
// CHECK-DAG: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[ACC0:.+]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.*}} : tensor<2x8x?x32xf32>)
// CHECK: %[[MAX0:.+]] = linalg.fill ins(%[[NEG_INF]] : f32) outs(%{{.*}} : tensor<2x8x?xf32>)
// CHECK: %[[SUM0:.+]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.*}} : tensor<2x8x?xf32>)
// kᵀ is materialized once, so that q·kᵀ has the loop structure of p·v (the
// reduction outside a contiguous innermost loop).
// CHECK: %[[KT:.+]] = linalg.transpose ins(%[[K]] : tensor<2x2x?x16xf32>) outs(%{{.*}} : tensor<2x2x16x?xf32>) permutation = [0, 1, 3, 2]
// The scale is applied to q (f32), once for all key blocks of a query tile.
// CHECK: %[[QS:.+]] = linalg.generic {{.*}} ins(%[[Q]] : tensor<2x8x?x16xf32>) outs(%{{.*}} : tensor<2x8x?x16xf32>)
// CHECK:   arith.mulf %{{.*}}, %[[SCALE]]
// CHECK: %[[S:.+]] = linalg.generic {indexing_maps = [#[[MAP_S]], #[[MAP_K]], #[[MAP_Q]]], iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]} ins(%[[QS]], %[[KT]] : {{.*}}) outs(%{{.*}} : tensor<2x8x?x?xf32>)
// CHECK: %[[OFFSET:.+]] = affine.apply #[[DIAG]]()
// CHECK: %[[STRADDLES:.+]] = arith.cmpi sgt, %{{.*}}, %[[OFFSET]]
// CHECK: %[[LOGITS:.+]] = scf.if %[[STRADDLES]]
// CHECK:   linalg.generic {indexing_maps = [#[[MAP_M2]], {{.*}}]{{.*}} ins(%[[M]] : tensor<?x?xi1>) outs(%[[S]] : tensor<2x8x?x?xf32>)
// CHECK:     %[[I:.+]] = linalg.index 2
// CHECK:     %[[J:.+]] = linalg.index 3
// CHECK:     %[[LAST:.+]] = arith.addi %[[I]], %[[OFFSET]]
// CHECK:     %[[VIS:.+]] = arith.cmpi sle, %[[J]], %[[LAST]]
// CHECK:     %[[XM:.+]] = arith.select %{{.*}}, %{{.*}}, %[[NEG_INF]]
// CHECK:     arith.select %[[VIS]], %[[XM]], %[[NEG_INF]]
// CHECK: } else {
// CHECK:   linalg.generic {{.*}} ins(%[[M]] : tensor<?x?xi1>) outs(%[[S]] : tensor<2x8x?x?xf32>)
// CHECK-NOT: linalg.index
// CHECK: }
// CHECK: %[[BLOCK_MAX:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[LOGITS]] : {{.*}})
// CHECK:   arith.maxnumf
// CHECK: %[[ALPHA:.+]] = linalg.generic {{.*}} ins(%[[MAX0]], %[[BLOCK_MAX]] : {{.*}})
// CHECK: %[[MAX:.+]] = linalg.generic {{.*}} ins(%[[BLOCK_MAX]] : {{.*}}) outs(%[[MAX0]] : {{.*}})
// CHECK: %[[P:.+]] = linalg.generic {{.*}} ins(%[[MAX]] : {{.*}}) outs(%[[LOGITS]] : {{.*}})
// A row that has seen no key yet (max -inf) subtracts 0: exp(-inf) = 0,
// where exp(-inf - -inf) would be NaN.
// CHECK:   %[[EMPTY_ROW:.+]] = arith.cmpf oeq, %[[M:.+]], %[[NEG_INF]]
// CHECK:   %[[SAFE_MAX:.+]] = arith.select %[[EMPTY_ROW]], %[[ZERO]], %[[M]]
// CHECK:   %[[X:.+]] = arith.subf %{{.*}}, %[[SAFE_MAX]]
// CHECK:   math.exp %[[X]]
// CHECK: %[[SUM_SCALED:.+]] = linalg.generic {{.*}} ins(%[[ALPHA]] : {{.*}}) outs(%[[SUM0]] : {{.*}})
// CHECK: %[[L:.+]] = linalg.generic {{.*}} ins(%[[P]] : {{.*}}) outs(%[[SUM_SCALED]] : {{.*}})
// CHECK:   arith.addf
// CHECK: %[[ACC_SCALED:.+]] = linalg.generic {{.*}} ins(%[[ALPHA]] : {{.*}}) outs(%[[ACC0]] : {{.*}})
// CHECK: %[[ACC:.+]] = linalg.generic {indexing_maps = [#[[MAP_S]], #[[MAP_K]], #[[MAP_Q]]], iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]} ins(%[[P]], %[[V]] : {{.*}}) outs(%[[ACC_SCALED]] : {{.*}})
// CHECK: %[[OUT:.+]] = linalg.generic {{.*}} ins(%[[ACC]], %[[L]] : {{.*}}) outs(%[[INIT]] : tensor<2x8x?x32xf32>)
// CHECK:   %[[NO_KEY:.+]] = arith.cmpf oeq
// CHECK:   %[[DIV:.+]] = arith.divf
// CHECK:   arith.select %[[NO_KEY]], %{{.*}}, %[[DIV]]
// CHECK-NOT: mha.
// CHECK: return %[[OUT]]
func.func @gqa_causal_bool_mask(%q: tensor<2x8x?x16xf32>, %k: tensor<2x2x?x16xf32>, %v: tensor<2x2x?x32xf32>,
                                %m: tensor<?x?xi1>, %init: tensor<2x8x?x32xf32>) -> tensor<2x8x?x32xf32> {
  %o = mha.attention ins(%q, %k, %v : tensor<2x8x?x16xf32>, tensor<2x2x?x16xf32>, tensor<2x2x?x32xf32>)
         mask(%m : tensor<?x?xi1>) outs(%init : tensor<2x8x?x32xf32>) {causal} -> tensor<2x8x?x32xf32>
  return %o : tensor<2x8x?x32xf32>
}

// -----

// f16 with a float rank-4 mask broadcast along B and Sq: scores in f32, the
// mask extended and added after the scale, the result truncated once.

// CHECK-DAG: #[[MAP_M4:.+]] = affine_map<(d0, d1, d2, d3) -> (0, d1, 0, d3)>
// CHECK-LABEL: func.func @f16_float_mask
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<1x4x8x16xf16>) outs(%{{.*}} : tensor<1x4x8x16xf32>)
// CHECK:   arith.extf %{{.*}} : f16 to f32
// CHECK:   arith.mulf
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x4x8x16xf32>, tensor<1x4x16x6xf16>) outs(%{{.*}} : tensor<1x4x8x6xf32>)
// CHECK:   arith.extf %{{.*}} : f16 to f32
// CHECK: linalg.generic {indexing_maps = [#[[MAP_M4]], {{.*}}]{{.*}} ins(%{{.*}} : tensor<1x4x1x6xf16>)
// CHECK:   %[[MF:.+]] = arith.extf %{{.*}} : f16 to f32
// CHECK:   arith.addf %{{.*}}, %[[MF]] : f32
// CHECK-NOT: linalg.index
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x4x8x16xf16>)
// CHECK:   arith.truncf %{{.*}} : f32 to f16
func.func @f16_float_mask(%q: tensor<1x4x8x16xf16>, %k: tensor<1x4x6x16xf16>, %m: tensor<1x4x1x6xf16>,
                          %init: tensor<1x4x8x16xf16>) -> tensor<1x4x8x16xf16> {
  %o = mha.attention ins(%q, %k, %k : tensor<1x4x8x16xf16>, tensor<1x4x6x16xf16>, tensor<1x4x6x16xf16>)
         mask(%m : tensor<1x4x1x6xf16>) outs(%init : tensor<1x4x8x16xf16>) -> tensor<1x4x8x16xf16>
  return %o : tensor<1x4x8x16xf16>
}

// -----

// On mha.attention a dynamic rank-4 mask dim matches the scores (only the
// layer op broadcasts a dim that is 1 at run time): the mask is read through
// its indexing map, 0 along its static size-1 dim, never with tensor.extract.

// CHECK-DAG: #[[MAP_M4D:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, 0, d2, d3)>
// CHECK-LABEL: func.func @dynamic_rank4_mask
// CHECK-SAME: %[[M:[^:]+]]: tensor<?x1x?x?xi1>
// CHECK-NOT: tensor.extract
// CHECK: linalg.generic {indexing_maps = [#[[MAP_M4D]], {{.*}}]{{.*}} ins(%[[M]] : tensor<?x1x?x?xi1>) outs(%{{.*}} : tensor<2x4x?x?xf32>)
// CHECK-NOT: tensor.extract
// CHECK: return
func.func @dynamic_rank4_mask(%q: tensor<2x4x?x8xf32>, %k: tensor<2x4x?x8xf32>, %m: tensor<?x1x?x?xi1>,
                              %init: tensor<2x4x?x8xf32>) -> tensor<2x4x?x8xf32> {
  %o = mha.attention ins(%q, %k, %k : tensor<2x4x?x8xf32>, tensor<2x4x?x8xf32>, tensor<2x4x?x8xf32>)
         mask(%m : tensor<?x1x?x?xi1>) outs(%init : tensor<2x4x?x8xf32>) -> tensor<2x4x?x8xf32>
  return %o : tensor<2x4x?x8xf32>
}

// -----

// An explicit causal diagonal replaces Sk - Sq.
// CHECK-LABEL: func.func @explicit_causal_offset
// CHECK-SAME: %[[OFF:[^:]+]]: index
// CHECK-NOT: affine.apply
// CHECK:   %[[I:.+]] = linalg.index 2
// CHECK:   %[[J:.+]] = linalg.index 3
// CHECK:   %[[LAST:.+]] = arith.addi %[[I]], %[[OFF]]
// CHECK:   arith.cmpi sle, %[[J]], %[[LAST]]
func.func @explicit_causal_offset(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x16x8xf32>, %off: index,
                                  %init: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %o = mha.attention ins(%q, %k, %k : tensor<1x2x4x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>)
         causal_offset(%off) outs(%init : tensor<1x2x4x8xf32>) {causal} -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// A key block in online form (what the tiling stage leaves) decomposes in
// place: the state it was given is rescaled and updated, nothing is
// normalized.
// CHECK-LABEL: func.func @online_block
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<1x1x16x8xf32>, %[[K:[^:]+]]: tensor<1x1x?x8xf32>, %[[ACC:[^:]+]]: tensor<1x1x16x8xf32>, %[[MAX:[^:]+]]: tensor<1x1x16xf32>, %[[SUM:[^:]+]]: tensor<1x1x16xf32>)
// CHECK: %[[KT:.+]] = linalg.transpose ins(%[[K]] : tensor<1x1x?x8xf32>)
// CHECK: %[[QS:.+]] = linalg.generic {{.*}} ins(%[[Q]] : tensor<1x1x16x8xf32>)
// CHECK: %[[S:.+]] = linalg.generic {{.*}} ins(%[[QS]], %[[KT]] : {{.*}})
// CHECK: %[[NEW_MAX:.+]] = linalg.generic {{.*}} outs(%[[MAX]] : tensor<1x1x16xf32>)
// CHECK: %[[SCALED_SUM:.+]] = linalg.generic {{.*}} outs(%[[SUM]] : tensor<1x1x16xf32>)
// CHECK: %[[NEW_SUM:.+]] = linalg.generic {{.*}} outs(%[[SCALED_SUM]] : tensor<1x1x16xf32>)
// CHECK: %[[SCALED_ACC:.+]] = linalg.generic {{.*}} outs(%[[ACC]] : tensor<1x1x16x8xf32>)
// CHECK: %[[NEW_ACC:.+]] = linalg.generic {{.*}} ins(%{{.*}}, %[[K]] : {{.*}}) outs(%[[SCALED_ACC]] : tensor<1x1x16x8xf32>)
// CHECK-NOT: arith.divf
// CHECK: return %[[NEW_ACC]], %[[NEW_MAX]], %[[NEW_SUM]]
func.func @online_block(%q: tensor<1x1x16x8xf32>, %k: tensor<1x1x?x8xf32>, %acc: tensor<1x1x16x8xf32>,
                        %max: tensor<1x1x16xf32>, %sum: tensor<1x1x16xf32>)
    -> (tensor<1x1x16x8xf32>, tensor<1x1x16xf32>, tensor<1x1x16xf32>) {
  %r:3 = mha.online_attention ins(%q, %k, %k : tensor<1x1x16x8xf32>, tensor<1x1x?x8xf32>, tensor<1x1x?x8xf32>)
           outs(%acc, %max, %sum : tensor<1x1x16x8xf32>, tensor<1x1x16xf32>, tensor<1x1x16xf32>)
           -> tensor<1x1x16x8xf32>, tensor<1x1x16xf32>, tensor<1x1x16xf32>
  return %r#0, %r#1, %r#2 : tensor<1x1x16x8xf32>, tensor<1x1x16xf32>, tensor<1x1x16xf32>
}

// -----

// key_transposed: kᵀ [B, Hkv, dk, Sk] is the scores' right operand as it
// is, no transposed copy; the causal diagonal uses Sk from its last dim.
// CHECK-LABEL: func.func @key_transposed
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<1x4x?x16xf32>, %[[KT:[^:]+]]: tensor<1x2x16x?xf32>
// CHECK-NOT: linalg.transpose
// CHECK: %[[SK:.+]] = tensor.dim %[[KT]], %c3
// CHECK-NOT: linalg.transpose
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[KT]] : tensor<1x4x?x16xf32>, tensor<1x2x16x?xf32>) outs(%{{.*}} : tensor<1x4x?x?xf32>)
// CHECK-NOT: linalg.transpose
// CHECK: return
func.func @key_transposed(%q: tensor<1x4x?x16xf32>, %kt: tensor<1x2x16x?xf32>, %v: tensor<1x2x?x8xf32>, %init: tensor<1x4x?x8xf32>) -> tensor<1x4x?x8xf32> {
  %o = mha.attention ins(%q, %kt, %v : tensor<1x4x?x16xf32>, tensor<1x2x16x?xf32>, tensor<1x2x?x8xf32>)
         outs(%init : tensor<1x4x?x8xf32>) {causal, key_transposed} -> tensor<1x4x?x8xf32>
  return %o : tensor<1x4x?x8xf32>
}

// -----

// Softcap, per-batch key lengths and a window: the scores are capped
// (c · tanh(s / c)) before the mask, and a key is visible iff it is below its
// batch's length (read through a map over the batch loop) and inside the
// window around the diagonal, here length[b] - Sq. With several batches
// the predicate is evaluated everywhere (no per-block test).
// CHECK-DAG: #[[BATCH:.+]] = affine_map<(d0, d1, d2, d3) -> (d0)>
// CHECK-LABEL: func.func @key_features
// CHECK-SAME: %[[LEN:[^:]+]]: tensor<2xi64>
// CHECK-NOT: scf.if
// CHECK: linalg.generic {indexing_maps = [#[[BATCH]], #{{.+}}], {{.*}}} ins(%[[LEN]] : tensor<2xi64>)
// CHECK:   %[[L:.+]] = arith.index_cast %{{.+}} : i64 to index
// CHECK:   %[[I:.+]] = linalg.index 2
// CHECK:   %[[J:.+]] = linalg.index 3
// CHECK:   arith.cmpi slt, %[[J]], %[[L]]
// CHECK:   arith.cmpi sle
// CHECK:   arith.cmpi sge
// CHECK:   math.tanh
// CHECK:   arith.select
func.func @key_features(%q: tensor<2x2x4x8xf32>, %k: tensor<2x2x6x8xf32>, %len: tensor<2xi64>, %init: tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32> {
  %o = mha.attention ins(%q, %k, %k : tensor<2x2x4x8xf32>, tensor<2x2x6x8xf32>, tensor<2x2x6x8xf32>)
         key_lengths(%len : tensor<2xi64>) outs(%init : tensor<2x2x4x8xf32>)
         {softcap = 30.0 : f32, window_left = 1 : i64, window_right = 2 : i64} -> tensor<2x2x4x8xf32>
  return %o : tensor<2x2x4x8xf32>
}

// -----

// A key block of a one-batch tile with key lengths: where it reaches past
// the length (key_offset + Sk > len), the P·V contraction takes the values
// of the keys past it as 0 (a select in its body: their probability is 0,
// but a static cache's rows past its length may hold NaN); elsewhere the
// plain contraction. Both accumulate into the same tensor.

// The two query heads share the one key/value head: the keys and values
// are read without that dim (maps (b, j, c), not (b, h floordiv 2, j, c),
// which would be no projected permutation).
// CHECK-LABEL: func.func @online_lengths
// CHECK-SAME: %[[VIN:[^:]+]]: tensor<1x1x16x8xf32>, %[[LEN:[^:]+]]: tensor<1xi32>, %[[OFF:[^:]+]]: index
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1], [2], [3]] : tensor<1x1x8x16xf32> into tensor<1x8x16xf32>
// CHECK: %[[V:.+]] = tensor.collapse_shape %[[VIN]] {{\[\[}}0, 1], [2], [3]] : tensor<1x1x16x8xf32> into tensor<1x16x8xf32>
// CHECK: %[[END:.+]] = arith.addi %[[OFF]], %c16{{.*}} : index
// CHECK: %[[PAST:.+]] = arith.cmpi sgt, %[[END]], %{{.*}} : index
// CHECK: %[[ACC:.+]] = scf.if %{{.*}} -> (tensor<1x2x4x8xf32>) {
// CHECK:   %[[W:.+]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]{{.*}} ins(%{{.*}}, %[[V]], %[[LEN]] : {{.*}}) outs(%[[INIT:[^ ]+]] : tensor<1x2x4x8xf32>)
// CHECK:     %[[J:.+]] = linalg.index 3 : index
// CHECK:     %[[JO:.+]] = arith.addi %[[J]], %[[OFF]] : index
// CHECK:     %[[WITHIN:.+]] = arith.cmpi slt, %[[JO]], %{{.*}} : index
// CHECK:     %[[VAL:.+]] = arith.select %[[WITHIN]], %{{.*}}, %{{.*}} : f32
// CHECK:     arith.mulf %{{.*}}, %[[VAL]] : f32
// CHECK:   scf.yield %[[W]]
// CHECK: } else {
// CHECK:   %[[P:.+]] = linalg.generic {{.*}} outs(%[[INIT]] : tensor<1x2x4x8xf32>)
// CHECK-NOT: arith.select
// CHECK:   scf.yield %[[P]]
// CHECK: return %[[ACC]]
func.func @online_lengths(%q: tensor<1x2x4x8xf32>, %k: tensor<1x1x16x8xf32>, %v: tensor<1x1x16x8xf32>,
                          %len: tensor<1xi32>, %off: index, %acc: tensor<1x2x4x8xf32>,
                          %max: tensor<1x2x4xf32>, %sum: tensor<1x2x4xf32>)
    -> (tensor<1x2x4x8xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>) {
  %r:3 = mha.online_attention ins(%q, %k, %v : tensor<1x2x4x8xf32>, tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>)
           key_lengths(%len : tensor<1xi32>) key_offset(%off)
           outs(%acc, %max, %sum : tensor<1x2x4x8xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>)
           -> tensor<1x2x4x8xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>
  return %r#0, %r#1, %r#2 : tensor<1x2x4x8xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>
}
