//===- mha-run.cpp - JIT-compile and run an mha function --------*- C++ -*-===//
//
// Lowers a file through one of the registered MHA pipelines (or a textual
// pass pipeline), JIT-compiles it for the host CPU with the MLIR
// ExecutionEngine and calls one function on .npy inputs (or deterministic
// random data): writes or summarizes the results, compares them with expected
// outputs, and times repeated calls.
//
// Exit codes:
//   0  success;
//   1  results differ from the expected outputs;
//   2  bad usage or input (one message naming the argument);
//   3  compilation failed (a pass of the pipeline, or the JIT);
//   4  run-time failure (calling the compiled function reported an error,
//      or the GPU runtime it needs could not be loaded).
// A failed run-time check in the lowered code aborts the process instead
// (SIGABRT, after printing the check's message).
//
//===----------------------------------------------------------------------===//

#include "Npy.h"
#include "ToolSupport.h"

#include "mha/Dialect/MHA/IR/MHAOps.h"
#include "mha/ExecutionEngine/RunnerSupport.h"
#include "mha/InitAll.h"
#include "mha/Pipelines/Pipelines.h"

#include "mha/Dialect/MHA/IR/MHADialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/DynamicLibrary.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>

using namespace mlir;
using namespace mha_run;
namespace cl = llvm::cl;

