//===- Vectorize.cpp - register tiles of vector code ------------*- C++ -*-===//
//
// Every linalg op on tensors -> a loop nest of register-sized tiles, each
// vectorized by upstream's linalg vectorizer:
//
//   contractions   [rows x cols] output tiles, reductions one step at a time
//                  innermost: the vectorized step is an outer product, which
//                  upstream's contraction lowering turns into `cols`-wide
//                  FMAs with the tile's accumulator hoisted out of the
//                  reduction loop (held in registers across it);
//   transposes     [16 x 16] blocks (vector.transpose, shuffles);
//   anything else  rows of up to `chunk` elements along the innermost loop
//                  (elementwise ops, row reductions, fills).
//
// Static sizes get tiles that divide them (see setTile),
// so every tile is full and vectorizes without masks. Tiles of dynamic size
// (a partial query or key tile of an odd or dynamic length) stay linalg ops,
// lowered to scalar loops: upstream's masked vectorization does not survive
// the outer-product lowering and the unit-dim patterns here (MLIR 22), and
// peeling each register loop (scf::peelForLoopAndSimplifyBounds) cost
// seconds of compile time per layer in its Presburger simplification.
//
//===----------------------------------------------------------------------===//

#include "mha/Dialect/MHA/Transforms/Passes.h"
#include "mha/Dialect/MHA/Transforms/Transforms.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"

namespace mlir::mha {
#define GEN_PASS_DEF_MHAVECTORIZEPASS
#include "mha/Dialect/MHA/Transforms/Passes.h.inc"
} // namespace mlir::mha

using namespace mlir;
using namespace mlir::mha;

namespace {

/// How one linalg op is cut into register tiles.
struct RegisterTiling {
  /// Per loop: the tile size (0: the loop stays whole).
  SmallVector<int64_t> tileSizes;
  /// The order of the tile loops (reductions innermost).
  SmallVector<int64_t> interchange;
};

} // namespace

/// The loop of the `fromEnd`-th last result of `map`, if it is a plain loop.
static std::optional<unsigned> loopOfResult(AffineMap map, unsigned fromEnd) {
  if (map.getNumResults() <= fromEnd)
    return std::nullopt;
  auto dim = dyn_cast<AffineDimExpr>(
      map.getResult(map.getNumResults() - 1 - fromEnd));
  if (!dim)
    return std::nullopt;
  return dim.getPosition();
}

/// Tiles `loop` by `size`, or by a smaller size that divides a static range
/// (so that every tile is full and has static shapes): the largest divisor
/// of the range up to `size` for rows, the largest of size/2, size/4, ...
/// for columns (`halve`: whole vectors). A loop no larger than the tile
/// stays whole.
static void setTile(RegisterTiling &tiling, ArrayRef<int64_t> ranges,
                    unsigned loop, int64_t size, bool halve) {
  int64_t range = ranges[loop];
  if (ShapedType::isDynamic(range)) {
    tiling.tileSizes[loop] = size;
    return;
  }
  if (range <= size) {
    tiling.tileSizes[loop] = 0;
    return;
  }
  while (size > 1 && range % size != 0)
    size = halve ? size / 2 : size - 1;
  tiling.tileSizes[loop] = size;
}

