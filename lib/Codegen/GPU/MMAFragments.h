//===- MMAFragments.h - Building tensor-core kernels as IR ------*- C++ -*-===//
//
// What the kernels built as IR (mha-attention-to-mma, -to-simt,
// mha-contraction-to-mma) share: index and fragment arithmetic at an
// insertion point, their thread loop, ldmatrix
// loads of B operands, the m16n8k16 mma.sync for f16 and bf16, and waits
// for cp.async groups. Internal to lib/Codegen/GPU.
//
//===----------------------------------------------------------------------===//

#ifndef MHA_LIB_CODEGEN_GPU_MMAFRAGMENTS_H
#define MHA_LIB_CODEGEN_GPU_MMAFRAGMENTS_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::mha::detail {

/// Scalar and fragment arithmetic at one insertion point.
struct Emitter {
  OpBuilder &b;
  Location loc;

  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value f32(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value add(Value x, int64_t y) { return y ? add(x, index(y)) : x; }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value mul(Value x, int64_t y) {
    return arith::MulIOp::create(b, loc, x, index(y));
  }
  Value div(Value x, int64_t y) {
    return arith::DivUIOp::create(b, loc, x, index(y));
  }
  Value rem(Value x, int64_t y) {
    return arith::RemUIOp::create(b, loc, x, index(y));
  }
  Value min(Value x, Value y) { return arith::MinSIOp::create(b, loc, x, y); }
  Value max(Value x, Value y) { return arith::MaxSIOp::create(b, loc, x, y); }
  Value cmp(arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, p, x, y);
  }
  Value fadd(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value fsub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value fmul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value fmax(Value x, Value y) {
    return arith::MaximumFOp::create(b, loc, x, y);
  }
  Value select(Value c, Value x, Value y) {
    return arith::SelectOp::create(b, loc, c, x, y);
  }
  Value exp2(Value x) { return math::Exp2Op::create(b, loc, x); }
  Value extract(Value v, ArrayRef<int64_t> pos) {
    return vector::ExtractOp::create(b, loc, v, pos);
  }
  Value insert(Value x, Value v, ArrayRef<int64_t> pos) {
    return vector::InsertOp::create(b, loc, x, v, pos);
  }
  Value zeros(VectorType type) {
    return arith::ConstantOp::create(b, loc, type, b.getZeroAttr(type));
  }
  Value fma(Value x, Value y, Value z) {
    return math::FmaOp::create(b, loc, x, y, z);
  }
  /// `x` of the lane whose index differs from this one's by xor `offset`.
  Value shuffleXor(Value x, int64_t offset) {
    Value width = arith::ConstantIntOp::create(b, loc, 32, 32);
    Value o = arith::ConstantIntOp::create(b, loc, offset, 32);
    return gpu::ShuffleOp::create(b, loc, x, o, width, gpu::ShuffleMode::XOR)
        .getShuffleResult();
  }
  /// `x` combined with the values of the other lanes of its aligned group
  /// of `lanes` (a power of two) by xor shuffles: a statistic of a row that
  /// the group's lanes share.
  Value groupReduce(Value x, int64_t lanes,
                    function_ref<Value(Value, Value)> combine) {
    for (int64_t offset = 1; offset < lanes; offset *= 2)
      x = combine(x, shuffleXor(x, offset));
    return x;
  }
  /// groupReduce over a quad (lanes xor 1 and xor 2): the full row
  /// statistic of an mma fragment row.
  Value quadReduce(Value x, function_ref<Value(Value, Value)> combine) {
    return groupReduce(x, 4, combine);
  }
};

/// `numTiles` 8x8 matrices of 16-bit elements from the shared `tile` (its
/// last two dims; `leading` indices before them) by ldmatrix (lane l gives
/// row `row` and column `col` of its matrix l / 8), as B operands: a
/// vector<2x2xT> per two matrices.
SmallVector<Value> loadMatrices(Emitter &e, Value tile, ValueRange leading,
                                Value row, Value col, bool transpose,
                                int64_t numTiles);

/// The same load as one A operand (vector<4x2xT>: x4, matrices rows 0-7 and
/// 8-15 of columns 0-7, then of columns 8-15).
Value loadMatricesAsA(Emitter &e, Value tile, ValueRange leading, Value row,
                      Value col);

/// An scf.forall of `threads` threads (#gpu.thread<x>) at the insertion
/// point, its thread count in its lowering configuration (for
/// mha-map-forall-to-gpu), with the insertion point moved into it. Returns
/// the thread index.
Value buildThreadLoop(OpBuilder &rewriter, Location loc, int64_t threads);

/// Waits until at most `pending` cp.async groups of the thread are still
/// running (`group`: the newest).
void waitForCopies(Emitter &e, Value group, int64_t pending = 0);

/// The buffer of `tensor` read by a kernel: a whole buffer of identity
/// layout (what the CUDA staging copies; bufferization copies a view of
/// another layout into one), read only.
Value readBuffer(Emitter &e, Value tensor);

/// D = A B + C, m16n8k16, f32 accumulation, on the fragments of one warp
/// (A vector<4x2xT>, B vector<2x2xT>, C vector<2x2xf32>, T f16 or bf16);
/// for f32 operands m16n8k8 as TF32 (A vector<4x1xf32>, B vector<2x1xf32>).
Value mmaSync(Emitter &e, Value a, Value b, Value c);

} // namespace mlir::mha::detail

#endif // MHA_LIB_CODEGEN_GPU_MMAFRAGMENTS_H
