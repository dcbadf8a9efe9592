// RUN: mha-opt %s --mha-lower-to-cpu | FileCheck %s
// RUN: mha-opt %s --mha-lower-to-cpu --mlir-print-ir-after=convert-bufferization-to-memref 2>&1 >/dev/null | FileCheck %s --check-prefix=BUFFERS

// A causal layer whose sequence length is only known at run time: its last
// query tile and the key blocks on the diagonal have dynamic sizes, padded
// to static bounds and sliced back (mha-vectorize), which leaves copies
// between strided subviews of dynamic size after bufferization. They run as
// loops (mha-strided-copies-to-loops), never as calls of the runner
// library's element-by-element memrefCopy.

// BUFFERS-LABEL: IR Dump After ConvertBufferizationToMemRefPass
// BUFFERS: memref.copy {{.*}} : memref<{{.*}}?{{.*}}, strided<{{.*}}>> to memref<{{.*}}>

// CHECK-NOT: memrefCopy
// CHECK: llvm.func @layer
// CHECK-NOT: memrefCopy
func.func @layer(%x: tensor<1x?x256xf32>, %wq: tensor<256x256xf32>, %wk: tensor<256x256xf32>, %wv: tensor<256x256xf32>, %wo: tensor<256x256xf32>) -> tensor<1x?x256xf32> {
  %y = mha.multi_head_attention %x, %x, %x, %wq, %wk, %wv, %wo {num_heads = 4 : i64, causal}
         : (tensor<1x?x256xf32>, tensor<1x?x256xf32>, tensor<1x?x256xf32>, tensor<256x256xf32>, tensor<256x256xf32>, tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<1x?x256xf32>
  return %y : tensor<1x?x256xf32>
}
