// RUN: mha-opt %s --split-input-file --verify-diagnostics --mha-map-forall-to-gpu=threads=32 --canonicalize | FileCheck %s

// A bufferized tile loop as a gpu.launch: one workgroup per iteration, the
// grid computed at run time from the bounds (here a dynamic length), the
// thread loop mapped to thread ids with a barrier after it.

// CHECK-DAG: #[[GRID:.+]] = affine_map<()[s0] -> (s0 ceildiv 32)>
// CHECK-LABEL: func.func @launch
// CHECK: %[[N:.+]] = memref.dim
// CHECK: %[[G:.+]] = affine.apply #[[GRID]]()[%[[N]]]
// CHECK: gpu.launch blocks(%[[BX:[a-z0-9_]+]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[G]], %{{.*}} = %c1, %{{.*}} = %c1) threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c32, %{{.*}} = %c1, %{{.*}} = %c1)
// CHECK:   %[[START:.+]] = affine.apply #{{.*}}()[%[[BX]]]
// CHECK:   %[[T:.+]] = gpu.thread_id x
// CHECK:   %[[J:.+]] = arith.addi %[[START]], %[[T]]
// CHECK:   memref.store %{{.*}}, %{{.*}}[%[[J]]]
// CHECK:   gpu.barrier
// CHECK:   gpu.terminator
// CHECK-NOT: scf.forall
func.func @launch(%out: memref<?xf32>, %x: f32) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %out, %c0 : memref<?xf32>
  scf.forall (%i) = (0) to (%n) step (32) {
    scf.forall (%t) in (32) {
      %j = arith.addi %i, %t : index
      memref.store %x, %out[%j] : memref<?xf32>
    } {mapping = [#gpu.thread<linear_dim_0>]}
  }
  return
}

// -----

// A loop mapped to workgroups keeps its dimensions of one iteration through
// canonicalization: they take no grid dimension (their index is the lower
// bound), the others take x and y in order; a loop of one iteration in all
// is still a launch, of one workgroup; a loop of none launches nothing.

// CHECK-LABEL: func.func @unit_dims
// CHECK: gpu.launch blocks(%[[BX:[a-z0-9_]+]], %[[BY:[a-z0-9_]+]], %{{.*}}) in (%{{.*}} = %c2, %{{.*}} = %c3, %{{.*}} = %c1)
// CHECK:   memref.store %{{.*}}, %{{.*}}[%[[BX]], %c0, %[[BY]]]
// CHECK: gpu.launch blocks(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c1, %{{.*}} = %c1, %{{.*}} = %c1)
// CHECK:   memref.store %{{.*}}, %{{.*}}[%c0, %c0, %c0]
func.func @unit_dims(%out: memref<2x1x3xf32>, %x: f32) {
  scf.forall (%a, %b, %c) in (2, 1, 3) {
    memref.store %x, %out[%a, %b, %c] : memref<2x1x3xf32>
  } {mapping = [#gpu.block<linear_dim_0>, #gpu.block<linear_dim_1>, #gpu.block<linear_dim_2>]}
  scf.forall (%a, %b) in (1, 1) {
    memref.store %x, %out[%a, %b, %b] : memref<2x1x3xf32>
  } {mapping = [#gpu.block<linear_dim_0>, #gpu.block<linear_dim_1>]}
  return
}

// CHECK-LABEL: func.func @empty
// CHECK-NOT: gpu.launch
// CHECK: return
func.func @empty(%out: memref<2x0xf32>, %x: f32) {
  scf.forall (%a, %b) in (2, 0) {
    memref.store %x, %out[%a, %b] : memref<2x0xf32>
  } {mapping = [#gpu.block<linear_dim_0>, #gpu.block<linear_dim_1>]}
  return
}

// -----

func.func @tensors(%t: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @below {{'scf.forall' op must be bufferized before GPU mapping}}
  %r = scf.forall (%i) in (8) shared_outs(%o = %t) -> (tensor<8xf32>) {
    scf.forall.in_parallel {
    }
  }
  return %r : tensor<8xf32>
}

// -----

// Dimensions of one iteration do not count: four of 2 are one too many.
func.func @four_dims(%out: memref<2x2x2x2xf32>) {
  // expected-error @below {{'scf.forall' op has more than 3 dimensions of more than one iteration for the grid}}
  scf.forall (%a, %b, %c, %d) in (2, 2, 2, 2) {
  }
  return
}

// -----

// More thread-loop iterations than threads in the workgroup: upstream's
// thread mapping refuses, and the launch says so.

func.func @too_many_threads(%out: memref<64xf32>, %x: f32) {
  // expected-error @below {{'gpu.launch' op could not map its thread loops}}
  scf.forall (%i) in (2) {
    // expected-error @below {{the number of required parallel resources (blocks or threads) 64 overflows the number of available resources 32}}
    scf.forall (%t) in (64) {
      memref.store %x, %out[%t] : memref<64xf32>
    } {mapping = [#gpu.thread<linear_dim_0>]}
  }
  return
}

// -----

// Workgroup buffers of the tile become workgroup attributions of the launch
// (their deallocations go with them); device-memory buffers stay.

// CHECK-LABEL: func.func @workgroup_buffer
// CHECK: gpu.launch {{.*}} workgroup(%[[BUF:.+]] : memref<32xf32, #gpu.address_space<workgroup>>)
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.dealloc
// CHECK:   memref.store %{{.*}}, %[[BUF]]
func.func @workgroup_buffer(%out: memref<64xf32>, %x: f32) {
  scf.forall (%i) in (2) {
    %buf = memref.alloc() : memref<32xf32, #gpu.address_space<workgroup>>
    scf.forall (%t) in (32) {
      memref.store %x, %buf[%t] : memref<32xf32, #gpu.address_space<workgroup>>
      %y = memref.load %buf[%t] : memref<32xf32, #gpu.address_space<workgroup>>
      memref.store %y, %out[%t] : memref<64xf32>
    } {mapping = [#gpu.thread<linear_dim_0>]}
    memref.dealloc %buf : memref<32xf32, #gpu.address_space<workgroup>>
  }
  return
}

// -----

func.func @dynamic_workgroup_buffer(%out: memref<64xf32>, %x: f32, %n: index) {
  scf.forall (%i) in (2) {
    // expected-error @below {{'memref.alloc' op allocates workgroup memory of dynamic size 'memref<?xf32, #gpu.address_space<workgroup>>'; workgroup memory has static sizes}}
    %buf = memref.alloc(%n) : memref<?xf32, #gpu.address_space<workgroup>>
    scf.forall (%t) in (32) {
      memref.store %x, %buf[%t] : memref<?xf32, #gpu.address_space<workgroup>>
    } {mapping = [#gpu.thread<linear_dim_0>]}
  }
  return
}

// -----

// Host buffers that are not returned are freed where the function returns
// (after every launch: launches are synchronous).

// CHECK-LABEL: func.func @host_buffers
// CHECK: %[[TMP:.+]] = memref.alloc() : memref<64xf32>
// CHECK: %[[OUT:.+]] = memref.alloc() : memref<64xf32>
// CHECK: gpu.launch
// CHECK: gpu.launch
// CHECK: memref.dealloc %[[TMP]]
// CHECK-NOT: memref.dealloc
// CHECK: return %[[OUT]]
func.func @host_buffers(%x: f32) -> memref<64xf32> {
  %tmp = memref.alloc() : memref<64xf32>
  %out = memref.alloc() : memref<64xf32>
  scf.forall (%i) = (0) to (64) step (32) {
    scf.forall (%t) in (32) {
      %j = arith.addi %i, %t : index
      memref.store %x, %tmp[%j] : memref<64xf32>
    } {mapping = [#gpu.thread<linear_dim_0>]}
  }
  scf.forall (%i) = (0) to (64) step (32) {
    scf.forall (%t) in (32) {
      %j = arith.addi %i, %t : index
      %y = memref.load %tmp[%j] : memref<64xf32>
      memref.store %y, %out[%j] : memref<64xf32>
    } {mapping = [#gpu.thread<linear_dim_0>]}
  }
  return %out : memref<64xf32>
}

// -----

// An scf.if in a kernel whose branches yield the same buffer cast to a less
// static type (a causal block masked or not): its users get one cast of the
// buffer made after the if, which canonicalization folds into them (SPIR-V
// cannot lower memref.cast).

// CHECK-LABEL: func.func @if_yields_buffer
// CHECK: gpu.launch
// CHECK-NOT: memref.cast
// CHECK: memref.load %[[BUF:.+]][%{{.*}}] : memref<32xf32>
// CHECK: gpu.terminator
func.func @if_yields_buffer(%buf: memref<32xf32>, %out: memref<64xf32>, %c: i1) {
  scf.forall (%i) = (0) to (64) step (32) {
    %r = scf.if %c -> (memref<?xf32>) {
      %a = memref.cast %buf : memref<32xf32> to memref<?xf32>
      scf.yield %a : memref<?xf32>
    } else {
      %b = memref.cast %buf : memref<32xf32> to memref<?xf32>
      scf.yield %b : memref<?xf32>
    }
    scf.forall (%t) in (32) {
      %y = memref.load %r[%t] : memref<?xf32>
      %j = arith.addi %i, %t : index
      memref.store %y, %out[%j] : memref<64xf32>
    } {mapping = [#gpu.thread<linear_dim_0>]}
  }
  return
}

// -----

// Scalar reads of a host buffer a kernel uses (a per-batch key length
// computed on the host, `len + Sn` after a KV cache append) are made in the
// kernel when every write to the buffer comes before them: Vulkan kernels
// take buffers, not scalars. A buffer written after the read keeps the read
// on the host.

// CHECK-LABEL: func.func @sink_host_lengths
// CHECK: %[[HOST:.+]] = memref.alloc() : memref<1xi32>
// CHECK: linalg.generic {{.*}} outs(%[[HOST]] : memref<1xi32>)
// CHECK: %[[LATE:.+]] = memref.alloc() : memref<1xi32>
// CHECK: %[[KEEP:.+]] = memref.load %[[LATE]]
// CHECK: %[[KEEPI:.+]] = arith.index_cast %[[KEEP]]
// CHECK-NOT: memref.load %[[HOST]]
// CHECK: gpu.launch
// CHECK:   %[[L:.+]] = memref.load %[[HOST]][%{{.*}}] : memref<1xi32>
// CHECK:   %[[LI:.+]] = arith.index_cast %[[L]]
// CHECK:   arith.addi %[[LI]], %[[KEEPI]]
// CHECK: gpu.terminator
// CHECK: memref.store %{{.*}}, %[[LATE]]
func.func @sink_host_lengths(%len: memref<1xi32>, %out: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1 : i32
  %host = memref.alloc() : memref<1xi32>
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                  iterator_types = ["parallel"]}
      ins(%len : memref<1xi32>) outs(%host : memref<1xi32>) {
  ^bb0(%a: i32, %b: i32):
    %s = arith.addi %a, %one : i32
    linalg.yield %s : i32
  }
  %late = memref.alloc() : memref<1xi32>
  memref.store %one, %late[%c0] : memref<1xi32>
  %l = memref.load %host[%c0] : memref<1xi32>
  %n = arith.index_cast %l : i32 to index
  %k = memref.load %late[%c0] : memref<1xi32>
  %m = arith.index_cast %k : i32 to index
  scf.forall (%i) = (0) to (64) step (32) {
    scf.forall (%t) in (32) {
      %j = arith.addi %i, %t : index
      %lim = arith.addi %n, %m : index
      %v = arith.index_cast %lim : index to i64
      %f = arith.sitofp %v : i64 to f32
      memref.store %f, %out[%j] : memref<64xf32>
    } {mapping = [#gpu.thread<linear_dim_0>]}
  }
  memref.store %one, %late[%c0] : memref<1xi32>
  return
}

// -----

// A view of a host buffer that a kernel uses (every other channel, as
// rotary embeddings slice them) is taken in the kernel: kernels take whole
// buffers (Vulkan binds an argument's buffer from its sizes, which a strided
// view's elements do not span).

// CHECK-LABEL: func.func @sink_views
// CHECK-SAME: (%[[IN:.+]]: memref<4x16xf32>, %[[OUT:.+]]: memref<4x8xf32>)
// CHECK-NOT: memref.subview
// CHECK: gpu.launch
// CHECK:   %[[V:.+]] = memref.subview %[[IN]][0, 1] [4, 8] [1, 2]
// CHECK:   memref.load %[[V]]
// CHECK: gpu.terminator
func.func @sink_views(%in: memref<4x16xf32>, %out: memref<4x8xf32>) {
  %odd = memref.subview %in[0, 1] [4, 8] [1, 2] : memref<4x16xf32> to memref<4x8xf32, strided<[16, 2], offset: 1>>
  scf.forall (%i) in (4) {
    scf.forall (%t) in (8) {
      %x = memref.load %odd[%i, %t] : memref<4x8xf32, strided<[16, 2], offset: 1>>
      memref.store %x, %out[%i, %t] : memref<4x8xf32>
    } {mapping = [#gpu.thread<linear_dim_0>]}
  }
  return
}

// -----

// A workgroup loop that names its kernel (mha.kernel_name: the GEMM
// kernels) gives the launch the function name `<function>_<name>`, which
// outlining takes instead of `<function>_kernel`.

// CHECK-LABEL: func.func @named
// CHECK: gpu.launch {{.*}} function(@named_gemm) {
func.func @named(%out: memref<64xf32>, %x: f32) {
  scf.forall (%i) in (2) {
    scf.forall (%t) in (32) {
      %j = arith.addi %i, %t : index
      memref.store %x, %out[%j] : memref<64xf32>
    } {mapping = [#gpu.thread<linear_dim_0>]}
  } {mapping = [#gpu.block<linear_dim_0>], mha.kernel_name = "gemm"}
  return
}
