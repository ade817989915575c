/* How fast C threads read an array that stays in the last-level cache, by access pattern: the
 * ceiling of kapi's CPU reductions at sizes the L3 holds (2^24 float32 on the GPU machine's
 * Xeon, whose L3 holds a reduction's 64 MiB), beside a triad on arrays that stay there too.
 * bench/membw.c rotates five arrays through memory; here every pattern reads the same arrays
 * again and again, as a benchmark that repeats one call does.
 *
 *   l3read [log2 elements (24)] [rounds (9)] [threads (online cores)]
 *
 * Patterns (float32; a thread's block is contiguous, its share of whole 64-byte lines):
 *   triad       a = b + 3c (bytes counted as kapi's benches count them: 12 an element)
 *   blockS      the block read as S streams at once (S = 1, 2, 4, 8), each a contiguous part
 *   chunks      kapi's reduction: the block in chunks of 16 KiB (a work-item's), each chunk read
 *               as 4 streams of 4 KiB at once, one chunk after another
 *   chunks_pfD  the same with a prefetch D bytes ahead in each stream (past a stream's end it
 *               reaches the next stream's part, and the last stream's the next chunk's first)
 *   block4_pfD  block4 with the same prefetch
 * Each pattern runs REPS times in a row (the median counts); the rounds rotate the order.
 * Threads meet at a spinning barrier (a futex barrier's wake-up costs tens of microseconds on
 * 16 threads, a tenth of a 2^24 read). Built for the GPU machine and carried:
 *   gcc -O3 -march=x86-64-v3 -static -pthread bench/l3read.c -o .carry/bin/l3read
 */
#define _GNU_SOURCE
#include <immintrin.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

enum { TRIAD, BLOCK1, BLOCK2, BLOCK4, BLOCK8, CHUNKS, CHUNKS_PF1K, CHUNKS_PF4K, BLOCK4_PF1K, NPAT };
static const char *const pat_name[NPAT] = {"triad",       "block1",      "block2",
                                           "block4",      "block8",      "chunks",
                                           "chunks_pf1k", "chunks_pf4k", "block4_pf1k"};
enum { REPS = 5, CHUNK = 4096 /* floats: 16 KiB */ };

typedef struct shared {
  float *a, *b, *c, *x;
  size_t n;
  int threads, pattern;
  _Alignas(64) atomic_uint arrived;
  _Alignas(64) atomic_uint sense;
  double sink[1024];
} shared_t;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

/* Sense-reversing spin barrier of all threads. */
static void barrier(shared_t *s, unsigned *local) {
  unsigned want = *local ^= 1u;
  if (atomic_fetch_add(&s->arrived, 1) + 1 == (unsigned)s->threads) {
    atomic_store(&s->arrived, 0);
    atomic_store(&s->sense, want);
  } else {
    while (atomic_load_explicit(&s->sense, memory_order_acquire) != want)
      _mm_pause();
  }
}

static void block(const shared_t *s, int id, size_t *lo, size_t *hi) {
  size_t lines = s->n / 16, per = lines / (size_t)s->threads, extra = lines % (size_t)s->threads;
  size_t first = (size_t)id * per + ((size_t)id < extra ? (size_t)id : extra);
  *lo = 16 * first;
  *hi = 16 * (first + per + ((size_t)id < extra));
}

/* Sums `streams` parts of [lo, lo + streams * len) at once, 16 floats of each a step, with a
 * prefetch pf floats ahead in each (0: none). len: a multiple of 16. */
static __m256 read_parts(const float *x, size_t lo, size_t len, int streams, size_t pf,
                         __m256 acc) {
  __m256 s0 = acc, s1 = _mm256_setzero_ps();
  for (size_t i = 0; i < len; i += 16)
    for (int k = 0; k < streams; k++) {
      const float *p = x + lo + (size_t)k * len + i;
      if (pf) _mm_prefetch((const char *)(p + pf), _MM_HINT_T0);
      s0 = _mm256_add_ps(s0, _mm256_load_ps(p));
      s1 = _mm256_add_ps(s1, _mm256_load_ps(p + 8));
    }
  return _mm256_add_ps(s0, s1);
}

static float hsum(__m256 v) {
  float t[8];
  _mm256_storeu_ps(t, v);
  return t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7];
}

static float read_chunks(const float *x, size_t lo, size_t hi, size_t pf) {
  __m256 acc = _mm256_setzero_ps();
  float tail = 0;
  size_t j = lo;
  for (; j + CHUNK <= hi; j += CHUNK)
    acc = read_parts(x, j, CHUNK / 4, 4, pf, acc);
  for (; j < hi; j++)
    tail += x[j];
  return hsum(acc) + tail;
}

static float read_block(const float *x, size_t lo, size_t hi, int streams, size_t pf) {
  size_t len = (hi - lo) / (16 * (size_t)streams) * 16;
  float tail = 0;
  for (size_t j = lo + len * (size_t)streams; j < hi; j++)
    tail += x[j];
  return hsum(read_parts(x, lo, len, streams, pf, _mm256_setzero_ps())) + tail;
}

