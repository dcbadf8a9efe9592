// RUN: mha-opt %s --allow-unregistered-dialect --mha-drop-lowering-config | FileCheck %s

// Both attributes go, wherever they are; nothing else changes.
// CHECK: module {
// CHECK: func.func @f() {
// CHECK-NEXT: "test.op"() {keep} : () -> ()
module attributes {mha.target = #mha.target<kind = cpu, vector_bits = 512>} {
  func.func @f() attributes {mha.lowering_config = #mha.lowering_config<chunk = 64>} {
    "test.op"() {keep, mha.lowering_config = #mha.lowering_config<q_tile = 64>} : () -> ()
    return
  }
}
