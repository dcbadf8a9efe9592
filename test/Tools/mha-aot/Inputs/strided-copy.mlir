// Every second row of a 4x6 array from column 2: returned through a copy
// between strided memrefs, which finalize-memref-to-llvm makes a call of
// `memrefCopy` (defined by mha-aot's wrapper on RunnerSupport).
func.func @main(%a: tensor<4x6xf32>) -> tensor<2x3xf32> {
  %s = tensor.extract_slice %a[1, 2] [2, 3] [2, 1] : tensor<4x6xf32> to tensor<2x3xf32>
  return %s : tensor<2x3xf32>
}
