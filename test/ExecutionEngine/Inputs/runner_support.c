/*===- runner_support.c - RunnerSupport driven from the command line -----===*
 *
 *   runner_support copy IN.npy OUT.npy   read, print dtype and shape, write
 *   runner_support read FILE             read; prints the error, if any
 *   runner_support strided               the strided copies of the test
 *   runner_support stats MS...           median, minimum, maximum
 *   runner_support sizes                 element sizes and counts
 *
 * It prints what the library computes; the test holds the expected values.
 *
 *===---------------------------------------------------------------------===*/

#include "mha/ExecutionEngine/RunnerSupport.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void print_shape(const mha_array *a) {
  printf("%s (", a->dtype);
  for (int64_t d = 0; d < a->rank; ++d)
    printf("%s%lld", d ? ", " : "", (long long)a->shape[d]);
  printf(")\n");
}

static void print_ints(const char *what, const int32_t *v, int64_t n) {
  printf("%s:", what);
  for (int64_t i = 0; i < n; ++i)
    printf(" %d", v[i]);
  printf("\n");
}

static int strided(void) {
  int32_t src[24], dst[24];
  for (int i = 0; i < 24; ++i)
    src[i] = i;
  /* A 2x3 array read transposed: 3x2 with strides 1, 3. */
  int64_t t_sizes[] = {3, 2}, t_strides[] = {1, 3};
  mha_copy_strided(dst, src, 4, 2, t_sizes, t_strides, NULL);
  print_ints("transposed", dst, 6);
  /* A 2x3x4 array, every second row of its middle dimension, from column 1,
     dimensions permuted (2, 0, 1): 3x2x2 with strides 1, 12, 8, offset 1. */
  int64_t v_sizes[] = {3, 2, 2}, v_strides[] = {1, 12, 8};
  mha_copy_strided(dst, src + 1, 4, 3, v_sizes, v_strides, NULL);
  print_ints("view3d", dst, 12);
  /* A dense 2x3 source written transposed into a 3x2 destination. */
  int64_t d_sizes[] = {2, 3}, d_src[] = {3, 1}, d_dst[] = {1, 2};
  mha_copy_strided(dst, src, 4, 2, d_sizes, d_src, d_dst);
  print_ints("into-strided", dst, 6);
  /* Two-byte elements, contiguous rows. */
  uint16_t h_src[12], h_dst[6];
  for (int i = 0; i < 12; ++i)
    h_src[i] = (uint16_t)(100 + i);
  int64_t h_sizes[] = {2, 3}, h_strides[] = {6, 1};
  mha_copy_strided(h_dst, h_src + 2, 2, 2, h_sizes, h_strides, NULL);
  printf("rows:");
  for (int i = 0; i < 6; ++i)
    printf(" %d", h_dst[i]);
  printf("\n");
  /* Three-byte elements (no size of their own), a 2x2 array transposed. */
  char c_dst[13] = {0};
  int64_t c_sizes[] = {2, 2}, c_strides[] = {1, 2};
  mha_copy_strided(c_dst, "abcdefghijkl", 3, 2, c_sizes, c_strides, NULL);
  printf("bytes3: %s\n", c_dst);
  /* Rank 0 copies one element; an empty dimension copies nothing. */
  dst[0] = -1;
  mha_copy_strided(dst, src + 7, 4, 0, NULL, NULL, NULL);
  int64_t e_sizes[] = {2, 0}, e_strides[] = {1, 1};
  dst[1] = -1;
  mha_copy_strided(dst + 1, src, 4, 2, e_sizes, e_strides, NULL);
  print_ints("rank0-empty", dst, 2);
  return 0;
}

static int stats(int argc, char **argv) {
  double ms[16];
  int n = 0;
  for (int i = 0; i < argc && n < 16; ++i)
    ms[n++] = atof(argv[i]);
  mha_bench_stats s = mha_bench_summarize(ms, n);
  printf("calls %lld median %g min %g max %g sorted", (long long)s.calls,
         s.median_ms, s.min_ms, s.max_ms);
  for (int i = 0; i < n; ++i)
    printf(" %g", ms[i]);
  printf("\n");
  return 0;
}

static int sizes(void) {
  const char *codes[] = {"f4", "f2", "u2", "b1", "i4", "f8", "u1", ""};
  for (int i = 0; i < 8; ++i)
    printf("'%s' %lld\n", codes[i], (long long)mha_dtype_size(codes[i]));
  int64_t ok[] = {2, 3, 4}, empty[] = {5, 0, 7}, neg[] = {2, -1};
  int64_t big[] = {(int64_t)1 << 62, 2}, edge[] = {(int64_t)1 << 62, 1};
  printf("count %lld %lld %lld %lld %lld %lld\n",
         (long long)mha_num_elements(3, ok), (long long)mha_num_elements(3, empty),
         (long long)mha_num_elements(2, neg), (long long)mha_num_elements(2, big),
         (long long)mha_num_elements(2, edge), (long long)mha_num_elements(0, ok));
  double t0 = mha_now_ms(), t1 = mha_now_ms();
  printf("clock %s\n", t1 >= t0 && t0 > 0 ? "monotonic" : "BACKWARDS");
  mha_keep_freed_memory();
  return 0;
}

int main(int argc, char **argv) {
  char err[512];
  mha_array a;
  if (argc == 4 && !strcmp(argv[1], "copy")) {
    if (mha_npy_read(argv[2], &a, err, sizeof err)) {
      printf("error: %s\n", err);
      return 1;
    }
    print_shape(&a);
    int failed = mha_npy_write(argv[3], &a, err, sizeof err);
    free(a.data);
    if (failed)
      printf("error: %s\n", err);
    return failed;
  }
  if (argc == 3 && !strcmp(argv[1], "read")) {
    if (mha_npy_read(argv[2], &a, err, sizeof err)) {
      printf("error: %s\n", err);
      return 1;
    }
    print_shape(&a);
    free(a.data);
    return 0;
  }
  if (argc == 2 && !strcmp(argv[1], "strided"))
    return strided();
  if (argc >= 2 && !strcmp(argv[1], "stats"))
    return stats(argc - 2, argv + 2);
  if (argc == 2 && !strcmp(argv[1], "sizes"))
    return sizes();
  fprintf(stderr, "usage: see the file's header\n");
  return 2;
}
