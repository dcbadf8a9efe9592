//===- MHADialect.cpp - MHA dialect -----------------------------*- C++ -*-===//
//
// Registers the ops and attributes of the `mha` dialect.
//
//===----------------------------------------------------------------------===//

#include "mha/Dialect/MHA/IR/MHADialect.h"
#include "mha/Dialect/MHA/IR/MHAOps.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/Support/InterleavedRange.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::mha;

#include "mha/Dialect/MHA/IR/MHADialect.cpp.inc"

#include "mha/Dialect/MHA/IR/MHAEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "mha/Dialect/MHA/IR/MHAAttrs.cpp.inc"

void MHADialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "mha/Dialect/MHA/IR/MHAOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "mha/Dialect/MHA/IR/MHAAttrs.cpp.inc"
      >();
}

// #mha.peeled as an scf.forall mapping: one id per dim, none of them a
// linear mapping of hardware ids.
int64_t PeeledDimAttr::getMappingId() const { return getDim(); }
bool PeeledDimAttr::isLinearMapping() const { return false; }
int64_t PeeledDimAttr::getRelativeIndex() const { return getDim(); }

//===----------------------------------------------------------------------===//
// The lowering configuration
//===----------------------------------------------------------------------===//

LogicalResult TargetAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 TargetKind kind, StringAttr chip,
                                 StringAttr features, int64_t vectorBits,
                                 int64_t subgroupSize,
                                 int64_t maxWorkgroupThreads,
                                 int64_t maxWorkgroupMemory,
                                 int64_t maxWorkgroupMemoryOptin) {
  if (kind == TargetKind::CPU) {
    if (vectorBits <= 0 || vectorBits % 32 != 0)
      return emitError() << "vector_bits must be a positive multiple of 32 on "
                            "a cpu target, found "
                         << vectorBits;
    if (subgroupSize || maxWorkgroupThreads || maxWorkgroupMemory ||
        maxWorkgroupMemoryOptin)
      return emitError() << "subgroup_size, max_workgroup_threads and "
                            "max_workgroup_memory(_optin) have no meaning on "
                            "a cpu target";
    return success();
  }
  if (vectorBits)
    return emitError() << "vector_bits has no meaning on a "
                       << stringifyTargetKind(kind) << " target";
  if (subgroupSize < 0 || maxWorkgroupThreads < 0 || maxWorkgroupMemory < 0 ||
      maxWorkgroupMemoryOptin < 0)
    return emitError() << "GPU limits must be non-negative (0: unknown)";
  if (maxWorkgroupMemoryOptin && maxWorkgroupMemoryOptin < maxWorkgroupMemory)
    return emitError() << "max_workgroup_memory_optin ("
                       << maxWorkgroupMemoryOptin
                       << ") must be at least max_workgroup_memory ("
                       << maxWorkgroupMemory << ")";
  return success();
}

LogicalResult LoweringConfigAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, std::optional<int64_t> qTile,
    std::optional<int64_t> kvTile, ArrayRef<int64_t> registerTile,
    std::optional<int64_t> chunk, ArrayRef<int64_t> workgroupTile,
    std::optional<int64_t> threads, ArrayRef<int64_t> mma,
    std::optional<int64_t> warps, std::optional<int64_t> kvSplits,
    std::optional<int64_t> headTile, std::optional<int64_t> prefetchBlocks,
    ArrayRef<int64_t> threadTile, std::optional<int64_t> pipelineStages) {
  for (auto [name, value] :
       {std::pair<StringRef, std::optional<int64_t>>{"q_tile", qTile},
        {"kv_tile", kvTile},
        {"kv_splits", kvSplits},
        {"head_tile", headTile},
        {"prefetch_blocks", prefetchBlocks},
        {"chunk", chunk},
        {"threads", threads},
        {"warps", warps},
        {"pipeline_stages", pipelineStages}})
    if (value && *value <= 0)
      return emitError() << name << " must be positive, found " << *value;
  for (auto [name, tile] :
       {std::pair<StringRef, ArrayRef<int64_t>>{"register_tile", registerTile},
        {"workgroup_tile", workgroupTile},
        {"thread_tile", threadTile}}) {
    if (tile.empty())
      continue;
    if (tile.size() != 2)
      return emitError() << name << " must have 2 entries [rows, "
                         << (name == "thread_tile" ? "keys" : "cols")
                         << "], found " << tile.size();
    if (tile[0] <= 0 || tile[1] <= 0)
      return emitError() << name << " must be positive, found [" << tile[0]
                         << ", " << tile[1] << "]";
  }
  // The shapes the warp-level kernel is written for.
  if (!mma.empty() && ArrayRef<int64_t>(mma) != ArrayRef<int64_t>{16, 8, 16} &&
      ArrayRef<int64_t>(mma) != ArrayRef<int64_t>{16, 8, 8} &&
      ArrayRef<int64_t>(mma) != ArrayRef<int64_t>{16, 16, 16})
    return emitError() << "mma must be [16, 8, 16] (m16n8k16: f16 or bf16 "
                          "operands) or [16, 8, 8] (m16n8k8: f32 operands "
                          "as TF32) on CUDA, or [16, 16, 16] (cooperative "
                          "matrices: f16 operands) on Vulkan, f32 "
                          "accumulation, found ["
                       << llvm::interleaved(mma) << "]";
  if (warps && mma.empty())
    return emitError() << "warps needs mma (the warp-level kernel)";
  if (pipelineStages && mma.empty())
    return emitError() << "pipeline_stages needs mma (the tensor-core GEMM "
                          "kernel)";
  if (!threadTile.empty() && !mma.empty())
    return emitError() << "thread_tile (the register kernel) and mma (the "
                          "tensor-core kernel) exclude each other";
  return success();
}

