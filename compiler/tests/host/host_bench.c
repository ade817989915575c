/* Quick benchmark of finalised kernels against their C/OpenMP equivalents, run the way the CPU
 * driver runs groups: a persistent pool of T threads, each taking a contiguous share of the
 * groups (as OpenMP's static schedule does, so first-touch pages are local to the same thread).
 * Not a ctest: `OMP_WAIT_POLICY=passive host_bench [threads]` prints best-of-10 figures (spinning
 * OpenMP workers would take the cores from the pool's threads between the alternating runs). STREAM
 * triad counts 24 bytes per element (two reads, one write), as STREAM does.
 */
#define _GNU_SOURCE
#include "kapi/compiler.h"

#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

typedef struct pool {
  int threads;
  pthread_barrier_t start, end;
  const kc_host_kernel_t *k;
  uint64_t groups, local;
  void **args;
  int quit;
} pool_t;

typedef struct {
  pool_t *p;
  int id;
} worker_arg_t;

static void *worker(void *v) {
  worker_arg_t *w = v;
  pool_t *p = w->p;
  for (;;) {
    pthread_barrier_wait(&p->start);
    if (p->quit) return NULL;
    kc_host_group_t g = {
        .group_range = {p->groups, 1, 1}, .local_range = {p->local, 1, 1}, .args = p->args};
    uint64_t lo = p->groups * (uint64_t)w->id / (uint64_t)p->threads;
    uint64_t hi = p->groups * (uint64_t)(w->id + 1) / (uint64_t)p->threads;
    for (uint64_t i = lo; i < hi; i++) {
      g.group_id[0] = i;
      p->k->run(&g);
    }
    pthread_barrier_wait(&p->end);
  }
}

static void pool_run(pool_t *p, const kc_host_kernel_t *k, uint64_t groups, uint64_t local,
                     void **args) {
  p->k = k, p->groups = groups, p->local = local, p->args = args;
  pthread_barrier_wait(&p->start);
  pthread_barrier_wait(&p->end);
}

static kc_host_module_t *finalise(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return fprintf(stderr, "cannot open %s\n", path), exit(1), NULL;
  fseek(f, 0, SEEK_END);
  size_t n = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  void *spv = malloc(n);
  if (fread(spv, 1, n, f) != n) exit(1);
  fclose(f);
  kc_host_module_t *m;
  char *log;
  double t0 = now();
  if (kc_host_finalise(spv, n, &m, &log) != KC_OK) fprintf(stderr, "%s\n", log), exit(1);
  printf("finalise %s: %.0f ms\n", path, (now() - t0) * 1e3);
  free(spv);
  return m;
}

static void triad(pool_t *p, const kc_host_kernel_t *k) {
  size_t n = (size_t)1 << 25;
  double *a = malloc(n * 8), *b = malloc(n * 8), *c = malloc(n * 8), s = 3.0;
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; i++)
    a[i] = 0, b[i] = (double)i, c[i] = 1.0;
  void *args[4] = {&a, &b, &c, &s};
  double bk = 1e9, bo = 1e9;
  for (int r = 0; r < 10; r++) {
    double t0 = now();
    pool_run(p, k, n / 4096, 4096, args);
    double t1 = now();
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++)
      a[i] = b[i] + s * c[i];
    double t2 = now();
    bk = fmin(bk, t1 - t0), bo = fmin(bo, t2 - t1);
  }
  double bytes = 24.0 * (double)n;
  printf("triad n=2^25 doubles, %d threads: kernel %.1f GB/s, C/OpenMP %.1f GB/s, ratio %.2f\n",
         p->threads, bytes / bk * 1e-9, bytes / bo * 1e-9, bo / bk);
  free(a), free(b), free(c);
}

static void pairwise(pool_t *p, const kc_host_kernel_t *k, long n, long d) {
  double *x = malloc(sizeof(double) * (size_t)(n * d)),
         *dist = malloc(sizeof(double) * (size_t)(n * n));
  for (long i = 0; i < n * d; i++)
    x[i] = sin((double)i);
  void *args[5] = {&x, &x, &dist, &n, &d};
  double bk = 1e9, bo = 1e9;
  for (int r = 0; r < 10; r++) {
    double t0 = now();
    pool_run(p, k, (uint64_t)n / 64, 64, args);
    double t1 = now();
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++)
      for (long j = 0; j < n; j++) {
        double s = 0;
        for (long q = 0; q < d; q++) {
          double t = x[i * d + q] - x[j * d + q];
          s += t * t;
        }
        dist[i * n + j] = sqrt(s);
      }
    double t2 = now();
    bk = fmin(bk, t1 - t0), bo = fmin(bo, t2 - t1);
  }
  printf("pairwise n=%ld d=%ld, %d threads: kernel %.2f ms, C/OpenMP %.2f ms, ratio %.2f\n", n, d,
         p->threads, bk * 1e3, bo * 1e3, bo / bk);
  free(x), free(dist);
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : omp_get_max_threads();
  const char *spv = argc > 2 ? argv[2] : KAPI_HOST_FIXTURES "/kernels.spv";
  omp_set_num_threads(threads);
  kc_host_module_t *m = finalise(spv);
  pool_t p = {.threads = threads};
  pthread_barrier_init(&p.start, NULL, (unsigned)threads + 1);
  pthread_barrier_init(&p.end, NULL, (unsigned)threads + 1);
  pthread_t *t = calloc((size_t)threads, sizeof *t);
  worker_arg_t *wa = calloc((size_t)threads, sizeof *wa);
  for (int i = 0; i < threads; i++) {
    wa[i] = (worker_arg_t){&p, i};
    pthread_create(&t[i], NULL, worker, &wa[i]);
  }
  triad(&p, kc_host_module_find(m, "triad"));
  pairwise(&p, kc_host_module_find(m, "pairwise"), 4096, 3);
  p.quit = 1;
  pthread_barrier_wait(&p.start);
  for (int i = 0; i < threads; i++)
    pthread_join(t[i], NULL);
  kc_host_module_destroy(m);
  free(t), free(wa);
  return 0;
}
