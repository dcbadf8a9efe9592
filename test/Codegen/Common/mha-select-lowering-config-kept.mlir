// RUN: mha-opt %s --mha-select-lowering-config | FileCheck %s --check-prefix=AVX512
// RUN: mha-opt %s --mha-select-lowering-config="overrides={#mha.lowering_config<q_tile = 16, register_tile = [2, 16]>}" | FileCheck %s --check-prefix=OVER

// What the input IR sets is kept (the module's target included), the rest
// chosen; overrides still win.
// AVX512: module attributes {mha.target = #mha.target<kind = cpu, vector_bits = 256>}
// AVX512-LABEL: func.func @by_hand
// AVX512-SAME: #mha.lowering_config<register_tile = [4, 16], chunk = 32>
// AVX512: #mha.lowering_config<q_tile = 16, kv_tile = 128>
// OVER-LABEL: func.func @by_hand
// OVER-SAME: #mha.lowering_config<register_tile = [2, 16], chunk = 32>
// OVER: #mha.lowering_config<q_tile = 16, kv_tile = 128>
module attributes {mha.target = #mha.target<kind = cpu, vector_bits = 256>} {
  func.func @by_hand(%q: tensor<1x2x100x16xf32>, %init: tensor<1x2x100x16xf32>) -> tensor<1x2x100x16xf32>
      attributes {mha.lowering_config = #mha.lowering_config<chunk = 32>} {
    %o = mha.attention ins(%q, %q, %q : tensor<1x2x100x16xf32>, tensor<1x2x100x16xf32>, tensor<1x2x100x16xf32>) outs(%init : tensor<1x2x100x16xf32>)
      {mha.lowering_config = #mha.lowering_config<q_tile = 16, kv_tile = 128>} -> tensor<1x2x100x16xf32>
    return %o : tensor<1x2x100x16xf32>
  }
}
