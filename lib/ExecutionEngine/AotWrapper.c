/*===- AotWrapper.c - the C entry points of mha-aot's outputs ----*- C -*-===*
 *
 * What `NAME` and `NAME_run` of every header mha-aot writes do, once for all
 * entries: from the signature table alone (AotSignature.h) it builds the
 * memref descriptors of the compiled function's C interface at run time,
 * calls it, copies each result dense (RunnerSupport's mha_copy_strided) and
 * frees what the compiled code allocated. mha-aot compiles this source into
 * every shared object and executable it writes, beside a generated table and
 * a stub per entry; it also defines `memrefCopy` there.
 *
 * A descriptor of rank r, as MLIR's LLVM lowering lays it out on a 64-bit
 * target, is 3 + 2r words: the allocated and aligned pointers, the offset,
 * r sizes, r strides (in elements). The C interface takes a pointer to the
 * results' descriptors, one after the other, when there are results, then a
 * pointer to each argument's.
 *
 *===---------------------------------------------------------------------===*/

#include "mha/ExecutionEngine/AotSignature.h"
#include "mha/ExecutionEngine/RunnerSupport.h"

#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(void *) == sizeof(int64_t),
               "memref descriptors of 64-bit targets: a pointer is one word");

/* The longest descriptor and the most of them one call needs. */
#define MAX_DESCRIPTOR_WORDS (3 + 2 * MHA_AOT_MAX_RANK)
#define MAX_CIFACE_ARGS (MHA_AOT_MAX_ARRAYS + 1)
_Static_assert(MAX_CIFACE_ARGS == 65,
               "call_ciface has a case per arity up to 65");

static int64_t descriptor_words(int64_t rank) { return 3 + 2 * rank; }

/* The pointer fields of a descriptor, through memcpy: its words are int64_t. */
static void set_pointer(int64_t *word, void *pointer) {
  memcpy(word, &pointer, sizeof pointer);
}
static void *get_pointer(const int64_t *word) {
  void *pointer;
  memcpy(&pointer, word, sizeof pointer);
  return pointer;
}

/* "<f4" -> 4; 0 for a dtype RunnerSupport does not know. */
static int64_t element_bytes(const struct mha_aot_array_info *info) {
  return info->dtype && info->dtype[0] ? mha_dtype_size(info->dtype + 1) : 0;
}

static int arrays_within_limits(int64_t n,
                                const struct mha_aot_array_info *arrays) {
  if (n < 0 || n > MHA_AOT_MAX_ARRAYS || (n && !arrays))
    return 0;
  for (int64_t i = 0; i < n; ++i)
    if (arrays[i].rank < 0 || arrays[i].rank > MHA_AOT_MAX_RANK ||
        (arrays[i].rank && !arrays[i].shape) || !element_bytes(&arrays[i]))
      return 0;
  return 1;
}

static int signature_within_limits(const struct mha_aot_signature *sig) {
  return sig && arrays_within_limits(sig->num_inputs, sig->inputs) &&
         arrays_within_limits(sig->num_outputs, sig->outputs);
}

/* Calls `ciface` with the `n` pointers `a` through its own type, one `case`
   per arity (MHA_Pn lists n parameter types, MHA_An the arguments a[0] ..
   a[n - 1]); 0 when n is beyond MAX_CIFACE_ARGS, which a signature within
   the limits never makes it. */
