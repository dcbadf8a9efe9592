// A function whose result differs from call to call: a counter that each
// call increments in a global buffer (what mha-run --repeat must report).
memref.global "private" @counter : memref<4xf32> = dense<0.0>
func.func @main() -> tensor<4xf32> {
  %m = memref.get_global @counter : memref<4xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1.0 : f32
  %v = memref.load %m[%c0] : memref<4xf32>
  %w = arith.addf %v, %c1 : f32
  memref.store %w, %m[%c0] : memref<4xf32>
  %t = bufferization.to_tensor %m restrict : memref<4xf32> to tensor<4xf32>
  %r = tensor.empty() : tensor<4xf32>
  %y = linalg.copy ins(%t : tensor<4xf32>) outs(%r : tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
