//===- EmulateCoopMatrix.cpp - Subgroup matrix ops without them -----------===//
//
// The GPU dialect's subgroup matrix ops (gpu.subgroup_mma_*: cooperative
// matrices on Vulkan) as loads, stores, arithmetic and barriers, for
// mha-emulate-tensor-cores: the cooperative-matrix attention kernel then
// runs, and is checked against numpy, on lavapipe, which has no cooperative
// matrices.
//
// A matrix's distribution over the lanes of its subgroup is the device's
// own, which the kernel must not depend on; here a 16 x 16 matrix is a
// vector of 8 elements per lane, a 2 x 4 block of it. Loads, stores, constants
// and elementwise ops act on those elements; a product is an exchange: each
// lane writes its elements of A and B into its subgroup's part of two
// workgroup buffers, a barrier, each lane computes its elements of C from
// them, a barrier. The subgroups are the launch's consecutive runs of 32
// invocations, whatever the device's subgroup size (gpu.subgroup_id and
// gpu.lane_id become thread / 32 and thread % 32).
//
//===----------------------------------------------------------------------===//

#include "Emulation.h"
#include "MMAFragments.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Patterns.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::mha::detail;

namespace {

/// The emulated matrices: 16 x 16, over 32 lanes, in blocks of 2 x 4.
constexpr int64_t kLanes = 32, kSize = 16, kBlockRows = 2, kBlockCols = 4;

/// The lane's elements of a matrix of `type`.
int64_t laneElements(gpu::MMAMatrixType type) {
  return type.getShape()[0] * type.getShape()[1] / kLanes;
}

/// A launch's subgroups and the exchange buffers of its products.
struct Subgroups {
  /// thread / 32 and thread % 32.
  Value subgroup, lane;
  /// [subgroups, M, K] and [subgroups, K, N] of the products' operand type.
  Value a, b;
};

/// A matrix as the lane's elements.
struct MatrixTypeConverter : TypeConverter {
  MatrixTypeConverter() {
    addConversion([](Type type) { return type; });
    addConversion([](gpu::MMAMatrixType type) -> Type {
      return VectorType::get({laneElements(type)}, type.getElementType());
    });
  }
};

template <typename Op> struct MatrixPattern : OpConversionPattern<Op> {
  MatrixPattern(const TypeConverter &converter, MLIRContext *ctx,
                const Subgroups &s)
      : OpConversionPattern<Op>(converter, ctx), s(s) {}
  const Subgroups &s;

  /// The row and column of the lane's element `element`: lane l holds the
  /// 2 x 4 block at rows 2 (l / 4) + {0, 1}, columns 4 (l % 4) + {0..3}, in
  /// row-major order (a product then reads 2 rows of A and 4 columns of B
  /// per lane).
  std::pair<Value, Value> coordinates(Emitter &e, int64_t element) const {
    return {e.add(e.mul(e.div(s.lane, kBlockCols), kBlockRows),
                  element / kBlockCols),
            e.add(e.mul(e.rem(s.lane, kBlockCols), kBlockCols),
                  element % kBlockCols)};
  }
};

/// Why the matrix access of `op` at `memref` cannot be emulated: a 2-D
/// memref of identity layout whose rows are `leadDimension` apart.
static LogicalResult checkAccess(Operation *op, Value memref,
                                 int64_t leadDimension) {
  auto type = cast<MemRefType>(memref.getType());
  if (type.getRank() == 2 && type.getLayout().isIdentity() &&
      type.getDimSize(1) == leadDimension)
    return success();
  return op->emitOpError() << "cannot be emulated: only accesses to 2-D "
                              "memrefs of identity layout whose rows are "
                              "leadDimension elements apart are";
}

/// Element (`r`, `c`) of the matrix at (`row`, `col`): row-major, or
/// column-major with `transpose`.
static SmallVector<Value> elementIndices(Emitter &e, ValueRange at, Value r,
                                         Value c, bool transpose) {
  if (transpose)
    std::swap(r, c);
  return {e.add(at[0], r), e.add(at[1], c)};
}

struct EmulateLoad final : MatrixPattern<gpu::SubgroupMmaLoadMatrixOp> {
  using MatrixPattern::MatrixPattern;

