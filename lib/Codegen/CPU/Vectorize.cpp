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
//   decode scores  few rows against a key block read once: dot products
//                  of the key rows as they are (splitScoresIntoDotProducts);
//   transposes     [16 x 16] blocks (vector.transpose, shuffles);
//   anything else  rows of up to `chunk` elements along the innermost loop
//                  (elementwise ops, row reductions, fills).
//
// Static sizes get tiles that divide them (see setTile), so every tile is
// full and vectorizes without masks. Partial tiles come from the parallel
// loops of the tiling stage (a query or key length that is odd or dynamic
// makes every tile of the scf.forall dynamic): those loops are peeled first
// (peelParallelLoop), so all tiles but the last are static, and an op left
// with dynamic sizes (the last tile, the peeled key block) is padded to its
// static bound (padToStaticShape) and vectorized like a full tile. Upstream's
// masked vectorization did not survive the outer-product lowering and the
// unit-dim patterns here (MLIR 22), and peeling each register loop
// (scf::peelForLoopAndSimplifyBounds) cost seconds of compile time per layer
// in its Presburger simplification.
//
//===----------------------------------------------------------------------===//

#include "mha/Codegen/CPU/Passes.h"
#include "mha/Codegen/CPU/Transforms.h"
#include "mha/Codegen/Common/KernelConfig.h"
#include "mha/Dialect/MHA/IR/MHADialect.h"
#include "mha/Dialect/MHA/Transforms/Transforms.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/SCF/Utils/AffineCanonicalizationUtils.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/ValueBoundsOpInterface.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"
#include "mlir/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include <cstring>

