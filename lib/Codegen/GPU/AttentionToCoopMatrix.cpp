//===- AttentionToCoopMatrix.cpp - mha.attention on cooperative matrices --===//
//
// The FlashAttention forward kernel for Vulkan devices with cooperative
// matrices (VK_KHR_cooperative_matrix), built as IR from an mha.attention
// whose lowering configuration has `mma = [16, 16, 16]`
// (mha-attention-to-cooperative-matrix), in the GPU dialect's subgroup
// matrix ops, which the SPIR-V conversion turns into
// OpCooperativeMatrix{Load,Store,MulAdd}KHR:
//
//   scf.forall (b, h, query tile) {            // a workgroup each
//     Q tile -> workgroup memory               // once
//     scf.forall (thread) in (32 * subgroups) {
//       Q matrices of the subgroup's 16 rows   // loaded once, kept
//       scf.for key block {                    // state in iter_args
//         K, V blocks -> workgroup memory      // all threads, barriers
//         S = Q Kᵀ                             // subgroup_mma_compute
//         S -> workgroup memory
//         per row (2 lanes each): softcap, additive mask, key lengths,
//         causal and windows, row max by a shuffle, P = exp2(S·scale·log2e
//         − m) -> workgroup memory (f16), the rescale factor of the row
//         acc = acc .* factors + P V           // the factor matrix's rows
//       }
//       out = acc .* (1 / l), through workgroup memory, rows in range
//     }
//   }
//
// A cooperative matrix's distribution over the lanes of its subgroup is the
// device's and unknown to the kernel, so everything a row needs (its
// maximum, its sum, masks) is computed on the scores stored to workgroup
// memory, by the two lanes that own the row, and comes back as matrices: P
// as the A operand of P V, and the row factors (exp2 of the old maximum
// minus the new, or 1 / l at the end) as an accumulator-type matrix whose
// row r holds row r's factor, multiplied element by element into the
// accumulators (OpFMul on two cooperative matrices). The output goes through
// workgroup memory too, so that rows past the last query are not stored.
//
// Subgroups must have 32 invocations (the runtime requests that size): the
// kernel's subgroup index and lane are the device's (gpu.subgroup_id,
// gpu.lane_id), and a row's two lanes combine their halves by a shuffle.
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
#define GEN_PASS_DEF_MHAATTENTIONTOCOOPERATIVEMATRIXPASS
#include "mha/Codegen/GPU/Passes.h.inc"
} // namespace mlir::mha

using namespace mlir;
using namespace mlir::mha;
using namespace mlir::mha::detail;

namespace {

/// The lanes of a subgroup, and of a query row in the per-row steps (a
/// subgroup's 16 rows by 2 lanes).
constexpr int64_t kLanes = 32, kRowLanes = 2;
/// The cooperative matrices' shape: 16 x 16 (x 16).
constexpr int64_t kSize = 16;

/// Subgroup matrix ops on 16 x 16 tiles of workgroup memory.
struct Matrices {
  Emitter &e;

  gpu::MMAMatrixType type(Type element, StringRef use) {
    return gpu::MMAMatrixType::get({kSize, kSize}, element, use);
  }
  /// The 16 x 16 matrix at (`row`, `col`) of the 2-D `tile`, as operand
  /// `use`; `transpose`: column-major (element (r, c) at (`row` + c,
  /// `col` + r)).
  Value load(Value tile, Value row, Value col, StringRef use,
             bool transpose = false) {
    auto type = cast<MemRefType>(tile.getType());
    return gpu::SubgroupMmaLoadMatrixOp::create(
        e.b, e.loc, this->type(type.getElementType(), use), tile,
        ValueRange{row, col}, e.b.getIndexAttr(type.getDimSize(1)),
        transpose ? e.b.getUnitAttr() : UnitAttr());
  }
  void store(Value matrix, Value tile, Value row, Value col) {
    auto type = cast<MemRefType>(tile.getType());
    gpu::SubgroupMmaStoreMatrixOp::create(
        e.b, e.loc, matrix, tile, ValueRange{row, col},
        e.b.getIndexAttr(type.getDimSize(1)), UnitAttr());
  }
  Value zeros() {
    return gpu::SubgroupMmaConstantMatrixOp::create(
        e.b, e.loc, type(e.b.getF32Type(), "COp"), e.f32(0));
  }
  Value multiplyAdd(Value a, Value b, Value c) {
    return gpu::SubgroupMmaComputeOp::create(e.b, e.loc, c.getType(), a, b, c,
                                             UnitAttr(), UnitAttr());
  }
  /// `x` .* `y`, element by element.
  Value multiply(Value x, Value y) {
    return gpu::SubgroupMmaElementwiseOp::create(
        e.b, e.loc, x.getType(), ValueRange{x, y}, gpu::MMAElementwiseOp::MULF);
  }
};

} // namespace

