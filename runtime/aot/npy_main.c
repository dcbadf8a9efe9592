/*===- npy_main.c - standalone runner of an mha-aot entry point ----------===*
 *
 * mha-aot compiles this with the generated wrapper and the entry's object
 * code into an executable that needs neither MLIR nor LLVM: it reads each
 * argument from a .npy file, calls the entry and writes each result to a .npy
 * file (or prints a summary). The generated header provides the entry's
 * signature; MHA_AOT_HEADER, MHA_AOT_SIGNATURE and MHA_AOT_RUN name them.
 *
 *   NAME [--threads N] [--benchmark N] [-o OUT.npy]... IN.npy...
 *
 * Exit codes as mha-run's: 0 success, 2 bad usage or input, 4 the entry
 * refused the arguments.
 *
 *===---------------------------------------------------------------------===*/

#include MHA_AOT_HEADER

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

static int bad(const char *what, const char *detail) {
  fprintf(stderr, "error: %s%s%s\n", what, detail ? ": " : "",
          detail ? detail : "");
  return 2;
}

static int64_t element_size(const char *dtype) {
  return dtype[2] == '4' ? 4 : (dtype[2] == '2' ? 2 : 1);
}

/* The element count of `shape`, or -1 if a size is negative or the count
   overflows. */
static int64_t num_elements(int64_t rank, const int64_t *shape) {
  int64_t n = 1;
  for (int64_t d = 0; d < rank; ++d)
    if (shape[d] < 0 || __builtin_mul_overflow(n, shape[d], &n) ||
        n > INT64_MAX / 4)
      return -1;
  return n;
}

/* Reads a little-endian, C-order .npy file of `dtype` and rank `rank`:
   fills `shape` and returns the malloc'd data, or NULL after printing why. */
static void *read_npy(const char *path, const char *dtype, int64_t rank,
                      int64_t *shape) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    bad(path, strerror(errno));
    return NULL;
  }
  unsigned char magic[10];
  void *data = NULL;
  char *header = NULL;
  if (fread(magic, 1, 8, f) != 8 || memcmp(magic, "\x93NUMPY", 6)) {
    bad(path, "not a .npy file");
    goto done;
  }
  size_t header_len;
  if (magic[6] == 1) {
    if (fread(magic + 8, 1, 2, f) != 2)
      goto truncated;
    header_len = magic[8] | (size_t)magic[9] << 8;
  } else {
    unsigned char len[4];
    if (fread(len, 1, 4, f) != 4)
      goto truncated;
    header_len = len[0] | (size_t)len[1] << 8 | (size_t)len[2] << 16 |
                 (size_t)len[3] << 24;
  }
  header = calloc(header_len + 1, 1);
  if (!header || fread(header, 1, header_len, f) != header_len)
    goto truncated;
  char *descr = strstr(header, "'descr':");
  char *order = strstr(header, "'fortran_order':");
  char *shape_at = strstr(header, "'shape':");
  if (!descr || !order || !shape_at) {
    bad(path, "malformed .npy header");
    goto done;
  }
  descr = strchr(descr + 8, '\'');
  if (!descr || strncmp(descr + 1, dtype, 3) || descr[4] != '\'') {
    fprintf(stderr, "error: %s: dtype is not '%s'\n", path, dtype);
    goto done;
  }
  if (strncmp(order + 16, " False", 6) && strncmp(order + 16, "False", 5)) {
    bad(path, "Fortran-order arrays are not supported");
    goto done;
  }
  char *p = strchr(shape_at, '(');
  int64_t found = 0;
  while (p && *++p && *p != ')') {
    char *end;
    long long d = strtoll(p, &end, 10);
    if (end == p)
      break;
    if (found < rank)
      shape[found] = d;
    ++found;
    p = strchr(end, ',');
    if (!p)
      break;
  }
  if (found != rank) {
    fprintf(stderr, "error: %s: rank %lld, the entry expects %lld\n", path,
            (long long)found, (long long)rank);
    goto done;
  }
  int64_t count = num_elements(rank, shape);
  if (count < 0) {
    bad(path, "the shape is too large");
    goto done;
  }
  size_t bytes = (size_t)(count * element_size(dtype));
  data = malloc(bytes ? bytes : 1);
  if (data && fread(data, 1, bytes, f) != bytes) {
    free(data);
    data = NULL;
    goto truncated;
  }
  goto done;
truncated:
  bad(path, "truncated .npy file");
done:
  free(header);
  fclose(f);
  return data;
}

