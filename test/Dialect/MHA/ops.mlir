// RUN: mha-opt %s | mha-opt | FileCheck %s
// RUN: mha-opt %s --mlir-print-op-generic | mha-opt | FileCheck %s
// RUN: mha-opt %s --mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC

// Round trip of every form of the `mha` ops, through the custom and the
// generic assembly.

// CHECK-LABEL: func.func @self_attention
// CHECK-SAME: (%[[X:.+]]: tensor<2x16x64xf32>, %[[WQ:.+]]: tensor<64x64xf32>, %[[WK:.+]]: tensor<64x64xf32>, %[[WV:.+]]: tensor<64x64xf32>, %[[WO:.+]]: tensor<64x64xf32>)
// CHECK: mha.multi_head_attention %[[X]], %[[X]], %[[X]], %[[WQ]], %[[WK]], %[[WV]], %[[WO]] {num_heads = 4 : i64} : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<2x16x64xf32>
// GENERIC-LABEL: sym_name = "self_attention"
// GENERIC: "mha.multi_head_attention"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{num_heads = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>}>
func.func @self_attention(%x: tensor<2x16x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>,
                          %wv: tensor<64x64xf32>, %wo: tensor<64x64xf32>) -> tensor<2x16x64xf32> {
  %y = mha.multi_head_attention %x, %x, %x, %wq, %wk, %wv, %wo {num_heads = 4 : i64}
       : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x64xf32>,
          tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}

// Cross attention (Sk != Sq, Ek != Ev != Eq), biases, dk != dv != Eo.
// CHECK-LABEL: func.func @cross_attention_bias
// CHECK: mha.multi_head_attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} bias(%[[BQ:.+]], %[[BK:.+]], %[[BV:.+]], %[[BO:.+]]) {num_heads = 2 : i64}
// CHECK-SAME: -> tensor<3x5x24xf32>
// GENERIC-LABEL: sym_name = "cross_attention_bias"
// GENERIC: operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0>
func.func @cross_attention_bias(%q: tensor<3x5x32xf32>, %k: tensor<3x7x20xf32>, %v: tensor<3x7x12xf32>,
                                %wq: tensor<32x16xf32>, %wk: tensor<20x16xf32>, %wv: tensor<12x10xf32>,
                                %wo: tensor<10x24xf32>, %bq: tensor<16xf32>, %bk: tensor<16xf32>,
                                %bv: tensor<10xf32>, %bo: tensor<24xf32>) -> tensor<3x5x24xf32> {
  %y = mha.multi_head_attention %q, %k, %v, %wq, %wk, %wv, %wo bias(%bq, %bk, %bv, %bo)
       {num_heads = 2 : i64}
       : (tensor<3x5x32xf32>, tensor<3x7x20xf32>, tensor<3x7x12xf32>, tensor<32x16xf32>,
          tensor<20x16xf32>, tensor<12x10xf32>, tensor<10x24xf32>, tensor<16xf32>,
          tensor<16xf32>, tensor<10xf32>, tensor<24xf32>) -> tensor<3x5x24xf32>
  return %y : tensor<3x5x24xf32>
}

