// RUN: mha-opt %s --split-input-file --allow-unregistered-dialect --mha-check-lowered -verify-diagnostics | FileCheck %s

// LLVM-dialect functions, a module around them, an embedded GPU binary and
// its launch are what the translation to LLVM IR takes: nothing to report.

// CHECK-LABEL: llvm.func @lowered
module attributes {gpu.container_module} {
  gpu.binary @kernels [#gpu.object<#nvvm.target, "">]
  llvm.func @lowered(%x: f32) -> f32 {
    %c1 = llvm.mlir.constant(1 : i64) : i64
    gpu.launch_func @kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) : i64
    llvm.return %x : f32
  }
}

// -----

// An op no conversion took is named at its own location; the casts around
// it are not reported (they are the symptom).
llvm.func @leftover(%x: f32) -> f32 {
  %t = builtin.unrealized_conversion_cast %x : f32 to tensor<4xf32>
  // expected-error @+1 {{'linalg.softmax' was not lowered to the LLVM dialect: the pipeline has no lowering for it}}
  %s = linalg.softmax dimension(0) ins(%t : tensor<4xf32>) outs(%t : tensor<4xf32>) -> tensor<4xf32>
  %r = builtin.unrealized_conversion_cast %s : tensor<4xf32> to f32
  llvm.return %r : f32
}

// -----

// Only the outermost op of a region that was left is reported.
// expected-error @+1 {{'func.func' was not lowered to the LLVM dialect}}
func.func @not_lowered(%x: f32) -> f32 {
  %y = arith.addf %x, %x : f32
  return %y : f32
}

// -----

// With nothing else left, an unresolved cast is the error.
llvm.func @cast_only(%x: f32) -> i32 {
  // expected-error @+1 {{a type conversion was left unresolved: 'builtin.unrealized_conversion_cast' from 'f32' to 'i32'}}
  %r = builtin.unrealized_conversion_cast %x : f32 to i32
  llvm.return %r : i32
}

// -----

// A function marked device-resident that no pass made so (a CPU pipeline):
// its callers would pass device buffers and expect its results in theirs.
// expected-error @below {{@resident is marked 'mha.device_resident', which this pipeline does not honour: only the GPU pipelines (mha-stage-kernel-buffers) keep a function's buffers on the device}}
llvm.func @resident() attributes {mha.device_resident} {
  llvm.return
}

// -----

// Made so: mha.device_results says where its results went.
// CHECK-LABEL: llvm.func @made_resident
llvm.func @made_resident() attributes {mha.device_resident, mha.device_results = array<i64>} {
  llvm.return
}