namespace mlir::mha {
#define GEN_PASS_DEF_MHAVECTORIZEPASS
#include "mha/Codegen/CPU/Passes.h.inc"
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

/// The loop of `op` that walks its output's `fromEnd`-th last dim (0: the
/// contiguous one), if the output map names a plain loop there.
static std::optional<unsigned> outputLoop(linalg::LinalgOp op,
                                          unsigned fromEnd) {
  return loopOfResult(op.getMatchingIndexingMap(op.getDpsInitOperand(0)),
                      fromEnd);
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

/// Whether `op` is in a key loop whose blocks one query tile reads
/// (kKeyBlocksReadOnceAttrName): a blocked copy would not save work there, and the loop is bound by reading
/// the blocks.
static bool isInKeyLoopReadOnce(Operation *op) {
  for (auto loop = op->getParentOfType<scf::ForOp>(); loop;
       loop = loop->getParentOfType<scf::ForOp>())
    if (loop->hasAttr(kKeyBlocksReadOnceAttrName))
      return true;
  return false;
}

/// The tiling every register tiling starts from: unit loops stay, every
/// other loop one step at a time, the reductions innermost.
static RegisterTiling stepByStepTiling(linalg::LinalgOp op) {
  RegisterTiling tiling;
  for (int64_t range : op.getStaticLoopRanges())
    tiling.tileSizes.push_back(range == 1 ? 0 : 1);
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  for (unsigned i = 0; i < iterators.size(); ++i)
    if (iterators[i] == utils::IteratorType::parallel)
      tiling.interchange.push_back(i);
  for (unsigned i = 0; i < iterators.size(); ++i)
    if (iterators[i] != utils::IteratorType::parallel)
      tiling.interchange.push_back(i);
  return tiling;
}

static RegisterTiling chooseRegisterTiling(linalg::LinalgOp op,
                                           const VectorizeOptions &options) {
  unsigned numLoops = op.getNumLoops();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  // Every loop but those chosen below one step at a time.
  RegisterTiling tiling = stepByStepTiling(op);
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();

  std::optional<unsigned> col = outputLoop(op, 0), row = outputLoop(op, 1);
  // Rows of one (a single query: decoding): the tile's rows come from the
  // next outer dim of the output that has more (the heads of a group), so
  // that a contraction is still an outer product per reduction step.
  for (unsigned fromEnd = 2; row && !isa<linalg::TransposeOp>(op) &&
                             ranges[*row] == 1;
       ++fromEnd) {
    std::optional<unsigned> outer = outputLoop(op, fromEnd);
    if (!outer)
      break;
    if (ranges[*outer] != 1 &&
        iterators[*outer] == utils::IteratorType::parallel)
      row = outer;
  }
  if (isa<linalg::TransposeOp>(op) && col && row) {
    // Blocks in the order of the input's dims: its rows are read one after
    // another (its output is the copy, written in blocks either way).
    AffineMap input = op.getMatchingIndexingMap(op.getDpsInputOperand(0));
    tiling.interchange = llvm::map_to_vector(
        input.getResults(), [](AffineExpr e) -> int64_t {
          return cast<AffineDimExpr>(e).getPosition();
        });
    setTile(tiling, ranges, *row, 16, /*halve=*/true);
    setTile(tiling, ranges, *col, 16, /*halve=*/true);
  } else if (linalg::isaContractionOpInterface(op) && col && row &&
             iterators[*col] == utils::IteratorType::parallel &&
             iterators[*row] == utils::IteratorType::parallel) {
    int64_t rows = options.registerTileRows, cols = options.registerTileCols;
    // Few rows in a key loop read once (decoding: P·V of a group's heads):
    // whole rows of the block (the values), as many rows as the
    // accumulator's registers allow, so that each row of the block is read
    // in one sweep, in order, where column panels would read every row in
    // pieces, one panel after another (strides the prefetchers do not
    // follow; the loop is bound by reading the block).
    int64_t accumulators = rows * cols;
    if (isInKeyLoopReadOnce(op) && !ShapedType::isDynamic(ranges[*col]) &&
        !ShapedType::isDynamic(ranges[*row]) && ranges[*row] <= rows &&
        ranges[*col] > cols && ranges[*col] <= accumulators) {
      cols = ranges[*col];
      rows = accumulators / cols;
    }
    setTile(tiling, ranges, *row, rows, /*halve=*/false);
    setTile(tiling, ranges, *col, cols, /*halve=*/true);
  } else {
    setTile(tiling, ranges, numLoops - 1, options.chunk, /*halve=*/true);
  }
  return tiling;
}

/// `op` without its unit loops but `kept` (upstream linalg::dropUnitDims);
/// `op` itself when it is no linalg.generic or nothing is dropped.
static linalg::LinalgOp dropUnitLoops(RewriterBase &rewriter,
                                      linalg::LinalgOp op,
                                      std::optional<unsigned> kept) {
  auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
  if (!generic)
    return op;
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

/// A contraction tile without its unit loops but its last reduction (one step
/// of it): upstream's lowering of vector.contract to outer products takes a
/// [rows, 1] x [1, cols] contraction, and the unit reductions of a tile
/// (e.g. the head of the output projection) would otherwise send it to the
/// scalar dot-product lowering. Returns `op` when there is nothing to drop.
static linalg::LinalgOp dropUnitLoopsOfContraction(RewriterBase &rewriter,
                                                   linalg::LinalgOp op) {
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  auto lastReduction = llvm::find_if(llvm::reverse(iterators), [](auto it) {
    return it == utils::IteratorType::reduction;
  });
  unsigned kept = iterators.size() - 1 -
                  std::distance(iterators.rbegin(), lastReduction);
  return dropUnitLoops(rewriter, op, kept);
}

/// The value padding the input of `op` along its reductions must take when
/// `op` is a plain reduction (one input, one init, the body one combiner of
/// the two, e.g. a row max or a row sum): the combiner's neutral element
/// (-inf for a max, 0 for a sum), which leaves the result as it is.
static std::optional<TypedAttr> reductionPadding(linalg::LinalgOp op) {
  auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
  if (!generic || generic.getNumDpsInputs() != 1 ||
      generic.getNumDpsInits() != 1)
    return std::nullopt;
  Block &body = generic.getRegion().front();
  if (body.getOperations().size() != 2)
    return std::nullopt;
  Operation &combiner = body.front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  if (yield.getValues().size() != 1 ||
      yield.getValues()[0] != combiner.getResult(0) ||
      combiner.getNumOperands() != 2 ||
      !llvm::is_contained(combiner.getOperands(), body.getArgument(0)) ||
      !llvm::is_contained(combiner.getOperands(), body.getArgument(1)))
    return std::nullopt;
  return arith::getNeutralElement(&combiner);
}

/// `op` of dynamic sizes (a tile of a peeled loop's partial iteration,
/// bounded by the loop's step) computed on operands padded with zeros to
/// their static upper bounds (upstream linalg::rewriteAsPaddedOp) and the
/// result sliced back, so that it vectorizes like a full tile. The parallel
/// dims are padded with zeros (what is computed there is sliced off), the
/// reduction dims of a contraction too (zero products add nothing), those
/// of a plain reduction with its combiner's neutral element; an op that
/// reduces over a dynamic range otherwise, or has no static bound, is
/// returned as it is.
static linalg::LinalgOp padToStaticShape(RewriterBase &rewriter,
                                         linalg::LinalgOp op) {
  if (!op.hasDynamicShape())
    return op;
  bool contraction = linalg::isaContractionOpInterface(op);
  std::optional<TypedAttr> neutral;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<int64_t> dims;
  linalg::LinalgPaddingOptions options;
  for (auto [dim, iterator] : llvm::enumerate(op.getIteratorTypesArray())) {
    if (!ShapedType::isDynamic(ranges[dim]))
      continue;
    if (iterator != utils::IteratorType::parallel && !contraction &&
        !(neutral = reductionPadding(op)))
      return op;
    dims.push_back(dim);
    // One static bound for the loop, taken over every operand dimension it
    // indexes: bounds derived operand by operand can differ (all valid), and
    // operands padded to different sizes would disagree on the loop's range.
    int64_t bound = 0;
    SmallVector<std::pair<unsigned, unsigned>> positions;
    for (OpOperand &operand : op->getOpOperands()) {
      AffineMap map = op.getMatchingIndexingMap(&operand);
      for (auto [position, expr] : llvm::enumerate(map.getResults())) {
        if (expr != rewriter.getAffineDimExpr(dim))
          continue;
        FailureOr<int64_t> ub = ValueBoundsConstraintSet::computeConstantBound(
            presburger::BoundType::UB, {operand.get(), int64_t(position)},
            /*stopCondition=*/nullptr, /*closedUB=*/true);
        if (failed(ub))
          return op;
        bound = std::max(bound, *ub);
        positions.push_back({operand.getOperandNumber(), position});
      }
    }
    for (auto [operand, position] : positions)
      options.setSizeToPadTo(operand, position, rewriter.getIndexAttr(bound));
  }
  options.setPaddingDimensions(dims);
  options.setPaddingValues(llvm::map_to_vector(
      op->getOpOperands(), [&](OpOperand &operand) -> Attribute {
        if (neutral && op.isDpsInput(&operand))
          return *neutral;
        return rewriter.getZeroAttr(
            getElementTypeOrSelf(operand.get().getType()));
      }));
  // A padded result goes back into the op's own destination (a copy), which
  // keeps a loop-carried destination in place for bufferization; a result
  // that was not padded is the padded op's result itself.
  bool paddedResult = llvm::any_of(op.getDpsInits(), [](Value init) {
    return !cast<ShapedType>(init.getType()).hasStaticShape();
  });
  options.setCopyBackOp(
      paddedResult ? linalg::LinalgPaddingOptions::CopyBackOp::LinalgCopy
                   : linalg::LinalgPaddingOptions::CopyBackOp::None);
  linalg::LinalgOp padded;
  SmallVector<Value> replacements;
  SmallVector<tensor::PadOp> pads;
  rewriter.setInsertionPoint(op);
  if (failed(linalg::rewriteAsPaddedOp(rewriter, op, options, padded,
                                       replacements, pads)))
    return op;
  rewriter.replaceOp(op, replacements);
  return padded;
}

/// Tiles `op` by `tiling` (upstream scf::tileUsingSCF); `op` itself when
/// nothing is tiled, or when the tiling does not apply (the op is then left
/// as it is, for the scalar lowering).
static linalg::LinalgOp tileOp(RewriterBase &rewriter, linalg::LinalgOp op,
                               const RegisterTiling &tiling) {
  if (llvm::all_of(tiling.tileSizes, [](int64_t s) { return s == 0; }))
    return op;
  scf::SCFTilingOptions tilingOptions;
  tilingOptions.setTileSizes(
      getAsIndexOpFoldResult(rewriter.getContext(), tiling.tileSizes));
  tilingOptions.setInterchange(tiling.interchange);
  rewriter.setInsertionPoint(op);
  FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
      rewriter, cast<TilingInterface>(op.getOperation()), tilingOptions);
  if (failed(tiled))
    return op;
  rewriter.replaceOp(op, tiled->replacements);
  return cast<linalg::LinalgOp>(tiled->tiledOps.front());
}

/// Whether `value`, the accumulator a contraction starts from, is computed
/// by an op that can be fused into each of its register tiles: a linalg.fill
/// (the zero scores of a key block), or an elementwise op used by the
/// contraction alone (the rescaled accumulator `a · acc` of a key block).
static bool isFusableInit(Value value) {
  auto producer = value.getDefiningOp<linalg::LinalgOp>();
  if (!producer)
    return false;
  return isa<linalg::FillOp>(producer.getOperation()) ||
         (linalg::isElementwise(producer) && value.hasOneUse());
}

/// `op`, a contraction whose accumulator starts as what isFusableInit
/// accepts, tiled by `tiling` with that producer fused into each register
/// tile: first over the parallel loops with upstream tile-and-fuse (a
/// producer fused into a reduction loop would restart the sum at every
/// step), then over the reductions. After vectorization the tile's
/// accumulator starts in registers as the producer's value (the producer's
/// write and the contraction's read of it fold away) instead of being loaded
/// from a buffer a separate pass over the block wrote (for a fill that LICM
/// hoisted out of the key loop, after bufferization, a copy of the hoisted
/// buffer per block). Returns the contraction tile and the producer's tile,
/// or nothing (and `op` untouched) when the accumulator is not fusable or
/// nothing is tiled.
static std::optional<std::pair<linalg::LinalgOp, linalg::LinalgOp>>
tileWithFusedInit(RewriterBase &rewriter, linalg::LinalgOp op,
                  const RegisterTiling &tiling) {
  Value init = op.getDpsInitOperand(0)->get();
  if (!linalg::isaContractionOpInterface(op) || !isFusableInit(init))
    return std::nullopt;
  RegisterTiling parallel = tiling, reductions = tiling;
  for (auto [i, iterator] : llvm::enumerate(op.getIteratorTypesArray())) {
    if (iterator == utils::IteratorType::parallel)
      reductions.tileSizes[i] = 0;
    else
      parallel.tileSizes[i] = 0;
  }
  if (llvm::all_of(parallel.tileSizes, [](int64_t s) { return s == 0; }))
    return std::nullopt;
  Operation *producer = init.getDefiningOp();
  scf::SCFTileAndFuseOptions options;
  options.tilingOptions.setTileSizes(
      getAsIndexOpFoldResult(rewriter.getContext(), parallel.tileSizes));
  options.tilingOptions.setInterchange(parallel.interchange);
  options.setFusionControlFn(
      [&](tensor::ExtractSliceOp, OpResult candidate, bool)
          -> std::optional<scf::SCFTileAndFuseOptions::ControlFnResult> {
        if (candidate.getOwner() == producer)
          return scf::SCFTileAndFuseOptions::ControlFnResult{};
        return std::nullopt;
      });
  rewriter.setInsertionPoint(op);
  FailureOr<scf::SCFTileAndFuseResult> fused =
      scf::tileConsumerAndFuseProducersUsingSCF(
          rewriter, cast<TilingInterface>(op.getOperation()), options);
  if (failed(fused))
    return std::nullopt;
  for (OpResult result : op->getResults())
    if (Value replacement = fused->replacements.lookup(result))
      rewriter.replaceAllUsesWith(result, replacement);
  rewriter.eraseOp(op);
  auto tile = cast<linalg::LinalgOp>(fused->tiledAndFusedOps.front());
  linalg::LinalgOp producerTile;
  if (fused->tiledAndFusedOps.size() > 1)
    producerTile = cast<linalg::LinalgOp>(fused->tiledAndFusedOps[1]);
  return std::pair(tileOp(rewriter, tile, reductions), producerTile);
}

/// The innermost size of the tensor `value` is a slice of (through chains of
/// tensor.extract_slice and tensor.expand_shape): the row stride it is read
/// with, in elements (ShapedType::kDynamic, negative, if unknown: no
/// packing).
static int64_t rowStrideOf(Value value) {
  while (Operation *def = value.getDefiningOp()) {
    if (auto slice = dyn_cast<tensor::ExtractSliceOp>(def))
      value = slice.getSource();
    else if (auto expand = dyn_cast<tensor::ExpandShapeOp>(def))
      value = expand.getSrc();
    else
      break;
  }
  auto type = cast<ShapedType>(value.getType());
  return type.getRank() ? type.getShape().back() : 1;
}

namespace {
/// A whole copy of a value in a blocked layout, made once per function call
/// (see readFromBlockedCopy).
struct BlockedCopy {
  Value source;
  SmallVector<int64_t> blockShape, order;
  Value copy;
};
using BlockedCopies = SmallVector<BlockedCopy>;
} // namespace

/// Whether `offset` is a multiple of `size`: a constant, or the induction
/// variable of an scf.for whose lower bound and step are (a loop over the
/// blocks: key blocks, column panels).
static bool isMultipleOf(OpFoldResult offset, int64_t size) {
  if (std::optional<int64_t> c = getConstantIntValue(offset))
    return *c % size == 0;
  auto iv = dyn_cast<BlockArgument>(cast<Value>(offset));
  auto loop = iv ? dyn_cast<scf::ForOp>(iv.getOwner()->getParentOp()) : nullptr;
  if (!loop || loop.getInductionVar() != iv)
    return false;
  std::optional<int64_t> lb = getConstantIntValue(loop.getLowerBound());
  std::optional<int64_t> step = getConstantIntValue(loop.getStep());
  return lb && step && *lb % size == 0 && *step % size == 0;
}

/// The blocked copy of a constant `src` (a weight given in the IR: a dense
/// or dense_resource elements attribute, or a reshape of one), computed here: `src` reshaped to
/// `split` and transposed by `permutation`, as a new constant of the same
/// kind. Null where `src` is no such constant (or its elements are not whole
/// bytes, or a resource's blob is not loaded).
static Value foldBlockedCopyOfConstant(RewriterBase &rewriter, Location loc,
                                       Value src, ArrayRef<int64_t> split,
                                       ArrayRef<int64_t> permutation) {
  // Reshapes (the head split of a weight) keep the row-major data.
  Value base = src;
  while (Operation *def = base.getDefiningOp()) {
    if (auto expand = dyn_cast<tensor::ExpandShapeOp>(def))
      base = expand.getSrc();
    else if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(def))
      base = collapse.getSrc();
    else
      break;
  }
  Attribute attr;
  if (!matchPattern(base, m_Constant(&attr)))
    return {};
  auto srcType = cast<RankedTensorType>(src.getType());
  Type elementType = srcType.getElementType();
  if (!elementType.isIntOrFloat() || elementType.getIntOrFloatBitWidth() % 8)
    return {};
  int64_t bytes = elementType.getIntOrFloatBitWidth() / 8;
  auto copyType = RankedTensorType::get(
      llvm::map_to_vector(permutation, [&](int64_t d) { return split[d]; }),
      elementType);
  ArrayRef<char> data;
  auto dense = dyn_cast<DenseElementsAttr>(attr);
  auto resource = dyn_cast<DenseResourceElementsAttr>(attr);
  if (dense && dense.isSplat())
    return arith::ConstantOp::create(rewriter, loc, copyType,
                                     dense.resizeSplat(copyType));
  if (dense) {
    data = dense.getRawData();
  } else if (resource) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob)
      return {};
    data = blob->getData();
  } else {
    return {};
  }
  int64_t count = srcType.getNumElements();
  if (static_cast<int64_t>(data.size()) != count * bytes)
    return {};
  // Row-major strides of `split`, taken in the copy's order; the copy is
  // written in order, its index counted up like an odometer.
  int64_t rank = split.size();
  SmallVector<int64_t> splitStrides(rank, 1), strides(rank), index(rank, 0);
  for (int64_t d = rank - 2; d >= 0; --d)
    splitStrides[d] = splitStrides[d + 1] * split[d + 1];
  for (int64_t k = 0; k < rank; ++k)
    strides[k] = splitStrides[permutation[k]];
  ArrayRef<int64_t> shape = copyType.getShape();
  std::vector<char> out(data.size());
  int64_t from = 0;
  for (int64_t i = 0; i < count; ++i) {
    std::memcpy(&out[i * bytes], &data[from * bytes], bytes);
    for (int64_t k = rank - 1; k >= 0; --k) {
      from += strides[k];
      if (++index[k] < shape[k])
        break;
      from -= strides[k] * shape[k];
      index[k] = 0;
    }
  }
  Attribute folded;
  if (dense)
    folded = DenseElementsAttr::getFromRawBuffer(copyType, out);
  else
    folded = DenseResourceElementsAttr::get(
        copyType, "mha_packed",
        HeapAsmResourceBlob::allocateAndCopyWithAlign(
            ArrayRef<char>(out), alignof(std::max_align_t)));
  return arith::ConstantOp::create(rewriter, loc, copyType,
                                   cast<TypedAttr>(folded));
}

