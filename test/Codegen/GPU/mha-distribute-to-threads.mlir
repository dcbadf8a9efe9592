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

// A dynamic extent: every thread takes ceil(n / threads) rows, those past n
// none.

// CHECK-LABEL: func.func @dynamic_rows
// CHECK: scf.forall (%{{.*}}) in (32)
// CHECK:   %[[ROWS:.+]] = affine.max
// CHECK:   linalg.fill {{.*}} -> tensor<?x8xf32>
// CHECK: } {mapping = [#gpu.thread<linear_dim_0>]}
func.func @dynamic_rows(%x: f32, %n: index) -> tensor<?x8xf32> {
  %init = tensor.empty(%n) : tensor<?x8xf32>
  %r = scf.forall (%b) in (1) shared_outs(%o = %init) -> (tensor<?x8xf32>) {
    %f = linalg.fill ins(%x : f32) outs(%o : tensor<?x8xf32>) -> tensor<?x8xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %f into %o[0, 0] [%n, 8] [1, 1] : tensor<?x8xf32> into tensor<?x8xf32>
    }
  }
  return %r : tensor<?x8xf32>
}

// -----

// A single row (decoding): a row reduction has no parallel loop to spread;
// one thread runs it rather than all of them racing on its output.

// CHECK-LABEL: func.func @one_row
// CHECK: scf.forall (%{{.*}}) in (1)
// CHECK:   linalg.generic {{.*}} ins(%{{.*}} : tensor<1x8xf32>) outs(%{{.*}} : tensor<1xf32>)
// CHECK: } {mapping = [#gpu.thread<linear_dim_0>]}
func.func @one_row(%a: tensor<2x1x8xf32>, %z: tensor<1xf32>) -> tensor<2x1xf32> {
  %init = tensor.empty() : tensor<2x1xf32>
  %r = scf.forall (%b) in (2) shared_outs(%o = %init) -> (tensor<2x1xf32>) {
    %s = tensor.extract_slice %a[%b, 0, 0] [1, 1, 8] [1, 1, 1] : tensor<2x1x8xf32> to tensor<1x8xf32>
    %sum = linalg.generic {indexing_maps = [affine_map<(r, c) -> (r, c)>, affine_map<(r, c) -> (r)>], iterator_types = ["parallel", "reduction"]}
             ins(%s : tensor<1x8xf32>) outs(%z : tensor<1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %y = arith.addf %in, %out : f32
      linalg.yield %y : f32
    } -> tensor<1xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %sum into %o[%b, 0] [1, 1] [1, 1] : tensor<1xf32> into tensor<2x1xf32>
    }
  }
  return %r : tensor<2x1xf32>
}

// -----

// Tile tensors shared by two writers (CSE merged equal fills; one was
// hoisted out of the loop): each writer gets its own, made right before it,
// so that bufferization needs no copies.

// CHECK-LABEL: func.func @one_buffer_per_writer
// CHECK:   %[[INIT:.+]] = bufferization.alloc_tensor() {memory_space = #gpu.address_space<workgroup>} : tensor<32xf32>
// CHECK:   scf.forall {{.*}} shared_outs(%{{.*}} = %[[INIT]])
// CHECK:   scf.for
// CHECK:     %[[OWN:.+]] = bufferization.alloc_tensor() {memory_space = #gpu.address_space<workgroup>} : tensor<32xf32>
// CHECK:     scf.forall {{.*}} shared_outs(%{{.*}} = %[[OWN]])
// CHECK:       linalg.fill
// CHECK:     scf.forall
// CHECK:       linalg.generic
func.func @one_buffer_per_writer(%a: tensor<64x16xf32>) -> tensor<64xf32> {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %ninf = arith.constant 0xFF800000 : f32
  %init = tensor.empty() : tensor<64xf32>
  %r = scf.forall (%i) = (0) to (64) step (32) shared_outs(%o = %init) -> (tensor<64xf32>) {
    %e = tensor.empty() : tensor<32xf32>
    %f = linalg.fill ins(%ninf : f32) outs(%e : tensor<32xf32>) -> tensor<32xf32>
    %m = scf.for %k = %c0 to %c2 step %c8 iter_args(%m0 = %f) -> (tensor<32xf32>) {
      %s = tensor.extract_slice %a[%i, %k] [32, 8] [1, 1] : tensor<64x16xf32> to tensor<32x8xf32>
      %rowmax = linalg.generic {indexing_maps = [affine_map<(r, c) -> (r, c)>, affine_map<(r, c) -> (r)>], iterator_types = ["parallel", "reduction"]}
                  ins(%s : tensor<32x8xf32>) outs(%f : tensor<32xf32>) {
      ^bb0(%in: f32, %out: f32):
        %y = arith.maximumf %in, %out : f32
        linalg.yield %y : f32
      } -> tensor<32xf32>
      %next = linalg.generic {indexing_maps = [affine_map<(r) -> (r)>, affine_map<(r) -> (r)>], iterator_types = ["parallel"]}
                ins(%rowmax : tensor<32xf32>) outs(%m0 : tensor<32xf32>) {
      ^bb0(%in: f32, %out: f32):
        %y = arith.maximumf %in, %out : f32
        linalg.yield %y : f32
      } -> tensor<32xf32>
      scf.yield %next : tensor<32xf32>
    }
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %m into %o[%i] [32] [1] : tensor<32xf32> into tensor<64xf32>
    }
  }
  return %r : tensor<64xf32>
}