namespace {

enum ExitCode {
  kOk = 0,
  kMismatch = 1,
  kBadInput = 2,
  kCompileError = 3,
  kRunError = 4,
};

cl::OptionCategory category("mha-run options");

namespace flags {
mha::EntryFlags entryFlags(category, "Function to call");
cl::list<std::string> inputs("input",
                             cl::desc("@file.npy for each argument, in order"),
                             cl::cat(category));
cl::opt<std::string> randomInputs(
    "random-inputs", cl::ValueOptional,
    cl::desc("Deterministic random arguments instead of files (=SEED, "
             "default 0); needs static argument shapes"),
    cl::cat(category));
cl::list<std::string> outputs("output",
                              cl::desc("@file.npy for each result, in order"),
                              cl::cat(category));
cl::list<std::string>
    expectedOutputs("expected-output",
                    cl::desc("@file.npy to compare each result with"),
                    cl::cat(category));
cl::opt<double> atol("atol", cl::desc("Absolute tolerance"), cl::init(1e-4),
                     cl::cat(category));
cl::opt<double> rtol("rtol", cl::desc("Relative tolerance"), cl::init(1e-4),
                     cl::cat(category));
cl::opt<unsigned> benchmark("benchmark",
                            cl::desc("Time N calls after a warm-up call"),
                            cl::init(0), cl::cat(category));
cl::opt<unsigned> repeat(
    "repeat",
    cl::desc("Call the function N times and require bitwise equal results "
             "(catches races, which are intermittent); the first call's "
             "results are the ones written and compared"),
    cl::init(1), cl::cat(category));
cl::opt<bool> prepareWeights(
    "prepare-weights",
    cl::desc("Call NAME_prepare once on the arguments marked mha.weight, "
             "then NAME_prepared with its results for every call (the cpu "
             "and loops pipelines write the pair)"),
    cl::init(false), cl::cat(category));
cl::opt<bool> deviceResident(
    "device-resident",
    cl::desc("GPU pipelines: also run the entry on device buffers (a copy "
             "of it marked mha.device_resident): the arguments uploaded "
             "once, every call (--repeat, --benchmark) on device memory "
             "with no copies, the results downloaded; those are the results "
             "written and compared"),
    cl::init(false), cl::cat(category));
cl::opt<bool> printTarget(
    "print-target",
    cl::desc("Print the target triple, CPU and features the JIT compiles "
             "for, and the vector width the cpu pipeline's tiles are sized "
             "for"),
    cl::init(false), cl::cat(category));
cl::opt<bool> dumpPassPipeline(
    "dump-pass-pipeline",
    cl::desc("Print the pass pipeline that lowers the input, with every "
             "option (the cpu pipeline's vector-width is the target's)"),
    cl::init(false), cl::cat(category));
mha::CPUTargetFlags targetFlags(category);
cl::opt<std::string> dumpObjectFile(
    "dump-object-file",
    cl::desc("Write the object code the JIT generated to this file (after "
             "the first call)"),
    cl::value_desc("path"), cl::cat(category));

} // namespace flags

/// The command line, read once (readOptions) before anything runs; the
/// functions below read only this.
struct RunOptions {
  std::string inputFile, pipelineName, entryName;
  std::vector<std::string> inputs, outputs, expectedOutputs;
  /// --random-inputs given (its value: the seed, may be empty).
  bool random = false;
  std::string randomInputs;
  double atol = 0, rtol = 0;
  unsigned benchmark = 0, repeat = 1;
  bool printTarget = false, dumpPassPipeline = false, prepareWeights = false;
  bool deviceResident = false;
  mha::CPUTarget cpuTarget;
  std::string dumpObjectFile;
};

RunOptions readOptions() {
  RunOptions o;
  o.inputFile = flags::entryFlags.input;
  o.pipelineName = flags::entryFlags.pipeline;
  o.entryName = flags::entryFlags.entry;
  o.inputs = flags::inputs;
  o.outputs = flags::outputs;
  o.expectedOutputs = flags::expectedOutputs;
  o.random = flags::randomInputs.getNumOccurrences() > 0;
  o.randomInputs = flags::randomInputs;
  o.atol = flags::atol;
  o.rtol = flags::rtol;
  o.benchmark = flags::benchmark;
  o.repeat = flags::repeat;
  o.printTarget = flags::printTarget;
  o.prepareWeights = flags::prepareWeights;
  o.deviceResident = flags::deviceResident;
  o.dumpPassPipeline = flags::dumpPassPipeline;
  o.cpuTarget = flags::targetFlags.get();
  o.dumpObjectFile = flags::dumpObjectFile;
  return o;
}

/// Reports a usage or input error and returns kBadInput.
int badInput(const Twine &message) {
  llvm::errs() << "mha-run: error: " << message << "\n";
  return kBadInput;
}

/// `@path` -> `path`.
StringRef stripAt(StringRef arg) {
  arg.consume_front("@");
  return arg;
}

/// The .npy type code of a tensor element type, or "" if unsupported.
StringRef dtypeFor(Type type) {
  if (type.isF32())
    return "f4";
  if (type.isF16())
    return "f2";
  if (type.isBF16())
    return "u2"; // The bits: NumPy has no bfloat16.
  if (type.isInteger(1))
    return "b1";
  if (type.isInteger(32))
    return "i4"; // Integer masks (ONNX Runtime's key padding mask), lengths.
  if (type.isInteger(64))
    return "i8"; // Key lengths.
  return "";
}

std::string shapeToString(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (auto [i, d] : llvm::enumerate(shape))
    s += (i ? ", " : "") +
         (ShapedType::isDynamic(d) ? std::string("?") : std::to_string(d));
  return s + "]";
}

/// A ranked memref descriptor as the lowered function takes it, one word per
/// field: allocated, aligned, offset, sizes, strides.
struct Descriptor {
  SmallVector<int64_t> words;
};

/// The descriptor of the dense row-major array at `data` of shape `shape`.
Descriptor describe(void *data, ArrayRef<int64_t> shape) {
  Descriptor d;
  auto ptr = reinterpret_cast<int64_t>(data);
  d.words = {ptr, ptr, 0};
  d.words.append(shape.begin(), shape.end());
  int64_t stride = 1;
  SmallVector<int64_t> strides(shape.size());
  for (int i = static_cast<int>(shape.size()) - 1; i >= 0; --i) {
    strides[i] = stride;
    stride *= shape[i];
  }
  d.words.append(strides.begin(), strides.end());
  return d;
}

Descriptor describe(NpyArray &array) {
  return describe(array.data.data(), array.shape);
}

/// Counts the FLOPs of the mha ops in `func` (see docs/Tools.md), resolving
/// dynamic sizes from the argument shapes. Returns 0 when a size is unknown.
double countFlops(func::FuncOp func, ArrayRef<NpyArray> args) {
  auto dim = [&](Value v, unsigned i) -> int64_t {
    auto type = cast<ShapedType>(v.getType());
    if (!type.isDynamicDim(i))
      return type.getDimSize(i);
    if (auto arg = dyn_cast<BlockArgument>(v))
      if (arg.getOwner()->getParentOp() == func)
        return args[arg.getArgNumber()].shape[i];
    return -1;
  };
  double flops = 0;
  bool unknown = false;
  func.walk([&](Operation *op) {
    double b, h, hkv, sq, sk, dk, dv, projections = 0;
    bool causal;
    if (auto mhaOp = dyn_cast<mha::MultiHeadAttentionOp>(op)) {
      b = dim(mhaOp.getQuery(), 0);
      sq = dim(mhaOp.getQuery(), 1);
      sk = dim(mhaOp.getKey(), 1);
      h = mhaOp.getNumHeads();
      hkv = mhaOp.getNumKvHeadsOrDefault();
      dk = mhaOp.getHeadDimQK();
      dv = mhaOp.getHeadDimV();
      double eq = dim(mhaOp.getQuery(), 2), ek = dim(mhaOp.getKey(), 2),
             ev = dim(mhaOp.getValue(), 2), eo = dim(mhaOp.getWO(), 1);
      projections = 2 * b *
                    (sq * eq * h * dk + sk * ek * hkv * dk + sk * ev * hkv * dv +
                     sq * h * dv * eo);
      causal = mhaOp.getCausal();
      // On KV caches the attention reads the caches' keys (as the core op
      // over a cache is counted: the whole Smax).
      if (mhaOp.hasKvCache())
        sk = dim(mhaOp.getKCache(), 2);
    } else if (auto attOp = dyn_cast<mha::AttentionOp>(op)) {
      b = dim(attOp.getQuery(), 0);
      h = dim(attOp.getQuery(), 1);
      sq = dim(attOp.getQuery(), 2);
      sk = dim(attOp.getKey(), attOp.getKeySeqDim());
      dk = dim(attOp.getQuery(), 3);
      dv = dim(attOp.getValue(), 3);
      causal = attOp.getCausal();
    } else {
      return;
    }
    if (b < 0 || sq < 0 || sk < 0)
      unknown = true;
    double attention = 2 * b * h * sq * sk * (dk + dv);
    flops += projections + (causal ? attention / 2 : attention);
  });
  return unknown ? 0 : flops;
}

/// Fills `array` deterministically: floats uniform in [-1, 1), bools and
/// ints 1 with probability 0.8 (so that rows rarely lose every key).
void fillRandom(NpyArray &array, std::mt19937_64 &rng) {
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::bernoulli_distribution coin(0.8);
  bool discrete =
      array.dtype == "b1" || array.dtype == "i4" || array.dtype == "i8";
  for (int64_t i = 0, e = array.numElements(); i < e; ++i)
    array.set(i, discrete ? coin(rng) : uniform(rng));
}

void printSummary(unsigned index, const NpyArray &array) {
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  int64_t n = array.numElements(), nonFinite = 0;
  for (int64_t i = 0; i < n; ++i) {
    double v = array.get(i);
    if (!std::isfinite(v)) {
      ++nonFinite;
      continue;
    }
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
  }
  llvm::outs() << "result " << index << ": " << shapeToString(array.shape)
               << " " << array.dtype << "  min " << lo << "  max " << hi
               << "  mean " << (n ? sum / n : 0.0);
  if (nonFinite)
    llvm::outs() << "  non-finite " << nonFinite;
  llvm::outs() << "\n  first values:";
  for (int64_t i = 0; i < std::min<int64_t>(n, 6); ++i)
    llvm::outs() << " " << array.get(i);
  llvm::outs() << "\n";
}

SmallVector<int64_t> ranksOf(TypeRange types) {
  return llvm::map_to_vector(types, [](Type type) {
    return cast<RankedTensorType>(type).getRank();
  });
}

/// Calls of a function through the engine's packed interface: one pointer
/// per descriptor word of each argument, then one to the returned struct of
/// result descriptors (3 + 2 * rank words each).
class Caller {
public:
  /// `arguments`' descriptors; results of ranks `resultRanks`, of the
  /// tensor types `resultTypes` where known (for takeResults).
  Caller(ExecutionEngine &engine, StringRef entryName,
         SmallVector<Descriptor> arguments, ArrayRef<int64_t> resultRanks,
         TypeRange resultTypes = {})
      : engine(engine), entryName(entryName), descriptors(std::move(arguments)),
        resultRanks(resultRanks), resultTypes(resultTypes) {
    for (Descriptor &d : descriptors)
      for (int64_t &word : d.words)
        packed.push_back(&word);
    size_t resultWords = 0;
    for (int64_t rank : resultRanks)
      resultWords += 3 + 2 * rank;
    resultStruct.resize(resultWords);
    if (resultWords)
      packed.push_back(resultStruct.data());
  }

