//===- RuntimeVerification.cpp - run-time checks of the mha ops -----------===//
//
// RuntimeVerifiableOpInterface of the mha ops. The verifiers compare every
// size the types know; batch and sequence lengths may be dynamic, and if
// they disagree at run time the lowered loops read out of bounds. Each op
// asserts (cf.assert) every pair of sizes that must agree and that are not
// both static, with the verifier's wording. Upstream's
// --generate-runtime-verification calls this, and so does
// --mha-insert-runtime-checks (for the mha ops only, with messages that name
// the op and its source location).
//
//===----------------------------------------------------------------------===//

#include "mha/Dialect/MHA/IR/MHAOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

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

class CheckBuilder {
public:
  CheckBuilder(OpBuilder &b, Operation *op, Location loc,
               function_ref<std::string(Operation *, StringRef)> message)
      : b(b), op(op), loc(loc), message(message) {}

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
        [&] { return tensor::DimOp::create(b, loc, ref.value, ref.dim); },
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
          return arith::ConstantIndexOp::create(b, loc, expected);
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

  /// Key lengths [B]: as many as batches, each in [0, Sk] (`sk` null: a
  /// tile's lengths, which count keys before it, only non-negative).
  void keyLengths(Value lengths, const Size &batch, const Size *sk) {
    equal({lengths, "key_lengths", 0}, batch, "B");
    Value keys = sk ? tensor::DimOp::create(b, loc, sk->value, sk->dim)
                          .getResult()
                    : Value();
    lengthsWithin(lengths, keys,
                  keys ? "'key_lengths' elements must be in [0, Sk] at run "
                         "time"
                       : "'key_lengths' elements must be non-negative at "
                         "run time");
  }

  /// Asserts, in a loop over `lengths`, that each is in [0, upper] (only
  /// non-negative when `upper` is null).
  void lengthsWithin(Value lengths, Value upper, StringRef text) {
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    Value count = tensor::DimOp::create(b, loc, lengths, 0);
    auto loop = scf::ForOp::create(b, loc, zero, count, one);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value length = arith::IndexCastOp::create(
        b, loc, b.getIndexType(),
        tensor::ExtractOp::create(b, loc, lengths, loop.getInductionVar()));
    Value ok = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, length,
                                     zero);
    if (upper)
      ok = arith::AndIOp::create(
          b, loc, ok,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, length,
                                upper));
    cf::AssertOp::create(b, loc, ok, message(op, text));
  }

private:
  /// cf.assert(size(a) == expected [|| size(a) == 1]) with the verifier's
  /// wording: "'<a>' dimension <d> (<symbol>) must [be 1 or ]match <what>".
  void assertSize(const Size &a, function_ref<Value()> makeExpected,
                  StringRef symbol, bool orOne, StringRef what) {
    Value size = tensor::DimOp::create(b, loc, a.value, a.dim);
    Value ok = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, size,
                                     makeExpected());
    if (orOne)
      ok = arith::OrIOp::create(
          b, loc, ok,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, size,
                                arith::ConstantIndexOp::create(b, loc, 1)));
    std::string text;
    llvm::raw_string_ostream os(text);
    os << "'" << a.name << "' dimension " << a.dim << " (" << symbol
       << ") must " << (orOne ? "be 1 or " : "") << "match " << what
       << " at run time";
    cf::AssertOp::create(b, loc, ok, message(op, text));
  }

  OpBuilder &b;
  Operation *op;
  Location loc;
  function_ref<std::string(Operation *, StringRef)> message;
};

