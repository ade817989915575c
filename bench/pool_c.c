/* The CPU device's thread pool on its own (runtime/drivers/cpu/cpu_pool.c, no Python, no
 * kernel): what one launch of 64 groups costs against the number of participants, under the
 * scheme before (cpu_launch_t.legacy) and the default, alternating in one process.
 *   empty: groups that do nothing (the pool's own cost per launch, every participant may join);
 *   work:  groups of 2 us each (128 us of work: 8 us per participant on 16);
 *   gap:   empty launches 1 ms apart (the workers asleep: the wake path).
 * Median ns per launch over batches.
 *   build/bench/pool_c [participants...]   (default 1 2 4 8 ... and all CPUs) */
#define _GNU_SOURCE
#include "cpu_driver.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static _Atomic uint64_t groups_run;
static uint64_t work_ns;

static kc_status_t group_fn(const kc_host_group_t *g) {
  if (work_ns) {
    uint64_t until = now_ns() + work_ns;
    while (now_ns() < until)
      ;
  }
  atomic_fetch_add_explicit(&groups_run, g->count, memory_order_relaxed);
  return KC_OK;
}

static int cmp(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

enum { GROUPS = 64, BATCHES = 7 };

/* Median over BATCHES of the mean ns per launch of `per` launches (gap_us: sleep between
 * launches, each timed alone, median of them). */
static uint64_t measure(cpu_pool_t *pool, bool legacy, int per, int gap_us) {
  cpu_launch_t l = {
      .run = group_fn, .group_count = {GROUPS, 1, 1}, .local_size = {64, 1, 1}, .legacy = legacy};
  for (int i = 0; i < 50; i++)
    cpu_pool_run(pool, &l);
  uint64_t s[256];
  int n = gap_us ? (per < 256 ? per : 256) : BATCHES;
  atomic_store(&groups_run, 0);
  uint64_t launches = 0;
  for (int b = 0; b < n; b++) {
    if (gap_us) {
      struct timespec d = {0, (long)gap_us * 1000};
      nanosleep(&d, NULL);
      uint64_t t0 = now_ns();
      cpu_pool_run(pool, &l);
      s[b] = now_ns() - t0;
      launches++;
    } else {
      uint64_t t0 = now_ns();
      for (int i = 0; i < per; i++)
        cpu_pool_run(pool, &l);
      s[b] = (now_ns() - t0) / (uint64_t)per;
      launches += (uint64_t)per;
    }
  }
  if (atomic_load(&groups_run) != launches * GROUPS) {
    fprintf(stderr, "pool_c: %llu groups ran, %llu expected\n",
            (unsigned long long)atomic_load(&groups_run), (unsigned long long)(launches * GROUPS));
    exit(1);
  }
  qsort(s, (size_t)n, sizeof s[0], cmp);
  return s[n / 2];
}

int main(int argc, char **argv) {
  cpu_set_t set;
  int cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
  int counts[64], nc = 0;
  for (int i = 1; i < argc && nc < 64; i++)
    counts[nc++] = atoi(argv[i]);
  if (!nc) {
    for (int p = 1; p < cpus && nc < 63; p *= 2)
      counts[nc++] = p;
    counts[nc++] = cpus;
  }
  printf("%d CPUs; %d groups per launch; median ns per launch (before: the pool's scheme "
         "before, KAPI_CPU_POOL=0)\n",
         cpus, GROUPS);
  printf("%12s %12s %12s %12s %12s %12s %12s\n", "participants", "empty bef.", "empty aft.",
         "2us x64 bef.", "2us x64 aft.", "1ms gap bef.", "1ms gap aft.");
  for (int c = 0; c < nc; c++) {
    cpu_pool_t *pool = cpu_pool_create(counts[c] > 1 ? (uint32_t)counts[c] - 1 : 0);
    if (!pool) return 1;
    uint64_t r[6] = {0};
    for (int round = 0; round < 2; round++) /* alternating, the better of two */
      for (int v = 0; v < 2; v++) {
        bool legacy = v == 0;
        work_ns = 0;
        uint64_t e = measure(pool, legacy, 2000, 0);
        work_ns = 2000;
        uint64_t w = measure(pool, legacy, 200, 0);
        work_ns = 0;
        uint64_t g = measure(pool, legacy, 100, 1000);
        uint64_t got[3] = {e, w, g};
        for (int k = 0; k < 3; k++)
          if (!r[2 * k + v] || got[k] < r[2 * k + v]) r[2 * k + v] = got[k];
      }
    printf("%12d %12llu %12llu %12llu %12llu %12llu %12llu\n", counts[c], (unsigned long long)r[0],
           (unsigned long long)r[1], (unsigned long long)r[2], (unsigned long long)r[3],
           (unsigned long long)r[4], (unsigned long long)r[5]);
    fflush(stdout);
    cpu_pool_destroy(pool);
  }
  return 0;
}
