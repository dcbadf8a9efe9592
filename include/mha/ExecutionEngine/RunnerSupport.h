/*===- RunnerSupport.h - what the runners share (C11) ------------*- C -*-===*
 *
 * The host side that mha-run and the executables mha-aot builds share:
 * .npy files, strided copies, benchmark statistics, and the allocator
 * setting both run the compiled code under. Plain C11 with no dependency,
 * because mha-aot compiles RunnerSupport.c's text into every executable and
 * shared object it writes (they must run without LLVM or MLIR); mha-run links
 * the same code as the MHARunnerSupport library.
 *
 * Errors: a function that can fail returns nonzero and writes what is wrong
 * into `err` (`err_size` bytes, truncated, always terminated); the message
 * does not name the file, so that each runner can say which argument it was.
 *
 *===---------------------------------------------------------------------===*/

#ifndef MHA_EXECUTIONENGINE_RUNNERSUPPORT_H
#define MHA_EXECUTIONENGINE_RUNNERSUPPORT_H

#include <stddef.h>
#include <stdint.h>

/* mha-aot defines it as hidden visibility: the shared objects it writes
   export only their entry points. */
#ifndef MHA_RUNNER_SUPPORT_API
#define MHA_RUNNER_SUPPORT_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* NumPy's own limit on the rank of an array (NPY_MAXDIMS). */
#define MHA_NPY_MAX_RANK 64

/* An n-d array in C order. `dtype` is its .npy descr: "<f4" float32, "<f2"
   float16, "<u2" the bits of bfloat16 (NumPy has none), "|b1" bool as one
   byte, "<i4" int32, "<i8" int64. `data` comes from malloc. */
typedef struct mha_array {
  char dtype[4];
  int64_t rank;
  int64_t shape[MHA_NPY_MAX_RANK];
  void *data;
} mha_array;

/* The size in bytes of one element of the type `code`, a descr without its
   byte-order character ("f4", "f2", "u2", "b1", "i4", "i8"); 0 if
   unsupported. */
MHA_RUNNER_SUPPORT_API int64_t mha_dtype_size(const char *code);

/* The element count of `shape`, or -1 when a size is negative or the count
   overflows int64_t. */
MHA_RUNNER_SUPPORT_API int64_t mha_num_elements(int64_t rank,
                                                const int64_t *shape);

/* Reads a .npy file (versions 1 to 3, C order, little-endian or
   byte-order-free, one of the dtypes above; the descr comes back as written
   above whatever its byte-order character was). */
MHA_RUNNER_SUPPORT_API int mha_npy_read(const char *path, mha_array *out,
                                        char *err, size_t err_size);

/* Writes `array` as a version 1.0 .npy file. */
MHA_RUNNER_SUPPORT_API int mha_npy_write(const char *path,
                                         const mha_array *array, char *err,
                                         size_t err_size);

/* Copies the `rank`-d array of `sizes` at `src` (element strides
   `src_strides`) to `dst` (element strides `dst_strides`, or dense row-major
   when it is NULL). Elements are `elem_bytes` bytes. */
MHA_RUNNER_SUPPORT_API void
mha_copy_strided(void *dst, const void *src, int64_t elem_bytes, int64_t rank,
                 const int64_t *sizes, const int64_t *src_strides,
                 const int64_t *dst_strides);

/* A monotonic clock, in milliseconds. */
MHA_RUNNER_SUPPORT_API double mha_now_ms(void);

typedef struct mha_bench_stats {
  int64_t calls;
  double median_ms, min_ms, max_ms;
} mha_bench_stats;

/* The median (the mean of the middle two for an even count), minimum and
   maximum of the `n` times `ms`, which it sorts in place; zeros for n = 0. */
MHA_RUNNER_SUPPORT_API mha_bench_stats mha_bench_summarize(double *ms,
                                                           int64_t n);

/* The compiled code allocates its buffers on every call. glibc serves blocks
   above 128 KiB with mmap and unmaps them on free, so each call page-faults
   them in again (~10 % of a GPT-2 S=1024 layer on 2 threads). Keeping freed
   memory in the process, as ONNX Runtime's arena and jemalloc do, lets calls
   reuse it. Nothing elsewhere than glibc. */
MHA_RUNNER_SUPPORT_API void mha_keep_freed_memory(void);

#ifdef __cplusplus
}
#endif

#endif /* MHA_EXECUTIONENGINE_RUNNERSUPPORT_H */
