// RUN: mha-opt %s --split-input-file --verify-diagnostics --mha-contraction-to-mma --canonicalize --cse | FileCheck %s

// The Q projection of a layer (x[b, s, e] · W[e, h, d] -> [b, h, s, d], f16
// accumulated in f32, then rounded) as one GEMM kernel: M = (b, s) = 2·S
// rows, N = (h, d) = 96, K = e = 96. The rules' tiles for dynamic rows: 64 x
// 64 over 4 warps of 32 x 32, and 4 stages (4 x 9728 bytes of padded tiles
// within the 48 KiB CUDA gives statically). Before the k loop, 3 k steps on
// their way (2 A and 2 B copies of 16 bytes per thread each); per k step of
// 32: wait for this step (2 newer groups may run), one barrier, the step 3
// ahead into the stage the last step read, per k16 step 2 A ldmatrix and 2
// transposing B ldmatrix feeding 8 mma.sync. The rounded pairs go to [b, h,
// s, d] through the output's map.

// CHECK-LABEL: func.func @project
// CHECK-DAG: %[[X:.+]] = bufferization.to_buffer %arg0 read_only : tensor<2x?x96xf16> to memref<2x?x96xf16>
// CHECK-DAG: %[[W:.+]] = bufferization.to_buffer %arg1 read_only : tensor<96x3x32xf16> to memref<96x3x32xf16>
// CHECK: %[[OUT:.+]] = memref.alloc(%{{.+}}) : memref<2x3x?x32xf16>
// CHECK: scf.forall (%{{.+}}, %{{.+}}) = (0, 0) to (%{{.+}}, 96) step (64, 64) {
// CHECK: %[[AT:.+]] = memref.alloc() : memref<4x64x40xf16, #gpu.address_space<workgroup>>
// CHECK: %[[BT:.+]] = memref.alloc() : memref<4x32x72xf16, #gpu.address_space<workgroup>>
// CHECK: scf.forall (%{{.+}}) in (128) {
// CHECK-COUNT-2: nvgpu.device_async_copy %[[X]][{{.*}}], %[[AT]][%c0,
// CHECK-COUNT-2: nvgpu.device_async_copy %[[W]][{{.*}}], %[[BT]][%c0,
// CHECK: nvgpu.device_async_create_group
// CHECK-COUNT-2: nvgpu.device_async_copy %[[X]][{{.*}}], %[[AT]][%c1,
// CHECK-COUNT-2: nvgpu.device_async_copy %[[W]][{{.*}}], %[[BT]][%c1,
// CHECK: nvgpu.device_async_create_group
// CHECK-COUNT-2: nvgpu.device_async_copy %[[X]][{{.*}}], %[[AT]][%c2,
// CHECK-COUNT-2: nvgpu.device_async_copy %[[W]][{{.*}}], %[[BT]][%c2,
// CHECK: %[[THIRD:.+]] = nvgpu.device_async_create_group
// CHECK: %[[RES:.+]]:9 = scf.for %{{.+}} = %c0 to %c96 step %c32 iter_args({{.*}}, %[[NEWEST:.+]] = %[[THIRD]]) -> (vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, !nvgpu.device.async.token) {
// CHECK: nvgpu.device_async_wait %[[NEWEST]] {numGroups = 2 : i32}
// CHECK-NEXT: gpu.barrier
// CHECK-COUNT-4: nvgpu.device_async_copy
// CHECK: %[[NEXT:.+]] = nvgpu.device_async_create_group
// CHECK-NOT: gpu.barrier
// CHECK: nvgpu.ldmatrix %[[AT]][{{.*}}] {numTiles = 4 : i32, transpose = false} : memref<4x64x40xf16, #gpu.address_space<workgroup>> -> vector<4x2xf16>
// CHECK: nvgpu.ldmatrix %[[BT]][{{.*}}] {numTiles = 4 : i32, transpose = true} : memref<4x32x72xf16, #gpu.address_space<workgroup>> -> vector<4x2xf16>
// CHECK-COUNT-16: nvgpu.mma.sync
// CHECK-NOT: gpu.barrier
// CHECK: scf.yield {{.*}}, %[[NEXT]]
// CHECK: nvgpu.device_async_wait %[[RES]]#8 {numGroups = 0 : i32}
// CHECK-COUNT-16: vector.store %{{.+}}, %[[OUT]][{{.*}}] {alignment = 4 : i64} : memref<2x3x?x32xf16>, vector<2xf16>
// CHECK: } {mapping = [#gpu.thread<x>], mha.lowering_config = #mha.lowering_config<threads = 128>}
// CHECK: } {mapping = [#gpu.block<linear_dim_0>, #gpu.block<linear_dim_1>], mha.kernel_name = "gemm"}
// CHECK: %[[R:.+]] = bufferization.to_tensor %[[OUT]] restrict writable
// CHECK: return %[[R]]
module attributes {mha.target = #mha.target<kind = cuda, chip = "sm_80">} {
func.func @project(%x: tensor<2x?x96xf16>, %w: tensor<96x3x32xf16>) -> tensor<2x3x?x32xf16> {
  %c1 = arith.constant 1 : index
  %s = tensor.dim %x, %c1 : tensor<2x?x96xf16>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty(%s) : tensor<2x3x?x32xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<2x3x?x32xf32>) -> tensor<2x3x?x32xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d3, d1, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>], iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]} ins(%x, %w : tensor<2x?x96xf16>, tensor<96x3x32xf16>) outs(%acc : tensor<2x3x?x32xf32>) attrs = {mha.lowering_config = #mha.lowering_config<mma = [16, 8, 16], warps = 4>} {
  ^bb0(%a: f16, %b: f16, %o: f32):
    %0 = arith.extf %a : f16 to f32
    %1 = arith.extf %b : f16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %o, %2 : f32
    linalg.yield %3 : f32
  } -> tensor<2x3x?x32xf32>
  %e16 = tensor.empty(%s) : tensor<2x3x?x32xf16>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%p : tensor<2x3x?x32xf32>) outs(%e16 : tensor<2x3x?x32xf16>) {
  ^bb0(%a: f32, %o: f16):
    %0 = arith.truncf %a : f32 to f16
    linalg.yield %0 : f16
  } -> tensor<2x3x?x32xf16>
  return %r : tensor<2x3x?x32xf16>
}
}