// Each mask rank and kind: rank 2 bool, rank 3 float, rank 4 broadcasting.
// CHECK-LABEL: func.func @masks
// CHECK: mha.multi_head_attention {{.*}} mask(%{{.*}}) {num_heads = 4 : i64} : ({{.*}}, tensor<16x16xi1>) -> tensor<2x16x64xf32>
// CHECK: mha.multi_head_attention {{.*}} mask(%{{.*}}) {num_heads = 4 : i64} : ({{.*}}, tensor<2x16x16xf32>) -> tensor<2x16x64xf32>
// CHECK: mha.multi_head_attention {{.*}} mask(%{{.*}}) {num_heads = 4 : i64} : ({{.*}}, tensor<2x1x1x16xi1>) -> tensor<2x16x64xf32>
// CHECK: mha.multi_head_attention {{.*}} mask(%{{.*}}) {num_heads = 4 : i64} : ({{.*}}, tensor<1x4x16x16xf32>) -> tensor<2x16x64xf32>
// GENERIC-LABEL: sym_name = "masks"
// GENERIC: operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0>
func.func @masks(%x: tensor<2x16x64xf32>, %w: tensor<64x64xf32>, %m2: tensor<16x16xi1>,
                 %m3: tensor<2x16x16xf32>, %m4: tensor<2x1x1x16xi1>, %m4f: tensor<1x4x16x16xf32>)
    -> (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>) {
  %a = mha.multi_head_attention %x, %x, %x, %w, %w, %w, %w mask(%m2) {num_heads = 4 : i64}
       : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x64xf32>,
          tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<16x16xi1>) -> tensor<2x16x64xf32>
  %b = mha.multi_head_attention %x, %x, %x, %w, %w, %w, %w mask(%m3) {num_heads = 4 : i64}
       : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x64xf32>,
          tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<2x16x16xf32>) -> tensor<2x16x64xf32>
  %c = mha.multi_head_attention %x, %x, %x, %w, %w, %w, %w mask(%m4) {num_heads = 4 : i64}
       : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x64xf32>,
          tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<2x1x1x16xi1>) -> tensor<2x16x64xf32>
  %d = mha.multi_head_attention %x, %x, %x, %w, %w, %w, %w mask(%m4f) {num_heads = 4 : i64}
       : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<64x64xf32>,
          tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<1x4x16x16xf32>) -> tensor<2x16x64xf32>
  return %a, %b, %c, %d : tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>
}

// Grouped-query (8 query heads over 2 kv heads) and multi-query attention,
// causal, custom scale, bias and mask together.
// CHECK-LABEL: func.func @gqa_mqa
// CHECK: mha.multi_head_attention {{.*}} bias({{.*}}) mask(%{{.*}}) {causal, num_heads = 8 : i64, num_kv_heads = 2 : i64, scale = 1.250000e-01 : f32}
// CHECK: mha.multi_head_attention {{.*}} {causal, num_heads = 8 : i64, num_kv_heads = 1 : i64}
// GENERIC-LABEL: sym_name = "gqa_mqa"
// GENERIC: <{causal, num_heads = 8 : i64, num_kv_heads = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0>, scale = 1.250000e-01 : f32}>
func.func @gqa_mqa(%x: tensor<1x32x128xf32>, %wq: tensor<128x128xf32>, %wk: tensor<128x32xf32>,
                   %wv: tensor<128x32xf32>, %wo: tensor<128x128xf32>, %bq: tensor<128xf32>,
                   %bk: tensor<32xf32>, %bv: tensor<32xf32>, %bo: tensor<128xf32>,
                   %m: tensor<32x32xi1>, %wk1: tensor<128x16xf32>)
    -> (tensor<1x32x128xf32>, tensor<1x32x128xf32>) {
  %a = mha.multi_head_attention %x, %x, %x, %wq, %wk, %wv, %wo bias(%bq, %bk, %bv, %bo) mask(%m)
       {num_heads = 8 : i64, num_kv_heads = 2 : i64, scale = 0.125 : f32, causal}
       : (tensor<1x32x128xf32>, tensor<1x32x128xf32>, tensor<1x32x128xf32>, tensor<128x128xf32>,
          tensor<128x32xf32>, tensor<128x32xf32>, tensor<128x128xf32>, tensor<128xf32>,
          tensor<32xf32>, tensor<32xf32>, tensor<128xf32>, tensor<32x32xi1>) -> tensor<1x32x128xf32>
  %b = mha.multi_head_attention %x, %x, %x, %wq, %wk1, %wk1, %wo
       {num_heads = 8 : i64, num_kv_heads = 1 : i64, causal}
       : (tensor<1x32x128xf32>, tensor<1x32x128xf32>, tensor<1x32x128xf32>, tensor<128x128xf32>,
          tensor<128x16xf32>, tensor<128x16xf32>, tensor<128x128xf32>) -> tensor<1x32x128xf32>
  return %a, %b : tensor<1x32x128xf32>, tensor<1x32x128xf32>
}

