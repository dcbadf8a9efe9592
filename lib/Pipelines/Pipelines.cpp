//===- Pipelines.cpp - MHA end-to-end pipelines -----------------*- C++ -*-===//
//
// The pipelines are sequences of stages, each a function that other
// pipelines (the GPU ones) reuse:
//
//   tiling (tensors) -> decomposition (linalg on tensors) -> [vectorization]
//     -> bufferization -> lowering to LLVM (CPU)
//
// The vectorization of the CPU path goes between decomposition and
// bufferization, where the ops are linalg on tensors inside the loop nest.
//
//===----------------------------------------------------------------------===//

#include "mha/Pipelines/Pipelines.h"

#include "mha/Codegen/CPU/Passes.h"
#include "mha/Codegen/Common/Passes.h"
#include "mha/Codegen/GPU/Passes.h"
#include "mha/Conversion/Passes.h"
#include "mha/Dialect/MHA/Transforms/Passes.h"
#include "mha/InputConversion/Passes.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/TosaToLinalg/TosaToLinalg.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Pipelines/Passes.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/Dialect/SPIRV/Transforms/Passes.h"
#include "mlir/Dialect/Vector/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::mha;

// The mha passes run on the whole module (they walk it), so mha ops in
// nested modules or in functions of any kind are lowered too.

// The start of every pipeline: attention that frontends wrote as linalg or
// TOSA ops raised to mha ops (before TOSA becomes linalg: the raise reads
// both), the TOSA left lowered as upstream's TOSA-to-linalg pipeline does,
// run-time checks of the mha ops' dynamic sizes, and the upstream ops
// frontends emit around attention in forms the later stages lower:
// aggregates (linalg.softmax) decomposed into linalg ops, elementwise
// arith/math ops on tensors as linalg.generic.
void mha::buildEntryStage(OpPassManager &pm, bool raiseAttention,
                          bool forGPU) {
  // The caller's arrays are not the compiled code's scratch space: only the
  // arguments a result is written into (KV caches) stay writable.
  pm.addPass(createMHAMarkReadOnlyArgumentsPass());
  if (raiseAttention)
    pm.addPass(createMHARaiseAttentionPass());
  tosa::addTosaToLinalgPasses(pm, TosaToLinalgOptions());
  pm.addNestedPass<func::FuncOp>(createTosaToTensorPass());
  pm.addNestedPass<func::FuncOp>(createTosaToArithPass());
  pm.addPass(createMHAInsertRuntimeChecksPass());
  if (forGPU) {
    // The layers decomposed, and i1 masks made additive before the
    // attention weights become linalg, which would read i1 in a kernel.
    pm.addPass(createMHADecomposePass());
    pm.addPass(createMHAAdditiveMaskPass());
  } else {
    // The layers not fused (KV caches, rotary, weights) decomposed before
    // the strategy is chosen, so that their attention gets one (decoding:
    // the key split) and their caches and rotations are decomposed below;
    // their projections on threads.
    pm.addPass(createMHADecomposePass(
        MHADecomposePassOptions{/*unfusedOnly=*/true, /*projectionRows=*/64}));
  }
  // A decoding step's cache writes: a workgroup per batch and head on a GPU
  // (the caches stay on the device), a serial loop on the CPU (too few
  // elements for a parallel region to pay off).
  pm.addPass(createMHADecomposeAggregatesPass(
      MHADecomposeAggregatesPassOptions{/*serialCacheAppends=*/!forGPU}));
  pm.addNestedPass<func::FuncOp>(createConvertElementwiseToLinalgPass());
}

/// The text of a #mha.lowering_config of the given fields (0: not given);
/// empty when none is.
static std::string overridesText(int64_t qTile, int64_t kvTile,
                                 int64_t kvSplits) {
  std::string fields;
  llvm::raw_string_ostream os(fields);
  for (auto [name, value] :
       {std::pair<StringRef, int64_t>{"q_tile", qTile},
        {"kv_tile", kvTile},
        {"kv_splits", kvSplits}})
    // A size that is not positive stays with the passes, whose error names
    // the op.
    if (value > 0)
      os << (fields.empty() ? "" : ", ") << name << " = " << value;
  return fields.empty() ? "" : "#mha.lowering_config<" + fields + ">";
}

