// RUN: mha-opt %s --mha-lower-to-cpu --mlir-print-ir-after=mha-rejoin-peeled-loops 2>&1 >/dev/null | FileCheck %s
// RUN: mha-opt %s --mha-lower-to-cpu | FileCheck %s --check-prefix=LLVM
// RUN: mha-opt %s --mha-lower-to-cpu --mlir-print-ir-after=mha-dynamic-schedule-openmp 2>&1 >/dev/null | FileCheck %s --check-prefix=ORDER

// A sequence length that is not a multiple of the tiles (S = 200: three
// query tiles of 64 and one of 8, key tiles likewise). mha-vectorize peels
// each partial tile into a loop of its own (static sizes); after
// bufferization the loops of one parallel loop are joined again, so that the
// threads share the partial tile with the full ones instead of running it
// alone after them (one batch: one thread): one loop over all the tiles,
// whose body picks the full tiles' code or the partial tile's.

// The K and V projections' loops over (head, key tile), then the query
// tiles' loop.
// CHECK-LABEL: IR Dump After MHARejoinPeeledLoopsPass
// CHECK-NOT: #mha.peeled
// CHECK: scf.forall (%{{.+}}, %[[K:.+]]) = (0, 0) to (4, 200) step (1, 64) {
// CHECK:   arith.cmpi slt, %[[K]], %{{.+}} : index
// CHECK: scf.forall (%{{.+}}, %[[V:.+]]) = (0, 0) to (4, 200) step (1, 64) {
// CHECK:   arith.cmpi slt, %[[V]], %{{.+}} : index
// CHECK: scf.forall (%[[I:.+]]) = (0) to (200) step (64) {
// CHECK:   %[[FULL:.+]] = arith.cmpi slt, %[[I]], %{{.+}} : index
// CHECK:   scf.if %[[FULL]] {
// CHECK:     memref.subview %{{.*}}[0, %[[I]], 0] [1, 64, 256]
// CHECK:   } else {
// CHECK:     memref.subview %{{.*}}[0, 192, 0] [1, 8, 256]
// CHECK:   }
// CHECK-NOT: #mha.peeled

// On OpenMP, the loops are scheduled dynamically; the query tiles' loop,
// whose causal key loops (still marked `mha.causal_key_loop` at that stage)
// grow with the tile, also hands its tiles out last first. The packs and
// projections of equal work keep their order.
// ORDER-LABEL: IR Dump After MHADynamicScheduleOpenMPPass
// ORDER-COUNT-2: omp.loop_nest (%{{.+}}) : index = (%c0) to (%c256) step (%c16) {
// ORDER-NEXT:      memref.alloca_scope
// ORDER:         omp.loop_nest (%{{.+}}, %[[K:.+]]) : index = (%c0, %c0) to (%c4, %c200) step (%c1, %c64) collapse(2) {
// ORDER-NEXT:      memref.alloca_scope
// ORDER-NEXT:        arith.cmpi slt, %[[K]], %c192
// ORDER:         omp.loop_nest (%[[I:.+]]) : index = (%c0) to (%c200) step (%c64) {
// ORDER-NOT:       memref.alloca_scope
// ORDER:           %[[REV:.+]] = arith.subi %{{.+}}, %[[I]] : index
// ORDER:           arith.cmpi slt, %[[REV]], %c192
// ORDER:           } {mha.causal_key_loop}

// LLVM: llvm.func @layer
// LLVM-NOT: mha.causal_key_loop
// LLVM-NOT: mha.peeled
func.func @layer(%x: tensor<1x200x256xf32>, %wq: tensor<256x256xf32>, %wk: tensor<256x256xf32>, %wv: tensor<256x256xf32>, %wo: tensor<256x256xf32>) -> tensor<1x200x256xf32> {
  %y = mha.multi_head_attention %x, %x, %x, %wq, %wk, %wv, %wo {num_heads = 4 : i64, causal}
         : (tensor<1x200x256xf32>, tensor<1x200x256xf32>, tensor<1x200x256xf32>, tensor<256x256xf32>, tensor<256x256xf32>, tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<1x200x256xf32>
  return %y : tensor<1x200x256xf32>
}