  /// One call; kOk, or kRunError reported.
  int call() {
    if (llvm::Error error = engine.invokePacked(entryName, packed)) {
      llvm::errs() << "mha-run: error: calling '@" << entryName
                   << "' failed: " << llvm::toString(std::move(error)) << "\n";
      return kRunError;
    }
    return kOk;
  }

  /// Frees the buffers of the last call's results (those that are not
  /// arguments).
  void freeResults() {
    for (Descriptor &result : takeDescriptors())
      if (!isArgument(result))
        std::free(reinterpret_cast<void *>(result.words[0]));
  }

  /// The last call's result descriptors, as returned: the caller owns the
  /// buffers that are not arguments (isArgument).
  SmallVector<Descriptor> takeDescriptors() {
    SmallVector<Descriptor> results;
    size_t at = 0;
    for (int64_t rank : resultRanks) {
      Descriptor d;
      d.words.assign(resultStruct.begin() + at,
                     resultStruct.begin() + at + 3 + 2 * rank);
      results.push_back(std::move(d));
      at += 3 + 2 * rank;
    }
    return results;
  }

  /// Whether a result's buffer is one of the arguments'.
  bool isArgument(const Descriptor &result) const {
    return llvm::any_of(descriptors, [&](const Descriptor &a) {
      return a.words[0] == result.words[0];
    });
  }

  /// The last call's results as arrays (strided reads: they need not be
  /// contiguous); their buffers are freed.
  SmallVector<NpyArray> takeResults() {
    SmallVector<NpyArray> results;
    for (auto [type, result] : llvm::zip_equal(resultTypes, takeDescriptors())) {
      auto tensor = cast<RankedTensorType>(type);
      int64_t rank = tensor.getRank();
      ArrayRef<int64_t> words = result.words;
      NpyArray array;
      array.dtype = dtypeFor(tensor.getElementType()).str();
      size_t elementSize = NpyArray::elementSize(array.dtype);
      auto *aligned = reinterpret_cast<const char *>(words[1]);
      ArrayRef<int64_t> sizes = words.slice(3, rank);
      ArrayRef<int64_t> strides = words.slice(3 + rank, rank);
      array.shape.assign(sizes.begin(), sizes.end());
      array.data.resize(array.numElements() * elementSize);
      mha_copy_strided(array.data.data(), aligned + words[2] * elementSize,
                       elementSize, rank, sizes.data(), strides.data(),
                       /*dst_strides=*/nullptr);
      results.push_back(std::move(array));
      if (!isArgument(result))
        std::free(reinterpret_cast<void *>(words[0]));
    }
    return results;
  }

private:
  ExecutionEngine &engine;
  std::string entryName;
  SmallVector<Descriptor> descriptors;
  SmallVector<int64_t> resultRanks;
  SmallVector<Type> resultTypes;
  SmallVector<void *> packed;
  SmallVector<int64_t> resultStruct;
};

/// The weights of an entry prepared once (--prepare-weights): the results
/// of `NAME_prepare` on them, which `NAME_prepared` takes before the other
/// arguments; freed with this object.
struct PreparedWeights {
  SmallVector<Descriptor> values;
  SmallVector<const void *> weights;
  PreparedWeights() = default;
  PreparedWeights(const PreparedWeights &) = delete;
  ~PreparedWeights() {
    for (Descriptor &d : values)
      if (!llvm::is_contained(weights, reinterpret_cast<void *>(d.words[0])))
        std::free(reinterpret_cast<void *>(d.words[0]));
  }
};

/// One run of mha-run over the options: the steps below, in the order run()
/// takes them.
/// --device-resident: the entry's device-resident copy called on device
/// buffers of the GPU runtime (its mgpu* functions): the arguments uploaded
/// once, each result written into a device buffer of its own (or into its
/// argument's, updated in place), downloaded by takeResults.
class DeviceCaller {
public:
  struct Runtime {
    void *(*alloc)(uint64_t bytes, void *stream, bool hostShared);
    void (*free)(void *pointer, void *stream);
    void (*copy)(void *dst, void *src, size_t bytes, void *stream);
    void (*synchronize)(void *stream);
  };

  /// The loaded GPU runtime's functions.
  static llvm::Expected<Runtime> findRuntime() {
    Runtime rt;
    auto find = [](const char *name) {
      return llvm::sys::DynamicLibrary::SearchForAddressOfSymbol(name);
    };
    rt.alloc = reinterpret_cast<decltype(rt.alloc)>(find("mgpuMemAlloc"));
    rt.free = reinterpret_cast<decltype(rt.free)>(find("mgpuMemFree"));
    rt.copy = reinterpret_cast<decltype(rt.copy)>(find("mgpuMemcpy"));
    rt.synchronize = reinterpret_cast<decltype(rt.synchronize)>(
        find("mgpuStreamSynchronize"));
    if (!rt.alloc || !rt.free || !rt.copy || !rt.synchronize)
      return llvm::createStringError(
          "the GPU runtime's memory functions (mgpuMemAlloc, mgpuMemFree, "
          "mgpuMemcpy, mgpuStreamSynchronize) are not loaded");
    return rt;
  }

