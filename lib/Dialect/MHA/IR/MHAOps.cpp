//===- MHAOps.cpp - MHA dialect ops -----------------------------*- C++ -*-===//
//
// Verifiers and interface implementations of the `mha` ops. Each verifier
// rule enforces a line of the contract in docs/Semantics.md; each message
// names the operand and the dimension, with the expected and found values, so
// that a user can fix the IR without reading this file.
//
//===----------------------------------------------------------------------===//

#include "mha/Dialect/MHA/IR/MHAOps.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
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

    // The score dims the mask's dims stand for, outermost first.
    struct ScoreDim {
      StringLiteral symbol;
      StringLiteral meaning;
      int64_t size;
    };
    ScoreDim bDim{"B", "batch size", b}, hDim{"H", "number of heads", h},
        sqDim{"Sq", "query length", sq}, skDim{"Sk", "key length", sk};
    SmallVector<ScoreDim, 4> dims;
    switch (mask.getRank()) {
    case 2:
      dims = {sqDim, skDim};
      break;
    case 3:
      dims = {bDim, sqDim, skDim};
      break;
    case 4:
      dims = {bDim, hDim, sqDim, skDim};
      break;
    default:
      return op->emitOpError()
             << "'mask' must have rank 2 ([Sq, Sk]), 3 ([B, Sq, Sk]) or 4 "
                "([B|1, H|1, Sq|1, Sk|1]), found rank "
             << mask.getRank();
    }
    bool broadcasts = mask.getRank() == 4;
    for (auto [i, dim] : llvm::enumerate(dims)) {
      int64_t found = mask.getDimSize(i);
      if (ShapedType::isDynamic(found) || ShapedType::isDynamic(dim.size) ||
          found == dim.size || (broadcasts && found == 1))
        continue;
      return op->emitOpError()
             << "'mask' dimension " << i << " (" << dim.symbol << ") must "
             << (broadcasts ? "be 1 or " : "") << "match the " << dim.meaning
             << ": expected " << dim.size << ", found " << found;
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

double MultiHeadAttentionOp::getScaleOrDefault() {
  if (std::optional<APFloat> scale = getScale())
    return scale->convertToDouble();
  return 1.0 / std::sqrt(static_cast<double>(getHeadDimQK()));
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

  if (Value mask = getMask())
    return v.checkMask(cast<ShapedType>(mask.getType()), floatType, *b,
                       numHeads, *sq, *sk);
  return success();
}

LogicalResult MultiHeadAttentionOp::reifyResultShapes(
    OpBuilder &builder, ReifiedRankedShapedTypeDims &reifiedReturnShapes) {
  // [B, Sq, Eo]: batch and query length follow the query; Eo is static.
  Location loc = getLoc();
  auto resultType = cast<ShapedType>(getResult().getType());
  reifiedReturnShapes.push_back(
      {tensor::getMixedSize(builder, loc, getQuery(), 0),
       tensor::getMixedSize(builder, loc, getQuery(), 1),
       builder.getIndexAttr(resultType.getDimSize(2))});
  return success();
}

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

double AttentionOp::getScaleOrDefault() {
  if (std::optional<APFloat> scale = getScale())
    return scale->convertToDouble();
  int64_t dk = cast<ShapedType>(getQuery().getType()).getDimSize(3);
  return 1.0 / std::sqrt(static_cast<double>(dk));
}

Value AttentionOp::getCausalOffsetOrDefault(OpBuilder &builder) {
  if (Value offset = getCausalOffset())
    return offset;
  Location loc = getLoc();
  Value sk = getValueOrCreateConstantIndexOp(
      builder, loc, tensor::getMixedSize(builder, loc, getKey(), 2));
  Value sq = getValueOrCreateConstantIndexOp(
      builder, loc, tensor::getMixedSize(builder, loc, getQuery(), 2));
  return arith::SubIOp::create(builder, loc, sk, sq);
}

LogicalResult AttentionOp::verify() {
  ShapeVerifier v(getOperation());
  if (failed(v.checkScale(getScale())))
    return failure();
  if (getCausalOffset() && !getCausal())
    return emitOpError() << "'causal_offset' requires the 'causal' attribute";

  auto query = cast<ShapedType>(getQuery().getType());
  auto key = cast<ShapedType>(getKey().getType());
  auto value = cast<ShapedType>(getValue().getType());
  auto init = cast<ShapedType>(getInit().getType());
  if (failed(v.checkRank("query", query, 4, "[B, H, Sq, dk]")) ||
      failed(v.checkRank("key", key, 4, "[B, Hkv, Sk, dk]")) ||
      failed(v.checkRank("value", value, 4, "[B, Hkv, Sk, dv]")) ||
      failed(v.checkRank("init", init, 4, "[B, H, Sq, dv]")))
    return failure();
  if (getResult().getType() != getInit().getType())
    return emitOpError() << "result type must match 'init' type: expected "
                         << getInit().getType() << ", found "
                         << getResult().getType();

  Type floatType = query.getElementType();
  StringRef names[] = {"key", "value", "init"};
  ShapedType types[] = {key, value, init};
  for (auto [name, type] : llvm::zip_equal(names, types))
    if (failed(v.checkElementType(name, type, floatType, "'query'")))
      return failure();

  // Head counts and head dims are static: they shape the per-head matmuls.
  if (failed(v.checkStatic({"query", query, 1}, "H")) ||
      failed(v.checkStatic({"query", query, 3}, "dk")) ||
      failed(v.checkStatic({"key", key, 1}, "Hkv")) ||
      failed(v.checkStatic({"value", value, 3}, "dv")))
    return failure();
  // The default scale is 1/sqrt(dk).
  if (query.getDimSize(3) <= 0)
    return emitOpError() << "'query' dimension 3 (dk) must be positive, found "
                         << query.getDimSize(3);

  FailureOr<int64_t> b = v.checkAgree({{"query", query, 0},
                                       {"key", key, 0},
                                       {"value", value, 0},
                                       {"init", init, 0}},
                                      "B");
  if (failed(b) ||
      failed(v.checkDim({"key", key, 3}, "dk", query.getDimSize(3),
                        "'query' dimension 3")) ||
      failed(v.checkDim({"value", value, 1}, "Hkv", key.getDimSize(1),
                        "'key' dimension 1")) ||
      failed(v.checkDim({"init", init, 1}, "H", query.getDimSize(1),
                        "'query' dimension 1")) ||
      failed(v.checkDim({"init", init, 3}, "dv", value.getDimSize(3),
                        "'value' dimension 3")))
    return failure();
  FailureOr<int64_t> sq =
      v.checkAgree({{"query", query, 2}, {"init", init, 2}}, "Sq");
  if (failed(sq))
    return failure();
  FailureOr<int64_t> sk =
      v.checkAgree({{"key", key, 2}, {"value", value, 2}}, "Sk");
  if (failed(sk))
    return failure();

  int64_t numHeads = query.getDimSize(1);
  int64_t numKvHeads = key.getDimSize(1);
  if (numKvHeads <= 0 || numHeads % numKvHeads != 0)
    return emitOpError() << "'key' dimension 1 (Hkv) must be positive and "
                            "divide 'query' dimension 1 (H = "
                         << numHeads << "), found " << numKvHeads;

  if (Value mask = getMask())
    return v.checkMask(cast<ShapedType>(mask.getType()), floatType, *b,
                       numHeads, *sq, *sk);
  return success();
}

LogicalResult AttentionOp::reifyResultShapes(
    OpBuilder &builder, ReifiedRankedShapedTypeDims &reifiedReturnShapes) {
  // Destination-passing style: the result has the shape of `init`.
  reifiedReturnShapes.push_back(
      tensor::getMixedSizes(builder, getLoc(), getInit()));
  return success();
}

//===----------------------------------------------------------------------===//
// AttentionOp: TilingInterface
//===----------------------------------------------------------------------===//

// The loops are (B, H, Sq), all parallel. Keys are a reduction, but tiling
// them needs the online softmax (mha-tile-attention), not a plain split.

SmallVector<utils::IteratorType> AttentionOp::getLoopIteratorTypes() {
  return SmallVector<utils::IteratorType>(3, utils::IteratorType::parallel);
}

SmallVector<Range> AttentionOp::getIterationDomain(OpBuilder &b) {
  Location loc = getLoc();
  OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1);
  SmallVector<Range> domain;
  for (int64_t d = 0; d < 3; ++d)
    domain.push_back({zero, tensor::getMixedSize(b, loc, getQuery(), d), one});
  return domain;
}