// -----

func.func @scalar_reduction(%a: tensor<2x8xf32>, %z: tensor<f32>) -> tensor<2xf32> {
  %init = tensor.empty() : tensor<2xf32>
  %r = scf.forall (%b) in (2) shared_outs(%o = %init) -> (tensor<2xf32>) {
    %s = tensor.extract_slice %a[%b, 0] [1, 8] [1, 1] : tensor<2x8xf32> to tensor<8xf32>
    // expected-error @below {{'linalg.generic' op has no parallel loop to give to a thread (a reduction to a scalar)}}
    %sum = linalg.generic {indexing_maps = [affine_map<(c) -> (c)>, affine_map<(c) -> ()>], iterator_types = ["reduction"]}
             ins(%s : tensor<8xf32>) outs(%z : tensor<f32>) {
    ^bb0(%in: f32, %out: f32):
      %y = arith.addf %in, %out : f32
      linalg.yield %y : f32
    } -> tensor<f32>
    %e = tensor.expand_shape %sum [] output_shape [1] : tensor<f32> into tensor<1xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %e into %o[%b] [1] [1] : tensor<1xf32> into tensor<2xf32>
    }
  }
  return %r : tensor<2xf32>
}

// -----

// An input every thread reads whole (the value block of P·V: its map does not
// use the row loop the threads share) is copied into workgroup memory first,
// a row per thread; the input that varies with the row is read in place.

// CHECK-LABEL: func.func @stage_shared_input
// CHECK: %[[WG:.+]] = bufferization.alloc_tensor() {memory_space = #gpu.address_space<workgroup>} : tensor<16x8xf32>
// CHECK: %[[STAGED:.+]] = scf.forall (%{{.*}}) in (16) shared_outs(%{{.*}} = %[[WG]])
// CHECK:   linalg.copy
// CHECK: scf.forall (%{{.*}}) in (32)
// CHECK:   linalg.generic {{.*}} ins(%{{.*}}, %[[STAGED]] : tensor<1x16xf32>, tensor<16x8xf32>)
func.func @stage_shared_input(%p: tensor<64x16xf32>, %v: tensor<16x8xf32>) -> tensor<64x8xf32> {
  %init = tensor.empty() : tensor<64x8xf32>
  %zero = arith.constant 0.0 : f32
  %r = scf.forall (%i) = (0) to (64) step (32) shared_outs(%o = %init) -> (tensor<64x8xf32>) {
    %s = tensor.extract_slice %p[%i, 0] [32, 16] [1, 1] : tensor<64x16xf32> to tensor<32x16xf32>
    %e = tensor.empty() : tensor<32x8xf32>
    %z = linalg.fill ins(%zero : f32) outs(%e : tensor<32x8xf32>) -> tensor<32x8xf32>
    %pv = linalg.generic {indexing_maps = [affine_map<(r, c, k) -> (r, k)>, affine_map<(r, c, k) -> (k, c)>, affine_map<(r, c, k) -> (r, c)>],
                          iterator_types = ["parallel", "parallel", "reduction"]}
            ins(%s, %v : tensor<32x16xf32>, tensor<16x8xf32>) outs(%z : tensor<32x8xf32>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %y = arith.addf %acc, %m : f32
      linalg.yield %y : f32
    } -> tensor<32x8xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %pv into %o[%i, 0] [32, 8] [1, 1] : tensor<32x8xf32> into tensor<64x8xf32>
    }
  }
  return %r : tensor<64x8xf32>
}
