// RUN: mha-opt %s --mha-lower-to-loops | FileCheck %s
// RUN: mha-opt %s --pass-pipeline="builtin.module(mha-lower-to-loops{emit-c-interface})" | FileCheck %s --check-prefix=CIFACE

// The reference pipeline leaves nothing but the LLVM dialect.

// CHECK: llvm.func @layer(
// CHECK-NOT: mha.
// CHECK-NOT: linalg.
// CHECK-NOT: tensor.
// CHECK-NOT: memref.
// CHECK-NOT: scf.
// CHECK-NOT: affine.
// CHECK-NOT: unrealized_conversion_cast
// CHECK: llvm.intr.exp

// CIFACE: llvm.func @layer(
// CIFACE: llvm.func @_mlir_ciface_layer(
func.func @layer(%x: tensor<?x?x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>, %m: tensor<?x1x?x?xi1>)
    -> tensor<?x?x8xf32> {
  %y = mha.multi_head_attention %x, %x, %x, %w, %w, %w, %w bias(%b, %b, %b, %b) mask(%m)
       {num_heads = 2 : i64, causal}
       : (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>,
          tensor<8x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>,
          tensor<?x1x?x?xi1>) -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// bf16 and f16 layers lower too (f32 accumulation inside).
// CHECK: llvm.func @layer_bf16(
// CHECK-NOT: mha.
// CHECK: llvm.fpext
// CHECK: llvm.func @layer_f16(
// CHECK-NOT: mha.
// CHECK: llvm.fptrunc
func.func @layer_bf16(%x: tensor<1x4x8xbf16>, %w: tensor<8x8xbf16>) -> tensor<1x4x8xbf16> {
  %y = mha.multi_head_attention %x, %x, %x, %w, %w, %w, %w {num_heads = 2 : i64}
       : (tensor<1x4x8xbf16>, tensor<1x4x8xbf16>, tensor<1x4x8xbf16>, tensor<8x8xbf16>, tensor<8x8xbf16>,
          tensor<8x8xbf16>, tensor<8x8xbf16>) -> tensor<1x4x8xbf16>
  return %y : tensor<1x4x8xbf16>
}
func.func @layer_f16(%x: tensor<1x4x8xf16>, %w: tensor<8x8xf16>) -> tensor<1x4x8xf16> {
  %y = mha.multi_head_attention %x, %x, %x, %w, %w, %w, %w {num_heads = 2 : i64}
       : (tensor<1x4x8xf16>, tensor<1x4x8xf16>, tensor<1x4x8xf16>, tensor<8x8xf16>, tensor<8x8xf16>,
          tensor<8x8xf16>, tensor<8x8xf16>) -> tensor<1x4x8xf16>
  return %y : tensor<1x4x8xf16>
}
