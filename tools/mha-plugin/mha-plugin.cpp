//===- mha-plugin.cpp - MHA plugin for mlir-opt -----------------*- C++ -*-===//
//
// Entry points that the stock `mlir-opt` looks up when it loads this library
// with `--load-dialect-plugin` or `--load-pass-plugin`.
//
//===----------------------------------------------------------------------===//

#include "mha/InitAll.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/Compiler.h"

using namespace mlir;

/// Dialect plugin: the `mha` dialect and its extensions. Passes are
/// registered too, so that loading one plugin is enough.
extern "C" LLVM_ATTRIBUTE_WEAK DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "MHA", LLVM_VERSION_STRING,
          [](DialectRegistry *registry) {
            mha::registerMHADialects(*registry);
            mha::registerAllMHAPasses();
          }};
}

/// Pass plugin: the `mha` passes and pipelines.
extern "C" LLVM_ATTRIBUTE_WEAK PassPluginLibraryInfo mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "MHAPasses", LLVM_VERSION_STRING,
          []() { mha::registerAllMHAPasses(); }};
}
