//===- Passes.h - Input conversion: raising frontend IR to mha ops --*- C++ -*-===//

#ifndef MHA_INPUTCONVERSION_PASSES_H
#define MHA_INPUTCONVERSION_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir {
namespace mha {

#define GEN_PASS_DECL
#include "mha/InputConversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "mha/InputConversion/Passes.h.inc"

} // namespace mha
} // namespace mlir

#endif // MHA_INPUTCONVERSION_PASSES_H
