// RUN: mha-opt %s --split-input-file --verify-diagnostics --mha-attention-to-mma --canonicalize --cse | FileCheck %s
// RUN: mha-opt %s --split-input-file --verify-diagnostics --mha-attention-to-mma --canonicalize --cse | FileCheck %s --check-prefix=TF32
// RUN: mha-opt %s --split-input-file --verify-diagnostics --mha-attention-to-mma --canonicalize --cse | FileCheck %s --check-prefix=ROUND

// The tensor-core kernel of a causal GQA attention (4 query heads on 2
// key/value heads, dk = 64, dv = 32, dynamic sequence lengths), 4 warps of
// 16 rows, 64-key blocks. K and V go through one shared tile each (rows
// padded by 8 elements), copied by all threads with cp.async (16 bytes each,
// zero-filled past the last key) in FlashAttention-2's order: K_0 before
// the loop; in block j, wait for K_j, barrier, start V_j, S_j = Q K_jᵀ,
// wait for V_j, barrier, start K_{j+1}, softmax and P V_j. Per warp: 8
// score tiles of 4 k16 steps (32 mma.sync, K operands by 16 x4 ldmatrix),
// then 4 k16 steps of P over 4 output tiles (16 mma.sync, V operands by 8
// transposing x4 ldmatrix).

