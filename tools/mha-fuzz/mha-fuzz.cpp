//===- mha-fuzz.cpp - libFuzzer target for the mha dialect ------*- C++ -*-===//
//
// Parses the input as MLIR with every dialect registered, verifies it, and
// on success runs on copies: mha-lower-to-loops, mha-lower-to-cpu with its
// default tiles and with odd tile sizes drawn from the input's hash,
// mha-lower-to-vulkan with those odd tiles, mha-lower-to-cuda to PTX, and,
// for modules that carry a transform schedule, the transform interpreter
// followed by mha-lower-to-cpu -- every stage down to the LLVM dialect and
// the kernels' binaries. Nothing is executed.
// Diagnostics are expected and swallowed; a crash, an assertion or a
// sanitizer report is a finding (see docs/Reliability.md).
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
#include "mlir/Dialect/Transform/Transforms/Passes.h"
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

  // Odd tile sizes, derived from the input so that a mutation explores
  // them too: partial query and key tiles, causal bounds inside a tile, head
  // tiles of every size.
  uint64_t hash = 1469598103934665603ull; // FNV-1a
  for (size_t i = 0; i < size; ++i)
    hash = (hash ^ data[i]) * 1099511628211ull;
  mha::LowerToCPUOptions oddTiles;
  oddTiles.qTileSize = 1 + hash % 17;
  oddTiles.kvTileSize = 1 + (hash / 17) % 13;

  auto run = [&](function_ref<void(PassManager &)> build) {
    OwningOpRef<ModuleOp> copy = module->clone();
    PassManager pm(&context);
    build(pm);
    (void)pm.run(*copy);
  };
  run([](PassManager &pm) {
    mha::buildLowerToLoopsPipeline(pm, mha::LowerToLoopsOptions());
  });
  run([](PassManager &pm) {
    mha::buildLowerToCPUPipeline(pm, mha::LowerToCPUOptions());
  });
  run([&](PassManager &pm) { mha::buildLowerToCPUPipeline(pm, oddTiles); });
  // The GPU mapping with odd workgroup tiles, to SPIR-V (Vulkan) and to PTX
  // (CUDA, `isa`: no ptxas in the loop).
  mha::LowerToVulkanOptions vulkan;
  vulkan.qTileSize = oddTiles.qTileSize;
  vulkan.kvTileSize = oddTiles.kvTileSize;
  run([&](PassManager &pm) { mha::buildLowerToVulkanPipeline(pm, vulkan); });
  mha::LowerToCUDAOptions cuda;
  cuda.format = "isa";
  run([&](PassManager &pm) { mha::buildLowerToCUDAPipeline(pm, cuda); });
  // A module that carries a transform schedule (the transform-dialect tests
  // are seeds): interpret it, then lower what it left.
  if ((*module)->hasAttr("transform.with_named_sequence"))
    run([](PassManager &pm) {
      pm.addPass(transform::createInterpreterPass());
      mha::buildLowerToCPUPipeline(pm, mha::LowerToCPUOptions());
    });
  return 0;
}
