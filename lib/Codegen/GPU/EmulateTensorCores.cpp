//===- EmulateTensorCores.cpp - Tensor-core ops without tensor cores ------===//
//
// The nvgpu ops of the tensor-core kernels as ordinary loads, stores,
// arithmetic and barriers (mha-emulate-tensor-cores), so that those kernels,
// lane layout and all, run on a GPU without tensor cores: lavapipe in CI,
// where nothing else could check their numbers between the lendings of an
// NVIDIA GPU.
//
// An mma.sync or ldmatrix is a warp-wide exchange: a lane's result depends on
// the other lanes' operands. Each lane writes its operands into its warp's
// part of a workgroup buffer, a barrier, each lane reads what its result
// needs, a barrier (before the next exchange reuses the buffer). The layouts
// are written here from the PTX ISA ("Matrix fragments for mma.m16n8k16 with
// floating point type", "ldmatrix"), not taken from the code that builds the
// kernels: that code is what this checks. cp.async copies become synchronous
// copies (a correct kernel may see them complete at once), their groups and
// waits disappear. Last, the kernel's vectors become scalars: its fragments
// are n-D vectors (vector<4x2xf16>, vector<8x2x2xf32>), which the NVVM
// lowering takes and SPIR-V does not.
//
//===----------------------------------------------------------------------===//

#include "Emulation.h"
#include "MMAFragments.h"

#include "mha/Codegen/GPU/Passes.h"
#include "mha/Codegen/GPU/Transforms.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Utils/GPUUtils.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Patterns.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/DialectConversion.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::mha {
#define GEN_PASS_DEF_MHAEMULATETENSORCORESPASS
#include "mha/Codegen/GPU/Passes.h.inc"
} // namespace mlir::mha

using namespace mlir;
using namespace mlir::mha::detail;

namespace {

/// The slots one exchange op writes and reads in its phase.
struct Slots {
  int64_t phase = 0;
  /// mma: the A and B operand slots; ldmatrix: the address slot (a).
  int64_t a = 0, b = 0;
};

/// A launch's lane coordinates, exchange buffers and schedule.
struct Exchange {
  Exchange(gpu::LaunchOp launch, int64_t warps)
      : launch(launch), warps(warps) {}

  gpu::LaunchOp launch;
  int64_t warps;
  /// At the start of the body: warp = x / 32, lane, g = lane / 4,
  /// t = lane % 4, t2 = 2 t.
  Value warp, lane, g, t, t2;
  /// Double-buffered by phase parity, slots per phase, per warp:
  /// [2, slots, warps, 16, 16] f16 (mma's A operands; f32 for TF32's
  /// m16n8k8, 8 of the 16 columns used),
  /// [2, slots, warps, 8, 16] f16 (B operands, transposed; f32 for TF32) and
  /// [2, slots, warps, 32, rank] i32 (ldmatrix's row addresses).
  Value a, bt, addresses;
  /// Whether the kernel's mma are TF32's m16n8k8.
  bool tf32 = false;
  int64_t aSlots = 0, bSlots = 0, addressSlots = 0, rank = 0;
  DenseMap<Operation *, Slots> slots;

  Value buffer(ArrayRef<int64_t> shape, Type element) {
    auto space = gpu::AddressSpaceAttr::get(launch.getContext(),
                                            gpu::AddressSpace::Workgroup);
    return launch.addWorkgroupAttribution(
        MemRefType::get(shape, element, MemRefLayoutAttrInterface(), space),
        launch.getLoc());
  }
};

} // namespace

LogicalResult mlir::mha::detail::checkUniform(Operation *op,
                                              gpu::LaunchOp launch) {
  for (Operation *parent = op->getParentOp(); parent != launch;
       parent = parent->getParentOp())
    if (!isa<scf::ForOp>(parent))
      return op->emitOpError()
             << "cannot be emulated inside '" << parent->getName()
             << "': its exchange between lanes needs every thread of the "
                "workgroup at its barriers";
  return success();
}