/// `block`, a value made in loops by a chain of unit-stride slices of a
/// value `src` defined outside every loop (a weight, the keys), with its
/// dims in the order `order` (the identity, or a transpose's permutation):
/// read from a copy of the whole of `src` made once, before the loops, in
/// which every such block is contiguous. Each dim of `src` the block takes
/// part of is split into (blocks, block size) (the block's offsets along it
/// must be multiples of its size); dims it takes one index of, and the
/// block indices, go first, then the block's dims in `order`:
///
///   a [k, w] column panel of a weight [E, H, d] sliced [k, 1, w]:
///     copy [H, d/w, k, w];
///   a key block kᵀ [1, 1, d, kv] of keys [B, H, Sk, d] sliced [1, 1, kv, d]:
///     copy [H, Sk/kv, 1, d, kv].
///
/// The copy is a linalg.transpose (of `src` reshaped to its split dims)
/// tiled as an scf.forall over its first dim, so that it runs on threads;
/// it is appended to `created` for vectorization, and shared by every block
/// of `src` of the same shape and order (`copies`). Returns the block read
/// from it (a slice, reshaped to the block's shape in `order`), or nothing
/// when `block` is not such a slice.
static Value readFromBlockedCopy(RewriterBase &rewriter, Value block,
                                 ArrayRef<int64_t> order,
                                 BlockedCopies &copies,
                                 SmallVector<linalg::LinalgOp> &created) {
  auto blockType = cast<RankedTensorType>(block.getType());
  int64_t rank = blockType.getRank();
  if (!blockType.hasStaticShape() || rank == 0)
    return {};
  ArrayRef<int64_t> sizes = blockType.getShape();
  // Offsets of the block in `src`, summed along the chain of slices.
  SmallVector<SmallVector<OpFoldResult>> offsets(rank);
  Value src = block;
  while (!isa<FunctionOpInterface>(src.getParentRegion()->getParentOp())) {
    auto slice = src.getDefiningOp<tensor::ExtractSliceOp>();
    if (!slice || slice.getSourceType().getRank() != rank ||
        !llvm::all_of(slice.getMixedStrides(), isOneInteger))
      return {};
    for (auto [dim, offset] : llvm::enumerate(slice.getMixedOffsets()))
      offsets[dim].push_back(offset);
    src = slice.getSource();
  }
  auto srcType = cast<RankedTensorType>(src.getType());
  if (src == block || !srcType.hasStaticShape())
    return {};

  // The dims of `src` split as [.., blocks, block size, ..]: `split` is the
  // reshaped shape, `outer` its dims of one index per block (block indices
  // and dims the block takes one index of), `inner[d]` the reshaped dim of
  // the block's dim d.
  // `outerIndex` holds, per outer dim, the block's dim and the size its
  // offset is divided by.
  SmallVector<int64_t> split, outer, inner(rank);
  SmallVector<std::pair<int64_t, int64_t>> outerIndex;
  SmallVector<ReassociationIndices> groups;
  for (int64_t dim = 0; dim < rank; ++dim) {
    int64_t whole = srcType.getDimSize(dim), size = sizes[dim];
    if (size > whole) // Only on a path not taken (the slices between are
      return {};      // of dynamic size): nothing to read there.
    ReassociationIndices group;
    if (size == 1 && whole > 1) { // One index of it.
      group.push_back(split.size());
      outer.push_back(split.size());
      outerIndex.push_back({dim, 1});
      inner[dim] = -1;
      split.push_back(whole);
    } else if (size < whole) { // (blocks, block size).
      if (whole % size != 0 ||
          !llvm::all_of(offsets[dim], [&](OpFoldResult offset) {
            return isMultipleOf(offset, size);
          }))
        return {};
      group.push_back(split.size());
      outer.push_back(split.size());
      outerIndex.push_back({dim, size});
      split.push_back(whole / size);
      group.push_back(split.size());
      inner[dim] = split.size();
      split.push_back(size);
    } else { // Whole.
      group.push_back(split.size());
      inner[dim] = split.size();
      split.push_back(whole);
    }
    groups.push_back(group);
  }
  // The copy: outer dims, then the block's dims in `order`.
  SmallVector<int64_t> permutation = outer, blockShape;
  for (int64_t dim : order) {
    if (inner[dim] < 0)
      continue;
    permutation.push_back(inner[dim]);
    blockShape.push_back(sizes[dim]);
  }
  SmallVector<int64_t> orderedShape =
      llvm::map_to_vector(order, [&](int64_t d) { return sizes[d]; });
  std::optional<SmallVector<ReassociationIndices>> reassociation;
  if (orderedShape != blockShape) {
    reassociation = getReassociationIndicesForCollapse(orderedShape, blockShape);
    if (!reassociation)
      return {};
  }

  auto known = llvm::find_if(copies, [&](const BlockedCopy &c) {
    return c.source == src && ArrayRef(c.blockShape) == sizes &&
           ArrayRef(c.order) == order;
  });
  Value copy = known == copies.end() ? Value() : known->copy;
  if (!copy) {
    OpBuilder::InsertionGuard guard(rewriter);
    if (Operation *def = src.getDefiningOp())
      rewriter.setInsertionPointAfter(def);
    else
      rewriter.setInsertionPointToStart(cast<BlockArgument>(src).getOwner());
    Location srcLoc = src.getLoc();
    Type elementType = srcType.getElementType();
    // A weight given as a constant is packed here, at compile time.
    copy = foldBlockedCopyOfConstant(rewriter, srcLoc, src, split, permutation);
    if (!copy) {
      Value expanded = src;
      if (split.size() != static_cast<size_t>(rank))
        expanded = tensor::ExpandShapeOp::create(
            rewriter, srcLoc, RankedTensorType::get(split, elementType), src,
            groups);
      SmallVector<int64_t> copyShape =
          llvm::map_to_vector(permutation, [&](int64_t d) { return split[d]; });
      Value init =
          tensor::EmptyOp::create(rewriter, srcLoc, copyShape, elementType);
      auto transpose = linalg::TransposeOp::create(rewriter, srcLoc, expanded,
                                                   init, permutation);
      // On threads: an scf.forall over the copy's dim that walks the
      // outermost non-unit dim of `src`, so that each thread reads whole,
      // contiguous rows of `src` (a weight's column panels read one by one
      // are 64-byte pieces of rows kilobytes apart, which the prefetchers do
      // not follow across pages). A long dim (rows of a weight) goes up to 16
      // rows a step, the transpose's register tile: the largest divisor.
      FailureOr<scf::SCFTilingResult> tiled = failure();
      const auto *outermost =
          llvm::find_if(split, [](int64_t size) { return size > 1; });
      if (copyShape.size() > 1 && outermost != split.end()) {
        int64_t srcDim = outermost - split.begin();
        int64_t loop = llvm::find(permutation, srcDim) - permutation.begin();
        int64_t step = *outermost >= 64 ? 16 : 1;
        while (*outermost % step != 0)
          --step;
        SmallVector<OpFoldResult> tileSizes(copyShape.size(),
                                            rewriter.getIndexAttr(0));
        tileSizes[loop] = rewriter.getIndexAttr(step);
        scf::SCFTilingOptions options;
        options.setTileSizes(tileSizes);
        options.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp);
        tiled = scf::tileUsingSCF(
            rewriter, cast<TilingInterface>(transpose.getOperation()), options);
      }
      if (succeeded(tiled)) {
        rewriter.replaceOp(transpose, tiled->replacements);
        created.push_back(cast<linalg::LinalgOp>(tiled->tiledOps.front()));
        copy = tiled->replacements.front();
      } else {
        created.push_back(transpose);
        copy = transpose.getResult().front();
      }
    }
    copies.push_back({src, SmallVector<int64_t>(sizes),
                      SmallVector<int64_t>(order), copy});
  }

  // The block's index along each outer dim: its offsets summed, divided by
  // the block size.
  Location loc = block.getLoc();
  SmallVector<OpFoldResult> sliceOffsets, sliceSizes;
  for (auto [dim, divisor] : outerIndex) {
    AffineExpr expr = rewriter.getAffineConstantExpr(0);
    for (size_t i = 0; i < offsets[dim].size(); ++i)
      expr = expr + rewriter.getAffineSymbolExpr(i);
    sliceOffsets.push_back(affine::makeComposedFoldedAffineApply(
        rewriter, loc, expr.floorDiv(divisor), offsets[dim]));
  }
  sliceSizes.assign(outer.size(), rewriter.getIndexAttr(1));
  for (int64_t size : blockShape) {
    sliceOffsets.push_back(rewriter.getIndexAttr(0));
    sliceSizes.push_back(rewriter.getIndexAttr(size));
  }
  SmallVector<OpFoldResult> strides(sliceSizes.size(),
                                    rewriter.getIndexAttr(1));
  auto sliceType = RankedTensorType::get(blockShape, blockType.getElementType());
  Value slice = tensor::ExtractSliceOp::create(
      rewriter, loc, sliceType, copy, sliceOffsets, sliceSizes, strides);
  if (!reassociation)
    return slice;
  return tensor::ExpandShapeOp::create(
      rewriter, loc, RankedTensorType::get(orderedShape, sliceType.getElementType()),
      slice, *reassociation);
}

