//===- Npy.h - reading and writing .npy files -------------------*- C++ -*-===//
//
// mha-run's arrays: RunnerSupport's .npy files (versions 1 to 3, C order,
// little-endian f32, f16, bf16 bits, bool and i32) as C++ containers, with
// their elements as doubles.
//
//===----------------------------------------------------------------------===//

#ifndef MHA_TOOLS_MHA_RUN_NPY_H
#define MHA_TOOLS_MHA_RUN_NPY_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mha_run {

/// An n-d array in C order. `dtype` is the NumPy type code without byte
/// order: "f4", "f2", "b1", or "u2" for bfloat16 (NumPy has no bfloat16:
/// a bf16 tensor is handed over as uint16 holding its bits, the upper half
/// of the f32 bits).
struct NpyArray {
  std::string dtype;
  llvm::SmallVector<int64_t> shape;
  std::vector<char> data;

  int64_t numElements() const;
  static size_t elementSize(llvm::StringRef dtype);
  /// Element `i` as a double (bool as 0/1).
  double get(int64_t i) const;
  /// Sets element `i` from a double (rounded to the dtype).
  void set(int64_t i, double value);
};

/// Reads `path`; errors name the file and what is wrong with it.
llvm::Expected<NpyArray> readNpy(llvm::StringRef path);

/// Writes `array` to `path` as a version 1.0 .npy file.
llvm::Error writeNpy(llvm::StringRef path, const NpyArray &array);

/// bfloat16 bits <-> float (round to nearest even; NaN stays NaN).
float bf16ToFloat(uint16_t b);
uint16_t floatToBf16(float f);

/// IEEE half <-> float conversions.
float halfToFloat(uint16_t h);
uint16_t floatToHalf(float f);

} // namespace mha_run

#endif // MHA_TOOLS_MHA_RUN_NPY_H
