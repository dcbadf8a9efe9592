// RUN: mha-opt %s --split-input-file --mha-vectorize --canonicalize --cse | FileCheck %s
// RUN: mha-opt %s --split-input-file --mha-vectorize="register-tile-rows=4 register-tile-cols=16" --canonicalize --cse | FileCheck %s --check-prefix=SMALL
// RUN: mha-opt %s --split-input-file --mha-vectorize="vector-width=256" --canonicalize --cse | FileCheck %s --check-prefix=SMALL
// RUN: mha-opt %s --split-input-file --mha-vectorize="vector-width=128" --canonicalize --cse | FileCheck %s --check-prefix=SSE
// RUN: not mha-opt %s --split-input-file --mha-vectorize="register-tile-rows=-1" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not mha-opt %s --split-input-file --mha-vectorize="vector-width=48" 2>&1 | FileCheck %s --check-prefix=WIDTH
// RUN: mha-opt %s --split-input-file --mha-vectorize="panel-reduction-tile=128" --canonicalize --cse | FileCheck %s --check-prefix=CHUNK
// RUN: not mha-opt %s --split-input-file --mha-vectorize="panel-reduction-tile=-1" 2>&1 | FileCheck %s --check-prefix=BAD-CHUNK

// BAD: error: register tile sizes must be positive (0: from the vector width), found -1x32 (chunk 64)
// WIDTH: error: vector width must be a positive multiple of 32 bits, found 48
// BAD-CHUNK: error: panel-reduction-tile must be positive, or 0 for the whole reduction, found -1

// The register tile defaults to the vector width: 8x32 for 512 bits (the
// default), 4x16 for 256 (the same as register-tile-rows=4
// register-tile-cols=16: the SMALL checks), 4x8 for 128.
// SSE-LABEL: func.func @contraction
// SSE: vector.contract {{.*}} : vector<4x1xf32>, vector<1x8xf32> into vector<4x8xf32>

// A contraction: [8 x 32] output tiles, the reduction one step at a time
// innermost; each step is one vector.contract of an 8x1 column and a 1x32
// row (an outer product: 8 FMAs on 32 lanes after lowering), and the loop
// carries the accumulator as a vector (hoisted out of the reduction).

// CHECK-LABEL: func.func @contraction
// CHECK: scf.for %{{.*}} = %c0 to %c16 step %c8
// CHECK:   scf.for %{{.*}} = %c0 to %c64 step %c32
// CHECK:     %[[ACC0:.+]] = vector.transfer_read {{.*}} : tensor<16x64xf32>, vector<8x32xf32>
// CHECK:     %[[ACC:.+]] = scf.for %{{.*}} = %c0 to %c64 step %c1 iter_args(%[[A:.+]] = %[[ACC0]]) -> (vector<8x32xf32>)
// CHECK:       %[[COL:.+]] = vector.transfer_read {{.*}} : tensor<16x64xf32>, vector<8x1xf32>
// CHECK:       %[[ROW:.+]] = vector.transfer_read {{.*}} : tensor<64x64xf32>, vector<32xf32>
// CHECK:       %[[ROW2:.+]] = vector.broadcast %[[ROW]] : vector<32xf32> to vector<1x32xf32>
// CHECK:       vector.contract {{.*}} %[[COL]], %[[ROW2]], %[[A]] : vector<8x1xf32>, vector<1x32xf32> into vector<8x32xf32>
// CHECK-NOT:   vector.transfer_write
// CHECK:     vector.transfer_write %[[ACC]]
// CHECK-NOT: linalg.

// SMALL-LABEL: func.func @contraction
// SMALL: vector.contract {{.*}} : vector<4x1xf32>, vector<1x16xf32> into vector<4x16xf32>
func.func @contraction(%a: tensor<16x64xf32>, %b: tensor<64x64xf32>, %c: tensor<16x64xf32>) -> tensor<16x64xf32> {
  %r = linalg.matmul ins(%a, %b : tensor<16x64xf32>, tensor<64x64xf32>) outs(%c : tensor<16x64xf32>) -> tensor<16x64xf32>
  return %r : tensor<16x64xf32>
}

// -----

// The output projection's shape: unit loops (the head of a head loop) and two
// reductions; the unit reduction is dropped so that the step is still an
// outer product. A size the tile does not divide (48) takes the largest
// half of the tile that does (16): every tile is full.

