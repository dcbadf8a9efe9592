//===- mha-aot.cpp - Compile an mha function ahead of time ------*- C++ -*-===//
//
// Lowers a file through one of the registered MHA pipelines, as mha-run
// does, but instead of running it writes what ships to a machine without
// LLVM or MLIR:
//
//   PREFIX.h    a C header: the entry point `int NAME(...)` on dense
//               row-major arrays, a generic `NAME_run`, and the signature;
//   PREFIX.so   a shared object with those entry points;
//   PREFIX      a standalone executable that reads the arguments from .npy
//               files and writes the results to .npy files.
//
// The object code is generated here (LLVM, -O3, for the host CPU or
// --target-cpu); the C wrapper and the link are left to a C compiler
// (--cc). What the code calls at run time is linked as shared libraries:
// LLVM's OpenMP runtime for the CPU pipeline's parallel loops, the Vulkan or
// CUDA runtime of runtime/ for GPU kernels.
//
// --sanitize=thread instruments all three for ThreadSanitizer, to look for
// data races between the threads of the parallel loops (docs/Reliability.md).
//
// Exit codes: 0 success, 2 bad usage or input, 3 compilation or link failed.
//
//===----------------------------------------------------------------------===//

#include "ToolSupport.h"
#include "mha/Dialect/MHA/IR/MHADialect.h"

#include "mha/Codegen/Common/Transforms.h"
#include "mha/InitAll.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

using namespace mlir;
namespace cl = llvm::cl;

// kAotMainSource, kAotWrapperSource, kAotSignatureHeader,
// kRunnerSupportHeader, kRunnerSupportSource: the C sources of
// lib/ExecutionEngine compiled into the outputs; kAotSignatureTypes: the
// public block of AotSignature.h (generated from them).
#include "AotSources.inc"