// CHECK-LABEL: func.func @gqa_causal
// CHECK-DAG: %[[Q:.+]] = bufferization.to_buffer %arg0 read_only : tensor<2x4x?x64xf16> to memref<2x4x?x64xf16>
// CHECK-DAG: %[[K:.+]] = bufferization.to_buffer %arg1 read_only : tensor<2x2x?x64xf16> to memref<2x2x?x64xf16>
// CHECK-DAG: %[[V:.+]] = bufferization.to_buffer %arg2 read_only : tensor<2x2x?x32xf16> to memref<2x2x?x32xf16>
// CHECK-DAG: %[[SQ:.+]] = tensor.dim %arg0, %c2
// CHECK: %[[OUT:.+]] = memref.alloc(%[[SQ]]) : memref<2x4x?x32xf16>
// CHECK: scf.forall (%[[B:.+]], %[[H:.+]], %[[ROW:.+]]) = (0, 0, 0) to (2, 4, %[[SQ]]) step (1, 1, 64) {
// Causal: the query tiles in reverse, the longest first.
// CHECK: %[[LAST:.+]] = arith.addi %[[SQ]], %c-1
// CHECK: %[[TILES:.+]] = arith.divui %[[LAST]], %c64
// CHECK: %[[LASTROW:.+]] = arith.muli %[[TILES]], %c64
// CHECK: %{{.+}} = arith.subi %[[LASTROW]], %[[ROW]]
// CHECK: %[[KT:.+]] = memref.alloc() : memref<64x72xf16, #gpu.address_space<workgroup>>
// CHECK: %[[VT:.+]] = memref.alloc() : memref<64x40xf16, #gpu.address_space<workgroup>>
// CHECK: scf.forall (%[[T:.+]]) in (128) {
// The key/value head of query head h: h / 2.
// CHECK: %[[KVH:.+]] = arith.divui %[[H]], %c2
// Q fragments, once: 4 k16 steps of 4 pairs each.
// CHECK-COUNT-16: vector.load %[[Q]]{{.*}} {alignment = 4 : i64} : memref<2x4x?x64xf16>, vector<2xf16>
// K_0: 64 x 64 keys in 4 steps of 128 threads.
// CHECK-COUNT-4: nvgpu.device_async_copy %[[K]][%[[B]], %[[KVH]], %{{.+}}, %{{.+}}], %[[KT]][%{{.+}}, %{{.+}}], 8, %{{.+}} {bypassL1}
// CHECK-NEXT: %[[K0:.+]] = nvgpu.device_async_create_group
// The state: row max, the thread's part of the row sum, 4 accumulators, K's copy.
// CHECK: %[[RES:.+]]:7 = scf.for %[[KB:.+]] = %c0 to %{{.+}} step %c64 iter_args({{.*}}, %[[KC:.+]] = %[[K0]]) -> (vector<2xf32>, vector<2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, !nvgpu.device.async.token) {
// CHECK-NEXT: nvgpu.device_async_wait %[[KC]] {numGroups = 0 : i32}
// CHECK-NEXT: gpu.barrier
// CHECK-COUNT-2: nvgpu.device_async_copy %[[V]][%[[B]], %[[KVH]], %{{.+}}, %{{.+}}], %[[VT]]
// CHECK-NEXT: %[[VC:.+]] = nvgpu.device_async_create_group
// CHECK: nvgpu.ldmatrix %[[KT]][%{{.+}}, %{{.+}}] {numTiles = 4 : i32, transpose = false} : memref<64x72xf16, #gpu.address_space<workgroup>> -> vector<4x2xf16>
// CHECK-COUNT-32: nvgpu.mma.sync({{.*}}) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
// CHECK: nvgpu.device_async_wait %[[VC]] {numGroups = 0 : i32}
// CHECK-NEXT: gpu.barrier
// CHECK-COUNT-4: nvgpu.device_async_copy %[[K]]
// CHECK-NEXT: %[[NEXTK:.+]] = nvgpu.device_async_create_group
// The mask only on the blocks that need it.
// CHECK: scf.if %{{.+}} -> (vector<8x2x2xf32>) {
// CHECK: arith.select
// CHECK: } else {
// CHECK: }
// scale * log2(e) = 0.5 * 1.4427
// CHECK: arith.mulf %{{.+}}, %cst{{.*}} : vector<8x2x2xf32>
// CHECK: gpu.shuffle  xor %{{.+}}, %c1_i32, %c32_i32 : f32
// CHECK: gpu.shuffle  xor %{{.+}}, %c2_i32, %c32_i32 : f32
// CHECK: math.exp2
// CHECK: arith.truncf %{{.+}} : vector<8x2x2xf32> to vector<8x2x2xf16>
// CHECK: nvgpu.ldmatrix %[[VT]][%{{.+}}, %{{.+}}] {numTiles = 4 : i32, transpose = true}
// CHECK-COUNT-16: nvgpu.mma.sync
// CHECK-NOT: nvgpu.mma.sync
// CHECK: scf.yield {{.*}}, %[[NEXTK]] : vector<2xf32>, vector<2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, !nvgpu.device.async.token
// CHECK: nvgpu.device_async_wait %[[RES]]#6
// Row sums over the quad, then the stores of rows in range.
// CHECK: gpu.shuffle  xor
// CHECK: arith.divf
// CHECK: scf.if
// CHECK-COUNT-4: vector.store %{{.+}}, %[[OUT]][%[[B]], %[[H]], %{{.+}}, %{{.+}}] {alignment = 4 : i64} : memref<2x4x?x32xf16>, vector<2xf16>
// CHECK: } {mapping = [#gpu.thread<x>], mha.lowering_config = #mha.lowering_config<threads = 128>}
// CHECK: %[[R:.+]] = bufferization.to_tensor %[[OUT]] restrict writable
// CHECK: return %[[R]]
// CHECK-NOT: mha.attention
module attributes {mha.target = #mha.target<kind = cuda, chip = "sm_80">} {
func.func @gqa_causal(%q: tensor<2x4x?x64xf16>, %k: tensor<2x2x?x64xf16>, %v: tensor<2x2x?x32xf16>, %init: tensor<2x4x?x32xf16>) -> tensor<2x4x?x32xf16> {
  %o = mha.attention ins(%q, %k, %v : tensor<2x4x?x64xf16>, tensor<2x2x?x64xf16>, tensor<2x2x?x32xf16>)
         outs(%init : tensor<2x4x?x32xf16>) {causal, scale = 0.5 : f32, mha.lowering_config = #mha.lowering_config<q_tile = 64, kv_tile = 64, mma = [16, 8, 16], warps = 4>} -> tensor<2x4x?x32xf16>
  return %o : tensor<2x4x?x32xf16>
}
}

// -----

// TF32 (mma = [16, 8, 8], f32 operands; GQA, dk = 32, dv = 16, 32-key
// blocks): f32 tiles (K rows padded by 4 elements, V by 8), cp.async of 4
// elements, every operand element rounded to TF32 (+0x1000, low 13 bits
// cleared) as it is read: Q once (16), K and V per mma (32 + 16), P per k8
// step (16); 16 m16n8k8 mma for S (4 score tiles x 4 k8 steps) and 8 for
// P V (4 k8 steps x 2 output tiles), P's C fragments moved into A layout
// by 8 index shuffles per k8 step within the quad (gpu.lane_id).
// CHECK-LABEL: func.func @tf32
// CHECK: memref.alloc() : memref<32x36xf32, #gpu.address_space<workgroup>>
// CHECK: memref.alloc() : memref<32x24xf32, #gpu.address_space<workgroup>>
// CHECK: gpu.lane_id
// CHECK: nvgpu.device_async_copy {{.*}}, 4, %{{.+}} {bypassL1} : memref<1x1x?x32xf32> to memref<32x36xf32, #gpu.address_space<workgroup>>
// CHECK: scf.for
// CHECK-COUNT-16: nvgpu.mma.sync({{.*}}) {mmaShape = [16, 8, 8], tf32Enabled} : (vector<4x1xf32>, vector<2x1xf32>, vector<2x2xf32>) -> vector<2x2xf32>
// CHECK: math.exp2
// CHECK-COUNT-8: gpu.shuffle  idx
// CHECK: nvgpu.mma.sync({{.*}}) {mmaShape = [16, 8, 8], tf32Enabled}
// CHECK-COUNT-8: gpu.shuffle  idx
// CHECK-NOT: arith.truncf
// CHECK: vector.store %{{.+}}, %{{.+}} {alignment = 4 : i64} : memref<1x2x?x16xf32>, vector<2xf32>
// TF32-LABEL: func.func @tf32
// TF32-COUNT-24: nvgpu.mma.sync
// TF32-NOT: nvgpu.mma.sync
// ROUND-LABEL: func.func @tf32
// ROUND-COUNT-80: arith.andi %{{.+}}, %c-8192_i32 : i32
// ROUND-NOT: arith.andi %{{.+}}, %c-8192_i32 : i32
module attributes {mha.target = #mha.target<kind = cuda, chip = "sm_80">} {
func.func @tf32(%q: tensor<1x2x?x32xf32>, %k: tensor<1x1x?x32xf32>, %v: tensor<1x1x?x16xf32>, %init: tensor<1x2x?x16xf32>) -> tensor<1x2x?x16xf32> {
  %o = mha.attention ins(%q, %k, %v : tensor<1x2x?x32xf32>, tensor<1x1x?x32xf32>, tensor<1x1x?x16xf32>)
         outs(%init : tensor<1x2x?x16xf32>) {mha.lowering_config = #mha.lowering_config<q_tile = 64, kv_tile = 32, mma = [16, 8, 8], warps = 4>} -> tensor<1x2x?x16xf32>
  return %o : tensor<1x2x?x16xf32>
}
}

// -----

// Without mma in its configuration an op stays for the thread-per-row
// kernel.
// CHECK-LABEL: func.func @simt
// CHECK: mha.attention
module attributes {mha.target = #mha.target<kind = cuda, chip = "sm_80">} {
func.func @simt(%q: tensor<1x1x16x64xf16>) -> tensor<1x1x16x64xf16> {
  %o = mha.attention ins(%q, %q, %q : tensor<1x1x16x64xf16>, tensor<1x1x16x64xf16>, tensor<1x1x16x64xf16>)
         outs(%q : tensor<1x1x16x64xf16>) {mha.lowering_config = #mha.lowering_config<q_tile = 32, kv_tile = 32>} -> tensor<1x1x16x64xf16>
  return %o : tensor<1x1x16x64xf16>
}
}

// -----

// A configuration written by hand for an op the kernel cannot compute.
module attributes {mha.target = #mha.target<kind = cuda, chip = "sm_80">} {
func.func @f32(%q: tensor<1x1x16x64xf32>) -> tensor<1x1x16x64xf32> {
  // expected-error @below {{'mha.attention' op cannot run as the tensor-core kernel: it needs query, key, value and result all f16 or all bf16}}
  %o = mha.attention ins(%q, %q, %q : tensor<1x1x16x64xf32>, tensor<1x1x16x64xf32>, tensor<1x1x16x64xf32>)
         outs(%q : tensor<1x1x16x64xf32>) {mha.lowering_config = #mha.lowering_config<q_tile = 64, kv_tile = 64, mma = [16, 8, 16], warps = 4>} -> tensor<1x1x16x64xf32>
  return %o : tensor<1x1x16x64xf32>
}
}

// -----

module attributes {mha.target = #mha.target<kind = cuda, chip = "sm_80">} {
func.func @tf32_f16(%q: tensor<1x1x16x64xf16>) -> tensor<1x1x16x64xf16> {
  // expected-error @below {{cannot run as the tensor-core kernel: with mma = [16, 8, 8] (TF32) it needs query, key, value and result all f32}}
  %o = mha.attention ins(%q, %q, %q : tensor<1x1x16x64xf16>, tensor<1x1x16x64xf16>, tensor<1x1x16x64xf16>)
         outs(%q : tensor<1x1x16x64xf16>) {mha.lowering_config = #mha.lowering_config<q_tile = 64, kv_tile = 64, mma = [16, 8, 8], warps = 4>} -> tensor<1x1x16x64xf16>
  return %o : tensor<1x1x16x64xf16>
}
}

// -----

module attributes {mha.target = #mha.target<kind = vulkan>} {
func.func @vulkan(%q: tensor<1x1x16x64xf16>) -> tensor<1x1x16x64xf16> {
  // expected-error @below {{cannot run as the tensor-core kernel: it needs a cuda target of sm_80 or later}}
  %o = mha.attention ins(%q, %q, %q : tensor<1x1x16x64xf16>, tensor<1x1x16x64xf16>, tensor<1x1x16x64xf16>)
         outs(%q : tensor<1x1x16x64xf16>) {mha.lowering_config = #mha.lowering_config<q_tile = 64, kv_tile = 64, mma = [16, 8, 16], warps = 4>} -> tensor<1x1x16x64xf16>
  return %o : tensor<1x1x16x64xf16>
}
}

// -----

module attributes {mha.target = #mha.target<kind = cuda, chip = "sm_80">} {
func.func @rows(%q: tensor<1x1x16x64xf16>) -> tensor<1x1x16x64xf16> {
  // expected-error @below {{needs a lowering_config with warps, q_tile = 16 * warps and kv_tile a multiple of 16 for the tensor-core kernel}}
  %o = mha.attention ins(%q, %q, %q : tensor<1x1x16x64xf16>, tensor<1x1x16x64xf16>, tensor<1x1x16x64xf16>)
         outs(%q : tensor<1x1x16x64xf16>) {mha.lowering_config = #mha.lowering_config<q_tile = 32, kv_tile = 64, mma = [16, 8, 16], warps = 4>} -> tensor<1x1x16x64xf16>
  return %o : tensor<1x1x16x64xf16>
}
}

// -----

// kv_splits = 2: the grid over (head, chunk) pairs; each thread stores its
// accumulator pairs unnormalized (f32) and the quad's first lane each row's
// maximum and sum; a linalg.generic merges the chunks into the f16 result.
// CHECK-LABEL: func.func @splits
// TF32-LABEL: func.func @splits
// ROUND-LABEL: func.func @splits
// CHECK-DAG: %[[ACC:.+]] = memref.alloc() : memref<1x2x1x2x64xf32>
// CHECK-DAG: %[[MAX:.+]] = memref.alloc() : memref<1x2x1x2xf32>
// CHECK: scf.forall (%{{.+}}, %[[HS:.+]], %{{.+}}) = (0, 0, 0) to (1, 4, 1) step (1, 1, 64) {
// CHECK-DAG: %[[SPLIT:.+]] = arith.remui %[[HS]], %c2
// CHECK: memref.store %{{.+}}, %[[MAX]][%c0, %{{.+}}, %{{.+}}, %[[SPLIT]]]
// CHECK: vector.store %{{.+}}, %[[ACC]][%c0, %{{.+}}, %{{.+}}, %[[SPLIT]], %{{.+}}] {alignment = 8 : i64} : memref<1x2x1x2x64xf32>, vector<2xf32>
// CHECK: linalg.generic
// CHECK-COUNT-2: math.exp2
// CHECK: arith.truncf {{.*}} : f32 to f16
module attributes {mha.target = #mha.target<kind = cuda, chip = "sm_80">} {
func.func @splits(%q: tensor<1x2x1x64xf16>, %k: tensor<1x2x512x64xf16>) -> tensor<1x2x1x64xf16> {
  %o = mha.attention ins(%q, %k, %k : tensor<1x2x1x64xf16>, tensor<1x2x512x64xf16>, tensor<1x2x512x64xf16>)
         outs(%q : tensor<1x2x1x64xf16>) {mha.lowering_config = #mha.lowering_config<q_tile = 64, kv_tile = 64, mma = [16, 8, 16], warps = 4, kv_splits = 2>} -> tensor<1x2x1x64xf16>
  return %o : tensor<1x2x1x64xf16>
}
}

// -----

// A head tile (GQA decoding): 4 query heads of one key/value head in a
// workgroup of one warp, 3 queries each: tile row r is head 4 * tile +
// min(r / 3, 3), query r % 3; rows from 12 on are padding, not stored. The
// grid runs over the 2 head tiles.
// CHECK-LABEL: func.func @head_tile
// CHECK: scf.forall (%[[B:.+]], %[[HT:.+]], %{{.+}}) = (0, 0, 0) to (2, 2, 3) step (1, 1, 16) {
// CHECK: %[[FIRST:.+]] = arith.muli %[[HT]], %c4 : index
// CHECK: scf.forall (%[[T:.+]]) in (32) {
// CHECK: %[[ROW:.+]] = arith.addi %{{.+}}, %{{.+}} : index
// CHECK-NEXT: %[[PACKED:.+]] = arith.divui %[[ROW]], %c3 : index
// CHECK-NEXT: %[[CLAMPED:.+]] = arith.minsi %[[PACKED]], %c3 : index
// CHECK-NEXT: %[[HEAD:.+]] = arith.addi %[[FIRST]], %[[CLAMPED]] : index
// CHECK-NEXT: %[[QUERY:.+]] = arith.remui %[[ROW]], %c3 : index
// CHECK-NEXT: %[[VALID:.+]] = arith.cmpi slt, %[[ROW]], %c12 : index
// CHECK: vector.load %{{.+}}[%[[B]], %[[HEAD]], %{{.+}}, %{{.+}}] {{.*}} : memref<2x8x3x16xf16>, vector<2xf16>
// CHECK: scf.if %[[VALID]] {
// CHECK: vector.store %{{.+}}, %{{.+}}[%[[B]], %[[HEAD]], %[[QUERY]], %{{.+}}] {{.*}} : memref<2x8x3x16xf16>, vector<2xf16>
module attributes {mha.target = #mha.target<kind = cuda, chip = "sm_80">} {
func.func @head_tile(%q: tensor<2x8x3x16xf16>, %k: tensor<2x2x100x16xf16>) -> tensor<2x8x3x16xf16> {
  %o = mha.attention ins(%q, %k, %k : tensor<2x8x3x16xf16>, tensor<2x2x100x16xf16>, tensor<2x2x100x16xf16>)
         outs(%q : tensor<2x8x3x16xf16>) {mha.lowering_config = #mha.lowering_config<q_tile = 16, kv_tile = 32, mma = [16, 8, 16], warps = 1, head_tile = 4>} -> tensor<2x8x3x16xf16>
  return %o : tensor<2x8x3x16xf16>
}
}

// -----

// A head tile whose queries do not fit the tile.
module attributes {mha.target = #mha.target<kind = cuda, chip = "sm_80">} {
func.func @head_tile_rows(%q: tensor<2x8x5x16xf16>, %k: tensor<2x2x100x16xf16>) -> tensor<2x8x5x16xf16> {
  // expected-error @below {{'mha.attention' op cannot run as the tensor-core kernel: its head_tile = 4 needs a static query length, a divisor of the 4 query heads per key/value head, and head_tile * Sq at most q_tile (16)}}
  %o = mha.attention ins(%q, %k, %k : tensor<2x8x5x16xf16>, tensor<2x2x100x16xf16>, tensor<2x2x100x16xf16>)
         outs(%q : tensor<2x8x5x16xf16>) {mha.lowering_config = #mha.lowering_config<q_tile = 16, kv_tile = 32, mma = [16, 8, 16], warps = 1, head_tile = 4>} -> tensor<2x8x5x16xf16>
  return %o : tensor<2x8x5x16xf16>
}
}
