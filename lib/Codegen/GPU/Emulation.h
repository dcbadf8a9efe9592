//===- Emulation.h - Matrix ops of GPU kernels without them -----*- C++ -*-===//
//
// What mha-emulate-tensor-cores shares between its two parts: the nvgpu ops
// of the CUDA tensor-core kernels (EmulateTensorCores.cpp) and the GPU
// dialect's subgroup matrix ops of the cooperative-matrix kernel
// (EmulateCoopMatrix.cpp). Internal to lib/Codegen/GPU.
//
//===----------------------------------------------------------------------===//

#ifndef MHA_LIB_CODEGEN_GPU_EMULATION_H
#define MHA_LIB_CODEGEN_GPU_EMULATION_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::mha::detail {

/// Fails, with an error at `op` (an exchange between lanes), where it is
/// not reached by every thread of `launch` alike: its barriers need all of
/// them, so it must be outside conditionals (loops are taken to run alike
/// in all threads, as the kernels' own barriers need).
LogicalResult checkUniform(Operation *op, gpu::LaunchOp launch);

/// Every vector value in `launch` as scalars (SPIR-V has no n-D vectors).
LogicalResult scalarizeVectors(gpu::LaunchOp launch);

/// The subgroup matrix ops (gpu.subgroup_mma_*) of `launch` emulated, their
/// matrices as vectors of each lane's elements; true where it had any,
/// failure with an error where one cannot be emulated.
FailureOr<bool> emulateCoopMatrixOps(RewriterBase &rewriter,
                                     gpu::LaunchOp launch);

} // namespace mlir::mha::detail

#endif // MHA_LIB_CODEGEN_GPU_EMULATION_H
