//===- MHAOps.cpp - MHA dialect ops -----------------------------*- C++ -*-===//
//
// Verifiers and accessors of the `mha` ops (their TilingInterface is in
// TilingInterfaceImpl.cpp). Each verifier rule enforces a line of the
// contract in docs/Semantics.md; each message names the operand and the
// dimension, with the expected and found values, so that a user can fix the
// IR without reading this file.
//
//===----------------------------------------------------------------------===//

#include "mha/Dialect/MHA/IR/MHAOps.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir;
using namespace mlir::mha;

//===----------------------------------------------------------------------===//
// Shared verification helpers
//===----------------------------------------------------------------------===//

namespace {

/// One dimension of one operand, with the names diagnostics use for it.
struct DimRef {
  StringRef operand;
  ShapedType type;
  unsigned dim;
  int64_t size() const { return type.getDimSize(dim); }
};

/// Verifies the shapes of an op operand by operand. Every failure is reported
/// once, on the op, in the form
///   '<operand>' dimension <i> (<symbol>) must ...: expected <e>, found <f>
class ShapeVerifier {
public:
  explicit ShapeVerifier(Operation *op) : op(op) {}

  LogicalResult checkRank(StringRef operand, ShapedType type, int64_t rank,
                          StringRef layout) {
    if (type.getRank() == rank)
      return success();
    return op->emitOpError() << "'" << operand << "' must have rank " << rank
                             << " (" << layout << "), found rank "
                             << type.getRank();
  }

  LogicalResult checkStatic(const DimRef &ref, StringRef symbol) {
    if (!ShapedType::isDynamic(ref.size()))
      return success();
    return op->emitOpError()
           << "'" << ref.operand << "' dimension " << ref.dim << " (" << symbol
           << ") must be static, found '?'";
  }

  /// Checks that `ref` equals `expected` (described by `what`); a dynamic size
  /// on either side agrees, as the sizes are only known at run time.
  LogicalResult checkDim(const DimRef &ref, StringRef symbol, int64_t expected,
                         const Twine &what) {
    if (ShapedType::isDynamic(expected) || ShapedType::isDynamic(ref.size()) ||
        ref.size() == expected)
      return success();
    return op->emitOpError()
           << "'" << ref.operand << "' dimension " << ref.dim << " (" << symbol
           << ") must match " << what << ": expected " << expected
           << ", found " << ref.size();
  }

  /// Checks that every size in `refs` agrees with the first static one among
  /// them, and returns it (or kDynamic if all are dynamic).
  FailureOr<int64_t> checkAgree(ArrayRef<DimRef> refs, StringRef symbol) {
    const DimRef *known = llvm::find_if(
        refs, [](const DimRef &r) { return !ShapedType::isDynamic(r.size()); });
    if (known == refs.end())
      return ShapedType::kDynamic;
    for (const DimRef &ref : refs) {
      if (failed(checkDim(ref, symbol, known->size(),
                          "'" + known->operand + "' dimension " +
                              Twine(known->dim))))
        return failure();
    }
    return known->size();
  }

  LogicalResult checkElementType(StringRef operand, ShapedType type,
                                 Type expected, StringRef expectedFrom) {
    if (type.getElementType() == expected)
      return success();
    return op->emitOpError() << "'" << operand << "' element type must match "
                             << expectedFrom << " element type: expected "
                             << expected << ", found " << type.getElementType();
  }

  /// Checks a mask against the attention it applies to: [B, H, Sq, Sk] scores.
  /// Rank 2 is [Sq, Sk] and rank 3 [B, Sq, Sk], both exact; rank 4 is
  /// [B|1, H|1, Sq|1, Sk|1] and broadcasts along its size-1 dimensions.
  LogicalResult checkMask(ShapedType mask, Type floatType, int64_t b, int64_t h,
                          int64_t sq, int64_t sk) {
    Type elementType = mask.getElementType();
    if (!elementType.isInteger(1) && elementType != floatType)
      return op->emitOpError()
             << "'mask' element type must be i1 or the element type of "
                "'query' ("
             << floatType << "), found " << elementType;

    std::optional<MaskLayout> layout = getMaskLayout(mask.getRank());
    if (!layout)
      return op->emitOpError()
             << "'mask' must have rank 2 ([Sq, Sk]), 3 ([B, Sq, Sk]) or 4 "
                "([B|1, H|1, Sq|1, Sk|1]), found rank "
             << mask.getRank();
    int64_t scoreSizes[] = {b, h, sq, sk};
    StringLiteral meanings[] = {"batch size", "number of heads",
                                "query length", "key length"};
    for (auto [i, scoreDim] : llvm::enumerate(layout->scoreDims)) {
      int64_t found = mask.getDimSize(i), expected = scoreSizes[scoreDim];
      if (ShapedType::isDynamic(found) || ShapedType::isDynamic(expected) ||
          found == expected || (layout->broadcasts && found == 1))
        continue;
      return op->emitOpError()
             << "'mask' dimension " << i << " ("
             << getScoreDimSymbol(scoreDim) << ") must "
             << (layout->broadcasts ? "be 1 or " : "") << "match the "
             << meanings[scoreDim] << ": expected " << expected << ", found "
             << found;
    }
    return success();
  }

  LogicalResult checkScale(std::optional<APFloat> scale) {
    if (!scale)
      return success();
    double value = scale->convertToDouble();
    if (std::isfinite(value) && value > 0.0)
      return success();
    return op->emitOpError()
           << "'scale' must be a positive finite number, found "
           << llvm::formatv("{0}", value).str();
  }

  /// softcap, the windows and key lengths [B] (of a batch size `b`, keys
  /// `sk`), the rules the layer and the core ops share.
  LogicalResult checkKeyFeatures(FloatAttr softcap, bool causal,
                                 IntegerAttr windowLeft,
                                 IntegerAttr windowRight, Value keyLengths,
                                 int64_t b, int64_t sk) {
    if (softcap) {
      double value = softcap.getValueAsDouble();
      if (!std::isfinite(value) || value <= 0.0)
        return op->emitOpError()
               << "'softcap' must be a positive finite number, found "
               << llvm::formatv("{0}", value).str();
    }
    for (auto [name, window] : {std::pair<StringRef, IntegerAttr>{
                                    "window_left", windowLeft},
                                {"window_right", windowRight}})
      if (window && window.getInt() < 0)
        return op->emitOpError() << "'" << name
                                 << "' must be non-negative, found "
                                 << window.getInt();
    if (causal && windowRight)
      return op->emitOpError()
             << "'window_right' cannot be combined with 'causal' (causal is "
                "a right window of 0)";
    if (!keyLengths)
      return success();
    auto type = cast<ShapedType>(keyLengths.getType());
    if (failed(checkDim({"key_lengths", type, 0}, "B", b, "the batch size")))
      return failure();
    // Lengths known at compile time are checked here (the run-time checks
    // cover the others).
    DenseIntElementsAttr values;
    if (!matchPattern(keyLengths, m_Constant(&values)))
      return success();
    for (auto [i, length] : llvm::enumerate(values.getValues<APInt>())) {
      int64_t n = length.getSExtValue();
      if (n < 0 || (!ShapedType::isDynamic(sk) && n > sk))
        return op->emitOpError()
               << "'key_lengths' element " << i << " must be in [0, Sk"
               << (ShapedType::isDynamic(sk) ? "" : " = " + Twine(sk).str())
               << "], found " << n;
    }
    return success();
  }

private:
  Operation *op;
};

} // namespace