void mha::buildStrategyStage(OpPassManager &pm, StringRef target,
                             const StrategyOptions &options) {
  MHASelectLoweringConfigPassOptions select;
  select.target = target.str();
  select.overrides = options.overrides;
  select.allowTF32 = options.allowTF32;
  select.gemmTile = options.gemmTile;
  select.gemmStages = options.gemmStages;
  pm.addPass(createMHASelectLoweringConfigPass(select));
}

void mha::buildTilingStage(OpPassManager &pm, int64_t qTileSize,
                           int64_t kvTileSize, int64_t kvSplits,
                           bool raiseAttention, StringRef target) {
  buildEntryStage(pm, raiseAttention);
  StrategyOptions strategy;
  strategy.overrides = overridesText(qTileSize, kvTileSize, kvSplits);
  buildStrategyStage(pm, target, strategy);
  pm.addPass(createMHAFuseLayerPass(
      MHAFuseLayerPassOptions{qTileSize, kvTileSize, /*decompose=*/false}));
  pm.addPass(createMHATileAttentionPass(
      MHATileAttentionPassOptions{qTileSize, kvTileSize, /*decompose=*/false}));
}

void mha::buildDecompositionStage(OpPassManager &pm) {
  pm.addPass(createMHADecomposePass());
  pm.addPass(createMHAAttentionToLinalgPass());
  pm.addPass(createCanonicalizerPass());
  // What a key block computes from the query tile alone (the scaled query)
  // moves out of the key loop.
  pm.addPass(createLoopInvariantCodeMotionPass());
}

void mha::buildVectorizationStage(OpPassManager &pm,
                                  const LowerToCPUOptions &options) {
  MHAVectorizePassOptions vectorize;
  vectorize.vectorWidth = options.vectorWidth;
  vectorize.registerTileRows = options.registerTileRows;
  vectorize.registerTileCols = options.registerTileCols;
  vectorize.chunk = options.chunk;
  vectorize.packMinStride = options.packMinStride;
  vectorize.panelReductionTile = options.panelReductionTile;
  pm.addPass(createMHAVectorizePass(vectorize));
  // Everything that reads the lowering configuration has run.
  pm.addPass(createMHADropLoweringConfigPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // The peeled loops run as one parallel loop after bufferization: each gets
  // its own buffers, whatever its trip count. Last, or CSE would undo it.
  pm.addPass(createMHAPrivatizePeeledLoopsPass());
}

/// One-shot bufferization of the whole module. Identity layouts at function
/// boundaries keep the calling convention plain (contiguous row-major
/// memrefs).
static void addOneShotBufferize(OpPassManager &pm) {
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
}

void mha::buildBufferizationStage(OpPassManager &pm) {
  // Last on tensors: what the weights alone give (the vectorizer's packed
  // panels) is computed by an entry of its own, once.
  pm.addPass(createMHAOutlineWeightPreparationPass());
  addOneShotBufferize(pm);
  // Tiles written back where they were read from bufferize to copies between
  // identical subviews; CSE makes them self-copies, which fold away.
  pm.addNestedPass<func::FuncOp>(createCSEPass());
  pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
  // Buffers of static size that live within one iteration of an scf.for (a
  // key block's kᵀ, scores, row max and sum) allocated once before the loop
  // rather than malloc'ed and freed per block. Upstream's hoisting stops at
  // scf.forall, so each thread keeps its own.
  pm.addNestedPass<func::FuncOp>(bufferization::createBufferLoopHoistingPass());
  bufferization::buildBufferDeallocationPipeline(pm);
  // An argument updated in place (a KV cache) returned as itself, not as a
  // copy the caller would own.
  pm.addPass(createMHAReturnArgumentsInPlacePass());
  pm.addPass(createConvertBufferizationToMemRefPass());
}

/// Math ops of host code: those LLVM has intrinsics for become them, the
/// rest (math.erf of a GELU next to the attention, ...) libm calls. GPU
/// pipelines run it once the kernels are binaries (libm calls are host-only).
static void addMathToLLVM(OpPassManager &pm) {
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
}

void mha::buildCPUToLLVMStage(OpPassManager &pm, bool emitCInterface,
                              bool openMP) {
  // Buffers -> loops -> LLVM. The tiled loop nest's scf.forall becomes an
  // OpenMP parallel loop (scf.parallel -> omp.wsloop, LLVM's libomp at run
  // time), or a serial scf.for. lower-affine comes after the passes that
  // make affine.apply ops: linalg-to-loops (head split, GQA head mapping)
  // and expand-strided-metadata (offsets of dynamic subviews, from tiling).
  // The partial tiles' loops shared out with the full ones.
  pm.addPass(createMHARejoinPeeledLoopsPass());
  if (openMP)
    pm.addNestedPass<func::FuncOp>(createForallToParallelLoopPass());
  else
    pm.addNestedPass<func::FuncOp>(createForallToForLoopPass());
  // Copies of strided subviews (partial tiles) as loops LLVM vectorizes, not
  // calls of the runner library's element-by-element memrefCopy.
  pm.addPass(createMHAStridedCopiesToLoopsPass());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  // n-D vector transfers -> 1-D ones (unrolled), then the vector ops
  // -> LLVM with contractions as outer products of FMAs.
  pm.addNestedPass<func::FuncOp>(vector::createLowerVectorMultiReductionPass(
      vector::VectorMultiReductionLowering::InnerReduction));
  pm.addNestedPass<func::FuncOp>(createConvertVectorToSCFPass(
      VectorTransferToSCFOptions().enableFullUnroll()));
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  if (openMP) {
    pm.addPass(createConvertSCFToOpenMPPass());
    pm.addPass(createMHADynamicScheduleOpenMPPass());
  }
  if (emitCInterface)
    pm.addNestedPass<func::FuncOp>(LLVM::createLLVMRequestCWrappersPass());
  addMathToLLVM(pm);
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createSCFToControlFlowPass());
  if (openMP)
    pm.addPass(createConvertOpenMPToLLVMPass());
  ConvertVectorToLLVMPassOptions vectorToLLVM;
  vectorToLLVM.vectorContractLowering =
      vector::VectorContractLowering::OuterProduct;
  vectorToLLVM.vectorTransposeLowering =
      vector::VectorTransposeLowering::Shuffle16x16;
  // Row sums as trees of vector adds rather than one serial chain of scalar
  // adds per row (64 dependent adds per row of a score block). The order is
  // fixed by the vector width, so results stay independent of the threads.
  vectorToLLVM.reassociateFPReductions = true;
  pm.addPass(createConvertVectorToLLVMPass(vectorToLLVM));
  pm.addPass(createConvertToLLVMPass());
  // Boolean masks read as vectors: bytes in memory, not LLVM's packed bits.
  pm.addPass(createMHALegalizeBoolVectorMemoryPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createMHACheckLoweredPass());
}