FailureOr<Value> mha::lowerAttentionToCoopMatrix(RewriterBase &rewriter,
                                                 AttentionOp op) {
  LoweringConfigAttr config = getLoweringConfig(op);
  if (!config || config.getMma() != ArrayRef<int64_t>{kSize, kSize, kSize}) {
    (void)rewriter.notifyMatchFailure(
        op, "no mma = [16, 16, 16] in its lowering_config");
    return failure();
  }
  std::string why = coopMatrixAttentionUnsupported(op, getTarget(op));
  if (!why.empty()) {
    op.emitOpError() << "cannot run as the cooperative-matrix kernel: " << why;
    return failure();
  }
  int64_t subgroups = config.getWarps().value_or(0);
  int64_t blockRows = config.getQTile().value_or(0),
          blockKeys = config.getKvTile().value_or(0);
  if (subgroups <= 0 || blockRows != kSize * subgroups || blockKeys <= 0 ||
      blockKeys % kSize) {
    op.emitOpError() << "needs a lowering_config with warps (subgroups), "
                        "q_tile = 16 * warps and a kv_tile that is a multiple "
                        "of 16, for the cooperative-matrix kernel";
    return failure();
  }

  if (std::string why = headTileUnsupported(op, blockRows); !why.empty()) {
    op.emitOpError() << "cannot run as the cooperative-matrix kernel: " << why;
    return failure();
  }

  Location loc = op.getLoc();
  MLIRContext *ctx = rewriter.getContext();
  rewriter.setInsertionPoint(op);
  Emitter e{rewriter, loc};
  Matrices m{e};
  AttentionKernelOperands ops = prepareAttentionKernel(rewriter, op);
  int64_t dk = ops.dk, dv = ops.dv, threads = kLanes * subgroups;
  int64_t keysPerLane = blockKeys / kRowLanes, colsPerLane = kSize / kRowLanes;
  Type f16 = rewriter.getF16Type(), f32 = rewriter.getF32Type();
  Value negInf = e.f32(-INFINITY), zero = e.f32(0);

  AttentionWorkgroup workgroup =
      buildAttentionWorkgroups(rewriter, ops, blockRows);
  Value bIdx = workgroup.batchIndex, hIdx = workgroup.head,
        split = workgroup.split;
  auto workgroupSpace =
      gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  auto tile = [&](int64_t rows, int64_t width, Type element) {
    int64_t pad = element.isF16() ? kCoopHalfRowPadding : kCoopFloatRowPadding;
    return memref::AllocOp::create(rewriter, loc,
                                   MemRefType::get({rows, width + pad}, element,
                                                   MemRefLayoutAttrInterface(),
                                                   workgroupSpace));
  };
  Value qTile = tile(blockRows, dk, f16), keyTile = tile(blockKeys, dk, f16),
        vTile = tile(blockKeys, dv, f16),
        pTile = tile(blockRows, blockKeys, f16),
        sTile = tile(blockRows, blockKeys, f32),
        factorTile = tile(blockRows, kSize, f32);
  Value thread = buildThreadLoop(rewriter, loc, threads);

  Value subgroup = gpu::SubgroupIdOp::create(rewriter, loc, nullptr);
  Value lane = gpu::LaneIdOp::create(rewriter, loc, nullptr);
  Value subgroupRow = e.mul(subgroup, kSize);
  // The lane's row (tile row and query) and half of it: keys half + 2 t of
  // every block, columns half * 8 + u of the factor and output matrices.
  Value tileRow = e.add(subgroupRow, e.div(lane, kRowLanes));
  Value half = e.rem(lane, kRowLanes);
  TileRow row = tileRowAt(e, ops, workgroup, tileRow);
  Value lastQuery = e.add(ops.queries, -1);
  Value lastKey = e.max(e.add(ops.keys, -1), e.index(0));
  auto [blockQuery, blockQueries] =
      tileQueries(e, ops, workgroup, e.index(0), blockRows);
  KeyLimits limits =
      buildKeyLimits(e, ops, bIdx, blockQuery, blockQueries, blockKeys, split);
  Value kvHead = e.div(hIdx, ops.heads / ops.kvHeads);

  // Each lane writes its row's factor into its half of the row of the
  // factor matrix.
  auto storeFactor = [&](Value factor) {
    for (int64_t u = 0; u < colsPerLane; ++u)
      memref::StoreOp::create(
          rewriter, loc, factor, factorTile,
          ValueRange{tileRow, e.add(e.mul(half, colsPerLane), u)});
  };

  copyQueryTile(e, ops, workgroup, thread, threads, qTile, blockRows);
  gpu::BarrierOp::create(rewriter, loc);
  SmallVector<Value> queries;
  for (int64_t k = 0; k < dk / kSize; ++k)
    queries.push_back(m.load(qTile, subgroupRow, e.index(k * kSize), "AOp"));

  // Iteration arguments: the row's maximum and the lane's part of its sum,
  // then the subgroup's accumulators (16 rows x 16 value dims each).
  SmallVector<Value> inits = {negInf, zero};
  for (int64_t n = 0; n < dv / kSize; ++n)
    inits.push_back(m.zeros());
  auto keyLoop = scf::ForOp::create(rewriter, loc, limits.keyStart,
                                    limits.keyEnd, e.index(blockKeys), inits);
  {
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(keyLoop.getBody());
    Value kb = keyLoop.getInductionVar();
    Value rowMax = keyLoop.getRegionIterArgs()[0],
          rowSum = keyLoop.getRegionIterArgs()[1];
    SmallVector<Value> acc(keyLoop.getRegionIterArgs().drop_front(2));

    // Every thread done with the previous block's tiles; then this block's,
    // zero past the valid keys.
    gpu::BarrierOp::create(rewriter, loc);
    copyTileToWorkgroup(e, thread, threads, keyTile, ops.k, bIdx, kvHead, kb,
                        blockKeys, limits.validKeys, ops.keys, dk,
                        op.getKeyTransposed());
    copyTileToWorkgroup(e, thread, threads, vTile, ops.v, bIdx, kvHead, kb,
                        blockKeys, limits.validKeys, ops.keys, dv,
                        /*transposed=*/false);
    gpu::BarrierOp::create(rewriter, loc);

    // S = Q Kᵀ, 16 keys at a time (Kᵀ: the K tile read column-major).
    for (int64_t j = 0; j < blockKeys / kSize; ++j) {
      Value s = m.zeros();
      for (int64_t k = 0; k < dk / kSize; ++k)
        s = m.multiplyAdd(queries[k],
                          m.load(keyTile, e.index(j * kSize),
                                 e.index(k * kSize), "BOp",
                                 /*transpose=*/true),
                          s);
      m.store(s, sTile, subgroupRow, e.index(j * kSize));
    }
    gpu::BarrierOp::create(rewriter, loc);

    // The lane's scores: keys half + 2 t. The cap, then the additive mask
    // on the scaled scores (rows and keys past the last clamped: their
    // scores are not used).
    SmallVector<Value> cols, scores;
    for (int64_t t = 0; t < keysPerLane; ++t) {
      Value col = e.add(half, kRowLanes * t);
      cols.push_back(col);
      Value s = capScore(e, ops,
                         memref::LoadOp::create(rewriter, loc, sTile,
                                                ValueRange{tileRow, col}));
      if (ops.mask) {
        if (!ops.softcap)
          s = e.fmul(s, e.f32(ops.scale));
        s = e.fadd(s, maskElement(e, ops, bIdx, row.head,
                                  e.min(row.query, lastQuery),
                                  e.min(e.add(kb, col), lastKey)));
      }
      scores.push_back(s);
    }
    // Key lengths, causal and windows, on the blocks that need them for the
    // workgroup's rows.
    Value needsMask =
        blockNeedsMask(e, ops, limits, kb, blockKeys, blockQuery, blockQueries);
    auto ifMask = scf::IfOp::create(rewriter, loc,
                                    TypeRange(ValueRange(scores)), needsMask,
                                    /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard inner(rewriter);
      rewriter.setInsertionPointToStart(ifMask.thenBlock());
      SmallVector<Value> masked;
      for (auto [s, col] : llvm::zip(scores, cols))
        masked.push_back(e.select(
            keyVisible(e, ops, limits, row.query, e.add(kb, col)), s, negInf));
      scf::YieldOp::create(rewriter, loc, masked);
      rewriter.setInsertionPointToStart(ifMask.elseBlock());
      scf::YieldOp::create(rewriter, loc, scores);
    }
    scores.assign(ifMask.getResults().begin(), ifMask.getResults().end());

    // Online softmax in base 2; the row maximum over the row's two lanes.
    Value factor = e.f32(ops.scoreFactor);
    Value blockMax = negInf;
    for (Value &s : scores) {
      s = e.fmul(s, factor);
      blockMax = e.fmax(blockMax, s);
    }
    blockMax = e.groupReduce(blockMax, kRowLanes,
                             [&](Value x, Value y) { return e.fmax(x, y); });
    RowMaxUpdate update = updateRowMax(e, rowMax, blockMax);
    Value sum = e.fmul(rowSum, update.alpha);
    for (auto [s, col] : llvm::zip(scores, cols)) {
      Value p = e.exp2(e.fsub(s, update.subtract));
      sum = e.fadd(sum, p);
      memref::StoreOp::create(rewriter, loc,
                              arith::TruncFOp::create(rewriter, loc, f16, p),
                              pTile, ValueRange{tileRow, col});
    }
    storeFactor(update.alpha);
    gpu::BarrierOp::create(rewriter, loc);

    // acc = acc .* alpha (per row) + P V.
    Value alphas = m.load(factorTile, subgroupRow, e.index(0), "COp");
    for (Value &a : acc)
      a = m.multiply(a, alphas);
    for (int64_t j = 0; j < blockKeys / kSize; ++j) {
      Value p = m.load(pTile, subgroupRow, e.index(j * kSize), "AOp");
      for (int64_t n = 0; n < dv / kSize; ++n)
        acc[n] = m.multiplyAdd(
            p, m.load(vTile, e.index(j * kSize), e.index(n * kSize), "BOp"),
            acc[n]);
    }
    SmallVector<Value> yielded = {update.max, sum};
    llvm::append_range(yielded, acc);
    scf::YieldOp::create(rewriter, loc, yielded);
  }

  // out = acc / l (the row sums over the row's lanes), 0 for a row without
  // visible keys; with key splits, the chunk's state instead (acc as it
  // is, the row's maximum and sum from its first lane). Each 16 x 16 block
  // through the score tile, stored by the rows' lanes where the row is a
  // query.
  ValueRange results = keyLoop.getResults();
  SmallVector<Value> acc(results.drop_front(2));
  Value sum = e.groupReduce(results[1], kRowLanes,
                            [&](Value x, Value y) { return e.fadd(x, y); });
  Value inRange = row.valid;
  // Every subgroup done with the factor tile of the last block.
  gpu::BarrierOp::create(rewriter, loc);
  if (split) {
    storeChunkRowState(e, ops, bIdx, row.head, split, row.query, results[0],
                       sum,
                       arith::AndIOp::create(
                           rewriter, loc, inRange,
                           e.cmp(arith::CmpIPredicate::eq, half, e.index(0))));
  } else {
    storeFactor(inverseRowSum(e, sum));
    gpu::BarrierOp::create(rewriter, loc);
    Value inverses = m.load(factorTile, subgroupRow, e.index(0), "COp");
    for (Value &a : acc)
      a = m.multiply(a, inverses);
  }
  for (int64_t n = 0; n < dv / kSize; ++n) {
    m.store(acc[n], sTile, subgroupRow, e.index(0));
    gpu::BarrierOp::create(rewriter, loc);
    auto ifStore = scf::IfOp::create(rewriter, loc, TypeRange(), inRange,
                                     /*withElseRegion=*/false);
    {
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(ifStore.thenBlock());
      for (int64_t u = 0; u < colsPerLane; ++u) {
        Value col = e.add(e.mul(half, colsPerLane), u);
        Value value = memref::LoadOp::create(rewriter, loc, sTile,
                                             ValueRange{tileRow, col});
        Value outCol = e.add(col, n * kSize);
        if (split) {
          memref::StoreOp::create(
              rewriter, loc, value, ops.partialOut,
              ValueRange{bIdx, row.head, row.query, split, outCol});
          continue;
        }
        memref::StoreOp::create(
            rewriter, loc, arith::TruncFOp::create(rewriter, loc, f16, value),
            ops.out, ValueRange{bIdx, row.head, row.query, outCol});
      }
    }
    gpu::BarrierOp::create(rewriter, loc);
  }
  return finishAttentionKernel(rewriter, ops, workgroup.loop);
}

LogicalResult mha::lowerAttentionsToCoopMatrix(RewriterBase &rewriter,
                                               Operation *root) {
  return lowerConfiguredAttentions(
      rewriter, root,
      [](LoweringConfigAttr config) {
        return config.getMma() == ArrayRef<int64_t>{kSize, kSize, kSize};
      },
      lowerAttentionToCoopMatrix);
}

namespace {

struct MHAAttentionToCooperativeMatrixPass final
    : mha::impl::MHAAttentionToCooperativeMatrixPassBase<
          MHAAttentionToCooperativeMatrixPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    if (failed(lowerAttentionsToCoopMatrix(rewriter, getOperation())))
      signalPassFailure();
  }
};

} // namespace