//===----------------------------------------------------------------------===//
// MultiHeadAttentionOp
//===----------------------------------------------------------------------===//

int64_t MultiHeadAttentionOp::getNumKvHeadsOrDefault() {
  return getNumKvHeads().value_or(getNumHeads());
}

int64_t MultiHeadAttentionOp::getHeadDimQK() {
  return getWQ().getType().getDimSize(1) / getNumHeads();
}

int64_t MultiHeadAttentionOp::getHeadDimV() {
  return getWV().getType().getDimSize(1) / getNumKvHeadsOrDefault();
}

/// Verifies attention probabilities `type` named `name`: [B, H, Sq, Sk], or
/// [B, Sq, Sk] averaged over the heads, of `floatType`.
static LogicalResult verifyWeightsType(Operation *op, StringRef name,
                                       ShapedType type, bool average,
                                       Type floatType, int64_t b, int64_t h,
                                       int64_t sq, int64_t sk) {
  ShapeVerifier v(op);
  if (failed(v.checkRank(name, type, average ? 3 : 4,
                         average ? "[B, Sq, Sk]" : "[B, H, Sq, Sk]")) ||
      failed(v.checkElementType(name, type, floatType, "'query'")))
    return failure();
  SmallVector<std::pair<int64_t, StringRef>> dims = {{b, "B"}};
  if (!average)
    dims.push_back({h, "H"});
  dims.append({{sq, "Sq"}, {sk, "Sk"}});
  for (auto [i, dim] : llvm::enumerate(dims))
    if (failed(v.checkDim({name, type, static_cast<unsigned>(i)}, dim.second,
                          dim.first, "the scores")))
      return failure();
  return success();
}

double MultiHeadAttentionOp::getScaleOrDefault() {
  if (std::optional<APFloat> scale = getScale())
    return scale->convertToDouble();
  return getDefaultScale(getHeadDimQK());
}

