// mha ops nested in regions are lowered too (the mha passes walk the whole
// module), and a pipeline run on its own output changes nothing.
//
// RUN: mha-opt %s --mha-lower-to-loops | FileCheck %s
// RUN: mha-opt %s --mha-lower-to-cpu | FileCheck %s
// RUN: mha-opt %s --mha-lower-to-loops | mha-opt --mha-lower-to-loops | FileCheck %s
// RUN: mha-opt %s --mha-lower-to-cpu | mha-opt --mha-lower-to-cpu | FileCheck %s

// CHECK: llvm.func @f(
// CHECK-NOT: mha.
// CHECK-NOT: tensor<
func.func @f(%x: tensor<1x4x8xf32>, %w: tensor<8x8xf32>, %flag: i1) -> tensor<1x4x8xf32> {
  %r = scf.if %flag -> tensor<1x4x8xf32> {
    %y = mha.multi_head_attention %x, %x, %x, %w, %w, %w, %w {num_heads = 2 : i64, causal}
         : (tensor<1x4x8xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>, tensor<8x8xf32>,
            tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
    scf.yield %y : tensor<1x4x8xf32>
  } else {
    scf.yield %x : tensor<1x4x8xf32>
  }
  return %r : tensor<1x4x8xf32>
}

// Partly lowered input: the output of mha-decompose (linalg projections
// around an mha.attention) goes through both pipelines.
// RUN: mha-opt %s --mha-decompose | mha-opt --mha-lower-to-cpu | FileCheck %s --check-prefix=PARTLY
// RUN: mha-opt %s --mha-decompose | mha-opt --mha-lower-to-loops | FileCheck %s --check-prefix=PARTLY
// PARTLY: llvm.func @f(
// PARTLY-NOT: mha.
