//===- Transforms.h - CPU code generation -----------------------*- C++ -*-===//
//
// The algorithms behind the CPU code generation passes
// (mha/Codegen/CPU/Passes.td), callable from passes, transform ops and users'
// own pipelines.
//
//===----------------------------------------------------------------------===//

#ifndef MHA_CODEGEN_CPU_TRANSFORMS_H
#define MHA_CODEGEN_CPU_TRANSFORMS_H

#include "mha/Dialect/MHA/IR/MHAOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Support/LLVM.h"

namespace mlir {
class Operation;
class RewriterBase;

namespace mha {

/// Register tiles of the vector code (see mha-vectorize).
struct VectorizeOptions {
  /// The target's vector registers, in bits (512: AVX-512, 256: AVX2, 128:
  /// SSE or NEON): what the register tiles below default to.
  int64_t vectorWidth = 512;
  /// Rows of a contraction's output tile (one broadcast operand each); 0:
  /// from the vector width (defaultRegisterTile).
  int64_t registerTileRows = 0;
  /// Columns of a contraction's output tile, along the contiguous output
  /// dim: a multiple of the vector width; 0: from the vector width.
  int64_t registerTileCols = 0;
  /// Elements per step along the innermost loop of the other ops.
  int64_t chunk = 64;
  /// Contractions whose rhs rows are at least this many elements apart read
  /// it by contiguous column panels: packed once per call when the rhs is
  /// defined outside every loop, else copied per panel (negative: never).
  int64_t packMinStride = 256;
  /// Reduction steps per pass of the row tiles over a packed column panel
  /// (the classic kc blocking): a chunk of the panel stays in L1 while every
  /// row tile reads it, where the whole panel ([E x cols]: 48-96 KiB for
  /// E = 768) would stream from L2 for each. 0: the whole reduction.
  int64_t panelReductionTile = 0;
};

/// Cuts every linalg op on tensors under `root` into register tiles (upstream
/// scf::tileUsingSCF) and vectorizes the full ones (upstream
/// linalg::vectorize); contractions become outer products whose accumulator
/// is carried in registers across the reduction loop (starting there from a
/// fused fill or elementwise producer of it), and the strided weight panels
/// of long reductions are packed first. Ops of dynamic size are padded to
/// their static bounds; ops the vectorizer does not take stay linalg ops
/// (scalar loops later). Run peelParallelLoops and a canonicalization first
/// (mha-vectorize does), or partial tiles make every tile dynamic. Fails only
/// on non-positive tile sizes or vector widths.
LogicalResult vectorizeLinalgOps(RewriterBase &rewriter, Operation *root,
                                 const VectorizeOptions &options);

/// peelParallelLoop on every scf.forall under `root`. Returns whether a loop
/// was peeled: the static tile sizes then reach the ops of the bodies through
/// canonicalization.
bool peelParallelLoops(RewriterBase &rewriter, Operation *root);

/// Peels the last, partial iteration off every dimension of `loop` (an
/// scf.forall) whose lower bound and step are static and whose upper bound
/// is dynamic or not a multiple of the step away, into a second scf.forall
/// after it that carries on from the first's results. Returns the loops
/// that replace `loop`: first the one with the full steps, then the peeled
/// ones (just `loop` when nothing was peeled). Tile sizes computed in the
/// bodies (`affine.min(step, ub - iv)`) fold to constants (upstream's
/// scf::rewritePeeledMinMaxOp), so every tile of the first loop and of each
/// peeled loop has static sizes (what the vectorizer takes), where before
/// all of them were dynamic. The forall counterpart of upstream's
/// scf::peelForLoopAndSimplifyBounds. The loops (when `loop` has no mapping)
/// get the mapping `[#mha.peeled<0>, ...]`, which keeps the canonicalizer
/// from folding a loop of one iteration away, until rejoinPeeledLoops.
SmallVector<LoopLikeOpInterface> peelParallelLoop(RewriterBase &rewriter,
                                                  LoopLikeOpInterface loop);

/// Gives each scf.forall on tensors that peelParallelLoop made (mapping
/// `#mha.peeled`) its own copy of every tensor defined outside it that its
/// body may write into: a new tensor.empty for an empty one, a
/// bufferization.alloc_tensor copy of any other, at the start of the body.
/// One-shot bufferization privatizes such buffers per iteration only in
/// loops of more than one iteration; a peeled loop often has one (the
/// partial tile, or a single full tile), so without this the loops would
/// share buffers that rejoinPeeledLoops then makes concurrent. Run it last
/// before bufferization (CSE would merge the copies back).
void privatizePeeledLoops(RewriterBase &rewriter, Operation *root);

/// The scf.forall loops on memrefs that peelParallelLoop made of one loop
/// (after bufferization) joined again into one scf.forall over their ranges
/// together, whose body is an scf.if on the induction variable that runs the
/// code of the loop the iteration belongs to (the full tiles' or the
/// partial tile's, each with its static sizes), so that a parallel runtime
/// shares all the iterations out at once. Loops with ops other than pure
/// ones between them stay apart. Removes the `#mha.peeled` mapping from
/// every loop.
void rejoinPeeledLoops(RewriterBase &rewriter, Operation *root);

/// Software prefetches in `keyLoop`, an scf.for on memrefs (after
/// bufferization) that slices a block of rows from a buffer defined outside
/// it at each step (a memref.subview of `step` rows at its induction
/// variable, whole contiguous rows after that dim, only read): the first
/// loop nested in it that walks the block's rows (its range [0, step), its
/// induction variable indexing a read of the block) prefetches, at each of
/// its steps, every `lineBytes` cache line of the same rows `blocks` key
/// blocks ahead (clamped to the buffer's last row), so that they are on
/// their way from memory while the current block is computed. Returns the
/// number of blocks whose rows are prefetched (0 where nothing matched).
unsigned prefetchKeyBlocks(RewriterBase &rewriter, scf::ForOp keyLoop,
                           int64_t blocks, int64_t lineBytes = 64);

} // namespace mha
} // namespace mlir

#endif // MHA_CODEGEN_CPU_TRANSFORMS_H
