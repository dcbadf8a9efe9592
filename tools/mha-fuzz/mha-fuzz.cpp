//===- mha-fuzz.cpp - libFuzzer target for the mha dialect ------*- C++ -*-===//
//
// Parses the input as MLIR with every dialect registered, verifies it, and
// on success runs one pipeline on it, down to the LLVM dialect and the
// kernels' binaries; nothing is executed. The pipeline and its options are
// drawn from a hash of the input's bytes (choosePipeline), so that each input
// is lowered one way, always the same one, and mutations explore the options
// as they explore the IR: running every input through every pipeline cost
// seconds per input once the GPU pipelines joined.
// Diagnostics are expected and swallowed; a crash, an assertion or a
// sanitizer report is a finding (see docs/Reliability.md).
//
// Environment, for replaying a finding:
//   MHA_FUZZ_PIPELINE=<pass pipeline>  run this pipeline on every input
//       instead of the drawn one (-minimize_crash then keeps the pipeline
//       while the bytes change);
//   MHA_FUZZ_PRINT=1  print each input's pipeline before lowering it (the
//       default when an argument is a file: libFuzzer replaying inputs);
//   MHA_FUZZ_PRINT=only  print it and lower nothing.
//
//===----------------------------------------------------------------------===//

#include "mha/InitAll.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <string>

using namespace mlir;

static DialectRegistry &getRegistry() {
  static DialectRegistry *registry = [] {
    auto *r = new DialectRegistry();
    mha::registerAllDialectsAndPasses(*r);
    return r;
  }();
  return *registry;
}

namespace {
/// Choices drawn from a 64-bit seed (SplitMix64): the same seed gives the
/// same choices on every host.
class Draw {
public:
  explicit Draw(uint64_t seed) : state(seed) {}

  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, n).
  int64_t below(int64_t n) { return static_cast<int64_t>(next() % n); }
  bool oneIn(int64_t n) { return below(n) == 0; }
  int64_t pick(std::initializer_list<int64_t> values) {
    return *(values.begin() + below(values.size()));
  }

private:
  uint64_t state;
};

/// A pipeline's options as `{name=value ...}`, in the order they were drawn.
class Options {
public:
  void add(StringRef name, const Twine &value) {
    items.push_back((name + "=" + value).str());
  }
  std::string str(StringRef pipeline) const {
    if (items.empty())
      return pipeline.str();
    return (pipeline + "{" + llvm::join(items, " ") + "}").str();
  }

private:
  SmallVector<std::string> items;
};
} // namespace

/// A tile size: often the pipeline's default (left out), else odd sizes
/// (partial query and key tiles, causal bounds inside a tile) or powers of
/// two up to the defaults' scale.
static void drawTile(Draw &draw, Options &options, StringRef name) {
  switch (draw.below(3)) {
  case 0:
    return;
  case 1:
    options.add(name, Twine(1 + draw.below(17)));
    return;
  default:
    options.add(name, Twine(draw.pick({2, 4, 8, 16, 32, 64, 128})));
  }
}

/// Options every pipeline from `mha` ops on tensors has: the raise on or off
/// (mha-raise-attention), drawn rarely off since most seeds are mha ops.
static void drawEntry(Draw &draw, Options &options) {
  if (draw.oneIn(8))
    options.add("raise-attention", "false");
}

