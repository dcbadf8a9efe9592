// The attention through mha-lower-to-cuda with a dynamic sequence length:
// the GPU mapping of mha-lower-to-vulkan, each host buffer of the launch
// copied to device memory of its run-time size and the output copied back
// (on one stream, synchronized before the host goes on), and an NVVM
// gpu.binary: PTX for sm_90 with the key block in shared memory and
// barriers; with ptxas, cubins for sm_80 and sm_90.
//
// RUN: mha-opt %s --mha-lower-to-cuda="chip=sm_90 format=isa" -mlir-print-ir-after=mha-stage-kernel-buffers -o %t.mlir 2>&1 | FileCheck %s --check-prefix=STAGE
// RUN: FileCheck %s --check-prefix=PTX < %t.mlir
// RUN: %if ptxas %{ mha-opt %s --mha-lower-to-cuda="chip=sm_80 format=bin" | FileCheck %s --check-prefix=CUBIN80 %}
// RUN: %if ptxas %{ mha-opt %s --mha-lower-to-cuda="chip=sm_90 format=bin" | FileCheck %s --check-prefix=CUBIN90 %}
// The whole BERT-base layer: five kernels (three projections, attention,
// output projection), each assembled for sm_90.
// RUN: %if ptxas %{ mha-opt %S/../../examples/bert-base.mlir --mha-lower-to-cuda="chip=sm_90 format=bin" | FileCheck %s --check-prefix=LAYER %}
// LAYER-COUNT-5: gpu.binary @{{.*}} [#gpu.object<#nvvm.target<chip = "sm_90", features = "+ptx80">, {{.*}}bin = "\7FELF
// LAYER-NOT: gpu.binary

// STAGE-LABEL: func.func @main
// STAGE-SAME: (%[[Q:[a-z0-9]+]]: memref<2x4x?x16xf32>
// STAGE: %[[DQ:.+]] = gpu.alloc  (%{{.*}}) : memref<2x4x?x16xf32>
// STAGE-NEXT: gpu.memcpy  %[[DQ]], %[[Q]] :
// STAGE: gpu.launch
// STAGE-SAME: workgroup(
// STAGE: memref.load %[[DQ]]
// STAGE: gpu.barrier
// STAGE: gpu.terminator
// STAGE: gpu.memcpy  %{{.*}}, %{{.*}} : memref<2x4x?x16xf32>, memref<2x4x?x16xf32>
// STAGE: gpu.dealloc  %[[DQ]]

// PTX: llvm.func @main(
// PTX: llvm.call @mgpuStreamCreate()
// PTX: llvm.call @mgpuMemAlloc(
// PTX: llvm.call @mgpuMemcpy(
// PTX: gpu.launch_func <%{{.*}} : !llvm.ptr> @main_kernel::@main_kernel
// PTX: llvm.call @mgpuMemcpy(
// PTX: llvm.call @mgpuMemFree(
// PTX: llvm.call @mgpuStreamSynchronize(
// PTX: gpu.binary @main_kernel [#gpu.object<#nvvm.target<chip = "sm_90", features = "+ptx80">
// PTX-SAME: .target sm_90
// PTX-SAME: .shared .align
// PTX-SAME: bar.sync
// CUBIN80: gpu.object<#nvvm.target<chip = "sm_80", features = "+ptx80">, {{.*}}bin = "\7FELF
// CUBIN90: gpu.object<#nvvm.target<chip = "sm_90", features = "+ptx80">, {{.*}}bin = "\7FELF

func.func @main(%q: tensor<2x4x?x16xf32>, %k: tensor<2x4x?x16xf32>, %v: tensor<2x4x?x16xf32>) -> tensor<2x4x?x16xf32> {
  %c2 = arith.constant 2 : index
  %n = tensor.dim %q, %c2 : tensor<2x4x?x16xf32>
  %init = tensor.empty(%n) : tensor<2x4x?x16xf32>
  %o = mha.attention ins(%q, %k, %v : tensor<2x4x?x16xf32>, tensor<2x4x?x16xf32>, tensor<2x4x?x16xf32>)
         outs(%init : tensor<2x4x?x16xf32>) {causal} -> tensor<2x4x?x16xf32>
  return %o : tensor<2x4x?x16xf32>
}
