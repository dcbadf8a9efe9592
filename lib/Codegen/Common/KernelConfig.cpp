//===- KernelConfig.cpp - The strategy of the lowering, chosen once ------===//
//
// The rules that choose tile sizes, register tiles and thread counts for a
// target and a shape, and the pass that records them as
// #mha.lowering_config. Every later pass reads the configuration, so a rule
// changes here only.
//
//===----------------------------------------------------------------------===//

#include "mha/Codegen/Common/KernelConfig.h"
#include "mha/Codegen/Common/Passes.h"
#include "mha/Dialect/MHA/IR/MHAOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/InterleavedRange.h"

namespace mlir::mha {
#define GEN_PASS_DEF_MHASELECTLOWERINGCONFIGPASS
#define GEN_PASS_DEF_MHADROPLOWERINGCONFIGPASS
#include "mha/Codegen/Common/Passes.h.inc"
} // namespace mlir::mha

using namespace mlir;
using namespace mlir::mha;

TargetAttr mha::getDefaultCPUTarget(MLIRContext *context) {
  return TargetAttr::get(context, TargetKind::CPU, StringAttr(), StringAttr(),
                         /*vector_bits=*/512, 0, 0, 0, 0);
}

FailureOr<std::pair<int64_t, int64_t>>
mha::defaultRegisterTile(int64_t vectorBits) {
  if (vectorBits <= 0 || vectorBits % 32 != 0)
    return failure();
  int64_t lanes = vectorBits / 32;
  return std::pair<int64_t, int64_t>(vectorBits >= 512 ? 8 : 4, 2 * lanes);
}

/// A configuration of the op fields only, or of the function fields only.
static LoweringConfigAttr opFields(LoweringConfigAttr c) {
  if (!c ||
      (!c.getQTile() && !c.getKvTile() && c.getMma().empty() && !c.getWarps() &&
       !c.getKvSplits() && !c.getHeadTile() && !c.getPrefetchBlocks() &&
       c.getThreadTile().empty() && !c.getPipelineStages()))
    return {};
  return LoweringConfigAttr::get(
      c.getContext(), c.getQTile(), c.getKvTile(), {}, {}, {}, {}, c.getMma(),
      c.getWarps(), c.getKvSplits(), c.getHeadTile(), c.getPrefetchBlocks(),
      c.getThreadTile(), c.getPipelineStages());
}
static LoweringConfigAttr functionFields(LoweringConfigAttr c) {
  if (!c || (c.getRegisterTile().empty() && !c.getChunk() &&
             c.getWorkgroupTile().empty() && !c.getThreads()))
    return {};
  return LoweringConfigAttr::get(c.getContext(), {}, {}, c.getRegisterTile(),
                                 c.getChunk(), c.getWorkgroupTile(),
                                 c.getThreads(), {}, {}, {}, {}, {});
}

/// Whether `op` runs as the warp-level tensor-core kernel.
static bool usesMMA(Operation *op) {
  LoweringConfigAttr config = getLoweringConfig(op);
  return config && !config.getMma().empty();
}

/// Whether `op` runs as the register kernel.
static bool usesSIMT(Operation *op) {
  LoweringConfigAttr config = getLoweringConfig(op);
  return config && !config.getThreadTile().empty();
}

static bool isConfigured(Operation *op) {
  return isa<AttentionOp, MultiHeadAttentionOp>(op);
}

/// CPU: the parallel iterations the rules aim at (the flash-decoding split,
/// long layers' tiles), and the fewest keys of a chunk.
static constexpr int64_t kCPUParallelIterations = 16, kMinChunkKeys = 512;

/// CPU: the rows of a layer's queries (B * Sq) when static, else 0.
static int64_t staticLayerRows(Operation *op) {
  auto layer = dyn_cast<MultiHeadAttentionOp>(op);
  if (!layer)
    return 0;
  auto query = cast<ShapedType>(layer.getQuery().getType());
  int64_t batch = query.getDimSize(0), rows = query.getDimSize(1);
  if (ShapedType::isDynamic(batch) || ShapedType::isDynamic(rows))
    return 0;
  return batch * rows;
}

/// CPU: a layer long enough for query tiles of 256 rows that still leave
/// kCPUParallelIterations of them.
static bool isLongLayer(Operation *op) {
  return staticLayerRows(op) >= kCPUParallelIterations * 256;
}

/// CPU: the query tile of a layer. Larger row tiles amortize the weight
/// panels of the per-head projections over more rows (BERT-base S=512 on one
/// thread: 22 -> 19.5 ms with 128), but a layer of a single 128-row tile
/// would leave the second thread idle (BERT-base S=128 on 2 threads: 2.1 ->
/// 2.7 ms): 128 rows when the layer has at least 4 such tiles (B * Sq >= 512,
/// static), else 64; 256 for a long layer, whose keys are then read half as
/// often (with key blocks of 128: S=4096, E=512, H=8 on 2 threads 116-120 ->
/// 110-112 ms; causal unchanged). A standalone attention keeps 64.
static int64_t cpuQueryTile(Operation *op) {
  if (isLongLayer(op))
    return 256;
  return staticLayerRows(op) >= 4 * 128 ? 128 : 64;
}

/// CPU: the key tile. 64 keys; 128 for a long layer (cpuQueryTile), and
/// for an attention when it decodes (static
/// rows, query rows times the query heads of a key/value head, of at most
/// a vector's f32 lanes: mha-vectorize then computes its scores as dot
/// products and the key loop is bound by reading the keys and values),
/// where fewer, longer blocks halve the per-block work around the reads
/// (B=1, Sk=32768, H=32, Hkv=8, d=128 on 2 threads: bf16 caches 5.8-6.4 ->
/// 4.7-5.2 ms, f32 unchanged).
static int64_t cpuKeyTile(Operation *op, TargetAttr target) {
  if (isLongLayer(op))
    return 128;
  auto attention = dyn_cast<AttentionOp>(op);
  if (!attention)
    return 64;
  auto query = cast<ShapedType>(attention.getQuery().getType());
  auto key = cast<ShapedType>(attention.getKey().getType());
  int64_t rows = query.getDimSize(2), heads = query.getDimSize(1),
          kvHeads = key.getDimSize(1);
  if (ShapedType::isDynamic(rows) || ShapedType::isDynamic(heads) ||
      ShapedType::isDynamic(kvHeads) || kvHeads == 0)
    return 64;
  return rows * (heads / kvHeads) <= target.getVectorBits() / 32 ? 128 : 64;
}

/// `op` when it is an mha.attention that decodes: its queries (static) one
/// tile of `qTile`, its query and key/value heads static; null otherwise.
static AttentionOp decodingAttention(Operation *op, int64_t qTile) {
  auto attention = dyn_cast<AttentionOp>(op);
  if (!attention)
    return {};
  auto query = cast<ShapedType>(attention.getQuery().getType());
  int64_t rows = query.getDimSize(2), heads = query.getDimSize(1),
          kvHeads = cast<ShapedType>(attention.getKey().getType())
                        .getDimSize(1);
  if (ShapedType::isDynamic(rows) || rows > qTile ||
      ShapedType::isDynamic(heads) || ShapedType::isDynamic(kvHeads) ||
      kvHeads <= 0)
    return {};
  return attention;
}

/// CPU: the query heads of a tile of an attention. Decoding takes the heads
/// of a group (H / Hkv) as one tile, so that each key block is read once
/// for all of them rather than once per head; otherwise unset (one head
/// per tile).
static std::optional<int64_t> cpuHeadTile(Operation *op, int64_t qTile) {
  AttentionOp attention = decodingAttention(op, qTile);
  if (!attention)
    return std::nullopt;
  int64_t group =
      cast<ShapedType>(attention.getQuery().getType()).getDimSize(1) /
      cast<ShapedType>(attention.getKey().getType()).getDimSize(1);
  return group > 1 ? std::optional<int64_t>(group) : std::nullopt;
}


