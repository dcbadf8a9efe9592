//===- OutlineWeightPreparation.cpp - Weights prepared once ---------------===//
//
// What a function computes from its weights alone (the projections' packed
// column panels) moved into an entry of its own, called once, and the rest
// of the function taking its results: mha-outline-weight-preparation.
//
//===----------------------------------------------------------------------===//

#include "mha/Codegen/Common/Passes.h"
#include "mha/Codegen/Common/Transforms.h"
#include "mha/Dialect/MHA/IR/MHADialect.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <optional>
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::mha {
#define GEN_PASS_DEF_MHAOUTLINEWEIGHTPREPARATIONPASS
#include "mha/Codegen/Common/Passes.h.inc"
} // namespace mlir::mha

using namespace mlir;

namespace {
/// What a value of the function's body depends on: nothing but constants
/// (`Invariant`), the weights and constants (`Weight`), or anything else.
enum class Source { Invariant, Weight, Runtime };
} // namespace

/// Reshapes and slices: the prepared function takes their source (a view
/// needs no preparing, and a function returning a view of its argument
/// would return memory it does not own).
static bool isView(Operation *op) {
  return isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp,
             tensor::ExtractSliceOp, tensor::CastOp>(op);
}

/// Erases the ops of `block` that nothing uses and that have no effect, last
/// first.
static void eraseDeadOps(Block &block) {
  SmallVector<Operation *> ops;
  for (Operation &op : block.without_terminator())
    ops.push_back(&op);
  for (Operation *op : llvm::reverse(ops))
    if (isOpTriviallyDead(op))
      op->erase();
}

