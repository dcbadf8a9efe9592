/*===- RunnerSupport.c - what the runners share (C11) ------------*- C -*-===*
 *
 * See RunnerSupport.h. The .npy reader's checks and messages are mha-run's
 * (test/Tools/mha-run/errors.test pins them); mha-aot compiles this file
 * into its outputs, so it includes nothing but the C library and its header.
 *
 *===---------------------------------------------------------------------===*/

#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#endif

#include "mha/ExecutionEngine/RunnerSupport.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

static int fail(char *err, size_t err_size, const char *format, ...) {
  if (err_size) {
    va_list args;
    va_start(args, format);
    vsnprintf(err, err_size, format, args);
    va_end(args);
  }
  return 1;
}

int64_t mha_dtype_size(const char *code) {
  if (!strcmp(code, "f4") || !strcmp(code, "i4"))
    return 4;
  if (!strcmp(code, "f2") || !strcmp(code, "u2"))
    return 2;
  if (!strcmp(code, "b1"))
    return 1;
  if (!strcmp(code, "i8"))
    return 8;
  return 0;
}

int64_t mha_num_elements(int64_t rank, const int64_t *shape) {
  int64_t n = 1;
  for (int64_t d = 0; d < rank; ++d)
    if (shape[d] < 0 || __builtin_mul_overflow(n, shape[d], &n))
      return -1;
  return n;
}

/*===- .npy header text ---------------------------------------------------===*/

/* A piece of the header: not terminated, may hold any byte. */
typedef struct span {
  const char *p;
  size_t n;
} span;

static int is_space(char c) { return c && strchr(" \t\n\v\f\r", c); }
static int is_one_of(char c, const char *chars) { return c && strchr(chars, c); }

static span trim(span s, const char *chars) {
  while (s.n && is_one_of(s.p[0], chars))
    ++s.p, --s.n;
  while (s.n && is_one_of(s.p[s.n - 1], chars))
    --s.n;
  return s;
}

static span ltrim_space(span s) {
  while (s.n && is_space(s.p[0]))
    ++s.p, --s.n;
  return s;
}

/* The offset of `needle` in `s`, or -1. */
static int64_t find(span s, const char *needle) {
  size_t len = strlen(needle);
  for (size_t i = 0; i + len <= s.n; ++i)
    if (!memcmp(s.p + i, needle, len))
      return (int64_t)i;
  return -1;
}

static int equals(span s, const char *text) {
  return s.n == strlen(text) && !memcmp(s.p, text, s.n);
}

/* The value of `key` in the header dict, e.g. `'<f4'`, `False`, `(2, 3)`. */
static int header_value(span header, const char *key, span *value) {
  char quoted[32];
  snprintf(quoted, sizeof quoted, "'%s'", key);
  int64_t at = find(header, quoted);
  if (at < 0)
    return 0;
  span rest = {header.p + at + strlen(quoted), header.n - at - strlen(quoted)};
  rest = ltrim_space(rest);
  if (!rest.n || rest.p[0] != ':')
    return 0;
  ++rest.p, --rest.n;
  rest = ltrim_space(rest);
  if (rest.n && rest.p[0] == '(') {
    int64_t close = find(rest, ")");
    if (close < 0)
      return 0;
    *value = (span){rest.p, (size_t)close + 1};
    return 1;
  }
  size_t n = 0;
  while (n < rest.n && rest.p[n] != ',' && rest.p[n] != '}')
    ++n;
  *value = trim((span){rest.p, n}, " \t\n\v\f\r");
  return 1;
}

/* A dimension of the shape tuple: decimal digits, optionally after '-'. */
static int parse_dim(span s, int64_t *value) {
  int negative = s.n && s.p[0] == '-';
  size_t i = negative;
  if (i == s.n)
    return 0;
  int64_t v = 0;
  for (; i < s.n; ++i) {
    if (s.p[i] < '0' || s.p[i] > '9' || __builtin_mul_overflow(v, 10, &v) ||
        __builtin_add_overflow(v, s.p[i] - '0', &v))
      return 0;
  }
  *value = negative ? -v : v;
  return 1;
}

/* The whole file in memory (from malloc), or nonzero with errno set. */
static int read_file(const char *path, char **bytes, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return 1;
  size_t capacity = 1 << 16, n = 0;
  char *buffer = malloc(capacity);
  for (;;) {
    if (!buffer) {
      fclose(f);
      errno = ENOMEM;
      return 1;
    }
    n += fread(buffer + n, 1, capacity - n, f);
    if (n < capacity)
      break;
    char *grown = realloc(buffer, capacity *= 2);
    if (!grown)
      free(buffer);
    buffer = grown;
  }
  int error = ferror(f) ? errno : 0;
  fclose(f);
  if (error) {
    free(buffer);
    errno = error;
    return 1;
  }
  *bytes = buffer;
  *size = n;
  return 0;
}

/*===- .npy read and write ------------------------------------------------===*/