  LogicalResult
  matchAndRewrite(gpu::SubgroupMmaLoadMatrixOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = cast<gpu::MMAMatrixType>(op.getType());
    Emitter e{rewriter, op.getLoc()};
    SmallVector<Value> elements;
    for (int64_t i = 0; i < laneElements(type); ++i) {
      auto [r, c] = coordinates(e, i);
      elements.push_back(memref::LoadOp::create(
          rewriter, op.getLoc(), adaptor.getSrcMemref(),
          elementIndices(e, adaptor.getIndices(), r, c,
                         op.getTranspose().has_value())));
    }
    rewriter.replaceOpWithNewOp<vector::FromElementsOp>(
        op, getTypeConverter()->convertType(type), elements);
    return success();
  }
};

struct EmulateStore final : MatrixPattern<gpu::SubgroupMmaStoreMatrixOp> {
  using MatrixPattern::MatrixPattern;

  LogicalResult
  matchAndRewrite(gpu::SubgroupMmaStoreMatrixOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = cast<gpu::MMAMatrixType>(op.getSrc().getType());
    Emitter e{rewriter, op.getLoc()};
    for (int64_t i = 0; i < laneElements(type); ++i) {
      auto [r, c] = coordinates(e, i);
      memref::StoreOp::create(rewriter, op.getLoc(),
                              e.extract(adaptor.getSrc(), {i}),
                              adaptor.getDstMemref(),
                              elementIndices(e, adaptor.getIndices(), r, c,
                                             op.getTranspose().has_value()));
    }
    rewriter.eraseOp(op);
    return success();
  }
};

struct EmulateConstant final : MatrixPattern<gpu::SubgroupMmaConstantMatrixOp> {
  using MatrixPattern::MatrixPattern;

  LogicalResult
  matchAndRewrite(gpu::SubgroupMmaConstantMatrixOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<vector::BroadcastOp>(
        op, getTypeConverter()->convertType(op.getType()), adaptor.getValue());
    return success();
  }
};

struct EmulateElementwise final : MatrixPattern<gpu::SubgroupMmaElementwiseOp> {
  using MatrixPattern::MatrixPattern;

