//===- Passes.td - Conversions between dialects ------------*- tablegen -*-===//
//
// Conversions between dialects. Each pass is a thin wrapper around a library
// function that transform ops and users' own pipelines call as well.
//
//===----------------------------------------------------------------------===//

#ifndef MHA_CONVERSION_PASSES_TD
#define MHA_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def MHAGPUToSPIRVPass : Pass<"mha-gpu-to-spirv", "::mlir::ModuleOp"> {
  let summary = "Convert each gpu.module's kernels into a spirv.module nested "
                "in it";
  let description = [{
    For every `gpu.module`, converts a copy of its contents with upstream's
    SPIR-V conversion patterns (GPU, func, arith, math, index, memref, vector,
    SCF, UB; memory spaces mapped to Vulkan storage classes) under the
    module's `spirv.target_env` (from `spirv-attach-target`), and leaves the
    resulting `spirv.module` inside the `gpu.module`: where
    `gpu-module-to-binary` looks for it to serialize a SPIR-V binary. The
    kernels themselves stay until then, since the host's `gpu.launch_func`
    ops refer to them. (Upstream's `convert-gpu-to-spirv` puts the
    `spirv.module` next to the `gpu.module` instead, and the nesting variant
    is only a test pass in MLIR 22.) Kernels need a
    `spirv.entry_point_abi` attribute (workgroup size); anything the patterns
    do not convert is an error naming the op.
  }];
  let dependentDialects = ["::mlir::spirv::SPIRVDialect"];
}

#endif // MHA_CONVERSION_PASSES_TD
