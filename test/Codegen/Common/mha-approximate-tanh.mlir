// RUN: mha-opt %s --mha-approximate-tanh | FileCheck %s

// f32 tanh, scalar or vector (a softcap on a row of scores), becomes
// arithmetic; other element types keep their math.tanh.
// CHECK-LABEL: func.func @tanh
// CHECK-NOT: math.tanh {{.*}} : vector<16xf32>
// CHECK-NOT: math.tanh {{.*}} : f32
// CHECK: arith.divf
// CHECK: math.tanh {{.*}} : f64
func.func @tanh(%v: vector<16xf32>, %s: f32, %d: f64) -> (vector<16xf32>, f32, f64) {
  %0 = math.tanh %v : vector<16xf32>
  %1 = math.tanh %s : f32
  %2 = math.tanh %d : f64
  return %0, %1, %2 : vector<16xf32>, f32, f64
}
