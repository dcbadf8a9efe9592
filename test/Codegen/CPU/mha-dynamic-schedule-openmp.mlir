// RUN: mha-opt %s --mha-dynamic-schedule-openmp=reverse | FileCheck %s
// RUN: mha-opt %s --mha-dynamic-schedule-openmp=reverse --canonicalize | FileCheck %s --check-prefix=FOLD
// RUN: mha-opt %s --mha-dynamic-schedule-openmp | FileCheck %s --check-prefix=PLAIN
// RUN: mha-opt %s --mha-dynamic-schedule-openmp="reverse-causal=false" | FileCheck %s --check-prefix=NATURAL

// Every OpenMP work-sharing loop gets schedule(dynamic); with `reverse` its
// iterations are handed out last first. By default only the loops whose
// iterations run a causal key loop (`mha.causal_key_loop`) are: causal query
// tiles do unequal work, growing with their index (the largest first);
// loops of equal work keep their order.
// PLAIN-LABEL: func.func @tiles
// PLAIN: omp.wsloop schedule(dynamic) {
// PLAIN-NOT: arith.subi
// PLAIN: memref.store %{{.*}}, %{{.*}}[%arg2]
// NATURAL-LABEL: func.func @tiles
// NATURAL-NOT: arith.subi
// NATURAL: memref.store %{{.*}}, %{{.*}}[%arg2]

// Each induction variable of [lb, ub) step s becomes
// lb + lb + ((ub - lb - 1) / s) * s - iv: its last value first, lb last.
// CHECK-LABEL: func.func @tiles
// CHECK-SAME: (%[[N:.*]]: index,
// CHECK: omp.wsloop schedule(dynamic) {
// CHECK:   omp.loop_nest (%[[IV:.*]]) : index = (%[[LB:.*]]) to (%[[N]]) step (%[[STEP:.*]]) {
// CHECK:     %[[ONE:.*]] = arith.constant 1 : index
// CHECK:     %[[SPAN:.*]] = arith.subi %[[N]], %[[LB]]
// CHECK:     %[[SPAN1:.*]] = arith.subi %[[SPAN]], %[[ONE]]
// CHECK:     %[[K:.*]] = arith.divsi %[[SPAN1]], %[[STEP]]
// CHECK:     %[[KS:.*]] = arith.muli %[[K]], %[[STEP]]
// CHECK:     %[[LB2:.*]] = arith.addi %[[LB]], %[[LB]]
// CHECK:     %[[BASE:.*]] = arith.addi %[[LB2]], %[[KS]]
// CHECK:     %[[REV:.*]] = arith.subi %[[BASE]], %[[IV]]
// CHECK:     memref.store %{{.*}}, %{{.*}}[%[[REV]]]
func.func @tiles(%n: index, %buf: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f32
  omp.parallel {
    omp.wsloop {
      omp.loop_nest (%i) : index = (%c0) to (%n) step (%c1) {
        memref.store %one, %buf[%i] : memref<?xf32>
        omp.yield
      }
    }
    omp.terminator
  }
  return
}

// Static bounds: [2, 13) step 4 runs 2, 6, 10, reversed 10, 6, 2
// (12 - iv); [0, 8) step 1 runs 7 - iv. A partial last step counts as an
// iteration of its own.
// FOLD-LABEL: func.func @nest
// FOLD-DAG: %[[C12:.*]] = arith.constant 12 : index
// FOLD-DAG: %[[C7:.*]] = arith.constant 7 : index
// FOLD: omp.wsloop schedule(dynamic) {
// FOLD:   omp.loop_nest (%[[I:.*]], %[[J:.*]]) : index =
// FOLD-DAG: %[[RI:.*]] = arith.subi %[[C12]], %[[I]] : index
// FOLD-DAG: %[[RJ:.*]] = arith.subi %[[C7]], %[[J]] : index
// FOLD: memref.store %{{.*}}, %{{.*}}[%[[RI]], %[[RJ]]]
func.func @nest(%buf: memref<16x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c13 = arith.constant 13 : index
  %one = arith.constant 1.0 : f32
  omp.parallel {
    omp.wsloop {
      omp.loop_nest (%i, %j) : index = (%c2, %c0) to (%c13, %c8) step (%c4, %c1) {
        memref.store %one, %buf[%i, %j] : memref<16x8xf32>
        omp.yield
      }
    }
    omp.terminator
  }
  return
}

// Bounds that include their upper value keep their order.
// FOLD-LABEL: func.func @inclusive
// FOLD: omp.wsloop schedule(dynamic) {
// FOLD:   omp.loop_nest (%[[I:.*]]) : index = ({{.*}}) to ({{.*}}) inclusive step
// FOLD-NOT: arith.subi
// FOLD:     memref.store %{{.*}}, %{{.*}}[%[[I]]]
func.func @inclusive(%buf: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c15 = arith.constant 15 : index
  %one = arith.constant 1.0 : f32
  omp.parallel {
    omp.wsloop {
      omp.loop_nest (%i) : index = (%c0) to (%c15) inclusive step (%c1) {
        memref.store %one, %buf[%i] : memref<16xf32>
        omp.yield
      }
    }
    omp.terminator
  }
  return
}

// The query tiles of causal attention: the key loop in each iteration ends
// at the diagonal, so the default reverses this loop (and `reverse-causal=false`
// keeps it in order).
// PLAIN-LABEL: func.func @causal_query_tiles
// PLAIN: omp.wsloop schedule(dynamic) {
// PLAIN:   omp.loop_nest (%[[I:.*]]) : index =
// PLAIN:     %[[REV:.*]] = arith.subi %{{.*}}, %[[I]] : index
// PLAIN:     scf.for %{{.*}} = %{{.*}} to %[[REV]]
// PLAIN:     } {mha.causal_key_loop}
// NATURAL-LABEL: func.func @causal_query_tiles
// NATURAL: omp.loop_nest (%[[I:.*]]) : index =
// NATURAL-NOT: arith.subi
// NATURAL:     scf.for %{{.*}} = %{{.*}} to %[[I]]
func.func @causal_query_tiles(%buf: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %one = arith.constant 1.0 : f32
  omp.parallel {
    omp.wsloop {
      omp.loop_nest (%i) : index = (%c0) to (%c16) step (%c4) {
        scf.for %j = %c0 to %i step %c1 {
          memref.store %one, %buf[%j] : memref<16xf32>
        } {mha.causal_key_loop}
        omp.yield
      }
    }
    omp.terminator
  }
  return
}
