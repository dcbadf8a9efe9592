func.func @main(%x: tensor<2x2x?x8xf32>, %cos: tensor<10x4xf32>, %sin: tensor<10x4xf32>, %pos: tensor<2x?xi64>) -> tensor<2x2x?x8xf32> {
  %c2 = arith.constant 2 : index
  %s = tensor.dim %x, %c2 : tensor<2x2x?x8xf32>
  %init = tensor.empty(%s) : tensor<2x2x?x8xf32>
  %r = mha.rotary ins(%x : tensor<2x2x?x8xf32>) cos_sin(%cos, %sin : tensor<10x4xf32>, tensor<10x4xf32>)
         positions(%pos : tensor<2x?xi64>) outs(%init : tensor<2x2x?x8xf32>) {interleaved} -> tensor<2x2x?x8xf32>
  return %r : tensor<2x2x?x8xf32>
}
