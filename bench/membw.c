/* What the host's memory gives C threads, for the access patterns of kapi's CPU primitives:
 * the ceiling the reductions and scans are measured against, found without kapi. Each round
 * runs every pattern once on all threads (a contiguous block per thread, the order rotated
 * each round, as bench/scan_ab.py does: the GPU machine's Xeon moves 20-40% between
 * processes); prints each pattern's best and median GB/s (bytes counted as kapi's benches
 * count them: triad 12 per element, copy 8, read 4) and its ratio to the triad's best and to
 * the triad of the same round.
 *
 *   membw [log2 elements (24)] [rounds (15)] [threads (online cores)]
 *
 * Patterns (float32, arrays 64-byte aligned, first touched by the thread that uses them):
 *   triad     a = b + s*c                      the denominator of bench/primitives.py
 *   copy      y = s*x: a scan's traffic        (one read and one write stream)
 *   read      sum of x: a reduction's traffic  (one read stream, four vector accumulators)
 *   read2     sum of x, two halves of the block at once (two read streams)
 *   *_nt      the same with non-temporal (streaming) stores: no read for ownership
 *   copy_nti  copy by 8-byte non-temporal stores from general registers (MOVNTI): what LLVM
 *             makes of a non-temporal vector store it cannot prove aligned
 * Each pattern runs REPS times in a row (the median counts: its arrays as warm as a benchmark
 * that repeats one call finds them); copy and read use arrays of their own.
 */
#define _GNU_SOURCE
#include <immintrin.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { TRIAD, TRIAD_NT, COPY, COPY_NT, COPY_NTI, READ, READ2, NPAT };
static const char *const pat_name[NPAT] = {"triad",    "triad_nt", "copy", "copy_nt",
                                           "copy_nti", "read",     "read2"};
static const double pat_bytes[NPAT] = {12, 12, 8, 8, 8, 4, 4};

typedef struct shared {
  float *a, *b, *c, *x, *y;
  size_t n;
  int threads;
  int pattern; /* what the next phase runs; -1: exit */
  pthread_barrier_t start, done;
  double sink[256];
} shared_t;

typedef struct worker {
  shared_t *s;
  int id;
} worker_t;

enum { REPS = 5 };

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A thread's block: whole 64-byte lines, so streaming stores stay aligned. */
static void block(const shared_t *s, int id, size_t *lo, size_t *hi) {
  size_t lines = s->n / 16, per = lines / (size_t)s->threads, extra = lines % (size_t)s->threads;
  size_t first = (size_t)id * per + ((size_t)id < extra ? (size_t)id : extra);
  *lo = 16 * first;
  *hi = 16 * (first + per + ((size_t)id < extra));
}

static float hsum(__m256 v) {
  float t[8];
  _mm256_storeu_ps(t, v);
  return t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7];
}

