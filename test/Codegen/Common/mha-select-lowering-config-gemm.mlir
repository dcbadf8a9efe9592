// The tensor-core GEMM kernel's configuration (the projections of f16 and
// bf16 layers on CUDA, mha-contraction-to-mma): the largest output tile of
// 128 x 128, 128 x 64 and 64 x 64 that still gives 256 workgroups, 4
// warps, and as many pipeline stages (up to 4) as 48 KiB hold: 2 of
// 18,944 bytes at 128 x 128, 3 of 14,848 at 128 x 64, 4 of 9,728 at 64 x
// 64; with the opt-in of sm_90 (227 KiB of dynamic shared memory), 4 at
// every tile. The pipeline options gemm-tile and gemm-stages replace the rules'
// fields; a configuration written on the op keeps its fields.
// RUN: mha-opt %s --split-input-file --mha-select-lowering-config="target={#mha.target<kind = cuda, chip = \"sm_90\", max_workgroup_memory = 49152>}" | FileCheck %s
// RUN: mha-opt %s --split-input-file --mha-select-lowering-config="target={#mha.target<kind = cuda, chip = \"sm_90\", max_workgroup_memory = 49152>} gemm-tile=64,128" | FileCheck %s --check-prefix=TILE
// RUN: mha-opt %s --split-input-file --mha-select-lowering-config="target={#mha.target<kind = cuda, chip = \"sm_90\", max_workgroup_memory = 49152>} gemm-stages=2" | FileCheck %s --check-prefix=STAGES
// RUN: mha-opt %s --split-input-file --mha-select-lowering-config="target={#mha.target<kind = cuda, chip = \"sm_90\", max_workgroup_memory = 49152, max_workgroup_memory_optin = 232448>}" | FileCheck %s --check-prefix=OPTIN

// GPT-2's projections, B=8 S=1024 (M = 8192, N = K = 768): 64 x 6
// workgroups of 128 x 128.
// CHECK-LABEL: func.func @gpt2
// CHECK: mha.lowering_config = #mha.lowering_config<workgroup_tile = [128, 128], mma = [16, 8, 16], warps = 4, pipeline_stages = 2>
// TILE-LABEL: func.func @gpt2
// TILE: mha.lowering_config = #mha.lowering_config<workgroup_tile = [64, 128], mma = [16, 8, 16], warps = 4, pipeline_stages = 3>
// OPTIN-LABEL: func.func @gpt2
// OPTIN: mha.lowering_config = #mha.lowering_config<workgroup_tile = [128, 128], mma = [16, 8, 16], warps = 4, pipeline_stages = 4>
// STAGES-LABEL: func.func @gpt2
// STAGES: mha.lowering_config = #mha.lowering_config<workgroup_tile = [128, 128], mma = [16, 8, 16], warps = 4, pipeline_stages = 2>
func.func @gpt2(%x: tensor<8192x768xf16>, %w: tensor<768x768xf16>) -> tensor<8192x768xf16> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8192x768xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<8192x768xf32>) -> tensor<8192x768xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : tensor<8192x768xf16>, tensor<768x768xf16>) outs(%acc : tensor<8192x768xf32>) {
  ^bb0(%a: f16, %b: f16, %o: f32):
    %0 = arith.extf %a : f16 to f32
    %1 = arith.extf %b : f16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %o, %2 : f32
    linalg.yield %3 : f32
  } -> tensor<8192x768xf32>
  %e16 = tensor.empty() : tensor<8192x768xf16>
  %r = linalg.generic {indexing_maps = [affine_map<(m, n) -> (m, n)>, affine_map<(m, n) -> (m, n)>], iterator_types = ["parallel", "parallel"]} ins(%p : tensor<8192x768xf32>) outs(%e16 : tensor<8192x768xf16>) {
  ^bb0(%a: f32, %o: f16):
    %0 = arith.truncf %a : f32 to f16
    linalg.yield %0 : f16
  } -> tensor<8192x768xf16>
  return %r : tensor<8192x768xf16>
}

// -----