namespace {

enum ExitCode { kOk = 0, kBadInput = 2, kCompileError = 3 };

cl::OptionCategory category("mha-aot options");
mha::EntryFlags entryFlags(category, "Function to compile");
cl::opt<std::string> &inputFile = entryFlags.input;
cl::opt<std::string> &pipelineName = entryFlags.pipeline;
cl::opt<std::string> &entryName = entryFlags.entry;
cl::opt<std::string> outputPrefix(
    "o",
    cl::desc("Output prefix: writes PREFIX.h, PREFIX.so and the executable "
             "PREFIX (default: the input's name in the current directory)"),
    cl::value_desc("prefix"), cl::cat(category));
cl::opt<std::string> symbolName(
    "name",
    cl::desc("C name of the entry point (default: the prefix's file name, "
             "with characters that C does not allow as '_')"),
    cl::cat(category));
cl::opt<bool> deviceEntry(
    "device-entry",
    cl::desc("Also write NAME_device, the entry on device buffers (GPU "
             "pipelines): arguments and results stay on the device across "
             "calls, with NAME_device_alloc, _free, _upload and _download "
             "to manage them"),
    cl::init(false), cl::cat(category));
mha::CPUTargetFlags targetFlags(category);
enum class Sanitizer { None, Thread };
cl::opt<Sanitizer> sanitizer(
    "sanitize", cl::desc("Instrument the outputs for a sanitizer"),
    cl::values(clEnumValN(Sanitizer::Thread, "thread",
                          "ThreadSanitizer: data races between threads; the "
                          "executable loads LLVM's Archer OpenMP tool")),
    cl::init(Sanitizer::None), cl::cat(category));
cl::opt<std::string> cCompiler(
    "cc",
    cl::desc("C compiler that compiles the wrapper and links (default: the "
             "one mha-aot was built with, else cc on PATH)"),
    cl::value_desc("path"), cl::cat(category));

int badInput(const Twine &message) {
  llvm::errs() << "mha-aot: error: " << message << "\n";
  return kBadInput;
}

int compileError(const Twine &message) {
  llvm::errs() << "mha-aot: error: " << message << "\n";
  return kCompileError;
}

/// One array of the entry's signature as C sees it.
struct ArrayInfo {
  std::string npyDtype; // "<f4", "<f2", "<u2" (bf16 bits), "|b1", "<i4", "<i8"
  std::string cType;    // float, uint16_t, uint8_t, int32_t, int64_t
  SmallVector<int64_t> shape; // ShapedType::kDynamic for dynamic sizes
  int64_t updates = -1; // a result: the argument it is written into, if any
};


FailureOr<ArrayInfo> arrayInfo(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return failure();
  ArrayInfo info;
  Type element = tensor.getElementType();
  if (element.isF32())
    info = {"<f4", "float", {}};
  else if (element.isF16())
    info = {"<f2", "uint16_t", {}};
  else if (element.isBF16())
    info = {"<u2", "uint16_t", {}};
  else if (element.isInteger(1))
    info = {"|b1", "uint8_t", {}};
  else if (element.isInteger(32))
    info = {"<i4", "int32_t", {}};
  else if (element.isInteger(64))
    info = {"<i8", "int64_t", {}};
  else
    return failure();
  info.shape.assign(tensor.getShape().begin(), tensor.getShape().end());
  return info;
}

/// `NAME` with every character C does not allow in an identifier as '_'.
std::string cIdentifier(StringRef name) {
  std::string id;
  for (char c : name)
    id += llvm::isAlnum(c) || c == '_' ? c : '_';
  if (id.empty() || llvm::isDigit(id[0]))
    id = "_" + id;
  return id;
}

std::string shapeComment(const ArrayInfo &info) {
  std::string s = "[";
  for (auto [d, size] : llvm::enumerate(info.shape))
    s += (d ? ", " : "") + (ShapedType::isDynamic(size)
                                ? "?" : std::to_string(size));
  return s + "]";
}

/// The names of the dynamic sizes of array `index` (`argI_dimD` or
/// `resultJ_dimD`), in the order `NAME` takes them.
SmallVector<std::string> dynamicSizes(StringRef what, size_t index,
                                      const ArrayInfo &info) {
  SmallVector<std::string> names;
  for (auto [d, size] : llvm::enumerate(info.shape))
    if (ShapedType::isDynamic(size))
      names.push_back(llvm::formatv("{0}{1}_dim{2}", what, index, d).str());
  return names;
}

/// The weights an entry's preparation takes (the arguments marked
/// mha.weight) and the ranks of what it returns: NAME_prepare,
/// NAME_prepared and NAME_release are written where the pipeline prepared
/// them.
struct Preparation {
  SmallVector<unsigned> weights;
  SmallVector<int64_t> ranks;
  bool isWeight(size_t i) const { return llvm::is_contained(weights, i); }
};

/// The parameters of a typed entry: the arguments `args` selects (by index,
/// each then its dynamic sizes), then with `withResults` each result then
/// its dynamic sizes.
SmallVector<std::string> entryParams(ArrayRef<ArrayInfo> inputs,
                                     ArrayRef<ArrayInfo> outputs,
                                     llvm::function_ref<bool(size_t)> args,
                                     bool withResults) {
  SmallVector<std::string> params;
  for (auto [i, info] : llvm::enumerate(inputs)) {
    if (!args(i))
      continue;
    // An argument a result updates in place is written.
    bool written = llvm::any_of(outputs, [&, i = i](const ArrayInfo &out) {
      return out.updates == static_cast<int64_t>(i);
    });
    params.push_back((written ? "" : "const ") + info.cType + " *arg" +
                     std::to_string(i));
    for (const std::string &size : dynamicSizes("arg", i, info))
      params.push_back("int64_t " + size);
  }
  for (auto [j, info] : llvm::enumerate(outputs)) {
    if (!withResults)
      break;
    params.push_back(info.cType + " *result" + std::to_string(j));
    for (const std::string &size : dynamicSizes("result", j, info))
      params.push_back("int64_t " + size);
  }
  return params;
}

std::string cFunction(StringRef returned, StringRef name,
                      ArrayRef<std::string> params) {
  return returned.str() + " " + name.str() + "(" +
         (params.empty() ? "void" : llvm::join(params, ",\n    ")) + ")";
}

/// `int NAME(...)`, the typed entry: each argument then its dynamic sizes,
/// each result then its dynamic sizes.
std::string typedEntry(StringRef name, ArrayRef<ArrayInfo> inputs,
                       ArrayRef<ArrayInfo> outputs) {
  return cFunction("int", name,
                   entryParams(inputs, outputs, [](size_t) { return true; },
                               /*withResults=*/true));
}

/// `int NAME_prepare(...)`: the weights, then where the prepared values go.
std::string prepareEntry(StringRef name, ArrayRef<ArrayInfo> inputs,
                         const Preparation &preparation) {
  SmallVector<std::string> params = entryParams(
      inputs, {}, [&](size_t i) { return preparation.isWeight(i); },
      /*withResults=*/false);
  params.push_back("struct mha_aot_prepared **prepared");
  return cFunction("int", name.str() + "_prepare", params);
}

/// `int NAME_prepared(...)`: the prepared values, the other arguments, the
/// results.
std::string preparedEntry(StringRef name, ArrayRef<ArrayInfo> inputs,
                          ArrayRef<ArrayInfo> outputs,
                          const Preparation &preparation) {
  SmallVector<std::string> params = {
      "const struct mha_aot_prepared *prepared"};
  llvm::append_range(
      params, entryParams(inputs, outputs,
                          [&](size_t i) { return !preparation.isWeight(i); },
                          /*withResults=*/true));
  return cFunction("int", name.str() + "_prepared", params);
}

/// `int NAME_run(...)`, the generic entry.
std::string genericEntry(StringRef name) {
  return "int " + name.str() +
         "_run(void *const inputs[], const int64_t *const input_shapes[],\n"
         "    void *outputs[], int64_t *const output_shapes[])";
}

/// Declares the local array `name` of `items` and returns its name, or
/// returns `NULL` for no items (C has no empty arrays).
std::string localArray(StringRef elementType, StringRef name,
                       ArrayRef<std::string> items, llvm::raw_ostream &os) {
  if (items.empty())
    return "NULL";
  os << "  " << elementType << (elementType.ends_with("*") ? "" : " ") << name
     << "[" << items.size() << "] = {" << llvm::join(items, ", ") << "};\n";
  return name.str();
}

/// `int NAME_device(...)`: each argument then its dynamic sizes, each result
/// written into a buffer of the caller then its dynamic sizes (a result
/// that updates an argument in place has none: the argument's buffer is
/// updated).
std::string deviceEntryDecl(StringRef name, ArrayRef<ArrayInfo> inputs,
                            ArrayRef<ArrayInfo> outputs) {
  // An argument a result updates in place (a KV cache) is written where it
  // is: not const.
  SmallVector<std::string> params = entryParams(
      inputs, outputs, [](size_t) { return true; }, /*withResults=*/false);
  for (auto [j, info] : llvm::enumerate(outputs)) {
    if (info.updates >= 0)
      continue;
    params.push_back(info.cType + " *result" + std::to_string(j));
    for (const std::string &size : dynamicSizes("result", j, info))
      params.push_back("int64_t " + size);
  }
  return cFunction("int", name.str() + "_device", params);
}

/// `int NAME_run_device(...)`, the generic entry on device buffers.
std::string genericDeviceEntry(StringRef name) {
  return "int " + name.str() +
         "_run_device(void *const inputs[],\n"
         "    const int64_t *const input_shapes[], void *const outputs[],\n"
         "    const int64_t *const output_shapes[])";
}

/// The device memory functions, as `RETURN NAME_SUFFIX(PARAMS)`.
struct DeviceMemoryFunction {
  const char *returned, *suffix, *params, *body;
};
const DeviceMemoryFunction kDeviceMemoryFunctions[] = {
    {"void *", "_device_alloc", "size_t bytes",
     "  void *pointer = mgpuMemAlloc(bytes, NULL, false);\n"
     "  mgpuStreamSynchronize(NULL);\n  return pointer;\n"},
    {"void", "_device_free", "void *pointer",
     "  mgpuStreamSynchronize(NULL);\n  mgpuMemFree(pointer, NULL);\n"
     "  mgpuStreamSynchronize(NULL);\n"},
    {"void", "_device_upload", "void *device, const void *host, size_t bytes",
     "  mgpuMemcpy(device, (void *)host, bytes, NULL);\n"
     "  mgpuStreamSynchronize(NULL);\n"},
    {"void", "_device_download", "void *host, const void *device, size_t bytes",
     "  mgpuMemcpy(host, (void *)device, bytes, NULL);\n"
     "  mgpuStreamSynchronize(NULL);\n"},
    {"void *", "_host_alloc", "size_t bytes",
     "  return mhaHostAlloc(bytes);\n"},
    {"void", "_host_free", "void *pointer", "  mhaHostFree(pointer);\n"},
};

/// The header's part for --device-entry.
std::string deviceHeader(StringRef name, ArrayRef<ArrayInfo> inputs,
                         ArrayRef<ArrayInfo> outputs) {
  std::string text;
  llvm::raw_string_ostream os(text);
  std::string n = name.str();
  os << "/* The same computation on device buffers: every pointer of " << n
     << "_device is\n   device memory (" << n
     << "_device_alloc), arrays as for " << n
     << ", results written\n   into the buffers given (their dynamic "
        "sizes are checked when it runs: a\n   mismatch aborts), or into "
        "the argument they update in place (a KV\n   cache). Weights "
        "and activations uploaded once: a call copies\n   nothing between "
        "host and device but what host code of the entry reads\n   (a "
        "boolean mask it makes additive; on Vulkan, key lengths it\n   "
        "checks). Returns 0,\n"
        "   or "
        "2 when an argument's static shape does not match the signature. "
        "Calls\n   are synchronous: they return when the results are "
        "written. */\n"
     << deviceEntryDecl(name, inputs, outputs) << ";\n\n"
     << "/* The same for generic callers: outputs[j] (of shape "
        "output_shapes[j], the\n   result's) is written; it is not used "
        "for a result that updates an argument in\n   place. Returns 0, 1 "
        "(a result's static shape) or 2 (an argument's). */\n"
     << genericDeviceEntry(name) << ";\n"
     << "/* For each result, the argument it updates in place, or -1. */\n"
     << "extern const int64_t " << n << "_device_updates[];\n\n"
     << "/* Device memory: allocated (NULL for 0 bytes) and freed, and "
        "copied from and\n   to host memory; each returns when it is done. "
        "A failure aborts with the\n   GPU runtime's message. Host memory "
        "from "
     << n
     << "_host_alloc (page-locked on\n   CUDA) is copied "
        "to and from the device without staging, at full speed: the\n   "
        "arrays of "
     << n << " and of the uploads are best there. */\n";
  for (const DeviceMemoryFunction &f : kDeviceMemoryFunctions)
    os << f.returned << (StringRef(f.returned).ends_with("*") ? "" : " ") << n
       << f.suffix << "(" << f.params << ");\n";
  os << "\n";
  return text;
}

/// The header: the signature types (AotSignature.h's public block, so that
/// the header stands alone), the typed entry, the generic entry and the
/// signature.
std::string generateHeader(StringRef name, StringRef fileStem, StringRef source,
                           ArrayRef<ArrayInfo> inputs,
                           ArrayRef<ArrayInfo> outputs,
                           const std::optional<Preparation> &preparation) {
  std::string text;
  llvm::raw_string_ostream os(text);
  std::string guard = "MHA_AOT_" + StringRef(name).upper() + "_H";
  os << "/* " << fileStem << ".h: generated by mha-aot from " << source << " (@"
     << entryName << ", --pipeline=" << pipelineName << ").\n"
     << "   Link with " << fileStem << ".so (docs/Tools.md, mha-aot). "
     << "*/\n"
     << "#ifndef " << guard << "\n#define " << guard << "\n\n"
     << "#include <stddef.h>\n#include <stdint.h>\n\n#ifdef "
        "__cplusplus\nextern \"C\" {\n#endif\n\n"
     << kAotSignatureTypes << "\n";

  os << "/* Computes @" << entryName << ". Arrays are dense and row-major:\n";
  for (auto [i, info] : llvm::enumerate(inputs))
    os << "     arg" << i << "     " << info.npyDtype << " "
       << shapeComment(info) << "\n";
  bool updatesArguments = false;
  for (auto [j, info] : llvm::enumerate(outputs)) {
    os << "     result" << j << "  " << info.npyDtype << " "
       << shapeComment(info) << " (written";
    if (info.updates >= 0)
      os << "; arg" << info.updates << " updated in place:\n"
         << "                 pass arg" << info.updates
         << "'s array, and nothing is copied";
    os << ")\n";
    updatesArguments |= info.updates >= 0;
  }
  os << "   Each dynamic size (?) follows its array as an int64_t argument "
        "(argI_dimD,\n   resultJ_dimD). Returns 0 on success, 1 when a result's "
        "shape differs from\n   the one given (nothing is written), 2 when an "
        "argument's shape does not match\n   the signature. "
     << (updatesArguments ? "Arguments are not written, but for those the "
                            "results above\n   update in place. "
                          : "Arguments are not written. ")
     << "A failed run-time check of the layer (e.g. a\n   size the "
        "attributes contradict) aborts the process. */\n";
  os << typedEntry(name, inputs, outputs) << ";\n\n";
  os << "/* The same computation for generic callers: inputs[i] points to "
        "argument i,\n   of shape input_shapes[i]. Each result comes back in "
        "a buffer from malloc\n   (outputs[j], the caller frees it) of shape "
        "output_shapes[j]. Returns 0, or\n   2 when an argument's shape does "
        "not match the signature. */\n"
     << genericEntry(name) << ";\n\n"
     << "extern const struct mha_aot_signature " << name << "_signature;\n\n";
  if (deviceEntry)
    os << deviceHeader(name, inputs, outputs);
  if (preparation) {
    SmallVector<std::string> weights;
    for (unsigned i : preparation->weights)
      weights.push_back("arg" + std::to_string(i));
    os << "/* The weights prepared once: " << name
       << "_prepare computes what @" << entryName
       << " computes\n   from the arguments marked mha.weight alone,\n     "
       << llvm::join(weights, ", ")
       << ",\n   such as the projections' packed weight panels, into a new "
          "*prepared,\n   which owns it: the weights may be freed. "
       << name << "_prepared then computes " << name
       << "'s results from it and the\n   other arguments, as " << name
       << " would, by the same code. " << name
       << "_release frees\n   *prepared. Sizes and return codes as for "
       << name << " (" << name << "_prepare: 0, or 2 when a\n   weight's "
          "shape does not match). */\n"
       << prepareEntry(name, inputs, *preparation) << ";\n"
       << preparedEntry(name, inputs, outputs, *preparation) << ";\n"
       << "void " << name
       << "_release(struct mha_aot_prepared *prepared);\n\n";
  }
  os << "#ifdef __cplusplus\n}\n#endif\n\n#endif\n";
  return text;
}

/// NAME_device, NAME_run_device and the device memory functions, on the
/// compiled device-resident copy of the entry and the GPU runtime's mgpu*
/// functions.
void generateDeviceEntry(StringRef name, ArrayRef<ArrayInfo> inputs,
                         ArrayRef<ArrayInfo> outputs, llvm::raw_ostream &os) {
  std::string ciface = "_mlir_ciface_mha_aot_" + name.str() + "_device_impl";
  size_t arity = inputs.size();
  SmallVector<std::string> updates;
  for (const ArrayInfo &info : outputs) {
    arity += info.updates < 0;
    updates.push_back(std::to_string(info.updates));
  }
  SmallVector<std::string> pointers(arity, "void *");
  os << "\n#include <stdbool.h>\n"
     << "void " << ciface << "("
     << (arity ? llvm::join(pointers, ", ") : "void") << ");\n"
     << "void *mgpuMemAlloc(uint64_t bytes, void *stream, bool hostShared);\n"
     << "void mgpuMemFree(void *pointer, void *stream);\n"
     << "void mgpuMemcpy(void *dst, void *src, size_t bytes, void *stream);\n"
     << "void mgpuStreamSynchronize(void *stream);\n"
     << "void *mhaHostAlloc(uint64_t bytes);\n"
     << "void mhaHostFree(void *pointer);\n"
     << "const int64_t " << name << "_device_updates["
     << std::max<size_t>(outputs.size(), 1) << "] = {"
     << (updates.empty() ? "0" : llvm::join(updates, ", ")) << "};\n\n"
     << genericDeviceEntry(name) << " {\n"
     << "  return mha_aot_run_device(&" << name
     << "_signature, (mha_aot_ciface)" << ciface << ",\n      " << name
     << "_device_updates, inputs, input_shapes, "
        "outputs, output_shapes);\n}\n\n"
     << deviceEntryDecl(name, inputs, outputs) << " {\n";
  SmallVector<std::string> in, out, dims;
  for (auto [i, info] : llvm::enumerate(inputs)) {
    in.push_back("(void *)arg" + std::to_string(i));
    llvm::append_range(dims, dynamicSizes("arg", i, info));
  }
  for (auto [j, info] : llvm::enumerate(outputs)) {
    if (info.updates >= 0) {
      out.push_back("NULL");
      continue;
    }
    out.push_back("result" + std::to_string(j));
    llvm::append_range(dims, dynamicSizes("result", j, info));
  }
  std::string inArray = localArray("void *", "in", in, os);
  std::string outArray = localArray("void *", "out", out, os);
  std::string dimArray = localArray("int64_t", "dims", dims, os);
  os << "  return mha_aot_call_device(&" << name
     << "_signature, (mha_aot_ciface)" << ciface << ",\n      " << name
     << "_device_updates, " << inArray << ", " << outArray << ", " << dimArray
     << ");\n}\n";
  for (const DeviceMemoryFunction &f : kDeviceMemoryFunctions)
    os << "\n"
       << f.returned << (StringRef(f.returned).ends_with("*") ? "" : " ")
       << name << f.suffix << "(" << f.params << ") {\n"
       << f.body << "}\n";
}

/// The entry's C side beside the fixed wrapper (AotWrapper.c): the
/// signature table, and `NAME` and `NAME_run` forwarded to the wrapper with
/// the entry's `_mlir_ciface_` function, which takes a pointer to the
/// results' descriptors (when there are results), then one per argument.
std::string generateEntry(StringRef name, StringRef headerName,
                          ArrayRef<ArrayInfo> inputs,
                          ArrayRef<ArrayInfo> outputs,
                          const std::optional<Preparation> &preparation) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "/* Generated by mha-aot: the signature of " << name
     << ".h's entry, and its entry\n   points forwarded to the fixed wrapper "
        "(AotWrapper.c). */\n"
     << "#include \"" << headerName << "\"\n"
     << "#include \"mha/ExecutionEngine/AotSignature.h\"\n\n"
     << "#include <stddef.h>\n\n";
  std::string ciface = "_mlir_ciface_mha_aot_" + name.str() + "_impl";
  size_t arity = inputs.size() + (outputs.empty() ? 0 : 1);
  SmallVector<std::string> pointers(arity, "void *");
  os << "void " << ciface << "("
     << (arity ? llvm::join(pointers, ", ") : "void") << ");\n";
  if (preparation) {
    size_t prepareArity = preparation->weights.size() +
                          (preparation->ranks.empty() ? 0 : 1);
    size_t preparedArity = arity + preparation->ranks.size() -
                           preparation->weights.size();
    for (auto [suffix, n] : {std::pair("_prepare", prepareArity),
                             std::pair("_prepared", preparedArity)}) {
      SmallVector<std::string> params(n, "void *");
      os << "void " << ciface << suffix << "(" << (n ? llvm::join(params, ", ") : "void")
         << ");\n";
    }
  }
  os << "\n";

