//===- mha-fuzz.cpp - libFuzzer target for the mha dialect ------*- C++ -*-===//
//
// Parses the input as MLIR with every dialect registered, verifies it, and
// on success runs each registered mha pipeline (mha-lower-to-loops,
// mha-lower-to-cpu) down to the LLVM dialect on a copy. Nothing is executed.
// Diagnostics are expected and swallowed; a crash, an assertion or a
// sanitizer report is a finding (see fuzz/README.md).
//
//===----------------------------------------------------------------------===//

#include "mha/InitAll.h"
#include "mha/Pipelines/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <cstddef>
#include <cstdint>

using namespace mlir;

static DialectRegistry &getRegistry() {
  static DialectRegistry *registry = [] {
    auto *r = new DialectRegistry();
    mha::registerAllDialectsAndPasses(*r);
    return r;
  }();
  return *registry;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // A fresh context per input keeps uniqued types and attributes from
  // piling up over millions of inputs.
  MLIRContext context(getRegistry(), MLIRContext::Threading::DISABLED);
  context.allowUnregisteredDialects(false);
  ScopedDiagnosticHandler silence(&context, [](Diagnostic &) {
    return success();
  });
  // libFuzzer's bytes end exactly at `size`, but MLIR's lexer stops at a NUL
  // terminator and reads the byte past the end to find it: parse a copy,
  // which MemoryBuffer terminates.
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(
          StringRef(reinterpret_cast<const char *>(data), size), "input"),
      SMLoc());
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module || failed(verify(*module)))
    return 0;

  for (int pipeline = 0; pipeline < 2; ++pipeline) {
    OwningOpRef<ModuleOp> copy = module->clone();
    PassManager pm(&context);
    if (pipeline == 0)
      mha::buildLowerToLoopsPipeline(pm, mha::LowerToLoopsOptions());
    else
      mha::buildLowerToCPUPipeline(pm, mha::LowerToCPUOptions());
    (void)pm.run(*copy);
  }
  return 0;
}
