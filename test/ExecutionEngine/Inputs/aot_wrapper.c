/* Drives AotWrapper.c (mha-aot's fixed wrapper) with hand-written signature
   tables and hand-written fakes of the compiled functions' C interfaces,
   whose descriptors are declared here as the C structs MLIR documents
   (allocated, aligned, offset, sizes[rank], strides[rank]). The fakes take
   `void *` parameters, the type the wrapper calls them through (as the
   compiled functions take LLVM's `ptr`). The wrapper is built with
   -Dfree=test_free and -Dmha_copy_strided=test_copy_strided: each buffer
   it frees and each array it copies a result into are printed by name. */
#include "mha/ExecutionEngine/AotSignature.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct memref0 {
  void *allocated, *aligned;
  int64_t offset;
};
struct memref1 {
  void *allocated, *aligned;
  int64_t offset, sizes[1], strides[1];
};
struct memref2 {
  void *allocated, *aligned;
  int64_t offset, sizes[2], strides[2];
};
struct memref3 {
  void *allocated, *aligned;
  int64_t offset, sizes[3], strides[3];
};

/* Pointers the output names. */
static const void *known[32];
static const char *known_names[32];
static int num_known;
static void name_pointer(const void *pointer, const char *name) {
  known[num_known] = pointer;
  known_names[num_known++] = name;
}
static const char *pointer_name(const void *pointer) {
  /* The latest name first: stack arrays of earlier tests are reused. */
  for (int i = num_known - 1; i >= 0; --i)
    if (known[i] == pointer)
      return known_names[i];
  return "a dense result of the wrapper";
}

static float *buffer_4x6; /* the compiled code's result buffer */

void test_free(void *pointer);
void test_free(void *pointer) {
  printf("free: %s\n", pointer_name(pointer));
  /* Scribbled over, so that a copy out of it after the free would show. */
  if (pointer == buffer_4x6)
    memset(buffer_4x6, 0xff, 28 * sizeof(float));
  free(pointer);
}

void test_copy_strided(void *dst, const void *src, int64_t elem_bytes,
                       int64_t rank, const int64_t *sizes,
                       const int64_t *src_strides, const int64_t *dst_strides);
void test_copy_strided(void *dst, const void *src, int64_t elem_bytes,
                       int64_t rank, const int64_t *sizes,
                       const int64_t *src_strides,
                       const int64_t *dst_strides) {
  printf("copy to %s\n", pointer_name(dst));
  mha_copy_strided(dst, src, elem_bytes, rank, sizes, src_strides,
                   dst_strides);
}

static void print_descriptor(const char *what, const void *words,
                             int64_t rank) {
  const struct memref0 *head = words;
  const int64_t *sizes = (const int64_t *)(head + 1);
  printf("%s: allocated %s, aligned %s, offset %lld, sizes [", what,
         pointer_name(head->allocated), pointer_name(head->aligned),
         (long long)head->offset);
  for (int64_t d = 0; d < rank; ++d)
    printf("%s%lld", d ? ", " : "", (long long)sizes[d]);
  printf("], strides [");
  for (int64_t d = 0; d < rank; ++d)
    printf("%s%lld", d ? ", " : "", (long long)sizes[rank + d]);
  printf("]\n");
}

static int calls;

/*===- "mixed": ranks 0, 1 and 3 in; a strided view, an argument, a
       constant and a second view of the first buffer out ----------------===*/

static const int64_t x1_shape[1] = {-1}, x2_shape[3] = {2, -1, 4};
static const int64_t r0_shape[2] = {2, 3}, r2_shape[1] = {-1},
                     r3_shape[1] = {-1};
static const struct mha_aot_array_info mixed_inputs[3] = {
    {"<f4", 0, NULL}, {"<f2", 1, x1_shape}, {"<f4", 3, x2_shape}};
static const struct mha_aot_array_info mixed_outputs[4] = {
    {"<f4", 2, r0_shape},
    {"<f4", 0, NULL},
    {"|b1", 1, r2_shape},
    {"<f4", 1, r3_shape}};
static const struct mha_aot_signature mixed = {"mixed", 3, mixed_inputs, 4,
                                               mixed_outputs};

struct mixed_results {
  struct memref2 r0;
  struct memref0 r1;
  struct memref1 r2;
  struct memref1 r3;
};
static unsigned char constant_bools[3] = {1, 0, 1};