/// Whether `op` is TF32's m16n8k8 (f32 operands, whose low 13 bits the
/// kernels zero before: multiplied as f32 here).
static bool isTF32(nvgpu::MmaSyncOp op) {
  Type f32 = Float32Type::get(op.getContext());
  return op.getMmaShapeAsArray() == std::array<int64_t, 3>{16, 8, 8} &&
         op.getTf32Enabled() &&
         op.getMatrixA().getType() == VectorType::get({4, 1}, f32) &&
         op.getMatrixB().getType() == VectorType::get({2, 1}, f32) &&
         op.getMatrixC().getType() == VectorType::get({2, 2}, f32);
}

static LogicalResult checkMma(nvgpu::MmaSyncOp op) {
  MLIRContext *ctx = op.getContext();
  Type f16 = Float16Type::get(ctx), f32 = Float32Type::get(ctx);
  bool f16Shape =
      op.getMmaShapeAsArray() == std::array<int64_t, 3>{16, 8, 16} &&
      !op.getTf32Enabled() &&
      op.getMatrixA().getType() == VectorType::get({4, 2}, f16) &&
      op.getMatrixB().getType() == VectorType::get({2, 2}, f16) &&
      op.getMatrixC().getType() == VectorType::get({2, 2}, f32);
  if (!f16Shape && !isTF32(op))
    return op.emitOpError() << "cannot be emulated: only m16n8k16 with f16 "
                               "operands and m16n8k8 with TF32 ones, f32 "
                               "accumulators, are";
  return success();
}

static LogicalResult checkLdMatrix(nvgpu::LdMatrixOp op) {
  auto type = op.getRes().getType();
  if (type.getElementTypeBitWidth() == 16 &&
      type.getShape() == ArrayRef<int64_t>{op.getNumTiles(), 2})
    return success();
  return op.emitOpError()
         << "cannot be emulated: only matrices of 16-bit elements are";
}

static bool isExchange(Operation *op) {
  return isa<nvgpu::MmaSyncOp, nvgpu::LdMatrixOp>(op);
}

/// What may move across the barriers of an exchange: pure ops without
/// regions.
static bool isMovable(Operation *op) {
  return isMemoryEffectFree(op) && op->getNumRegions() == 0 &&
         !op->hasTrait<OpTrait::IsTerminator>();
}

/// The exchange ops of `block`, with the ops between them that may move, in
/// runs (segments) that other ops (stores, barriers, regions) separate.
static SmallVector<SmallVector<Operation *>> segmentsOf(Block &block) {
  SmallVector<SmallVector<Operation *>> segments(1);
  for (Operation &op : block) {
    if (isExchange(&op) || isMovable(&op)) {
      segments.back().push_back(&op);
      continue;
    }
    if (!segments.back().empty())
      segments.emplace_back();
  }
  llvm::erase_if(segments, [](ArrayRef<Operation *> segment) {
    return llvm::none_of(segment, isExchange);
  });
  return segments;
}

/// Phases of a segment: an exchange writes its operands in its phase and
/// reads its result after the barrier that ends it; a movable op runs in the
/// first phase where its operands are there. Each exchange gets the slots
/// of its phase (an mma's operand used by several mma of a phase written
/// once).
static void schedule(Exchange &x, ArrayRef<Operation *> segment,
                     DenseMap<Operation *, int64_t> &phases) {
  DenseSet<Operation *> members(llvm::from_range, segment);
  auto ready = [&](Value v) -> int64_t {
    Operation *def = v.getDefiningOp();
    if (!def || !members.contains(def))
      return 0;
    return phases.lookup(def) + (isExchange(def) ? 1 : 0);
  };
  DenseMap<std::pair<int64_t, Value>, int64_t> aSlot, bSlot;
  DenseMap<int64_t, int64_t> aUsed, bUsed, addressUsed;
  for (Operation *op : segment) {
    int64_t phase = 0;
    if (auto mma = dyn_cast<nvgpu::MmaSyncOp>(op)) {
      // The accumulator is the lane's own: needed only when it reads.
      phase = std::max({ready(mma.getMatrixA()), ready(mma.getMatrixB()),
                        ready(mma.getMatrixC()) - 1});
      Slots &s = x.slots[op];
      s.phase = phase;
      auto slotOf = [&](auto &map, auto &used, Value v) {
        auto [it, inserted] = map.try_emplace({phase, v}, used[phase]);
        if (inserted)
          ++used[phase];
        return it->second;
      };
      s.a = slotOf(aSlot, aUsed, mma.getMatrixA());
      s.b = slotOf(bSlot, bUsed, mma.getMatrixB());
      x.aSlots = std::max(x.aSlots, aUsed[phase]);
      x.bSlots = std::max(x.bSlots, bUsed[phase]);
    } else {
      for (Value operand : op->getOperands())
        phase = std::max(phase, ready(operand));
      if (auto load = dyn_cast<nvgpu::LdMatrixOp>(op)) {
        Slots &s = x.slots[op];
        s.phase = phase;
        s.a = addressUsed[phase]++;
        x.addressSlots = std::max(x.addressSlots, addressUsed[phase]);
        x.rank = std::max<int64_t>(x.rank, load.getIndices().size());
      }
    }
    phases[op] = phase;
  }
}