// CHECK-LABEL: func.func @projection
// CHECK: scf.for %{{.*}} = %c0 to %c48 step %c16
// CHECK:   scf.for %{{.*}} = %c0 to %c64 step %c1 iter_args(%{{.*}} = %{{.*}}) -> (vector<8x16xf32>)
// CHECK:     vector.contract {{.*}} : vector<8x1xf32>, vector<1x16xf32> into vector<8x16xf32>
// CHECK-NOT: linalg.
func.func @projection(%heads: tensor<1x1x8x64xf32>, %w: tensor<1x64x48xf32>, %y: tensor<1x8x48xf32>) -> tensor<1x8x48xf32> {
  %r = linalg.generic {
         indexing_maps = [affine_map<(b, s, h, i, o) -> (b, h, s, i)>,
                          affine_map<(b, s, h, i, o) -> (h, i, o)>,
                          affine_map<(b, s, h, i, o) -> (b, s, o)>],
         iterator_types = ["parallel", "parallel", "reduction", "reduction", "parallel"]}
       ins(%heads, %w : tensor<1x1x8x64xf32>, tensor<1x64x48xf32>) outs(%y : tensor<1x8x48xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x8x48xf32>
  return %r : tensor<1x8x48xf32>
}

// -----

// Row-wise ops: rows one at a time, each a vector of the row (up to `chunk`
// elements); a transpose in 16x16 blocks.

// CHECK-LABEL: func.func @rows
// CHECK: scf.for %{{.*}} = %c0 to %c32 step %c1
// CHECK:   vector.transfer_read {{.*}} vector<64xf32>
// CHECK:   vector.multi_reduction <maximumf>, %{{.*}}, %{{.*}} [1] : vector<1x64xf32> to vector<1xf32>
// CHECK-NOT: linalg.
func.func @rows(%s: tensor<32x64xf32>, %m: tensor<32xf32>) -> tensor<32xf32> {
  %r = linalg.reduce ins(%s : tensor<32x64xf32>) outs(%m : tensor<32xf32>) dimensions = [1]
    (%a: f32, %b: f32) {
      %x = arith.maximumf %a, %b : f32
      linalg.yield %x : f32
    }
  return %r : tensor<32xf32>
}

// A transpose: 16x16 blocks, in the order of its input's dims (the input's
// rows read one block row after another).
// CHECK-LABEL: func.func @transpose
// CHECK: scf.for %[[I:.+]] = %c0 to %c32 step %c16
// CHECK:   scf.for %[[J:.+]] = %c0 to %c64 step %c16
// CHECK:     vector.transfer_read %{{.*}}[%[[I]], %[[J]]]
// CHECK:     vector.transpose %{{.*}}, [1, 0] : vector<16x16xf32> to vector<16x16xf32>
// CHECK-NOT: linalg.
func.func @transpose(%k: tensor<32x64xf32>, %kt: tensor<64x32xf32>) -> tensor<64x32xf32> {
  %r = linalg.transpose ins(%k : tensor<32x64xf32>) outs(%kt : tensor<64x32xf32>) permutation = [1, 0]
  return %r : tensor<64x32xf32>
}

// -----

// Partial tiles (dynamic sizes) stay linalg ops for the scalar lowering.

// CHECK-LABEL: func.func @partial
// CHECK: scf.for
// CHECK:   linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<?x1xf32>, tensor<1x32xf32>) outs(%{{.*}} : tensor<?x32xf32>)
func.func @partial(%a: tensor<?x64xf32>, %b: tensor<64x64xf32>, %c: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %r = linalg.matmul ins(%a, %b : tensor<?x64xf32>, tensor<64x64xf32>) outs(%c : tensor<?x64xf32>) -> tensor<?x64xf32>
  return %r : tensor<?x64xf32>
}

// A bool mask is read as vectors of i1 (mha-legalize-bool-vector-memory makes
// their loads read bytes after the conversion to LLVM).

// CHECK-LABEL: func.func @booleans
// CHECK-NOT: linalg.generic
// CHECK: vector.transfer_read %{{.*}} : tensor<8x64xi1>, vector<64xi1>
// CHECK: arith.select %{{.*}} : vector<64xi1>, vector<64xf32>
func.func @booleans(%m: tensor<8x64xi1>, %s: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %r = linalg.generic {
         indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
         iterator_types = ["parallel", "parallel"]}
       ins(%m : tensor<8x64xi1>) outs(%s : tensor<8x64xf32>) {
  ^bb0(%keep: i1, %x: f32):
    %y = arith.select %keep, %x, %ninf : f32
    linalg.yield %y : f32
  } -> tensor<8x64xf32>
  return %r : tensor<8x64xf32>
}


// -----

// A parallel loop whose step does not divide its static range is peeled: the
// full tiles keep the loop with static sizes (vectorized), the last partial
// tile follows in a loop with its own static size (here 8 rows, a single
// iteration). Both loops get the mapping #mha.peeled, which keeps the
// canonicalizer from inlining the single iteration (so that
// mha-rejoin-peeled-loops can join the loops again, on threads).

// CHECK-LABEL: func.func @peel_static
// CHECK: scf.forall (%[[I:.+]]) = (0) to (192) step (64)
// CHECK:   tensor.extract_slice %{{.*}}[%[[I]], 0] [64, 32] [1, 1] : tensor<200x32xf32> to tensor<64x32xf32>
// CHECK:   vector.contract {{.*}} : vector<8x1xf32>, vector<1x32xf32> into vector<8x32xf32>
// CHECK: } {mapping = [#mha.peeled<0>]}
// CHECK: scf.forall (%{{.+}}) = (192) to (200) step (64)
// CHECK: vector.transfer_read %{{.*}}[%c192, %{{.*}}], %{{.*}} : tensor<200x64xf32>, vector<8x1xf32>
// CHECK: vector.contract {{.*}} : vector<8x1xf32>, vector<1x32xf32> into vector<8x32xf32>
// CHECK: } {mapping = [#mha.peeled<0>]}
// CHECK-NOT: linalg.matmul
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

// -----

// A dynamic range: the full tiles up to (n floordiv 64) * 64, then the partial
// tile, whose operands are padded with zeros to the step (its static bound),
// computed as a full tile and copied back.

// CHECK-DAG: #[[FULL:.+]] = affine_map<()[s0] -> ((s0 floordiv 64) * 64)>
// CHECK-LABEL: func.func @peel_dynamic
// CHECK: %[[SPLIT:.+]] = affine.apply #[[FULL]]()[%[[N:.+]]]
// CHECK: %[[MAIN:.+]] = scf.forall (%{{.+}}) = (0) to (%[[SPLIT]]) step (64)
// CHECK:   vector.contract
// CHECK: } {mapping = [#mha.peeled<0>]}
// CHECK: scf.forall (%{{.+}}) = (%[[SPLIT]]) to (%[[N]]) step (64) shared_outs(%{{.+}} = %[[MAIN]])
// CHECK:   tensor.pad
// CHECK:   } : tensor<?x64xf32> to tensor<64x64xf32>
// CHECK:   tensor.pad
// CHECK:   } : tensor<?x32xf32> to tensor<64x32xf32>
// CHECK:   vector.contract
// CHECK:   linalg.copy ins(%{{.*}} : tensor<?x32xf32>) outs(%{{.*}} : tensor<?x32xf32>)
// CHECK: } {mapping = [#mha.peeled<0>]}
// CHECK-NOT: linalg.matmul
func.func @peel_dynamic(%a: tensor<?x64xf32>, %b: tensor<64x32xf32>, %init: tensor<?x32xf32>) -> tensor<?x32xf32> {
  %c0 = arith.constant 0 : index
  %rows = tensor.dim %a, %c0 : tensor<?x64xf32>
  %r = scf.forall (%i) = (0) to (%rows) step (64) shared_outs(%o = %init) -> (tensor<?x32xf32>) {
    %n = affine.min affine_map<(d0)[s0] -> (64, -d0 + s0)>(%i)[%rows]
    %as = tensor.extract_slice %a[%i, 0] [%n, 64] [1, 1] : tensor<?x64xf32> to tensor<?x64xf32>
    %os = tensor.extract_slice %o[%i, 0] [%n, 32] [1, 1] : tensor<?x32xf32> to tensor<?x32xf32>
    %m = linalg.matmul ins(%as, %b : tensor<?x64xf32>, tensor<64x32xf32>) outs(%os : tensor<?x32xf32>) -> tensor<?x32xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %m into %o[%i, 0] [%n, 32] [1, 1] : tensor<?x32xf32> into tensor<?x32xf32>
    }
  }
  return %r : tensor<?x32xf32>
}