  /// `hostResults`: the results of the host entry (their shapes and
  /// dtypes); `placement`: per result, the argument it updates in place or
  /// -1 (mha.device_results).
  DeviceCaller(ExecutionEngine &engine, StringRef name, Runtime rt,
               ArrayRef<NpyArray> args, ArrayRef<NpyArray> hostResults,
               ArrayRef<int64_t> placement)
      : rt(rt), shapes(hostResults), placement(placement),
        caller(engine, name, describeBuffers(args, hostResults), {}) {}

  ~DeviceCaller() {
    for (void *buffer : buffers)
      rt.free(buffer, nullptr);
    rt.synchronize(nullptr);
  }

  int call() { return caller.call(); }
  void freeResults() {}

  /// The results, downloaded.
  SmallVector<NpyArray> takeResults() {
    SmallVector<NpyArray> results;
    for (auto [j, shape] : llvm::enumerate(shapes)) {
      NpyArray array;
      array.dtype = shape.dtype;
      array.shape = shape.shape;
      array.data.resize(shape.data.size());
      void *device =
          placement[j] >= 0 ? buffers[placement[j]] : buffers[resultBuffers[j]];
      rt.copy(array.data.data(), device, array.data.size(), nullptr);
      rt.synchronize(nullptr);
      results.push_back(std::move(array));
    }
    return results;
  }

  size_t uploadedBytes = 0;

private:
  SmallVector<Descriptor> describeBuffers(ArrayRef<NpyArray> args,
                                          ArrayRef<NpyArray> results) {
    SmallVector<Descriptor> descriptors;
    for (const NpyArray &arg : args) {
      void *device = rt.alloc(arg.data.size(), nullptr, false);
      rt.synchronize(nullptr);
      rt.copy(device, const_cast<char *>(arg.data.data()), arg.data.size(),
              nullptr);
      rt.synchronize(nullptr);
      uploadedBytes += arg.data.size();
      buffers.push_back(device);
      descriptors.push_back(describe(device, arg.shape));
    }
    for (auto [j, result] : llvm::enumerate(results)) {
      resultBuffers.push_back(buffers.size());
      if (placement[j] >= 0)
        continue;
      void *device = rt.alloc(result.data.size(), nullptr, false);
      rt.synchronize(nullptr);
      buffers.push_back(device);
      descriptors.push_back(describe(device, result.shape));
    }
    return descriptors;
  }

  Runtime rt;
  SmallVector<NpyArray> shapes;
  SmallVector<int64_t> placement;
  SmallVector<void *> buffers;
  SmallVector<size_t> resultBuffers;
  Caller caller;
};

class Runner : RunOptions {
public:
  explicit Runner(RunOptions options) : RunOptions(std::move(options)) {}
  int run(MLIRContext &context);

private:
  bool compare(unsigned index, const NpyArray &got, const NpyArray &want,
               StringRef wantPath);
  int checkSignature(FunctionType signature);
  int loadArguments(FunctionType signature, SmallVectorImpl<NpyArray> &args);
  int loadExpected(FunctionType signature, SmallVectorImpl<NpyArray> &expected);
  int createEngine(ModuleOp module, llvm::TargetMachine *optimizerTarget,
                   std::unique_ptr<llvm::TargetMachine> codegenTarget,
                   std::unique_ptr<ExecutionEngine> &engine);
  int runDeviceResident(ExecutionEngine &engine, StringRef deviceName,
                        ArrayRef<int64_t> placement, ArrayRef<NpyArray> args,
                        ArrayRef<NpyArray> hostResults,
                        ArrayRef<NpyArray> expected, double flops,
                        double lowerMs, double jitMs);
  template <typename CallerT>
  int finishCalls(CallerT &caller, ArrayRef<NpyArray> results,
                  ArrayRef<NpyArray> expected, double flops, double lowerMs,
                  double jitMs, std::optional<double> prepareMs);
  template <typename CallerT>
  int checkRepeats(CallerT &caller, ArrayRef<NpyArray> results);
  int reportResults(ArrayRef<NpyArray> results, ArrayRef<NpyArray> expected);
  template <typename CallerT>
  int runBenchmark(CallerT &caller, double flops, double lowerMs, double jitMs,
                   std::optional<double> prepareMs);
};

/// Compares like numpy.allclose (NaN equals NaN); prints the worst errors.
/// Returns true when every element is within tolerance.
bool Runner::compare(unsigned index, const NpyArray &got, const NpyArray &want,
                     StringRef wantPath) {
  double maxAbs = 0, maxRel = 0;
  int64_t worst = -1, bad = 0;
  for (int64_t i = 0, n = got.numElements(); i < n; ++i) {
    double g = got.get(i), w = want.get(i);
    if (std::isnan(g) && std::isnan(w))
      continue;
    double err = std::fabs(g - w);
    if (std::isinf(g) && g == w)
      err = 0;
    if (std::isnan(err))
      err = INFINITY;
    double rel = w != 0 ? err / std::fabs(w) : (err == 0 ? 0 : INFINITY);
    if (!(err <= atol + rtol * std::fabs(w)))
      ++bad;
    if (worst < 0 || err > maxAbs) {
      maxAbs = err;
      worst = i;
    }
    maxRel = std::max(maxRel, rel);
  }
  llvm::outs() << llvm::formatv(
      "result {0} vs {1}: max abs error {2:e}, max rel error {3:e}", index,
      wantPath, maxAbs, maxRel);
  if (worst >= 0) {
    SmallVector<int64_t> where(got.shape.size());
    int64_t rest = worst;
    for (int i = static_cast<int>(got.shape.size()) - 1; i >= 0; --i) {
      where[i] = got.shape[i] ? rest % got.shape[i] : 0;
      rest = got.shape[i] ? rest / got.shape[i] : 0;
    }
    llvm::outs() << " at " << shapeToString(where) << " (got "
                 << got.get(worst) << ", expected " << want.get(worst) << ")";
  }
  llvm::outs() << (bad ? llvm::formatv(": MISMATCH, {0} element(s) outside "
                                       "atol={1:e} rtol={2:e}\n",
                                       bad, atol, rtol)
                             .str()
                       : std::string(": OK\n"));
  return bad == 0;
}

/// The entry's arguments and results are ranked tensors of element types
/// mha-run reads and writes (and of static shapes for Vulkan). kOk or the
/// exit code of the error reported.
int Runner::checkSignature(FunctionType signature) {
  for (auto [i, type] : llvm::enumerate(signature.getInputs())) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor || dtypeFor(tensor.getElementType()).empty())
      return badInput(llvm::formatv("argument {0} of '@{1}' has type {2}; "
                                    "mha-run passes ranked tensors of f32, "
                                    "f16, bf16, i1 or i32",
                                    i, entryName, type)
                          .str());
  }
  // The Vulkan calling convention gives kernels static buffer sizes.
  const mha::PipelineInfo *pipeline = mha::pipelineOf(pipelineName);
  if (pipeline && pipeline->target == mha::TargetKind::Vulkan)
    for (auto [i, type] : llvm::enumerate(signature.getInputs()))
      if (!cast<RankedTensorType>(type).hasStaticShape())
        return badInput(llvm::formatv(
                            "argument {0} of '@{1}' has a dynamic shape ({2}); "
                            "the Vulkan pipeline passes its kernels static "
                            "buffer sizes: give the function static shapes, "
                            "or use --pipeline=cpu",
                            i, entryName, type)
                            .str());
  for (auto [i, type] : llvm::enumerate(signature.getResults())) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor || dtypeFor(tensor.getElementType()).empty())
      return badInput(llvm::formatv("result {0} of '@{1}' has type {2}; "
                                    "mha-run returns ranked tensors of f32, "
                                    "f16, bf16, i1 or i32",
                                    i, entryName, type)
                          .str());
  }
  return kOk;
}

