// GPU kernels through mha-nvvm-backend: PTX for sm_80 and sm_90 (PTX ISA 8.0)
// in a gpu.binary, the host calling the mgpu* CUDA runtime functions; with
// ptxas (CUDA toolkit), the same kernels assembled into cubins for both chips.
//
// RUN: mha-opt %s --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" --mha-nvvm-backend="chip=sm_90 format=isa" | FileCheck %s --check-prefix=PTX
// RUN: %if ptxas %{ mha-opt %s --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" --mha-nvvm-backend="chip=sm_80 format=bin" | FileCheck %s --check-prefix=CUBIN80 %}
// RUN: %if ptxas %{ mha-opt %s --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" --mha-nvvm-backend="chip=sm_90 format=bin" | FileCheck %s --check-prefix=CUBIN90 %}

// PTX: llvm.func @main(
// PTX: gpu.launch_func @main_kernel::@main_kernel blocks in ({{.*}}) threads in ({{.*}}) : i64 args(
// PTX: gpu.binary @main_kernel [#gpu.object<#nvvm.target<chip = "sm_90", features = "+ptx80">
// PTX-SAME: assembly = "
// PTX-SAME: .version 8.0
// PTX-SAME: .target sm_90
// PTX-SAME: bar.sync
// CUBIN80: gpu.object<#nvvm.target<chip = "sm_80", features = "+ptx80">, {{.*}}bin = "\7FELF
// CUBIN90: gpu.object<#nvvm.target<chip = "sm_90", features = "+ptx80">, {{.*}}bin = "\7FELF

// One workgroup per row, the row staged in workgroup memory, a barrier, then
// exp of the reversed row plus another input.
func.func @main(%a: tensor<4x8xf32>, %c: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c7 = arith.constant 7 : index
  %c8 = arith.constant 8 : index
  %ma = bufferization.to_buffer %a : tensor<4x8xf32> to memref<4x8xf32>
  %mc = bufferization.to_buffer %c : tensor<4x8xf32> to memref<4x8xf32>
  %out = memref.alloc() : memref<4x8xf32>
  gpu.launch blocks(%b, %by, %bz) in (%gx = %c4, %gy = %c1, %gz = %c1)
             threads(%i, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1)
             workgroup(%row : memref<8xf32, #gpu.address_space<workgroup>>) {
    %x = memref.load %ma[%b, %i] : memref<4x8xf32>
    memref.store %x, %row[%i] : memref<8xf32, #gpu.address_space<workgroup>>
    gpu.barrier
    %j = arith.subi %c7, %i : index
    %y = memref.load %row[%j] : memref<8xf32, #gpu.address_space<workgroup>>
    %z = memref.load %mc[%b, %i] : memref<4x8xf32>
    %s = arith.addf %y, %z : f32
    %e = math.exp %s : f32
    memref.store %e, %out[%b, %i] : memref<4x8xf32>
    gpu.terminator
  }
  %r = bufferization.to_tensor %out restrict : memref<4x8xf32> to tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}
