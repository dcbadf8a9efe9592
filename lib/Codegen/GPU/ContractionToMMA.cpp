//===- ContractionToMMA.cpp - Projections as tensor-core GEMM kernels -----===//
//
// A linalg contraction of f16 (or bf16) operands accumulated in f32 from 0
// or from a bias, and rounded back by its one consumer (the projections of a
// decomposed layer:
// x[b, s, e] · W[e, h, d] -> [b, h, s, d], the head split in the output's
// layout, and attn[b, h, s, d] · Wo[h, d, n] -> [b, s, n]) as a GEMM kernel
// on tensor cores (mha-contraction-to-mma):
//
//   scf.forall (m tile, n tile) {               // 64 x 64, a workgroup each
//     scf.forall (thread) in (128) {            // 4 warps, 2 x 2, 32 x 32 each
//       scf.for k tile {                        // 32 deep, 2 stages
//         cp.async the next A and B tiles       // padded shared tiles
//         wait for this one, barrier
//         ldmatrix A (x4) and B (x4, .trans), 8 mma.sync per k16 step
//         barrier
//       }
//       add the bias, round, store              // the output's own layout
//     }
//   }
//
// The iteration dims are grouped as M (in the first operand and the output),
// N (in the second and the output) and K (the reductions); each group is
// flattened in the first operand's (M, K) or the second's (N) memory order,
// and an index is turned back into the dims' values to address each tensor
// through its indexing map, so the head split and merge cost nothing.
//
//===----------------------------------------------------------------------===//

#include "MMAFragments.h"

#include "mha/Codegen/Common/KernelConfig.h"
#include "mha/Codegen/GPU/Passes.h"
#include "mha/Codegen/GPU/Transforms.h"
#include "mha/Dialect/MHA/Transforms/Transforms.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::mha {
#define GEN_PASS_DEF_MHACONTRACTIONTOMMAPASS
#include "mha/Codegen/GPU/Passes.h.inc"
} // namespace mlir::mha

using namespace mlir;
using namespace mlir::mha;
using namespace mlir::mha::detail;

/// The workgroup tile and its k step; 4 warps of 32 x 32.
static constexpr int64_t kTileM = 64, kTileN = 64, kTileK = 32,
                         kThreads = 128;

namespace {

/// Turns the flat index `x` of `dims` (sizes `sizes`, the last fastest) into
/// each dim's value, written to `values[dim]`.
void unflatten(Emitter &e, Value x, ArrayRef<unsigned> dims,
               ArrayRef<Value> sizes, SmallVectorImpl<Value> &values) {
  for (int64_t i = dims.size() - 1; i >= 0; --i) {
    if (i == 0) {
      values[dims[i]] = x;
      break;
    }
    values[dims[i]] = arith::RemUIOp::create(e.b, e.loc, x, sizes[i]);
    x = arith::DivUIOp::create(e.b, e.loc, x, sizes[i]);
  }
}

/// The indices of the tensor read or written through `map` from the loop
/// dims' values.
SmallVector<Value> indicesOf(AffineMap map, ArrayRef<Value> values) {
  SmallVector<Value> indices;
  for (AffineExpr result : map.getResults())
    indices.push_back(values[cast<AffineDimExpr>(result).getPosition()]);
  return indices;
}

} // namespace

