//===- MHAOps.td - MHA dialect ops -------------------------*- tablegen -*-===//
//
// The ops of the `mha` dialect. Their semantics are the contract of
// docs/Semantics.md; every verifier rule below enforces a line of it.
//
//===----------------------------------------------------------------------===//

#ifndef MHA_DIALECT_MHA_IR_MHAOPS_TD
#define MHA_DIALECT_MHA_IR_MHAOPS_TD

include "mha/Dialect/MHA/IR/MHABase.td"
include "mha/Dialect/MHA/IR/MHAAttrs.td"
include "mlir/Interfaces/DestinationStyleOpInterface.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/RuntimeVerifiableOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/TilingInterface.td"
include "mlir/Dialect/Linalg/IR/LinalgInterfaces.td"

// The accessors mha.attention, mha.attention_weights and
// mha.online_attention share (their operands query, key, optional scale and
// causal_offset, and the key_transposed flag have the same names and
// meaning), declared and defined once.
defvar MHA_AttentionAccessors = [{
    /// `scale`, or `1/sqrt(dk)` if absent.
    double getScaleOrDefault() {
      return mha::getScaleOrDefault(getScale(), getQuery());
    }

    /// The diagonal that `causal` and the windows are relative to:
    /// `causal_offset`, or its default (`Sk - Sq`; `-key_offset - Sq` with
    /// `key_lengths`, to which each batch's length is added) built at the
    /// builder's insertion point. Only meaningful for ops that have a
    /// diagonal (hasDiagonal()).
    Value getCausalOffsetOrDefault(OpBuilder &builder) {
      return mha::getCausalOffsetOrDefault(
          builder, getLoc(), getCausalOffset(), getQuery(), getKey(),
          getKeySeqDim(), getKeyLengths(), getKeyOffset());
    }

    /// Which keys each query sees beyond the mask (key lengths, causal,
    /// windows), with the diagonal built at the builder's insertion point.
    KeyVisibility getKeyVisibility(OpBuilder &builder) {
      KeyVisibility v;
      v.keyLengths = getKeyLengths();
      v.keyOffset = getKeyOffset();
      v.causal = getCausal();
      if (auto left = getWindowLeftAttr())
        v.windowLeft = left.getInt();
      if (auto right = getWindowRightAttr())
        v.windowRight = right.getInt();
      if (v.hasDiagonal())
        v.diagonal = getCausalOffsetOrDefault(builder);
      return v;
    }

    /// Whether `causal` or a window makes keys invisible relative to the
    /// diagonal.
    bool hasDiagonal() {
      return getCausal() || getWindowLeftAttr() || getWindowRightAttr();
    }

    /// `softcap`, if any, as a double.
    std::optional<double> getSoftcapValue() {
      if (auto cap = getSoftcapAttr())
        return cap.getValueAsDouble();
      return std::nullopt;
    }

    /// The key's sequence (Sk) dim: 2, or 3 with `key_transposed`.
    int64_t getKeySeqDim() { return mha::getKeySeqDim(getKeyTransposed()); }
}];

//===----------------------------------------------------------------------===//
// MultiHeadAttentionOp
//===----------------------------------------------------------------------===//

