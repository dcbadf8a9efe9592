//===- ContractionToMMA.cpp - Projections as tensor-core GEMM kernels -----===//
//
// A linalg contraction of f16 (or bf16) operands accumulated in f32 from 0
// or from a bias, and rounded back by its one consumer (the projections of a
// decomposed layer:
// x[b, s, e] · W[e, h, d] -> [b, h, s, d], the head split in the output's
// layout, and attn[b, h, s, d] · Wo[h, d, n] -> [b, s, n]) as a GEMM kernel
// on tensor cores (mha-contraction-to-mma):
//
//   scf.forall (m tile, n tile) {          // workgroup_tile, a workgroup each
//     scf.forall (thread) in (32 * warps) {  // 2 rows of warps (1 for one)
//       cp.async the first stages - 1 k steps        // padded shared tiles
//       scf.for k step {                             // 32 deep
//         wait for this step's tiles, barrier
//         cp.async the step stages - 1 ahead into the stage freed last step
//         ldmatrix A (x4) and B (x4, .trans), mma.sync per k16 step
//       }
//       add the bias, round, store                   // the output's layout
//     }
//   }
//
// The tiles, warps and stages are the op's lowering configuration
// (getMMAGemmConfig: workgroup_tile, warps, pipeline_stages). One barrier a
// k step: after it, every warp is done with the stage the step before read,
// which is the one refilled.
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

/// `values` with the entries that `other` sets (non-null) taken from it.
SmallVector<Value> overlay(ArrayRef<Value> values, ArrayRef<Value> other) {
  SmallVector<Value> merged(values);
  for (auto [i, value] : llvm::enumerate(other))
    if (value)
      merged[i] = value;
  return merged;
}

/// A group of iteration dims flattened into one index: the dims, their
/// sizes, and its size.
struct Group {
  ArrayRef<unsigned> dims;
  ArrayRef<Value> sizes;
  Value count;
};

/// One 16-byte chunk a thread copies into each stage of an operand's tile:
/// its row and column in the tile, and what of its source indices does not
/// change along K (the values of the M or N dims, whether they are in
/// range).
struct Chunk {
  Value row, col;
  SmallVector<Value> fixed;
  Value fixedInRange;
};

} // namespace