// -----

// A plain reduction over a dynamic range is padded with its combiner's neutral
// element (NaN for maxnumf, which maxnumf ignores), the rows with zeros.

// CHECK-LABEL: func.func @pad_reduction
// CHECK-DAG: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[NAN:.+]] = arith.constant 0xFFC00000 : f32
// CHECK: tensor.pad
// CHECK:   tensor.yield %[[NAN]]
// CHECK: } : tensor<?x?xf32> to tensor<8x64xf32>
// CHECK: tensor.pad
// CHECK:   tensor.yield %[[ZERO]]
// CHECK: } : tensor<?xf32> to tensor<8xf32>
// CHECK: vector.multi_reduction <maxnumf>, %{{.*}}, %{{.*}} [1] : vector<1x64xf32> to vector<1xf32>
// CHECK-NOT: linalg.generic
func.func @pad_reduction(%s: tensor<?x?xf32>, %init: tensor<?xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %rows = tensor.dim %s, %c0 : tensor<?x?xf32>
  %cols = tensor.dim %s, %c1 : tensor<?x?xf32>
  %n = affine.min affine_map<()[s0] -> (s0, 8)>()[%rows]
  %k = affine.min affine_map<()[s0] -> (s0, 64)>()[%cols]
  %ss = tensor.extract_slice %s[0, 0] [%n, %k] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
  %is = tensor.extract_slice %init[0] [%n] [1] : tensor<?xf32> to tensor<?xf32>
  %m = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]}
       ins(%ss : tensor<?x?xf32>) outs(%is : tensor<?xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.maxnumf %acc, %x : f32
    linalg.yield %y : f32
  } -> tensor<?xf32>
  %r = tensor.insert_slice %m into %init[0] [%n] [1] : tensor<?xf32> into tensor<?xf32>
  return %r : tensor<?xf32>
}

// -----

// A projection per head (a long reduction over a weight whose rows are 2048
// elements apart): the weight, defined outside the loops, is packed once
// before them into contiguous 32-column panels ([64, 512, 32]), and each
// head's register tiles read their panel from it: no copy per head. The
// packing runs on threads by an scf.forall over blocks of 16 weight rows,
// each sweeping its rows panel after panel (whole rows read in order, not
// one 128-byte piece of each of 512 rows per panel).

// CHECK-LABEL: func.func @packed_once
// CHECK: %[[SPLIT:.+]] = tensor.expand_shape %{{.*}} {{\[\[}}0], [1, 2]] output_shape [512, 64, 32] : tensor<512x2048xf32> into tensor<512x64x32xf32>
// CHECK: %[[PACKED:.+]] = scf.forall (%[[R:.+]]) = (0) to (512) step (16) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<64x512x32xf32>)
// CHECK:   scf.for %[[P:.+]] = %c0 to %c64 step %c1
// CHECK:     scf.for %[[C:.+]] = %c0 to %c32 step %c16
// CHECK:       vector.transfer_read %[[SPLIT]][%[[R]], %[[P]], %[[C]]], %{{.*}} {in_bounds = [true, true, true]} : tensor<512x64x32xf32>, vector<16x1x16xf32>
// CHECK: scf.for %[[H:.+]] = %c0 to %c2048 step %c64
// CHECK-NOT: tensor.insert_slice %{{.*}} : tensor<1x32xf32> into tensor<512x32xf32>
// CHECK:   scf.for %[[N:.+]] = %c0 to %c64 step %c32
// CHECK:     scf.for %{{.*}} = %c0 to %c512 step %c1 iter_args(%{{.*}} = %{{.*}}) -> (vector<8x32xf32>)
// CHECK:       %[[PANEL:.+]] = affine.apply #{{.*}}()[%[[N]], %[[H]]]
// CHECK:       vector.transfer_read %[[PACKED]][%[[PANEL]], %{{.*}}, %c0]
// CHECK:       vector.contract {{.*}} : vector<8x1xf32>, vector<1x32xf32> into vector<8x32xf32>

// With panel-reduction-tile=128, the row tiles sweep the panel 128 rows at a
// time (a 16 KiB chunk that stays in L1), carrying their accumulators
// through memory between chunks.
// CHUNK-LABEL: func.func @packed_once
// CHUNK: scf.for %[[H:.+]] = %c0 to %c2048 step %c64
// CHUNK:   scf.for %[[N:.+]] = %c0 to %c64 step %c32
// CHUNK:     scf.for %[[K:.+]] = %c0 to %c512 step %c128
// CHUNK:       scf.for %{{.*}} = %c0 to %c16 step %c8
// CHUNK:         vector.transfer_read
// CHUNK:         scf.for %{{.*}} = %c0 to %c128 step %c1 iter_args(%{{.*}} = %{{.*}}) -> (vector<8x32xf32>)
// CHUNK:           vector.contract {{.*}} : vector<8x1xf32>, vector<1x32xf32> into vector<8x32xf32>
func.func @packed_once(%x: tensor<16x512xf32>, %w: tensor<512x2048xf32>, %y: tensor<16x2048xf32>) -> tensor<16x2048xf32> {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c2048 = arith.constant 2048 : index
  %r = scf.for %h = %c0 to %c2048 step %c64 iter_args(%acc = %y) -> (tensor<16x2048xf32>) {
    %panel = tensor.extract_slice %w[0, %h] [512, 64] [1, 1] : tensor<512x2048xf32> to tensor<512x64xf32>
    %out = tensor.extract_slice %acc[0, %h] [16, 64] [1, 1] : tensor<16x2048xf32> to tensor<16x64xf32>
    %m = linalg.matmul ins(%x, %panel : tensor<16x512xf32>, tensor<512x64xf32>) outs(%out : tensor<16x64xf32>) -> tensor<16x64xf32>
    %next = tensor.insert_slice %m into %acc[0, %h] [16, 64] [1, 1] : tensor<16x64xf32> into tensor<16x2048xf32>
    scf.yield %next : tensor<16x2048xf32>
  }
  return %r : tensor<16x2048xf32>
}

// -----

// A weight given as a constant (a dense_resource, as frontends write
// initializers) is packed at compile time: the panels are a constant of
// their own, and no packing loop is left.

