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
// bf16 operands). f32 operands with mma = [16, 8, 8]: m16n8k8 on operands
// rounded to TF32, K and V by scalar shared loads (ldmatrix moves 16-bit
// pairs), P moved into the A layout of k8 steps by index shuffles.
//
//===----------------------------------------------------------------------===//

#include "AttentionKernel.h"
#include "MMAFragments.h"

#include "mha/Codegen/Common/KernelConfig.h"
#include "mha/Codegen/GPU/Passes.h"
#include "mha/Codegen/GPU/Transforms.h"
#include "mha/Dialect/MHA/IR/MHAOps.h"
#include "mha/Dialect/MHA/Transforms/Transforms.h"

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
/// step (cp.async, through L2 only: 8 f16 or 4 f32); keys from `validKeys`
/// on (past the
/// last, or past the batch's length) are zero-filled (their scores are
/// masked). Returns the group to wait for. A thread left over in the last
/// step copies a chunk another thread copies too (the same bytes).
static Value startTileCopy(Emitter &e, Value bIdx, Value thread,
                           int64_t threads, Value source, Value head,
                           Value firstKey, Value keys, Value validKeys,
                           Value tile, int64_t width) {
  auto tileType = cast<MemRefType>(tile.getType());
  int64_t tileKeys = tileType.getDimSize(0);
  int64_t perCopy = 16 / (tileType.getElementTypeBitWidth() / 8);
  int64_t chunksPerRow = width / perCopy, chunks = tileKeys * chunksPerRow;
  auto tokenType = nvgpu::DeviceAsyncTokenType::get(e.b.getContext());
  Value lastKey = e.max(e.add(keys, -1), e.index(0));
  SmallVector<Value> tokens;
  for (int64_t step = 0; step * threads < chunks; ++step) {
    Value chunk = e.add(thread, step * threads);
    if ((step + 1) * threads > chunks)
      chunk = e.rem(chunk, chunks);
    Value row = e.div(chunk, chunksPerRow);
    Value col = e.mul(e.rem(chunk, chunksPerRow), perCopy);
    Value key = e.add(firstKey, row);
    Value inRange = e.cmp(arith::CmpIPredicate::slt, key, validKeys);
    Value elements = e.select(inRange, e.index(perCopy), e.index(0));
    tokens.push_back(nvgpu::DeviceAsyncCopyOp::create(
        e.b, e.loc, tokenType, tile, ValueRange{row, col}, source,
        ValueRange{bIdx, head, e.min(key, lastKey), col},
        e.b.getIndexAttr(perCopy), elements, e.b.getUnitAttr()));
  }
  return nvgpu::DeviceAsyncCreateGroupOp::create(e.b, e.loc, tokenType, tokens);
}

/// `x` (f32) rounded to TF32 (10 mantissa bits; to nearest, ties away from
/// zero, as cvt.rna.tf32.f32), its low 13 bits zero: what the m16n8k8 mma
/// multiplies is then the same on every device and in the emulation.
static Value roundToTF32(Emitter &e, Value x) {
  Type i32 = e.b.getI32Type();
  Value bits = arith::BitcastOp::create(e.b, e.loc, i32, x);
  bits = arith::AddIOp::create(
      e.b, e.loc, bits, arith::ConstantIntOp::create(e.b, e.loc, 0x1000, 32));
  bits = arith::AndIOp::create(
      e.b, e.loc, bits,
      arith::ConstantIntOp::create(e.b, e.loc, int32_t(0xFFFFE000), 32));
  return arith::BitcastOp::create(e.b, e.loc, e.b.getF32Type(), bits);
}

