// RUN: mha-opt %s --split-input-file --mha-prefetch-key-blocks | FileCheck %s
// RUN: not mha-opt %s --mha-prefetch-key-blocks="cache-line-bytes=0" -o /dev/null 2>&1 | FileCheck %s --check-prefix=LINE

// A decoding key loop (marked by mha-tile-attention) reads a block of 128
// key rows and one of value rows per step. The keys' rows are prefetched
// one block ahead where the scores walk them (4 rows per step), the
// values' where P·V does (1 row per step): every 64-byte line of a 256-byte
// bf16 row, the row clamped to the buffer's last one.
// CHECK-LABEL: func.func @decode
// CHECK-SAME: (%[[K:.*]]: memref<1x2x?x128xbf16>, %[[V:.*]]: memref<1x2x?x128xbf16>
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG: %[[KDIM:.*]] = memref.dim %[[K]], %[[C2]]
// CHECK-DAG: %[[KLAST:.*]] = arith.subi %[[KDIM]]
// CHECK-DAG: %[[C128:.*]] = arith.constant 128 : index
// CHECK-DAG: %[[C131:.*]] = arith.constant 131 : index
// CHECK-DAG: %[[VDIM:.*]] = memref.dim %[[V]], %[[C2]]
// CHECK-DAG: %[[VLAST:.*]] = arith.subi %[[VDIM]]
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK: scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT: %[[BASE:.*]] = arith.addi %[[I]], %[[J]]
// CHECK-NEXT: %[[R0:.*]] = arith.addi %[[BASE]], %[[C128]]
// CHECK-NEXT: %[[ROW0:.*]] = arith.minui %[[R0]], %[[KLAST]]
// CHECK-NEXT: memref.prefetch %[[K]][%{{.*}}, %{{.*}}, %[[ROW0]], %{{.*}}], read, locality<3>, data
// CHECK-COUNT-3: memref.prefetch %[[K]][%{{.*}}, %{{.*}}, %[[ROW0]],
// CHECK-COUNT-2: memref.prefetch %[[K]]
// CHECK: %[[R3:.*]] = arith.addi %[[BASE]], %[[C131]]
// CHECK-NEXT: %[[ROW3:.*]] = arith.minui %[[R3]], %[[KLAST]]
// CHECK-COUNT-4: memref.prefetch %[[K]][%{{.*}}, %{{.*}}, %[[ROW3]],
// CHECK-NEXT: vector.transfer_read
// CHECK: scf.for %[[JV:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT: %[[VBASE:.*]] = arith.addi %[[I]], %[[JV]]
// CHECK-NEXT: %[[VR:.*]] = arith.addi %[[VBASE]], %[[C128]]
// CHECK-NEXT: %[[VROW:.*]] = arith.minui %[[VR]], %[[VLAST]]
// CHECK-COUNT-4: memref.prefetch %[[V]][%{{.*}}, %{{.*}}, %[[VROW]],
// CHECK-NEXT: vector.transfer_read
// CHECK: } {mha.prefetch_blocks = 1 : i64}
// LINE: error: mha-prefetch-key-blocks: cache-line-bytes must be positive, found 0
func.func @decode(%k: memref<1x2x?x128xbf16>, %v: memref<1x2x?x128xbf16>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c128 = arith.constant 128 : index
  %pad = arith.constant 0.0 : bf16
  scf.for %i = %c0 to %n step %c128 {
    %kb = memref.subview %k[0, 1, %i, 0] [1, 1, 128, 128] [1, 1, 1, 1] : memref<1x2x?x128xbf16> to memref<1x1x128x128xbf16, strided<[?, ?, 128, 1], offset: ?>>
    %vb = memref.subview %v[0, 1, %i, 0] [1, 1, 128, 128] [1, 1, 1, 1] : memref<1x2x?x128xbf16> to memref<1x1x128x128xbf16, strided<[?, ?, 128, 1], offset: ?>>
    %kc = memref.collapse_shape %kb [[0, 1, 2], [3]] : memref<1x1x128x128xbf16, strided<[?, ?, 128, 1], offset: ?>> into memref<128x128xbf16, strided<[128, 1], offset: ?>>
    scf.for %j = %c0 to %c128 step %c4 {
      %r = vector.transfer_read %kc[%j, %c0], %pad {in_bounds = [true, true]} : memref<128x128xbf16, strided<[128, 1], offset: ?>>, vector<4x128xbf16>
    }
    scf.for %j = %c0 to %c128 step %c1 {
      %r = vector.transfer_read %vb[%c0, %c0, %j, %c0], %pad {in_bounds = [true]} : memref<1x1x128x128xbf16, strided<[?, ?, 128, 1], offset: ?>>, vector<128xbf16>
    }
  } {mha.prefetch_blocks = 1 : i64}
  return
}

// -----

