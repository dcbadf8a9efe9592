// Scaled dot-product attention in the linalg forms frontends emit, one
// function each; raise-attention.test raises them (mha-raise-attention) and
// runs raised and unraised IR against numpy (raise_attention.py).

#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#row4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row2 = affine_map<(d0, d1) -> (d0)>

// 4-d generic contractions, the key transposed by linalg.transpose, the
// scores divided by sqrt(dk), linalg.softmax; dk != dv, Sq != Sk.
func.func @generic4d(%q: tensor<2x4x16x8xf32>, %k: tensor<2x4x24x8xf32>, %v: tensor<2x4x24x12xf32>) -> tensor<2x4x16x12xf32> {
  %zero = arith.constant 0.0 : f32
  %sqrt = arith.constant 2.828427 : f32
  %te = tensor.empty() : tensor<2x4x8x24xf32>
  %kt = linalg.transpose ins(%k : tensor<2x4x24x8xf32>) outs(%te : tensor<2x4x8x24xf32>) permutation = [0, 1, 3, 2]
  %se = tensor.empty() : tensor<2x4x16x24xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%se : tensor<2x4x16x24xf32>) -> tensor<2x4x16x24xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(b, h, m, n, k) -> (b, h, m, k)>, affine_map<(b, h, m, n, k) -> (b, h, k, n)>, affine_map<(b, h, m, n, k) -> (b, h, m, n)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %kt : tensor<2x4x16x8xf32>, tensor<2x4x8x24xf32>) outs(%sz : tensor<2x4x16x24xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x24xf32>
  %ss = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s : tensor<2x4x16x24xf32>) outs(%se : tensor<2x4x16x24xf32>) {
  ^bb0(%a: f32, %o: f32):
    %d = arith.divf %a, %sqrt : f32
    linalg.yield %d : f32
  } -> tensor<2x4x16x24xf32>
  %p = linalg.softmax dimension(3) ins(%ss : tensor<2x4x16x24xf32>) outs(%se : tensor<2x4x16x24xf32>) -> tensor<2x4x16x24xf32>
  %oe = tensor.empty() : tensor<2x4x16x12xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%oe : tensor<2x4x16x12xf32>) -> tensor<2x4x16x12xf32>
  %out = linalg.generic {indexing_maps = [affine_map<(b, h, m, n, k) -> (b, h, m, k)>, affine_map<(b, h, m, n, k) -> (b, h, k, n)>, affine_map<(b, h, m, n, k) -> (b, h, m, n)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<2x4x16x24xf32>, tensor<2x4x24x12xf32>) outs(%oz : tensor<2x4x16x12xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x12xf32>
  return %out : tensor<2x4x16x12xf32>
}

// torch-mlir's shape: a transposing generic, [B, H] collapsed around
// linalg.batch_matmul, a multiply by the scale, an additive padding mask
// [B, 1, 1, Sk] read with size-1 dims at 0, softmax as keepdim reductions
// (maximumf) and separate sub, exp and div generics.
func.func @torch_style(%q: tensor<2x4x16x8xf32>, %k: tensor<2x4x24x8xf32>, %v: tensor<2x4x24x8xf32>, %mask: tensor<2x1x1x24xf32>) -> tensor<2x4x16x8xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %scale = arith.constant 0.353553385 : f32
  %e0 = tensor.empty() : tensor<2x4x8x24xf32>
  %kt = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3, d2)>, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%k : tensor<2x4x24x8xf32>) outs(%e0 : tensor<2x4x8x24xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<2x4x8x24xf32>
  %q3 = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<2x4x16x8xf32> into tensor<8x16x8xf32>
  %k3 = tensor.collapse_shape %kt [[0, 1], [2], [3]] : tensor<2x4x8x24xf32> into tensor<8x8x24xf32>
  %e1 = tensor.empty() : tensor<8x16x24xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x16x24xf32>) -> tensor<8x16x24xf32>
  %s3 = linalg.batch_matmul ins(%q3, %k3 : tensor<8x16x8xf32>, tensor<8x8x24xf32>) outs(%f1 : tensor<8x16x24xf32>) -> tensor<8x16x24xf32>
  %s = tensor.expand_shape %s3 [[0, 1], [2], [3]] output_shape [2, 4, 16, 24] : tensor<8x16x24xf32> into tensor<2x4x16x24xf32>
  %e2 = tensor.empty() : tensor<2x4x16x24xf32>
  %sc = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s : tensor<2x4x16x24xf32>) outs(%e2 : tensor<2x4x16x24xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.mulf %in, %scale : f32
    linalg.yield %0 : f32
  } -> tensor<2x4x16x24xf32>
  %msk = linalg.generic {indexing_maps = [#id4, affine_map<(d0, d1, d2, d3) -> (d0, 0, 0, d3)>, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sc, %mask : tensor<2x4x16x24xf32>, tensor<2x1x1x24xf32>) outs(%e2 : tensor<2x4x16x24xf32>) {
  ^bb0(%in: f32, %in2: f32, %out: f32):
    %0 = arith.addf %in, %in2 : f32
    linalg.yield %0 : f32
  } -> tensor<2x4x16x24xf32>
  %e3 = tensor.empty() : tensor<2x4x16x1xf32>
  %f3 = linalg.fill ins(%ninf : f32) outs(%e3 : tensor<2x4x16x1xf32>) -> tensor<2x4x16x1xf32>
  %max = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%msk : tensor<2x4x16x24xf32>) outs(%f3 : tensor<2x4x16x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.maximumf %in, %out : f32
    linalg.yield %0 : f32
  } -> tensor<2x4x16x1xf32>
  %sub = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%msk, %max : tensor<2x4x16x24xf32>, tensor<2x4x16x1xf32>) outs(%e2 : tensor<2x4x16x24xf32>) {
  ^bb0(%in: f32, %in2: f32, %out: f32):
    %0 = arith.subf %in, %in2 : f32
    linalg.yield %0 : f32
  } -> tensor<2x4x16x24xf32>
  %exp = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sub : tensor<2x4x16x24xf32>) outs(%e2 : tensor<2x4x16x24xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = math.exp %in : f32
    linalg.yield %0 : f32
  } -> tensor<2x4x16x24xf32>
  %f4 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<2x4x16x1xf32>) -> tensor<2x4x16x1xf32>
  %sum = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%exp : tensor<2x4x16x24xf32>) outs(%f4 : tensor<2x4x16x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %in, %out : f32
    linalg.yield %0 : f32
  } -> tensor<2x4x16x1xf32>
  %p = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%exp, %sum : tensor<2x4x16x24xf32>, tensor<2x4x16x1xf32>) outs(%e2 : tensor<2x4x16x24xf32>) {
  ^bb0(%in: f32, %in2: f32, %out: f32):
    %0 = arith.divf %in, %in2 : f32
    linalg.yield %0 : f32
  } -> tensor<2x4x16x24xf32>
  %p3 = tensor.collapse_shape %p [[0, 1], [2], [3]] : tensor<2x4x16x24xf32> into tensor<8x16x24xf32>
  %v3 = tensor.collapse_shape %v [[0, 1], [2], [3]] : tensor<2x4x24x8xf32> into tensor<8x24x8xf32>
  %e5 = tensor.empty() : tensor<8x16x8xf32>
  %f5 = linalg.fill ins(%zero : f32) outs(%e5 : tensor<8x16x8xf32>) -> tensor<8x16x8xf32>
  %o3 = linalg.batch_matmul ins(%p3, %v3 : tensor<8x16x24xf32>, tensor<8x24x8xf32>) outs(%f5 : tensor<8x16x8xf32>) -> tensor<8x16x8xf32>
  %o = tensor.expand_shape %o3 [[0, 1], [2], [3]] output_shape [2, 4, 16, 8] : tensor<8x16x8xf32> into tensor<2x4x16x8xf32>
  return %o : tensor<2x4x16x8xf32>
}

