//===- AttentionToMMA.cpp - mha.attention as a tensor-core kernel ---------===//
//
// The FlashAttention-2 forward kernel on NVIDIA tensor cores (sm_80 and
// later), built as IR from an mha.attention whose lowering configuration
// has `mma = [16, 8, 16]` (mha-attention-to-mma):
//
//   scf.forall (b, h, query tile) {            // a workgroup each
//     scf.forall (thread) in (32 * warps) {    // #gpu.thread<x>
//       Q fragments of the warp's 16 rows      // registers, once
//       scf.for key block {                    // state in iter_args
//         S = Q Kᵀ                             // nvgpu.mma.sync
//         softcap, additive mask; key lengths, causal and windows on the
//         blocks that need them; row max by quad shuffles
//         P = exp2(S·scale·log2e − m), rescale acc and l
//         acc += P V                           // P as the A operand
//       }
//       out = acc / l (quad shuffles), stores in the element type
//     }
//   }
//
// Each warp owns 16 query rows: the m16n8k16 fragments put row g = lane / 4
// and row g + 8 in each thread, columns 2·(lane % 4) and the next: a
// thread's scores, accumulators, row maxima and sums stay in its registers,
// and a row's statistics are reduced over the 4 threads of its quad with
// two xor shuffles. The C fragments of two adjacent n8 score tiles are the
// A fragment of one k16 step of P·V, so P never leaves registers.
// K and V go through shared tiles filled by cp.async and read by ldmatrix.
// Reads past the last query are clamped to it, keys past the last (or a
// batch's length) are zero-filled; their scores are masked and their rows
// not stored. f16 and bf16 operands (f32 accumulation): nvgpu.mma.sync for
// f16, nvvm.mma.sync for bf16 (MLIR 22's nvgpu.mma.sync lowering refuses
// bf16 operands).
//
//===----------------------------------------------------------------------===//

#include "MMAFragments.h"

#include "mha/Codegen/Common/KernelConfig.h"
#include "mha/Codegen/GPU/Passes.h"
#include "mha/Codegen/GPU/Transforms.h"
#include "mha/Dialect/MHA/Transforms/Transforms.h"
#include "mha/Dialect/MHA/IR/MHAOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <cmath>

namespace mlir::mha {
#define GEN_PASS_DEF_MHAATTENTIONTOMMAPASS
#include "mha/Codegen/GPU/Passes.h.inc"
} // namespace mlir::mha

using namespace mlir;
using namespace mlir::mha;
using namespace mlir::mha::detail;

/// Starts copying the key block at `firstKey` of head `head` of `source`
/// ([B, H, S, width] in device memory) into the shared `tile` ([keys,
/// width + padding]), by all threads of the workgroup, 16 bytes each per
/// step (cp.async, through L2 only); keys from `validKeys` on (past the
/// last, or past the batch's length) are zero-filled (their scores are
/// masked). Returns the group to wait for. A thread left over in the last
/// step copies a chunk another thread copies too (the same bytes).
static Value startTileCopy(Emitter &e, Value bIdx, Value thread,
                           int64_t threads, Value source, Value head,
                           Value firstKey, Value keys, Value validKeys,
                           Value tile, int64_t width) {
  int64_t tileKeys = cast<MemRefType>(tile.getType()).getDimSize(0);
  int64_t chunksPerRow = width / 8, chunks = tileKeys * chunksPerRow;
  auto tokenType = nvgpu::DeviceAsyncTokenType::get(e.b.getContext());
  Value lastKey = e.max(e.add(keys, -1), e.index(0));
  SmallVector<Value> tokens;
  for (int64_t step = 0; step * threads < chunks; ++step) {
    Value chunk = e.add(thread, step * threads);
    if ((step + 1) * threads > chunks)
      chunk = e.rem(chunk, chunks);
    Value row = e.div(chunk, chunksPerRow);
    Value col = e.mul(e.rem(chunk, chunksPerRow), 8);
    Value key = e.add(firstKey, row);
    Value inRange = e.cmp(arith::CmpIPredicate::slt, key, validKeys);
    Value elements = e.select(inRange, e.index(8), e.index(0));
    tokens.push_back(nvgpu::DeviceAsyncCopyOp::create(
        e.b, e.loc, tokenType, tile, ValueRange{row, col}, source,
        ValueRange{bIdx, head, e.min(key, lastKey), col},
        e.b.getIndexAttr(8), elements, e.b.getUnitAttr()));
  }
  return nvgpu::DeviceAsyncCreateGroupOp::create(e.b, e.loc, tokenType,
                                                 tokens);
}