static RegisterTiling chooseRegisterTiling(linalg::LinalgOp op,
                                           const VectorizeOptions &options) {
  unsigned numLoops = op.getNumLoops();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  RegisterTiling tiling;
  // Unit loops stay; every other loop is one step at a time unless chosen.
  for (int64_t range : ranges)
    tiling.tileSizes.push_back(range == 1 ? 0 : 1);
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  for (unsigned i = 0; i < numLoops; ++i)
    if (iterators[i] == utils::IteratorType::parallel)
      tiling.interchange.push_back(i);
  for (unsigned i = 0; i < numLoops; ++i)
    if (iterators[i] != utils::IteratorType::parallel)
      tiling.interchange.push_back(i);

  AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  std::optional<unsigned> col = loopOfResult(outMap, 0);
  std::optional<unsigned> row = loopOfResult(outMap, 1);
  if (isa<linalg::TransposeOp>(op) && col && row) {
    setTile(tiling, ranges, *row, 16, /*halve=*/true);
    setTile(tiling, ranges, *col, 16, /*halve=*/true);
  } else if (linalg::isaContractionOpInterface(op) && col && row &&
             iterators[*col] == utils::IteratorType::parallel &&
             iterators[*row] == utils::IteratorType::parallel) {
    setTile(tiling, ranges, *row, options.registerTileRows, /*halve=*/false);
    setTile(tiling, ranges, *col, options.registerTileCols, /*halve=*/true);
  } else {
    setTile(tiling, ranges, numLoops - 1, options.chunk, /*halve=*/true);
  }
  return tiling;
}

/// A contraction tile without its unit loops but its last reduction (one step
/// of it): upstream's lowering of vector.contract to outer products takes a
/// [rows, 1] x [1, cols] contraction, and the unit reductions of a tile
/// (e.g. the head of the output projection) would otherwise send it to the
/// scalar dot-product lowering. Returns `op` when there is nothing to drop.
static linalg::LinalgOp dropUnitLoopsOfContraction(RewriterBase &rewriter,
                                                   linalg::LinalgOp op) {
  auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
  if (!generic)
    return op;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  auto lastReduction = llvm::find_if(llvm::reverse(iterators), [](auto it) {
    return it == utils::IteratorType::reduction;
  });
  unsigned kept = iterators.size() - 1 -
                  std::distance(iterators.rbegin(), lastReduction);
  linalg::ControlDropUnitDims control;
  control.rankReductionStrategy =
      linalg::ControlDropUnitDims::RankReductionStrategy::ExtractInsertSlice;
  control.controlFn = [kept](Operation *target) {
    unsigned numLoops = cast<linalg::LinalgOp>(target).getNumLoops();
    SmallVector<unsigned> dims;
    for (unsigned i = 0; i < numLoops; ++i)
      if (i != kept)
        dims.push_back(i);
    return dims;
  };
  rewriter.setInsertionPoint(generic);
  FailureOr<linalg::DropUnitDimsResult> dropped =
      linalg::dropUnitDims(rewriter, generic, control);
  if (failed(dropped))
    return op;
  rewriter.replaceOp(generic, dropped->replacements);
  return cast<linalg::LinalgOp>(dropped->resultOp.getOperation());
}

/// Booleans are bytes in memory, but LLVM packs vectors of i1 as bits: a
/// vector load of an i1 memref would read the wrong bytes. Ops that read
/// i1 tensors (boolean masks) are left to the scalar lowering.
static bool readsBooleans(linalg::LinalgOp op) {
  return llvm::any_of(op->getOperandTypes(), [](Type type) {
    auto shaped = dyn_cast<ShapedType>(type);
    return shaped && shaped.getElementType().isInteger(1);
  });
}