/// `op`, the contraction of one column panel, with each static reduction
/// longer than `chunk` cut into chunks of it by an scf.for around the op
/// (the classic kc blocking): the row tiles then sweep one chunk of the
/// panel, which stays in L1, before the next, instead of each row tile
/// streaming the whole panel from L2. A chunk size that does not divide the
/// range shrinks to its largest divisor, but not under half of `chunk`
/// (the reduction then stays whole). `op` itself when nothing is cut.
static linalg::LinalgOp chunkPanelReductions(RewriterBase &rewriter,
                                             linalg::LinalgOp op,
                                             int64_t chunk) {
  if (chunk <= 0)
    return op;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  RegisterTiling chunks;
  chunks.tileSizes.assign(ranges.size(), 0);
  for (auto [loop, iterator] : llvm::enumerate(op.getIteratorTypesArray())) {
    chunks.interchange.push_back(loop);
    if (iterator != utils::IteratorType::reduction ||
        ShapedType::isDynamic(ranges[loop]))
      continue;
    setTile(chunks, ranges, loop, chunk, /*halve=*/false);
    if (chunks.tileSizes[loop] < chunk / 2)
      chunks.tileSizes[loop] = 0;
  }
  return tileOp(rewriter, op, chunks);
}

/// Packing of a contraction's column operand (the rhs, read along the
/// output's contiguous dim) when its rows are far apart (the projections'
/// weights: 3 KiB for E = 768, 8 KiB for E = 2048): each step of a register
/// tile reads `registerTileCols` elements of a new row, so a column panel is
/// as many cache lines as the reduction has steps, streamed from L2 by every
/// row tile, and with strides a multiple of 4 KiB all in one L1 set. Here
/// the op is tiled by column panels and each panel read from a contiguous
/// copy: of the whole operand, packed once before the loops, when it is
/// defined outside them (a weight, see readFromBlockedCopy); else of the
/// panel alone, copied into a fresh tensor before its row tiles. Returns the
/// ops to vectorize: the packing copy (if made here) and the contraction, or
/// `op` alone when packing does not pay: rows near each other (the
/// attention's blocks), or a single row tile (nothing re-reads the panel).
static SmallVector<linalg::LinalgOp>
packColumnPanels(RewriterBase &rewriter, linalg::LinalgOp op,
                 const VectorizeOptions &options, BlockedCopies &copies) {
  SmallVector<linalg::LinalgOp> unchanged = {op};
  if (!linalg::isaContractionOpInterface(op) || op.getNumDpsInputs() != 2 ||
      options.packMinStride < 0)
    return unchanged;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  std::optional<unsigned> col = outputLoop(op, 0), row = outputLoop(op, 1);
  if (!col || ShapedType::isDynamic(ranges[*col]) ||
      (row && !ShapedType::isDynamic(ranges[*row]) &&
       ranges[*row] <= options.registerTileRows))
    return unchanged;
  OpOperand *rhs = nullptr;
  for (OpOperand *input : op.getDpsInputOperands())
    if (loopOfResult(op.getMatchingIndexingMap(input), 0) == col)
      rhs = input;
  if (!rhs)
    return unchanged;
  int64_t stride = rowStrideOf(rhs->get());
  if (stride < options.packMinStride || stride <= options.registerTileCols)
    return unchanged;

  unsigned rhsNumber = rhs->getOperandNumber(); // `op` is replaced below.
  RegisterTiling panels;
  panels.tileSizes.assign(ranges.size(), 0);
  setTile(panels, ranges, *col, options.registerTileCols, /*halve=*/true);
  for (unsigned i = 0; i < ranges.size(); ++i)
    panels.interchange.push_back(i);
  linalg::LinalgOp tiled = tileOp(rewriter, op, panels);
  OpOperand &panel = tiled->getOpOperand(rhsNumber);
  auto panelType = cast<RankedTensorType>(panel.get().getType());
  if (!panelType.hasStaticShape())
    return {tiled};
  rewriter.setInsertionPoint(tiled);
  SmallVector<linalg::LinalgOp> toVectorize;
  SmallVector<int64_t> identity =
      llvm::to_vector(llvm::seq<int64_t>(panelType.getRank()));
  if (Value fromPacked = readFromBlockedCopy(rewriter, panel.get(), identity,
                                             copies, toVectorize)) {
    rewriter.modifyOpInPlace(tiled, [&] { panel.set(fromPacked); });
    toVectorize.push_back(
        chunkPanelReductions(rewriter, tiled, options.panelReductionTile));
    return toVectorize;
  }
  Location loc = tiled->getLoc();
  auto copy = linalg::CopyOp::create(
      rewriter, loc, panel.get(),
      tensor::EmptyOp::create(rewriter, loc, panelType.getShape(),
                              panelType.getElementType())
          .getResult());
  rewriter.modifyOpInPlace(tiled, [&] { panel.set(copy.getResult(0)); });
  return {cast<linalg::LinalgOp>(copy.getOperation()),
          chunkPanelReductions(rewriter, tiled, options.panelReductionTile)};
}