LogicalResult AttentionOp::getResultTilePosition(
    OpBuilder &b, unsigned resultNumber, ArrayRef<OpFoldResult> offsets,
    ArrayRef<OpFoldResult> sizes, SmallVector<OpFoldResult> &resultOffsets,
    SmallVector<OpFoldResult> &resultSizes) {
  resultOffsets.assign(offsets.begin(), offsets.end());
  resultOffsets.push_back(b.getIndexAttr(0));
  resultSizes.assign(sizes.begin(), sizes.end());
  resultSizes.push_back(
      b.getIndexAttr(cast<ShapedType>(getInit().getType()).getDimSize(3)));
  return success();
}

/// The (offset, size) of a tile along a mask dim that is either full or 1:
/// a static 1 stays whole, a dynamic size picks at run time.
static std::pair<OpFoldResult, OpFoldResult>
maskDimTile(OpBuilder &b, Location loc, Value mask, int64_t dim,
            OpFoldResult offset, OpFoldResult size) {
  auto type = cast<ShapedType>(mask.getType());
  if (type.getDimSize(dim) == 1)
    return {b.getIndexAttr(0), b.getIndexAttr(1)};
  if (!type.isDynamicDim(dim))
    return {offset, size};
  Value extent = tensor::DimOp::create(b, loc, mask, dim);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value isOne = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                      extent, one);
  Value tileOffset = arith::SelectOp::create(
      b, loc, isOne, zero, getValueOrCreateConstantIndexOp(b, loc, offset));
  Value tileSize = arith::SelectOp::create(
      b, loc, isOne, one, getValueOrCreateConstantIndexOp(b, loc, size));
  return {tileOffset, tileSize};
}

