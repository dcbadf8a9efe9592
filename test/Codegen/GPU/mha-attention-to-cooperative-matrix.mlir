// RUN: mha-opt %s --split-input-file --verify-diagnostics --mha-attention-to-cooperative-matrix --canonicalize --cse | FileCheck %s

// The cooperative-matrix kernel of a causal GQA attention (4 query heads on 2
// key/value heads, dk = 32, dv = 16, f16): 32-row workgroups of 2 subgroups
// of 32, 32-key blocks. The tiles in workgroup memory, rows padded by 16
// bytes: Q, K, V and P (f16), the scores and the row factors (f32). Each
// subgroup loads its Q matrices once (dk / 16 = 2) and carries its
// accumulator matrix (dv / 16 = 1) through the key loop with the row's
// maximum and the lane's part of its sum; per block S = Q Kᵀ (K read
// column-major: 2 x 2 products) into the score tile, the row steps on 16
// scores a lane (2 lanes a row, a shuffle xor 1), P and the factors back as
// matrices: acc .* factors, then P V (2 products).

// CHECK-LABEL: func.func @gqa_causal
// CHECK: scf.forall (%[[B:.+]], %[[H:.+]], %[[ROW:.+]]) = (0, 0, 0) to (2, 4, 100) step (1, 1, 32) {
// CHECK: %[[QT:.+]] = memref.alloc() : memref<32x40xf16, #gpu.address_space<workgroup>>
// CHECK: %[[KT:.+]] = memref.alloc() : memref<32x40xf16, #gpu.address_space<workgroup>>
// CHECK: %[[VT:.+]] = memref.alloc() : memref<32x24xf16, #gpu.address_space<workgroup>>
// CHECK: %[[PT:.+]] = memref.alloc() : memref<32x40xf16, #gpu.address_space<workgroup>>
// CHECK: %[[ST:.+]] = memref.alloc() : memref<32x36xf32, #gpu.address_space<workgroup>>
// CHECK: %[[FT:.+]] = memref.alloc() : memref<32x20xf32, #gpu.address_space<workgroup>>
// CHECK: scf.forall (%{{.+}}) in (64) {
// CHECK: %[[SG:.+]] = gpu.subgroup_id : index
// CHECK: %[[LANE:.+]] = gpu.lane_id
// CHECK: %[[SGROW:.+]] = arith.muli %[[SG]], %c16
// CHECK: memref.store %{{.+}}, %[[QT]]
// CHECK: gpu.barrier
// CHECK: %[[Q0:.+]] = gpu.subgroup_mma_load_matrix %[[QT]][%[[SGROW]], %c0] {leadDimension = 40 : index} : memref<32x40xf16, #gpu.address_space<workgroup>> -> !gpu.mma_matrix<16x16xf16, "AOp">
// CHECK: %[[Q1:.+]] = gpu.subgroup_mma_load_matrix %[[QT]][%[[SGROW]], %c16]
// CHECK: %[[ZERO:.+]] = gpu.subgroup_mma_constant_matrix %{{.+}} : !gpu.mma_matrix<16x16xf32, "COp">
// CHECK: %[[RES:.+]]:3 = scf.for %[[KB:.+]] = %c0 to %{{.+}} step %c32 iter_args(%{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}, %[[ACC:.+]] = %[[ZERO]]) -> (f32, f32, !gpu.mma_matrix<16x16xf32, "COp">) {
// CHECK-NEXT: gpu.barrier
// CHECK: memref.store %{{.+}}, %[[KT]]
// CHECK: memref.store %{{.+}}, %[[VT]]
// CHECK: gpu.barrier
// CHECK: %[[K00:.+]] = gpu.subgroup_mma_load_matrix %[[KT]][%c0, %c0] {leadDimension = 40 : index, transpose}
// CHECK: %[[S0:.+]] = gpu.subgroup_mma_compute %[[Q0]], %[[K00]], %[[ZERO]]
// CHECK: %[[S1:.+]] = gpu.subgroup_mma_compute %[[Q1]], %{{.+}}, %[[S0]]
// CHECK: gpu.subgroup_mma_store_matrix %[[S1]], %[[ST]][%[[SGROW]], %c0] {leadDimension = 36 : index}
// CHECK-COUNT-2: gpu.subgroup_mma_compute
// CHECK: gpu.subgroup_mma_store_matrix %{{.+}}, %[[ST]][%[[SGROW]], %c16]
// CHECK-NEXT: gpu.barrier
// CHECK-COUNT-16: memref.load %[[ST]]
// The visibility only on the blocks that need it (causal).
// CHECK: scf.if %{{.+}} -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) {
// CHECK: gpu.shuffle  xor %{{.+}}, %c1_i32, %c32_i32 : f32
// CHECK-COUNT-16: memref.store %{{.+}}, %[[PT]]
// CHECK-COUNT-8: memref.store %{{.+}}, %[[FT]]
// CHECK-NEXT: gpu.barrier
// CHECK: %[[ALPHA:.+]] = gpu.subgroup_mma_load_matrix %[[FT]][%[[SGROW]], %c0] {leadDimension = 20 : index} : memref<32x20xf32, #gpu.address_space<workgroup>> -> !gpu.mma_matrix<16x16xf32, "COp">
// CHECK: %[[SCALED:.+]] = gpu.subgroup_mma_elementwise  mulf %[[ACC]], %[[ALPHA]]
// CHECK: %[[P0:.+]] = gpu.subgroup_mma_load_matrix %[[PT]][%[[SGROW]], %c0] {leadDimension = 40 : index} : memref<32x40xf16, #gpu.address_space<workgroup>> -> !gpu.mma_matrix<16x16xf16, "AOp">
// CHECK: %[[V0:.+]] = gpu.subgroup_mma_load_matrix %[[VT]][%c0, %c0] {leadDimension = 24 : index} : memref<32x24xf16, #gpu.address_space<workgroup>> -> !gpu.mma_matrix<16x16xf16, "BOp">
// CHECK: %[[PV0:.+]] = gpu.subgroup_mma_compute %[[P0]], %[[V0]], %[[SCALED]]
// CHECK: %[[PV1:.+]] = gpu.subgroup_mma_compute %{{.+}}, %{{.+}}, %[[PV0]]
// CHECK: scf.yield %{{.+}}, %{{.+}}, %[[PV1]] : f32, f32, !gpu.mma_matrix<16x16xf32, "COp">
// The row sums over the row's lanes, 1 / l as a matrix, the output through
// the score tile into the rows in range.
// CHECK: gpu.shuffle  xor %[[RES]]#1, %c1_i32, %c32_i32 : f32
// CHECK: gpu.barrier
// CHECK-COUNT-8: memref.store %{{.+}}, %[[FT]]
// CHECK-NEXT: gpu.barrier
// CHECK: %[[INV:.+]] = gpu.subgroup_mma_load_matrix %[[FT]]
// CHECK: %[[OUT:.+]] = gpu.subgroup_mma_elementwise  mulf %[[RES]]#2, %[[INV]]
// CHECK: gpu.subgroup_mma_store_matrix %[[OUT]], %[[ST]][%[[SGROW]], %c0]
// CHECK-NEXT: gpu.barrier
// CHECK: scf.if
// CHECK-COUNT-8: memref.store %{{.+}} : memref<2x4x100x16xf16>
// CHECK: gpu.barrier
module attributes {mha.target = #mha.target<kind = vulkan, features = "+cooperative_matrix", subgroup_size = 32>} {
func.func @gqa_causal(%q: tensor<2x4x100x32xf16>, %k: tensor<2x2x120x32xf16>, %v: tensor<2x2x120x16xf16>) -> tensor<2x4x100x16xf16> {
  %init = tensor.empty() : tensor<2x4x100x16xf16>
  %o = mha.attention ins(%q, %k, %v : tensor<2x4x100x32xf16>, tensor<2x2x120x32xf16>, tensor<2x2x120x16xf16>)
         outs(%init : tensor<2x4x100x16xf16>) {causal, scale = 0.5 : f32, mha.lowering_config = #mha.lowering_config<q_tile = 32, kv_tile = 32, mma = [16, 16, 16], warps = 2>} -> tensor<2x4x100x16xf16>
  return %o : tensor<2x4x100x16xf16>
}
}

// -----

// Keys split in 2 chunks (flash-decoding): each chunk stores its
// unnormalized accumulators (f32) and its rows' maxima and sums; a
// linalg.generic merges them.
// CHECK-LABEL: func.func @splits
// CHECK: memref.alloc() : memref<1x2x1x2x32xf32>
// CHECK-NOT: subgroup_mma_elementwise  mulf %{{.+}}#
// CHECK: memref.store %{{.+}} : memref<1x2x1x2x32xf32>
// CHECK: linalg.generic
module attributes {mha.target = #mha.target<kind = vulkan, features = "+cooperative_matrix", subgroup_size = 32>} {
func.func @splits(%q: tensor<1x2x1x16xf16>, %k: tensor<1x2x256x16xf16>, %v: tensor<1x2x256x32xf16>) -> tensor<1x2x1x32xf16> {
  %init = tensor.empty() : tensor<1x2x1x32xf16>
  %o = mha.attention ins(%q, %k, %v : tensor<1x2x1x16xf16>, tensor<1x2x256x16xf16>, tensor<1x2x256x32xf16>)
         outs(%init : tensor<1x2x1x32xf16>) {mha.lowering_config = #mha.lowering_config<q_tile = 16, kv_tile = 32, mma = [16, 16, 16], warps = 1, kv_splits = 2>} -> tensor<1x2x1x32xf16>
  return %o : tensor<1x2x1x32xf16>
}
}

// -----

// Configurations written by hand for ops the kernel cannot compute, or that
// it cannot divide.
module attributes {mha.target = #mha.target<kind = vulkan, subgroup_size = 32>} {
func.func @no_feature(%q: tensor<1x1x16x64xf16>) -> tensor<1x1x16x64xf16> {
  // expected-error @below {{'mha.attention' op cannot run as the cooperative-matrix kernel: it needs a vulkan target with cooperative matrices (features = "+cooperative_matrix")}}
  %o = mha.attention ins(%q, %q, %q : tensor<1x1x16x64xf16>, tensor<1x1x16x64xf16>, tensor<1x1x16x64xf16>)
         outs(%q : tensor<1x1x16x64xf16>) {mha.lowering_config = #mha.lowering_config<q_tile = 16, kv_tile = 16, mma = [16, 16, 16], warps = 1>} -> tensor<1x1x16x64xf16>
  return %o : tensor<1x1x16x64xf16>
}
}

// -----

module attributes {mha.target = #mha.target<kind = vulkan, features = "+cooperative_matrix", subgroup_size = 32>} {
func.func @rows(%q: tensor<1x1x16x64xf16>) -> tensor<1x1x16x64xf16> {
  // expected-error @below {{needs a lowering_config with warps (subgroups), q_tile = 16 * warps and a kv_tile that is a multiple of 16, for the cooperative-matrix kernel}}
  %o = mha.attention ins(%q, %q, %q : tensor<1x1x16x64xf16>, tensor<1x1x16x64xf16>, tensor<1x1x16x64xf16>)
         outs(%q : tensor<1x1x16x64xf16>) {mha.lowering_config = #mha.lowering_config<q_tile = 32, kv_tile = 16, mma = [16, 16, 16], warps = 1>} -> tensor<1x1x16x64xf16>
  return %o : tensor<1x1x16x64xf16>
}
}

// -----

// The tensor-core kernel's shapes are not this pass's.
// CHECK-LABEL: func.func @tensor_core_shape
// CHECK: mha.attention
module attributes {mha.target = #mha.target<kind = cuda, chip = "sm_80">} {
func.func @tensor_core_shape(%q: tensor<1x1x16x64xf16>) -> tensor<1x1x16x64xf16> {
  %o = mha.attention ins(%q, %q, %q : tensor<1x1x16x64xf16>, tensor<1x1x16x64xf16>, tensor<1x1x16x64xf16>)
         outs(%q : tensor<1x1x16x64xf16>) {mha.lowering_config = #mha.lowering_config<q_tile = 16, kv_tile = 16, mma = [16, 8, 16], warps = 1>} -> tensor<1x1x16x64xf16>
  return %o : tensor<1x1x16x64xf16>
}
}

// -----

module attributes {mha.target = #mha.target<kind = vulkan, features = "+cooperative_matrix", subgroup_size = 32>} {
func.func @head_tile_rows(%q: tensor<1x4x9x16xf16>, %k: tensor<1x2x16x16xf16>) -> tensor<1x4x9x16xf16> {
  // expected-error @below {{'mha.attention' op cannot run as the cooperative-matrix kernel: its head_tile = 2 needs a static query length, a divisor of the 2 query heads per key/value head, and head_tile * Sq at most q_tile (16)}}
  %o = mha.attention ins(%q, %k, %k : tensor<1x4x9x16xf16>, tensor<1x2x16x16xf16>, tensor<1x2x16x16xf16>)
         outs(%q : tensor<1x4x9x16xf16>) {mha.lowering_config = #mha.lowering_config<q_tile = 16, kv_tile = 16, mma = [16, 16, 16], warps = 1, head_tile = 2>} -> tensor<1x4x9x16xf16>
  return %o : tensor<1x4x9x16xf16>
}
}
