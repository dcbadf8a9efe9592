// RUN: mha-opt %s --mha-lower-to-cuda="chip=sm_90 format=isa" | FileCheck %s

// A device-resident decoding attention on CUDA with per-batch key lengths:
// the run-time check that the lengths lie in [0, Sk] runs in a kernel of
// one thread (__assertfail on the device), so the call copies nothing
// between host and device (no gpu.memcpy at all, not even the lengths:
// on Vulkan the host would check a copy of them). Its keys are split by
// the rule (B * H = 2: 16 chunks of 4 blocks of 64 keys), and a second
// kernel merges the chunks.

// CHECK-NOT: gpu.memcpy
// CHECK: llvm.func @main(
// CHECK-NOT: gpu.memcpy
// CHECK-NOT: llvm.call @mgpuMemcpy
// CHECK-COUNT-3: gpu.launch_func
// CHECK: gpu.binary
// CHECK-SAME: call.uni __assertfail
func.func @main(%q: tensor<1x2x1x64xf16>, %k: tensor<1x2x4096x64xf16>, %len: tensor<1xi32>) -> tensor<1x2x1x64xf16>
    attributes {mha.device_resident} {
  %o = mha.attention ins(%q, %k, %k : tensor<1x2x1x64xf16>, tensor<1x2x4096x64xf16>, tensor<1x2x4096x64xf16>)
         key_lengths(%len : tensor<1xi32>) outs(%q : tensor<1x2x1x64xf16>) -> tensor<1x2x1x64xf16>
  return %o : tensor<1x2x1x64xf16>
}
