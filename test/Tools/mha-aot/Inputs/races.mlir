// Parallel loops for test/Tools/mha-aot/sanitize-thread.test, lowered with a
// static schedule: at 2 threads each thread runs half of the iterations.

// Every iteration stores a vector of 16 floats into the same buffer: the
// threads race on it. The store is 64 bytes wide, wider than any access
// ThreadSanitizer itself checks.
func.func @racy(%x: tensor<64xf32>) -> tensor<16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %in = bufferization.to_buffer %x : tensor<64xf32> to memref<64xf32>
  %buf = memref.alloc() : memref<16xf32>
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    %v = memref.load %in[%i] : memref<64xf32>
    %row = vector.broadcast %v : f32 to vector<16xf32>
    vector.store %row, %buf[%c0] : memref<16xf32>, vector<16xf32>
    scf.reduce
  }
  %y = bufferization.to_tensor %buf restrict : memref<16xf32> to tensor<16xf32>
  return %y : tensor<16xf32>
}

// Every iteration stores its own row; the main thread reads them all after
// the loop: no race, once TSan knows that the loop's end joins the threads.
func.func @private(%x: tensor<64xf32>) -> tensor<64x16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %in = bufferization.to_buffer %x : tensor<64xf32> to memref<64xf32>
  %buf = memref.alloc() : memref<64x16xf32>
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    %v = memref.load %in[%i] : memref<64xf32>
    %row = vector.broadcast %v : f32 to vector<16xf32>
    vector.store %row, %buf[%i, %c0] : memref<64x16xf32>, vector<16xf32>
    scf.reduce
  }
  %y = bufferization.to_tensor %buf restrict : memref<64x16xf32> to tensor<64x16xf32>
  return %y : tensor<64x16xf32>
}
