//===- Transforms.h - GPU code generation -----------------------*- C++ -*-===//
//
// The steps of the GPU mapping and the kernel-loop limit, behind the passes of
// mha/Codegen/GPU/Passes.td; callable from transform ops and users' own
// pipelines.
//
//===----------------------------------------------------------------------===//

#ifndef MHA_CODEGEN_GPU_TRANSFORMS_H
#define MHA_CODEGEN_GPU_TRANSFORMS_H

#include "mlir/IR/Value.h"
#include "mlir/Support/LLVM.h"

namespace mlir {
namespace gpu {
class LaunchOp;
} // namespace gpu
class Operation;
class RewriterBase;

namespace linalg {
class GenericOp;
} // namespace linalg

namespace mha {
class AttentionOp;

/// The mha.attention `op`, whose lowering configuration has `mma = [16, 8,
/// 16]`, `warps` and `q_tile = 16 * warps`, as the FlashAttention-2 kernel
/// on tensor cores: an scf.forall of workgroups (batch, head, query tile)
/// around an scf.forall of 32 * warps threads (#gpu.thread<x>) whose warps
/// each compute 16 query rows with nvgpu.mma.sync, the online-softmax state
/// in registers, on buffers of the operands (bufferization.to_buffer) into
/// a new buffer that the returned tensor reads. Fails, with an error at the
/// op, where the kernel cannot compute it (mmaAttentionUnsupported).
FailureOr<Value> lowerAttentionToMMA(RewriterBase &rewriter, AttentionOp op);

/// lowerAttentionToMMA on every mha.attention under `root` whose lowering
/// configuration has `mma = [16, 8, k]`.
LogicalResult lowerAttentionsToMMA(RewriterBase &rewriter, Operation *root);

/// The mha.attention `op`, whose lowering configuration has `thread_tile =
/// [rows, keys]`, as the register-tiled FlashAttention kernel: an
/// scf.forall of workgroups (batch, head, query tile) around an scf.forall
/// of (q_tile / rows) * (kv_tile / keys) threads (#gpu.thread<x>) in row
/// groups of kv_tile / keys lanes, the online-softmax state in registers,
/// Q, K and V staged in workgroup memory, on buffers of the operands
/// (bufferization.to_buffer) into a new buffer that the returned tensor
/// reads. Fails, with an error at the op, where the kernel cannot compute
/// it (simtAttentionUnsupported) or the configuration does not divide.
FailureOr<Value> lowerAttentionToSIMT(RewriterBase &rewriter, AttentionOp op);

/// lowerAttentionToSIMT on every mha.attention under `root` whose lowering
/// configuration has `thread_tile`.
LogicalResult lowerAttentionsToSIMT(RewriterBase &rewriter, Operation *root);

/// The mha.attention `op`, whose lowering configuration has `mma = [16, 16,
/// 16]`, `warps` (subgroups) and `q_tile = 16 * warps`, as the FlashAttention
/// kernel on cooperative matrices (gpu.subgroup_mma_* ops): an scf.forall of
/// workgroups (batch, head, query tile) around an scf.forall of 32 * warps
/// invocations, a subgroup per 16 query rows, its Q matrices and output
/// accumulators kept across the key loop, the per-row softmax on scores
/// stored to workgroup memory, on buffers of the operands
/// (bufferization.to_buffer) into a new buffer that the returned tensor
/// reads. Fails, with an error at the op, where the kernel cannot compute it
/// (coopMatrixAttentionUnsupported).
FailureOr<Value> lowerAttentionToCoopMatrix(RewriterBase &rewriter,
                                            AttentionOp op);

/// lowerAttentionToCoopMatrix on every mha.attention under `root` whose
/// lowering configuration has `mma = [16, 16, 16]`.
LogicalResult lowerAttentionsToCoopMatrix(RewriterBase &rewriter,
                                          Operation *root);

/// The contraction `op` (its lowering configuration has `mma`; see
/// matchMMAContraction) and the op that rounds its result as one GEMM kernel
/// on tensor cores: an scf.forall of 64 x 64 output tiles around an
/// scf.forall of 128 threads (4 warps of 32 x 32), the k loop in steps of
/// 32 through two stages of shared tiles filled by cp.async and read by
/// ldmatrix, mma.sync m16n8k16 with f32 accumulation, the rounded result
/// stored through the output's indexing map into a new buffer, which the
/// returned tensor (replacing the rounding op's result) reads.
FailureOr<Value> lowerContractionToMMA(RewriterBase &rewriter,
                                       linalg::GenericOp op);

/// lowerContractionToMMA on every linalg.generic under `root` whose
/// lowering configuration has `mma`.
LogicalResult lowerContractionsToMMA(RewriterBase &rewriter, Operation *root);

/// GPU mapping, on tensors: inside each top-level scf.forall (one workgroup
/// per iteration later), every linalg op tiled into an scf.forall over
/// `threads` GPU threads along its first parallel loop, and the tile's own
/// tensors allocated in workgroup memory.
LogicalResult distributeToThreads(RewriterBase &rewriter, Operation *root,
                                  int64_t threads);

/// Fully unrolls the innermost scf.for loops inside gpu.launch bodies whose
/// trip count is a constant of at most `maxTripCount`.
void unrollKernelLoops(Operation *root, int64_t maxTripCount);

/// Bounds the loop iterations one invocation of each gpu.launch may run, as
/// lavapipe counts them (each scf.for's trip count, bounded by the
/// value-bounds or integer range analysis, plus one for the test that ends
/// it, times the trip counts of the loops around it, summed) and emits an
/// error where the bound exceeds
/// `maxIterations` or a loop has no bound. Lavapipe ends every loop of an
/// invocation after 65535 iterations in all, silently.
LogicalResult checkKernelLoopIterations(Operation *root,
                                        int64_t maxIterations);

/// GPU mapping, on buffers: each top-level scf.forall as a gpu.launch, one
/// workgroup per iteration (grid from the loop bounds at run time) of
/// `threads` threads, its #gpu.thread loops mapped with barriers after them,
/// its workgroup allocations as the launch's workgroup attributions, or,
/// where they exceed `dynamicAbove` bytes (> 0), as views of its dynamic
/// workgroup memory.
LogicalResult mapForallsToGPULaunch(RewriterBase &rewriter, Operation *root,
                                    int64_t threads, int64_t dynamicAbove = 0);

/// GPU mapping, on tensors: every linalg op directly in a function body
/// (the projections and their bias broadcasts: what is not yet in a loop)
/// tiled into an scf.forall of workgroup tiles with its linalg producers
/// fused: `rows` along its second innermost parallel loop, up to `cols`
/// along its innermost, 1 along the others. Ops reading i1 stay on the host
/// (GPU storage buffers hold no i1). With `depth` > 0 a tile's reduction
/// runs in steps of `depth` whose input tiles are first copied into
/// workgroup tensors (shared-memory tiling of the projection GEMMs).
/// Together with the attention's tiling these loops become the kernels
/// (distributeToThreads, mapForallsToGPULaunch).
LogicalResult tileForWorkgroups(RewriterBase &rewriter, Operation *root,
                                int64_t rows, int64_t cols, int64_t depth);

/// For targets whose kernels read device memory (CUDA, Vulkan): every host
/// buffer a `gpu.launch` under `root` uses is copied into device memory
/// before it (`gpu.alloc` of the buffer's run-time sizes, `gpu.memcpy`) and
/// back after it when the kernel may write it, then freed (`gpu.dealloc`).
/// A function marked `mha.device_resident` takes device buffers instead:
/// its arguments are not copied, its results become trailing arguments,
/// host reads of an argument read a copy made when it starts (see the
/// pass), or with `checksInKernels` its run-time checks of argument values
/// run in a kernel of one thread (cf.assert, which NVVM lowers and SPIR-V
/// does not). The ops are synchronous (`gpu-async-region` makes them
/// async). Fails on views of non-identity layout, on asynchronous launches
/// and on what a device-resident function cannot honour.
LogicalResult stageKernelBuffers(RewriterBase &rewriter, Operation *root,
                                 bool checksInKernels = false);

/// The alignment mha-align-workgroup-memory gives each workgroup
/// attribution by default: 16 bytes, for 128-bit accesses and ldmatrix.
constexpr int64_t kWorkgroupMemoryAlignment = 16;

/// The bytes that workgroup buffers of static `types` take in one block of
/// workgroup memory, each aligned to kWorkgroupMemoryAlignment (or its
/// element size); with `offsets`, each buffer's offset in it.
int64_t layOutWorkgroupBuffers(TypeRange types,
                               SmallVectorImpl<int64_t> *offsets = nullptr);

/// The bytes of workgroup memory `launch` declares (its workgroup
/// attributions, each aligned to kWorkgroupMemoryAlignment, and its dynamic
/// workgroup memory).
int64_t getWorkgroupMemoryBytes(gpu::LaunchOp launch);

/// Gives each workgroup attribution of the gpu.func kernels under `root`
/// that has no `llvm.align` the alignment `bytes`.
void alignWorkgroupMemory(Operation *root, int64_t bytes);

/// Emits an error at each gpu.launch under `root` whose workgroup memory
/// exceeds `maxBytes` (named `limitName` in the error) and fails if there
/// was one.
LogicalResult
checkWorkgroupMemory(Operation *root, int64_t maxBytes,
                     StringRef limitName = "max_workgroup_memory");

/// Rewrites the tensor-core ops of the `gpu.launch` kernels under `root`
/// (`nvgpu.mma.sync` m16n8k16 on f16, `nvgpu.ldmatrix`,
/// `nvgpu.device_async_copy` and its groups and waits) into portable ops
/// that compute the same per-lane results: the lanes of a warp exchange
/// their operands through workgroup memory between barriers. A numerical
/// check of the tensor-core kernels' fragment layouts on a device without
/// tensor cores (lavapipe), slow; the copies become synchronous. Fails,
/// naming the op, on an op it cannot emulate: another mma shape or type, an
/// exchange under a conditional (its barriers need the whole workgroup), a
/// launch not of 32·n threads in x.
LogicalResult emulateTensorCoreOps(RewriterBase &rewriter, Operation *root);

} // namespace mha
} // namespace mlir

#endif // MHA_CODEGEN_GPU_TRANSFORMS_H