/// CPU: the chunks an attention's keys are split into (flash-decoding).
/// Decoding (the queries one tile) runs a parallel iteration per batch and
/// key/value head, each reading its keys and values; with fewer such
/// iterations than cores (B=1, few key/value heads), cores would idle while
/// the others read the whole cache. The keys are then split into chunks
/// that run in parallel too, for kCPUParallelIterations in all (the number
/// of cores is only known at run time), of at least kMinChunkKeys keys (a
/// chunk's state, [heads of a group, dv] in f32, is then a small part of
/// its K and V rows). Static batch and heads only; with a dynamic key
/// length, chunks of at least one key tile.
static std::optional<int64_t> cpuKeySplits(Operation *op, int64_t qTile) {
  AttentionOp attention = decodingAttention(op, qTile);
  if (!attention)
    return std::nullopt;
  auto key = cast<ShapedType>(attention.getKey().getType());
  int64_t batch =
              cast<ShapedType>(attention.getQuery().getType()).getDimSize(0),
          keys = key.getDimSize(attention.getKeySeqDim());
  if (ShapedType::isDynamic(batch) || batch == 0)
    return std::nullopt;
  int64_t splits =
      llvm::divideCeil(kCPUParallelIterations, batch * key.getDimSize(1));
  if (!ShapedType::isDynamic(keys))
    splits = std::min(splits, keys / kMinChunkKeys);
  return splits > 1 ? std::optional<int64_t>(splits) : std::nullopt;
}

/// CPU: the key blocks a decoding attention's key loop prefetches ahead.
/// Its K/V rows are read once, as they lie in memory, and the hardware
/// prefetchers alone leave the loop waiting on memory for part of every
/// block (reading and computing take turns). One block ahead, for K/V of
/// at least kPrefetchMinBytes (or of dynamic size): K/V that stay in the
/// last-level cache between calls gain nothing, and the prefetch
/// instructions then only cost issue slots.
static constexpr int64_t kPrefetchMinBytes = 32 << 20;
static std::optional<int64_t> cpuPrefetchBlocks(Operation *op, int64_t qTile) {
  AttentionOp attention = decodingAttention(op, qTile);
  if (!attention)
    return std::nullopt;
  auto key = cast<ShapedType>(attention.getKey().getType());
  auto value = cast<ShapedType>(attention.getValue().getType());
  if (key.hasStaticShape() && value.hasStaticShape() &&
      key.getNumElements() * key.getElementTypeBitWidth() / 8 +
              value.getNumElements() * value.getElementTypeBitWidth() / 8 <
          kPrefetchMinBytes)
    return std::nullopt;
  return 1;
}

/// GPU: one thread per query row of a workgroup, 32 rows and keys per tile;
/// the projections' workgroup tiles are as many rows by 64 columns.
static constexpr int64_t kGPUQueryTile = 32, kGPUKeyTile = 32,
                         kGPUWorkgroupCols = 64;
/// The tensor-core kernel: 4 warps of 16 query rows, 64 keys per step (the
/// score fragments of a warp then take 32 registers per thread).
static constexpr int64_t kMMAWarps = 4, kMMAKeyTile = 64;
/// GPU key splits (flash-decoding): the chunks' states are merged by a
/// kernel that reads every chunk's per element (unrolled), so they are
/// few.
static constexpr int64_t kGPUMaxKeySplits = 32;

/// CUDA: the workgroups a decoding attention aims at when it splits its
/// keys, about two per SM of an H100 (132): a decoding step has one
/// workgroup per batch and head (its queries one tile), which leaves most
/// SMs idle while the others read the whole cache when B·H is small.
static constexpr int64_t kGPUParallelWorkgroups = 256;
/// The fewest key blocks of a chunk: each chunk's state costs a merge.
static constexpr int64_t kGPUMinChunkBlocks = 4;

/// CUDA: the chunks a decoding attention's keys are split into
/// (flash-decoding) by the kernel of `qTile` rows and `kvTile` keys: enough
/// for kGPUParallelWorkgroups workgroups, of at least kGPUMinChunkBlocks
/// blocks, at most kGPUMaxKeySplits. Static Sq (one query tile), B, H and
/// Sk only; none elsewhere (Vulkan devices: lavapipe has a few cores, and
/// the split would only add the merge).
static std::optional<int64_t> gpuKeySplits(AttentionOp op, TargetAttr target,
                                           int64_t qTile, int64_t kvTile,
                                           int64_t headTile = 1) {
  if (target.getKind() != TargetKind::CUDA)
    return std::nullopt;
  ShapedType query = op.getQuery().getType(), key = op.getKey().getType();
  int64_t batch = query.getDimSize(0), heads = query.getDimSize(1),
          queries = query.getDimSize(2),
          keys = key.getDimSize(op.getKeySeqDim());
  if (ShapedType::isDynamic(batch) || ShapedType::isDynamic(queries) ||
      ShapedType::isDynamic(keys) || queries > qTile || batch * heads == 0)
    return std::nullopt;
  int64_t wanted =
      llvm::divideCeil(kGPUParallelWorkgroups, batch * heads / headTile);
  int64_t splits = std::min(
      {wanted, keys / (kGPUMinChunkBlocks * kvTile), kGPUMaxKeySplits});
  return splits > 1 ? std::optional<int64_t>(splits) : std::nullopt;
}

/// GPU: the query heads of a key/value head's group that an attention
/// kernel packs into one workgroup for decoding (GQA, static Sq, the
/// group's queries within `maxRows` rows), so that each K and V row is read
/// once for the group rather than once per head; none elsewhere.
static std::optional<int64_t> gpuHeadTile(AttentionOp op, int64_t maxRows) {
  int64_t heads = op.getQuery().getType().getDimSize(1),
          queries = op.getQuery().getType().getDimSize(2),
          group = heads / op.getKey().getType().getDimSize(1);
  if (ShapedType::isDynamic(queries) || group < 2 || group * queries > maxRows)
    return std::nullopt;
  return group;
}

/// Whether `target` is a CUDA chip with the m16n8k16 mma.sync of both
/// tensor-core kernels: sm_80 or later (`sm_90a` -> 90).
static bool hasTensorCores(TargetAttr target) {
  if (!target || target.getKind() != TargetKind::CUDA || !target.getChip())
    return false;
  StringRef chip = target.getChip().getValue();
  int64_t version = 0;
  return chip.consume_front("sm_") &&
         !chip.take_while(llvm::isDigit).getAsInteger(10, version) &&
         version >= 80;
}

int64_t mha::mmaAttentionWorkgroupBytes(int64_t kvTile, int64_t dk, int64_t dv,
                                        bool tf32) {
  if (tf32)
    return kvTile * (dk + dv + kTF32KeyRowPadding + kTF32ValueRowPadding) * 4;
  return kvTile * (dk + dv + 2 * kMMATileRowPadding) * 2;
}

/// The tensor-core kernel's key block: 64 keys, fewer where the K and V
/// tiles would not fit the target's workgroup memory (head dims above 128;
/// with TF32, above 64).
static int64_t mmaKeyTile(AttentionOp op, TargetAttr target, bool tf32) {
  int64_t dk = op.getQuery().getType().getDimSize(3);
  int64_t dv = op.getValue().getType().getDimSize(3);
  int64_t keys = kMMAKeyTile;
  while (keys > 16 && target.getMaxWorkgroupMemory() &&
         mmaAttentionWorkgroupBytes(keys, dk, dv, tf32) >
             target.getMaxWorkgroupMemory())
    keys /= 2;
  return keys;
}

namespace {

/// The iteration dims of `map`'s results, in order (none if a result is not
/// a plain dim).
std::optional<SmallVector<unsigned>> resultDims(AffineMap map) {
  SmallVector<unsigned> dims;
  for (AffineExpr result : map.getResults()) {
    auto dim = dyn_cast<AffineDimExpr>(result);
    if (!dim)
      return std::nullopt;
    dims.push_back(dim.getPosition());
  }
  return dims;
}

/// Whether `block` computes out + extf(a) * extf(b).
bool isExtendedMultiplyAdd(Block &block) {
  auto yield = cast<linalg::YieldOp>(block.getTerminator());
  auto add = yield.getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!add)
    return false;
  Value acc = block.getArgument(2);
  Value product = add.getLhs() == acc ? add.getRhs() : add.getLhs();
  if (add.getLhs() != acc && add.getRhs() != acc)
    return false;
  auto mul = product.getDefiningOp<arith::MulFOp>();
  if (!mul)
    return false;
  auto extended = [&](Value v, BlockArgument arg) {
    auto ext = v.getDefiningOp<arith::ExtFOp>();
    return ext && ext.getIn() == arg;
  };
  return (extended(mul.getLhs(), block.getArgument(0)) &&
          extended(mul.getRhs(), block.getArgument(1))) ||
         (extended(mul.getLhs(), block.getArgument(1)) &&
          extended(mul.getRhs(), block.getArgument(0)));
}