/// The arguments of the entry, from the --input files or random
/// (--random-inputs), checked against its signature.
int Runner::loadArguments(FunctionType signature,
                          SmallVectorImpl<NpyArray> &args) {
  unsigned numArgs = signature.getNumInputs();
  if (random && !inputs.empty())
    return badInput("--random-inputs and --input are exclusive");
  if (!random && inputs.size() != numArgs)
    return badInput(llvm::formatv("'@{0}' takes {1} argument(s), {2} --input "
                                  "given",
                                  entryName, numArgs, inputs.size())
                        .str());
  std::mt19937_64 rng;
  if (random) {
    uint64_t seed = 0;
    if (!randomInputs.empty() && StringRef(randomInputs).getAsInteger(10, seed))
      return badInput("--random-inputs=" + randomInputs +
                      ": the seed must be an unsigned integer");
    rng.seed(seed);
  }
  for (unsigned i = 0; i < numArgs; ++i) {
    auto type = cast<RankedTensorType>(signature.getInput(i));
    StringRef dtype = dtypeFor(type.getElementType());
    NpyArray array;
    if (random) {
      if (!type.hasStaticShape())
        return badInput(llvm::formatv("argument {0} has dynamic shape {1}: "
                                      "--random-inputs needs static shapes; "
                                      "pass --input files",
                                      i, shapeToString(type.getShape()))
                            .str());
      array.dtype = dtype.str();
      array.shape.assign(type.getShape().begin(), type.getShape().end());
      array.data.resize(array.numElements() * NpyArray::elementSize(dtype));
      fillRandom(array, rng);
    } else {
      StringRef path = stripAt(inputs[i]);
      llvm::Expected<NpyArray> read = readNpy(path);
      if (!read)
        return badInput("--input " + Twine(i) + ": " +
                        llvm::toString(read.takeError()));
      array = std::move(*read);
      if (array.dtype != dtype)
        return badInput(llvm::formatv("--input {0} '{1}': dtype '{2}' does not "
                                      "match argument type {3} (expected '{4}')",
                                      i, path, array.dtype, type, dtype)
                            .str());
      if (static_cast<int64_t>(array.shape.size()) != type.getRank())
        return badInput(llvm::formatv("--input {0} '{1}': rank {2} does not "
                                      "match argument type {3}",
                                      i, path, array.shape.size(), type)
                            .str());
      for (auto [d, size] : llvm::enumerate(type.getShape()))
        if (!ShapedType::isDynamic(size) && array.shape[d] != size)
          return badInput(llvm::formatv("--input {0} '{1}': shape {2} does not "
                                        "match argument type {3} (dimension "
                                        "{4}: expected {5}, found {6})",
                                        i, path, shapeToString(array.shape),
                                        type, d, size, array.shape[d])
                              .str());
    }
    args.push_back(std::move(array));
  }
  return kOk;
}

/// The checks of the output flags against the entry's results, and the
/// --expected-output arrays.
int Runner::loadExpected(FunctionType signature,
                         SmallVectorImpl<NpyArray> &expected) {
  std::string errorMessage;
  if (!dumpObjectFile.empty() &&
      !openOutputFile(dumpObjectFile, &errorMessage)) // Not kept: a check.
    return badInput("--dump-object-file: " + errorMessage);
  if (!outputs.empty() && outputs.size() != signature.getNumResults())
    return badInput(llvm::formatv("'@{0}' returns {1} result(s), {2} --output "
                                  "given",
                                  entryName, signature.getNumResults(),
                                  outputs.size())
                        .str());
  if (!expectedOutputs.empty() &&
      expectedOutputs.size() != signature.getNumResults())
    return badInput(llvm::formatv("'@{0}' returns {1} result(s), {2} "
                                  "--expected-output given",
                                  entryName, signature.getNumResults(),
                                  expectedOutputs.size())
                        .str());
  for (auto [i, arg] : llvm::enumerate(expectedOutputs)) {
    llvm::Expected<NpyArray> read = readNpy(stripAt(arg));
    if (!read)
      return badInput("--expected-output " + Twine(i) + ": " +
                      llvm::toString(read.takeError()));
    expected.push_back(std::move(*read));
  }
  return kOk;
}

