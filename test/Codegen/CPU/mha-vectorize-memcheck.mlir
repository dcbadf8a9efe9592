// REQUIRES: valgrind
// RUN: valgrind -q --error-exitcode=1 mha-opt %s --mha-vectorize -o /dev/null

// Peeling a parallel loop replaces (and frees) it: peelParallelLoop read the
// loop's mapping and rank after that, a read of freed memory inside
// libMLIR's accessors that ASan does not see and that crashed one run in
// several hundred of the differential tester (a garbage attribute).
// Valgrind's memcheck reports it on every peeled loop.
func.func @peel_static(%a: tensor<200x64xf32>, %b: tensor<64x32xf32>, %init: tensor<200x32xf32>) -> tensor<200x32xf32> {
  %r = scf.forall (%i) = (0) to (200) step (64) shared_outs(%o = %init) -> (tensor<200x32xf32>) {
    %n = affine.min affine_map<(d0) -> (64, -d0 + 200)>(%i)
    %as = tensor.extract_slice %a[%i, 0] [%n, 64] [1, 1] : tensor<200x64xf32> to tensor<?x64xf32>
    %os = tensor.extract_slice %o[%i, 0] [%n, 32] [1, 1] : tensor<200x32xf32> to tensor<?x32xf32>
    %m = linalg.matmul ins(%as, %b : tensor<?x64xf32>, tensor<64x32xf32>) outs(%os : tensor<?x32xf32>) -> tensor<?x32xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %m into %o[%i, 0] [%n, 32] [1, 1] : tensor<?x32xf32> into tensor<200x32xf32>
    }
  }
  return %r : tensor<200x32xf32>
}