static void mixed_ciface(void *results, void *arg0, void *arg1, void *arg2) {
  struct mixed_results *r = results;
  struct memref0 *x0 = arg0;
  struct memref3 *x2 = arg2;
  ++calls;
  print_descriptor("x0", x0, 0);
  print_descriptor("x1", arg1, 1);
  print_descriptor("x2", x2, 3);
  printf("x0 = %g, x2[1][4][3] = %g\n", *(float *)x0->aligned,
         ((float *)x2->aligned)[1 * x2->strides[0] + 4 * x2->strides[1] +
                                3 * x2->strides[2]]);
  /* A 4x6 buffer of 0..23 with 16 bytes before the data. */
  float *buffer = buffer_4x6 = malloc(28 * sizeof(float));
  name_pointer(buffer, "the 4x6 buffer");
  for (int i = 0; i < 24; ++i)
    buffer[4 + i] = (float)i;
  /* Rows 1 and 3, columns 2..4: 8 9 10 / 20 21 22. */
  r->r0 = (struct memref2){buffer, buffer + 4, 1 * 6 + 2, {2, 3}, {12, 1}};
  /* Argument 0 itself. */
  r->r1 = *x0;
  /* A constant: never freed. */
  r->r2 = (struct memref1){(void *)0xdeadbeef, constant_bools, 0, {3}, {1}};
  /* Column 5 of the same buffer: 5 11 17 23. */
  r->r3 = (struct memref1){buffer, buffer + 4, 5, {4}, {6}};
}

static void print_floats(const float *values, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    printf(" %g", values[i]);
  printf("\n");
}

static void test_mixed(void) {
  float x0 = 3.25f;
  uint16_t x1[5] = {0};
  float x2[2 * 5 * 4];
  for (int i = 0; i < 40; ++i)
    x2[i] = (float)i;
  name_pointer(&x0, "x0");
  name_pointer(x1, "x1");
  name_pointer(x2, "x2");

  printf("== mha_aot_run\n");
  void *inputs[3] = {&x0, x1, x2};
  int64_t x1_dims[1] = {5}, x2_dims[3] = {2, 5, 4};
  const int64_t *input_shapes[3] = {NULL, x1_dims, x2_dims};
  void *outputs[4];
  int64_t shapes[4][16];
  int64_t *output_shapes[4] = {shapes[0], shapes[1], shapes[2], shapes[3]};
  int status = mha_aot_run(&mixed, (mha_aot_ciface)mixed_ciface, inputs,
                           input_shapes, outputs, output_shapes);
  printf("status %d\n", status);
  printf("result 0 [%lld, %lld]:", (long long)shapes[0][0],
         (long long)shapes[0][1]);
  print_floats(outputs[0], 6);
  printf("result 1 []:");
  print_floats(outputs[1], 1);
  const unsigned char *bools = outputs[2];
  printf("result 2 [%lld]: %d %d %d\n", (long long)shapes[2][0], bools[0],
         bools[1], bools[2]);
  printf("result 3 [%lld]:", (long long)shapes[3][0]);
  print_floats(outputs[3], 4);
  for (int j = 0; j < 4; ++j)
    free(outputs[j]);

  /* A static size that differs from the signature's: nothing is called. */
  printf("== mha_aot_run, x2 of shape [3, 5, 4]\n");
  int64_t wrong[3] = {3, 5, 4};
  input_shapes[2] = wrong;
  calls = 0;
  status = mha_aot_run(&mixed, (mha_aot_ciface)mixed_ciface, inputs,
                       input_shapes, outputs, output_shapes);
  printf("status %d, %d call(s)\n", status, calls);

  /* The typed entry: the dynamic sizes of x1, x2, r2 and r3, in order. */
  printf("== mha_aot_call\n");
  float r0[6], r1 = 0, r3[4];
  unsigned char r2[3];
  name_pointer(r0, "r0");
  name_pointer(&r1, "r1");
  name_pointer(r2, "r2");
  name_pointer(r3, "r3");
  void *results[4] = {r0, &r1, r2, r3};
  int64_t dims[4] = {5, 5, 3, 4};
  status = mha_aot_call(&mixed, (mha_aot_ciface)mixed_ciface, inputs,
                        results, dims);
  printf("status %d\n", status);
  printf("r0:");
  print_floats(r0, 6);
  printf("r1: %g, r2: %d %d %d, r3:", r1, r2[0], r2[1], r2[2]);
  print_floats(r3, 4);

  /* r3 said to have 5 elements: nothing written. */
  printf("== mha_aot_call, r3 of shape [5]\n");
  memset(r0, 0, sizeof r0);
  dims[3] = 5;
  status = mha_aot_call(&mixed, (mha_aot_ciface)mixed_ciface, inputs,
                        results, dims);
  printf("status %d, r0[0] = %g\n", status, r0[0]);

  /* Result 1 is argument x0, passed as both: not copied. */
  printf("== mha_aot_call, r1 passed as x0\n");
  dims[3] = 4;
  results[1] = &x0;
  status = mha_aot_call(&mixed, (mha_aot_ciface)mixed_ciface, inputs,
                        results, dims);
  printf("status %d, x0 = %g\n", status, x0);
}

/*===- No results: the interface takes the argument's descriptor only -===*/

static const int64_t v_shape[1] = {3};
static const struct mha_aot_array_info v_input[1] = {{"<f4", 1, v_shape}};
static const struct mha_aot_signature no_results = {"no_results", 1, v_input,
                                                    0, NULL};

static void no_results_ciface(void *v) {
  print_descriptor("v", v, 1);
}

/*===- Nothing in or out ---------------------------------------------===*/

static const struct mha_aot_signature nothing = {"nothing", 0, NULL, 0, NULL};