// CHECK-LABEL: func.func @packed_constant
// CHECK-NOT: scf.forall
// CHECK: %[[PACKED:.+]] = arith.constant dense_resource<mha_packed{{.*}}> : tensor<8x2x32xf32>
// CHECK-NOT: scf.forall
// CHECK: scf.for %[[N:.+]] = %c0 to %c256 step %c32
// CHECK:   vector.transfer_read %[[PACKED]]
// The panels of w[k, n] = 256 k + n: the first panel's row 0 (0 to 31),
// then its row 1 (256.0, 0x43800000, first).
// CHECK: mha_packed: "0x10000000{{([0-9A-F]{128}){2}00008043}}
func.func @packed_constant(%x: tensor<16x2xf32>, %y: tensor<16x256xf32>) -> tensor<16x256xf32> {
  %w = arith.constant dense_resource<w> : tensor<2x256xf32>
  %m = linalg.matmul ins(%x, %w : tensor<16x2xf32>, tensor<2x256xf32>) outs(%y : tensor<16x256xf32>) -> tensor<16x256xf32>
  return %m : tensor<16x256xf32>
}

{-#
  dialect_resources: {
    builtin: {
      w: "0x10000000000000000000803F0000004000004040000080400000A0400000C0400000E0400000004100001041000020410000304100004041000050410000604100007041000080410000884100009041000098410000A0410000A8410000B0410000B8410000C0410000C8410000D0410000D8410000E0410000E8410000F0410000F84100000042000004420000084200000C4200001042000014420000184200001C4200002042000024420000284200002C4200003042000034420000384200003C4200004042000044420000484200004C4200005042000054420000584200005C4200006042000064420000684200006C4200007042000074420000784200007C42000080420000824200008442000086420000884200008A4200008C4200008E42000090420000924200009442000096420000984200009A4200009C4200009E420000A0420000A2420000A4420000A6420000A8420000AA420000AC420000AE420000B0420000B2420000B4420000B6420000B8420000BA420000BC420000BE420000C0420000C2420000C4420000C6420000C8420000CA420000CC420000CE420000D0420000D2420000D4420000D6420000D8420000DA420000DC420000DE420000E0420000E2420000E4420000E6420000E8420000EA420000EC420000EE420000F0420000F2420000F4420000F6420000F8420000FA420000FC420000FE420000004300000143000002430000034300000443000005430000064300000743000008430000094300000A4300000B4300000C4300000D4300000E4300000F430000104300001143000012430000134300001443000015430000164300001743000018430000194300001A4300001B4300001C4300001D4300001E4300001F430000204300002143000022430000234300002443000025430000264300002743000028430000294300002A4300002B4300002C4300002D4300002E4300002F430000304300003143000032430000334300003443000035430000364300003743000038430000394300003A4300003B4300003C4300003D4300003E4300003F430000404300004143000042430000434300004443000045430000464300004743000048430000494300004A4300004B4300004C4300004D4300004E4300004F430000504300005143000052430000534300005443000055430000564300005743000058430000594300005A4300005B4300005C4300005D4300005E4300005F430000604300006143000062430000634300006443000065430000664300006743000068430000694300006A4300006B4300006C4300006D4300006E4300006F430000704300007143000072430000734300007443000075430000764300007743000078430000794300007A4300007B4300007C4300007D4300007E4300007F43000080430080804300008143008081430000824300808243000083430080834300008443008084430000854300808543000086430080864300008743008087430000884300808843000089430080894300008A4300808A4300008B4300808B4300008C4300808C4300008D4300808D4300008E4300808E4300008F4300808F43000090430080904300009143008091430000924300809243000093430080934300009443008094430000954300809543000096430080964300009743008097430000984300809843000099430080994300009A4300809A4300009B4300809B4300009C4300809C4300009D4300809D4300009E4300809E4300009F4300809F430000A0430080A0430000A1430080A1430000A2430080A2430000A3430080A3430000A4430080A4430000A5430080A5430000A6430080A6430000A7430080A7430000A8430080A8430000A9430080A9430000AA430080AA430000AB430080AB430000AC430080AC430000AD430080AD430000AE430080AE430000AF430080AF430000B0430080B0430000B1430080B1430000B2430080B2430000B3430080B3430000B4430080B4430000B5430080B5430000B6430080B6430000B7430080B7430000B8430080B8430000B9430080B9430000BA430080BA430000BB430080BB430000BC430080BC430000BD430080BD430000BE430080BE430000BF430080BF430000C0430080C0430000C1430080C1430000C2430080C2430000C3430080C3430000C4430080C4430000C5430080C5430000C6430080C6430000C7430080C7430000C8430080C8430000C9430080C9430000CA430080CA430000CB430080CB430000CC430080CC430000CD430080CD430000CE430080CE430000CF430080CF430000D0430080D0430000D1430080D1430000D2430080D2430000D3430080D3430000D4430080D4430000D5430080D5430000D6430080D6430000D7430080D7430000D8430080D8430000D9430080D9430000DA430080DA430000DB430080DB430000DC430080DC430000DD430080DD430000DE430080DE430000DF430080DF430000E0430080E0430000E1430080E1430000E2430080E2430000E3430080E3430000E4430080E4430000E5430080E5430000E6430080E6430000E7430080E7430000E8430080E8430000E9430080E9430000EA430080EA430000EB430080EB430000EC430080EC430000ED430080ED430000EE430080EE430000EF430080EF430000F0430080F0430000F1430080F1430000F2430080F2430000F3430080F3430000F4430080F4430000F5430080F5430000F6430080F6430000F7430080F7430000F8430080F8430000F9430080F9430000FA430080FA430000FB430080FB430000FC430080FC430000FD430080FD430000FE430080FE430000FF430080FF43"
    }
  }
#-}

// -----

// The same projection with a weight of its own per iteration (a slice that
// drops the batch dim, made in the loop): each 32-column panel of it is
// copied into a contiguous tensor, which the 8-row tiles then read in order.

// CHECK-LABEL: func.func @packed_per_panel
// CHECK: scf.for %[[B:.+]] = %c0 to %c2 step %c1
// CHECK:   %[[W:.+]] = tensor.extract_slice %{{.*}}[%[[B]], 0, 0] [1, 512, 64] [1, 1, 1] : tensor<2x512x2048xf32> to tensor<512x64xf32>
// CHECK:   scf.for %[[N:.+]] = %c0 to %c64 step %c32
// CHECK:     %[[PANEL:.+]] = tensor.extract_slice %[[W]][0, %[[N]]] [512, 32] [1, 1] : tensor<512x64xf32> to tensor<512x32xf32>
// CHECK:     %[[PACKED0:.+]] = tensor.empty() : tensor<512x32xf32>
// CHECK:     %[[PACKED:.+]] = scf.for %[[K:.+]] = %c0 to %c512 step %c1 iter_args(%[[P:.+]] = %[[PACKED0]]) -> (tensor<512x32xf32>)
// CHECK:       %[[ROW:.+]] = tensor.extract_slice %[[PANEL]][%[[K]], 0] [1, 32]
// CHECK:       tensor.insert_slice %[[ROW]] into %[[P]][%[[K]], 0] [1, 32]
// CHECK:     scf.for %{{.*}} = %c0 to %c16 step %c8
// CHECK:       scf.for %{{.*}} = %c0 to %c512 step %c1 iter_args(%{{.*}} = %{{.*}}) -> (vector<8x32xf32>)
// CHECK:         vector.transfer_read %[[PACKED]]
// CHECK:         vector.contract {{.*}} : vector<8x1xf32>, vector<1x32xf32> into vector<8x32xf32>
func.func @packed_per_panel(%x: tensor<2x16x512xf32>, %w: tensor<2x512x2048xf32>, %y: tensor<2x16x64xf32>) -> tensor<2x16x64xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %r = scf.for %b = %c0 to %c2 step %c1 iter_args(%acc = %y) -> (tensor<2x16x64xf32>) {
    %xb = tensor.extract_slice %x[%b, 0, 0] [1, 16, 512] [1, 1, 1] : tensor<2x16x512xf32> to tensor<16x512xf32>
    %wb = tensor.extract_slice %w[%b, 0, 0] [1, 512, 64] [1, 1, 1] : tensor<2x512x2048xf32> to tensor<512x64xf32>
    %out = tensor.extract_slice %acc[%b, 0, 0] [1, 16, 64] [1, 1, 1] : tensor<2x16x64xf32> to tensor<16x64xf32>
    %m = linalg.matmul ins(%xb, %wb : tensor<16x512xf32>, tensor<512x64xf32>) outs(%out : tensor<16x64xf32>) -> tensor<16x64xf32>
    %next = tensor.insert_slice %m into %acc[%b, 0, 0] [1, 16, 64] [1, 1, 1] : tensor<16x64xf32> into tensor<2x16x64xf32>
    scf.yield %next : tensor<2x16x64xf32>
  }
  return %r : tensor<2x16x64xf32>
}

