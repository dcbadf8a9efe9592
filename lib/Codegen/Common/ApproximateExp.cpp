//===- ApproximateExp.cpp - math.exp and math.tanh as polynomials ---------===//
//
// f32 math.exp -> arithmetic (so it vectorizes; no libm call per element),
// in fewer vector ops than upstream's approximation (which, like this one,
// takes f32 only); f32 math.tanh through upstream's. See the pass
// descriptions.
//
//===----------------------------------------------------------------------===//

#include "mha/Codegen/Common/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::mha {
#define GEN_PASS_DEF_MHAAPPROXIMATEEXPPASS
#define GEN_PASS_DEF_MHAAPPROXIMATETANHPASS
#include "mha/Codegen/Common/Passes.h.inc"
} // namespace mlir::mha

using namespace mlir;

namespace {

/// exp(x) = 2^n · e^r with n = round(x · log2(e)) and r = x - n·ln(2) in
/// [-ln(2)/2, ln(2)/2] (two FMAs, ln(2) split into a part whose products with
/// n are exact and the rest), e^r by a degree-5 polynomial (minimax relative
/// error 1.1e-7 with e^0 = 1 exactly, 1.8e-7 evaluated in f32), 2^n from its
/// exponent bits. The polynomial's coefficients are doubled and the exponent
/// built for 2^(n - 1), so that n = 128 (x just below the overflow threshold)
/// still has exponent bits and the product overflows to inf only where exp
/// does.
///
/// x is first clamped to [-87.5, 88.8] by compare-and-select, which keeps
/// NaN (a NaN operand fails both ordered compares) and compiles to one
/// min/max instruction each: below -87 the exponent bits of 2^(n - 1) are 0,
/// so the result is exactly 0 (-inf included, which masked scores rely on;
/// the true values there are under 2.4e-38); above 88.72, inf. 15 vector ops
/// per vector where upstream's approximation takes 22.
struct ExpFromExponentBits final : OpRewritePattern<math::ExpOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(math::ExpOp op,
                                PatternRewriter &rewriter) const override {
    Type type = op.getType();
    if (!getElementTypeOrSelf(type).isF32())
      return rewriter.notifyMatchFailure(op, "not f32");
    auto vector = dyn_cast<VectorType>(type);
    Type intType = rewriter.getI32Type();
    if (vector)
      intType = vector.clone(intType);
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    auto f32 = [&](float value) -> Value {
      TypedAttr attr = rewriter.getF32FloatAttr(value);
      if (vector)
        attr = SplatElementsAttr::get(vector, attr);
      return arith::ConstantOp::create(b, type, attr);
    };
    auto i32 = [&](int32_t value) -> Value {
      TypedAttr attr = rewriter.getI32IntegerAttr(value);
      if (vector)
        attr = SplatElementsAttr::get(cast<ShapedType>(intType), attr);
      return arith::ConstantOp::create(b, intType, attr);
    };
    auto fma = [&](Value a, Value x, Value c) -> Value {
      return math::FmaOp::create(b, a, x, c);
    };
    auto clamp = [&](Value x, arith::CmpFPredicate outside, float bound) {
      Value limit = f32(bound);
      Value beyond = arith::CmpFOp::create(b, outside, x, limit);
      return arith::SelectOp::create(b, beyond, limit, x).getResult();
    };

    Value x = clamp(op.getOperand(), arith::CmpFPredicate::OLT, -87.5f);
    x = clamp(x, arith::CmpFPredicate::OGT, 88.8f);
    Value n = math::RoundEvenOp::create(
        b, arith::MulFOp::create(b, x, f32(1.44269504088896341f)));
    // ln(2) = 0.693359375 (9 bits: n · it is exact) - 2.12194440e-4.
    Value r = fma(n, f32(-0.693359375f), x);
    r = fma(n, f32(2.12194440e-4f), r);
    // 2 · e^r by Horner: the minimax coefficients (e^0 = 1 exactly: the
    // constant term is 1), doubled.
    const float coefficients[] = {2.0f,
                                  1.9999996423721313f,
                                  0.99998193979263306f,
                                  0.33334562182426453f,
                                  0.083808168768882751f,
                                  0.016627492383122444f};
    Value p = f32(coefficients[5]);
    for (int i = 4; i >= 0; --i)
      p = fma(p, r, f32(coefficients[i]));
    // 2^(n - 1): exponent field n - 1 + 127.
    Value bits = arith::ShLIOp::create(
        b,
        arith::AddIOp::create(b, arith::FPToSIOp::create(b, intType, n),
                              i32(126)),
        i32(23));
    Value scale = arith::BitcastOp::create(b, type, bits);
    rewriter.replaceOp(op, arith::MulFOp::create(b, p, scale));
    return success();
  }
};

struct MHAApproximateTanhPass final
    : mha::impl::MHAApproximateTanhPassBase<MHAApproximateTanhPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populatePolynomialApproximateTanhPattern(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

struct MHAApproximateExpPass final
    : mha::impl::MHAApproximateExpPassBase<MHAApproximateExpPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ExpFromExponentBits>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
