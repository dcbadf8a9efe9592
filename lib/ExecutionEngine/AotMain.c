/*===- AotMain.c - standalone runner of an mha-aot entry point -----------===*
 *
 * mha-aot compiles this with RunnerSupport.c, the fixed wrapper
 * (AotWrapper.c), the entry's generated table and stubs, and its object code
 * into an executable that needs neither MLIR nor LLVM:
 * it reads each argument from a .npy file, calls the entry and writes each
 * result to a .npy file (or prints a summary). The generated header provides
 * the entry's signature; MHA_AOT_HEADER, MHA_AOT_SIGNATURE and MHA_AOT_RUN
 * name them.
 *
 *   NAME [--threads N] [--benchmark N] [--device-resident] [-o OUT.npy]...
 *        IN.npy...
 *
 * --device-resident (entries compiled with mha-aot --device-entry, which
 * defines MHA_AOT_DEVICE as NAME): the arguments are uploaded once, the
 * results computed by NAME_run_device on device buffers (each --benchmark
 * call too: none copies anything between host and device) and downloaded
 * once. Results of dynamic shape are sized by a call of NAME first.
 *
 * Exit codes as mha-run's: 0 success, 2 bad usage or input, 4 the entry
 * refused the arguments.
 *
 *===---------------------------------------------------------------------===*/

#include MHA_AOT_HEADER
#include "mha/ExecutionEngine/RunnerSupport.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int bad(const char *what, const char *detail) {
  fprintf(stderr, "error: %s: %s\n", what, detail);
  return 2;
}

/* Reads argument `path` into `array` and checks it against `info`: 0, or 2
   after saying why. */
static int read_input(const char *path, const struct mha_aot_array_info *info,
                      mha_array *array) {
  char why[1024];
  if (mha_npy_read(path, array, why, sizeof why))
    return bad(path, why);
  if (strcmp(array->dtype, info->dtype))
    snprintf(why, sizeof why, "dtype is not '%s'", info->dtype);
  else if (array->rank != info->rank)
    snprintf(why, sizeof why, "rank %lld, the entry expects %lld",
             (long long)array->rank, (long long)info->rank);
  else
    return 0;
  free(array->data);
  return bad(path, why);
}

#ifdef MHA_AOT_DEVICE
#define MHA_PASTE2(a, b) a##b
#define MHA_PASTE(a, b) MHA_PASTE2(a, b)
#define DEVICE(suffix) MHA_PASTE(MHA_AOT_DEVICE, suffix)

/* Bytes of a dense array of `info`'s dtype and shape `shape`. */
static size_t array_bytes(const struct mha_aot_array_info *info,
                          const int64_t *shape) {
  size_t n = (size_t)mha_dtype_size(info->dtype + 1);
  for (int64_t d = 0; d < info->rank; ++d)
    n *= (size_t)shape[d];
  return n;
}

/* --device-resident: see the file comment. `outputs` receives the results
   in host buffers from malloc, `out_shapes` their shapes. */
static int run_device(const struct mha_aot_signature *sig, mha_array *inputs,
                      void *outputs[], int64_t out_shapes[][16],
                      long benchmark) {
  const int64_t *updates = DEVICE(_device_updates);
  void *in_data[64], *host_out[64];
  const int64_t *in_shapes[64], *out_shape_ptrs[64];
  int64_t *shape_ptrs[64];
  int dynamic = 0;
  for (int64_t i = 0; i < sig->num_inputs; ++i) {
    in_data[i] = inputs[i].data;
    in_shapes[i] = inputs[i].shape;
  }
  for (int64_t j = 0; j < sig->num_outputs; ++j) {
    shape_ptrs[j] = out_shapes[j];
    out_shape_ptrs[j] = out_shapes[j];
    for (int64_t d = 0; d < sig->outputs[j].rank; ++d) {
      out_shapes[j][d] = sig->outputs[j].shape[d];
      dynamic |= out_shapes[j][d] < 0;
    }
  }
  if (dynamic) {
    int status = MHA_AOT_RUN(in_data, in_shapes, host_out, shape_ptrs);
    if (status)
      return status;
    for (int64_t j = 0; j < sig->num_outputs; ++j)
      free(host_out[j]);
  }
  size_t uploaded = 0, downloaded = 0;
  void *device_in[64], *device_out[64];
  for (int64_t i = 0; i < sig->num_inputs; ++i) {
    size_t bytes = array_bytes(&sig->inputs[i], inputs[i].shape);
    device_in[i] = DEVICE(_device_alloc)(bytes);
    DEVICE(_device_upload)(device_in[i], inputs[i].data, bytes);
    uploaded += bytes;
  }
  for (int64_t j = 0; j < sig->num_outputs; ++j)
    device_out[j] = updates[j] >= 0 ? NULL
                                    : DEVICE(_device_alloc)(array_bytes(
                                          &sig->outputs[j], out_shapes[j]));
  double *ms = benchmark > 0 ? malloc(sizeof(double) * benchmark) : NULL;
  /* r = -2: the result; -1: a warm-up, as NAME's --benchmark has. */
  for (long r = benchmark > 0 ? -2 : -1; r < benchmark; ++r) {
    double start = mha_now_ms();
    int status =
        DEVICE(_run_device)(device_in, in_shapes, device_out, out_shape_ptrs);
    if (status)
      return status;
    if (r >= 0)
      ms[r] = mha_now_ms() - start;
  }
  for (int64_t j = 0; j < sig->num_outputs; ++j) {
    size_t bytes = array_bytes(&sig->outputs[j], out_shapes[j]);
    outputs[j] = malloc(bytes ? bytes : 1);
    DEVICE(_device_download)
    (outputs[j], updates[j] >= 0 ? device_in[updates[j]] : device_out[j],
     bytes);
    downloaded += bytes;
  }
  printf("device-resident: %zu bytes uploaded once, %zu bytes downloaded "
         "once\n",
         uploaded, downloaded);
  if (benchmark > 0) {
    mha_bench_stats stats = mha_bench_summarize(ms, benchmark);
    printf("benchmark (device-resident): %ld calls, median %.3f ms, min "
           "%.3f ms, max %.3f ms\n",
           benchmark, stats.median_ms, stats.min_ms, stats.max_ms);
    free(ms);
  }
  for (int64_t i = 0; i < sig->num_inputs; ++i)
    DEVICE(_device_free)(device_in[i]);
  for (int64_t j = 0; j < sig->num_outputs; ++j)
    DEVICE(_device_free)(device_out[j]);
  return 0;
}
#endif