void mha::buildLowerToLoopsPipeline(OpPassManager &pm,
                                    const LowerToLoopsOptions &options) {
  buildEntryStage(pm, options.raiseAttention);
  buildDecompositionStage(pm);
  buildBufferizationStage(pm);
  buildCPUToLLVMStage(pm, options.emitCInterface, /*openMP=*/false);
}

void mha::buildLowerToCPUPipeline(OpPassManager &pm,
                                  const LowerToCPUOptions &options) {
  // The target's vector width when given (mha-run and mha-aot give their
  // target's), else the module's mha.target, else 512 bits.
  std::string target;
  if (options.vectorWidth.hasValue())
    target = "#mha.target<kind = cpu, vector_bits = " +
             std::to_string(options.vectorWidth) + ">";
  buildTilingStage(pm, options.qTileSize, options.kvTileSize, options.kvSplits,
                   options.raiseAttention, target);
  buildDecompositionStage(pm);
  buildVectorizationStage(pm, options);
  buildBufferizationStage(pm);
  // exp as arithmetic, which LLVM vectorizes, instead of a libm call per
  // element of the softmax.
  pm.addPass(createMHAApproximateExpPass());
  // tanh likewise (softcap).
  pm.addPass(createMHAApproximateTanhPass());
  // The rows of the key blocks ahead prefetched where the configuration
  // asks (decoding from long caches).
  pm.addPass(createMHAPrefetchKeyBlocksPass());
  buildCPUToLLVMStage(pm, options.emitCInterface, options.openMP);
}

/// Lavapipe ends every loop of an invocation once it has run 65535 loop
/// iterations in all: the short innermost kernel loops unrolled (most of a
/// kernel's iterations), then the kernels that could still pass the limit
/// refused. Nothing for a limit of 0.
static void addKernelLoopLimit(OpPassManager &pm,
                               int64_t maxKernelLoopIterations) {
  if (maxKernelLoopIterations <= 0)
    return;
  pm.addPass(mha::createMHAUnrollKernelLoopsPass());
  mha::MHACheckKernelLoopIterationsPassOptions loops;
  loops.maxIterations = maxKernelLoopIterations;
  pm.addPass(mha::createMHACheckKernelLoopIterationsPass(loops));
}