// -----

// A configuration written by hand on a contraction the kernel cannot
// compute.
module attributes {mha.target = #mha.target<kind = cuda, chip = "sm_80">} {
func.func @f32(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %acc: tensor<4x16xf32>) -> tensor<4x16xf32> {
  // expected-error @below {{cannot run as the tensor-core GEMM kernel: it computes linalg.generic contractions only}}
  %p = linalg.matmul {mha.lowering_config = #mha.lowering_config<mma = [16, 8, 16], warps = 4>} ins(%x, %w : tensor<4x8xf32>, tensor<8x16xf32>) outs(%acc : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %p : tensor<4x16xf32>
}
}

// -----

module attributes {mha.target = #mha.target<kind = cuda, chip = "sm_80">} {
func.func @f32_generic(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %acc: tensor<4x16xf32>) -> tensor<4x16xf32> {
  // expected-error @below {{cannot run as the tensor-core GEMM kernel: it needs f16 or bf16 inputs (one type) and an f32 output}}
  %p = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : tensor<4x8xf32>, tensor<8x16xf32>) outs(%acc : tensor<4x16xf32>) attrs = {mha.lowering_config = #mha.lowering_config<mma = [16, 8, 16], warps = 4>} {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %0 = arith.mulf %a, %b : f32
    %1 = arith.addf %o, %0 : f32
    linalg.yield %1 : f32
  } -> tensor<4x16xf32>
  return %p : tensor<4x16xf32>
}
}

// -----

module attributes {mha.target = #mha.target<kind = vulkan>} {
func.func @vulkan(%x: tensor<4x8xf16>, %w: tensor<8x16xf16>, %acc: tensor<4x16xf32>) -> tensor<4x16xf32> {
  // expected-error @below {{cannot run as the tensor-core GEMM kernel: it needs a cuda target of sm_80 or later}}
  %p = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : tensor<4x8xf16>, tensor<8x16xf16>) outs(%acc : tensor<4x16xf32>) attrs = {mha.lowering_config = #mha.lowering_config<mma = [16, 8, 16], warps = 4>} {
  ^bb0(%a: f16, %b: f16, %o: f32):
    %0 = arith.extf %a : f16 to f32
    %1 = arith.extf %b : f16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %o, %2 : f32
    linalg.yield %3 : f32
  } -> tensor<4x16xf32>
  return %p : tensor<4x16xf32>
}
}