int main(int argc, char **argv) {
  const struct mha_aot_signature *sig = &MHA_AOT_SIGNATURE;
  mha_keep_freed_memory(); /* as mha-run does */
  /* Lines out as they are printed, before what the GPU runtime prints to
     stderr at exit (its profile), even into a pipe. */
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char *in_paths[64], *out_paths[64];
  int num_in = 0, num_out = 0;
  long benchmark = 0;
  int device_resident = 0;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "-o") && i + 1 < argc && num_out < 64) {
      out_paths[num_out++] = argv[++i];
    } else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
      /* The CPU code's OpenMP runtime reads it at its first parallel loop. */
      setenv("OMP_NUM_THREADS", argv[++i], 1);
    } else if (!strcmp(argv[i], "--benchmark") && i + 1 < argc) {
      benchmark = strtol(argv[++i], NULL, 10);
    } else if (!strcmp(argv[i], "--device-resident")) {
#ifdef MHA_AOT_DEVICE
      device_resident = 1;
#else
      fprintf(stderr,
              "error: --device-resident: %s was compiled without "
              "a device entry (mha-aot --device-entry)\n",
              argv[0]);
      return 2;
#endif
    } else if (argv[i][0] == '-' && argv[i][1]) {
      fprintf(stderr,
              "usage: %s [--threads N] [--benchmark N] [--device-resident] "
              "[-o OUT.npy]... IN.npy...\n",
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

  static mha_array inputs[64];
  void *in_data[64], *outputs[64];
  int64_t out_shapes[64][16];
  const int64_t *in_shape_ptrs[64];
  int64_t *out_shape_ptrs[64];
  for (int i = 0; i < num_in; ++i) {
    if (read_input(in_paths[i], &sig->inputs[i], &inputs[i]))
      return 2;
    in_data[i] = inputs[i].data;
    in_shape_ptrs[i] = inputs[i].shape;
  }
  for (int j = 0; j < sig->num_outputs; ++j)
    out_shape_ptrs[j] = out_shapes[j];

  int status;
#ifdef MHA_AOT_DEVICE
  if (device_resident)
    status = run_device(sig, inputs, outputs, out_shapes, benchmark);
  else
#endif
    status = MHA_AOT_RUN(in_data, in_shape_ptrs, outputs, out_shape_ptrs);
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
      mha_array result = {{0}, info->rank, {0}, outputs[j]};
      snprintf(result.dtype, sizeof result.dtype, "%s", info->dtype);
      memcpy(result.shape, out_shapes[j], sizeof(int64_t) * info->rank);
      char why[1024];
      if (mha_npy_write(out_paths[j], &result, why, sizeof why))
        return bad(out_paths[j], why);
      printf("result %d written to %s\n", j, out_paths[j]);
    } else {
      printf("result %d: %s [", j, info->dtype);
      for (int64_t d = 0; d < info->rank; ++d)
        printf("%s%lld", d ? ", " : "", (long long)out_shapes[j][d]);
      printf("]\n");
    }
    free(outputs[j]);
  }

  if (benchmark > 0 && !device_resident) {
    double *ms = malloc(sizeof(double) * benchmark);
    for (long r = -1; r < benchmark; ++r) { /* r = -1: warm-up */
      double start = mha_now_ms();
      MHA_AOT_RUN(in_data, in_shape_ptrs, outputs, out_shape_ptrs);
      if (r >= 0)
        ms[r] = mha_now_ms() - start;
      for (int j = 0; j < sig->num_outputs; ++j)
        free(outputs[j]);
    }
    mha_bench_stats stats = mha_bench_summarize(ms, benchmark);
    printf("benchmark: %ld calls, median %.3f ms, min %.3f ms, max %.3f ms\n",
           benchmark, stats.median_ms, stats.min_ms, stats.max_ms);
    free(ms);
  }
  for (int i = 0; i < num_in; ++i)
    free(in_data[i]);
  return 0;
}