void mha::buildVulkanBackendStage(OpPassManager &pm, bool emitCInterface,
                                  int64_t maxKernelLoopIterations,
                                  bool cooperativeMatrix) {
  addKernelLoopLimit(pm, maxKernelLoopIterations);
  // Constants and index computations into the kernels: the Vulkan calling
  // convention passes buffers only.
  pm.addNestedPass<func::FuncOp>(createGpuLaunchSinkIndexComputationsPass());
  pm.addPass(createGpuKernelOutliningPass());
  // Device buffers (mha-stage-kernel-buffers) are allocated, copied and
  // freed in stream order, as on CUDA; the Vulkan runtime's launches are
  // synchronous and its streams no-ops.
  pm.addNestedPass<func::FuncOp>(createGpuAsyncRegionPass());
  // Views folded into the loads and stores (SPIR-V has no strided views);
  // the index arithmetic that leaves as affine.apply, lowered.
  pm.addPass(memref::createFoldMemRefAliasOpsPass());
  pm.addPass(createLowerAffinePass());
  GpuSPIRVAttachTargetOptions target;
  // 1.3 at most: the subgroup shuffles of the tensor-core kernels (run with
  // their tensor-core ops emulated) need it; spirv-update-vce gives each
  // module the lowest version its ops need.
  target.spirvVersion = "v1.3";
  // The options struct leaves the device id uninitialized (its pass option
  // has no default): unknown, as the command-line pass has it, rather than
  // whatever was on the stack in the target attribute (valgrind's memcheck).
  target.deviceId = spirv::TargetEnvAttr::kUnknownDeviceID;
  // f16 kernels compute in f16 and read f16 buffers (without Float16 and
  // 16-bit storage the SPIR-V conversion would emulate f16 as f32, reading
  // the host's f16 buffers as garbage); spirv-update-vce keeps only what a
  // module uses, so f32 kernels do not require them of the device. Int64:
  // the i64 key lengths (ONNX's nonpad_kv_seqlen) kernels read.
  for (StringRef capability : {"Shader", "Float16", "StorageBuffer16BitAccess",
                               "Int64", "GroupNonUniformShuffle"})
    target.spirvCapabilities.push_back(capability.str());
  for (StringRef extension :
       {"SPV_KHR_storage_buffer_storage_class", "SPV_KHR_16bit_storage"})
    target.spirvExtensions.push_back(extension.str());
  // Cooperative matrices need the Vulkan memory model (core in SPIR-V 1.5),
  // which the conversion then gives every module.
  if (cooperativeMatrix) {
    target.spirvVersion = "v1.6";
    target.spirvCapabilities.push_back("CooperativeMatrixKHR");
    target.spirvCapabilities.push_back("VulkanMemoryModel");
    target.spirvExtensions.push_back("SPV_KHR_cooperative_matrix");
  }
  pm.addPass(createGpuSPIRVAttachTarget(target));
  pm.addPass(createMHAGPUToSPIRVPass());
  OpPassManager &spirvModule =
      pm.nest<gpu::GPUModuleOp>().nest<spirv::ModuleOp>();
  // Kernel arguments as descriptor set 0, binding i; the version,
  // capabilities and extensions the module really needs.
  spirvModule.addPass(spirv::createSPIRVLowerABIAttributesPass());
  spirvModule.addPass(spirv::createSPIRVUpdateVCEPass());
  pm.addPass(createGpuModuleToBinaryPass());

  // Host code. The runtime binds buffers from (pointer, size) pairs. Views
  // the host passes to kernels (a bias reshaped per head) as descriptor
  // arithmetic first.
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  if (emitCInterface)
    pm.addNestedPass<func::FuncOp>(LLVM::createLLVMRequestCWrappersPass());
  addMathToLLVM(pm);
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  GpuToLLVMConversionPassOptions host;
  host.hostBarePtrCallConv = false;
  host.kernelBarePtrCallConv = true;
  host.kernelIntersperseSizeCallConv = true;
  pm.addPass(createGpuToLLVMConversionPass(host));
  pm.addPass(createConvertToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createMHACheckLoweredPass());
}