  // The signature table.
  auto shapeTable = [&](StringRef what, size_t index, const ArrayInfo &info) {
    os << "static const int64_t " << what << index << "_shape["
       << std::max<size_t>(info.shape.size(), 1) << "] = {";
    for (auto [d, size] : llvm::enumerate(info.shape))
      os << (d ? ", " : "") << (ShapedType::isDynamic(size) ? -1 : size);
    os << "};\n";
  };
  for (auto [i, info] : llvm::enumerate(inputs))
    shapeTable("arg", i, info);
  for (auto [j, info] : llvm::enumerate(outputs))
    shapeTable("result", j, info);
  auto infoTable = [&](StringRef what, ArrayRef<ArrayInfo> arrays) {
    os << "static const struct mha_aot_array_info " << what << "s["
       << std::max<size_t>(arrays.size(), 1) << "] = {";
    for (auto [i, info] : llvm::enumerate(arrays))
      os << (i ? ",\n    " : "\n    ") << "{\"" << info.npyDtype << "\", "
         << info.shape.size() << ", " << what << i << "_shape}";
    os << "};\n";
  };
  infoTable("arg", inputs);
  infoTable("result", outputs);
  os << "const struct mha_aot_signature " << name << "_signature = {\""
     << entryName << "\", " << inputs.size() << ", args, " << outputs.size()
     << ", results};\n\n";
  if (preparation) {
    // The weights' and the other arguments' signatures, and the ranks of
    // the prepared values.
    SmallVector<ArrayInfo> weights, others;
    SmallVector<size_t> weightIndex, otherIndex;
    for (auto [i, info] : llvm::enumerate(inputs)) {
      (preparation->isWeight(i) ? weights : others).push_back(info);
      (preparation->isWeight(i) ? weightIndex : otherIndex).push_back(i);
    }
    auto subsetTable = [&](StringRef table, ArrayRef<size_t> indices) {
      os << "static const struct mha_aot_array_info " << table << "["
         << std::max<size_t>(indices.size(), 1) << "] = {";
      for (auto [k, i] : llvm::enumerate(indices))
        os << (k ? ", " : "") << "{\"" << inputs[i].npyDtype << "\", "
           << inputs[i].shape.size() << ", arg" << i << "_shape}";
      os << "};\n";
    };
    subsetTable("weight_args", weightIndex);
    subsetTable("other_args", otherIndex);
    os << "static const struct mha_aot_signature weights_signature = {\""
       << entryName << "_prepare\", " << weights.size()
       << ", weight_args, 0, NULL};\n"
       << "static const struct mha_aot_signature others_signature = {\""
       << entryName << "_prepared\", " << others.size() << ", other_args, "
       << outputs.size() << ", results};\n"
       << "static const int64_t prepared_ranks["
       << std::max<size_t>(preparation->ranks.size(), 1) << "] = {";
    for (auto [j, rank] : llvm::enumerate(preparation->ranks))
      os << (j ? ", " : "") << rank;
    os << "};\n\n";
  }