LogicalResult MultiHeadAttentionOp::verify() {
  ShapeVerifier v(getOperation());

  int64_t numHeads = getNumHeads();
  if (numHeads <= 0)
    return emitOpError() << "'num_heads' must be positive, found " << numHeads;
  int64_t numKvHeads = getNumKvHeadsOrDefault();
  if (numKvHeads <= 0)
    return emitOpError() << "'num_kv_heads' must be positive, found "
                         << numKvHeads;
  if (numHeads % numKvHeads != 0)
    return emitOpError() << "'num_kv_heads' must divide 'num_heads': "
                         << numKvHeads << " does not divide " << numHeads;
  if (failed(v.checkScale(getScale())))
    return failure();

  auto query = cast<ShapedType>(getQuery().getType());
  auto key = cast<ShapedType>(getKey().getType());
  auto value = cast<ShapedType>(getValue().getType());
  auto wQ = cast<ShapedType>(getWQ().getType());
  auto wK = cast<ShapedType>(getWK().getType());
  auto wV = cast<ShapedType>(getWV().getType());
  auto wO = cast<ShapedType>(getWO().getType());
  auto result = cast<ShapedType>(getResult().getType());

  // Ranks.
  if (failed(v.checkRank("query", query, 3, "[B, Sq, Eq]")) ||
      failed(v.checkRank("key", key, 3, "[B, Sk, Ek]")) ||
      failed(v.checkRank("value", value, 3, "[B, Sk, Ev]")) ||
      failed(v.checkRank("w_q", wQ, 2, "[Eq, H*dk]")) ||
      failed(v.checkRank("w_k", wK, 2, "[Ek, Hkv*dk]")) ||
      failed(v.checkRank("w_v", wV, 2, "[Ev, Hkv*dv]")) ||
      failed(v.checkRank("w_o", wO, 2, "[H*dv, Eo]")) ||
      failed(v.checkRank("result", result, 3, "[B, Sq, Eo]")))
    return failure();

  // Element types: one float type for every data operand and the result.
  Type floatType = query.getElementType();
  // Named arrays: a braced list in the range of a for loop would die before
  // the loop body runs (found by ASan).
  StringRef names[] = {"key", "value", "w_q", "w_k", "w_v", "w_o", "result"};
  ShapedType types[] = {key, value, wQ, wK, wV, wO, result};
  for (auto [name, type] : llvm::zip_equal(names, types))
    if (failed(v.checkElementType(name, type, floatType, "'query'")))
      return failure();

  // Embedding and weight dims are static: they size the projections.
  if (failed(v.checkStatic({"query", query, 2}, "Eq")) ||
      failed(v.checkStatic({"key", key, 2}, "Ek")) ||
      failed(v.checkStatic({"value", value, 2}, "Ev")) ||
      failed(v.checkStatic({"w_q", wQ, 0}, "Eq")) ||
      failed(v.checkStatic({"w_q", wQ, 1}, "H*dk")) ||
      failed(v.checkStatic({"w_k", wK, 0}, "Ek")) ||
      failed(v.checkStatic({"w_k", wK, 1}, "Hkv*dk")) ||
      failed(v.checkStatic({"w_v", wV, 0}, "Ev")) ||
      failed(v.checkStatic({"w_v", wV, 1}, "Hkv*dv")) ||
      failed(v.checkStatic({"w_o", wO, 0}, "H*dv")) ||
      failed(v.checkStatic({"w_o", wO, 1}, "Eo")))
    return failure();

  // Batch, query length and key length agree wherever they appear.
  FailureOr<int64_t> b = v.checkAgree({{"query", query, 0},
                                       {"key", key, 0},
                                       {"value", value, 0},
                                       {"result", result, 0}},
                                      "B");
  if (failed(b))
    return failure();
  FailureOr<int64_t> sq =
      v.checkAgree({{"query", query, 1}, {"result", result, 1}}, "Sq");
  if (failed(sq))
    return failure();
  FailureOr<int64_t> sk =
      v.checkAgree({{"key", key, 1}, {"value", value, 1}}, "Sk");
  if (failed(sk))
    return failure();

  // Projections: [in, out] weights whose widths split into heads.
  int64_t qkWidth = wQ.getDimSize(1);
  if (qkWidth <= 0 || qkWidth % numHeads != 0)
    return emitOpError() << "'w_q' dimension 1 (H*dk) must be a positive "
                            "multiple of 'num_heads' ("
                         << numHeads << "), found " << qkWidth;
  int64_t dk = qkWidth / numHeads;
  int64_t vWidth = wV.getDimSize(1);
  if (vWidth <= 0 || vWidth % numKvHeads != 0)
    return emitOpError() << "'w_v' dimension 1 (Hkv*dv) must be a positive "
                            "multiple of 'num_kv_heads' ("
                         << numKvHeads << "), found " << vWidth;
  int64_t dv = vWidth / numKvHeads;
  if (failed(v.checkDim({"w_q", wQ, 0}, "Eq", query.getDimSize(2),
                        "'query' dimension 2")) ||
      failed(v.checkDim({"w_k", wK, 0}, "Ek", key.getDimSize(2),
                        "'key' dimension 2")) ||
      failed(v.checkDim({"w_k", wK, 1}, "Hkv*dk", numKvHeads * dk,
                        "num_kv_heads * dk = " + Twine(numKvHeads) + " * " +
                            Twine(dk))) ||
      failed(v.checkDim({"w_v", wV, 0}, "Ev", value.getDimSize(2),
                        "'value' dimension 2")) ||
      failed(v.checkDim({"w_o", wO, 0}, "H*dv", numHeads * dv,
                        "num_heads * dv = " + Twine(numHeads) + " * " +
                            Twine(dv))) ||
      failed(v.checkDim({"result", result, 2}, "Eo", wO.getDimSize(1),
                        "'w_o' dimension 1")))
    return failure();

  // Biases: all four or none, each as wide as its projection's output.
  unsigned numBiases = llvm::count_if(
      ValueRange{getBQ(), getBK(), getBV(), getBO()},
      [](Value bias) { return bias != nullptr; });
  if (numBiases != 0 && numBiases != 4)
    return emitOpError() << "bias operands 'b_q', 'b_k', 'b_v' and 'b_o' must "
                            "be given all four or none, found "
                         << numBiases;
  if (numBiases == 4) {
    struct BiasSpec {
      StringRef name;
      Value bias;
      StringRef symbol;
      int64_t width;
    };
    BiasSpec specs[] = {{"b_q", getBQ(), "H*dk", qkWidth},
                        {"b_k", getBK(), "Hkv*dk", numKvHeads * dk},
                        {"b_v", getBV(), "Hkv*dv", vWidth},
                        {"b_o", getBO(), "Eo", wO.getDimSize(1)}};
    for (const BiasSpec &spec : specs) {
      auto type = cast<ShapedType>(spec.bias.getType());
      if (failed(v.checkRank(spec.name, type, 1,
                             ("[" + spec.symbol + "]").str())) ||
          failed(v.checkElementType(spec.name, type, floatType, "'query'")) ||
          failed(v.checkStatic({spec.name, type, 0}, spec.symbol)) ||
          failed(v.checkDim({spec.name, type, 0}, spec.symbol, spec.width,
                            "the projection width")))
        return failure();
    }
  }

  // The keys the attention reads: the step's, or the caches' Smax.
  FailureOr<int64_t> keys = verifyKvCache(*b, *sk, dk, dv);
  if (failed(keys) || failed(verifyRotary(*sq, *sk, dk)))
    return failure();

  // Attention probabilities: the attribute and the result go together.
  std::optional<StringRef> weights = getReturnWeights();
  if (weights && *weights != "per_head" && *weights != "average")
    return emitOpError() << "'return_weights' must be \"per_head\" or "
                            "\"average\", found \""
                         << *weights << "\"";
  size_t extras = getExtraResults().size();
  if (!hasKvCache() && weights.has_value() != (extras != 0))
    return emitOpError() << "the 'weights' result is present exactly when "
                            "'return_weights' is: found "
                         << (weights ? "the attribute" : "the result")
                         << " without "
                         << (weights ? "the result" : "the attribute");
  if (!hasKvCache() && extras > 1)
    return emitOpError() << "expects at most 2 results (the output and "
                            "'weights') without 'kv_cache', found "
                         << extras + 1;
  if (weights &&
      failed(verifyWeightsType(getOperation(), "weights",
                               cast<ShapedType>(getWeights().getType()),
                               *weights == "average", floatType, *b, numHeads,
                               *sq, *sk)))
    return failure();

  if (failed(v.checkKeyFeatures(getSoftcapAttr(), getCausal(),
                                getWindowLeftAttr(), getWindowRightAttr(),
                                getKeyLengths(), *b, *sk)))
    return failure();
  if (Value mask = getMask())
    return v.checkMask(cast<ShapedType>(mask.getType()), floatType, *b,
                       numHeads, *sq, *keys);
  return success();
}

FailureOr<int64_t> MultiHeadAttentionOp::verifyKvCache(int64_t b, int64_t sk,
                                                       int64_t dk,
                                                       int64_t dv) {
  unsigned given = llvm::count_if(
      ValueRange{getKCache(), getVCache(), getCacheLengths()},
      [](Value operand) { return operand != nullptr; });
  if (given == 0)
    return sk;
  if (given != 3)
    return emitOpError() << "'k_cache', 'v_cache' and 'cache_lengths' must be "
                            "given all three or none, found "
                         << given;
  if (getKeyLengths())
    return emitOpError() << "'key_lengths' cannot be combined with "
                            "'kv_cache': the caches' lengths bound the keys "
                            "each batch sees";
  if (getReturnWeights())
    return emitOpError() << "'return_weights' cannot be combined with "
                            "'kv_cache'";
  ShapeVerifier v(getOperation());
  auto kCache = cast<ShapedType>(getKCache().getType());
  auto vCache = cast<ShapedType>(getVCache().getType());
  Type floatType = getElementTypeOrSelf(getQuery().getType());
  int64_t numKvHeads = getNumKvHeadsOrDefault();
  StringRef names[] = {"k_cache", "v_cache"};
  ShapedType types[] = {kCache, vCache};
  int64_t widths[] = {dk, dv};
  StringRef widthSymbols[] = {"dk", "dv"};
  for (auto [name, type, width, symbol] :
       llvm::zip_equal(names, types, widths, widthSymbols)) {
    std::string layout = ("[B, Hkv, Smax, " + symbol + "]").str();
    if (failed(v.checkRank(name, type, 4, layout)) ||
        failed(v.checkElementType(name, type, floatType, "'query'")) ||
        failed(v.checkDim({name, type, 0}, "B", b, "the batch size")) ||
        failed(v.checkStatic({name, type, 1}, "Hkv")) ||
        failed(v.checkStatic({name, type, 3}, symbol)) ||
        failed(v.checkDim({name, type, 1}, "Hkv", numKvHeads,
                          "the number of key/value heads")) ||
        failed(v.checkDim({name, type, 3}, symbol, width,
                          "the head dim of the projections")))
      return failure();
  }
  FailureOr<int64_t> smax =
      v.checkAgree({{"k_cache", kCache, 2}, {"v_cache", vCache, 2}}, "Smax");
  if (failed(smax))
    return failure();
  bool bounded = !ShapedType::isDynamic(sk) && !ShapedType::isDynamic(*smax);
  if (bounded && sk > *smax)
    return emitOpError() << "'key' dimension 1 (Sk) must not exceed "
                            "'k_cache' dimension 2 (Smax): expected at most "
                         << *smax << ", found " << sk;
  auto lengths = cast<ShapedType>(getCacheLengths().getType());
  if (failed(v.checkDim({"cache_lengths", lengths, 0u}, "B", b,
                        "the batch size")))
    return failure();
  // Constant lengths are checked here (the run-time checks cover the
  // others): each batch's step must fit in the caches.
  DenseIntElementsAttr values;
  if (matchPattern(getCacheLengths(), m_Constant(&values)))
    for (auto [i, length] : llvm::enumerate(values.getValues<APInt>())) {
      int64_t n = length.getSExtValue();
      if (n < 0 || (bounded && n > *smax - sk)) {
        InFlightDiagnostic diag = emitOpError()
                                  << "'cache_lengths' element " << i
                                  << " must be in [0, Smax - Sk";
        if (bounded)
          diag << " = " << *smax - sk;
        return diag << "], found " << n;
      }
    }
  // The updated caches: two more results, typed as the caches.
  if (getExtraResults().size() != 2)
    return emitOpError() << "expects 3 results with 'kv_cache' (the output "
                            "and the updated caches), found "
                         << getExtraResults().size() + 1;
  for (auto [i, name] : llvm::enumerate(names))
    if (getExtraResults()[i].getType() != types[i])
      return emitOpError() << "result " << i + 1 << " (the updated '" << name
                           << "') must have the type of '" << name
                           << "': expected " << types[i] << ", found "
                           << getExtraResults()[i].getType();
  return *smax;
}

