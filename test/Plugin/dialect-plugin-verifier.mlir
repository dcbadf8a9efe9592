// Verifiers run inside the stock mlir-opt too.
//
// UNSUPPORTED: asan
// RUN: %mlir_opt %s --load-dialect-plugin=%{mha_plugin} --verify-diagnostics

func.func @bad_heads(%x: tensor<1x8x16xf32>, %w: tensor<16x16xf32>) -> tensor<1x8x16xf32> {
  // expected-error @+1 {{'w_q' dimension 1 (H*dk) must be a positive multiple of 'num_heads' (3), found 16}}
  %y = mha.multi_head_attention %x, %x, %x, %w, %w, %w, %w {num_heads = 3 : i64}
       : (tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<16x16xf32>,
          tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<1x8x16xf32>
  return %y : tensor<1x8x16xf32>
}