void mha::buildGPUMappingStage(OpPassManager &pm, StringRef target,
                               const StrategyOptions &strategy,
                               bool raiseAttention,
                               int64_t maxKernelLoopIterations,
                               bool emulateTensorCores) {
  buildEntryStage(pm, raiseAttention, /*forGPU=*/true);
  // Query tiles, workgroup tiles, threads and the tensor-core kernels from
  // one configuration, which keeps them consistent.
  buildStrategyStage(pm, target, strategy);
  // The attention and the projections the configuration gives to tensor
  // cores (CUDA, f16 and bf16) as their own kernels; the rest goes on as
  // tiles with a thread per row.
  pm.addPass(createMHAAttentionToMMAPass());
  pm.addPass(createMHAAttentionToCooperativeMatrixPass());
  pm.addPass(createMHAAttentionToSIMTPass());
  pm.addPass(createMHAContractionToMMAPass());
  pm.addPass(createMHATileForWorkgroupsPass());
  MHATileAttentionPassOptions tile;
  // Kept as a grid of workgroups even when it has one tile.
  tile.workgroups = true;
  pm.addPass(createMHATileAttentionPass(tile));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createMHADistributeToThreadsPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // No deallocation pipeline: the buffers allocated inside kernels are
  // workgroup memory, which lives as long as the workgroup.
  addOneShotBufferize(pm);
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  MHAMapForallToGPUPassOptions map;
  // Emulated kernels run on Vulkan, whose workgroup memory is static.
  map.dynamicWorkgroupMemory = !emulateTensorCores;
  pm.addPass(createMHAMapForallToGPUPass(map));
  // Over the target's shared memory: refused here with the sizes, rather
  // than by ptxas at the end with the whole module.
  pm.addPass(createMHACheckWorkgroupMemoryPass());
  // After the check: the exchange buffers are the emulation's, not the
  // kernel's.
  if (emulateTensorCores)
    pm.addPass(createMHAEmulateTensorCoresPass());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  // Before lower-affine: the value-bounds analysis bounds the loops of
  // partial tiles and causal key ranges through their affine maps.
  addKernelLoopLimit(pm, maxKernelLoopIterations);
  pm.addPass(createLowerAffinePass());
  pm.addPass(createCanonicalizerPass());
  // Everything that reads the lowering configuration has run; the weight
  // marks have no use here.
  pm.addPass(createMHADropLoweringConfigPass(
      MHADropLoweringConfigPassOptions{/*weights=*/true}));
}

/// The tile sizes a GPU pipeline was given, as overrides of the lowering
/// configuration, and its other strategy options. A size given as 0 stays
/// in them (`q_tile = 0`), which the configuration refuses: on a GPU the
/// query tile is the workgroup's rows.
template <typename Options>
static StrategyOptions gpuStrategy(const Options &options) {
  std::string fields;
  if (options.qTileSize.hasValue())
    fields += "q_tile = " + std::to_string(options.qTileSize);
  if (options.kvTileSize.hasValue())
    fields += (fields.empty() ? "" : ", ") + std::string("kv_tile = ") +
              std::to_string(options.kvTileSize);
  if (!options.threadTile.empty()) {
    fields += (fields.empty() ? "" : ", ") + std::string("thread_tile = [");
    for (auto [i, size] : llvm::enumerate(options.threadTile))
      fields += (i ? ", " : "") + std::to_string(size);
    fields += "]";
  }
  StrategyOptions strategy;
  if (!fields.empty())
    strategy.overrides = "#mha.lowering_config<" + fields + ">";
  strategy.allowTF32 = options.allowTF32;
  strategy.gemmTile.assign(options.gemmTile.begin(), options.gemmTile.end());
  strategy.gemmStages = options.gemmStages;
  return strategy;
}

/// The shared memory a CUDA kernel may opt into on `chip` (the CUDA
/// programming guide's table of compute capabilities), in bytes; 0 before
/// sm_80 and for chips not listed.
static int64_t cudaOptInSharedMemory(StringRef chip) {
  int64_t version = 0;
  if (!chip.consume_front("sm_") ||
      chip.take_while(llvm::isDigit).getAsInteger(10, version))
    return 0;
  switch (version) {
  case 80:
  case 87:
    return 163 * 1024;
  case 86:
  case 89:
  case 120:
    return 99 * 1024;
  case 90:
  case 100:
  case 103:
    return 227 * 1024;
  default:
    return 0;
  }
}

