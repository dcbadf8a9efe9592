//===- RejoinPeeledLoops.cpp - peeled parallel loops as one loop ----------===//
//
// The scf.forall loops that mha-vectorize peeled off one parallel loop (on
// memrefs, after bufferization) become one scf.forall again, whose body
// runs the full or the partial tile's code (see the pass description).
// Before bufferization, each peeled loop gets its own copy of the tensors
// from outside that it writes, so that no two of them share a buffer once
// joined.
//
//===----------------------------------------------------------------------===//

#include "mha/Codegen/CPU/Passes.h"
#include "mha/Codegen/CPU/Transforms.h"
#include "mha/Dialect/MHA/IR/MHADialect.h"
#include "mha/Dialect/MHA/Transforms/Transforms.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::mha {
#define GEN_PASS_DEF_MHAPRIVATIZEPEELEDLOOPSPASS
#define GEN_PASS_DEF_MHAREJOINPEELEDLOOPSPASS
#include "mha/Codegen/CPU/Passes.h.inc"
} // namespace mlir::mha

using namespace mlir;

/// Whether peelParallelLoop made `loop` (its mapping is #mha.peeled).
static bool isPeeled(scf::ForallOp loop) {
  std::optional<ArrayAttr> mapping = loop.getMapping();
  return mapping && !mapping->empty() &&
         llvm::all_of(*mapping, llvm::IsaPred<mha::PeeledDimAttr>);
}

/// Whether the buffer of `operand` may be written: by its owner, or through
/// a value that aliases it (a slice of it written later), as one-shot
/// bufferization's interfaces say (ops without them count as writing).
static bool mayBeWritten(OpOperand &operand,
                         const bufferization::AnalysisState &state,
                         DenseSet<OpOperand *> &seen) {
  if (!seen.insert(&operand).second)
    return false;
  if (state.bufferizesToMemoryWrite(operand))
    return true;
  for (const bufferization::AliasingValue &alias :
       state.getAliasingValues(operand))
    for (OpOperand &use : alias.value.getUses())
      if (mayBeWritten(use, state, seen))
        return true;
  return false;
}

void mha::privatizePeeledLoops(RewriterBase &rewriter, Operation *root) {
  bufferization::BufferizationOptions options;
  bufferization::AnalysisState state(options);
  SmallVector<scf::ForallOp> loops;
  root->walk([&](scf::ForallOp loop) {
    if (isPeeled(loop))
      loops.push_back(loop);
  });
  for (scf::ForallOp loop : loops) {
    Region &body = loop.getRegion();
    // One copy per loop of each tensor from outside: made at the start of
    // the body, so it dominates every use there.
    DenseMap<Value, Value> copies;
    auto privateCopy = [&](Value tensor) -> Value {
      Value &copy = copies[tensor];
      if (copy)
        return copy;
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(loop.getBody());
      if (auto empty = tensor.getDefiningOp<tensor::EmptyOp>()) {
        // Nothing to copy: a new empty tensor of the same sizes.
        copy = rewriter.clone(*empty)->getResult(0);
      } else {
        // Sizes come from the copied tensor.
        copy = bufferization::AllocTensorOp::create(
            rewriter, tensor.getLoc(), cast<RankedTensorType>(tensor.getType()),
            /*dynamicSizes=*/ValueRange(), /*copy=*/tensor);
      }
      return copy;
    };
    SmallVector<OpOperand *> written;
    body.walk([&](Operation *op) {
      for (OpOperand &operand : op->getOpOperands()) {
        Value value = operand.get();
        if (!isa<RankedTensorType>(value.getType()) ||
            body.isAncestor(value.getParentRegion()))
          continue;
        // An empty tensor is privatized whatever the use (its buffer is
        // only ever what a loop writes into it); another tensor where the
        // use may write into its buffer.
        DenseSet<OpOperand *> seen;
        if (value.getDefiningOp<tensor::EmptyOp>() ||
            mayBeWritten(operand, state, seen))
          written.push_back(&operand);
      }
    });
    for (OpOperand *operand : written) {
      Value copy = privateCopy(operand->get());
      rewriter.modifyOpInPlace(operand->getOwner(),
                               [&] { operand->set(copy); });
    }
  }
}