// -----

// A short reduction over rows far apart (the output projection of one head:
// 64 steps over a weight with rows 768 elements apart, whose 64 rows of a
// panel fall into few L1 sets) is packed too.

// CHECK-LABEL: func.func @packed_short_reduction
// CHECK: %[[PACKED:.+]] = scf.forall (%{{.*}}) = (0) to (64) step (16) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<24x64x32xf32>)
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c1 iter_args(%{{.*}} = %{{.*}}) -> (vector<8x32xf32>)
// CHECK:   vector.transfer_read %[[PACKED]]

// No shorter than panel-reduction-tile: left whole.
// CHUNK-LABEL: func.func @packed_short_reduction
// CHUNK-NOT: step %c128
// CHUNK: scf.for %{{.*}} = %c0 to %c64 step %c1 iter_args(%{{.*}} = %{{.*}}) -> (vector<8x32xf32>)
func.func @packed_short_reduction(%o: tensor<16x64xf32>, %w: tensor<64x768xf32>, %y: tensor<16x768xf32>) -> tensor<16x768xf32> {
  %r = linalg.matmul ins(%o, %w : tensor<16x64xf32>, tensor<64x768xf32>) outs(%y : tensor<16x768xf32>) -> tensor<16x768xf32>
  return %r : tensor<16x768xf32>
}

// -----

// Not packed: a single row tile (8 rows: nothing reads a panel twice), and
// rows near each other (64 elements apart: a key block of the attention).

// CHECK-LABEL: func.func @not_packed
// CHECK-NOT: scf.forall
// CHECK-NOT: tensor.insert_slice
// CHECK: vector.contract {{.*}} : vector<8x1xf32>, vector<1x32xf32> into vector<8x32xf32>
// CHECK-NOT: scf.forall
// CHECK: vector.contract {{.*}} : vector<8x1xf32>, vector<1x32xf32> into vector<8x32xf32>
// CHECK-NOT: scf.forall
// CHECK: return
func.func @not_packed(%a: tensor<8x512xf32>, %w: tensor<512x2048xf32>, %y: tensor<8x2048xf32>,
                      %p: tensor<64x64xf32>, %v: tensor<64x64xf32>, %acc: tensor<64x64xf32>) -> (tensor<8x2048xf32>, tensor<64x64xf32>) {
  %r = linalg.matmul ins(%a, %w : tensor<8x512xf32>, tensor<512x2048xf32>) outs(%y : tensor<8x2048xf32>) -> tensor<8x2048xf32>
  %s = linalg.matmul ins(%p, %v : tensor<64x64xf32>, tensor<64x64xf32>) outs(%acc : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %r, %s : tensor<8x2048xf32>, tensor<64x64xf32>
}

// -----

// A transpose of a block of a value defined outside the loops (a key block,
// transposed for q·kᵀ) reads a copy of the value transposed block by block,
// made once before the loops ([heads, key blocks, d, keys], on threads by an
// scf.forall over the heads): no transpose in the key loop.

// CHECK-LABEL: func.func @transposed_once
// CHECK: %[[SPLIT:.+]] = tensor.expand_shape %{{.*}} {{\[\[}}0], [1, 2], [3]] output_shape [2, 4, 64, 32] : tensor<2x256x32xf32> into tensor<2x4x64x32xf32>
// CHECK: %[[KT:.+]] = scf.forall (%{{.*}}) in (2) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<2x4x32x64xf32>)
// CHECK:   vector.transpose
// CHECK: scf.for %[[H:.+]] = %c0 to %c2 step %c1
// CHECK:   scf.for %[[J:.+]] = %c0 to %c256 step %c64
// CHECK-NOT: vector.transpose
// CHECK:     %[[B:.+]] = affine.apply #{{.*}}()[%[[J]]]
// CHECK:     tensor.extract_slice %[[KT]][%[[H]], %[[B]], 0, 0] [1, 1, 32, 64] [1, 1, 1, 1] : tensor<2x4x32x64xf32> to tensor<32x64xf32>
// CHECK-NOT: vector.transpose
// CHECK: return
func.func @transposed_once(%k: tensor<2x256x32xf32>, %out: tensor<2x32x64xf32>) -> tensor<2x32x64xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c64 = arith.constant 64 : index
  %c256 = arith.constant 256 : index
  %r = scf.for %h = %c0 to %c2 step %c1 iter_args(%o = %out) -> (tensor<2x32x64xf32>) {
    %s = scf.for %j = %c0 to %c256 step %c64 iter_args(%acc = %o) -> (tensor<2x32x64xf32>) {
      %kb = tensor.extract_slice %k[%h, %j, 0] [1, 64, 32] [1, 1, 1] : tensor<2x256x32xf32> to tensor<1x64x32xf32>
      %e = tensor.empty() : tensor<1x32x64xf32>
      %kt = linalg.transpose ins(%kb : tensor<1x64x32xf32>) outs(%e : tensor<1x32x64xf32>) permutation = [0, 2, 1]
      %a = tensor.extract_slice %acc[%h, 0, 0] [1, 32, 64] [1, 1, 1] : tensor<2x32x64xf32> to tensor<1x32x64xf32>
      %sum = linalg.add ins(%kt, %a : tensor<1x32x64xf32>, tensor<1x32x64xf32>) outs(%a : tensor<1x32x64xf32>) -> tensor<1x32x64xf32>
      %next = tensor.insert_slice %sum into %acc[%h, 0, 0] [1, 32, 64] [1, 1, 1] : tensor<1x32x64xf32> into tensor<2x32x64xf32>
      scf.yield %next : tensor<2x32x64xf32>
    }
    scf.yield %s : tensor<2x32x64xf32>
  }
  return %r : tensor<2x32x64xf32>
}