/// The `mha.target` of the CUDA pipeline for `chip` and PTX `features`.
static std::string cudaTarget(StringRef chip, StringRef features) {
  std::string target = ("#mha.target<kind = cuda, chip = \"" + chip +
                        "\", features = \"" + features +
                        "\", subgroup_size = 32, max_workgroup_threads = 1024, "
                        "max_workgroup_memory = 49152")
                           .str();
  if (int64_t optin = cudaOptInSharedMemory(chip))
    target += ", max_workgroup_memory_optin = " + std::to_string(optin);
  return target + ">";
}

void mha::buildLowerToVulkanPipeline(OpPassManager &pm,
                                     const LowerToVulkanOptions &options) {
  // No max_workgroup_memory: lavapipe advertises 32 KiB, but whether it
  // refuses more was never checked, so nothing that runs today is refused.
  std::string target = "#mha.target<kind = vulkan, subgroup_size = 32, "
                       "max_workgroup_threads = 1024";
  if (options.cooperativeMatrix)
    target += ", features = \"+cooperative_matrix\"";
  target += ">";
  // The CUDA pipeline's strategy (tensor-core kernels where it has them), so
  // that its kernels run here with their tensor-core ops emulated.
  if (options.emulateTensorCores && !options.cooperativeMatrix)
    target = cudaTarget("sm_80", "+ptx80");
  buildGPUMappingStage(pm, target, gpuStrategy(options), options.raiseAttention,
                       options.maxKernelLoopIterations,
                       options.emulateTensorCores);
  // Kernels read device buffers, as on CUDA: each launch's host buffers
  // copied in and out around it, the buffers only kernels use on the device
  // from the start (the runtime binds them; what it copies per launch are
  // the host buffers of kernels lowered without this pass).
  pm.addPass(createMHAStageKernelBuffersPass());
  // Bounded in the mapping stage, where the loop bounds are still affine.
  buildVulkanBackendStage(pm, /*emitCInterface=*/true,
                          /*maxKernelLoopIterations=*/0,
                          options.cooperativeMatrix &&
                              !options.emulateTensorCores);
}

void mha::buildLowerToCUDAPipeline(OpPassManager &pm,
                                   const LowerToCUDAOptions &options) {
  buildGPUMappingStage(pm, cudaTarget(options.chip, options.features),
                       gpuStrategy(options), options.raiseAttention,
                       /*maxKernelLoopIterations=*/0,
                       /*emulateTensorCores=*/false);
  // CUDA kernels read device memory: each launch's host buffers are copied
  // in and out around it, on one stream (gpu-async-region chains the copies,
  // the launch and the frees with tokens and waits before the host reads).
  // A device-resident entry checks its key lengths in a kernel (NVVM lowers
  // cf.assert): its calls then wait on no copy.
  pm.addPass(createMHAStageKernelBuffersPass(
      MHAStageKernelBuffersPassOptions{/*checksInKernels=*/true}));
  // Constants (the kernel's tile sizes, loop bounds, vector constants) into
  // the kernels: as kernel parameters they would stay in registers, and
  // loops over them would not unroll.
  pm.addNestedPass<func::FuncOp>(createGpuLaunchSinkIndexComputationsPass());
  pm.addPass(createGpuKernelOutliningPass());
  // Shared memory aligned for 16-byte accesses (the tensor-core kernel's
  // staging and ldmatrix, and what the back end vectorizes).
  pm.addPass(createMHAAlignWorkgroupMemoryPass());
  pm.addNestedPass<func::FuncOp>(createGpuAsyncRegionPass());
  NVVMBackendOptions nvvm;
  nvvm.chip = options.chip;
  nvvm.features = options.features;
  nvvm.format = options.format;
  buildNVVMBackendStage(pm, nvvm);
}

void mha::buildNVVMBackendStage(OpPassManager &pm,
                                const NVVMBackendOptions &options) {
  gpu::GPUToNVVMPipelineOptions nvvm;
  nvvm.cubinChip = options.chip;
  nvvm.cubinFeatures = options.features;
  nvvm.cubinFormat = options.format;
  gpu::buildLowerToNVVMPassPipeline(pm, nvvm);
  // Host math ops upstream's pipeline leaves (no LLVM intrinsic for them).
  addMathToLLVM(pm);
  pm.addPass(createConvertToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createMHACheckLoweredPass());
}

