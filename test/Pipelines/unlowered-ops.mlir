// An op no stage of a pipeline lowers (here a SPIR-V op in host code, which
// none of the conversions to the LLVM dialect takes) stops the pipeline with
// an error at that op (mha-check-lowered), instead of LLVM-dialect output
// that only the translation to LLVM IR would reject, without naming it.
//
// RUN: mha-opt %s --mha-lower-to-loops -verify-diagnostics -o /dev/null
// RUN: mha-opt %s --mha-lower-to-cpu -verify-diagnostics -o /dev/null
// RUN: mha-opt %s --mha-lower-to-vulkan -verify-diagnostics -o /dev/null
// RUN: mha-opt %s --mha-lower-to-cuda -verify-diagnostics -o /dev/null
// mha-run says the same and exits 1.
// RUN: not mha-run %s --pipeline=cpu --random-inputs 2>&1 | FileCheck %s
// CHECK: unlowered-ops.mlir:{{[0-9]+}}:8: error: 'spirv.GL.Exp' was not lowered to the LLVM dialect: the pipeline has no lowering for it

func.func @main(%x: tensor<4xf32>) -> tensor<1xf32> {
  %c0 = arith.constant 0 : index
  %e = tensor.extract %x[%c0] : tensor<4xf32>
  // expected-error @+1 {{'spirv.GL.Exp' was not lowered to the LLVM dialect: the pipeline has no lowering for it}}
  %g = spirv.GL.Exp %e : f32
  %r = tensor.from_elements %g : tensor<1xf32>
  return %r : tensor<1xf32>
}
