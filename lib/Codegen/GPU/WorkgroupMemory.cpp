//===- WorkgroupMemory.cpp - Workgroup memory: its size and alignment -----===//
//
// The workgroup memory a kernel declares, checked against the target's limit
// before the back end: ptxas refuses static shared memory over 48 KiB only
// at the very end, printing the whole kernel module
// (mha-check-workgroup-memory); and aligned for the wide accesses kernels
// make to it (mha-align-workgroup-memory).
//
//===----------------------------------------------------------------------===//

#include "mha/Codegen/GPU/Passes.h"
#include "mha/Codegen/GPU/Transforms.h"
#include "mha/Dialect/MHA/IR/MHADialect.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Matchers.h"
#include "llvm/Support/MathExtras.h"

namespace mlir::mha {
#define GEN_PASS_DEF_MHAALIGNWORKGROUPMEMORYPASS
#define GEN_PASS_DEF_MHACHECKWORKGROUPMEMORYPASS
#include "mha/Codegen/GPU/Passes.h.inc"
} // namespace mlir::mha

using namespace mlir;

int64_t mha::layOutWorkgroupBuffers(TypeRange types,
                                    SmallVectorImpl<int64_t> *offsets) {
  int64_t bytes = 0;
  for (Type t : types) {
    auto type = cast<MemRefType>(t);
    int64_t elementBytes = llvm::divideCeil(type.getElementTypeBitWidth(), 8);
    bytes =
        llvm::alignTo(bytes, std::max(elementBytes, kWorkgroupMemoryAlignment));
    if (offsets)
      offsets->push_back(bytes);
    bytes += type.getNumElements() * elementBytes;
  }
  return bytes;
}

int64_t mha::getWorkgroupMemoryBytes(gpu::LaunchOp launch) {
  int64_t bytes = layOutWorkgroupBuffers(
      ValueRange(launch.getWorkgroupAttributions()).getTypes());
  APInt dynamicBytes;
  if (Value size = launch.getDynamicSharedMemorySize())
    if (matchPattern(size, m_ConstantInt(&dynamicBytes)))
      bytes += dynamicBytes.getSExtValue();
  return bytes;
}

void mha::alignWorkgroupMemory(Operation *root, int64_t bytes) {
  Builder builder(root->getContext());
  StringRef name = LLVM::LLVMDialect::getAlignAttrName();
  root->walk([&](gpu::GPUFuncOp func) {
    for (unsigned i = 0; i < func.getNumWorkgroupAttributions(); ++i)
      if (!func.getWorkgroupAttributionAttr(i, name))
        func.setWorkgroupAttributionAttr(i, name,
                                         builder.getI64IntegerAttr(bytes));
  });
}

LogicalResult mha::checkWorkgroupMemory(Operation *root, int64_t maxBytes,
                                        StringRef limitName) {
  bool exceeded = false;
  root->walk([&](gpu::LaunchOp launch) {
    int64_t bytes = getWorkgroupMemoryBytes(launch);
    if (bytes <= maxBytes)
      return;
    launch.emitError() << "the kernel's workgroup memory, " << bytes
                       << " bytes, exceeds the target's " << maxBytes << " ("
                       << limitName
                       << "): give smaller tiles (q-tile-size, "
                          "kv-tile-size, gemm-tile, gemm-stages)";
    exceeded = true;
  });
  return failure(exceeded);
}

namespace {

struct MHAAlignWorkgroupMemoryPass final
    : mha::impl::MHAAlignWorkgroupMemoryPassBase<MHAAlignWorkgroupMemoryPass> {
  using MHAAlignWorkgroupMemoryPassBase::MHAAlignWorkgroupMemoryPassBase;

  void runOnOperation() override {
    if (bytes <= 0 || !llvm::isPowerOf2_64(bytes)) {
      getOperation()->emitError()
          << "bytes must be a positive power of two, found "
          << static_cast<int64_t>(bytes);
      return signalPassFailure();
    }
    mha::alignWorkgroupMemory(getOperation(), bytes);
  }
};

struct MHACheckWorkgroupMemoryPass final
    : mha::impl::MHACheckWorkgroupMemoryPassBase<MHACheckWorkgroupMemoryPass> {
  using MHACheckWorkgroupMemoryPassBase::MHACheckWorkgroupMemoryPassBase;

  void runOnOperation() override {
    int64_t limit = maxBytes;
    StringRef limitName = "max-bytes";
    if (limit == 0)
      if (mha::TargetAttr target = mha::getTarget(getOperation())) {
        limit = target.getWorkgroupMemoryLimit();
        limitName = target.getWorkgroupMemoryLimitName();
      }
    if (limit < 0) {
      getOperation()->emitError()
          << "max-bytes must be positive (0: the target's), found " << limit;
      return signalPassFailure();
    }
    if (limit > 0 &&
        failed(mha::checkWorkgroupMemory(getOperation(), limit, limitName)))
      signalPassFailure();
  }
};

} // namespace
