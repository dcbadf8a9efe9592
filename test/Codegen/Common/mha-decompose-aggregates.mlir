// RUN: mha-opt %s --split-input-file --mha-decompose-aggregates -verify-diagnostics | FileCheck %s
// RUN: mha-opt %s --split-input-file --mha-decompose-aggregates=serial-cache-appends=true -verify-diagnostics | FileCheck %s --check-prefix=SERIAL

// linalg.softmax becomes its AggregatedOpInterface decomposition: a max
// reduction, exp(x - max), a sum reduction and the division.

// CHECK-LABEL: func.func @softmax
// CHECK-NOT: linalg.softmax
// CHECK: linalg.fill
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK: arith.maxnumf
// CHECK: linalg.generic
// CHECK: arith.subf
// CHECK: math.exp
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK: arith.addf
// CHECK: linalg.generic
// CHECK: arith.divf
// CHECK-NOT: linalg.softmax
func.func @softmax(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %e = tensor.empty() : tensor<4x16xf32>
  %s = linalg.softmax dimension(1) ins(%x : tensor<4x16xf32>)
         outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %s : tensor<4x16xf32>
}

// -----

// mha ops implement the interface too; their own passes lower them.

// CHECK-LABEL: func.func @mha_untouched
// CHECK: mha.attention
func.func @mha_untouched(%q: tensor<1x2x8x4xf32>, %k: tensor<1x2x8x4xf32>,
                         %v: tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32> {
  %init = tensor.empty() : tensor<1x2x8x4xf32>
  %o = mha.attention ins(%q, %k, %v : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>)
         outs(%init : tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32>
  return %o : tensor<1x2x8x4xf32>
}

// -----

// Upstream's decomposition builds tensor ops: the buffer form is refused.
func.func @softmax_on_buffers(%x: memref<4xf32>, %y: memref<4xf32>) {
  // expected-error @+1 {{on buffers cannot be decomposed: only the tensor form of 'linalg.softmax' can (run this before bufferization)}}
  linalg.softmax dimension(0) ins(%x : memref<4xf32>) outs(%y : memref<4xf32>)
  return
}

// -----

// mha.cache_append: an scf.forall over the batches and the dims before the
// sequence dim (here the heads), each iteration writing its update's rows
// at its batch's length along the sequence dim (the second to last) of the
// cache, the loop's shared destination: in place once bufferized, and one
// workgroup per iteration on a GPU.

// CHECK-LABEL: func.func @cache_append
// CHECK-SAME: (%[[U:.+]]: tensor<?x2x3x64xf32>, %[[LEN:.+]]: tensor<?xi64>, %[[CACHE:.+]]: tensor<?x2x?x64xf32>)
// CHECK-NOT: mha.cache_append
// CHECK: %[[B:.+]] = tensor.dim %[[CACHE]], %c0
// CHECK: %[[R:.+]] = scf.forall (%[[I:.+]], %[[H:.+]]) in (%[[B]], 2) shared_outs(%[[ACC:.+]] = %[[CACHE]])
// CHECK:   %[[L:.+]] = tensor.extract %[[LEN]][%[[I]]] : tensor<?xi64>
// CHECK:   %[[AT:.+]] = arith.index_cast %[[L]] : i64 to index
// CHECK:   %[[ROWS:.+]] = tensor.extract_slice %[[U]][%[[I]], %[[H]], 0, 0] [1, 1, 3, 64] [1, 1, 1, 1]
// CHECK:   %[[SLOT:.+]] = tensor.extract_slice %[[ACC]][%[[I]], %[[H]], %[[AT]], 0] [1, 1, 3, 64] [1, 1, 1, 1]
// CHECK:   %[[COPY:.+]] = linalg.copy ins(%[[ROWS]] : tensor<1x1x3x64xf32>) outs(%[[SLOT]] : tensor<1x1x3x64xf32>)
// CHECK:   scf.forall.in_parallel
// CHECK:     tensor.parallel_insert_slice %[[COPY]] into %[[ACC]][%[[I]], %[[H]], %[[AT]], 0] [1, 1, 3, 64] [1, 1, 1, 1]
// CHECK: return %[[R]]
// serial-cache-appends (the CPU pipelines): an scf.for over batches, each
// writing its rows of every head at its length; the loop's destination is
// the cache.
// SERIAL-LABEL: func.func @cache_append
// SERIAL-SAME: (%[[U:.+]]: tensor<?x2x3x64xf32>, %[[LEN:.+]]: tensor<?xi64>, %[[CACHE:.+]]: tensor<?x2x?x64xf32>)
// SERIAL: %[[B:.+]] = tensor.dim %[[CACHE]], %c0
// SERIAL: %[[R:.+]] = scf.for %[[I:.+]] = %c0{{.*}} to %[[B]] step %c1 iter_args(%[[ACC:.+]] = %[[CACHE]])
// SERIAL:   %[[L:.+]] = tensor.extract %[[LEN]][%[[I]]] : tensor<?xi64>
// SERIAL:   %[[AT:.+]] = arith.index_cast %[[L]] : i64 to index
// SERIAL:   %[[ROWS:.+]] = tensor.extract_slice %[[U]][%[[I]], 0, 0, 0] [1, 2, 3, 64] [1, 1, 1, 1]
// SERIAL:   %[[SLOT:.+]] = tensor.extract_slice %[[ACC]][%[[I]], 0, %[[AT]], 0] [1, 2, 3, 64] [1, 1, 1, 1]
// SERIAL:   %[[COPY:.+]] = linalg.copy ins(%[[ROWS]] : tensor<1x2x3x64xf32>) outs(%[[SLOT]] : tensor<1x2x3x64xf32>)
// SERIAL:   %[[W:.+]] = tensor.insert_slice %[[COPY]] into %[[ACC]][%[[I]], 0, %[[AT]], 0] [1, 2, 3, 64] [1, 1, 1, 1]
// SERIAL:   scf.yield %[[W]]
// SERIAL: return %[[R]]
func.func @cache_append(%u: tensor<?x2x3x64xf32>, %len: tensor<?xi64>, %cache: tensor<?x2x?x64xf32>) -> tensor<?x2x?x64xf32> {
  %a = mha.cache_append ins(%u : tensor<?x2x3x64xf32>) lengths(%len : tensor<?xi64>)
         outs(%cache : tensor<?x2x?x64xf32>) -> tensor<?x2x?x64xf32>
  return %a : tensor<?x2x?x64xf32>
}

// -----

// The update's sequence dim is dynamic in [B, S, E] form.

// CHECK-LABEL: func.func @cache_append_dynamic
// CHECK: %[[SN:.+]] = tensor.dim %{{.*}}, %c1
// CHECK: scf.forall (%{{.*}}) in (2)
// CHECK:   tensor.extract_slice %{{.*}}[%{{.*}}, 0, 0] [1, %[[SN]], 32] [1, 1, 1]
// CHECK:   tensor.parallel_insert_slice %{{.*}} into %{{.*}}[%{{.*}}, %{{.*}}, 0] [1, %[[SN]], 32] [1, 1, 1]
func.func @cache_append_dynamic(%u: tensor<2x?x32xf16>, %len: tensor<2xi32>, %cache: tensor<2x50x32xf16>) -> tensor<2x50x32xf16> {
  %a = mha.cache_append ins(%u : tensor<2x?x32xf16>) lengths(%len : tensor<2xi32>)
         outs(%cache : tensor<2x50x32xf16>) -> tensor<2x50x32xf16>
  return %a : tensor<2x50x32xf16>
}

// -----

// mha.rotary, interleaved, partial (R = 12 of d = 16), positions per token:
// strided slices of the pairs (2i, 2i + 1) of the input, each token's rows
// of the tables gathered once ([B, S, R/2], for every head), the channels
// past R copied into init, then one generic per half reading them through
// affine maps (computed in f32), each writing a slice of the previous
// result (a chain: in place once bufferized).

// CHECK-LABEL: func.func @rotary_interleaved
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x4x?x16xbf16>, %[[COS:[^:]+]]: tensor<64x6xbf16>, %[[SIN:[^:]+]]: tensor<64x6xbf16>, %[[POS:[^:]+]]: tensor<2x?xi64>, %[[INIT:[^:]+]]: tensor<2x4x?x16xbf16>)
// CHECK-NOT: mha.rotary
// CHECK-DAG: %[[X1:.+]] = tensor.extract_slice %[[X]][0, 0, 0, 0] [2, 4, %[[S:.+]], 6] [1, 1, 1, 2]
// CHECK-DAG: %[[X2:.+]] = tensor.extract_slice %[[X]][0, 0, 0, 1] [2, 4, %[[S]], 6] [1, 1, 1, 2]
// CHECK: %[[CROWS:.+]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<2x?x6xbf16>)
// CHECK:   %[[B:.+]] = linalg.index 0
// CHECK:   %[[T:.+]] = linalg.index 1
// CHECK:   %[[I:.+]] = linalg.index 2
// CHECK:   %[[P:.+]] = tensor.extract %[[POS]][%[[B]], %[[T]]]
// CHECK:   %[[PI:.+]] = arith.index_cast %[[P]] : i64 to index
// CHECK:   tensor.extract %[[COS]][%[[PI]], %[[I]]]
// CHECK: %[[SROWS:.+]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<2x?x6xbf16>)
// CHECK:   tensor.extract %[[SIN]]
// CHECK: %[[REST:.+]] = tensor.extract_slice %[[X]][0, 0, 0, 12] [2, 4, %{{.*}}, 4] [1, 1, 1, 1]
// CHECK: %[[KEPT:.+]] = linalg.copy ins(%[[REST]] : {{.*}})
// CHECK: %[[R0:.+]] = tensor.insert_slice %[[KEPT]] into %[[INIT]][0, 0, 0, 12]
// CHECK: %[[OUT1:.+]] = tensor.extract_slice %[[R0]][0, 0, 0, 0] [2, 4, %[[S]], 6] [1, 1, 1, 2]
// CHECK: %[[FIRST:.+]] = linalg.generic {indexing_maps = [#[[ID:.+]], #[[ID]], #[[ROW:.+]], #[[ROW]], #[[ID]]]{{.*}} ins(%[[X1]], %[[X2]], %[[CROWS]], %[[SROWS]] : {{.*}}) outs(%[[OUT1]] :
// CHECK-NOT:   tensor.extract
// CHECK:   arith.subf
// CHECK:   arith.truncf {{.*}} : f32 to bf16
// CHECK: %[[R1:.+]] = tensor.insert_slice %[[FIRST]] into %[[R0]][0, 0, 0, 0] [2, 4, %[[S]], 6] [1, 1, 1, 2]
// CHECK: %[[OUT2:.+]] = tensor.extract_slice %[[R1]][0, 0, 0, 1] [2, 4, %[[S]], 6] [1, 1, 1, 2]
// CHECK: %[[SECOND:.+]] = linalg.generic {{.*}} ins(%[[X1]], %[[X2]], %[[CROWS]], %[[SROWS]] : {{.*}}) outs(%[[OUT2]] :
// CHECK:   arith.addf
// CHECK: %[[R2:.+]] = tensor.insert_slice %[[SECOND]] into %[[R1]][0, 0, 0, 1] [2, 4, %[[S]], 6] [1, 1, 1, 2]
// CHECK: return %[[R2]]
func.func @rotary_interleaved(%x: tensor<2x4x?x16xbf16>, %cos: tensor<64x6xbf16>, %sin: tensor<64x6xbf16>,
                              %pos: tensor<2x?xi64>, %init: tensor<2x4x?x16xbf16>) -> tensor<2x4x?x16xbf16> {
  %r = mha.rotary ins(%x : tensor<2x4x?x16xbf16>) cos_sin(%cos, %sin : tensor<64x6xbf16>, tensor<64x6xbf16>)
         positions(%pos : tensor<2x?xi64>) outs(%init : tensor<2x4x?x16xbf16>) {interleaved} -> tensor<2x4x?x16xbf16>
  return %r : tensor<2x4x?x16xbf16>
}

// -----

// The half-rotated form, every channel rotated, offsets [B]: pairs
// (i, i + R/2), each token at its batch's offset + its index.

// CHECK-LABEL: func.func @rotary_half
// CHECK-DAG: tensor.extract_slice %[[X:.+]][0, 0, 0, 0] [1, 2, 3, 4] [1, 1, 1, 1]
// CHECK-DAG: tensor.extract_slice %[[X]][0, 0, 0, 4] [1, 2, 3, 4] [1, 1, 1, 1]
// CHECK: linalg.generic
// CHECK:   %[[B:.+]] = linalg.index 0
// CHECK:   %[[T:.+]] = linalg.index 1
// CHECK:   %[[O:.+]] = tensor.extract %{{.*}}[%[[B]]] : tensor<1xi32>
// CHECK:   %[[OI:.+]] = arith.index_cast %[[O]] : i32 to index
// CHECK:   arith.addi %[[OI]], %[[T]]
// CHECK-NOT: linalg.copy
func.func @rotary_half(%x: tensor<1x2x3x8xf32>, %cos: tensor<9x4xf32>, %sin: tensor<9x4xf32>,
                       %off: tensor<1xi32>, %init: tensor<1x2x3x8xf32>) -> tensor<1x2x3x8xf32> {
  %r = mha.rotary ins(%x : tensor<1x2x3x8xf32>) cos_sin(%cos, %sin : tensor<9x4xf32>, tensor<9x4xf32>)
         positions(%off : tensor<1xi32>) outs(%init : tensor<1x2x3x8xf32>) -> tensor<1x2x3x8xf32>
  return %r : tensor<1x2x3x8xf32>
}

// -----

// The stages of mha.attention_weights: the scores (capped, no mask) and the
// logits (capped, masked) converted into `init`; no softmax.

// CHECK-LABEL: func.func @weights_scores
// CHECK: math.tanh
// CHECK-NOT: math.exp
// CHECK-NOT: arith.select
// CHECK: %[[F16:.+]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<1x2x4x8xf16>)
// CHECK:   arith.truncf %{{.*}} : f32 to f16
// CHECK-NOT: math.exp
// CHECK: return %[[F16]]
func.func @weights_scores(%q: tensor<1x2x4x8xf16>, %k: tensor<1x1x8x8xf16>, %m: tensor<4x8xi1>,
                          %init: tensor<1x2x4x8xf16>) -> tensor<1x2x4x8xf16> {
  %s = mha.attention_weights ins(%q, %k : tensor<1x2x4x8xf16>, tensor<1x1x8x8xf16>) mask(%m : tensor<4x8xi1>)
         outs(%init : tensor<1x2x4x8xf16>) {causal, softcap = 2.0 : f32, stage = #mha.weights_stage<scores>}
         -> tensor<1x2x4x8xf16>
  return %s : tensor<1x2x4x8xf16>
}

// -----

// CHECK-LABEL: func.func @weights_logits
// CHECK: math.tanh
// CHECK: arith.select
// CHECK-NOT: math.exp
// CHECK: %[[OUT:.+]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<1x2x4x8xf32>)
// CHECK-NOT: math.exp
// CHECK: return %[[OUT]]
func.func @weights_logits(%q: tensor<1x2x4x8xf32>, %k: tensor<1x1x8x8xf32>, %m: tensor<4x8xi1>,
                          %init: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %s = mha.attention_weights ins(%q, %k : tensor<1x2x4x8xf32>, tensor<1x1x8x8xf32>) mask(%m : tensor<4x8xi1>)
         outs(%init : tensor<1x2x4x8xf32>) {causal, softcap = 2.0 : f32, stage = #mha.weights_stage<logits>}
         -> tensor<1x2x4x8xf32>
  return %s : tensor<1x2x4x8xf32>
}