/// Whether `op` extends one tensor to f32 elementwise into an empty one,
/// reading it through a projection of the output's dims: a bias broadcast.
bool isBiasBroadcast(linalg::GenericOp op) {
  if (op.getNumDpsInputs() != 1 || op.getNumDpsInits() != 1 ||
      !op.hasPureTensorSemantics() || op.getNumReductionLoops() != 0 ||
      !op.getDpsInits()[0].getDefiningOp<tensor::EmptyOp>() ||
      !cast<ShapedType>(op.getResult(0).getType()).getElementType().isF32())
    return false;
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  if (!maps[1].isIdentity() || !maps[0].isProjectedPermutation() ||
      !resultDims(maps[0]))
    return false;
  Block &body = *op.getBlock();
  auto ext = dyn_cast<arith::ExtFOp>(body.front());
  return ext && ext.getIn() == body.getArgument(0) &&
         cast<linalg::YieldOp>(body.getTerminator()).getOperand(0) == ext;
}

} // namespace

FailureOr<MMAContraction> mha::matchMMAContraction(Operation *root,
                                                  std::string &why) {
  auto fail = [&](StringRef reason) {
    why = reason.str();
    return failure();
  };
  auto op = dyn_cast<linalg::GenericOp>(root);
  if (!op)
    return fail("it computes linalg.generic contractions only");
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      !op.hasPureTensorSemantics())
    return fail("it takes two inputs and one output, all tensors");
  auto aType = cast<RankedTensorType>(op.getDpsInputs()[0].getType());
  auto bType = cast<RankedTensorType>(op.getDpsInputs()[1].getType());
  auto cType = cast<RankedTensorType>(op.getDpsInits()[0].getType());
  Type element = aType.getElementType();
  if (!(element.isF16() || element.isBF16()) ||
      bType.getElementType() != element || !cType.getElementType().isF32())
    return fail("it needs f16 or bf16 inputs (one type) and an f32 output");
  if (!isExtendedMultiplyAdd(*op.getBlock()))
    return fail("its body must be out + extf(a) * extf(b)");
  auto fill = op.getDpsInits()[0].getDefiningOp<linalg::FillOp>();
  auto broadcast = op.getDpsInits()[0].getDefiningOp<linalg::GenericOp>();
  bool zero = fill && matchPattern(fill.getInputs()[0], m_AnyZeroFloat());
  if (!zero && !(broadcast && isBiasBroadcast(broadcast)))
    return fail("its output must start as a fill with 0 or as a bias "
                "extended to f32");
  if (!op->hasOneUse())
    return fail("its one user must round its result");
  auto rounding = dyn_cast<linalg::GenericOp>(*op->getUsers().begin());
  if (!rounding || rounding.getNumDpsInputs() != 1 ||
      rounding.getDpsInputs()[0] != op.getResult(0) ||
      !llvm::all_of(rounding.getIndexingMapsArray(),
                    [](AffineMap m) { return m.isIdentity(); }))
    return fail("its one user must round its result elementwise");
  Block &body = *rounding.getBlock();
  auto trunc = dyn_cast<arith::TruncFOp>(body.front());
  if (!trunc || trunc.getIn() != body.getArgument(0) ||
      trunc.getType() != element ||
      cast<linalg::YieldOp>(body.getTerminator()).getOperand(0) != trunc)
    return fail("its one user must round its result to the input type");

  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  auto aDims = resultDims(maps[0]), bDims = resultDims(maps[1]),
       cDims = resultDims(maps[2]);
  if (!aDims || !bDims || !cDims)
    return fail("its indexing maps must be projections of the loops");
  MMAContraction gemm{rounding, {}, {}, {}};
  auto iterators = op.getIteratorTypesArray();
  auto in = [](ArrayRef<unsigned> dims, unsigned d) {
    return llvm::is_contained(dims, d);
  };
  for (unsigned d : *aDims) {
    if (iterators[d] == utils::IteratorType::reduction) {
      if (!in(*bDims, d) || in(*cDims, d))
        return fail("a reduction must read both inputs");
      gemm.k.push_back(d);
    } else if (in(*cDims, d) && !in(*bDims, d)) {
      gemm.m.push_back(d);
    } else {
      return fail("a parallel dim of the first input must be the output's "
                  "only (no batch dims)");
    }
  }
  for (unsigned d : *bDims) {
    if (iterators[d] == utils::IteratorType::parallel) {
      if (!in(*cDims, d) || in(*aDims, d))
        return fail("a parallel dim of the second input must be the "
                    "output's only");
      gemm.n.push_back(d);
    }
  }
  SmallVector<unsigned> bK;
  for (unsigned d : *bDims)
    if (iterators[d] == utils::IteratorType::reduction)
      bK.push_back(d);
  if (bK != gemm.k)
    return fail("both inputs must hold the reductions in one order");
  if (gemm.m.empty() || gemm.n.empty() || gemm.k.empty() ||
      gemm.m.size() + gemm.n.size() + gemm.k.size() != op.getNumLoops())
    return fail("every loop must be an M, N or K dim");
  // 16-byte copies along the innermost dim of each input, pairs of outputs
  // along the output's.
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (aDims->back() != gemm.k.back() || bDims->back() != gemm.n.back() ||
      cDims->back() != gemm.n.back())
    return fail("the inputs' and output's innermost dims must be the last "
                "reduction (first input) and the last output dim (the "
                "others)");
  for (unsigned d : llvm::concat<unsigned>(gemm.k, gemm.n))
    if (ShapedType::isDynamic(ranges[d]))
      return fail("its reduction and second-input dims must be static");
  if (ranges[gemm.k.back()] % 8 || ranges[gemm.n.back()] % 8)
    return fail("the innermost reduction and output dims must be multiples "
                "of 8");
  if (!zero) {
    // The bias's indices from the loops: through the output's map, then
    // the broadcast's.
    gemm.bias = broadcast.getDpsInputs()[0];
    gemm.biasMap = broadcast.getIndexingMapsArray()[0].compose(maps[2]);
    for (AffineExpr result : gemm.biasMap.getResults())
      if (!in(gemm.n, cast<AffineDimExpr>(result).getPosition()))
        return fail("its bias must vary along output dims of the second "
                    "input only");
  }
  return gemm;
}

std::string mha::mmaContractionUnsupported(Operation *op, TargetAttr target) {
  if (!hasTensorCores(target))
    return "it needs a cuda target of sm_80 or later";
  std::string why;
  if (failed(matchMMAContraction(op, why)))
    return why;
  return "";
}

int64_t mha::mmaGemmWorkgroupBytes(int64_t tileM, int64_t tileN,
                                   int64_t stages) {
  return stages *
         (tileM * (kMMAGemmTileK + kMMATileRowPadding) +
          kMMAGemmTileK * (tileN + kMMATileRowPadding)) *
         2;
}

/// GEMM: workgroups enough to keep every SM of a large GPU busy with two
/// of them (132 SMs on an H100, 108 on an A100), the shared memory assumed
/// where the target gives none (CUDA's static limit), and the most stages.
static constexpr int64_t kGemmMinWorkgroups = 256,
                         kGemmDefaultWorkgroupMemory = 48 * 1024,
                         kGemmMaxStages = 4;

/// The rules' GEMM tile for `op`: the largest of 128 x 128, 128 x 64 and
/// 64 x 64 output tiles that still gives kGemmMinWorkgroups workgroups (a
/// larger tile reads each operand element fewer times, and its warps load
/// fewer fragments per mma.sync); 64 x 64 when the rows are dynamic; 32 x
/// 32 for at most 32 rows (a decoding step's projections: the weights are
/// read once whatever the tile, by twice as many workgroups as 64 columns
/// would give).
static std::pair<int64_t, int64_t> selectMMAGemmTile(linalg::GenericOp op) {
  std::string unused;
  MMAContraction gemm = *matchMMAContraction(op, unused);
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t rows = 1, cols = 1;
  for (unsigned d : gemm.m) {
    if (ShapedType::isDynamic(ranges[d]))
      return {64, 64};
    rows *= ranges[d];
  }
  for (unsigned d : gemm.n)
    cols *= ranges[d];
  if (rows <= 32)
    return {32, 32};
  for (auto [tileM, tileN] : {std::pair<int64_t, int64_t>{128, 128}, {128, 64}})
    if (llvm::divideCeil(rows, tileM) * llvm::divideCeil(cols, tileN) >=
        kGemmMinWorkgroups)
      return {tileM, tileN};
  return {64, 64};
}

