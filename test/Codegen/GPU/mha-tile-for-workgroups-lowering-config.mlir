// RUN: mha-opt %s --verify-diagnostics --mha-tile-for-workgroups="depth=0" --canonicalize | FileCheck %s

// Workgroup tiles from the function's mha.lowering_config: 16 rows by up to
// 32 columns.
// CHECK-LABEL: func.func @matmul
// CHECK: scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (64, 64) step (16, 32)
func.func @matmul(%a: tensor<64x128xf32>, %b: tensor<128x64xf32>, %c: tensor<64x64xf32>) -> tensor<64x64xf32>
    attributes {mha.lowering_config = #mha.lowering_config<workgroup_tile = [16, 32], threads = 16>} {
  %r = linalg.matmul ins(%a, %b : tensor<64x128xf32>, tensor<128x64xf32>) outs(%c : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %r : tensor<64x64xf32>
}
