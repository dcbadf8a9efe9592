func.func private @printMemrefF32(memref<*xf32>)
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %m = bufferization.to_buffer %a : tensor<4xf32> to memref<4xf32>
  %u = memref.cast %m : memref<4xf32> to memref<*xf32>
  call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  return %a : tensor<4xf32>
}