def MHA_MultiHeadAttentionOp : MHA_Op<"multi_head_attention", [
    Pure, AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<ReifyRankedShapedTypeOpInterface,
                              ["reifyResultShapes"]>,
    DeclareOpInterfaceMethods<RuntimeVerifiableOpInterface>]> {
  let summary = "The whole multi-head attention layer";
  let description = [{
    Computes `MultiHead(Q, K, V) = Concat(head_1..head_H) · W_o (+ b_o)` with
    `head_i = softmax(mask(Q_i K_iᵀ · scale)) · V_i`, where
    `Q = query · W_q (+ b_q)`, `K = key · W_k (+ b_k)` and
    `V = value · W_v (+ b_v)` are split into heads.

    | operand | shape |
    |---|---|
    | query | `[B, Sq, Eq]` |
    | key, value | `[B, Sk, Ek]`, `[B, Sk, Ev]` |
    | w_q, w_k, w_v | `[Eq, H·dk]`, `[Ek, Hkv·dk]`, `[Ev, Hkv·dv]` (`[in, out]` layout) |
    | w_o | `[H·dv, Eo]` |
    | b_q, b_k, b_v, b_o | `[H·dk]`, `[Hkv·dk]`, `[Hkv·dv]`, `[Eo]` (all four or none) |
    | mask | `[Sq, Sk]`, `[B, Sq, Sk]` or `[B|1, H|1, Sq|1, Sk|1]` |
    | result | `[B, Sq, Eo]` |

    `B`, `Sq` and `Sk` may be dynamic; embedding and head dims are static.
    `num_kv_heads` (`Hkv`, default `num_heads`) must divide `num_heads`: query
    head `h` reads key/value head `h / (H / Hkv)` (grouped-query and multi-query
    attention). `scale` defaults to `1/sqrt(dk)`. An `i1` mask is true where a
    query may attend; a float mask is added to the scaled scores. `causal` lets
    query `i` see key `j` iff `j <= i + (Sk - Sq)` (bottom-right aligned). A
    query that can see no key produces a zero head output.

    `softcap = c` caps the scaled scores to `c · tanh(s / c)` before the mask
    is added. `window_left = L` and `window_right = R` (non-negative) restrict
    query `i` to the keys `j` with `i + D - L <= j <= i + D + R` around the
    causal diagonal `D = Sk - Sq` (with `causal`, only `window_left`).
    `key_lengths(%len)` (`[B]`, i32 or i64) makes only the first `len[b]` keys
    of batch `b` visible, and aligns the diagonal to them
    (`D = len[b] - Sq`); each length must be in `[0, Sk]` (checked at run
    time). Unlike masks, these restrict the keys the tiled lowerings visit.

    `kv_cache(%k_cache, %v_cache, %lengths)` makes the layer a step of
    decoding (or a prefill) on static KV caches `[B, Hkv, Smax, dk]` and
    `[B, Hkv, Smax, dv]` that hold `lengths[b]` valid positions of batch `b`
    (`[B]`, i32 or i64; each in `[0, Smax - Sk]`, checked at run time): the
    step's projected keys and values (its `Sk` tokens) are written at
    `lengths[b]` (`mha.cache_append`), and the queries attend to the first
    `lengths[b] + Sk` positions of the caches, the step's own keys last (the
    diagonal of `causal` and the windows is `D = lengths[b] + Sk - Sq`). The
    updated caches are two more results, written in place of the caches
    when bufferized. The mask, if any, spans the caches' `Smax` keys;
    `key_lengths` and `return_weights` are refused with a cache.

    `rotary(%cos, %sin)` applies rotary position embeddings (`mha.rotary`,
    tables `[P, R/2]`, `R <= dk`; `rotary_interleaved` for the GPT-J form) to
    the projected queries and keys before the attention (and before they
    enter the cache): the step's tokens are its queries and its keys
    (`Sq = Sk`), token `s` at position `lengths[b] + s` with a cache and `s`
    without. Each position must be below `P` (checked at run time).

    `return_weights = "per_head"` adds a second result, the attention
    probabilities `softmax(mask(Q_i K_iᵀ · scale))` of every head
    `[B, H, Sq, Sk]`, and `"average"` their mean over the heads `[B, Sq, Sk]`
    (PyTorch's `need_weights` and `average_attn_weights`); a query that sees
    no key has zero probabilities. They are O(Sq·Sk) memory by nature: the
    lowerings compute them with `mha.attention_weights` beside the fused
    attention, which stays O(S·d).

    Example (self-attention, 8 query heads sharing 2 key/value heads, with
    biases and a boolean mask):

    ```mlir
    %y = mha.multi_head_attention %x, %x, %x, %wq, %wk, %wv, %wo
           bias(%bq, %bk, %bv, %bo) mask(%m)
           {num_heads = 8 : i64, num_kv_heads = 2 : i64, causal}
           : (tensor<2x128x512xf32>, tensor<2x128x512xf32>, tensor<2x128x512xf32>,
              tensor<512x512xf32>, tensor<512x128xf32>, tensor<512x128xf32>,
              tensor<512x512xf32>, tensor<512xf32>, tensor<128xf32>,
              tensor<128xf32>, tensor<512xf32>, tensor<128x128xi1>)
           -> tensor<2x128x512xf32>
    ```
  }];

  let arguments = (ins
    MHA_FloatTensor:$query,
    MHA_FloatTensor:$key,
    MHA_FloatTensor:$value,
    MHA_FloatTensor:$w_q,
    MHA_FloatTensor:$w_k,
    MHA_FloatTensor:$w_v,
    MHA_FloatTensor:$w_o,
    Optional<MHA_FloatTensor>:$b_q,
    Optional<MHA_FloatTensor>:$b_k,
    Optional<MHA_FloatTensor>:$b_v,
    Optional<MHA_FloatTensor>:$b_o,
    Optional<MHA_MaskTensor>:$mask,
    Optional<MHA_LengthsTensor>:$key_lengths,
    Optional<MHA_FloatTensor>:$k_cache,
    Optional<MHA_FloatTensor>:$v_cache,
    Optional<MHA_LengthsTensor>:$cache_lengths,
    Optional<MHA_FloatTensor>:$rotary_cos,
    Optional<MHA_FloatTensor>:$rotary_sin,
    I64Attr:$num_heads,
    OptionalAttr<I64Attr>:$num_kv_heads,
    OptionalAttr<F32Attr>:$scale,
    UnitAttr:$causal,
    OptionalAttr<StrAttr>:$return_weights,
    OptionalAttr<F32Attr>:$softcap,
    OptionalAttr<I64Attr>:$window_left,
    OptionalAttr<I64Attr>:$window_right,
    UnitAttr:$rotary_interleaved
  );
  // One group of results after `result`: the weights (`return_weights`), or
  // the updated caches (`kv_cache`), or none. Two optional groups would need
  // result segment sizes, which functional-type cannot parse.
  let results = (outs MHA_FloatTensor:$result,
                      Variadic<MHA_FloatTensor>:$extra_results);

  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $w_q `,` $w_k `,` $w_v `,` $w_o
    (`bias` `(` $b_q^ `,` $b_k `,` $b_v `,` $b_o `)`)?
    (`mask` `(` $mask^ `)`)?
    (`key_lengths` `(` $key_lengths^ `)`)?
    (`kv_cache` `(` $k_cache^ `,` $v_cache `,` $cache_lengths `)`)?
    (`rotary` `(` $rotary_cos^ `,` $rotary_sin `)`)?
    attr-dict `:` functional-type(operands, results)
  }];

  let extraClassDeclaration = [{
    /// Number of key/value heads (`num_kv_heads`, or `num_heads` if absent).
    int64_t getNumKvHeadsOrDefault();
    /// Per-head query/key width: columns of `w_q` divided by `num_heads`.
    int64_t getHeadDimQK();
    /// Per-head value width: columns of `w_v` divided by `num_kv_heads`.
    int64_t getHeadDimV();
    /// `scale`, or `1/sqrt(dk)` if absent.
    double getScaleOrDefault();
    /// True when the four bias operands are present.
    bool hasBias() { return getBQ() != nullptr; }
    /// Verifies `kv_cache` against the batch size `b`, the step's keys `sk`
    /// and the head dims; returns the keys the attention reads (Smax with a
    /// cache, else `sk`).
    FailureOr<int64_t> verifyKvCache(int64_t b, int64_t sk, int64_t dk,
                                     int64_t dv);
    /// Verifies `rotary` against the tokens and the head dim.
    LogicalResult verifyRotary(int64_t sq, int64_t sk, int64_t dk);
    /// True for a step on KV caches (`kv_cache`).
    bool hasKvCache() { return getKCache() != nullptr; }
    /// The attention probabilities (`return_weights`), or null.
    Value getWeights() {
      return getReturnWeights() && !getExtraResults().empty()
                 ? getExtraResults().front() : Value();
    }
    /// The updated key and value caches (`kv_cache`), or null.
    Value getKCacheResult() {
      return hasKvCache() && getExtraResults().size() == 2
                 ? getExtraResults()[0] : Value();
    }
    Value getVCacheResult() {
      return hasKvCache() && getExtraResults().size() == 2
                 ? getExtraResults()[1] : Value();
    }
    /// The cache an updated cache result is written into (as a destination
    /// of destination-passing style once decomposed), or null for the
    /// other results.
    OpOperand *getTiedCache(OpResult result) {
      if (result == getKCacheResult())
        return &getKCacheMutable()[0];
      if (result == getVCacheResult())
        return &getVCacheMutable()[0];
      return nullptr;
    }
  }];

  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