#define MHA_P1 void *
#define MHA_A1 a[0]
#define MHA_P2 MHA_P1, void *
#define MHA_A2 MHA_A1, a[1]
#define MHA_P3 MHA_P2, void *
#define MHA_A3 MHA_A2, a[2]
#define MHA_P4 MHA_P3, void *
#define MHA_A4 MHA_A3, a[3]
#define MHA_P5 MHA_P4, void *
#define MHA_A5 MHA_A4, a[4]
#define MHA_P6 MHA_P5, void *
#define MHA_A6 MHA_A5, a[5]
#define MHA_P7 MHA_P6, void *
#define MHA_A7 MHA_A6, a[6]
#define MHA_P8 MHA_P7, void *
#define MHA_A8 MHA_A7, a[7]
#define MHA_P9 MHA_P8, void *
#define MHA_A9 MHA_A8, a[8]
#define MHA_P10 MHA_P9, void *
#define MHA_A10 MHA_A9, a[9]
#define MHA_P11 MHA_P10, void *
#define MHA_A11 MHA_A10, a[10]
#define MHA_P12 MHA_P11, void *
#define MHA_A12 MHA_A11, a[11]
#define MHA_P13 MHA_P12, void *
#define MHA_A13 MHA_A12, a[12]
#define MHA_P14 MHA_P13, void *
#define MHA_A14 MHA_A13, a[13]
#define MHA_P15 MHA_P14, void *
#define MHA_A15 MHA_A14, a[14]
#define MHA_P16 MHA_P15, void *
#define MHA_A16 MHA_A15, a[15]
#define MHA_P17 MHA_P16, void *
#define MHA_A17 MHA_A16, a[16]
#define MHA_P18 MHA_P17, void *
#define MHA_A18 MHA_A17, a[17]
#define MHA_P19 MHA_P18, void *
#define MHA_A19 MHA_A18, a[18]
#define MHA_P20 MHA_P19, void *
#define MHA_A20 MHA_A19, a[19]
#define MHA_P21 MHA_P20, void *
#define MHA_A21 MHA_A20, a[20]
#define MHA_P22 MHA_P21, void *
#define MHA_A22 MHA_A21, a[21]
#define MHA_P23 MHA_P22, void *
#define MHA_A23 MHA_A22, a[22]
#define MHA_P24 MHA_P23, void *
#define MHA_A24 MHA_A23, a[23]
#define MHA_P25 MHA_P24, void *
#define MHA_A25 MHA_A24, a[24]
#define MHA_P26 MHA_P25, void *
#define MHA_A26 MHA_A25, a[25]
#define MHA_P27 MHA_P26, void *
#define MHA_A27 MHA_A26, a[26]
#define MHA_P28 MHA_P27, void *
#define MHA_A28 MHA_A27, a[27]
#define MHA_P29 MHA_P28, void *
#define MHA_A29 MHA_A28, a[28]
#define MHA_P30 MHA_P29, void *
#define MHA_A30 MHA_A29, a[29]
#define MHA_P31 MHA_P30, void *
#define MHA_A31 MHA_A30, a[30]
#define MHA_P32 MHA_P31, void *
#define MHA_A32 MHA_A31, a[31]
#define MHA_P33 MHA_P32, void *
#define MHA_A33 MHA_A32, a[32]
#define MHA_P34 MHA_P33, void *
#define MHA_A34 MHA_A33, a[33]
#define MHA_P35 MHA_P34, void *
#define MHA_A35 MHA_A34, a[34]
#define MHA_P36 MHA_P35, void *
#define MHA_A36 MHA_A35, a[35]
#define MHA_P37 MHA_P36, void *
#define MHA_A37 MHA_A36, a[36]
#define MHA_P38 MHA_P37, void *
#define MHA_A38 MHA_A37, a[37]
#define MHA_P39 MHA_P38, void *
#define MHA_A39 MHA_A38, a[38]
#define MHA_P40 MHA_P39, void *
#define MHA_A40 MHA_A39, a[39]
#define MHA_P41 MHA_P40, void *
#define MHA_A41 MHA_A40, a[40]
#define MHA_P42 MHA_P41, void *
#define MHA_A42 MHA_A41, a[41]
#define MHA_P43 MHA_P42, void *
#define MHA_A43 MHA_A42, a[42]
#define MHA_P44 MHA_P43, void *
#define MHA_A44 MHA_A43, a[43]
#define MHA_P45 MHA_P44, void *
#define MHA_A45 MHA_A44, a[44]
#define MHA_P46 MHA_P45, void *
#define MHA_A46 MHA_A45, a[45]
#define MHA_P47 MHA_P46, void *
#define MHA_A47 MHA_A46, a[46]
#define MHA_P48 MHA_P47, void *
#define MHA_A48 MHA_A47, a[47]
#define MHA_P49 MHA_P48, void *
#define MHA_A49 MHA_A48, a[48]
#define MHA_P50 MHA_P49, void *
#define MHA_A50 MHA_A49, a[49]
#define MHA_P51 MHA_P50, void *
#define MHA_A51 MHA_A50, a[50]
#define MHA_P52 MHA_P51, void *
#define MHA_A52 MHA_A51, a[51]
#define MHA_P53 MHA_P52, void *
#define MHA_A53 MHA_A52, a[52]
#define MHA_P54 MHA_P53, void *
#define MHA_A54 MHA_A53, a[53]
#define MHA_P55 MHA_P54, void *
#define MHA_A55 MHA_A54, a[54]
#define MHA_P56 MHA_P55, void *
#define MHA_A56 MHA_A55, a[55]
#define MHA_P57 MHA_P56, void *
#define MHA_A57 MHA_A56, a[56]
#define MHA_P58 MHA_P57, void *
#define MHA_A58 MHA_A57, a[57]
#define MHA_P59 MHA_P58, void *
#define MHA_A59 MHA_A58, a[58]
#define MHA_P60 MHA_P59, void *
#define MHA_A60 MHA_A59, a[59]
#define MHA_P61 MHA_P60, void *
#define MHA_A61 MHA_A60, a[60]
#define MHA_P62 MHA_P61, void *
#define MHA_A62 MHA_A61, a[61]
#define MHA_P63 MHA_P62, void *
#define MHA_A63 MHA_A62, a[62]
#define MHA_P64 MHA_P63, void *
#define MHA_A64 MHA_A63, a[63]
#define MHA_P65 MHA_P64, void *
#define MHA_A65 MHA_A64, a[64]
#define MHA_CASE(n)                                                            \
  case n:                                                                      \
    ((void (*)(MHA_P##n))ciface)(MHA_A##n);                                    \
    return 1;

static int call_ciface(mha_aot_ciface ciface, int64_t n, void *const a[]) {
  switch (n) {
  case 0:
    ciface();
    return 1;
  MHA_CASE(1) MHA_CASE(2) MHA_CASE(3) MHA_CASE(4) MHA_CASE(5)
  MHA_CASE(6) MHA_CASE(7) MHA_CASE(8) MHA_CASE(9) MHA_CASE(10)
  MHA_CASE(11) MHA_CASE(12) MHA_CASE(13) MHA_CASE(14) MHA_CASE(15)
  MHA_CASE(16) MHA_CASE(17) MHA_CASE(18) MHA_CASE(19) MHA_CASE(20)
  MHA_CASE(21) MHA_CASE(22) MHA_CASE(23) MHA_CASE(24) MHA_CASE(25)
  MHA_CASE(26) MHA_CASE(27) MHA_CASE(28) MHA_CASE(29) MHA_CASE(30)
  MHA_CASE(31) MHA_CASE(32) MHA_CASE(33) MHA_CASE(34) MHA_CASE(35)
  MHA_CASE(36) MHA_CASE(37) MHA_CASE(38) MHA_CASE(39) MHA_CASE(40)
  MHA_CASE(41) MHA_CASE(42) MHA_CASE(43) MHA_CASE(44) MHA_CASE(45)
  MHA_CASE(46) MHA_CASE(47) MHA_CASE(48) MHA_CASE(49) MHA_CASE(50)
  MHA_CASE(51) MHA_CASE(52) MHA_CASE(53) MHA_CASE(54) MHA_CASE(55)
  MHA_CASE(56) MHA_CASE(57) MHA_CASE(58) MHA_CASE(59) MHA_CASE(60)
  MHA_CASE(61) MHA_CASE(62) MHA_CASE(63) MHA_CASE(64) MHA_CASE(65)
  default:
    return 0;
  }
}

struct mha_aot_prepared {
  int64_t count;
  int64_t ranks[MHA_AOT_MAX_ARRAYS];
  /* Whether each value's buffer is the compiled code's allocation. */
  int owned[MHA_AOT_MAX_ARRAYS];
  /* The descriptors, one after the other. */
  int64_t words[];
};

/* Whether `allocated` is memory the compiled code malloc'd for a result:
   not an argument, not a prepared value, not a constant (MLIR marks those
   0xdeadbeef), not a buffer an earlier result already owns. */
static int owns(void *allocated, void *const inputs[], int64_t num_inputs,
                const struct mha_aot_prepared *prepared,
                void *const earlier[], int64_t num_earlier) {
  if (!allocated || allocated == (void *)0xdeadbeef)
    return 0;
  for (int64_t i = 0; i < num_inputs; ++i)
    if (inputs[i] == allocated)
      return 0;
  const int64_t *d = prepared ? prepared->words : NULL;
  for (int64_t i = 0; prepared && i < prepared->count; ++i) {
    if (get_pointer(&d[0]) == allocated)
      return 0;
    d += descriptor_words(prepared->ranks[i]);
  }
  for (int64_t j = 0; j < num_earlier; ++j)
    if (earlier[j] == allocated)
      return 0;
  return 1;
}

/* Writes at `d` the descriptor of the dense row-major array `data` of rank
   `rank` and shape `shape`; returns where the next one goes. */
static int64_t *dense_descriptor(int64_t *d, void *data, int64_t rank,
                                 const int64_t *shape) {
  set_pointer(&d[0], data);
  set_pointer(&d[1], data);
  d[2] = 0;
  for (int64_t k = rank - 1, stride = 1; k >= 0; --k) {
    d[3 + k] = shape[k];
    d[3 + rank + k] = stride;
    stride *= shape[k];
  }
  return d + descriptor_words(rank);
}

/* Whether the static sizes of `shape` are those of `info`. */
static int matches(const struct mha_aot_array_info *info,
                   const int64_t *shape) {
  for (int64_t d = 0; d < info->rank; ++d)
    if (info->shape[d] >= 0 && shape[d] != info->shape[d])
      return 0;
  return 1;
}

/* Calls `ciface` on the prepared values (if any), then the dense row-major
   arrays `inputs[i]` of shapes `input_shapes[i]` (checked against the
   signature's static sizes); `words` receives the `num_results` results'
   descriptors (of ranks `result_ranks`), one after the other. */
static int invoke(const struct mha_aot_signature *sig, mha_aot_ciface ciface,
                  const struct mha_aot_prepared *prepared, int64_t num_results,
                  const int64_t result_ranks[], void *const inputs[],
                  const int64_t *const input_shapes[], int64_t *words) {
  if (!signature_within_limits(sig))
    return MHA_AOT_BAD_SIGNATURE;
  for (int64_t i = 0; i < sig->num_inputs; ++i)
    if (!matches(&sig->inputs[i], input_shapes[i]))
      return MHA_AOT_ARGUMENT_SHAPE;

  /* The results' descriptors first (the callee writes them), then the
     prepared values', then the arguments', dense row-major over the
     callers' arrays. */
  void *args[MAX_CIFACE_ARGS];
  int64_t num_args = 0, *next = words;
  int64_t num_prepared = prepared ? prepared->count : 0;
  if (1 + num_prepared + sig->num_inputs > MAX_CIFACE_ARGS)
    return MHA_AOT_BAD_SIGNATURE;
  if (num_results)
    args[num_args++] = words;
  for (int64_t j = 0; j < num_results; ++j)
    next += descriptor_words(result_ranks[j]);
  const int64_t *value = prepared ? prepared->words : NULL;
  for (int64_t i = 0; i < num_prepared; ++i) {
    args[num_args++] = (void *)value;
    value += descriptor_words(prepared->ranks[i]);
  }
  for (int64_t i = 0; i < sig->num_inputs; ++i) {
    args[num_args++] = next;
    next =
        dense_descriptor(next, inputs[i], sig->inputs[i].rank, input_shapes[i]);
  }
  if (!call_ciface(ciface, num_args, args))
    return MHA_AOT_BAD_SIGNATURE;
  return MHA_AOT_OK;
}

/* The ranks of `sig`'s results. */
static const int64_t *output_ranks(const struct mha_aot_signature *sig,
                                   int64_t ranks[]) {
  for (int64_t j = 0; j < sig->num_outputs; ++j)
    ranks[j] = sig->outputs[j].rank;
  return ranks;
}

/* Frees the results' buffers that the compiled code allocated, after every
   result was copied (two results may be views of one allocation). */
static void free_owned(const struct mha_aot_signature *sig,
                       void *const inputs[],
                       const struct mha_aot_prepared *prepared,
                       const int64_t *words) {
  void *owned[MHA_AOT_MAX_ARRAYS];
  for (int64_t j = 0; j < sig->num_outputs; ++j) {
    owned[j] = get_pointer(&words[0]);
    words += descriptor_words(sig->outputs[j].rank);
  }
  for (int64_t j = 0; j < sig->num_outputs; ++j)
    if (owns(owned[j], inputs, sig->num_inputs, prepared, owned, j))
      free(owned[j]);
}

/* The shapes of `sig`'s inputs: the signature's static sizes, the next of
   `dims` for each dynamic one. Returns where `dims` goes on (the results'
   dynamic sizes). */
static const int64_t *
input_shapes_from(const struct mha_aot_signature *sig, const int64_t dims[],
                  int64_t shapes[][MHA_AOT_MAX_RANK], const int64_t *ptrs[]) {
  const int64_t *next_dim = dims;
  for (int64_t i = 0; i < sig->num_inputs; ++i) {
    for (int64_t d = 0; d < sig->inputs[i].rank; ++d)
      shapes[i][d] = sig->inputs[i].shape[d] >= 0 ? sig->inputs[i].shape[d]
                                                   : *next_dim++;
    ptrs[i] = shapes[i];
  }
  return next_dim;
}

/* The first element of the result `d` describes. */
static const char *result_data(const int64_t *d, int64_t bytes) {
  return (const char *)get_pointer(&d[1]) + d[2] * bytes;
}

/* Whether the result `d` of rank `rank` is dense row-major. */
static int is_dense(const int64_t *d, int64_t rank) {
  for (int64_t k = rank - 1, stride = 1; k >= 0; --k) {
    if (d[3 + k] != 1 && d[3 + rank + k] != stride)
      return 0;
    stride *= d[3 + k];
  }
  return 1;
}

int mha_aot_run(const struct mha_aot_signature *sig, mha_aot_ciface ciface,
                void *const inputs[], const int64_t *const input_shapes[],
                void *outputs[], int64_t *const output_shapes[]) {
  int64_t words[2 * MHA_AOT_MAX_ARRAYS * MAX_DESCRIPTOR_WORDS];
  int64_t ranks[MHA_AOT_MAX_ARRAYS];
  if (!signature_within_limits(sig))
    return MHA_AOT_BAD_SIGNATURE;
  int status = invoke(sig, ciface, NULL, sig->num_outputs,
                      output_ranks(sig, ranks), inputs, input_shapes, words);
  if (status)
    return status;
  const int64_t *result = words;
  for (int64_t j = 0; j < sig->num_outputs; ++j) {
    int64_t rank = sig->outputs[j].rank;
    int64_t bytes = element_bytes(&sig->outputs[j]), n = 1;
    for (int64_t d = 0; d < rank; ++d) {
      output_shapes[j][d] = result[3 + d];
      n *= result[3 + d];
    }
    outputs[j] = malloc((size_t)(n ? n * bytes : 1));
    mha_copy_strided(outputs[j], result_data(result, bytes), bytes, rank,
                     &result[3], &result[3 + rank], NULL);
    result += descriptor_words(rank);
  }
  free_owned(sig, inputs, NULL, words);
  return MHA_AOT_OK;
}

/* mha_aot_call and mha_aot_call_prepared. */
static int call(const struct mha_aot_signature *sig, mha_aot_ciface ciface,
                const struct mha_aot_prepared *prepared, void *const inputs[],
                void *const results[], const int64_t dims[]) {
  if (!signature_within_limits(sig))
    return MHA_AOT_BAD_SIGNATURE;
  int64_t input_shapes[MHA_AOT_MAX_ARRAYS][MHA_AOT_MAX_RANK];
  const int64_t *input_shape_ptrs[MHA_AOT_MAX_ARRAYS];
  const int64_t *next_dim =
      input_shapes_from(sig, dims, input_shapes, input_shape_ptrs);
  int64_t words[2 * MHA_AOT_MAX_ARRAYS * MAX_DESCRIPTOR_WORDS];
  int64_t ranks[MHA_AOT_MAX_ARRAYS];
  int status = invoke(sig, ciface, prepared, sig->num_outputs,
                      output_ranks(sig, ranks), inputs, input_shape_ptrs,
                      words);
  if (status)
    return status;
  const int64_t *result = words;
  for (int64_t j = 0; j < sig->num_outputs; ++j) {
    for (int64_t d = 0; d < sig->outputs[j].rank; ++d) {
      int64_t want = sig->outputs[j].shape[d] >= 0 ? sig->outputs[j].shape[d]
                                                    : *next_dim++;
      if (result[3 + d] != want)
        status = MHA_AOT_RESULT_SHAPE;
    }
    result += descriptor_words(sig->outputs[j].rank);
  }
  /* Each result copied straight into the caller's array; not at all where
     it already is there: an argument the function updated in place (a KV
     cache), passed as both that argument and this result. */
  result = words;
  for (int64_t j = 0; status == MHA_AOT_OK && j < sig->num_outputs; ++j) {
    int64_t rank = sig->outputs[j].rank;
    int64_t bytes = element_bytes(&sig->outputs[j]);
    const char *data = result_data(result, bytes);
    if (data != results[j] || !is_dense(result, rank))
      mha_copy_strided(results[j], data, bytes, rank, &result[3],
                       &result[3 + rank], NULL);
    result += descriptor_words(rank);
  }
  free_owned(sig, inputs, prepared, words);
  return status;
}

int mha_aot_call(const struct mha_aot_signature *sig, mha_aot_ciface ciface,
                 void *const inputs[], void *const results[],
                 const int64_t dims[]) {
  return call(sig, ciface, NULL, inputs, results, dims);
}

int mha_aot_call_prepared(const struct mha_aot_signature *sig,
                          mha_aot_ciface ciface,
                          const struct mha_aot_prepared *prepared,
                          void *const inputs[], void *const results[],
                          const int64_t dims[]) {
  if (!prepared)
    return MHA_AOT_BAD_SIGNATURE;
  return call(sig, ciface, prepared, inputs, results, dims);
}

int mha_aot_prepare(const struct mha_aot_signature *sig, mha_aot_ciface ciface,
                    int64_t num_prepared, const int64_t ranks[],
                    void *const weights[], const int64_t dims[],
                    struct mha_aot_prepared **prepared) {
  *prepared = NULL;
  if (!signature_within_limits(sig) || sig->num_outputs ||
      num_prepared < 0 || num_prepared > MHA_AOT_MAX_ARRAYS ||
      (num_prepared && !ranks))
    return MHA_AOT_BAD_SIGNATURE;
  int64_t num_words = 0;
  for (int64_t j = 0; j < num_prepared; ++j) {
    if (ranks[j] < 0 || ranks[j] > MHA_AOT_MAX_RANK)
      return MHA_AOT_BAD_SIGNATURE;
    num_words += descriptor_words(ranks[j]);
  }
  int64_t input_shapes[MHA_AOT_MAX_ARRAYS][MHA_AOT_MAX_RANK];
  const int64_t *input_shape_ptrs[MHA_AOT_MAX_ARRAYS];
  input_shapes_from(sig, dims, input_shapes, input_shape_ptrs);
  int64_t words[2 * MHA_AOT_MAX_ARRAYS * MAX_DESCRIPTOR_WORDS];
  int status = invoke(sig, ciface, NULL, num_prepared, ranks, weights,
                      input_shape_ptrs, words);
  if (status)
    return status;
  struct mha_aot_prepared *p =
      malloc(sizeof *p + (size_t)num_words * sizeof(int64_t));
  if (!p)
    abort();
  p->count = num_prepared;
  memcpy(p->words, words, (size_t)num_words * sizeof(int64_t));
  void *allocated[MHA_AOT_MAX_ARRAYS];
  const int64_t *d = p->words;
  for (int64_t j = 0; j < num_prepared; ++j) {
    p->ranks[j] = ranks[j];
    allocated[j] = get_pointer(&d[0]);
    p->owned[j] =
        owns(allocated[j], weights, sig->num_inputs, NULL, allocated, j);
    d += descriptor_words(ranks[j]);
  }
  *prepared = p;
  return MHA_AOT_OK;
}

void mha_aot_release(struct mha_aot_prepared *prepared) {
  if (!prepared)
    return;
  const int64_t *d = prepared->words;
  for (int64_t j = 0; j < prepared->count; ++j) {
    if (prepared->owned[j])
      free(get_pointer(&d[0]));
    d += descriptor_words(prepared->ranks[j]);
  }
  free(prepared);
}

int mha_aot_run_device(const struct mha_aot_signature *sig,
                       mha_aot_ciface ciface, const int64_t updates[],
                       void *const inputs[],
                       const int64_t *const input_shapes[],
                       void *const outputs[],
                       const int64_t *const output_shapes[]) {
  if (!signature_within_limits(sig))
    return MHA_AOT_BAD_SIGNATURE;
  for (int64_t i = 0; i < sig->num_inputs; ++i)
    if (!matches(&sig->inputs[i], input_shapes[i]))
      return MHA_AOT_ARGUMENT_SHAPE;
  for (int64_t j = 0; j < sig->num_outputs; ++j)
    if (updates[j] < 0 && !matches(&sig->outputs[j], output_shapes[j]))
      return MHA_AOT_RESULT_SHAPE;
  /* One descriptor per argument, then one per result written into a
     buffer of the caller (not those updating an argument in place). */
  void *args[MAX_CIFACE_ARGS];
  int64_t words[2 * MHA_AOT_MAX_ARRAYS * MAX_DESCRIPTOR_WORDS];
  int64_t num_args = 0, *next = words;
  for (int64_t i = 0; i < sig->num_inputs; ++i) {
    args[num_args++] = next;
    next =
        dense_descriptor(next, inputs[i], sig->inputs[i].rank, input_shapes[i]);
  }
  for (int64_t j = 0; j < sig->num_outputs; ++j) {
    if (updates[j] >= 0)
      continue;
    if (num_args == MAX_CIFACE_ARGS)
      return MHA_AOT_BAD_SIGNATURE;
    args[num_args++] = next;
    next = dense_descriptor(next, outputs[j], sig->outputs[j].rank,
                            output_shapes[j]);
  }
  if (!call_ciface(ciface, num_args, args))
    return MHA_AOT_BAD_SIGNATURE;
  return MHA_AOT_OK;
}

int mha_aot_call_device(const struct mha_aot_signature *sig,
                        mha_aot_ciface ciface, const int64_t updates[],
                        void *const inputs[], void *const results[],
                        const int64_t dims[]) {
  if (!signature_within_limits(sig))
    return MHA_AOT_BAD_SIGNATURE;
  int64_t input_shapes[MHA_AOT_MAX_ARRAYS][MHA_AOT_MAX_RANK];
  const int64_t *input_shape_ptrs[MHA_AOT_MAX_ARRAYS];
  const int64_t *next_dim =
      input_shapes_from(sig, dims, input_shapes, input_shape_ptrs);
  int64_t output_shapes[MHA_AOT_MAX_ARRAYS][MHA_AOT_MAX_RANK];
  const int64_t *output_shape_ptrs[MHA_AOT_MAX_ARRAYS];
  for (int64_t j = 0; j < sig->num_outputs; ++j) {
    output_shape_ptrs[j] = output_shapes[j];
    if (updates[j] >= 0)
      continue;
    for (int64_t d = 0; d < sig->outputs[j].rank; ++d)
      output_shapes[j][d] = sig->outputs[j].shape[d] >= 0
                                ? sig->outputs[j].shape[d]
                                : *next_dim++;
  }
  return mha_aot_run_device(sig, ciface, updates, inputs, input_shape_ptrs,
                            results, output_shape_ptrs);
}

/* The copy that memref.copy between strided buffers lowers to, which MLIR's
   runner utilities (libmlir_c_runner_utils, not shipped) would provide. Its
   operands are unranked descriptors: a rank and a pointer to a ranked one.
   Hidden: the shared objects export only their entry points. */
struct unranked_memref {
  int64_t rank;
  const int64_t *descriptor;
};

__attribute__((visibility("hidden"))) void
memrefCopy(int64_t bytes, struct unranked_memref *src,
           struct unranked_memref *dst);

void memrefCopy(int64_t bytes, struct unranked_memref *src,
                struct unranked_memref *dst) {
  const int64_t *s = src->descriptor, *d = dst->descriptor;
  mha_copy_strided((char *)get_pointer(&d[1]) + d[2] * bytes,
                   (const char *)get_pointer(&s[1]) + s[2] * bytes, bytes,
                   src->rank, &s[3], &s[3 + src->rank], &d[3 + dst->rank]);
}