static void barrier(Emitter &e) { gpu::BarrierOp::create(e.b, e.loc); }

/// An mma's operands into its slots: A (16 x 16, rows m, columns k):
/// register i holds row g + 8 (i % 2), columns t2 + 8 (i / 2) and the next;
/// B (16 x 8, rows k, columns n): register i holds rows t2 + 8 i and the
/// next of column g, stored transposed (a column per row). TF32's m16n8k8:
/// A (16 x 8) register i holds row g + 8 (i % 2), column t + 4 (i / 2); B
/// (8 x 8) register i row t + 4 i of column g.
static void writeMma(Emitter &e, Exchange &x, nvgpu::MmaSyncOp op,
                     DenseSet<std::pair<int64_t, Value>> &written) {
  const Slots &s = x.slots.lookup(op);
  Value buffer = e.index(s.phase % 2);
  auto put = [&](Value v, Value memref, int64_t slot, Value row, Value col) {
    memref::StoreOp::create(
        e.b, e.loc, v, memref,
        ValueRange{buffer, e.index(slot), x.warp, row, col});
  };
  if (written.insert({s.phase, op.getMatrixA()}).second)
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t j = 0; j < (x.tf32 ? 1 : 2); ++j)
        put(e.extract(op.getMatrixA(), {i, j}), x.a, s.a,
            e.add(x.g, 8 * (i % 2)),
            x.tf32 ? e.add(x.t, 4 * (i / 2)) : e.add(x.t2, 8 * (i / 2) + j));
  if (written.insert({s.phase, op.getMatrixB()}).second)
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < (x.tf32 ? 1 : 2); ++j)
        put(e.extract(op.getMatrixB(), {i, j}), x.bt, s.b, x.g,
            x.tf32 ? e.add(x.t, 4 * i) : e.add(x.t2, 8 * i + j));
}

/// D = A B + C from the slots: C and D (16 x 8) register i holds row
/// g + 8 i, columns t2 and t2 + 1. A loop over k (16, TF32 8) whose bound
/// the driver cannot fold (plus the warp index shifted out): lavapipe
/// unrolls loops of 16 iterations, and compiled the unrolled loads of a
/// kernel's mma about 8 times slower (99 s for one attention kernel at head
/// dim 64, 13 s with the loop).
static Value readMma(Emitter &e, Exchange &x, nvgpu::MmaSyncOp op) {
  const Slots &s = x.slots.lookup(op);
  Value buffer = e.index(s.phase % 2);
  Type f32 = e.b.getF32Type();
  SmallVector<Value> sums;
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 2; ++j)
      sums.push_back(e.extract(op.getMatrixC(), {i, j}));
  Value rows[2] = {x.g, e.add(x.g, 8)}, cols[2] = {x.t2, e.add(x.t2, 1)};
  auto loop = scf::ForOp::create(
      e.b, e.loc, e.index(0),
      e.add(e.index(x.tf32 ? 8 : 16), e.div(x.warp, 1 << 20)), e.index(1),
      sums);
  {
    OpBuilder::InsertionGuard guard(e.b);
    e.b.setInsertionPointToStart(loop.getBody());
    Value k = loop.getInductionVar();
    auto get = [&](Value memref, int64_t slot, Value row) -> Value {
      Value element = memref::LoadOp::create(
          e.b, e.loc, memref,
          ValueRange{buffer, e.index(slot), x.warp, row, k});
      return x.tf32
                 ? element
                 : arith::ExtFOp::create(e.b, e.loc, f32, element).getResult();
    };
    Value a[2] = {get(x.a, s.a, rows[0]), get(x.a, s.a, rows[1])};
    Value b[2] = {get(x.bt, s.b, cols[0]), get(x.bt, s.b, cols[1])};
    SmallVector<Value> next;
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 2; ++j)
        next.push_back(
            e.fadd(loop.getRegionIterArg(2 * i + j), e.fmul(a[i], b[j])));
    scf::YieldOp::create(e.b, e.loc, next);
  }
  Value d = op.getMatrixC();
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 2; ++j)
      d = e.insert(loop.getResult(2 * i + j), d, {i, j});
  return d;
}