// One head, 2-d: linalg.matmul reading the key [Sk, dk] through its
// indexing maps, a boolean mask by select with -1e9, softmax as upstream
// decomposes linalg.softmax (maxnumf from NaN, exp(x - max) fused).
func.func @matmul2d_bool(%q: tensor<12x16xf32>, %k: tensor<20x16xf32>, %v: tensor<20x16xf32>, %m: tensor<12x20xi1>) -> tensor<12x16xf32> {
  %zero = arith.constant 0.0 : f32
  %fill = arith.constant -1.0e9 : f32
  %nan = arith.constant 0xFFC00000 : f32
  %scale = arith.constant 0.25 : f32
  %se = tensor.empty() : tensor<12x20xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%se : tensor<12x20xf32>) -> tensor<12x20xf32>
  %s = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%q, %k : tensor<12x16xf32>, tensor<20x16xf32>) outs(%sz : tensor<12x20xf32>) -> tensor<12x20xf32>
  %x = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%s, %m : tensor<12x20xf32>, tensor<12x20xi1>) outs(%se : tensor<12x20xf32>) {
  ^bb0(%a: f32, %b: i1, %o: f32):
    %0 = arith.mulf %a, %scale : f32
    %1 = arith.select %b, %0, %fill : f32
    linalg.yield %1 : f32
  } -> tensor<12x20xf32>
  %re = tensor.empty() : tensor<12xf32>
  %rf = linalg.fill ins(%nan : f32) outs(%re : tensor<12xf32>) -> tensor<12xf32>
  %max = linalg.generic {indexing_maps = [#id2, #row2], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<12x20xf32>) outs(%rf : tensor<12xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.maxnumf %in, %out : f32
    linalg.yield %0 : f32
  } -> tensor<12xf32>
  %e = linalg.generic {indexing_maps = [#id2, #row2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x, %max : tensor<12x20xf32>, tensor<12xf32>) outs(%se : tensor<12x20xf32>) {
  ^bb0(%in: f32, %in1: f32, %out: f32):
    %0 = arith.subf %in, %in1 : f32
    %1 = math.exp %0 : f32
    linalg.yield %1 : f32
  } -> tensor<12x20xf32>
  %zf = linalg.fill ins(%zero : f32) outs(%re : tensor<12xf32>) -> tensor<12xf32>
  %sum = linalg.generic {indexing_maps = [#id2, #row2], iterator_types = ["parallel", "reduction"]} ins(%e : tensor<12x20xf32>) outs(%zf : tensor<12xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %in, %out : f32
    linalg.yield %0 : f32
  } -> tensor<12xf32>
  %p = linalg.generic {indexing_maps = [#id2, #row2, #id2], iterator_types = ["parallel", "parallel"]} ins(%e, %sum : tensor<12x20xf32>, tensor<12xf32>) outs(%se : tensor<12x20xf32>) {
  ^bb0(%in: f32, %in1: f32, %out: f32):
    %0 = arith.divf %in, %in1 : f32
    linalg.yield %0 : f32
  } -> tensor<12x20xf32>
  %oe = tensor.empty() : tensor<12x16xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%oe : tensor<12x16xf32>) -> tensor<12x16xf32>
  %o = linalg.matmul ins(%p, %v : tensor<12x20xf32>, tensor<20x16xf32>) outs(%oz : tensor<12x16xf32>) -> tensor<12x16xf32>
  return %o : tensor<12x16xf32>
}

// Causal as frontends materialize it in the body: select(key <= query,
// scores * scale, -inf) on linalg.index, [B*H, S, d] batch_matmuls with
// the key transposed through the maps of a generic.
func.func @causal_index(%q: tensor<6x20x8xf32>, %k: tensor<6x20x8xf32>, %v: tensor<6x20x8xf32>) -> tensor<6x20x8xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %scale = arith.constant 0.353553385 : f32
  %se = tensor.empty() : tensor<6x20x20xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%se : tensor<6x20x20xf32>) -> tensor<6x20x20xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (b, n, k)>, affine_map<(b, m, n, k) -> (b, m, n)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<6x20x8xf32>, tensor<6x20x8xf32>) outs(%sz : tensor<6x20x20xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<6x20x20xf32>
  %x = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<6x20x20xf32>) outs(%se : tensor<6x20x20xf32>) {
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %vis = arith.cmpi ule, %j, %i : index
    %0 = arith.mulf %a, %scale : f32
    %1 = arith.select %vis, %0, %ninf : f32
    linalg.yield %1 : f32
  } -> tensor<6x20x20xf32>
  %p = linalg.softmax dimension(2) ins(%x : tensor<6x20x20xf32>) outs(%se : tensor<6x20x20xf32>) -> tensor<6x20x20xf32>
  %oe = tensor.empty() : tensor<6x20x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%oe : tensor<6x20x8xf32>) -> tensor<6x20x8xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<6x20x20xf32>, tensor<6x20x8xf32>) outs(%oz : tensor<6x20x8xf32>) -> tensor<6x20x8xf32>
  return %o : tensor<6x20x8xf32>
}

