//===- Pipelines.cpp - MHA end-to-end pipelines -----------------*- C++ -*-===//

#include "mha/Pipelines/Pipelines.h"

#include "mha/Dialect/MHA/Transforms/Passes.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void mha::buildLowerToLoopsPipeline(OpPassManager &pm,
                                    const LowerToLoopsOptions &options) {
  // mha ops -> linalg on tensors.
  OpPassManager &funcPm = pm.nest<func::FuncOp>();
  funcPm.addPass(createMHADecomposePass());
  funcPm.addPass(createMHAAttentionToLinalgPass());
  funcPm.addPass(createCanonicalizerPass());

  // Tensors -> buffers. Identity layouts at function boundaries keep the
  // calling convention plain (contiguous row-major memrefs).
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  bufferization::buildBufferDeallocationPipeline(pm);
  pm.addPass(createConvertBufferizationToMemRefPass());

  // Buffers -> loops -> LLVM. lower-affine comes after the passes that make
  // affine.apply ops: linalg-to-loops (head split, GQA head mapping) and
  // expand-strided-metadata (offsets of dynamic subviews, from tiling).
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  if (options.emitCInterface)
    pm.addNestedPass<func::FuncOp>(LLVM::createLLVMRequestCWrappersPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void mha::registerMHAPipelines() {
  PassPipelineRegistration<LowerToLoopsOptions>(
      "mha-lower-to-loops",
      "Lower mha ops to the LLVM dialect through the reference path "
      "(materialized scores, scalar loops)",
      buildLowerToLoopsPipeline);
}
