//===- MHAAttrs.td - MHA dialect attributes ----------------*- tablegen -*-===//
//
// Attributes of the `mha` dialect.
//
//===----------------------------------------------------------------------===//

#ifndef MHA_DIALECT_MHA_IR_MHAATTRS_TD
#define MHA_DIALECT_MHA_IR_MHAATTRS_TD

include "mha/Dialect/MHA/IR/MHABase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/Dialect/SCF/IR/DeviceMappingInterface.td"

def MHA_PeeledDimAttr : AttrDef<MHA_Dialect, "PeeledDim",
    [DeclareAttrInterfaceMethods<DeviceMappingAttrInterface>]> {
  let mnemonic = "peeled";
  let summary = "Marks the dims of scf.forall loops peeled off one loop";
  let description = [{
    `mha-vectorize` peels the partial tile of a parallel loop into a second
    `scf.forall` (so that each loop's tiles have static sizes) and gives
    every loop made of one loop this mapping, `#mha.peeled<d>` for dim `d`,
    until `mha-rejoin-peeled-loops` joins them again after bufferization.
    As a mapping it keeps the canonicalizer from folding a peeled loop with
    a single iteration (the partial tile of one batch) into straight-line
    code, which would then run on one thread alone. It maps to no hardware:
    the loops run as any other `scf.forall`.
  }];
  let parameters = (ins "int64_t":$dim);
  let assemblyFormat = "`<` $dim `>`";
}

#endif // MHA_DIALECT_MHA_IR_MHAATTRS_TD
