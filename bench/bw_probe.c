//===- bench/bw_probe.c - measured memory read bandwidth of this machine --===//
//
// The ceiling bench/peers.py divides the K/V bytes a decode configuration
// reads per call by: T threads each read their part of one buffer much
// larger than the last-level cache (1 GiB by default), folding it with
// 64-bit XORs into eight independent accumulators (integer work the
// compiler vectorizes, far below what the loads take), over and over; the
// best pass is reported. The buffer is written once before timing, so every
// page is mapped; each pass reads all of it, so nothing is served from the
// caches between passes.
//
//   bw_probe THREADS [MIB] [PASSES]   prints "bw_probe: T threads, X GB/s"
//
// Built by bench/peers.py with clang-22 -O2 -pthread. Threads are plain
// pthreads started together behind a barrier each pass; a pass's time is
// from the barrier to the last thread's end, and its bandwidth all bytes
// over that time.
//
//===----------------------------------------------------------------------===//

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static pthread_barrier_t start, done;
static uint64_t *buffer;
static size_t words;
static int threads;
static volatile uint64_t sink;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int passes;

static void *reader(void *arg) {
  long t = (long)arg;
  size_t begin = words / threads * t;
  size_t end = t == threads - 1 ? words : words / threads * (t + 1);
  for (int pass = 0; pass < passes; ++pass) {
    pthread_barrier_wait(&start);
    uint64_t acc[8] = {0};
    for (size_t i = begin; i + 8 <= end; i += 8)
      for (int j = 0; j < 8; ++j)
        acc[j] ^= buffer[i + j];
    uint64_t all = 0;
    for (int j = 0; j < 8; ++j)
      all ^= acc[j];
    sink ^= all;
    pthread_barrier_wait(&done);
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: bw_probe THREADS [MIB] [PASSES]\n");
    return 2;
  }
  threads = atoi(argv[1]);
  size_t mib = argc > 2 ? strtoul(argv[2], NULL, 10) : 1024;
  passes = argc > 3 ? atoi(argv[3]) : 5;
  if (threads < 1 || mib < 1 || passes < 1) {
    fprintf(stderr, "bw_probe: THREADS, MIB and PASSES must be positive\n");
    return 2;
  }
  words = mib * 1024 * 1024 / sizeof(uint64_t);
  buffer = malloc(words * sizeof(uint64_t));
  if (!buffer) {
    fprintf(stderr, "bw_probe: cannot allocate %zu MiB\n", mib);
    return 1;
  }
  for (size_t i = 0; i < words; ++i)
    buffer[i] = i * 0x9E3779B97F4A7C15ull;
  pthread_barrier_init(&start, NULL, threads + 1);
  pthread_barrier_init(&done, NULL, threads + 1);
  pthread_t *ids = malloc(sizeof(pthread_t) * threads);
  for (long t = 0; t < threads; ++t)
    pthread_create(&ids[t], NULL, reader, (void *)t);
  double best = 0;
  for (int pass = 0; pass < passes; ++pass) {
    double t0 = now();
    pthread_barrier_wait(&start);
    pthread_barrier_wait(&done);
    double gbs = words * sizeof(uint64_t) / (now() - t0) / 1e9;
    if (gbs > best)
      best = gbs;
  }
  for (long t = 0; t < threads; ++t)
    pthread_join(ids[t], NULL);
  printf("bw_probe: %d threads, %.1f GB/s\n", threads, best);
  free(ids);
  free(buffer);
  return 0;
}