// BERT-base's, B=32 S=128 (M = 4096): 192 workgroups of 128 x 128 would be
// too few; 384 of 128 x 64.
// CHECK-LABEL: func.func @bert
// CHECK: mha.lowering_config = #mha.lowering_config<workgroup_tile = [128, 64], mma = [16, 8, 16], warps = 4, pipeline_stages = 3>
// OPTIN-LABEL: func.func @bert
// OPTIN: mha.lowering_config = #mha.lowering_config<workgroup_tile = [128, 64], mma = [16, 8, 16], warps = 4, pipeline_stages = 4>
// STAGES-LABEL: func.func @bert
// STAGES: mha.lowering_config = #mha.lowering_config<workgroup_tile = [128, 64], mma = [16, 8, 16], warps = 4, pipeline_stages = 2>
func.func @bert(%x: tensor<4096x768xf16>, %w: tensor<768x768xf16>) -> tensor<4096x768xf16> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4096x768xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<4096x768xf32>) -> tensor<4096x768xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : tensor<4096x768xf16>, tensor<768x768xf16>) outs(%acc : tensor<4096x768xf32>) {
  ^bb0(%a: f16, %b: f16, %o: f32):
    %0 = arith.extf %a : f16 to f32
    %1 = arith.extf %b : f16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %o, %2 : f32
    linalg.yield %3 : f32
  } -> tensor<4096x768xf32>
  %e16 = tensor.empty() : tensor<4096x768xf16>
  %r = linalg.generic {indexing_maps = [affine_map<(m, n) -> (m, n)>, affine_map<(m, n) -> (m, n)>], iterator_types = ["parallel", "parallel"]} ins(%p : tensor<4096x768xf32>) outs(%e16 : tensor<4096x768xf16>) {
  ^bb0(%a: f32, %o: f16):
    %0 = arith.truncf %a : f32 to f16
    linalg.yield %0 : f16
  } -> tensor<4096x768xf16>
  return %r : tensor<4096x768xf16>
}

// -----

// Few rows, or rows known at run time only: 64 x 64.
// CHECK-LABEL: func.func @small
// CHECK: mha.lowering_config = #mha.lowering_config<workgroup_tile = [64, 64], mma = [16, 8, 16], warps = 4, pipeline_stages = 4>
func.func @small(%x: tensor<512x768xf16>, %w: tensor<768x768xf16>) -> tensor<512x768xf16> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<512x768xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<512x768xf32>) -> tensor<512x768xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : tensor<512x768xf16>, tensor<768x768xf16>) outs(%acc : tensor<512x768xf32>) {
  ^bb0(%a: f16, %b: f16, %o: f32):
    %0 = arith.extf %a : f16 to f32
    %1 = arith.extf %b : f16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %o, %2 : f32
    linalg.yield %3 : f32
  } -> tensor<512x768xf32>
  %e16 = tensor.empty() : tensor<512x768xf16>
  %r = linalg.generic {indexing_maps = [affine_map<(m, n) -> (m, n)>, affine_map<(m, n) -> (m, n)>], iterator_types = ["parallel", "parallel"]} ins(%p : tensor<512x768xf32>) outs(%e16 : tensor<512x768xf16>) {
  ^bb0(%a: f32, %o: f16):
    %0 = arith.truncf %a : f32 to f16
    linalg.yield %0 : f16
  } -> tensor<512x768xf16>
  return %r : tensor<512x768xf16>
}

// -----

// A decoding step's projections (4 rows): 32 x 32, twice the workgroups of
// 64 x 64 reading the weights.
// CHECK-LABEL: func.func @decode
// CHECK: mha.lowering_config = #mha.lowering_config<workgroup_tile = [32, 32], mma = [16, 8, 16], warps = 4, pipeline_stages = 4>
func.func @decode(%x: tensor<4x768xf16>, %w: tensor<768x768xf16>) -> tensor<4x768xf16> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x768xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<4x768xf32>) -> tensor<4x768xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : tensor<4x768xf16>, tensor<768x768xf16>) outs(%acc : tensor<4x768xf32>) {
  ^bb0(%a: f16, %b: f16, %o: f32):
    %0 = arith.extf %a : f16 to f32
    %1 = arith.extf %b : f16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %o, %2 : f32
    linalg.yield %3 : f32
  } -> tensor<4x768xf32>
  %e16 = tensor.empty() : tensor<4x768xf16>
  %r = linalg.generic {indexing_maps = [affine_map<(m, n) -> (m, n)>, affine_map<(m, n) -> (m, n)>], iterator_types = ["parallel", "parallel"]} ins(%p : tensor<4x768xf32>) outs(%e16 : tensor<4x768xf16>) {
  ^bb0(%a: f32, %o: f16):
    %0 = arith.truncf %a : f32 to f16
    linalg.yield %0 : f16
  } -> tensor<4x768xf16>
  return %r : tensor<4x768xf16>
}

