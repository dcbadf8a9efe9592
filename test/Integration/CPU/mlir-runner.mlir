// The output of mha-lower-to-loops runs under Debian's stock mlir-runner.
// Cross attention (Sq=2, Sk=3), 2 query heads sharing 1 kv head, dk=2 != dv=3,
// Eq=4, Ek=3, Ev=2, Eo=3, biases, a bool mask and bottom-right causal.
//
// The CHECK values come from the independent numpy reference
// (test/Integration/reference/mha_reference.py) on these constants, to 3
// decimals (f32 against the float64 reference).
//
// RUN: mha-opt %s --mha-lower-to-loops \
// RUN: | %mlir_runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%{mlir_runner_utils},%{mlir_c_runner_utils} \
// RUN: | FileCheck %s

// CHECK: sizes = [1, 2, 3]
// CHECK-NEXT: {{\[\[\[}}{{-0\.436[0-9]*}}, {{-1\.588[0-9]*}}, {{0\.536[0-9]*}}],
// CHECK-NEXT: {{\[}}{{-0\.630[0-9]*}}, {{-1\.583[0-9]*}}, {{0\.768[0-9]*}}]]]

func.func private @printMemrefF32(tensor<*xf32>)

func.func @layer(%q: tensor<1x2x4xf32>, %k: tensor<1x3x3xf32>, %v: tensor<1x3x2xf32>, %wq: tensor<4x4xf32>, %wk: tensor<3x2xf32>,
                 %wv: tensor<2x3xf32>, %wo: tensor<6x3xf32>, %bq: tensor<4xf32>, %bk: tensor<2xf32>, %bv: tensor<3xf32>,
                 %bo: tensor<3xf32>, %m: tensor<2x3xi1>) -> tensor<1x2x3xf32> {
  %y = mha.multi_head_attention %q, %k, %v, %wq, %wk, %wv, %wo bias(%bq, %bk, %bv, %bo) mask(%m)
       {num_heads = 2 : i64, num_kv_heads = 1 : i64, causal}
       : (tensor<1x2x4xf32>, tensor<1x3x3xf32>, tensor<1x3x2xf32>, tensor<4x4xf32>, tensor<3x2xf32>, tensor<2x3xf32>, tensor<6x3xf32>, tensor<4xf32>, tensor<2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2x3xi1>) -> tensor<1x2x3xf32>
  return %y : tensor<1x2x3xf32>
}

func.func @main() {
  %q = arith.constant dense<[[[0.3, 0.8, 0.6, -0.5],  [-0.4, 0.7, -1.0, 0.6]]]> : tensor<1x2x4xf32>
  %k = arith.constant dense<[[[0.6, -0.1, -0.4],  [-0.4, -0.5, -0.1],  [0.0, 0.1, 1.0]]]> : tensor<1x3x3xf32>
  %v = arith.constant dense<[[[0.6, 0.2],  [1.0, -0.6],  [-0.7, 0.2]]]> : tensor<1x3x2xf32>
  %wq = arith.constant dense<[[-0.9, -0.9, 0.0, -0.1], [0.8, 0.3, 0.0, -0.0], [-0.5, -1.0, -0.6, 0.4], [-0.6, -0.3, -1.0, 0.7]]> : tensor<4x4xf32>
  %wk = arith.constant dense<[[-0.7, -0.5], [0.8, 0.0], [0.7, 0.3]]> : tensor<3x2xf32>
  %wv = arith.constant dense<[[0.5, -0.8, 0.1], [0.0, 0.7, -0.3]]> : tensor<2x3xf32>
  %wo = arith.constant dense<[[0.2, -0.9, -0.2], [-0.4, -0.7, 0.6], [-0.2, 1.0, 0.2], [0.2, 0.3, 0.4], [-0.7, -0.1, -0.5], [-0.2, -0.8, 0.9]]> : tensor<6x3xf32>
  %bq = arith.constant dense<[-0.6, 0.3, -0.4, 0.7]> : tensor<4xf32>
  %bk = arith.constant dense<[0.3, -0.7]> : tensor<2xf32>
  %bv = arith.constant dense<[0.7, 0.9, 0.8]> : tensor<3xf32>
  %bo = arith.constant dense<[0.1, -0.7, -0.6]> : tensor<3xf32>
  %m = arith.constant dense<[[true, false, true], [true, true, true]]> : tensor<2x3xi1>
  %y = call @layer(%q, %k, %v, %wq, %wk, %wv, %wo, %bq, %bk, %bv, %bo, %m) : (tensor<1x2x4xf32>, tensor<1x3x3xf32>, tensor<1x3x2xf32>, tensor<4x4xf32>, tensor<3x2xf32>, tensor<2x3xf32>, tensor<6x3xf32>, tensor<4xf32>, tensor<2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2x3xi1>) -> tensor<1x2x3xf32>
  %u = tensor.cast %y : tensor<1x2x3xf32> to tensor<*xf32>
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}
