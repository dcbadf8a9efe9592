// RUN: mha-opt %s --split-input-file --verify-diagnostics --mha-contraction-to-mma --canonicalize --cse | FileCheck %s

// The Q projection of a layer (x[b, s, e] · W[e, h, d] -> [b, h, s, d], f16
// accumulated in f32, then rounded) as one GEMM kernel: M = (b, s) = 2·S
// rows, N = (h, d) = 96, K = e = 96. 64 x 64 output tiles of 4 warps of
// 32 x 32; per k step of 32: 2 A and 2 B copies of 16 bytes per thread into
// the other stage, wait for this one (1 group left running), barrier, per
// k16 step 2 A ldmatrix and 2 transposing B ldmatrix feeding 8 mma.sync,
// barrier. The rounded pairs go to [b, h, s, d] through the output's map.

// CHECK-LABEL: func.func @project
// CHECK-DAG: %[[X:.+]] = bufferization.to_buffer %arg0 read_only : tensor<2x?x96xf16> to memref<2x?x96xf16>
// CHECK-DAG: %[[W:.+]] = bufferization.to_buffer %arg1 read_only : tensor<96x3x32xf16> to memref<96x3x32xf16>
// CHECK: %[[OUT:.+]] = memref.alloc(%{{.+}}) : memref<2x3x?x32xf16>
// CHECK: scf.forall (%{{.+}}, %{{.+}}) = (0, 0) to (%{{.+}}, 96) step (64, 64) {
// CHECK: %[[AT:.+]] = memref.alloc() : memref<2x64x40xf16, #gpu.address_space<workgroup>>
// CHECK: %[[BT:.+]] = memref.alloc() : memref<2x32x72xf16, #gpu.address_space<workgroup>>
// CHECK: scf.forall (%{{.+}}) in (128) {
// CHECK-COUNT-2: nvgpu.device_async_copy %[[X]][{{.*}}], %[[AT]][%c0,
// CHECK-COUNT-2: nvgpu.device_async_copy %[[W]][{{.*}}], %[[BT]][%c0,
// CHECK: %[[FIRST:.+]] = nvgpu.device_async_create_group
// CHECK: %[[RES:.+]]:9 = scf.for %{{.+}} = %c0 to %c96 step %c32 iter_args({{.*}}, %{{.+}} = %[[FIRST]]) -> (vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, !nvgpu.device.async.token) {
// CHECK-COUNT-4: nvgpu.device_async_copy
// CHECK: %[[NEXT:.+]] = nvgpu.device_async_create_group
// CHECK-NEXT: nvgpu.device_async_wait %[[NEXT]] {numGroups = 1 : i32}
// CHECK-NEXT: gpu.barrier
// CHECK: nvgpu.ldmatrix %[[AT]][{{.*}}] {numTiles = 4 : i32, transpose = false} : memref<2x64x40xf16, #gpu.address_space<workgroup>> -> vector<4x2xf16>
// CHECK: nvgpu.ldmatrix %[[BT]][{{.*}}] {numTiles = 4 : i32, transpose = true} : memref<2x32x72xf16, #gpu.address_space<workgroup>> -> vector<4x2xf16>
// CHECK-COUNT-16: nvgpu.mma.sync
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: scf.yield {{.*}}, %[[NEXT]]
// CHECK: nvgpu.device_async_wait %[[RES]]#8 {numGroups = 0 : i32}
// CHECK-COUNT-16: vector.store %{{.+}}, %[[OUT]][{{.*}}] {alignment = 4 : i64} : memref<2x3x?x32xf16>, vector<2xf16>
// CHECK: } {mapping = [#gpu.thread<x>], mha.lowering_config = #mha.lowering_config<threads = 128>}
// CHECK: } {mapping = [#gpu.block<linear_dim_0>, #gpu.block<linear_dim_1>]}
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