Value mha::sliceMaskForTile(OpBuilder &b, Location loc, Value mask,
                            ArrayRef<OpFoldResult> offsets,
                            ArrayRef<OpFoldResult> sizes) {
  int64_t rank = cast<ShapedType>(mask.getType()).getRank();
  OpFoldResult zero = b.getIndexAttr(0);
  OpFoldResult sk = tensor::getMixedSize(b, loc, mask, rank - 1);
  SmallVector<OpFoldResult> maskOffsets, maskSizes;
  switch (rank) {
  case 2:
    maskOffsets = {offsets[2], zero};
    maskSizes = {sizes[2], sk};
    break;
  case 3:
    maskOffsets = {offsets[0], offsets[2], zero};
    maskSizes = {sizes[0], sizes[2], sk};
    break;
  default:
    for (int64_t d = 0; d < 3; ++d) {
      auto [offset, size] = maskDimTile(b, loc, mask, d, offsets[d], sizes[d]);
      maskOffsets.push_back(offset);
      maskSizes.push_back(size);
    }
    maskOffsets.push_back(zero);
    maskSizes.push_back(sk);
  }
  SmallVector<OpFoldResult> strides(rank, b.getIndexAttr(1));
  return tensor::ExtractSliceOp::create(b, loc, mask, maskOffsets, maskSizes,
                                        strides);
}

FailureOr<TilingResult>
AttentionOp::getTiledImplementation(OpBuilder &b,
                                    ArrayRef<OpFoldResult> offsets,
                                    ArrayRef<OpFoldResult> sizes) {
  Location loc = getLoc();
  auto queryType = cast<ShapedType>(getQuery().getType());
  auto keyType = cast<ShapedType>(getKey().getType());
  int64_t numHeads = queryType.getDimSize(1);
  int64_t numKvHeads = keyType.getDimSize(1);
  int64_t group = numHeads / numKvHeads;
  OpFoldResult zero = b.getIndexAttr(0);

  // Key/value heads of the query-head tile [h0, h0 + hs).
  OpFoldResult kvOffset = zero, kvSize = b.getIndexAttr(numKvHeads);
  std::optional<int64_t> headTile = getConstantIntValue(sizes[1]);
  if (!headTile || *headTile != numHeads) {
    if (!headTile || (*headTile % group != 0 && group % *headTile != 0))
      return emitOpError() << "cannot tile " << numHeads << " query heads over "
                           << numKvHeads
                           << " key/value heads with a head tile size that "
                              "neither divides nor is a multiple of the group "
                              "size "
                           << group;
    AffineExpr h0;
    bindDims(b.getContext(), h0);
    kvOffset = affine::makeComposedFoldedAffineApply(b, loc, h0.floorDiv(group),
                                                     {offsets[1]});
    kvSize = b.getIndexAttr(std::max<int64_t>(*headTile / group, 1));
  }

  SmallVector<Operation *> slices;
  auto slice = [&](Value source, ArrayRef<OpFoldResult> sliceOffsets,
                   ArrayRef<OpFoldResult> sliceSizes) -> Value {
    SmallVector<OpFoldResult> strides(sliceOffsets.size(), b.getIndexAttr(1));
    auto op = tensor::ExtractSliceOp::create(b, loc, source, sliceOffsets,
                                             sliceSizes, strides);
    slices.push_back(op);
    return op;
  };
  auto dimOf = [&](Value v, int64_t d) {
    return tensor::getMixedSize(b, loc, v, d);
  };

  Value query = slice(getQuery(), {offsets[0], offsets[1], offsets[2], zero},
                      {sizes[0], sizes[1], sizes[2], dimOf(getQuery(), 3)});
  Value key = slice(getKey(), {offsets[0], kvOffset, zero, zero},
                    {sizes[0], kvSize, dimOf(getKey(), 2), dimOf(getKey(), 3)});
  Value value =
      slice(getValue(), {offsets[0], kvOffset, zero, zero},
            {sizes[0], kvSize, dimOf(getValue(), 2), dimOf(getValue(), 3)});
  Value init = slice(getInit(), {offsets[0], offsets[1], offsets[2], zero},
                     {sizes[0], sizes[1], sizes[2], dimOf(getInit(), 3)});

  Value mask;
  if (Value fullMask = getMask()) {
    mask = sliceMaskForTile(b, loc, fullMask, offsets, sizes);
    slices.push_back(mask.getDefiningOp());
  }

  // The tile keeps the diagonal of the whole op: query i0 + i sees key j iff
  // j <= i + (i0 + causal offset).
  Value causalOffset;
  if (getCausal())
    causalOffset = arith::AddIOp::create(
        b, loc, getValueOrCreateConstantIndexOp(b, loc, offsets[2]),
        getCausalOffsetOrDefault(b));

  auto tiled = AttentionOp::create(b, loc, init.getType(), query, key, value,
                                   mask, causalOffset, init, getScaleAttr(),
                                   getCausalAttr());
  return TilingResult{{tiled}, {tiled.getResult()}, slices};
}

#define GET_OP_CLASSES
#include "mha/Dialect/MHA/IR/MHAOps.cpp.inc"
