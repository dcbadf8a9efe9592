//===- KernelConfig.h - The strategy of the lowering -------------*- C++ -*-===//
//
// One place chooses how each mha op and each function is tiled and mapped,
// from the target (#mha.target) and the shapes, and records it in the IR as
// #mha.lowering_config (mha-select-lowering-config); the tiling,
// vectorization and GPU mapping passes read it from there
// (mha::getLoweringConfig). A pass option that is given overrides it.
//
//===----------------------------------------------------------------------===//

#ifndef MHA_CODEGEN_COMMON_KERNELCONFIG_H
#define MHA_CODEGEN_COMMON_KERNELCONFIG_H

#include "mha/Dialect/MHA/IR/MHADialect.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Support/LLVM.h"

namespace mlir {
class Operation;

namespace mha {

/// The target assumed where none is given: a CPU with 512-bit vectors.
TargetAttr getDefaultCPUTarget(MLIRContext *context);

/// The register tile [rows, cols] of f32 contractions for vector registers of
/// `vectorBits` bits: two vectors of columns per row, and as many rows as
/// the register file holds accumulators for, with the operands besides
/// (8x32 for AVX-512: 16 of its 32 zmm registers; 4x16 for AVX2 or 128-bit
/// vectors: 8 of 16). Rows are kept a power of two so that they divide the
/// tile sizes of the tiling stage. Fails on a width that is not a positive
/// multiple of 32 bits.
FailureOr<std::pair<int64_t, int64_t>> defaultRegisterTile(int64_t vectorBits);

/// What the rules choose on `target` (null: getDefaultCPUTarget), every field
/// of its kind set: for an mha.attention or mha.multi_head_attention its
/// q_tile and kv_tile; for a function, the target's function fields (CPU:
/// register_tile and chunk; GPU: threads, the smallest q_tile of its mha ops,
/// and workgroup_tile). Null for other ops.
/// With `allowTF32`, f32 attention may run on tensor cores as TF32
/// (`mma = [16, 8, 8]`).
LoweringConfigAttr selectLoweringConfig(Operation *op, TargetAttr target,
                                        bool allowTF32 = false);

/// Why the warp-level tensor-core kernel (mha-attention-to-mma, `mma =
/// [16, 8, 16]`, or with `tf32` `[16, 8, 8]`) cannot compute `op` on
/// `target`, in words ("" when it can): it needs a CUDA target of sm_80 or
/// later, f16 or bf16 operands and result (one type; with `tf32`, f32),
/// head dims that are static multiples of 16 (dk; 8 with `tf32`) and 8 (dv)
/// up to 256, an additive mask if any, no key_offset and the keys in their
/// default layout.
std::string mmaAttentionUnsupported(Operation *op, TargetAttr target,
                                    bool tf32 = false);

/// A contraction the tensor-core GEMM kernel (mha-contraction-to-mma)
/// computes: its iteration dims grouped as M (first input and output), N
/// (second input and output) and K (reductions), each in its input's memory
/// order, the elementwise op that rounds its f32 result, and the bias its
/// accumulator starts from (none: from 0) with the map from the iteration
/// dims to its indices (N dims only).
struct MMAContraction {
  Operation *rounding;
  SmallVector<unsigned> m, n, k;
  Value bias;
  AffineMap biasMap;
};

/// `op` as such a contraction: a linalg.generic computing out + extf(a) ·
/// extf(b) of f16 (or bf16) inputs from a zero fill or from a bias
/// broadcast along M (an elementwise extf of a tensor indexed by output
/// dims of the second input: a projection's bias), whose one user rounds
/// it back elementwise, without batch dims, its inputs' and output's
/// innermost dims the last reduction (first input) and the last output dim
/// of the second (multiples of 8, static with every reduction and
/// second-input dim). Fails with the reason in `why`.
FailureOr<MMAContraction> matchMMAContraction(Operation *op, std::string &why);

/// Why the tensor-core GEMM kernel cannot compute `op` on `target` ("" when
/// it can): a CUDA target of sm_80 or later and matchMMAContraction.
std::string mmaContractionUnsupported(Operation *op, TargetAttr target);

/// The tensor-core GEMM kernel's strategy (mha-contraction-to-mma): output
/// tiles of `tileM` x `tileN` a workgroup, over `warps` warps in
/// warpRows() rows of warps, k steps of kMMAGemmTileK, `stages` of them in
/// shared memory at once.
struct MMAGemmConfig {
  int64_t tileM, tileN, warps, stages;
  int64_t warpRows() const { return warps >= 2 ? 2 : 1; }
  int64_t warpCols() const { return warps / warpRows(); }
  int64_t warpTileM() const { return tileM / warpRows(); }
  int64_t warpTileN() const { return tileN / warpCols(); }
};
constexpr int64_t kMMAGemmTileK = 32;

/// The shared memory of the GEMM kernel: `stages` padded A (tileM x 32) and
/// B (32 x tileN) tiles of 16-bit elements.
int64_t mmaGemmWorkgroupBytes(int64_t tileM, int64_t tileN, int64_t stages);

/// The configuration of the GEMM kernel computing `op` (a contraction that
/// mmaContractionUnsupported accepts on `target`): the fields of its own
/// mha.lowering_config, the rules' where it has none. Fails with an error
/// at `op` where the kernel cannot take them.
FailureOr<MMAGemmConfig> getMMAGemmConfig(Operation *op, TargetAttr target);

/// Elements of padding after each row of the tensor-core kernel's shared K
/// and V tiles: 16 bytes, so that the 8 rows an ldmatrix reads at one
/// column fall in distinct banks.
constexpr int64_t kMMATileRowPadding = 8;

/// Elements of padding after each row of the TF32 kernel's f32 K and V
/// tiles: 4 for K (row stride 4 mod 32 words: the 8 keys and 4 dims a B
/// operand's lanes read fall in distinct banks), 8 for V (8 mod 32: its 4
/// keys and 8 dims).
constexpr int64_t kTF32KeyRowPadding = 4, kTF32ValueRowPadding = 8;

/// The workgroup memory of the tensor-core kernel: its f16 K and V tiles of
/// `kvTile` keys, rows padded (with `tf32`, f32 tiles).
int64_t mmaAttentionWorkgroupBytes(int64_t kvTile, int64_t dk, int64_t dv,
                                   bool tf32 = false);

/// Whether `target` is a Vulkan device with cooperative matrices
/// (VK_KHR_cooperative_matrix: `features = "+cooperative_matrix"`), whose
/// 16x16x16 f16 products with f32 accumulation the cooperative-matrix
/// kernel uses.
bool hasCooperativeMatrices(TargetAttr target);

/// Why the cooperative-matrix kernel (mha-attention-to-cooperative-matrix,
/// `mma = [16, 16, 16]`) cannot compute `op` on `target`, in words ("" when
/// it can): it needs a Vulkan target with cooperative matrices and
/// subgroups of 32 invocations, query, key, value and result all f16, head
/// dims that are static multiples of 16 up to 256, an additive mask if any
/// and no key_offset.
std::string coopMatrixAttentionUnsupported(Operation *op, TargetAttr target);

/// Elements of padding after each row of the cooperative-matrix kernel's
/// f16 tiles (Q, K, V, P) and its f32 ones (scores, row factors): 16 bytes,
/// which keeps every matrix it loads or stores 16-byte aligned.
constexpr int64_t kCoopHalfRowPadding = 8, kCoopFloatRowPadding = 4;

/// The workgroup memory of the cooperative-matrix kernel with `qTile` rows
/// and `kvTile` keys: its f16 Q, K, V and P tiles and its f32 score and
/// row-factor tiles, rows padded.
int64_t coopMatrixAttentionWorkgroupBytes(int64_t qTile, int64_t kvTile,
                                          int64_t dk, int64_t dv);

/// Why the register kernel (mha-attention-to-simt, `thread_tile`) cannot
/// compute `op` on `target`, in words ("" when it can): it needs a GPU
/// target, query, key, value and result all f32, all f16 or all bf16, an
/// additive (float) mask if any and no key_offset.
std::string simtAttentionUnsupported(Operation *op, TargetAttr target);

/// Bytes of padding after each row of the register kernel's shared Q, K and
/// V tiles: 16, so that the rows the lanes of a row group read at one
/// column start in distinct banks.
constexpr int64_t kSIMTTileRowPaddingBytes = 16;

/// The workgroup memory of the register kernel: its Q tile of `qTile` rows
/// and its K and V tiles of `kvTile` keys, of `elementBytes` each, rows
/// padded.
int64_t simtAttentionWorkgroupBytes(int64_t qTile, int64_t kvTile, int64_t dk,
                                    int64_t dv, int64_t elementBytes);

/// The query and key tile sizes of `op` (an mha.attention or
/// mha.multi_head_attention): each given size (non-zero) as it is, else that
/// of its lowering configuration, else 64 (the tiling passes' default, where
/// nothing chose a configuration).
std::pair<int64_t, int64_t> resolveTileSizes(Operation *op, int64_t qTile,
                                             int64_t kvTile);

/// The query heads per tile of `op` (an mha.attention): its lowering
/// configuration's head_tile, else 1.
int64_t resolveHeadTile(Operation *op);

/// The key blocks `op`'s key loop prefetches ahead: its lowering
/// configuration's prefetch_blocks, else 0 (none).
int64_t resolvePrefetchBlocks(Operation *op);

/// The key splits of `op` (an mha.attention): `given` if non-zero, else its
/// lowering configuration's kv_splits, else 1 (not split).
int64_t resolveKeySplits(Operation *op, int64_t given);

/// The functions with a body under `root` (`root` itself if it is one): the
/// scopes of the function fields of the lowering configuration.
SmallVector<FunctionOpInterface> functionsUnder(Operation *root);

/// Sets `mha.lowering_config` on every mha.attention and
/// mha.multi_head_attention under `root`, then on every function with a
/// body: the configuration already there (written by hand, also on an op
/// around it) with `overrides` over it, and the fields neither sets selected
/// for `target`. Fails, with an error at the op, where the result is not
/// legal (verifyLoweringConfig).
/// The contractions that the tensor-core GEMM kernel computes get
/// `gemmTile` ([rows, cols]) as their workgroup_tile and `gemmStages` as
/// their pipeline_stages where given (non-empty, non-zero).
LogicalResult setLoweringConfigs(Operation *root, TargetAttr target,
                                 LoweringConfigAttr overrides,
                                 bool allowTF32 = false,
                                 ArrayRef<int64_t> gemmTile = {},
                                 int64_t gemmStages = 0);

/// Checks the configuration of a function and of its mha ops on `target`:
/// fields of the other kind of target, a GPU thread count of 0, above the
/// target's limit, or above a tile's rows (threads that no row feeds); for
/// an op with `mma`, that the kernel supports it (mmaAttentionUnsupported),
/// `q_tile = 16 * warps` and `kv_tile` a multiple of 16; for an op with
/// `thread_tile`, that the register kernel supports it and that its tiles
/// divide into the thread tile, its row groups fit a subgroup and its
/// threads and workgroup memory the target's limits.
LogicalResult verifyLoweringConfig(FunctionOpInterface func, TargetAttr target);

} // namespace mha
} // namespace mlir

#endif // MHA_CODEGEN_COMMON_KERNELCONFIG_H
