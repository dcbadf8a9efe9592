// RUN: mha-opt %s --mha-lower-to-cpu | FileCheck %s
// RUN: mha-opt %s --mha-lower-to-cpu --mlir-print-ir-after=one-shot-bufferize 2>&1 >/dev/null | FileCheck %s --check-prefix=BUFFERS
// RUN: mha-opt %s --pass-pipeline="builtin.module(mha-lower-to-cpu{q-tile-size=32 kv-tile-size=16 emit-c-interface})" | FileCheck %s --check-prefix=OPTIONS
// RUN: mha-opt %s --mha-lower-to-cpu=openmp=false | FileCheck %s --check-prefix=SERIAL
// RUN: mha-opt %s --pass-pipeline="builtin.module(mha-lower-to-cpu{register-tile-rows=6 register-tile-cols=16})" | FileCheck %s --check-prefix=AVX2
// RUN: mha-opt %s --pass-pipeline="builtin.module(mha-lower-to-cpu{vector-width=256})" | FileCheck %s --check-prefix=AVX2

// The tiled pipeline ends in the LLVM dialect, and after bufferization of a
// full causal layer with S=512 there is no buffer of the scores (512x512), of
// the concatenated heads (512x32), and no copy at all: head split and merge
// are views, tiles are written in place.

// The parallel loops (K and V projections over (batch, kv head, key tile),
// the layer over (batch, query tile)) are OpenMP work-sharing loops with a
// dynamic schedule, each in a parallel region (LLVM's libomp at run time);
// with openmp=false they are serial loops and the code needs no runtime.

// CHECK: llvm.func @layer(
// CHECK-NOT: mha.
// CHECK-NOT: linalg.
// CHECK-NOT: scf.
// CHECK: omp.parallel {
// CHECK:   omp.wsloop schedule(dynamic) {
// CHECK:     omp.loop_nest
// The contractions are register tiles of FMAs on 32 lanes (mha-vectorize:
// 8 rows x 32 columns per reduction step), the softmax's exp is the
// polynomial of mha-approximate-exp on vectors, not a libm call.
// CHECK-NOT: llvm.intr.exp
// CHECK:       llvm.intr.fmuladd({{.*}}) : (vector<32xf32>, vector<32xf32>, vector<32xf32>) -> vector<32xf32>
// CHECK-NOT: llvm.intr.exp
// CHECK:       llvm.intr.fma({{.*}}) : (vector<64xf32>, vector<64xf32>, vector<64xf32>) -> vector<64xf32>
// CHECK-NOT: llvm.intr.exp
// SERIAL: llvm.func @layer(
// SERIAL-NOT: omp.

// BUFFERS-LABEL: IR Dump After OneShotBufferizePass
// BUFFERS-NOT: 512x512
// BUFFERS-NOT: 512x32
// BUFFERS-NOT: memref.copy
// BUFFERS: func.func @layer

// OPTIONS: llvm.func @_mlir_ciface_layer(

// Register tiles for a 16-register target (AVX2): rows take the largest
// divisor of the 64-row tiles up to 6 (4), columns 16 lanes (2 ymm); the
// same tiles are what vector-width=256 chooses.
// AVX2: llvm.intr.fmuladd({{.*}}) : (vector<16xf32>, vector<16xf32>, vector<16xf32>) -> vector<16xf32>
func.func @layer(%x: tensor<1x512x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x32xf32>,
                 %wv: tensor<64x16xf32>, %wo: tensor<32x64xf32>) -> tensor<1x512x64xf32> {
  %y = mha.multi_head_attention %x, %x, %x, %wq, %wk, %wv, %wo
       {num_heads = 4 : i64, num_kv_heads = 2 : i64, causal}
       : (tensor<1x512x64xf32>, tensor<1x512x64xf32>, tensor<1x512x64xf32>, tensor<64x64xf32>,
          tensor<64x32xf32>, tensor<64x16xf32>, tensor<32x64xf32>) -> tensor<1x512x64xf32>
  return %y : tensor<1x512x64xf32>
}
