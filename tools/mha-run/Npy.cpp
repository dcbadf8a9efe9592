//===- Npy.cpp - reading and writing .npy files -----------------*- C++ -*-===//
//
// The files themselves are RunnerSupport's (lib/ExecutionEngine), which the
// executables mha-aot writes share; here they become C++ arrays with values.
//
//===----------------------------------------------------------------------===//

#include "Npy.h"

#include "mha/ExecutionEngine/RunnerSupport.h"

#include "llvm/ADT/STLExtras.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace llvm;
using namespace mha_run;

int64_t NpyArray::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

size_t NpyArray::elementSize(StringRef dtype) {
  return mha_dtype_size(dtype.str().c_str());
}

namespace {
/// The element types NpyArray holds, by dtype code.
enum class Kind { F32, F16, BF16, I32, I64, Bool };
} // namespace

/// `dtype`'s kind from its two characters: get and set run per element, and
/// comparing whole strings there (a memcmp call each) made filling a large
/// array slower than what it fills it for.
static Kind kindOf(const std::string &dtype) {
  char type = dtype.empty() ? 'b' : dtype[0];
  char width = dtype.size() < 2 ? '1' : dtype[1];
  if (type == 'f')
    return width == '4' ? Kind::F32 : Kind::F16;
  if (type == 'u')
    return Kind::BF16;
  if (type == 'i')
    return width == '4' ? Kind::I32 : Kind::I64;
  return Kind::Bool;
}

double NpyArray::get(int64_t i) const {
  const char *p = data.data();
  switch (kindOf(dtype)) {
  case Kind::F32: {
    float v;
    std::memcpy(&v, p + 4 * i, 4);
    return v;
  }
  case Kind::F16: {
    uint16_t v;
    std::memcpy(&v, p + 2 * i, 2);
    return halfToFloat(v);
  }
  case Kind::BF16: {
    uint16_t v;
    std::memcpy(&v, p + 2 * i, 2);
    return bf16ToFloat(v);
  }
  case Kind::I32: {
    int32_t v;
    std::memcpy(&v, p + 4 * i, 4);
    return v;
  }
  case Kind::I64: {
    int64_t v;
    std::memcpy(&v, p + 8 * i, 8);
    return static_cast<double>(v);
  }
  case Kind::Bool:
    break;
  }
  return data[i] != 0 ? 1.0 : 0.0;
}

void NpyArray::set(int64_t i, double value) {
  char *p = data.data();
  switch (kindOf(dtype)) {
  case Kind::F32: {
    float v = static_cast<float>(value);
    std::memcpy(p + 4 * i, &v, 4);
    return;
  }
  case Kind::F16: {
    uint16_t v = floatToHalf(static_cast<float>(value));
    std::memcpy(p + 2 * i, &v, 2);
    return;
  }
  case Kind::BF16: {
    uint16_t v = floatToBf16(static_cast<float>(value));
    std::memcpy(p + 2 * i, &v, 2);
    return;
  }
  case Kind::I32: {
    auto v = static_cast<int32_t>(value);
    std::memcpy(p + 4 * i, &v, 4);
    return;
  }
  case Kind::I64: {
    auto v = static_cast<int64_t>(value);
    std::memcpy(p + 8 * i, &v, 8);
    return;
  }
  case Kind::Bool:
    data[i] = value != 0.0;
    return;
  }
}

float mha_run::bf16ToFloat(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t mha_run::floatToBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if (std::isnan(f))
    return static_cast<uint16_t>((bits >> 16) | 0x40); // Quiet NaN.
  bits += 0x7fff + ((bits >> 16) & 1);                  // Nearest even.
  return static_cast<uint16_t>(bits >> 16);
}

float mha_run::halfToFloat(uint16_t h) {
  uint32_t sign = (h >> 15) & 1, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  float magnitude;
  if (exponent == 0)
    magnitude = std::ldexp(static_cast<float>(mantissa), -24);
  else if (exponent == 31)
    magnitude = mantissa ? NAN : INFINITY;
  else
    magnitude = std::ldexp(static_cast<float>(mantissa | 0x400), exponent - 25);
  return sign ? -magnitude : magnitude;
}

uint16_t mha_run::floatToHalf(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  uint16_t sign = (bits >> 16) & 0x8000;
  if (std::isnan(f))
    return sign | 0x7e00;
  float a = std::fabs(f);
  if (a >= 65520.0f)
    return sign | 0x7c00;
  if (a < std::ldexp(1.0f, -24) / 2)
    return sign;
  int exponent;
  std::frexp(a, &exponent); // a = m * 2^exponent, m in [0.5, 1)
  exponent -= 1;            // a = 1.x * 2^exponent
  if (exponent < -14) {     // subnormal: units of 2^-24
    return sign | static_cast<uint16_t>(std::nearbyint(std::ldexp(a, 24)));
  }
  // Normal: 10 mantissa bits, round to nearest even; a carry may bump the
  // exponent, which the encoding absorbs.
  uint32_t m = static_cast<uint32_t>(std::nearbyint(std::ldexp(a, 10 - exponent)));
  return sign | static_cast<uint16_t>(((exponent + 15) << 10) + (m - 0x400));
}

Expected<NpyArray> mha_run::readNpy(StringRef path) {
  mha_array read;
  char why[1024];
  if (mha_npy_read(path.str().c_str(), &read, why, sizeof why))
    return createStringError(inconvertibleErrorCode(),
                             "'" + path + "': " + why);
  NpyArray array;
  array.dtype = read.dtype + 1; // Without the byte order.
  array.shape.assign(read.shape, read.shape + read.rank);
  auto *data = static_cast<const char *>(read.data);
  array.data.assign(data, data + array.numElements() *
                                     NpyArray::elementSize(array.dtype));
  std::free(read.data);
  return array;
}

Error mha_run::writeNpy(StringRef path, const NpyArray &array) {
  mha_array view;
  std::snprintf(view.dtype, sizeof view.dtype, "%c%s",
                array.dtype == "b1" ? '|' : '<', array.dtype.c_str());
  view.rank = array.shape.size();
  llvm::copy(array.shape, view.shape);
  view.data = const_cast<char *>(array.data.data());
  char why[1024];
  if (mha_npy_write(path.str().c_str(), &view, why, sizeof why))
    return createStringError(inconvertibleErrorCode(),
                             "'" + path + "': " + why);
  return Error::success();
}
