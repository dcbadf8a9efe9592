// RUN: mha-opt %s --split-input-file --mha-tile-attention="kv-tile-size=128 decompose=false" | FileCheck %s
// RUN: not mha-opt %s --split-input-file --mha-tile-attention="workgroups=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=GPU

// The lowering configuration's prefetch_blocks is set on the key loop, for
// mha-prefetch-key-blocks after bufferization (not on the loop of the
// partial block, whose rows are the last).
// CHECK-LABEL: func.func @decode
// CHECK: scf.for
// CHECK: } {mha.causal_key_loop, mha.key_blocks_read_once, mha.prefetch_blocks = 1 : i64}
// CHECK: scf.for
// CHECK-NOT: mha.prefetch_blocks
// CHECK: } {mha.causal_key_loop, mha.key_blocks_read_once}
// GPU: error: 'mha.attention' op cannot prefetch key blocks in GPU workgroups (prefetch_blocks = 1): the prefetch is implemented on CPU only
func.func @decode(%q: tensor<1x4x1x64xbf16>, %k: tensor<1x1x1000x64xbf16>) -> tensor<1x4x1x64xbf16> {
  %o = mha.attention ins(%q, %k, %k : tensor<1x4x1x64xbf16>, tensor<1x1x1000x64xbf16>, tensor<1x1x1000x64xbf16>)
         outs(%q : tensor<1x4x1x64xbf16>) {causal, mha.lowering_config = #mha.lowering_config<head_tile = 4, prefetch_blocks = 1>} -> tensor<1x4x1x64xbf16>
  return %o : tensor<1x4x1x64xbf16>
}
