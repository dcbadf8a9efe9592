//===- PrefetchKeyBlocks.cpp - software prefetch of the next key blocks ---===//
//
// A key loop that reads its key and value blocks' rows as they lie in memory
// (decoding) prefetches the rows of the blocks ahead while it computes the
// current one (see the pass description).
//
//===----------------------------------------------------------------------===//

#include "mha/Codegen/CPU/Passes.h"
#include "mha/Codegen/CPU/Transforms.h"
#include "mha/Dialect/MHA/Transforms/Transforms.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::mha {
#define GEN_PASS_DEF_MHAPREFETCHKEYBLOCKSPASS
#include "mha/Codegen/CPU/Passes.h.inc"
} // namespace mlir::mha

using namespace mlir;

namespace {
/// A block of rows a key loop slices from a buffer at each step.
struct RowBlock {
  memref::SubViewOp block;
  /// The source's dim the key loop walks.
  unsigned rowDim;
  /// The static sizes of the dims after it (one contiguous row).
  SmallVector<int64_t> rowShape;
};
} // namespace

/// `view` as a block of `step` rows at `loop`'s induction variable of a
/// buffer defined outside `loop`: unit strides, the induction variable the
/// offset of one dim (`step` rows of it), every other offset and size
/// defined outside the loop, and the dims after the row dim whole, static
/// and contiguous in the source.
static std::optional<RowBlock>
matchRowBlock(scf::ForOp loop, memref::SubViewOp view, int64_t step) {
  Value source = view.getSource();
  auto type = dyn_cast<MemRefType>(source.getType());
  if (!type || !loop.isDefinedOutsideOfLoop(source) ||
      view.getType().getRank() != type.getRank() ||
      !type.getElementType().isIntOrFloat() ||
      type.getElementTypeBitWidth() % 8 != 0)
    return std::nullopt;
  if (!llvm::all_of(view.getMixedStrides(), [](OpFoldResult stride) {
        return isConstantIntValue(stride, 1);
      }))
    return std::nullopt;
  SmallVector<OpFoldResult> offsets = view.getMixedOffsets(),
                            sizes = view.getMixedSizes();
  std::optional<unsigned> rowDim;
  for (auto [dim, offset] : llvm::enumerate(offsets)) {
    auto value = dyn_cast<Value>(offset);
    if (value && value == loop.getInductionVar()) {
      if (rowDim)
        return std::nullopt;
      rowDim = dim;
    } else if (value && !loop.isDefinedOutsideOfLoop(value)) {
      return std::nullopt;
    }
  }
  if (!rowDim || getConstantIntValue(sizes[*rowDim]) != step)
    return std::nullopt;
  for (OpFoldResult size : sizes)
    if (auto value = dyn_cast<Value>(size);
        value && !loop.isDefinedOutsideOfLoop(value))
      return std::nullopt;
  SmallVector<int64_t> strides;
  int64_t sourceOffset;
  if (failed(type.getStridesAndOffset(strides, sourceOffset)))
    return std::nullopt;
  RowBlock result{view, *rowDim, {}};
  int64_t contiguous = 1;
  for (int64_t dim = type.getRank() - 1; dim > int64_t(*rowDim); --dim) {
    int64_t extent = type.getDimSize(dim);
    if (ShapedType::isDynamic(extent) || !isZeroInteger(offsets[dim]) ||
        getConstantIntValue(sizes[dim]) != extent || strides[dim] != contiguous)
      return std::nullopt;
    contiguous *= extent;
    result.rowShape.insert(result.rowShape.begin(), extent);
  }
  return result;
}