FailureOr<Value> mha::lowerContractionToMMA(RewriterBase &rewriter,
                                            linalg::GenericOp op) {
  TargetAttr target = getTarget(op);
  std::string why = mmaContractionUnsupported(op, target);
  if (!why.empty()) {
    op.emitOpError() << "cannot run as the tensor-core GEMM kernel: " << why;
    return failure();
  }
  FailureOr<MMAGemmConfig> config = getMMAGemmConfig(op, target);
  if (failed(config))
    return failure();
  const int64_t tileM = config->tileM, tileN = config->tileN,
                stages = config->stages, threads = 32 * config->warps,
                warpTileM = config->warpTileM(),
                warpTileN = config->warpTileN();
  // A warp's fragments: m16 rows by n8 columns of accumulators.
  const int64_t fragRows = warpTileM / 16, fragCols = warpTileN / 8;
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
  int64_t numLoops = op.getNumLoops();

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
      ArrayRef<OpFoldResult>{rewriter.getIndexAttr(tileM),
                             rewriter.getIndexAttr(tileN)},
      // Mapped to workgroups: kept as a loop when it has one iteration.
      ValueRange(), workgroupMapping(ctx, 2));
  workgroups->setAttr(kKernelNameAttrName, rewriter.getStringAttr("gemm"));
  rewriter.setInsertionPointToStart(workgroups.getBody());
  Value firstM = workgroups.getInductionVar(0),
        firstN = workgroups.getInductionVar(1);
  // `stages` padded A [tileM x 32] and B [32 x tileN] tiles.
  auto workgroupSpace =
      gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  Value aTiles = memref::AllocOp::create(
      rewriter, loc,
      MemRefType::get({stages, tileM, kMMAGemmTileK + kMMATileRowPadding},
                      element, MemRefLayoutAttrInterface(), workgroupSpace));
  Value bTiles = memref::AllocOp::create(
      rewriter, loc,
      MemRefType::get({stages, kMMAGemmTileK, tileN + kMMATileRowPadding},
                      element, MemRefLayoutAttrInterface(), workgroupSpace));
  Value thread = buildThreadLoop(rewriter, loc, threads);
  Value warp = e.div(thread, 32), lane = e.rem(thread, 32);
  Value warpM = e.mul(e.div(warp, config->warpCols()), warpTileM),
        warpN = e.mul(e.rem(warp, config->warpCols()), warpTileN);
  Value g = e.div(lane, 4), t2 = e.mul(e.rem(lane, 4), 2);
  Value matrix = e.div(lane, 8), matrixRow = e.rem(lane, 8);
  auto tokenType = nvgpu::DeviceAsyncTokenType::get(ctx);

  SmallVector<Value> mSizes = sizesOf(gemm.m), nSizes = sizesOf(gemm.n),
                     kSizes = sizesOf(gemm.k);
  Group mGroup{gemm.m, mSizes, sizeM}, nGroup{gemm.n, nSizes, e.index(sizeN)},
      kGroup{gemm.k, kSizes, e.index(sizeK)};
  // The chunks of a thread in a `rows` x `cols` tile, their M or N part
  // (`fixed`: the rows of A, the columns of B) resolved once, before the k
  // loop: its index from `first` clamped into the group (past the end the
  // chunk is zero-filled, its source address still in bounds), `last` the
  // greatest in-range index.
  auto planChunks = [&](int64_t rows, int64_t cols, bool fixedIsRow,
                        Group fixed, Value first, Value last) {
    SmallVector<Chunk> chunks;
    for (int64_t step = 0; step < rows * cols / 8 / threads; ++step) {
      Value chunk = e.add(thread, step * threads);
      Chunk c{e.div(chunk, cols / 8), e.mul(e.rem(chunk, cols / 8), 8), {}, {}};
      Value x = e.add(first, fixedIsRow ? c.row : c.col);
      c.fixedInRange = e.cmp(arith::CmpIPredicate::slt, x, fixed.count);
      c.fixed.assign(numLoops, Value());
      unflatten(e, e.min(x, e.max(last, e.index(0))), fixed.dims, fixed.sizes,
                c.fixed);
      chunks.push_back(std::move(c));
    }
    return chunks;
  };
  SmallVector<Chunk> aChunks =
      planChunks(tileM, kMMAGemmTileK, /*fixedIsRow=*/true, mGroup, firstM,
                 e.add(sizeM, -1));
  SmallVector<Chunk> bChunks =
      planChunks(kMMAGemmTileK, tileN, /*fixedIsRow=*/false, nGroup, firstN,
                 e.index(sizeN - 8));
  // Starts the copies of the k step from `firstK` into `stage` as one
  // cp.async group: the K part of each chunk's source (A: its column, B:
  // its row), past the end zero-filled.
  auto copyChunks = [&](Value tile, Value source, AffineMap map, Value stage,
                        ArrayRef<Chunk> chunks, bool kIsRow, Value firstK,
                        SmallVectorImpl<Value> &tokens) {
    for (const Chunk &c : chunks) {
      Value x = e.add(firstK, kIsRow ? c.row : c.col);
      Value inRange = arith::AndIOp::create(
          rewriter, loc, c.fixedInRange,
          e.cmp(arith::CmpIPredicate::slt, x, kGroup.count));
      SmallVector<Value> values(c.fixed);
      unflatten(e, e.min(x, e.index(kIsRow ? sizeK - 1 : sizeK - 8)),
                kGroup.dims, kGroup.sizes, values);
      tokens.push_back(nvgpu::DeviceAsyncCopyOp::create(
          rewriter, loc, tokenType, tile, ValueRange{stage, c.row, c.col},
          source, indicesOf(map, values), rewriter.getIndexAttr(8),
          e.select(inRange, e.index(8), e.index(0)), rewriter.getUnitAttr()));
    }
  };
  auto startCopies = [&](Value firstK, Value stage) {
    SmallVector<Value> tokens;
    copyChunks(aTiles, a, maps[0], stage, aChunks, /*kIsRow=*/false, firstK,
               tokens);
    copyChunks(bTiles, b, maps[1], stage, bChunks, /*kIsRow=*/true, firstK,
               tokens);
    return nvgpu::DeviceAsyncCreateGroupOp::create(rewriter, loc, tokenType,
                                                   tokens)
        .getResult();
  };

  // The first stages - 1 k steps on their way before the loop.
  Value newest;
  for (int64_t s = 0; s + 1 < stages; ++s)
    newest = startCopies(e.index(s * kMMAGemmTileK), e.index(s));
  auto cType = VectorType::get({2, 2}, rewriter.getF32Type());
  SmallVector<Value> inits(fragRows * fragCols, e.zeros(cType));
  inits.push_back(newest);
  auto kLoop = scf::ForOp::create(rewriter, loc, e.index(0), e.index(sizeK),
                                  e.index(kMMAGemmTileK), inits);
  {
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(kLoop.getBody());
    Value k0 = kLoop.getInductionVar();
    SmallVector<Value> acc(kLoop.getRegionIterArgs().drop_back());
    Value step = e.div(k0, kMMAGemmTileK);
    Value stage = e.rem(step, stages);
    // This step's tiles in place (the stages - 2 newer groups may still
    // run); the barrier also tells that every warp is done with the stage
    // the previous step read, which the copies of step + stages - 1 refill
    // (past the end: zeros, unread) while this one is multiplied.
    waitForCopies(e, kLoop.getRegionIterArgs().back(),
                  /*pending=*/stages - 2);
    gpu::BarrierOp::create(rewriter, loc);
    Value next = startCopies(e.add(k0, (stages - 1) * kMMAGemmTileK),
                             e.rem(e.add(step, stages - 1), stages));
    for (int64_t kk = 0; kk < kMMAGemmTileK / 16; ++kk) {
      SmallVector<Value> aFrags;
      for (int64_t mi = 0; mi < fragRows; ++mi)
        aFrags.push_back(loadMatricesAsA(
            e, aTiles, stage,
            e.add(e.add(e.add(matrixRow, e.mul(e.rem(matrix, 2), 8)), warpM),
                  16 * mi),
            e.add(e.mul(e.div(matrix, 2), 8), 16 * kk)));
      for (int64_t np = 0; np < fragCols / 2; ++np) {
        SmallVector<Value> bFrags = loadMatrices(
            e, bTiles, stage,
            e.add(e.add(matrixRow, e.mul(e.rem(matrix, 2), 8)), 16 * kk),
            e.add(e.mul(e.add(e.div(matrix, 2), 2 * np), 8), warpN),
            /*transpose=*/true, 4);
        for (int64_t mi = 0; mi < fragRows; ++mi)
          for (int64_t j = 0; j < 2; ++j) {
            Value &c = acc[mi * fragCols + 2 * np + j];
            c = mmaSync(e, aFrags[mi], bFrags[j], c);
          }
      }
    }
    SmallVector<Value> yielded(acc);
    yielded.push_back(next);
    scf::YieldOp::create(rewriter, loc, yielded);
  }
  waitForCopies(e, kLoop.getResults().back());

  // The thread's output rows (two per fragment row) and column pairs (one
  // per fragment column), resolved into the dims' values once.
  SmallVector<SmallVector<Value>> rowValues, colValues;
  SmallVector<Value> rowInRange, colInRange;
  for (int64_t mi = 0; mi < fragRows; ++mi)
    for (int64_t r = 0; r < 2; ++r) {
      Value m = e.add(e.add(e.add(firstM, warpM), g), 16 * mi + 8 * r);
      rowInRange.push_back(e.cmp(arith::CmpIPredicate::slt, m, sizeM));
      rowValues.emplace_back(numLoops, Value());
      unflatten(e, m, gemm.m, mSizes, rowValues.back());
    }
  for (int64_t ni = 0; ni < fragCols; ++ni) {
    Value n = e.add(e.add(e.add(firstN, warpN), t2), 8 * ni);
    colInRange.push_back(e.cmp(arith::CmpIPredicate::slt, n, e.index(sizeN)));
    colValues.emplace_back(numLoops, Value());
    unflatten(e, n, gemm.n, nSizes, colValues.back());
  }

  // The bias of the thread's columns n and n + 1 of each fragment column
  // (n + 1 differs from n in the last output dim only, whose size is even),
  // read once for its rows; columns past the last clamped to it (not
  // stored).
  SmallVector<Value> biasPairs;
  if (bias)
    for (int64_t ni = 0; ni < fragCols; ++ni) {
      Value n = e.min(e.add(e.add(e.add(firstN, warpN), t2), 8 * ni),
                      e.index(sizeN - 2));
      SmallVector<Value> values(numLoops, e.index(0));
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
  for (int64_t mi = 0; mi < fragRows; ++mi)
    for (int64_t ni = 0; ni < fragCols; ++ni)
      for (int64_t r = 0; r < 2; ++r) {
        int64_t row = 2 * mi + r;
        Value inRange = arith::AndIOp::create(rewriter, loc, rowInRange[row],
                                              colInRange[ni]);
        auto ifStore = scf::IfOp::create(rewriter, loc, TypeRange(), inRange,
                                         /*withElseRegion=*/false);
        OpBuilder::InsertionGuard guard(rewriter);
        rewriter.setInsertionPointToStart(ifStore.thenBlock());
        Value sums = e.extract(kLoop.getResult(mi * fragCols + ni), {r});
        if (bias)
          sums = e.fadd(sums, biasPairs[ni]);
        Value pair = arith::TruncFOp::create(
            rewriter, loc, VectorType::get({2}, element), sums);
        vector::StoreOp::create(
            rewriter, loc, pair, out,
            indicesOf(outMap, overlay(rowValues[row], colValues[ni])),
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
