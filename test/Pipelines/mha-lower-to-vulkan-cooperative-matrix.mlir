// The Vulkan pipeline with cooperative-matrix: f16 attention as the
// cooperative-matrix kernel (mha-attention-to-cooperative-matrix), its
// subgroup matrix ops as SPIR-V's KHR cooperative matrices in a module of
// the Vulkan memory model (SPV_KHR_cooperative_matrix requires it with
// Shader), SPIR-V 1.6. The binary validates with spirv-val where a
// SPIRV-Tools that knows the extension is there (Debian 12's 2023.1 does
// not: $MHA_SPIRV_VAL names another); without cooperative-matrix the same
// attention is the register kernel, whose module validates with any.
// RUN: mha-opt %s --mha-lower-to-vulkan='cooperative-matrix' --mlir-print-ir-after=spirv-update-vce -o %t.coop.mlir 2>&1 | FileCheck %s
// RUN: %if spirv-val-cooperative-matrix %{ %python %{mha_src_root}/scripts/spirv_binaries.py %t.coop.mlir %t.coop && %spirv_val --target-env vulkan1.3 %t.coop/main_kernel.spv %}
// RUN: %if spirv-val %{ mha-opt %s --mha-lower-to-vulkan -o %t.plain.mlir && %python %{mha_src_root}/scripts/spirv_binaries.py %t.plain.mlir %t.plain && %spirv_val --target-env vulkan1.1 %t.plain/main_kernel.spv %}
// RUN: mha-opt %s --mha-lower-to-vulkan --mlir-print-ir-after=spirv-update-vce -o /dev/null 2>&1 | FileCheck %s --check-prefix=PLAIN

// CHECK: spirv.module @{{.*}} Logical Vulkan requires #spirv.vce<v1.6, [{{.*}}CooperativeMatrixKHR{{.*}}VulkanMemoryModel{{.*}}], [{{.*}}SPV_KHR_cooperative_matrix{{.*}}]>
// CHECK: spirv.KHR.CooperativeMatrixLoad {{.*}} -> !spirv.coopmatrix<16x16xf16, Subgroup, MatrixA>
// CHECK: spirv.KHR.CooperativeMatrixLoad {{.*}}, <ColumnMajor> {{.*}} -> !spirv.coopmatrix<16x16xf16, Subgroup, MatrixB>
// CHECK: spirv.KHR.CooperativeMatrixMulAdd {{.*}} -> !spirv.coopmatrix<16x16xf32, Subgroup, MatrixAcc>
// CHECK: spirv.KHR.CooperativeMatrixStore
// CHECK: spirv.FMul {{.*}} : !spirv.coopmatrix<16x16xf32, Subgroup, MatrixAcc>

// PLAIN: spirv.module @{{.*}} Logical GLSL450 requires #spirv.vce<v1.3,
// PLAIN-NOT: coopmatrix
func.func @main(%q: tensor<1x2x100x64xf16>, %k: tensor<1x2x120x64xf16>, %v: tensor<1x2x120x64xf16>) -> tensor<1x2x100x64xf16> {
  %init = tensor.empty() : tensor<1x2x100x64xf16>
  %o = mha.attention ins(%q, %k, %v : tensor<1x2x100x64xf16>, tensor<1x2x120x64xf16>, tensor<1x2x120x64xf16>)
         outs(%init : tensor<1x2x100x64xf16>) {causal} -> tensor<1x2x100x64xf16>
  return %o : tensor<1x2x100x64xf16>
}