// Dynamic batch and sequence lengths, with a dynamic mask and f16 / bf16.
// CHECK-LABEL: func.func @dynamic
// CHECK: mha.multi_head_attention {{.*}} mask(%{{.*}}) {causal, num_heads = 2 : i64} : (tensor<?x?x32xf16>, tensor<?x?x32xf16>, tensor<?x?x32xf16>, {{.*}}, tensor<?x?xf16>) -> tensor<?x?x32xf16>
// CHECK: mha.multi_head_attention {{.*}} : (tensor<?x9x32xbf16>, tensor<?x?x32xbf16>, {{.*}}) -> tensor<?x9x32xbf16>
func.func @dynamic(%q: tensor<?x?x32xf16>, %w: tensor<32x32xf16>, %m: tensor<?x?xf16>,
                   %qb: tensor<?x9x32xbf16>, %kb: tensor<?x?x32xbf16>, %wb: tensor<32x32xbf16>)
    -> (tensor<?x?x32xf16>, tensor<?x9x32xbf16>) {
  %a = mha.multi_head_attention %q, %q, %q, %w, %w, %w, %w mask(%m) {num_heads = 2 : i64, causal}
       : (tensor<?x?x32xf16>, tensor<?x?x32xf16>, tensor<?x?x32xf16>, tensor<32x32xf16>,
          tensor<32x32xf16>, tensor<32x32xf16>, tensor<32x32xf16>, tensor<?x?xf16>) -> tensor<?x?x32xf16>
  %b = mha.multi_head_attention %qb, %kb, %kb, %wb, %wb, %wb, %wb {num_heads = 2 : i64}
       : (tensor<?x9x32xbf16>, tensor<?x?x32xbf16>, tensor<?x?x32xbf16>, tensor<32x32xbf16>,
          tensor<32x32xbf16>, tensor<32x32xbf16>, tensor<32x32xbf16>) -> tensor<?x9x32xbf16>
  return %a, %b : tensor<?x?x32xf16>, tensor<?x9x32xbf16>
}

// The core op: GQA, dynamic lengths, each mask rank, dk != dv.
// CHECK-LABEL: func.func @attention
// CHECK-SAME: (%[[Q:.+]]: tensor<2x8x?x64xf32>, %[[K:.+]]: tensor<2x2x?x64xf32>, %[[V:.+]]: tensor<2x2x?x32xf32>, %[[M2:.+]]: tensor<?x?xi1>, %[[M4:.+]]: tensor<1x8x1x?xf32>, %[[M3:.+]]: tensor<2x?x?xi1>, %[[INIT:.+]]: tensor<2x8x?x32xf32>)
// CHECK: mha.attention ins(%[[Q]], %[[K]], %[[V]] : tensor<2x8x?x64xf32>, tensor<2x2x?x64xf32>, tensor<2x2x?x32xf32>) outs(%[[INIT]] : tensor<2x8x?x32xf32>) -> tensor<2x8x?x32xf32>
// CHECK: mha.attention ins(%[[Q]], %[[K]], %[[V]] : {{.*}}) mask(%[[M2]] : tensor<?x?xi1>) outs(%[[INIT]] : tensor<2x8x?x32xf32>) {causal} -> tensor<2x8x?x32xf32>
// CHECK: mha.attention ins(%[[Q]], %[[K]], %[[V]] : {{.*}}) mask(%[[M4]] : tensor<1x8x1x?xf32>) outs(%[[INIT]] : tensor<2x8x?x32xf32>) {scale = 5.000000e-01 : f32} -> tensor<2x8x?x32xf32>
// CHECK: mha.attention ins(%[[Q]], %[[K]], %[[V]] : {{.*}}) mask(%[[M3]] : tensor<2x?x?xi1>) outs(%[[INIT]] : tensor<2x8x?x32xf32>) {causal, scale = 2.000000e+00 : f32} -> tensor<2x8x?x32xf32>
// GENERIC-LABEL: sym_name = "attention"
// GENERIC: "mha.attention"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 1>}> : (tensor<2x8x?x64xf32>, tensor<2x2x?x64xf32>, tensor<2x2x?x32xf32>, tensor<2x8x?x32xf32>) -> tensor<2x8x?x32xf32>
// GENERIC: "mha.attention"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{causal, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 1>}>
func.func @attention(%q: tensor<2x8x?x64xf32>, %k: tensor<2x2x?x64xf32>, %v: tensor<2x2x?x32xf32>,
                     %m2: tensor<?x?xi1>, %m4: tensor<1x8x1x?xf32>, %m3: tensor<2x?x?xi1>,
                     %init: tensor<2x8x?x32xf32>)
    -> (tensor<2x8x?x32xf32>, tensor<2x8x?x32xf32>, tensor<2x8x?x32xf32>, tensor<2x8x?x32xf32>) {
  %a = mha.attention ins(%q, %k, %v : tensor<2x8x?x64xf32>, tensor<2x2x?x64xf32>, tensor<2x2x?x32xf32>)
         outs(%init : tensor<2x8x?x32xf32>) -> tensor<2x8x?x32xf32>
  %b = mha.attention ins(%q, %k, %v : tensor<2x8x?x64xf32>, tensor<2x2x?x64xf32>, tensor<2x2x?x32xf32>)
         mask(%m2 : tensor<?x?xi1>) outs(%init : tensor<2x8x?x32xf32>) {causal} -> tensor<2x8x?x32xf32>
  %c = mha.attention ins(%q, %k, %v : tensor<2x8x?x64xf32>, tensor<2x2x?x64xf32>, tensor<2x2x?x32xf32>)
         mask(%m4 : tensor<1x8x1x?xf32>) outs(%init : tensor<2x8x?x32xf32>) {scale = 0.5 : f32}
         -> tensor<2x8x?x32xf32>
  %d = mha.attention ins(%q, %k, %v : tensor<2x8x?x64xf32>, tensor<2x2x?x64xf32>, tensor<2x2x?x32xf32>)
         mask(%m3 : tensor<2x?x?xi1>) outs(%init : tensor<2x8x?x32xf32>) {causal, scale = 2.0 : f32}
         -> tensor<2x8x?x32xf32>
  return %a, %b, %c, %d : tensor<2x8x?x32xf32>, tensor<2x8x?x32xf32>, tensor<2x8x?x32xf32>, tensor<2x8x?x32xf32>
}

