//===- ToolSupport.cpp - What mha-run and mha-aot share -------------------===//

#include "ToolSupport.h"

#include "mha/Codegen/Common/Passes.h"
#include "mha/Dialect/MHA/IR/MHADialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SPIRV/IR/TargetAndABI.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

#include <cstdlib>

using namespace mlir;
using namespace mlir::mha;

/// The NAME of a `NAME{OPTIONS}` spec.
static StringRef nameOf(StringRef spec) {
  return spec.trim().take_until([](char c) { return c == '{'; });
}

const PipelineInfo *mha::pipelineOf(StringRef spec) {
  return lookupMHAPipeline(nameOf(spec));
}

llvm::Expected<const PipelineInfo *>
mha::addPipeline(PassManager &pm, StringRef spec, TargetAttr host) {
  auto fail = [&](const Twine &message) {
    return llvm::createStringError("--pipeline=" + spec + ": " + message);
  };
  StringRef text = spec.trim();
  if (text.consume_front("builtin.module(")) {
    std::string error;
    llvm::raw_string_ostream os(error);
    if (!text.consume_back(")") || failed(parsePassPipeline(text, pm, os)))
      return fail(error.empty() ? "expected 'builtin.module(...)'"
                                : StringRef(error).trim());
    // The registered pipelines end with this check; a textual one gets it
    // too, so an op it left is named rather than refused by the JIT.
    pm.addPass(mha::createMHACheckLoweredPass());
    return nullptr;
  }

  StringRef name = nameOf(text);
  StringRef options = text.drop_front(name.size());
  if (!options.empty() &&
      (!options.consume_front("{") || !options.consume_back("}")))
    return fail("expected NAME or NAME{OPTIONS}");
  const PipelineInfo *pipeline = lookupMHAPipeline(name);
  if (name.empty() || !pipeline) {
    std::string available;
    for (const PipelineInfo &known : getMHAPipelines())
      available += (available.empty() ? "" : ", ") + known.name.str();
    return fail("unknown pipeline '" + name + "'; expected one of " +
                available +
                " (the registered mha-lower-to-* pipelines) or "
                "'builtin.module(...)'");
  }
  // Option errors are printed by the options parser itself, before this.
  std::string error;
  if (failed(pipeline->build(pm, options, host, [&](const Twine &message) {
        error = message.str();
        return failure();
      })))
    return fail("invalid options for 'mha-lower-to-" + pipeline->name + "'" +
                (error.empty() ? "" : ": " + error));
  return pipeline;
}

llvm::Error mha::loadEntry(MLIRContext &context, llvm::SourceMgr &sourceMgr,
                          StringRef path, StringRef entry,
                          OwningOpRef<ModuleOp> &module, func::FuncOp &func) {
  std::string errorMessage;
  std::unique_ptr<llvm::MemoryBuffer> file = openInputFile(path, &errorMessage);
  if (!file)
    return llvm::createStringError("'" + path + "': " + errorMessage);
  sourceMgr.AddNewSourceBuffer(std::move(file), SMLoc());
  module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return llvm::createStringError("'" + path + "' could not be parsed");
  func = module->lookupSymbol<func::FuncOp>(entry);
  if (!func || func.isExternal())
    return llvm::createStringError("no function '@" + entry +
                                   "' with a body in '" + path +
                                   "' (--entry)");
  return llvm::Error::success();
}

static SmallVector<std::string> splitFeatures(StringRef features) {
  SmallVector<StringRef> parts;
  features.split(parts, ',', -1, false);
  SmallVector<std::string> list;
  for (StringRef feature : parts)
    list.push_back(feature.trim().str());
  return list;
}

void mha::initTool(int argc, char **argv, llvm::cl::OptionCategory &category,
                   StringRef overview) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::cl::HideUnrelatedOptions(category);
  llvm::cl::ParseCommandLineOptions(argc, argv, overview);
}