// Causal aligned top-left with fewer queries than keys (key <= query, not
// key <= query + Sk - Sq), written as masked_fill(key > query, -inf): the
// raised op gets causal_offset 0.
func.func @causal_top_left(%q: tensor<6x8x8xf32>, %k: tensor<6x20x8xf32>, %v: tensor<6x20x8xf32>) -> tensor<6x8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %scale = arith.constant 0.353553385 : f32
  %te = tensor.empty() : tensor<6x8x20xf32>
  %kt = linalg.transpose ins(%k : tensor<6x20x8xf32>) outs(%te : tensor<6x8x20xf32>) permutation = [0, 2, 1]
  %se = tensor.empty() : tensor<6x8x20xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%se : tensor<6x8x20xf32>) -> tensor<6x8x20xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<6x8x8xf32>, tensor<6x8x20xf32>) outs(%sz : tensor<6x8x20xf32>) -> tensor<6x8x20xf32>
  %x = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<6x8x20xf32>) outs(%se : tensor<6x8x20xf32>) {
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %hidden = arith.cmpi sgt, %j, %i : index
    %0 = arith.mulf %a, %scale : f32
    %1 = arith.select %hidden, %ninf, %0 : f32
    linalg.yield %1 : f32
  } -> tensor<6x8x20xf32>
  %p = linalg.softmax dimension(2) ins(%x : tensor<6x8x20xf32>) outs(%se : tensor<6x8x20xf32>) -> tensor<6x8x20xf32>
  %oe = tensor.empty() : tensor<6x8x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%oe : tensor<6x8x8xf32>) -> tensor<6x8x8xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<6x8x20xf32>, tensor<6x20x8xf32>) outs(%oz : tensor<6x8x8xf32>) -> tensor<6x8x8xf32>
  return %o : tensor<6x8x8xf32>
}

// Dynamic batch and lengths, masked_fill(mask, -inf) with a boolean that
// is true where the key is hidden (the raised op reads its negation), the
// scale on the queries.
func.func @masked_fill_dynamic(%q: tensor<?x?x8xf32>, %k: tensor<?x?x8xf32>, %v: tensor<?x?x8xf32>, %m: tensor<?x?x?xi1>) -> tensor<?x?x8xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %scale = arith.constant 0.353553385 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = tensor.dim %q, %c0 : tensor<?x?x8xf32>
  %sq = tensor.dim %q, %c1 : tensor<?x?x8xf32>
  %sk = tensor.dim %k, %c1 : tensor<?x?x8xf32>
  %qe = tensor.empty(%n, %sq) : tensor<?x?x8xf32>
  %qs = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%q : tensor<?x?x8xf32>) outs(%qe : tensor<?x?x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %0 = arith.mulf %a, %scale : f32
    linalg.yield %0 : f32
  } -> tensor<?x?x8xf32>
  %se = tensor.empty(%n, %sq, %sk) : tensor<?x?x?xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%se : tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (b, n, k)>, affine_map<(b, m, n, k) -> (b, m, n)>]
      ins(%qs, %k : tensor<?x?x8xf32>, tensor<?x?x8xf32>) outs(%sz : tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  %x = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s, %m : tensor<?x?x?xf32>, tensor<?x?x?xi1>) outs(%se : tensor<?x?x?xf32>) {
  ^bb0(%a: f32, %b: i1, %o: f32):
    %0 = arith.select %b, %ninf, %a : f32
    linalg.yield %0 : f32
  } -> tensor<?x?x?xf32>
  %p = linalg.softmax dimension(2) ins(%x : tensor<?x?x?xf32>) outs(%se : tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  %oe = tensor.empty(%n, %sq) : tensor<?x?x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%oe : tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<?x?x?xf32>, tensor<?x?x8xf32>) outs(%oz : tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  return %o : tensor<?x?x8xf32>
}

