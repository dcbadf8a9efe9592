// RUN: mha-opt %s --mha-tile-attention --canonicalize | FileCheck %s
// RUN: mha-opt %s --mha-tile-attention="q-tile-size=32" --canonicalize | FileCheck %s --check-prefix=GIVEN

// Tile sizes from the op's mha.lowering_config: 16 queries, 8 keys per
// step; a given option overrides its field only.
// CHECK: scf.forall ({{.*}}) = (0, 0) to (2, 100) step (1, 16)
// CHECK: scf.for {{.*}} step %c8
// GIVEN: scf.forall ({{.*}}) = (0, 0) to (2, 100) step (1, 32)
// GIVEN: scf.for {{.*}} step %c8
func.func @attention(%q: tensor<1x2x100x16xf32>, %init: tensor<1x2x100x16xf32>) -> tensor<1x2x100x16xf32> {
  %o = mha.attention ins(%q, %q, %q : tensor<1x2x100x16xf32>, tensor<1x2x100x16xf32>, tensor<1x2x100x16xf32>) outs(%init : tensor<1x2x100x16xf32>)
    {mha.lowering_config = #mha.lowering_config<q_tile = 16, kv_tile = 8>} -> tensor<1x2x100x16xf32>
  return %o : tensor<1x2x100x16xf32>
}
