// RUN: mha-opt %s --split-input-file --verify-diagnostics --mha-tile-for-workgroups="rows=32 cols=64" --canonicalize | FileCheck %s
// RUN: mha-opt %s --split-input-file --verify-diagnostics --mha-tile-for-workgroups="rows=32 cols=64 depth=0" --canonicalize | FileCheck %s --check-prefix=DIRECT
// RUN: not mha-opt %s --mha-tile-for-workgroups="rows=0" 2>&1 | FileCheck %s --check-prefix=SIZES
// SIZES: error: workgroup tile sizes must be positive, found 0x64 (depth 32)

// depth=0: no reduction steps, each thread reads its inputs directly.
// DIRECT-LABEL: func.func @projection
// DIRECT-NOT: scf.for %
// DIRECT-NOT: linalg.copy
// DIRECT: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x32x64xf32>, tensor<64x1x16xf32>)

// A projection (contraction into the head-split layout, bias broadcast as
// its initial value): one scf.forall over (batch, head, 32-row) tiles with
// the bias broadcast fused in; the head dim stays whole; the reduction over
// the embedding runs in steps of 32, each step's activation and weight
// tiles copied into tile tensors (workgroup memory, later) first. The loop
// is mapped to workgroups (#gpu.block), so canonicalization keeps it and its
// dimension of one iteration (the head dim), which mha-map-forall-to-gpu
// leaves out of the grid.

// CHECK-LABEL: func.func @projection
// CHECK: scf.forall (%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) = (0, 0, 0, 0) to (2, 4, 96, 16) step (1, 1, 32, 16)
// CHECK:   %[[BIAS:.+]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<1x1x32x16xf32>)
// CHECK:   scf.for %{{.*}} = %c0 to %c64 step %c32 iter_args(%[[ACC:.+]] = %[[BIAS]])
// CHECK:     %[[A:.+]] = linalg.copy ins(%{{.*}} : tensor<1x32x32xf32>) outs(%{{.*}} : tensor<1x32x32xf32>)
// CHECK:     %[[B:.+]] = linalg.copy ins(%{{.*}} : tensor<32x1x16xf32>) outs(%{{.*}} : tensor<32x1x16xf32>)
// CHECK:     linalg.generic {{.*}} ins(%[[A]], %[[B]] : tensor<1x32x32xf32>, tensor<32x1x16xf32>) outs(%[[ACC]] : tensor<1x1x32x16xf32>)
// CHECK: scf.forall.in_parallel
// CHECK: } {mapping = [#gpu.block<linear_dim_0>, #gpu.block<linear_dim_1>, #gpu.block<linear_dim_2>, #gpu.block<linear_dim_3>]}
// CHECK-NOT: linalg.generic
func.func @projection(%x: tensor<2x96x64xf32>, %w: tensor<64x4x16xf32>, %b: tensor<4x16xf32>) -> tensor<2x4x96x16xf32> {
  %e = tensor.empty() : tensor<2x4x96x16xf32>
  %init = linalg.generic {indexing_maps = [affine_map<(b, h, s, d) -> (h, d)>, affine_map<(b, h, s, d) -> (b, h, s, d)>],
                          iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
            ins(%b : tensor<4x16xf32>) outs(%e : tensor<2x4x96x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<2x4x96x16xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(b, h, s, e, d) -> (b, s, e)>, affine_map<(b, h, s, e, d) -> (e, h, d)>, affine_map<(b, h, s, e, d) -> (b, h, s, d)>],
                       iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]}
         ins(%x, %w : tensor<2x96x64xf32>, tensor<64x4x16xf32>) outs(%init : tensor<2x4x96x16xf32>) {
  ^bb0(%a: f32, %c: f32, %acc: f32):
    %m = arith.mulf %a, %c : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x4x96x16xf32>
  return %p : tensor<2x4x96x16xf32>
}

// -----

// A wide output (768 columns): tiles of at most 64 columns. Ops on i1 stay
// on the host (GPU buffers hold no i1).