  os << genericEntry(name) << " {\n"
     << "  return mha_aot_run(&" << name << "_signature, (mha_aot_ciface)"
     << ciface << ",\n      inputs, input_shapes, outputs, output_shapes);\n"
     << "}\n\n";

  os << typedEntry(name, inputs, outputs) << " {\n";
  SmallVector<std::string> in, out, dims;
  for (auto [i, info] : llvm::enumerate(inputs)) {
    in.push_back("(void *)arg" + std::to_string(i));
    llvm::append_range(dims, dynamicSizes("arg", i, info));
  }
  for (auto [j, info] : llvm::enumerate(outputs)) {
    out.push_back("result" + std::to_string(j));
    llvm::append_range(dims, dynamicSizes("result", j, info));
  }
  std::string inArray = localArray("void *", "in", in, os);
  std::string outArray = localArray("void *", "out", out, os);
  std::string dimArray = localArray("int64_t", "dims", dims, os);
  os << "  return mha_aot_call(&" << name << "_signature, (mha_aot_ciface)"
     << ciface << ",\n      " << inArray << ", " << outArray << ", "
     << dimArray << ");\n}\n";
  if (deviceEntry)
    generateDeviceEntry(name, inputs, outputs, os);
  if (!preparation)
    return text;

  os << "\n" << prepareEntry(name, inputs, *preparation) << " {\n";
  SmallVector<std::string> weightPtrs, weightDims;
  for (unsigned i : preparation->weights) {
    weightPtrs.push_back("(void *)arg" + std::to_string(i));
    llvm::append_range(weightDims, dynamicSizes("arg", i, inputs[i]));
  }
  std::string wArray = localArray("void *", "in", weightPtrs, os);
  std::string wDims = localArray("int64_t", "dims", weightDims, os);
  os << "  return mha_aot_prepare(&weights_signature, (mha_aot_ciface)"
     << ciface << "_prepare,\n      " << preparation->ranks.size()
     << ", prepared_ranks, " << wArray << ", " << wDims
     << ", prepared);\n}\n\n";