/// The keys of `op`, a contraction in a key loop read once, if its rhs is a
/// key block transposed for the outer-product form (kᵀ: a linalg.transpose
/// swapping the last two dims, possibly collapsed by a reshape that keeps
/// them apart) and its lhs, the queries, is contiguous along the reduction:
/// the block as it is in memory, reshaped as the transposed value was, and
/// the rhs operand's number. Nothing otherwise.
static std::optional<std::pair<Value, unsigned>>
untransposedKeys(RewriterBase &rewriter, linalg::LinalgOp op) {
  if (!linalg::isaContractionOpInterface(op) || op.getNumDpsInputs() != 2 ||
      op.getNumReductionLoops() != 1 || !isInKeyLoopReadOnce(op))
    return std::nullopt;
  SmallVector<unsigned> reductions;
  op.getReductionDims(reductions);
  std::optional<unsigned> col = outputLoop(op, 0);
  OpOperand *lhs = op.getDpsInputOperand(0), *rhs = op.getDpsInputOperand(1);
  if (loopOfResult(op.getMatchingIndexingMap(lhs), 0) == col)
    std::swap(lhs, rhs);
  if (!col || loopOfResult(op.getMatchingIndexingMap(rhs), 0) != col ||
      loopOfResult(op.getMatchingIndexingMap(rhs), 1) != reductions[0] ||
      loopOfResult(op.getMatchingIndexingMap(lhs), 0) != reductions[0])
    return std::nullopt;
  Value value = rhs->get();
  auto collapse = value.getDefiningOp<tensor::CollapseShapeOp>();
  if (collapse)
    value = collapse.getSrc();
  auto transpose = value.getDefiningOp<linalg::TransposeOp>();
  if (!transpose)
    return std::nullopt;
  ArrayRef<int64_t> permutation = transpose.getPermutation();
  int64_t rank = permutation.size();
  if (rank < 2 || permutation[rank - 1] != rank - 2 ||
      permutation[rank - 2] != rank - 1)
    return std::nullopt;
  for (int64_t i = 0; i < rank - 2; ++i)
    if (permutation[i] != i)
      return std::nullopt;
  Value keys = transpose.getInput();
  if (collapse) {
    SmallVector<ReassociationIndices> groups =
        collapse.getReassociationIndices();
    if (groups.size() < 2 || groups.back().size() != 1 ||
        groups[groups.size() - 2].size() != 1)
      return std::nullopt;
    rewriter.setInsertionPoint(op);
    keys = tensor::CollapseShapeOp::create(rewriter, collapse.getLoc(), keys,
                                           groups);
  }
  return std::pair(keys, rhs->getOperandNumber());
}

namespace {
/// What splitScoresIntoDotProducts made: register tiles to vectorize as they
/// are, or (where the split did not apply after all) the contraction on the
/// untransposed keys, to tile and vectorize as any other.
struct DotProductScores {
  SmallVector<linalg::LinalgOp> tiles;
  linalg::LinalgOp untiled;
};
} // namespace