// A constant causal mask (the lower triangle, as frontends fold
// triu(ones)) added as 0 / -inf: the raised op is causal with no mask.
func.func @constant_triangle(%q: tensor<1x2x6x8xf32>, %k: tensor<1x2x6x8xf32>, %v: tensor<1x2x6x8xf32>) -> tensor<1x2x6x8xf32> {
  %zero = arith.constant 0.0 : f32
  %tri = arith.constant dense<[[0.0, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000],
                               [0.0, 0.0, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000],
                               [0.0, 0.0, 0.0, 0xFF800000, 0xFF800000, 0xFF800000],
                               [0.0, 0.0, 0.0, 0.0, 0xFF800000, 0xFF800000],
                               [0.0, 0.0, 0.0, 0.0, 0.0, 0xFF800000],
                               [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]]> : tensor<6x6xf32>
  %se = tensor.empty() : tensor<1x2x6x6xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%se : tensor<1x2x6x6xf32>) -> tensor<1x2x6x6xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(b, h, m, n, k) -> (b, h, m, k)>, affine_map<(b, h, m, n, k) -> (b, h, n, k)>, affine_map<(b, h, m, n, k) -> (b, h, m, n)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<1x2x6x8xf32>, tensor<1x2x6x8xf32>) outs(%sz : tensor<1x2x6x6xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x6x6xf32>
  %x = linalg.generic {indexing_maps = [#id4, affine_map<(d0, d1, d2, d3) -> (d2, d3)>, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s, %tri : tensor<1x2x6x6xf32>, tensor<6x6xf32>) outs(%se : tensor<1x2x6x6xf32>) {
  ^bb0(%a: f32, %t: f32, %o: f32):
    %0 = arith.addf %a, %t : f32
    linalg.yield %0 : f32
  } -> tensor<1x2x6x6xf32>
  %p = linalg.softmax dimension(3) ins(%x : tensor<1x2x6x6xf32>) outs(%se : tensor<1x2x6x6xf32>) -> tensor<1x2x6x6xf32>
  %oe = tensor.empty() : tensor<1x2x6x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%oe : tensor<1x2x6x8xf32>) -> tensor<1x2x6x8xf32>
  %o = linalg.generic {indexing_maps = [affine_map<(b, h, m, n, k) -> (b, h, m, k)>, affine_map<(b, h, m, n, k) -> (b, h, k, n)>, affine_map<(b, h, m, n, k) -> (b, h, m, n)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<1x2x6x6xf32>, tensor<1x2x6x8xf32>) outs(%oz : tensor<1x2x6x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x6x8xf32>
  return %o : tensor<1x2x6x8xf32>
}

// A whole layer as frontends emit nn.MultiheadAttention-like modules:
// weights [out, in], biases added after the product or as its initial
// value, 2-d and 3-d projections, heads split by expand_shape + transpose,
// key/value heads repeated for grouped-query attention (broadcast +
// collapse), causal by linalg.index, heads merged back and projected:
// raised to one mha.multi_head_attention.
#bias3 = affine_map<(d0, d1, d2) -> (d2)>
func.func @layer(%x: tensor<2x16x32xf32>, %wq: tensor<32x32xf32>, %bq: tensor<32xf32>,
                 %wk: tensor<16x32xf32>, %bk: tensor<16xf32>,
                 %wv: tensor<16x32xf32>, %bv: tensor<16xf32>,
                 %wo: tensor<24x32xf32>, %bo: tensor<24xf32>) -> tensor<2x16x24xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %scale = arith.constant 0.353553385 : f32
  %x2 = tensor.collapse_shape %x [[0, 1], [2]] : tensor<2x16x32xf32> into tensor<32x32xf32>

  // Q: 4 heads of 8.
  %wqe = tensor.empty() : tensor<32x32xf32>
  %wqt = linalg.transpose ins(%wq : tensor<32x32xf32>) outs(%wqe : tensor<32x32xf32>) permutation = [1, 0]
  %pqz = linalg.fill ins(%zero : f32) outs(%wqe : tensor<32x32xf32>) -> tensor<32x32xf32>
  %pq2 = linalg.matmul ins(%x2, %wqt : tensor<32x32xf32>, tensor<32x32xf32>) outs(%pqz : tensor<32x32xf32>) -> tensor<32x32xf32>
  %pq3 = tensor.expand_shape %pq2 [[0, 1], [2]] output_shape [2, 16, 32] : tensor<32x32xf32> into tensor<2x16x32xf32>
  %qe = tensor.empty() : tensor<2x16x32xf32>
  %pq = linalg.generic {indexing_maps = [#id3, #bias3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%pq3, %bq : tensor<2x16x32xf32>, tensor<32xf32>) outs(%qe : tensor<2x16x32xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %0 = arith.addf %a, %b : f32
    linalg.yield %0 : f32
  } -> tensor<2x16x32xf32>
  %q4s = tensor.expand_shape %pq [[0], [1], [2, 3]] output_shape [2, 16, 4, 8] : tensor<2x16x32xf32> into tensor<2x16x4x8xf32>
  %q4e = tensor.empty() : tensor<2x4x16x8xf32>
  %q4 = linalg.transpose ins(%q4s : tensor<2x16x4x8xf32>) outs(%q4e : tensor<2x4x16x8xf32>) permutation = [0, 2, 1, 3]

  // K and V: 2 key/value heads of 8 (grouped-query), the projection as a
  // 3-d generic reading the weight [out, in] through its map, the bias as
  // the accumulator's initial value.
  %kve = tensor.empty() : tensor<2x16x16xf32>
  %bkb = linalg.broadcast ins(%bk : tensor<16xf32>) outs(%kve : tensor<2x16x16xf32>) dimensions = [0, 1]
  %pk = linalg.generic {indexing_maps = [affine_map<(b, s, o, i) -> (b, s, i)>, affine_map<(b, s, o, i) -> (o, i)>, affine_map<(b, s, o, i) -> (b, s, o)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %wk : tensor<2x16x32xf32>, tensor<16x32xf32>) outs(%bkb : tensor<2x16x16xf32>) {
  ^bb0(%a: f32, %w: f32, %acc: f32):
    %0 = arith.mulf %a, %w : f32
    %1 = arith.addf %acc, %0 : f32
    linalg.yield %1 : f32
  } -> tensor<2x16x16xf32>
  %bvb = linalg.broadcast ins(%bv : tensor<16xf32>) outs(%kve : tensor<2x16x16xf32>) dimensions = [0, 1]
  %pv = linalg.generic {indexing_maps = [affine_map<(b, s, o, i) -> (b, s, i)>, affine_map<(b, s, o, i) -> (o, i)>, affine_map<(b, s, o, i) -> (b, s, o)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %wv : tensor<2x16x32xf32>, tensor<16x32xf32>) outs(%bvb : tensor<2x16x16xf32>) {
  ^bb0(%a: f32, %w: f32, %acc: f32):
    %0 = arith.mulf %a, %w : f32
    %1 = arith.addf %acc, %0 : f32
    linalg.yield %1 : f32
  } -> tensor<2x16x16xf32>
  %k4s = tensor.expand_shape %pk [[0], [1], [2, 3]] output_shape [2, 16, 2, 8] : tensor<2x16x16xf32> into tensor<2x16x2x8xf32>
  %v4s = tensor.expand_shape %pv [[0], [1], [2, 3]] output_shape [2, 16, 2, 8] : tensor<2x16x16xf32> into tensor<2x16x2x8xf32>
  %kv4e = tensor.empty() : tensor<2x2x16x8xf32>
  %k4 = linalg.transpose ins(%k4s : tensor<2x16x2x8xf32>) outs(%kv4e : tensor<2x2x16x8xf32>) permutation = [0, 2, 1, 3]
  %v4 = linalg.transpose ins(%v4s : tensor<2x16x2x8xf32>) outs(%kv4e : tensor<2x2x16x8xf32>) permutation = [0, 2, 1, 3]
  // Each key/value head serves 2 query heads: repeated as frontends do
  // (broadcast over a new group dim, collapsed into the heads).
  %rep = tensor.empty() : tensor<2x2x2x16x8xf32>
  %k5 = linalg.broadcast ins(%k4 : tensor<2x2x16x8xf32>) outs(%rep : tensor<2x2x2x16x8xf32>) dimensions = [2]
  %v5 = linalg.broadcast ins(%v4 : tensor<2x2x16x8xf32>) outs(%rep : tensor<2x2x2x16x8xf32>) dimensions = [2]
  %kr = tensor.collapse_shape %k5 [[0], [1, 2], [3], [4]] : tensor<2x2x2x16x8xf32> into tensor<2x4x16x8xf32>
  %vr = tensor.collapse_shape %v5 [[0], [1, 2], [3], [4]] : tensor<2x2x2x16x8xf32> into tensor<2x4x16x8xf32>

  // Causal attention: scores, select on linalg.index, softmax as generics.
  %se = tensor.empty() : tensor<2x4x16x16xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%se : tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(b, h, m, n, k) -> (b, h, m, k)>, affine_map<(b, h, m, n, k) -> (b, h, n, k)>, affine_map<(b, h, m, n, k) -> (b, h, m, n)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q4, %kr : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) outs(%sz : tensor<2x4x16x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x16xf32>
  %xs = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s : tensor<2x4x16x16xf32>) outs(%se : tensor<2x4x16x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %vis = arith.cmpi sle, %j, %i : index
    %0 = arith.mulf %a, %scale : f32
    %1 = arith.select %vis, %0, %ninf : f32
    linalg.yield %1 : f32
  } -> tensor<2x4x16x16xf32>
  %p = linalg.softmax dimension(3) ins(%xs : tensor<2x4x16x16xf32>) outs(%se : tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
  %oe = tensor.empty() : tensor<2x4x16x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%oe : tensor<2x4x16x8xf32>) -> tensor<2x4x16x8xf32>
  %att = linalg.generic {indexing_maps = [affine_map<(b, h, m, n, k) -> (b, h, m, k)>, affine_map<(b, h, m, n, k) -> (b, h, k, n)>, affine_map<(b, h, m, n, k) -> (b, h, m, n)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %vr : tensor<2x4x16x16xf32>, tensor<2x4x16x8xf32>) outs(%oz : tensor<2x4x16x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x8xf32>

  // Heads merged back, output projection to 24 features.
  %me = tensor.empty() : tensor<2x16x4x8xf32>
  %m4 = linalg.transpose ins(%att : tensor<2x4x16x8xf32>) outs(%me : tensor<2x16x4x8xf32>) permutation = [0, 2, 1, 3]
  %m3 = tensor.collapse_shape %m4 [[0], [1], [2, 3]] : tensor<2x16x4x8xf32> into tensor<2x16x32xf32>
  %ye = tensor.empty() : tensor<2x16x24xf32>
  %yz = linalg.fill ins(%zero : f32) outs(%ye : tensor<2x16x24xf32>) -> tensor<2x16x24xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(b, s, o, i) -> (b, s, i)>, affine_map<(b, s, o, i) -> (o, i)>, affine_map<(b, s, o, i) -> (b, s, o)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%m3, %wo : tensor<2x16x32xf32>, tensor<24x32xf32>) outs(%yz : tensor<2x16x24xf32>) {
  ^bb0(%a: f32, %w: f32, %acc: f32):
    %0 = arith.mulf %a, %w : f32
    %1 = arith.addf %acc, %0 : f32
    linalg.yield %1 : f32
  } -> tensor<2x16x24xf32>
  %yb = linalg.generic {indexing_maps = [#id3, #bias3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%y, %bo : tensor<2x16x24xf32>, tensor<24xf32>) outs(%ye : tensor<2x16x24xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %0 = arith.addf %a, %b : f32
    linalg.yield %0 : f32
  } -> tensor<2x16x24xf32>
  return %yb : tensor<2x16x24xf32>
}

// TOSA as TorchToTosa emits it: [B, H] reshaped into the batch of
// tosa.matmul, the key transposed by tosa.transpose, the scale and the
// softmax's reciprocal by tosa.mul (shift 0), keepdim reductions, an
// additive mask broadcast over the batch.
func.func @tosa_sdpa(%q4: tensor<2x4x16x8xf32>, %k4: tensor<2x4x24x8xf32>, %v4: tensor<2x4x24x8xf32>, %mask: tensor<1x16x24xf32>) -> tensor<2x4x16x8xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %c = "tosa.const"() <{values = dense<0.353553385> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %s3 = tosa.const_shape {values = dense<[8, 16, 8]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %k3s = tosa.const_shape {values = dense<[8, 8, 24]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %v3s = tosa.const_shape {values = dense<[8, 24, 8]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %o4s = tosa.const_shape {values = dense<[2, 4, 16, 8]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %q = tosa.reshape %q4, %s3 : (tensor<2x4x16x8xf32>, !tosa.shape<3>) -> tensor<8x16x8xf32>
  %kt4 = tosa.transpose %k4 {perms = array<i32: 0, 1, 3, 2>} : (tensor<2x4x24x8xf32>) -> tensor<2x4x8x24xf32>
  %kt = tosa.reshape %kt4, %k3s : (tensor<2x4x8x24xf32>, !tosa.shape<3>) -> tensor<8x8x24xf32>
  %v = tosa.reshape %v4, %v3s : (tensor<2x4x24x8xf32>, !tosa.shape<3>) -> tensor<8x24x8xf32>
  %s = tosa.matmul %q, %kt, %zp, %zp : (tensor<8x16x8xf32>, tensor<8x8x24xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<8x16x24xf32>
  %sc = tosa.mul %s, %c, %shift : (tensor<8x16x24xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<8x16x24xf32>
  %x = tosa.add %sc, %mask : (tensor<8x16x24xf32>, tensor<1x16x24xf32>) -> tensor<8x16x24xf32>
  %m = tosa.reduce_max %x {axis = 2 : i32} : (tensor<8x16x24xf32>) -> tensor<8x16x1xf32>
  %d = tosa.sub %x, %m : (tensor<8x16x24xf32>, tensor<8x16x1xf32>) -> tensor<8x16x24xf32>
  %e = tosa.exp %d : (tensor<8x16x24xf32>) -> tensor<8x16x24xf32>
  %sum = tosa.reduce_sum %e {axis = 2 : i32} : (tensor<8x16x24xf32>) -> tensor<8x16x1xf32>
  %r = tosa.reciprocal %sum : (tensor<8x16x1xf32>) -> tensor<8x16x1xf32>
  %p = tosa.mul %e, %r, %shift : (tensor<8x16x24xf32>, tensor<8x16x1xf32>, tensor<1xi8>) -> tensor<8x16x24xf32>
  %o = tosa.matmul %p, %v, %zp, %zp : (tensor<8x16x24xf32>, tensor<8x24x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<8x16x8xf32>
  %o4 = tosa.reshape %o, %o4s : (tensor<8x16x8xf32>, !tosa.shape<4>) -> tensor<2x4x16x8xf32>
  return %o4 : tensor<2x4x16x8xf32>
}

// torch-mlir on PyTorch's math SDPA path (FX-decomposed): q and kᵀ each
// multiplied by sqrt(scale) (the key after its transpose), [B, H] collapsed
// around linalg.batch_matmul, softmax's max from aten.max.dim (a generic
// with two results, the max and its argmax, only the max used), keepdim
// sum and div.
func.func @torch_fx_split_scale(%q: tensor<2x2x10x8xf32>, %k: tensor<2x2x14x8xf32>, %v: tensor<2x2x14x8xf32>) -> tensor<2x2x10x8xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %root = arith.constant 0.594603558 : f32
  %i0 = arith.constant 0 : i64
  %eq = tensor.empty() : tensor<2x2x10x8xf32>
  %qs = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%q : tensor<2x2x10x8xf32>) outs(%eq : tensor<2x2x10x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.mulf %in, %root : f32
    linalg.yield %0 : f32
  } -> tensor<2x2x10x8xf32>
  %ek = tensor.empty() : tensor<2x2x8x14xf32>
  %kt = linalg.transpose ins(%k : tensor<2x2x14x8xf32>) outs(%ek : tensor<2x2x8x14xf32>) permutation = [0, 1, 3, 2]
  %ks = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%kt : tensor<2x2x8x14xf32>) outs(%ek : tensor<2x2x8x14xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.mulf %in, %root : f32
    linalg.yield %0 : f32
  } -> tensor<2x2x8x14xf32>
  %q3 = tensor.collapse_shape %qs [[0, 1], [2], [3]] : tensor<2x2x10x8xf32> into tensor<4x10x8xf32>
  %k3 = tensor.collapse_shape %ks [[0, 1], [2], [3]] : tensor<2x2x8x14xf32> into tensor<4x8x14xf32>
  %e1 = tensor.empty() : tensor<4x10x14xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x10x14xf32>) -> tensor<4x10x14xf32>
  %s3 = linalg.batch_matmul ins(%q3, %k3 : tensor<4x10x8xf32>, tensor<4x8x14xf32>) outs(%f1 : tensor<4x10x14xf32>) -> tensor<4x10x14xf32>
  %s = tensor.expand_shape %s3 [[0, 1], [2], [3]] output_shape [2, 2, 10, 14] : tensor<4x10x14xf32> into tensor<2x2x10x14xf32>
  %e3 = tensor.empty() : tensor<2x2x10x1xf32>
  %f3 = linalg.fill ins(%ninf : f32) outs(%e3 : tensor<2x2x10x1xf32>) -> tensor<2x2x10x1xf32>
  %ei = tensor.empty() : tensor<2x2x10x1xi64>
  %fi = linalg.fill ins(%i0 : i64) outs(%ei : tensor<2x2x10x1xi64>) -> tensor<2x2x10x1xi64>
  %max:2 = linalg.generic {indexing_maps = [#id4, #row4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%s : tensor<2x2x10x14xf32>) outs(%f3, %fi : tensor<2x2x10x1xf32>, tensor<2x2x10x1xi64>) {
  ^bb0(%in: f32, %m: f32, %i: i64):
    %j = linalg.index 3 : index
    %ji = arith.index_cast %j : index to i64
    %r = arith.maximumf %in, %m : f32
    %gt = arith.cmpf ogt, %in, %m : f32
    %ni = arith.select %gt, %ji, %i : i64
    linalg.yield %r, %ni : f32, i64
  } -> (tensor<2x2x10x1xf32>, tensor<2x2x10x1xi64>)
  %e2 = tensor.empty() : tensor<2x2x10x14xf32>
  %sub = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s, %max#0 : tensor<2x2x10x14xf32>, tensor<2x2x10x1xf32>) outs(%e2 : tensor<2x2x10x14xf32>) {
  ^bb0(%in: f32, %in2: f32, %out: f32):
    %0 = arith.subf %in, %in2 : f32
    linalg.yield %0 : f32
  } -> tensor<2x2x10x14xf32>
  %exp = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%sub : tensor<2x2x10x14xf32>) outs(%e2 : tensor<2x2x10x14xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = math.exp %in : f32
    linalg.yield %0 : f32
  } -> tensor<2x2x10x14xf32>
  %f4 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<2x2x10x1xf32>) -> tensor<2x2x10x1xf32>
  %sum = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%exp : tensor<2x2x10x14xf32>) outs(%f4 : tensor<2x2x10x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %in, %out : f32
    linalg.yield %0 : f32
  } -> tensor<2x2x10x1xf32>
  %p = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%exp, %sum : tensor<2x2x10x14xf32>, tensor<2x2x10x1xf32>) outs(%e2 : tensor<2x2x10x14xf32>) {
  ^bb0(%in: f32, %in2: f32, %out: f32):
    %0 = arith.divf %in, %in2 : f32
    linalg.yield %0 : f32
  } -> tensor<2x2x10x14xf32>
  %p3 = tensor.collapse_shape %p [[0, 1], [2], [3]] : tensor<2x2x10x14xf32> into tensor<4x10x14xf32>
  %v3 = tensor.collapse_shape %v [[0, 1], [2], [3]] : tensor<2x2x14x8xf32> into tensor<4x14x8xf32>
  %e5 = tensor.empty() : tensor<4x10x8xf32>
  %f5 = linalg.fill ins(%zero : f32) outs(%e5 : tensor<4x10x8xf32>) -> tensor<4x10x8xf32>
  %o3 = linalg.batch_matmul ins(%p3, %v3 : tensor<4x10x14xf32>, tensor<4x14x8xf32>) outs(%f5 : tensor<4x10x8xf32>) -> tensor<4x10x8xf32>
  %o = tensor.expand_shape %o3 [[0, 1], [2], [3]] output_shape [2, 2, 10, 8] : tensor<4x10x8xf32> into tensor<2x2x10x8xf32>
  return %o : tensor<2x2x10x8xf32>
}

// The keys arrive as kᵀ [N, dk, Sk] (a cache kept transposed), the plain
// rhs of linalg.batch_matmul: raised with key_transposed, read in place.
// Causal bottom-right (key <= query + Sk - Sq) from linalg.index, the
// scores divided by sqrt(dk).
func.func @keys_given_transposed(%q: tensor<3x12x8xf32>, %kt: tensor<3x8x20xf32>, %v: tensor<3x20x8xf32>) -> tensor<3x12x8xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %root = arith.constant 2.82842708 : f32
  %se = tensor.empty() : tensor<3x12x20xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%se : tensor<3x12x20xf32>) -> tensor<3x12x20xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<3x12x8xf32>, tensor<3x8x20xf32>) outs(%sz : tensor<3x12x20xf32>) -> tensor<3x12x20xf32>
  %x = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<3x12x20xf32>) outs(%se : tensor<3x12x20xf32>) {
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %c8 = arith.constant 8 : index
    %last = arith.addi %i, %c8 : index
    %vis = arith.cmpi ule, %j, %last : index
    %0 = arith.divf %a, %root : f32
    %1 = arith.select %vis, %0, %ninf : f32
    linalg.yield %1 : f32
  } -> tensor<3x12x20xf32>
  %p = linalg.softmax dimension(2) ins(%x : tensor<3x12x20xf32>) outs(%se : tensor<3x12x20xf32>) -> tensor<3x12x20xf32>
  %oe = tensor.empty() : tensor<3x12x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%oe : tensor<3x12x8xf32>) -> tensor<3x12x8xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<3x12x20xf32>, tensor<3x20x8xf32>) outs(%oz : tensor<3x12x8xf32>) -> tensor<3x12x8xf32>
  return %o : tensor<3x12x8xf32>
}