/// The checks of mha.attention and mha.online_attention: query, key, value
/// and mask, and destinations `outs` shaped [B, H, Sq(, dv)].
void checkAttentionOperands(CheckBuilder &check, Value query, Value key,
                            int64_t keySeqDim, Value value, Value mask,
                            Value keyLengths, bool hasKeyOffset,
                            ArrayRef<std::pair<StringRef, Value>> outs) {
  Size batch{query, "query", 0}, sq{query, "query", 2},
      sk{key, "key", keySeqDim};
  check.equal({key, "key", 0}, batch, "B");
  check.equal({value, "value", 0}, batch, "B");
  for (auto [name, out] : outs) {
    check.equal({out, name, 0}, batch, "B");
    check.equal({out, name, 2}, sq, "Sq");
  }
  check.equal({value, "value", 2}, sk, "Sk");
  if (mask)
    check.mask(mask, batch,
               cast<ShapedType>(query.getType()).getDimSize(1), sq, sk,
               /*runtimeBroadcast=*/false);
  if (keyLengths)
    check.keyLengths(keyLengths, batch, hasKeyOffset ? nullptr : &sk);
}

} // namespace

void MultiHeadAttentionOp::generateRuntimeVerification(
    OpBuilder &b, Location loc,
    function_ref<std::string(Operation *, StringRef)> generateErrorMessage) {
  CheckBuilder check(b, getOperation(), loc, generateErrorMessage);
  Size batch{getQuery(), "query", 0}, sq{getQuery(), "query", 1},
      sk{getKey(), "key", 1};
  check.equal({getKey(), "key", 0}, batch, "B");
  check.equal({getValue(), "value", 0}, batch, "B");
  check.equal({getValue(), "value", 1}, sk, "Sk");
  // A result type more static than the query pins the query's sizes.
  auto resultType = cast<ShapedType>(getResult().getType());
  for (int64_t d = 0; d < 2; ++d)
    if (!resultType.isDynamicDim(d))
      check.equalTo({getQuery(), "query", d}, resultType.getDimSize(d),
                    d == 0 ? "B" : "Sq", "the result type");
  if (Value lengths = getKeyLengths())
    check.keyLengths(lengths, batch, &sk);
  // Mask sizes are against the keys the attention reads.
  Size keys = sk;
  if (hasKvCache()) {
    Value kCache = getKCache(), vCache = getVCache();
    keys = {kCache, "k_cache", 2};
    check.equal({kCache, "k_cache", 0}, batch, "B");
    check.equal({vCache, "v_cache", 0}, batch, "B");
    check.equal({vCache, "v_cache", 2}, keys, "Smax");
    check.equal({getCacheLengths(), "cache_lengths", 0}, batch, "B");
    // Room for each batch's step: lengths[b] <= Smax - Sk.
    Value room = arith::SubIOp::create(
        b, loc, tensor::DimOp::create(b, loc, kCache, 2),
        tensor::DimOp::create(b, loc, getKey(), 1));
    check.lengthsWithin(getCacheLengths(), room,
                        "'cache_lengths' elements must be in [0, Smax - Sk] "
                        "at run time (the step must fit in the caches)");
  }
  if (Value mask = getMask())
    check.mask(mask, batch, getNumHeads(), sq, keys,
               /*runtimeBroadcast=*/true);
  if (Value cos = getRotaryCos()) {
    check.equal({getRotarySin(), "rotary_sin", 0}, {cos, "rotary_cos", 0},
                "P");
    // The step's tokens are its queries and its keys: as many of each.
    check.equal({getKey(), "key", 1}, sq, "Sk");
    // The last token of the step has a row of the tables: offset[b] + S <= P.
    Value last = arith::SubIOp::create(
        b, loc, tensor::DimOp::create(b, loc, cos, 0),
        tensor::DimOp::create(b, loc, getQuery(), 1));
    if (hasKvCache()) {
      check.lengthsWithin(getCacheLengths(), last,
                          "'cache_lengths' elements must be in [0, P - Sq] "
                          "at run time (each token's row of the rotary "
                          "tables)");
    } else {
      Value zero = arith::ConstantIndexOp::create(b, loc, 0);
      Value fits = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge,
                                         last, zero);
      cf::AssertOp::create(
          b, loc, fits,
          generateErrorMessage(getOperation(),
                               "'rotary_cos' dimension 0 (P) must cover the "
                               "positions of the tokens (Sq) at run time"));
    }
  }
}

