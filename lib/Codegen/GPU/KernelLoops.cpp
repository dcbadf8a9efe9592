//===- KernelLoops.cpp - Bound the loop iterations of GPU kernels ---------===//
//
// Two steps on the loops inside gpu.launch bodies, for drivers that limit how
// many loop iterations an invocation may run:
//   - unrollKernelLoops fully unrolls the innermost scf.for loops with a
//     small constant trip count (upstream's loopUnrollFull), so that an
//     invocation runs fewer loop iterations (and the kernel fewer branches);
//   - checkKernelLoopIterations bounds, with upstream's value-bounds and
//     integer range analyses, the loop iterations one invocation of each
//     kernel may run as lavapipe counts them (every loop's trip count plus
//     one, for the test that ends it, times the trip counts of the loops
//     around it, summed) and stops with an error where the bound passes a
//     limit or cannot be found.
// Lavapipe (Mesa's llvmpipe) needs both: its shader compiler (gallivm) keeps
// one loop-iteration counter per invocation for all loops of the shader,
// starting at 65535, and once it runs out every loop exits after its current
// iteration, without an error. An attention kernel over long keys ran its
// later loops once each after ~50 key blocks and wrote garbage.
//
//===----------------------------------------------------------------------===//

#include "mha/Codegen/GPU/Passes.h"
#include "mha/Codegen/GPU/Transforms.h"
#include "mha/Dialect/MHA/Transforms/Transforms.h"

#include "mlir/Analysis/DataFlow/IntegerRangeAnalysis.h"
#include "mlir/Analysis/DataFlow/Utils.h"
#include "mlir/Analysis/DataFlowFramework.h"
#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Interfaces/ValueBoundsOpInterface.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/ADT/ScopeExit.h"

namespace mlir::mha {
#define GEN_PASS_DEF_MHACHECKKERNELLOOPITERATIONSPASS
#define GEN_PASS_DEF_MHAUNROLLKERNELLOOPSPASS
#include "mha/Codegen/GPU/Passes.h.inc"
} // namespace mlir::mha

using namespace mlir;

/// The trip count of `loop` when it is a constant.
static std::optional<int64_t> staticTripCount(scf::ForOp loop) {
  std::optional<APInt> count = loop.getStaticTripCount();
  if (!count || count->getActiveBits() > 62)
    return std::nullopt;
  return count->getZExtValue();
}

void mha::unrollKernelLoops(Operation *root, int64_t maxTripCount) {
  SmallVector<scf::ForOp> innermost;
  root->walk([&](gpu::LaunchOp launch) {
    launch.getBody().walk([&](scf::ForOp loop) {
      bool hasInnerLoop = false;
      loop.getBody()->walk([&](LoopLikeOpInterface) { hasInnerLoop = true; });
      std::optional<int64_t> count = staticTripCount(loop);
      if (!hasInnerLoop && count && *count > 1 && *count <= maxTripCount)
        innermost.push_back(loop);
    });
  });
  // loopUnrollFull fails only on loops it cannot unroll (none of these:
  // constant bounds); such a loop is left as it is, and counted as a loop.
  for (scf::ForOp loop : innermost)
    (void)loopUnrollFull(loop);
}

/// An upper bound of the trip count of `loop` from the value-bounds
/// analysis: ceil(max(ub - lb) / step). It relates ub and lb (both offsets of
/// one block), but stops at what it cannot express (affine.max from above).
static FailureOr<int64_t> valueBoundsTripCount(scf::ForOp loop) {
  if (std::optional<int64_t> count = staticTripCount(loop))
    return *count;
  std::optional<int64_t> step = getConstantIntValue(loop.getStep());
  if (!step || *step <= 0)
    return failure();
  MLIRContext *context = loop.getContext();
  AffineExpr ub, lb;
  bindDims(context, ub, lb);
  ValueBoundsConstraintSet::Variable span(
      AffineMap::get(2, 0, ub - lb, context),
      ValueRange{loop.getUpperBound(), loop.getLowerBound()});
  FailureOr<int64_t> maxSpan = ValueBoundsConstraintSet::computeConstantBound(
      presburger::BoundType::UB, span, /*stopCondition=*/nullptr,
      /*closedUB=*/true);
  if (failed(maxSpan))
    return failure();
  return llvm::divideCeil(std::max<int64_t>(*maxSpan, 0), *step);
}

