// The attention through mha-lower-to-vulkan: the GPU IR after the mapping
// (one launch over (batch, head, query tile) blocks, the key block staged in
// workgroup memory (a workgroup attribution of the launch), the value block
// too (a row per thread), barriers between the distributed ops, a key loop ending
// at the causal bound, no Sq x Sk buffer), and the result: a SPIR-V
// gpu.binary launched from host code.
//
// RUN: mha-opt %s --mha-lower-to-vulkan -mlir-print-ir-after=mha-map-forall-to-gpu -o %t.mlir 2>&1 | FileCheck %s --check-prefix=GPU
// RUN: FileCheck %s --check-prefix=LLVM < %t.mlir

// GPU: gpu.launch blocks(%{{.*}}, %{{.*}}, %{{.*}}) in ({{.*}}) threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c32{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}})
// GPU-SAME: workgroup({{.*}}%[[KT:[a-z0-9]+]] : memref<1x1x16x32xf32, #gpu.address_space<workgroup>>
// GPU-NOT: memref.alloc
// GPU:   scf.for %{{.*}} = %c0{{.*}} to %[[BOUND:.+]] step %c32
// GPU:     memref.subview %[[KT]]
// GPU:     gpu.barrier
// GPU:     linalg.copy ins(%{{.*}} : memref<1x1x1x16xf32, {{.*}}>) outs(%{{.*}} : memref<1x1x1x16xf32, {{.*}}#gpu.address_space<workgroup>>)
// GPU:     gpu.barrier
// GPU-NOT: memref<{{.*}}128x128xf32
// GPU:   gpu.terminator

// LLVM: llvm.func @main(
// LLVM: gpu.launch_func @main_kernel::@main_kernel
// The target's device id is unknown (not printed), not whatever the options
// struct held uninitialized.
// LLVM: gpu.binary @main_kernel [#gpu.object<#spirv.target_env<#spirv.vce<v1.3, [Shader, Float16, StorageBuffer16BitAccess, Int64, GroupNonUniformShuffle], [SPV_KHR_storage_buffer_storage_class, SPV_KHR_16bit_storage]>, #spirv.resource_limits<>>, "

func.func @main(%q: tensor<2x4x128x16xf32>, %k: tensor<2x4x128x16xf32>, %v: tensor<2x4x128x16xf32>) -> tensor<2x4x128x16xf32> {
  %init = tensor.empty() : tensor<2x4x128x16xf32>
  %o = mha.attention ins(%q, %k, %v : tensor<2x4x128x16xf32>, tensor<2x4x128x16xf32>, tensor<2x4x128x16xf32>)
         outs(%init : tensor<2x4x128x16xf32>) {causal} -> tensor<2x4x128x16xf32>
  return %o : tensor<2x4x128x16xf32>
}