void AttentionOp::generateRuntimeVerification(
    OpBuilder &b, Location loc,
    function_ref<std::string(Operation *, StringRef)> generateErrorMessage) {
  CheckBuilder check(b, getOperation(), loc, generateErrorMessage);
  checkAttentionOperands(check, getQuery(), getKey(), getKeySeqDim(),
                         getValue(), getMask(), getKeyLengths(),
                         getKeyOffset() != nullptr, {{"init", getInit()}});
}

void OnlineAttentionOp::generateRuntimeVerification(
    OpBuilder &b, Location loc,
    function_ref<std::string(Operation *, StringRef)> generateErrorMessage) {
  CheckBuilder check(b, getOperation(), loc, generateErrorMessage);
  checkAttentionOperands(check, getQuery(), getKey(), getKeySeqDim(),
                         getValue(), getMask(), getKeyLengths(),
                         getKeyOffset() != nullptr,
                         {{"acc", getAcc()}, {"max", getMax()}, {"sum", getSum()}});
}

void CacheAppendOp::generateRuntimeVerification(
    OpBuilder &b, Location loc,
    function_ref<std::string(Operation *, StringRef)> generateErrorMessage) {
  CheckBuilder check(b, getOperation(), loc, generateErrorMessage);
  int64_t rank = cast<ShapedType>(getCache().getType()).getRank();
  int64_t seqDim = getSeqDim();
  Size batch{getCache(), "cache", 0};
  for (int64_t d = 0; d < rank; ++d)
    if (d != seqDim)
      check.equal({getUpdate(), "update", d}, {getCache(), "cache", d},
                  d == 0 ? "B" : d == rank - 1 ? "d" : "H");
  check.equal({getLengths(), "lengths", 0}, batch, "B");
  // Room for each batch's update: lengths[b] <= Smax - Sn.
  Value room = arith::SubIOp::create(
      b, loc, tensor::DimOp::create(b, loc, getCache(), seqDim),
      tensor::DimOp::create(b, loc, getUpdate(), seqDim));
  check.lengthsWithin(getLengths(), room,
                      "'lengths' elements must be in [0, Smax - Sn] at run "
                      "time (the update must fit in the cache)");
}

void RotaryOp::generateRuntimeVerification(
    OpBuilder &b, Location loc,
    function_ref<std::string(Operation *, StringRef)> generateErrorMessage) {
  CheckBuilder check(b, getOperation(), loc, generateErrorMessage);
  Value input = getInput(), positions = getPositions();
  StringRef symbols[] = {"B", "H", "S", "d"};
  for (int64_t d = 0; d < 4; ++d)
    check.equal({getInit(), "init", d}, {input, "input", d}, symbols[d]);
  check.equal({getSin(), "sin", 0}, {getCos(), "cos", 0}, "P");
  check.equal({positions, "positions", 0}, {input, "input", 0}, "B");
  int64_t rank = cast<ShapedType>(positions.getType()).getRank();
  Value rows = tensor::DimOp::create(b, loc, getCos(), 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  if (rank == 1) {
    // Token s of batch b is at positions[b] + s: positions[b] <= P - S.
    Value last = arith::SubIOp::create(
        b, loc, rows, tensor::DimOp::create(b, loc, input, 2));
    check.lengthsWithin(positions, last,
                        "'positions' elements must be in [0, P - S] at run "
                        "time (each token's row of 'cos' and 'sin')");
    return;
  }
  check.equal({positions, "positions", 1}, {input, "input", 2}, "S");
  Value flat = tensor::CollapseShapeOp::create(
      b, loc, positions, SmallVector<ReassociationIndices>{{0, 1}});
  check.lengthsWithin(flat, arith::SubIOp::create(b, loc, rows, one),
                      "'positions' elements must be in [0, P) at run time "
                      "(each token's row of 'cos' and 'sin')");
}
