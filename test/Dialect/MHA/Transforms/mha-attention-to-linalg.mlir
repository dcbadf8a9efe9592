// RUN: mha-opt %s --split-input-file --mha-attention-to-linalg | FileCheck %s

// GQA (8 query heads over 2 kv heads), a bool mask, causal with Sq != Sk.

// CHECK-DAG: #[[MAP_Q:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
// CHECK-DAG: #[[MAP_K:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1 floordiv 4, d3, d4)>
// CHECK-DAG: #[[MAP_S:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[MAP_M2:.+]] = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
// CHECK-DAG: #[[MAP_V:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1 floordiv 4, d4, d3)>

// CHECK-LABEL: func.func @gqa_causal_bool_mask
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<2x8x?x16xf32>, %[[K:[^:]+]]: tensor<2x2x?x16xf32>, %[[V:[^:]+]]: tensor<2x2x?x32xf32>, %[[M:[^:]+]]: tensor<?x?xi1>, %[[INIT:[^:]+]]: tensor<2x8x?x32xf32>)
// CHECK-DAG: %[[NEG_INF:.+]] = arith.constant 0xFF800000 : f32
// CHECK-DAG: %[[SCALE:.+]] = arith.constant 2.500000e-01 : f32
// CHECK-DAG: %[[SQ:.+]] = tensor.dim %[[Q]], %c2
// CHECK-DAG: %[[SK:.+]] = tensor.dim %[[K]], %c2
// CHECK: %[[S:.+]] = linalg.generic {indexing_maps = [#[[MAP_Q]], #[[MAP_K]], #[[MAP_S]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%[[Q]], %[[K]] : {{.*}}) outs(%{{.*}} : tensor<2x8x?x?xf32>)
// CHECK: %[[OFFSET:.+]] = arith.subi %[[SK]], %[[SQ]] : index
// CHECK: %[[LOGITS:.+]] = linalg.generic {indexing_maps = [#[[MAP_M2]], {{.*}}]{{.*}} ins(%[[M]] : tensor<?x?xi1>) outs(%[[S]] : tensor<2x8x?x?xf32>)
// CHECK:   %[[I:.+]] = linalg.index 2
// CHECK:   %[[J:.+]] = linalg.index 3
// CHECK:   %[[LAST:.+]] = arith.addi %[[I]], %[[OFFSET]]
// CHECK:   %[[VIS:.+]] = arith.cmpi sle, %[[J]], %[[LAST]]
// CHECK:   %[[X:.+]] = arith.mulf %{{.*}}, %[[SCALE]]
// CHECK:   %[[XM:.+]] = arith.select %{{.*}}, %[[X]], %[[NEG_INF]]
// CHECK:   arith.select %[[VIS]], %[[XM]], %[[NEG_INF]]
// CHECK: %[[MAX:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[LOGITS]] : {{.*}})
// CHECK:   arith.maximumf
// CHECK: %[[P:.+]] = linalg.generic {{.*}} ins(%[[MAX]] : {{.*}}) outs(%[[LOGITS]] : {{.*}})
// CHECK:   %[[EMPTY_ROW:.+]] = arith.cmpf oeq, %{{.*}}, %[[NEG_INF]]
// CHECK:   %[[E:.+]] = math.exp
// CHECK:   arith.select %[[EMPTY_ROW]], %{{.*}}, %[[E]]
// CHECK: %[[L:.+]] = linalg.generic {{.*}} ins(%[[P]] : {{.*}})
// CHECK:   arith.addf
// CHECK: %[[ACC:.+]] = linalg.generic {indexing_maps = [#[[MAP_Q]], #[[MAP_V]], #[[MAP_S]]], {{.*}} ins(%[[P]], %[[V]] : {{.*}})
// CHECK: %[[OUT:.+]] = linalg.generic {{.*}} ins(%[[ACC]], %[[L]] : {{.*}}) outs(%[[INIT]] : tensor<2x8x?x32xf32>)
// CHECK:   %[[NO_KEY:.+]] = arith.cmpf oeq
// CHECK:   %[[DIV:.+]] = arith.divf
// CHECK:   arith.select %[[NO_KEY]], %{{.*}}, %[[DIV]]
// CHECK-NOT: mha.attention
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
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x4x8x16xf16>, tensor<1x4x6x16xf16>) outs(%{{.*}} : tensor<1x4x8x6xf32>)
// CHECK:   arith.extf %{{.*}} : f16 to f32
// CHECK: linalg.generic {indexing_maps = [#[[MAP_M4]], {{.*}}]{{.*}} ins(%{{.*}} : tensor<1x4x1x6xf16>)
// CHECK:   %[[X:.+]] = arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK:   %[[MF:.+]] = arith.extf %{{.*}} : f16 to f32
// CHECK:   arith.addf %[[X]], %[[MF]] : f32
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

// A rank-4 mask with dynamic dims may broadcast at run time: it is read with
// tensor.extract, at index 0 along the dims whose size is 1.

// CHECK-LABEL: func.func @dynamic_rank4_mask
// CHECK-SAME: %[[M:[^:]+]]: tensor<?x1x?x?xi1>
// CHECK-DAG: %[[C0:.+]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.+]] = arith.constant 1 : index
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<2x4x?x?xf32>)
// CHECK:   %[[I0:.+]] = linalg.index 0
// CHECK:   %[[MB:.+]] = tensor.dim %[[M]], %[[C0]]
// CHECK:   %[[B1:.+]] = arith.cmpi eq, %[[MB]], %[[C1]]
// CHECK:   %[[J0:.+]] = arith.select %[[B1]], %[[C0]], %[[I0]]
// CHECK:   %[[V:.+]] = tensor.extract %[[M]][%[[J0]], %[[C0]], %{{.*}}, %{{.*}}]
// CHECK:   arith.select %[[V]]
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
// CHECK-NOT: arith.subi
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