// -----

// CHECK-LABEL: func.func @dynamic
// CHECK: mha.lowering_config = #mha.lowering_config<workgroup_tile = [64, 64], mma = [16, 8, 16], warps = 4, pipeline_stages = 4>
// TILE-LABEL: func.func @dynamic
// TILE: mha.lowering_config = #mha.lowering_config<workgroup_tile = [64, 128], mma = [16, 8, 16], warps = 4, pipeline_stages = 3>
func.func @dynamic(%x: tensor<?x768xf16>, %w: tensor<768x768xf16>) -> tensor<?x768xf16> {
  %c0 = arith.constant 0 : index
  %rows = tensor.dim %x, %c0 : tensor<?x768xf16>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty(%rows) : tensor<?x768xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<?x768xf32>) -> tensor<?x768xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : tensor<?x768xf16>, tensor<768x768xf16>) outs(%acc : tensor<?x768xf32>) {
  ^bb0(%a: f16, %b: f16, %o: f32):
    %0 = arith.extf %a : f16 to f32
    %1 = arith.extf %b : f16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %o, %2 : f32
    linalg.yield %3 : f32
  } -> tensor<?x768xf32>
  %e16 = tensor.empty(%rows) : tensor<?x768xf16>
  %r = linalg.generic {indexing_maps = [affine_map<(m, n) -> (m, n)>, affine_map<(m, n) -> (m, n)>], iterator_types = ["parallel", "parallel"]} ins(%p : tensor<?x768xf32>) outs(%e16 : tensor<?x768xf16>) {
  ^bb0(%a: f32, %o: f16):
    %0 = arith.truncf %a : f32 to f16
    linalg.yield %0 : f16
  } -> tensor<?x768xf16>
  return %r : tensor<?x768xf16>
}

// -----

// Written on the op: its fields kept, the others the rules' (the stages
// for its tile); an option overrides them.
// CHECK-LABEL: func.func @given
// CHECK: mha.lowering_config = #mha.lowering_config<workgroup_tile = [128, 128], mma = [16, 8, 16], warps = 8, pipeline_stages = 2>
// TILE-LABEL: func.func @given
// TILE: mha.lowering_config = #mha.lowering_config<workgroup_tile = [64, 128], mma = [16, 8, 16], warps = 8, pipeline_stages = 3>
func.func @given(%x: tensor<512x768xf16>, %w: tensor<768x768xf16>) -> tensor<512x768xf16> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<512x768xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<512x768xf32>) -> tensor<512x768xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : tensor<512x768xf16>, tensor<768x768xf16>) outs(%acc : tensor<512x768xf32>) attrs = {mha.lowering_config = #mha.lowering_config<mma = [16, 8, 16], warps = 8, workgroup_tile = [128, 128]>} {
  ^bb0(%a: f16, %b: f16, %o: f32):
    %0 = arith.extf %a : f16 to f32
    %1 = arith.extf %b : f16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %o, %2 : f32
    linalg.yield %3 : f32
  } -> tensor<512x768xf32>
  %e16 = tensor.empty() : tensor<512x768xf16>
  %r = linalg.generic {indexing_maps = [affine_map<(m, n) -> (m, n)>, affine_map<(m, n) -> (m, n)>], iterator_types = ["parallel", "parallel"]} ins(%p : tensor<512x768xf32>) outs(%e16 : tensor<512x768xf16>) {
  ^bb0(%a: f32, %o: f16):
    %0 = arith.truncf %a : f32 to f16
    linalg.yield %0 : f16
  } -> tensor<512x768xf16>
  return %r : tensor<512x768xf16>
}
