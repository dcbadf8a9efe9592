//===- AttentionKernel.cpp - What the attention kernels share -------------===//

#include "AttentionKernel.h"

#include "mha/Codegen/Common/KernelConfig.h"
#include "mha/Dialect/MHA/IR/MHADialect.h"
#include "mha/Dialect/MHA/Transforms/Transforms.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>

using namespace mlir;
using namespace mlir::mha;
using namespace mlir::mha::detail;

AttentionKernelOperands
mlir::mha::detail::prepareAttentionKernel(RewriterBase &rewriter,
                                          AttentionOp op) {
  Location loc = op.getLoc();
  Emitter e{rewriter, loc};
  AttentionKernelOperands ops;
  ops.op = op;
  auto qType = cast<RankedTensorType>(op.getQuery().getType());
  auto kType = cast<RankedTensorType>(op.getKey().getType());
  auto vType = cast<RankedTensorType>(op.getValue().getType());
  auto oType = cast<RankedTensorType>(op.getResult().getType());
  ops.heads = qType.getDimSize(1);
  ops.kvHeads = kType.getDimSize(1);
  ops.dk = qType.getDimSize(3);
  ops.dv = vType.getDimSize(3);
  ops.element = qType.getElementType();
  ops.q = readBuffer(e, op.getQuery());
  ops.k = readBuffer(e, op.getKey());
  ops.v = readBuffer(e, op.getValue());
  auto dim = [&](Value tensor, int64_t d) -> Value {
    return tensor::DimOp::create(rewriter, loc, tensor, d);
  };
  ops.batch = dim(op.getQuery(), 0);
  ops.queries = dim(op.getQuery(), 2);
  ops.keys = dim(op.getKey(), op.getKeyTransposed() ? 3 : 2);
  SmallVector<Value> dynamicSizes;
  for (int64_t d = 0; d < oType.getRank(); ++d)
    if (oType.isDynamicDim(d))
      dynamicSizes.push_back(dim(op.getQuery(), d));
  ops.splits = resolveKeySplits(op, 0);
  if (LoweringConfigAttr config = getLoweringConfig(op))
    ops.headTile = config.getHeadTile().value_or(1);
  if (ops.splits > 1) {
    // Each chunk's state: [B, H, Sq, splits(, dv)] in f32, of the result's
    // sizes (dv is static in both kernels).
    auto state = [&](bool rows) {
      SmallVector<int64_t> shape = {oType.getDimSize(0), oType.getDimSize(1),
                                    oType.getDimSize(2), ops.splits};
      if (!rows)
        shape.push_back(ops.dv);
      return memref::AllocOp::create(
          rewriter, loc, MemRefType::get(shape, rewriter.getF32Type()),
          dynamicSizes);
    };
    ops.partialOut = state(/*rows=*/false);
    ops.partialMax = state(/*rows=*/true);
    ops.partialSum = state(/*rows=*/true);
  } else {
    ops.out = memref::AllocOp::create(
        rewriter, loc,
        MemRefType::get(oType.getShape(), oType.getElementType()),
        dynamicSizes);
  }
  ops.visibility = op.getKeyVisibility(rewriter);
  if (ops.visibility.keyLengths)
    ops.lengths = readBuffer(e, ops.visibility.keyLengths);
  if (op.getMask())
    ops.mask = readBuffer(e, op.getMask());
  ops.rightBound =
      op.getCausal() ? std::optional<int64_t>(0) : ops.visibility.windowRight;
  ops.leftBound = ops.visibility.windowLeft;
  ops.softcap = op.getSoftcapValue();
  ops.scale = op.getScaleOrDefault();
  ops.scaleFirst = ops.softcap || op.getMask();
  ops.scoreFactor = ops.scaleFirst ? M_LOG2E : ops.scale * M_LOG2E;
  return ops;
}

std::string mlir::mha::detail::headTileUnsupported(AttentionOp op,
                                                   int64_t rows) {
  LoweringConfigAttr config = getLoweringConfig(op);
  int64_t headTile = config ? config.getHeadTile().value_or(1) : 1;
  if (headTile == 1)
    return "";
  int64_t queries = op.getQuery().getType().getDimSize(2);
  int64_t group = op.getQuery().getType().getDimSize(1) /
                  op.getKey().getType().getDimSize(1);
  if (ShapedType::isDynamic(queries) || group % headTile ||
      headTile * queries > rows)
    return "its head_tile = " + std::to_string(headTile) +
           " needs a static query length, a divisor of the " +
           std::to_string(group) +
           " query heads per key/value head, and head_tile * Sq at most " +
           "q_tile (" + std::to_string(rows) + ")";
  return "";
}