/// The views of `block` (through view-like ops) if every other use of them
/// only reads; nothing if one writes or escapes.
static std::optional<SmallVector<Value>> readOnlyViews(Value block) {
  SmallVector<Value> views{block};
  for (size_t i = 0; i < views.size(); ++i) {
    for (OpOperand &use : views[i].getUses()) {
      Operation *user = use.getOwner();
      if (auto view = dyn_cast<ViewLikeOpInterface>(user);
          view && view.getViewSource() == views[i]) {
        views.push_back(view->getResult(0));
        continue;
      }
      if (isa<vector::TransferReadOp, vector::LoadOp, memref::LoadOp>(user))
        continue;
      if (auto copy = dyn_cast<memref::CopyOp>(user);
          copy && copy.getSource() == views[i])
        continue;
      return std::nullopt;
    }
  }
  return views;
}

/// The indices of a read op, and the memref it reads.
static std::optional<std::pair<Value, ValueRange>> readOf(Operation *op) {
  if (auto read = dyn_cast<vector::TransferReadOp>(op))
    return std::pair<Value, ValueRange>(read.getBase(), read.getIndices());
  if (auto load = dyn_cast<vector::LoadOp>(op))
    return std::pair<Value, ValueRange>(load.getBase(), load.getIndices());
  if (auto load = dyn_cast<memref::LoadOp>(op))
    return std::pair<Value, ValueRange>(load.getMemRef(), load.getIndices());
  return std::nullopt;
}

