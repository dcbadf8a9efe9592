//===- Passes.td - GPU code generation (the GPU mapping) ---*- tablegen -*-===//
//
// GPU code generation (the GPU mapping). Each pass is a thin wrapper around a
// library function that transform ops and users' own pipelines call as well.
//
//===----------------------------------------------------------------------===//

#ifndef MHA_CODEGEN_GPU_PASSES_TD
#define MHA_CODEGEN_GPU_PASSES_TD

include "mlir/Pass/PassBase.td"

// The threads per workgroup of mha-distribute-to-threads and
// mha-map-forall-to-gpu, declared once.
defvar MHA_ThreadsOption =
    Option<"threads", "threads", "int64_t", "0",
           "Threads per workgroup; 0: the function's mha.lowering_config "
           "threads (required then)">;

def MHAAttentionToSIMTPass : Pass<"mha-attention-to-simt"> {
  let summary = "Lower mha.attention to the register-tiled FlashAttention "
                "kernel without tensor cores";
  let description = [{
    GPU mapping, on tensors, for any GPU target: every `mha.attention` whose
    `mha.lowering_config` has `thread_tile = [rows, keys]`
    (`mha-select-lowering-config` sets it where the tensor-core kernel does
    not apply: f32 on CUDA, everything on Vulkan) becomes a FlashAttention
    forward kernel with its online-softmax state in registers: an
    `scf.forall` of workgroups over (batch, head, query tile of `q_tile`
    rows; causal tiles longest first) around an `scf.forall` of
    `(q_tile / rows) * (kv_tile / keys)` threads (`#gpu.thread<x>`). The
    threads form row groups of `kv_tile / keys` consecutive lanes, each group
    owning `rows` query rows. The Q tile is staged in workgroup memory once,
    the K and V blocks on every step of the key loop (zero past the valid
    keys); each thread computes a `rows` x `keys` tile of the scores with
    FMAs (f32 arithmetic for every operand type), row maxima and sums over
    its group by `gpu.shuffle xor`, `exp2` with log2(e) folded into the
    scale, and `P V` with the other lanes' probabilities taken by xor
    shuffles, so that scores, probabilities, accumulators and statistics
    stay in registers (`scf.for` iter_args). Masks, key lengths, causal
    masks, windows, softcap, GQA, key_transposed and dynamic sizes are
    supported; masks only on the key blocks that need them; `kv_splits`
    splits the keys across workgroups and `head_tile` packs a key/value
    head's query heads into one (GQA decoding). Where the kernel
    cannot compute the op (an i1 mask, key_offset, f64), an error names the
    reason.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def MHAAttentionToCooperativeMatrixPass
    : Pass<"mha-attention-to-cooperative-matrix"> {
  let summary = "Lower mha.attention to the FlashAttention kernel on "
                "cooperative matrices (Vulkan)";
  let description = [{
    GPU mapping, on tensors, for Vulkan devices with cooperative matrices
    (`#mha.target<kind = vulkan, features = "+cooperative_matrix">`, the
    Vulkan pipeline's `cooperative-matrix` option): every `mha.attention`
    whose `mha.lowering_config` has `mma = [16, 16, 16]`
    (`mha-select-lowering-config` sets it for f16 attention whose head dims
    are multiples of 16) becomes a FlashAttention forward kernel in the GPU
    dialect's subgroup matrix ops (`gpu.subgroup_mma_load_matrix`,
    `_compute`, `_store_matrix`, `_elementwise`), which the SPIR-V
    conversion turns into `OpCooperativeMatrix*KHR`: an `scf.forall` of
    workgroups over (batch, head, query tile of `q_tile = 16 * warps` rows;
    causal tiles longest first) around an `scf.forall` of `32 * warps`
    invocations, a subgroup of 32 per 16 query rows. Q, K and V are staged
    in workgroup memory (zero past the valid rows and keys); each subgroup
    keeps its Q matrices and its output accumulators (16 x 16, f32) as
    cooperative matrices across the key loop (`scf.for` iter_args) and
    computes `S = Q Kᵀ` with them. A cooperative matrix's distribution over
    lanes is the device's, so the per-row steps (softcap, additive mask, key
    lengths, causal masks and windows, the online softmax's maximum and sum
    in base 2) run on S stored to workgroup memory, two lanes per row, and
    return as matrices: P (f16) as the A operand of `P V`, and the rows'
    rescale factors as a matrix multiplied element by element into the
    accumulators. GQA, key_transposed, dynamic sizes, `kv_splits` and
    `head_tile` are supported. Where the kernel cannot compute the op (not f16, head dims
    not multiples of 16, an i1 mask, key_offset), an error names the reason.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def MHAAttentionToMMAPass : Pass<"mha-attention-to-mma"> {
  let summary = "Lower mha.attention to the FlashAttention-2 kernel on "
                "tensor cores";
  let description = [{
    GPU mapping, on tensors, for CUDA (sm_80 and later): every
    `mha.attention` whose `mha.lowering_config` has `mma = [16, 8, 16]`
    (`mha-select-lowering-config` sets it for f16 and bf16 attention without
    a mask operand, head dims multiples of 16) becomes the FlashAttention-2
    forward kernel: an `scf.forall` of workgroups over (batch, head, query
    tile of `q_tile = 16 * warps` rows; causal tiles longest first) around
    an `scf.forall` of `32 * warps` threads (`#gpu.thread<x>`). K and V
    blocks go through workgroup-memory tiles filled by `cp.async`
    (`nvgpu.device_async_copy`, overlapped with the math) and read by
    `nvgpu.ldmatrix`. Each warp computes 16 query rows: its Q fragments
    loaded once, the key loop's scores `S = Q Kᵀ` and output accumulators as
    m16n8k16 fragments (`nvgpu.mma.sync` for f16, `nvvm.mma.sync` for bf16,
    f32 accumulation) with the online-softmax state in registers (`scf.for`
    iter_args), row maxima and sums over each quad of threads by
    `gpu.shuffle xor`, `exp2` with log2(e) folded into the scale, P kept in
    registers as the A operand of `P V`, masks only on partial and
    causal-diagonal key blocks, key blocks past the diagonal skipped; GQA by
    index, or with `head_tile` a key/value head's query heads packed into one
    workgroup (their queries its rows); `kv_splits` splits the keys across
    workgroups. The kernel reads the operands' buffers
    (`bufferization.to_buffer`) and writes a new one. Where the kernel cannot
    compute the op (a mask, key_transposed, f32, other head dims, a
    non-CUDA target or an older chip), an error names the reason.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::NVVM::NVVMDialect",
    "::mlir::nvgpu::NVGPUDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::vector::VectorDialect",
  ];
}

def MHAContractionToMMAPass : Pass<"mha-contraction-to-mma"> {
  let summary = "Lower the projections' contractions to GEMM kernels on "
                "tensor cores";
  let description = [{
    GPU mapping, on tensors, for CUDA (sm_80 and later): every
    `linalg.generic` whose `mha.lowering_config` has `mma = [16, 8, 16]`
    (`mha-select-lowering-config` sets it on the contractions of f16 and
    bf16 inputs accumulated in f32 and rounded back by their one user: the
    projections of a decomposed layer) becomes, with that rounding op, one
    GEMM kernel: output tiles of the configuration's `workgroup_tile`, one
    workgroup each, over its `warps` (two rows of warps); the reduction in
    steps of 32 through `pipeline_stages` stages of shared A and B tiles
    filled by `cp.async` (all but one on their way while the oldest is
    multiplied, one barrier a step) and read by `ldmatrix`; m16n8k16
    `mma.sync` with f32 accumulation; the result rounded and stored through
    the output's indexing map (the head split and merge of the projections
    are in their maps). The dims are grouped as M, N and K and flattened in
    memory order. Where the kernel cannot compute a configured op or take
    its configuration (warps, tile shares, copies, shared memory), an error
    names the reason.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::NVVM::NVVMDialect",
    "::mlir::nvgpu::NVGPUDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::vector::VectorDialect",
  ];
}

def MHATileForWorkgroupsPass : Pass<"mha-tile-for-workgroups"> {
  let summary = "Tile the linalg ops not yet in a loop into workgroup tiles";
  let description = [{
    GPU mapping, on tensors: every linalg op directly in a function body
    (after `mha-decompose`: the Q/K/V and output projections with their bias
    broadcasts) becomes an `scf.forall` over output tiles
    with upstream tile-and-fuse, its linalg producers fused: `rows` along
    its second innermost parallel loop, up to `cols` along its innermost,
    1 along the others; reductions stay whole. Ops reading `i1` stay on the
    host (GPU storage buffers hold no `i1`). A tile's reduction (the
    embedding of a projection) runs in steps of `depth`, each step's input
    tiles copied into workgroup tensors first, so that a workgroup reads each
    input element from device memory once. Each such loop is then one
    kernel (`mha-distribute-to-threads`, `mha-map-forall-to-gpu`), so the
    whole layer runs on the GPU. An `scf.forall` already in a function body
    without a mapping (the decomposition of `mha.cache_append`: one
    iteration per batch and head) is mapped to `#gpu.block` as it is; the
    mapping also keeps the canonicalizer from inlining a loop of one
    iteration into host code.
  }];
  let options = [
    Option<"rows", "rows", "int64_t", "0",
           "Rows of a workgroup tile; 0: the function's mha.lowering_config "
           "workgroup_tile (required then)">,
    Option<"cols", "cols", "int64_t", "0",
           "Columns of a workgroup tile (at most); 0: the function's "
           "mha.lowering_config workgroup_tile, else 64">,
    Option<"depth", "depth", "int64_t", "32",
           "Reduction step whose input tiles are staged in workgroup memory "
           "(0: no staging, each thread reads its inputs directly)">,
  ];
  let dependentDialects = [
    "::mlir::gpu::GPUDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def MHADistributeToThreadsPass : Pass<"mha-distribute-to-threads"> {
  let summary = "Distribute the linalg ops of each tile over GPU threads";
  let description = [{
    On tensors, inside every top-level `scf.forall` (a loop over independent
    tiles, one GPU workgroup each): tiles each linalg op with upstream
    `scf::tileUsingSCF` into an `scf.forall` mapped to `#gpu.thread<linear_dim_0>`
    over its first parallel loop (a thread per row, ceil(rows / threads) rows
    per thread when there are more), and allocates the tile's own tensors
    (`tensor.empty`) in workgroup memory (`bufferization.alloc_tensor` in
    `#gpu.address_space<workgroup>`). Extents distributed over threads must be
    static (pad partial tiles first).
  }];
  let options = [MHA_ThreadsOption];
  let dependentDialects = [
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::scf::SCFDialect",
  ];
}

def MHAMapForallToGPUPass : Pass<"mha-map-forall-to-gpu"> {
  let summary = "Map top-level scf.forall loops on buffers to gpu.launch";
  let description = [{
    Every top-level `scf.forall` (bufferized) becomes a `gpu.launch` with one
    workgroup per iteration, the grid sizes computed at run time from the
    loop's bounds (so dynamic batch and sequence lengths work), `threads`
    threads per workgroup; the `#gpu.thread` loops inside are mapped by
    upstream's `mapNestedForallToThreadsImpl`, each followed by a barrier.
    Workgroup-memory allocations in the body (static sizes) become the
    launch's workgroup attributions. The host computations a kernel uses
    move into it: integer arithmetic, scalar reads of buffers that nothing
    writes after them (a batch's key length) and views of buffers, so that a
    kernel takes whole buffers only (Vulkan kernels take no scalars, and
    bind a buffer argument from its sizes, which a strided view does not
    span). With `dynamic-workgroup-memory`, a kernel whose workgroup memory
    exceeds the target's `max_workgroup_memory` (what CUDA lets a kernel
    declare statically: 48 KiB) gets it as views of the launch's dynamic
    workgroup memory instead (`gpu.dynamic_shared_memory`, the launch's
    `dynamic_shared_memory_size`), where the target has a
    `max_workgroup_memory_optin`; the CUDA runtime opts each such kernel
    into it before its first launch.
  }];
  let options = [MHA_ThreadsOption,
    Option<"dynamicWorkgroupMemory", "dynamic-workgroup-memory", "bool",
           /*default=*/"false",
           "Workgroup memory above the target's max_workgroup_memory as "
           "dynamic workgroup memory (where it has max_workgroup_memory_optin)">,
  ];
  let dependentDialects = [
    "::mlir::affine::AffineDialect",
    "::mlir::gpu::GPUDialect",
  ];
}

def MHAStageKernelBuffersPass : Pass<"mha-stage-kernel-buffers"> {
  let summary = "Copy the host buffers GPU kernels use into device memory";
  let description = [{
    For targets whose kernels read device memory (CUDA, and Vulkan, whose
    runtime binds device buffers as they are): every memref defined outside a `gpu.launch`
    and used inside it is copied into a `gpu.alloc` of its run-time sizes
    with `gpu.memcpy` before the launch, the kernel uses the copy, and after
    the launch the copy is written back (only when the kernel may write it:
    stores, or ops of unknown effects, through views too) and freed. A
    buffer allocated in the launch's block that nothing touches before the
    launch (a result) is not copied in: its contents are undefined. A buffer
    that neither the host nor any kernel writes, read by several launches of
    one block (a layer's input, read by each projection), is copied once and
    freed after the last of them; so is one that only kernels of one block
    use (the host at most returns it: a KV cache that a decoding step's
    kernels append to and then read), copied back after the last of them
    if one writes it. The ops are synchronous;
    `gpu-async-region` then chains them on a stream. Dynamic sizes work.
    Buffers must have identity layouts (whole buffers).

    A function marked `mha.device_resident` (a unit attribute) takes device
    buffers: its memref arguments are not copied, and each result becomes a
    new trailing argument, a device buffer of the caller that the kernels
    write (the function returns nothing; a result that is an argument
    updated in place, a KV cache, needs none). Its dynamic sizes are checked
    when it runs (`cf.assert`). `mha.device_results` records which result
    went where. Host code that reads an argument of such a function (a
    run-time check of key lengths) reads a host copy downloaded when the
    function starts (refused where a kernel writes that argument: the
    copy would be stale); host code that writes one is refused. With
    `checks-in-kernels` (the CUDA pipeline), a run-time check of argument
    values (a host op that reads only the function's arguments, writes
    nothing and asserts: `mha-insert-runtime-checks`' loops over key
    lengths) runs in a kernel of one thread instead, so that a call waits
    on no copy: its `cf.assert` becomes `__assertfail` on the device.
  }];
  let options = [
    Option<"checksInKernels", "checks-in-kernels", "bool", "false",
           "Run the run-time checks of a device-resident function's argument "
           "values in a one-thread kernel (targets that lower cf.assert in "
           "kernels: NVVM) instead of on a host copy">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::cf::ControlFlowDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::memref::MemRefDialect",
  ];
}

def MHAUnrollKernelLoopsPass : Pass<"mha-unroll-kernel-loops"> {
  let summary = "Fully unroll the short innermost loops of GPU kernels";
  let description = [{
    Inside every `gpu.launch` (on buffers, after GPU mapping), fully unrolls
    each innermost `scf.for` whose trip count is a constant of at most
    `max-trip-count` (upstream `loopUnrollFull`). The Vulkan pipeline runs it
    before `mha-check-kernel-loop-iterations`: lavapipe limits the loop
    iterations of an invocation, and a kernel's innermost loops (over a row of
    the tile, a head dimension) are most of them, so unrolling them lets the
    key loop run over far longer sequences within the limit.
  }];
  let options = [
    Option<"maxTripCount", "max-trip-count", "int64_t", "64",
           "Unroll innermost loops of at most this many iterations (0: none)">,
  ];
  let dependentDialects = ["::mlir::scf::SCFDialect"];
}

def MHACheckKernelLoopIterationsPass
    : Pass<"mha-check-kernel-loop-iterations"> {
  let summary = "Refuse GPU kernels whose invocations may run more loop "
                "iterations than the target allows";
  let description = [{
    For every `gpu.launch` (on buffers, after GPU mapping), bounds the loop
    iterations one invocation may run, as lavapipe counts them: each
    `scf.for`'s trip count (an upper bound from upstream's value-bounds or
    integer range analysis where it is not a constant: partial tiles, causal
    key ranges) plus one (the test that ends the loop, which lavapipe counts
    too), times the trip counts of the loops around it, summed over all
    loops. Where the bound exceeds
    `max-iterations`, or a loop's trip count has no bound, it stops with an
    error on the launch (or the loop). Why: lavapipe (Mesa's llvmpipe, the
    Vulkan device on CPUs) counts the loop iterations of each invocation, all
    loops together, and after 65535 ends every loop after its current
    iteration, without an error; an attention kernel over long keys then ran
    each later loop once and wrote garbage. Loops the driver unrolls do not
    count there, so the bound is conservative. `max-iterations=0` disables
    the check (for Vulkan drivers without the limit).
  }];
  let options = [
    Option<"maxIterations", "max-iterations", "int64_t", "65535",
           "Loop iterations an invocation may run (0: no limit)">,
  ];
}

def MHAAlignWorkgroupMemoryPass : Pass<"mha-align-workgroup-memory"> {
  let summary = "Align the workgroup memory of GPU kernels for wide accesses";
  let description = [{
    On every `gpu.func` kernel (after outlining), gives each workgroup
    attribution without an `llvm.align` attribute an alignment of `bytes`
    (16: 128-bit vector loads and stores, `ldmatrix` rows), which the NVVM
    lowering puts on the shared-memory global. Why: without it a global is
    declared with its element's alignment (`.shared .align 4`), while the
    tensor-core kernel stages its tiles with 16-byte stores and reads them
    with `ldmatrix`, and LLVM's NVPTX back end merges neighbouring accesses
    of the other kernels into 8- and 16-byte ones once their constants are
    known (gpu-launch-sink-index-computations): on an H100 that was
    CUDA_ERROR_MISALIGNED_ADDRESS. `mha-check-workgroup-memory` counts the
    same alignment.
  }];
  let options = [
    Option<"bytes", "bytes", "int64_t", "16",
           "Alignment of each workgroup attribution, in bytes (a power of "
           "two)">,
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def MHACheckWorkgroupMemoryPass : Pass<"mha-check-workgroup-memory"> {
  let summary = "Refuse GPU kernels whose workgroup memory exceeds the "
                "target's";
  let description = [{
    For every `gpu.launch` (after GPU mapping), adds up the bytes of its
    workgroup attributions (the tiles the mapping staged in shared memory),
    each aligned to 16 bytes as `mha-align-workgroup-memory` aligns them,
    and its dynamic workgroup memory, and stops with an error on the launch
    where they exceed `max-bytes`, or, when that is 0, the
    `max_workgroup_memory_optin` of the `mha.target` around it, else its
    `max_workgroup_memory` (no limit where none gives one). The error names the sizes and the
    options that shrink them. Why: CUDA kernels declare their shared memory
    statically, and ptxas refuses more than 48 KiB only after the whole
    lowering, with the kernel module printed as a note (f16 causal attention
    at head dim 64 with the default tiles needed ~48.4 KiB).
  }];
  let options = [
    Option<"maxBytes", "max-bytes", "int64_t", "0",
           "Workgroup memory a kernel may use, in bytes (0: the target's "
           "max_workgroup_memory_optin or max_workgroup_memory, else no "
           "limit)">,
  ];
}

def MHAEmulateTensorCoresPass : Pass<"mha-emulate-tensor-cores"> {
  let summary = "Emulate the tensor-core ops of GPU kernels with workgroup "
                "memory and barriers";
  let description = [{
    Rewrites, in every `gpu.launch`, the ops of the tensor-core kernels into
    ops any GPU has, computing the same per-lane results: `nvgpu.mma.sync`
    (m16n8k16, f16 operands, f32 accumulators) and `nvgpu.ldmatrix` (16-bit
    matrices, transposed or not) become exchanges between the lanes of a
    warp through workgroup buffers the pass adds to the launch (each lane
    writes its operands or row address, a barrier, each lane reads what its
    result needs, a barrier); `nvgpu.device_async_copy` a synchronous copy
    (zero-filled past `srcElements`); its groups and waits disappear. The
    fragment layouts are the PTX ISA's, written independently of the code
    that builds the kernels. The GPU dialect's subgroup matrix ops of the
    cooperative-matrix kernel (`gpu.subgroup_mma_load_matrix`, `_store_matrix`,
    `_compute`, `_constant_matrix`, `_elementwise`; 16 x 16 matrices) likewise:
    a matrix becomes 8 elements per lane (a 2 x 4 block; the device's own
    distribution is unknown to the kernel, so any one checks it), a product
    an exchange through per-subgroup workgroup buffers, and
    `gpu.subgroup_id` / `gpu.lane_id` thread / 32 and thread % 32.

    Why: the tensor-core kernels' numbers depend on their lane layouts,
    which only an NVIDIA GPU runs. With this pass (the Vulkan pipeline's
    `emulate-tensor-cores`, with `cooperative-matrix` for the
    cooperative-matrix kernel) the same kernels run on lavapipe in CI, their
    results checked against numpy. It checks layouts and arithmetic, not
    speed, nor the ordering of asynchronous copies (they complete at once).
    An exchange must be reached by every thread of the workgroup (not under
    a conditional), and the launch have whole warps in x; an op it cannot
    emulate (another shape or element type, bf16's `nvvm.mma.sync` is left
    for the SPIR-V conversion to refuse) stops it with an error naming it.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::ub::UBDialect",
    "::mlir::vector::VectorDialect",
  ];
}

#endif // MHA_CODEGEN_GPU_PASSES_TD
