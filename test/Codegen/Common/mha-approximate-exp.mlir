// RUN: mha-opt %s --split-input-file --mha-approximate-exp | FileCheck %s

// f32 exp becomes arithmetic, no libm call: x clamped to [-87.5, 88.8] by
// compare-and-select (NaN passes), n = roundeven(x · log2 e), r = x - n·ln 2
// in two FMAs, a degree-5 polynomial in r (5 FMAs), 2^(n - 1) from exponent
// bits, one multiply. Below the clamp, -inf included, the exponent bits are
// 0 and the result exactly 0, which the softmax of masked keys relies on.
// The accuracy is checked against numpy by
// test/Integration/CPU/exp-approximation.test.

// CHECK-LABEL: func.func @exp
// CHECK-NOT: math.exp
// CHECK-DAG: %[[LO:.+]] = arith.constant -8.750000e+01 : f32
// CHECK-DAG: %[[HI:.+]] = arith.constant 8.880000e+01 : f32
// CHECK: %[[BELOW:.+]] = arith.cmpf olt, %{{.*}}, %[[LO]] : f32
// CHECK: %[[X0:.+]] = arith.select %[[BELOW]], %[[LO]], %{{.*}} : f32
// CHECK: %[[ABOVE:.+]] = arith.cmpf ogt, %[[X0]], %[[HI]] : f32
// CHECK: %[[X:.+]] = arith.select %[[ABOVE]], %[[HI]], %[[X0]] : f32
// CHECK: %[[T:.+]] = arith.mulf %[[X]], %{{.*}} : f32
// CHECK: %[[N:.+]] = math.roundeven %[[T]] : f32
// CHECK-COUNT-7: math.fma
// CHECK: %[[NI:.+]] = arith.fptosi %[[N]] : f32 to i32
// CHECK: %[[E:.+]] = arith.addi %[[NI]], %{{.*}} : i32
// CHECK: %[[BITS:.+]] = arith.shli %[[E]], %{{.*}} : i32
// CHECK: %[[SCALE:.+]] = arith.bitcast %[[BITS]] : i32 to f32
// CHECK: arith.mulf %{{.*}}, %[[SCALE]] : f32
// CHECK-NOT: math.exp
func.func @exp(%x: f32) -> f32 {
  %y = math.exp %x : f32
  return %y : f32
}

// -----

// Vectors: the same ops on whole vectors, splat constants.

// CHECK-LABEL: func.func @exp_vector
// CHECK-NOT: math.exp
// CHECK: arith.constant dense<-8.750000e+01> : vector<16xf32>
// CHECK: math.roundeven %{{.*}} : vector<16xf32>
// CHECK: arith.fptosi %{{.*}} : vector<16xf32> to vector<16xi32>
// CHECK: arith.bitcast %{{.*}} : vector<16xi32> to vector<16xf32>
// CHECK-NOT: math.exp
func.func @exp_vector(%x: vector<16xf32>) -> vector<16xf32> {
  %y = math.exp %x : vector<16xf32>
  return %y : vector<16xf32>
}

// -----

// Other element types are left as they are (an f64 exp stays, for the libm
// call).

// CHECK-LABEL: func.func @exp_f64
// CHECK: math.exp %{{.*}} : f64
func.func @exp_f64(%x: f64) -> f64 {
  %y = math.exp %x : f64
  return %y : f64
}