/// mha-lower-to-cpu with tiles, register tiles, vector steps, panel blocking,
/// OpenMP and the C interface drawn; left out, an option keeps its default.
static std::string drawCPU(Draw &draw) {
  Options options;
  drawEntry(draw, options);
  drawTile(draw, options, "q-tile-size");
  drawTile(draw, options, "kv-tile-size");
  int64_t vectorWidth = 512;
  if (draw.oneIn(2)) {
    vectorWidth = draw.pick({128, 256});
    options.add("vector-width", Twine(vectorWidth));
  }
  if (draw.oneIn(2))
    options.add("register-tile-rows", Twine(1 + draw.below(8)));
  if (draw.oneIn(2)) {
    // Columns a multiple of the f32 lanes, as the option asks, now and then
    // not.
    int64_t lanes = vectorWidth / 32;
    options.add("register-tile-cols",
                Twine(draw.oneIn(8) ? 1 + draw.below(7)
                                    : lanes * (1 + draw.below(4))));
  }
  if (draw.oneIn(2))
    options.add("chunk", Twine(draw.oneIn(4)
                                   ? 1 + draw.below(40)
                                   : draw.pick({4, 8, 16, 32, 128})));
  if (draw.oneIn(2))
    options.add("panel-reduction-tile",
                Twine(draw.oneIn(4) ? 1 + draw.below(17)
                                    : draw.pick({8, 16, 32, 64, 128})));
  if (draw.oneIn(4))
    options.add("openmp", "false");
  if (draw.oneIn(4))
    options.add("emit-c-interface", "true");
  return options.str("mha-lower-to-cpu");
}

/// The GPU mapping's workgroup tiles (a thread per query row), for
/// mha-lower-to-vulkan and mha-lower-to-cuda.
static void drawGPUTiles(Draw &draw, Options &options) {
  drawEntry(draw, options);
  drawTile(draw, options, "q-tile-size");
  drawTile(draw, options, "kv-tile-size");
}

/// The pipeline an input goes through, as a pass pipeline string that
/// mha-opt's --pass-pipeline takes. Depends on the bytes alone, not on what
/// they parse to, so that it can be printed for inputs the parser crashes
/// on. Weights: mha-lower-to-cpu, with most of the passes and options, in
/// 7 of 16 inputs, mha-lower-to-loops, -vulkan and -cuda in 3 each; a module
/// with a transform schedule (the transform-dialect tests are seeds) half of
/// the time through the transform interpreter, then mha-lower-to-cpu.
static std::string choosePipeline(StringRef bytes) {
  uint64_t hash = 1469598103934665603ull; // FNV-1a
  for (unsigned char c : bytes)
    hash = (hash ^ c) * 1099511628211ull;
  Draw draw(hash);
  std::string pipeline;
  if (bytes.contains("transform.with_named_sequence") && draw.oneIn(2)) {
    pipeline = "transform-interpreter," + drawCPU(draw);
  } else {
    int64_t which = draw.below(16);
    if (which < 3) {
      Options options;
      drawEntry(draw, options);
      if (draw.oneIn(4))
        options.add("emit-c-interface", "true");
      pipeline = options.str("mha-lower-to-loops");
    } else if (which < 10) {
      pipeline = drawCPU(draw);
    } else if (which < 13) {
      Options options;
      drawGPUTiles(draw, options);
      pipeline = options.str("mha-lower-to-vulkan");
    } else {
      // To PTX (`isa`): no ptxas in the loop, nor on the fuzzing host.
      Options options;
      drawGPUTiles(draw, options);
      options.add("chip", draw.oneIn(2) ? "sm_80" : "sm_90");
      options.add("format", "isa");
      pipeline = options.str("mha-lower-to-cuda");
    }
  }
  return "builtin.module(" + pipeline + ")";
}