/// The rules' stages for a tile: as many as the workgroup memory holds
/// (with the opt-in: dynamic shared memory on CUDA), 2 to kGemmMaxStages.
static int64_t selectMMAGemmStages(int64_t tileM, int64_t tileN,
                                   TargetAttr target) {
  int64_t limit = target.getWorkgroupMemoryLimit()
                      ? target.getWorkgroupMemoryLimit()
                      : kGemmDefaultWorkgroupMemory;
  int64_t stages = 2;
  while (stages < kGemmMaxStages &&
         mmaGemmWorkgroupBytes(tileM, tileN, stages + 1) <= limit)
    ++stages;
  return stages;
}

FailureOr<MMAGemmConfig> mha::getMMAGemmConfig(Operation *op,
                                               TargetAttr target) {
  auto own = op->getAttrOfType<LoweringConfigAttr>(kLoweringConfigAttrName);
  MMAGemmConfig config;
  std::tie(config.tileM, config.tileN) =
      own && !own.getWorkgroupTile().empty()
          ? std::pair(own.getWorkgroupTile()[0], own.getWorkgroupTile()[1])
          : selectMMAGemmTile(cast<linalg::GenericOp>(op));
  config.warps = own ? own.getWarps().value_or(kMMAWarps) : kMMAWarps;
  config.stages = own && own.getPipelineStages()
                      ? *own.getPipelineStages()
                      : selectMMAGemmStages(config.tileM, config.tileN, target);
  auto error = [&]() {
    return op->emitError() << "lowering_config: the tensor-core GEMM kernel ";
  };
  if (!llvm::is_contained({1, 2, 4, 8}, config.warps))
    return error() << "takes 1, 2, 4 or 8 warps, found " << config.warps;
  int64_t warpM = config.warpTileM(), warpN = config.warpTileN();
  if (config.tileM % config.warpRows() || config.tileN % config.warpCols() ||
      warpM % 16 || warpN % 16 || warpM > 64 || warpN > 64)
    return error() << "splits workgroup_tile [" << config.tileM << ", "
                   << config.tileN << "] over " << config.warpRows() << " x "
                   << config.warpCols()
                   << " warps, each of whose shares must be a multiple of "
                      "16 by 16 up to 64 by 64 (its accumulators are "
                      "registers)";
  int64_t threads = 32 * config.warps;
  if (config.tileM * kMMAGemmTileK / 8 % threads ||
      kMMAGemmTileK * config.tileN / 8 % threads)
    return error() << "copies its tiles in 16-byte chunks, as many per "
                      "thread: workgroup_tile ["
                   << config.tileM << ", " << config.tileN
                   << "] must be multiples of " << threads / 4 << " for "
                   << config.warps << " warps";
  if (config.stages < 2 || config.stages > 8)
    return error() << "takes 2 to 8 pipeline_stages (one multiplied while "
                      "the others are copied), found "
                   << config.stages;
  int64_t bytes =
      mmaGemmWorkgroupBytes(config.tileM, config.tileN, config.stages);
  if (target.getWorkgroupMemoryLimit() &&
      bytes > target.getWorkgroupMemoryLimit())
    return error() << "needs " << bytes << " bytes of workgroup memory for "
                   << config.stages << " stages of [" << config.tileM << ", "
                   << config.tileN << "] tiles, over the target's "
                   << target.getWorkgroupMemoryLimit() << " ("
                   << target.getWorkgroupMemoryLimitName() << ")";
  return config;
}

/// What the attention kernels built as IR (tensor-core and register) both
/// need of `attention`: query, key, value and result of one element type
/// that `allowed` accepts (else `typeError`), an additive mask if any, no
/// key_offset. "" when it has them.
static std::string kernelOperandsUnsupported(AttentionOp attention,
                                             function_ref<bool(Type)> allowed,
                                             StringRef typeError) {
  Type element = attention.getQuery().getType().getElementType();
  for (Value operand : {attention.getQuery(), attention.getKey(),
                        attention.getValue(), attention.getInit()})
    if (!allowed(element) ||
        cast<ShapedType>(operand.getType()).getElementType() != element)
      return typeError.str();
  if (Value mask = attention.getMask();
      mask && !isa<FloatType>(getElementTypeOrSelf(mask.getType())))
    return "it takes an additive (float) mask only, not an i1 one";
  if (attention.getKeyOffset())
    return "it takes no key_offset (a block of keys of a larger op)";
  return "";
}

std::string mha::mmaAttentionUnsupported(Operation *op, TargetAttr target,
                                         bool tf32) {
  auto attention = dyn_cast<AttentionOp>(op);
  if (!attention)
    return "it computes mha.attention only (decompose layers first)";
  if (!hasTensorCores(target))
    return "it needs a cuda target of sm_80 or later";
  std::string why =
      tf32 ? kernelOperandsUnsupported(
                 attention, [](Type t) { return t.isF32(); },
                 "with mma = [16, 8, 8] (TF32) it needs query, key, value "
                 "and result all f32")
           : kernelOperandsUnsupported(
                 attention, [](Type t) { return t.isF16() || t.isBF16(); },
                 "it needs query, key, value and result all f16 or all "
                 "bf16");
  if (!why.empty())
    return why;
  if (attention.getKeyTransposed())
    return "it needs the keys in their default layout, not key_transposed";
  int64_t dk = attention.getQuery().getType().getDimSize(3);
  int64_t dv = attention.getValue().getType().getDimSize(3);
  int64_t kStep = tf32 ? 8 : 16;
  if (ShapedType::isDynamic(dk) || dk % kStep || dk > 256)
    return "it needs a static query/key head dim that is a multiple of " +
           std::to_string(kStep) + " up to 256";
  if (ShapedType::isDynamic(dv) || dv % 8 || dv > 256)
    return "it needs a static value head dim that is a multiple of 8 up to "
           "256";
  return "";
}

std::string mha::simtAttentionUnsupported(Operation *op, TargetAttr target) {
  auto attention = dyn_cast<AttentionOp>(op);
  if (!attention)
    return "it computes mha.attention only (decompose layers first)";
  if (!target || !target.isGPU())
    return "it needs a GPU target";
  return kernelOperandsUnsupported(
      attention, [](Type t) { return t.isF32() || t.isF16() || t.isBF16(); },
      "it needs query, key, value and result all f32, all f16 or all "
      "bf16");
}

/// Without a limit from the target, the register and cooperative-matrix
/// kernels are sized for 48 KiB.
static constexpr int64_t kSIMTDefaultWorkgroupMemory = 48 * 1024;

bool mha::hasCooperativeMatrices(TargetAttr target) {
  if (!target || target.getKind() != TargetKind::Vulkan ||
      !target.getFeatures())
    return false;
  SmallVector<StringRef> features;
  target.getFeatures().getValue().split(features, ',');
  return llvm::any_of(features, [](StringRef feature) {
    return feature.trim() == "+cooperative_matrix";
  });
}

std::string mha::coopMatrixAttentionUnsupported(Operation *op,
                                                TargetAttr target) {
  auto attention = dyn_cast<AttentionOp>(op);
  if (!attention)
    return "it computes mha.attention only (decompose layers first)";
  if (!hasCooperativeMatrices(target))
    return "it needs a vulkan target with cooperative matrices (features = "
           "\"+cooperative_matrix\")";
  if (target.getSubgroupSize() && target.getSubgroupSize() != 32)
    return "it needs subgroups of 32 invocations, the target has " +
           std::to_string(target.getSubgroupSize());
  std::string why = kernelOperandsUnsupported(
      attention, [](Type t) { return t.isF16(); },
      "it needs query, key, value and result all f16");
  if (!why.empty())
    return why;
  for (Value operand : {attention.getQuery(), attention.getValue()}) {
    int64_t d = cast<ShapedType>(operand.getType()).getDimSize(3);
    if (ShapedType::isDynamic(d) || d % 16 || d > 256)
      return "it needs static head dims that are multiples of 16 up to 256";
  }
  return "";
}

int64_t mha::coopMatrixAttentionWorkgroupBytes(int64_t qTile, int64_t kvTile,
                                               int64_t dk, int64_t dv) {
  int64_t half = qTile * (dk + kCoopHalfRowPadding) +
                 kvTile * (dk + dv + 2 * kCoopHalfRowPadding) +
                 qTile * (kvTile + kCoopHalfRowPadding);
  int64_t single = qTile * (kvTile + kCoopFloatRowPadding) +
                   qTile * (16 + kCoopFloatRowPadding);
  return 2 * half + 4 * single;
}

/// The cooperative-matrix kernel: 4 subgroups of 16 query rows, 32 keys per
/// block.
static constexpr int64_t kCoopSubgroups = 4, kCoopKeyTile = 32;