/// An ldmatrix's row address (lane l gives row l % 8 of matrix l / 8) into
/// its slot.
static void writeLdMatrix(Emitter &e, Exchange &x, nvgpu::LdMatrixOp op) {
  const Slots &s = x.slots.lookup(op);
  for (auto [r, index] : llvm::enumerate(op.getIndices()))
    memref::StoreOp::create(
        e.b, e.loc,
        arith::IndexCastOp::create(e.b, e.loc, e.b.getI32Type(), index),
        x.addresses,
        ValueRange{e.index(s.phase % 2), e.index(s.a), x.warp, x.lane,
                   e.index(r)});
}

/// numTiles 8 x 8 matrices: lane l receives row g (or, transposed, column
/// g) of each, elements t2 and t2 + 1.
static Value readLdMatrix(Emitter &e, Exchange &x, nvgpu::LdMatrixOp op) {
  const Slots &s = x.slots.lookup(op);
  Value result = e.zeros(op.getRes().getType());
  bool transpose = op.getTranspose();
  for (int64_t m = 0; m < op.getNumTiles(); ++m)
    for (int64_t j = 0; j < 2; ++j) {
      // The lane with the address of the element's row: row g, or
      // transposed row t2 + j, of matrix m.
      Value from = transpose ? e.add(x.t2, 8 * m + j) : e.add(x.g, 8 * m);
      SmallVector<Value> at;
      for (int64_t r = 0; r < static_cast<int64_t>(op.getIndices().size()); ++r)
        at.push_back(arith::IndexCastOp::create(
            e.b, e.loc, e.b.getIndexType(),
            memref::LoadOp::create(e.b, e.loc, x.addresses,
                                   ValueRange{e.index(s.phase % 2),
                                              e.index(s.a), x.warp, from,
                                              e.index(r)})));
      at.back() = e.add(at.back(), transpose ? x.g : e.add(x.t2, j));
      result =
          e.insert(memref::LoadOp::create(e.b, e.loc, op.getSrcMemref(), at),
                   result, {m, j});
    }
  return result;
}

/// The segment's ops in phase order before the op after it: per phase, the
/// results of the previous phase's exchanges, the movable ops, the writes
/// of its exchanges and a barrier; a last barrier before the buffers are
/// written again.
static void emitSegment(RewriterBase &rewriter, Exchange &x,
                        ArrayRef<Operation *> segment,
                        const DenseMap<Operation *, int64_t> &phases) {
  Operation *anchor = segment.back()->getNextNode();
  rewriter.setInsertionPoint(anchor);
  Emitter e{rewriter, segment.front()->getLoc()};
  int64_t last = 0;
  for (Operation *op : segment)
    last = std::max(last, phases.lookup(op) + (isExchange(op) ? 1 : 0));
  DenseSet<std::pair<int64_t, Value>> written;
  for (int64_t phase = 0; phase <= last; ++phase) {
    bool writes = false;
    for (Operation *op : segment) {
      int64_t p = phases.lookup(op);
      if (!isExchange(op)) {
        if (p == phase)
          rewriter.moveOpBefore(op, anchor);
        continue;
      }
      e.loc = op->getLoc();
      if (p + 1 == phase) {
        Value result = isa<nvgpu::MmaSyncOp>(op)
                           ? readMma(e, x, cast<nvgpu::MmaSyncOp>(op))
                           : readLdMatrix(e, x, cast<nvgpu::LdMatrixOp>(op));
        rewriter.replaceAllUsesWith(op->getResult(0), result);
      }
      if (p == phase) {
        writes = true;
        if (auto mma = dyn_cast<nvgpu::MmaSyncOp>(op))
          writeMma(e, x, mma, written);
        else
          writeLdMatrix(e, x, cast<nvgpu::LdMatrixOp>(op));
      }
    }
    if (writes || phase == last)
      barrier(e);
  }
  for (Operation *op : segment)
    if (isExchange(op))
      rewriter.eraseOp(op);
}