/// The JIT engine of the lowered `module`, with the runtime libraries its
/// code may call (the runner utilities, OpenMP, the GPU runtime its kernels
/// launch through). The engine compiles with `codegenTarget`, which it takes.
int Runner::createEngine(ModuleOp module, llvm::TargetMachine *optimizerTarget,
                         std::unique_ptr<llvm::TargetMachine> codegenTarget,
                         std::unique_ptr<ExecutionEngine> &engine) {
  auto transformer = makeOptimizingTransformer(
      /*optLevel=*/3, /*sizeLevel=*/0, optimizerTarget);
  ExecutionEngineOptions engineOptions;
  engineOptions.transformer = transformer;
  engineOptions.enableObjectDump = !dumpObjectFile.empty();
  // Runtime functions lowered code may call (memrefCopy for buffer copies).
  SmallVector<StringRef> sharedLibs;
  if (llvm::sys::fs::exists(MHA_RUNNER_UTILS_LIBS))
    sharedLibs.push_back(MHA_RUNNER_UTILS_LIBS);
  // LLVM's OpenMP runtime, for the parallel loops of mha-lower-to-cpu.
  if (llvm::sys::fs::exists(mha::openMPLibrary()))
    sharedLibs.push_back(mha::openMPLibrary());
  // The GPU runtime kernels launch through.
  llvm::Expected<mha::GPURuntime> gpuRuntime = mha::gpuRuntimeOf(module);
  if (!gpuRuntime)
    return badInput(llvm::toString(gpuRuntime.takeError()));
  llvm::Expected<std::string> gpuLibrary = mha::gpuRuntimeLibrary(*gpuRuntime);
  if (!gpuLibrary)
    return badInput(llvm::toString(gpuLibrary.takeError()));
  if (!gpuLibrary->empty()) {
    // Loaded here first so that a missing driver (the CUDA runtime needs
    // libcuda.so.1) is one clear message instead of unresolved symbols.
    std::string loadError;
    if (!llvm::sys::DynamicLibrary::getPermanentLibrary(gpuLibrary->c_str(),
                                                        &loadError)
             .isValid()) {
      llvm::errs() << "mha-run: error: the GPU runtime '" << *gpuLibrary
                   << "' could not be loaded: " << loadError
                   << " (is the GPU driver installed?)\n";
      return kRunError;
    }
    sharedLibs.push_back(*gpuLibrary);
  }
  engineOptions.sharedLibPaths = sharedLibs;
  // The engine generates code with the target machine it is given, so the
  // -O3 code generation level is set on that machine, not through
  // ExecutionEngineOptions::jitCodeGenOptLevel.
  auto created =
      ExecutionEngine::create(module, engineOptions, std::move(codegenTarget));
  if (!created) {
    llvm::errs() << "mha-run: error: JIT compilation failed: "
                 << llvm::toString(created.takeError()) << "\n";
    return kCompileError;
  }
  engine = std::move(*created);
  // The JIT compiles on first lookup: look the entry up now so that its
  // time is the compile time, not part of the first call.
  if (llvm::Expected<void (*)(void **)> entry = engine->lookupPacked(entryName);
      !entry)
    llvm::consumeError(entry.takeError()); // Reported by the call below.
  return kOk;
}

/// Races and other nondeterminism: every further call (--repeat) must give
/// bitwise the first call's `results`. kOk, kMismatch, or kRunError.
template <typename CallerT>
int Runner::checkRepeats(CallerT &caller, ArrayRef<NpyArray> results) {
  int status = kOk;
  for (unsigned callIndex = 1; callIndex < repeat; ++callIndex) {
    if (int error = caller.call())
      return error;
    SmallVector<NpyArray> again = caller.takeResults();
    for (auto [i, result] : llvm::enumerate(again)) {
      if (result.data == results[i].data)
        continue;
      size_t elementSize = NpyArray::elementSize(result.dtype), differ = 0;
      for (size_t e = 0, n = result.data.size() / elementSize; e < n; ++e)
        differ += std::memcmp(result.data.data() + e * elementSize,
                              results[i].data.data() + e * elementSize,
                              elementSize) != 0;
      llvm::outs() << llvm::formatv("result {0}: call {1} of {2} differs "
                                    "bitwise from call 1 in {3} element(s): "
                                    "NONDETERMINISTIC\n",
                                    i, callIndex + 1, repeat, differ);
      status = kMismatch;
    }
  }
  return status;
}

/// The results written (--output), summarized, and compared with the
/// expected ones. kOk, kMismatch, or kBadInput.
int Runner::reportResults(ArrayRef<NpyArray> results,
                          ArrayRef<NpyArray> expected) {
  int status = kOk;
  for (auto [i, result] : llvm::enumerate(results)) {
    if (!outputs.empty()) {
      if (llvm::Error error = writeNpy(stripAt(outputs[i]), result))
        return badInput("--output " + Twine(i) + ": " +
                        llvm::toString(std::move(error)));
      llvm::outs() << "result " << i << ": " << shapeToString(result.shape)
                   << " written to " << stripAt(outputs[i]) << "\n";
    } else if (expected.empty()) {
      printSummary(i, result);
    }
    if (!expected.empty()) {
      const NpyArray &want = expected[i];
      if (want.shape != result.shape)
        return badInput(llvm::formatv("--expected-output {0} '{1}': shape {2} "
                                      "does not match result shape {3}",
                                      i, stripAt(expectedOutputs[i]),
                                      shapeToString(want.shape),
                                      shapeToString(result.shape))
                            .str());
      if (!compare(i, result, want, stripAt(expectedOutputs[i])))
        status = kMismatch;
    }
  }
  return status;
}

