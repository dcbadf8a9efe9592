//===- GPUToSPIRV.cpp - gpu.module kernels as a nested spirv.module -------===//
//
// Every gpu.module gets a spirv.module inside it, converted from a copy of
// its kernels with upstream's SPIR-V patterns (see the pass description).
//
//===----------------------------------------------------------------------===//

#include "mha/Conversion/Passes.h"

#include "mlir/Conversion/ArithToSPIRV/ArithToSPIRV.h"
#include "mlir/Conversion/FuncToSPIRV/FuncToSPIRV.h"
#include "mlir/Conversion/GPUToSPIRV/GPUToSPIRV.h"
#include "mlir/Conversion/IndexToSPIRV/IndexToSPIRV.h"
#include "mlir/Conversion/MathToSPIRV/MathToSPIRV.h"
#include "mlir/Conversion/MemRefToSPIRV/MemRefToSPIRV.h"
#include "mlir/Conversion/SCFToSPIRV/SCFToSPIRV.h"
#include "mlir/Conversion/UBToSPIRV/UBToSPIRV.h"
#include "mlir/Conversion/VectorToSPIRV/VectorToSPIRV.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/Dialect/SPIRV/IR/TargetAndABI.h"
#include "mlir/Dialect/SPIRV/Transforms/SPIRVConversion.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::mha {
#define GEN_PASS_DEF_MHAGPUTOSPIRVPASS
#include "mha/Conversion/Passes.h.inc"
} // namespace mlir::mha

using namespace mlir;

/// Workgroup attributions of the kernels in `module` as workgroup-memory
/// allocations at the start of their bodies: upstream's SPIR-V patterns turn
/// those into Workgroup variables, but not the attributions themselves.
static void workgroupAttributionsToAllocs(gpu::GPUModuleOp module) {
  module.walk([&](gpu::GPUFuncOp kernel) {
    unsigned count = kernel.getNumWorkgroupAttributions();
    if (count == 0)
      return;
    Block &body = kernel.getBody().front();
    OpBuilder builder = OpBuilder::atBlockBegin(&body);
    unsigned first = kernel.getFirstWorkgroupAttributionIndex();
    for (BlockArgument arg : kernel.getWorkgroupAttributions())
      arg.replaceAllUsesWith(memref::AllocOp::create(
          builder, arg.getLoc(), cast<MemRefType>(arg.getType())));
    body.eraseArguments(first, count);
    kernel->setAttr(gpu::GPUFuncOp::getNumWorkgroupAttributionsAttrName(),
                    builder.getI64IntegerAttr(0));
  });
}

namespace {

/// math.exp2 as GLSL's Exp2 (MLIR 22's math-to-SPIR-V patterns map exp but
/// not exp2, which the tensor-core attention kernel's softmax uses).
struct Exp2ToGL final : OpConversionPattern<math::Exp2Op> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(math::Exp2Op op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Type type = getTypeConverter()->convertType(op.getType());
    if (!type)
      return failure();
    rewriter.replaceOpWithNewOp<spirv::GLExp2Op>(op, type,
                                                 adaptor.getOperand());
    return success();
  }
};

} // namespace

