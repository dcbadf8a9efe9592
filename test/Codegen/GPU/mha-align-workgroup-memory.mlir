// RUN: mha-opt %s --split-input-file --mha-align-workgroup-memory | FileCheck %s
// RUN: mha-opt %s --split-input-file --mha-align-workgroup-memory=bytes=8 | FileCheck %s --check-prefix=EIGHT
// RUN: not mha-opt %s --mha-align-workgroup-memory=bytes=12 2>&1 | FileCheck %s --check-prefix=BAD

// Every workgroup attribution gets 16-byte alignment, unless it states its
// own; NVVM puts it on the shared-memory global.
// CHECK-LABEL: gpu.func @k
// CHECK-SAME: workgroup(%{{.+}} : memref<3xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{.+}} : memref<5xf16, #gpu.address_space<workgroup>> {llvm.align = 4 : i64})
// EIGHT: workgroup(%{{.+}} : memref<3xf32, #gpu.address_space<workgroup>> {llvm.align = 8 : i64}, %{{.+}} : memref<5xf16, #gpu.address_space<workgroup>> {llvm.align = 4 : i64})
// BAD: error: bytes must be a positive power of two, found 12
gpu.module @m {
  gpu.func @k(%p: memref<4xf32>)
      workgroup(%a: memref<3xf32, #gpu.address_space<workgroup>>,
                %b: memref<5xf16, #gpu.address_space<workgroup>> {llvm.align = 4 : i64}) kernel {
    gpu.return
  }
}