FailureOr<Value> mha::lowerContractionToMMA(RewriterBase &rewriter,
                                            linalg::GenericOp op) {
  std::string why = mmaContractionUnsupported(op, getTarget(op));
  if (!why.empty()) {
    op.emitOpError() << "cannot run as the tensor-core GEMM kernel: " << why;
    return failure();
  }
  std::string unused;
  MMAContraction gemm = *matchMMAContraction(op, unused);
  auto rounding = cast<linalg::GenericOp>(gemm.rounding);
  Location loc = op.getLoc();
  MLIRContext *ctx = rewriter.getContext();
  rewriter.setInsertionPoint(rounding);
  Emitter e{rewriter, loc};
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  Value aTensor = op.getDpsInputs()[0], bTensor = op.getDpsInputs()[1];
  auto outType = cast<RankedTensorType>(rounding.getResult(0).getType());
  Type element = outType.getElementType();

  // Loop ranges (upstream's, from the operands' dims).
  SmallVector<int64_t> staticRanges = op.getStaticLoopRanges();
  SmallVector<Value> ranges;
  auto linalgOp = cast<linalg::LinalgOp>(op.getOperation());
  for (Range range : linalgOp.createLoopRanges(rewriter, loc))
    ranges.push_back(
        getValueOrCreateConstantIndexOp(rewriter, loc, range.size));
  auto sizesOf = [&](ArrayRef<unsigned> dims) {
    SmallVector<Value> sizes;
    for (unsigned d : dims)
      sizes.push_back(ranges[d]);
    return sizes;
  };
  auto product = [&](ArrayRef<unsigned> dims) {
    Value p = e.index(1);
    for (unsigned d : dims)
      p = arith::MulIOp::create(rewriter, loc, p, ranges[d]);
    return p;
  };
  Value sizeM = product(gemm.m);
  int64_t sizeN = 1, sizeK = 1;
  for (unsigned d : gemm.n)
    sizeN *= staticRanges[d];
  for (unsigned d : gemm.k)
    sizeK *= staticRanges[d];

  Value a = readBuffer(e, aTensor), b = readBuffer(e, bTensor);
  Value bias = gemm.bias ? readBuffer(e, gemm.bias) : Value();
  SmallVector<Value> outSizes;
  for (int64_t d = 0; d < outType.getRank(); ++d)
    if (outType.isDynamicDim(d))
      outSizes.push_back(tensor::DimOp::create(
          rewriter, loc, rounding.getDpsInits()[0], d));
  Value out = memref::AllocOp::create(
      rewriter, loc, MemRefType::get(outType.getShape(), element), outSizes);

  auto workgroups = scf::ForallOp::create(
      rewriter, loc,
      ArrayRef<OpFoldResult>{rewriter.getIndexAttr(0),
                             rewriter.getIndexAttr(0)},
      ArrayRef<OpFoldResult>{sizeM, rewriter.getIndexAttr(sizeN)},
      ArrayRef<OpFoldResult>{rewriter.getIndexAttr(kTileM),
                             rewriter.getIndexAttr(kTileN)},
      // Mapped to workgroups: kept as a loop when it has one iteration.
      ValueRange(), workgroupMapping(ctx, 2));
  rewriter.setInsertionPointToStart(workgroups.getBody());
  Value firstM = workgroups.getInductionVar(0),
        firstN = workgroups.getInductionVar(1);
  // Two stages of padded A [64 x 32] and B [32 x 64] tiles.
  auto workgroupSpace =
      gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  Value aTiles = memref::AllocOp::create(
      rewriter, loc,
      MemRefType::get({2, kTileM, kTileK + kMMATileRowPadding}, element,
                      MemRefLayoutAttrInterface(), workgroupSpace));
  Value bTiles = memref::AllocOp::create(
      rewriter, loc,
      MemRefType::get({2, kTileK, kTileN + kMMATileRowPadding}, element,
                      MemRefLayoutAttrInterface(), workgroupSpace));
  Value thread = buildThreadLoop(rewriter, loc, kThreads);
  Value warp = e.div(thread, 32), lane = e.rem(thread, 32);
  Value warpM = e.mul(e.div(warp, 2), 32), warpN = e.mul(e.rem(warp, 2), 32);
  Value g = e.div(lane, 4), t2 = e.mul(e.rem(lane, 4), 2);
  Value matrix = e.div(lane, 8), matrixRow = e.rem(lane, 8);
  auto tokenType = nvgpu::DeviceAsyncTokenType::get(ctx);

  // Starts the copies of k tile `firstK` into stage `stage`: A rows are m,
  // B rows k; 16 bytes per thread and step; chunks past the end
  // zero-filled.
  SmallVector<Value> mSizes = sizesOf(gemm.m), nSizes = sizesOf(gemm.n),
                     kSizes = sizesOf(gemm.k);
  // One tensor's tile: rows of the `rowDims` group from `firstRow` (of
  // `rowCount`), 16-byte chunks of columns of the `colDims` group from
  // `firstCol` (of `colCount`, static, a multiple of 8).
  struct Group {
    ArrayRef<unsigned> dims;
    ArrayRef<Value> sizes;
    Value first, count;
  };
  auto copyTile = [&](Value tile, Value source, AffineMap map, Value stage,
                      int64_t rows, int64_t cols, Group row, Group col,
                      SmallVectorImpl<Value> &tokens) {
    for (int64_t step = 0; step < rows * cols / 8 / kThreads; ++step) {
      Value chunk = e.add(thread, step * kThreads);
      Value r = e.div(chunk, cols / 8), c = e.mul(e.rem(chunk, cols / 8), 8);
      Value x = e.add(row.first, r), y = e.add(col.first, c);
      Value inRange = arith::AndIOp::create(
          rewriter, loc, e.cmp(arith::CmpIPredicate::slt, x, row.count),
          e.cmp(arith::CmpIPredicate::slt, y, col.count));
      SmallVector<Value> values(op.getNumLoops());
      unflatten(e, e.min(x, e.max(e.add(row.count, -1), e.index(0))),
                row.dims, row.sizes, values);
      unflatten(e, e.min(y, e.add(col.count, -8)), col.dims, col.sizes,
                values);
      tokens.push_back(nvgpu::DeviceAsyncCopyOp::create(
          rewriter, loc, tokenType, tile, ValueRange{stage, r, c}, source,
          indicesOf(map, values), rewriter.getIndexAttr(8),
          e.select(inRange, e.index(8), e.index(0)), rewriter.getUnitAttr()));
    }
  };
  auto startCopies = [&](Value firstK, Value stage) {
    SmallVector<Value> tokens;
    copyTile(aTiles, a, maps[0], stage, kTileM, kTileK,
             {gemm.m, mSizes, firstM, sizeM},
             {gemm.k, kSizes, firstK, e.index(sizeK)}, tokens);
    copyTile(bTiles, b, maps[1], stage, kTileK, kTileN,
             {gemm.k, kSizes, firstK, e.index(sizeK)},
             {gemm.n, nSizes, firstN, e.index(sizeN)}, tokens);
    return nvgpu::DeviceAsyncCreateGroupOp::create(rewriter, loc, tokenType,
                                                   tokens)
        .getResult();
  };

  auto cType = VectorType::get({2, 2}, rewriter.getF32Type());
  Value first = startCopies(e.index(0), e.index(0));
  SmallVector<Value> inits(8, e.zeros(cType));
  inits.push_back(first);
  auto kLoop = scf::ForOp::create(rewriter, loc, e.index(0), e.index(sizeK),
                                  e.index(kTileK), inits);
  {
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(kLoop.getBody());
    Value k0 = kLoop.getInductionVar();
    SmallVector<Value> acc(kLoop.getRegionIterArgs().drop_back());
    Value stage = e.rem(e.div(k0, kTileK), 2);
    // The next tile into the other stage (past the end: zeros, unread),
    // then this one in place.
    Value next = startCopies(e.add(k0, kTileK), e.rem(e.add(stage, 1), 2));
    waitForCopies(e, next, /*pending=*/1);
    gpu::BarrierOp::create(rewriter, loc);
    for (int64_t kk = 0; kk < kTileK / 16; ++kk) {
      Value aFrags[2];
      for (int64_t mi = 0; mi < 2; ++mi)
        aFrags[mi] = loadMatricesAsA(
            e, aTiles, stage,
            e.add(e.add(e.add(matrixRow, e.mul(e.rem(matrix, 2), 8)), warpM),
                  16 * mi),
            e.add(e.mul(e.div(matrix, 2), 8), 16 * kk));
      for (int64_t np = 0; np < 2; ++np) {
        SmallVector<Value> bFrags = loadMatrices(
            e, bTiles, stage,
            e.add(e.add(matrixRow, e.mul(e.rem(matrix, 2), 8)), 16 * kk),
            e.add(e.mul(e.add(e.div(matrix, 2), 2 * np), 8), warpN),
            /*transpose=*/true, 4);
        for (int64_t mi = 0; mi < 2; ++mi)
          for (int64_t j = 0; j < 2; ++j)
            acc[mi * 4 + 2 * np + j] =
                mmaSync(e, aFrags[mi], bFrags[j], acc[mi * 4 + 2 * np + j]);
      }
    }
    // Every warp done with this stage before the next iteration refills it.
    gpu::BarrierOp::create(rewriter, loc);
    SmallVector<Value> yielded(acc);
    yielded.push_back(next);
    scf::YieldOp::create(rewriter, loc, yielded);
  }
  waitForCopies(e, kLoop.getResults().back());

  // The bias of the thread's columns n and n + 1 of each output tile (n + 1
  // differs from n in the last output dim only, whose size is even), read
  // once for its rows; columns past the last clamped to it (not stored).
  SmallVector<Value> biasPairs;
  if (bias)
    for (int64_t ni = 0; ni < 4; ++ni) {
      Value n = e.min(e.add(e.add(e.add(firstN, warpN), t2), 8 * ni),
                      e.index(sizeN - 2));
      SmallVector<Value> values(op.getNumLoops(), e.index(0));
      unflatten(e, n, gemm.n, nSizes, values);
      Value pair = e.zeros(VectorType::get({2}, rewriter.getF32Type()));
      for (int64_t j = 0; j < 2; ++j) {
        SmallVector<Value> column = indicesOf(gemm.biasMap, values);
        for (auto [i, result] : llvm::enumerate(gemm.biasMap.getResults()))
          if (cast<AffineDimExpr>(result).getPosition() == gemm.n.back())
            column[i] = e.add(column[i], j);
        Value element = memref::LoadOp::create(rewriter, loc, bias, column);
        pair = e.insert(arith::ExtFOp::create(rewriter, loc,
                                              rewriter.getF32Type(), element),
                        pair, {j});
      }
      biasPairs.push_back(pair);
    }

  // Rounded pairs (with the bias, in f32) into the output, through its
  // indexing map.
  AffineMap outMap = maps[2];
  for (int64_t mi = 0; mi < 2; ++mi)
    for (int64_t ni = 0; ni < 4; ++ni)
      for (int64_t r = 0; r < 2; ++r) {
        Value m = e.add(e.add(e.add(firstM, warpM), g), 16 * mi + 8 * r);
        Value n = e.add(e.add(e.add(firstN, warpN), t2), 8 * ni);
        Value inRange = arith::AndIOp::create(
            rewriter, loc, e.cmp(arith::CmpIPredicate::slt, m, sizeM),
            e.cmp(arith::CmpIPredicate::slt, n, e.index(sizeN)));
        auto ifStore = scf::IfOp::create(rewriter, loc, TypeRange(), inRange,
                                         /*withElseRegion=*/false);
        OpBuilder::InsertionGuard guard(rewriter);
        rewriter.setInsertionPointToStart(ifStore.thenBlock());
        SmallVector<Value> values(op.getNumLoops());
        unflatten(e, m, gemm.m, mSizes, values);
        unflatten(e, n, gemm.n, nSizes, values);
        Value sums = e.extract(kLoop.getResult(mi * 4 + ni), {r});
        if (bias)
          sums = e.fadd(sums, biasPairs[ni]);
        Value pair = arith::TruncFOp::create(
            rewriter, loc, VectorType::get({2}, element), sums);
        vector::StoreOp::create(rewriter, loc, pair, out,
                                indicesOf(outMap, values),
                                /*nontemporal=*/false, llvm::Align(4));
      }

  rewriter.setInsertionPointAfter(workgroups);
  Value result = bufferization::ToTensorOp::create(
      rewriter, loc, outType, out, /*restrict=*/true, /*writable=*/true);
  rewriter.replaceOp(rounding, result);
  rewriter.eraseOp(op);
  return result;
}

LogicalResult mha::lowerContractionsToMMA(RewriterBase &rewriter,
                                          Operation *root) {
  SmallVector<linalg::LinalgOp> ops;
  root->walk([&](linalg::LinalgOp op) {
    auto config =
        op->getAttrOfType<LoweringConfigAttr>(kLoweringConfigAttrName);
    if (config && !config.getMma().empty())
      ops.push_back(op);
  });
  for (linalg::LinalgOp op : ops) {
    auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
    if (!generic)
      return op->emitOpError()
             << "cannot run as the tensor-core GEMM kernel: it computes "
                "linalg.generic contractions only";
    if (failed(lowerContractionToMMA(rewriter, generic)))
      return failure();
  }
  return success();
}

namespace {

struct MHAContractionToMMAPass final
    : mha::impl::MHAContractionToMMAPassBase<MHAContractionToMMAPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    if (failed(lowerContractionsToMMA(rewriter, getOperation())))
      signalPassFailure();
  }
};

} // namespace
