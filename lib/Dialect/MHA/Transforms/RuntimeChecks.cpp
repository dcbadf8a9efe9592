//===- RuntimeChecks.cpp - dynamic sizes checked at run time ----*- C++ -*-===//
//
// The verifiers check every size the types know. Dynamic sizes (batch and
// sequence lengths) are only known when the code runs: if they disagree, the
// lowered loops would read out of bounds. This pass inserts, before each mha
// op, one cf.assert per pair of sizes that must agree and that the verifier
// could not compare, with the verifier's wording, so a mismatch stops the
// program with a message instead of corrupting memory.
//
//===----------------------------------------------------------------------===//

#include "mha/Dialect/MHA/IR/MHAOps.h"
#include "mha/Dialect/MHA/Transforms/Passes.h"
#include "mha/Dialect/MHA/Transforms/Transforms.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

namespace mlir::mha {
#define GEN_PASS_DEF_MHAINSERTRUNTIMECHECKSPASS
#include "mha/Dialect/MHA/Transforms/Passes.h.inc"
} // namespace mlir::mha

using namespace mlir;
using namespace mlir::mha;

namespace {

/// One size of one operand, as the verifier names it.
struct Size {
  Value value;
  StringRef name;
  int64_t dim;
  bool isDynamic() const {
    return cast<ShapedType>(value.getType()).isDynamicDim(dim);
  }
};

/// `file:line:col` of `loc` where it has one, for messages printed at run
/// time.
std::string describe(Location loc) {
  if (auto fileLoc = dyn_cast<FileLineColLoc>(loc))
    return (fileLoc.getFilename().getValue() + ":" +
            Twine(fileLoc.getLine()) + ":" + Twine(fileLoc.getColumn()))
        .str();
  std::string text;
  llvm::raw_string_ostream os(text);
  os << loc;
  return text;
}

class CheckBuilder {
public:
  CheckBuilder(OpBuilder &b, Operation *op) : b(b), op(op) {}

  /// Asserts a == ref (or a == 1 when `orOne`) unless both are static.
  void equal(const Size &a, const Size &ref, StringRef symbol,
             bool orOne = false) {
    if ((!a.isDynamic() && !ref.isDynamic()) ||
        (a.value == ref.value && a.dim == ref.dim))
      return;
    if (orOne && !a.isDynamic() &&
        cast<ShapedType>(a.value.getType()).getDimSize(a.dim) == 1)
      return;
    assertSize(
        a,
        [&] { return tensor::DimOp::create(b, op->getLoc(), ref.value, ref.dim); },
        symbol, orOne,
               ("'" + ref.name + "' dimension " + Twine(ref.dim)).str());
  }

  /// Asserts a == expected (or 1 when `orOne`) when `a` is dynamic.
  void equalTo(const Size &a, int64_t expected, StringRef symbol,
               StringRef what, bool orOne = false) {
    if (!a.isDynamic())
      return;
    assertSize(
        a,
        [&] {
          return arith::ConstantIndexOp::create(b, op->getLoc(), expected);
        },
        symbol, orOne,
               (what + " (" + Twine(expected) + ")").str());
  }