// An explicit causal diagonal (what tiling along Sq produces).
// CHECK-LABEL: func.func @attention_causal_offset
// CHECK: mha.attention ins(%{{.*}}, %{{.*}}, %{{.*}} : {{.*}}) causal_offset(%{{.*}}) outs(%{{.*}} : tensor<1x2x4x8xf32>) {causal} -> tensor<1x2x4x8xf32>
// GENERIC-LABEL: sym_name = "attention_causal_offset"
// GENERIC: "mha.attention"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{causal, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 1, 1>}>
func.func @attention_causal_offset(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x16x8xf32>, %off: index,
                                   %init: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %o = mha.attention ins(%q, %k, %k : tensor<1x2x4x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>)
         causal_offset(%off) outs(%init : tensor<1x2x4x8xf32>) {causal} -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// Key lengths (per batch), a sliding window with an explicit diagonal, a
// softcap, and a tile's key offset; the layer takes the same.
// CHECK-LABEL: func.func @attention_key_features
// CHECK: mha.attention ins(%{{.*}}, %{{.*}}, %{{.*}} : {{.*}}) key_lengths(%[[LEN:.+]] : tensor<2xi32>) causal_offset(%{{.*}}) outs(%{{.*}} : tensor<2x2x4x8xf32>) {softcap = 3.000000e+01 : f32, window_left = 4 : i64, window_right = 1 : i64} -> tensor<2x2x4x8xf32>
// CHECK: mha.online_attention ins(%{{.*}}, %{{.*}}, %{{.*}} : {{.*}}) key_lengths(%[[LEN]] : tensor<2xi32>) key_offset(%{{.*}}) causal_offset(%{{.*}}) outs({{.*}}) {causal, window_left = 2 : i64}
// CHECK: mha.attention_weights ins(%{{.*}}, %{{.*}} : {{.*}}) key_lengths(%[[LEN]] : tensor<2xi32>) outs(%{{.*}} : tensor<2x2x4x16xf32>) {softcap = 5.000000e+00 : f32} -> tensor<2x2x4x16xf32>
// CHECK: mha.attention_weights {{.*}} {softcap = 5.000000e+00 : f32, stage = #mha.weights_stage<scores>} -> tensor<2x2x4x16xf32>
// CHECK: mha.multi_head_attention {{.*}} key_lengths(%{{.*}}) {causal, num_heads = 2 : i64, softcap = 5.000000e+01 : f32, window_left = 8 : i64} : ({{.*}}, tensor<2xi64>) -> tensor<2x4x16xf32>
// GENERIC-LABEL: sym_name = "attention_key_features"
// GENERIC: "mha.attention"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 0, 1, 1>, softcap = 3.000000e+01 : f32, window_left = 4 : i64, window_right = 1 : i64}>
// GENERIC: "mha.online_attention"({{.*}}) <{causal, operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1, 1, 1, 1, 1>, window_left = 2 : i64}>
// GENERIC: "mha.multi_head_attention"({{.*}}) <{causal, num_heads = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0>, softcap = 5.000000e+01 : f32, window_left = 8 : i64}>
func.func @attention_key_features(%q: tensor<2x2x4x8xf32>, %k: tensor<2x2x16x8xf32>, %len: tensor<2xi32>,
                                  %off: index, %j0: index, %init: tensor<2x2x4x8xf32>,
                                  %acc: tensor<2x2x4x8xf32>, %row: tensor<2x2x4xf32>,
                                  %p: tensor<2x2x4x16xf32>, %x: tensor<2x4x16xf32>,
                                  %w: tensor<16x16xf32>, %len64: tensor<2xi64>)
    -> (tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>, tensor<2x2x4x16xf32>, tensor<2x4x16xf32>) {
  %o = mha.attention ins(%q, %k, %k : tensor<2x2x4x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>)
         key_lengths(%len : tensor<2xi32>) causal_offset(%off) outs(%init : tensor<2x2x4x8xf32>)
         {softcap = 30.0 : f32, window_left = 4 : i64, window_right = 1 : i64} -> tensor<2x2x4x8xf32>
  %a, %m, %s = mha.online_attention ins(%q, %k, %k : tensor<2x2x4x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>)
         key_lengths(%len : tensor<2xi32>) key_offset(%j0) causal_offset(%off)
         outs(%acc, %row, %row : tensor<2x2x4x8xf32>, tensor<2x2x4xf32>, tensor<2x2x4xf32>)
         {causal, window_left = 2 : i64} -> tensor<2x2x4x8xf32>, tensor<2x2x4xf32>, tensor<2x2x4xf32>
  %w8 = mha.attention_weights ins(%q, %k : tensor<2x2x4x8xf32>, tensor<2x2x16x8xf32>)
         key_lengths(%len : tensor<2xi32>) outs(%p : tensor<2x2x4x16xf32>) {softcap = 5.0 : f32}
         -> tensor<2x2x4x16xf32>
  %s8 = mha.attention_weights ins(%q, %k : tensor<2x2x4x8xf32>, tensor<2x2x16x8xf32>)
         outs(%p : tensor<2x2x4x16xf32>) {softcap = 5.0 : f32, stage = #mha.weights_stage<scores>}
         -> tensor<2x2x4x16xf32>
  %y = mha.multi_head_attention %x, %x, %x, %w, %w, %w, %w key_lengths(%len64)
         {num_heads = 2 : i64, causal, softcap = 50.0 : f32, window_left = 8 : i64}
         : (tensor<2x4x16xf32>, tensor<2x4x16xf32>, tensor<2x4x16xf32>, tensor<16x16xf32>,
            tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<2xi64>) -> tensor<2x4x16xf32>
  return %o, %a, %w8, %y : tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>, tensor<2x2x4x16xf32>, tensor<2x4x16xf32>
}

// The online form: the softmax state as destinations and results, with a
// mask and an explicit causal diagonal.
// CHECK-LABEL: func.func @online_attention
// CHECK: %{{.*}}, %{{.*}}, %{{.*}} = mha.online_attention ins(%{{.*}}, %{{.*}}, %{{.*}} : tensor<2x4x?x16xf16>, tensor<2x2x?x16xf16>, tensor<2x2x?x8xf16>) mask(%{{.*}} : tensor<2x1x?x?xi1>) causal_offset(%{{.*}}) outs(%{{.*}}, %{{.*}}, %{{.*}} : tensor<2x4x?x8xf32>, tensor<2x4x?xf32>, tensor<2x4x?xf32>) {causal, scale = 2.500000e-01 : f32} -> tensor<2x4x?x8xf32>, tensor<2x4x?xf32>, tensor<2x4x?xf32>
// GENERIC-LABEL: sym_name = "online_attention"
// GENERIC: "mha.online_attention"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{causal, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 1, 1, 1, 1>, scale = 2.500000e-01 : f32}>
func.func @online_attention(%q: tensor<2x4x?x16xf16>, %k: tensor<2x2x?x16xf16>, %v: tensor<2x2x?x8xf16>,
                            %m: tensor<2x1x?x?xi1>, %off: index, %acc: tensor<2x4x?x8xf32>,
                            %max: tensor<2x4x?xf32>, %sum: tensor<2x4x?xf32>)
    -> (tensor<2x4x?x8xf32>, tensor<2x4x?xf32>, tensor<2x4x?xf32>) {
  %r:3 = mha.online_attention ins(%q, %k, %v : tensor<2x4x?x16xf16>, tensor<2x2x?x16xf16>, tensor<2x2x?x8xf16>)
           mask(%m : tensor<2x1x?x?xi1>) causal_offset(%off)
           outs(%acc, %max, %sum : tensor<2x4x?x8xf32>, tensor<2x4x?xf32>, tensor<2x4x?xf32>)
           {causal, scale = 0.25 : f32} -> tensor<2x4x?x8xf32>, tensor<2x4x?xf32>, tensor<2x4x?xf32>
  return %r#0, %r#1, %r#2 : tensor<2x4x?x8xf32>, tensor<2x4x?xf32>, tensor<2x4x?xf32>
}

// The key as kᵀ [B, Hkv, dk, Sk] (key_transposed), in the core, weights and
// online ops.
// CHECK-LABEL: func.func @key_transposed
// CHECK: mha.attention ins(%{{.*}}, %[[KT:.*]], %{{.*}} : tensor<2x8x?x64xf32>, tensor<2x2x64x?xf32>, tensor<2x2x?x32xf32>) outs(%{{.*}} : tensor<2x8x?x32xf32>) {causal, key_transposed} -> tensor<2x8x?x32xf32>
// CHECK: mha.attention_weights ins(%{{.*}}, %[[KT]] : tensor<2x8x?x64xf32>, tensor<2x2x64x?xf32>) outs(%{{.*}} : tensor<2x8x?x?xf32>) {key_transposed} -> tensor<2x8x?x?xf32>
// CHECK: mha.online_attention ins(%{{.*}}, %[[KT]], %{{.*}} : {{.*}}) outs({{.*}}) {key_transposed}
func.func @key_transposed(%q: tensor<2x8x?x64xf32>, %kt: tensor<2x2x64x?xf32>, %v: tensor<2x2x?x32xf32>,
                          %init: tensor<2x8x?x32xf32>, %p: tensor<2x8x?x?xf32>,
                          %acc: tensor<2x8x?x32xf32>, %max: tensor<2x8x?xf32>, %sum: tensor<2x8x?xf32>)
    -> (tensor<2x8x?x32xf32>, tensor<2x8x?x?xf32>, tensor<2x8x?x32xf32>) {
  %a = mha.attention ins(%q, %kt, %v : tensor<2x8x?x64xf32>, tensor<2x2x64x?xf32>, tensor<2x2x?x32xf32>)
         outs(%init : tensor<2x8x?x32xf32>) {causal, key_transposed} -> tensor<2x8x?x32xf32>
  %w = mha.attention_weights ins(%q, %kt : tensor<2x8x?x64xf32>, tensor<2x2x64x?xf32>)
         outs(%p : tensor<2x8x?x?xf32>) {key_transposed} -> tensor<2x8x?x?xf32>
  %o:3 = mha.online_attention ins(%q, %kt, %v : tensor<2x8x?x64xf32>, tensor<2x2x64x?xf32>, tensor<2x2x?x32xf32>)
         outs(%acc, %max, %sum : tensor<2x8x?x32xf32>, tensor<2x8x?xf32>, tensor<2x8x?xf32>) {key_transposed}
         -> tensor<2x8x?x32xf32>, tensor<2x8x?xf32>, tensor<2x8x?xf32>
  return %a, %w, %o#0 : tensor<2x8x?x32xf32>, tensor<2x8x?x?xf32>, tensor<2x8x?x32xf32>
}

// A static KV cache updated by a decoding step: [B, Hkv, Smax, d] and
// [B, S, E] (the sequence dim is the second to last), i32 and i64 lengths.
// CHECK-LABEL: func.func @cache_append
// CHECK: mha.cache_append ins(%{{.*}} : tensor<?x2x1x64xf32>) lengths(%{{.*}} : tensor<?xi32>) outs(%{{.*}} : tensor<?x2x?x64xf32>) -> tensor<?x2x?x64xf32>
// CHECK: mha.cache_append ins(%{{.*}} : tensor<2x3x32xbf16>) lengths(%{{.*}} : tensor<2xi64>) outs(%{{.*}} : tensor<2x100x32xbf16>) -> tensor<2x100x32xbf16>
func.func @cache_append(%k: tensor<?x2x1x64xf32>, %len: tensor<?xi32>, %cache: tensor<?x2x?x64xf32>,
                        %x: tensor<2x3x32xbf16>, %len64: tensor<2xi64>, %cache3: tensor<2x100x32xbf16>)
    -> (tensor<?x2x?x64xf32>, tensor<2x100x32xbf16>) {
  %a = mha.cache_append ins(%k : tensor<?x2x1x64xf32>) lengths(%len : tensor<?xi32>)
         outs(%cache : tensor<?x2x?x64xf32>) -> tensor<?x2x?x64xf32>
  %b = mha.cache_append ins(%x : tensor<2x3x32xbf16>) lengths(%len64 : tensor<2xi64>)
         outs(%cache3 : tensor<2x100x32xbf16>) -> tensor<2x100x32xbf16>
  return %a, %b : tensor<?x2x?x64xf32>, tensor<2x100x32xbf16>
}

// Rotary embeddings: positions as offsets [B] or per token [B, S], the
// half-rotated and interleaved forms, partial rotary (R < d).
// CHECK-LABEL: func.func @rotary
// CHECK: mha.rotary ins(%{{.*}} : tensor<?x8x?x64xf32>) cos_sin(%{{.*}}, %{{.*}} : tensor<?x32xf32>, tensor<?x32xf32>) positions(%{{.*}} : tensor<?xi32>) outs(%{{.*}} : tensor<?x8x?x64xf32>) -> tensor<?x8x?x64xf32>
// CHECK: mha.rotary ins(%{{.*}} : tensor<2x4x3x16xf16>) cos_sin(%{{.*}}, %{{.*}} : tensor<10x4xf16>, tensor<10x4xf16>) positions(%{{.*}} : tensor<2x3xi64>) outs(%{{.*}} : tensor<2x4x3x16xf16>) {interleaved} -> tensor<2x4x3x16xf16>
func.func @rotary(%x: tensor<?x8x?x64xf32>, %cos: tensor<?x32xf32>, %sin: tensor<?x32xf32>, %off: tensor<?xi32>,
                  %init: tensor<?x8x?x64xf32>, %y: tensor<2x4x3x16xf16>, %c: tensor<10x4xf16>, %s: tensor<10x4xf16>,
                  %pos: tensor<2x3xi64>, %yinit: tensor<2x4x3x16xf16>) -> (tensor<?x8x?x64xf32>, tensor<2x4x3x16xf16>) {
  %a = mha.rotary ins(%x : tensor<?x8x?x64xf32>) cos_sin(%cos, %sin : tensor<?x32xf32>, tensor<?x32xf32>)
         positions(%off : tensor<?xi32>) outs(%init : tensor<?x8x?x64xf32>) -> tensor<?x8x?x64xf32>
  %b = mha.rotary ins(%y : tensor<2x4x3x16xf16>) cos_sin(%c, %s : tensor<10x4xf16>, tensor<10x4xf16>)
         positions(%pos : tensor<2x3xi64>) outs(%yinit : tensor<2x4x3x16xf16>) {interleaved} -> tensor<2x4x3x16xf16>
  return %a, %b : tensor<?x8x?x64xf32>, tensor<2x4x3x16xf16>
}

// A layer's decoding step on KV caches with rotary embeddings (GPT-J's
// interleaved form): the updated caches are two more results.
// CHECK-LABEL: func.func @layer_kv_cache_rotary
// CHECK: %{{.*}}, %{{.*}}:2 = mha.multi_head_attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} kv_cache(%{{.*}}, %{{.*}}, %{{.*}}) rotary(%{{.*}}, %{{.*}}) {causal, num_heads = 4 : i64, num_kv_heads = 2 : i64, rotary_interleaved}
// CHECK-SAME: -> (tensor<?x1x64xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>)
// CHECK: mha.multi_head_attention {{.*}} kv_cache({{.*}}) {num_heads = 4 : i64} : ({{.*}}) -> (tensor<2x3x64xbf16>, tensor<2x4x100x16xbf16>, tensor<2x4x100x16xbf16>)
// GENERIC-LABEL: sym_name = "layer_kv_cache_rotary"
// GENERIC: "mha.multi_head_attention"({{.*}}) <{causal, num_heads = 4 : i64, num_kv_heads = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1>, rotary_interleaved}>
func.func @layer_kv_cache_rotary(%x: tensor<?x1x64xf32>, %wq: tensor<64x64xf32>, %wkv: tensor<64x32xf32>,
                                 %wo: tensor<64x64xf32>, %kc: tensor<?x2x?x16xf32>, %vc: tensor<?x2x?x16xf32>,
                                 %len: tensor<?xi32>, %cos: tensor<?x8xf32>, %sin: tensor<?x8xf32>,
                                 %xb: tensor<2x3x64xbf16>, %wb: tensor<64x64xbf16>,
                                 %cb: tensor<2x4x100x16xbf16>, %len64: tensor<2xi64>)
    -> (tensor<?x1x64xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<2x3x64xbf16>,
        tensor<2x4x100x16xbf16>, tensor<2x4x100x16xbf16>) {
  %y, %k1, %v1 = mha.multi_head_attention %x, %x, %x, %wq, %wkv, %wkv, %wo
      kv_cache(%kc, %vc, %len) rotary(%cos, %sin)
      {num_heads = 4 : i64, num_kv_heads = 2 : i64, causal, rotary_interleaved}
      : (tensor<?x1x64xf32>, tensor<?x1x64xf32>, tensor<?x1x64xf32>, tensor<64x64xf32>,
         tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x64xf32>, tensor<?x2x?x16xf32>,
         tensor<?x2x?x16xf32>, tensor<?xi32>, tensor<?x8xf32>, tensor<?x8xf32>)
      -> (tensor<?x1x64xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>)
  %z, %k2, %v2 = mha.multi_head_attention %xb, %xb, %xb, %wb, %wb, %wb, %wb
      kv_cache(%cb, %cb, %len64) {num_heads = 4 : i64}
      : (tensor<2x3x64xbf16>, tensor<2x3x64xbf16>, tensor<2x3x64xbf16>, tensor<64x64xbf16>,
         tensor<64x64xbf16>, tensor<64x64xbf16>, tensor<64x64xbf16>, tensor<2x4x100x16xbf16>,
         tensor<2x4x100x16xbf16>, tensor<2xi64>)
      -> (tensor<2x3x64xbf16>, tensor<2x4x100x16xbf16>, tensor<2x4x100x16xbf16>)
  return %y, %k1, %v1, %z, %k2, %v2 : tensor<?x1x64xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>,
      tensor<2x3x64xbf16>, tensor<2x4x100x16xbf16>, tensor<2x4x100x16xbf16>
}