mha::EntryFlags::EntryFlags(llvm::cl::OptionCategory &category,
                            StringRef entryDescription)
    : input(llvm::cl::Positional, llvm::cl::desc("<input .mlir file>"),
            llvm::cl::Required, llvm::cl::cat(category)),
      pipeline("pipeline",
               llvm::cl::desc("NAME[{OPTIONS}]: the pipeline mha-lower-to-NAME "
                              "(cpu, the default; loops, vulkan, cuda) with "
                              "its options; or a textual pass pipeline "
                              "'builtin.module(...)' ending in the LLVM "
                              "dialect"),
               llvm::cl::init(kDefaultPipeline.str()), llvm::cl::cat(category)),
      entry("entry", llvm::cl::desc(entryDescription), llvm::cl::init("main"),
            llvm::cl::cat(category)) {}

mha::CPUTargetFlags::CPUTargetFlags(llvm::cl::OptionCategory &category)
    : cpu("target-cpu",
          llvm::cl::desc("Compile for this CPU instead of the host's, with its "
                         "default features (e.g. haswell or x86-64-v3: AVX2, "
                         "no AVX-512)"),
          llvm::cl::value_desc("name"), llvm::cl::cat(category)),
      features("target-features",
               llvm::cl::desc("Features to enable (+name) or disable (-name), "
                              "comma-separated, on top of the target's (e.g. "
                              "-avx512f)"),
               llvm::cl::value_desc("+a,-b"), llvm::cl::cat(category)) {}

llvm::Error mha::checkCPUTarget(const CPUTarget &target) {
  for (const std::string &feature : splitFeatures(target.features))
    if (feature.size() < 2 || (feature[0] != '+' && feature[0] != '-'))
      return llvm::createStringError(
          "--target-features: expected +name or -name, found '" + feature +
          "'");
  if (target.cpu.empty())
    return llvm::Error::success();
  llvm::Expected<llvm::orc::JITTargetMachineBuilder> builder =
      llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder)
    return builder.takeError();
  std::string lookupError;
  const llvm::Target *llvmTarget = llvm::TargetRegistry::lookupTarget(
      builder->getTargetTriple(), lookupError);
  if (!llvmTarget)
    return llvm::createStringError(lookupError);
  std::unique_ptr<llvm::MCSubtargetInfo> info(
      llvmTarget->createMCSubtargetInfo(builder->getTargetTriple(), "", ""));
  if (!info->isCPUStringValid(target.cpu))
    return llvm::createStringError("--target-cpu: '" + target.cpu +
                                   "' is not a CPU of the host's target " +
                                   builder->getTargetTriple().str());
  return llvm::Error::success();
}

llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
mha::createTargetMachine(const CPUTarget &target, bool pic) {
  llvm::Expected<llvm::orc::JITTargetMachineBuilder> builder =
      llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder)
    return builder.takeError();
  if (!target.cpu.empty()) {
    builder->setCPU(target.cpu);
    builder->setFeatures("");
  }
  if (!target.features.empty()) {
    SmallVector<std::string> features = splitFeatures(target.features);
    builder->addFeatures(
        std::vector<std::string>(features.begin(), features.end()));
  }
  builder->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  if (pic)
    builder->setRelocationModel(llvm::Reloc::PIC_);
  return builder->createTargetMachine();
}

/// Whether `feature` is an instruction-set extension for computation (AVX,
/// FMA, ...), not a tuning flag or a system feature.
static bool isComputeExtension(StringRef feature) {
  return llvm::any_of(
      ArrayRef<StringRef>{"avx", "sse", "fma", "f16c", "amx", "bmi", "gfni",
                          "vaes", "vpclmulqdq", "popcnt", "lzcnt", "movbe",
                          "adx", "sha", "aes", "pclmul", "xop", "evex512"},
      [&](StringRef prefix) { return feature.starts_with(prefix); });
}

