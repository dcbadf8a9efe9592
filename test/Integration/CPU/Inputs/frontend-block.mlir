// A transformer block's attention and GELU as a frontend hands them over
// (the ops torch-mlir's linalg-on-tensors backend emits, unraised): scores
// by batch_matmul against a linalg.transpose of the keys, a scale as
// arith.mulf on tensors, linalg.softmax, P·V, heads merged by
// collapse_shape, a linear layer as linalg.matmul with a transposed weight
// (indexing_maps), GELU through math.erf, and tensor.concat of the block's
// output with its input. Used by frontend-ops.test.
#lhs = affine_map<(m, n, k) -> (m, k)>
#rhsT = affine_map<(m, n, k) -> (n, k)>
#out = affine_map<(m, n, k) -> (m, n)>
func.func @main(%q: tensor<4x16x8xf32>, %k: tensor<4x24x8xf32>,
                %v: tensor<4x24x8xf32>, %w: tensor<32x32xf32>)
    -> tensor<16x64xf32> {
  %zero = arith.constant 0.0 : f32
  %kt0 = tensor.empty() : tensor<4x8x24xf32>
  %kt = linalg.transpose ins(%k : tensor<4x24x8xf32>)
          outs(%kt0 : tensor<4x8x24xf32>) permutation = [0, 2, 1]
  %s0 = tensor.empty() : tensor<4x16x24xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<4x16x24xf32>) -> tensor<4x16x24xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<4x16x8xf32>, tensor<4x8x24xf32>)
         outs(%sz : tensor<4x16x24xf32>) -> tensor<4x16x24xf32>
  %c = arith.constant dense<0.353553385> : tensor<4x16x24xf32>
  %scaled = arith.mulf %s, %c : tensor<4x16x24xf32>
  %p = linalg.softmax dimension(2) ins(%scaled : tensor<4x16x24xf32>)
         outs(%s0 : tensor<4x16x24xf32>) -> tensor<4x16x24xf32>
  %o0 = tensor.empty() : tensor<4x16x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<4x16x8xf32>) -> tensor<4x16x8xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<4x16x24xf32>, tensor<4x24x8xf32>)
         outs(%oz : tensor<4x16x8xf32>) -> tensor<4x16x8xf32>
  %ot0 = tensor.empty() : tensor<16x4x8xf32>
  %ot = linalg.transpose ins(%o : tensor<4x16x8xf32>)
          outs(%ot0 : tensor<16x4x8xf32>) permutation = [1, 0, 2]
  %merged = tensor.collapse_shape %ot [[0], [1, 2]] : tensor<16x4x8xf32> into tensor<16x32xf32>
  %y0 = tensor.empty() : tensor<16x32xf32>
  %yz = linalg.fill ins(%zero : f32) outs(%y0 : tensor<16x32xf32>) -> tensor<16x32xf32>
  %y = linalg.matmul indexing_maps = [#lhs, #rhsT, #out]
         ins(%merged, %w : tensor<16x32xf32>, tensor<32x32xf32>)
         outs(%yz : tensor<16x32xf32>) -> tensor<16x32xf32>
  // GELU(y) = y/2 · (1 + erf(y/√2))
  %half = arith.constant dense<0.5> : tensor<16x32xf32>
  %one = arith.constant dense<1.0> : tensor<16x32xf32>
  %rsqrt2 = arith.constant dense<0.707106769> : tensor<16x32xf32>
  %t = arith.mulf %y, %rsqrt2 : tensor<16x32xf32>
  %e = math.erf %t : tensor<16x32xf32>
  %e1 = arith.addf %e, %one : tensor<16x32xf32>
  %yh = arith.mulf %y, %half : tensor<16x32xf32>
  %g = arith.mulf %yh, %e1 : tensor<16x32xf32>
  %r = tensor.concat dim(1) %g, %merged : (tensor<16x32xf32>, tensor<16x32xf32>) -> tensor<16x64xf32>
  return %r : tensor<16x64xf32>
}
