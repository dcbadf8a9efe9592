//===- GPUMapping.h - helpers the GPU mapping steps share --------*- C++
//-*-===//
//
// Internal to lib/Codegen/GPU: what the GPU mapping's steps
// (DistributeToThreads.cpp, MapForallToGPU.cpp, TileForWorkgroups.cpp,
// StageKernelBuffers.cpp) share.
//
//===----------------------------------------------------------------------===//

#ifndef MHA_LIB_DIALECT_MHA_TRANSFORMS_GPUMAPPING_H
#define MHA_LIB_DIALECT_MHA_TRANSFORMS_GPUMAPPING_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

namespace mlir::mha::detail {

/// The threads per workgroup of `func`'s kernels: `given` if non-zero, else
/// its lowering configuration's; an error at `func` where neither is
/// positive.
FailureOr<int64_t> resolveThreads(FunctionOpInterface func, int64_t given);

/// The scf.forall ops not nested in another scf.forall.
SmallVector<scf::ForallOp> topLevelForalls(Operation *root);

/// `input` of `op` replaced by a copy of it into a new tile tensor (made
/// right before `op`; workgroup memory once distributeToThreads allocates
/// it), which the threads then share.
void stageInput(RewriterBase &rewriter, linalg::LinalgOp op, OpOperand *input);

/// `op` tiled into an scf.forall over GPU threads along its first parallel
/// loop (not of size 1): ceil(n / threads) iterations per thread. On tensors
/// or buffers; `op` is replaced.
LogicalResult distributeOp(RewriterBase &rewriter, linalg::LinalgOp op,
                           int64_t threads);

/// Where the buffer an allocation made is used, views included.
struct BufferUses {
  bool host = false;    // read or written by host code
  bool escapes = false; // returned, or given to something unknown
};

BufferUses classifyUses(Value buffer);

} // namespace mlir::mha::detail

#endif // MHA_LIB_DIALECT_MHA_TRANSFORMS_GPUMAPPING_H
