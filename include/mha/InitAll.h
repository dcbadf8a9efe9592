//===- InitAll.h - MHA registration entry points ----------------*- C++ -*-===//
//
// The one place that says what the MHA project registers. Every tool
// (mha-opt, the plugin, users' own drivers) calls these instead of listing
// dialects and passes itself, so a new pass or dialect extension shows up
// everywhere at once.
//
//===----------------------------------------------------------------------===//

#ifndef MHA_INITALL_H
#define MHA_INITALL_H

namespace mlir {
class DialectRegistry;

namespace mha {

/// Adds the `mha` dialect and the external models and extensions it brings
/// to `registry`.
void registerMHADialects(DialectRegistry &registry);

/// Registers the `mha` passes and pipelines with the global pass registry
/// (what `--mha-...` flags and `--pass-pipeline` strings resolve against).
void registerAllMHAPasses();

/// Everything an opt-like driver needs: every upstream dialect, extension,
/// pass and LLVM IR translation (GPU ones included, which
/// `gpu-module-to-binary` needs), plus everything of MHA.
void registerAllDialectsAndPasses(DialectRegistry &registry);

} // namespace mha
} // namespace mlir

#endif // MHA_INITALL_H