/// Converts `copy` (a clone of a gpu.module) into a spirv.module in place.
static LogicalResult convertToSPIRV(gpu::GPUModuleOp copy) {
  MLIRContext *ctx = copy.getContext();
  workgroupAttributionsToAllocs(copy);
  // The target spirv-attach-target put among the module's targets; else one
  // set on an enclosing op, else upstream's default.
  spirv::TargetEnvAttr targetAttr;
  if (ArrayAttr targets = copy.getTargetsAttr())
    for (Attribute attr : targets)
      if (auto env = dyn_cast<spirv::TargetEnvAttr>(attr))
        targetAttr = env;
  if (!targetAttr)
    targetAttr = spirv::lookupTargetEnvOrDefault(copy);
  // Patterns that look the target up from the ops they convert find it.
  copy->setAttr(spirv::getTargetEnvAttrName(), targetAttr);
  // Subgroup matrix ops need a target with cooperative matrices, else they
  // are emulated before (the patterns would only fail to legalize them).
  if (!spirv::TargetEnv(targetAttr)
           .allows(spirv::Capability::CooperativeMatrixKHR)) {
    WalkResult matrices = copy.walk([](Operation *op) {
      if (!isa<gpu::SubgroupMmaLoadMatrixOp, gpu::SubgroupMmaStoreMatrixOp,
               gpu::SubgroupMmaComputeOp, gpu::SubgroupMmaConstantMatrixOp,
               gpu::SubgroupMmaElementwiseOp>(op))
        return WalkResult::advance();
      op->emitOpError()
          << "needs a SPIR-V target with cooperative matrices "
             "(CooperativeMatrixKHR: the Vulkan pipelines' cooperative-matrix "
             "option), or its subgroup matrix ops emulated first "
             "(mha-emulate-tensor-cores)";
      return WalkResult::interrupt();
    });
    if (matrices.wasInterrupted())
      return failure();
  }
  // Memory spaces as Vulkan storage classes: the default -> StorageBuffer,
  // the GPU dialect's workgroup / private spaces (which upstream's Vulkan
  // map does not know in MLIR 22) -> Workgroup / Function.
  spirv::MemorySpaceToStorageClassConverter memorySpaces(
      [](Attribute space) -> std::optional<spirv::StorageClass> {
        if (auto gpuSpace = dyn_cast_or_null<gpu::AddressSpaceAttr>(space)) {
          switch (gpuSpace.getValue()) {
          case gpu::AddressSpace::Workgroup:
            return spirv::StorageClass::Workgroup;
          case gpu::AddressSpace::Private:
            return spirv::StorageClass::Function;
          case gpu::AddressSpace::Global:
            return spirv::StorageClass::StorageBuffer;
          }
        }
        return spirv::mapMemorySpaceToVulkanStorageClass(space);
      });
  spirv::convertMemRefTypesAndAttrs(copy, memorySpaces);

  std::unique_ptr<ConversionTarget> target =
      SPIRVConversionTarget::get(targetAttr);
  SPIRVTypeConverter typeConverter(targetAttr);
  // The cooperative-matrix kernel's !gpu.mma_matrix values.
  populateMMAToSPIRVCoopMatrixTypeConversion(typeConverter);
  ScfToSPIRVContext scfContext;
  RewritePatternSet patterns(ctx);
  arith::populateCeilFloorDivExpandOpsPatterns(patterns);
  // erf and erfc (GELU) have no GLSL instruction: upstream's polynomial
  // approximations, in ops that convert.
  populatePolynomialApproximateErfPattern(patterns);
  populatePolynomialApproximateErfcPattern(patterns);
  arith::populateArithToSPIRVPatterns(typeConverter, patterns);
  populateMathToSPIRVPatterns(typeConverter, patterns);
  patterns.add<Exp2ToGL>(typeConverter, ctx);
  populateBuiltinFuncToSPIRVPatterns(typeConverter, patterns);
  populateFuncToSPIRVPatterns(typeConverter, patterns);
  populateGPUToSPIRVPatterns(typeConverter, patterns);
  populateGpuWMMAToSPIRVCoopMatrixKHRConversionPatterns(typeConverter,
                                                        patterns);
  index::populateIndexToSPIRVPatterns(typeConverter, patterns);
  populateMemRefToSPIRVPatterns(typeConverter, patterns);
  populateVectorToSPIRVPatterns(typeConverter, patterns);
  populateSCFToSPIRVPatterns(typeConverter, scfContext, patterns);
  ub::populateUBToSPIRVConversionPatterns(typeConverter, patterns);
  // The conversion replaces `copy` by a spirv.module in its place.
  Operation *parent = copy->getParentOp();
  if (failed(applyFullConversion(copy, *target, std::move(patterns))))
    return failure();
  // Cooperative matrices in a Shader module need the Vulkan memory model
  // (SPV_KHR_cooperative_matrix), which upstream's conversion never picks
  // (Shader: GLSL450); spirv-update-vce then requires its capability.
  for (auto module : parent->getRegion(0).getOps<spirv::ModuleOp>()) {
    WalkResult matrices = module.walk([](Operation *op) {
      return llvm::any_of(op->getResultTypes(),
                          llvm::IsaPred<spirv::CooperativeMatrixType>)
                 ? WalkResult::interrupt()
                 : WalkResult::advance();
    });
    if (matrices.wasInterrupted() &&
        module.getMemoryModel() == spirv::MemoryModel::GLSL450)
      module.setMemoryModel(spirv::MemoryModel::Vulkan);
  }
  return success();
}

