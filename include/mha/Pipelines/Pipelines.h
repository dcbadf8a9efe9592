//===- Pipelines.h - MHA end-to-end pipelines -------------------*- C++ -*-===//
//
// The registered pipelines that take `mha` ops all the way down, as option
// structs and build functions so that compiler stacks can add them to their own
// pass managers.
//
//===----------------------------------------------------------------------===//

#ifndef MHA_PIPELINES_PIPELINES_H
#define MHA_PIPELINES_PIPELINES_H

#include "mha/Dialect/MHA/IR/MHADialect.h"
#include "mlir/Pass/PassOptions.h"

#include <cstdint>

namespace mlir {
class OpPassManager;

namespace mha {

// Options shared by several pipelines, each declared once: mixins over a
// `Base` (the next mixin, or PassPipelineOptions), for the `Derived` options
// struct of a pipeline.

/// The option of every pipeline that starts from `mha` ops on tensors (or
/// from the frontend ops around them).
template <typename Derived, typename Base = PassPipelineOptions<Derived>>
struct EntryOptions : public Base {
  mlir::detail::PassOptions::Option<bool> raiseAttention{
      *this, "raise-attention",
      llvm::cl::desc("Raise attention written as linalg or TOSA ops to mha "
                     "ops first (mha-raise-attention), so that it gets the "
                     "fused lowering; false lowers such IR as it is"),
      llvm::cl::init(true)};
};

/// The option of the pipelines that end in host code callers in C may call.
template <typename Derived, typename Base = PassPipelineOptions<Derived>>
struct EmitCInterfaceOption : public Base {
  mlir::detail::PassOptions::Option<bool> emitCInterface{
      *this, "emit-c-interface",
      llvm::cl::desc("Give every function a `_mlir_ciface_` wrapper taking "
                     "memref descriptors by pointer, for callers in C"),
      llvm::cl::init(false)};
};

/// The tile sizes of the GPU pipelines: a thread per query row, 16 rows per
/// warp for the tensor-core attention kernel, or a thread tile of the
/// register kernel.
template <typename Derived, typename Base = PassPipelineOptions<Derived>>
struct GPUTileOptions : public Base {
  mlir::detail::PassOptions::Option<int64_t> qTileSize{
      *this, "q-tile-size",
      llvm::cl::desc("Queries per workgroup (a thread per query row, 16 "
                     "per warp on tensor cores, or thread-tile's rows per "
                     "row group); not given: the op's mha.lowering_config, "
                     "else the rules'"),
      llvm::cl::init(0)};
  mlir::detail::PassOptions::ListOption<int64_t> threadTile{
      *this, "thread-tile",
      llvm::cl::desc("Query rows and keys per thread of the register kernel "
                     "(mha-attention-to-simt; two values), with the tile "
                     "sizes given or the rules'; not given: the rules' "
                     "kernel, which q-tile-size or kv-tile-size alone make "
                     "the thread-per-row kernel")};
  mlir::detail::PassOptions::Option<bool> allowTF32{
      *this, "allow-tf32",
      llvm::cl::desc("f32 attention on tensor cores with TF32 operands "
                     "(mma = [16, 8, 8], f32 accumulation: about 1e-3 "
                     "relative error) where the target has them (CUDA sm_80 "
                     "and later, vulkan's emulate-tensor-cores); otherwise "
                     "exact f32, as PyTorch's default"),
      llvm::cl::init(false)};
  mlir::detail::PassOptions::Option<int64_t> kvTileSize{
      *this, "kv-tile-size",
      llvm::cl::desc("Keys per block of the online softmax; not given: the "
                     "op's mha.lowering_config, else 32"),
      llvm::cl::init(0)};
  mlir::detail::PassOptions::ListOption<int64_t> gemmTile{
      *this, "gemm-tile",
      llvm::cl::desc("Output rows and columns per workgroup of the "
                     "tensor-core GEMM kernel (the projections of f16 and "
                     "bf16 layers on CUDA sm_80 and later; two values, "
                     "multiples of 32 up to 128 with its 4 warps); not "
                     "given: the rules' (by the output's size)")};
  mlir::detail::PassOptions::Option<int64_t> gemmStages{
      *this, "gemm-stages",
      llvm::cl::desc("k steps of 32 whose operand tiles the tensor-core GEMM "
                     "kernel holds in shared memory at once, all but one on "
                     "their way by cp.async (2 to 8, within the shared "
                     "memory); 0: the rules' (as many as fit, up to 4)"),
      llvm::cl::init(0)};
};

/// Options of `mha-lower-to-loops`.
struct LowerToLoopsOptions
    : public EmitCInterfaceOption<LowerToLoopsOptions,
                                  EntryOptions<LowerToLoopsOptions>> {};

/// The reference path, from `mha` ops on tensors to the LLVM dialect:
/// run-time checks, then the decomposition, bufferization and CPU-to-LLVM
/// stages (materialized scores, scalar loops). Runs on a builtin.module.
void buildLowerToLoopsPipeline(OpPassManager &pm,
                               const LowerToLoopsOptions &options);

/// Options of `mha-lower-to-cpu`.
struct LowerToCPUOptions
    : public EmitCInterfaceOption<LowerToCPUOptions,
                                  EntryOptions<LowerToCPUOptions>> {
  PassOptions::Option<int64_t> qTileSize{
      *this, "q-tile-size",
      llvm::cl::desc("Queries per tile; 0 (the default): the op's "
                     "mha.lowering_config, else chosen from the shape (128 "
                     "for layers with B * Sq >= 512, else 64)"),
      llvm::cl::init(0)};
  PassOptions::Option<int64_t> kvTileSize{
      *this, "kv-tile-size",
      llvm::cl::desc("Keys per online-softmax step; 0 (the default): the "
                     "op's mha.lowering_config, else 64"),
      llvm::cl::init(0)};
  PassOptions::Option<int64_t> kvSplits{
      *this, "kv-splits",
      llvm::cl::desc("Chunks the keys of each mha.attention are split into, "
                     "folded in parallel and merged exactly (flash-decoding); "
                     "0 (the default): the op's mha.lowering_config, else "
                     "chosen from the shape (decoding with fewer batches "
                     "times key/value heads than 16), 1: not split"),
      llvm::cl::init(0)};
  PassOptions::Option<int64_t> vectorWidth{
      *this, "vector-width",
      llvm::cl::desc("Bits of the target's vector registers (512: AVX-512, "
                     "256: AVX2, 128: SSE/NEON), which the register tiles "
                     "default to; mha-run and mha-aot set it from their "
                     "target unless given"),
      llvm::cl::init(512)};
  PassOptions::Option<int64_t> registerTileRows{
      *this, "register-tile-rows",
      llvm::cl::desc("Rows of a contraction's register tile (mha-vectorize); "
                     "0 (the default): the function's mha.lowering_config, "
                     "chosen from vector-width (8 for 512 bits, else 4)"),
      llvm::cl::init(0)};
  PassOptions::Option<int64_t> registerTileCols{
      *this, "register-tile-cols",
      llvm::cl::desc("Columns of a contraction's register tile, a multiple of "
                     "the target's vector width (mha-vectorize); 0 (the "
                     "default): the function's mha.lowering_config, chosen "
                     "as two vectors of vector-width"),
      llvm::cl::init(0)};
  PassOptions::Option<int64_t> chunk{
      *this, "chunk",
      llvm::cl::desc("Elements per vector step of the other ops "
                     "(mha-vectorize); 0 (the default): the function's "
                     "mha.lowering_config, else 64"),
      llvm::cl::init(0)};
  PassOptions::Option<int64_t> packMinStride{
      *this, "pack-min-stride",
      llvm::cl::desc("Read the weights of contractions whose rows are at "
                     "least this many elements apart by packed column "
                     "panels (mha-vectorize; negative: never)"),
      llvm::cl::init(256)};
  PassOptions::Option<int64_t> panelReductionTile{
      *this, "panel-reduction-tile",
      llvm::cl::desc("Reduction steps per pass of the row tiles over a "
                     "packed column panel of a weight (mha-vectorize); 0: "
                     "the whole reduction"),
      llvm::cl::init(0)};
  PassOptions::Option<bool> openMP{
      *this, "openmp",
      llvm::cl::desc("Run the parallel loop over (batch, query tile) on "
                     "OpenMP threads (LLVM's libomp; OMP_NUM_THREADS sets the "
                     "count); false runs it serially and needs no runtime"),
      llvm::cl::init(true)};
};

/// The tiled path, from `mha` ops on tensors to the LLVM dialect: the tiling
/// stage (the whole layer by tile-and-fuse: an scf.forall over batch and
/// query tiles, projections fused around FlashAttention-2, no [Sq, Sk]
/// buffer, causal blocks above the diagonal never created), then the
/// decomposition, bufferization and CPU-to-LLVM stages.
void buildLowerToCPUPipeline(OpPassManager &pm,
                             const LowerToCPUOptions &options);

//===----------------------------------------------------------------------===//
// Stages: the pieces the pipelines are made of, in order. Pipelines for other
// targets reuse them (a GPU pipeline maps the tiling stage's scf.forall to
// workgroups before decomposing).
//===----------------------------------------------------------------------===//

/// What every pipeline starts with: with `raiseAttention`,
/// mha-raise-attention (attention in linalg or TOSA ops raised to mha ops);
/// the TOSA left lowered to linalg, tensor and arith;
/// mha-insert-runtime-checks; with `forGPU`, the layers decomposed
/// (mha-decompose) and i1 masks made additive (mha-additive-mask);
/// mha-decompose-aggregates (linalg.softmax, mha.attention_weights and the
/// like); elementwise arith/math on tensors as linalg.generic.
void buildEntryStage(OpPassManager &pm, bool raiseAttention,
                     bool forGPU = false);

/// Tensor-level tiling and fusion: the entry stage, the strategy for
/// `target` (buildStrategyStage; the tile sizes given, non-zero, override
/// it), mha-fuse-layer (whole layers) and mha-tile-attention (standalone
/// mha.attention), leaving each key block as an mha.online_attention in the
/// key loops.
void buildTilingStage(OpPassManager &pm, int64_t qTileSize,
                      int64_t kvTileSize, int64_t kvSplits = 0,
                      bool raiseAttention = true, StringRef target = "");

/// What a pipeline's options give the strategy: `overrides` (the text of a
/// #mha.lowering_config; empty: none) over the chosen fields, `allowTF32`,
/// and the tensor-core GEMM kernel's tile and stages (empty, 0: the
/// rules').
struct StrategyOptions {
  std::string overrides;
  bool allowTF32 = false;
  SmallVector<int64_t> gemmTile;
  int64_t gemmStages = 0;
};

/// The strategy, chosen once: mha-select-lowering-config for `target` (the
/// text of a #mha.target; empty: the module's mha.target, else a CPU with
/// 512-bit vectors) with `options`. The tiling, vectorization and GPU
/// mapping passes read the result from the IR.
void buildStrategyStage(OpPassManager &pm, StringRef target,
                        const StrategyOptions &options);

/// Decomposition into linalg on tensors: mha-decompose for layers still
/// whole, mha-attention-to-linalg for attention ops left (the reference form)
/// and for key blocks, then canonicalization.
void buildDecompositionStage(OpPassManager &pm);

/// mha-vectorize (register tiles of vector code), canonicalization, CSE.
void buildVectorizationStage(OpPassManager &pm,
                             const LowerToCPUOptions &options);

/// One-shot bufferization (function boundaries included, identity layouts),
/// buffer deallocation, bufferization to memref.
void buildBufferizationStage(OpPassManager &pm);

/// Buffers to the LLVM dialect on the CPU: scf.forall to an OpenMP parallel
/// loop (`openMP`; the code then calls LLVM's libomp) or to scf.for, linalg
/// to loops, strided metadata, affine, memref, scf, the rest, and (with
/// `emitCInterface`) `_mlir_ciface_` wrappers.
void buildCPUToLLVMStage(OpPassManager &pm, bool emitCInterface,
                         bool openMP);

/// The Vulkan target options of `mha-vulkan-backend` and
/// `mha-lower-to-vulkan`.
template <typename Derived, typename Base = PassPipelineOptions<Derived>>
struct VulkanTargetOptions : public Base {
  mlir::detail::PassOptions::Option<int64_t> maxKernelLoopIterations{
      *this, "max-kernel-loop-iterations",
      llvm::cl::desc("Loop iterations an invocation of a kernel may run, all "
                     "loops together (mha-check-kernel-loop-iterations); "
                     "lavapipe silently ends every loop beyond 65535, the "
                     "default; 0: no limit, for other drivers"),
      llvm::cl::init(65535)};
  mlir::detail::PassOptions::Option<bool> cooperativeMatrix{
      *this, "cooperative-matrix",
      llvm::cl::desc(
          "For devices with VK_KHR_cooperative_matrix: f16 attention as the "
          "cooperative-matrix kernel (mha-attention-to-cooperative-matrix), "
          "and SPIR-V modules that may use cooperative matrices (SPIR-V 1.6, "
          "the Vulkan memory model); the runtime refuses such modules on "
          "devices without them"),
      llvm::cl::init(false)};
};

/// Options of `mha-vulkan-backend`.
struct VulkanBackendOptions
    : public EmitCInterfaceOption<VulkanBackendOptions,
                                  VulkanTargetOptions<VulkanBackendOptions>> {
};

/// GPU kernels on buffers (`gpu.launch`, or kernels already outlined) to a
/// Vulkan SPIR-V binary and host code in the LLVM dialect: unless
/// `maxKernelLoopIterations` is 0, the short innermost kernel loops unrolled
/// (mha-unroll-kernel-loops) and the loop iterations of an invocation bounded
/// by it (mha-check-kernel-loop-iterations); kernel outlining,
/// `spirv-attach-target` (Vulkan, SPIR-V up to 1.3 with the Shader
/// capability; with `cooperativeMatrix`, up to 1.6 with cooperative
/// matrices and the Vulkan memory model), mha-gpu-to-spirv,
/// `spirv-lower-abi-attrs` and
/// `spirv-update-vce` in each spirv.module, `gpu-module-to-binary`, then the
/// host through `gpu-to-llvm` with the calling convention of the mgpu*
/// Vulkan runtime (runtime/vulkan: each memref argument of a kernel as its
/// aligned pointer followed by its size in bytes, so kernel arguments need
/// static shapes) and the CPU lowering of what is left.
void buildVulkanBackendStage(OpPassManager &pm, bool emitCInterface,
                             int64_t maxKernelLoopIterations,
                             bool cooperativeMatrix = false);

/// The GPU mapping, target-neutral, from `mha` ops on tensors to
/// `gpu.launch` on buffers: the entry stage for GPUs (run-time checks, the
/// layer decomposed, i1 masks made additive), the strategy chosen for `target`
/// with `strategy` (buildStrategyStage), the projections tiled into
/// workgroup tiles (mha-tile-for-workgroups), the attention tiled
/// FlashAttention-style (mha-tile-attention), each tile's linalg ops
/// distributed over the configuration's threads with the tile's buffers in
/// workgroup memory (mha-distribute-to-threads), bufferization, one workgroup
/// per tile (mha-map-forall-to-gpu), the rest of linalg as loops (docs/GPU.md);
/// with `maxKernelLoopIterations` > 0 (Vulkan), the kernels' short innermost
/// loops unrolled and the loop iterations of an invocation bounded by it
/// (mha-unroll-kernel-loops, mha-check-kernel-loop-iterations); with
/// `emulateTensorCores`, the tensor-core ops of the kernels emulated
/// (mha-emulate-tensor-cores) right after the mapping to gpu.launch.
void buildGPUMappingStage(OpPassManager &pm, StringRef target,
                          const StrategyOptions &strategy,
                          bool raiseAttention = true,
                          int64_t maxKernelLoopIterations = 0,
                          bool emulateTensorCores = false);

/// Options of `mha-lower-to-vulkan`.
struct LowerToVulkanOptions
    : public GPUTileOptions<
          LowerToVulkanOptions,
          VulkanTargetOptions<LowerToVulkanOptions,
                              EntryOptions<LowerToVulkanOptions>>> {
  PassOptions::Option<bool> emulateTensorCores{
      *this, "emulate-tensor-cores",
      llvm::cl::desc(
          "Map for CUDA sm_80 (the tensor-core kernels of f16 attention and "
          "projections) and run those kernels with their tensor-core ops "
          "emulated (mha-emulate-tensor-cores): a numerical check of the "
          "CUDA kernels on a Vulkan device, slow; with cooperative-matrix, "
          "the cooperative-matrix kernels with their matrix ops emulated "
          "instead (for devices without cooperative matrices)"),
      llvm::cl::init(false)};
};

/// `mha` ops on tensors to Vulkan: buildGPUMappingStage, then
/// buildVulkanBackendStage.
void buildLowerToVulkanPipeline(OpPassManager &pm,
                                const LowerToVulkanOptions &options);

/// The NVVM target options of `mha-nvvm-backend` and `mha-lower-to-cuda`.
template <typename Derived, typename Base = PassPipelineOptions<Derived>>
struct NVVMTargetOptions : public Base {
  mlir::detail::PassOptions::Option<std::string> chip{
      *this, "chip", llvm::cl::desc("SM architecture to compile for"),
      llvm::cl::init("sm_80")};
  mlir::detail::PassOptions::Option<std::string> features{
      *this, "features",
      llvm::cl::desc("PTX features (PTX ISA 8.0 covers sm_80 and sm_90)"),
      llvm::cl::init("+ptx80")};
  mlir::detail::PassOptions::Option<std::string> format{
      *this, "format",
      llvm::cl::desc("What the gpu.binary holds: isa (PTX text, compiled by "
                     "the driver at load), bin (cubin, assembled by ptxas) "
                     "or fatbin"),
      llvm::cl::init("fatbin")};
};

/// Options of `mha-nvvm-backend`.
struct NVVMBackendOptions : public NVVMTargetOptions<NVVMBackendOptions> {};

/// GPU kernels on buffers (`gpu.launch`) to NVVM and a `gpu.binary` of PTX,
/// cubin or fatbin, with host code in the LLVM dialect calling the mgpu*
/// CUDA runtime functions: upstream's `gpu-lower-to-nvvm-pipeline`
/// (buildLowerToNVVMPassPipeline) with the chip, features and format.
/// `bin` and `fatbin` run ptxas (CUDA toolkit at /usr/local/cuda, or on
/// PATH); `isa` needs no CUDA.
void buildNVVMBackendStage(OpPassManager &pm,
                           const NVVMBackendOptions &options);

/// Options of `mha-lower-to-cuda`.
struct LowerToCUDAOptions
    : public GPUTileOptions<
          LowerToCUDAOptions,
          NVVMTargetOptions<LowerToCUDAOptions,
                            EntryOptions<LowerToCUDAOptions>>> {};

/// `mha` ops on tensors to CUDA: buildGPUMappingStage, the host buffers of
/// each launch copied to and from device memory around it
/// (mha-stage-kernel-buffers, of run-time sizes: dynamic shapes work),
/// outlining, `gpu-async-region`, then buildNVVMBackendStage. The host code
/// calls the mgpu* CUDA runtime (runtime/cuda).
void buildLowerToCUDAPipeline(OpPassManager &pm,
                              const LowerToCUDAOptions &options);

/// A pipeline from mha ops to runnable code, as the tools name it
/// (`--pipeline=NAME` is `mha-lower-to-NAME`).
struct PipelineInfo {
  /// `loops`, `cpu`, `vulkan` or `cuda`.
  StringRef name;
  /// What its kernels run on (the host runs the rest).
  TargetKind target;
  StringRef description;
  /// Adds the pipeline, with `options` (its textual options, as between the
  /// braces of `NAME{...}`), to `pm`. `host` is the CPU the host code is
  /// compiled for (null: unknown): the `cpu` pipeline fits its register
  /// tiles to the host's vector width unless `vector-width` is given. An
  /// option error is reported through `errorHandler`.
  LogicalResult (*build)(OpPassManager &pm, StringRef options, TargetAttr host,
                         function_ref<LogicalResult(const Twine &)>
                             errorHandler);
};

/// The pipelines the tools run, by name.
ArrayRef<PipelineInfo> getMHAPipelines();

/// The pipeline called `name`; null if there is none.
const PipelineInfo *lookupMHAPipeline(StringRef name);

/// The pipeline mha-run and mha-aot run when not told.
constexpr StringLiteral kDefaultPipeline = "cpu";

/// Registers `mha-lower-to-loops`, `mha-lower-to-cpu`,
/// `mha-lower-to-vulkan`, `mha-lower-to-cuda`, `mha-vulkan-backend` and
/// `mha-nvvm-backend` with the global pipeline registry.
void registerMHAPipelines();

} // namespace mha
} // namespace mlir

#endif // MHA_PIPELINES_PIPELINES_H
