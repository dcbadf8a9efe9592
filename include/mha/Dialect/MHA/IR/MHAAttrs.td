//===- MHAAttrs.td - MHA dialect attributes ----------------*- tablegen -*-===//
//
// Attributes of the `mha` dialect.
//
//===----------------------------------------------------------------------===//

#ifndef MHA_DIALECT_MHA_IR_MHAATTRS_TD
#define MHA_DIALECT_MHA_IR_MHAATTRS_TD

include "mha/Dialect/MHA/IR/MHABase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/Dialect/SCF/IR/DeviceMappingInterface.td"

def MHA_PeeledDimAttr : AttrDef<MHA_Dialect, "PeeledDim",
    [DeclareAttrInterfaceMethods<DeviceMappingAttrInterface>]> {
  let mnemonic = "peeled";
  let summary = "Marks the dims of scf.forall loops peeled off one loop";
  let description = [{
    `mha-vectorize` peels the partial tile of a parallel loop into a second
    `scf.forall` (so that each loop's tiles have static sizes) and gives
    every loop made of one loop this mapping, `#mha.peeled<d>` for dim `d`,
    until `mha-rejoin-peeled-loops` joins them again after bufferization.
    As a mapping it keeps the canonicalizer from folding a peeled loop with
    a single iteration (the partial tile of one batch) into straight-line
    code, which would then run on one thread alone. It maps to no hardware:
    the loops run as any other `scf.forall`.
  }];
  let parameters = (ins "int64_t":$dim);
  let assemblyFormat = "`<` $dim `>`";
}

include "mlir/IR/EnumAttr.td"

def MHA_TargetKind : I32EnumAttr<"TargetKind", "what code is generated for", [
    I32EnumAttrCase<"CPU", 0, "cpu">,
    I32EnumAttrCase<"CUDA", 1, "cuda">,
    I32EnumAttrCase<"Vulkan", 2, "vulkan">]> {
  let cppNamespace = "::mlir::mha";
  let genSpecializedAttr = 0;
}

def MHA_WeightsStage : I32EnumAttr<"WeightsStage",
    "what `mha.attention_weights` returns", [
    I32EnumAttrCase<"Scores", 0, "scores">,
    I32EnumAttrCase<"Logits", 1, "logits">,
    I32EnumAttrCase<"Probabilities", 2, "probabilities">]> {
  let cppNamespace = "::mlir::mha";
  let genSpecializedAttr = 0;
}

def MHA_WeightsStageAttr : EnumAttr<MHA_Dialect, MHA_WeightsStage,
                                    "weights_stage"> {
  let summary = "The stage of the attention computation "
                "`mha.attention_weights` returns";
  let assemblyFormat = "`<` $value `>`";
}

def MHA_TargetAttr : AttrDef<MHA_Dialect, "Target"> {
  let mnemonic = "target";
  let summary = "The machine code is generated for";
  let description = [{
    What `mha-select-lowering-config` chooses a lowering configuration for,
    as a discardable attribute `mha.target` on the `builtin.module` (or a
    function, which then takes precedence). `mha-run` and `mha-aot` give it
    from their target; the pipelines take it as their `target` option; a
    user can write it in the input IR.

    - `kind`: `cpu`, `cuda` or `vulkan`.
    - `chip`, `features`: the CPU or SM name and its features, as recorded
      (the LLVM and NVVM back ends take theirs from the pipeline options);
      on Vulkan, `features = "+cooperative_matrix"` says the device has
      cooperative matrices (the rule then picks the cooperative-matrix
      kernel for f16 attention).
    - `vector_bits` (CPU): bits of a vector register (512: AVX-512, 256:
      AVX2, 128: SSE or NEON); the register tiles are chosen for it.
    - `subgroup_size`, `max_workgroup_threads`, `max_workgroup_memory`
      (GPU, bytes): the limits a configuration is checked against; 0: unknown.
      `max_workgroup_memory` is what a kernel may declare statically;
    - `max_workgroup_memory_optin` (GPU, bytes; 0: none): what a kernel may
      use beyond that by opting in (CUDA: dynamic shared memory, the
      launch attribute set by the runtime; 227 KiB on sm_90, 163 KiB on
      sm_80). The kernels whose rules size their tiles by the memory (the
      GEMM kernel's stages) may use it; a kernel over
      `max_workgroup_memory` then gets its workgroup memory dynamically.

    ```mlir
    module attributes {mha.target = #mha.target<kind = cpu, vector_bits = 256>}
    ```
  }];
  let parameters = (ins
    EnumParameter<MHA_TargetKind>:$kind,
    OptionalParameter<"StringAttr">:$chip,
    OptionalParameter<"StringAttr">:$features,
    DefaultValuedParameter<"int64_t", "0">:$vector_bits,
    DefaultValuedParameter<"int64_t", "0">:$subgroup_size,
    DefaultValuedParameter<"int64_t", "0">:$max_workgroup_threads,
    DefaultValuedParameter<"int64_t", "0">:$max_workgroup_memory,
    DefaultValuedParameter<"int64_t", "0">:$max_workgroup_memory_optin);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    bool isGPU() const { return getKind() != TargetKind::CPU; }
    /// The most workgroup memory a kernel may use: with the opt-in where
    /// there is one (0: unknown).
    int64_t getWorkgroupMemoryLimit() const {
      return getMaxWorkgroupMemoryOptin() ? getMaxWorkgroupMemoryOptin()
                                          : getMaxWorkgroupMemory();
    }
    /// The name of the field getWorkgroupMemoryLimit() reads.
    StringRef getWorkgroupMemoryLimitName() const {
      return getMaxWorkgroupMemoryOptin() ? "max_workgroup_memory_optin"
                                          : "max_workgroup_memory";
    }
  }];
}

