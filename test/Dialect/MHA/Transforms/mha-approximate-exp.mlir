// RUN: mha-opt %s --mha-approximate-exp | FileCheck %s

// f32 exp becomes upstream's polynomial approximation: arithmetic only (a
// range clamp, a degree-6 polynomial, the exponent built from bits), no libm
// call. Inputs below the clamp, -inf included, give exactly 0 (the exponent
// bits are 0), which the softmax of masked keys relies on.

// CHECK-LABEL: func.func @exp
// CHECK-NOT: math.exp
// CHECK: arith.constant -8.780000e+01 : f32
// CHECK: math.fma
// CHECK: arith.bitcast %{{.*}} : i32 to f32
// CHECK-NOT: math.exp
func.func @exp(%x: f32) -> f32 {
  %y = math.exp %x : f32
  return %y : f32
}
