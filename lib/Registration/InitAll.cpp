//===- InitAll.cpp - MHA registration entry points --------------*- C++ -*-===//

#include "mha/InitAll.h"

#include "mha/Dialect/MHA/IR/MHADialect.h"
#include "mha/Dialect/MHA/TransformOps/MHATransformOps.h"
#include "mha/Dialect/MHA/Transforms/Passes.h"
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
