//===- Passes.td - CPU code generation ---------------------*- tablegen -*-===//
//
// CPU code generation. Each pass is a thin wrapper around a library function
// that transform ops and users' own pipelines call as well.
//
//===----------------------------------------------------------------------===//

#ifndef MHA_CODEGEN_CPU_PASSES_TD
#define MHA_CODEGEN_CPU_PASSES_TD

include "mlir/Pass/PassBase.td"

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
      is read row after row (a weight that is a constant in the IR, dense
      or `dense_resource`, is packed here, at compile time, into a constant
      of the same kind); the loops then read slices of it, instead of
      copying each panel for every query tile, key tile, head and batch that
      uses it. Any other rhs has each panel copied before its row tiles.
      With `panel-reduction-tile` > 0 the row tiles sweep a panel that many
      reduction steps at a time (kc blocking: the chunk stays in L1 while
      every row tile reads it); 0, the default, keeps the whole reduction
      (no gain measured on an AVX2 host, where a [768 x 16] panel is 48 KiB;
      AVX-512's [768 x 32] panels are 96 KiB).
    - in a key loop whose blocks one query tile reads
      (`mha.key_blocks_read_once`: decoding), where the loop is bound by
      reading the keys and values: the scores of at most as many rows as a
      vector has lanes (the heads of a group, the queries of a step) are
      dot products of the key rows as they are in memory, instead of outer
      products over a transposed key block (whose transposes cost more
      than such scores, and whose strided reads the prefetchers do not
      follow). The head dim is split by the lanes (upstream
      `linalg::splitReduction`): tiles of R x C x lanes FMAs, R·C = lanes,
      then the lanes of each of the R·C vectors summed by a tree of
      two-vector shuffles (a `vector.multi_reduction` of the innermost dim
      of [R·C x lanes], rewritten here). A contraction with few rows there
      (`p·v`) takes tiles of whole rows of its contiguous operand (the
      values), as many rows as the default tile's accumulators allow, so
      that each row is read once, in order.
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
    Option<"vectorWidth", "vector-width", "int64_t", "0",
           "Bits of the target's vector registers (512: AVX-512, 256: AVX2), "
           "which the register tile defaults to; 0: the mha.target's "
           "vector_bits, else 512">,
    Option<"registerTileRows", "register-tile-rows", "int64_t", "0",
           "Rows of a contraction's register tile (0: the function's "
           "mha.lowering_config register_tile, else from the vector width)">,
    Option<"registerTileCols", "register-tile-cols", "int64_t", "0",
           "Columns (contiguous lanes) of a contraction's register tile (0: "
           "the function's mha.lowering_config register_tile, else from the "
           "vector width)">,
    Option<"chunk", "chunk", "int64_t", "0",
           "Elements per vector step of the other ops (0: the function's "
           "mha.lowering_config chunk, else 64)">,
    Option<"packMinStride", "pack-min-stride", "int64_t", "256",
           "Read the rhs of contractions whose rows are at least this many "
           "elements apart by packed column panels (a negative value: never)">,
    Option<"panelReductionTile", "panel-reduction-tile", "int64_t", "0",
           "Reduction steps per pass of the row tiles over a packed column "
           "panel, so that its chunk stays in L1 (0: the whole reduction)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    // The fused multiply-adds of one-row scores.
    "::mlir::math::MathDialect",
    // The #mha.peeled mapping of peeled loops.
    "::mlir::mha::MHADialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::vector::VectorDialect",
  ];
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

def MHAPrefetchKeyBlocksPass : Pass<"mha-prefetch-key-blocks"> {
  let summary = "Prefetch the rows of the key blocks ahead in the key loops "
                "that mha-tile-attention marked (on memrefs)";
  let description = [{
    A decoding step's key loop reads each key and value block once, its
    rows as they lie in memory, and is bound by reading them. The hardware
    prefetchers alone leave it waiting on memory for part of every block,
    as if reading and computing took turns; software prefetches of the next
    blocks' rows, issued while the current block is computed, keep the
    reads going.

    On every `scf.for` marked `mha.prefetch_blocks = N` (set by
    `mha-tile-attention` from the op's lowering configuration,
    `prefetch_blocks`), after bufferization: for each block the loop slices
    at its induction variable from a buffer defined outside it (a
    `memref.subview` of `step` rows, whole contiguous rows after the row
    dim, only read), the first loop nested in it that walks the block's
    rows (range `[0, step)`, its induction variable indexing a read of the
    block) issues, at each of its steps, a `memref.prefetch` of every cache
    line (`cache-line-bytes`) of the same rows N blocks ahead, clamped to
    the buffer's last row. The keys are prefetched where the scores read
    them, the values where P·V does, so the prefetches spread over the
    block's work. Blocks that match nothing are left as they are.
    `mha-lower-to-cpu` runs it after bufferization.

    ```mlir
    scf.for %i = %c0 to %n step %c128 {
      %k = memref.subview %keys[0, 0, %i, 0] [1, 1, 128, 128] [1, 1, 1, 1] : ...
      scf.for %j = %c0 to %c128 step %c4 {
        // memref.prefetch %keys[0, 0, min(%i + 128 + %j + r, rows - 1), c]
        // for r in 0..3 and every cache line c of a row
        ... vector.transfer_read %k[%c0, %c0, %j, %c0] ...
      }
      ...
    } {mha.prefetch_blocks = 1 : i64}
    ```
  }];
  let options = [
    Option<"cacheLineBytes", "cache-line-bytes", "int64_t", /*default=*/"64",
           "Bytes per prefetched cache line">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect"];
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

#endif // MHA_CODEGEN_CPU_PASSES_TD