LogicalResult MultiHeadAttentionOp::verifyRotary(int64_t sq, int64_t sk,
                                                 int64_t dk) {
  if (!getRotaryCos()) {
    if (getRotarySin() || getRotaryInterleaved())
      return emitOpError() << (getRotarySin() ? "'rotary_sin'"
                                              : "'rotary_interleaved'")
                           << " needs 'rotary_cos' (rotary(%cos, %sin))";
    return success();
  }
  if (!getRotarySin())
    return emitOpError() << "'rotary_sin' must be given with 'rotary_cos'";
  ShapeVerifier v(getOperation());
  auto cos = cast<ShapedType>(getRotaryCos().getType());
  auto sin = cast<ShapedType>(getRotarySin().getType());
  Type floatType = getElementTypeOrSelf(getQuery().getType());
  if (failed(v.checkRank("rotary_cos", cos, 2, "[P, R/2]")) ||
      failed(v.checkElementType("rotary_cos", cos, floatType, "'query'")) ||
      failed(v.checkStatic({"rotary_cos", cos, 1}, "R/2")))
    return failure();
  if (sin != cos)
    return emitOpError() << "'rotary_sin' type must match 'rotary_cos' type: "
                            "expected "
                         << cos << ", found " << sin;
  int64_t half = cos.getDimSize(1);
  if (half < 1 || 2 * half > dk)
    return emitOpError() << "'rotary_cos' dimension 1 (R/2) must be in [1, "
                            "dk/2 = "
                         << dk / 2 << "], found " << half;
  // Token s of the step, query or key, is at offset + s: the step's tokens
  // are its queries and its keys (self-attention).
  if (!ShapedType::isDynamic(sq) && !ShapedType::isDynamic(sk) && sq != sk)
    return emitOpError() << "'rotary' needs as many queries as keys (the "
                            "step's tokens, each at one position): 'key' "
                            "dimension 1 (Sk) must match 'query' dimension 1 "
                            "(Sq): expected "
                         << sq << ", found " << sk;
  // Without a cache the tokens are at 0..S-1: every row is known here.
  int64_t rows = cos.getDimSize(0);
  if (!hasKvCache() && !ShapedType::isDynamic(rows) &&
      !ShapedType::isDynamic(sq) && sq > rows)
    return emitOpError() << "'rotary_cos' dimension 0 (P) must cover the "
                            "positions of the step's tokens: expected at "
                            "least "
                         << sq << " (Sq), found " << rows;
  // With constant cache lengths, the last position is known too.
  DenseIntElementsAttr values;
  if (hasKvCache() && !ShapedType::isDynamic(rows) &&
      !ShapedType::isDynamic(sq) &&
      matchPattern(getCacheLengths(), m_Constant(&values)))
    for (auto [i, length] : llvm::enumerate(values.getValues<APInt>()))
      if (length.getSExtValue() + sq > rows)
        return emitOpError()
               << "'cache_lengths' element " << i
               << " must be in [0, P - Sq = " << rows - sq
               << "] (each token's row of the rotary tables), found "
               << length.getSExtValue();
  return success();
}

LogicalResult MultiHeadAttentionOp::reifyResultShapes(
    OpBuilder &builder, ReifiedRankedShapedTypeDims &reifiedReturnShapes) {
  // [B, Sq, Eo]: batch and query length follow the query; Eo is static.
  Location loc = getLoc();
  auto resultType = cast<ShapedType>(getResult().getType());
  OpFoldResult b = tensor::getMixedSize(builder, loc, getQuery(), 0);
  OpFoldResult sq = tensor::getMixedSize(builder, loc, getQuery(), 1);
  reifiedReturnShapes.push_back(
      {b, sq, builder.getIndexAttr(resultType.getDimSize(2))});
  // Probabilities: [B, H, Sq, Sk] or [B, Sq, Sk].
  if (getWeights()) {
    OpFoldResult sk = tensor::getMixedSize(builder, loc, getKey(), 1);
    if (getReturnWeights() == "average")
      reifiedReturnShapes.push_back({b, sq, sk});
    else
      reifiedReturnShapes.push_back(
          {b, builder.getIndexAttr(getNumHeads()), sq, sk});
  }
  // The updated caches: the caches' sizes.
  if (hasKvCache())
    for (Value cache : {getKCache(), getVCache()})
      reifiedReturnShapes.push_back(
          tensor::getMixedSizes(builder, loc, cache));
  return success();
}

//===----------------------------------------------------------------------===//
// Rules shared by the ops, the lowerings and the run-time checks
//===----------------------------------------------------------------------===//

StringRef mha::getScoreDimSymbol(unsigned scoreDim) {
  static constexpr StringLiteral symbols[] = {"B", "H", "Sq", "Sk"};
  return symbols[scoreDim];
}