static int parse_npy(span bytes, mha_array *out, size_t *data_at, char *err,
                     size_t err_size) {
  if (bytes.n < 6 || memcmp(bytes.p, "\x93NUMPY", 6))
    return fail(err, err_size, "not a .npy file (bad magic)");
  if (bytes.n < 10)
    return fail(err, err_size, "truncated .npy header");
  const unsigned char *u = (const unsigned char *)bytes.p;
  unsigned major = u[6];
  size_t header_len, header_start;
  if (major == 1) {
    header_len = u[8] | (size_t)u[9] << 8;
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.n < 12)
      return fail(err, err_size, "truncated .npy header");
    header_len = u[8] | (size_t)u[9] << 8 | (size_t)u[10] << 16 |
                 (size_t)u[11] << 24;
    header_start = 12;
  } else {
    return fail(err, err_size, "unsupported .npy version %u", major);
  }
  if (bytes.n < header_start + header_len)
    return fail(err, err_size, "truncated .npy header");
  span header = {bytes.p + header_start, header_len};

  span descr, fortran, shape_text;
  if (!header_value(header, "descr", &descr) ||
      !header_value(header, "fortran_order", &fortran) ||
      !header_value(header, "shape", &shape_text)) {
    span shown = trim(header, " \t\n\v\f\r");
    return fail(err, err_size, "malformed .npy header '%.*s'", (int)shown.n,
                shown.p);
  }
  if (!equals(fortran, "False"))
    return fail(err, err_size,
                "Fortran-order arrays are not supported (save with "
                "np.ascontiguousarray)");

  span type = trim(descr, "'\"");
  char order = type.n ? type.p[0] : '?';
  char code[3] = {0};
  if (type.n == 3)
    memcpy(code, type.p + 1, 2);
  int64_t size = type.n == 3 ? mha_dtype_size(code) : 0;
  if (order == '>' && size > 1)
    return fail(err, err_size,
                "big-endian dtype '%.*s' is not supported (use little-endian)",
                (int)type.n, type.p);
  if ((order != '<' && order != '|' && order != '=') || size == 0)
    return fail(err, err_size,
                "unsupported dtype '%.*s' (supported: float32 '<f4', float16 "
                "'<f2', bool '|b1', int32 '<i4', int64 '<i8', and uint16 '<u2' for "
                "the bits "
                "of bfloat16)",
                (int)type.n, type.p);
  out->dtype[0] = strcmp(code, "b1") ? '<' : '|';
  memcpy(out->dtype + 1, code, 3);

  span dims = trim(shape_text, "()");
  out->rank = 0;
  while (dims.n) {
    size_t n = 0;
    while (n < dims.n && dims.p[n] != ',')
      ++n;
    span part = trim((span){dims.p, n}, " \t\n\v\f\r");
    int64_t d;
    if (n) {
      if (!parse_dim(part, &d) || d < 0)
        return fail(err, err_size, "malformed shape '%.*s'", (int)shape_text.n,
                    shape_text.p);
      if (out->rank == MHA_NPY_MAX_RANK)
        return fail(err, err_size, "shape '%.*s' has more than %d dimensions",
                    (int)shape_text.n, shape_text.p, MHA_NPY_MAX_RANK);
      out->shape[out->rank++] = d;
    }
    dims.p += n, dims.n -= n;
    if (dims.n)
      ++dims.p, --dims.n;
  }

  /* Sizes come from the file: refuse products that overflow instead of
     wrapping around to a small buffer. */
  for (int64_t d = 0; d < out->rank; ++d)
    if (__builtin_mul_overflow(size, out->shape[d], &size) ||
        size > ((int64_t)1 << 48))
      return fail(err, err_size, "shape '%.*s' is too large",
                  (int)shape_text.n, shape_text.p);
  size_t payload = bytes.n - header_start - header_len;
  if (payload < (uint64_t)size)
    return fail(err, err_size, "truncated data: expected %lld bytes, found %zu",
                (long long)size, payload);
  *data_at = header_start + header_len;
  return 0;
}

int mha_npy_read(const char *path, mha_array *out, char *err,
                 size_t err_size) {
  char *bytes;
  size_t size, data_at;
  if (read_file(path, &bytes, &size))
    return fail(err, err_size, "cannot read file: %s", strerror(errno));
  if (parse_npy((span){bytes, size}, out, &data_at, err, err_size)) {
    free(bytes);
    return 1;
  }
  /* The data in place of the file, then only as much memory as it needs. */
  size_t data_size = (size_t)(mha_num_elements(out->rank, out->shape) *
                              mha_dtype_size(out->dtype + 1));
  memmove(bytes, bytes + data_at, data_size);
  char *data = realloc(bytes, data_size ? data_size : 1);
  out->data = data ? data : bytes;
  return 0;
}