// -----

// The output projection with its bias (attn[b, h, s, d] · Wo[h, d, n] + bo[n]
// -> [b, s, n]): the accumulator starts from the bias extended to f32, which
// the kernel adds in the epilogue: the bias of each of the thread's column
// pairs (n, n + 1) of its 4 output tiles read once (n clamped to the last
// pair), added to the accumulators of its rows before rounding.

// CHECK-LABEL: func.func @project_out_bias
// CHECK-SAME:    %[[BO:[a-z0-9]+]]: tensor<64xf16>)
// CHECK: %[[RES:.+]]:9 = scf.for
// CHECK: %[[NC:.+]] = arith.minsi %[[N:.+]], %c62 : index
// (the bias buffer's loads, canonicalized into extracts of its tensor)
// CHECK: %[[B0:.+]] = tensor.extract %[[BO]][%[[NC]]] : tensor<64xf16>
// CHECK: %[[E0:.+]] = arith.extf %[[B0]] : f16 to f32
// CHECK: %[[N1:.+]] = arith.addi %[[NC]], %c1 : index
// CHECK: %[[B1:.+]] = tensor.extract %[[BO]][%[[N1]]] : tensor<64xf16>
// CHECK: %[[E1:.+]] = arith.extf %[[B1]] : f16 to f32
// CHECK: %[[PAIR:.+]] = vector.from_elements %[[E0]], %[[E1]] : vector<2xf32>
// CHECK-COUNT-3: vector.from_elements
// CHECK: scf.if
// CHECK: %[[ACC:.+]] = vector.extract %[[RES]]#0[0] : vector<2xf32> from vector<2x2xf32>
// CHECK: %[[SUM:.+]] = arith.addf %[[ACC]], %[[PAIR]] : vector<2xf32>
// CHECK: %[[ROUNDED:.+]] = arith.truncf %[[SUM]] : vector<2xf32> to vector<2xf16>
// CHECK: vector.store %[[ROUNDED]], %{{.+}}[%{{.+}}, %{{.+}}, %[[N]]]
// CHECK-NOT: tensor.extract
// CHECK-NOT: linalg.generic
module attributes {mha.target = #mha.target<kind = cuda, chip = "sm_80">} {
func.func @project_out_bias(%attn: tensor<2x2x40x32xf16>, %w: tensor<2x32x64xf16>, %bo: tensor<64xf16>) -> tensor<2x40x64xf16> {
  %e = tensor.empty() : tensor<2x40x64xf32>
  %acc = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%bo : tensor<64xf16>) outs(%e : tensor<2x40x64xf32>) {
  ^bb0(%in: f16, %o: f32):
    %0 = arith.extf %in : f16 to f32
    linalg.yield %0 : f32
  } -> tensor<2x40x64xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d1, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d2, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4)>], iterator_types = ["parallel", "parallel", "reduction", "reduction", "parallel"]} ins(%attn, %w : tensor<2x2x40x32xf16>, tensor<2x32x64xf16>) outs(%acc : tensor<2x40x64xf32>) attrs = {mha.lowering_config = #mha.lowering_config<mma = [16, 8, 16], warps = 4>} {
  ^bb0(%a: f16, %b: f16, %o: f32):
    %0 = arith.extf %a : f16 to f32
    %1 = arith.extf %b : f16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %o, %2 : f32
    linalg.yield %3 : f32
  } -> tensor<2x40x64xf32>
  %e16 = tensor.empty() : tensor<2x40x64xf16>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%p : tensor<2x40x64xf32>) outs(%e16 : tensor<2x40x64xf16>) {
  ^bb0(%a: f32, %o: f16):
    %0 = arith.truncf %a : f32 to f16
    linalg.yield %0 : f16
  } -> tensor<2x40x64xf16>
  return %r : tensor<2x40x64xf16>
}
}