  os << preparedEntry(name, inputs, outputs, *preparation) << " {\n";
  SmallVector<std::string> otherPtrs, otherDims;
  for (auto [i, info] : llvm::enumerate(inputs)) {
    if (preparation->isWeight(i))
      continue;
    otherPtrs.push_back("(void *)arg" + std::to_string(i));
    llvm::append_range(otherDims, dynamicSizes("arg", i, info));
  }
  for (auto [j, info] : llvm::enumerate(outputs))
    llvm::append_range(otherDims, dynamicSizes("result", j, info));
  std::string oArray = localArray("void *", "in", otherPtrs, os);
  std::string rArray = localArray("void *", "out", out, os);
  std::string oDims = localArray("int64_t", "dims", otherDims, os);
  os << "  return mha_aot_call_prepared(&others_signature, (mha_aot_ciface)"
     << ciface << "_prepared,\n      prepared, " << oArray << ", " << rArray
     << ", " << oDims << ");\n}\n\n"
     << "void " << name << "_release(struct mha_aot_prepared *prepared) {\n"
     << "  mha_aot_release(prepared);\n}\n";
  return text;
}

/// Libraries the LLVM module's calls need, from its external functions:
/// LLVM's OpenMP runtime, the GPU runtime, else the C library. MLIR's runner
/// utilities are refused (their library needs libMLIR and libLLVM), except
/// `memrefCopy`, which the wrapper defines.
llvm::Expected<SmallVector<std::string>>
runtimeLibraries(const llvm::Module &module, mha::GPURuntime gpuRuntime) {
  bool openMP = false, gpu = false;
  std::string runnerUtils;
  for (const llvm::Function &f : module) {
    if (!f.isDeclaration() || f.isIntrinsic())
      continue;
    StringRef name = f.getName();
    openMP |= name.starts_with("__kmpc_") || name.starts_with("omp_");
    gpu |= name.starts_with("mgpu");
    // memrefCopy (copies between strided buffers) comes with the wrapper.
    if (name.starts_with("printMemref") || name.starts_with("_mlir_"))
      runnerUtils = name.str();
  }
  SmallVector<std::string> libraries;
  if (openMP)
    libraries.push_back(mha::openMPLibrary().str());
  if (gpu) {
    llvm::Expected<std::string> library = mha::gpuRuntimeLibrary(gpuRuntime);
    if (!library)
      return library.takeError();
    if (library->empty())
      return llvm::createStringError(
          "the lowered code launches GPU kernels but has no kernel binary "
          "for a known target (Vulkan SPIR-V or NVVM)");
    libraries.push_back(*library);
  }
  if (!runnerUtils.empty())
    return llvm::createStringError(
        "the lowered code calls '" + runnerUtils +
        "' of MLIR's runner utilities, which mha-aot does not ship; lower "
        "copies between non-identity layouts with a pipeline that leaves "
        "none (the mha pipelines do)");
  return libraries;
}

/// Runs the textual LLVM pass pipeline `pipeline` on `module`, without a
/// target machine.
llvm::Error runPasses(llvm::Module &module, StringRef pipeline) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder builder;
  builder.registerModuleAnalyses(mam);
  builder.registerCGSCCAnalyses(cgam);
  builder.registerFunctionAnalyses(fam);
  builder.registerLoopAnalyses(lam);
  builder.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager passes;
  if (llvm::Error error = builder.parsePassPipeline(passes, pipeline))
    return error;
  passes.run(module, mam);
  return llvm::Error::success();
}

