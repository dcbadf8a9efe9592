// RUN: mha-opt %s --split-input-file --mha-decompose | FileCheck %s

// Grouped-query layer with biases, a mask, causal and a custom scale: three
// input projections that write [B, heads, S, d], reading the weight split
// into heads ([E, heads, d], a tensor.expand_shape) at (e, h, i), one mha.attention reading the 2 shared kv heads
// (never 8 copies), and the output projection reducing over (h, i). The loops
// are ordered so that the innermost one is parallel and walks rows of the
// weight and the result: (b, h, s, e, i) for the input projections,
// (b, s, h, i, o) for the output projection.

// CHECK-DAG: #[[MAP_IN:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d3)>
// CHECK-DAG: #[[MAP_W:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d3, d1, d4)>
// CHECK-DAG: #[[MAP_HEADS:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
// CHECK-DAG: #[[MAP_B:.+]] = affine_map<(d0, d1, d2, d3) -> (d1, d3)>
// CHECK-DAG: #[[MAP_ATT:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d1, d3)>
// CHECK-DAG: #[[MAP_WO:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d2, d3, d4)>
// CHECK-DAG: #[[MAP_OUT:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4)>
// CHECK-DAG: #[[MAP_BO:.+]] = affine_map<(d0, d1, d2) -> (d2)>

// CHECK-LABEL: func.func @gqa_layer
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x10x64xf32>, %[[KV:[^:]+]]: tensor<2x12x48xf32>, %[[WQ:[^:]+]]: tensor<64x128xf32>, %[[WK:[^:]+]]: tensor<48x32xf32>, %[[WV:[^:]+]]: tensor<48x16xf32>, %[[WO:[^:]+]]: tensor<64x40xf32>, %[[BQ:[^:]+]]: tensor<128xf32>, %[[BK:[^:]+]]: tensor<32xf32>, %[[BV:[^:]+]]: tensor<16xf32>, %[[BO:[^:]+]]: tensor<40xf32>, %[[M:[^:]+]]: tensor<2x1x10x12xi1>)
// CHECK-NOT: mha.multi_head_attention
// CHECK: %[[BQH:.+]] = tensor.expand_shape %[[BQ]] {{\[}}[0, 1]] output_shape [8, 16] : tensor<128xf32> into tensor<8x16xf32>
// CHECK: %[[QACC:.+]] = linalg.generic {indexing_maps = [#[[MAP_B]], {{.*}} ins(%[[BQH]] : tensor<8x16xf32>) outs(%{{.*}} : tensor<2x8x10x16xf32>)
// CHECK: %[[WQH:.+]] = tensor.expand_shape %[[WQ]] {{\[}}[0], [1, 2]] output_shape [64, 8, 16] : tensor<64x128xf32> into tensor<64x8x16xf32>
// CHECK: %[[Q:.+]] = linalg.generic {indexing_maps = [#[[MAP_IN]], #[[MAP_W]], #[[MAP_HEADS]]], iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]} ins(%[[X]], %[[WQH]] : {{.*}}) outs(%[[QACC]] : tensor<2x8x10x16xf32>)
// CHECK: %[[WKH:.+]] = tensor.expand_shape %[[WK]] {{.*}} into tensor<48x2x16xf32>
// CHECK: %[[K:.+]] = linalg.generic {indexing_maps = [#[[MAP_IN]], #[[MAP_W]], #[[MAP_HEADS]]], {{.*}} ins(%[[KV]], %[[WKH]] : {{.*}}) outs(%{{.*}} : tensor<2x2x12x16xf32>)
// CHECK: %[[WVH:.+]] = tensor.expand_shape %[[WV]] {{.*}} into tensor<48x2x8xf32>
// CHECK: %[[V:.+]] = linalg.generic {indexing_maps = [#[[MAP_IN]], #[[MAP_W]], #[[MAP_HEADS]]], {{.*}} ins(%[[KV]], %[[WVH]] : {{.*}}) outs(%{{.*}} : tensor<2x2x12x8xf32>)
// CHECK: %[[INIT:.+]] = tensor.empty() : tensor<2x8x10x8xf32>
// CHECK: %[[A:.+]] = mha.attention ins(%[[Q]], %[[K]], %[[V]] : tensor<2x8x10x16xf32>, tensor<2x2x12x16xf32>, tensor<2x2x12x8xf32>) mask(%[[M]] : tensor<2x1x10x12xi1>) outs(%[[INIT]] : tensor<2x8x10x8xf32>) {causal, scale = 5.000000e-01 : f32}
// CHECK: %[[OACC:.+]] = linalg.generic {indexing_maps = [#[[MAP_BO]], {{.*}}]{{.*}} ins(%[[BO]] : tensor<40xf32>)
// CHECK: %[[WOH:.+]] = tensor.expand_shape %[[WO]] {{\[}}[0, 1], [2]] output_shape [8, 8, 40] : tensor<64x40xf32> into tensor<8x8x40xf32>
// CHECK: %[[Y:.+]] = linalg.generic {indexing_maps = [#[[MAP_ATT]], #[[MAP_WO]], #[[MAP_OUT]]], iterator_types = ["parallel", "parallel", "reduction", "reduction", "parallel"]} ins(%[[A]], %[[WOH]] : {{.*}}) outs(%[[OACC]] : tensor<2x10x40xf32>)
// CHECK: return %[[Y]]
func.func @gqa_layer(%x: tensor<2x10x64xf32>, %kv: tensor<2x12x48xf32>, %wq: tensor<64x128xf32>,
                     %wk: tensor<48x32xf32>, %wv: tensor<48x16xf32>, %wo: tensor<64x40xf32>,
                     %bq: tensor<128xf32>, %bk: tensor<32xf32>, %bv: tensor<16xf32>, %bo: tensor<40xf32>,
                     %m: tensor<2x1x10x12xi1>) -> tensor<2x10x40xf32> {
  %y = mha.multi_head_attention %x, %kv, %kv, %wq, %wk, %wv, %wo bias(%bq, %bk, %bv, %bo) mask(%m)
       {num_heads = 8 : i64, num_kv_heads = 2 : i64, scale = 0.5 : f32, causal}
       : (tensor<2x10x64xf32>, tensor<2x12x48xf32>, tensor<2x12x48xf32>, tensor<64x128xf32>,
          tensor<48x32xf32>, tensor<48x16xf32>, tensor<64x40xf32>, tensor<128xf32>,
          tensor<32xf32>, tensor<16xf32>, tensor<40xf32>, tensor<2x1x10x12xi1>) -> tensor<2x10x40xf32>
  return %y : tensor<2x10x40xf32>
}

