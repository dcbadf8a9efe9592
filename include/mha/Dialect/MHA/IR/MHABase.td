//===- MHABase.td - MHA dialect definition -----------------*- tablegen -*-===//
//
// The `mha` dialect: multi-head attention as first-class ops, so that
// compilers can tile, fuse and lower the whole layer instead of rediscovering
// it from a soup of matmuls and softmaxes.
//
//===----------------------------------------------------------------------===//

#ifndef MHA_DIALECT_MHA_IR_MHABASE_TD
#define MHA_DIALECT_MHA_IR_MHABASE_TD

include "mlir/IR/OpBase.td"

def MHA_Dialect : Dialect {
  let name = "mha";
  let cppNamespace = "::mlir::mha";
  let summary = "Multi-head attention as first-class ops";
  let description = [{
    The `mha` dialect describes multi-head attention: the whole layer
    (`mha.multi_head_attention`: input projections, per-head scaled dot-product
    attention with optional masks, causal attention, cross attention and
    grouped-query heads, and the output projection) and its core
    (`mha.attention` on head-split tensors). The ops have value semantics on
    tensors and are lowered progressively through linalg to CPU loops or GPU
    kernels. The numerical contract every lowering keeps is documented in
    `docs/Semantics.md`.
  }];
  let dependentDialects = [
    "::mlir::affine::AffineDialect",
    "::mlir::arith::ArithDialect",
    // Run-time verification creates cf.assert.
    "::mlir::cf::ControlFlowDialect",
    // Decompositions (AggregatedOpInterface) create these.
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
  ];
  let useDefaultAttributePrinterParser = 1;
  // mha.target and mha.lowering_config (MHAAttrs.td) hold their attributes.
  let hasOperationAttrVerify = 1;
  // mha.weight on function arguments.
  let hasRegionArgAttrVerify = 1;
}

/// Base class of every op of the dialect.
class MHA_Op<string mnemonic, list<Trait> traits = []>
    : Op<MHA_Dialect, mnemonic, traits>;

/// Element types attention computes on: scores, softmax and accumulators are
/// kept in f32 whatever the input type.
def MHA_FloatType : AnyTypeOf<[F16, BF16, F32]>;
def MHA_FloatTensor : RankedTensorOf<[MHA_FloatType]>;
/// Masks: i1 (true = may attend) or an additive float mask.
def MHA_MaskTensor : RankedTensorOf<[I1, MHA_FloatType]>;
/// Per-batch key lengths: how many keys of each batch are valid ([B]).
def MHA_LengthsTensor : 1DTensorOf<[I32, I64]>;

#endif // MHA_DIALECT_MHA_IR_MHABASE_TD
