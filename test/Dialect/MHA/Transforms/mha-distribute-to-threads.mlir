// RUN: mha-opt %s --split-input-file --verify-diagnostics --mha-distribute-to-threads=threads=32 --canonicalize | FileCheck %s

// Inside a tile loop, each linalg op over a #gpu.thread loop (a thread per
// row), the tile's own tensor in workgroup memory.

// CHECK-LABEL: func.func @tiles
// CHECK: scf.forall (%{{.*}}) = (0) to (64) step (32)
// CHECK:   %[[WG:.+]] = bufferization.alloc_tensor() {memory_space = #gpu.address_space<workgroup>} : tensor<32x16xf32>
// CHECK:   scf.forall (%[[T:.+]]) in (32) shared_outs(%{{.*}} = %[[WG]])
// CHECK:     linalg.generic {{.*}} ins(%{{.*}} : tensor<1x16xf32>) outs(%{{.*}} : tensor<1x16xf32>)
// CHECK:   } {mapping = [#gpu.thread<linear_dim_0>]}
func.func @tiles(%a: tensor<64x16xf32>) -> tensor<64x16xf32> {
  %init = tensor.empty() : tensor<64x16xf32>
  %r = scf.forall (%i) = (0) to (64) step (32) shared_outs(%o = %init) -> (tensor<64x16xf32>) {
    %s = tensor.extract_slice %a[%i, 0] [32, 16] [1, 1] : tensor<64x16xf32> to tensor<32x16xf32>
    %e = tensor.empty() : tensor<32x16xf32>
    %x = linalg.generic {indexing_maps = [affine_map<(r, c) -> (r, c)>, affine_map<(r, c) -> (r, c)>], iterator_types = ["parallel", "parallel"]}
           ins(%s : tensor<32x16xf32>) outs(%e : tensor<32x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %y = math.exp %in : f32
      linalg.yield %y : f32
    } -> tensor<32x16xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %x into %o[%i, 0] [32, 16] [1, 1] : tensor<32x16xf32> into tensor<64x16xf32>
    }
  }
  return %r : tensor<64x16xf32>
}

// -----

// More rows than threads: ceil(rows / threads) rows each, still a loop over
// the 32 threads (normalized, as the thread mapping needs).

// CHECK-LABEL: func.func @more_rows
// CHECK: scf.forall (%{{.*}}) in (32)
// CHECK:   linalg.fill {{.*}} -> tensor<2x8xf32>
// CHECK: } {mapping = [#gpu.thread<linear_dim_0>]}
func.func @more_rows(%x: f32) -> tensor<2x64x8xf32> {
  %init = tensor.empty() : tensor<2x64x8xf32>
  %r = scf.forall (%b) in (2) shared_outs(%o = %init) -> (tensor<2x64x8xf32>) {
    %e = tensor.empty() : tensor<64x8xf32>
    %f = linalg.fill ins(%x : f32) outs(%e : tensor<64x8xf32>) -> tensor<64x8xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %f into %o[%b, 0, 0] [1, 64, 8] [1, 1, 1] : tensor<64x8xf32> into tensor<2x64x8xf32>
    }
  }
  return %r : tensor<2x64x8xf32>
}

// -----

func.func @dynamic_rows(%x: f32, %n: index) -> tensor<?x8xf32> {
  %init = tensor.empty(%n) : tensor<?x8xf32>
  %r = scf.forall (%b) in (1) shared_outs(%o = %init) -> (tensor<?x8xf32>) {
    // expected-error @below {{'linalg.fill' op has a dynamic extent along the loop distributed over threads; pad it to a static bound first}}
    %f = linalg.fill ins(%x : f32) outs(%o : tensor<?x8xf32>) -> tensor<?x8xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %f into %o[0, 0] [%n, 8] [1, 1] : tensor<?x8xf32> into tensor<?x8xf32>
    }
  }
  return %r : tensor<?x8xf32>
}