// -----

// f16 with dynamic batch and lengths: contractions accumulate in f32 from a
// zero fill, and each result is truncated to f16 once; sizes come from the
// inputs. The more static result type gets a cast.

// CHECK-LABEL: func.func @f16_dynamic
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<?x?x32xf16>, %[[KV:[^:]+]]: tensor<?x?x32xf16>
// CHECK-DAG: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[B:.+]] = tensor.dim %[[Q]], %c0
// CHECK-DAG: %[[SQ:.+]] = tensor.dim %[[Q]], %c1
// CHECK: %[[E:.+]] = tensor.empty(%[[B]], %[[SQ]]) : tensor<?x4x?x8xf32>
// CHECK: %[[F:.+]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[E]] : tensor<?x4x?x8xf32>)
// CHECK: linalg.generic {{.*}} outs(%[[F]] : tensor<?x4x?x8xf32>)
// CHECK: ^bb0(%[[A:.+]]: f16, %[[W:.+]]: f16, %[[ACC:.+]]: f32):
// CHECK:   %[[AE:.+]] = arith.extf %[[A]] : f16 to f32
// CHECK:   %[[WE:.+]] = arith.extf %[[W]] : f16 to f32
// CHECK:   %[[P:.+]] = arith.mulf %[[AE]], %[[WE]] : f32
// CHECK:   arith.addf %[[ACC]], %[[P]] : f32
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK: mha.attention ins({{.*}} : tensor<?x4x?x8xf16>, tensor<?x4x?x8xf16>, tensor<?x4x?x8xf16>) outs({{.*}} : tensor<?x4x?x8xf16>)
// CHECK: %[[R:.+]] = tensor.cast %{{.*}} : tensor<?x?x32xf16> to tensor<3x?x32xf16>
// CHECK: return %[[R]]
func.func @f16_dynamic(%q: tensor<?x?x32xf16>, %kv: tensor<?x?x32xf16>, %w: tensor<32x32xf16>)
    -> tensor<3x?x32xf16> {
  %y = mha.multi_head_attention %q, %kv, %kv, %w, %w, %w, %w {num_heads = 4 : i64}
       : (tensor<?x?x32xf16>, tensor<?x?x32xf16>, tensor<?x?x32xf16>, tensor<32x32xf16>,
          tensor<32x32xf16>, tensor<32x32xf16>, tensor<32x32xf16>) -> tensor<3x?x32xf16>
  return %y : tensor<3x?x32xf16>
}

