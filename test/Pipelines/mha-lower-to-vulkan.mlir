// The attention through mha-lower-to-vulkan: the GPU IR after the mapping
// and the result, a SPIR-V gpu.binary launched from host code. The rule's
// kernel is the register kernel (mha-attention-to-simt): one launch over
// (batch, head, query tile) blocks of 128 threads, the Q tile and the key
// and value blocks in workgroup memory (attributions of the launch), the
// key loop ending at the causal bound with two barriers a block, the
// scores and the softmax state in registers (iter_args), row statistics by
// shuffles. With tile sizes given, the thread-per-row kernel: the key block
// staged in workgroup memory, the value block too (a row per thread),
// barriers between the distributed ops. Neither has an Sq x Sk buffer.
// The host code copies Q, K and V into device buffers (mgpuMemAlloc, which
// the runtime binds as they are), launches on them and copies the output
// back, as on CUDA (mha-stage-kernel-buffers).
//
// RUN: mha-opt %s --mha-lower-to-vulkan -mlir-print-ir-after=mha-map-forall-to-gpu -o %t.mlir 2>&1 | FileCheck %s --check-prefix=GPU
// RUN: FileCheck %s --check-prefix=LLVM < %t.mlir
// RUN: mha-opt %s --mha-lower-to-vulkan='q-tile-size=32 kv-tile-size=32' -mlir-print-ir-after=mha-map-forall-to-gpu -o /dev/null 2>&1 | FileCheck %s --check-prefix=ROW

// GPU: gpu.launch blocks(%{{.*}}, %{{.*}}, %{{.*}}) in ({{.*}}) threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c128{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}})
// GPU-SAME: workgroup(%[[QT:[a-z0-9]+]] : memref<64x20xf32, #gpu.address_space<workgroup>>, %[[KT:[a-z0-9]+]] : memref<32x20xf32, #gpu.address_space<workgroup>>, %[[VT:[a-z0-9]+]] : memref<32x20xf32, #gpu.address_space<workgroup>>)
// GPU-NOT: memref.alloc
// GPU:   memref.store %{{.*}}, %[[QT]]
// GPU:   scf.for %{{.*}} = %c0{{.*}} to %[[BOUND:.+]] step %c32{{.*}} iter_args(
// GPU:     gpu.barrier
// GPU:     memref.store %{{.*}}, %[[KT]]
// GPU:     memref.store %{{.*}}, %[[VT]]
// GPU:     gpu.barrier
// GPU:     gpu.shuffle  xor
// GPU-NOT: memref<{{.*}}128x128xf32
// GPU:   gpu.terminator

// ROW: gpu.launch blocks(%{{.*}}, %{{.*}}, %{{.*}}) in ({{.*}}) threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c32{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}})
// ROW-SAME: workgroup({{.*}}%[[KT:[a-z0-9]+]] : memref<1x1x16x32xf32, #gpu.address_space<workgroup>>
// ROW-NOT: memref.alloc
// ROW:   scf.for %{{.*}} = %c0{{.*}} to %[[BOUND:.+]] step %c32
// ROW:     memref.subview %[[KT]]
// ROW:     gpu.barrier
// ROW:     linalg.copy ins(%{{.*}} : memref<1x1x1x16xf32, {{.*}}>) outs(%{{.*}} : memref<1x1x1x16xf32, {{.*}}#gpu.address_space<workgroup>>)
// ROW:     gpu.barrier
// ROW-NOT: memref<{{.*}}128x128xf32
// ROW:   gpu.terminator

// LLVM: llvm.func @main(
// LLVM: llvm.call @mgpuMemAlloc
// LLVM: llvm.call @mgpuMemcpy
// LLVM: llvm.call @mgpuMemAlloc
// LLVM: llvm.call @mgpuMemcpy
// LLVM: llvm.call @mgpuMemAlloc
// LLVM: llvm.call @mgpuMemcpy
// LLVM: llvm.call @mgpuMemAlloc
// LLVM-NOT: llvm.call @mgpuMemcpy
// LLVM: gpu.launch_func <%{{.*}} : !llvm.ptr> @main_kernel::@main_kernel
// LLVM: llvm.call @mgpuMemcpy
// LLVM-COUNT-4: llvm.call @mgpuMemFree
// LLVM: llvm.return
// The target's device id is unknown (not printed), not whatever the options
// struct held uninitialized.
// LLVM: gpu.binary @main_kernel [#gpu.object<#spirv.target_env<#spirv.vce<v1.3, [Shader, Float16, StorageBuffer16BitAccess, Int64, GroupNonUniformShuffle], [SPV_KHR_storage_buffer_storage_class, SPV_KHR_16bit_storage]>, #spirv.resource_limits<>>, "

func.func @main(%q: tensor<2x4x128x16xf32>, %k: tensor<2x4x128x16xf32>, %v: tensor<2x4x128x16xf32>) -> tensor<2x4x128x16xf32> {
  %init = tensor.empty() : tensor<2x4x128x16xf32>
  %o = mha.attention ins(%q, %k, %v : tensor<2x4x128x16xf32>, tensor<2x4x128x16xf32>, tensor<2x4x128x16xf32>)
         outs(%init : tensor<2x4x128x16xf32>) {causal} -> tensor<2x4x128x16xf32>
  return %o : tensor<2x4x128x16xf32>
}