// -----

// In a key loop whose blocks one query tile reads (decoding, marked by
// mha-tile-attention), a blocked copy would be a whole extra pass over the
// keys: each block is transposed where it is read.

// CHECK-LABEL: func.func @transposed_where_read
// CHECK-NOT: tensor.expand_shape
// CHECK: scf.for %{{.*}} = %c0 to %c256 step %c64
// CHECK:   vector.transpose
// CHECK: } {mha.key_blocks_read_once}
func.func @transposed_where_read(%k: tensor<1x256x32xf32>, %out: tensor<1x32x64xf32>) -> tensor<1x32x64xf32> {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c256 = arith.constant 256 : index
  %s = scf.for %j = %c0 to %c256 step %c64 iter_args(%acc = %out) -> (tensor<1x32x64xf32>) {
    %kb = tensor.extract_slice %k[0, %j, 0] [1, 64, 32] [1, 1, 1] : tensor<1x256x32xf32> to tensor<1x64x32xf32>
    %e = tensor.empty() : tensor<1x32x64xf32>
    %kt = linalg.transpose ins(%kb : tensor<1x64x32xf32>) outs(%e : tensor<1x32x64xf32>) permutation = [0, 2, 1]
    %sum = linalg.add ins(%kt, %acc : tensor<1x32x64xf32>, tensor<1x32x64xf32>) outs(%acc : tensor<1x32x64xf32>) -> tensor<1x32x64xf32>
    scf.yield %sum : tensor<1x32x64xf32>
  } {mha.key_blocks_read_once}
  return %s : tensor<1x32x64xf32>
}

// -----

// Blocks not aligned to their size (key blocks of 64 from key 32 on) are
// transposed where they are read.

// CHECK-LABEL: func.func @transposed_per_block
// CHECK-NOT: scf.forall
// CHECK: scf.for %{{.*}} = %c32 to %c224 step %c64
// CHECK:   vector.transpose
// CHECK: return
func.func @transposed_per_block(%k: tensor<256x32xf32>, %out: tensor<32x64xf32>) -> tensor<32x64xf32> {
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %c224 = arith.constant 224 : index
  %s = scf.for %j = %c32 to %c224 step %c64 iter_args(%acc = %out) -> (tensor<32x64xf32>) {
    %kb = tensor.extract_slice %k[%j, 0] [64, 32] [1, 1] : tensor<256x32xf32> to tensor<64x32xf32>
    %e = tensor.empty() : tensor<32x64xf32>
    %kt = linalg.transpose ins(%kb : tensor<64x32xf32>) outs(%e : tensor<32x64xf32>) permutation = [1, 0]
    %sum = linalg.add ins(%kt, %acc : tensor<32x64xf32>, tensor<32x64xf32>) outs(%acc : tensor<32x64xf32>) -> tensor<32x64xf32>
    scf.yield %sum : tensor<32x64xf32>
  }
  return %s : tensor<32x64xf32>
}

// -----

// A contraction whose accumulator starts as a fill (the zero scores of each
// key block, which LICM hoists out of the key loop) has the fill fused into
// each register tile: the reduction loop starts from a constant vector
// instead of reading a buffer filled by a separate pass (after bufferization,
// a copy of the hoisted buffer per iteration), and the fill, left without
// uses, is gone.

// CHECK-LABEL: func.func @fused_fill
// CHECK-DAG: %[[ZERO:.+]] = arith.constant dense<0.000000e+00> : vector<8x32xf32>
// CHECK-NOT: linalg.fill
// CHECK: scf.for
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c1 iter_args(%{{.*}} = %[[ZERO]]) -> (vector<8x32xf32>)
// CHECK: vector.contract {{.*}} : vector<8x1xf32>, vector<1x32xf32> into vector<8x32xf32>
// CHECK-NOT: linalg.fill
// CHECK: return
func.func @fused_fill(%a: tensor<4x16x64xf32>, %b: tensor<64x64xf32>, %out: tensor<4x16x64xf32>) -> tensor<4x16x64xf32> {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %e = tensor.empty() : tensor<16x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x64xf32>) -> tensor<16x64xf32>
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%o = %out) -> (tensor<4x16x64xf32>) {
    %as = tensor.extract_slice %a[%i, 0, 0] [1, 16, 64] [1, 1, 1] : tensor<4x16x64xf32> to tensor<16x64xf32>
    %m = linalg.matmul ins(%as, %b : tensor<16x64xf32>, tensor<64x64xf32>) outs(%f : tensor<16x64xf32>) -> tensor<16x64xf32>
    %n = tensor.insert_slice %m into %o[%i, 0, 0] [1, 16, 64] [1, 1, 1] : tensor<16x64xf32> into tensor<4x16x64xf32>
    scf.yield %n : tensor<4x16x64xf32>
  }
  return %r : tensor<4x16x64xf32>
}

// -----

// The same for an elementwise producer of the accumulator used by the
// contraction alone (a key block's acc' = a · acc + p · v): each register
// tile scales its part of acc in registers before the reduction loop, with no
// separate pass over acc. A producer with other users is not fused.