FailureOr<Value> mha::lowerAttentionToMMA(RewriterBase &rewriter,
                                          AttentionOp op) {
  LoweringConfigAttr config = getLoweringConfig(op);
  if (!config || config.getMma().empty()) {
    (void)rewriter.notifyMatchFailure(op, "no mma in its lowering_config");
    return failure();
  }
  // m16n8k8: f32 operands rounded to TF32; m16n8k16: f16 or bf16.
  bool tf32 = config.getMma()[2] == 8;
  std::string why = mmaAttentionUnsupported(op, getTarget(op), tf32);
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

  if (std::string why = headTileUnsupported(op, 16 * warps); !why.empty()) {
    op.emitOpError() << "cannot run as the tensor-core kernel: " << why;
    return failure();
  }

  Location loc = op.getLoc();
  MLIRContext *ctx = rewriter.getContext();
  rewriter.setInsertionPoint(op);
  Emitter e{rewriter, loc};
  AttentionKernelOperands ops = prepareAttentionKernel(rewriter, op);
  int64_t heads = ops.heads, kvHeads = ops.kvHeads, dk = ops.dk, dv = ops.dv;
  int64_t rowsPerBlock = 16 * warps;

  // The operands' element type: f16 or bf16, or f32 (TF32).
  Type element = ops.element, f32 = rewriter.getF32Type();
  int64_t kStep = tf32 ? 8 : 16;
  Value q = ops.q, k = ops.k, v = ops.v, out = ops.out, mask = ops.mask;
  Value queries = ops.queries, keys = ops.keys;
  bool softcap = ops.softcap.has_value();

  AttentionWorkgroup workgroup =
      buildAttentionWorkgroups(rewriter, ops, rowsPerBlock);
  Value bIdx = workgroup.batchIndex, hIdx = workgroup.head;
  // The key block's K and V tiles in workgroup memory, for all warps.
  auto workgroupSpace =
      gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  auto tileType = [&](int64_t width, int64_t padding) {
    return MemRefType::get({blockKeys, width + padding}, element,
                           MemRefLayoutAttrInterface(), workgroupSpace);
  };
  Value kTile = memref::AllocOp::create(
      rewriter, loc,
      tileType(dk, tf32 ? kTF32KeyRowPadding : kMMATileRowPadding));
  Value vTile = memref::AllocOp::create(
      rewriter, loc,
      tileType(dv, tf32 ? kTF32ValueRowPadding : kMMATileRowPadding));
  Value thread = buildThreadLoop(rewriter, loc, 32 * warps);

  Value warp = e.div(thread, 32), lane = e.rem(thread, 32);
  Value g = e.div(lane, 4), t = e.rem(lane, 4);
  Value kvHead = e.div(hIdx, heads / kvHeads);
  Value warpRow = e.mul(warp, 16);
  // Rows g and g + 8 of the warp's 16: their heads and queries.
  Value warpTileRow = e.add(warpRow, g);
  TileRow rows[2] = {tileRowAt(e, ops, workgroup, warpTileRow),
                     tileRowAt(e, ops, workgroup, warpTileRow, 8)};
  Value lastQuery = e.add(queries, -1);
  Value t2 = e.mul(t, 2);
  // The batch's key length and the keys the workgroup's rows may see (the
  // same for all its warps: they stage the tiles together, between
  // barriers).
  auto [blockQuery, blockQueries] =
      tileQueries(e, ops, workgroup, e.index(0), rowsPerBlock);
  KeyLimits limits = buildKeyLimits(e, ops, bIdx, blockQuery, blockQueries,
                                    blockKeys, workgroup.split);
  Value validKeys = limits.validKeys;
  // ldmatrix: lane l gives the address of row l % 8 of matrix l / 8.
  Value matrix = e.div(lane, 8), matrixRow = e.rem(lane, 8);

  auto pairType = VectorType::get({2}, element);
  // TF32 (m16n8k8): A is 4 x 1, B 2 x 1 f32 registers.
  auto aType = VectorType::get({4, tf32 ? 1 : 2}, element);
  auto bType = VectorType::get({2, 1}, element);
  auto cType = VectorType::get({2, 2}, f32);
  // A TF32 operand element: a scalar of a buffer, rounded.
  auto loadTF32 = [&](Value memref, ValueRange at) {
    return roundToTF32(e, memref::LoadOp::create(rewriter, loc, memref, at));
  };
  auto loadPair = [&](Value memref, Value head, Value row, Value col) {
    return vector::LoadOp::create(rewriter, loc, pairType, memref,
                                  ValueRange{bIdx, head, row, col},
                                  /*nontemporal=*/false, llvm::Align(4))
        .getResult();
  };
  auto mma = [&](Value a, Value bFrag, Value c) {
    return mmaSync(e, a, bFrag, c);
  };

  // Q fragments, read once: A operands of the k16 (TF32: k8) steps over
  // dk. TF32's register i: row g + 8 (i % 2), column t + 4 (i / 2).
  SmallVector<Value> qFrags;
  Value qRows[2] = {e.min(rows[0].query, lastQuery),
                    e.min(rows[1].query, lastQuery)};
  for (int64_t kk = 0; kk < dk / kStep; ++kk) {
    Value frag = e.zeros(aType);
    for (int64_t half = 0; half < 2; ++half)
      for (int64_t r = 0; r < 2; ++r)
        frag = e.insert(tf32 ? vector::BroadcastOp::create(
                                   rewriter, loc, VectorType::get({1}, f32),
                                   loadTF32(q, {bIdx, rows[r].head, qRows[r],
                                                e.add(t, 8 * kk + 4 * half)}))
                             : loadPair(q, rows[r].head, qRows[r],
                                        e.add(t2, 16 * kk + 8 * half)),
                        frag, {2 * half + r});
    qFrags.push_back(frag);
  }
  // TF32's P repack: the A element (g, t) of keys 8kk.. is element t % 2 of
  // the score tile's C fragment in lane t / 2 of the quad, (g, t + 4) in
  // lane 2 + t / 2 (subgroup lanes: gpu.lane_id).
  Value tOdd, srcLo, srcHi;
  if (tf32) {
    Type i32 = rewriter.getI32Type();
    auto toI32 = [&](Value v) {
      return arith::IndexCastOp::create(rewriter, loc, i32, v).getResult();
    };
    Value laneId = gpu::LaneIdOp::create(rewriter, loc, IntegerAttr());
    Value quadBase = e.mul(e.div(laneId, 4), 4);
    srcLo = toI32(e.add(quadBase, e.div(t, 2)));
    srcHi = toI32(e.add(quadBase, e.add(e.div(t, 2), 2)));
    tOdd = e.cmp(arith::CmpIPredicate::eq, e.rem(t, 2), e.index(1));
  }
  auto shuffleIdx = [&](Value x, Value src) {
    return gpu::ShuffleOp::create(
               rewriter, loc, x, src,
               arith::ConstantIntOp::create(rewriter, loc, 32, 32),
               gpu::ShuffleMode::IDX)
        .getShuffleResult();
  };

  int64_t scoreTiles = blockKeys / 8, outTiles = dv / 8;
  auto scoresType = VectorType::get({scoreTiles, 2, 2}, f32);
  auto rowType = VectorType::get({2}, f32);
  Value negInf = e.f32(-INFINITY);
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
  Value firstK = startCopy(k, limits.keyStart, kTile, dk);
  // Iteration arguments: the row max and the thread's part of the row sum,
  // one accumulator fragment per output tile, the copy of the next K block.
  SmallVector<Value> inits = {initMax, e.zeros(rowType)};
  for (int64_t nd = 0; nd < outTiles; ++nd)
    inits.push_back(e.zeros(cType));
  inits.push_back(firstK);
  auto keyLoop = scf::ForOp::create(rewriter, loc, limits.keyStart,
                                    limits.keyEnd, e.index(blockKeys), inits);
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
    if (tf32) {
      for (int64_t n = 0; n < scoreTiles; ++n) {
        // TF32: B register i is K[8n + g][8kk + t + 4i], a scalar shared load
        // (rows padded to 4 mod 32 words: the quad's 8 keys and 4 dims hit
        // distinct banks).
        Value c = e.zeros(cType);
        for (int64_t kk = 0; kk < dk / 8; ++kk) {
          Value bFrag = e.zeros(bType);
          for (int64_t i = 0; i < 2; ++i)
            bFrag = e.insert(vector::BroadcastOp::create(
                                 rewriter, loc, VectorType::get({1}, f32),
                                 loadTF32(kTile, {e.add(g, 8 * n),
                                                  e.add(t, 8 * kk + 4 * i)})),
                             bFrag, {i});
          c = mma(qFrags[kk], bFrag, c);
        }
        scores = e.insert(c, scores, {n});
      }
    } else {
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
    }

    // V_j in place, and every warp done with K_j: K_{j+1}'s copy may start
    // (past the last block it fetches zeros and is never read).
    waitForCopies(e, vCopy);
    gpu::BarrierOp::create(rewriter, loc);
    Value nextK = startCopy(k, e.add(kb, blockKeys), kTile, dk);

    // The cap (c · tanh(s · scale / c)), before any mask.
    if (softcap)
      for (int64_t n = 0; n < scoreTiles; ++n)
        for (int64_t r = 0; r < 2; ++r)
          for (int64_t j = 0; j < 2; ++j)
            scores = e.insert(capScore(e, ops, e.extract(scores, {n, r, j})),
                              scores, {n, r, j});

    // The additive mask, on every block, added to the scaled scores: each
    // score's element, read where the score is (rows and keys past the last
    // clamped: their scores are not used); a static dim of 1 broadcasts.
    if (mask) {
      if (!softcap)
        scores =
            e.fmul(scores, vector::BroadcastOp::create(
                               rewriter, loc, scoresType, e.f32(ops.scale)));
      Value lastKey = e.max(e.add(keys, -1), e.index(0));
      for (int64_t r = 0; r < 2; ++r) {
        for (int64_t n = 0; n < scoreTiles; ++n)
          for (int64_t j = 0; j < 2; ++j) {
            Value col = e.min(e.add(e.add(kb, t2), 8 * n + j), lastKey);
            Value m = maskElement(e, ops, bIdx, rows[r].head, qRows[r], col);
            scores = e.insert(e.fadd(e.extract(scores, {n, r, j}), m), scores,
                              {n, r, j});
          }
      }
    }

    // Masks, on the blocks that need them: past the batch's last key,
    // across the right bound of the warp's first row or the left bound of
    // its last.
    auto [warpQuery, warpQueries] = tileQueries(e, ops, workgroup, warpRow, 16);
    Value needsMask =
        blockNeedsMask(e, ops, limits, kb, blockKeys, warpQuery, warpQueries);
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
            Value visible = keyVisible(e, ops, limits, rows[r].query, col);
            masked = e.insert(
                e.select(visible, e.extract(masked, {n, r, j}), negInf), masked,
                {n, r, j});
          }
      scf::YieldOp::create(rewriter, loc, masked);
      rewriter.setInsertionPointToStart(ifMask.elseBlock());
      scf::YieldOp::create(rewriter, loc, scores);
    }
    scores = ifMask.getResult(0);

    // Online softmax in base 2: scores scaled by scale·log2(e) (log2(e)
    // after a cap).
    Value factor = vector::BroadcastOp::create(rewriter, loc, scoresType,
                                               e.f32(ops.scoreFactor));
    scores = e.fmul(scores, factor);
    Value newMax = rowMax, alpha = rowMax, useMax[2];
    for (int64_t r = 0; r < 2; ++r) {
      Value m = negInf;
      for (int64_t n = 0; n < scoreTiles; ++n)
        for (int64_t j = 0; j < 2; ++j)
          m = e.fmax(m, e.extract(scores, {n, r, j}));
      m = e.quadReduce(m, [&](Value x, Value y) { return e.fmax(x, y); });
      Value old = e.extract(rowMax, {r});
      RowMaxUpdate update = updateRowMax(e, old, m);
      useMax[r] = update.subtract;
      newMax = e.insert(update.max, newMax, {r});
      alpha = e.insert(update.alpha, alpha, {r});
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
    // TF32: k8 steps over the keys, A by the repack above, B register i
    // V[8kk + t + 4i][8nd + g] (rows padded to 8 mod 32 words).
    if (tf32) {
      for (int64_t kk = 0; kk < blockKeys / 8; ++kk) {
        Value a = e.zeros(aType);
        for (int64_t r = 0; r < 2; ++r)
          for (int64_t half = 0; half < 2; ++half) {
            Value src = half ? srcHi : srcLo;
            Value even = shuffleIdx(e.extract(probs, {kk, r, 0}), src);
            Value odd = shuffleIdx(e.extract(probs, {kk, r, 1}), src);
            a = e.insert(vector::BroadcastOp::create(
                             rewriter, loc, VectorType::get({1}, f32),
                             roundToTF32(e, e.select(tOdd, odd, even))),
                         a, {2 * half + r});
          }
        for (int64_t nd = 0; nd < outTiles; ++nd) {
          Value bFrag = e.zeros(bType);
          for (int64_t i = 0; i < 2; ++i)
            bFrag = e.insert(vector::BroadcastOp::create(
                                 rewriter, loc, VectorType::get({1}, f32),
                                 loadTF32(vTile, {e.add(t, 8 * kk + 4 * i),
                                                  e.add(g, 8 * nd)})),
                             bFrag, {i});
          acc[nd] = mma(a, bFrag, acc[nd]);
        }
      }
    } else {
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
        Value row =
            e.add(e.add(matrixRow, e.mul(e.rem(matrix, 2), 8)), 16 * kk);
        for (int64_t nd = 0; nd < outTiles; nd += 2) {
          bool two = nd + 1 < outTiles;
          Value col = e.mul(two ? e.add(e.div(matrix, 2), nd) : e.index(nd), 8);
          SmallVector<Value> frags =
              loadMatrices(e, vTile, {}, row, col,
                           /*transpose=*/true, two ? 4 : 2);
          for (int64_t j = 0; j < (two ? 2 : 1); ++j)
            acc[nd + j] = mma(a, frags[j], acc[nd + j]);
        }
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
  Value sums[2], inverses[2];
  for (int64_t r = 0; r < 2; ++r) {
    sums[r] = e.quadReduce(e.extract(rowSum, {r}),
                           [&](Value x, Value y) { return e.fadd(x, y); });
    inverses[r] = inverseRowSum(e, sums[r]);
  }
  // With key splits, the chunk's state instead: acc as it is, and each
  // row's maximum and sum (from the quad's first lane).
  Value split = workgroup.split;
  for (int64_t r = 0; r < 2; ++r) {
    Value inRange = rows[r].valid;
    if (split)
      storeChunkRowState(e, ops, bIdx, rows[r].head, split, rows[r].query,
                         e.extract(keyLoop.getResult(0), {r}), sums[r],
                         arith::AndIOp::create(
                             rewriter, loc, inRange,
                             e.cmp(arith::CmpIPredicate::eq, t, e.index(0))));
    auto ifStore = scf::IfOp::create(rewriter, loc, TypeRange(), inRange,
                                     /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(ifStore.thenBlock());
    Value scale = vector::BroadcastOp::create(
        rewriter, loc, VectorType::get({2}, f32), inverses[r]);
    for (int64_t nd = 0; nd < outTiles; ++nd) {
      Value col = e.add(t2, 8 * nd);
      if (split) {
        vector::StoreOp::create(
            rewriter, loc, e.extract(acc[nd], {r}), ops.partialOut,
            ValueRange{bIdx, rows[r].head, rows[r].query, split, col},
            /*nontemporal=*/false, llvm::Align(8));
        continue;
      }
      Value values = e.fmul(e.extract(acc[nd], {r}), scale);
      if (values.getType() != pairType)
        values = arith::TruncFOp::create(rewriter, loc, pairType, values);
      vector::StoreOp::create(
          rewriter, loc, values, out,
          ValueRange{bIdx, rows[r].head, rows[r].query, col},
          /*nontemporal=*/false, llvm::Align(4));
    }
  }

  return finishAttentionKernel(rewriter, ops, workgroup.loop);
}

LogicalResult mha::lowerAttentionsToMMA(RewriterBase &rewriter,
                                        Operation *root) {
  return lowerConfiguredAttentions(
      rewriter, root,
      [](LoweringConfigAttr config) {
        return !config.getMma().empty() && config.getMma()[1] == 8;
      },
      lowerAttentionToMMA);
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
