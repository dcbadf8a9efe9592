// RUN: mha-opt %s --split-input-file --verify-diagnostics --mha-select-lowering-config="target={#mha.target<kind = vulkan, max_workgroup_threads = 1024>}"
// RUN: echo 'module {}' | not mha-opt --mha-select-lowering-config="target={#mha.target<kind = cpu>}" 2>&1 | FileCheck %s --check-prefix=TARGET
// RUN: echo 'module {}' | not mha-opt --mha-select-lowering-config="overrides=3" 2>&1 | FileCheck %s --check-prefix=OVERRIDES
// RUN: echo 'module {}' | not mha-opt --mha-select-lowering-config="target={#mha.target<kind = cuda>} overrides={#mha.lowering_config<q_tile = 0>}" 2>&1 | FileCheck %s --check-prefix=ZERO

// TARGET: error: vector_bits must be a positive multiple of 32 on a cpu target, found 0
// TARGET: error: 'target' must be a #mha.target, found '#mha.target<kind = cpu>'
// OVERRIDES: error: 'overrides' must be a #mha.lowering_config, found '3'
// ZERO: error: q_tile must be positive, found 0

// A thread count the tile cannot feed.
// expected-error @+1 {{lowering_config: 64 threads per workgroup cannot be fed by workgroup tiles of 32 rows (one row per thread at least)}}
func.func @rows(%x: tensor<4x4xf32>) -> tensor<4x4xf32>
    attributes {mha.lowering_config = #mha.lowering_config<workgroup_tile = [32, 64], threads = 64>} {
  return %x : tensor<4x4xf32>
}

// -----

func.func @query_rows(%q: tensor<1x2x100x16xf32>, %init: tensor<1x2x100x16xf32>) -> tensor<1x2x100x16xf32>
    attributes {mha.lowering_config = #mha.lowering_config<threads = 64>} {
  // expected-error @+1 {{lowering_config: 64 threads per workgroup cannot be fed by a query tile of 16 rows (one row per thread at least)}}
  %o = mha.attention ins(%q, %q, %q : tensor<1x2x100x16xf32>, tensor<1x2x100x16xf32>, tensor<1x2x100x16xf32>) outs(%init : tensor<1x2x100x16xf32>)
    {mha.lowering_config = #mha.lowering_config<q_tile = 16>} -> tensor<1x2x100x16xf32>
  return %o : tensor<1x2x100x16xf32>
}

// -----

// expected-error @+1 {{lowering_config: 2048 threads per workgroup exceed the target's 1024 (max_workgroup_threads)}}
func.func @too_many(%x: tensor<4x4xf32>) -> tensor<4x4xf32>
    attributes {mha.lowering_config = #mha.lowering_config<threads = 2048>} {
  return %x : tensor<4x4xf32>
}

// -----

// expected-error @+1 {{lowering_config: register_tile and chunk have no meaning on a vulkan target}}
func.func @cpu_fields(%x: tensor<4x4xf32>) -> tensor<4x4xf32>
    attributes {mha.lowering_config = #mha.lowering_config<register_tile = [8, 32]>} {
  return %x : tensor<4x4xf32>
}

// -----

// The configuration's own checks (attribute verifiers).
// expected-error @+1 {{q_tile must be positive, found -3}}
func.func @negative() attributes {mha.lowering_config = #mha.lowering_config<q_tile = -3>} {
  return
}

// -----

// expected-error @+1 {{register_tile must have 2 entries [rows, cols], found 3}}
func.func @three() attributes {mha.lowering_config = #mha.lowering_config<register_tile = [1, 2, 3]>} {
  return
}

// -----

// expected-error @+1 {{mma must be [16, 8, 16] (m16n8k16: f16 or bf16 operands) or [16, 8, 8] (m16n8k8: f32 operands as TF32) on CUDA, or [16, 16, 16] (cooperative matrices: f16 operands) on Vulkan, f32 accumulation, found [16, 8, 4]}}
func.func @mma_shape() attributes {mha.lowering_config = #mha.lowering_config<mma = [16, 8, 4], warps = 4>} {
  return
}

// -----

// expected-error @+1 {{warps needs mma (the warp-level kernel)}}
func.func @warps_alone() attributes {mha.lowering_config = #mha.lowering_config<warps = 4>} {
  return
}

// -----

// expected-error @+1 {{pipeline_stages needs mma (the tensor-core GEMM kernel)}}
func.func @stages_alone() attributes {mha.lowering_config = #mha.lowering_config<pipeline_stages = 3>} {
  return
}

// -----

// expected-error @+1 {{pipeline_stages must be positive, found 0}}
func.func @stages_zero() attributes {mha.lowering_config = #mha.lowering_config<mma = [16, 8, 16], pipeline_stages = 0>} {
  return
}

// -----

// expected-error @+1 {{thread_tile (the register kernel) and mma (the tensor-core kernel) exclude each other}}
func.func @thread_tile_mma() attributes {mha.lowering_config = #mha.lowering_config<mma = [16, 8, 16], warps = 4, thread_tile = [4, 4]>} {
  return
}

// -----

// expected-error @+1 {{thread_tile must have 2 entries [rows, keys], found 1}}
func.func @thread_tile_one() attributes {mha.lowering_config = #mha.lowering_config<thread_tile = [4]>} {
  return
}

// -----

// expected-error @+1 {{thread_tile must be positive, found [0, 4]}}
func.func @thread_tile_zero() attributes {mha.lowering_config = #mha.lowering_config<thread_tile = [0, 4]>} {
  return
}

// -----

// expected-error @+1 {{warps must be positive, found 0}}
func.func @zero_warps() attributes {mha.lowering_config = #mha.lowering_config<mma = [16, 8, 16], warps = 0>} {
  return
}

// -----

// expected-error @+1 {{workgroup_tile must be positive, found [0, 64]}}
func.func @zero_rows() attributes {mha.lowering_config = #mha.lowering_config<workgroup_tile = [0, 64]>} {
  return
}

// -----

// expected-error @+1 {{'mha.lowering_config' must be a #mha.lowering_config, found 3 : i64}}
func.func @not_a_config() attributes {mha.lowering_config = 3} {
  return
}

// -----

// expected-error @+1 {{'mha.target' must be a #mha.target, found "cpu"}}
module attributes {mha.target = "cpu"} {
}

// -----

// expected-error @+1 {{vector_bits has no meaning on a cuda target}}
module attributes {mha.target = #mha.target<kind = cuda, vector_bits = 512>} {
}

// -----

// expected-error @+1 {{GPU limits must be non-negative (0: unknown)}}
module attributes {mha.target = #mha.target<kind = cuda, max_workgroup_memory_optin = -1>} {
}

// -----

// expected-error @+1 {{max_workgroup_memory_optin (32768) must be at least max_workgroup_memory (49152)}}
module attributes {mha.target = #mha.target<kind = cuda, max_workgroup_memory = 49152, max_workgroup_memory_optin = 32768>} {
}

// -----

// expected-error @+1 {{subgroup_size, max_workgroup_threads and max_workgroup_memory(_optin) have no meaning on a cpu target}}
module attributes {mha.target = #mha.target<kind = cpu, vector_bits = 256, max_workgroup_memory_optin = 65536>} {
}