llvm::Error mha::checkRunsOnHost(const llvm::TargetMachine &tm) {
  llvm::StringMap<bool> host = llvm::sys::getHostCPUFeatures();
  const llvm::MCSubtargetInfo *info = tm.getMCSubtargetInfo();
  // The target's features are its CPU's and the explicit ones together.
  // Only instruction-set extensions of computation count: virtual machines
  // hide system features (pku, mwaitx, ...) that the CPU they report has and
  // that compiled attention never uses.
  SmallVector<StringRef> missing;
  for (const llvm::SubtargetFeatureKV &feature :
       info->getAllProcessorFeatures()) {
    auto it = host.find(feature.Key);
    if (it != host.end() && !it->second && isComputeExtension(feature.Key) &&
        info->getFeatureBits().test(feature.Value))
      missing.push_back(feature.Key);
  }
  if (missing.empty())
    return llvm::Error::success();
  llvm::sort(missing);
  return llvm::createStringError(
      "the target (cpu " + tm.getTargetCPU() + ") has features this host " +
      "lacks: " + llvm::join(missing, ", ") +
      "; its code would not run here (mha-aot compiles for other machines)");
}

TargetAttr mha::hostTarget(MLIRContext *context, const llvm::TargetMachine &tm) {
  context->getOrLoadDialect<MHADialect>();
  return TargetAttr::get(context, TargetKind::CPU,
                         StringAttr::get(context, tm.getTargetCPU()),
                         StringAttr::get(context, tm.getTargetFeatureString()),
                         vectorWidthOf(tm), 0, 0, 0, 0);
}

int64_t mha::vectorWidthOf(const llvm::TargetMachine &tm) {
  if (!tm.getTargetTriple().isX86())
    return 128;
  const llvm::MCSubtargetInfo *info = tm.getMCSubtargetInfo();
  if (info->checkFeatures("+avx512f"))
    return 512;
  return info->checkFeatures("+avx") ? 256 : 128;
}

std::string mha::describeTargetMachine(const llvm::TargetMachine &tm) {
  // The instruction-set extensions in effect: those the CPU's name implies
  // and the explicit ones together (a named CPU's are all implied, the
  // host's all explicit).
  const llvm::MCSubtargetInfo *info = tm.getMCSubtargetInfo();
  SmallVector<std::string> features;
  for (const llvm::SubtargetFeatureKV &feature :
       info->getAllProcessorFeatures())
    if (isComputeExtension(feature.Key) &&
        info->getFeatureBits().test(feature.Value))
      features.push_back(("+" + StringRef(feature.Key)).str());
  return ("target: " + tm.getTargetTriple().str() + ", cpu " +
          tm.getTargetCPU() + ", features " + llvm::join(features, ","))
      .str();
}

llvm::Expected<GPURuntime> mha::gpuRuntimeOf(ModuleOp module) {
  bool vulkan = false, cuda = false;
  module.walk([&](gpu::BinaryOp binary) {
    for (Attribute object : binary.getObjects()) {
      Attribute target = cast<gpu::ObjectAttr>(object).getTarget();
      vulkan |= isa<spirv::TargetEnvAttr>(target);
      cuda |= isa<NVVM::NVVMTargetAttr>(target);
    }
  });
  if (vulkan && cuda)
    return llvm::createStringError(
        "the lowered code has kernels for both Vulkan and CUDA; one program "
        "loads one GPU runtime");
  return vulkan ? GPURuntime::Vulkan
                : (cuda ? GPURuntime::CUDA : GPURuntime::None);
}

/// Where our runtime libraries are: lib/ beside the bin/ the running tool is
/// in. The build tree and an installed prefix are laid out alike (bin/ and
/// lib/ side by side), so this one rule serves both, wherever the prefix was
/// installed or moved to; no path of the build tree is compiled in. The
/// executable's path comes from the kernel (/proc/self/exe: symlinks
/// resolved), as the loader's $ORIGIN does.
static std::string runtimeLibraryPath(StringRef fileName) {
  static int anchor;
  std::string tool = llvm::sys::fs::getMainExecutable(nullptr, &anchor);
  SmallString<256> path(llvm::sys::path::parent_path(tool));
  llvm::sys::path::append(path, MHA_RUNTIME_DIR_FROM_BIN, fileName);
  llvm::sys::path::remove_dots(path, /*remove_dot_dot=*/true);
  return path.str().str();
}