AttentionWorkgroup mlir::mha::detail::buildAttentionWorkgroups(
    RewriterBase &rewriter, const AttentionKernelOperands &ops, int64_t rows) {
  Location loc = ops.op.getLoc();
  Emitter e{rewriter, loc};
  // With key splits the second dimension runs over (head, chunk) pairs,
  // the chunks of a head adjacent (a grid has three dimensions).
  auto workgroups = scf::ForallOp::create(
      rewriter, loc,
      ArrayRef<OpFoldResult>{rewriter.getIndexAttr(0), rewriter.getIndexAttr(0),
                             rewriter.getIndexAttr(0)},
      ArrayRef<OpFoldResult>{
          ops.batch,
          rewriter.getIndexAttr(ops.heads / ops.headTile * ops.splits),
          ops.queries},
      ArrayRef<OpFoldResult>{rewriter.getIndexAttr(1), rewriter.getIndexAttr(1),
                             rewriter.getIndexAttr(rows)},
      // Mapped to workgroups: kept as a loop when it has one iteration.
      ValueRange(), workgroupMapping(rewriter.getContext(), 3));
  rewriter.setInsertionPointToStart(workgroups.getBody());
  Value firstRow = workgroups.getInductionVar(2);
  if (ops.op.getCausal()) {
    Value lastTile = e.mul(e.div(e.add(ops.queries, -1), rows), rows);
    firstRow = e.sub(lastTile, firstRow);
  }
  Value head = workgroups.getInductionVar(1), split;
  if (ops.splits > 1) {
    split = e.rem(head, ops.splits);
    head = e.div(head, ops.splits);
  }
  if (ops.headTile > 1)
    head = e.mul(head, ops.headTile);
  return {workgroups, workgroups.getInductionVar(0), head, firstRow, split};
}

TileRow mlir::mha::detail::tileRowAt(Emitter &e,
                                     const AttentionKernelOperands &ops,
                                     const AttentionWorkgroup &workgroup,
                                     Value tileRow, int64_t offset) {
  if (ops.headTile == 1) {
    Value query = e.add(e.add(workgroup.firstRow, tileRow), offset);
    return {workgroup.head, query,
            e.cmp(arith::CmpIPredicate::slt, query, ops.queries)};
  }
  // Sq is static (the configuration's check): rows past the tile's
  // head_tile * Sq queries are padding, their head clamped to the tile's.
  int64_t queries = ops.op.getQuery().getType().getDimSize(2);
  tileRow = e.add(tileRow, offset);
  Value packed = e.min(e.div(tileRow, queries), e.index(ops.headTile - 1));
  return {e.add(workgroup.head, packed), e.rem(tileRow, queries),
          e.cmp(arith::CmpIPredicate::slt, tileRow,
                e.index(ops.headTile * queries))};
}

std::pair<Value, int64_t>
mlir::mha::detail::tileQueries(Emitter &e, const AttentionKernelOperands &ops,
                               const AttentionWorkgroup &workgroup, Value first,
                               int64_t rows) {
  if (ops.headTile == 1)
    return {e.add(workgroup.firstRow, first), rows};
  return {e.index(0), ops.op.getQuery().getType().getDimSize(2)};
}

