//===- bench/fma_peak.c - measured f32 FMA peak of this machine -----------===//
//
// The ceiling bench/peers.py divides every GFLOP/s figure by: each thread
// runs 16 independent chains of 512-bit fused multiply-adds, enough to cover
// the FMA latency times the number of FMA pipes of current x86 cores (Zen 4/5:
// 4 cycles x 2 pipes; Intel server cores: 4 x 2), so the loop is bound by FMA
// throughput alone. No memory is touched inside the loop.
//
//   fma_peak THREADS [SECONDS]     prints "fma_peak: T threads, X GFLOP/s"
//
// Built by bench/run.sh with clang-22 -O2 -mavx512f -pthread. Threads are
// plain pthreads started together behind a barrier; the figure is all
// threads' FLOPs over the wall time from the barrier to the last join.
//
//===----------------------------------------------------------------------===//

#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { kChains = 16, kLanes = 16 };

static pthread_barrier_t barrier;
static long iterations;
// Read through volatile so that the compiler cannot fold a chain: with known
// constants clang proves that a chain starting at 1.0 is a fixed point of
// acc * m + a in f32 and drops its FMAs.
static volatile float multiplier = 0.999999f, addend = 1e-6f;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// acc = acc * m + a on 16 chains. m slightly below 1 and a small keep every
// value finite forever; the sum at the end keeps the compiler from dropping
// the loop. The chains are spelled out so that each stays in its own zmm
// register whatever the optimizer decides about arrays.
__attribute__((noinline)) static void *worker(void *out) {
  __m512 m = _mm512_set1_ps(multiplier), a = _mm512_set1_ps(addend);
  __m512 c0 = _mm512_set1_ps(0.0f), c1 = _mm512_set1_ps(0.1f),
         c2 = _mm512_set1_ps(0.2f), c3 = _mm512_set1_ps(0.3f),
         c4 = _mm512_set1_ps(0.4f), c5 = _mm512_set1_ps(0.5f),
         c6 = _mm512_set1_ps(0.6f), c7 = _mm512_set1_ps(0.7f),
         c8 = _mm512_set1_ps(0.8f), c9 = _mm512_set1_ps(0.9f),
         c10 = _mm512_set1_ps(1.0f), c11 = _mm512_set1_ps(1.1f),
         c12 = _mm512_set1_ps(1.2f), c13 = _mm512_set1_ps(1.3f),
         c14 = _mm512_set1_ps(1.4f), c15 = _mm512_set1_ps(1.5f);
  pthread_barrier_wait(&barrier);
  for (long i = 0; i < iterations; ++i) {
    c0 = _mm512_fmadd_ps(c0, m, a);   c1 = _mm512_fmadd_ps(c1, m, a);
    c2 = _mm512_fmadd_ps(c2, m, a);   c3 = _mm512_fmadd_ps(c3, m, a);
    c4 = _mm512_fmadd_ps(c4, m, a);   c5 = _mm512_fmadd_ps(c5, m, a);
    c6 = _mm512_fmadd_ps(c6, m, a);   c7 = _mm512_fmadd_ps(c7, m, a);
    c8 = _mm512_fmadd_ps(c8, m, a);   c9 = _mm512_fmadd_ps(c9, m, a);
    c10 = _mm512_fmadd_ps(c10, m, a); c11 = _mm512_fmadd_ps(c11, m, a);
    c12 = _mm512_fmadd_ps(c12, m, a); c13 = _mm512_fmadd_ps(c13, m, a);
    c14 = _mm512_fmadd_ps(c14, m, a); c15 = _mm512_fmadd_ps(c15, m, a);
  }
  __m512 s = _mm512_add_ps(
      _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(c0, c1), _mm512_add_ps(c2, c3)),
                    _mm512_add_ps(_mm512_add_ps(c4, c5), _mm512_add_ps(c6, c7))),
      _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(c8, c9), _mm512_add_ps(c10, c11)),
                    _mm512_add_ps(_mm512_add_ps(c12, c13), _mm512_add_ps(c14, c15))));
  *(float *)out = _mm512_reduce_add_ps(s);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 2 || atoi(argv[1]) < 1) {
    fprintf(stderr, "usage: fma_peak THREADS [SECONDS]\n");
    return 2;
  }
  int threads = atoi(argv[1]);
  double seconds = argc > 2 ? atof(argv[2]) : 0.3;

  // Calibrate on one thread so that the timed run lasts about `seconds`:
  // double the count until one run takes 20 ms. The sums go into the
  // printed checksum, or the calibration runs would be dead code.
  pthread_barrier_init(&barrier, NULL, 1);
  float sink, checksum = 0;
  double elapsed;
  for (iterations = 1 << 14;; iterations *= 2) {
    double t0 = now();
    worker(&sink);
    elapsed = now() - t0;
    checksum += sink;
    if (elapsed > 0.02)
      break;
  }
  pthread_barrier_destroy(&barrier);
  iterations = (long)(iterations * seconds / elapsed) + 1;

  pthread_t *tids = malloc(sizeof(pthread_t) * threads);
  float *sums = malloc(sizeof(float) * threads);
  pthread_barrier_init(&barrier, NULL, threads + 1);
  for (int t = 0; t < threads; ++t)
    pthread_create(&tids[t], NULL, worker, &sums[t]);
  pthread_barrier_wait(&barrier);
  double start = now();
  for (int t = 0; t < threads; ++t) {
    pthread_join(tids[t], NULL);
    checksum += sums[t];
  }
  elapsed = now() - start;
  double flops = 2.0 * kLanes * kChains * (double)iterations * threads;
  printf("fma_peak: %d threads, %.1f GFLOP/s (checksum %g)\n", threads,
         flops / elapsed / 1e9, checksum);
  free(tids);
  free(sums);
  return 0;
}
