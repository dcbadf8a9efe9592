// RUN: mha-opt %s --mha-tile-for-workgroups="rows=32 cols=64" | FileCheck %s
// REQUIRES: valgrind
// RUN: valgrind -q --error-exitcode=1 mha-opt %s --mha-tile-for-workgroups="rows=32 cols=64" -o /dev/null

// Tiling a linalg op into workgroups replaces (and frees) it: the pass read
// its context after that to build the loop's mapping, a read of freed memory
// (valgrind's memcheck, on every GPU lowering). A linalg op nothing uses
// (the zero fill of a contraction the tensor-core GEMM kernel replaced) is
// erased, not made a kernel.

// CHECK-LABEL: func.func @tile_and_dead
// CHECK-NOT: linalg.fill
// CHECK: scf.forall
// CHECK: linalg.generic
// CHECK: {mapping = [#gpu.block<linear_dim_0>, #gpu.block<linear_dim_1>]}
// CHECK-NOT: scf.forall
// CHECK-NOT: linalg.fill
// CHECK: return
func.func @tile_and_dead(%x: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  %dead = linalg.fill ins(%zero : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %0 = arith.mulf %a, %a : f32
    linalg.yield %0 : f32
  } -> tensor<64x64xf32>
  return %r : tensor<64x64xf32>
}