/// An upper bound of the trip count of `loop` from the integer range
/// analysis (`ranges`, run on arith IR): ceil((max ub - min lb) / step). It
/// does not relate ub and lb, but bounds every min, max and division.
static FailureOr<int64_t> rangeTripCount(scf::ForOp loop,
                                         DataFlowSolver &ranges) {
  if (std::optional<int64_t> count = staticTripCount(loop))
    return *count;
  auto range = [&](Value value) -> std::optional<ConstantIntRanges> {
    auto *lattice =
        ranges.lookupState<dataflow::IntegerValueRangeLattice>(value);
    if (!lattice || lattice->getValue().isUninitialized())
      return std::nullopt;
    return lattice->getValue().getValue();
  };
  std::optional<ConstantIntRanges> upper = range(loop.getUpperBound());
  std::optional<ConstantIntRanges> lower = range(loop.getLowerBound());
  std::optional<ConstantIntRanges> step = range(loop.getStep());
  if (!upper || !lower || !step || step->smin().isNonPositive())
    return failure();
  // Index ranges are 64-bit; a span that overflows has no useful bound.
  bool overflow = false;
  APInt span = upper->smax().ssub_ov(lower->smin(), overflow);
  if (overflow || span.getSignificantBits() > 62)
    return failure();
  return llvm::divideCeil(std::max<int64_t>(span.getSExtValue(), 0),
                          step->smin().getSExtValue());
}

/// The scf.for loops of `root` in pre-order.
static SmallVector<scf::ForOp> loopsOf(Operation *root) {
  SmallVector<scf::ForOp> loops;
  root->walk<WalkOrder::PreOrder>([&](scf::ForOp loop) {
    loops.push_back(loop);
  });
  return loops;
}

/// The affine.min ops in `root` whose map has results the value-bounds
/// analysis cannot take (semi-affine: the product of a thread id and a
/// dynamic tile's ceil(rows / threads)) keep only their affine results. A
/// minimum over fewer terms is no smaller, so bounds computed on the relaxed
/// IR bound the original.
static void relaxSemiAffineMins(Operation *root) {
  SmallVector<affine::AffineMinOp> mins;
  root->walk([&](affine::AffineMinOp op) { mins.push_back(op); });
  for (affine::AffineMinOp op : mins) {
    AffineMap map = op.getMap();
    SmallVector<AffineExpr> kept;
    for (AffineExpr result : map.getResults())
      if (result.isPureAffine())
        kept.push_back(result);
    if (kept.empty() || kept.size() == map.getNumResults())
      continue;
    OpBuilder builder(op);
    auto relaxed = affine::AffineMinOp::create(
        builder, op.getLoc(),
        AffineMap::get(map.getNumDims(), map.getNumSymbols(), kept,
                       op.getContext()),
        op.getOperands());
    op.getResult().replaceAllUsesWith(relaxed.getResult());
    op.erase();
  }
}

/// The trip-count bound of each scf.for in `launch` (pre-order), the smaller
/// of the two analyses, each run on a copy of the launch made for it (and
/// erased): value bounds with the semi-affine minima relaxed, integer ranges
/// with affine ops lowered to arith. Failure (with an error) where neither
/// bounds a loop.
static FailureOr<SmallVector<int64_t>> tripCountBounds(gpu::LaunchOp launch) {
  OpBuilder builder(launch);
  auto relaxed = cast<gpu::LaunchOp>(builder.clone(*launch));
  auto lowered = cast<gpu::LaunchOp>(builder.clone(*launch));
  llvm::scope_exit eraseCopies([&] {
    relaxed.erase();
    lowered.erase();
  });
  relaxSemiAffineMins(relaxed);
  RewritePatternSet patterns(launch.getContext());
  populateAffineToStdConversionPatterns(patterns);
  if (failed(applyPatternsGreedily(lowered.getBody(), std::move(patterns))))
    return launch.emitError() << "could not lower the kernel's affine ops "
                                 "to bound its loops";
  DataFlowSolver ranges;
  dataflow::loadBaselineAnalyses(ranges);
  ranges.load<dataflow::IntegerRangeAnalysis>();
  // From the enclosing op: the dead-code analysis the range analysis rests
  // on marks blocks live from the entry of the op it starts at.
  Operation *scope = launch->getParentOp();
  if (failed(ranges.initializeAndRun(scope)))
    return launch.emitError() << "integer range analysis failed";

  SmallVector<scf::ForOp> loops = loopsOf(launch),
                          relaxedLoops = loopsOf(relaxed),
                          loweredLoops = loopsOf(lowered);
  assert(loops.size() == relaxedLoops.size() &&
         loops.size() == loweredLoops.size() && "copies keep their loops");
  SmallVector<int64_t> bounds;
  for (auto [loop, relaxedLoop, loweredLoop] :
       llvm::zip_equal(loops, relaxedLoops, loweredLoops)) {
    FailureOr<int64_t> byValue = valueBoundsTripCount(relaxedLoop);
    FailureOr<int64_t> byRange = rangeTripCount(loweredLoop, ranges);
    if (failed(byValue) && failed(byRange)) {
      emitError(loop.getLoc())
          << "the trip count of this kernel loop has no static bound, which "
             "the kernel loop iteration limit needs (from dynamic sizes, or "
             "a bound the value-bounds and range analyses cannot prove, e.g. "
             "a window's over a partial query tile: give the function static "
             "shapes, as the Vulkan calling convention needs anyway, choose "
             "other tile sizes, or set max-kernel-loop-iterations=0 on a "
             "driver without the limit)";
      return failure();
    }
    bounds.push_back(std::min(succeeded(byValue) ? *byValue : INT64_MAX,
                              succeeded(byRange) ? *byRange : INT64_MAX));
  }
  return bounds;
}