std::optional<MaskLayout> mha::getMaskLayout(int64_t rank) {
  switch (rank) {
  case 2:
    return MaskLayout{{kQueries, kKeys}, /*broadcasts=*/false};
  case 3:
    return MaskLayout{{kBatch, kQueries, kKeys}, /*broadcasts=*/false};
  case 4:
    return MaskLayout{{kBatch, kHeads, kQueries, kKeys}, /*broadcasts=*/true};
  default:
    return std::nullopt;
  }
}

OpFoldResult mha::getDefaultCausalOffset(OpBuilder &b, Location loc,
                                         OpFoldResult sq, OpFoldResult sk) {
  AffineExpr q, k;
  bindSymbols(b.getContext(), q, k);
  return affine::makeComposedFoldedAffineApply(b, loc, k - q, {sq, sk});
}

double mha::getDefaultScale(int64_t dk) {
  return 1.0 / std::sqrt(static_cast<double>(dk));
}

double mha::getScaleOrDefault(std::optional<APFloat> scale, Value query) {
  if (scale)
    return scale->convertToDouble();
  return getDefaultScale(cast<ShapedType>(query.getType()).getDimSize(3));
}

Value mha::getCausalOffsetOrDefault(OpBuilder &b, Location loc, Value offset,
                                    Value query, Value key, int64_t keySeqDim,
                                    Value keyLengths, Value keyOffset) {
  if (offset)
    return offset;
  OpFoldResult sq = tensor::getMixedSize(b, loc, query, 2);
  if (!keyLengths)
    return getValueOrCreateConstantIndexOp(
        b, loc,
        getDefaultCausalOffset(b, loc, sq,
                               tensor::getMixedSize(b, loc, key, keySeqDim)));
  // -key_offset - Sq: with the batch's length added, its last query sees its
  // last valid key.
  AffineExpr q, o;
  bindSymbols(b.getContext(), q, o);
  OpFoldResult start = keyOffset ? OpFoldResult(keyOffset) : b.getIndexAttr(0);
  return getValueOrCreateConstantIndexOp(
      b, loc,
      affine::makeComposedFoldedAffineApply(b, loc, -q - o, {sq, start}));
}

Value mha::buildKeyVisible(OpBuilder &b, Location loc,
                           const KeyVisibility &visibility, Value length,
                           Value i, Value j) {
  Value visible;
  auto conjoin = [&](Value c) {
    visible = visible ? arith::AndIOp::create(b, loc, visible, c).getResult()
                      : c;
  };
  auto cmp = [&](arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, p, x, y).getResult();
  };
  auto add = [&](Value x, int64_t c) {
    if (c == 0)
      return x;
    return arith::AddIOp::create(b, loc, x,
                                 arith::ConstantIndexOp::create(b, loc, c))
        .getResult();
  };
  if (visibility.keyLengths) {
    Value key = visibility.keyOffset
                    ? arith::AddIOp::create(b, loc, j, visibility.keyOffset)
                          .getResult()
                    : j;
    conjoin(cmp(arith::CmpIPredicate::slt, key, length));
  }
  if (!visibility.hasDiagonal())
    return visible;
  // i + D_b: the last key query i sees with causal.
  Value diagonal = arith::AddIOp::create(b, loc, i, visibility.diagonal);
  if (visibility.keyLengths)
    diagonal = arith::AddIOp::create(b, loc, diagonal, length);
  if (visibility.causal)
    conjoin(cmp(arith::CmpIPredicate::sle, j, diagonal));
  if (visibility.windowRight)
    conjoin(cmp(arith::CmpIPredicate::sle, j,
                add(diagonal, *visibility.windowRight)));
  if (visibility.windowLeft)
    conjoin(cmp(arith::CmpIPredicate::sge, j,
                add(diagonal, -*visibility.windowLeft)));
  return visible;
}

/// Whether key lengths, if any, are per-batch values with one batch (then
/// scalars: a tile of the lowerings).
static bool hasOneBatch(const KeyVisibility &visibility) {
  return !visibility.keyLengths ||
         cast<ShapedType>(visibility.keyLengths.getType()).getDimSize(0) == 1;
}

/// The length of batch 0 as an index (a one-batch op or tile).
static Value extractFirstLength(OpBuilder &b, Location loc, Value lengths) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value length = tensor::ExtractOp::create(b, loc, lengths, zero);
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), length);
}

std::pair<OpFoldResult, OpFoldResult>
mha::getVisibleKeyRange(OpBuilder &b, Location loc,
                        const KeyVisibility &visibility, OpFoldResult sq,
                        OpFoldResult sk) {
  MLIRContext *ctx = b.getContext();
  OpFoldResult first = b.getIndexAttr(0), end = sk;
  // Per-batch bounds are only known for one batch.
  if (!hasOneBatch(visibility))
    return {first, end};
  AffineExpr s0, s1, s2;
  bindSymbols(ctx, s0, s1, s2);
  AffineExpr zero = getAffineConstantExpr(0, ctx);
  auto min = [&](OpFoldResult x, OpFoldResult y) {
    return affine::makeComposedFoldedAffineMin(
        b, loc, AffineMap::get(0, 2, {s0, s1}, ctx), {x, y});
  };
  // max(0, e(sq, diagonal, length)).
  auto clampedAt0 = [&](AffineExpr e, ArrayRef<OpFoldResult> operands) {
    return affine::makeComposedFoldedAffineMax(
        b, loc, AffineMap::get(0, 3, {e, zero}, ctx), operands);
  };
  OpFoldResult length = b.getIndexAttr(0);
  if (visibility.keyLengths) {
    length = extractFirstLength(b, loc, visibility.keyLengths);
    OpFoldResult keyOffset = visibility.keyOffset
                                 ? OpFoldResult(visibility.keyOffset)
                                 : b.getIndexAttr(0);
    // max(0, length - keyOffset); s2 is 0.
    end = min(end, clampedAt0(s0 - s1 + s2,
                              {length, keyOffset, b.getIndexAttr(0)}));
  }
  if (!visibility.hasDiagonal())
    return {first, end};
  // D = diagonal + length; the last query (sq - 1) sees keys up to
  // sq - 1 + D (+ windowRight), the first query keys from D - windowLeft.
  SmallVector<OpFoldResult> operands = {sq, visibility.diagonal, length};
  if (visibility.causal)
    end = min(end, clampedAt0(s0 + s1 + s2, operands));
  if (visibility.windowRight)
    end = min(end, clampedAt0(s0 + s1 + s2 + *visibility.windowRight,
                              operands));
  if (visibility.windowLeft)
    first = min(end, clampedAt0(s1 + s2 - *visibility.windowLeft, operands));
  return {first, end};
}