/// The cooperative-matrix kernel's configuration for `op`: fewer subgroups
/// for fewer queries (a static Sq below the tile), then 16-key blocks and
/// fewer subgroups until its tiles fit the workgroup memory (48 KiB without
/// a limit from the target); null where they cannot.
static LoweringConfigAttr coopConfig(AttentionOp op, TargetAttr target) {
  int64_t dk = op.getQuery().getType().getDimSize(3);
  int64_t dv = op.getValue().getType().getDimSize(3);
  int64_t queries = op.getQuery().getType().getDimSize(2);
  // Decoding with GQA: the group's heads in one workgroup, their queries
  // its rows.
  std::optional<int64_t> headTile = gpuHeadTile(op, 16 * kCoopSubgroups);
  int64_t rows =
      ShapedType::isDynamic(queries) ? queries : queries * headTile.value_or(1);
  int64_t subgroups = kCoopSubgroups, keys = kCoopKeyTile;
  if (!ShapedType::isDynamic(rows))
    while (subgroups > 1 && 16 * (subgroups / 2) >= rows)
      subgroups /= 2;
  int64_t limit = target.getMaxWorkgroupMemory()
                      ? target.getMaxWorkgroupMemory()
                      : kSIMTDefaultWorkgroupMemory;
  auto bytes = [&] {
    return coopMatrixAttentionWorkgroupBytes(16 * subgroups, keys, dk, dv);
  };
  while (bytes() > limit && (keys > 16 || subgroups > 1)) {
    if (keys > 16)
      keys /= 2;
    else
      subgroups /= 2;
  }
  if (bytes() > limit)
    return {};
  if (headTile && 16 * subgroups < rows)
    headTile.reset();
  return LoweringConfigAttr::get(
      op.getContext(), 16 * subgroups, keys, {}, {}, {}, {}, {16, 16, 16},
      subgroups,
      gpuKeySplits(op, target, 16 * subgroups, keys, headTile.value_or(1)),
      headTile, {});
}

int64_t mha::simtAttentionWorkgroupBytes(int64_t qTile, int64_t kvTile,
                                         int64_t dk, int64_t dv,
                                         int64_t elementBytes) {
  int64_t pad = kSIMTTileRowPaddingBytes / elementBytes;
  return ((qTile + kvTile) * (dk + pad) + kvTile * (dv + pad)) * elementBytes;
}

/// The register kernel: 4 rows per thread, row groups of up to 8 lanes (a
/// Vulkan device's subgroup may have 8: lavapipe's; fewer where the target
/// states fewer), 16 row groups, 32 keys per block. The lanes of a group must
/// divide the value head dim (each takes a slice of the output row).
static constexpr int64_t kSIMTRows = 4, kSIMTMaxLanes = 8, kSIMTGroups = 16,
                         kSIMTKeyTile = 32;

/// The register kernel's configuration for `op`: fewer rows for fewer
/// queries (a static Sq below the tile), then smaller key and query tiles
/// until its tiles fit the workgroup memory; null where they cannot.
static LoweringConfigAttr simtConfig(AttentionOp op, TargetAttr target) {
  int64_t dk = op.getQuery().getType().getDimSize(3);
  int64_t dv = op.getValue().getType().getDimSize(3);
  int64_t queries = op.getQuery().getType().getDimSize(2);
  int64_t elementBytes =
      op.getQuery().getType().getElementType().getIntOrFloatBitWidth() / 8;
  int64_t lanes = kSIMTMaxLanes;
  if (target.getSubgroupSize())
    lanes = std::min<int64_t>(
        lanes, llvm::bit_floor(uint64_t(target.getSubgroupSize())));
  while (dv % lanes)
    lanes /= 2;
  int64_t rows = kSIMTRows, groups = kSIMTGroups, keys = kSIMTKeyTile;
  // Decoding with GQA: the group's heads in one workgroup, their queries
  // its rows.
  std::optional<int64_t> headTile = gpuHeadTile(op, rows * groups);
  int64_t tileQueries =
      ShapedType::isDynamic(queries) ? queries : queries * headTile.value_or(1);
  if (!ShapedType::isDynamic(tileQueries) && tileQueries < rows * groups) {
    int64_t p = llvm::PowerOf2Ceil(std::max<int64_t>(tileQueries, 1));
    rows = std::min(rows, p);
    groups = p / rows;
  }
  int64_t limit = target.getMaxWorkgroupMemory()
                      ? target.getMaxWorkgroupMemory()
                      : kSIMTDefaultWorkgroupMemory;
  auto bytes = [&] {
    return simtAttentionWorkgroupBytes(rows * groups, keys, dk, dv,
                                       elementBytes);
  };
  // Smaller key blocks first (the Q tile is the largest), down to half the
  // rows: a thread's keys times its rows are its FMAs per pair of loads.
  while (bytes() > limit && (groups > 1 || keys > lanes)) {
    if (keys > lanes && 2 * keys >= rows * groups)
      keys /= 2;
    else if (groups > 1)
      groups /= 2;
    else
      keys /= 2;
  }
  if (bytes() > limit || keys < lanes)
    return {};
  if (headTile && rows * groups < tileQueries)
    headTile.reset();
  return LoweringConfigAttr::get(
      op.getContext(), rows * groups, keys, {}, {}, {}, {}, {}, {},
      gpuKeySplits(op, target, rows * groups, keys, headTile.value_or(1)),
      headTile, {}, {rows, keys / lanes}, {});
}

/// The thread-per-row kernel's query and key tile on a GPU: 32, halved
/// (down to 8) while an estimate of its workgroup memory exceeds the
/// target's. The estimate is fitted to the kernels' measured workgroup
/// memory with 32-row tiles and f32 operands (causal attention keeps more
/// score-sized temporaries) and scaled with the tile, plus a mask tile; it
/// overestimates f16. Where it falls short, mha-check-workgroup-memory
/// still refuses the kernel with its size.
static int64_t simtTile(Operation *op, TargetAttr target) {
  auto attention = dyn_cast<AttentionOp>(op);
  int64_t limit = target.getMaxWorkgroupMemory();
  if (!attention || !limit)
    return kGPUQueryTile;
  int64_t d = std::max(attention.getQuery().getType().getDimSize(3),
                       attention.getValue().getType().getDimSize(3));
  if (ShapedType::isDynamic(d))
    return kGPUQueryTile;
  int64_t at32 = attention.getCausal() ? 888 * d + 8832 : 512 * d + 4608;
  int64_t tile = kGPUQueryTile;
  auto estimate = [&](int64_t t) {
    return at32 * t / kGPUQueryTile + (attention.getMask() ? t * t * 4 : 0);
  };
  while (tile > 8 && estimate(tile) > limit)
    tile /= 2;
  return tile;
}

/// GPU: the columns of the projections' workgroup tiles: 64, or the
/// largest head dim of the function's attention when larger, so that a
/// head-split projection output ([B, H, S, d]) is one tile along d (a
/// second tile along d would need a fourth grid dimension).
static int64_t workgroupCols(Operation *func) {
  int64_t cols = kGPUWorkgroupCols;
  func->walk([&](AttentionOp attention) {
    for (Value operand : {attention.getQuery(), attention.getValue()}) {
      int64_t d = cast<ShapedType>(operand.getType()).getDimSize(3);
      if (!ShapedType::isDynamic(d))
        cols = std::max(cols, d);
    }
  });
  return cols;
}