LogicalResult mha::outlineWeightPreparation(func::FuncOp func) {
  if (func.isExternal())
    return success();
  SmallVector<unsigned> weights = mha::getWeightArguments(func);
  if (weights.empty())
    return success();
  for (unsigned i : weights)
    if (!isa<RankedTensorType>(func.getArgumentTypes()[i]))
      return func.emitError()
             << "marks its argument #" << i << " of type "
             << func.getArgumentTypes()[i] << " '" << mha::kWeightAttrName
             << "': only ranked tensors are prepared (run this before "
                "bufferization)";
  if (!func.getBody().hasOneBlock())
    return func.emitError() << "has '" << mha::kWeightAttrName
                            << "' arguments but several blocks: only a "
                               "function of one block can be split into "
                               "its weights' preparation and the rest";
  bool updatesInPlace = false;
  for (unsigned j = 0, e = func.getNumResults(); j < e; ++j) {
    int64_t i = getUpdatedArgument(func, j);
    updatesInPlace |= i >= 0;
    bool written = !isa<BlockArgument>(
        func.getBody().front().getTerminator()->getOperand(j));
    if (i >= 0 && written && func.getArgAttr(i, mha::kWeightAttrName))
      return func.emitError()
             << "updates its argument #" << i << " in place (result #" << j
             << "), which is marked '" << mha::kWeightAttrName
             << "': a weight must be the same on every call";
  }
  std::string prepareName = (func.getName() + "_prepare").str();
  std::string preparedName = (func.getName() + "_prepared").str();
  auto module = func->getParentOfType<ModuleOp>();
  for (StringRef name : {StringRef(prepareName), StringRef(preparedName)})
    if (module && SymbolTable::lookupSymbolIn(module, name))
      return func.emitError()
             << "cannot be split into its weights' preparation: the symbol '@"
             << name << "' exists";

  // Where each value of the body comes from.
  Block &body = func.getBody().front();
  DenseMap<Value, Source> source;
  for (BlockArgument argument : body.getArguments())
    source[argument] = func.getArgAttr(argument.getArgNumber(),
                                       mha::kWeightAttrName)
                           ? Source::Weight
                           : Source::Runtime;
  auto sourceOf = [&](Value value) {
    auto it = source.find(value);
    return it == source.end() ? Source::Runtime : it->second;
  };
  // An op's operands and the values its regions use from above.
  auto usedValues = [](Operation *op) {
    llvm::SetVector<Value> used(op->operand_begin(), op->operand_end());
    getUsedValuesDefinedAbove(op->getRegions(), used);
    return used;
  };
  for (Operation &op : body.without_terminator()) {
    Source kind = Source::Invariant;
    if (!isMemoryEffectFree(&op))
      kind = Source::Runtime;
    else
      for (Value value : usedValues(&op))
        kind = std::max(kind, sourceOf(value));
    for (Value result : op.getResults())
      source[result] = kind;
  }

  // Which weight values the rest of the function takes prepared. A view of
  // a weight, or a value that is no tensor, is computed by the rest itself
  // (as well as by the preparation, where it uses it) from what it is made
  // of.
  DenseSet<Value> takenPrepared;
  DenseSet<Operation *> recomputed;
  SmallVector<Value> worklist;
  for (Operation &op : body)
    if (op.hasTrait<OpTrait::IsTerminator>() || op.getNumResults() == 0 ||
        sourceOf(op.getResult(0)) == Source::Runtime)
      llvm::append_range(worklist, usedValues(&op));
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    if (sourceOf(value) != Source::Weight)
      continue;
    Operation *def = value.getDefiningOp();
    if (def && (isView(def) || !isa<RankedTensorType>(value.getType()))) {
      if (recomputed.insert(def).second)
        llvm::append_range(worklist, usedValues(def));
      continue;
    }
    takenPrepared.insert(value);
  }
  SmallVector<Value> prepared;
  for (BlockArgument argument : body.getArguments())
    if (takenPrepared.contains(argument))
      prepared.push_back(argument);
  for (Operation &op : body.without_terminator())
    for (Value result : op.getResults())
      if (takenPrepared.contains(result))
        prepared.push_back(result);

  OpBuilder builder(func->getContext());
  Location loc = func.getLoc();
  MLIRContext *context = func->getContext();
  auto readOnly = builder.getNamedAttr(
      bufferization::BufferizationDialect::kWritableAttrName,
      builder.getBoolAttr(false));

  // NAME_prepare: the weights' ops, the constants they use, and a copy of
  // each weight the rest takes as it is.
  SmallVector<Type> weightTypes, preparedTypes;
  for (unsigned i : weights)
    weightTypes.push_back(func.getArgumentTypes()[i]);
  for (Value value : prepared)
    preparedTypes.push_back(value.getType());
  builder.setInsertionPointAfter(func);
  auto prepare = func::FuncOp::create(
      builder, loc, prepareName,
      FunctionType::get(context, weightTypes, preparedTypes));
  prepare.setVisibility(func.getVisibility());
  for (NamedAttribute attribute : func->getDiscardableAttrs())
    prepare->setAttr(attribute.getName(), attribute.getValue());
  for (auto [j, i] : llvm::enumerate(weights)) {
    prepare.setArgAttrs(j, func.getArgAttrDict(i));
    prepare.removeArgAttr(j, mha::kWeightAttrName);
  }
  Block *entry = prepare.addEntryBlock();
  IRMapping mapping;
  for (auto [j, i] : llvm::enumerate(weights))
    mapping.map(body.getArgument(i), entry->getArgument(j));
  builder.setInsertionPointToStart(entry);
  for (Operation &op : body.without_terminator())
    if (op.getNumResults() && sourceOf(op.getResult(0)) != Source::Runtime)
      builder.clone(op, mapping);
  SmallVector<Value> returned;
  for (Value value : prepared) {
    Value mapped = mapping.lookup(value);
    if (isa<BlockArgument>(value)) {
      auto type = cast<RankedTensorType>(mapped.getType());
      Value empty = tensor::EmptyOp::create(
          builder, loc, tensor::getMixedSizes(builder, loc, mapped),
          type.getElementType());
      mapped = linalg::CopyOp::create(builder, loc, mapped, empty)
                   .getResult(0);
    }
    returned.push_back(mapped);
  }
  func::ReturnOp::create(builder, loc, returned);
  eraseDeadOps(*entry);

  // NAME_prepared: the function with the prepared values as its first
  // arguments, read-only, and the weights gone.
  IRMapping cloned;
  builder.setInsertionPointAfter(prepare);
  auto rest = cast<func::FuncOp>(builder.clone(*func, cloned));
  rest.setName(preparedName);
  Block &restBody = rest.getBody().front();
  SmallVector<unsigned> positions(prepared.size(), 0);
  SmallVector<DictionaryAttr> attributes(
      prepared.size(), builder.getDictionaryAttr({readOnly}));
  SmallVector<Location> locations(prepared.size(), loc);
  if (failed(rest.insertArguments(positions, preparedTypes, attributes,
                                  locations)))
    return rest.emitError() << "could not take its prepared weights";
  for (auto [j, value] : llvm::enumerate(prepared))
    cloned.lookup(value).replaceAllUsesWith(restBody.getArgument(j));
  eraseDeadOps(restBody);
  llvm::BitVector erased(rest.getNumArguments());
  for (unsigned i : weights) {
    BlockArgument weight = restBody.getArgument(prepared.size() + i);
    if (!weight.use_empty())
      return rest.emitError() << "still uses its weight argument #" << i
                              << " after its preparation was split off";
    erased.set(prepared.size() + i);
  }
  if (failed(rest.eraseArguments(erased)))
    return rest.emitError() << "could not drop its weight arguments";
  // Consumed: the pass leaves nothing to do to a second run.
  for (unsigned i : weights)
    func.removeArgAttr(i, mha::kWeightAttrName);

  // The function itself calls the two, so that their code is compiled once,
  // unless it updates an argument in place: the called function's result
  // would be a copy of it (mha-return-arguments-in-place leaves functions
  // that are called alone).
  if (updatesInPlace)
    return success();
  // A preparation that only copies weights (nothing packed: a decoding
  // step's projections) is not called: the rest takes the weights as they
  // are, rather than copies made on every call. Decided before the body is
  // cleared: `prepared` holds results of its ops.
  std::optional<SmallVector<unsigned>> copiedArguments;
  if (llvm::all_of(prepared, [](Value v) { return isa<BlockArgument>(v); }))
    copiedArguments = llvm::to_vector(llvm::map_range(prepared, [](Value v) {
      return cast<BlockArgument>(v).getArgNumber();
    }));
  prepared.clear();
  body.clear();
  builder.setInsertionPointToStart(&body);
  SmallVector<Value> weightValues, restValues;
  for (BlockArgument argument : body.getArguments())
    (llvm::is_contained(weights, argument.getArgNumber()) ? weightValues
                                                          : restValues)
        .push_back(argument);
  SmallVector<Value> preparedValues;
  if (copiedArguments)
    for (unsigned i : *copiedArguments)
      preparedValues.push_back(body.getArgument(i));
  else
    llvm::append_range(
        preparedValues,
        func::CallOp::create(builder, loc, prepare, weightValues).getResults());
  restValues.insert(restValues.begin(), preparedValues.begin(),
                    preparedValues.end());
  auto results = func::CallOp::create(builder, loc, rest, restValues);
  func::ReturnOp::create(builder, loc, results.getResults());
  return success();
}

namespace {
struct MHAOutlineWeightPreparationPass
    : mha::impl::MHAOutlineWeightPreparationPassBase<
          MHAOutlineWeightPreparationPass> {
  void runOnOperation() override {
    SmallVector<func::FuncOp> funcs(getOperation().getOps<func::FuncOp>());
    for (func::FuncOp func : funcs)
      if (failed(mha::outlineWeightPreparation(func)))
        return signalPassFailure();
  }
};
} // namespace