// -----

// Ops other than mha.multi_head_attention are left alone.
// CHECK-LABEL: func.func @attention_untouched
// CHECK: mha.attention
func.func @attention_untouched(%q: tensor<1x2x4x8xf32>, %init: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %o = mha.attention ins(%q, %q, %q : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>)
         outs(%init : tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// A dynamic rank-4 mask dim may be 1 at run time on the layer op, while
// mha.attention takes only static 1s as broadcasts: each dynamic dim whose
// score dim is not 1 is expanded (linalg.broadcast) when it is 1 at run time.
// The static 1 (heads) stays and broadcasts through the indexing map.
// CHECK-LABEL: func.func @dynamic_mask
// CHECK-SAME: %[[M:[^:]+]]: tensor<?x1x?x?xi1>
// CHECK: %[[B1:.+]] = arith.cmpi eq, %{{.*}}, %c1
// CHECK: %[[M0:.+]] = scf.if %[[B1]] -> (tensor<?x1x?x?xi1>)
// The row is a slice that keeps its rank, the unit dim then folded into a
// neighbour (a rank-reducing slice would leave which unit dim it drops to
// guesswork after bufferization).
// CHECK:   %[[ROW:.+]] = tensor.extract_slice %[[M]][0, 0, 0, 0] [1, 1, %{{.*}}, %{{.*}}] [1, 1, 1, 1] : tensor<?x1x?x?xi1> to tensor<1x1x?x?xi1>
// CHECK:   %[[FOLDED:.+]] = tensor.collapse_shape %[[ROW]] {{\[\[}}0, 1], [2], [3]] : tensor<1x1x?x?xi1> into tensor<1x?x?xi1>
// CHECK:   linalg.broadcast ins(%[[FOLDED]] : tensor<1x?x?xi1>) outs(%{{.*}} : tensor<2x1x?x?xi1>) dimensions = [0]
// CHECK: } else {
// CHECK:   scf.yield %[[M]]
// CHECK: %[[M2:.+]] = scf.if %{{.*}} -> (tensor<?x1x?x?xi1>)
// CHECK:   tensor.collapse_shape %{{.*}} {{\[\[}}0], [1, 2], [3]] : tensor<?x1x1x?xi1> into tensor<?x1x?xi1>
// CHECK:   linalg.broadcast {{.*}} dimensions = [2]
// CHECK: %[[M3:.+]] = scf.if %{{.*}} -> (tensor<?x1x?x?xi1>)
// CHECK:   linalg.broadcast {{.*}} dimensions = [3]
// CHECK-NOT: dimensions = [1]
// CHECK: mha.attention {{.*}} mask(%[[M3]] : tensor<?x1x?x?xi1>)
func.func @dynamic_mask(%x: tensor<2x?x16xf32>, %w: tensor<16x16xf32>, %m: tensor<?x1x?x?xi1>) -> tensor<2x?x16xf32> {
  %y = mha.multi_head_attention %x, %x, %x, %w, %w, %w, %w mask(%m) {num_heads = 2 : i64}
       : (tensor<2x?x16xf32>, tensor<2x?x16xf32>, tensor<2x?x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>,
          tensor<16x16xf32>, tensor<16x16xf32>, tensor<?x1x?x?xi1>) -> tensor<2x?x16xf32>
  return %y : tensor<2x?x16xf32>
}
