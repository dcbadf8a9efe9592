// RUN: mha-opt %s --allow-unregistered-dialect --mha-drop-lowering-config | FileCheck %s
// RUN: mha-opt %s --allow-unregistered-dialect --mha-drop-lowering-config=weights=true | FileCheck %s --check-prefix=WEIGHTS

// Both attributes go, wherever they are; nothing else changes (the
// arguments' mha.weight marks only with `weights`, as the GPU pipelines
// run it).
// CHECK: module {
// CHECK: func.func @f(%{{.*}}: memref<4xf32> {mha.weight}, %{{.*}}: memref<4xf32> {mha.weight, test.keep}) {
// WEIGHTS: func.func @f(%{{.*}}: memref<4xf32>, %{{.*}}: memref<4xf32> {test.keep}) {
// WEIGHTS-NEXT: "test.op"() {keep} : () -> ()
// CHECK-NEXT: "test.op"() {keep} : () -> ()
module attributes {mha.target = #mha.target<kind = cpu, vector_bits = 512>} {
  func.func @f(%w: memref<4xf32> {mha.weight}, %x: memref<4xf32> {mha.weight, test.keep}) attributes {mha.lowering_config = #mha.lowering_config<chunk = 64>} {
    "test.op"() {keep, mha.lowering_config = #mha.lowering_config<q_tile = 64>} : () -> ()
    return
  }
}