LogicalResult mha::vectorizeLinalgOps(RewriterBase &rewriter, Operation *root,
                                      const VectorizeOptions &options) {
  if (options.registerTileRows <= 0 || options.registerTileCols <= 0 ||
      options.chunk <= 0)
    return root->emitError()
           << "register tile sizes must be positive, found "
           << options.registerTileRows << "x" << options.registerTileCols
           << " (chunk " << options.chunk << ")";

  SmallVector<linalg::LinalgOp> ops;
  root->walk([&](linalg::LinalgOp op) {
    if (op.hasPureTensorSemantics() && op.getNumDpsInits() == 1 &&
        op.getNumLoops() > 0 && !readsBooleans(op) &&
        !llvm::is_contained(op.getStaticLoopRanges(), 0)) // Nothing to do.
      ops.push_back(op);
  });

  // 1. Register tiles (upstream tiling through the TilingInterface), each
  //    vectorized right away while its tiling is known.
  for (linalg::LinalgOp op : ops) {
    RegisterTiling tiling = chooseRegisterTiling(op, options);
    linalg::LinalgOp tiledOp = op;
    if (llvm::any_of(tiling.tileSizes, [](int64_t s) { return s != 0; })) {
      scf::SCFTilingOptions tilingOptions;
      tilingOptions.setTileSizes(
          getAsIndexOpFoldResult(rewriter.getContext(), tiling.tileSizes));
      tilingOptions.setInterchange(tiling.interchange);
      rewriter.setInsertionPoint(op);
      FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
          rewriter, cast<TilingInterface>(op.getOperation()), tilingOptions);
      if (failed(tiled))
        return op->emitError("could not tile into register tiles");
      rewriter.replaceOp(op, tiled->replacements);
      tiledOp = cast<linalg::LinalgOp>(tiled->tiledOps.front());
    }
    // Only full tiles (static shapes) vectorize; see the file comment.
    if (tiledOp.hasDynamicShape())
      continue;
    if (linalg::isaContractionOpInterface(tiledOp))
      tiledOp = dropUnitLoopsOfContraction(rewriter, tiledOp);
    if (failed(linalg::vectorizeOpPrecondition(tiledOp)))
      continue; // Stays a linalg op: scalar loops later, still correct.
    rewriter.setInsertionPoint(tiledOp);
    FailureOr<linalg::VectorizationResult> vectorized =
        linalg::vectorize(rewriter, tiledOp);
    if (succeeded(vectorized))
      rewriter.replaceOp(tiledOp, vectorized->replacements);
  }

  // 2. Broadcasts folded into the contractions (reduction_to_contract), unit
  //    dims dropped, contractions lowered to outer products of FMAs.
  MLIRContext *ctx = root->getContext();
  auto apply = [&](function_ref<void(RewritePatternSet &)> populate) {
    RewritePatternSet patterns(ctx);
    populate(patterns);
    return applyPatternsGreedily(root, std::move(patterns));
  };
  if (failed(apply([](RewritePatternSet &p) {
        vector::populateVectorTransferPermutationMapLoweringPatterns(p);
      })) ||
      failed(apply([](RewritePatternSet &p) {
        vector::populateVectorReductionToContractPatterns(p);
      })) ||
      failed(apply([&](RewritePatternSet &p) {
        vector::populateCastAwayVectorLeadingOneDimPatterns(p);
        vector::populateVectorTransferDropUnitDimsPatterns(p);
        vector::TransferReadOp::getCanonicalizationPatterns(p, ctx);
        vector::TransferWriteOp::getCanonicalizationPatterns(p, ctx);
        vector::ContractionOp::getCanonicalizationPatterns(p, ctx);
        tensor::populateFoldTensorEmptyPatterns(p);
      })))
    return root->emitError("vector canonicalization did not converge");

  // 3. Accumulators out of the reduction loops: each loop-invariant
  //    extract/insert pair and transfer_read/write pair on a loop-carried
  //    tensor is hoisted, innermost loops first, so the k loop carries the
  //    accumulator as a vector value.
  SmallVector<scf::ForOp> loops;
  root->walk([&](scf::ForOp loop) { loops.push_back(loop); });
  for (scf::ForOp loop : loops)
    (void)hoistLoopInvariantSubsets(rewriter,
                                    cast<LoopLikeOpInterface>(*loop));
  return success();
}

namespace {

struct MHAVectorizePass final
    : mha::impl::MHAVectorizePassBase<MHAVectorizePass> {
  using MHAVectorizePassBase::MHAVectorizePassBase;

  void runOnOperation() override {
    VectorizeOptions options;
    options.registerTileRows = registerTileRows;
    options.registerTileCols = registerTileCols;
    options.chunk = chunk;
    IRRewriter rewriter(&getContext());
    if (failed(vectorizeLinalgOps(rewriter, getOperation(), options)))
      signalPassFailure();
  }
};

} // namespace
