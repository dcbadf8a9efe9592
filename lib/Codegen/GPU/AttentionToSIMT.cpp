//===- AttentionToSIMT.cpp - mha.attention as a register-tiled kernel -----===//
//
// The FlashAttention-2 forward kernel without tensor cores, for any GPU
// target and f32, f16 or bf16 operands (f32 arithmetic), built as IR from an
// mha.attention whose lowering configuration has `thread_tile = [rows,
// keys]` (mha-attention-to-simt):
//
//   scf.forall (b, h, query tile) {            // a workgroup each
//     Q tile -> workgroup memory               // once
//     scf.forall (thread) in (groups * lanes) {
//       scf.for key block {                    // state in iter_args
//         K, V blocks -> workgroup memory      // all threads, barriers
//         S = Q Kᵀ                             // rows x keys FMAs a thread
//         softcap, additive mask; key lengths, causal and windows on the
//         blocks that need them; row max by xor shuffles in the group
//         P = exp2(S·scale·log2e − m), rescale acc and l
//         acc += P V                           // P by xor shuffles
//       }
//       out = acc / l, stores in the element type
//     }
//   }
//
// The threads of a workgroup form row groups of `lanes = kv_tile / keys`
// consecutive lanes (in one subgroup); a group owns `rows` query rows. In
// each key block lane c of a group computes the scores of its rows with
// keys c, c + lanes, ... (a `rows` x `keys` register tile: each Q and K
// element read from workgroup memory feeds `keys` or `rows` FMAs), and
// holds the output columns c, c + lanes, ... of its rows. A row's maximum
// and sum are reduced over the group by xor shuffles; for P V each lane
// takes the probabilities of the other lanes' keys by xor shuffles (lane
// c ^ s in step s), so P never leaves registers. Scores, probabilities,
// accumulators and row statistics are scalars in registers: the key loop's
// iter_args. Keys past the last (or a batch's length) are zero-filled in
// the tiles and masked; rows past the last query are computed on zeros and
// not stored. The SIMT counterpart of mha-attention-to-mma: f32 attention
// on CUDA and the Vulkan kernels use it.
//
//===----------------------------------------------------------------------===//

#include "AttentionKernel.h"
#include "MMAFragments.h"

#include "mha/Codegen/Common/KernelConfig.h"
#include "mha/Codegen/GPU/Passes.h"
#include "mha/Codegen/GPU/Transforms.h"
#include "mha/Dialect/MHA/IR/MHAOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>

namespace mlir::mha {
#define GEN_PASS_DEF_MHAATTENTIONTOSIMTPASS
#include "mha/Codegen/GPU/Passes.h.inc"
} // namespace mlir::mha

using namespace mlir;
using namespace mlir::mha;
using namespace mlir::mha::detail;