/// Checks that the kernels of `module` take buffers of static shapes only
/// (the Vulkan calling convention binds each argument as a storage buffer
/// of the size its type gives), and gives
/// each the workgroup size of its entry point (`spirv.entry_point_abi`) from
/// the block size the launches use, which kernel outlining records when it
/// is static (`known_block_size`).
static LogicalResult prepareKernels(gpu::GPUModuleOp module) {
  WalkResult result = module.walk([&](gpu::GPUFuncOp kernel) {
    if (!kernel.isKernel())
      return WalkResult::advance();
    for (auto [i, type] : llvm::enumerate(kernel.getArgumentTypes())) {
      auto memref = dyn_cast<MemRefType>(type);
      if (!memref) {
        kernel.emitOpError() << "argument " << i << " is " << type
                             << ": kernels for Vulkan take buffers (memrefs) "
                                "only";
        return WalkResult::interrupt();
      }
      // Without SPV_KHR_bfloat16 (lavapipe has none) the SPIR-V conversion
      // takes bf16 for a 16-bit float of another format: wrong numbers.
      if (memref.getElementType().isBF16()) {
        kernel.emitOpError() << "argument " << i << " is " << type
                             << ": the Vulkan target has no bf16 (compute "
                                "in f16 or f32)";
        return WalkResult::interrupt();
      }
      if (!memref.hasStaticShape()) {
        kernel.emitOpError() << "argument " << i << " is " << type
                             << ": the Vulkan calling convention passes "
                                "static buffer sizes";
        return WalkResult::interrupt();
      }
    }
    if (kernel->hasAttr(spirv::getEntryPointABIAttrName()))
      return WalkResult::advance();
    std::optional<ArrayRef<int32_t>> size = kernel.getKnownBlockSize();
    if (!size) {
      kernel.emitOpError()
          << "needs a static workgroup size for SPIR-V (launch it with "
             "constant block sizes, or give it a spirv.entry_point_abi)";
      return WalkResult::interrupt();
    }
    kernel->setAttr(spirv::getEntryPointABIAttrName(),
                    spirv::getEntryPointABIAttr(kernel.getContext(), *size));
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

namespace {

struct MHAGPUToSPIRVPass final
    : mha::impl::MHAGPUToSPIRVPassBase<MHAGPUToSPIRVPass> {
  void runOnOperation() override {
    // The host side still refers to the gpu.module's kernels by name until
    // gpu-module-to-binary replaces the module, so the conversion works on
    // a copy placed at the start of the module's body.
    SmallVector<gpu::GPUModuleOp> copies;
    OpBuilder builder(&getContext());
    WalkResult walk = getOperation()->walk([&](gpu::GPUModuleOp module) {
      if (failed(prepareKernels(module)))
        return WalkResult::interrupt();
      builder.setInsertionPointToStart(module.getBody());
      copies.push_back(cast<gpu::GPUModuleOp>(builder.clone(*module)));
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();
    for (gpu::GPUModuleOp copy : copies)
      if (failed(convertToSPIRV(copy)))
        return signalPassFailure();
  }
};

} // namespace
