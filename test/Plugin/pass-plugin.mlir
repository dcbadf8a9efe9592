// The stock mlir-opt runs our passes from the plugin. Pass flags such as
// --mha-decompose are created before plugins load, so plugin passes are named
// in --pass-pipeline (as for every MLIR pass plugin).
//
// UNSUPPORTED: asan
// RUN: %mlir_opt %s --load-dialect-plugin=%{mha_plugin} --load-pass-plugin=%{mha_plugin} \
// RUN:   --pass-pipeline="builtin.module(func.func(mha-decompose))" | FileCheck %s
// RUN: %mlir_opt --load-pass-plugin=%{mha_plugin} --help | FileCheck %s --check-prefix=HELP

// HELP: --mha-decompose

// CHECK-LABEL: func.func @layer
// CHECK-NOT: mha.multi_head_attention
// CHECK: mha.attention
// CHECK-NOT: mha.multi_head_attention
func.func @layer(%x: tensor<1x8x16xf32>, %w: tensor<16x16xf32>) -> tensor<1x8x16xf32> {
  %y = mha.multi_head_attention %x, %x, %x, %w, %w, %w, %w {num_heads = 2 : i64, causal}
       : (tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<16x16xf32>,
          tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<1x8x16xf32>
  return %y : tensor<1x8x16xf32>
}