/// Whether the input reaches a crash of upstream MLIR's parser (LLVM 22.1,
/// llvm/llvm-project#132747) instead of our code: linalg.reduce and
/// linalg.broadcast (`dimensions = [...]`) and linalg.transpose
/// (`permutation = [...]`) parse that list in their custom form with
/// DenseI64ArrayAttr::parse and store the result unchecked, so anything but
/// a list of integers there is a null attribute, and a SEGV in
/// NamedAttrList::set. Mutations of the raising tests' seeds hit it within
/// minutes, which ended each campaign. An input skipped here could not
/// have parsed; in the generic form (`{dimensions = ...}`, after `{` or
/// `,`) any attribute parses, and the verifier rejects it.
static bool reachesUpstreamListParserCrash(StringRef bytes) {
  for (StringRef keyword : {"dimensions", "permutation"}) {
    for (size_t pos = bytes.find(keyword); pos != StringRef::npos;
         pos = bytes.find(keyword, pos + 1)) {
      StringRef before = bytes.take_front(pos);
      if (before.empty() || !llvm::isSpace(before.back()))
        continue;
      before = before.rtrim();
      if (before.ends_with("{") || before.ends_with(","))
        continue;
      StringRef rest = bytes.drop_front(pos + keyword.size()).ltrim();
      if (!rest.consume_front("="))
        continue;
      rest = rest.ltrim();
      size_t close = rest.find(']');
      if (!rest.consume_front("[") || close == StringRef::npos)
        return true;
      StringRef list = rest.take_front(close - 1).trim();
      if (list.empty())
        continue;
      SmallVector<StringRef> items;
      list.split(items, ',');
      for (StringRef item : items) {
        item = item.trim();
        item.consume_front("-");
        item = item.ltrim();
        if (item.empty() || !llvm::all_of(item, llvm::isDigit))
          return true;
      }
    }
  }
  return false;
}

/// Adds `pipeline`, a pass pipeline anchored on builtin.module as mha-opt's
/// --pass-pipeline takes it, to `pm` (parsePassPipeline adds what the
/// anchor's parentheses hold); on failure, says why and exits.
static void addPipeline(PassManager &pm, StringRef pipeline) {
  StringRef passes = pipeline;
  if (!passes.consume_front("builtin.module(") || !passes.consume_back(")"))
    passes = pipeline;
  std::string error;
  llvm::raw_string_ostream errorStream(error);
  if (succeeded(parsePassPipeline(passes, pm, errorStream)))
    return;
  llvm::errs() << "mha-fuzz: bad pipeline '" << pipeline << "': " << error
               << "\n";
  std::exit(2);
}

namespace {
/// What the environment and the arguments ask for (see the file comment).
struct Settings {
  std::string pipeline;
  bool print = false;
  bool lower = true;
};
} // namespace

static Settings &getSettings() {
  static Settings settings;
  return settings;
}

extern "C" int LLVMFuzzerInitialize(int *argc, char ***argv) {
  Settings &settings = getSettings();
  if (const char *pipeline = std::getenv("MHA_FUZZ_PIPELINE")) {
    settings.pipeline = pipeline;
    // Checked before libFuzzer starts, which would take the exit for a
    // finding.
    MLIRContext context(getRegistry(), MLIRContext::Threading::DISABLED);
    PassManager pm(&context);
    addPipeline(pm, settings.pipeline);
  }
  // libFuzzer replays the inputs given as files (a crash, a timeout) rather
  // than fuzzing: say how each is lowered.
  for (int i = 1; i < *argc; ++i) {
    StringRef arg = (*argv)[i];
    if (!arg.starts_with("-") && llvm::sys::fs::is_regular_file(arg))
      settings.print = true;
  }
  if (const char *print = std::getenv("MHA_FUZZ_PRINT")) {
    StringRef value = print;
    settings.print = value != "0";
    settings.lower = value != "only";
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const Settings &settings = getSettings();
  StringRef bytes(reinterpret_cast<const char *>(data), size);
  std::string pipeline =
      settings.pipeline.empty() ? choosePipeline(bytes) : settings.pipeline;
  if (settings.print) {
    llvm::errs() << "mha-fuzz: mha-opt INPUT --mlir-disable-threading "
                    "--pass-pipeline='"
                 << pipeline << "'\n";
    llvm::errs().flush();
  }
  if (!settings.lower || reachesUpstreamListParserCrash(bytes))
    return 0;

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
      llvm::MemoryBuffer::getMemBufferCopy(bytes, "input"), SMLoc());
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module || failed(verify(*module)))
    return 0;
  // Built for valid inputs only (most mutations do not parse). A drawn
  // pipeline that the registry refuses (an option renamed in Pipelines.h)
  // stops the fuzzer at the first valid seed.
  PassManager pm(&context);
  addPipeline(pm, pipeline);
  (void)pm.run(*module);
  return 0;
}
