// Kernel binaries for two GPU runtimes in one module (hand-written objects:
// only their targets matter here).
module attributes {gpu.container_module} {
  gpu.binary @vk [#gpu.object<#spirv.target_env<#spirv.vce<v1.0, [Shader], []>, #spirv.resource_limits<>>, "">]
  gpu.binary @cu [#gpu.object<#nvvm.target, "">]
  func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
    return %a : tensor<4xf32>
  }
}
