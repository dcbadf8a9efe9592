//===- Passes.h - Conversions between dialects ------------------*- C++ -*-===//

#ifndef MHA_CONVERSION_PASSES_H
#define MHA_CONVERSION_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir {
namespace mha {

#define GEN_PASS_DECL
#include "mha/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "mha/Conversion/Passes.h.inc"

} // namespace mha
} // namespace mlir

#endif // MHA_CONVERSION_PASSES_H