FailureOr<Value> mha::lowerAttentionToMMA(RewriterBase &rewriter,
                                          AttentionOp op) {
  LoweringConfigAttr config = getLoweringConfig(op);
  if (!config || config.getMma().empty()) {
    (void)rewriter.notifyMatchFailure(op, "no mma in its lowering_config");
    return failure();
  }
  std::string why = mmaAttentionUnsupported(op, getTarget(op));
  if (!why.empty()) {
    op.emitOpError() << "cannot run as the tensor-core kernel: " << why;
    return failure();
  }
  int64_t warps = config.getWarps().value_or(0);
  int64_t blockKeys = config.getKvTile().value_or(0);
  if (warps <= 0 || config.getQTile() != 16 * warps || blockKeys <= 0 ||
      blockKeys % 16) {
    op.emitOpError() << "needs a lowering_config with warps, q_tile = 16 * "
                        "warps and kv_tile a multiple of 16 for the "
                        "tensor-core kernel";
    return failure();
  }

  Location loc = op.getLoc();
  MLIRContext *ctx = rewriter.getContext();
  rewriter.setInsertionPoint(op);
  Emitter e{rewriter, loc};
  auto qType = cast<RankedTensorType>(op.getQuery().getType());
  auto kType = cast<RankedTensorType>(op.getKey().getType());
  auto vType = cast<RankedTensorType>(op.getValue().getType());
  auto oType = cast<RankedTensorType>(op.getResult().getType());
  int64_t heads = qType.getDimSize(1), kvHeads = kType.getDimSize(1);
  int64_t dk = qType.getDimSize(3), dv = vType.getDimSize(3);
  int64_t rowsPerBlock = 16 * warps;
  // The operands' element type: f16 or bf16.
  Type element = qType.getElementType(), f32 = rewriter.getF32Type();

  Value q = readBuffer(e, op.getQuery()), k = readBuffer(e, op.getKey()),
        v = readBuffer(e, op.getValue());
  auto dim = [&](Value tensor, int64_t d) -> Value {
    return tensor::DimOp::create(rewriter, loc, tensor, d);
  };
  Value batch = dim(op.getQuery(), 0), queries = dim(op.getQuery(), 2),
        keys = dim(op.getKey(), 2);
  SmallVector<Value> dynamicSizes;
  for (int64_t d = 0; d < oType.getRank(); ++d)
    if (oType.isDynamicDim(d))
      dynamicSizes.push_back(dim(op.getQuery(), d));
  Value out = memref::AllocOp::create(
      rewriter, loc, MemRefType::get(oType.getShape(), element),
      dynamicSizes);
  // Which keys a query sees besides Sk: per-batch lengths, causal and the
  // windows, relative to the diagonal (built here, on the host).
  KeyVisibility visibility = op.getKeyVisibility(rewriter);
  Value lengths =
      visibility.keyLengths ? readBuffer(e, visibility.keyLengths) : Value();
  Value mask = op.getMask() ? readBuffer(e, op.getMask()) : Value();
  bool causal = op.getCausal();
  // The right bound of a row's keys relative to its diagonal (causal: 0),
  // and the left one (window_left).
  std::optional<int64_t> rightBound =
      causal ? std::optional<int64_t>(0) : visibility.windowRight;
  std::optional<int64_t> leftBound = visibility.windowLeft;
  std::optional<double> softcap = op.getSoftcapValue();
  double scale = op.getScaleOrDefault();
  // exp2 of scores in base 2: the scale folded in, unless the cap or the
  // mask (added to scaled scores) needed it applied first.
  bool scaleFirst = softcap || op.getMask();
  double scoreFactor = scaleFirst ? M_LOG2E : scale * M_LOG2E;

  auto workgroups = scf::ForallOp::create(
      rewriter, loc,
      ArrayRef<OpFoldResult>{rewriter.getIndexAttr(0),
                             rewriter.getIndexAttr(0),
                             rewriter.getIndexAttr(0)},
      ArrayRef<OpFoldResult>{batch, rewriter.getIndexAttr(heads), queries},
      ArrayRef<OpFoldResult>{rewriter.getIndexAttr(1),
                             rewriter.getIndexAttr(1),
                             rewriter.getIndexAttr(rowsPerBlock)},
      // Mapped to workgroups: kept as a loop when it has one iteration.
      ValueRange(), workgroupMapping(ctx, 3));
  rewriter.setInsertionPointToStart(workgroups.getBody());
  Value bIdx = workgroups.getInductionVar(0),
        hIdx = workgroups.getInductionVar(1),
        firstRow = workgroups.getInductionVar(2);
  if (causal) {
    // The query tiles in reverse: with a causal mask the last ones see the
    // most keys, and workgroups start in grid order, so the longest run
    // first rather than last (the tail of the grid).
    Value lastTile = e.mul(e.div(e.add(queries, -1), rowsPerBlock),
                           rowsPerBlock);
    firstRow = e.sub(lastTile, firstRow);
  }
  // The key block's K and V tiles in workgroup memory, for all warps.
  auto workgroupSpace =
      gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  auto tileType = [&](int64_t width) {
    return MemRefType::get({blockKeys, width + kMMATileRowPadding}, element,
                           MemRefLayoutAttrInterface(), workgroupSpace);
  };
  Value kTile = memref::AllocOp::create(rewriter, loc, tileType(dk));
  Value vTile = memref::AllocOp::create(rewriter, loc, tileType(dv));
  auto threadsLoop = scf::ForallOp::create(
      rewriter, loc, ArrayRef<OpFoldResult>{rewriter.getIndexAttr(32 * warps)},
      ValueRange(),
      rewriter.getArrayAttr(gpu::GPUThreadMappingAttr::get(
          ctx, gpu::MappingId::DimX)));
  // Its thread count, for the launch (mha-map-forall-to-gpu).
  threadsLoop->setAttr(kLoweringConfigAttrName,
                       LoweringConfigAttr::get(ctx, {}, {}, {}, {}, {},
                                               32 * warps, {}, {}, {}, {}, {}));
  rewriter.setInsertionPointToStart(threadsLoop.getBody());
  Value thread = threadsLoop.getInductionVar(0);

  Value warp = e.div(thread, 32), lane = e.rem(thread, 32);
  Value g = e.div(lane, 4), t = e.rem(lane, 4);
  Value kvHead = e.div(hIdx, heads / kvHeads);
  Value warpRow = e.add(firstRow, e.mul(warp, 16));
  // Rows g and g + 8 of the warp's 16.
  Value rows[2] = {e.add(warpRow, g), e.add(e.add(warpRow, g), 8)};
  Value lastQuery = e.add(queries, -1);
  Value t2 = e.mul(t, 2);
  // The batch's key length (its keys past it are invisible) and diagonal.
  Value length, validKeys = keys, diagonal = visibility.diagonal;
  if (lengths) {
    Value stored = memref::LoadOp::create(rewriter, loc, lengths, bIdx);
    length = arith::IndexCastOp::create(rewriter, loc, rewriter.getIndexType(),
                                        stored);
    validKeys = e.max(e.min(length, keys), e.index(0));
    if (diagonal)
      diagonal = e.add(diagonal, length);
  }
  // ldmatrix: lane l gives the address of row l % 8 of matrix l / 8.
  Value matrix = e.div(lane, 8), matrixRow = e.rem(lane, 8);

  auto pairType = VectorType::get({2}, element);
  auto aType = VectorType::get({4, 2}, element);
  auto cType = VectorType::get({2, 2}, f32);
  auto loadPair = [&](Value memref, Value head, Value row, Value col) {
    return vector::LoadOp::create(rewriter, loc, pairType, memref,
                                  ValueRange{bIdx, head, row, col},
                                  /*nontemporal=*/false, llvm::Align(4))
        .getResult();
  };
  auto mma = [&](Value a, Value bFrag, Value c) {
    return mmaSync(e, a, bFrag, c);
  };

  // Q fragments, read once: A operands of the k16 steps over dk.
  SmallVector<Value> qFrags;
  Value qRows[2] = {e.min(rows[0], lastQuery), e.min(rows[1], lastQuery)};
  for (int64_t kk = 0; kk < dk / 16; ++kk) {
    Value frag = e.zeros(aType);
    for (int64_t half = 0; half < 2; ++half)
      for (int64_t r = 0; r < 2; ++r)
        frag = e.insert(loadPair(q, hIdx, qRows[r],
                                 e.add(t2, 16 * kk + 8 * half)),
                        frag, {2 * half + r});
    qFrags.push_back(frag);
  }

  // The keys the workgroup's rows may see: the batch's valid ones, up to
  // the right bound of its last row and from the left bound of its first
  // (whole blocks). The same for all its warps: they stage the tiles
  // together, between barriers.
  Value keyEnd = validKeys, keyStart = e.index(0);
  if (rightBound) {
    Value lastRow = e.min(e.add(firstRow, rowsPerBlock - 1), lastQuery);
    keyEnd =
        e.max(e.min(e.add(e.add(lastRow, diagonal), *rightBound + 1), keyEnd),
              e.index(0));
  }
  if (leftBound) {
    Value left =
        e.max(e.add(e.add(firstRow, diagonal), -*leftBound), e.index(0));
    keyStart = e.mul(e.div(left, blockKeys), blockKeys);
  }
  int64_t scoreTiles = blockKeys / 8, outTiles = dv / 8;
  auto scoresType = VectorType::get({scoreTiles, 2, 2}, f32);
  auto rowType = VectorType::get({2}, f32);
  Value negInf = e.f32(-INFINITY), zero = e.f32(0);
  Value initMax = vector::BroadcastOp::create(rewriter, loc, rowType, negInf);
  // K and V go through one shared tile each, loaded while the other is in
  // use (FlashAttention-2's order): V_j's copy runs during S_j = Q K_jᵀ,
  // K_{j+1}'s during the softmax and P V_j. The first K block starts here.
  int64_t threads = 32 * warps;
  // Rows past the batch's valid keys are zero-filled too: a KV cache's rows
  // past its length hold anything (NaN: 0 · NaN in P V would be NaN).
  auto startCopy = [&](Value source, Value firstKey, Value tile,
                       int64_t width) {
    return startTileCopy(e, bIdx, thread, threads, source, kvHead, firstKey,
                         keys, validKeys, tile, width);
  };
  Value firstK = startCopy(k, keyStart, kTile, dk);
  // Iteration arguments: the row max and the thread's part of the row sum,
  // one accumulator fragment per output tile, the copy of the next K block.
  SmallVector<Value> inits = {initMax, e.zeros(rowType)};
  for (int64_t nd = 0; nd < outTiles; ++nd)
    inits.push_back(e.zeros(cType));
  inits.push_back(firstK);
  auto keyLoop = scf::ForOp::create(rewriter, loc, keyStart, keyEnd,
                                    e.index(blockKeys), inits);
  {
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(keyLoop.getBody());
    Value kb = keyLoop.getInductionVar();
    Value rowMax = keyLoop.getRegionIterArg(0),
          rowSum = keyLoop.getRegionIterArg(1);
    SmallVector<Value> acc(
        keyLoop.getRegionIterArgs().drop_front(2).drop_back());
    Value kCopy = keyLoop.getRegionIterArgs().back();

    // K_j in place (every thread's copies: the barrier), and every warp
    // done with V_{j-1}: V_j's copy may start.
    waitForCopies(e, kCopy);
    gpu::BarrierOp::create(rewriter, loc);
    Value vCopy = startCopy(v, kb, vTile, dv);

    // S = Q Kᵀ: the B operands (k = head dim, n = key) of score tile n by
    // ldmatrix from the K tile, two k16 steps per x4 load (matrix j: keys
    // 8n..8n+7, head dims 16kk + 8j..).
    Value scores = e.zeros(scoresType);
    for (int64_t n = 0; n < scoreTiles; ++n) {
      Value c = e.zeros(cType);
      for (int64_t kk = 0; kk < dk / 16; kk += 2) {
        bool two = kk + 1 < dk / 16;
        Value col = e.add(e.mul(two ? matrix : e.rem(matrix, 2), 8), 16 * kk);
        SmallVector<Value> frags =
            loadMatrices(e, kTile, {}, e.add(matrixRow, 8 * n), col,
                         /*transpose=*/false, two ? 4 : 2);
        c = mma(qFrags[kk], frags[0], c);
        if (two)
          c = mma(qFrags[kk + 1], frags[1], c);
      }
      scores = e.insert(c, scores, {n});
    }

    // V_j in place, and every warp done with K_j: K_{j+1}'s copy may start
    // (past the last block it fetches zeros and is never read).
    waitForCopies(e, vCopy);
    gpu::BarrierOp::create(rewriter, loc);
    Value nextK = startCopy(k, e.add(kb, blockKeys), kTile, dk);

    // The cap (c · tanh(s · scale / c)), before any mask.
    if (softcap) {
      Value inner = e.f32(scale / *softcap), outer = e.f32(*softcap);
      for (int64_t n = 0; n < scoreTiles; ++n)
        for (int64_t r = 0; r < 2; ++r)
          for (int64_t j = 0; j < 2; ++j) {
            Value x = e.extract(scores, {n, r, j});
            Value capped = e.fmul(
                outer, math::TanhOp::create(rewriter, loc, e.fmul(x, inner)));
            scores = e.insert(capped, scores, {n, r, j});
          }
    }

    // The additive mask, on every block, added to the scaled scores: each
    // score's element, read where the score is (rows and keys past the last
    // clamped: their scores are not used); a static dim of 1 broadcasts.
    if (mask) {
      if (!softcap)
        scores = e.fmul(scores, vector::BroadcastOp::create(
                                    rewriter, loc, scoresType, e.f32(scale)));
      auto maskType = cast<MemRefType>(mask.getType());
      int64_t rank = maskType.getRank();
      Value lastKey = e.max(e.add(keys, -1), e.index(0));
      auto index = [&](int64_t d, Value v) {
        return maskType.getDimSize(d) == 1 ? e.index(0) : v;
      };
      for (int64_t r = 0; r < 2; ++r) {
        Value row = e.min(rows[r], lastQuery);
        for (int64_t n = 0; n < scoreTiles; ++n)
          for (int64_t j = 0; j < 2; ++j) {
            Value col = e.min(e.add(e.add(kb, t2), 8 * n + j), lastKey);
            SmallVector<Value> at;
            if (rank == 4)
              at = {index(0, bIdx), index(1, hIdx)};
            else if (rank == 3)
              at = {index(0, bIdx)};
            at.push_back(index(rank - 2, row));
            at.push_back(index(rank - 1, col));
            Value m = memref::LoadOp::create(rewriter, loc, mask, at);
            if (!m.getType().isF32())
              m = arith::ExtFOp::create(rewriter, loc, f32, m);
            scores = e.insert(e.fadd(e.extract(scores, {n, r, j}), m), scores,
                              {n, r, j});
          }
      }
    }

    // Masks, on the blocks that need them: past the batch's last key,
    // across the right bound of the warp's first row or the left bound of
    // its last.
    Value blockEnd = e.add(kb, blockKeys);
    Value needsMask = e.cmp(arith::CmpIPredicate::sgt, blockEnd, validKeys);
    auto orMask = [&](Value c) {
      needsMask = arith::OrIOp::create(rewriter, loc, needsMask, c);
    };
    if (rightBound)
      orMask(e.cmp(arith::CmpIPredicate::sgt, e.add(blockEnd, -1),
                   e.add(e.add(warpRow, diagonal), *rightBound)));
    if (leftBound)
      orMask(e.cmp(arith::CmpIPredicate::slt, kb,
                   e.add(e.add(e.add(warpRow, 15), diagonal), -*leftBound)));
    auto ifMask = scf::IfOp::create(rewriter, loc, scoresType, needsMask,
                                    /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard inner(rewriter);
      rewriter.setInsertionPointToStart(ifMask.thenBlock());
      Value masked = scores;
      for (int64_t n = 0; n < scoreTiles; ++n)
        for (int64_t r = 0; r < 2; ++r)
          for (int64_t j = 0; j < 2; ++j) {
            Value col = e.add(e.add(kb, t2), 8 * n + j);
            Value visible = e.cmp(arith::CmpIPredicate::slt, col, keys);
            if (visibility.restricts())
              visible = arith::AndIOp::create(
                  rewriter, loc, visible,
                  buildKeyVisible(rewriter, loc, visibility, length, rows[r],
                                  col));
            masked = e.insert(
                e.select(visible, e.extract(masked, {n, r, j}), negInf),
                masked, {n, r, j});
          }
      scf::YieldOp::create(rewriter, loc, masked);
      rewriter.setInsertionPointToStart(ifMask.elseBlock());
      scf::YieldOp::create(rewriter, loc, scores);
    }
    scores = ifMask.getResult(0);

    // Online softmax in base 2: scores scaled by scale·log2(e) (log2(e)
    // after a cap).
    Value factor = vector::BroadcastOp::create(rewriter, loc, scoresType,
                                               e.f32(scoreFactor));
    scores = e.fmul(scores, factor);
    Value newMax = rowMax, alpha = rowMax, useMax[2];
    for (int64_t r = 0; r < 2; ++r) {
      Value m = negInf;
      for (int64_t n = 0; n < scoreTiles; ++n)
        for (int64_t j = 0; j < 2; ++j)
          m = e.fmax(m, e.extract(scores, {n, r, j}));
      m = e.quadReduce(m, [&](Value x, Value y) { return e.fmax(x, y); });
      Value old = e.extract(rowMax, {r});
      m = e.fmax(old, m);
      // A row that has seen no key yet subtracts 0: exp2(-inf) = 0.
      Value none = arith::CmpFOp::create(rewriter, loc,
                                         arith::CmpFPredicate::OEQ, m, negInf);
      useMax[r] = e.select(none, zero, m);
      newMax = e.insert(m, newMax, {r});
      alpha = e.insert(e.exp2(e.fsub(old, useMax[r])), alpha, {r});
    }
    Value probs = scores, newSum = rowSum;
    for (int64_t r = 0; r < 2; ++r) {
      // The thread's part of the row sum; the quad adds them at the end.
      Value sum = e.fmul(e.extract(rowSum, {r}), e.extract(alpha, {r}));
      for (int64_t n = 0; n < scoreTiles; ++n)
        for (int64_t j = 0; j < 2; ++j) {
          Value p = e.exp2(e.fsub(e.extract(scores, {n, r, j}), useMax[r]));
          probs = e.insert(p, probs, {n, r, j});
          sum = e.fadd(sum, p);
        }
      newSum = e.insert(sum, newSum, {r});
    }
    for (int64_t nd = 0; nd < outTiles; ++nd)
      for (int64_t r = 0; r < 2; ++r) {
        Value a = e.extract(alpha, {r});
        Value row = e.extract(acc[nd], {r});
        row = e.fmul(row, vector::BroadcastOp::create(
                              rewriter, loc, VectorType::get({2}, f32), a));
        acc[nd] = e.insert(row, acc[nd], {r});
      }

    // acc += P V: the A operand of k16 step kk is score tiles 2kk and
    // 2kk + 1 in f16; the B operand (k = key, n = value dim) of out tile nd:
    // keys kb + 16kk + 2t, + 1 (+ 8), value dim 8nd + g.
    Value probsF16 = arith::TruncFOp::create(
        rewriter, loc, VectorType::get({scoreTiles, 2, 2}, element), probs);
    for (int64_t kk = 0; kk < blockKeys / 16; ++kk) {
      Value a = e.zeros(aType);
      for (int64_t half = 0; half < 2; ++half)
        for (int64_t r = 0; r < 2; ++r)
          a = e.insert(e.extract(probsF16, {2 * kk + half, r}), a,
                       {2 * half + r});
      // The B operands (k = key, n = value dim) of out tiles nd and nd + 1
      // by one transposing x4 ldmatrix (matrix j: keys 16kk + 8(j % 2)..,
      // value dims 8(nd + j / 2)..).
      Value row = e.add(e.add(matrixRow, e.mul(e.rem(matrix, 2), 8)), 16 * kk);
      for (int64_t nd = 0; nd < outTiles; nd += 2) {
        bool two = nd + 1 < outTiles;
        Value col = e.mul(two ? e.add(e.div(matrix, 2), nd) : e.index(nd), 8);
        SmallVector<Value> frags = loadMatrices(e, vTile, {}, row, col,
                                                /*transpose=*/true,
                                                two ? 4 : 2);
        for (int64_t j = 0; j < (two ? 2 : 1); ++j)
          acc[nd + j] = mma(a, frags[j], acc[nd + j]);
      }
    }
    SmallVector<Value> yielded = {newMax, newSum};
    llvm::append_range(yielded, acc);
    yielded.push_back(nextK);
    scf::YieldOp::create(rewriter, loc, yielded);
  }

  // out = acc / l, 0 for a row without visible keys; rows past the last
  // query are not stored.
  Value rowSum = keyLoop.getResult(1);
  ValueRange acc = keyLoop.getResults().drop_front(2).drop_back();
  // No copy left running when the kernel ends.
  waitForCopies(e, keyLoop.getResults().back());
  Value inverses[2];
  for (int64_t r = 0; r < 2; ++r) {
    Value sum = e.quadReduce(e.extract(rowSum, {r}),
                             [&](Value x, Value y) { return e.fadd(x, y); });
    Value empty = arith::CmpFOp::create(rewriter, loc,
                                        arith::CmpFPredicate::OEQ, sum, zero);
    inverses[r] = e.select(
        empty, zero, arith::DivFOp::create(rewriter, loc, e.f32(1), sum));
  }
  for (int64_t r = 0; r < 2; ++r) {
    Value inRange = e.cmp(arith::CmpIPredicate::slt, rows[r], queries);
    auto ifStore = scf::IfOp::create(rewriter, loc, TypeRange(), inRange,
                                     /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(ifStore.thenBlock());
    Value scale = vector::BroadcastOp::create(
        rewriter, loc, VectorType::get({2}, f32), inverses[r]);
    for (int64_t nd = 0; nd < outTiles; ++nd) {
      Value values = arith::TruncFOp::create(
          rewriter, loc, pairType, e.fmul(e.extract(acc[nd], {r}), scale));
      vector::StoreOp::create(rewriter, loc, values, out,
                              ValueRange{bIdx, hIdx, rows[r],
                                         e.add(t2, 8 * nd)},
                              /*nontemporal=*/false, llvm::Align(4));
    }
  }

  rewriter.setInsertionPointAfter(workgroups);
  Value result = bufferization::ToTensorOp::create(
      rewriter, loc, oType, out, /*restrict=*/true, /*writable=*/true);
  rewriter.replaceOp(op, result);
  return result;
}

LogicalResult mha::lowerAttentionsToMMA(RewriterBase &rewriter,
                                        Operation *root) {
  SmallVector<AttentionOp> ops;
  root->walk([&](AttentionOp op) {
    LoweringConfigAttr config = getLoweringConfig(op);
    if (config && !config.getMma().empty())
      ops.push_back(op);
  });
  for (AttentionOp op : ops)
    if (failed(lowerAttentionToMMA(rewriter, op)))
      return failure();
  return success();
}

namespace {

struct MHAAttentionToMMAPass final
    : mha::impl::MHAAttentionToMMAPassBase<MHAAttentionToMMAPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    if (failed(lowerAttentionsToMMA(rewriter, getOperation())))
      signalPassFailure();
  }
};

} // namespace
