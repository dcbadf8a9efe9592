//===- MHADialect.h - MHA dialect -------------------------------*- C++ -*-===//
//
// Declares the `mha` dialect class.
//
//===----------------------------------------------------------------------===//

#ifndef MHA_DIALECT_MHA_IR_MHADIALECT_H
#define MHA_DIALECT_MHA_IR_MHADIALECT_H

#include "mlir/Dialect/SCF/IR/DeviceMappingInterface.h"
#include "mlir/IR/Dialect.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

#include "mha/Dialect/MHA/IR/MHADialect.h.inc"
#include "mha/Dialect/MHA/IR/MHAEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "mha/Dialect/MHA/IR/MHAAttrs.h.inc"

namespace mlir::mha {

/// The discardable attributes that carry the strategy of the lowering (see
/// #mha.target and #mha.lowering_config).
inline constexpr llvm::StringLiteral kTargetAttrName = "mha.target";
inline constexpr llvm::StringLiteral kLoweringConfigAttrName =
    "mha.lowering_config";

/// The attribute (a string) of a workgroup loop whose kernel has a name of
/// its own: mha-map-forall-to-gpu names the kernel `<function>_<name>`
/// (the GEMM kernels: `_gemm`) rather than outlining's `<function>_kernel`,
/// so that profiles and PTX reports tell the kernels apart.
inline constexpr llvm::StringLiteral kKernelNameAttrName = "mha.kernel_name";

/// The function-argument attribute marking a weight: an argument whose
/// value is the same on every call, which the CPU pipelines prepare once
/// (mha-outline-weight-preparation).
inline constexpr llvm::StringLiteral kWeightAttrName = "mha.weight";

/// The function attribute (unit) marking a function whose buffers live on
/// the GPU: its memref arguments are device memory, and each result is
/// written into a device buffer the caller passes (mha-stage-kernel-buffers
/// of the GPU pipelines; other pipelines refuse it).
inline constexpr llvm::StringLiteral kDeviceResidentAttrName =
    "mha.device_resident";

/// What mha-stage-kernel-buffers made of a device-resident function's
/// results (`array<i64>`, one per result it had): the argument a result
/// updates in place, or -1 for one written into a new trailing argument
/// (in order).
inline constexpr llvm::StringLiteral kDeviceResultsAttrName =
    "mha.device_results";

/// The indices of the arguments of `func` marked `mha.weight`.
SmallVector<unsigned> getWeightArguments(FunctionOpInterface func);

/// The nearest `mha.target` on `op` or an op around it; null if none.
TargetAttr getTarget(Operation *op);

/// The lowering configuration that applies to `op`: each field from the
/// nearest `mha.lowering_config` that sets it, on `op` or an op around it
/// (its function, the module). Null if there is none.
LoweringConfigAttr getLoweringConfig(Operation *op);

} // namespace mlir::mha

#endif // MHA_DIALECT_MHA_IR_MHADIALECT_H
