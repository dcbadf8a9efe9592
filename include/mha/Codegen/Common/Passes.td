//===- Passes.td - Code generation for every target --------*- tablegen -*-===//
//
// Code generation for every target. Each pass is a thin wrapper around a
// library function that transform ops and users' own pipelines call as well.
//
//===----------------------------------------------------------------------===//

#ifndef MHA_CODEGEN_COMMON_PASSES_TD
#define MHA_CODEGEN_COMMON_PASSES_TD

include "mlir/Pass/PassBase.td"

def MHADecomposeAggregatesPass : Pass<"mha-decompose-aggregates"> {
  let summary = "Decompose upstream aggregate ops (linalg.softmax) into "
                "linalg ops";
  let description = [{
    Frontends hand over attention's neighbours as upstream ops that no
    conversion to loops or to LLVM takes as they are: `linalg.softmax`
    (torch-mlir, IREE and StableHLO/TOSA lowerings emit it) is an aggregate,
    defined by its `AggregatedOpInterface` decomposition into a max
    reduction, `exp`, a sum reduction and a division. This pass applies that
    decomposition to every op under the anchor that implements the interface
    and is not an `mha` op (those have their own passes), and to
    `mha.attention_weights`, `mha.cache_append` and `mha.rotary` (whose
    decompositions are their only lowerings). Only the tensor
    form is decomposed (upstream's decompositions build tensor ops); an
    aggregate on buffers is an error. Every `mha-lower-to-*` pipeline runs it
    at its entry, after the raise, the TOSA lowering and the runtime
    checks.

    Example: `linalg.softmax dimension(1) ins(%x) outs(%e)` becomes a fill
    and a `linalg.generic` max reduction, an elementwise `exp(x - max)`, a sum
    reduction and an elementwise division.

    `mha.cache_append` becomes an `scf.forall` over batches and heads (one
    workgroup each on a GPU), or with `serial-cache-appends` an `scf.for`
    over batches: the CPU pipelines' choice, since a decoding step's copy
    is smaller than what a parallel region costs.
  }];
  let options = [
    Option<"serialCacheAppends", "serial-cache-appends", "bool", "false",
           "Decompose mha.cache_append into a serial scf.for over batches "
           "instead of an scf.forall over batches and heads">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def MHACheckLoweredPass : Pass<"mha-check-lowered", "::mlir::ModuleOp"> {
  let summary = "Fail, naming the op, where an op survived lowering to the "
                "LLVM dialect";
  let description = [{
    The conversions to the LLVM dialect leave an op they have no pattern for
    where it is (wrapped in `builtin.unrealized_conversion_cast`s), and the
    pipeline would succeed with IR that only the translation to LLVM IR then
    rejects, without saying which op. This pass, the last of every
    `mha-lower-to-*` pipeline and of the `mha-*-backend` pipelines, fails
    with an error at the location of each outermost op that is not in the
    LLVM or OpenMP dialects, not a `gpu.binary` or `gpu.launch_func` (the
    GPU host forms the translation takes) and not a module. Leftover
    `unrealized_conversion_cast`s are reported only when nothing else is:
    they are the symptom, the op they wrap is the cause.
  }];
}

def MHAMarkReadOnlyArgumentsPass
    : Pass<"mha-mark-read-only-arguments", "::mlir::ModuleOp"> {
  let summary = "Keep bufferization from writing into the arguments a "
                "function does not update";
  let description = [{
    One-shot bufferization takes a function's tensor arguments as writable
    buffers unless told otherwise, and writes an op's result into an
    argument's buffer whenever the argument is not read afterwards: an
    elementwise `arith.addi %len, %one` (a linalg.generic whose destination
    is `%len` once converted) overwrites the caller's lengths. The caller
    of a compiled function (mha-run, the C entries mha-aot writes) hands it
    arrays it keeps using.

    This pass marks every tensor argument `bufferization.writable = false`
    except those the function writes a result into by its own IR: the
    destination a returned value's chain of destination-passing ops starts
    from (a KV cache that `mha.cache_append` updates and the function
    returns). An argument already carrying the attribute keeps it. Every
    `mha-lower-to-*` pipeline runs it first.
  }];
  let dependentDialects = ["::mlir::bufferization::BufferizationDialect"];
}

def MHAReturnArgumentsInPlacePass
    : Pass<"mha-return-arguments-in-place", "::mlir::ModuleOp"> {
  let summary = "Return an argument's buffer that a function updated in "
                "place as that buffer, not a clone";
  let description = [{
    A function that updates one of its tensor arguments (a KV cache written
    by `mha.cache_append`) and returns the result bufferizes, with
    function-boundary bufferization, into a write into the argument's buffer
    and a `return` of that buffer. The ownership-based deallocation pipeline
    then returns a `bufferization.clone` of it (a function's results must be
    owned by it): a copy of the whole cache on every decoding step. This
    pass, run after the deallocation pipeline, returns the argument itself
    where a returned value is a clone of an argument of the entry block used
    only by the return.

    In functions that nothing in the module calls, and in those whose every
    caller is such a function that passes its own argument and returns the
    call's result as it is (an entry calling its `NAME_prepared`, of
    `mha-outline-weight-preparation`): another caller in the module would
    deallocate the result it believes it owns. The callers
    outside (mha-run, the functions mha-aot writes, any C caller) receive a
    result whose allocated pointer is one of their arguments' and must not
    free it; mha-run and mha-aot compare the pointers. The CPU pipelines run
    it; the GPU pipelines deallocate nothing and return arguments as they
    are.
  }];
  let dependentDialects = ["::mlir::bufferization::BufferizationDialect"];
}

def MHAOutlineWeightPreparationPass
    : Pass<"mha-outline-weight-preparation", "::mlir::ModuleOp"> {
  let summary = "Split what a function computes from its weights alone "
                "into an entry called once (`NAME_prepare`) and one that "
                "takes its results (`NAME_prepared`)";
  let description = [{
    Arguments marked `mha.weight` (a unit attribute the importers put on the
    projection weights and biases) hold the same values from call to call.
    What a function computes from them alone (the weights repacked into
    column panels by mha-vectorize, a transposed `[out, in]` weight) is then
    the same on every call too: this pass moves it into a function of its
    own, called once, and gives the rest of the function its results.

    For every function with such arguments, two functions are added beside
    it:

    - `@NAME_prepare(weights...) -> (prepared...)`: the ops of the function
      whose operands come from the weights and constants alone (and that
      have no effect on memory), up to the values the rest of the function
      uses. A weight the rest uses as it is comes back as a copy, so that
      the prepared values own their memory and the weights may be freed.
      Reshapes and slices of the weights stay in the other function.
    - `@NAME_prepared(prepared..., other arguments...)`: the function with
      those values as arguments (read-only), the weights gone.

    `NAME` itself becomes the call of the two, so that their code is
    compiled once (of `NAME_prepared` alone, with its own weights, when
    `NAME_prepare` would only copy them), unless it visibly updates an
    argument in place through destination-passing ops, which keeps its body
    (`mha-return-arguments-in-place` returns the argument from a
    `NAME_prepared` that NAME calls).
    `NAME_prepared(NAME_prepare(w), x)` computes what `NAME(w, x)` does, by
    the same code. mha-run (`--prepare-weights`) and mha-aot's entries
    (`NAME_prepare`, `NAME_prepared`) call the pair. The CPU pipelines run
    the pass before bufferization, after the vectorizer made its packing
    copies; it fails, naming the argument, on a weight that is no ranked
    tensor or that the function updates in place, and on a function of
    several blocks or whose names for the two functions are taken.
  }];
  let dependentDialects = ["::mlir::bufferization::BufferizationDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def MHAApproximateTanhPass : Pass<"mha-approximate-tanh"> {
  let summary = "Compute f32 math.tanh as arithmetic (upstream's rational "
                "approximation)";
  let description = [{
    Rewrites every f32 `math.tanh` (scalar or vector) with upstream's
    polynomial approximation (`populatePolynomialApproximateTanhPattern`: a
    rational function on a clamped argument, exact sign and saturation to
    +-1), so that a softcap (`c · tanh(s / c)` on every score) vectorizes
    instead of calling libm's `tanhf` once per element. `mha-lower-to-cpu`
    runs it before lowering to LLVM; GPU targets have their own tanh.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::math::MathDialect",
    "::mlir::vector::VectorDialect",
  ];
}

def MHAApproximateExpPass : Pass<"mha-approximate-exp"> {
  let summary = "Compute f32 math.exp as arithmetic (a polynomial)";
  let description = [{
    Rewrites every f32 `math.exp` into arithmetic, so that the softmax's
    exponentials vectorize instead of calling libm's `expf` once per
    element: x clamped to [-87.5, 88.8] (compare-and-select: NaN passes,
    one min/max instruction each), n = roundeven(x · log2 e),
    r = x - n · ln 2 in two FMAs (ln 2 split so that n times its first part
    is exact), e^r by a degree-5 minimax polynomial with e^0 = 1 exactly,
    times 2^n built from exponent bits. 15 vector ops where upstream's
    approximation (`populateMathPolynomialApproximationPatterns`, also f32
    only) takes 22; an exp of another element type is left as it is (a
    libm call); the softmax's `exp` is a visible share of core
    attention's time (docs/Performance.md). Within 2 ulp of the exact value on
    [-87, 88.72] (test/Integration/CPU/exp-approximation.test); -inf and
    inputs below -87 (results under 1.7e-38) give exactly 0, which masked
    scores rely on; inputs above 88.72 give inf; NaN gives NaN.
    `mha-lower-to-cpu` runs it before lowering to LLVM.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::math::MathDialect",
  ];
}

def MHASelectLoweringConfigPass
    : Pass<"mha-select-lowering-config", "::mlir::ModuleOp"> {
  let summary = "Choose the tile sizes, register tiles and thread counts "
                "once, as #mha.lowering_config";
  let description = [{
    The one place the strategy of the lowering is chosen. From the target
    (the `target` option, else the module's `mha.target`, else a CPU with
    512-bit vectors; recorded as the module's `mha.target`) and the shapes,
    it sets `mha.lowering_config` on every `mha.attention` and
    `mha.multi_head_attention` (`q_tile`, `kv_tile`) and on every function
    with a body (CPU: `register_tile`, `chunk`; GPU: `threads`,
    `workgroup_tile`). The tiling (`mha-fuse-layer`, `mha-tile-attention`),
    vectorization (`mha-vectorize`) and GPU mapping
    (`mha-tile-for-workgroups`, `mha-distribute-to-threads`,
    `mha-map-forall-to-gpu`) passes read it; their options, where given,
    override it.

    A field is kept where the input IR sets it already (written by hand, on
    the op, its function or the module); `overrides` (a
    `#mha.lowering_config`, what the pipelines' options give) replaces both.
    The rules:
    - CPU: `q_tile` 128 for a layer whose static B·Sq is at least 512 (the
      weight panels amortized over more rows, with 4 tiles or more to share
      out), else 64; `kv_tile` 64; `register_tile` 8x32 for 512-bit
      vectors, 4 x (2 · vector_bits / 32) below; `chunk` 64.
    - GPU (`cuda`, `vulkan`): `q_tile` and `kv_tile` 32; one thread per
      query row: `threads` is the smallest `q_tile` of the function's ops,
      `workgroup_tile` [threads, 64].
    - CUDA, the contractions of f16 and bf16 layers (their projections):
      the tensor-core GEMM kernel, 4 warps, the largest of 128 x 128,
      128 x 64 and 64 x 64 output tiles that gives 256 workgroups or more
      (64 x 64 for dynamic rows, 32 x 32 for at most 32 rows), as many
      `pipeline_stages` (2 to 4) as the workgroup memory holds.

    The result is checked: a GPU function's thread count must be positive,
    within the target's `max_workgroup_threads`, and at most the rows of each
    query tile and workgroup tile (threads that no row feeds); the fields of
    one kind of target are refused on the other.
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"\"",
           "The #mha.target to choose for (empty: the module's mha.target, "
           "else a CPU with 512-bit vectors)">,
    Option<"overrides", "overrides", "std::string", /*default=*/"\"\"",
           "A #mha.lowering_config whose fields replace the chosen ones">,
    Option<"allowTF32", "allow-tf32", "bool", /*default=*/"false",
           "f32 attention on tensor cores as TF32 (mma = [16, 8, 8]) where "
           "the target has them (CUDA sm_80 and later); otherwise exact f32">,
    ListOption<"gemmTile", "gemm-tile", "int64_t",
               "Output rows and columns per workgroup of the tensor-core "
               "GEMM kernel (the projections of f16 and bf16 layers on "
               "CUDA; its workgroup_tile); not given: the rules'">,
    Option<"gemmStages", "gemm-stages", "int64_t", /*default=*/"0",
           "k steps whose tiles the tensor-core GEMM kernel holds in shared "
           "memory at once (its pipeline_stages); 0: the rules'">,
  ];
}

def MHADropLoweringConfigPass : Pass<"mha-drop-lowering-config"> {
  let summary = "Remove mha.lowering_config and mha.target once consumed";
  let description = [{
    The pipelines run it once the passes that read the configuration have
    run, so that the attributes do not reach the LLVM dialect (the
    conversion of functions would copy them onto `llvm.func`). With
    `weights`, the arguments' `mha.weight` marks go too: the GPU pipelines
    do not use them, and the translation to LLVM IR would warn of each (the
    CPU pipelines consume them in `mha-outline-weight-preparation`).
  }];
  let options = [
    Option<"weights", "weights", "bool", "false",
           "Also remove the mha.weight marks of function arguments">
  ];
}

#endif // MHA_CODEGEN_COMMON_PASSES_TD