// -----

// An accumulator that starts from anything else, or a "bias" that varies
// along the rows (M), is not the kernel's.

module attributes {mha.target = #mha.target<kind = cuda, chip = "sm_80">} {
func.func @acc_argument(%x: tensor<64x32xf16>, %w: tensor<32x64xf16>, %acc: tensor<64x64xf32>) -> tensor<64x64xf32> {
  // expected-error @below {{cannot run as the tensor-core GEMM kernel: its output must start as a fill with 0 or as a bias extended to f32}}
  %p = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : tensor<64x32xf16>, tensor<32x64xf16>) outs(%acc : tensor<64x64xf32>) attrs = {mha.lowering_config = #mha.lowering_config<mma = [16, 8, 16], warps = 4>} {
  ^bb0(%a: f16, %b: f16, %o: f32):
    %0 = arith.extf %a : f16 to f32
    %1 = arith.extf %b : f16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %o, %2 : f32
    linalg.yield %3 : f32
  } -> tensor<64x64xf32>
  return %p : tensor<64x64xf32>
}
}

// -----

module attributes {mha.target = #mha.target<kind = cuda, chip = "sm_80">} {
func.func @row_bias(%x: tensor<64x32xf16>, %w: tensor<32x64xf16>, %bias: tensor<64xf16>) -> tensor<64x64xf16> {
  %e = tensor.empty() : tensor<64x64xf32>
  %acc = linalg.generic {indexing_maps = [affine_map<(m, n) -> (m)>, affine_map<(m, n) -> (m, n)>], iterator_types = ["parallel", "parallel"]} ins(%bias : tensor<64xf16>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%in: f16, %o: f32):
    %0 = arith.extf %in : f16 to f32
    linalg.yield %0 : f32
  } -> tensor<64x64xf32>
  // expected-error @below {{cannot run as the tensor-core GEMM kernel: its bias must vary along output dims of the second input only}}
  %p = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : tensor<64x32xf16>, tensor<32x64xf16>) outs(%acc : tensor<64x64xf32>) attrs = {mha.lowering_config = #mha.lowering_config<mma = [16, 8, 16], warps = 4>} {
  ^bb0(%a: f16, %b: f16, %o: f32):
    %0 = arith.extf %a : f16 to f32
    %1 = arith.extf %b : f16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %o, %2 : f32
    linalg.yield %3 : f32
  } -> tensor<64x64xf32>
  %e16 = tensor.empty() : tensor<64x64xf16>
  %r = linalg.generic {indexing_maps = [affine_map<(m, n) -> (m, n)>, affine_map<(m, n) -> (m, n)>], iterator_types = ["parallel", "parallel"]} ins(%p : tensor<64x64xf32>) outs(%e16 : tensor<64x64xf16>) {
  ^bb0(%a: f32, %o: f16):
    %0 = arith.truncf %a : f32 to f16
    linalg.yield %0 : f16
  } -> tensor<64x64xf16>
  return %r : tensor<64x64xf16>
}
}

// -----

