//===- consumer.cpp - a downstream user of the installed MHA package -----===//
//
// Registers the `mha` dialect through the installed headers, parses the file
// named on the command line, verifies it and prints every `mha` op it holds.
//
//===----------------------------------------------------------------------===//

#include "mha/Dialect/MHA/IR/MHAOps.h"
#include "mha/InitAll.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/raw_ostream.h"

int main(int argc, char **argv) {
  if (argc != 2) {
    llvm::errs() << "usage: mha-consumer FILE.mlir\n";
    return 2;
  }
  mlir::DialectRegistry registry;
  registry.insert<mlir::func::FuncDialect>();
  mlir::mha::registerMHADialects(registry);
  mlir::MLIRContext context(registry);

  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(argv[1], &context);
  if (!module)
    return 1;
  module->walk([](mlir::mha::MultiHeadAttentionOp op) {
    llvm::outs() << "multi_head_attention: heads=" << op.getNumHeads()
                 << " kv_heads=" << op.getNumKvHeadsOrDefault()
                 << " dk=" << op.getHeadDimQK() << " dv=" << op.getHeadDimV()
                 << " scale=" << op.getScaleOrDefault() << "\n";
  });
  return 0;
}