def MHA_AttentionOp : MHA_Op<"attention", [
    Pure, AttrSizedOperandSegments, DestinationStyleOpInterface,
    DeclareOpInterfaceMethods<ReifyRankedShapedTypeOpInterface,
                              ["reifyResultShapes"]>,
    DeclareOpInterfaceMethods<RuntimeVerifiableOpInterface>,
    DeclareOpInterfaceMethods<AggregatedOpInterface, ["decomposeOperation"]>,
    DeclareOpInterfaceMethods<TilingInterface,
        ["getLoopIteratorTypes", "getIterationDomain",
         "getTiledImplementation", "getResultTilePosition",
         "generateResultTileValue", "getIterationDomainTileFromResultTile",
         "isOpFusableWithConsumerSlice"]>]> {
  let summary = "Scaled dot-product attention on head-split tensors";
  let description = [{
    The core of multi-head attention, for every batch `b`, query head `h` and
    query `i`:
    `out[b, h, i, :] = softmax_j(mask(q[b, h, i, :] · k[b, g, j, :] · scale)) · v[b, g, :, :]`
    with `g = h / (H / Hkv)` the key/value head that query head `h` reads.

    | operand | shape |
    |---|---|
    | query | `[B, H, Sq, dk]` |
    | key | `[B, Hkv, Sk, dk]` |
    | value | `[B, Hkv, Sk, dv]` |
    | mask (optional) | `[Sq, Sk]`, `[B, Sq, Sk]` or `[B|1, H|1, Sq|1, Sk|1]` |
    | init, result | `[B, H, Sq, dv]` |

    With `key_transposed` the key is given as `[B, Hkv, dk, Sk]` (kᵀ per
    head), the layout some frontends and KV caches keep: the op reads it in
    place, and the score contraction `q · kᵀ` takes it as its right operand
    without the transposed copy of the keys the default layout needs. Tiling
    slices it along its last dim.

    `B`, `Sq` and `Sk` may be dynamic; `H`, `Hkv`, `dk` and `dv` are static and
    `Hkv` divides `H`. The op is in destination-passing style: `init` only
    provides the shape of the result (its values are overwritten), which lets
    tiling produce slices of it. `scale`, `causal` and the mask follow the same
    rules as `mha.multi_head_attention`, except that only a static size-1
    mask dim broadcasts: a dynamic one must match the scores (checked at run
    time; the layer's decomposition expands dims that are 1 at run time).

    `causal` lets query `i` see key `j` iff `j <= i + causal_offset`, where
    `causal_offset` defaults to `Sk - Sq` (bottom-right alignment). Tiling
    along `Sq` sets it explicitly, so that a tile of queries starting at `i0`
    keeps the diagonal of the whole op: `causal_offset = i0 + Sk - Sq`.

    `softcap`, `window_left`, `window_right` and `key_lengths` follow
    `mha.multi_head_attention`; the windows are relative to the same
    diagonal (`causal_offset`, which they accept without `causal`). With
    `key_lengths`, batch `b`'s diagonal is `causal_offset + len[b]` (default
    `causal_offset = -key_offset - Sq`: the last query sees the batch's last
    valid key), and key `j` is valid iff `j + key_offset < len[b]`:
    `key_offset` (default 0) is what tiling the keys sets, a block of keys
    starting at `j0` getting `key_offset + j0`.

    Tiling (`TilingInterface`) is over the parallel dims `(B, H, Sq)`; a tile
    reads every key. A tile of `t` query heads reads `t / (H / Hkv)` key/value
    heads when `t` is a multiple of the group size `H / Hkv`, or the one
    key/value head of its group when `t` divides the group size; other head
    tile sizes are rejected. Masks are sliced along the dims they have
    (size-1 dims broadcast and are not sliced). The op can be fused as a
    producer into a consumer's tile (`generateResultTileValue`).

    Decomposition (`AggregatedOpInterface`, e.g.
    `transform.structured.decompose_interface`) rewrites it into the online
    form: f32 fills of the running state, one `mha.online_attention` over all
    keys, and the normalization `out = acc / sum` (0 where `sum = 0`) into
    `init`. Tiling the key dimension of that op is the FlashAttention loop.

    Example:

    ```mlir
    %o = mha.attention ins(%q, %k, %v : tensor<2x8x?x64xf32>,
                           tensor<2x2x?x64xf32>, tensor<2x2x?x32xf32>)
           mask(%m : tensor<?x?xi1>)
           outs(%init : tensor<2x8x?x32xf32>) {causal} -> tensor<2x8x?x32xf32>
    ```
  }];

  let arguments = (ins
    MHA_FloatTensor:$query,
    MHA_FloatTensor:$key,
    MHA_FloatTensor:$value,
    Optional<MHA_MaskTensor>:$mask,
    Optional<MHA_LengthsTensor>:$key_lengths,
    Optional<Index>:$key_offset,
    Optional<Index>:$causal_offset,
    MHA_FloatTensor:$init,
    OptionalAttr<F32Attr>:$scale,
    UnitAttr:$causal,
    UnitAttr:$key_transposed,
    OptionalAttr<F32Attr>:$softcap,
    OptionalAttr<I64Attr>:$window_left,
    OptionalAttr<I64Attr>:$window_right
  );
  let results = (outs MHA_FloatTensor:$result);

  let assemblyFormat = [{
    `ins` `(` $query `,` $key `,` $value `:` type($query) `,` type($key) `,` type($value) `)`
    (`mask` `(` $mask^ `:` type($mask) `)`)?
    (`key_lengths` `(` $key_lengths^ `:` type($key_lengths) `)`)?
    (`key_offset` `(` $key_offset^ `)`)?
    (`causal_offset` `(` $causal_offset^ `)`)?
    `outs` `(` $init `:` type($init) `)`
    attr-dict `->` type($result)
  }];

  let extraClassDeclaration = MHA_AttentionAccessors # [{
    // DestinationStyleOpInterface: `init` is the only destination.
    MutableOperandRange getDpsInitsMutable() { return getInitMutable(); }
  }];

  let hasVerifier = 1;
}