Value mha::buildMayHideKeys(OpBuilder &b, Location loc,
                            const KeyVisibility &visibility, OpFoldResult sq,
                            OpFoldResult sk) {
  if (!visibility.restricts())
    return Value();
  if (!hasOneBatch(visibility))
    return arith::ConstantIntOp::create(b, loc, 1, 1);
  Value any;
  auto disjoin = [&](Value c) {
    any = any ? arith::OrIOp::create(b, loc, any, c).getResult() : c;
  };
  Value sqValue = getValueOrCreateConstantIndexOp(b, loc, sq);
  Value skValue = getValueOrCreateConstantIndexOp(b, loc, sk);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value lastKey = arith::SubIOp::create(b, loc, skValue, one);
  Value length;
  if (visibility.keyLengths) {
    length = extractFirstLength(b, loc, visibility.keyLengths);
    disjoin(buildMayPassLength(b, loc, visibility, sk));
  }
  if (!visibility.hasDiagonal())
    return any;
  Value diagonal = visibility.diagonal;
  if (length)
    diagonal = arith::AddIOp::create(b, loc, diagonal, length);
  auto constant = [&](int64_t c) {
    return arith::ConstantIndexOp::create(b, loc, c).getResult();
  };
  // The first query sees keys up to D (+ windowRight): the block's last key
  // is beyond that.
  if (visibility.causal || visibility.windowRight) {
    Value bound = diagonal;
    if (!visibility.causal)
      bound = arith::AddIOp::create(b, loc, bound,
                                    constant(*visibility.windowRight));
    disjoin(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, lastKey,
                                  bound));
  }
  // The last query sees keys from sq - 1 + D - windowLeft: key 0 is before
  // that.
  if (visibility.windowLeft) {
    Value start = arith::AddIOp::create(
        b, loc, arith::SubIOp::create(b, loc, sqValue, one), diagonal);
    start = arith::SubIOp::create(b, loc, start,
                                  constant(*visibility.windowLeft));
    disjoin(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, start,
                                  constant(0)));
  }
  return any;
}

Value mha::buildMayPassLength(OpBuilder &b, Location loc,
                              const KeyVisibility &visibility,
                              OpFoldResult sk) {
  if (!visibility.keyLengths)
    return Value();
  if (!hasOneBatch(visibility))
    return arith::ConstantIntOp::create(b, loc, 1, 1);
  // Some key at or beyond the length: keyOffset + sk > length.
  Value length = extractFirstLength(b, loc, visibility.keyLengths);
  Value end = getValueOrCreateConstantIndexOp(b, loc, sk);
  if (visibility.keyOffset)
    end = arith::AddIOp::create(b, loc, end, visibility.keyOffset);
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, end,
                               length);
}

Value mha::sliceMaskForTile(OpBuilder &b, Location loc, Value mask,
                            ArrayRef<OpFoldResult> offsets,
                            ArrayRef<OpFoldResult> sizes) {
  auto type = cast<ShapedType>(mask.getType());
  MaskLayout layout = *getMaskLayout(type.getRank());
  OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1);
  SmallVector<OpFoldResult> maskOffsets, maskSizes;
  for (auto [d, scoreDim] : llvm::enumerate(layout.scoreDims)) {
    OpFoldResult offset = offsets[scoreDim], size = sizes[scoreDim];
    if (layout.broadcasts && type.getDimSize(d) == 1) {
      offset = zero;
      size = one;
    }
    maskOffsets.push_back(offset);
    maskSizes.push_back(size);
  }
  SmallVector<OpFoldResult> strides(type.getRank(), one);
  return tensor::ExtractSliceOp::create(b, loc, mask, maskOffsets, maskSizes,
                                        strides);
}

//===----------------------------------------------------------------------===//
// AttentionOp and OnlineAttentionOp: shared verification
//===----------------------------------------------------------------------===//