// CHECK-LABEL: func.func @fused_rescale
// CHECK: scf.for
// CHECK: scf.for
// CHECK:   %[[ACC:.+]] = vector.transfer_read %{{.*}} : tensor<16x64xf32>, vector<8x32xf32>
// CHECK:   %[[SCALED:.+]] = arith.mulf %[[ACC]], %{{.*}} : vector<8x32xf32>
// CHECK:   scf.for %{{.*}} = %c0 to %c64 step %c1 iter_args(%{{.*}} = %[[SCALED]]) -> (vector<8x32xf32>)
// CHECK-NOT: linalg.generic
// CHECK: return
// CHECK-LABEL: func.func @shared_rescale
// CHECK:   arith.mulf {{.*}} : vector<64xf32>
// CHECK:   %[[ACC2:.+]] = vector.transfer_read %{{.*}} : tensor<16x64xf32>, vector<8x32xf32>
// CHECK:   scf.for %{{.*}} = %c0 to %c64 step %c1 iter_args(%{{.*}} = %[[ACC2]]) -> (vector<8x32xf32>)
// CHECK: return
#rows = affine_map<(i, j) -> (i)>
#id = affine_map<(i, j) -> (i, j)>
func.func @fused_rescale(%p: tensor<16x64xf32>, %v: tensor<64x64xf32>, %a: tensor<16xf32>, %acc: tensor<16x64xf32>) -> tensor<16x64xf32> {
  %s = linalg.generic {indexing_maps = [#rows, #id], iterator_types = ["parallel", "parallel"]}
         ins(%a : tensor<16xf32>) outs(%acc : tensor<16x64xf32>) {
  ^bb0(%x: f32, %y: f32):
    %m = arith.mulf %y, %x : f32
    linalg.yield %m : f32
  } -> tensor<16x64xf32>
  %r = linalg.matmul ins(%p, %v : tensor<16x64xf32>, tensor<64x64xf32>) outs(%s : tensor<16x64xf32>) -> tensor<16x64xf32>
  return %r : tensor<16x64xf32>
}
func.func @shared_rescale(%p: tensor<16x64xf32>, %v: tensor<64x64xf32>, %a: tensor<16xf32>, %acc: tensor<16x64xf32>) -> (tensor<16x64xf32>, tensor<16x64xf32>) {
  %s = linalg.generic {indexing_maps = [#rows, #id], iterator_types = ["parallel", "parallel"]}
         ins(%a : tensor<16xf32>) outs(%acc : tensor<16x64xf32>) {
  ^bb0(%x: f32, %y: f32):
    %m = arith.mulf %y, %x : f32
    linalg.yield %m : f32
  } -> tensor<16x64xf32>
  %r = linalg.matmul ins(%p, %v : tensor<16x64xf32>, tensor<64x64xf32>) outs(%s : tensor<16x64xf32>) -> tensor<16x64xf32>
  return %r, %s : tensor<16x64xf32>, tensor<16x64xf32>
}

// -----

// One query per head (decoding) with the heads of a group as the tile: the
// rows of the register tiles are the heads (4), not the query dim (1), and
// the keys are read without a head dim (the decomposition of a tile whose
// heads share one key/value head), so the contraction is an outer product
// per reduction step, 4 rows x 32 keys, its accumulator in registers.

// CHECK-LABEL: func.func @one_query_rows
// CHECK: scf.for {{.*}} step %c32
// CHECK:   scf.for {{.*}} -> (vector<4x32xf32>)
// CHECK:     vector.contract {{.*}} : vector<4x1xf32>, vector<1x32xf32> into vector<4x32xf32>
// CHECK-NOT: linalg.generic
func.func @one_query_rows(%q: tensor<1x4x1x64xf32>, %kt: tensor<1x64x64xf32>, %s: tensor<1x4x1x64xf32>) -> tensor<1x4x1x64xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(b, h, i, c, j) -> (b, h, i, c)>, affine_map<(b, h, i, c, j) -> (b, c, j)>, affine_map<(b, h, i, c, j) -> (b, h, i, j)>],
                       iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]}
         ins(%q, %kt : tensor<1x4x1x64xf32>, tensor<1x64x64xf32>) outs(%s : tensor<1x4x1x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %t = arith.addf %o, %m : f32
    linalg.yield %t : f32
  } -> tensor<1x4x1x64xf32>
  return %r : tensor<1x4x1x64xf32>
}

// -----

// Scores of few rows (decoding: 4 heads of a group, one query each) in a key
// loop read once: dot products of the keys' rows as they are, without the
// transposed block. The head dim is split by the lanes (upstream
// splitReduction): [4 x 4 x 16] FMAs per 16 channels, then each vector's
// lanes summed by a tree of shuffles (4 rows x 4 keys = 16 sums per tile).

