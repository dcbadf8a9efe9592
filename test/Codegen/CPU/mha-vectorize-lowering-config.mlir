// RUN: mha-opt %s --mha-vectorize --canonicalize --cse | FileCheck %s
// RUN: mha-opt %s --mha-vectorize="register-tile-rows=8" --canonicalize --cse | FileCheck %s --check-prefix=GIVEN

// The register tile from the function's mha.lowering_config (4x16, where
// the default vector width would give 8x32); a given option overrides its
// field only.
// CHECK-LABEL: func.func @matmul
// CHECK: scf.for {{.*}} = %c0 to %c64 step %c4
// CHECK: scf.for {{.*}} = %c0 to %c64 step %c16
// CHECK: vector<4x16xf32>
// GIVEN: scf.for {{.*}} = %c0 to %c64 step %c8
// GIVEN: scf.for {{.*}} = %c0 to %c64 step %c16
// GIVEN: vector<8x16xf32>
func.func @matmul(%a: tensor<64x128xf32>, %b: tensor<128x64xf32>, %c: tensor<64x64xf32>) -> tensor<64x64xf32>
    attributes {mha.lowering_config = #mha.lowering_config<register_tile = [4, 16]>} {
  %r = linalg.matmul ins(%a, %b : tensor<64x128xf32>, tensor<128x64xf32>) outs(%c : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %r : tensor<64x64xf32>
}

// The target's vector width, where the function has no configuration: 256
// bits give 4x16.
// CHECK-LABEL: func.func @avx2
// CHECK: vector<4x16xf32>
module attributes {mha.target = #mha.target<kind = cpu, vector_bits = 256>} {
  func.func @avx2(%a: tensor<64x128xf32>, %b: tensor<128x64xf32>, %c: tensor<64x64xf32>) -> tensor<64x64xf32> {
    %r = linalg.matmul ins(%a, %b : tensor<64x128xf32>, tensor<128x64xf32>) outs(%c : tensor<64x64xf32>) -> tensor<64x64xf32>
    return %r : tensor<64x64xf32>
  }
}