LoweringConfigAttr mha::selectLoweringConfig(Operation *op, TargetAttr target,
                                             bool allowTF32) {
  MLIRContext *ctx = op->getContext();
  if (!target)
    target = getDefaultCPUTarget(ctx);
  bool gpu = target.isGPU();
  if (isConfigured(op) && gpu && mmaAttentionUnsupported(op, target).empty()) {
    auto attention = cast<AttentionOp>(op);
    int64_t keys = mmaKeyTile(attention, target, false);
    // Decoding with GQA: a group's heads in the warps their queries need.
    if (std::optional<int64_t> headTile =
            gpuHeadTile(attention, 16 * kMMAWarps)) {
      int64_t warps = llvm::divideCeil(
          *headTile * attention.getQuery().getType().getDimSize(2), 16);
      return LoweringConfigAttr::get(
          ctx, 16 * warps, keys, {}, {}, {}, {}, {16, 8, 16}, warps,
          gpuKeySplits(attention, target, 16 * warps, keys, *headTile),
          headTile, {});
    }
    return LoweringConfigAttr::get(
        ctx, 16 * kMMAWarps, keys, {}, {}, {}, {}, {16, 8, 16}, kMMAWarps,
        gpuKeySplits(attention, target, 16 * kMMAWarps, keys), {}, {});
  }
  if (isConfigured(op) && gpu && allowTF32 &&
      mmaAttentionUnsupported(op, target, /*tf32=*/true).empty()) {
    auto attention = cast<AttentionOp>(op);
    int64_t keys = mmaKeyTile(attention, target, true);
    return LoweringConfigAttr::get(
        ctx, 16 * kMMAWarps, keys, {}, {}, {}, {}, {16, 8, 8}, kMMAWarps,
        gpuKeySplits(attention, target, 16 * kMMAWarps, keys), {}, {});
  }
  if (isConfigured(op) && gpu &&
      coopMatrixAttentionUnsupported(op, target).empty())
    if (LoweringConfigAttr config = coopConfig(cast<AttentionOp>(op), target))
      return config;
  if (isConfigured(op) && gpu && simtAttentionUnsupported(op, target).empty())
    if (LoweringConfigAttr config = simtConfig(cast<AttentionOp>(op), target))
      return config;
  if (isConfigured(op) && gpu) {
    int64_t tile = simtTile(op, target);
    return LoweringConfigAttr::get(ctx, tile, tile, {}, {}, {}, {}, {}, {}, {},
                                   {}, {});
  }
  if (isConfigured(op))
    return gpu ? LoweringConfigAttr::get(ctx, kGPUQueryTile, kGPUKeyTile, {},
                                         {}, {}, {}, {}, {}, {}, {}, {})
               : LoweringConfigAttr::get(
                     ctx, cpuQueryTile(op), cpuKeyTile(op, target), {}, {}, {},
                     {}, {}, {}, cpuKeySplits(op, cpuQueryTile(op)),
                     cpuHeadTile(op, cpuQueryTile(op)),
                     cpuPrefetchBlocks(op, cpuQueryTile(op)));
  if (!isa<FunctionOpInterface>(op))
    return {};
  if (!gpu) {
    FailureOr<std::pair<int64_t, int64_t>> tile =
        defaultRegisterTile(target.getVectorBits());
    if (failed(tile))
      return {};
    return LoweringConfigAttr::get(ctx, {}, {}, {tile->first, tile->second},
                                   /*chunk=*/64, {}, {}, {}, {}, {}, {}, {});
  }
  // As many threads as the smallest query tile has rows (the tensor-core
  // and register kernels state their own).
  int64_t threads = 0;
  op->walk([&](Operation *nested) {
    if (!isConfigured(nested) || usesMMA(nested) || usesSIMT(nested))
      return;
    LoweringConfigAttr config = getLoweringConfig(nested);
    if (config && config.getQTile())
      threads = threads ? std::min(threads, *config.getQTile())
                        : *config.getQTile();
  });
  if (!threads)
    threads = kGPUQueryTile;
  return LoweringConfigAttr::get(ctx, {}, {}, {}, {},
                                 {threads, workgroupCols(op)}, threads, {}, {},
                                 {}, {}, {});
}

std::pair<int64_t, int64_t> mha::resolveTileSizes(Operation *op,
                                                  int64_t qTile,
                                                  int64_t kvTile) {
  LoweringConfigAttr config = getLoweringConfig(op);
  auto resolve = [&](int64_t given, std::optional<int64_t> configured) {
    return given ? given : configured.value_or(64);
  };
  return {resolve(qTile, config ? config.getQTile() : std::nullopt),
          resolve(kvTile, config ? config.getKvTile() : std::nullopt)};
}

int64_t mha::resolveHeadTile(Operation *op) {
  LoweringConfigAttr config = getLoweringConfig(op);
  return config ? config.getHeadTile().value_or(1) : 1;
}

int64_t mha::resolvePrefetchBlocks(Operation *op) {
  LoweringConfigAttr config = getLoweringConfig(op);
  return config ? config.getPrefetchBlocks().value_or(0) : 0;
}

int64_t mha::resolveKeySplits(Operation *op, int64_t given) {
  if (given)
    return given;
  LoweringConfigAttr config = getLoweringConfig(op);
  return config ? config.getKvSplits().value_or(1) : 1;
}

SmallVector<FunctionOpInterface> mha::functionsUnder(Operation *root) {
  SmallVector<FunctionOpInterface> functions;
  root->walk([&](FunctionOpInterface func) {
    if (!func.isExternal())
      functions.push_back(func);
  });
  return functions;
}

/// The head tile of an op whose kernel has `rows` tile rows: a divisor of
/// its key/value heads' groups, whose queries (static Sq) fit the rows.
static LogicalResult verifyHeadTile(Operation *op, LoweringConfigAttr config,
                                    int64_t rows) {
  int64_t headTile = config.getHeadTile().value_or(1);
  if (headTile == 1)
    return success();
  auto attention = cast<AttentionOp>(op);
  int64_t queries = attention.getQuery().getType().getDimSize(2);
  int64_t group = attention.getQuery().getType().getDimSize(1) /
                  attention.getKey().getType().getDimSize(1);
  if (ShapedType::isDynamic(queries) || group % headTile ||
      headTile * queries > rows)
    return op->emitError()
           << "lowering_config: head_tile = " << headTile
           << " (query heads per workgroup) needs a static query length, a "
              "divisor of the "
           << group << " query heads per key/value head, and head_tile * "
           << "Sq at most q_tile (" << rows << ")";
  return success();
}

/// The configuration of an op that runs as the cooperative-matrix kernel.
static LogicalResult verifyCoopConfig(Operation *op, LoweringConfigAttr config,
                                      TargetAttr target) {
  std::string why = coopMatrixAttentionUnsupported(op, target);
  if (!why.empty())
    return op->emitError() << "lowering_config: mma = [16, 16, 16] (the "
                              "cooperative-matrix kernel) cannot compute this "
                              "op: "
                           << why;
  int64_t subgroups = config.getWarps().value_or(0);
  if (subgroups <= 0 || config.getQTile() != 16 * subgroups)
    return op->emitError()
           << "lowering_config: with mma = [16, 16, 16], warps must give the "
              "subgroups (of 32 invocations, 16 rows each) and q_tile their "
              "rows, found warps = "
           << subgroups << " and q_tile = " << config.getQTile().value_or(0);
  if (target.getMaxWorkgroupThreads() &&
      32 * subgroups > target.getMaxWorkgroupThreads())
    return op->emitError() << "lowering_config: " << subgroups
                           << " subgroups exceed the "
                           << "target's " << target.getMaxWorkgroupThreads()
                           << " invocations per workgroup";
  int64_t keys = config.getKvTile().value_or(0);
  if (keys <= 0 || keys % 16)
    return op->emitError() << "lowering_config: with mma = [16, 16, 16], "
                              "kv_tile must be a positive multiple of 16, "
                              "found "
                           << keys;
  auto attention = cast<AttentionOp>(op);
  int64_t bytes = coopMatrixAttentionWorkgroupBytes(
      16 * subgroups, keys, attention.getQuery().getType().getDimSize(3),
      attention.getValue().getType().getDimSize(3));
  if (target.getMaxWorkgroupMemory() && bytes > target.getMaxWorkgroupMemory())
    return op->emitError()
           << "lowering_config: the cooperative-matrix kernel's tiles take "
           << bytes << " bytes of workgroup memory, above the target's "
           << target.getMaxWorkgroupMemory() << " (max_workgroup_memory): "
           << "give smaller tiles";
  return verifyHeadTile(op, config, 16 * subgroups);
}

/// The configuration of an op that runs as the tensor-core kernel.
static LogicalResult verifyMMAConfig(Operation *op, LoweringConfigAttr config,
                                     TargetAttr target) {
  if (config.getMma()[1] == 16)
    return verifyCoopConfig(op, config, target);
  bool tf32 = config.getMma()[2] == 8;
  std::string why = mmaAttentionUnsupported(op, target, tf32);
  if (!why.empty())
    return op->emitError() << "lowering_config: mma = [16, 8, "
                           << config.getMma()[2]
                           << "] (the tensor-core kernel) cannot compute this "
                              "op: "
                           << why;
  // The rule sets warps wherever the kernel computes the op, and the
  // attribute refuses warps <= 0.
  int64_t warps = *config.getWarps();
  if (target.getMaxWorkgroupThreads() &&
      32 * warps > target.getMaxWorkgroupThreads())
    return op->emitError()
           << "lowering_config: " << warps << " warps exceed the target's "
           << target.getMaxWorkgroupThreads() << " threads per workgroup";
  if (config.getQTile() != 16 * warps)
    return op->emitError()
           << "lowering_config: with mma, q_tile must be 16 rows per warp ("
           << 16 * warps << " for " << warps << " warps), found "
           << config.getQTile().value_or(0);
  int64_t keys = config.getKvTile().value_or(0);
  if (keys <= 0 || keys % 16)
    return op->emitError() << "lowering_config: with mma, kv_tile must be a "
                              "positive multiple of 16, found "
                           << keys;
  return verifyHeadTile(op, config, 16 * warps);
}

