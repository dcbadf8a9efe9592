// RUN: mha-opt %s --split-input-file --verify-diagnostics --mha-gpu-to-spirv | FileCheck %s

// The kernels of a gpu.module converted into a spirv.module nested in it (where
// gpu-module-to-binary serializes from), under the module's target; the
// kernels stay for the host's launches. Workgroup memory becomes a Workgroup
// variable, the block size the kernel's workgroup size, gpu.barrier a control
// barrier.

// CHECK-LABEL: gpu.module @kernels
// CHECK-NEXT:    spirv.module @__spv__kernels Logical GLSL450
// CHECK:           spirv.GlobalVariable @__workgroup_mem__0 : !spirv.ptr<!spirv.struct<(!spirv.array<8 x f32>)>, Workgroup>
// CHECK:           spirv.func @reverse(%{{.*}}: !spirv.ptr<!spirv.struct<(!spirv.array<32 x f32, stride=4> [0])>, StorageBuffer> {spirv.interface_var_abi = #spirv.interface_var_abi<(0, 0)>}, %{{.*}}: {{.*}} {spirv.interface_var_abi = #spirv.interface_var_abi<(0, 1)>})
// CHECK-SAME:        spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [8, 1, 1]>
// CHECK:             spirv.ControlBarrier <Workgroup>, <Workgroup>, <AcquireRelease|WorkgroupMemory>
// CHECK:         gpu.func @reverse(
// CHECK-SAME:      kernel
module attributes {gpu.container_module} {
  gpu.module @kernels [#spirv.target_env<#spirv.vce<v1.0, [Shader], [SPV_KHR_storage_buffer_storage_class]>, #spirv.resource_limits<>>] {
    gpu.func @reverse(%in: memref<4x8xf32>, %out: memref<4x8xf32>) workgroup(%row : memref<8xf32, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 8, 1, 1>} {
      %c7 = arith.constant 7 : index
      %b = gpu.block_id x
      %i = gpu.thread_id x
      %x = memref.load %in[%b, %i] : memref<4x8xf32>
      memref.store %x, %row[%i] : memref<8xf32, #gpu.address_space<workgroup>>
      gpu.barrier
      %j = arith.subi %c7, %i : index
      %y = memref.load %row[%j] : memref<8xf32, #gpu.address_space<workgroup>>
      memref.store %y, %out[%b, %i] : memref<4x8xf32>
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @dynamic [#spirv.target_env<#spirv.vce<v1.0, [Shader], [SPV_KHR_storage_buffer_storage_class]>, #spirv.resource_limits<>>] {
    // expected-error @below {{'gpu.func' op needs a static workgroup size for SPIR-V (launch it with constant block sizes, or give it a spirv.entry_point_abi)}}
    gpu.func @k(%out: memref<8xf32>) kernel {
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @scalar [#spirv.target_env<#spirv.vce<v1.0, [Shader], [SPV_KHR_storage_buffer_storage_class]>, #spirv.resource_limits<>>] {
    // expected-error @below {{'gpu.func' op argument 1 is 'index': kernels for Vulkan take buffers (memrefs) only}}
    gpu.func @k(%out: memref<8xf32>, %n: index) kernel attributes {known_block_size = array<i32: 8, 1, 1>} {
      gpu.return
    }
  }
}

// -----

// What the patterns do not convert stops the pass at that op (a buffer
// allocated in device memory inside a kernel has no SPIR-V form).

module attributes {gpu.container_module} {
  gpu.module @alloc [#spirv.target_env<#spirv.vce<v1.0, [Shader], [SPV_KHR_storage_buffer_storage_class]>, #spirv.resource_limits<>>] {
    gpu.func @k(%out: memref<8xf32>) kernel attributes {known_block_size = array<i32: 8, 1, 1>} {
      // expected-error @below {{failed to legalize operation 'memref.alloc'}}
      %tmp = memref.alloc() : memref<8xf32>
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @dynamic_buffer [#spirv.target_env<#spirv.vce<v1.0, [Shader], [SPV_KHR_storage_buffer_storage_class]>, #spirv.resource_limits<>>] {
    // expected-error @below {{'gpu.func' op argument 0 is 'memref<?xf32>': the Vulkan calling convention passes static buffer sizes}}
    gpu.func @k(%out: memref<?xf32>) kernel attributes {known_block_size = array<i32: 8, 1, 1>} {
      gpu.return
    }
  }
}

// -----

// erf (GELU) has no GLSL instruction: a polynomial in SPIR-V arithmetic.

// CHECK-LABEL: gpu.module @gelu
// CHECK:         spirv.func @k
// CHECK-NOT:       math.erf
// CHECK:           spirv.GL.Fma
// CHECK:         gpu.func @k(
module attributes {gpu.container_module} {
  gpu.module @gelu [#spirv.target_env<#spirv.vce<v1.0, [Shader], [SPV_KHR_storage_buffer_storage_class]>, #spirv.resource_limits<>>] {
    gpu.func @k(%io: memref<8xf32>) kernel attributes {known_block_size = array<i32: 8, 1, 1>} {
      %i = gpu.thread_id x
      %x = memref.load %io[%i] : memref<8xf32>
      %y = math.erf %x : f32
      memref.store %y, %io[%i] : memref<8xf32>
      gpu.return
    }
  }
}

// -----

// Subgroup matrix ops on a target without cooperative matrices.
module attributes {gpu.container_module} {
  gpu.module @matrices [#spirv.target_env<#spirv.vce<v1.0, [Shader, Float16], [SPV_KHR_storage_buffer_storage_class]>, #spirv.resource_limits<>>] {
    gpu.func @k(%out: memref<16x16xf32>) kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
      %c0 = arith.constant 0 : index
      %zero = arith.constant 0.0 : f32
      // expected-error @below {{'gpu.subgroup_mma_constant_matrix' op needs a SPIR-V target with cooperative matrices (CooperativeMatrixKHR: the Vulkan pipelines' cooperative-matrix option), or its subgroup matrix ops emulated first (mha-emulate-tensor-cores)}}
      %m = gpu.subgroup_mma_constant_matrix %zero : !gpu.mma_matrix<16x16xf32, "COp">
      gpu.subgroup_mma_store_matrix %m, %out[%c0, %c0] {leadDimension = 16 : index} : !gpu.mma_matrix<16x16xf32, "COp">, memref<16x16xf32>
      gpu.return
    }
  }
}
