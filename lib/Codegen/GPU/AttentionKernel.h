//===- AttentionKernel.h - What the attention kernels share ----*- C++ -*-===//
//
// The parts of the attention kernels built as IR (mha-attention-to-mma,
// mha-attention-to-simt) that do not depend on how a kernel distributes
// its scores over threads: the operands' buffers and the result's, the
// grid of workgroups, a batch's key length and the key range of a query
// tile, and per score the cap, the additive mask and the visibility of its
// key. Internal to lib/Codegen/GPU.
//
//===----------------------------------------------------------------------===//

#ifndef MHA_LIB_CODEGEN_GPU_ATTENTIONKERNEL_H
#define MHA_LIB_CODEGEN_GPU_ATTENTIONKERNEL_H

#include "MMAFragments.h"

#include "mha/Dialect/MHA/IR/MHAOps.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"

#include <optional>

namespace mlir::mha::detail {

/// An mha.attention's operands as the buffers a kernel reads, its result
/// buffer, its sizes and the rules of which keys a query sees, built at the
/// op.
struct AttentionKernelOperands {
  mutable AttentionOp op;
  /// Buffers of Q, K, V ([B, H, S, d]; K [B, Hkv, dk, Sk] when
  /// key_transposed), the result (new) and, where the op has them, the key
  /// lengths and the additive mask.
  Value q, k, v, out, lengths, mask;
  /// B, Sq and Sk (index values).
  Value batch, queries, keys;
  int64_t heads, kvHeads, dk, dv;
  /// The operands' element type.
  Type element;
  KeyVisibility visibility;
  /// The right bound of a row's keys relative to its diagonal (causal: 0)
  /// and the left one (window_left).
  std::optional<int64_t> rightBound, leftBound;
  std::optional<double> softcap;
  double scale;
  /// Whether the scale is applied before the cap or the mask (added to
  /// scaled scores), and the factor that takes the scores to base 2 after
  /// that: log2(e), else scale · log2(e).
  bool scaleFirst;
  double scoreFactor;
  /// The chunks the keys are split into (the configuration's kv_splits:
  /// flash-decoding), and with more than one the buffers of each chunk's
  /// state: the unnormalized accumulators [B, H, Sq, splits, dv] and the
  /// rows' maxima (base 2) and sums [B, H, Sq, splits], all f32 (`out` is
  /// then not allocated: finishAttentionKernel merges the chunks).
  int64_t splits = 1;
  Value partialOut, partialMax, partialSum;
  /// The query heads a workgroup computes together (the configuration's
  /// head_tile: heads of one key/value head's group, whose K and V it then
  /// reads once): its tile rows are their queries, head after head (static
  /// Sq; head_tile * Sq rows at most). 1: a head per workgroup.
  int64_t headTile = 1;
};

/// Why a kernel of `rows` tile rows cannot pack the head_tile of `op`'s
/// configuration ("" when it can, or without one): the query length must
/// be static, the head tile must divide the query heads of a key/value
/// head, and its queries must fit the tile.
std::string headTileUnsupported(AttentionOp op, int64_t rows);

/// The operands of `op`, built at the rewriter's insertion point.
AttentionKernelOperands prepareAttentionKernel(RewriterBase &rewriter,
                                               AttentionOp op);

/// The grid of workgroups over (batch, head, query tile of `rows` rows),
/// mapped to workgroups, with the insertion point moved into it. With a
/// causal mask the query tiles are visited in reverse (workgroups start in
/// grid order: the longest first rather than in the tail of the grid):
/// `firstRow` is the tile's first query. With key splits, the second
/// dimension is (head, chunk), `split` the chunk (null without). With a
/// head tile, it runs over tiles of ops.headTile heads, `head` the first
/// of them, and the queries are one tile (`firstRow` 0).
struct AttentionWorkgroup {
  scf::ForallOp loop;
  Value batchIndex, head, firstRow, split;
};
AttentionWorkgroup buildAttentionWorkgroups(RewriterBase &rewriter,
                                            const AttentionKernelOperands &ops,
                                            int64_t rows);

/// What tile row `tileRow` + `offset` of `workgroup` computes: its query head
/// and query, and whether it is one (rows past the last query, or past the head
/// tile's queries, are padding: computed on clamped inputs, not stored).
/// Without a head tile, the workgroup's head and query firstRow + tileRow; with
/// one, head first + tileRow / Sq, query tileRow % Sq.
struct TileRow {
  Value head, query, valid;
};
TileRow tileRowAt(Emitter &e, const AttentionKernelOperands &ops,
                  const AttentionWorkgroup &workgroup, Value tileRow,
                  int64_t offset = 0);

/// The queries the tile rows [first, first + rows) of `workgroup` may
/// hold, as (first query, count) for buildKeyLimits and blockNeedsMask:
/// (firstRow + first, rows), or with a head tile all of them (0, Sq).
std::pair<Value, int64_t> tileQueries(Emitter &e,
                                      const AttentionKernelOperands &ops,
                                      const AttentionWorkgroup &workgroup,
                                      Value first, int64_t rows);

/// The keys the rows [firstRow, firstRow + rows) of batch `batchIndex` may
/// see: the batch's key length (null without key lengths), its valid keys
/// (min(length, Sk), else Sk), the diagonal (with the length), and the key
/// range [keyStart, keyEnd) of whole blocks of `blockKeys` from the left
/// bound of the first row to the right bound of the last (valid keys only);
/// with a `split`, that chunk's part of the range (ops.splits chunks of
/// whole blocks, the last ones possibly empty).
struct KeyLimits {
  Value length, validKeys, diagonal, keyStart, keyEnd;
};
KeyLimits buildKeyLimits(Emitter &e, const AttentionKernelOperands &ops,
                         Value batchIndex, Value firstRow, int64_t rows,
                         int64_t blockKeys, Value split = {});

/// With key splits: chunk `split`'s state of query `row` stored, its
/// maximum (base 2) and sum (both reduced over the row's threads already)
/// by the one thread for which `owner` holds.
void storeChunkRowState(Emitter &e, const AttentionKernelOperands &ops,
                        Value batchIndex, Value head, Value split, Value row,
                        Value rowMax, Value rowSum, Value owner);

/// Score `s` (f32) capped: c · tanh(s · scale / c); `s` without a softcap.
Value capScore(Emitter &e, const AttentionKernelOperands &ops, Value s);

/// The additive mask's element (as f32) of the score at (`row`, `col`) of
/// batch `batchIndex`, head `head` (a static dim of 1 broadcasts); `row` and
/// `col` must be in range.
Value maskElement(Emitter &e, const AttentionKernelOperands &ops,
                  Value batchIndex, Value head, Value row, Value col);

/// Whether key block [kb, kb + blockKeys) needs the per-score visibility
/// for rows [firstRow, firstRow + rows): it reaches past the valid keys, or
/// across the right bound of the first row or the left bound of the last.
Value blockNeedsMask(Emitter &e, const AttentionKernelOperands &ops,
                     const KeyLimits &limits, Value kb, int64_t blockKeys,
                     Value firstRow, int64_t rows);

/// Whether query `row` sees key `col`: below Sk and within the length,
/// causal bound and windows.
Value keyVisible(Emitter &e, const AttentionKernelOperands &ops,
                 const KeyLimits &limits, Value row, Value col);

/// The online softmax's new row maximum from the old one and the block's
/// (base 2), the maximum to subtract (0 for a row that has seen no key yet:
/// exp2(-inf) = 0 then) and the factor exp2(old - new) that rescales the
/// row's sum and accumulator.
struct RowMaxUpdate {
  Value max, subtract, alpha;
};
RowMaxUpdate updateRowMax(Emitter &e, Value old, Value blockMax);

/// 1 / `sum`, 0 for a row without visible keys (sum 0).
Value inverseRowSum(Emitter &e, Value sum);

/// `lower` on every mha.attention under `root` whose lowering configuration
/// `selects`.
LogicalResult lowerConfiguredAttentions(
    RewriterBase &rewriter, Operation *root,
    function_ref<bool(LoweringConfigAttr)> selects,
    function_ref<FailureOr<Value>(RewriterBase &, AttentionOp)> lower);

/// Replaces `ops.op` by a tensor of its result buffer, after the workgroup
/// loop `workgroups`; returns it. With key splits, the result is the
/// chunks' states merged (a linalg.generic, a kernel of its own once
/// mha-tile-for-workgroups has tiled it): per element
/// sum_s 2^(m_s - M) acc_s / sum_s 2^(m_s - M) l_s with M = max_s m_s, 0
/// for a row without visible keys.
Value finishAttentionKernel(RewriterBase &rewriter,
                            const AttentionKernelOperands &ops,
                            scf::ForallOp workgroups);

/// Copies `count` rows from `first` of head `head` of `source` ([B, H, S,
/// width], or [B, H, width, S] when `transposed`) into the workgroup
/// memory `tile` ([count, width + padding]), by all `threads` threads, an
/// element each per step (consecutive threads along the source's
/// contiguous dim); rows from `valid` on are zero-filled, and reads are
/// clamped to row `sourceRows - 1`. The rows go to the tile's rows from
/// `tileRow` on.
void copyTileToWorkgroup(Emitter &e, Value thread, int64_t threads, Value tile,
                         Value source, Value batchIndex, Value head,
                         Value first, int64_t count, Value valid,
                         Value sourceRows, int64_t width, bool transposed,
                         int64_t tileRow = 0);

/// The Q tile of `workgroup` ([rows, dk + padding] in workgroup memory) by
/// copyTileToWorkgroup: its queries from firstRow, zero past Sq; with a head
/// tile, each packed head's Sq queries in turn and zeros after them.
void copyQueryTile(Emitter &e, const AttentionKernelOperands &ops,
                   const AttentionWorkgroup &workgroup, Value thread,
                   int64_t threads, Value tile, int64_t rows);

/// `x` as f32.
Value toF32(Emitter &e, Value x);

} // namespace mlir::mha::detail

#endif // MHA_LIB_CODEGEN_GPU_ATTENTIONKERNEL_H
