// The stock mlir-opt of Debian's mlir-22-tools loads the `mha` dialect from
// the plugin: it parses, verifies and prints our ops.
//
// UNSUPPORTED: asan
// RUN: %mlir_opt %s --load-dialect-plugin=%{mha_plugin} | FileCheck %s
// RUN: %mlir_opt %s --load-dialect-plugin=%{mha_plugin} --mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC
// RUN: not %mlir_opt %s 2>&1 | FileCheck %s --check-prefix=NOPLUGIN

// CHECK-LABEL: func.func @layer
// CHECK: mha.multi_head_attention %{{.*}} {causal, num_heads = 2 : i64}
// GENERIC: "mha.multi_head_attention"
// NOPLUGIN: Dialect `mha' not found for custom op 'mha.multi_head_attention'
func.func @layer(%x: tensor<1x8x16xf32>, %w: tensor<16x16xf32>) -> tensor<1x8x16xf32> {
  %y = mha.multi_head_attention %x, %x, %x, %w, %w, %w, %w {num_heads = 2 : i64, causal}
       : (tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<16x16xf32>,
          tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<1x8x16xf32>
  return %y : tensor<1x8x16xf32>
}