/// The pipeline `Build` with its options read from `text` (the options
/// parser prints what is wrong); the cpu pipeline takes `host`'s vector
/// width unless `vector-width` is given.
template <typename Options, void (*Build)(OpPassManager &, const Options &)>
static LogicalResult
buildFromText(OpPassManager &pm, StringRef text, TargetAttr host,
              function_ref<LogicalResult(const Twine &)>) {
  std::unique_ptr<Options> options = Options::createFromString(text);
  if (!options)
    return failure();
  if constexpr (std::is_same_v<Options, LowerToCPUOptions>)
    if (!options->vectorWidth.hasValue() && host && host.getVectorBits())
      options->vectorWidth = host.getVectorBits();
  Build(pm, *options);
  return success();
}

static const PipelineInfo kPipelines[] = {
    {"cpu", TargetKind::CPU,
     "Lower mha ops to the LLVM dialect through the tiled path "
     "(FlashAttention-style online softmax, O(S*d) memory)",
     buildFromText<LowerToCPUOptions, buildLowerToCPUPipeline>},
    {"cuda", TargetKind::CUDA,
     "Lower mha ops to GPU kernels for CUDA (NVVM, a PTX/cubin/fatbin "
     "gpu.binary) and host code in the LLVM dialect: f16/bf16 attention "
     "and projections on tensor cores (sm_80+), the rest as mapped for "
     "mha-lower-to-vulkan, host buffers copied to the device around each "
     "launch, dynamic sizes allowed",
     buildFromText<LowerToCUDAOptions, buildLowerToCUDAPipeline>},
    {"loops", TargetKind::CPU,
     "Lower mha ops to the LLVM dialect through the reference path "
     "(materialized scores, scalar loops)",
     buildFromText<LowerToLoopsOptions, buildLowerToLoopsPipeline>},
    {"vulkan", TargetKind::Vulkan,
     "Lower mha ops to GPU kernels for Vulkan (SPIR-V) and host code in the "
     "LLVM dialect: one workgroup per (batch, head, query tile), the "
     "register kernel (or a thread per query row), host buffers copied to "
     "device buffers around each launch as for cuda",
     buildFromText<LowerToVulkanOptions, buildLowerToVulkanPipeline>},
};

ArrayRef<PipelineInfo> mha::getMHAPipelines() { return kPipelines; }

const PipelineInfo *mha::lookupMHAPipeline(StringRef name) {
  for (const PipelineInfo &pipeline : kPipelines)
    if (pipeline.name == name)
      return &pipeline;
  return nullptr;
}

/// `mha-lower-to-NAME` registered with upstream's pipeline registry (for
/// mha-opt's --pass-pipeline and --help), built as the tools build it.
template <typename Options>
static void registerPipeline(StringRef name,
                             void (*build)(OpPassManager &, const Options &)) {
  const PipelineInfo *info = lookupMHAPipeline(name);
  PassPipelineRegistration<Options>(("mha-lower-to-" + name).str(),
                                    info->description, build);
}

void mha::registerMHAPipelines() {
  registerPipeline<LowerToLoopsOptions>("loops", buildLowerToLoopsPipeline);
  registerPipeline<LowerToCPUOptions>("cpu", buildLowerToCPUPipeline);
  registerPipeline<LowerToVulkanOptions>("vulkan", buildLowerToVulkanPipeline);
  registerPipeline<LowerToCUDAOptions>("cuda", buildLowerToCUDAPipeline);
  PassPipelineRegistration<VulkanBackendOptions>(
      "mha-vulkan-backend",
      "Lower GPU kernels on buffers (gpu.launch) to a Vulkan SPIR-V binary "
      "and host code in the LLVM dialect calling the mgpu* Vulkan runtime",
      [](OpPassManager &pm, const VulkanBackendOptions &options) {
        buildVulkanBackendStage(pm, options.emitCInterface,
                                options.maxKernelLoopIterations,
                                options.cooperativeMatrix);
      });
  PassPipelineRegistration<NVVMBackendOptions>(
      "mha-nvvm-backend",
      "Lower GPU kernels on buffers (gpu.launch) to NVVM and a PTX/cubin "
      "gpu.binary, with host code in the LLVM dialect calling the mgpu* "
      "CUDA runtime",
      buildNVVMBackendStage);
}