/// ThreadSanitizer's instrumentation of the optimized module (its functions
/// were marked `sanitize_thread` before the optimizer, which then leaves out
/// the transformations that could introduce races, such as speculative
/// loads; clang does the same). TSan checks loads and stores of 1, 2, 4, 8
/// and 16 bytes only, and passes over masked ones, while the vector code's
/// are mostly wider (a vector<16xf32> row of a register tile is 64 bytes):
///  - masked loads and stores become conditional scalar ones
///    (`scalarize-masked-mem-intrin` without a target machine, for which no
///    masked access is legal);
///  - every other access TSan would pass over is announced to it as the
///    range of bytes it reads or writes (`__tsan_read_range`,
///    `__tsan_write_range`), so the vector code stays as it is (splitting it
///    into scalars instead made compiling 3.5x slower);
///  - then TSan's own passes.
llvm::Error instrumentForThreadSanitizer(llvm::Module &module) {
  if (llvm::Error error =
          runPasses(module, "function(scalarize-masked-mem-intrin)"))
    return error;
  llvm::LLVMContext &context = module.getContext();
  const llvm::DataLayout &layout = module.getDataLayout();
  llvm::Type *ptrType = llvm::PointerType::getUnqual(context);
  llvm::Type *sizeType = layout.getIntPtrType(context);
  llvm::Type *voidType = llvm::Type::getVoidTy(context);
  llvm::FunctionCallee readRange = module.getOrInsertFunction(
      "__tsan_read_range", voidType, ptrType, sizeType);
  llvm::FunctionCallee writeRange = module.getOrInsertFunction(
      "__tsan_write_range", voidType, ptrType, sizeType);
  for (llvm::Function &function : module) {
    if (!function.hasFnAttribute(llvm::Attribute::SanitizeThread))
      continue;
    SmallVector<llvm::Instruction *> wide;
    for (llvm::Instruction &inst : llvm::instructions(function)) {
      if (!isa<llvm::LoadInst, llvm::StoreInst>(inst) || inst.isAtomic())
        continue;
      llvm::TypeSize bytes = layout.getTypeStoreSize(getLoadStoreType(&inst));
      if (bytes.isScalable() || (bytes <= 16 && llvm::isPowerOf2_64(bytes)))
        continue;
      if (getLoadStoreAddressSpace(&inst))
        continue;
      wide.push_back(&inst);
    }
    for (llvm::Instruction *inst : wide) {
      llvm::IRBuilder<> builder(inst);
      builder.CreateCall(
          isa<llvm::StoreInst>(inst) ? writeRange : readRange,
          {getLoadStorePointerOperand(inst),
           llvm::ConstantInt::get(
               sizeType, layout.getTypeStoreSize(getLoadStoreType(inst)))});
    }
  }
  return runPasses(module, "tsan-module,function(tsan)");
}

/// Runs `argv[0]` with `argv`; returns an error with its output.
llvm::Error runCommand(ArrayRef<std::string> command) {
  SmallVector<StringRef> argv(command.begin(), command.end());
  std::string error;
  int rc = llvm::sys::ExecuteAndWait(argv[0], argv, std::nullopt, {}, 0, 0,
                                     &error);
  if (rc == 0)
    return llvm::Error::success();
  return llvm::createStringError(
      "'" + llvm::join(argv, " ") + "' failed" +
      (error.empty() ? " (exit " + std::to_string(rc) + ")" : ": " + error));
}

llvm::Expected<std::string> findCCompiler() {
  if (!cCompiler.empty()) {
    if (llvm::ErrorOr<std::string> path =
            llvm::sys::findProgramByName(cCompiler))
      return *path;
    return llvm::createStringError("--cc=" + cCompiler + ": not found");
  }
  for (StringRef candidate : {StringRef(MHA_AOT_DEFAULT_CC), StringRef("cc")})
    if (llvm::ErrorOr<std::string> path =
            llvm::sys::findProgramByName(candidate))
      return *path;
  return llvm::createStringError(
      "no C compiler found (tried " MHA_AOT_DEFAULT_CC " and cc; pass --cc)");
}

llvm::Error writeFile(StringRef path, StringRef contents) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_Text);
  if (ec)
    return llvm::createStringError("'" + path + "': " + ec.message());
  os << contents;
  return llvm::Error::success();
}