/// Scores of few query rows (decoding: the heads of a group, one query
/// each) in a key loop read once, as dot products of the keys' rows as they
/// are in memory, in place of the outer-product form over a transposed key
/// block: transposing a block costs more than the scores of a few rows, and
/// its strided reads of the keys keep the hardware prefetchers from
/// streaming them (the loop is bound by reading the keys and values).
///
/// `op` reads the keys untransposed, its reduction (the head dim) is split
/// by the vector's lanes (upstream linalg::splitReduction, the lanes a
/// parallel dim): per register tile of R rows x C keys, R·C = lanes, the
/// lane-wise products accumulate in R·C vectors over the head dim, and a
/// second op sums each vector's lanes (a [R·C x lanes] reduction that
/// TreeReduceLanes lowers to shuffles). Returns the ops to vectorize, or
/// nothing (and `op` untouched) when `op` is not such a contraction: more
/// rows than lanes, a head dim that is not a multiple of the lanes.
static std::optional<DotProductScores>
splitScoresIntoDotProducts(RewriterBase &rewriter, linalg::LinalgOp op,
                           const VectorizeOptions &options) {
  auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
  Type element = getElementTypeOrSelf(op.getDpsInitOperand(0)->get());
  if (!generic || !element.isF32())
    return std::nullopt;
  int64_t lanes = options.vectorWidth / 32;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<unsigned> reductions;
  op.getReductionDims(reductions);
  if (reductions.size() != 1 || ShapedType::isDynamic(ranges[reductions[0]]) ||
      lanes < 2 || ranges[reductions[0]] % lanes != 0)
    return std::nullopt;
  // The rows: every output dim but the keys' (the heads of a group, the
  // queries of a step), static, R of them in all; their positions in the
  // output.
  AffineMap output = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  int64_t rows = 1;
  SmallVector<unsigned> rowPositions;
  for (unsigned i = 0; i + 1 < output.getNumResults(); ++i) {
    auto dim = dyn_cast<AffineDimExpr>(output.getResult(i));
    if (!dim || ShapedType::isDynamic(ranges[dim.getPosition()]))
      return std::nullopt;
    rows *= ranges[dim.getPosition()];
    rowPositions.push_back(i);
  }
  if (rows > lanes || !llvm::isPowerOf2_64(rows))
    return std::nullopt;
  std::optional<std::pair<Value, unsigned>> keys =
      untransposedKeys(rewriter, op);
  if (!keys)
    return std::nullopt;

  // The contraction on the keys as they are: the rhs map's last two results
  // swapped.
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  AffineMap rhsMap = maps[keys->second];
  SmallVector<AffineExpr> results(rhsMap.getResults());
  std::swap(results[results.size() - 1], results[results.size() - 2]);
  maps[keys->second] =
      AffineMap::get(rhsMap.getNumDims(), 0, results, op.getContext());
  SmallVector<Value> inputs = op.getDpsInputs();
  inputs[keys->second] = keys->first;
  rewriter.setInsertionPoint(op);
  auto dot = linalg::GenericOp::create(
      rewriter, op.getLoc(), op->getResultTypes(), inputs, op.getDpsInits(),
      maps, op.getIteratorTypesArray());
  rewriter.cloneRegionBefore(generic.getRegion(), dot.getRegion(),
                             dot.getRegion().begin());
  rewriter.replaceOp(op, dot->getResults());
  linalg::LinalgOp padded =
      padToStaticShape(rewriter, cast<linalg::LinalgOp>(dot.getOperation()));
  if (padded.hasDynamicShape())
    return DotProductScores{{}, padded};

  // Lanes as the intermediate's last dim.
  int64_t outputRank = padded.getRank(padded.getDpsInitOperand(0));
  FailureOr<linalg::SplitReductionResult> split = linalg::splitReduction(
      rewriter, padded, [&](linalg::LinalgOp) {
        return linalg::SplitReductionOptions{lanes, unsigned(outputRank),
                                             /*innerParallel=*/true};
      });
  if (failed(split))
    return DotProductScores{{}, padded};

  // Register tiles of R' rows x C keys x all lanes, R'·C = lanes, R' about
  // the square root of the lanes (each step reads R' + C lane vectors of
  // the queries and keys for R'·C FMAs), one lane vector of the head dim
  // per step (the products), and of R' x C x lanes for the sums.
  int64_t tileRows = 1;
  while (tileRows * 2 <= rows && tileRows * tileRows * 4 <= lanes)
    tileRows *= 2;
  auto tilingOf = [&](linalg::LinalgOp part, unsigned lane, unsigned key) {
    RegisterTiling tiling = stepByStepTiling(part);
    SmallVector<int64_t> partRanges = part.getStaticLoopRanges();
    tiling.tileSizes[lane] = 0;
    setTile(tiling, partRanges, key, lanes / tileRows, /*halve=*/true);
    // R' rows, found where they are in the output, innermost first (powers
    // of two: their product is).
    AffineMap map = part.getMatchingIndexingMap(part.getDpsInitOperand(0));
    int64_t left = tileRows;
    for (unsigned position : llvm::reverse(rowPositions)) {
      unsigned loop =
          cast<AffineDimExpr>(map.getResult(position)).getPosition();
      int64_t size = std::min(partRanges[loop], left);
      tiling.tileSizes[loop] = size == partRanges[loop] ? 0 : size;
      left /= size;
    }
    return tiling;
  };
  SmallVector<linalg::LinalgOp> toVectorize;
  linalg::LinalgOp products = split->splitLinalgOp;
  RegisterTiling productTiling =
      tilingOf(products, *outputLoop(products, 0), *outputLoop(products, 1));
  if (auto fused = tileWithFusedInit(rewriter, products, productTiling)) {
    if (fused->second)
      toVectorize.push_back(fused->second);
    products = fused->first;
  } else {
    products = tileOp(rewriter, products, productTiling);
  }
  // The tile without its unit loops, the step of the head dim included: an
  // elementwise multiply-add of [R x C x lanes] (not a contraction, which
  // would lower lane by lane), its body a fused multiply-add (as the
  // contractions' outer products lower to; a multiply and an add would stay
  // two instructions), its loops in the order of the output's dims (the
  // lanes last), the order the vectorizer gives its vectors.
  products = dropUnitLoops(rewriter, products, std::nullopt);
  if (auto tile = dyn_cast<linalg::GenericOp>(products.getOperation())) {
    Block &body = tile.getRegion().front();
    auto yield = cast<linalg::YieldOp>(body.getTerminator());
    if (auto add = yield.getValues()[0].getDefiningOp<arith::AddFOp>()) {
      auto mul = add.getRhs().getDefiningOp<arith::MulFOp>();
      Value acc = add.getLhs();
      if (!mul) {
        mul = add.getLhs().getDefiningOp<arith::MulFOp>();
        acc = add.getRhs();
      }
      if (mul && mul->hasOneUse()) {
        rewriter.setInsertionPoint(add);
        rewriter.replaceOpWithNewOp<math::FmaOp>(add, mul.getLhs(),
                                                 mul.getRhs(), acc);
        rewriter.eraseOp(mul);
      }
    }
    AffineMap map = tile.getMatchingIndexingMap(tile.getDpsInitOperand(0));
    if (map.isPermutation() && !map.isIdentity()) {
      SmallVector<unsigned> order;
      for (AffineExpr e : map.getResults())
        order.push_back(cast<AffineDimExpr>(e).getPosition());
      FailureOr<linalg::GenericOp> interchanged =
          linalg::interchangeGenericOp(rewriter, tile, order);
      if (succeeded(interchanged))
        products = *interchanged;
    }
  }
  toVectorize.push_back(products);
  linalg::LinalgOp sums = split->resultCombiningLinalgOp;
  SmallVector<unsigned> sumLanes;
  sums.getReductionDims(sumLanes);
  toVectorize.push_back(tileOp(
      rewriter, sums, tilingOf(sums, sumLanes[0], *outputLoop(sums, 0))));
  return DotProductScores{toVectorize, nullptr};
}

/// vector.multi_reduction <add> of the innermost dim of a [P x L] vector
/// (leading dims flattened; P and L powers of two, 2 <= P <= L) as a tree of
/// two-vector shuffles: each level pairs the vectors and adds, lane by lane,
/// the low halves of each pair's segments to the high halves, so that P
/// vectors become one whose P segments each hold a row's partial sums; the
/// segments are then summed within (log2(L/P) shuffles) and the P sums
/// gathered. P - 1 + log2(L/P) + 1 vector adds and about twice as many
/// shuffles, where reducing each row on its own takes log2(L) of each per
/// row (upstream's lowering).
namespace {
struct TreeReduceLanes final
    : OpRewritePattern<vector::MultiDimReductionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(vector::MultiDimReductionOp op,
                                PatternRewriter &rewriter) const override {
    VectorType type = op.getSourceVectorType();
    if (op.getKind() != vector::CombiningKind::ADD ||
        !isa<FloatType>(type.getElementType()) || type.isScalable() ||
        type.getRank() < 2 || op.isMasked())
      return failure();
    SmallVector<bool> reduced = op.getReductionMask();
    for (int64_t i = 0, e = type.getRank(); i < e; ++i)
      if (reduced[i] != (i == e - 1))
        return failure();
    int64_t lanes = type.getShape().back();
    int64_t rows = type.getNumElements() / lanes;
    if (rows < 2 || rows > lanes || !llvm::isPowerOf2_64(rows) ||
        !llvm::isPowerOf2_64(lanes))
      return failure();
    Location loc = op.getLoc();
    Type element = type.getElementType();
    auto flat = vector::ShapeCastOp::create(
        rewriter, loc, VectorType::get({rows, lanes}, element),
        op.getSource());
    // The vectors, and for each the row every lane belongs to.
    SmallVector<Value> vectors;
    SmallVector<SmallVector<int64_t>> owner;
    for (int64_t r = 0; r < rows; ++r) {
      vectors.push_back(vector::ExtractOp::create(rewriter, loc, flat, r));
      owner.push_back(SmallVector<int64_t>(lanes, r));
    }
    int64_t segment = lanes;
    while (vectors.size() > 1) {
      int64_t half = segment / 2;
      SmallVector<Value> next;
      SmallVector<SmallVector<int64_t>> nextOwner;
      for (size_t k = 0; k + 1 < vectors.size(); k += 2) {
        SmallVector<int64_t> low, high, own;
        for (int64_t s = 0; s < lanes; s += segment) {
          for (int64_t p = 0; p < half; ++p) {
            low.push_back(s + p);
            high.push_back(s + half + p);
            own.push_back(owner[k][s + p]);
          }
          for (int64_t p = 0; p < half; ++p) {
            low.push_back(lanes + s + p);
            high.push_back(lanes + s + half + p);
            own.push_back(owner[k + 1][s + p]);
          }
        }
        Value a = vectors[k], b = vectors[k + 1];
        next.push_back(arith::AddFOp::create(
            rewriter, loc,
            vector::ShuffleOp::create(rewriter, loc, a, b, low),
            vector::ShuffleOp::create(rewriter, loc, a, b, high)));
        nextOwner.push_back(own);
      }
      vectors = next;
      owner = nextOwner;
      segment = half;
    }
    Value sum = vectors.front();
    SmallVector<int64_t> first(rows, -1);
    for (int64_t lane = 0; lane < lanes; lane += segment)
      first[owner.front()[lane]] = lane;
    for (; segment > 1; segment /= 2) {
      SmallVector<int64_t> shifted;
      for (int64_t lane = 0; lane < lanes; ++lane)
        shifted.push_back(lane % segment < segment / 2 ? lane + segment / 2
                                                       : lane);
      sum = arith::AddFOp::create(
          rewriter, loc, sum,
          vector::ShuffleOp::create(rewriter, loc, sum, sum, shifted));
    }
    Value gathered = vector::ShuffleOp::create(rewriter, loc, sum, sum, first);
    Value acc = vector::ShapeCastOp::create(
        rewriter, loc, VectorType::get({rows}, element), op.getAcc());
    Value result = arith::AddFOp::create(rewriter, loc, gathered, acc);
    rewriter.replaceOpWithNewOp<vector::ShapeCastOp>(op, op.getDestType(),
                                                     result);
    return success();
  }
};
} // namespace