// The configuration's tiles, warps and stages: 128 x 128 over 8 warps (2 x
// 4 of 64 x 32: 4 x 4 accumulator fragments each), 3 stages; per thread 2 A
// and 2 B copies a step; per k16 step and warp 4 A ldmatrix, then per B
// ldmatrix (two n8 fragments) 8 mma.sync.
// CHECK-LABEL: func.func @configured
// CHECK: scf.forall (%{{.+}}, %{{.+}}) = (0, 0) to (256, 256) step (128, 128) {
// CHECK: %[[AT:.+]] = memref.alloc() : memref<3x128x40xf16, #gpu.address_space<workgroup>>
// CHECK: %[[BT:.+]] = memref.alloc() : memref<3x32x136xf16, #gpu.address_space<workgroup>>
// CHECK: scf.forall (%{{.+}}) in (256) {
// CHECK-COUNT-2: nvgpu.device_async_create_group
// CHECK: %{{.+}}:17 = scf.for
// CHECK: nvgpu.device_async_wait %{{.+}} {numGroups = 1 : i32}
// CHECK-NEXT: gpu.barrier
// CHECK-COUNT-4: nvgpu.device_async_copy
// CHECK: nvgpu.device_async_create_group
// CHECK-COUNT-4: nvgpu.ldmatrix %[[AT]]
// CHECK: nvgpu.ldmatrix %[[BT]]
// CHECK-COUNT-8: nvgpu.mma.sync
// CHECK: nvgpu.ldmatrix %[[BT]]
// CHECK-COUNT-8: nvgpu.mma.sync
// CHECK-COUNT-4: nvgpu.ldmatrix %[[AT]]
// CHECK: nvgpu.ldmatrix %[[BT]]
// CHECK-COUNT-8: nvgpu.mma.sync
// CHECK: nvgpu.ldmatrix %[[BT]]
// CHECK-COUNT-8: nvgpu.mma.sync
// CHECK-NOT: nvgpu.mma.sync
// CHECK: scf.yield
// CHECK-COUNT-32: vector.store
// CHECK-NOT: vector.store
module attributes {mha.target = #mha.target<kind = cuda, chip = "sm_80">} {
func.func @configured(%x: tensor<256x128xf16>, %w: tensor<128x256xf16>) -> tensor<256x256xf16> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<256x256xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<256x256xf32>) -> tensor<256x256xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : tensor<256x128xf16>, tensor<128x256xf16>) outs(%acc : tensor<256x256xf32>) attrs = {mha.lowering_config = #mha.lowering_config<mma = [16, 8, 16], warps = 8, workgroup_tile = [128, 128], pipeline_stages = 3>} {
  ^bb0(%a: f16, %b: f16, %o: f32):
    %0 = arith.extf %a : f16 to f32
    %1 = arith.extf %b : f16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %o, %2 : f32
    linalg.yield %3 : f32
  } -> tensor<256x256xf32>
  %e16 = tensor.empty() : tensor<256x256xf16>
  %r = linalg.generic {indexing_maps = [affine_map<(m, n) -> (m, n)>, affine_map<(m, n) -> (m, n)>], iterator_types = ["parallel", "parallel"]} ins(%p : tensor<256x256xf32>) outs(%e16 : tensor<256x256xf16>) {
  ^bb0(%a: f32, %o: f16):
    %0 = arith.truncf %a : f32 to f16
    linalg.yield %0 : f16
  } -> tensor<256x256xf16>
  return %r : tensor<256x256xf16>
}
}

// -----

// A configuration the kernel cannot take, written by hand.
module attributes {mha.target = #mha.target<kind = cuda, chip = "sm_80">} {
func.func @bad_share(%x: tensor<256x128xf16>, %w: tensor<128x256xf16>) -> tensor<256x256xf16> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<256x256xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<256x256xf32>) -> tensor<256x256xf32>
  // expected-error @+1 {{lowering_config: the tensor-core GEMM kernel splits workgroup_tile [128, 48] over 2 x 2 warps, each of whose shares must be a multiple of 16 by 16 up to 64 by 64 (its accumulators are registers)}}
  %p = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : tensor<256x128xf16>, tensor<128x256xf16>) outs(%acc : tensor<256x256xf32>) attrs = {mha.lowering_config = #mha.lowering_config<mma = [16, 8, 16], warps = 4, workgroup_tile = [128, 48]>} {
  ^bb0(%a: f16, %b: f16, %o: f32):
    %0 = arith.extf %a : f16 to f32
    %1 = arith.extf %b : f16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %o, %2 : f32
    linalg.yield %3 : f32
  } -> tensor<256x256xf32>
  %e16 = tensor.empty() : tensor<256x256xf16>
  %r = linalg.generic {indexing_maps = [affine_map<(m, n) -> (m, n)>, affine_map<(m, n) -> (m, n)>], iterator_types = ["parallel", "parallel"]} ins(%p : tensor<256x256xf32>) outs(%e16 : tensor<256x256xf16>) {
  ^bb0(%a: f32, %o: f16):
    %0 = arith.truncf %a : f32 to f16
    linalg.yield %0 : f16
  } -> tensor<256x256xf16>
  return %r : tensor<256x256xf16>
}
}