// CHECK-LABEL: func.func @decode_scores_as_dot_products
// CHECK-NOT: linalg.transpose
// CHECK: scf.for %{{.*}} = %c0 to %c256 step %c64
// CHECK:   %[[Q:.+]] = tensor.expand_shape %{{.*}} {{\[\[}}0], [1, 2]] output_shape [4, 2, 16]
// CHECK:   %[[K:.+]] = tensor.expand_shape %{{.*}} {{\[\[}}0], [1, 2]] output_shape [64, 2, 16]
// CHECK:   scf.for %[[J:.+]] = %c0 to %c64 step %c4 iter_args(%{{.*}}) -> (tensor<4x64x16xf32>)
// CHECK:     scf.for %[[C:.+]] = %c0 to %c2 step %c1 iter_args(%[[ACC:.+]] = %{{.*}}) -> (vector<4x4x16xf32>)
// CHECK-DAG:   vector.transfer_read %[[Q]][%c0, %[[C]], %c0]{{.*}} vector<4x16xf32>
// CHECK-DAG:   vector.transfer_read %[[K]][%[[J]], %[[C]], %c0]{{.*}} vector<4x16xf32>
// CHECK:       math.fma %{{.*}}, %{{.*}}, %[[ACC]] : vector<4x4x16xf32>
// CHECK:   scf.for %{{.*}} = %c0 to %c64 step %c4
// CHECK-COUNT-15: vector.shuffle {{.*}} : vector<16xf32>, vector<16xf32>
// CHECK-NOT: vector.transpose
// CHECK: } {mha.key_blocks_read_once}
// SSE-LABEL: func.func @decode_scores_as_dot_products
// SSE: math.fma %{{.*}}, %{{.*}}, %{{.*}} : vector<2x2x4xf32>
// SSE: vector.shuffle {{.*}} : vector<4xf32>, vector<4xf32>
#dq = affine_map<(g, d, j) -> (g, d)>
#dk = affine_map<(g, d, j) -> (d, j)>
#ds = affine_map<(g, d, j) -> (g, j)>
func.func @decode_scores_as_dot_products(%q: tensor<4x32xf32>, %k: tensor<256x32xf32>, %out: tensor<4x256xf32>) -> tensor<4x256xf32> {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c256 = arith.constant 256 : index
  %zero = arith.constant 0.0 : f32
  %r = scf.for %j = %c0 to %c256 step %c64 iter_args(%acc = %out) -> (tensor<4x256xf32>) {
    %kb = tensor.extract_slice %k[%j, 0] [64, 32] [1, 1] : tensor<256x32xf32> to tensor<64x32xf32>
    %e = tensor.empty() : tensor<32x64xf32>
    %kt = linalg.transpose ins(%kb : tensor<64x32xf32>) outs(%e : tensor<32x64xf32>) permutation = [1, 0]
    %e2 = tensor.empty() : tensor<4x64xf32>
    %z = linalg.fill ins(%zero : f32) outs(%e2 : tensor<4x64xf32>) -> tensor<4x64xf32>
    %s = linalg.generic {indexing_maps = [#dq, #dk, #ds], iterator_types = ["parallel", "reduction", "parallel"]}
        ins(%q, %kt : tensor<4x32xf32>, tensor<32x64xf32>) outs(%z : tensor<4x64xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %p = arith.addf %c, %m : f32
      linalg.yield %p : f32
    } -> tensor<4x64xf32>
    %next = tensor.insert_slice %s into %acc[0, %j] [4, 64] [1, 1] : tensor<4x64xf32> into tensor<4x256xf32>
    scf.yield %next : tensor<4x256xf32>
  } {mha.key_blocks_read_once}
  return %r : tensor<4x256xf32>
}

// -----

// More rows than lanes (a prefill's query tile): the outer-product form over
// the key block transposed where it is read.

// CHECK-LABEL: func.func @many_rows_stay_outer_products
// CHECK: scf.for %{{.*}} = %c0 to %c256 step %c64
// CHECK:   vector.transpose
// CHECK-NOT: math.fma
// CHECK: } {mha.key_blocks_read_once}
#dq = affine_map<(g, d, j) -> (g, d)>
#dk = affine_map<(g, d, j) -> (d, j)>
#ds = affine_map<(g, d, j) -> (g, j)>
func.func @many_rows_stay_outer_products(%q: tensor<32x32xf32>, %k: tensor<256x32xf32>, %out: tensor<32x256xf32>) -> tensor<32x256xf32> {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c256 = arith.constant 256 : index
  %zero = arith.constant 0.0 : f32
  %r = scf.for %j = %c0 to %c256 step %c64 iter_args(%acc = %out) -> (tensor<32x256xf32>) {
    %kb = tensor.extract_slice %k[%j, 0] [64, 32] [1, 1] : tensor<256x32xf32> to tensor<64x32xf32>
    %e = tensor.empty() : tensor<32x64xf32>
    %kt = linalg.transpose ins(%kb : tensor<64x32xf32>) outs(%e : tensor<32x64xf32>) permutation = [1, 0]
    %e2 = tensor.empty() : tensor<32x64xf32>
    %z = linalg.fill ins(%zero : f32) outs(%e2 : tensor<32x64xf32>) -> tensor<32x64xf32>
    %s = linalg.generic {indexing_maps = [#dq, #dk, #ds], iterator_types = ["parallel", "reduction", "parallel"]}
        ins(%q, %kt : tensor<32x32xf32>, tensor<32x64xf32>) outs(%z : tensor<32x64xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %p = arith.addf %c, %m : f32
      linalg.yield %p : f32
    } -> tensor<32x64xf32>
    %next = tensor.insert_slice %s into %acc[0, %j] [32, 64] [1, 1] : tensor<32x64xf32> into tensor<32x256xf32>
    scf.yield %next : tensor<32x256xf32>
  } {mha.key_blocks_read_once}
  return %r : tensor<32x256xf32>
}

// -----

// P·V of few rows in a key loop read once: tiles of whole value rows (2 x
// 128: the 16 accumulators of the default 8 x 32 tile), so that each row of
// the block is read in one sweep, in order.

// CHECK-LABEL: func.func @decode_values_whole_rows
// CHECK: scf.for %{{.*}} = %c0 to %c256 step %c64
// CHECK:   scf.for %{{.*}} = %c0 to %c4 step %c2
// CHECK:     scf.for %{{.*}} = %c0 to %c64 step %c1 iter_args(%{{.*}}) -> (vector<2x128xf32>)
// CHECK:       vector.contract {{.*}} : vector<2x1xf32>, vector<1x128xf32> into vector<2x128xf32>
// CHECK: } {mha.key_blocks_read_once}
#vp = affine_map<(g, j, d) -> (g, j)>
#vv = affine_map<(g, j, d) -> (j, d)>
#vo = affine_map<(g, j, d) -> (g, d)>
func.func @decode_values_whole_rows(%p: tensor<4x256xf32>, %v: tensor<256x128xf32>, %out: tensor<4x128xf32>) -> tensor<4x128xf32> {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c256 = arith.constant 256 : index
  %r = scf.for %j = %c0 to %c256 step %c64 iter_args(%acc = %out) -> (tensor<4x128xf32>) {
    %vb = tensor.extract_slice %v[%j, 0] [64, 128] [1, 1] : tensor<256x128xf32> to tensor<64x128xf32>
    %pb = tensor.extract_slice %p[0, %j] [4, 64] [1, 1] : tensor<4x256xf32> to tensor<4x64xf32>
    %s = linalg.generic {indexing_maps = [#vp, #vv, #vo], iterator_types = ["parallel", "reduction", "parallel"]}
        ins(%pb, %vb : tensor<4x64xf32>, tensor<64x128xf32>) outs(%acc : tensor<4x128xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %m = arith.mulf %a, %b : f32
      %q = arith.addf %c, %m : f32
      linalg.yield %q : f32
    } -> tensor<4x128xf32>
    scf.yield %s : tensor<4x128xf32>
  } {mha.key_blocks_read_once}
  return %r : tensor<4x128xf32>
}