LoweringConfigAttr LoweringConfigAttr::merge(LoweringConfigAttr overrides) const {
  if (!*this)
    return overrides;
  if (!overrides)
    return *this;
  auto pick = [](std::optional<int64_t> over, std::optional<int64_t> base) {
    return over ? over : base;
  };
  auto pickTile = [](ArrayRef<int64_t> over, ArrayRef<int64_t> base) {
    return over.empty() ? base : over;
  };
  return LoweringConfigAttr::get(
      getContext(), pick(overrides.getQTile(), getQTile()),
      pick(overrides.getKvTile(), getKvTile()),
      pickTile(overrides.getRegisterTile(), getRegisterTile()),
      pick(overrides.getChunk(), getChunk()),
      pickTile(overrides.getWorkgroupTile(), getWorkgroupTile()),
      pick(overrides.getThreads(), getThreads()),
      pickTile(overrides.getMma(), getMma()),
      pick(overrides.getWarps(), getWarps()),
      pick(overrides.getKvSplits(), getKvSplits()),
      pick(overrides.getHeadTile(), getHeadTile()),
      pick(overrides.getPrefetchBlocks(), getPrefetchBlocks()),
      pickTile(overrides.getThreadTile(), getThreadTile()),
      pick(overrides.getPipelineStages(), getPipelineStages()));
}

TargetAttr mha::getTarget(Operation *op) {
  for (; op; op = op->getParentOp())
    if (auto target = op->getAttrOfType<TargetAttr>(kTargetAttrName))
      return target;
  return {};
}

LoweringConfigAttr mha::getLoweringConfig(Operation *op) {
  // Outermost first, so that each nearer configuration overrides it.
  SmallVector<LoweringConfigAttr> configs;
  for (; op; op = op->getParentOp())
    if (auto config =
            op->getAttrOfType<LoweringConfigAttr>(kLoweringConfigAttrName))
      configs.push_back(config);
  LoweringConfigAttr merged;
  for (LoweringConfigAttr config : llvm::reverse(configs))
    merged = merged.merge(config);
  return merged;
}

SmallVector<unsigned> mha::getWeightArguments(FunctionOpInterface func) {
  SmallVector<unsigned> weights;
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
    if (func.getArgAttr(i, kWeightAttrName))
      weights.push_back(i);
  return weights;
}

LogicalResult MHADialect::verifyRegionArgAttribute(Operation *op,
                                                   unsigned regionIndex,
                                                   unsigned argIndex,
                                                   NamedAttribute attribute) {
  if (attribute.getName() != kWeightAttrName)
    return success();
  if (!isa<UnitAttr>(attribute.getValue()))
    return op->emitError() << "'" << kWeightAttrName
                           << "' must be a unit attribute, found "
                           << attribute.getValue();
  // Any type: the mark stays on an argument through pipelines that do not
  // prepare weights (the GPU ones) down to LLVM pointers; the pass that
  // prepares them refuses what it cannot take.
  if (!isa<FunctionOpInterface>(op) || regionIndex != 0)
    return op->emitError() << "'" << kWeightAttrName
                           << "' marks arguments of functions only";
  return success();
}

LogicalResult MHADialect::verifyOperationAttribute(Operation *op,
                                                   NamedAttribute attribute) {
  if (attribute.getName() == kTargetAttrName &&
      !isa<TargetAttr>(attribute.getValue()))
    return op->emitError() << "'" << kTargetAttrName
                           << "' must be a #mha.target, found "
                           << attribute.getValue();
  if (attribute.getName() == kDeviceResidentAttrName) {
    if (!isa<UnitAttr>(attribute.getValue()))
      return op->emitError()
             << "'" << kDeviceResidentAttrName
             << "' must be a unit attribute, found " << attribute.getValue();
    if (!isa<FunctionOpInterface>(op))
      return op->emitError()
             << "'" << kDeviceResidentAttrName << "' marks functions only";
  }
  if (attribute.getName() == kLoweringConfigAttrName &&
      !isa<LoweringConfigAttr>(attribute.getValue()))
    return op->emitError() << "'" << kLoweringConfigAttrName
                           << "' must be a #mha.lowering_config, found "
                           << attribute.getValue();
  return success();
}