/// The copy done at once, elements past srcElements zero-filled.
static void emulateCopy(RewriterBase &rewriter, nvgpu::DeviceAsyncCopyOp op,
                        Value token) {
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  Emitter e{rewriter, loc};
  Type element = op.getDst().getType().getElementType();
  Value zero = arith::ConstantOp::create(rewriter, loc, element,
                                         rewriter.getZeroAttr(element));
  int64_t elements = op.getDstElements().getZExtValue();
  for (int64_t i = 0; i < elements; ++i) {
    SmallVector<Value> from(op.getSrcIndices()), to(op.getDstIndices());
    from.back() = e.add(from.back(), i);
    to.back() = e.add(to.back(), i);
    Value value;
    if (Value count = op.getSrcElements()) {
      auto inRange = scf::IfOp::create(
          rewriter, loc, e.cmp(arith::CmpIPredicate::slt, e.index(i), count),
          [&](OpBuilder &b, Location l) {
            scf::YieldOp::create(
                b, l,
                ValueRange{memref::LoadOp::create(b, l, op.getSrc(), from)});
          },
          [&](OpBuilder &b, Location l) {
            scf::YieldOp::create(b, l, ValueRange{zero});
          });
      value = inRange.getResult(0);
    } else {
      value = memref::LoadOp::create(rewriter, loc, op.getSrc(), from);
    }
    memref::StoreOp::create(rewriter, loc, value, op.getDst(), to);
  }
  rewriter.replaceOp(op, token);
}

//===----------------------------------------------------------------------===//
// Vectors as scalars
//===----------------------------------------------------------------------===//

namespace {

/// A vector<N x T> as N values of T, in row-major order.
struct ScalarTypeConverter : TypeConverter {
  ScalarTypeConverter() {
    addConversion([](Type type) { return type; });
    addConversion([](VectorType type, SmallVectorImpl<Type> &results) {
      results.append(type.getNumElements(), type.getElementType());
      return success();
    });
  }
};

/// An elementwise op (arith, math) per element; a scalar operand (the
/// condition of a select) is used for each.
struct ScalarizeElementwise final : ConversionPattern {
  ScalarizeElementwise(const TypeConverter &converter, MLIRContext *ctx)
      : ConversionPattern(converter, MatchAnyOpTypeTag(), 1, ctx) {}

  LogicalResult
  matchAndRewrite(Operation *op, ArrayRef<ValueRange> operands,
                  ConversionPatternRewriter &rewriter) const override {
    if (!OpTrait::hasElementwiseMappableTraits(op) || op->getNumResults() != 1)
      return failure();
    auto type = dyn_cast<VectorType>(op->getResult(0).getType());
    if (!type)
      return failure();
    SmallVector<Value> scalars;
    for (int64_t i = 0; i < type.getNumElements(); ++i) {
      SmallVector<Value> inputs;
      for (ValueRange operand : operands)
        inputs.push_back(operand.size() == 1 ? operand[0] : operand[i]);
      OperationState state(op->getLoc(), op->getName(), inputs,
                           TypeRange{type.getElementType()}, op->getAttrs());
      scalars.push_back(rewriter.create(state)->getResult(0));
    }
    rewriter.replaceOpWithMultiple(op, {scalars});
    return success();
  }
};

struct ScalarizeConstant final : OpConversionPattern<arith::ConstantOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(arith::ConstantOp op, OneToNOpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto values = dyn_cast<DenseElementsAttr>(op.getValue());
    if (!values || !isa<VectorType>(op.getType()))
      return failure();
    SmallVector<Value> scalars;
    for (Attribute value : values.getValues<Attribute>())
      scalars.push_back(arith::ConstantOp::create(rewriter, op.getLoc(),
                                                  cast<TypedAttr>(value)));
    rewriter.replaceOpWithMultiple(op, {scalars});
    return success();
  }
};

