//===- Passes.td - MHA dialect passes ----------------------*- tablegen -*-===//
//
// Passes over `mha` ops. Each is a thin wrapper around a library function of
// mha/Dialect/MHA/Transforms/Transforms.h, which transform ops and users'
// own pipelines call as well.
//
//===----------------------------------------------------------------------===//

#ifndef MHA_DIALECT_MHA_TRANSFORMS_PASSES_TD
#define MHA_DIALECT_MHA_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def MHADecomposePass : Pass<"mha-decompose"> {
  let summary = "Decompose mha.multi_head_attention into projections around "
                "one mha.attention";
  let description = [{
    Rewrites every `mha.multi_head_attention` into

    1. the input projections `Q = query · w_q (+ b_q)`, `K` and `V` as
       `linalg.generic` contractions that write the head-split layout
       `[B, H, S, d]` directly: the weight is read through the indexing map
       `(e, h * d + i)`, so the head split is an indexing map, not a copy. A
       bias initializes the accumulator instead of being added in a second
       pass;
    2. one `mha.attention` on the head-split tensors, with the mask, `scale` and
       `causal` of the layer. Grouped-query heads stay grouped: `K` and `V` have
       `num_kv_heads` heads and are never replicated per query head;
    3. the output projection, which reads the heads through the indexing map
       `(h * dv + i, o)` of `w_o` (the head merge is a reduction over `h` and
       `i`), with `b_o` as the initial accumulator.

    Accumulators are f32 whatever the element type; f16/bf16 results are
    truncated once at the end of each contraction.

    Example: `mha-opt --mha-decompose layer.mlir`.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def MHAAttentionToLinalgPass : Pass<"mha-attention-to-linalg"> {
  let summary = "Lower mha.attention and mha.online_attention to linalg "
                "(the reference lowering; the decomposition stage)";
  let description = [{
    Applies the ops' decompositions (`AggregatedOpInterface`):

    - `mha.attention` becomes its online form (f32 state fills, one
      `mha.online_attention` over all keys, `out = acc / sum`, 0 where
      `sum = 0`, converted to the element type and written into `init`), and
      that online op linalg; untiled, this materializes the scores
      `[B, H, Sq, Sk]`: the reference lowering every faster path is held
      against;
    - `mha.online_attention` (e.g. the key blocks `mha-tile-attention` and
      `mha-fuse-layer` leave with `decompose=false`) becomes linalg ops on
      tensors: `s = q · kᵀ` in f32 (query head `h` reads key/value head
      `h floordiv (H / Hkv)` through the indexing map), the logits (scale, the
      float mask added or the bool mask as `-inf`, the mask read through an
      indexing map that broadcasts its static size-1 dims; the causal
      predicate `j > i + causal_offset` as `-inf`, only in the branch of an
      `scf.if` taken by blocks that straddle the diagonal), the row maximum,
      the rescaling `exp(max - max')` and the updates of `sum` and `acc`, all
      guarded so that rows with no visible key stay at zero.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def MHATileAttentionPass : Pass<"mha-tile-attention"> {
  let summary = "Tile mha.attention FlashAttention-style (online softmax over "
                "key/value tiles)";
  let description = [{
    Rewrites every `mha.attention` with upstream tiling through the ops'
    `TilingInterface`:

    1. an `scf.forall` over batches, heads and tiles of `q-tile-size` queries
       (`scf::tileUsingSCF` on `mha.attention`);
    2. each tile in its online form (`mha.online_attention` between f32 state
       fills and the normalization `acc / sum`);
    3. an `scf.for` over tiles of `kv-tile-size` keys (`scf::tileUsingSCF` on
       the online op's key dimension, a reduction carrying `acc`, `max` and
       `sum`): the FlashAttention-2 loop;
    4. with `decompose` (the default), each key block decomposed into linalg
       (see `mha-attention-to-linalg`).

    Memory is O(S·d): the largest intermediate is one `[q-tile, kv-tile]`
    block of scores. With `causal`, the key range of each query tile ends at
    the last key its last row sees (part of the online op's iteration
    domain), so blocks wholly above the diagonal are never created, and the
    causal predicate is only evaluated on blocks that straddle the diagonal.
    Masks are sliced per block and read through indexing maps. Sizes that
    are not multiples of the tiles and dynamic sizes are handled (the last
    tiles are smaller). Query head `h` reads key/value head `h / (H / Hkv)`.
  }];
  let options = [
    Option<"qTileSize", "q-tile-size", "int64_t", /*default=*/"64",
           "Queries per tile (rows of the score block); 0: chosen from the "
           "shape">,
    Option<"kvTileSize", "kv-tile-size", "int64_t", /*default=*/"64",
           "Keys per online-softmax step (columns of the score block)">,
    Option<"decompose", "decompose", "bool", /*default=*/"true",
           "Decompose each key block into linalg; false leaves the "
           "mha.online_attention blocks for a later mha-attention-to-linalg">,
    Option<"workgroups", "workgroups", "bool", /*default=*/"false",
           "Mark the loop over tiles as a grid of GPU workgroups "
           "(#gpu.block mapping), which canonicalization keeps even with "
           "one iteration">,
  ];
  let dependentDialects = [
    "::mlir::gpu::GPUDialect",
    "::mlir::affine::AffineDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def MHAFuseLayerPass : Pass<"mha-fuse-layer"> {
  let summary = "Lower mha.multi_head_attention by upstream tile-and-fuse "
                "(projections fused around FlashAttention)";
  let description = [{
    Decomposes every `mha.multi_head_attention` (as `mha-decompose`) and
    tiles and fuses it with upstream `scf::tileConsumerAndFuseProducersUsingSCF`,
    the output projection being the root:

    ```
    K, V = key · w_k (+ b_k), value · w_v (+ b_v)       once, before the loops,
                                                         each an scf.forall over
                                                         (b, kv head, key tile)
    scf.forall (b, query tile i0)                        parallel
      Y = b_o (or 0)                                     this tile's rows, f32
      scf.for query head h (iter_args Y)
        Q = query[b, i0:] · w_q[:, h] (+ b_q[h])         fused producer
        O = attention of Q over K, V of kv head h / (H / Hkv)
            (the key loop of mha-tile-attention)
        Y += O · w_o[h, :]
    ```

    Each iteration of the forall owns its rows of the result: nothing is
    carried across iterations, so the loop can be distributed to threads or
    GPU workgroups. K and V are computed once for every query tile and every
    query head of their group (GQA/MQA); Q per head and query tile, with the
    bias as its accumulator's initial value. The head split and merge are
    indexing maps of the projections, so the weights are sliced, not copied,
    and the concatenated heads `[B, Sq, H·dv]` never exist. `decompose` as in
    `mha-tile-attention`.
  }];
  let options = [
    Option<"qTileSize", "q-tile-size", "int64_t", /*default=*/"64",
           "Queries per tile (rows of the score block); 0: chosen from the "
           "shape">,
    Option<"kvTileSize", "kv-tile-size", "int64_t", /*default=*/"64",
           "Keys per online-softmax step (columns of the score block)">,
    Option<"decompose", "decompose", "bool", /*default=*/"true",
           "Decompose each key block into linalg; false leaves the "
           "mha.online_attention blocks for a later mha-attention-to-linalg">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def MHAInsertRuntimeChecksPass : Pass<"mha-insert-runtime-checks"> {
  let summary = "Check at run time the dynamic sizes the verifier could not";
  let description = [{
    The verifiers compare every size the types know; batch and sequence
    lengths may be dynamic, and if they disagree at run time the lowered loops
    read out of bounds. Before each `mha` op, this pass inserts one
    `cf.assert` per pair of sizes that must agree (key and value lengths,
    batch sizes, mask dims, result and state sizes) and that are not both
    static, with the verifier's wording, prefixed by the op's name and source
    location. A mismatch then stops the program with a message. Both
    `mha-lower-to-*` pipelines run it first.

    The checks are the ops' `RuntimeVerifiableOpInterface`, so upstream's
    `--generate-runtime-verification` inserts them as well; this pass checks
    the mha ops only (upstream's also checks every tensor and memref op).
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::cf::ControlFlowDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def MHAVectorizePass : Pass<"mha-vectorize"> {
  let summary = "Register-tile and vectorize linalg ops on tensors";
  let description = [{
    Cuts every linalg op on tensors into register-sized tiles with upstream
    `scf::tileUsingSCF` and vectorizes each tile with upstream
    `linalg::vectorize`:

    - contractions (projections, `q·kᵀ`, `p·v`): output tiles of
      `register-tile-rows` x `register-tile-cols` with the reductions one step
      at a time, innermost. Each step is an outer product (a broadcast row
      operand times a contiguous column vector); upstream's
      reduction-to-contract patterns fold the broadcasts into a
      `vector.contract`, and the tile's accumulator is hoisted out of the
      reduction loop (`hoistLoopInvariantSubsets`), so the loop carries it in
      registers. `convert-vector-to-llvm{vector-contract-lowering=outerproduct}`
      turns each step into `register-tile-rows` FMAs on vectors of
      `register-tile-cols` lanes. The tile defaults to what `vector-width`
      (bits) fits: 8x32 with AVX-512 keeps 16 of its 32 registers busy with
      accumulators (at least 12 hide the FMA latency) and leaves room for the
      operands; 4x16 for 256-bit (AVX2) or 128-bit vectors, whose 16
      registers 8x32 would overflow (spilled accumulators: 1.7x slower on
      an AVX2 host).
    - a contraction whose accumulator is a `linalg.fill` or an elementwise
      op it alone uses (a key block's zero scores, its rescaled accumulator)
      is tiled over its parallel loops with that producer fused into each
      tile (upstream `tileConsumerAndFuseProducersUsingSCF`), then over its
      reductions, so the tile's accumulator starts in registers instead of
      being read from a buffer a separate pass wrote.
    - a contraction whose rhs rows are at least `pack-min-stride` elements
      apart (a projection's weight) and that has more than one row tile is
      first tiled by column panels, each read from a contiguous copy that
      all its row tiles read in order: streamed from a strided weight, the
      panel would be re-read from L2 by every row tile, and with row strides
      a multiple of 4 KiB its rows share one L1 set. An rhs defined outside
      every loop (a weight) is packed whole, once, before the loops: split
      into column panels and permuted so that each is contiguous, by a
      `linalg.transpose` tiled as an `scf.forall` (threads) over blocks of
      the weight's rows, each block swept panel after panel, so the weight
      is read row after row; the loops then read slices of it, instead of
      copying each panel for every query tile, key tile, head and batch that
      uses it. Any other rhs has each panel copied before its row tiles.
      With `panel-reduction-tile` > 0 the row tiles sweep a panel that many
      reduction steps at a time (kc blocking: the chunk stays in L1 while
      every row tile reads it); 0, the default, keeps the whole reduction
      (no gain measured on an AVX2 host, where a [768 x 16] panel is 48 KiB;
      AVX-512's [768 x 32] panels are 96 KiB).
    - `linalg.transpose`: 16x16 blocks (`vector.transpose`, shuffles), in
      the order of its input's dims. A
      transpose of a block the loops slice out of a value defined outside
      them (a key block for `q·kᵀ`), aligned to its size, reads a copy of the
      whole value transposed block by block, made once before the loops
      like the packed weights, instead of transposing each block for every
      query tile that visits it.
    - anything else (elementwise ops, row reductions, fills): steps of up to
      `chunk` elements along the innermost loop, the contiguous one in the
      ops `mha` builds.

    A tile size that does not divide a static size shrinks until it does
    (rows: the largest divisor up to the tile; columns: halves), so every
    tile is full and vectorizes without masks. Partial tiles: every
    `scf.forall` whose step does not divide its range (an odd or dynamic
    sequence length) is first peeled (`peelParallelLoop`), so that its tiles
    but the last have static sizes instead of all being dynamic (the loops
    get the mapping `#mha.peeled`, for `mha-rejoin-peeled-loops`); an op still
    of dynamic size (that last tile, the partial key block the tiling stage
    peels off) is padded to its static bound with upstream
    `linalg::rewriteAsPaddedOp` (zeros along parallel dims and a
    contraction's reductions, the combiner's neutral element along a plain
    reduction's) and vectorized like a full tile. An op the vectorizer does
    not take, or whose sizes have no static bound, is left as a linalg op
    for the scalar lowering. Boolean masks are
    read as vectors of `i1`; `mha-legalize-bool-vector-memory` makes their
    loads read bytes. The IR stays target-neutral; only the sizes are chosen
    for a target. `mha-lower-to-cpu` runs it after the decomposition stage.
  }];
  let options = [
    Option<"vectorWidth", "vector-width", "int64_t", "512",
           "Bits of the target's vector registers (512: AVX-512, 256: AVX2), "
           "which the register tile defaults to">,
    Option<"registerTileRows", "register-tile-rows", "int64_t", "0",
           "Rows of a contraction's register tile (0: from vector-width)">,
    Option<"registerTileCols", "register-tile-cols", "int64_t", "0",
           "Columns (contiguous lanes) of a contraction's register tile (0: "
           "from vector-width)">,
    Option<"chunk", "chunk", "int64_t", "64",
           "Elements per vector step of the other ops">,
    Option<"packMinStride", "pack-min-stride", "int64_t", "256",
           "Read the rhs of contractions whose rows are at least this many "
           "elements apart by packed column panels (a negative value: never)">,
    Option<"panelReductionTile", "panel-reduction-tile", "int64_t", "0",
           "Reduction steps per pass of the row tiles over a packed column "
           "panel, so that its chunk stays in L1 (0: the whole reduction)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    // The #mha.peeled mapping of peeled loops.
    "::mlir::mha::MHADialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::vector::VectorDialect",
  ];
}

def MHARaiseAttentionPass : Pass<"mha-raise-attention"> {
  let summary = "Raise scaled dot-product attention in linalg ops to "
                "mha.attention";
  let description = [{
    Frontends (torch-mlir, ONNX importers, StableHLO/TOSA lowerings) hand
    attention over as linalg ops: a contraction of queries and keys, a
    scale, an optional mask, a softmax over the keys and a contraction with
    the values. This pass finds that chain and replaces it by one
    `mha.attention`, so that the tiled, vectorized and GPU lowerings apply.
    It anchors on each contraction whose lhs is a softmax and reads:

    - **Q·Kᵀ**: any linalg contraction (`linalg.matmul`/`batch_matmul`,
      their `indexing_maps` forms, `linalg.generic`, `linalg.contract`)
      with 0, 1 or 2 batch dims into a zero-filled init; the key read with
      its head dim last through the maps, or first through a
      `linalg.transpose` (or transposing generic) of the last two dims, which
      is then skipped, or first as it is when no transpose op made it (an
      argument, a cache kept transposed): then the op reads it in place
      (`key_transposed`). The same for P·V (values with the head dim last, or
      transposed through an op).
    - **scale**: multiplications or divisions by positive constants (or
      scalars computed from constants, folded), on the scores or as an
      elementwise op on Q or K; their product becomes `scale`.
    - **mask**: a float tensor added to the scaled scores, or
      `select(m, scores, fill)` / `select(m, fill, scores)` with a boolean
      `m` and `fill` -inf or at most -1e4 (a predicate computed from one
      tensor, such as `m == 0`, is materialized as an i1 tensor). The mask
      must be broadcastable to the scores in order; size-1 and missing dims
      broadcast. A predicate on the positions (`linalg.index`) or a constant
      mask that is the triangle `key <= query + c` becomes `causal`, with
      `causal_offset` unless `c` is `Sk - Sq`.
    - **softmax** over the last dim: `linalg.softmax`, or
      `exp(x - max(x)) / sum(exp(x - max(x)))` split into linalg ops in any
      way (fused or not, keepdim reductions through reshapes or size-1 dims,
      division or multiplication by the reciprocal).
    - reshapes of the batch dims between the steps (`[B, H]` collapsed to
      `[B*H]` around `linalg.batch_matmul`); key/value heads repeated for
      grouped-query attention (a broadcast over a group dim collapsed into
      the heads) become `Hkv` heads.

    TOSA is read the same way: `tosa.matmul` (zero points 0) as the
    contractions, `tosa.transpose`, `tosa.reshape` of the batch dims,
    `tosa.mul` (shift 0), `tosa.add`, `tosa.sub`, `tosa.exp`,
    `tosa.reduce_max`/`reduce_sum` (keepdim), `tosa.reciprocal`,
    `tosa.select`, size-1 dims broadcast; so are arith/math ops applied to
    whole tensors. Not raised yet: a scale that is not a constant (scales
    computed from constants are folded), a key made by a transpose of other
    dims than its last two, causal predicates in TOSA (`tosa.greater` on
    iota tensors).

    Every `mha-lower-to-*` pipeline runs this pass first
    (`raise-attention=true`, their default).

    With `layers` (default), each `mha.attention` whose queries, keys and
    values are projections split into heads (`x · W (+ b)`, 2-d or 3-d, the
    weight read `[in, out]` or `[out, in]` through maps, a transpose or a
    batch broadcast, the bias added after or as the initial value; then
    `expand_shape` to `[B, S, H, d]` and a transpose to `[B, H, S, d]`) and
    whose result is moved back (transpose), merged (`collapse_shape`) and
    projected the same way becomes one `mha.multi_head_attention`: weights
    given `[out, in]` get a `linalg.transpose` (the one the frontend made
    becomes dead), a missing bias is zeros when others are there. A layer
    whose causal diagonal is not bottom-right stays at `mha.attention`.

    Rank-3 operands `[N, S, d]` become `[N, 1, S, d]` (or `[B, H, S, d]` when
    they are collapses of that), rank-2 ones `[1, 1, S, d]`; the result is
    reshaped back. Ops the raised chain no longer needs are erased.
    Anything that does not match exactly stays as it was; the reason is
    given by `explain=true` as a remark at each contraction that was not
    raised (and by the transform op, as its error). Semantics: a query whose keys are all masked gets zeros where the
    unraised IR gives NaN (fill -inf) or the mean of the values (finite fill)
    (docs/Semantics.md).
  }];
  let options = [
    Option<"explain", "explain", "bool", /*default=*/"false",
           "Emit a remark at each contraction that was not raised, with the "
           "reason">,
    Option<"layers", "layers", "bool", /*default=*/"true",
           "Raise the layer around each mha.attention (projections, head "
           "split and merge) to mha.multi_head_attention where it is all "
           "there">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::mha::MHADialect",
    "::mlir::tensor::TensorDialect",
  ];
}

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
    `mha.attention_weights` (whose decomposition is its only lowering). Only the tensor
    form is decomposed (upstream's decompositions build tensor ops); an
    aggregate on buffers is an error. Every `mha-lower-to-*` pipeline runs it
    at its entry, after the raise, the TOSA lowering and the runtime
    checks.

    Example: `linalg.softmax dimension(1) ins(%x) outs(%e)` becomes a fill
    and a `linalg.generic` max reduction, an elementwise `exp(x - max)`, a sum
    reduction and an elementwise division.
  }];
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

def MHADynamicScheduleOpenMPPass : Pass<"mha-dynamic-schedule-openmp"> {
  let summary = "Schedule OpenMP work-sharing loops dynamically";
  let description = [{
    Sets `schedule(dynamic)` on every `omp.wsloop`. `convert-scf-to-openmp`
    leaves the default static schedule, which hands each thread a contiguous
    block of iterations: with a causal mask the query tiles near the end see
    the most keys, so the thread with the last block does most of the work.
    Taking iterations one at a time as threads become free balances them; the
    iterations of the tiled loop nest are independent (each owns its rows of
    the result), so the results do not depend on the schedule.

    The loops whose iterations run a causal key loop (an `scf.for` that
    `mha-tile-attention` / `mha-fuse-layer` marked `mha.causal_key_loop`: its
    key range ends at the diagonal) also hand their iterations out in the
    reverse order (each induction variable runs from its last value down to
    its lower bound; `reverse-causal`, on by default): a causal query tile's
    work grows with its index, and taking the largest first leaves the small
    ones to even out the threads' finishing times at the end (longest
    processing time first). In the natural order the largest tile comes last
    and one thread works on it alone while the others wait (GPT-2 causal
    S=1024 on 2 threads was measurably faster reversed). `reverse` reverses
    every loop, the ones of equal work too; that is off by default: the
    once-per-call weight packs then read their rows in descending blocks,
    which measured slower on BERT-base S=128 (interleaved A/B runs).
    `mha-lower-to-cpu` runs this pass after
    `convert-scf-to-openmp`, while the key loops are still `scf.for`.
  }];
  let options = [
    Option<"reverse", "reverse", "bool", /*default=*/"false",
           "Hand the iterations of every loop out last first">,
    Option<"reverseCausal", "reverse-causal", "bool", /*default=*/"true",
           "Hand the iterations of the loops that run causal key loops out "
           "last first">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::omp::OpenMPDialect"];
}

def MHAPrivatizePeeledLoopsPass : Pass<"mha-privatize-peeled-loops"> {
  let summary = "Give each loop mha-vectorize peeled its own copy of the "
                "tensors from outside it that it writes (before bufferization)";
  let description = [{
    One-shot bufferization gives each iteration of an `scf.forall` its own
    buffer for a tensor defined outside the loop and written inside
    (`check-parallel-regions`), but only when the loop has more than one
    iteration: a loop of one iteration writes in place. The loops
    `mha-vectorize` peels (mapping `#mha.peeled`) often have one iteration
    (the partial tile; the one full tile of a length between one and two
    tiles), and `mha-rejoin-peeled-loops` later runs them as iterations of
    one parallel loop, where a shared buffer is a data race: with
    `loop-invariant-code-motion` hoisting the empty tensor of a key block's
    kᵀ out of the query loop, two threads wrote their kᵀ into one buffer
    (B=1, 64 < Sq < 128 and a key length that is not a multiple of the key
    tile gave wrong results on 2 threads). This pass makes the privatization
    explicit for every peeled loop, whatever its trip count: each use in
    its body of an empty tensor from outside reads a new `tensor.empty` made
    at the start of the body, and each use of another tensor from outside
    that may write into its buffer reads a `bufferization.alloc_tensor`
    copy of it. Run it last before bufferization: CSE would merge the
    copies of empty tensors back into the one outside. `mha-lower-to-cpu`
    runs it at the end of its vectorization stage.
  }];
  let dependentDialects = ["::mlir::bufferization::BufferizationDialect",
                           "::mlir::tensor::TensorDialect"];
}

def MHARejoinPeeledLoopsPass : Pass<"mha-rejoin-peeled-loops"> {
  let summary = "Join the parallel loops mha-vectorize peeled off one loop "
                "back into one (on memrefs)";
  let description = [{
    `mha-vectorize` peels the partial tile of a parallel loop (an odd or
    dynamic sequence length) into a second `scf.forall` after the one over
    the full tiles, so that each has static tile sizes. On threads, the two
    loops run one after the other: the partial tile's loop has one
    iteration per batch (or per head), so one thread works on it while the
    others wait, and the full loop's last iterations leave threads idle
    too. With a causal mask the partial tile is also the one that sees the
    most keys. This pass, after bufferization, joins the loops that
    `mha-vectorize` gave the mapping `#mha.peeled` (which also keeps the
    canonicalizer from inlining a partial loop of one iteration) back into
    one `scf.forall` over
    their ranges together, whose body is `scf.if` on the induction variable:
    the full tiles' code (static sizes) or the partial tile's. The threads
    then share all the iterations. Loops peeled along several dims join pair by
    pair. On tensors the bodies end in `tensor.parallel_insert_slice`, which
    cannot move into an `scf.if`, hence after bufferization. Loops with ops
    other than pure ones between them stay apart; the mapping is removed
    from every loop. `mha-lower-to-cpu` runs it before the parallel loops
    become OpenMP loops (or serial ones, with `openmp=false`). The joined
    iterations run concurrently, so the loops must not share a buffer they
    write: bufferize after `mha-privatize-peeled-loops`.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::mha::MHADialect",
                           "::mlir::scf::SCFDialect"];
}

def MHAStridedCopiesToLoopsPass : Pass<"mha-strided-copies-to-loops"> {
  let summary = "memref.copy of non-contiguous memrefs as linalg.copy, for "
                "loops instead of a call of the runner library's memrefCopy";
  let description = [{
    `finalize-memref-to-llvm` lowers a `memref.copy` between contiguous
    memrefs to `llvm.memcpy`, and any other (a strided subview of dynamic
    size: the partial tile of an odd or dynamic sequence length, padded and
    sliced back by `mha-vectorize`) to a call of `memrefCopy`, the runner
    library's generic copy, which walks the elements one at a time through
    their descriptors' sizes and strides. This pass rewrites each such copy
    into a `linalg.copy` of the same memrefs, which `convert-linalg-to-loops`
    turns into loops of loads and stores whose innermost (unit-stride) loop
    LLVM vectorizes. With GPT-2 causal at a dynamic sequence length,
    `memrefCopy` took a large share of the layer's time on one thread,
    copying the key blocks on the diagonal, which are padded op by op. Copies between
    contiguous memrefs stay as they are (`llvm.memcpy`). `mha-lower-to-cpu`
    and `mha-lower-to-loops` run it after bufferization.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def MHALegalizeBoolVectorMemoryPass : Pass<"mha-legalize-bool-vector-memory"> {
  let summary = "Load and store vectors of i1 as one byte per element";
  let description = [{
    A memref of `i1` holds one byte per element (MLIR's memref lowering
    addresses it with an `i1` GEP, whose stride is LLVM's alloc size of i1:
    one byte), but LLVM lays out a `vector<N x i1>` in memory as N packed
    bits. A vector load of a boolean memref (a boolean mask read by the
    vectorized softmax) would therefore read N/8 bytes and take their bits as
    the lanes. This pass, on the LLVM dialect, rewrites every `llvm.load` of a
    `vector<N x i1>` into a load of `vector<N x i8>` and an `llvm.trunc`, and
    every `llvm.store` of one into an `llvm.zext` and a store of bytes, so the
    lanes are the memref's elements. Accesses through a GEP whose element type
    is itself a vector (a memref of vectors, whose elements do use LLVM's
    layout) are left as they are. `mha-lower-to-cpu` and `mha-lower-to-loops`
    run it after the conversion to the LLVM dialect.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

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
  let options = [
    Option<"threads", "threads", "int64_t", "64", "Threads per workgroup">,
  ];
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
    launch's workgroup attributions.
  }];
  let options = [
    Option<"threads", "threads", "int64_t", "64", "Threads per workgroup">,
  ];
  let dependentDialects = [
    "::mlir::affine::AffineDialect",
    "::mlir::gpu::GPUDialect",
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
    whole layer runs on the GPU.
  }];
  let options = [
    Option<"rows", "rows", "int64_t", "32", "Rows of a workgroup tile">,
    Option<"cols", "cols", "int64_t", "64",
           "Columns of a workgroup tile (at most)">,
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

def MHAAdditiveMaskPass : Pass<"mha-additive-mask"> {
  let summary = "Rewrite i1 masks of mha.attention as additive float masks";
  let description = [{
    Every `mha.attention` with an `i1` mask gets instead a mask of the data's
    element type, 0 where the boolean is true and -inf where it is false,
    computed by a `linalg.generic` before it (the two are the same
    attention: a row that sees no key is zero either way). The GPU pipelines
    run it on the host side because SPIR-V storage buffers cannot hold
    `i1`; it costs a mask of the element type's width.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def MHAStageKernelBuffersPass : Pass<"mha-stage-kernel-buffers"> {
  let summary = "Copy the host buffers GPU kernels use into device memory";
  let description = [{
    For targets whose kernels cannot read host memory (CUDA; the Vulkan
    runtime copies by itself): every memref defined outside a `gpu.launch`
    and used inside it is copied into a `gpu.alloc` of its run-time sizes
    with `gpu.memcpy` before the launch, the kernel uses the copy, and after
    the launch the copy is written back (only when the kernel may write it:
    stores, or ops of unknown effects, through views too) and freed. The
    ops are synchronous; `gpu-async-region` then chains them on a stream.
    Dynamic sizes work. Buffers must have identity layouts (whole buffers).
  }];
  let dependentDialects = [
    "::mlir::gpu::GPUDialect",
    "::mlir::memref::MemRefDialect",
  ];
}

#endif // MHA_DIALECT_MHA_TRANSFORMS_PASSES_TD