int compile(MLIRContext &context) {
  mha::CPUTarget cpuTarget = targetFlags.get();
  if (llvm::Error error = mha::checkCPUTarget(cpuTarget))
    return badInput(llvm::toString(std::move(error)));
  llvm::Expected<std::unique_ptr<llvm::TargetMachine>> tm =
      mha::createTargetMachine(cpuTarget, /*pic=*/true);
  if (!tm)
    return compileError("no target machine: " +
                        llvm::toString(tm.takeError()));
  // The CPU pipeline's register tiles fit the target's vector registers.
  PassManager pm(&context);
  llvm::Expected<const mha::PipelineInfo *> pipeline =
      mha::addPipeline(pm, pipelineName, mha::hostTarget(&context, **tm));
  if (!pipeline)
    return badInput(llvm::toString(pipeline.takeError()));
  if (deviceEntry && (*pipeline)->target == mha::TargetKind::CPU)
    return badInput("--device-entry: the '" + (*pipeline)->name +
                    "' pipeline runs on the CPU, which has no device buffers "
                    "(use a GPU pipeline: vulkan, cuda)");
  llvm::Expected<std::string> cc = findCCompiler();
  if (!cc)
    return badInput(llvm::toString(cc.takeError()));

  OwningOpRef<ModuleOp> module;
  func::FuncOp func;
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  if (llvm::Error error = mha::loadEntry(context, sourceMgr, inputFile,
                                         entryName, module, func))
    return badInput(llvm::toString(std::move(error)));
  SmallVector<ArrayInfo> inputs, outputs;
  FunctionType signature = func.getFunctionType();
  for (auto [what, types, infos] :
       {std::tuple(StringRef("argument"), signature.getInputs(), &inputs),
        std::tuple(StringRef("result"), signature.getResults(), &outputs)}) {
    for (auto [i, type] : llvm::enumerate(types)) {
      FailureOr<ArrayInfo> info = arrayInfo(type);
      if (failed(info) || info->shape.size() > 16)
        return badInput(llvm::formatv("{0} {1} of '@{2}' has type {3}; the "
                                      "C entry takes ranked tensors of rank "
                                      "<= 16 of f32, f16, bf16, i1, i32 or i64",
                                      what, i, entryName, type)
                            .str());
      if (infos == &outputs)
        info->updates = mha::getUpdatedArgument(func, i);
      infos->push_back(std::move(*info));
    }
    if (types.size() > 64)
      return badInput("'@" + entryName + "' has more than 64 " + what + "s");
  }

  SmallVector<unsigned> weights = mha::getWeightArguments(func);

  SmallString<128> prefix(outputPrefix.empty()
                              ? llvm::sys::path::stem(inputFile)
                              : StringRef(outputPrefix));
  std::string name = symbolName.empty()
                         ? cIdentifier(llvm::sys::path::filename(prefix))
                         : symbolName.getValue();
  if (name != cIdentifier(name))
    return badInput("--name=" + name + ": not a C identifier");
  if (name == "main")
    return badInput("the C entry point may not be named 'main' (the "
                    "executable's own): pass --name or another -o");

  // Lower, with a C interface for the entry, under a name that cannot clash
  // with C's main or the entry point (the other functions become private).
  std::string implName = "mha_aot_" + name + "_impl";
  if (module->lookupSymbol(implName))
    return badInput("'" + inputFile + "' already has a symbol '@" + implName +
                    "'");
  if (failed(SymbolTable::replaceAllSymbolUses(
          func, StringAttr::get(&context, implName), *module)))
    return badInput("the uses of '@" + entryName + "' could not be renamed");
  SymbolTable::setSymbolName(func, implName);
  for (auto other : module->getOps<func::FuncOp>())
    if (other != func && !other.isExternal())
      other.setPrivate();
  func->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(),
                UnitAttr::get(&context));
  // The entry on device buffers: a copy of it marked device-resident,
  // lowered beside it.
  std::string deviceImplName = "mha_aot_" + name + "_device_impl";
  if (deviceEntry) {
    if (module->lookupSymbol(deviceImplName))
      return badInput("'" + inputFile + "' already has a symbol '@" +
                      deviceImplName + "'");
    size_t arity = inputs.size();
    for (const ArrayInfo &info : outputs)
      arity += info.updates < 0;
    if (arity > 65)
      return badInput("'@" + entryName +
                      "' has more than 65 arguments and "
                      "results written into buffers");
    mha::addDeviceResidentCopy(func, deviceImplName);
  }
  if (failed(pm.run(*module)))
    return compileError("lowering '" + inputFile + "' through --pipeline=" +
                        pipelineName + " failed");
  llvm::Expected<mha::GPURuntime> gpuRuntime = mha::gpuRuntimeOf(*module);
  if (!gpuRuntime)
    return compileError(llvm::toString(gpuRuntime.takeError()));
  // Which results the device entry writes into the caller's buffers: all
  // but those updating an argument in place, as the header says.
  if (deviceEntry) {
    std::optional<SmallVector<int64_t>> placement =
        mha::deviceResultsOf(*module, deviceImplName);
    if (!placement || placement->size() != outputs.size())
      return compileError("the pipeline did not make '@" + entryName +
                          "' device-resident (no '" +
                          mha::kDeviceResultsAttrName + "' on its copy)");
    for (auto [j, info] : llvm::enumerate(outputs))
      if ((*placement)[j] != info.updates)
        return compileError(llvm::formatv(
            "the device entry of '@{0}' {1} result {2}, which {3}", entryName,
            (*placement)[j] < 0 ? "writes into a buffer of its own"
                                : "updates an argument in place for",
            j,
            info.updates < 0
                ? "is not an argument updated in place"
                : "updates argument " + std::to_string(info.updates)));
  }
  // The weights' preparation, where the pipeline wrote one (the CPU ones).
  std::optional<Preparation> preparation;
  if (!weights.empty())
    if (std::optional<SmallVector<int64_t>> ranks =
            mha::resultRanksOf(*module, implName + "_prepare");
        ranks && module->lookupSymbol(implName + "_prepared")) {
      if (ranks->size() + inputs.size() - weights.size() > 64)
        return badInput("'@" + entryName + "' has more than 64 prepared "
                        "weights and other arguments");
      preparation = Preparation{weights, *ranks};
    }

  // To LLVM IR, optimized and compiled for the target.
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(*module, llvmContext, name);
  if (!llvmModule)
    return compileError("translating the lowered '" + inputFile +
                        "' to LLVM IR failed (is it all in the LLVM "
                        "dialect?)");
  llvmModule->setDataLayout((*tm)->createDataLayout());
  llvmModule->setTargetTriple((*tm)->getTargetTriple());
  bool tsan = sanitizer == Sanitizer::Thread;
  if (tsan)
    for (llvm::Function &f : *llvmModule)
      if (!f.isDeclaration())
        f.addFnAttr(llvm::Attribute::SanitizeThread);
  if (llvm::Error error = makeOptimizingTransformer(3, 0, tm->get())(
          llvmModule.get()))
    return compileError("LLVM optimization failed: " +
                        llvm::toString(std::move(error)));
  if (tsan)
    if (llvm::Error error = instrumentForThreadSanitizer(*llvmModule))
      return compileError("ThreadSanitizer instrumentation failed: " +
                          llvm::toString(std::move(error)));
  llvm::Expected<SmallVector<std::string>> libraries =
      runtimeLibraries(*llvmModule, *gpuRuntime);
  if (!libraries)
    return compileError(llvm::toString(libraries.takeError()));
  // LLVM's Archer tool tells ThreadSanitizer about the synchronization inside
  // the uninstrumented OpenMP runtime (the fork, barriers and join of each
  // parallel loop); without it TSan reports races between every parallel
  // loop and the code before and after it. libomp starts a tool already
  // loaded in the process (OMPT's `ompt_start_tool`), so Archer is linked
  // though nothing calls it.
  std::string archer;
  if (tsan && llvm::is_contained(*libraries, mha::openMPLibrary().str())) {
    SmallString<128> path(llvm::sys::path::parent_path(mha::openMPLibrary()));
    llvm::sys::path::append(path, "libarcher.so");
    if (!llvm::sys::fs::exists(path))
      return compileError("--sanitize=thread: LLVM's OpenMP tool for "
                          "ThreadSanitizer, '" + path +
                          "', is not there (Debian: libomp-22-dev)");
    archer = path.str().str();
    libraries->push_back(archer);
  }

  SmallString<128> workDir;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory("mha-aot", workDir))
    return compileError("temporary directory: " + ec.message());
  llvm::scope_exit cleanup([&] {
    llvm::sys::fs::remove_directories(workDir);
  });
  auto inWork = [&](StringRef file) {
    SmallString<128> path(workDir);
    llvm::sys::path::append(path, file);
    return path.str().str();
  };
  std::string object = inWork(name + ".o");
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(object, ec, llvm::sys::fs::OF_None);
    if (ec)
      return compileError("'" + object + "': " + ec.message());
    llvm::legacy::PassManager codegen;
    if ((*tm)->addPassesToEmitFile(codegen, os, nullptr,
                                   llvm::CodeGenFileType::ObjectFile))
      return compileError("the target cannot emit object files");
    codegen.run(*llvmModule);
  }

  // The C side: header next to the outputs; the entry's table and stubs, the
  // fixed wrapper, the runner and RunnerSupport in the work directory, with
  // the headers they include as "mha/ExecutionEngine/...", compiled and
  // linked by the C compiler. The entry's file name has a '-', so that no C
  // name makes it one of the fixed ones.
  SmallString<128> outDir(llvm::sys::path::parent_path(prefix));
  if (outDir.empty())
    outDir = ".";
  if (std::error_code ec = llvm::sys::fs::create_directories(outDir))
    return badInput("'" + outDir + "': " + ec.message());
  std::string header = (prefix + ".h").str();
  std::string headerName = llvm::sys::path::filename(header).str();
  std::string entry = inWork("entry-" + name + ".c");
  std::string wrapper = inWork("AotWrapper.c");
  std::string runner = inWork("AotMain.c");
  std::string runnerSupport = inWork("RunnerSupport.c");
  std::string includeDir = inWork("mha/ExecutionEngine");
  if (std::error_code ec = llvm::sys::fs::create_directories(includeDir))
    return compileError("temporary directory: " + ec.message());
  std::string headerText = generateHeader(
      name, llvm::sys::path::filename(prefix),
      llvm::sys::path::filename(inputFile), inputs, outputs, preparation);
  std::string entryText =
      generateEntry(name, headerName, inputs, outputs, preparation);
  for (auto [path, text] :
       {std::pair(header, StringRef(headerText)),
        std::pair(entry, StringRef(entryText)),
        std::pair(wrapper, StringRef(kAotWrapperSource)),
        std::pair(runner, StringRef(kAotMainSource)),
        std::pair(runnerSupport, StringRef(kRunnerSupportSource)),
        std::pair(includeDir + "/AotSignature.h",
                  StringRef(kAotSignatureHeader)),
        std::pair(includeDir + "/RunnerSupport.h",
                  StringRef(kRunnerSupportHeader))})
    if (llvm::Error error = writeFile(path, text))
      return compileError(llvm::toString(std::move(error)));
  // The executable's TSan defaults: accesses and calls inside uninstrumented
  // libraries (libomp, the C library) are not checked, as Archer asks.
  // TSAN_OPTIONS adds to them or overrides them.
  std::string tsanOptions = inWork("tsan_options.c");
  if (tsan)
    if (llvm::Error error = writeFile(
            tsanOptions, "const char *__tsan_default_options(void);\n"
                         "const char *__tsan_default_options(void) {\n"
                         "  return \"ignore_noninstrumented_modules=1\";\n}\n"))
      return compileError(llvm::toString(std::move(error)));

  // Libraries by path, found again at run time through the rpath: the
  // directory of the output first (ship the runtime next to it), then where
  // they are here.
  std::vector<std::string> link = {"-Wl,-rpath,$ORIGIN"};
  for (const std::string &library : *libraries) {
    if (library == archer)
      link.insert(link.end(), {"-Wl,--push-state,--no-as-needed", library,
                               "-Wl,--pop-state"});
    else
      link.push_back(library);
    link.push_back("-Wl,-rpath," +
                   llvm::sys::path::parent_path(library).str());
  }
  // The wrapper and RunnerSupport are compiled into both outputs; the shared
  // object exports only the entry points. Their headers come from the work
  // directory, the entry's header from the output directory.
  std::vector<std::string> common = {
      *cc, "-O2", "-std=c11", "-I", workDir.str().str(), "-I",
      outDir.str().str(), "-Wall", "-Wno-unused-function",
      "-DMHA_RUNNER_SUPPORT_API=__attribute__((visibility(\"hidden\")))"};
  // Under TSan the .so needs a host program built with -fsanitize=thread.
  if (tsan)
    common.insert(common.end(), {"-fsanitize=thread", "-g"});
  std::vector<std::string> shared = common;
  shared.insert(shared.end(), {"-shared", "-fPIC", "-o", (prefix + ".so").str(),
                               entry, wrapper, runnerSupport, object});
  shared.insert(shared.end(), link.begin(), link.end());
  shared.push_back("-lm");
  std::vector<std::string> executable = common;
  executable.insert(executable.end(),
                    {"-D_POSIX_C_SOURCE=200809L",
                     "-DMHA_AOT_HEADER=\"" + headerName + "\"",
                     "-DMHA_AOT_SIGNATURE=" + name + "_signature",
                     "-DMHA_AOT_RUN=" + name + "_run", "-o", prefix.str().str(),
                     runner, runnerSupport, entry, wrapper, object});
  if (deviceEntry)
    executable.push_back("-DMHA_AOT_DEVICE=" + name);
  if (tsan)
    executable.push_back(tsanOptions);
  executable.insert(executable.end(), link.begin(), link.end());
  // The runtime's own dependencies (the NVIDIA driver's libcuda.so.1) are
  // the target machine's business: they need not be here to link.
  executable.insert(executable.end(), {"-lm", "-Wl,--allow-shlib-undefined"});
  for (const std::vector<std::string> &command : {shared, executable})
    if (llvm::Error error = runCommand(command))
      return compileError(llvm::toString(std::move(error)));
  llvm::outs() << "mha-aot: wrote " << header << ", " << prefix << ".so, "
               << prefix << " (" << mha::describeTargetMachine(**tm);
  for (const std::string &library : *libraries)
    llvm::outs() << "; needs " << llvm::sys::path::filename(library);
  llvm::outs() << ")\n";
  return kOk;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  mha::initTool(argc, argv, category,
                "mha-aot: compile an MLIR function through an MHA pipeline "
                "into a C header, a shared object and a standalone .npy "
                "executable\n");
  DialectRegistry registry;
  mha::registerAllDialectsAndPasses(registry);
  mha::setDefaultCUDARoot();
  MLIRContext context(registry);
  // A diagnostic is its message and location, without the op printed as a
  // note: for an error at a GPU kernel (its workgroup memory, ptxas) that
  // note is the whole kernel, thousands of lines.
  context.printOpOnDiagnostic(false);
  return compile(context);
}
