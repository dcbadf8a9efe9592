// RUN: mha-opt %s --mha-fuse-layer --canonicalize | FileCheck %s
// RUN: mha-opt %s --mha-fuse-layer="q-tile-size=64" --canonicalize | FileCheck %s --check-prefix=GIVEN

// The query tile from the layer's mha.lowering_config (a function's config
// applies to the ops in it), the key tile from the op's own; a given option
// overrides.
// CHECK: scf.forall ({{.*}}) = (0, 0) to (2, 256) step (1, 32)
// CHECK: scf.for {{.*}} step %c16
// GIVEN: scf.forall ({{.*}}) = (0, 0) to (2, 256) step (1, 64)
func.func @layer(%x: tensor<2x256x64xf32>, %w: tensor<64x64xf32>) -> tensor<2x256x64xf32>
    attributes {mha.lowering_config = #mha.lowering_config<q_tile = 32>} {
  %y = mha.multi_head_attention %x, %x, %x, %w, %w, %w, %w
    {num_heads = 4 : i64, mha.lowering_config = #mha.lowering_config<kv_tile = 16>}
    : (tensor<2x256x64xf32>, tensor<2x256x64xf32>, tensor<2x256x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<2x256x64xf32>
  return %y : tensor<2x256x64xf32>
}
