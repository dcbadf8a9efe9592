// RUN: mha-opt %s --split-input-file --verify-diagnostics --mha-distribute-to-threads --canonicalize | FileCheck %s

// The threads per workgroup from the function's mha.lowering_config (16);
// without one (and no option) the count is refused.

// CHECK-LABEL: func.func @tiles
// CHECK: scf.forall (%{{.*}}) in (16)
// CHECK: } {mapping = [#gpu.thread<linear_dim_0>]}
func.func @tiles(%a: tensor<64x16xf32>) -> tensor<64x16xf32>
    attributes {mha.lowering_config = #mha.lowering_config<threads = 16>} {
  %init = tensor.empty() : tensor<64x16xf32>
  %r = scf.forall (%i) = (0) to (64) step (32) shared_outs(%o = %init) -> (tensor<64x16xf32>) {
    %s = tensor.extract_slice %a[%i, 0] [32, 16] [1, 1] : tensor<64x16xf32> to tensor<32x16xf32>
    %e = tensor.empty() : tensor<32x16xf32>
    %x = linalg.copy ins(%s : tensor<32x16xf32>) outs(%e : tensor<32x16xf32>) -> tensor<32x16xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %x into %o[%i, 0] [32, 16] [1, 1] : tensor<32x16xf32> into tensor<64x16xf32>
    }
  }
  return %r : tensor<64x16xf32>
}

// -----

// expected-error @+1 {{threads per workgroup must be positive, found 0 (0: from the function's mha.lowering_config, which sets none)}}
func.func @none(%out: memref<64xf32>) {
  return
}