/// The offset of the elements at static `position` of `type`.
static int64_t offsetOf(VectorType type, ArrayRef<int64_t> position) {
  SmallVector<int64_t> strides = computeStrides(type.getShape());
  int64_t offset = 0;
  for (auto [index, stride] : llvm::zip(position, strides))
    offset += index * stride;
  return offset;
}

/// The one value of each converted scalar operand (indices, elements).
static SmallVector<Value> singlesOf(ArrayRef<ValueRange> operands) {
  return llvm::map_to_vector(operands,
                             [](ValueRange range) { return range.front(); });
}

static int64_t elementsOf(Type type) {
  auto vector = dyn_cast<VectorType>(type);
  return vector ? vector.getNumElements() : 1;
}

struct ScalarizeExtract final : OpConversionPattern<vector::ExtractOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(vector::ExtractOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (op.hasDynamicPosition())
      return failure();
    int64_t offset = offsetOf(op.getSourceVectorType(), op.getStaticPosition());
    rewriter.replaceOpWithMultiple(
        op, {adaptor.getSource().slice(offset, elementsOf(op.getType()))});
    return success();
  }
};

struct ScalarizeInsert final : OpConversionPattern<vector::InsertOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(vector::InsertOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (op.hasDynamicPosition())
      return failure();
    int64_t offset = offsetOf(op.getDestVectorType(), op.getStaticPosition());
    SmallVector<Value> scalars(adaptor.getDest());
    llvm::copy(adaptor.getValueToStore(), scalars.begin() + offset);
    rewriter.replaceOpWithMultiple(op, {scalars});
    return success();
  }
};

struct ScalarizeBroadcast final : OpConversionPattern<vector::BroadcastOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(vector::BroadcastOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    VectorType result = op.getResultVectorType();
    ArrayRef<int64_t> to = result.getShape();
    auto sourceType = dyn_cast<VectorType>(op.getSourceType());
    ArrayRef<int64_t> from =
        sourceType ? sourceType.getShape() : ArrayRef<int64_t>();
    SmallVector<int64_t> fromStrides = computeStrides(from);
    SmallVector<Value> scalars;
    for (int64_t i = 0; i < result.getNumElements(); ++i) {
      // The source's dims are the result's trailing ones, of size 1 or
      // the same.
      SmallVector<int64_t> at = delinearize(i, computeStrides(to));
      int64_t offset = 0;
      for (size_t d = 0; d < from.size(); ++d)
        if (from[d] != 1)
          offset += at[to.size() - from.size() + d] * fromStrides[d];
      scalars.push_back(adaptor.getSource()[offset]);
    }
    rewriter.replaceOpWithMultiple(op, {scalars});
    return success();
  }
};

struct ScalarizeFromElements final
    : OpConversionPattern<vector::FromElementsOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(vector::FromElementsOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOpWithMultiple(op, {singlesOf(adaptor.getElements())});
    return success();
  }
};

struct ScalarizeToElements final : OpConversionPattern<vector::ToElementsOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(vector::ToElementsOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    SmallVector<SmallVector<Value>> results;
    for (Value scalar : adaptor.getSource())
      results.push_back({scalar});
    rewriter.replaceOpWithMultiple(op, std::move(results));
    return success();
  }
};

struct ScalarizeShapeCast final : OpConversionPattern<vector::ShapeCastOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(vector::ShapeCastOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOpWithMultiple(op, {adaptor.getSource()});
    return success();
  }
};

/// The consecutive indices of a 1-D vector access at `indices`.
static SmallVector<Value> elementIndices(OpBuilder &b, Location loc,
                                         ValueRange indices, int64_t i) {
  SmallVector<Value> at(indices);
  at.back() = arith::AddIOp::create(b, loc, at.back(),
                                    arith::ConstantIndexOp::create(b, loc, i));
  return at;
}

struct ScalarizeLoad final : OpConversionPattern<vector::LoadOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(vector::LoadOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (op.getVectorType().getRank() != 1)
      return failure();
    SmallVector<Value> scalars, indices = singlesOf(adaptor.getIndices());
    for (int64_t i = 0; i < op.getVectorType().getNumElements(); ++i)
      scalars.push_back(memref::LoadOp::create(
          rewriter, op.getLoc(), adaptor.getBase().front(),
          elementIndices(rewriter, op.getLoc(), indices, i)));
    rewriter.replaceOpWithMultiple(op, {scalars});
    return success();
  }
};