// StableHLO-to-linalg's shape (IREE's input): linalg.contract, named
// elementwise ops (mul by a splat tensor, sub, exp, div) and linalg.reduce
// + linalg.broadcast for the row max and sum.
func.func @named_ops(%q: tensor<2x4x8xf32>, %k: tensor<2x6x8xf32>, %v: tensor<2x6x8xf32>) -> tensor<2x4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %c = arith.constant dense<0.353553385> : tensor<2x4x6xf32>
  %se = tensor.empty() : tensor<2x4x6xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%se : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %s = linalg.contract indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (b, n, k)>, affine_map<(b, m, n, k) -> (b, m, n)>] ins(%q, %k : tensor<2x4x8xf32>, tensor<2x6x8xf32>) outs(%sz : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %x = linalg.mul ins(%s, %c : tensor<2x4x6xf32>, tensor<2x4x6xf32>) outs(%se : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %re = tensor.empty() : tensor<2x4xf32>
  %rm = linalg.fill ins(%ninf : f32) outs(%re : tensor<2x4xf32>) -> tensor<2x4xf32>
  %mx = linalg.reduce ins(%x : tensor<2x4x6xf32>) outs(%rm : tensor<2x4xf32>) dimensions = [2]
    (%in: f32, %init: f32) {
      %0 = arith.maximumf %in, %init : f32
      linalg.yield %0 : f32
    }
  %mb = linalg.broadcast ins(%mx : tensor<2x4xf32>) outs(%se : tensor<2x4x6xf32>) dimensions = [2]
  %d = linalg.sub ins(%x, %mb : tensor<2x4x6xf32>, tensor<2x4x6xf32>) outs(%se : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %e = linalg.exp ins(%d : tensor<2x4x6xf32>) outs(%se : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %rz = linalg.fill ins(%zero : f32) outs(%re : tensor<2x4xf32>) -> tensor<2x4xf32>
  %sm = linalg.reduce ins(%e : tensor<2x4x6xf32>) outs(%rz : tensor<2x4xf32>) dimensions = [2]
    (%in: f32, %init: f32) {
      %0 = arith.addf %in, %init : f32
      linalg.yield %0 : f32
    }
  %sb = linalg.broadcast ins(%sm : tensor<2x4xf32>) outs(%se : tensor<2x4x6xf32>) dimensions = [2]
  %p = linalg.div ins(%e, %sb : tensor<2x4x6xf32>, tensor<2x4x6xf32>) outs(%se : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %oe = tensor.empty() : tensor<2x4x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%oe : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x4x6xf32>, tensor<2x6x8xf32>) outs(%oz : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}
