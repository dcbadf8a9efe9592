//===- Passes.td - every MHA pass, for the pass reference --*- tablegen -*-===//
//
// Includes the Passes.td of each area; only the pass reference
// (docs/MHAPasses.md) is generated from it. Each area generates its own
// declarations and registration from its own file.
//
//===----------------------------------------------------------------------===//

include "mha/Dialect/MHA/Transforms/Passes.td"
include "mha/InputConversion/Passes.td"
include "mha/Codegen/Common/Passes.td"
include "mha/Codegen/CPU/Passes.td"
include "mha/Codegen/GPU/Passes.td"
include "mha/Conversion/Passes.td"