  LogicalResult
  matchAndRewrite(gpu::SubgroupMmaElementwiseOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Type type = getTypeConverter()->convertType(op.getType());
    ValueRange args = adaptor.getArgs();
    Location loc = op.getLoc();
    Value result;
    switch (op.getOpType()) {
    case gpu::MMAElementwiseOp::ADDF:
      result = arith::AddFOp::create(rewriter, loc, args[0], args[1]);
      break;
    case gpu::MMAElementwiseOp::SUBF:
      result = arith::SubFOp::create(rewriter, loc, args[0], args[1]);
      break;
    case gpu::MMAElementwiseOp::MULF:
      result = arith::MulFOp::create(rewriter, loc, args[0], args[1]);
      break;
    case gpu::MMAElementwiseOp::DIVF:
      result = arith::DivFOp::create(rewriter, loc, args[0], args[1]);
      break;
    case gpu::MMAElementwiseOp::MAXF:
      result = arith::MaximumFOp::create(rewriter, loc, args[0], args[1]);
      break;
    case gpu::MMAElementwiseOp::MINF:
      result = arith::MinimumFOp::create(rewriter, loc, args[0], args[1]);
      break;
    case gpu::MMAElementwiseOp::NEGATEF:
      result = arith::NegFOp::create(rewriter, loc, args[0]);
      break;
    case gpu::MMAElementwiseOp::EXTF:
      result = arith::ExtFOp::create(rewriter, loc, type, args[0]);
      break;
    default:
      return op->emitOpError() << "cannot be emulated: "
                               << stringifyMMAElementwiseOp(op.getOpType())
                               << " is not one of addf, subf, mulf, divf, "
                                  "maxf, minf, negatef, extf";
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct EmulateCompute final : MatrixPattern<gpu::SubgroupMmaComputeOp> {
  using MatrixPattern::MatrixPattern;

  LogicalResult
  matchAndRewrite(gpu::SubgroupMmaComputeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto aType = cast<gpu::MMAMatrixType>(op.getOpA().getType());
    auto bType = cast<gpu::MMAMatrixType>(op.getOpB().getType());
    auto cType = cast<gpu::MMAMatrixType>(op.getOpC().getType());
    Location loc = op.getLoc();
    Emitter e{rewriter, loc};
    int64_t k = aType.getShape()[1];
    // Each lane's elements of A and B into the subgroup's buffers.
    for (auto [matrix, type, buffer] :
         {std::tuple(adaptor.getOpA(), aType, s.a),
          std::tuple(adaptor.getOpB(), bType, s.b)})
      for (int64_t i = 0; i < laneElements(type); ++i) {
        auto [r, c] = coordinates(e, i);
        memref::StoreOp::create(rewriter, loc, e.extract(matrix, {i}), buffer,
                                ValueRange{s.subgroup, r, c});
      }
    gpu::BarrierOp::create(rewriter, loc);
    // The lane's elements of C: C + sum_k A[r, k] B[k, c], in C's type,
    // from its 2 rows of A and 4 columns of B.
    Type accType = cType.getElementType();
    auto widen = [&](Value x) {
      return x.getType() == accType
                 ? x
                 : arith::ExtFOp::create(rewriter, loc, accType, x).getResult();
    };
    Value firstRow = e.mul(e.div(s.lane, kBlockCols), kBlockRows);
    Value firstCol = e.mul(e.rem(s.lane, kBlockCols), kBlockCols);
    SmallVector<SmallVector<Value>> aRows(kBlockRows), bCols(kBlockCols);
    for (int64_t j = 0; j < k; ++j) {
      for (int64_t r = 0; r < kBlockRows; ++r)
        aRows[r].push_back(widen(memref::LoadOp::create(
            rewriter, loc, s.a,
            ValueRange{s.subgroup, e.add(firstRow, r), e.index(j)})));
      for (int64_t c = 0; c < kBlockCols; ++c)
        bCols[c].push_back(widen(memref::LoadOp::create(
            rewriter, loc, s.b,
            ValueRange{s.subgroup, e.index(j), e.add(firstCol, c)})));
    }
    SmallVector<Value> results;
    for (int64_t i = 0; i < laneElements(cType); ++i) {
      Value acc = e.extract(adaptor.getOpC(), {i});
      for (int64_t j = 0; j < k; ++j)
        acc = e.fma(aRows[i / kBlockCols][j], bCols[i % kBlockCols][j], acc);
      results.push_back(acc);
    }
    // Every lane done reading before the next product writes.
    gpu::BarrierOp::create(rewriter, loc);
    rewriter.replaceOpWithNewOp<vector::FromElementsOp>(
        op, getTypeConverter()->convertType(cType), results);
    return success();
  }
};

} // namespace

FailureOr<bool> mlir::mha::detail::emulateCoopMatrixOps(RewriterBase &rewriter,
                                                        gpu::LaunchOp launch) {
  SmallVector<Operation *> matrixOps;
  SmallVector<gpu::SubgroupMmaComputeOp> products;
  launch.getBody().walk([&](Operation *op) {
    if (isa<gpu::SubgroupMmaLoadMatrixOp, gpu::SubgroupMmaStoreMatrixOp,
            gpu::SubgroupMmaComputeOp, gpu::SubgroupMmaConstantMatrixOp,
            gpu::SubgroupMmaElementwiseOp>(op))
      matrixOps.push_back(op);
    if (auto product = dyn_cast<gpu::SubgroupMmaComputeOp>(op))
      products.push_back(product);
  });
  if (matrixOps.empty())
    return false;
  std::optional<int64_t> threads = getConstantIntValue(launch.getBlockSizeX());
  if (!threads || *threads % kLanes ||
      getConstantIntValue(launch.getBlockSizeY()) != 1 ||
      getConstantIntValue(launch.getBlockSizeZ()) != 1)
    return launch.emitOpError()
           << "cannot have its subgroup matrix ops emulated: it needs a "
              "constant number of threads in x that is a multiple of 32 "
              "(whole subgroups), and one in y and z";
  for (Operation *op : matrixOps) {
    gpu::MMAMatrixType type;
    if (auto load = dyn_cast<gpu::SubgroupMmaLoadMatrixOp>(op)) {
      type = cast<gpu::MMAMatrixType>(load.getType());
      if (failed(checkAccess(op, load.getSrcMemref(),
                             load.getLeadDimension().getSExtValue())))
        return failure();
    } else if (auto store = dyn_cast<gpu::SubgroupMmaStoreMatrixOp>(op)) {
      type = cast<gpu::MMAMatrixType>(store.getSrc().getType());
      if (failed(checkAccess(op, store.getDstMemref(),
                             store.getLeadDimension().getSExtValue())))
        return failure();
    } else {
      type = cast<gpu::MMAMatrixType>(op->getResult(0).getType());
    }
    if (type.getShape() != ArrayRef<int64_t>{kSize, kSize})
      return op->emitOpError()
             << "cannot be emulated: only 16 x 16 matrices are";
  }
  for (gpu::SubgroupMmaComputeOp product : products) {
    if (failed(checkUniform(product, launch)))
      return failure();
    if (product.getOpA().getType() != products[0].getOpA().getType() ||
        product.getOpB().getType() != products[0].getOpB().getType())
      return product->emitOpError()
             << "cannot be emulated: a kernel's products must all have the "
                "operand types of its first";
  }

  MLIRContext *ctx = rewriter.getContext();
  Location loc = launch.getLoc();
  rewriter.setInsertionPointToStart(&launch.getBody().front());
  Emitter e{rewriter, loc};
  Subgroups s;
  Value thread =
      gpu::ThreadIdOp::create(rewriter, loc, gpu::Dimension::x).getResult();
  s.subgroup = e.div(thread, kLanes);
  s.lane = e.rem(thread, kLanes);
  SmallVector<Operation *> ids;
  launch.getBody().walk([&](Operation *op) {
    if (isa<gpu::SubgroupIdOp, gpu::LaneIdOp>(op))
      ids.push_back(op);
  });
  for (Operation *op : ids)
    rewriter.replaceOp(op, isa<gpu::SubgroupIdOp>(op) ? s.subgroup : s.lane);
  if (!products.empty()) {
    auto space = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
    auto buffer = [&](gpu::MMAMatrixType type) {
      return launch.addWorkgroupAttribution(
          MemRefType::get(
              {*threads / kLanes, type.getShape()[0], type.getShape()[1]},
              type.getElementType(), MemRefLayoutAttrInterface(), space),
          loc);
    };
    s.a = buffer(cast<gpu::MMAMatrixType>(products[0].getOpA().getType()));
    s.b = buffer(cast<gpu::MMAMatrixType>(products[0].getOpB().getType()));
  }

  MatrixTypeConverter converter;
  ConversionTarget target(*ctx);
  target.markUnknownOpDynamicallyLegal(
      [&](Operation *op) { return converter.isLegal(op); });
  target
      .addIllegalOp<gpu::SubgroupMmaLoadMatrixOp, gpu::SubgroupMmaStoreMatrixOp,
                    gpu::SubgroupMmaComputeOp, gpu::SubgroupMmaConstantMatrixOp,
                    gpu::SubgroupMmaElementwiseOp>();
  RewritePatternSet patterns(ctx);
  patterns.add<EmulateLoad, EmulateStore, EmulateConstant, EmulateElementwise,
               EmulateCompute>(converter, ctx, s);
  scf::populateSCFStructuralTypeConversionsAndLegality(converter, patterns,
                                                       target);
  SmallVector<Operation *> ops;
  for (Operation &op : launch.getBody().front())
    ops.push_back(&op);
  if (failed(applyPartialConversion(ops, target, std::move(patterns))))
    return launch.emitOpError()
           << "cannot have its subgroup matrix ops emulated";
  return true;
}
