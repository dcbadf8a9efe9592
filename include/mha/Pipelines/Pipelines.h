//===- Pipelines.h - MHA end-to-end pipelines -------------------*- C++ -*-===//
//
// The registered pipelines that take `mha` ops all the way down, as option
// structs and build functions so that compiler stacks can add them to their own
// pass managers.
//
//===----------------------------------------------------------------------===//

#ifndef MHA_PIPELINES_PIPELINES_H
#define MHA_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassOptions.h"

namespace mlir {
class OpPassManager;

namespace mha {

/// Options of `mha-lower-to-loops`.
struct LowerToLoopsOptions : public PassPipelineOptions<LowerToLoopsOptions> {
  PassOptions::Option<bool> emitCInterface{
      *this, "emit-c-interface",
      llvm::cl::desc("Give every function a `_mlir_ciface_` wrapper taking "
                     "memref descriptors by pointer, for callers in C"),
      llvm::cl::init(false)};
};

/// The reference path, from `mha` ops on tensors to the LLVM dialect:
/// mha-decompose, mha-attention-to-linalg, one-shot bufferization (function
/// boundaries included, identity layouts), buffer deallocation, linalg to
/// scf loops, and the conversions to LLVM. Runs on a builtin.module.
void buildLowerToLoopsPipeline(OpPassManager &pm,
                               const LowerToLoopsOptions &options);

/// Options of `mha-lower-to-cpu`.
struct LowerToCPUOptions : public PassPipelineOptions<LowerToCPUOptions> {
  PassOptions::Option<int64_t> qTileSize{
      *this, "q-tile-size", llvm::cl::desc("Queries per tile"),
      llvm::cl::init(64)};
  PassOptions::Option<int64_t> kvTileSize{
      *this, "kv-tile-size", llvm::cl::desc("Keys per online-softmax step"),
      llvm::cl::init(64)};
  PassOptions::Option<bool> emitCInterface{
      *this, "emit-c-interface",
      llvm::cl::desc("Give every function a `_mlir_ciface_` wrapper taking "
                     "memref descriptors by pointer, for callers in C"),
      llvm::cl::init(false)};
};

/// The tiled path, from `mha` ops on tensors to the LLVM dialect:
/// mha-fuse-layer (the whole layer in one loop nest: projections fused around
/// FlashAttention-2, no [Sq, Sk] buffer, causal tiles above the diagonal
/// skipped), mha-tile-attention for standalone mha.attention ops, then
/// bufferization and the conversions to LLVM as in the loops pipeline.
void buildLowerToCPUPipeline(OpPassManager &pm,
                             const LowerToCPUOptions &options);

/// Registers `mha-lower-to-loops` (and later pipelines) with the global
/// pipeline registry.
void registerMHAPipelines();

} // namespace mha
} // namespace mlir

#endif // MHA_PIPELINES_PIPELINES_H