// Rows of several dims ([S, H, d] keys: a key's row is its heads' d
// values), two blocks ahead: the lines' indices run over the row's dims; a
// row that does not end on a line (72 f32 = 288 bytes) also has its last
// element prefetched (a row that does not start on a line reaches into one
// more).
// CHECK-LABEL: func.func @rows
// CHECK-DAG: %[[C16:.*]] = arith.constant 16 : index
// CHECK-DAG: %[[C32:.*]] = arith.constant 32 : index
// CHECK-DAG: %[[C12:.*]] = arith.constant 12 : index
// CHECK-DAG: %[[C28:.*]] = arith.constant 28 : index
// CHECK-DAG: %[[C35:.*]] = arith.constant 35 : index
// CHECK-DAG: %[[C256:.*]] = arith.constant 256 : index
// CHECK: scf.for
// CHECK: scf.for
// CHECK: %[[ROW:.*]] = arith.minui
// CHECK-NEXT: memref.prefetch %arg0[%[[ROW]], %[[Z:[a-z0-9_]+]], %[[Z]]]
// CHECK-NEXT: memref.prefetch %arg0[%[[ROW]], %[[Z]], %[[C16]]]
// CHECK-NEXT: memref.prefetch %arg0[%[[ROW]], %[[Z]], %[[C32]]]
// CHECK-NEXT: memref.prefetch %arg0[%[[ROW]], %[[O:[a-z0-9_]+]], %[[C12]]]
// CHECK-NEXT: memref.prefetch %arg0[%[[ROW]], %[[O]], %[[C28]]]
// CHECK-NEXT: memref.prefetch %arg0[%[[ROW]], %[[O]], %[[C35]]]
// CHECK-NOT: memref.prefetch
// CHECK: vector.transfer_read
func.func @rows(%k: memref<?x2x36xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %pad = arith.constant 0.0 : f32
  scf.for %i = %c0 to %n step %c128 {
    %kb = memref.subview %k[%i, 0, 0] [128, 2, 36] [1, 1, 1] : memref<?x2x36xf32> to memref<128x2x36xf32, strided<[72, 36, 1], offset: ?>>
    scf.for %j = %c0 to %c128 step %c1 {
      %r = vector.transfer_read %kb[%j, %c0, %c0], %pad {in_bounds = [true, true]} : memref<128x2x36xf32, strided<[72, 36, 1], offset: ?>>, vector<2x36xf32>
    }
  } {mha.prefetch_blocks = 2 : i64}
  return
}

// -----

// Nothing is prefetched for blocks that are written, blocks of part of a
// row, blocks no nested loop walks by rows (its range is not the block's),
// or in a loop without the attribute.
// CHECK-LABEL: func.func @unmatched
// CHECK-NOT: memref.prefetch
func.func @unmatched(%k: memref<?x128xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %pad = arith.constant 0.0 : f32
  %zero = arith.constant dense<0.0> : vector<128xf32>
  scf.for %i = %c0 to %n step %c128 {
    %written = memref.subview %k[%i, 0] [128, 128] [1, 1] : memref<?x128xf32> to memref<128x128xf32, strided<[128, 1], offset: ?>>
    %half = memref.subview %k[%i, 0] [128, 64] [1, 1] : memref<?x128xf32> to memref<128x64xf32, strided<[128, 1], offset: ?>>
    scf.for %j = %c0 to %c128 step %c1 {
      vector.transfer_write %zero, %written[%j, %c0] {in_bounds = [true]} : vector<128xf32>, memref<128x128xf32, strided<[128, 1], offset: ?>>
      %r = vector.transfer_read %half[%j, %c0], %pad {in_bounds = [true]} : memref<128x64xf32, strided<[128, 1], offset: ?>>, vector<64xf32>
    }
  } {mha.prefetch_blocks = 1 : i64}
  scf.for %i = %c0 to %n step %c128 {
    %kb = memref.subview %k[%i, 0] [128, 128] [1, 1] : memref<?x128xf32> to memref<128x128xf32, strided<[128, 1], offset: ?>>
    scf.for %j = %c0 to %c64 step %c1 {
      %r = vector.transfer_read %kb[%j, %c0], %pad {in_bounds = [true]} : memref<128x128xf32, strided<[128, 1], offset: ?>>, vector<128xf32>
    }
  } {mha.prefetch_blocks = 1 : i64}
  scf.for %i = %c0 to %n step %c128 {
    %kb = memref.subview %k[%i, 0] [128, 128] [1, 1] : memref<?x128xf32> to memref<128x128xf32, strided<[128, 1], offset: ?>>
    scf.for %j = %c0 to %c128 step %c1 {
      %r = vector.transfer_read %kb[%j, %c0], %pad {in_bounds = [true]} : memref<128x128xf32, strided<[128, 1], offset: ?>>, vector<128xf32>
    }
  }
  return
}
