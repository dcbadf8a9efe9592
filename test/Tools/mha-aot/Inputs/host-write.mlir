// Host code that writes an argument in place: element 0 of %a set to %x.
func.func @main(%a: tensor<4xf32>, %x: tensor<f32>) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %v = tensor.extract %x[] : tensor<f32>
  %r = tensor.insert %v into %a[%c0] : tensor<4xf32>
  return %r : tensor<4xf32>
}
