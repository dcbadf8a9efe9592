//===- Npy.cpp - reading and writing .npy files -----------------*- C++ -*-===//

#include "Npy.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
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
  if (dtype == "f4" || dtype == "i4")
    return 4;
  if (dtype == "f2" || dtype == "u2")
    return 2;
  if (dtype == "b1")
    return 1;
  return 0;
}

double NpyArray::get(int64_t i) const {
  if (dtype == "f4") {
    float v;
    std::memcpy(&v, data.data() + 4 * i, 4);
    return v;
  }
  if (dtype == "f2") {
    uint16_t v;
    std::memcpy(&v, data.data() + 2 * i, 2);
    return halfToFloat(v);
  }
  if (dtype == "u2") {
    uint16_t v;
    std::memcpy(&v, data.data() + 2 * i, 2);
    return bf16ToFloat(v);
  }
  if (dtype == "i4") {
    int32_t v;
    std::memcpy(&v, data.data() + 4 * i, 4);
    return v;
  }
  return data[i] != 0 ? 1.0 : 0.0;
}

void NpyArray::set(int64_t i, double value) {
  if (dtype == "f4") {
    float v = static_cast<float>(value);
    std::memcpy(data.data() + 4 * i, &v, 4);
  } else if (dtype == "f2") {
    uint16_t v = floatToHalf(static_cast<float>(value));
    std::memcpy(data.data() + 2 * i, &v, 2);
  } else if (dtype == "u2") {
    uint16_t v = floatToBf16(static_cast<float>(value));
    std::memcpy(data.data() + 2 * i, &v, 2);
  } else if (dtype == "i4") {
    auto v = static_cast<int32_t>(value);
    std::memcpy(data.data() + 4 * i, &v, 4);
  } else {
    data[i] = value != 0.0;
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

/// The value of `key` in the header dict, e.g. `'<f4'`, `False`, `(2, 3)`.
static std::optional<StringRef> headerValue(StringRef header, StringRef key) {
  size_t pos = header.find(("'" + key + "'").str());
  if (pos == StringRef::npos)
    return std::nullopt;
  StringRef rest = header.drop_front(pos + key.size() + 2).ltrim();
  if (!rest.consume_front(":"))
    return std::nullopt;
  rest = rest.ltrim();
  if (rest.starts_with("(")) {
    size_t close = rest.find(')');
    if (close == StringRef::npos)
      return std::nullopt;
    return rest.take_front(close + 1);
  }
  return rest.take_until([](char c) { return c == ',' || c == '}'; }).rtrim();
}

Expected<NpyArray> mha_run::readNpy(StringRef path) {
  auto fail = [&](const Twine &why) {
    return createStringError(inconvertibleErrorCode(),
                             "'" + path + "': " + why);
  };
  ErrorOr<std::unique_ptr<MemoryBuffer>> file =
      MemoryBuffer::getFile(path, /*IsText=*/false);
  if (!file)
    return fail("cannot read file: " + file.getError().message());
  StringRef bytes = (*file)->getBuffer();
  if (!bytes.starts_with("\x93NUMPY"))
    return fail("not a .npy file (bad magic)");
  if (bytes.size() < 10)
    return fail("truncated .npy header");
  unsigned major = static_cast<unsigned char>(bytes[6]);
  size_t headerLen, headerStart;
  if (major == 1) {
    headerLen = static_cast<unsigned char>(bytes[8]) |
                static_cast<unsigned char>(bytes[9]) << 8;
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      return fail("truncated .npy header");
    headerLen = 0;
    for (int i = 3; i >= 0; --i)
      headerLen = headerLen << 8 | static_cast<unsigned char>(bytes[8 + i]);
    headerStart = 12;
  } else {
    return fail("unsupported .npy version " + Twine(major));
  }
  if (bytes.size() < headerStart + headerLen)
    return fail("truncated .npy header");
  StringRef header = bytes.substr(headerStart, headerLen);

  std::optional<StringRef> descr = headerValue(header, "descr");
  std::optional<StringRef> fortran = headerValue(header, "fortran_order");
  std::optional<StringRef> shapeText = headerValue(header, "shape");
  if (!descr || !fortran || !shapeText)
    return fail("malformed .npy header '" + header.trim() + "'");
  if (*fortran != "False")
    return fail("Fortran-order arrays are not supported (save with "
                "np.ascontiguousarray)");

  NpyArray array;
  StringRef type = descr->trim("'\"");
  char order = type.empty() ? '?' : type.front();
  type = type.drop_front();
  if (order == '>' && NpyArray::elementSize(type) > 1)
    return fail("big-endian dtype '" + descr->trim("'\"") +
                "' is not supported (use little-endian)");
  if ((order != '<' && order != '|' && order != '=') ||
      NpyArray::elementSize(type) == 0)
    return fail("unsupported dtype '" + descr->trim("'\"") +
                "' (supported: float32 '<f4', float16 '<f2', bool '|b1', int32 "
                "'<i4', and uint16 '<u2' for the bits of bfloat16)");
  array.dtype = type.str();

  StringRef dims = shapeText->trim("()");
  SmallVector<StringRef> parts;
  dims.split(parts, ',', -1, /*KeepEmpty=*/false);
  for (StringRef part : parts) {
    int64_t d;
    if (part.trim().getAsInteger(10, d) || d < 0)
      return fail("malformed shape '" + *shapeText + "'");
    array.shape.push_back(d);
  }

  // Sizes come from the file: refuse products that overflow instead of
  // wrapping around to a small buffer.
  int64_t size = NpyArray::elementSize(array.dtype);
  for (int64_t d : array.shape)
    if (llvm::MulOverflow(size, d, size) || size > (int64_t(1) << 48))
      return fail("shape '" + *shapeText + "' is too large");
  StringRef payload = bytes.drop_front(headerStart + headerLen);
  if (payload.size() < static_cast<uint64_t>(size))
    return fail("truncated data: expected " + Twine(size) + " bytes, found " +
                Twine(payload.size()));
  array.data.assign(payload.begin(), payload.begin() + size);
  return array;
}

Error mha_run::writeNpy(StringRef path, const NpyArray &array) {
  std::string shape = "(";
  for (int64_t d : array.shape)
    shape += std::to_string(d) + ", ";
  if (array.shape.size() > 1)
    shape.resize(shape.size() - 2);
  else if (array.shape.size() == 1)
    shape.resize(shape.size() - 1);
  shape += ")";
  std::string descr = (array.dtype == "b1" ? "|" : "<") + array.dtype;
  std::string header = "{'descr': '" + descr +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad so that the data starts on a 64-byte boundary, ending in '\n'.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';

  std::error_code ec;
  raw_fd_ostream os(path, ec);
  if (ec)
    return createStringError(ec, "'" + path + "': cannot write: " + ec.message());
  os << "\x93NUMPY" << char(1) << char(0);
  os << char(header.size() & 0xff) << char(header.size() >> 8);
  os << header;
  os.write(array.data.data(), array.data.size());
  return Error::success();
}