struct ScalarizeStore final : OpConversionPattern<vector::StoreOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(vector::StoreOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (op.getVectorType().getRank() != 1)
      return failure();
    SmallVector<Value> indices = singlesOf(adaptor.getIndices());
    for (auto [i, scalar] : llvm::enumerate(adaptor.getValueToStore()))
      memref::StoreOp::create(rewriter, op.getLoc(), scalar,
                              adaptor.getBase().front(),
                              elementIndices(rewriter, op.getLoc(), indices,
                                             static_cast<int64_t>(i)));
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

LogicalResult mlir::mha::detail::scalarizeVectors(gpu::LaunchOp launch) {
  MLIRContext *ctx = launch.getContext();
  // The vector constants the kernel uses from the host code, moved into it.
  if (failed(sinkOperationsIntoLaunchOp(launch, [](Operation *op) {
        return isMemoryEffectFree(op) && op->getNumRegions() == 0 &&
               llvm::any_of(op->getResultTypes(), llvm::IsaPred<VectorType>);
      })))
    return failure();
  ScalarTypeConverter converter;
  ConversionTarget target(*ctx);
  target.markUnknownOpDynamicallyLegal(
      [&](Operation *op) { return converter.isLegal(op); });
  RewritePatternSet patterns(ctx);
  patterns.add<ScalarizeElementwise>(converter, ctx);
  patterns.add<ScalarizeConstant, ScalarizeExtract, ScalarizeInsert,
               ScalarizeBroadcast, ScalarizeFromElements, ScalarizeToElements,
               ScalarizeShapeCast, ScalarizeLoad, ScalarizeStore>(converter,
                                                                  ctx);
  scf::populateSCFStructuralTypeConversionsAndLegality(converter, patterns,
                                                       target);
  SmallVector<Operation *> ops;
  for (Operation &op : launch.getBody().front())
    ops.push_back(&op);
  return applyPartialConversion(ops, target, std::move(patterns));
}

static LogicalResult emulateLaunch(RewriterBase &rewriter,
                                   gpu::LaunchOp launch) {
  FailureOr<bool> matrices = emulateCoopMatrixOps(rewriter, launch);
  if (failed(matrices))
    return failure();
  SmallVector<Operation *> ops;
  WalkResult bf16 = launch.getBody().walk([&](Operation *op) {
    // The bf16 kernels' mma (the same fragments as f16's, which the
    // emulation checks): no Vulkan device here computes in bf16.
    if (isa<NVVM::MmaOp>(op)) {
      op->emitOpError() << "cannot be emulated: bf16 tensor-core kernels "
                           "have no Vulkan form (their fragments are f16's: "
                           "check those)";
      return WalkResult::interrupt();
    }
    if (isa<nvgpu::NVGPUDialect>(op->getDialect()))
      ops.push_back(op);
    return WalkResult::advance();
  });
  if (bf16.wasInterrupted())
    return failure();
  if (ops.empty()) {
    if (*matrices && failed(scalarizeVectors(launch)))
      return launch.emitOpError()
             << "cannot have its subgroup matrix ops emulated: a vector op "
                "of the kernel has no scalar form here";
    return success();
  }
  std::optional<int64_t> threads = getConstantIntValue(launch.getBlockSizeX());
  if (!threads || *threads % 32 ||
      getConstantIntValue(launch.getBlockSizeY()) != 1 ||
      getConstantIntValue(launch.getBlockSizeZ()) != 1)
    return launch.emitOpError()
           << "cannot have its tensor-core ops emulated: it needs a "
              "constant number of threads in x that is a multiple of 32 "
              "(whole warps), and one in y and z";

  MLIRContext *ctx = rewriter.getContext();
  Exchange x(launch, *threads / 32);
  Location loc = launch.getLoc();
  rewriter.setInsertionPointToStart(&launch.getBody().front());
  Emitter e{rewriter, loc};
  Value thread =
      gpu::ThreadIdOp::create(rewriter, loc, gpu::Dimension::x).getResult();
  x.warp = e.div(thread, 32);
  x.lane = e.rem(thread, 32);
  x.g = e.div(x.lane, 4);
  x.t = e.rem(x.lane, 4);
  x.t2 = e.mul(x.t, 2);
  // Every cp.async group token: one value, so that the loops carrying them
  // yield what they were given (and canonicalization drops them).
  Value token = ub::PoisonOp::create(rewriter, loc,
                                     nvgpu::DeviceAsyncTokenType::get(ctx));

  // The copies, groups and waits; the exchanges checked and their blocks
  // collected.
  SetVector<Block *> blocks;
  std::optional<bool> tf32;
  for (Operation *op : ops) {
    if (auto mma = dyn_cast<nvgpu::MmaSyncOp>(op)) {
      if (failed(checkMma(mma)) || failed(checkUniform(op, launch)))
        return failure();
      if (tf32 && *tf32 != isTF32(mma))
        return op->emitOpError() << "cannot be emulated: a kernel with both "
                                    "f16 and TF32 mma";
      tf32 = isTF32(mma);
      blocks.insert(op->getBlock());
    } else if (auto load = dyn_cast<nvgpu::LdMatrixOp>(op)) {
      if (failed(checkLdMatrix(load)) || failed(checkUniform(op, launch)))
        return failure();
      blocks.insert(op->getBlock());
    } else if (auto copy = dyn_cast<nvgpu::DeviceAsyncCopyOp>(op)) {
      emulateCopy(rewriter, copy, token);
    } else if (isa<nvgpu::DeviceAsyncCreateGroupOp>(op)) {
      rewriter.replaceOp(op, token);
    } else if (isa<nvgpu::DeviceAsyncWaitOp>(op)) {
      rewriter.eraseOp(op);
    } else {
      return op->emitOpError() << "cannot be emulated";
    }
  }

  // The exchanges, scheduled in phases, then the buffers their slots need,
  // then each segment in phase order.
  SmallVector<
      std::pair<SmallVector<Operation *>, DenseMap<Operation *, int64_t>>>
      scheduled;
  for (Block *block : blocks)
    for (SmallVector<Operation *> &segment : segmentsOf(*block)) {
      DenseMap<Operation *, int64_t> phases;
      schedule(x, segment, phases);
      scheduled.emplace_back(std::move(segment), std::move(phases));
    }
  x.tf32 = tf32.value_or(false);
  Type element = x.tf32 ? rewriter.getF32Type() : rewriter.getF16Type();
  if (x.aSlots) {
    x.a = x.buffer({2, x.aSlots, x.warps, 16, 16}, element);
    x.bt = x.buffer({2, x.bSlots, x.warps, 8, 16}, element);
  }
  if (x.addressSlots)
    x.addresses = x.buffer({2, x.addressSlots, x.warps, 32, x.rank},
                           rewriter.getI32Type());
  for (auto &[segment, phases] : scheduled)
    emitSegment(rewriter, x, segment, phases);

  RewritePatternSet patterns(ctx);
  scf::ForOp::getCanonicalizationPatterns(patterns, ctx);
  (void)applyPatternsGreedily(launch.getBody(), std::move(patterns));
  WalkResult left = launch.getBody().walk([&](Operation *op) {
    for (Value v : op->getResults())
      if (isa<nvgpu::DeviceAsyncTokenType>(v.getType()) &&
          !isa<ub::PoisonOp>(op))
        return WalkResult::interrupt();
    return WalkResult::advance();
  });
  if (left.wasInterrupted())
    return launch.emitOpError()
           << "cannot have its tensor-core ops emulated: a cp.async token "
              "is still carried through its control flow";
  if (failed(scalarizeVectors(launch)))
    return launch.emitOpError()
           << "cannot have its tensor-core ops emulated: a vector op of the "
              "kernel has no scalar form here";
  return success();
}

LogicalResult mha::emulateTensorCoreOps(RewriterBase &rewriter,
                                        Operation *root) {
  SmallVector<gpu::LaunchOp> launches;
  root->walk([&](gpu::LaunchOp launch) { launches.push_back(launch); });
  for (gpu::LaunchOp launch : launches)
    if (failed(emulateLaunch(rewriter, launch)))
      return failure();
  return success();
}

namespace {

struct MHAEmulateTensorCoresPass final
    : mha::impl::MHAEmulateTensorCoresPassBase<MHAEmulateTensorCoresPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    if (failed(mha::emulateTensorCoreOps(rewriter, getOperation())))
      signalPassFailure();
  }
};

} // namespace
