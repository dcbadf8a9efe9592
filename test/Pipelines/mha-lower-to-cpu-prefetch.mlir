// RUN: mha-opt %s --split-input-file --mha-lower-to-cpu | FileCheck %s

// Decoding from keys and values of dynamic length: the rule sets
// prefetch_blocks, and the lowered key loop prefetches the next block's
// rows (read, locality 3: every cache level). From 4 MiB of static ones,
// which stay in the last-level cache between calls: no prefetch.
// CHECK-LABEL: llvm.func @bf16
// CHECK: "llvm.intr.prefetch"(%{{.*}}) <{cache = 1 : i32, hint = 3 : i32, rw = 0 : i32}>
// CHECK-LABEL: llvm.func @f32
// CHECK-NOT: llvm.intr.prefetch
func.func @bf16(%q: tensor<1x8x1x128xbf16>, %k: tensor<1x2x?x128xbf16>) -> tensor<1x8x1x128xbf16> {
  %init = tensor.empty() : tensor<1x8x1x128xbf16>
  %o = mha.attention ins(%q, %k, %k : tensor<1x8x1x128xbf16>, tensor<1x2x?x128xbf16>, tensor<1x2x?x128xbf16>)
         outs(%init : tensor<1x8x1x128xbf16>) {causal} -> tensor<1x8x1x128xbf16>
  return %o : tensor<1x8x1x128xbf16>
}

// -----

func.func @f32(%q: tensor<1x8x1x128xf32>, %k: tensor<1x2x4096x128xf32>) -> tensor<1x8x1x128xf32> {
  %init = tensor.empty() : tensor<1x8x1x128xf32>
  %o = mha.attention ins(%q, %k, %k : tensor<1x8x1x128xf32>, tensor<1x2x4096x128xf32>, tensor<1x2x4096x128xf32>)
         outs(%init : tensor<1x8x1x128xf32>) {causal} -> tensor<1x8x1x128xf32>
  return %o : tensor<1x8x1x128xf32>
}
