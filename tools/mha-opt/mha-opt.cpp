//===- mha-opt.cpp - MHA optimizer driver -----------------------*- C++ -*-===//
//
// mlir-opt with the `mha` dialect and passes: every upstream dialect, pass,
// extension and translation is registered too, so that whole pipelines from
// `mha` ops down to LLVM or GPU binaries run in one invocation.
//
//===----------------------------------------------------------------------===//

#include "mha/InitAll.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::mha::registerAllDialectsAndPasses(registry);
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "MHA-MLIR optimizer driver\n", registry));
}
