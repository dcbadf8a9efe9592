// RUN: mha-opt %s --split-input-file --verify-diagnostics --mha-attention-to-simt --canonicalize --cse | FileCheck %s

// The register kernel of a causal GQA attention (4 query heads on 2
// key/value heads, dk = 64, dv = 32, dynamic sequence lengths, f32):
// 64-row workgroups of 128 threads in 16 row groups of 8 lanes, each thread
// 4 rows x 4 keys of every 32-key block and 4 of the 32 output columns.
// The Q tile is staged once, K and V on every block between two barriers
// (rows padded by 16 bytes); S = Q Kᵀ in a loop over the head dim (64 FMAs
// a step of 4), the masks of causal blocks, row maxima over the group by
// xor shuffles 1, 2, 4, then P V: 7 steps of 4 shuffled probabilities per
// key and 512 FMAs in all, every value in the key loop's iter_args.

// CHECK-LABEL: func.func @gqa_causal
// scale * log2(e) = 0.5 * 1.4427
// CHECK-DAG: %[[FACTOR:.+]] = arith.constant 0.72134751 : f32
// CHECK-DAG: %[[SQ:.+]] = tensor.dim %arg0, %c2
// CHECK: %[[OUT:.+]] = memref.alloc(%[[SQ]]) : memref<2x4x?x32xf32>
// CHECK: scf.forall (%[[B:.+]], %[[H:.+]], %[[ROW:.+]]) = (0, 0, 0) to (2, 4, %[[SQ]]) step (1, 1, 64) {
// Causal: the query tiles in reverse, the longest first.
// CHECK: %[[LAST:.+]] = arith.addi %[[SQ]], %c-1
// CHECK: %[[TILES:.+]] = arith.divui %[[LAST]], %c64
// CHECK: %[[LASTROW:.+]] = arith.muli %[[TILES]], %c64
// CHECK: %[[FIRST:.+]] = arith.subi %[[LASTROW]], %[[ROW]]
// CHECK: %[[QT:.+]] = memref.alloc() : memref<64x68xf32, #gpu.address_space<workgroup>>
// CHECK: %[[KT:.+]] = memref.alloc() : memref<32x68xf32, #gpu.address_space<workgroup>>
// CHECK: %[[VT:.+]] = memref.alloc() : memref<32x36xf32, #gpu.address_space<workgroup>>
// CHECK: scf.forall (%[[T:.+]]) in (128) {
// CHECK: %[[GROUP:.+]] = arith.divui %[[T]], %c8
// CHECK: %[[LANE:.+]] = arith.remui %[[T]], %c8
// The key/value head of query head h: h / 2.
// CHECK: %[[KVH:.+]] = arith.divui %[[H]], %c2
// The Q tile: 64 x 64 elements, 32 steps of 128 threads, zero past Sq.
// CHECK: scf.for %{{.+}} = %c0 to %c32 step %c1 {
// CHECK: tensor.extract %arg0[%[[B]], %[[H]], %{{.+}}, %{{.+}}]
// CHECK: arith.select
// CHECK: memref.store %{{.+}}, %[[QT]]
// The state: 4 row maxima, 4 partial row sums, 16 accumulators.
// CHECK: %[[RES:.+]]:24 = scf.for %[[KB:.+]] = %c0 to %{{.+}} step %c32 iter_args(
// CHECK-NEXT: gpu.barrier
// CHECK: scf.for %{{.+}} = %c0 to %c16 step %c1 {
// CHECK: tensor.extract %arg1[%[[B]], %[[KVH]], %{{.+}}, %{{.+}}]
// CHECK: memref.store %{{.+}}, %[[KT]]
// CHECK: scf.for %{{.+}} = %c0 to %c8 step %c1 {
// CHECK: tensor.extract %arg2[%[[B]], %[[KVH]], %{{.+}}, %{{.+}}]
// CHECK: memref.store %{{.+}}, %[[VT]]
// CHECK: gpu.barrier
// CHECK: %[[S:.+]]:16 = scf.for %{{.+}} = %c0 to %c64 step %c4 iter_args(
// CHECK-COUNT-64: math.fma
// CHECK-NOT: math.fma
// CHECK: scf.yield
// The visibility only on the blocks that need it.
// CHECK: scf.if %{{.+}} -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) {
// CHECK: arith.select
// CHECK: } else {
// CHECK-NEXT: scf.yield %[[S]]#0,
// CHECK: arith.mulf %{{.+}}, %[[FACTOR]] : f32
// CHECK: gpu.shuffle  xor %{{.+}}, %c1_i32, %c32_i32 : f32
// CHECK: gpu.shuffle  xor %{{.+}}, %c2_i32, %c32_i32 : f32
// CHECK: gpu.shuffle  xor %{{.+}}, %c4_i32, %c32_i32 : f32
// CHECK: math.exp2
// P V: in step 0 the lane's own probabilities (4 keys x 4 columns x 4
// rows), then in each of 7 steps those of lane ^ step.
// CHECK: memref.load %[[VT]][%[[LANE]], %[[LANE]]]
// CHECK-COUNT-64: math.fma
// CHECK-NOT: math.fma
// CHECK: %[[PARTNER:.+]] = arith.xori %[[LANE]], %c1 : index
// CHECK: gpu.shuffle  xor %{{.+}}, %c1_i32, %c32_i32 : f32
// CHECK: memref.load %[[VT]][%[[PARTNER]], %[[LANE]]]
// CHECK-COUNT-448: math.fma
// CHECK-NOT: math.fma
// CHECK: scf.yield
// Row sums over the group, then the stores of rows in range.
// CHECK: gpu.shuffle  xor %[[RES]]#4, %c1_i32, %c32_i32 : f32
// CHECK: arith.divf
// CHECK: scf.if
// CHECK-COUNT-4: memref.store %{{.+}}, %[[OUT]][%[[B]], %[[H]], %{{.+}}, %{{.+}}] : memref<2x4x?x32xf32>
// CHECK: } {mapping = [#gpu.thread<x>], mha.lowering_config = #mha.lowering_config<threads = 128>}
// CHECK: %[[R:.+]] = bufferization.to_tensor %[[OUT]] restrict writable
// CHECK: return %[[R]]
// CHECK-NOT: mha.attention
module attributes {mha.target = #mha.target<kind = vulkan>} {
func.func @gqa_causal(%q: tensor<2x4x?x64xf32>, %k: tensor<2x2x?x64xf32>, %v: tensor<2x2x?x32xf32>, %init: tensor<2x4x?x32xf32>) -> tensor<2x4x?x32xf32> {
  %o = mha.attention ins(%q, %k, %v : tensor<2x4x?x64xf32>, tensor<2x2x?x64xf32>, tensor<2x2x?x32xf32>)
         outs(%init : tensor<2x4x?x32xf32>) {causal, scale = 0.5 : f32, mha.lowering_config = #mha.lowering_config<q_tile = 64, kv_tile = 32, thread_tile = [4, 4]>} -> tensor<2x4x?x32xf32>
  return %o : tensor<2x4x?x32xf32>
}
}

// -----

// f16 operands with transposed keys: the tiles hold f16, the arithmetic is
// f32 (extf on every read), the K tile is read along the keys of the
// source's rows, and the result is rounded back.
// CHECK-LABEL: func.func @f16_transposed
// CHECK: memref.alloc() : memref<16x72xf16, #gpu.address_space<workgroup>>
// CHECK: scf.forall (%{{.+}}) in (16) {
// CHECK: scf.for
// CHECK: tensor.extract %arg1[%{{.+}}, %{{.+}}, %[[COL:.+]], %[[ROW:.+]]] : tensor<1x1x64x40xf16>
// CHECK: arith.extf %{{.+}} : f16 to f32
// CHECK: arith.truncf %{{.+}} : f32 to f16
module attributes {mha.target = #mha.target<kind = cuda, chip = "sm_80">} {
func.func @f16_transposed(%q: tensor<1x1x16x64xf16>, %k: tensor<1x1x64x40xf16>, %v: tensor<1x1x40x64xf16>) -> tensor<1x1x16x64xf16> {
  %o = mha.attention ins(%q, %k, %v : tensor<1x1x16x64xf16>, tensor<1x1x64x40xf16>, tensor<1x1x40x64xf16>)
         outs(%q : tensor<1x1x16x64xf16>) {key_transposed, mha.lowering_config = #mha.lowering_config<q_tile = 16, kv_tile = 16, thread_tile = [4, 4]>} -> tensor<1x1x16x64xf16>
  return %o : tensor<1x1x16x64xf16>
}
}

// -----

// Without thread_tile in its configuration an op stays for the
// thread-per-row kernel.
// CHECK-LABEL: func.func @per_row
// CHECK: mha.attention
module attributes {mha.target = #mha.target<kind = vulkan>} {
func.func @per_row(%q: tensor<1x1x16x64xf32>) -> tensor<1x1x16x64xf32> {
  %o = mha.attention ins(%q, %q, %q : tensor<1x1x16x64xf32>, tensor<1x1x16x64xf32>, tensor<1x1x16x64xf32>)
         outs(%q : tensor<1x1x16x64xf32>) {mha.lowering_config = #mha.lowering_config<q_tile = 32, kv_tile = 32>} -> tensor<1x1x16x64xf32>
  return %o : tensor<1x1x16x64xf32>
}
}

// -----

// Configurations written by hand for ops the kernel cannot compute.
module attributes {mha.target = #mha.target<kind = vulkan>} {
func.func @bool_mask(%q: tensor<1x1x16x64xf32>, %m: tensor<16x16xi1>) -> tensor<1x1x16x64xf32> {
  // expected-error @below {{'mha.attention' op cannot run as the register kernel: it takes an additive (float) mask only, not an i1 one}}
  %o = mha.attention ins(%q, %q, %q : tensor<1x1x16x64xf32>, tensor<1x1x16x64xf32>, tensor<1x1x16x64xf32>) mask(%m : tensor<16x16xi1>)
         outs(%q : tensor<1x1x16x64xf32>) {mha.lowering_config = #mha.lowering_config<q_tile = 16, kv_tile = 16, thread_tile = [4, 4]>} -> tensor<1x1x16x64xf32>
  return %o : tensor<1x1x16x64xf32>
}
}

// -----

module attributes {mha.target = #mha.target<kind = vulkan>} {
func.func @lanes(%q: tensor<1x1x16x60xf32>) -> tensor<1x1x16x60xf32> {
  // expected-error @below {{needs a lowering_config whose q_tile and kv_tile are multiples of thread_tile's rows and keys, with kv_tile / keys a power of two dividing the value head dim, for the register kernel}}
  %o = mha.attention ins(%q, %q, %q : tensor<1x1x16x60xf32>, tensor<1x1x16x60xf32>, tensor<1x1x16x60xf32>)
         outs(%q : tensor<1x1x16x60xf32>) {mha.lowering_config = #mha.lowering_config<q_tile = 16, kv_tile = 32, thread_tile = [4, 4]>} -> tensor<1x1x16x60xf32>
  return %o : tensor<1x1x16x60xf32>
}
}

// -----

// kv_splits = 4 (flash-decoding): the grid's second dim runs over (head,
// chunk) pairs; a chunk folds its whole blocks of the key range, ceil(Sk /
// 4) rounded up to blocks (here 300 keys: 96), and stores its state: the
// unnormalized accumulators and, from the group's lane 0, each row's
// maximum and sum, all f32. A linalg.generic then merges the 4 chunks per
// element, weighting each by 2^(m_s - max) (0 for a chunk without keys).
// CHECK-LABEL: func.func @splits
// CHECK-DAG: %[[ACC:.+]] = memref.alloc() : memref<1x2x1x4x16xf32>
// CHECK-DAG: %[[MAX:.+]] = memref.alloc() : memref<1x2x1x4xf32>
// CHECK-DAG: %[[SUM:.+]] = memref.alloc() : memref<1x2x1x4xf32>
// CHECK: scf.forall (%[[B:.+]], %[[HS:.+]], %{{.+}}) in (1, 8, 1) {
// CHECK-DAG: %[[SPLIT:.+]] = arith.remui %[[HS]], %c4
// CHECK-DAG: %[[H:.+]] = arith.divui %[[HS]], %c4
// CHECK: %[[START:.+]] = arith.muli %[[SPLIT]], %c96
// CHECK: %[[END0:.+]] = arith.addi %[[START]], %c96
// CHECK: %[[END:.+]] = arith.minsi %[[END0]], %c300
// CHECK: scf.for %{{.+}} = %[[START]] to %[[END]] step %c32
// CHECK: scf.if
// CHECK: memref.store %{{.+}}, %[[MAX]][%c0, %[[H]], %{{.+}}, %[[SPLIT]]]
// CHECK: memref.store %{{.+}}, %[[SUM]][%c0, %[[H]], %{{.+}}, %[[SPLIT]]]
// CHECK: memref.store %{{.+}}, %[[ACC]][%c0, %[[H]], %{{.+}}, %[[SPLIT]], %{{.+}}]
// CHECK: %[[ACCT:.+]] = bufferization.to_tensor %[[ACC]]
// CHECK: %[[MAXT:.+]] = bufferization.to_tensor %[[MAX]]
// CHECK: %[[SUMT:.+]] = bufferization.to_tensor %[[SUM]]
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x2x1x16xf32>)
// CHECK-COUNT-4: tensor.extract %[[MAXT]]
// CHECK-COUNT-4: math.exp2
// CHECK-NOT: math.exp2
// CHECK: linalg.yield
module attributes {mha.target = #mha.target<kind = vulkan>} {
func.func @splits(%q: tensor<1x2x1x16xf32>, %k: tensor<1x2x300x16xf32>) -> tensor<1x2x1x16xf32> {
  %o = mha.attention ins(%q, %k, %k : tensor<1x2x1x16xf32>, tensor<1x2x300x16xf32>, tensor<1x2x300x16xf32>)
         outs(%q : tensor<1x2x1x16xf32>) {mha.lowering_config = #mha.lowering_config<q_tile = 1, kv_tile = 32, kv_splits = 4, thread_tile = [1, 4]>} -> tensor<1x2x1x16xf32>
  return %o : tensor<1x2x1x16xf32>
}
}

// -----

module attributes {mha.target = #mha.target<kind = vulkan>} {
func.func @head_tile_rows(%q: tensor<1x4x3x16xf32>, %k: tensor<1x2x16x16xf32>) -> tensor<1x4x3x16xf32> {
  // expected-error @below {{'mha.attention' op cannot run as the register kernel: its head_tile = 2 needs a static query length, a divisor of the 2 query heads per key/value head, and head_tile * Sq at most q_tile (4)}}
  %o = mha.attention ins(%q, %k, %k : tensor<1x4x3x16xf32>, tensor<1x2x16x16xf32>, tensor<1x2x16x16xf32>)
         outs(%q : tensor<1x4x3x16xf32>) {mha.lowering_config = #mha.lowering_config<q_tile = 4, kv_tile = 16, head_tile = 2, thread_tile = [4, 4]>} -> tensor<1x4x3x16xf32>
  return %o : tensor<1x4x3x16xf32>
}
}
