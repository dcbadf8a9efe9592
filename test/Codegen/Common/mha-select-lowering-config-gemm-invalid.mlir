// What the tensor-core GEMM kernel cannot take, refused where the
// configuration is chosen (mha-select-lowering-config).
// RUN: mha-opt %s --split-input-file --verify-diagnostics --mha-select-lowering-config="target={#mha.target<kind = cuda, chip = \"sm_80\", max_workgroup_memory = 49152>}"
// RUN: not mha-opt %s --split-input-file --mha-select-lowering-config="target={#mha.target<kind = cuda, chip = \"sm_80\", max_workgroup_memory = 49152>} gemm-tile=64" 2>&1 | FileCheck %s --check-prefix=ONE
// RUN: not mha-opt %s --split-input-file --mha-select-lowering-config="target={#mha.target<kind = cuda, chip = \"sm_80\", max_workgroup_memory = 49152>} gemm-stages=1" 2>&1 | FileCheck %s --check-prefix=STAGE1

// ONE: error: 'gemm-tile' must be two positive sizes [rows, cols], found [64]
// STAGE1: error: lowering_config: the tensor-core GEMM kernel takes 2 to 8 pipeline_stages (one multiplied while the others are copied), found 1

func.func @warps3(%x: tensor<512x768xf16>, %w: tensor<768x768xf16>) -> tensor<512x768xf16> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<512x768xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<512x768xf32>) -> tensor<512x768xf32>
  // expected-error @+1 {{lowering_config: the tensor-core GEMM kernel takes 1, 2, 4 or 8 warps, found 3}}
  %p = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : tensor<512x768xf16>, tensor<768x768xf16>) outs(%acc : tensor<512x768xf32>) attrs = {mha.lowering_config = #mha.lowering_config<mma = [16, 8, 16], warps = 3>} {
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

func.func @wide(%x: tensor<512x768xf16>, %w: tensor<768x768xf16>) -> tensor<512x768xf16> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<512x768xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<512x768xf32>) -> tensor<512x768xf32>
  // expected-error @+1 {{lowering_config: the tensor-core GEMM kernel splits workgroup_tile [256, 64] over 2 x 2 warps, each of whose shares must be a multiple of 16 by 16 up to 64 by 64 (its accumulators are registers)}}
  %p = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : tensor<512x768xf16>, tensor<768x768xf16>) outs(%acc : tensor<512x768xf32>) attrs = {mha.lowering_config = #mha.lowering_config<mma = [16, 8, 16], warps = 4, workgroup_tile = [256, 64]>} {
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

func.func @odd(%x: tensor<512x768xf16>, %w: tensor<768x768xf16>) -> tensor<512x768xf16> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<512x768xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<512x768xf32>) -> tensor<512x768xf32>
  // expected-error @+1 {{lowering_config: the tensor-core GEMM kernel splits workgroup_tile [48, 64] over 2 x 1 warps, each of whose shares must be a multiple of 16 by 16 up to 64 by 64 (its accumulators are registers)}}
  %p = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : tensor<512x768xf16>, tensor<768x768xf16>) outs(%acc : tensor<512x768xf32>) attrs = {mha.lowering_config = #mha.lowering_config<mma = [16, 8, 16], warps = 2, workgroup_tile = [48, 64]>} {
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

func.func @copies(%x: tensor<512x768xf16>, %w: tensor<768x768xf16>) -> tensor<512x768xf16> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<512x768xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<512x768xf32>) -> tensor<512x768xf32>
  // expected-error @+1 {{lowering_config: the tensor-core GEMM kernel copies its tiles in 16-byte chunks, as many per thread: workgroup_tile [32, 64] must be multiples of 64 for 8 warps}}
  %p = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : tensor<512x768xf16>, tensor<768x768xf16>) outs(%acc : tensor<512x768xf32>) attrs = {mha.lowering_config = #mha.lowering_config<mma = [16, 8, 16], warps = 8, workgroup_tile = [32, 64]>} {
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

func.func @memory(%x: tensor<512x768xf16>, %w: tensor<768x768xf16>) -> tensor<512x768xf16> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<512x768xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<512x768xf32>) -> tensor<512x768xf32>
  // expected-error @+1 {{lowering_config: the tensor-core GEMM kernel needs 56832 bytes of workgroup memory for 3 stages of [128, 128] tiles, over the target's 49152 (max_workgroup_memory)}}
  %p = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : tensor<512x768xf16>, tensor<768x768xf16>) outs(%acc : tensor<512x768xf32>) attrs = {mha.lowering_config = #mha.lowering_config<mma = [16, 8, 16], warps = 4, workgroup_tile = [128, 128], pipeline_stages = 3>} {
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

// Stages are the GEMM kernel's: refused on the attention, whose kernels keep
// their own order of copies.
func.func @attention_stages(%q: tensor<1x2x64x64xf16>) -> tensor<1x2x64x64xf16> {
  // expected-error @+1 {{lowering_config: pipeline_stages applies to the tensor-core GEMM kernel's contractions only, not to mha.attention}}
  %o = mha.attention ins(%q, %q, %q : tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16>) outs(%q : tensor<1x2x64x64xf16>) {mha.lowering_config = #mha.lowering_config<q_tile = 64, kv_tile = 64, mma = [16, 8, 16], warps = 4, pipeline_stages = 2>} -> tensor<1x2x64x64xf16>
  return %o : tensor<1x2x64x64xf16>
}