static void run_pattern(shared_t *s, int id) {
  size_t lo, hi;
  block(s, id, &lo, &hi);
  float r = 0;
  const __m256 k = _mm256_set1_ps(3.0f);
  switch (s->pattern) {
  case TRIAD:
    for (size_t i = lo; i < hi; i += 8)
      _mm256_store_ps(s->a + i, _mm256_add_ps(_mm256_load_ps(s->b + i),
                                              _mm256_mul_ps(k, _mm256_load_ps(s->c + i))));
    break;
  case BLOCK1:
    r = read_block(s->x, lo, hi, 1, 0);
    break;
  case BLOCK2:
    r = read_block(s->x, lo, hi, 2, 0);
    break;
  case BLOCK4:
    r = read_block(s->x, lo, hi, 4, 0);
    break;
  case BLOCK8:
    r = read_block(s->x, lo, hi, 8, 0);
    break;
  case CHUNKS:
    r = read_chunks(s->x, lo, hi, 0);
    break;
  case CHUNKS_PF1K:
    r = read_chunks(s->x, lo, hi, 256);
    break;
  case CHUNKS_PF4K:
    r = read_chunks(s->x, lo, hi, 1024);
    break;
  case BLOCK4_PF1K:
    r = read_block(s->x, lo, hi, 4, 256);
    break;
  }
  s->sink[id % 1024] += r;
}

typedef struct worker {
  shared_t *s;
  int id, rounds;
  double *t; /* thread 0: rounds x NPAT medians */
} worker_t;

static void *worker_main(void *p) {
  worker_t *w = p;
  shared_t *s = w->s;
  unsigned local = 0;
  size_t lo, hi;
  block(s, w->id, &lo, &hi);
  for (size_t i = lo; i < hi; i++) /* first touch: each page near the thread that uses it */
    s->a[i] = 0, s->b[i] = 1, s->c[i] = 2, s->x[i] = 1;
  barrier(s, &local);
  double rep[REPS];
  for (int r = -1; r < w->rounds; r++) /* a round to warm the clocks and caches, not counted */
    for (int q = 0; q < NPAT; q++) {
      int pat = (q + (r < 0 ? 0 : r)) % NPAT;
      if (w->id == 0) s->pattern = pat;
      barrier(s, &local);
      for (int k = 0; k < REPS; k++) {
        double t0 = now();
        run_pattern(s, w->id);
        barrier(s, &local);
        rep[k] = now() - t0;
      }
      if (w->id == 0 && r >= 0) {
        qsort(rep, REPS, sizeof *rep, cmp_double);
        w->t[r * NPAT + pat] = rep[REPS / 2];
      }
    }
  return NULL;
}

int main(int argc, char **argv) {
  int log2n = argc > 1 ? atoi(argv[1]) : 24, rounds = argc > 2 ? atoi(argv[2]) : 9;
  int threads = argc > 3 ? atoi(argv[3]) : (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (log2n < 14 || log2n > 32 || rounds < 1 || threads < 1 || threads > 1024) {
    fprintf(stderr, "usage: l3read [log2 elements 14..32] [rounds] [threads]\n");
    return 2;
  }
  shared_t *s = aligned_alloc(64, sizeof *s);
  *s = (shared_t){.n = (size_t)1 << log2n, .threads = threads};
  float **arrays[] = {&s->a, &s->b, &s->c, &s->x};
  for (size_t i = 0; i < 4; i++)
    if (posix_memalign((void **)arrays[i], 4096, s->n * sizeof(float))) {
      fprintf(stderr, "l3read: cannot allocate 4 x %zu bytes\n", s->n * sizeof(float));
      return 1;
    }
  double *t = calloc((size_t)rounds * NPAT, sizeof *t);
  pthread_t *tid = calloc((size_t)threads, sizeof *tid);
  worker_t *w = calloc((size_t)threads, sizeof *w);
  for (int i = 1; i < threads; i++) {
    w[i] = (worker_t){s, i, rounds, NULL};
    pthread_create(&tid[i], NULL, worker_main, &w[i]);
  }
  w[0] = (worker_t){s, 0, rounds, t};
  worker_main(&w[0]);
  for (int i = 1; i < threads; i++)
    pthread_join(tid[i], NULL);

  printf("l3read: 2^%d float32 (%zu MiB an array), %d threads, %d rounds of %d reps; GB/s as "
         "kapi's benches count bytes (triad 12 an element, reads 4)\n",
         log2n, (s->n * 4) >> 20, threads, rounds, REPS);
  printf("%-12s %8s %8s %16s\n", "pattern", "best", "median", "x triad (round)");
  double bw[rounds], rel[rounds];
  for (int p = 0; p < NPAT; p++) {
    double bytes = (p == TRIAD ? 12.0 : 4.0) * (double)s->n;
    for (int r = 0; r < rounds; r++) {
      bw[r] = bytes / t[r * NPAT + p] / 1e9;
      rel[r] = bw[r] / (12.0 * (double)s->n / t[r * NPAT + TRIAD] / 1e9);
    }
    qsort(bw, (size_t)rounds, sizeof *bw, cmp_double);
    qsort(rel, (size_t)rounds, sizeof *rel, cmp_double);
    printf("%-12s %8.1f %8.1f %15.2fx\n", pat_name[p], bw[rounds - 1], bw[rounds / 2],
           rel[rounds / 2]);
  }
  double sink = 0;
  for (int i = 0; i < 1024; i++)
    sink += s->sink[i];
  fprintf(stderr, "(checksum %g)\n", sink);
  return 0;
}