/// The runtime `fileName` where the tools look for it, or an error naming
/// that place.
static llvm::Expected<std::string> findRuntime(StringRef what,
                                               StringRef fileName) {
  std::string path = runtimeLibraryPath(fileName);
  if (llvm::sys::fs::exists(path))
    return path;
  return llvm::createStringError(
      "the lowered code runs on " + what + ", but its runtime '" + path +
      "' is not there (the tools load it from the lib/ directory beside "
      "their bin/: install or copy the tools together with it)");
}

llvm::Expected<std::string> mha::gpuRuntimeLibrary(GPURuntime runtime) {
  switch (runtime) {
  case GPURuntime::None:
    return "";
  case GPURuntime::Vulkan:
#ifdef MHA_VULKAN_RUNTIME_NAME
    return findRuntime("Vulkan", MHA_VULKAN_RUNTIME_NAME);
#else
    return llvm::createStringError(
        "the lowered code runs on Vulkan, but the tools were built without "
        "the Vulkan runtime (no Vulkan headers and loader when they were "
        "configured: install libvulkan-dev and rebuild)");
#endif
  case GPURuntime::CUDA:
#ifdef MHA_CUDA_RUNTIME_NAME
    return findRuntime("CUDA", MHA_CUDA_RUNTIME_NAME);
#else
    return llvm::createStringError(
        "the lowered code runs on CUDA, but the tools were built without the "
        "CUDA runtime (no CUDA toolkit when they were configured: install "
        "one under /usr/local/cuda, or Debian's nvidia-cuda-toolkit, and "
        "rebuild)");
#endif
  }
  llvm_unreachable("unknown GPU runtime");
}

/// LLVM's, beside the libMLIR.so the tools link (the tools' RUNPATH names
/// that directory too): one OpenMP runtime for the process, the one LLVM's
/// OpenMP lowering targets.
StringRef mha::openMPLibrary() { return MHA_OPENMP_LIB; }

void mha::setDefaultCUDARoot() {
  if (!std::getenv("CUDA_ROOT") && llvm::sys::fs::exists("/usr/local/cuda/bin"))
    setenv("CUDA_ROOT", "/usr/local/cuda", 0);
}

void mha::addDeviceResidentCopy(func::FuncOp func, StringRef name) {
  OpBuilder builder(func);
  builder.setInsertionPointAfter(func);
  auto copy = cast<func::FuncOp>(builder.clone(*func));
  copy.setSymName(name);
  copy->setAttr(kDeviceResidentAttrName, builder.getUnitAttr());
}

std::optional<SmallVector<int64_t>> mha::deviceResultsOf(ModuleOp module,
                                                         StringRef name) {
  auto func = module.lookupSymbol<LLVM::LLVMFuncOp>(name);
  auto placement =
      func ? func->getAttrOfType<DenseI64ArrayAttr>(kDeviceResultsAttrName)
           : DenseI64ArrayAttr();
  if (!placement)
    return std::nullopt;
  return SmallVector<int64_t>(placement.asArrayRef());
}

std::optional<SmallVector<int64_t>> mha::resultRanksOf(ModuleOp module,
                                                       StringRef name) {
  auto func = module.lookupSymbol<LLVM::LLVMFuncOp>(name);
  if (!func)
    return std::nullopt;
  auto rankOf = [](LLVM::LLVMStructType descriptor) -> int64_t {
    ArrayRef<Type> fields = descriptor.getBody();
    return fields.size() == 3
               ? 0
               : cast<LLVM::LLVMArrayType>(fields[3]).getNumElements();
  };
  auto type = dyn_cast<LLVM::LLVMStructType>(
      func.getFunctionType().getReturnType());
  if (!type)
    return SmallVector<int64_t>();
  if (isa<LLVM::LLVMPointerType>(type.getBody().front()))
    return SmallVector<int64_t>{rankOf(type)};
  SmallVector<int64_t> ranks;
  for (Type field : type.getBody())
    ranks.push_back(rankOf(cast<LLVM::LLVMStructType>(field)));
  return ranks;
}