//===----------------------------------------------------------------------===//
// AttentionWeightsOp
//===----------------------------------------------------------------------===//

def MHA_AttentionWeightsOp : MHA_Op<"attention_weights", [
    Pure, AttrSizedOperandSegments, DestinationStyleOpInterface,
    DeclareOpInterfaceMethods<ReifyRankedShapedTypeOpInterface,
                              ["reifyResultShapes"]>,
    DeclareOpInterfaceMethods<AggregatedOpInterface, ["decomposeOperation"]>]> {
  let summary = "The attention probabilities (or scores, or logits) of "
                "head-split queries and keys";
  let description = [{
    `p[b, h, i, j] = softmax_j(mask(q[b, h, i, :] · k[b, g, j, :] · scale))`,
    the probabilities `mha.attention` weights the values with (same
    operands, mask, `scale`, `causal`, `causal_offset`, `softcap`, windows,
    `key_lengths` and `key_transposed` rules; `g = h / (H / Hkv)`); a query
    that sees no key has zero probabilities. `init` is `[B, H, Sq, Sk]`, or
    `[B, Sq, Sk]` with `average_heads` (the mean over the heads, as
    PyTorch's `average_attn_weights`). The result is O(Sq·Sk) memory: it
    exists for the callers that need the probabilities (`need_weights`,
    ONNX's `qk_matmul_output`, visualization), next to the fused attention.
    It decomposes (`AggregatedOpInterface`, `mha-attention-to-linalg`) into
    linalg ops that materialize the scores.

    `stage` returns an earlier step of the same computation (ONNX's
    `qk_matmul_output_mode`), per head (not with `average_heads`):

    | stage | `[b, h, i, j]` |
    |---|---|
    | `scores` | `s = q · k · scale`, capped to `softcap · tanh(s / softcap)` with `softcap` |
    | `logits` | the scores plus the mask (a float mask added; -inf where an i1 mask is false or the key is hidden by `causal`, a window or `key_lengths`) |
    | `probabilities` (default) | the softmax of the logits over `j` |

    ```mlir
    %p = mha.attention_weights ins(%q, %k : tensor<2x8x?x64xf32>, tensor<2x2x?x64xf32>)
           outs(%init : tensor<2x?x?xf32>) {average_heads, causal} -> tensor<2x?x?xf32>
    %l = mha.attention_weights ins(%q, %k : tensor<2x8x?x64xf32>, tensor<2x2x?x64xf32>)
           outs(%init2 : tensor<2x8x?x?xf32>) {causal, stage = #mha.weights_stage<logits>}
           -> tensor<2x8x?x?xf32>
    ```
  }];

  let arguments = (ins
    MHA_FloatTensor:$query,
    MHA_FloatTensor:$key,
    Optional<MHA_MaskTensor>:$mask,
    Optional<MHA_LengthsTensor>:$key_lengths,
    Optional<Index>:$key_offset,
    Optional<Index>:$causal_offset,
    MHA_FloatTensor:$init,
    OptionalAttr<F32Attr>:$scale,
    UnitAttr:$causal,
    UnitAttr:$average_heads,
    UnitAttr:$key_transposed,
    OptionalAttr<F32Attr>:$softcap,
    OptionalAttr<I64Attr>:$window_left,
    OptionalAttr<I64Attr>:$window_right,
    DefaultValuedAttr<MHA_WeightsStageAttr,
                      "::mlir::mha::WeightsStage::Probabilities">:$stage
  );
  let results = (outs MHA_FloatTensor:$result);

  let assemblyFormat = [{
    `ins` `(` $query `,` $key `:` type($query) `,` type($key) `)`
    (`mask` `(` $mask^ `:` type($mask) `)`)?
    (`key_lengths` `(` $key_lengths^ `:` type($key_lengths) `)`)?
    (`key_offset` `(` $key_offset^ `)`)?
    (`causal_offset` `(` $causal_offset^ `)`)?
    `outs` `(` $init `:` type($init) `)`
    attr-dict `->` type($result)
  }];

  let extraClassDeclaration = MHA_AttentionAccessors # [{
    // DestinationStyleOpInterface: `init` is the only destination.
    MutableOperandRange getDpsInitsMutable() { return getInitMutable(); }
  }];

  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// OnlineAttentionOp
//===----------------------------------------------------------------------===//

def MHA_OnlineAttentionOp : MHA_Op<"online_attention", [
    Pure, AttrSizedOperandSegments, DestinationStyleOpInterface,
    DeclareOpInterfaceMethods<ReifyRankedShapedTypeOpInterface,
                              ["reifyResultShapes"]>,
    DeclareOpInterfaceMethods<RuntimeVerifiableOpInterface>,
    DeclareOpInterfaceMethods<AggregatedOpInterface, ["decomposeOperation"]>,
    DeclareOpInterfaceMethods<TilingInterface,
        ["getLoopIteratorTypes", "getIterationDomain",
         "getTiledImplementation", "getResultTilePosition",
         "generateResultTileValue", "getIterationDomainTileFromResultTile",
         "isOpFusableWithConsumerSlice"]>,
    DeclareOpInterfaceMethods<PartialReductionOpInterface,
        ["generateInitialTensorForPartialReduction", "tileToPartialReduction",
         "mergeReductions", "getPartialResultTilePosition"]>]> {
  let summary = "One step of the online softmax: attention state updated by "
                "a block of keys";
  let description = [{
    The FlashAttention form of `mha.attention`. The op carries the running
    softmax state of every query row, in f32, as destinations and results:
    `acc [B, H, Sq, dv]` (unnormalized output), `max [B, H, Sq]` (running
    maximum of the logits) and `sum [B, H, Sq]` (running sum of
    `exp(logit - max)`). It folds the keys and values it is given into that
    state: with `s[j]` the logits of a row (scaled scores, masked as in
    `mha.attention`, `-inf` where invisible),

    ```
    max' = max(max, max_j s[j])
    a    = exp(max - max')            (0 when max' = -inf)
    p[j] = exp(s[j] - max')           (0 when max' = -inf)
    sum' = a · sum + Σ_j p[j]
    acc' = a · acc + Σ_j p[j] · v[j]
    ```

    Folding the keys in blocks gives the same state as folding them at once,
    so the key dimension is an ordinary reduction dimension: the iteration
    domain is `(B, H, Sq, Sk)` with `Sk` a reduction, and upstream tiling
    (`scf::tileUsingSCF`, `transform.structured.tile_using_for`) of that
    dimension produces the FlashAttention key loop, carrying the state.
    Starting from `acc = 0, max = -inf, sum = 0` and ending with
    `acc / sum` (0 where `sum = 0`) gives `mha.attention`.

    Chunks of keys can also be folded independently, each from the empty
    state, and their states combined afterwards (flash-decoding):
    `PartialReductionOpInterface`, for upstream's
    `PartialReductionOuterParallel` tiling of the key dimension
    (the loop of `mha-tile-attention`'s `kv-splits`). The partial states
    have a leading chunk dimension (`acc [chunks, B, H, Sq, dv]`, `max` and
    `sum [chunks, B, H, Sq]`); the merge is exact: `m = max(max, max_c m_c)`,
    `sum' = a · sum + Σ_c a_c · sum_c` and `acc' = a · acc + Σ_c a_c · acc_c`
    with `a_c = exp(m_c - m)` (0 where `m_c = -inf`, a chunk with no visible
    key).

    The key layout follows `mha.attention` (`key_transposed`: `[B, Hkv, dk,
    Sk]`).

    Causal skipping is part of the iteration domain: with `causal`, query
    `i` sees key `j` iff `j <= i + causal_offset` (default `Sk - Sq`), and the
    key range of the domain ends at `min(Sk, max(0, Sq + causal_offset))`,
    the last key the last row sees (a right window and, for one batch, the
    batch's key length end it likewise; the lowerings start the key loop
    they tile it into at the first key a left window lets the first row
    see). Softcap, windows and key lengths follow `mha.attention`. Tiling queries first narrows that bound
    for each query tile, so key tiles wholly above the diagonal are never
    created. A tile at key offset `j0` gets `causal_offset - j0 + i0`.

    Decomposition (`AggregatedOpInterface`) produces linalg ops on tensors:
    the score block `q · kᵀ`, the logits (mask read through an indexing map
    that broadcasts its size-1 dims; the causal predicate only evaluated, in
    an `scf.if`, when the block straddles the diagonal), the row maximum, the
    rescaling factors and the two updates.

    Example:

    ```mlir
    %acc, %max, %sum = mha.online_attention
        ins(%q, %k, %v : tensor<1x1x64x64xf32>, tensor<1x1x?x64xf32>,
                         tensor<1x1x?x64xf32>)
        causal_offset(%off)
        outs(%acc0, %max0, %sum0 : tensor<1x1x64x64xf32>, tensor<1x1x64xf32>,
                                   tensor<1x1x64xf32>)
        {causal} -> tensor<1x1x64x64xf32>, tensor<1x1x64xf32>, tensor<1x1x64xf32>
    ```
  }];

  let arguments = (ins
    MHA_FloatTensor:$query,
    MHA_FloatTensor:$key,
    MHA_FloatTensor:$value,
    Optional<MHA_MaskTensor>:$mask,
    Optional<MHA_LengthsTensor>:$key_lengths,
    Optional<Index>:$key_offset,
    Optional<Index>:$causal_offset,
    RankedTensorOf<[F32]>:$acc,
    RankedTensorOf<[F32]>:$max,
    RankedTensorOf<[F32]>:$sum,
    OptionalAttr<F32Attr>:$scale,
    UnitAttr:$causal,
    UnitAttr:$key_transposed,
    OptionalAttr<F32Attr>:$softcap,
    OptionalAttr<I64Attr>:$window_left,
    OptionalAttr<I64Attr>:$window_right
  );
  let results = (outs RankedTensorOf<[F32]>:$result_acc,
                      RankedTensorOf<[F32]>:$result_max,
                      RankedTensorOf<[F32]>:$result_sum);

  let assemblyFormat = [{
    `ins` `(` $query `,` $key `,` $value `:` type($query) `,` type($key) `,` type($value) `)`
    (`mask` `(` $mask^ `:` type($mask) `)`)?
    (`key_lengths` `(` $key_lengths^ `:` type($key_lengths) `)`)?
    (`key_offset` `(` $key_offset^ `)`)?
    (`causal_offset` `(` $causal_offset^ `)`)?
    `outs` `(` $acc `,` $max `,` $sum `:` type($acc) `,` type($max) `,` type($sum) `)`
    attr-dict `->` type($result_acc) `,` type($result_max) `,` type($result_sum)
  }];

  let extraClassDeclaration = MHA_AttentionAccessors # [{
    /// The keys [first, end) some query of the op may see (causal, windows,
    /// and key lengths when the op has one batch): the iteration domain's
    /// key range is [0, end), and the lowerings start the key loop they
    /// tile it into at `first` (upstream tiling takes a range's size for
    /// its upper bound, so the domain keeps offset 0).
    std::pair<OpFoldResult, OpFoldResult> getVisibleKeyRange(OpBuilder &b);

    /// Success when `reductionDims` and `strategy` are the split of the
    /// PartialReductionOpInterface methods (the keys, in chunks folded in
    /// parallel); an error on the op otherwise.
    LogicalResult checkKeySplit(const SetVector<unsigned> &reductionDims,
                                ReductionTilingStrategy strategy);

    // DestinationStyleOpInterface: `acc`, `max` and `sum`.
    MutableOperandRange getDpsInitsMutable() {
      return MutableOperandRange(getOperation(),
                                 getODSOperandIndexAndLength(7).first, 3);
    }
  }];

  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// CacheAppendOp
//===----------------------------------------------------------------------===//

def MHA_CacheAppendOp : MHA_Op<"cache_append", [
    Pure, DestinationStyleOpInterface,
    DeclareOpInterfaceMethods<ReifyRankedShapedTypeOpInterface,
                              ["reifyResultShapes"]>,
    DeclareOpInterfaceMethods<RuntimeVerifiableOpInterface>,
    DeclareOpInterfaceMethods<AggregatedOpInterface, ["decomposeOperation"]>]> {
  let summary = "Writes a step's keys or values into a preallocated cache";
  let description = [{
    The update of a static KV cache during decoding: for every batch `b`,
    the `update`'s `Sn` positions are written at `lengths[b]` along the
    sequence dim (the second to last) of `cache`, and the result is `cache`
    with them in place; the other elements are `cache`'s:

    `result[b, ..., lengths[b] + i, :] = update[b, ..., i, :]` for `i < Sn`.

    | operand | shape |
    |---|---|
    | update | `[B, ..., Sn, d]` (e.g. `[B, Hkv, Sn, d]`) |
    | lengths | `[B]`, i32 or i64: each batch's valid cache length before the step |
    | cache, result | `[B, ..., Smax, d]` |

    Every `lengths[b]` must be in `[0, Smax - Sn]` (checked at compile time
    when the lengths are constant, at run time otherwise); the other dims of
    `update` and `cache` are equal. The attention of the step then reads the
    result with `key_lengths = lengths + Sn`, whose default diagonal puts the
    step's queries at the end of each batch's keys (docs/Semantics.md).
    This is ONNX's `TensorScatter` (opset 24, linear mode) on the
    sequence axis.

    The op is in destination-passing style with `cache` as its destination,
    and decomposes (`AggregatedOpInterface`, `mha-decompose-aggregates`)
    into an `scf.forall` over the batch and the dims before the sequence
    dim (at most three loop dims), each iteration copying its rows into a
    `tensor.parallel_insert_slice` at a dynamic offset: the slices are
    disjoint, and the GPU pipelines launch one workgroup per iteration (the
    caches stay on the device). The CPU pipelines decompose it into an
    `scf.for` over batches instead (`mha-decompose-aggregates{serial-cache-appends}`):
    a step writes too few elements for threads to pay off. One-shot
    bufferization writes those slices into the cache's
    buffer: when the cache is an argument of the entry function, the step
    writes `B·Sn·d` elements per head and copies nothing cache-sized, and
    the pipelines return the result as that argument's buffer
    (`mha-return-arguments-in-place`).

    ```mlir
    %kc = mha.cache_append ins(%k_new : tensor<?x8x1x128xf32>)
            lengths(%len : tensor<?xi32>)
            outs(%k_cache : tensor<?x8x4096x128xf32>) -> tensor<?x8x4096x128xf32>
    ```
  }];

  let arguments = (ins
    MHA_FloatTensor:$update,
    MHA_LengthsTensor:$lengths,
    MHA_FloatTensor:$cache
  );
  let results = (outs MHA_FloatTensor:$result);

  let assemblyFormat = [{
    `ins` `(` $update `:` type($update) `)`
    `lengths` `(` $lengths `:` type($lengths) `)`
    `outs` `(` $cache `:` type($cache) `)`
    attr-dict `->` type($result)
  }];

  let extraClassDeclaration = [{
    /// The sequence dim of `update` and `cache`: the second to last.
    int64_t getSeqDim() {
      return cast<ShapedType>(getCache().getType()).getRank() - 2;
    }

    // DestinationStyleOpInterface: `cache` is the only destination.
    MutableOperandRange getDpsInitsMutable() { return getCacheMutable(); }

    /// The decomposition: an scf.forall (`parallel`, what
    /// decomposeOperation builds) or an scf.for over batches.
    FailureOr<SmallVector<Value>> decompose(OpBuilder &b, bool parallel);
  }];

  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// RotaryOp
//===----------------------------------------------------------------------===//

def MHA_RotaryOp : MHA_Op<"rotary", [
    Pure, DestinationStyleOpInterface,
    DeclareOpInterfaceMethods<ReifyRankedShapedTypeOpInterface,
                              ["reifyResultShapes"]>,
    DeclareOpInterfaceMethods<RuntimeVerifiableOpInterface>,
    DeclareOpInterfaceMethods<AggregatedOpInterface, ["decomposeOperation"]>]> {
  let summary = "Rotary position embeddings of head-split queries or keys";
  let description = [{
    Rotates pairs of channels of every token by angles that depend on its
    position (RoPE), as Llama, GPT-NeoX and GPT-J do to queries and keys
    before attention. With `cos`, `sin` of shape `[P, R/2]` (the tables of
    `cos(p·θ_i)` and `sin(p·θ_i)` for positions `p < P`), token `s` of batch
    `b` at position `p`, and channel pairs `(x1, x2)`:

    `out1 = x1·cos[p, i] - x2·sin[p, i]`, `out2 = x2·cos[p, i] + x1·sin[p, i]`

    where pair `i < R/2` is channels `(i, i + R/2)` (the half-rotated form of
    Llama and GPT-NeoX, the default) or `(2i, 2i + 1)` with `interleaved`
    (GPT-J). Channels `R` to `d - 1` are copied (partial rotary, `R < d`).

    | operand | shape |
    |---|---|
    | input, init, result | `[B, H, S, d]` |
    | cos, sin | `[P, R/2]`, `R <= d`, `R` even |
    | positions | `[B]` (token `s` is at `positions[b] + s`: the cache length when decoding) or `[B, S]` (each token's position), i32 or i64 |

    Every position must be in `[0, P)` (checked at compile time when the
    positions are constant, at run time otherwise). Computed in f32 for f16
    and bf16 data; the tables have the data's element type. The op
    decomposes (`AggregatedOpInterface`, `mha-decompose-aggregates`) into a
    `linalg.generic` over `[B, H, S, 2, R/2]` (interleaved: `[B, H, S,
    R/2, 2]`) views of the rotated channels. This is ONNX Runtime's
    `RotaryEmbedding` on head-split inputs.

    ```mlir
    %qr = mha.rotary ins(%q : tensor<?x32x1x128xf32>)
            cos_sin(%cos, %sin : tensor<4096x64xf32>, tensor<4096x64xf32>)
            positions(%len : tensor<?xi32>)
            outs(%init : tensor<?x32x1x128xf32>) -> tensor<?x32x1x128xf32>
    ```
  }];

  let arguments = (ins
    MHA_FloatTensor:$input,
    MHA_FloatTensor:$cos,
    MHA_FloatTensor:$sin,
    TensorOf<[I32, I64]>:$positions,
    MHA_FloatTensor:$init,
    UnitAttr:$interleaved
  );
  let results = (outs MHA_FloatTensor:$result);

  let assemblyFormat = [{
    `ins` `(` $input `:` type($input) `)`
    `cos_sin` `(` $cos `,` $sin `:` type($cos) `,` type($sin) `)`
    `positions` `(` $positions `:` type($positions) `)`
    `outs` `(` $init `:` type($init) `)`
    attr-dict `->` type($result)
  }];

  let extraClassDeclaration = [{
    /// The rotated channels R: twice the tables' width.
    int64_t getRotaryDim() {
      return 2 * cast<ShapedType>(getCos().getType()).getDimSize(1);
    }

    // DestinationStyleOpInterface: `init` is the only destination.
    MutableOperandRange getDpsInitsMutable() { return getInitMutable(); }
  }];

  let hasVerifier = 1;
}

#endif // MHA_DIALECT_MHA_IR_MHAOPS_TD