static int write_npy(const char *path, const char *dtype, int64_t rank,
                     const int64_t *shape, const void *data) {
  char header[256];
  int n = snprintf(header, sizeof header,
                   "{'descr': '%s', 'fortran_order': False, 'shape': (", dtype);
  for (int64_t d = 0; d < rank; ++d)
    n += snprintf(header + n, sizeof header - n, "%lld%s", (long long)shape[d],
                  rank == 1 || d + 1 < rank ? ", " : "");
  n += snprintf(header + n, sizeof header - n, "), }");
  /* Pad with spaces to a multiple of 64 bytes, newline last. */
  int total = (10 + n + 1 + 63) / 64 * 64;
  while (10 + n + 1 < total)
    header[n++] = ' ';
  header[n++] = '\n';
  FILE *f = fopen(path, "wb");
  if (!f)
    return bad(path, strerror(errno));
  unsigned char magic[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                             (unsigned char)(n & 0xff), (unsigned char)(n >> 8)};
  size_t bytes = (size_t)(num_elements(rank, shape) * element_size(dtype));
  int ok = fwrite(magic, 1, 10, f) == 10 && fwrite(header, 1, n, f) == (size_t)n &&
           fwrite(data, 1, bytes, f) == bytes;
  if (fclose(f) || !ok)
    return bad(path, "could not be written");
  return 0;
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int compare_doubles(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  const struct mha_aot_signature *sig = &MHA_AOT_SIGNATURE;
#if defined(__GLIBC__)
  /* The compiled code allocates its buffers on every call: keep freed
     memory in the process rather than unmapping it (as mha-run does). */
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, INT_MAX);
#endif
  const char *in_paths[64], *out_paths[64];
  int num_in = 0, num_out = 0;
  long benchmark = 0;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "-o") && i + 1 < argc && num_out < 64) {
      out_paths[num_out++] = argv[++i];
    } else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
      /* The CPU code's OpenMP runtime reads it at its first parallel loop. */
      setenv("OMP_NUM_THREADS", argv[++i], 1);
    } else if (!strcmp(argv[i], "--benchmark") && i + 1 < argc) {
      benchmark = strtol(argv[++i], NULL, 10);
    } else if (argv[i][0] == '-' && argv[i][1]) {
      fprintf(stderr,
              "usage: %s [--threads N] [--benchmark N] [-o OUT.npy]... "
              "IN.npy...\n",
              argv[0]);
      return 2;
    } else if (num_in < 64) {
      in_paths[num_in++] = argv[i];
    }
  }
  if (num_in != sig->num_inputs) {
    fprintf(stderr, "error: @%s takes %lld argument(s), %d .npy file(s) given\n",
            sig->entry, (long long)sig->num_inputs, num_in);
    return 2;
  }
  if (num_out && num_out != sig->num_outputs) {
    fprintf(stderr, "error: @%s returns %lld result(s), %d -o given\n",
            sig->entry, (long long)sig->num_outputs, num_out);
    return 2;
  }

  void *inputs[64], *outputs[64];
  int64_t in_shapes[64][16], out_shapes[64][16];
  const int64_t *in_shape_ptrs[64];
  int64_t *out_shape_ptrs[64];
  for (int i = 0; i < num_in; ++i) {
    const struct mha_aot_array_info *info = &sig->inputs[i];
    inputs[i] = read_npy(in_paths[i], info->dtype, info->rank, in_shapes[i]);
    if (!inputs[i])
      return 2;
    in_shape_ptrs[i] = in_shapes[i];
  }
  for (int j = 0; j < sig->num_outputs; ++j)
    out_shape_ptrs[j] = out_shapes[j];

  int status = MHA_AOT_RUN(inputs, in_shape_ptrs, outputs, out_shape_ptrs);
  if (status) {
    fprintf(stderr, "error: @%s refused its arguments (status %d: %s)\n",
            sig->entry, status,
            status == 2 ? "an argument's shape differs from the signature's"
                        : "see the header");
    return 4;
  }
  for (int j = 0; j < sig->num_outputs; ++j) {
    const struct mha_aot_array_info *info = &sig->outputs[j];
    if (num_out) {
      if (write_npy(out_paths[j], info->dtype, info->rank, out_shapes[j],
                    outputs[j]))
        return 2;
      printf("result %d written to %s\n", j, out_paths[j]);
    } else {
      printf("result %d: %s [", j, info->dtype);
      for (int64_t d = 0; d < info->rank; ++d)
        printf("%s%lld", d ? ", " : "", (long long)out_shapes[j][d]);
      printf("]\n");
    }
    free(outputs[j]);
  }

  if (benchmark > 0) {
    double *ms = malloc(sizeof(double) * benchmark);
    for (long r = -1; r < benchmark; ++r) { /* r = -1: warm-up */
      double start = now_ms();
      MHA_AOT_RUN(inputs, in_shape_ptrs, outputs, out_shape_ptrs);
      if (r >= 0)
        ms[r] = now_ms() - start;
      for (int j = 0; j < sig->num_outputs; ++j)
        free(outputs[j]);
    }
    qsort(ms, benchmark, sizeof(double), compare_doubles);
    double median = benchmark % 2 ? ms[benchmark / 2]
                                  : (ms[benchmark / 2 - 1] + ms[benchmark / 2]) / 2;
    printf("benchmark: %ld calls, median %.3f ms, min %.3f ms, max %.3f ms\n",
           benchmark, median, ms[0], ms[benchmark - 1]);
    free(ms);
  }
  for (int i = 0; i < num_in; ++i)
    free(inputs[i]);
  return 0;
}