FailureOr<Value> mha::lowerAttentionToSIMT(RewriterBase &rewriter,
                                           AttentionOp op) {
  LoweringConfigAttr config = getLoweringConfig(op);
  if (!config || config.getThreadTile().empty()) {
    (void)rewriter.notifyMatchFailure(op,
                                      "no thread_tile in its lowering_config");
    return failure();
  }
  std::string why = simtAttentionUnsupported(op, getTarget(op));
  if (!why.empty()) {
    op.emitOpError() << "cannot run as the register kernel: " << why;
    return failure();
  }
  int64_t rowsPerThread = config.getThreadTile()[0],
          keysPerThread = config.getThreadTile()[1];
  int64_t blockRows = config.getQTile().value_or(0),
          blockKeys = config.getKvTile().value_or(0);
  int64_t dv = op.getValue().getType().getDimSize(3);
  int64_t lanes = blockKeys / keysPerThread;
  if (blockRows <= 0 || blockRows % rowsPerThread || blockKeys <= 0 ||
      blockKeys % keysPerThread || !llvm::isPowerOf2_64(lanes) || dv % lanes) {
    op.emitOpError() << "needs a lowering_config whose q_tile and kv_tile are "
                        "multiples of thread_tile's rows and keys, with "
                        "kv_tile / keys a power of two dividing the value "
                        "head dim, for the register kernel";
    return failure();
  }

  if (std::string why = headTileUnsupported(op, blockRows); !why.empty()) {
    op.emitOpError() << "cannot run as the register kernel: " << why;
    return failure();
  }

  Location loc = op.getLoc();
  MLIRContext *ctx = rewriter.getContext();
  rewriter.setInsertionPoint(op);
  Emitter e{rewriter, loc};
  AttentionKernelOperands ops = prepareAttentionKernel(rewriter, op);
  int64_t dk = ops.dk, groups = blockRows / rowsPerThread,
          threads = groups * lanes, cols = dv / lanes;
  Type element = ops.element;
  Value negInf = e.f32(-INFINITY), zero = e.f32(0);

  AttentionWorkgroup workgroup =
      buildAttentionWorkgroups(rewriter, ops, blockRows);
  Value bIdx = workgroup.batchIndex, hIdx = workgroup.head;
  // The Q tile (for the whole key loop) and the key block's K and V tiles in
  // workgroup memory, rows padded.
  int64_t pad =
      kSIMTTileRowPaddingBytes / (element.getIntOrFloatBitWidth() / 8);
  auto workgroupSpace =
      gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  auto tileType = [&](int64_t rows, int64_t width) {
    return MemRefType::get({rows, width + pad}, element,
                           MemRefLayoutAttrInterface(), workgroupSpace);
  };
  Value qTile = memref::AllocOp::create(rewriter, loc, tileType(blockRows, dk));
  Value kTile = memref::AllocOp::create(rewriter, loc, tileType(blockKeys, dk));
  Value vTile = memref::AllocOp::create(rewriter, loc, tileType(blockKeys, dv));
  Value thread = buildThreadLoop(rewriter, loc, threads);

  Value group = e.div(thread, lanes), lane = e.rem(thread, lanes);
  Value kvHead = e.div(hIdx, ops.heads / ops.kvHeads);
  // The group's rows: tile rows group * rowsPerThread + i.
  Value groupTileRow = e.mul(group, rowsPerThread);
  SmallVector<TileRow> rows;
  for (int64_t i = 0; i < rowsPerThread; ++i)
    rows.push_back(tileRowAt(e, ops, workgroup, groupTileRow, i));
  Value lastQuery = e.add(ops.queries, -1);
  Value lastKey = e.max(e.add(ops.keys, -1), e.index(0));
  auto [blockQuery, blockQueries] =
      tileQueries(e, ops, workgroup, e.index(0), blockRows);
  KeyLimits limits = buildKeyLimits(e, ops, bIdx, blockQuery, blockQueries,
                                    blockKeys, workgroup.split);

  copyQueryTile(e, ops, workgroup, thread, threads, qTile, blockRows);

  // Iteration arguments: the rows' maxima and the thread's parts of their
  // sums, then its accumulators (row-major: rows x cols).
  SmallVector<Value> inits(rowsPerThread, negInf);
  inits.append(rowsPerThread, zero);
  inits.append(rowsPerThread * cols, zero);
  auto keyLoop = scf::ForOp::create(rewriter, loc, limits.keyStart,
                                    limits.keyEnd, e.index(blockKeys), inits);
  {
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(keyLoop.getBody());
    Value kb = keyLoop.getInductionVar();
    ValueRange args = keyLoop.getRegionIterArgs();
    SmallVector<Value> rowMax(args.take_front(rowsPerThread));
    SmallVector<Value> rowSum(args.slice(rowsPerThread, rowsPerThread));
    SmallVector<Value> acc(args.drop_front(2 * rowsPerThread));

    // Every thread done with the previous block's tiles (and the Q tile
    // written, before the first); then this block's, zero past the valid
    // keys (a KV cache's rows past its length hold anything: NaN, and
    // 0 · NaN in P V would be NaN).
    gpu::BarrierOp::create(rewriter, loc);
    copyTileToWorkgroup(e, thread, threads, kTile, ops.k, bIdx, kvHead, kb,
                        blockKeys, limits.validKeys, ops.keys, dk,
                        op.getKeyTransposed());
    copyTileToWorkgroup(e, thread, threads, vTile, ops.v, bIdx, kvHead, kb,
                        blockKeys, limits.validKeys, ops.keys, dv,
                        /*transposed=*/false);
    gpu::BarrierOp::create(rewriter, loc);

    // S = Q Kᵀ: the thread's rows by its keys lane + lanes * j, in steps of
    // `unroll` head dims.
    auto keyRow = [&](Value laneIndex, int64_t j) {
      return e.add(laneIndex, lanes * j);
    };
    int64_t unroll = dk % 4 == 0 ? 4 : 1;
    SmallVector<Value> sInits(rowsPerThread * keysPerThread, zero);
    auto sLoop = scf::ForOp::create(rewriter, loc, e.index(0), e.index(dk),
                                    e.index(unroll), sInits);
    {
      OpBuilder::InsertionGuard inner(rewriter);
      rewriter.setInsertionPointToStart(sLoop.getBody());
      SmallVector<Value> s(sLoop.getRegionIterArgs());
      for (int64_t u = 0; u < unroll; ++u) {
        Value d = e.add(sLoop.getInductionVar(), u);
        SmallVector<Value> qv, kv;
        for (int64_t i = 0; i < rowsPerThread; ++i)
          qv.push_back(toF32(e, memref::LoadOp::create(
                                    rewriter, loc, qTile,
                                    ValueRange{e.add(groupTileRow, i), d})));
        for (int64_t j = 0; j < keysPerThread; ++j)
          kv.push_back(
              toF32(e, memref::LoadOp::create(rewriter, loc, kTile,
                                              ValueRange{keyRow(lane, j), d})));
        for (int64_t i = 0; i < rowsPerThread; ++i)
          for (int64_t j = 0; j < keysPerThread; ++j)
            s[i * keysPerThread + j] =
                e.fma(qv[i], kv[j], s[i * keysPerThread + j]);
      }
      scf::YieldOp::create(rewriter, loc, s);
    }
    SmallVector<Value> scores(sLoop.getResults());
    auto score = [&](int64_t i, int64_t j) -> Value & {
      return scores[i * keysPerThread + j];
    };
    auto key = [&](int64_t j) { return e.add(kb, keyRow(lane, j)); };

    // The cap, then the additive mask on the scaled scores (rows and keys
    // past the last clamped: their scores are not used).
    for (Value &s : scores)
      s = capScore(e, ops, s);
    if (ops.mask)
      for (int64_t i = 0; i < rowsPerThread; ++i)
        for (int64_t j = 0; j < keysPerThread; ++j) {
          Value s = score(i, j);
          if (!ops.softcap)
            s = e.fmul(s, e.f32(ops.scale));
          score(i, j) = e.fadd(s, maskElement(e, ops, bIdx, rows[i].head,
                                              e.min(rows[i].query, lastQuery),
                                              e.min(key(j), lastKey)));
        }

    // Key lengths, causal and windows, on the blocks that need them for the
    // thread's rows.
    auto [groupQuery, groupQueries] =
        tileQueries(e, ops, workgroup, groupTileRow, rowsPerThread);
    Value needsMask =
        blockNeedsMask(e, ops, limits, kb, blockKeys, groupQuery, groupQueries);
    auto ifMask = scf::IfOp::create(rewriter, loc,
                                    TypeRange(ValueRange(scores)), needsMask,
                                    /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard inner(rewriter);
      rewriter.setInsertionPointToStart(ifMask.thenBlock());
      SmallVector<Value> masked;
      for (int64_t i = 0; i < rowsPerThread; ++i)
        for (int64_t j = 0; j < keysPerThread; ++j)
          masked.push_back(
              e.select(keyVisible(e, ops, limits, rows[i].query, key(j)),
                       score(i, j), negInf));
      scf::YieldOp::create(rewriter, loc, masked);
      rewriter.setInsertionPointToStart(ifMask.elseBlock());
      scf::YieldOp::create(rewriter, loc, scores);
    }
    scores.assign(ifMask.getResults().begin(), ifMask.getResults().end());

    // Online softmax in base 2 (scores scaled by scale·log2(e), or log2(e)
    // after a cap or mask); the row maxima over the group.
    Value factor = e.f32(ops.scoreFactor);
    for (Value &s : scores)
      s = e.fmul(s, factor);
    SmallVector<Value> yielded;
    SmallVector<Value> newSums;
    for (int64_t i = 0; i < rowsPerThread; ++i) {
      Value m = negInf;
      for (int64_t j = 0; j < keysPerThread; ++j)
        m = e.fmax(m, score(i, j));
      m = e.groupReduce(m, lanes,
                        [&](Value x, Value y) { return e.fmax(x, y); });
      RowMaxUpdate update = updateRowMax(e, rowMax[i], m);
      yielded.push_back(update.max);
      Value sum = e.fmul(rowSum[i], update.alpha);
      for (int64_t j = 0; j < keysPerThread; ++j) {
        score(i, j) = e.exp2(e.fsub(score(i, j), update.subtract));
        sum = e.fadd(sum, score(i, j));
      }
      newSums.push_back(sum);
      for (int64_t c = 0; c < cols; ++c)
        acc[i * cols + c] = e.fmul(acc[i * cols + c], update.alpha);
    }
    llvm::append_range(yielded, newSums);

    // acc += P V: in step s, each lane takes the probabilities of lane
    // lane ^ s (the same rows; its keys) and the V rows of those keys.
    for (int64_t step = 0; step < lanes; ++step) {
      Value partner =
          step ? arith::XOrIOp::create(rewriter, loc, lane, e.index(step))
                     .getResult()
               : lane;
      for (int64_t j = 0; j < keysPerThread; ++j) {
        SmallVector<Value> p;
        for (int64_t i = 0; i < rowsPerThread; ++i)
          p.push_back(step ? e.shuffleXor(score(i, j), step) : score(i, j));
        Value vRow = keyRow(partner, j);
        for (int64_t c = 0; c < cols; ++c) {
          Value v = toF32(e, memref::LoadOp::create(
                                 rewriter, loc, vTile,
                                 ValueRange{vRow, e.add(lane, lanes * c)}));
          for (int64_t i = 0; i < rowsPerThread; ++i)
            acc[i * cols + c] = e.fma(p[i], v, acc[i * cols + c]);
        }
      }
    }
    llvm::append_range(yielded, acc);
    scf::YieldOp::create(rewriter, loc, yielded);
  }

  // out = acc / l (the row sums over the group), 0 for a row without
  // visible keys; rows past the last query are not stored. With key
  // splits, the chunk's state instead: acc as it is, and the row's maximum
  // and sum (from the group's lane 0).
  ValueRange results = keyLoop.getResults();
  for (int64_t i = 0; i < rowsPerThread; ++i) {
    Value sum = e.groupReduce(results[rowsPerThread + i], lanes,
                              [&](Value x, Value y) { return e.fadd(x, y); });
    Value inRange = rows[i].valid;
    if (workgroup.split)
      storeChunkRowState(e, ops, bIdx, rows[i].head, workgroup.split,
                         rows[i].query, results[i], sum,
                         arith::AndIOp::create(rewriter, loc, inRange,
                                               e.cmp(arith::CmpIPredicate::eq,
                                                     lane, e.index(0))));
    Value inverse = workgroup.split ? Value() : inverseRowSum(e, sum);
    auto ifStore = scf::IfOp::create(rewriter, loc, TypeRange(), inRange,
                                     /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(ifStore.thenBlock());
    for (int64_t c = 0; c < cols; ++c) {
      Value value = results[2 * rowsPerThread + i * cols + c];
      Value col = e.add(lane, lanes * c);
      if (workgroup.split) {
        memref::StoreOp::create(rewriter, loc, value, ops.partialOut,
                                ValueRange{bIdx, rows[i].head, rows[i].query,
                                           workgroup.split, col});
        continue;
      }
      value = e.fmul(value, inverse);
      if (element != value.getType())
        value = arith::TruncFOp::create(rewriter, loc, element, value);
      memref::StoreOp::create(
          rewriter, loc, value, ops.out,
          ValueRange{bIdx, rows[i].head, rows[i].query, col});
    }
  }
  return finishAttentionKernel(rewriter, ops, workgroup.loop);
}

LogicalResult mha::lowerAttentionsToSIMT(RewriterBase &rewriter,
                                         Operation *root) {
  return lowerConfiguredAttentions(
      rewriter, root,
      [](LoweringConfigAttr config) { return !config.getThreadTile().empty(); },
      lowerAttentionToSIMT);
}

namespace {

struct MHAAttentionToSIMTPass final
    : mha::impl::MHAAttentionToSIMTPassBase<MHAAttentionToSIMTPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    if (failed(lowerAttentionsToSIMT(rewriter, getOperation())))
      signalPassFailure();
  }
};

} // namespace