  /// The mask against the scores [B, H, Sq, Sk] the sizes `b`, `sq`, `sk`
  /// (and `h`, when the op knows H only as a number) stand for.
  /// With `runtimeBroadcast` (the layer op), a dynamic rank-4 mask dim may
  /// also be 1; on the core ops only a static 1 broadcasts.
  void mask(Value mask, const Size &batch, int64_t heads, const Size &sq,
            const Size &sk, bool runtimeBroadcast) {
    MaskLayout layout = *getMaskLayout(
        cast<ShapedType>(mask.getType()).getRank());
    for (auto [d, scoreDim] : llvm::enumerate(layout.scoreDims)) {
      Size maskDim{mask, "mask", static_cast<int64_t>(d)};
      StringRef symbol = getScoreDimSymbol(scoreDim);
      bool orOne = layout.broadcasts &&
                   (runtimeBroadcast ||
                    cast<ShapedType>(mask.getType()).getDimSize(d) == 1);
      switch (scoreDim) {
      case kBatch:
        equal(maskDim, batch, symbol, orOne);
        break;
      case kHeads:
        equalTo(maskDim, heads, symbol, "the number of heads", orOne);
        break;
      case kQueries:
        equal(maskDim, sq, symbol, orOne);
        break;
      case kKeys:
        equal(maskDim, sk, symbol, orOne);
        break;
      }
    }
  }

private:
  /// cf.assert(size(a) == expected [|| size(a) == 1]) with the verifier's
  /// wording: "'<a>' dimension <d> (<symbol>) must [be 1 or ]match <what>".
  void assertSize(const Size &a, function_ref<Value()> makeExpected,
                  StringRef symbol, bool orOne, StringRef what) {
    Location loc = op->getLoc();
    Value size = tensor::DimOp::create(b, loc, a.value, a.dim);
    Value ok = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, size,
                                     makeExpected());
    if (orOne)
      ok = arith::OrIOp::create(
          b, loc, ok,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, size,
                                arith::ConstantIndexOp::create(b, loc, 1)));
    std::string message;
    llvm::raw_string_ostream os(message);
    os << op->getName() << " at " << describe(loc) << ": '" << a.name
       << "' dimension " << a.dim << " (" << symbol << ") must "
       << (orOne ? "be 1 or " : "") << "match " << what << " at run time";
    cf::AssertOp::create(b, loc, ok, message);
  }

  OpBuilder &b;
  Operation *op;
};

struct MHAInsertRuntimeChecksPass final
    : mha::impl::MHAInsertRuntimeChecksPassBase<MHAInsertRuntimeChecksPass> {
  void runOnOperation() override {
    OpBuilder b(&getContext());
    getOperation()->walk([&](Operation *op) {
      if (isa<MultiHeadAttentionOp, AttentionOp>(op))
        insertRuntimeShapeChecks(b, op);
    });
  }
};

} // namespace

void mha::insertRuntimeShapeChecks(OpBuilder &b, Operation *op) {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(op);
  CheckBuilder check(b, op);
  if (auto layer = dyn_cast<MultiHeadAttentionOp>(op)) {
    Size batch{layer.getQuery(), "query", 0}, sq{layer.getQuery(), "query", 1},
        sk{layer.getKey(), "key", 1};
    check.equal({layer.getKey(), "key", 0}, batch, "B");
    check.equal({layer.getValue(), "value", 0}, batch, "B");
    check.equal({layer.getValue(), "value", 1}, sk, "Sk");
    // A result type more static than the query pins the query's sizes.
    auto resultType = cast<ShapedType>(layer.getType());
    for (int64_t d = 0; d < 2; ++d)
      if (!resultType.isDynamicDim(d))
        check.equalTo({layer.getQuery(), "query", d}, resultType.getDimSize(d),
                      d == 0 ? "B" : "Sq", "the result type");
    if (Value mask = layer.getMask())
      check.mask(mask, batch, layer.getNumHeads(), sq, sk,
                 /*runtimeBroadcast=*/true);
    return;
  }
  auto attention = cast<AttentionOp>(op);
  Size batch{attention.getQuery(), "query", 0},
      sq{attention.getQuery(), "query", 2}, sk{attention.getKey(), "key", 2};
  check.equal({attention.getKey(), "key", 0}, batch, "B");
  check.equal({attention.getValue(), "value", 0}, batch, "B");
  check.equal({attention.getInit(), "init", 0}, batch, "B");
  check.equal({attention.getInit(), "init", 2}, sq, "Sq");
  check.equal({attention.getValue(), "value", 2}, sk, "Sk");
  if (Value mask = attention.getMask())
    check.mask(mask, batch,
               cast<ShapedType>(attention.getQuery().getType()).getDimSize(1),
               sq, sk, /*runtimeBroadcast=*/false);
}