/// The loop iterations one invocation of `launch` may run, at most, as
/// lavapipe counts them: each loop's trip count plus one (the test that ends
/// it), times the trip counts of the loops around it, summed. Failure (with
/// an error) where a loop is not an scf.for or has no bound.
static FailureOr<int64_t> loopIterationBound(gpu::LaunchOp launch) {
  WalkResult others = launch.getBody().walk([&](LoopLikeOpInterface loop) {
    if (isa<scf::ForOp>(loop))
      return WalkResult::advance();
    emitError(loop->getLoc())
        << "a loop other than scf.for in a kernel: its trip count cannot be "
           "bounded for the kernel loop iteration limit";
    return WalkResult::interrupt();
  });
  if (others.wasInterrupted())
    return failure();
  FailureOr<SmallVector<int64_t>> trips = tripCountBounds(launch);
  if (failed(trips))
    return failure();
  // Saturating arithmetic on counts in [0, 2^62]: larger bounds are
  // reported as 2^62.
  constexpr int64_t huge = int64_t(1) << 62;
  auto mul = [&](int64_t a, int64_t b) {
    return (b != 0 && a > huge / b) ? huge : a * b;
  };
  auto add = [&](int64_t a, int64_t b) {
    return a > huge - b ? huge : a + b;
  };
  llvm::DenseMap<Operation *, int64_t> executions; // of each loop's body
  int64_t total = 0;
  for (auto [loop, trip] : llvm::zip_equal(loopsOf(launch), *trips)) {
    int64_t count = std::min(trip, huge);
    // Entered once per execution of the enclosing loop's body.
    int64_t entries = 1;
    if (auto parent = loop->getParentOfType<scf::ForOp>();
        parent && launch->isProperAncestor(parent))
      entries = executions.lookup(parent);
    executions[loop] = mul(entries, count);
    // Lavapipe's counter also takes the test that ends the loop: a loop of
    // n iterations costs n + 1 each time it runs (measured: 20000 runs of an
    // inner loop of 2 iterations exhaust 65535 at 16384 of them).
    total = add(total, mul(entries, add(count, 1)));
  }
  return total;
}

LogicalResult mha::checkKernelLoopIterations(Operation *root,
                                             int64_t maxIterations) {
  SmallVector<gpu::LaunchOp> launches;
  root->walk([&](gpu::LaunchOp launch) { launches.push_back(launch); });
  for (gpu::LaunchOp launch : launches) {
    FailureOr<int64_t> bound = loopIterationBound(launch);
    if (failed(bound))
      return failure();
    if (*bound <= maxIterations)
      continue;
    emitError(launch.getLoc())
        << "an invocation of this kernel may run " << *bound
        << " loop iterations, more than the " << maxIterations
        << " the target runs before it ends every loop without an error "
           "(lavapipe, Mesa's llvmpipe, counts 65535 per invocation); use "
           "larger tiles (kv-tile-size) or fewer keys, the cpu pipeline, or "
           "max-kernel-loop-iterations=0 on a driver without this limit";
    return failure();
  }
  return success();
}

namespace {

struct MHAUnrollKernelLoopsPass final
    : mha::impl::MHAUnrollKernelLoopsPassBase<MHAUnrollKernelLoopsPass> {
  using MHAUnrollKernelLoopsPassBase::MHAUnrollKernelLoopsPassBase;
  void runOnOperation() override {
    if (maxTripCount < 0) {
      getOperation()->emitError()
          << "max-trip-count must not be negative, found "
          << static_cast<int64_t>(maxTripCount);
      return signalPassFailure();
    }
    mha::unrollKernelLoops(getOperation(), maxTripCount);
  }
};

struct MHACheckKernelLoopIterationsPass final
    : mha::impl::MHACheckKernelLoopIterationsPassBase<
          MHACheckKernelLoopIterationsPass> {
  using MHACheckKernelLoopIterationsPassBase::
      MHACheckKernelLoopIterationsPassBase;
  void runOnOperation() override {
    if (maxIterations < 0) {
      getOperation()->emitError()
          << "max-iterations must not be negative, found "
          << static_cast<int64_t>(maxIterations);
      return signalPassFailure();
    }
    if (maxIterations > 0 &&
        failed(mha::checkKernelLoopIterations(getOperation(), maxIterations)))
      signalPassFailure();
  }
};

} // namespace