/// A list of sizes, written `[8, 32]`: a tile [rows, cols], an MMA shape
/// [m, n, k].
def MHA_TileParameter : OptionalArrayRefParameter<"int64_t"> {
  let parser = [{ [&]() -> FailureOr<SmallVector<int64_t>> {
    SmallVector<int64_t> sizes;
    if ($_parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&] {
          return $_parser.parseInteger(sizes.emplace_back());
        }))
      return failure();
    return sizes;
  }() }];
  let printer = [{
    $_printer << '[';
    llvm::interleaveComma($_self, $_printer);
    $_printer << ']';
  }];
}

def MHA_LoweringConfigAttr : AttrDef<MHA_Dialect, "LoweringConfig"> {
  let mnemonic = "lowering_config";
  let summary = "How an mha op, or a function's code, is tiled and mapped";
  let description = [{
    The strategy of the lowering, in the IR: a discardable attribute
    `mha.lowering_config` that `mha-select-lowering-config` sets from the
    target and the shapes, that a user may write by hand (or set from a
    transform script with `transform.annotate`), and that the tiling,
    vectorization and GPU mapping passes read. A field is taken from the
    nearest `mha.lowering_config` that sets it, on the op itself or on an op
    around it (its function, the module); a field that is absent is not
    set, and one that is set must be positive. A pass option that is given
    (non-zero) overrides the configuration.

    On each mha op (they depend on its shape):
    - `q_tile`: queries per tile (CPU: a tile of the parallel loop; GPU: a
      workgroup's rows, one thread per row);
    - `kv_tile`: keys per step of the online softmax;
    - `mma = [m, n, k]` (`mha.attention`): the tensor-core shape of
      the warp-level kernel on CUDA (mha-attention-to-mma; `[16, 8, 16]`,
      f16 or bf16 operands, or `[16, 8, 8]`, TF32), or on Vulkan `[16, 16,
      16]`, the cooperative-matrix kernel
      (mha-attention-to-cooperative-matrix; f16 operands), f32
      accumulation, instead of a thread per row;
    - `warps` (with `mma`): warps (subgroups of 32) per workgroup, 16 query
      rows each (`q_tile = 16 * warps`).
    - `thread_tile = [rows, keys]` (GPU, `mha.attention`): the register
      kernel (mha-attention-to-simt) instead of a thread per row: each
      thread holds `rows` query rows by `keys` keys of every score block,
      and the `kv_tile / keys` threads of a row group (consecutive lanes of
      one subgroup) share its rows, their statistics combined by shuffles;
      `(q_tile / rows) * (kv_tile / keys)` threads per workgroup.
    - `head_tile` (CPU, and the GPU kernels of `mma` and `thread_tile`,
      `mha.attention`):
      query heads per tile of the parallel loop (GPU: per workgroup, their
      queries the tile's rows, head after head); the heads of a key/value
      head's group, when the queries are one tile (decoding), so that each
      key block is read once for all of them rather than once per head. It
      must divide the group size or be a multiple of it (GPU: divide it,
      with a static query length and head_tile * Sq rows at most q_tile).
    - `kv_splits` (CPU, `mha.attention`): chunks its keys are split into
      (flash-decoding): each chunk is folded from the empty softmax state in
      its own iteration of the parallel loop, and the chunks' states are
      merged exactly after; for decoding, where batches times key/value
      heads are fewer than the cores.
    - `prefetch_blocks` (CPU, `mha.attention`): key blocks ahead whose key
      and value rows its key loop prefetches in software
      (`mha-prefetch-key-blocks`), where the loop reads each block's rows
      as they lie in memory (decoding). The hardware prefetchers alone
      leave such a loop waiting on memory for part of every block; the
      prefetches keep the next block's rows on their way while the current
      one is computed.

    On the contractions of a decomposed layer that the tensor-core GEMM
    kernel computes (mha-contraction-to-mma; the projections of f16 and
    bf16 layers on CUDA), set by the rule on the op itself:
    - `mma = [16, 8, 16]` and `warps`: the kernel and its warps (1, 2, 4
      or 8; two rows of warps when there are two or more; the rule: 4);
    - `workgroup_tile = [rows, cols]`: the output tile of a workgroup (M
      rows by N columns), each warp's share a multiple of 16 by 16 and at
      most 64 by 64 (its accumulators live in registers);
    - `pipeline_stages`: the k steps (32 deep) whose operand tiles are in
      shared memory at once, all but one of them on their way by cp.async
      while the oldest is multiplied (2 to 8; the tiles of all stages must
      fit the target's workgroup memory; refused on the mha ops, whose
      kernels keep their own order of copies).

    On a function (they depend on the target):
    - `register_tile = [rows, cols]` (CPU): a contraction's register tile
      (mha-vectorize);
    - `chunk` (CPU): elements per vector step of the other linalg ops;
    - `workgroup_tile = [rows, cols]` (GPU): workgroup tiles of the linalg
      ops outside the attention (mha-tile-for-workgroups);
    - `threads` (GPU): threads per workgroup (mha-distribute-to-threads,
      mha-map-forall-to-gpu).

    ```mlir
    func.func @f(...) attributes {
        mha.lowering_config = #mha.lowering_config<register_tile = [8, 32], chunk = 64>} {
      %o = mha.attention ... {mha.lowering_config = #mha.lowering_config<q_tile = 64, kv_tile = 64>}
    ```
  }];
  let parameters = (ins
    OptionalParameter<"std::optional<int64_t>">:$q_tile,
    OptionalParameter<"std::optional<int64_t>">:$kv_tile,
    MHA_TileParameter:$register_tile,
    OptionalParameter<"std::optional<int64_t>">:$chunk,
    MHA_TileParameter:$workgroup_tile,
    OptionalParameter<"std::optional<int64_t>">:$threads,
    MHA_TileParameter:$mma,
    OptionalParameter<"std::optional<int64_t>">:$warps,
    OptionalParameter<"std::optional<int64_t>">:$kv_splits,
    OptionalParameter<"std::optional<int64_t>">:$head_tile,
    OptionalParameter<"std::optional<int64_t>">:$prefetch_blocks,
    MHA_TileParameter:$thread_tile,
    OptionalParameter<"std::optional<int64_t>">:$pipeline_stages);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let builders = [
    // Every field but thread_tile and pipeline_stages (the fields before
    // them, in order).
    AttrBuilder<(ins "std::optional<int64_t>":$q_tile,
      "std::optional<int64_t>":$kv_tile, "ArrayRef<int64_t>":$register_tile,
      "std::optional<int64_t>":$chunk, "ArrayRef<int64_t>":$workgroup_tile,
      "std::optional<int64_t>":$threads, "ArrayRef<int64_t>":$mma,
      "std::optional<int64_t>":$warps, "std::optional<int64_t>":$kv_splits,
      "std::optional<int64_t>":$head_tile,
      "std::optional<int64_t>":$prefetch_blocks), [{
      return $_get($_ctxt, q_tile, kv_tile, register_tile, chunk,
                   workgroup_tile, threads, mma, warps, kv_splits, head_tile,
                   prefetch_blocks, ArrayRef<int64_t>(), std::nullopt);
    }]>
  ];
  let extraClassDeclaration = [{
    /// `this` with every field that `overrides` sets replaced by it (null
    /// `this` or `overrides`: the other one).
    LoweringConfigAttr merge(LoweringConfigAttr overrides) const;
  }];
}

#endif // MHA_DIALECT_MHA_IR_MHAATTRS_TD
