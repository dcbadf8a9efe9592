//===- bench/fma_peak.c - measured f32 FMA peak of this machine -----------===//
//
// The ceiling bench/peers.py divides every GFLOP/s figure by: each thread
// runs independent chains of fused multiply-adds on the widest vectors the
// host has (checked at run time: 512-bit zmm with AVX-512F, else 256-bit ymm
// with AVX2 + FMA), enough chains to cover the FMA latency times the number
// of FMA pipes of current x86 cores (Zen 4/5 and Intel server cores: 4
// cycles x 2 pipes), so the loop is bound by FMA throughput alone: 16 with
// AVX-512 (32 registers), 12 with AVX2 (16 registers, two of them hold the
// multiplier and the addend). No memory is touched inside the loop.
//
//   fma_peak THREADS [SECONDS]     prints "fma_peak: T threads, ISA, X GFLOP/s"
//
// Built by bench/peers.py with clang-22 -O2 -pthread (no -m flags: each
// kernel carries its own target attribute, so the binary runs on both kinds
// of machine). Threads are plain pthreads started together behind a barrier;
// the figure is all threads' FLOPs over the wall time from the barrier to
// the last join.
//
//===----------------------------------------------------------------------===//

#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

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

// acc = acc * m + a on each chain. m slightly below 1 and a small keep every
// value finite forever; the sum at the end keeps the compiler from dropping
// the loop. The chains are spelled out so that each stays in its own
// register whatever the optimizer decides about arrays.
#define CHAINS12(X, P) X(c0, 0, P) X(c1, 1, P) X(c2, 2, P) X(c3, 3, P)    \
  X(c4, 4, P) X(c5, 5, P) X(c6, 6, P) X(c7, 7, P) X(c8, 8, P) X(c9, 9, P)    \
  X(c10, 10, P) X(c11, 11, P)
#define CHAINS16(X, P) CHAINS12(X, P) X(c12, 12, P) X(c13, 13, P)            \
  X(c14, 14, P) X(c15, 15, P)
#define INIT(c, k, P) __typeof__(m) c = P##_set1_ps(0.1f * k);
#define STEP(c, k, P) c = P##_fmadd_ps(c, m, a);
#define SUM(c, k, P) s = P##_add_ps(s, c);
// A kernel on vectors of type VEC with the intrinsics P##_*_ps (P: _mm512,
// _mm256), compiled for TARGET whatever the command line says.
#define WORKER(NAME, TARGET, CHAINS, VEC, P)                                 \
  __attribute__((noinline, target(TARGET))) static float NAME(void) {      \
    VEC m = P##_set1_ps(multiplier), a = P##_set1_ps(addend),              \
        s = P##_set1_ps(0.0f);                                             \
    CHAINS(INIT, P)                                                        \
    pthread_barrier_wait(&barrier);                                        \
    for (long i = 0; i < iterations; ++i) {                                \
      CHAINS(STEP, P)                                                      \
    }                                                                      \
    CHAINS(SUM, P)                                                         \
    float lanes[sizeof(VEC) / sizeof(float)], total = 0;                  \
    P##_storeu_ps(lanes, s);                                               \
    for (unsigned l = 0; l < sizeof(VEC) / sizeof(float); ++l)            \
      total += lanes[l];                                                   \
    return total;                                                          \
  }

WORKER(worker_avx512, "avx512f", CHAINS16, __m512, _mm512)
WORKER(worker_avx2, "avx2,fma", CHAINS12, __m256, _mm256)
enum { kChainsAVX512 = 16, kLanesAVX512 = 16, kChainsAVX2 = 12, kLanesAVX2 = 8 };

static float (*worker_kernel)(void);

static void *worker(void *out) {
  *(float *)out = worker_kernel();
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 2 || atoi(argv[1]) < 1) {
    fprintf(stderr, "usage: fma_peak THREADS [SECONDS]\n");
    return 2;
  }
  int threads = atoi(argv[1]);
  double seconds = argc > 2 ? atof(argv[2]) : 0.3;
  const char *isa;
  int chains, lanes;
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) {
    worker_kernel = worker_avx512, isa = "avx512f";
    chains = kChainsAVX512, lanes = kLanesAVX512;
  } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    worker_kernel = worker_avx2, isa = "avx2";
    chains = kChainsAVX2, lanes = kLanesAVX2;
  } else {
    fprintf(stderr, "fma_peak: the host has neither AVX-512F nor AVX2+FMA\n");
    return 1;
  }

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
  double flops = 2.0 * lanes * chains * (double)iterations * threads;
  printf("fma_peak: %d threads, %s, %.1f GFLOP/s (checksum %g)\n", threads,
         isa, flops / elapsed / 1e9, checksum);
  free(tids);
  free(sums);
  return 0;
}