namespace {

/// A destination of an attention op: [B, H, Sq, dv] or [B, H, Sq].
struct AttentionOut {
  StringRef name;
  Value value;
  ShapedType type() const { return cast<ShapedType>(value.getType()); }
  bool hasHeadDim() const { return type().getRank() == 4; }
};

/// Verifies query, key, value (if any), mask, scale and causal offset of an
/// op on head-split tensors, and its destinations `outs` against them. With
/// `outsHaveQueryType`, the destinations have the query's element type
/// (mha.attention); otherwise their type is fixed by ODS (f32 state).
/// The attributes and operands of an attention op that restrict which keys a
/// query sees.
struct KeyFeatures {
  bool causal;
  Value causalOffset, keyLengths, keyOffset;
  FloatAttr softcap;
  IntegerAttr windowLeft, windowRight;
};

template <typename OpTy>
KeyFeatures getKeyFeatures(OpTy op) {
  return {op.getCausal(),         op.getCausalOffset(),
          op.getKeyLengths(),     op.getKeyOffset(),
          op.getSoftcapAttr(),    op.getWindowLeftAttr(),
          op.getWindowRightAttr()};
}

LogicalResult verifyAttentionOperands(Operation *op, Value queryValue,
                                      Value keyValue, bool keyTransposed,
                                      Value valueValue, Value mask,
                                      std::optional<APFloat> scale,
                                      const KeyFeatures &features,
                                      ArrayRef<AttentionOut> outs,
                                      ArrayRef<int64_t> outRanks,
                                      bool outsHaveQueryType) {
  unsigned keySeq = getKeySeqDim(keyTransposed),
           keyChannel = getKeyChannelDim(keyTransposed);
  ShapeVerifier v(op);
  if (failed(v.checkScale(scale)))
    return failure();
  if (features.causalOffset && !features.causal && !features.windowLeft &&
      !features.windowRight)
    return op->emitOpError() << "'causal_offset' requires the 'causal' "
                                "attribute or a window ('window_left', "
                                "'window_right')";
  if (features.keyOffset && !features.keyLengths)
    return op->emitOpError() << "'key_offset' requires 'key_lengths'";

  auto query = cast<ShapedType>(queryValue.getType());
  auto key = cast<ShapedType>(keyValue.getType());
  if (failed(v.checkRank("query", query, 4, "[B, H, Sq, dk]")) ||
      failed(v.checkRank("key", key, 4,
                         keyTransposed ? "[B, Hkv, dk, Sk]"
                                       : "[B, Hkv, Sk, dk]")))
    return failure();
  // Without values (mha.attention_weights), only their checks are skipped.
  ShapedType value =
      valueValue ? cast<ShapedType>(valueValue.getType()) : ShapedType();
  if (value && failed(v.checkRank("value", value, 4, "[B, Hkv, Sk, dv]")))
    return failure();
  for (auto [out, rank] : llvm::zip_equal(outs, outRanks))
    if (failed(v.checkRank(out.name, out.type(), rank,
                           rank == 4 ? "[B, H, Sq, dv]" : "[B, H, Sq]")))
      return failure();

  Type floatType = query.getElementType();
  if (failed(v.checkElementType("key", key, floatType, "'query'")) ||
      (value &&
       failed(v.checkElementType("value", value, floatType, "'query'"))))
    return failure();
  if (outsHaveQueryType)
    for (const AttentionOut &out : outs)
      if (failed(v.checkElementType(out.name, out.type(), floatType,
                                    "'query'")))
        return failure();

  // Head counts and head dims are static: they shape the per-head matmuls.
  if (failed(v.checkStatic({"query", query, 1}, "H")) ||
      failed(v.checkStatic({"query", query, 3}, "dk")) ||
      failed(v.checkStatic({"key", key, 1}, "Hkv")) ||
      (value && failed(v.checkStatic({"value", value, 3}, "dv"))))
    return failure();
  // The default scale is 1/sqrt(dk).
  if (query.getDimSize(3) <= 0)
    return op->emitOpError()
           << "'query' dimension 3 (dk) must be positive, found "
           << query.getDimSize(3);

  SmallVector<DimRef> batchRefs = {{"query", query, 0}, {"key", key, 0}};
  SmallVector<DimRef> keyRefs = {{"key", key, keySeq}};
  if (value) {
    batchRefs.push_back({"value", value, 0});
    keyRefs.push_back({"value", value, 2});
  }
  SmallVector<DimRef> queryRefs = {{"query", query, 2}};
  for (const AttentionOut &out : outs) {
    batchRefs.push_back({out.name, out.type(), 0});
    queryRefs.push_back({out.name, out.type(), 2});
  }
  FailureOr<int64_t> b = v.checkAgree(batchRefs, "B");
  if (failed(b) ||
      failed(v.checkDim({"key", key, keyChannel}, "dk",
                        query.getDimSize(3),
                        "'query' dimension 3")) ||
      (value && failed(v.checkDim({"value", value, 1}, "Hkv",
                                  key.getDimSize(1), "'key' dimension 1"))))
    return failure();
  for (const AttentionOut &out : outs) {
    if (failed(v.checkDim({out.name, out.type(), 1}, "H", query.getDimSize(1),
                          "'query' dimension 1")) ||
        (value && out.hasHeadDim() &&
         failed(v.checkDim({out.name, out.type(), 3}, "dv",
                           value.getDimSize(3), "'value' dimension 3"))))
      return failure();
  }
  FailureOr<int64_t> sq = v.checkAgree(queryRefs, "Sq");
  if (failed(sq))
    return failure();
  FailureOr<int64_t> sk = v.checkAgree(keyRefs, "Sk");
  if (failed(sk))
    return failure();

  int64_t numHeads = query.getDimSize(1);
  int64_t numKvHeads = key.getDimSize(1);
  if (numKvHeads <= 0 || numHeads % numKvHeads != 0)
    return op->emitOpError() << "'key' dimension 1 (Hkv) must be positive and "
                                "divide 'query' dimension 1 (H = "
                             << numHeads << "), found " << numKvHeads;

  // Lengths count from the op's first key (key_offset 0); a tile's are
  // checked where the whole op's were.
  if (failed(v.checkKeyFeatures(
          features.softcap, features.causal, features.windowLeft,
          features.windowRight, features.keyLengths, *b,
          features.keyOffset ? ShapedType::kDynamic : *sk)))
    return failure();
  if (mask)
    return v.checkMask(cast<ShapedType>(mask.getType()), floatType, *b,
                       numHeads, *sq, *sk);
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

/// Destination-passing style: the result has the type of `init`.
static LogicalResult verifyResultIsInit(Operation *op, Value result,
                                        Value init) {
  if (result.getType() == init.getType())
    return success();
  return op->emitOpError() << "result type must match 'init' type: expected "
                           << init.getType() << ", found " << result.getType();
}

LogicalResult AttentionOp::verify() {
  if (failed(verifyAttentionOperands(
          getOperation(), getQuery(), getKey(), getKeyTransposed(),
          getValue(), getMask(), getScale(), getKeyFeatures(*this),
          {AttentionOut{"init", getInit()}}, {4},
          /*outsHaveQueryType=*/true)))
    return failure();
  return verifyResultIsInit(getOperation(), getResult(), getInit());
}

LogicalResult AttentionWeightsOp::verify() {
  // The attention's rules, without values.
  if (failed(verifyAttentionOperands(
          getOperation(), getQuery(), getKey(), getKeyTransposed(), Value(),
          getMask(), getScale(), getKeyFeatures(*this), {}, {},
          /*outsHaveQueryType=*/true)))
    return failure();
  if (getAverageHeads() && getStage() != WeightsStage::Probabilities)
    return emitOpError("averages the probabilities only: 'average_heads' "
                       "with stage '")
           << stringifyWeightsStage(getStage()) << "'";
  auto query = cast<ShapedType>(getQuery().getType());
  auto key = cast<ShapedType>(getKey().getType());
  if (failed(verifyWeightsType(getOperation(), "init",
                               cast<ShapedType>(getInit().getType()),
                               getAverageHeads(), query.getElementType(),
                               query.getDimSize(0), query.getDimSize(1),
                               query.getDimSize(2),
                               key.getDimSize(getKeySeqDim()))))
    return failure();
  return verifyResultIsInit(getOperation(), getResult(), getInit());
}

/// Destination-passing style: each result has the shape of its init.
static LogicalResult reifyAsInits(OpBuilder &builder,
                                  DestinationStyleOpInterface op,
                                  ReifiedRankedShapedTypeDims &shapes) {
  for (Value init : op.getDpsInits())
    shapes.push_back(tensor::getMixedSizes(builder, op.getLoc(), init));
  return success();
}

LogicalResult AttentionWeightsOp::reifyResultShapes(
    OpBuilder &builder, ReifiedRankedShapedTypeDims &reifiedReturnShapes) {
  return reifyAsInits(builder, *this, reifiedReturnShapes);
}

LogicalResult AttentionOp::reifyResultShapes(
    OpBuilder &builder, ReifiedRankedShapedTypeDims &reifiedReturnShapes) {
  return reifyAsInits(builder, *this, reifiedReturnShapes);
}

//===----------------------------------------------------------------------===//
// OnlineAttentionOp
//===----------------------------------------------------------------------===//

LogicalResult OnlineAttentionOp::verify() {
  if (failed(verifyAttentionOperands(
          getOperation(), getQuery(), getKey(), getKeyTransposed(),
          getValue(), getMask(), getScale(), getKeyFeatures(*this),
          {AttentionOut{"acc", getAcc()}, AttentionOut{"max", getMax()},
           AttentionOut{"sum", getSum()}},
          {4, 3, 3}, /*outsHaveQueryType=*/false)))
    return failure();
  // A named array: a braced list in the range of a for loop would die before
  // the loop body runs (found by the fuzzer under ASan).
  StringRef names[] = {"acc", "max", "sum"};
  for (auto [name, init, result] :
       llvm::zip_equal(names, getDpsInits(), getResults()))
    if (init.getType() != result.getType())
      return emitOpError() << "result type must match '" << name
                           << "' type: expected " << init.getType()
                           << ", found " << result.getType();
  return success();
}

LogicalResult OnlineAttentionOp::reifyResultShapes(
    OpBuilder &builder, ReifiedRankedShapedTypeDims &reifiedReturnShapes) {
  return reifyAsInits(builder, *this, reifiedReturnShapes);
}

//===----------------------------------------------------------------------===//
// CacheAppendOp
//===----------------------------------------------------------------------===//

LogicalResult CacheAppendOp::verify() {
  auto update = cast<ShapedType>(getUpdate().getType());
  auto cache = cast<ShapedType>(getCache().getType());
  ShapeVerifier v(getOperation());
  if (cache.getRank() < 3)
    return emitOpError() << "'cache' must have rank 3 or more ([B, ..., "
                            "Smax, d]), found rank "
                         << cache.getRank();
  if (failed(v.checkRank("update", update, cache.getRank(),
                         "the rank of 'cache': [B, ..., Sn, d]")) ||
      failed(v.checkElementType("update", update, cache.getElementType(),
                                "'cache'")))
    return failure();
  int64_t seqDim = getSeqDim();
  for (int64_t d = 0; d < cache.getRank(); ++d) {
    if (d == seqDim)
      continue;
    StringRef symbol = d == 0 ? "B" : d == cache.getRank() - 1 ? "d" : "H";
    if (failed(v.checkDim({"update", update, static_cast<unsigned>(d)}, symbol,
                          cache.getDimSize(d),
                          "'cache' dimension " + Twine(d))))
      return failure();
  }
  int64_t sn = update.getDimSize(seqDim), smax = cache.getDimSize(seqDim);
  if (!ShapedType::isDynamic(sn) && !ShapedType::isDynamic(smax) && sn > smax)
    return emitOpError() << "'update' dimension " << seqDim
                         << " (Sn) must not exceed 'cache' dimension "
                         << seqDim << " (Smax): expected at most " << smax
                         << ", found " << sn;
  auto lengths = cast<ShapedType>(getLengths().getType());
  if (failed(v.checkDim({"lengths", lengths, 0u}, "B", cache.getDimSize(0),
                        "the batch size")))
    return failure();
  // Constant lengths are checked here (the run-time checks cover the
  // others): each batch's update must fit in the cache.
  DenseIntElementsAttr values;
  if (matchPattern(getLengths(), m_Constant(&values))) {
    bool bounded = !ShapedType::isDynamic(sn) && !ShapedType::isDynamic(smax);
    for (auto [i, length] : llvm::enumerate(values.getValues<APInt>())) {
      int64_t n = length.getSExtValue();
      if (n < 0 || (bounded && n > smax - sn)) {
        InFlightDiagnostic diag = emitOpError()
                                  << "'lengths' element " << i
                                  << " must be in [0, Smax - Sn";
        if (bounded)
          diag << " = " << smax - sn;
        return diag << "], found " << n;
      }
    }
  }
  if (getResult().getType() != getCache().getType())
    return emitOpError() << "result type must match 'cache' type: expected "
                         << getCache().getType() << ", found "
                         << getResult().getType();
  return success();
}

LogicalResult CacheAppendOp::reifyResultShapes(
    OpBuilder &builder, ReifiedRankedShapedTypeDims &reifiedReturnShapes) {
  return reifyAsInits(builder, *this, reifiedReturnShapes);
}

//===----------------------------------------------------------------------===//
// RotaryOp
//===----------------------------------------------------------------------===//

LogicalResult RotaryOp::verify() {
  auto input = cast<ShapedType>(getInput().getType());
  auto cos = cast<ShapedType>(getCos().getType());
  auto sin = cast<ShapedType>(getSin().getType());
  auto positions = cast<ShapedType>(getPositions().getType());
  ShapeVerifier v(getOperation());
  if (failed(v.checkRank("input", input, 4, "[B, H, S, d]")) ||
      failed(v.checkStatic({"input", input, 3}, "d")) ||
      failed(v.checkRank("cos", cos, 2, "[P, R/2]")) ||
      failed(v.checkElementType("cos", cos, input.getElementType(),
                                "'input'")))
    return failure();
  if (sin != cos)
    return emitOpError() << "'sin' type must match 'cos' type: expected "
                         << cos << ", found " << sin;
  int64_t half = cos.getDimSize(1), d = input.getDimSize(3);
  if (failed(v.checkStatic({"cos", cos, 1}, "R/2")))
    return failure();
  if (half < 1 || 2 * half > d)
    return emitOpError() << "'cos' dimension 1 (R/2) must be in [1, d/2 = "
                         << d / 2 << "], found " << half;
  if (positions.getRank() != 1 && positions.getRank() != 2)
    return emitOpError() << "'positions' must have rank 1 ([B]: offsets) "
                            "or 2 ([B, S]), found rank "
                         << positions.getRank();
  if (failed(v.checkDim({"positions", positions, 0u}, "B", input.getDimSize(0),
                        "the batch size")) ||
      (positions.getRank() == 2 &&
       failed(v.checkDim({"positions", positions, 1u}, "S",
                         input.getDimSize(2), "the sequence length"))))
    return failure();
  // Constant positions are checked here (the run-time checks cover the
  // others): every token's row of the tables exists.
  DenseIntElementsAttr values;
  int64_t tableRows = cos.getDimSize(0), tokens = input.getDimSize(2);
  if (matchPattern(getPositions(), m_Constant(&values))) {
    // With offsets [B], token s of a batch is at offset + s.
    int64_t span = positions.getRank() == 1 ? tokens : 1;
    for (auto [i, position] : llvm::enumerate(values.getValues<APInt>())) {
      int64_t p = position.getSExtValue();
      bool fits = ShapedType::isDynamic(tableRows) ||
                  ShapedType::isDynamic(span) || p + span <= tableRows;
      if (p < 0 || !fits) {
        bool offsets = positions.getRank() == 1;
        InFlightDiagnostic diag = emitOpError()
                                  << "'positions' element " << i
                                  << " must be in [0, "
                                  << (offsets ? "P - S" : "P");
        if (!ShapedType::isDynamic(tableRows) &&
            !ShapedType::isDynamic(span))
          diag << " = " << (offsets ? tableRows - span : tableRows);
        return diag << (offsets ? "]" : ")") << ", found " << p;
      }
    }
  }
  if (getInit().getType() != input)
    return emitOpError() << "'init' type must match 'input' type: expected "
                         << input << ", found " << getInit().getType();
  return verifyResultIsInit(getOperation(), getResult(), getInit());
}

LogicalResult RotaryOp::reifyResultShapes(
    OpBuilder &builder, ReifiedRankedShapedTypeDims &reifiedReturnShapes) {
  return reifyAsInits(builder, *this, reifiedReturnShapes);
}