// CHECK-LABEL: func.func @wide_and_bool
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<8x8xi1>)
// CHECK: scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (96, 768) step (32, 64)
// CHECK:   linalg.generic {{.*}} outs(%{{.*}} : tensor<32x64xf32>)
// CHECK: } {mapping = [#gpu.block<linear_dim_0>, #gpu.block<linear_dim_1>]}
func.func @wide_and_bool(%m: tensor<8x8xi1>, %x: tensor<96x768xf32>) -> (tensor<8x8xf32>, tensor<96x768xf32>) {
  %e = tensor.empty() : tensor<8x8xf32>
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %add = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                         iterator_types = ["parallel", "parallel"]}
           ins(%m : tensor<8x8xi1>) outs(%e : tensor<8x8xf32>) {
  ^bb0(%in: i1, %out: f32):
    %v = arith.select %in, %zero, %ninf : f32
    linalg.yield %v : f32
  } -> tensor<8x8xf32>
  %e2 = tensor.empty() : tensor<96x768xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
         ins(%x : tensor<96x768xf32>) outs(%e2 : tensor<96x768xf32>) {
  ^bb0(%in: f32, %out: f32):
    %v = math.exp %in : f32
    linalg.yield %v : f32
  } -> tensor<96x768xf32>
  return %add, %y : tensor<8x8xf32>, tensor<96x768xf32>
}

// -----

// Nor is an op on i1 fused into a consumer's workgroup tiles (the additive
// form of a boolean mask the attention weights read): it stays on the host,
// and the kernel reads its f32 result.

// CHECK-LABEL: func.func @bool_producer
// CHECK: %[[ADD:.+]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<8x64xi1>) outs(%{{.*}} : tensor<8x64xf32>)
// CHECK: scf.forall
// CHECK-NOT: xi1>
// CHECK:   linalg.generic {{.*}} ins(%{{.*}}, %[[ADD]] : tensor<8x64xf32>, tensor<8x64xf32>)
// CHECK: } {mapping
func.func @bool_producer(%m: tensor<8x64xi1>, %x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %e = tensor.empty() : tensor<8x64xf32>
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %add = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                         iterator_types = ["parallel", "parallel"]}
           ins(%m : tensor<8x64xi1>) outs(%e : tensor<8x64xf32>) {
  ^bb0(%in: i1, %out: f32):
    %v = arith.select %in, %zero, %ninf : f32
    linalg.yield %v : f32
  } -> tensor<8x64xf32>
  %e2 = tensor.empty() : tensor<8x64xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
         ins(%x, %add : tensor<8x64xf32>, tensor<8x64xf32>) outs(%e2 : tensor<8x64xf32>) {
  ^bb0(%in: f32, %b: f32, %out: f32):
    %v = arith.addf %in, %b : f32
    linalg.yield %v : f32
  } -> tensor<8x64xf32>
  return %y : tensor<8x64xf32>
}

// -----

func.func @reduction_only(%x: tensor<8xf32>, %z: tensor<f32>) -> tensor<f32> {
  // expected-error @below {{'linalg.generic' op has no parallel loop to spread over workgroups}}
  %s = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>], iterator_types = ["reduction"]}
         ins(%x : tensor<8xf32>) outs(%z : tensor<f32>) {
  ^bb0(%in: f32, %out: f32):
    %v = arith.addf %in, %out : f32
    linalg.yield %v : f32
  } -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// An scf.forall already in the function (mha.cache_append's decomposition,
// one iteration per batch and head) is mapped to workgroups as it is: the
// canonicalizer then keeps it although it has a single iteration, rather
// than inlining its copy into host code.
// CHECK-LABEL: func.func @cache_append
// CHECK: scf.forall (%{{.*}}, %{{.*}}) in (1, 1) shared_outs
// CHECK:   linalg.copy
// CHECK: } {mapping = [#gpu.block<linear_dim_0>, #gpu.block<linear_dim_1>]}
// DIRECT-LABEL: func.func @cache_append
func.func @cache_append(%u: tensor<1x1x1x16xf32>, %at: index, %cache: tensor<1x1x64x16xf32>) -> tensor<1x1x64x16xf32> {
  %r = scf.forall (%b, %h) in (1, 1) shared_outs(%c = %cache) -> (tensor<1x1x64x16xf32>) {
    %rows = tensor.extract_slice %u[%b, %h, 0, 0] [1, 1, 1, 16] [1, 1, 1, 1] : tensor<1x1x1x16xf32> to tensor<1x1x1x16xf32>
    %slot = tensor.extract_slice %c[%b, %h, %at, 0] [1, 1, 1, 16] [1, 1, 1, 1] : tensor<1x1x64x16xf32> to tensor<1x1x1x16xf32>
    %copy = linalg.copy ins(%rows : tensor<1x1x1x16xf32>) outs(%slot : tensor<1x1x1x16xf32>) -> tensor<1x1x1x16xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %copy into %c[%b, %h, %at, 0] [1, 1, 1, 16] [1, 1, 1, 1] : tensor<1x1x1x16xf32> into tensor<1x1x64x16xf32>
    }
  }
  return %r : tensor<1x1x64x16xf32>
}