KeyLimits mlir::mha::detail::buildKeyLimits(Emitter &e,
                                            const AttentionKernelOperands &ops,
                                            Value batchIndex, Value firstRow,
                                            int64_t rows, int64_t blockKeys,
                                            Value split) {
  KeyLimits limits;
  limits.validKeys = ops.keys;
  limits.diagonal = ops.visibility.diagonal;
  if (ops.lengths) {
    Value stored = memref::LoadOp::create(e.b, e.loc, ops.lengths, batchIndex);
    limits.length =
        arith::IndexCastOp::create(e.b, e.loc, e.b.getIndexType(), stored);
    limits.validKeys = e.max(e.min(limits.length, ops.keys), e.index(0));
    if (limits.diagonal)
      limits.diagonal = e.add(limits.diagonal, limits.length);
  }
  limits.keyEnd = limits.validKeys;
  limits.keyStart = e.index(0);
  if (ops.rightBound) {
    Value lastRow = e.min(e.add(firstRow, rows - 1), e.add(ops.queries, -1));
    limits.keyEnd =
        e.max(e.min(e.add(e.add(lastRow, limits.diagonal), *ops.rightBound + 1),
                    limits.keyEnd),
              e.index(0));
  }
  if (ops.leftBound) {
    Value left = e.max(e.add(e.add(firstRow, limits.diagonal), -*ops.leftBound),
                       e.index(0));
    limits.keyStart = e.mul(e.div(left, blockKeys), blockKeys);
  }
  if (split) {
    // Chunks of ceil(span / splits) keys rounded up to whole blocks, so
    // that every chunk but the last few is full and starts on a block (as
    // keyStart does): chunk `split` is [start, min(start + chunk, end)).
    Value span = e.max(e.sub(limits.keyEnd, limits.keyStart), e.index(0));
    Value perChunk = e.div(e.add(span, ops.splits - 1), ops.splits);
    Value chunk =
        e.mul(e.div(e.add(perChunk, blockKeys - 1), blockKeys), blockKeys);
    Value start =
        e.add(limits.keyStart, arith::MulIOp::create(e.b, e.loc, split, chunk));
    limits.keyEnd = e.min(limits.keyEnd, e.add(start, chunk));
    limits.keyStart = start;
  }
  return limits;
}