static float read_stream(const float *x, size_t lo, size_t hi) {
  __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  for (size_t i = lo; i < hi; i += 32) {
    s0 = _mm256_add_ps(s0, _mm256_load_ps(x + i));
    s1 = _mm256_add_ps(s1, _mm256_load_ps(x + i + 8));
    s2 = _mm256_add_ps(s2, _mm256_load_ps(x + i + 16));
    s3 = _mm256_add_ps(s3, _mm256_load_ps(x + i + 24));
  }
  return hsum(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
}

static float read_two(const float *x, size_t lo, size_t hi) {
  size_t mid = lo + (hi - lo) / 64 * 32;
  __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  for (size_t i = lo, j = mid; i < mid; i += 16, j += 16) {
    s0 = _mm256_add_ps(s0, _mm256_load_ps(x + i));
    s1 = _mm256_add_ps(s1, _mm256_load_ps(x + i + 8));
    s2 = _mm256_add_ps(s2, _mm256_load_ps(x + j));
    s3 = _mm256_add_ps(s3, _mm256_load_ps(x + j + 8));
  }
  float t = hsum(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
  for (size_t j = lo + 2 * (mid - lo); j < hi; j++)
    t += x[j];
  return t;
}

static void run_pattern(shared_t *s, int id) {
  size_t lo, hi;
  block(s, id, &lo, &hi);
  float *a = s->a, *b = s->b, *c = s->c;
  const __m256 k = _mm256_set1_ps(3.0f);
  switch (s->pattern) {
  case TRIAD:
    for (size_t i = lo; i < hi; i += 8)
      _mm256_store_ps(
          a + i, _mm256_add_ps(_mm256_load_ps(b + i), _mm256_mul_ps(k, _mm256_load_ps(c + i))));
    break;
  case TRIAD_NT:
    for (size_t i = lo; i < hi; i += 8)
      _mm256_stream_ps(
          a + i, _mm256_add_ps(_mm256_load_ps(b + i), _mm256_mul_ps(k, _mm256_load_ps(c + i))));
    _mm_sfence();
    break;
  case COPY:
    for (size_t i = lo; i < hi; i += 8)
      _mm256_store_ps(s->y + i, _mm256_mul_ps(k, _mm256_load_ps(s->x + i)));
    break;
  case COPY_NT:
    for (size_t i = lo; i < hi; i += 8)
      _mm256_stream_ps(s->y + i, _mm256_mul_ps(k, _mm256_load_ps(s->x + i)));
    _mm_sfence();
    break;
  case COPY_NTI:
    for (size_t i = lo; i < hi; i += 4) {
      __m128i v = _mm_castps_si128(_mm_mul_ps(_mm256_castps256_ps128(k), _mm_load_ps(s->x + i)));
      _mm_stream_si64((long long *)(s->y + i), _mm_cvtsi128_si64(v));
      _mm_stream_si64((long long *)(s->y + i + 2), _mm_extract_epi64(v, 1));
    }
    _mm_sfence();
    break;
  case READ:
    s->sink[id % 256] += read_stream(s->x, lo, hi);
    break;
  case READ2:
    s->sink[id % 256] += read_two(s->x, lo, hi);
    break;
  }
}

static void *worker_main(void *p) {
  worker_t *w = p;
  shared_t *s = w->s;
  size_t lo, hi;
  block(s, w->id, &lo, &hi);
  for (size_t i = lo; i < hi; i++) /* first touch: each page near the thread that uses it */
    s->a[i] = 0, s->b[i] = 1, s->c[i] = 2, s->x[i] = 1, s->y[i] = 0;
  for (;;) {
    pthread_barrier_wait(&s->start);
    if (s->pattern < 0) return NULL;
    run_pattern(s, w->id);
    pthread_barrier_wait(&s->done);
  }
}

int main(int argc, char **argv) {
  int log2n = argc > 1 ? atoi(argv[1]) : 24, rounds = argc > 2 ? atoi(argv[2]) : 15;
  int threads = argc > 3 ? atoi(argv[3]) : (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (log2n < 10 || log2n > 32 || rounds < 1 || threads < 1 || threads > 1024) {
    fprintf(stderr, "usage: membw [log2 elements 10..32] [rounds] [threads]\n");
    return 2;
  }
  shared_t s = {.n = (size_t)1 << log2n, .threads = threads};
  size_t bytes = s.n * sizeof(float);
  float **arrays[] = {&s.a, &s.b, &s.c, &s.x, &s.y};
  for (size_t i = 0; i < sizeof arrays / sizeof *arrays; i++)
    if (posix_memalign((void **)arrays[i], 64, bytes)) {
      fprintf(stderr, "membw: cannot allocate 5 x %zu bytes\n", bytes);
      return 1;
    }
  pthread_barrier_init(&s.start, NULL, (unsigned)threads + 1);
  pthread_barrier_init(&s.done, NULL, (unsigned)threads + 1);
  pthread_t *tid = calloc((size_t)threads, sizeof *tid);
  worker_t *w = calloc((size_t)threads, sizeof *w);
  for (int i = 0; i < threads; i++) {
    w[i] = (worker_t){&s, i};
    pthread_create(&tid[i], NULL, worker_main, &w[i]);
  }
  double *t = calloc((size_t)rounds * NPAT, sizeof *t), rep[REPS];
  for (int r = -1; r < rounds; r++) /* a round to warm the clocks, not counted */
    for (int q = 0; q < NPAT; q++) {
      int p = (q + (r < 0 ? 0 : r)) % NPAT;
      s.pattern = p;
      for (int k = 0; k < REPS; k++) {
        double t0 = now();
        pthread_barrier_wait(&s.start);
        pthread_barrier_wait(&s.done);
        rep[k] = now() - t0;
      }
      qsort(rep, REPS, sizeof *rep, cmp_double);
      if (r >= 0) t[r * NPAT + p] = rep[REPS / 2];
    }
  s.pattern = -1;
  pthread_barrier_wait(&s.start);
  for (int i = 0; i < threads; i++)
    pthread_join(tid[i], NULL);

  double triad_best = 0;
  double *bw = calloc((size_t)rounds, sizeof *bw), *rel = calloc((size_t)rounds, sizeof *rel);
  for (int r = 0; r < rounds; r++) {
    double g = pat_bytes[TRIAD] * (double)s.n / t[r * NPAT + TRIAD] / 1e9;
    triad_best = g > triad_best ? g : triad_best;
  }
  printf("membw: 2^%d float32, %d threads, %d rounds (GB/s as kapi's benches count bytes)\n", log2n,
         threads, rounds);
  printf("%-9s %8s %8s %12s %16s\n", "pattern", "best", "median", "/best triad", "/triad (round)");
  for (int p = 0; p < NPAT; p++) {
    for (int r = 0; r < rounds; r++) {
      bw[r] = pat_bytes[p] * (double)s.n / t[r * NPAT + p] / 1e9;
      rel[r] = t[r * NPAT + TRIAD] / t[r * NPAT + p] * pat_bytes[p] / pat_bytes[TRIAD];
    }
    qsort(bw, (size_t)rounds, sizeof *bw, cmp_double);
    qsort(rel, (size_t)rounds, sizeof *rel, cmp_double);
    printf("%-9s %8.1f %8.1f %11.2fx %15.2fx\n", pat_name[p], bw[rounds - 1], bw[rounds / 2],
           bw[rounds / 2] / triad_best, rel[rounds / 2]);
  }
  double sink = 0;
  for (int i = 0; i < 256; i++)
    sink += s.sink[i];
  fprintf(stderr, "(checksum %g)\n", sink);
  return 0;
}