/// `loop` rebuilt with the bounds `lbs`/`ubs` and the initial values
/// `outputs`, its body moved over.
static scf::ForallOp rebound(RewriterBase &rewriter, scf::ForallOp loop,
                             ArrayRef<OpFoldResult> lbs,
                             ArrayRef<OpFoldResult> ubs, ValueRange outputs) {
  rewriter.setInsertionPoint(loop);
  auto copy = scf::ForallOp::create(rewriter, loop.getLoc(), lbs, ubs,
                                    loop.getMixedStep(), outputs,
                                    loop.getMapping());
  rewriter.eraseBlock(copy.getBody());
  rewriter.inlineRegionBefore(loop.getRegion(), copy.getRegion(),
                              copy.getRegion().end());
  rewriter.replaceOp(loop, copy.getResults());
  return copy;
}

/// Peels `loop` along `dim` (static lower bound and step, a static or
/// dynamic upper bound): the first loop keeps the full steps, the second
/// (after it, from its results) the partial one. Returns the two, or
/// nothing when a static range has no partial step (or no full one).
static std::optional<std::pair<scf::ForallOp, scf::ForallOp>>
peelForallDim(RewriterBase &rewriter, scf::ForallOp loop, unsigned dim) {
  SmallVector<OpFoldResult> lbs = loop.getMixedLowerBound();
  SmallVector<OpFoldResult> ubs = loop.getMixedUpperBound();
  std::optional<int64_t> lb = getConstantIntValue(lbs[dim]);
  std::optional<int64_t> ub = getConstantIntValue(ubs[dim]);
  std::optional<int64_t> step = getConstantIntValue(loop.getMixedStep()[dim]);
  if (!lb || !step || *step <= 1 ||
      (ub && (*ub - *lb <= *step || (*ub - *lb) % *step == 0)))
    return std::nullopt;
  Location loc = loop.getLoc();
  rewriter.setInsertionPoint(loop);
  AffineExpr u = rewriter.getAffineDimExpr(0);
  OpFoldResult split = affine::makeComposedFoldedAffineApply(
      rewriter, loc, (u - *lb).floorDiv(*step) * *step + *lb, {ubs[dim]});
  Value ubValue = getValueOrCreateConstantIndexOp(rewriter, loc, ubs[dim]);
  Value stepValue = arith::ConstantIndexOp::create(rewriter, loc, *step);

  rewriter.setInsertionPointAfter(loop);
  auto partial = cast<scf::ForallOp>(rewriter.clone(*loop));
  SmallVector<OpFoldResult> mainUbs = ubs, partialLbs = lbs;
  mainUbs[dim] = partialLbs[dim] = split;
  scf::ForallOp full =
      rebound(rewriter, loop, lbs, mainUbs, loop.getOutputs());
  partial = rebound(rewriter, partial, partialLbs, ubs, full.getResults());
  for (auto [result, next] : llvm::zip(full.getResults(), partial.getResults()))
    rewriter.replaceAllUsesExcept(result, next, partial);

  // Tile sizes min(step, ub - iv): the step in the first loop, the rest
  // (ub - split) in the second (upstream's simplification after peeling).
  // For a dynamic ub the second keeps its min: the step bounds the tiles
  // there (see padToStaticShape).
  SmallVector<std::pair<scf::ForallOp, bool>> simplify = {{full, true}};
  if (ub)
    simplify.push_back({partial, false});
  for (auto [l, inside] : simplify) {
    SmallVector<Operation *> minMax;
    l.getBody()->walk([&](Operation *op) {
      if (isa<affine::AffineMinOp, affine::AffineMaxOp>(op))
        minMax.push_back(op);
    });
    for (Operation *op : minMax)
      (void)scf::rewritePeeledMinMaxOp(rewriter, op,
                                       l.getInductionVar(dim), ubValue,
                                       stepValue, inside);
  }
  return std::pair(full, partial);
}

SmallVector<LoopLikeOpInterface>
mha::peelParallelLoop(RewriterBase &rewriter, LoopLikeOpInterface loop) {
  auto forall = dyn_cast<scf::ForallOp>(loop.getOperation());
  if (!forall)
    return {loop};
  OpBuilder::InsertionGuard guard(rewriter);
  // Read before peeling: peelForallDim replaces `forall` (and frees it).
  unsigned rank = forall.getRank();
  bool mapped = forall.getMapping().has_value();
  SmallVector<scf::ForallOp> loops = {forall};
  for (unsigned dim = 0; dim < rank; ++dim)
    for (size_t i = 0, n = loops.size(); i < n; ++i)
      if (auto peeled = peelForallDim(rewriter, loops[i], dim)) {
        loops[i] = peeled->first;
        loops.push_back(peeled->second);
      }
  if (loops.size() > 1 && !mapped) {
    SmallVector<Attribute> mapping;
    for (unsigned dim = 0; dim < rank; ++dim)
      mapping.push_back(PeeledDimAttr::get(rewriter.getContext(), dim));
    for (scf::ForallOp l : loops)
      rewriter.modifyOpInPlace(
          l, [&] { l.setMappingAttr(rewriter.getArrayAttr(mapping)); });
  }
  return llvm::map_to_vector(
      loops, [](scf::ForallOp l) { return cast<LoopLikeOpInterface>(*l); });
}

bool mha::peelParallelLoops(RewriterBase &rewriter, Operation *root) {
  SmallVector<scf::ForallOp> foralls;
  root->walk([&](scf::ForallOp loop) { foralls.push_back(loop); });
  bool peeled = false;
  for (scf::ForallOp loop : foralls)
    peeled |= peelParallelLoop(rewriter, loop).size() > 1;
  return peeled;
}