void mlir::mha::detail::storeChunkRowState(Emitter &e,
                                           const AttentionKernelOperands &ops,
                                           Value batchIndex, Value head,
                                           Value split, Value row, Value rowMax,
                                           Value rowSum, Value owner) {
  auto ifOwner = scf::IfOp::create(e.b, e.loc, TypeRange(), owner,
                                   /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(e.b);
  e.b.setInsertionPointToStart(ifOwner.thenBlock());
  SmallVector<Value> at = {batchIndex, head, row, split};
  memref::StoreOp::create(e.b, e.loc, rowMax, ops.partialMax, at);
  memref::StoreOp::create(e.b, e.loc, rowSum, ops.partialSum, at);
}

Value mlir::mha::detail::capScore(Emitter &e,
                                  const AttentionKernelOperands &ops, Value s) {
  if (!ops.softcap)
    return s;
  Value inner = e.fmul(s, e.f32(ops.scale / *ops.softcap));
  return e.fmul(e.f32(*ops.softcap), math::TanhOp::create(e.b, e.loc, inner));
}

Value mlir::mha::detail::maskElement(Emitter &e,
                                     const AttentionKernelOperands &ops,
                                     Value batchIndex, Value head, Value row,
                                     Value col) {
  auto maskType = cast<MemRefType>(ops.mask.getType());
  int64_t rank = maskType.getRank();
  auto index = [&](int64_t d, Value v) {
    return maskType.getDimSize(d) == 1 ? e.index(0) : v;
  };
  SmallVector<Value> at;
  if (rank == 4)
    at = {index(0, batchIndex), index(1, head)};
  else if (rank == 3)
    at = {index(0, batchIndex)};
  at.push_back(index(rank - 2, row));
  at.push_back(index(rank - 1, col));
  Value m = memref::LoadOp::create(e.b, e.loc, ops.mask, at);
  if (!m.getType().isF32())
    m = arith::ExtFOp::create(e.b, e.loc, e.b.getF32Type(), m);
  return m;
}

Value mlir::mha::detail::blockNeedsMask(Emitter &e,
                                        const AttentionKernelOperands &ops,
                                        const KeyLimits &limits, Value kb,
                                        int64_t blockKeys, Value firstRow,
                                        int64_t rows) {
  Value blockEnd = e.add(kb, blockKeys);
  Value needsMask =
      e.cmp(arith::CmpIPredicate::sgt, blockEnd, limits.validKeys);
  auto orMask = [&](Value c) {
    needsMask = arith::OrIOp::create(e.b, e.loc, needsMask, c);
  };
  if (ops.rightBound)
    orMask(e.cmp(arith::CmpIPredicate::sgt, e.add(blockEnd, -1),
                 e.add(e.add(firstRow, limits.diagonal), *ops.rightBound)));
  if (ops.leftBound)
    orMask(e.cmp(arith::CmpIPredicate::slt, kb,
                 e.add(e.add(e.add(firstRow, rows - 1), limits.diagonal),
                       -*ops.leftBound)));
  return needsMask;
}

Value mlir::mha::detail::keyVisible(Emitter &e,
                                    const AttentionKernelOperands &ops,
                                    const KeyLimits &limits, Value row,
                                    Value col) {
  Value visible = e.cmp(arith::CmpIPredicate::slt, col, ops.keys);
  if (ops.visibility.restricts())
    visible = arith::AndIOp::create(
        e.b, e.loc, visible,
        buildKeyVisible(e.b, e.loc, ops.visibility, limits.length, row, col));
  return visible;
}

RowMaxUpdate mlir::mha::detail::updateRowMax(Emitter &e, Value old,
                                             Value blockMax) {
  Value m = e.fmax(old, blockMax);
  Value none = arith::CmpFOp::create(e.b, e.loc, arith::CmpFPredicate::OEQ, m,
                                     e.f32(-INFINITY));
  Value subtract = e.select(none, e.f32(0), m);
  return {m, subtract, e.exp2(e.fsub(old, subtract))};
}

Value mlir::mha::detail::inverseRowSum(Emitter &e, Value sum) {
  Value zero = e.f32(0);
  Value empty =
      arith::CmpFOp::create(e.b, e.loc, arith::CmpFPredicate::OEQ, sum, zero);
  return e.select(empty, zero,
                  arith::DivFOp::create(e.b, e.loc, e.f32(1), sum));
}

LogicalResult mlir::mha::detail::lowerConfiguredAttentions(
    RewriterBase &rewriter, Operation *root,
    function_ref<bool(LoweringConfigAttr)> selects,
    function_ref<FailureOr<Value>(RewriterBase &, AttentionOp)> lower) {
  SmallVector<AttentionOp> ops;
  root->walk([&](AttentionOp op) {
    LoweringConfigAttr config = getLoweringConfig(op);
    if (config && selects(config))
      ops.push_back(op);
  });
  for (AttentionOp op : ops)
    if (failed(lower(rewriter, op)))
      return failure();
  return success();
}

/// The chunks' states merged into the result (finishAttentionKernel).
static Value mergeChunks(RewriterBase &rewriter,
                         const AttentionKernelOperands &ops) {
  Location loc = ops.op.getLoc();
  auto resultType = cast<RankedTensorType>(ops.op.getResult().getType());
  auto asTensor = [&](Value buffer) {
    auto type = cast<MemRefType>(buffer.getType());
    return bufferization::ToTensorOp::create(
               rewriter, loc,
               RankedTensorType::get(type.getShape(), type.getElementType()),
               buffer, /*restrict=*/true, /*writable=*/true)
        .getResult();
  };
  Value out = asTensor(ops.partialOut), maxima = asTensor(ops.partialMax),
        sums = asTensor(ops.partialSum);
  SmallVector<OpFoldResult> sizes =
      tensor::getMixedSizes(rewriter, loc, ops.op.getInit());
  Value init = tensor::EmptyOp::create(rewriter, loc, sizes,
                                       resultType.getElementType());
  // One element per iteration: its row's maximum over the chunks, then the
  // chunks' weights, the row's sum and the element's numerator (a few
  // loads per chunk: the splits are few).
  auto merge = linalg::GenericOp::create(
      rewriter, loc, TypeRange{resultType}, ValueRange(), ValueRange{init},
      rewriter.getMultiDimIdentityMap(4),
      SmallVector<utils::IteratorType>(4, utils::IteratorType::parallel),
      [&](OpBuilder &b, Location nloc, ValueRange) {
        Emitter g{b, nloc};
        SmallVector<Value> at;
        for (int64_t d = 0; d < 4; ++d)
          at.push_back(linalg::IndexOp::create(b, nloc, d));
        auto rowAt = [&](int64_t s) {
          return SmallVector<Value>{at[0], at[1], at[2], g.index(s)};
        };
        SmallVector<Value> m;
        Value top = g.f32(-INFINITY);
        for (int64_t s = 0; s < ops.splits; ++s) {
          m.push_back(tensor::ExtractOp::create(b, nloc, maxima, rowAt(s)));
          top = g.fmax(top, m.back());
        }
        Value sum = g.f32(0), numerator = g.f32(0);
        for (int64_t s = 0; s < ops.splits; ++s) {
          // A chunk without visible keys (maximum -inf) weighs 0.
          Value empty = arith::CmpFOp::create(
              b, nloc, arith::CmpFPredicate::OEQ, m[s], g.f32(-INFINITY));
          Value weight = g.select(empty, g.f32(0), g.exp2(g.fsub(m[s], top)));
          sum = g.fma(tensor::ExtractOp::create(b, nloc, sums, rowAt(s)),
                      weight, sum);
          SmallVector<Value> element = rowAt(s);
          element.push_back(at[3]);
          numerator = g.fma(tensor::ExtractOp::create(b, nloc, out, element),
                            weight, numerator);
        }
        Value value = g.fmul(numerator, inverseRowSum(g, sum));
        if (value.getType() != resultType.getElementType())
          value = arith::TruncFOp::create(b, nloc, resultType.getElementType(),
                                          value);
        linalg::YieldOp::create(b, nloc, value);
      });
  return merge.getResult(0);
}

Value mlir::mha::detail::finishAttentionKernel(
    RewriterBase &rewriter, const AttentionKernelOperands &ops,
    scf::ForallOp workgroups) {
  rewriter.setInsertionPointAfter(workgroups);
  Value result = ops.splits > 1 ? mergeChunks(rewriter, ops)
                                : bufferization::ToTensorOp::create(
                                      rewriter, ops.op.getLoc(),
                                      ops.op.getResult().getType(), ops.out,
                                      /*restrict=*/true, /*writable=*/true)
                                      .getResult();
  rewriter.replaceOp(ops.op, result);
  return result;
}

void mlir::mha::detail::copyTileToWorkgroup(
    Emitter &e, Value thread, int64_t threads, Value tile, Value source,
    Value batchIndex, Value head, Value first, int64_t count, Value valid,
    Value sourceRows, int64_t width, bool transposed, int64_t tileRow) {
  int64_t total = count * width;
  int64_t steps = llvm::divideCeil(total, threads);
  Value lastRow = e.max(e.add(sourceRows, -1), e.index(0));
  Type element = cast<MemRefType>(tile.getType()).getElementType();
  auto loop =
      scf::ForOp::create(e.b, e.loc, e.index(0), e.index(steps), e.index(1));
  OpBuilder::InsertionGuard guard(e.b);
  e.b.setInsertionPoint(loop.getBody()->getTerminator());
  Value idx = e.add(thread, e.mul(loop.getInductionVar(), threads));
  if (total % threads) {
    auto inRange = scf::IfOp::create(
        e.b, e.loc, e.cmp(arith::CmpIPredicate::slt, idx, e.index(total)),
        /*withElseRegion=*/false);
    e.b.setInsertionPoint(inRange.thenBlock()->getTerminator());
  }
  Value row = transposed ? e.rem(idx, count) : e.div(idx, width);
  Value col = transposed ? e.div(idx, count) : e.rem(idx, width);
  Value sourceRow = e.add(first, row);
  Value at = e.min(sourceRow, lastRow);
  SmallVector<Value> indices = {batchIndex, head, at, col};
  if (transposed)
    std::swap(indices[2], indices[3]);
  Value value = memref::LoadOp::create(e.b, e.loc, source, indices);
  Value zero =
      arith::ConstantOp::create(e.b, e.loc, element, e.b.getZeroAttr(element));
  value =
      e.select(e.cmp(arith::CmpIPredicate::slt, sourceRow, valid), value, zero);
  memref::StoreOp::create(e.b, e.loc, value, tile,
                          ValueRange{e.add(row, tileRow), col});
}

void mlir::mha::detail::copyQueryTile(Emitter &e,
                                      const AttentionKernelOperands &ops,
                                      const AttentionWorkgroup &workgroup,
                                      Value thread, int64_t threads, Value tile,
                                      int64_t rows) {
  if (ops.headTile == 1) {
    copyTileToWorkgroup(e, thread, threads, tile, ops.q, workgroup.batchIndex,
                        workgroup.head, workgroup.firstRow, rows, ops.queries,
                        ops.queries, ops.dk, /*transposed=*/false);
    return;
  }
  int64_t queries = ops.op.getQuery().getType().getDimSize(2);
  for (int64_t p = 0; p < ops.headTile; ++p)
    copyTileToWorkgroup(e, thread, threads, tile, ops.q, workgroup.batchIndex,
                        e.add(workgroup.head, p), e.index(0), queries,
                        ops.queries, ops.queries, ops.dk,
                        /*transposed=*/false, p * queries);
  if (int64_t padding = rows - ops.headTile * queries)
    copyTileToWorkgroup(e, thread, threads, tile, ops.q, workgroup.batchIndex,
                        workgroup.head, e.index(0), padding, e.index(0),
                        ops.queries, ops.dk, /*transposed=*/false,
                        ops.headTile * queries);
}

Value mlir::mha::detail::toF32(Emitter &e, Value x) {
  return x.getType().isF32()
             ? x
             : arith::ExtFOp::create(e.b, e.loc, e.b.getF32Type(), x);
}
