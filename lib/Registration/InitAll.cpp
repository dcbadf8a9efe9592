//===- InitAll.cpp - MHA registration entry points --------------*- C++ -*-===//

#include "mha/InitAll.h"

#include "mha/Codegen/CPU/Passes.h"
#include "mha/Codegen/Common/Passes.h"
#include "mha/Codegen/GPU/Passes.h"
#include "mha/Conversion/Passes.h"
#include "mha/Dialect/MHA/IR/MHADialect.h"
#include "mha/Dialect/MHA/TransformOps/MHATransformOps.h"
#include "mha/Dialect/MHA/Transforms/Passes.h"
#include "mha/InputConversion/Passes.h"
#include "mha/Pipelines/Pipelines.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

using namespace mlir;

void mha::registerMHADialects(DialectRegistry &registry) {
  registry.insert<mha::MHADialect>();
  mha::registerTransformDialectExtension(registry);
}

void mha::registerAllMHAPasses() {
  registerMHAPasses();
  registerMHAInputConversionPasses();
  registerMHACodegenCommonPasses();
  registerMHACodegenCPUPasses();
  registerMHACodegenGPUPasses();
  registerMHAConversionPasses();
  registerMHAPipelines();
}

void mha::registerAllDialectsAndPasses(DialectRegistry &registry) {
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerAllToLLVMIRTranslations(registry);
  registerAllGPUToLLVMIRTranslations(registry);
  registerAllPasses();
  registerMHADialects(registry);
  registerAllMHAPasses();
}
