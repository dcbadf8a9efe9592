/* A C program on the header mha-aot --device-entry writes for
   resident-attention.mlir (NAME = resident): the inputs uploaded once,
   resident_device called three times on device buffers, the result
   downloaded (into memory of resident_host_alloc) and compared bitwise with resident's on host arrays, and
   checked against the row sums of the attention probabilities (each output
   row of an all-ones V is 1). */
#include "resident.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define N (1 * 2 * 40 * 16)

int main(void) {
  static float q[N], k[N], v[N], ones[N], host[N], sums[N];
  float *device = resident_host_alloc(sizeof(float) * N);
  for (int i = 0; i < N; ++i) {
    q[i] = sinf(0.1f * (float)i);
    k[i] = cosf(0.07f * (float)i);
    v[i] = (float)(i % 13) / 13.0f - 0.5f;
    ones[i] = 1.0f;
  }
  if (resident(q, k, v, host))
    return 1;
  size_t bytes = sizeof q;
  void *dq = resident_device_alloc(bytes), *dk = resident_device_alloc(bytes),
       *dv = resident_device_alloc(bytes), *dout = resident_device_alloc(bytes);
  resident_device_upload(dq, q, bytes);
  resident_device_upload(dk, k, bytes);
  resident_device_upload(dv, v, bytes);
  for (int call = 0; call < 3; ++call)
    if (resident_device(dq, dk, dv, dout))
      return 2;
  resident_device_download(device, dout, bytes);
  printf("device-resident result %s the host entry's\n",
         memcmp(device, host, bytes) ? "differs from" : "is bitwise");
  /* Attention rows are convex combinations of V's rows. */
  resident_device_upload(dv, ones, bytes);
  if (resident_device(dq, dk, dv, dout))
    return 3;
  resident_device_download(sums, dout, bytes);
  float worst = 0;
  for (int i = 0; i < N; ++i)
    worst = fmaxf(worst, fabsf(sums[i] - 1.0f));
  printf("rows of P·1: max |sum - 1| %s 1e-5\n", worst < 1e-5f ? "<" : ">=");
  resident_device_free(dq);
  resident_device_free(dk);
  resident_device_free(dv);
  resident_device_free(dout);
  resident_device_free(NULL);
  resident_host_free(device);
  return 0;
}