/// The configuration of an op that runs as the register kernel.
static LogicalResult verifySIMTConfig(AttentionOp op, LoweringConfigAttr config,
                                      TargetAttr target) {
  std::string why = simtAttentionUnsupported(op, target);
  if (!why.empty())
    return op->emitError() << "lowering_config: thread_tile (the register "
                              "kernel) cannot compute this op: "
                           << why;
  int64_t rows = config.getThreadTile()[0], keys = config.getThreadTile()[1];
  int64_t qTile = config.getQTile().value_or(0),
          kvTile = config.getKvTile().value_or(0);
  if (qTile <= 0 || qTile % rows || kvTile <= 0 || kvTile % keys)
    return op->emitError() << "lowering_config: q_tile and kv_tile must be "
                              "positive multiples of thread_tile's rows and "
                              "keys ("
                           << rows << ", " << keys << "), found " << qTile
                           << " and " << kvTile;
  int64_t lanes = kvTile / keys;
  int64_t maxLanes = kSIMTMaxLanes;
  if (target.getSubgroupSize())
    maxLanes = std::min(maxLanes, target.getSubgroupSize());
  int64_t dv = op.getValue().getType().getDimSize(3);
  if (!llvm::isPowerOf2_64(lanes) || lanes > maxLanes || dv % lanes)
    return op->emitError()
           << "lowering_config: thread_tile gives " << lanes
           << " threads per row group (kv_tile / keys), which must be a power "
              "of two up to "
           << maxLanes << " (a subgroup) dividing the value head dim " << dv;
  int64_t threads = qTile / rows * lanes;
  if (target.getMaxWorkgroupThreads() &&
      threads > target.getMaxWorkgroupThreads())
    return op->emitError() << "lowering_config: thread_tile gives " << threads
                           << " threads per workgroup, above the target's "
                           << target.getMaxWorkgroupThreads();
  int64_t dk = op.getQuery().getType().getDimSize(3);
  int64_t bytes = simtAttentionWorkgroupBytes(
      qTile, kvTile, dk, dv,
      op.getQuery().getType().getElementType().getIntOrFloatBitWidth() / 8);
  if (target.getMaxWorkgroupMemory() && bytes > target.getMaxWorkgroupMemory())
    return op->emitError()
           << "lowering_config: the register kernel's tiles take " << bytes
           << " bytes of workgroup memory, above the target's "
           << target.getMaxWorkgroupMemory() << " (max_workgroup_memory): "
           << "give smaller tiles";
  return verifyHeadTile(op, config, qTile);
}

