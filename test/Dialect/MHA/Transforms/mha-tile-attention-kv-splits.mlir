// RUN: mha-opt %s --split-input-file --mha-tile-attention="kv-tile-size=128 kv-splits=3 decompose=false" --canonicalize --cse | FileCheck %s
// RUN: mha-opt %s --split-input-file --mha-tile-attention="kv-tile-size=128 decompose=false" --canonicalize --cse | FileCheck %s --check-prefix=CONFIG
// RUN: not mha-opt %s --split-input-file --mha-tile-attention="kv-splits=2 workgroups=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=GPU

// The key split (flash-decoding): one scf.forall over batches, query head
// tiles (the heads of a key/value head: head_tile) and chunks of whole key tiles
// (ceil(1000 / 3) = 334 keys, rounded up to 384), by their index (a step of
// 1, which mha-vectorize does not peel); each iteration folds its
// chunk from the empty state (its key loop over 128-key blocks, the partial
// block peeled) into its slice of the partial states, which have a leading
// chunk dim. A second scf.forall over (batch, head tile) merges the chunks'
// states exactly (their max, each rescaled by exp(m_c - m)) and normalizes.
// CHECK-DAG: #[[$FIRST:.+]] = affine_map<(d0) -> (d0 * 384)>
// CHECK-DAG: #[[$KEYS:.+]] = affine_map<(d0) -> (d0 * -384 + 1000, 384)>
// CHECK-LABEL: func.func @decode
// CHECK-DAG: %[[ACC0:.+]] = linalg.fill {{.*}} -> tensor<3x2x4x1x64xf32>
// CHECK-DAG: %[[MAX0:.+]] = linalg.fill ins(%{{.*}} : f32) outs(%[[ROWS:.+]] : tensor<3x2x4x1xf32>)
// CHECK: %[[PARTIAL:.+]]:3 = scf.forall (%[[B:.+]], %[[H:.+]], %[[CHUNK:.+]]) = (0, 0, 0) to (2, 4, 3) step (1, 2, 1) shared_outs(%[[ACC:.+]] = %[[ACC0]], %[[MAX:.+]] = %[[MAX0]], %[[SUM:.+]] = %{{.+}})
// CHECK:   %[[J:.+]] = affine.apply #[[$FIRST]](%[[CHUNK]])
// CHECK:   %[[KEYS:.+]] = affine.min #[[$KEYS]](%[[CHUNK]])
// CHECK:   tensor.extract_slice %{{.*}}[%[[B]], %{{.*}}, %[[J]], 0] [1, 1, %[[KEYS]], 64]
// CHECK:   %[[ACCC:.+]] = tensor.extract_slice %[[ACC]][%[[CHUNK]], %[[B]], %[[H]], 0, 0] [1, 1, 2, 1, 64] [1, 1, 1, 1, 1] : tensor<3x2x4x1x64xf32> to tensor<1x2x1x64xf32>
// CHECK:   scf.for {{.*}} iter_args(%{{.*}} = %[[ACCC]],
// CHECK:     mha.online_attention {{.*}} tensor<1x1x128x64xf32>, tensor<1x1x128x64xf32>
// CHECK:   } {mha.key_blocks_read_once}
// CHECK:   %[[STATE:.+]]:3 = scf.for
// CHECK:   } {mha.key_blocks_read_once}
// CHECK:   scf.forall.in_parallel
// CHECK:     tensor.parallel_insert_slice %[[STATE]]#0 into %[[ACC]][%[[CHUNK]], %[[B]], %[[H]], 0, 0] [1, 1, 2, 1, 64]
// CHECK:     tensor.parallel_insert_slice %[[STATE]]#1 into %[[MAX]][%[[CHUNK]], %[[B]], %[[H]], 0] [1, 1, 2, 1]
// CHECK:     tensor.parallel_insert_slice %[[STATE]]#2 into %[[SUM]][%[[CHUNK]], %[[B]], %[[H]], 0] [1, 1, 2, 1]
// CHECK: scf.forall (%[[MB:.+]], %[[MH:.+]]) = (0, 0) to (2, 4) step (1, 2)
// CHECK:   %[[ACCS:.+]] = tensor.extract_slice %[[PARTIAL]]#0[0, %[[MB]], %[[MH]], 0, 0] [3, 1, 2, 1, 64]
// CHECK:   %[[MAXS:.+]] = tensor.extract_slice %[[PARTIAL]]#1[0, %[[MB]], %[[MH]], 0] [3, 1, 2, 1]
// CHECK:   %[[M:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[MAXS]]
// CHECK:     arith.maxnumf
// CHECK:   linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]} ins(%[[ACCS]], %[[MAXS]], %{{.+}} :
// CHECK:     arith.cmpf oeq
// CHECK:     arith.select
// CHECK:     math.exp
// CHECK:     arith.mulf
// CHECK:     arith.addf
// CHECK:   %[[SUMS:.+]] = tensor.extract_slice %[[PARTIAL]]#2[0, %[[MB]], %[[MH]], 0] [3, 1, 2, 1]
// CHECK:   linalg.generic {{.*}} ins(%[[SUMS]], %[[MAXS]], %{{.+}} :
// CHECK:   arith.divf
// CHECK:   scf.forall.in_parallel
//
// The chunks from the op's own lowering configuration.
// CONFIG-LABEL: func.func @decode
// CONFIG: scf.forall ({{.*}}) = (0, 0, 0) to (2, 4, 2) step (1, 2, 1)
func.func @decode(%q: tensor<2x4x1x64xf32>, %k: tensor<2x2x1000x64xf32>, %v: tensor<2x2x1000x64xf32>) -> tensor<2x4x1x64xf32> {
  %init = tensor.empty() : tensor<2x4x1x64xf32>
  %o = mha.attention ins(%q, %k, %v : tensor<2x4x1x64xf32>, tensor<2x2x1000x64xf32>, tensor<2x2x1000x64xf32>)
         outs(%init : tensor<2x4x1x64xf32>) {mha.lowering_config = #mha.lowering_config<kv_splits = 2, head_tile = 2>} -> tensor<2x4x1x64xf32>
  return %o : tensor<2x4x1x64xf32>
}

// -----

// A dynamic key length: chunks of max(128, ceil(ceil(Sk / 3) / 128) * 128)
// keys, as many as it takes.
// CHECK-LABEL: func.func @dynamic_keys
// CHECK: %[[SK:.+]] = tensor.dim %{{.*}}, %{{.*}} : tensor<1x1x?x64xf32>
// CHECK: %[[CHUNK:.+]] = affine.max #{{.+}}()[%[[SK]]]
// CHECK: %[[N:.+]] = affine.apply #{{.+}}()[%[[SK]], %[[CHUNK]]]
// CHECK: tensor.empty(%[[N]]) : tensor<?x1x8x1x64xf32>
// CHECK: scf.forall (%[[C:.+]]) in (%[[N]])
// CHECK:   %[[J:.+]] = arith.muli %[[C]], %[[CHUNK]] : index
// CHECK:   affine.min #{{.+}}(%[[J]])[%[[CHUNK]], %[[SK]]]
func.func @dynamic_keys(%q: tensor<1x8x1x64xf32>, %k: tensor<1x1x?x64xf32>, %v: tensor<1x1x?x64xf32>) -> tensor<1x8x1x64xf32> {
  %init = tensor.empty() : tensor<1x8x1x64xf32>
  %o = mha.attention ins(%q, %k, %v : tensor<1x8x1x64xf32>, tensor<1x1x?x64xf32>, tensor<1x1x?x64xf32>)
         outs(%init : tensor<1x8x1x64xf32>) {mha.lowering_config = #mha.lowering_config<head_tile = 8>} -> tensor<1x8x1x64xf32>
  return %o : tensor<1x8x1x64xf32>
}

// -----

// On GPU workgroups neither the key split nor head tiles are built.
// GPU: error: 'mha.attention' op cannot tile 2 query heads per GPU workgroup (head_tile): head tiles are implemented on CPU only
// GPU: error: 'mha.attention' op cannot tile 8 query heads per GPU workgroup (head_tile): head tiles are implemented on CPU only
// GPU: error: 'mha.attention' op cannot split its keys across GPU workgroups (kv_splits = 2): the split is implemented on CPU only
// CHECK-LABEL: func.func @one_head_per_tile
// CHECK: scf.forall ({{.*}}) in (4, 3)
func.func @one_head_per_tile(%q: tensor<1x4x1x16xf32>, %k: tensor<1x2x300x16xf32>) -> tensor<1x4x1x16xf32> {
  %o = mha.attention ins(%q, %k, %k : tensor<1x4x1x16xf32>, tensor<1x2x300x16xf32>, tensor<1x2x300x16xf32>)
         outs(%q : tensor<1x4x1x16xf32>) -> tensor<1x4x1x16xf32>
  return %o : tensor<1x4x1x16xf32>
}

// -----

// A dynamic batch: its tiles of one stay static (the vectorizer takes
// static shapes only).
// CHECK-LABEL: func.func @dynamic_batch
// CHECK: scf.forall ({{.*}}) = (0, 0, 0) to (%{{.+}}, 4, 3) step (1, 2, 1)
// CHECK:   mha.online_attention ins(%{{.+}}, %{{.+}}, %{{.+}} : tensor<1x2x1x64xf32>, tensor<1x1x128x64xf32>, tensor<1x1x128x64xf32>)
func.func @dynamic_batch(%q: tensor<?x4x1x64xf32>, %k: tensor<?x2x1000x64xf32>, %init: tensor<?x4x1x64xf32>) -> tensor<?x4x1x64xf32> {
  %o = mha.attention ins(%q, %k, %k : tensor<?x4x1x64xf32>, tensor<?x2x1000x64xf32>, tensor<?x2x1000x64xf32>)
         outs(%init : tensor<?x4x1x64xf32>) {mha.lowering_config = #mha.lowering_config<kv_splits = 2, head_tile = 2>} -> tensor<?x4x1x64xf32>
  return %o : tensor<?x4x1x64xf32>
}