/// The first loop nested in `keyLoop` that walks the rows of a block of
/// `step` rows: range [0, step) by a constant step, and a read of one of
/// `views` indexed by its induction variable.
static scf::ForOp findRowLoop(scf::ForOp keyLoop, ArrayRef<Value> views,
                              int64_t step) {
  scf::ForOp found;
  keyLoop.getBody()->walk<WalkOrder::PreOrder>([&](scf::ForOp loop) {
    std::optional<int64_t> lower = getConstantIntValue(loop.getLowerBound()),
                           upper = getConstantIntValue(loop.getUpperBound()),
                           by = getConstantIntValue(loop.getStep());
    if (lower != 0 || upper != step || !by || *by <= 0)
      return WalkResult::advance();
    WalkResult reads = loop.getBody()->walk([&](Operation *op) {
      std::optional<std::pair<Value, ValueRange>> read = readOf(op);
      if (read && llvm::is_contained(views, read->first) &&
          llvm::is_contained(read->second, loop.getInductionVar()))
        return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (!reads.wasInterrupted())
      return WalkResult::advance();
    found = loop;
    return WalkResult::interrupt();
  });
  return found;
}

unsigned mha::prefetchKeyBlocks(RewriterBase &rewriter, scf::ForOp keyLoop,
                                int64_t blocks, int64_t lineBytes) {
  std::optional<int64_t> step = getConstantIntValue(keyLoop.getStep());
  if (blocks <= 0 || lineBytes <= 0 || !step || *step <= 0)
    return 0;
  SmallVector<RowBlock> rowBlocks;
  for (auto view : keyLoop.getBody()->getOps<memref::SubViewOp>())
    if (std::optional<RowBlock> block = matchRowBlock(keyLoop, view, *step))
      rowBlocks.push_back(*block);
  unsigned prefetched = 0;
  for (RowBlock &rows : rowBlocks) {
    std::optional<SmallVector<Value>> views =
        readOnlyViews(rows.block.getResult());
    if (!views)
      continue;
    scf::ForOp rowLoop = findRowLoop(keyLoop, *views, *step);
    if (!rowLoop)
      continue;
    Location loc = rows.block.getLoc();
    Value source = rows.block.getSource();
    // The source's last row, before the key loop (it holds at least the
    // rows of the blocks the loop reads, so it has one where the loop runs).
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPoint(keyLoop);
    // Index constants before the key loop, one of each value.
    llvm::SmallDenseMap<int64_t, Value> constants;
    auto constant = [&](int64_t value) {
      Value &c = constants[value];
      if (!c)
        c = arith::ConstantIndexOp::create(rewriter, loc, value);
      return c;
    };
    Value lastRow = arith::SubIOp::create(
        rewriter, loc,
        memref::DimOp::create(rewriter, loc, source, constant(rows.rowDim))
            .getResult(),
        constant(1));
    SmallVector<Value> leading;
    for (OpFoldResult offset :
         ArrayRef(rows.block.getMixedOffsets()).take_front(rows.rowDim)) {
      std::optional<int64_t> known = getConstantIntValue(offset);
      leading.push_back(known ? constant(*known) : cast<Value>(offset));
    }
    // The byte offsets in a row of the lines to prefetch: one per line, and
    // the row's last element where the row does not end on a line (a row
    // that does not start on one then reaches into one more line).
    int64_t elementBytes =
        cast<MemRefType>(source.getType()).getElementTypeBitWidth() / 8;
    int64_t rowBytes = elementBytes;
    for (int64_t extent : rows.rowShape)
      rowBytes *= extent;
    SmallVector<int64_t> lineElements;
    for (int64_t byte = 0; byte < rowBytes; byte += lineBytes)
      lineElements.push_back(byte / elementBytes);
    if (rowBytes % lineBytes != 0 && rowBytes > elementBytes)
      lineElements.push_back(rowBytes / elementBytes - 1);
    // Each line's indices in the row's dims (row-major), and the rows of a
    // step of the row loop, as constants before the key loop.
    SmallVector<SmallVector<Value>> lineIndices;
    for (int64_t element : lineElements) {
      SmallVector<Value> &indices = lineIndices.emplace_back();
      for (int64_t extent : llvm::reverse(rows.rowShape)) {
        indices.insert(indices.begin(), constant(element % extent));
        element /= extent;
      }
    }
    int64_t rowStep = *getConstantIntValue(rowLoop.getStep());
    SmallVector<Value> rowOffsets;
    for (int64_t r = 0; r < rowStep; ++r)
      rowOffsets.push_back(constant(blocks * *step + r));

    // Row i + blocks·step + j + r of the source, for each r of a step j.
    rewriter.setInsertionPointToStart(rowLoop.getBody());
    Value base = arith::AddIOp::create(rewriter, loc, keyLoop.getInductionVar(),
                                       rowLoop.getInductionVar());
    for (Value offset : rowOffsets) {
      Value row = arith::AddIOp::create(rewriter, loc, base, offset);
      row = arith::MinUIOp::create(rewriter, loc, row, lastRow);
      for (ArrayRef<Value> inRow : lineIndices) {
        SmallVector<Value> indices(leading);
        indices.push_back(row);
        indices.append(inRow.begin(), inRow.end());
        memref::PrefetchOp::create(rewriter, loc, source, indices,
                                   /*isWrite=*/false, /*localityHint=*/3,
                                   /*isDataCache=*/true);
      }
    }
    ++prefetched;
  }
  return prefetched;
}

namespace {

struct MHAPrefetchKeyBlocksPass final
    : mha::impl::MHAPrefetchKeyBlocksPassBase<MHAPrefetchKeyBlocksPass> {
  using MHAPrefetchKeyBlocksPassBase::MHAPrefetchKeyBlocksPassBase;

  void runOnOperation() override {
    if (cacheLineBytes <= 0) {
      getOperation()->emitError()
          << "mha-prefetch-key-blocks: cache-line-bytes must be positive, "
             "found "
          << cacheLineBytes.getValue();
      return signalPassFailure();
    }
    SmallVector<std::pair<scf::ForOp, int64_t>> loops;
    getOperation()->walk([&](scf::ForOp loop) {
      if (auto blocks =
              loop->getAttrOfType<IntegerAttr>(mha::kPrefetchBlocksAttrName))
        loops.emplace_back(loop, blocks.getInt());
    });
    IRRewriter rewriter(&getContext());
    for (auto [loop, blocks] : loops)
      mha::prefetchKeyBlocks(rewriter, loop, blocks, cacheLineBytes.getValue());
  }
};

} // namespace
