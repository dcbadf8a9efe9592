//===- MHAOps.h - MHA dialect ops -------------------------------*- C++ -*-===//
//
// Declares the ops of the `mha` dialect.
//
//===----------------------------------------------------------------------===//

#ifndef MHA_DIALECT_MHA_IR_MHAOPS_H
#define MHA_DIALECT_MHA_IR_MHAOPS_H

#include "mha/Dialect/MHA/IR/MHADialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/TilingInterface.h"

#define GET_OP_CLASSES
#include "mha/Dialect/MHA/IR/MHAOps.h.inc"

namespace mlir::mha {

/// Slices an attention mask (rank 2 [Sq, Sk], 3 [B, Sq, Sk] or 4
/// [B|1, H|1, Sq|1, Sk|1]) to the scores of batches, query heads and queries
/// `offsets[0..2]` / `sizes[0..2]`, all keys. Dims of size 1 broadcast and are
/// not sliced; a dynamic dim that is 1 at run time is kept whole too.
Value sliceMaskForTile(OpBuilder &b, Location loc, Value mask,
                       ArrayRef<OpFoldResult> offsets,
                       ArrayRef<OpFoldResult> sizes);

} // namespace mlir::mha

#endif // MHA_DIALECT_MHA_IR_MHAOPS_H