/// --benchmark: the compile times, then a warm-up call and the timed calls
/// with their median, minimum and maximum (and GFLOP/s where the FLOPs of a
/// call are known). kOk or kRunError.
template <typename CallerT>
int Runner::runBenchmark(CallerT &caller, double flops, double lowerMs,
                         double jitMs, std::optional<double> prepareMs) {
  llvm::outs() << llvm::formatv(
      "compile: lowering {0:f1} ms, JIT (LLVM optimization and code "
      "generation) {1:f1} ms\n",
      lowerMs, jitMs);
  if (prepareMs)
    llvm::outs() << llvm::formatv("prepare: '@{0}_prepare' once, {1:f3} ms; "
                                  "the calls below are '@{0}_prepared'\n",
                                  entryName, *prepareMs);
  if (int error = caller.call()) // Warm-up.
    return error;
  caller.freeResults();
  std::vector<double> ms;
  for (unsigned i = 0; i < benchmark; ++i) {
    double start = mha_now_ms();
    if (int error = caller.call())
      return error;
    ms.push_back(mha_now_ms() - start);
    caller.freeResults();
  }
  mha_bench_stats stats = mha_bench_summarize(ms.data(), ms.size());
  llvm::outs() << llvm::formatv("benchmark: {0} calls, median {1:f3} ms, min "
                                "{2:f3} ms, max {3:f3} ms",
                                stats.calls, stats.median_ms, stats.min_ms,
                                stats.max_ms);
  if (flops > 0)
    llvm::outs() << llvm::formatv(", {0:f2} GFLOP/s ({1:e} FLOP per call)",
                                  flops / (stats.median_ms * 1e6), flops);
  llvm::outs() << "\n";
  return kOk;
}

/// After the first call gave `results`: the --repeat calls, the results
/// reported, the --benchmark. kOk, kMismatch, kBadInput or kRunError.
template <typename CallerT>
int Runner::finishCalls(CallerT &caller, ArrayRef<NpyArray> results,
                        ArrayRef<NpyArray> expected, double flops,
                        double lowerMs, double jitMs,
                        std::optional<double> prepareMs) {
  int status = checkRepeats(caller, results);
  if (status == kRunError)
    return status;
  int reported = reportResults(results, expected);
  if (reported == kBadInput)
    return reported;
  status = std::max(status, reported);
  if (benchmark > 0)
    if (int error = runBenchmark(caller, flops, lowerMs, jitMs, prepareMs))
      return error;
  return status;
}

/// --device-resident: the calls, results, repeats and benchmark of `run` on
/// the device-resident copy `deviceName` of the entry; `hostResults` (of
/// the host entry) size its results.
int Runner::runDeviceResident(ExecutionEngine &engine, StringRef deviceName,
                              ArrayRef<int64_t> placement,
                              ArrayRef<NpyArray> args,
                              ArrayRef<NpyArray> hostResults,
                              ArrayRef<NpyArray> expected, double flops,
                              double lowerMs, double jitMs) {
  llvm::Expected<DeviceCaller::Runtime> rt = DeviceCaller::findRuntime();
  if (!rt) {
    llvm::errs() << "mha-run: error: --device-resident: "
                 << llvm::toString(rt.takeError()) << "\n";
    return kRunError;
  }
  DeviceCaller caller(engine, deviceName, *rt, args, hostResults, placement);
  if (int error = caller.call())
    return error;
  SmallVector<NpyArray> results = caller.takeResults();
  llvm::outs() << "device-resident: " << caller.uploadedBytes
               << " bytes of arguments uploaded once; the calls on device "
                  "buffers copy no argument or result (only what their host "
                  "code reads)\n";
  return finishCalls(caller, results, expected, flops, lowerMs, jitMs,
                     std::nullopt);
}

