// out[b, i] = exp(a[b, 7 - i] + c[b, i]): one workgroup per row, the row of
// `a` staged in workgroup memory, a barrier before it is read back reversed.
func.func @main(%a: tensor<4x8xf32>, %c: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c7 = arith.constant 7 : index
  %c8 = arith.constant 8 : index
  %ma = bufferization.to_buffer %a : tensor<4x8xf32> to memref<4x8xf32>
  %mc = bufferization.to_buffer %c : tensor<4x8xf32> to memref<4x8xf32>
  %out = memref.alloc() : memref<4x8xf32>
  gpu.launch blocks(%b, %by, %bz) in (%gx = %c4, %gy = %c1, %gz = %c1)
             threads(%i, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1)
             workgroup(%row : memref<8xf32, #gpu.address_space<workgroup>>) {
    %x = memref.load %ma[%b, %i] : memref<4x8xf32>
    memref.store %x, %row[%i] : memref<8xf32, #gpu.address_space<workgroup>>
    gpu.barrier
    %j = arith.subi %c7, %i : index
    %y = memref.load %row[%j] : memref<8xf32, #gpu.address_space<workgroup>>
    %z = memref.load %mc[%b, %i] : memref<4x8xf32>
    %s = arith.addf %y, %z : f32
    %e = math.exp %s : f32
    memref.store %e, %out[%b, %i] : memref<4x8xf32>
    gpu.terminator
  }
  %r = bufferization.to_tensor %out restrict : memref<4x8xf32> to tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}