LogicalResult mha::verifyLoweringConfig(FunctionOpInterface func,
                                        TargetAttr target) {
  LoweringConfigAttr config = getLoweringConfig(func);
  StringRef kind = stringifyTargetKind(target.getKind());
  // The key split, head tiles and prefetches are built by
  // mha-tile-attention and mha-prefetch-key-blocks on CPU; on a GPU the
  // attention kernels built as IR (tensor-core, register) split keys too.
  WalkResult splits = func->walk([&](Operation *op) {
    LoweringConfigAttr own = getLoweringConfig(op);
    if (!isConfigured(op) || !own)
      return WalkResult::advance();
    // Stages are the GEMM kernel's (the attention kernels keep their own
    // order of copies).
    if (own.getPipelineStages()) {
      op->emitError() << "lowering_config: pipeline_stages applies to the "
                         "tensor-core GEMM kernel's contractions only, not "
                         "to "
                      << op->getName();
      return WalkResult::interrupt();
    }
    for (auto [name, value] : {std::pair<StringRef, std::optional<int64_t>>{
                                   "kv_splits", own.getKvSplits()},
                               {"head_tile", own.getHeadTile()},
                               {"prefetch_blocks", own.getPrefetchBlocks()}}) {
      // One chunk or head per tile is no split or tile; any prefetch is
      // one.
      if (!value || (*value == 1 && name != "prefetch_blocks"))
        continue;
      bool kernelSplit =
          (name == "kv_splits" && (usesMMA(op) || usesSIMT(op))) ||
          (name == "head_tile" && (usesMMA(op) || usesSIMT(op)));
      if (target.isGPU() && kernelSplit && name == "kv_splits" &&
          *value > kGPUMaxKeySplits)
        op->emitError() << "lowering_config: kv_splits = " << *value << " on a "
                        << kind << " target: the attention "
                        << "kernels merge at most " << kGPUMaxKeySplits
                        << " chunks";
      else if (target.isGPU() && kernelSplit)
        continue;
      else if (target.isGPU())
        op->emitError() << "lowering_config: " << name
                        << (name != "prefetch_blocks"
                                ? " is implemented on cpu targets and by "
                                  "the tensor-core and register attention "
                                  "kernels (mma, thread_tile) only, not by "
                                  "the thread-per-row kernel on a "
                                : " is implemented on cpu targets only, "
                                  "not on a ")
                        << kind << " target";
      else if (!isa<AttentionOp>(op))
        op->emitError() << "lowering_config: " << name
                        << " applies to mha.attention only (a layer's "
                           "attention is fused with its projections)";
      else
        continue;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (splits.wasInterrupted())
    return failure();
  if (!target.isGPU()) {
    if (config && (config.getThreads() || !config.getWorkgroupTile().empty()))
      return func.emitError()
             << "lowering_config: threads and workgroup_tile have no "
                "meaning on a cpu target";
    return success();
  }
  if (config && (config.getChunk() || !config.getRegisterTile().empty()))
    return func.emitError() << "lowering_config: register_tile and chunk have "
                               "no meaning on a "
                            << kind << " target";
  int64_t threads = config ? config.getThreads().value_or(0) : 0;
  if (threads <= 0)
    return func.emitError() << "lowering_config: threads must be positive on "
                               "a GPU target, found "
                            << threads;
  if (target.getMaxWorkgroupThreads() &&
      threads > target.getMaxWorkgroupThreads())
    return func.emitError()
           << "lowering_config: " << threads
           << " threads per workgroup exceed the target's "
           << target.getMaxWorkgroupThreads() << " (max_workgroup_threads)";
  ArrayRef<int64_t> workgroupTile = config.getWorkgroupTile();
  if (!workgroupTile.empty() && workgroupTile[0] < threads)
    return func.emitError() << "lowering_config: " << threads
                            << " threads per workgroup cannot be fed by "
                               "workgroup tiles of "
                            << workgroupTile[0]
                            << " rows (one row per thread at least)";
  WalkResult walk = func->walk([&](Operation *op) {
    if (!isConfigured(op))
      return WalkResult::advance();
    LoweringConfigAttr own = getLoweringConfig(op);
    if (usesMMA(op)) {
      if (failed(verifyMMAConfig(op, own, target)))
        return WalkResult::interrupt();
      return WalkResult::advance();
    }
    if (usesSIMT(op)) {
      auto attention = dyn_cast<AttentionOp>(op);
      if (!attention) {
        op->emitError() << "lowering_config: thread_tile (the register "
                           "kernel) cannot compute this op: it computes "
                           "mha.attention only (decompose layers first)";
        return WalkResult::interrupt();
      }
      if (failed(verifySIMTConfig(attention, own, target)))
        return WalkResult::interrupt();
      return WalkResult::advance();
    }
    int64_t rows = own ? own.getQTile().value_or(0) : 0;
    if (rows <= 0) {
      op->emitError() << "lowering_config: q_tile must be positive on a GPU "
                         "target (it is the workgroup's rows), found "
                      << rows;
      return WalkResult::interrupt();
    }
    if (rows < threads) {
      op->emitError() << "lowering_config: " << threads
                      << " threads per workgroup cannot be fed by a query "
                         "tile of "
                      << rows << " rows (one row per thread at least)";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

LogicalResult mha::setLoweringConfigs(Operation *root, TargetAttr target,
                                      LoweringConfigAttr overrides,
                                      bool allowTF32,
                                      ArrayRef<int64_t> gemmTile,
                                      int64_t gemmStages) {
  if (!target)
    target = getDefaultCPUTarget(root->getContext());
  // The mha ops first: a GPU function's threads follow their query tiles.
  root->walk([&](Operation *op) {
    if (!isConfigured(op))
      return;
    // A pipeline's kv_splits (and head_tile, prefetch_blocks) is for the
    // standalone attentions (a layer's attention is fused with its
    // projections, unsplit).
    LoweringConfigAttr over = opFields(overrides);
    if (over &&
        (over.getKvSplits() || over.getHeadTile() ||
         over.getPrefetchBlocks()) &&
        !isa<AttentionOp>(op))
      over = opFields(LoweringConfigAttr::get(
          op->getContext(), over.getQTile(), over.getKvTile(), {}, {}, {}, {},
          over.getMma(), over.getWarps(), {}, {}, {}));
    LoweringConfigAttr given = opFields(getLoweringConfig(op)).merge(over);
    LoweringConfigAttr selected = selectLoweringConfig(op, target, allowTF32);
    // Tile sizes given for a tensor-core kernel the rules chose: its warps
    // follow the rows, or, for sizes it cannot take, the op keeps the
    // thread-per-row kernel. A given mma is checked as it is.
    if (!selected.getMma().empty() && given && given.getMma().empty() &&
        (given.getQTile() || given.getKvTile())) {
      int64_t rows = given.getQTile().value_or(*selected.getQTile());
      int64_t keys = given.getKvTile().value_or(*selected.getKvTile());
      if (rows % 16 == 0 && keys % 16 == 0 && !given.getWarps())
        selected = LoweringConfigAttr::get(op->getContext(), rows, keys, {}, {},
                                           {}, {}, selected.getMma(), rows / 16,
                                           {}, {}, {});
      else if (!given.getWarps())
        selected = LoweringConfigAttr::get(op->getContext(), kGPUQueryTile,
                                           kGPUKeyTile, {}, {}, {}, {}, {}, {},
                                           {}, {}, {});
    }
    // A thread tile given: the register kernel, under the rule's tiles for
    // it (the verifier refuses it where the kernel cannot compute the op).
    if (given && !given.getThreadTile().empty() &&
        selected.getThreadTile().empty()) {
      LoweringConfigAttr simt;
      if (target.isGPU() && simtAttentionUnsupported(op, target).empty())
        simt = simtConfig(cast<AttentionOp>(op), target);
      selected = simt ? simt
                      : LoweringConfigAttr::get(op->getContext(), kGPUQueryTile,
                                                kGPUKeyTile, {}, {}, {}, {}, {},
                                                {}, {}, {}, {});
    }
    // Tile sizes given without a thread tile keep their meaning of a thread
    // per query row: the thread-per-row kernel with those tiles.
    if (!selected.getThreadTile().empty() && given &&
        given.getThreadTile().empty() &&
        (given.getQTile() || given.getKvTile())) {
      int64_t tile = simtTile(op, target);
      selected = LoweringConfigAttr::get(op->getContext(), tile, tile, {}, {},
                                         {}, {}, {}, {}, {}, {}, {});
    }
    // GPU query tiles given: their rows are the user's, without the rule's
    // packed heads, which are rows of the tile there (a head tile given
    // with them is checked as it is). On a CPU a head tile is a loop of
    // its own and stays.
    if (target.isGPU() && given && given.getQTile() && !given.getHeadTile() &&
        selected.getHeadTile())
      selected = LoweringConfigAttr::get(
          op->getContext(), selected.getQTile(), selected.getKvTile(), {}, {},
          {}, {}, selected.getMma(), selected.getWarps(),
          selected.getKvSplits(), {}, selected.getPrefetchBlocks(),
          selected.getThreadTile(), {});
    op->setAttr(kLoweringConfigAttrName, selected.merge(given));
  });
  // Contractions the tensor-core GEMM kernel computes (the projections of
  // f16 and bf16 layers on CUDA): their own kernel, its tiles and stages
  // the rules' or the given ones, checked here.
  WalkResult gemms = root->walk([&](linalg::GenericOp op) {
    auto own = op->getAttrOfType<LoweringConfigAttr>(kLoweringConfigAttrName);
    if (mmaContractionUnsupported(op, target).empty() &&
        (!own || !own.getMma().empty())) {
      MLIRContext *ctx = op->getContext();
      auto given = LoweringConfigAttr::get(
          ctx, {}, {}, {}, {}, gemmTile, {}, {16, 8, 16}, {}, {}, {}, {}, {},
          gemmStages ? std::optional(gemmStages) : std::nullopt);
      op->setAttr(kLoweringConfigAttrName, own ? own.merge(given) : given);
      FailureOr<MMAGemmConfig> config = getMMAGemmConfig(op, target);
      if (failed(config))
        return WalkResult::interrupt();
      op->setAttr(kLoweringConfigAttrName,
                  LoweringConfigAttr::get(ctx, {}, {}, {}, {},
                                          {config->tileM, config->tileN}, {},
                                          {16, 8, 16}, config->warps, {}, {},
                                          {}, {}, config->stages));
    }
    return WalkResult::advance();
  });
  if (gemms.wasInterrupted())
    return failure();
  WalkResult walk = root->walk([&](FunctionOpInterface func) {
    if (func.isExternal())
      return WalkResult::advance();
    LoweringConfigAttr selected = selectLoweringConfig(func, target);
    if (!selected) {
      func.emitError() << "no lowering configuration for " << target;
      return WalkResult::interrupt();
    }
    LoweringConfigAttr given = functionFields(getLoweringConfig(func))
                                   .merge(functionFields(overrides));
    // Workgroup tiles of as many rows as there are threads, when only the
    // threads are given.
    if (target.isGPU() && given && given.getThreads() &&
        given.getWorkgroupTile().empty())
      selected = selected.merge(LoweringConfigAttr::get(
          func->getContext(), {}, {}, {}, {},
          {*given.getThreads(), selected.getWorkgroupTile()[1]}, {}, {}, {}, {},
          {}, {}));
    LoweringConfigAttr config = selected.merge(given);
    func->setAttr(kLoweringConfigAttrName, config);
    if (failed(verifyLoweringConfig(func, target)))
      return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

namespace {

/// An attribute of type `AttrT` from a pass option's text; null for "".
template <typename AttrT>
FailureOr<AttrT> parseOption(Operation *op, StringRef option, StringRef text) {
  if (text.empty())
    return AttrT();
  auto attr = dyn_cast_if_present<AttrT>(parseAttribute(text, op->getContext()));
  if (!attr)
    return op->emitError() << "'" << option << "' must be a "
                           << (std::is_same_v<AttrT, TargetAttr>
                                   ? "#mha.target"
                                   : "#mha.lowering_config")
                           << ", found '" << text << "'";
  return attr;
}

struct MHASelectLoweringConfigPass final
    : mha::impl::MHASelectLoweringConfigPassBase<MHASelectLoweringConfigPass> {
  using MHASelectLoweringConfigPassBase::MHASelectLoweringConfigPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<TargetAttr> given = parseOption<TargetAttr>(module, "target", target);
    FailureOr<LoweringConfigAttr> over =
        parseOption<LoweringConfigAttr>(module, "overrides", overrides);
    if (failed(given) || failed(over))
      return signalPassFailure();
    TargetAttr chosen = *given;
    if (!chosen)
      chosen = getTarget(module);
    if (!chosen)
      chosen = getDefaultCPUTarget(&getContext());
    module->setAttr(kTargetAttrName, chosen);
    if (!gemmTile.empty() &&
        (gemmTile.size() != 2 || gemmTile[0] <= 0 || gemmTile[1] <= 0)) {
      module.emitError() << "'gemm-tile' must be two positive sizes [rows, "
                            "cols], found ["
                         << llvm::interleaved(gemmTile) << "]";
      return signalPassFailure();
    }
    if (failed(setLoweringConfigs(module, chosen, *over, allowTF32, gemmTile,
                                  gemmStages)))
      signalPassFailure();
  }
};

struct MHADropLoweringConfigPass final
    : mha::impl::MHADropLoweringConfigPassBase<MHADropLoweringConfigPass> {
  using MHADropLoweringConfigPassBase::MHADropLoweringConfigPassBase;
  void runOnOperation() override {
    getOperation()->walk([&](Operation *op) {
      op->removeAttr(kLoweringConfigAttrName);
      op->removeAttr(kTargetAttrName);
      if (auto func = dyn_cast<FunctionOpInterface>(op); func && weights)
        for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
          func.removeArgAttr(i, kWeightAttrName);
    });
  }
};

} // namespace