int Runner::run(MLIRContext &context) {
  // The target and the pipeline first: usage errors, reported before any
  // input is read. The CPU pipeline's register tiles fit the target's vector
  // registers.
  if (llvm::Error error = mha::checkCPUTarget(cpuTarget))
    return badInput(llvm::toString(std::move(error)));
  // JIT for the host: the LLVM optimizer needs the target machine for its
  // cost models (without it the loop vectorizer sees no vector registers),
  // and code generation uses it for the instruction set. The engine takes
  // ownership of its own copy; `optimizerTarget` must outlive the engine's
  // transformer.
  llvm::Expected<std::unique_ptr<llvm::TargetMachine>> optimizerTarget =
      mha::createTargetMachine(cpuTarget);
  llvm::Expected<std::unique_ptr<llvm::TargetMachine>> codegenTarget =
      mha::createTargetMachine(cpuTarget);
  if (!optimizerTarget || !codegenTarget) {
    llvm::Error error = llvm::joinErrors(optimizerTarget.takeError(),
                                         codegenTarget.takeError());
    llvm::errs() << "mha-run: error: no target machine for the host: "
                 << llvm::toString(std::move(error)) << "\n";
    return kCompileError;
  }
  if (llvm::Error error = mha::checkRunsOnHost(**codegenTarget))
    return badInput(llvm::toString(std::move(error)));
  // Anchored on the module (what the input is), so that --dump-pass-pipeline
  // prints `builtin.module(...)`, which --pipeline takes back.
  PassManager pm(&context, ModuleOp::getOperationName());
  llvm::Expected<const mha::PipelineInfo *> pipeline = mha::addPipeline(
      pm, pipelineName, mha::hostTarget(&context, **codegenTarget));
  if (!pipeline)
    return badInput(llvm::toString(pipeline.takeError()));
  if (deviceResident && (*pipeline)->target == mha::TargetKind::CPU)
    return badInput("--device-resident: the '" + (*pipeline)->name +
                    "' pipeline runs on the CPU, which has no device "
                    "buffers (use a GPU pipeline: vulkan, cuda)");
  if (deviceResident && prepareWeights)
    return badInput("--device-resident and --prepare-weights: the GPU "
                    "pipelines prepare no weights");
  if (dumpPassPipeline) {
    pm.printAsTextualPipeline(llvm::outs());
    llvm::outs() << "\n";
  }

  // Parse and find the entry function before lowering: its signature says
  // what the arguments must look like.
  OwningOpRef<ModuleOp> module;
  func::FuncOp func;
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  if (llvm::Error error = mha::loadEntry(context, sourceMgr, inputFile,
                                         entryName, module, func))
    return badInput(llvm::toString(std::move(error)));
  FunctionType signature = func.getFunctionType();
  SmallVector<NpyArray> args, expected;
  if (int error = checkSignature(signature))
    return error;
  if (int error = loadArguments(signature, args))
    return error;
  if (int error = loadExpected(signature, expected))
    return error;
  double flops = countFlops(func, args);
  // The weights, marked in the input (lowering consumes the marks).
  SmallVector<unsigned> weightArgs = mha::getWeightArguments(func);
  if (prepareWeights && weightArgs.empty())
    return badInput("--prepare-weights: no argument of '@" + entryName +
                    "' is marked '" + mha::kWeightAttrName + "'");

  // --device-resident: a copy of the entry on device buffers, lowered
  // beside it.
  std::string deviceName = entryName + "_device";
  if (deviceResident) {
    if (module->lookupSymbol(deviceName))
      return badInput("--device-resident: '" + inputFile +
                      "' already has a symbol '@" + deviceName + "'");
    mha::addDeviceResidentCopy(func, deviceName);
  }

  // Lower, then compile.
  auto lowerStart = std::chrono::steady_clock::now();
  if (failed(pm.run(*module))) {
    llvm::errs() << "mha-run: error: lowering '" << inputFile
                 << "' through --pipeline=" << pipelineName << " failed\n";
    return kCompileError;
  }
  if (printTarget)
    llvm::outs() << mha::describeTargetMachine(**codegenTarget)
                 << "; vectors of " << mha::vectorWidthOf(**codegenTarget) << " bits\n";
  std::string prepareName = entryName + "_prepare";
  std::optional<SmallVector<int64_t>> preparedRanks;
  if (prepareWeights) {
    preparedRanks = mha::resultRanksOf(*module, prepareName);
    if (!preparedRanks || !module->lookupSymbol(entryName + "_prepared"))
      return badInput("--prepare-weights: --pipeline=" + pipelineName +
                      " wrote no '@" + prepareName +
                      "' (the cpu and loops pipelines prepare weights)");
  }
  SmallVector<int64_t> placement;
  if (deviceResident) {
    std::optional<SmallVector<int64_t>> results =
        mha::deviceResultsOf(*module, deviceName);
    if (!results)
      return badInput("--device-resident: --pipeline=" + pipelineName +
                      " did not make '@" + entryName + "' device-resident");
    placement = std::move(*results);
  }
  auto jitStart = std::chrono::steady_clock::now();
  std::unique_ptr<ExecutionEngine> engine;
  if (int error = createEngine(*module, optimizerTarget->get(),
                               std::move(*codegenTarget), engine))
    return error;
  auto jitStop = std::chrono::steady_clock::now();
  auto ms = [](auto from, auto to) {
    return std::chrono::duration<double, std::milli>(to - from).count();
  };
  double lowerMs = ms(lowerStart, jitStart), jitMs = ms(jitStart, jitStop);

  // The arguments of each call: with --prepare-weights, the results of one
  // call of NAME_prepare on the weights, then the other arguments.
  SmallVector<Descriptor> callArguments;
  PreparedWeights prepared;
  std::optional<double> prepareMs;
  if (prepareWeights) {
    SmallVector<Descriptor> weights;
    for (unsigned i : weightArgs) {
      weights.push_back(describe(args[i]));
      prepared.weights.push_back(args[i].data.data());
    }
    Caller prepare(*engine, prepareName, std::move(weights), *preparedRanks);
    double start = mha_now_ms();
    if (int error = prepare.call())
      return error;
    prepareMs = mha_now_ms() - start;
    prepared.values = prepare.takeDescriptors();
    callArguments = prepared.values;
  }
  for (auto [i, array] : llvm::enumerate(args))
    if (!prepareWeights || !llvm::is_contained(weightArgs, i))
      callArguments.push_back(describe(array));
  Caller caller(*engine,
                prepareWeights ? entryName + "_prepared" : entryName,
                std::move(callArguments), ranksOf(signature.getResults()),
                signature.getResults());
  if (int error = caller.call())
    return error;
  // The JIT compiles at the first lookup: the object code exists now.
  if (!dumpObjectFile.empty())
    engine->dumpToObjectFile(dumpObjectFile);
  SmallVector<NpyArray> results = caller.takeResults();
  if (deviceResident)
    return runDeviceResident(*engine, deviceName, placement, args, results,
                             expected, flops, lowerMs, jitMs);

  return finishCalls(caller, results, expected, flops, lowerMs, jitMs,
                     prepareMs);
}

/// `--threads=N` is taken out of argv before LLVM's option parser sees it:
/// libLLVM registers a `threads` option of its own.
std::optional<std::string> takeThreadsOption(int &argc, char **argv) {
  std::optional<std::string> value;
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    StringRef arg(argv[i]);
    if (arg.consume_front("--threads=") || arg.consume_front("-threads="))
      value = arg.str();
    else
      argv[out++] = argv[i];
  }
  argc = out;
  return value;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  std::optional<std::string> threads = takeThreadsOption(argc, argv);
  mha::initTool(argc, argv, category,
                "mha-run: JIT-compile an MLIR file through an MHA pipeline "
                "and call a function on .npy inputs\n");
  DialectRegistry registry;
  mha::registerAllDialectsAndPasses(registry);
  if (threads) {
    unsigned n;
    if (StringRef(*threads).getAsInteger(10, n) || n == 0)
      return badInput("--threads=" + *threads +
                      ": expected a positive integer");
    // Worker threads of multithreaded pipelines; the loops pipeline is serial.
    setenv("OMP_NUM_THREADS", threads->c_str(), 1);
  }
  // Lowered code reports failed run-time checks with puts() and then aborts:
  // line buffering gets the message out even when stdout is a pipe.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  // The lowered code allocates its intermediate buffers (K/V projections,
  // per-tile scores) on every call: keep freed memory for the next one.
  mha_keep_freed_memory();
  mha::setDefaultCUDARoot();
  MLIRContext context(registry);
  // A diagnostic is its message and location, without the op printed as a
  // note: for an error at a GPU kernel (its workgroup memory, ptxas) that
  // note is the whole kernel, thousands of lines.
  context.printOpOnDiagnostic(false);
  return Runner(readOptions()).run(context);
}