int mha_npy_write(const char *path, const mha_array *array, char *err,
                  size_t err_size) {
  const char *code = array->dtype + 1;
  int64_t count = mha_num_elements(array->rank, array->shape);
  if (!mha_dtype_size(code) || array->rank > MHA_NPY_MAX_RANK || count < 0)
    return fail(err, err_size, "cannot write dtype '%s' of rank %lld",
                array->dtype, (long long)array->rank);
  char header[64 * 24 + 128];
  int n = snprintf(header, sizeof header,
                   "{'descr': '%c%s', 'fortran_order': False, 'shape': (",
                   strcmp(code, "b1") ? '<' : '|', code);
  for (int64_t d = 0; d < array->rank; ++d)
    n += snprintf(header + n, sizeof header - n, "%lld%s",
                  (long long)array->shape[d],
                  d + 1 < array->rank ? ", " : (array->rank == 1 ? "," : ""));
  n += snprintf(header + n, sizeof header - n, "), }");
  /* Pad so that the data starts on a 64-byte boundary, ending in '\n'. */
  while ((10 + n + 1) % 64)
    header[n++] = ' ';
  header[n++] = '\n';

  FILE *f = fopen(path, "wb");
  if (!f)
    return fail(err, err_size, "cannot write: %s", strerror(errno));
  unsigned char magic[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                             (unsigned char)(n & 0xff), (unsigned char)(n >> 8)};
  size_t bytes = (size_t)(count * mha_dtype_size(code));
  int ok = fwrite(magic, 1, 10, f) == 10 &&
           fwrite(header, 1, (size_t)n, f) == (size_t)n &&
           fwrite(array->data, 1, bytes, f) == bytes;
  int error = ok ? 0 : errno;
  if (fclose(f) && ok)
    ok = 0, error = errno;
  if (!ok)
    return fail(err, err_size, "cannot write: %s", strerror(error));
  return 0;
}

/*===- Strided copies -----------------------------------------------------===*/

/* The innermost dimension, an element at a time: with the size a constant,
   each copy is one load and one store, which the compiler vectorizes where
   the strides are 1, and which ThreadSanitizer checks as such (it passes
   over a memcpy of a whole row under mha-aot's ignore_noninstrumented_modules
   default, test/Tools/mha-aot/sanitize-thread.test). */
#define MHA_COPY_ROW(BYTES)                                                    \
  for (int64_t i = 0; i < n; ++i)                                              \
    memcpy(dst + i * dst_stride * (BYTES), src + i * src_stride * (BYTES),     \
           (BYTES))

static void copy_row(char *dst, const char *src, int64_t bytes, int64_t n,
                     int64_t src_stride, int64_t dst_stride) {
  switch (bytes) {
  case 1:
    MHA_COPY_ROW(1);
    break;
  case 2:
    MHA_COPY_ROW(2);
    break;
  case 4:
    MHA_COPY_ROW(4);
    break;
  case 8:
    MHA_COPY_ROW(8);
    break;
  default:
    MHA_COPY_ROW((size_t)bytes);
  }
}

/* Copies one dimension after another; returns the end of what it wrote when
   `dst_strides` is NULL (dense). */
static char *copy_dims(char *dst, const char *src, int64_t bytes, int64_t rank,
                       const int64_t *sizes, const int64_t *src_strides,
                       const int64_t *dst_strides) {
  if (rank == 0) {
    memcpy(dst, src, (size_t)bytes);
    return dst + bytes;
  }
  if (rank == 1) {
    copy_row(dst, src, bytes, sizes[0], src_strides[0],
             dst_strides ? dst_strides[0] : 1);
    return dst + sizes[0] * bytes;
  }
  for (int64_t i = 0; i < sizes[0]; ++i) {
    char *next = copy_dims(dst_strides ? dst + i * dst_strides[0] * bytes : dst,
                           src + i * src_strides[0] * bytes, bytes, rank - 1,
                           sizes + 1, src_strides + 1,
                           dst_strides ? dst_strides + 1 : NULL);
    if (!dst_strides)
      dst = next;
  }
  return dst;
}

void mha_copy_strided(void *dst, const void *src, int64_t elem_bytes,
                      int64_t rank, const int64_t *sizes,
                      const int64_t *src_strides, const int64_t *dst_strides) {
  for (int64_t d = 0; d < rank; ++d)
    if (sizes[d] == 0)
      return;
  copy_dims((char *)dst, (const char *)src, elem_bytes, rank, sizes,
            src_strides, dst_strides);
}

/*===- Timing -------------------------------------------------------------===*/

double mha_now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int compare_doubles(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

mha_bench_stats mha_bench_summarize(double *ms, int64_t n) {
  mha_bench_stats stats = {n, 0, 0, 0};
  if (n <= 0)
    return stats;
  qsort(ms, (size_t)n, sizeof(double), compare_doubles);
  stats.median_ms = n % 2 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2;
  stats.min_ms = ms[0];
  stats.max_ms = ms[n - 1];
  return stats;
}

void mha_keep_freed_memory(void) {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 32 << 20); /* glibc's largest allowed threshold */
  mallopt(M_TRIM_THRESHOLD, INT_MAX);
#endif
}