/// The dim along which `second` continues `first`: the two have the same
/// steps and the same bounds in every other dim, and `first` ends where
/// `second` starts in that one. Loops on tensors (with results) never
/// qualify: their bodies cannot move into an scf.if.
static std::optional<unsigned> continuedDim(scf::ForallOp first,
                                            scf::ForallOp second) {
  if (first.getNumResults() || second.getNumResults() ||
      first.getRank() != second.getRank() ||
      first.getMapping() != second.getMapping() ||
      first.getMixedStep() != second.getMixedStep())
    return std::nullopt;
  SmallVector<OpFoldResult> lbs1 = first.getMixedLowerBound(),
                            ubs1 = first.getMixedUpperBound(),
                            lbs2 = second.getMixedLowerBound(),
                            ubs2 = second.getMixedUpperBound();
  std::optional<unsigned> dim;
  for (unsigned d = 0, e = first.getRank(); d < e; ++d) {
    if (lbs1[d] == lbs2[d] && ubs1[d] == ubs2[d])
      continue;
    if (dim || ubs1[d] != lbs2[d])
      return std::nullopt;
    dim = d;
  }
  return dim;
}

/// Moves the body of `from` (its terminator dropped) into `to` before its
/// terminator, with `ivs` for its induction variables.
static void moveBody(RewriterBase &rewriter, scf::ForallOp from, Block *to,
                     ValueRange ivs) {
  Block *body = from.getBody();
  rewriter.eraseOp(body->getTerminator());
  rewriter.inlineBlockBefore(body, to->getTerminator(), ivs);
}

/// `first` and `second` (after it, continuing it along `dim`) as one loop
/// at the place of `second`: its range the two ranges together, its body
/// `scf.if iv < split` with the body of `first` then, of `second` else.
static scf::ForallOp rejoin(RewriterBase &rewriter, scf::ForallOp first,
                            scf::ForallOp second, unsigned dim) {
  Location loc = second.getLoc();
  rewriter.setInsertionPoint(second);
  SmallVector<OpFoldResult> ubs = first.getMixedUpperBound();
  OpFoldResult split = ubs[dim];
  ubs[dim] = second.getMixedUpperBound()[dim];
  auto joined = scf::ForallOp::create(
      rewriter, loc, first.getMixedLowerBound(), ubs, first.getMixedStep(),
      /*outputs=*/ValueRange(), first.getMapping());
  rewriter.setInsertionPointToStart(joined.getBody());
  SmallVector<Value> ivs(joined.getInductionVars());
  Value inFirst = arith::CmpIOp::create(
      rewriter, loc, arith::CmpIPredicate::slt, ivs[dim],
      getValueOrCreateConstantIndexOp(rewriter, loc, split));
  auto branch = scf::IfOp::create(rewriter, loc, inFirst,
                                  /*withElseRegion=*/true);
  moveBody(rewriter, first, branch.thenBlock(), ivs);
  moveBody(rewriter, second, branch.elseBlock(), ivs);
  rewriter.eraseOp(first);
  rewriter.eraseOp(second);
  return joined;
}

void mha::rejoinPeeledLoops(RewriterBase &rewriter, Operation *root) {
  // Pairs in order: a loop peeled along several dims is split along the
  // first dim, then each part along the second, ..., so the last split
  // pairs are adjacent and rejoin first, and their results pair up next.
  bool changed = true;
  while (changed) {
    changed = false;
    SmallVector<scf::ForallOp> loops;
    root->walk([&](scf::ForallOp loop) {
      if (isPeeled(loop))
        loops.push_back(loop);
    });
    for (scf::ForallOp second : loops) {
      // The closest peeled loop before `second`, with nothing but pure ops
      // between (the iterations of the loops peeled off one loop are
      // independent; ops with effects between them would see the first's
      // writes). Loops peeled off two loops never continue each other's
      // ranges with nothing between them: the second's full loop would be
      // there.
      scf::ForallOp first;
      for (Operation *op = second->getPrevNode(); op; op = op->getPrevNode()) {
        auto loop = dyn_cast<scf::ForallOp>(op);
        if (loop && isPeeled(loop)) {
          first = loop;
          break;
        }
        if (!isPure(op))
          break;
      }
      if (!first)
        continue;
      if (std::optional<unsigned> dim = continuedDim(first, second)) {
        rejoin(rewriter, first, second, *dim);
        changed = true;
        break;
      }
    }
  }
  root->walk([&](scf::ForallOp loop) {
    if (isPeeled(loop))
      rewriter.modifyOpInPlace(loop, [&] { loop.setMappingAttr(nullptr); });
  });
}

namespace {

struct MHAPrivatizePeeledLoopsPass final
    : mha::impl::MHAPrivatizePeeledLoopsPassBase<MHAPrivatizePeeledLoopsPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    mha::privatizePeeledLoops(rewriter, getOperation());
  }
};

struct MHARejoinPeeledLoopsPass final
    : mha::impl::MHARejoinPeeledLoopsPassBase<MHARejoinPeeledLoopsPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    mha::rejoinPeeledLoops(rewriter, getOperation());
  }
};

} // namespace