static void nothing_ciface(void) { printf("nothing: called\n"); }

/*===- 64 arguments and a result: 65 pointers, the most there can be --===*/

#define PARAMS8(p)                                                             \
  void *p##0, void *p##1, void *p##2, void *p##3, void *p##4, void *p##5,      \
      void *p##6, void *p##7
#define ARGS8(p) p##0, p##1, p##2, p##3, p##4, p##5, p##6, p##7

static void wide_ciface(void *r, PARAMS8(a), PARAMS8(b),
                        PARAMS8(c), PARAMS8(d), PARAMS8(e), PARAMS8(f),
                        PARAMS8(g), PARAMS8(h)) {
  struct memref0 *x[64] = {ARGS8(a), ARGS8(b), ARGS8(c), ARGS8(d),
                           ARGS8(e), ARGS8(f), ARGS8(g), ARGS8(h)};
  /* Argument i holds the value i: each is weighed by its position. */
  float *sum = malloc(sizeof(float));
  name_pointer(sum, "the sum");
  *sum = 0;
  for (int i = 0; i < 64; ++i)
    *sum += (float)(i + 1) * *(float *)x[i]->aligned;
  *(struct memref0 *)r = (struct memref0){sum, sum, 0};
}

static void test_wide(void) {
  static struct mha_aot_array_info scalars[65];
  for (int i = 0; i < 65; ++i)
    scalars[i] = (struct mha_aot_array_info){"<f4", 0, NULL};
  struct mha_aot_signature wide = {"wide", 64, scalars, 1, scalars};
  float values[65];
  void *inputs[65];
  const int64_t *input_shapes[65] = {NULL};
  for (int i = 0; i < 65; ++i) {
    values[i] = (float)i;
    inputs[i] = &values[i];
  }
  float result = 0;
  name_pointer(&result, "result");
  void *results[1] = {&result};
  int status = mha_aot_call(&wide, (mha_aot_ciface)wide_ciface, inputs,
                            results, NULL);
  printf("wide: status %d, sum %g\n", status, result);

  /* One argument more is beyond the wrapper. */
  wide.num_inputs = 65;
  void *outputs[1];
  int64_t *output_shapes[1] = {NULL};
  status = mha_aot_run(&wide, (mha_aot_ciface)wide_ciface, inputs,
                       input_shapes, outputs, output_shapes);
  printf("65 arguments: status %d\n", status);
}

/*===- Signatures beyond the limits ----------------------------------===*/

static void test_bad(void) {
  static const int64_t shape17[17] = {1, 1, 1, 1, 1, 1, 1, 1, 1,
                                      1, 1, 1, 1, 1, 1, 1, 1};
  struct mha_aot_array_info rank17 = {"<f4", 17, shape17};
  struct mha_aot_array_info f8 = {"<f8", 0, NULL};
  struct mha_aot_signature bad_rank = {"bad", 1, &rank17, 0, NULL};
  struct mha_aot_signature bad_dtype = {"bad", 0, NULL, 1, &f8};
  printf("rank 17: status %d\n",
         mha_aot_call(&bad_rank, (mha_aot_ciface)nothing_ciface, NULL, NULL,
                      NULL));
  printf("<f8: status %d\n",
         mha_aot_call(&bad_dtype, (mha_aot_ciface)nothing_ciface, NULL, NULL,
                      NULL));
}

/*===- memrefCopy, hidden but linked into this program -----------------===*/

struct unranked {
  int64_t rank;
  void *descriptor;
};
void memrefCopy(int64_t bytes, struct unranked *src, struct unranked *dst);

static void test_memref_copy(void) {
  /* Rows 0 and 2, columns 1 and 2 of a 3x4 array of 0..11 (1 2 / 9 10),
     into a 2x2 buffer transposed (column-major: 1 9 2 10) from offset 1. */
  float src[12], dst[5] = {0};
  for (int i = 0; i < 12; ++i)
    src[i] = (float)i;
  struct memref2 s = {src, src, 1, {2, 2}, {8, 1}};
  struct memref2 d = {dst, dst, 1, {2, 2}, {1, 2}};
  struct unranked us = {2, &s}, ud = {2, &d};
  name_pointer(dst + 1, "dst + 1");
  memrefCopy(sizeof(float), &us, &ud);
  printf("memrefCopy:");
  print_floats(dst, 5);
}

int main(void) {
  test_mixed();
  printf("== no results\n");
  float v[3] = {1, 2, 3};
  name_pointer(v, "v");
  void *inputs[1] = {v};
  int64_t shape[1] = {3};
  const int64_t *shapes[1] = {shape};
  printf("status %d\n", mha_aot_run(&no_results,
                                    (mha_aot_ciface)no_results_ciface, inputs,
                                    shapes, NULL, NULL));
  printf("status %d\n",
         mha_aot_call(&nothing, nothing_ciface, NULL, NULL, NULL));
  printf("== limits\n");
  test_wide();
  test_bad();
  test_memref_copy();
  return 0;
}
