/* Calls an mha-aot shared object through its header: the layer of
   aot.test (b=2, sq dynamic, eq=16, 2 heads, biases), inputs as raw
   float32 files DIR/NAME.bin; writes DIR/result.bin.

   Built with -DPREPARED, for the layer with its weights marked mha.weight:
   layer_prepare, then layer_prepared twice (the second call's result is
   written). The weights are overwritten with NaN once prepared: the
   prepared object must own what it needs. */
#include "layer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static float *load(const char *dir, const char *name, size_t count) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.bin", dir, name);
  FILE *f = fopen(path, "rb");
  float *data = malloc(count * sizeof(float));
  if (!f || !data || fread(data, sizeof(float), count, f) != count) {
    fprintf(stderr, "cannot read %s\n", path);
    exit(1);
  }
  fclose(f);
  return data;
}

int main(int argc, char **argv) {
  if (argc != 3)
    return 1;
  const char *dir = argv[1];
  int64_t sq = atoll(argv[2]), b = 2, e = 16;
  size_t n = (size_t)(b * sq * e);
  float *query = load(dir, "query", n);
  float *w[4], *bias[4];
  const char *wn[4] = {"w_q", "w_k", "w_v", "w_o"};
  const char *bn[4] = {"b_q", "b_k", "b_v", "b_o"};
  for (int i = 0; i < 4; ++i) {
    w[i] = load(dir, wn[i], (size_t)(e * e));
    bias[i] = load(dir, bn[i], (size_t)e);
  }
  float *result = calloc(n, sizeof(float));

#ifdef PREPARED
  struct mha_aot_prepared *prepared = NULL;
  int status = layer_prepare(w[0], w[1], w[2], w[3], bias[0], bias[1],
                             bias[2], bias[3], &prepared);
  printf("prepare: %d\n", status);
  float *weights[8] = {w[0], w[1], w[2], w[3], bias[0], bias[1], bias[2],
                       bias[3]};
  for (int i = 0; i < 8; ++i)
    for (int64_t k = 0; k < (i < 4 ? e * e : e); ++k)
      weights[i][k] = NAN;
  for (int call = 0; call < 2; ++call)
    printf("prepared: %d\n", layer_prepared(prepared, query, sq, result, sq));
#else
  int status = layer(query, sq, w[0], w[1], w[2], w[3], bias[0], bias[1],
                     bias[2], bias[3], result, sq);
  printf("layer: %d\n", status);
#endif
  char path[4096];
  snprintf(path, sizeof path, "%s/result.bin", dir);
  FILE *f = fopen(path, "wb");
  fwrite(result, sizeof(float), n, f);
  fclose(f);

  /* The caller says the result has sq + 1 rows: refused, nothing written. */
  float *other = calloc(n + (size_t)(b * e), sizeof(float));
  other[0] = 42.0f;
#ifdef PREPARED
  status = layer_prepared(prepared, query, sq, other, sq + 1);
  layer_release(prepared);
  layer_release(NULL);
#else
  status = layer(query, sq, w[0], w[1], w[2], w[3], bias[0], bias[1],
                 bias[2], bias[3], other, sq + 1);
#endif
  printf("wrong result shape: %d, result %s\n", status,
         other[0] == 42.0f ? "untouched" : "written");
#ifdef PREPARED
  return 0;
#endif

  /* The generic entry with a query of embedding 17 instead of 16. */
  void *inputs[9] = {query, w[0], w[1], w[2], w[3],
                     bias[0], bias[1], bias[2], bias[3]};
  int64_t qshape[3] = {b, sq, e + 1}, wshape[2] = {e, e}, bshape[1] = {e};
  const int64_t *shapes[9] = {qshape, wshape, wshape, wshape, wshape,
                              bshape, bshape, bshape, bshape};
  void *outputs[1];
  int64_t oshape[3];
  int64_t *oshapes[1] = {oshape};
  printf("wrong argument shape: %d\n",
         layer_run(inputs, shapes, outputs, oshapes));
  return 0;
}