LogicalResult mha::vectorizeLinalgOps(RewriterBase &rewriter, Operation *root,
                                      const VectorizeOptions &requested) {
  FailureOr<std::pair<int64_t, int64_t>> fitting =
      defaultRegisterTile(requested.vectorWidth);
  if (failed(fitting))
    return root->emitError()
           << "vector width must be a positive multiple of 32 bits, found "
           << requested.vectorWidth;
  VectorizeOptions options = requested;
  if (options.registerTileRows == 0)
    options.registerTileRows = fitting->first;
  if (options.registerTileCols == 0)
    options.registerTileCols = fitting->second;
  if (options.registerTileRows <= 0 || options.registerTileCols <= 0 ||
      options.chunk <= 0)
    return root->emitError()
           << "register tile sizes must be positive (0: from the vector "
              "width), found "
           << options.registerTileRows << "x" << options.registerTileCols
           << " (chunk " << options.chunk << ")";
  if (options.panelReductionTile < 0)
    return root->emitError()
           << "panel-reduction-tile must be positive, or 0 for the whole "
              "reduction, found "
           << options.panelReductionTile;
  MLIRContext *ctx = root->getContext();

  SmallVector<linalg::LinalgOp> ops;
  root->walk([&](linalg::LinalgOp op) {
    if (op.hasPureTensorSemantics() && op.getNumDpsInits() == 1 &&
        op.getNumLoops() > 0 &&
        !llvm::is_contained(op.getStaticLoopRanges(), 0)) // Nothing to do.
      ops.push_back(op);
  });

  // 1. Register tiles (upstream tiling through the TilingInterface), each
  //    vectorized right away while its tiling is known.
  auto vectorizeTile = [&](linalg::LinalgOp tile) {
    // Only full tiles (static shapes) vectorize; see the file comment.
    if (tile.hasDynamicShape())
      return;
    if (linalg::isaContractionOpInterface(tile))
      tile = dropUnitLoopsOfContraction(rewriter, tile);
    if (failed(linalg::vectorizeOpPrecondition(tile)))
      return; // Stays a linalg op: scalar loops later, still correct.
    rewriter.setInsertionPoint(tile);
    FailureOr<linalg::VectorizationResult> vectorized =
        linalg::vectorize(rewriter, tile);
    if (succeeded(vectorized))
      rewriter.replaceOp(tile, vectorized->replacements);
  };
  auto vectorizeOp = [&](linalg::LinalgOp op) {
    RegisterTiling tiling = chooseRegisterTiling(op, options);
    if (auto fused = tileWithFusedInit(rewriter, op, tiling)) {
      if (fused->second)
        vectorizeTile(fused->second);
      vectorizeTile(fused->first);
      return;
    }
    vectorizeTile(tileOp(rewriter, op, tiling));
  };
  BlockedCopies copies;
  auto padPackAndVectorize = [&](linalg::LinalgOp op) {
    for (linalg::LinalgOp part : packColumnPanels(
             rewriter, padToStaticShape(rewriter, op), options, copies))
      vectorizeOp(part);
  };
  // Contractions first: the producers of their accumulators they fuse
  // (tileWithFusedInit) are then left without uses, and erased rather than
  // vectorized on their own.
  SmallVector<linalg::LinalgOp> rest;
  for (linalg::LinalgOp op : ops) {
    if (!linalg::isaContractionOpInterface(op)) {
      rest.push_back(op);
    } else if (std::optional<DotProductScores> scores =
                   splitScoresIntoDotProducts(rewriter, op, options)) {
      for (linalg::LinalgOp tile : scores->tiles)
        vectorizeTile(tile);
      if (scores->untiled)
        padPackAndVectorize(scores->untiled);
    } else {
      padPackAndVectorize(op);
    }
  }
  for (linalg::LinalgOp op : rest) {
    if (op->use_empty()) {
      rewriter.eraseOp(op);
      continue;
    }
    // A transpose of a block of a value defined outside the loops (a key
    // block, transposed for q·kᵀ) reads a copy of the value transposed
    // block by block once, instead of transposing every block it visits
    // (per query tile: S / q-tile-size times per call).
    auto transpose = dyn_cast<linalg::TransposeOp>(op.getOperation());
    if (transpose && !isInKeyLoopReadOnce(transpose)) {
      SmallVector<linalg::LinalgOp> created;
      rewriter.setInsertionPoint(transpose);
      if (Value block = readFromBlockedCopy(rewriter, transpose.getInput(),
                                            transpose.getPermutation(),
                                            copies, created)) {
        rewriter.replaceOp(transpose, block);
        for (linalg::LinalgOp copy : created)
          vectorizeOp(copy);
        continue;
      }
    }
    padPackAndVectorize(op);
  }

  // 2. Broadcasts folded into the contractions (reduction_to_contract), unit
  //    dims dropped. The IR is valid whether or not a pattern set converges:
  //    what is left unfolded only costs speed.
  auto apply = [&](function_ref<void(RewritePatternSet &)> populate) {
    RewritePatternSet patterns(ctx);
    populate(patterns);
    (void)applyPatternsGreedily(root, std::move(patterns));
  };
  apply([](RewritePatternSet &p) {
    vector::populateVectorTransferPermutationMapLoweringPatterns(p);
  });
  apply([](RewritePatternSet &p) {
    vector::populateVectorReductionToContractPatterns(p);
    p.add<TreeReduceLanes>(p.getContext());
  });
  apply([&](RewritePatternSet &p) {
    vector::populateCastAwayVectorLeadingOneDimPatterns(p);
    vector::populateVectorTransferDropUnitDimsPatterns(p);
    vector::TransferReadOp::getCanonicalizationPatterns(p, ctx);
    vector::TransferWriteOp::getCanonicalizationPatterns(p, ctx);
    vector::ContractionOp::getCanonicalizationPatterns(p, ctx);
    tensor::populateFoldTensorEmptyPatterns(p);
  });

  // 3. Accumulators out of the reduction loops: each loop-invariant
  //    extract/insert pair and transfer_read/write pair on a loop-carried
  //    tensor is hoisted, innermost loops first, so the k loop carries the
  //    accumulator as a vector value.
  SmallVector<scf::ForOp> loops;
  root->walk([&](scf::ForOp loop) { loops.push_back(loop); });
  for (scf::ForOp loop : loops)
    (void)hoistLoopInvariantSubsets(rewriter,
                                    cast<LoopLikeOpInterface>(*loop));

  // 4. Slices folded into the transfers, so that a register tile's read of
  //    the constant its fused fill wrote (now before the reduction loop)
  //    folds to that constant. Only after the hoisting: a read folded into
  //    its loop-carried tensor no longer pairs with its write's slice.
  apply([&](RewritePatternSet &p) {
    tensor::populateFoldTensorSubsetIntoVectorTransferPatterns(p);
    vector::TransferReadOp::getCanonicalizationPatterns(p, ctx);
    vector::TransferWriteOp::getCanonicalizationPatterns(p, ctx);
  });
  return success();
}

namespace {

struct MHAVectorizePass final
    : mha::impl::MHAVectorizePassBase<MHAVectorizePass> {
  using MHAVectorizePassBase::MHAVectorizePassBase;

  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    for (FunctionOpInterface func : functionsUnder(getOperation())) {
      // A given option, else the function's lowering configuration, else the
      // default (register tiles: from the vector width).
      LoweringConfigAttr config = getLoweringConfig(func);
      TargetAttr target = getTarget(func);
      ArrayRef<int64_t> tile =
          config ? config.getRegisterTile() : ArrayRef<int64_t>();
      auto pick = [](int64_t given, int64_t configured, int64_t otherwise) {
        return given ? given : configured ? configured : otherwise;
      };
      VectorizeOptions options;
      options.vectorWidth =
          pick(vectorWidth, target ? target.getVectorBits() : 0, 512);
      options.registerTileRows =
          pick(registerTileRows, tile.empty() ? 0 : tile[0], 0);
      options.registerTileCols =
          pick(registerTileCols, tile.empty() ? 0 : tile[1], 0);
      options.chunk =
          pick(chunk, config ? config.getChunk().value_or(0) : 0, 64);
      options.packMinStride = packMinStride;
      options.panelReductionTile = panelReductionTile;
      // Parallel loops peeled, so that their tiles but the last have static
      // sizes, which upstream's canonicalizer carries into the ops of the
      // bodies (with the greedy driver's default configuration).
      if (peelParallelLoops(rewriter, func)) {
        OpPassManager canonicalize;
        canonicalize.addPass(createCanonicalizerPass(GreedyRewriteConfig()));
        if (failed(runPipeline(canonicalize, func)))
          return signalPassFailure();
      }
      if (failed(vectorizeLinalgOps(rewriter, func, options)))
        return signalPassFailure();
    }
  }
};

} // namespace
