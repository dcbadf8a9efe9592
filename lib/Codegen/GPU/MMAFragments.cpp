//===- MMAFragments.cpp - Building tensor-core kernels as IR --------------===//

#include "MMAFragments.h"

#include "mha/Dialect/MHA/IR/MHADialect.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::mha::detail;

SmallVector<Value> mlir::mha::detail::loadMatrices(Emitter &e, Value tile,
                                                   ValueRange leading,
                                                   Value row, Value col,
                                                   bool transpose,
                                                   int64_t numTiles) {
  Type element = cast<MemRefType>(tile.getType()).getElementType();
  SmallVector<Value> indices(leading);
  indices.append({row, col});
  Value loaded = nvgpu::LdMatrixOp::create(
      e.b, e.loc, VectorType::get({numTiles, 2}, element), tile, indices,
      transpose, numTiles);
  SmallVector<Value> frags;
  for (int64_t i = 0; i < numTiles; i += 2) {
    Value frag = e.zeros(VectorType::get({2, 2}, element));
    for (int64_t j = 0; j < 2; ++j)
      frag = e.insert(e.extract(loaded, {i + j}), frag, {j});
    frags.push_back(frag);
  }
  return frags;
}

Value mlir::mha::detail::loadMatricesAsA(Emitter &e, Value tile,
                                         ValueRange leading, Value row,
                                         Value col) {
  Type element = cast<MemRefType>(tile.getType()).getElementType();
  SmallVector<Value> indices(leading);
  indices.append({row, col});
  return nvgpu::LdMatrixOp::create(e.b, e.loc,
                                   VectorType::get({4, 2}, element), tile,
                                   indices, /*transpose=*/false, 4);
}

Value mlir::mha::detail::readBuffer(Emitter &e, Value tensor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  return bufferization::ToBufferOp::create(
      e.b, e.loc, MemRefType::get(type.getShape(), type.getElementType()),
      tensor, /*read_only=*/true);
}

Value mlir::mha::detail::buildThreadLoop(OpBuilder &rewriter, Location loc,
                                         int64_t threads) {
  MLIRContext *ctx = rewriter.getContext();
  auto threadsLoop = scf::ForallOp::create(
      rewriter, loc, ArrayRef<OpFoldResult>{rewriter.getIndexAttr(threads)},
      ValueRange(),
      rewriter.getArrayAttr(
          gpu::GPUThreadMappingAttr::get(ctx, gpu::MappingId::DimX)));
  threadsLoop->setAttr(kLoweringConfigAttrName,
                       LoweringConfigAttr::get(ctx, {}, {}, {}, {}, {}, threads,
                                               {}, {}, {}, {}, {}));
  rewriter.setInsertionPointToStart(threadsLoop.getBody());
  return threadsLoop.getInductionVar(0);
}

void mlir::mha::detail::waitForCopies(Emitter &e, Value group,
                                      int64_t pending) {
  nvgpu::DeviceAsyncWaitOp::create(e.b, e.loc, group,
                                   e.b.getI32IntegerAttr(pending));
}

Value mlir::mha::detail::mmaSync(Emitter &e, Value a, Value b, Value c) {
  Type element = cast<VectorType>(a.getType()).getElementType();
  if (element.isF16())
    return nvgpu::MmaSyncOp::create(e.b, e.loc, a, b, c,
                                    ArrayRef<int64_t>{16, 8, 16})
        .getResult();
  if (element.isF32())
    return nvgpu::MmaSyncOp::create(e.b, e.loc, a, b, c,
                                    ArrayRef<int64_t>{16, 8, 8},
                                    /*tf32Enabled=*/true)
        .getResult();
  // bf16: the NVVM op on the operands as the registers PTX takes (two
  // elements per i32) and the accumulator as 4 f32.
  auto registers = [&](Value v) {
    SmallVector<Value> regs;
    auto i32x1 = VectorType::get({1}, e.b.getI32Type());
    for (int64_t i = 0; i < cast<VectorType>(v.getType()).getDimSize(0); ++i)
      regs.push_back(e.extract(
          vector::BitCastOp::create(e.b, e.loc, i32x1, e.extract(v, {i})),
          {0}));
    return regs;
  };
  SmallVector<Value> accumulator;
  for (int64_t i = 0; i < 4; ++i)
    accumulator.push_back(e.extract(c, {i / 2, i % 2}));
  Type f32 = e.b.getF32Type();
  auto resultType =
      LLVM::LLVMStructType::getLiteral(e.b.getContext(), {f32, f32, f32, f32});
  Value d = NVVM::MmaOp::create(
      e.b, e.loc, resultType, registers(a), registers(b), accumulator,
      ArrayRef<int64_t>{16, 8, 16}, std::nullopt, std::nullopt,
      std::array<NVVM::MMATypes, 2>{NVVM::MMATypes::bf16,
                                    NVVM::MMATypes::bf16},
      std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                     NVVM::MMALayout::col});
  Value result = e.zeros(cast<VectorType>(c.getType()));
  for (int64_t i = 0; i < 4; ++i)
    result = e.insert(LLVM::ExtractValueOp::create(e.b, e.loc, d, i), result,
                      {i / 2, i % 2});
  return result;
}

