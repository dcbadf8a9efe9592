//===- ToolSupport.h - What mha-run and mha-aot share -----------*- C++ -*-===//
//
// The two drivers that compile a file all the way to machine code take the
// same --pipeline spelling, compile for the same targets and load (or link)
// the same runtimes; this is that common part.
//
//===----------------------------------------------------------------------===//

#ifndef MHA_TOOLS_SUPPORT_TOOLSUPPORT_H
#define MHA_TOOLS_SUPPORT_TOOLSUPPORT_H

#include "mha/Pipelines/Pipelines.h"
#include "mlir/Support/LLVM.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <optional>
#include <string>

namespace llvm {
class Module;
class SourceMgr;
class TargetMachine;
} // namespace llvm

namespace mlir {
class MLIRContext;
class ModuleOp;
class PassManager;
template <typename OpTy>
class OwningOpRef;
namespace func {
class FuncOp;
} // namespace func

namespace mha {

/// The pipeline a `--pipeline` value names (`NAME[{OPTIONS}]`); null for a
/// textual pipeline or an unknown name.
const PipelineInfo *pipelineOf(StringRef spec);

/// Adds what a `--pipeline` value names to `pm`: `NAME[{OPTIONS}]` is the
/// pipeline `mha-lower-to-NAME` of mha::getMHAPipelines(), built for `host`
/// (the `cpu` pipeline fits its register tiles to the host's vector width
/// unless `vector-width` is given); `builtin.module(...)` is parsed as a
/// textual pipeline. Returns the pipeline (null for a textual one). Errors
/// name the spec and, for an unknown name, list the known ones.
llvm::Expected<const PipelineInfo *> addPipeline(PassManager &pm,
                                                 StringRef spec,
                                                 TargetAttr host = {});

/// Parses `path` into `sourceMgr` and finds the function `entry` with a body
/// in it; errors name the file or the function (`--entry`). Diagnostics of
/// later passes point into the file (`file:line:col: error: ...` with the
/// source line) while a SourceMgrDiagnosticHandler on `sourceMgr` is live.
llvm::Error loadEntry(MLIRContext &context, llvm::SourceMgr &sourceMgr,
                      StringRef path, StringRef entry,
                      OwningOpRef<ModuleOp> &module, func::FuncOp &func);

/// The CPU target code is generated for: the host's triple, CPU and features
/// as LLVM detects them, or `cpu` with its default features; then `features`
/// (comma-separated +name/-name) on top.
struct CPUTarget {
  std::string cpu;
  std::string features;
};

/// What both tools do first (after llvm::InitLLVM): the native target
/// initialized for the JIT and the object emitter, the command line parsed
/// with only the options of `category` shown in --help.
void initTool(int argc, char **argv, llvm::cl::OptionCategory &category,
              StringRef overview);

/// The flags of both tools that say what to lower: the input file, the
/// `--pipeline` (mha::kDefaultPipeline when not given) and the `--entry`
/// function, in the tool's option category.
struct EntryFlags {
  EntryFlags(llvm::cl::OptionCategory &category, StringRef entryDescription);
  llvm::cl::opt<std::string> input;
  llvm::cl::opt<std::string> pipeline;
  llvm::cl::opt<std::string> entry;
};

/// The `--target-cpu` and `--target-features` flags of a tool, in its option
/// category.
class CPUTargetFlags {
public:
  explicit CPUTargetFlags(llvm::cl::OptionCategory &category);
  CPUTarget get() const { return {cpu, features}; }

private:
  llvm::cl::opt<std::string> cpu;
  llvm::cl::opt<std::string> features;
};

/// Checks `target` before anything is compiled: feature syntax, and that the
/// CPU is one of the host's target.
llvm::Error checkCPUTarget(const CPUTarget &target);

/// A target machine for `target` with -O3 code generation; `pic` selects
/// position-independent code (for shared objects).
llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
createTargetMachine(const CPUTarget &target, bool pic = false);

/// Fails, naming them, when `tm` generates instructions of features this host
/// lacks (a --target-cpu or --target-features for another machine): code
/// that is run here, not only compiled, would die of SIGILL.
llvm::Error checkRunsOnHost(const llvm::TargetMachine &tm);

/// Bits of the widest vector registers `tm` computes f32 in: 512 with
/// AVX-512F, 256 with AVX, else 128 (SSE, NEON).
int64_t vectorWidthOf(const llvm::TargetMachine &tm);

/// The #mha.target of the CPU `tm` compiles for: its name, features and
/// vector width (vectorWidthOf).
TargetAttr hostTarget(MLIRContext *context, const llvm::TargetMachine &tm);

/// `target: TRIPLE, cpu CPU, features +A,+B,...` (enabled features only).
std::string describeTargetMachine(const llvm::TargetMachine &tm);

/// The GPU runtime lowered host code calls, from the targets of the module's
/// kernel binaries.
enum class GPURuntime { None, Vulkan, CUDA };
/// Fails when kernels of the module target more than one runtime.
llvm::Expected<GPURuntime> gpuRuntimeOf(ModuleOp module);

/// The path of the runtime library for `runtime` ("" for None): in the lib/
/// directory beside the running tool's bin/, in the build tree and in an
/// installed (or moved) prefix alike; or an error saying why it is not there.
llvm::Expected<std::string> gpuRuntimeLibrary(GPURuntime runtime);

/// Points $CUDA_ROOT at /usr/local/cuda when it is unset and a toolkit is
/// there: `gpu-module-to-binary` finds ptxas and libdevice (math functions
/// in NVVM kernels) through it.
void setDefaultCUDARoot();

/// The ranks of the memref descriptors the lowered (LLVM dialect) function
/// `name` of `module` returns: one descriptor struct, a struct of them, or
/// nothing; no value if there is no such function. The weights a CPU
/// pipeline prepared (`NAME_prepare`) are known to the tools only thus.
std::optional<SmallVector<int64_t>> resultRanksOf(ModuleOp module,
                                                  StringRef name);

/// A copy of the entry `func` named `name`, marked mha.device_resident,
/// right after it: what a GPU pipeline lowers into the entry on device
/// buffers (mha-aot --device-entry, mha-run --device-resident).
void addDeviceResidentCopy(func::FuncOp func, StringRef name);

/// Where the lowered device-resident copy `name` of `module` puts each
/// result (its mha.device_results: the argument a result updates, or -1 for
/// a trailing argument); no value if the pipeline did not make it so.
std::optional<SmallVector<int64_t>> deviceResultsOf(ModuleOp module,
                                                    StringRef name);

/// LLVM's OpenMP runtime, which the CPU pipeline's parallel loops call: the
/// one in the library directory of the LLVM the tools were built with.
StringRef openMPLibrary();

} // namespace mha
} // namespace mlir

#endif // MHA_TOOLS_SUPPORT_TOOLSUPPORT_H
