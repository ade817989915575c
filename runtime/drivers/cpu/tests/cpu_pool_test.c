/* The thread pool on its own, with hand-written group functions standing in for finalised
 * kernels: every group runs exactly once with the right ids, concurrently running groups never
 * share local memory, tiny launches run inline, a launch after a pause wakes the workers, and
 * an interrupt check stops a launch. */
#include "cpu_driver.h"
#include "ze_test.h"

#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Every launch runs under the scheme the suite is testing (cpu_launch_t.legacy). */
static bool legacy_scheme;
static ze_result_t run(cpu_pool_t *pool, const cpu_launch_t *l) {
  cpu_launch_t copy = *l;
  copy.legacy = legacy_scheme;
  return cpu_pool_run(pool, &copy);
}

#define GX 7
#define GY 5
#define GZ 3

static _Atomic uint32_t hits[GZ][GY][GX];

/* args[0]: a uint32_t output array; args[1]: local buffer slot. Each group writes its linear
 * id into its local buffer, spins briefly, and checks no other group overwrote it. */
static _Atomic uint32_t clobbered;
static kc_status_t group_fn(const kc_host_group_t *g) {
  uint64_t x = g->group_id[0], y = g->group_id[1], z = g->group_id[2];
  if (g->group_range[0] != GX || g->group_range[1] != GY || g->group_range[2] != GZ || x >= GX ||
      y >= GY || z >= GZ)
    return KC_OK;
  atomic_fetch_add(&hits[z][y][x], 1);
  uint32_t *local = *(uint32_t *const *)g->args[1];
  uint32_t id = (uint32_t)(x + GX * (y + GY * z)) + 1;
  for (int i = 0; i < 64; i++)
    local[i] = id;
  for (volatile int spin = 0; spin < 20000; spin++)
    ;
  for (int i = 0; i < 64; i++)
    if (local[i] != id) atomic_fetch_add(&clobbered, 1);
  uint32_t *out = *(uint32_t *const *)g->args[0];
  out[id - 1] = id * (uint32_t)g->local_range[0];
  return KC_OK;
}

static void test_all_groups(cpu_pool_t *pool) {
  static uint32_t out[GX * GY * GZ];
  uint32_t *outp = out;
  void *slot = NULL;
  void *args[2] = {&outp, &slot};
  uint32_t index[1] = {1}, offset[1] = {0};
  cpu_launch_t l = {.run = group_fn,
                    .group_count = {GX, GY, GZ},
                    .local_size = {16, 2, 1},
                    .args = args,
                    .num_args = 2,
                    .num_local = 1,
                    .local_index = index,
                    .local_offset = offset,
                    .local_bytes = 256};
  for (int round = 0; round < 3; round++) {
    memset(hits, 0, sizeof hits);
    memset(out, 0, sizeof out);
    EXPECT(run(pool, &l) == ZE_RESULT_SUCCESS);
    int wrong = 0;
    for (int z = 0; z < GZ; z++)
      for (int y = 0; y < GY; y++)
        for (int x = 0; x < GX; x++)
          wrong += atomic_load(&hits[z][y][x]) != 1;
    EXPECT(wrong == 0);
    for (uint32_t i = 0; i < GX * GY * GZ; i++)
      wrong += out[i] != (i + 1) * 16;
    EXPECT(wrong == 0);
    if (round == 1) usleep(20000); /* let the workers fall asleep before the next launch */
  }
  EXPECT(atomic_load(&clobbered) == 0);
  EXPECT(slot == NULL); /* the launch's own slot is never used: each runner has its own */
}

static _Atomic int inline_ran;
static pthread_t launcher;
static kc_status_t inline_fn(const kc_host_group_t *g) {
  (void)g;
  if (pthread_equal(pthread_self(), launcher)) atomic_fetch_add(&inline_ran, 1);
  return KC_OK;
}

static void test_inline(cpu_pool_t *pool) {
  launcher = pthread_self();
  atomic_store(&inline_ran, 0);
  cpu_launch_t l = {.run = inline_fn, .group_count = {4, 1, 1}, .local_size = {8, 1, 1}};
  EXPECT(run(pool, &l) == ZE_RESULT_SUCCESS);
  EXPECT(atomic_load(&inline_ran) == 4); /* 32 work-items: all on the calling thread */
}

/* Many back-to-back small launches: workers join late or not at all, and every group of every
 * launch must still run exactly once (the launcher closes each launch only when it is done). */
static _Atomic uint64_t small_hits[3];
static kc_status_t small_fn(const kc_host_group_t *g) {
  atomic_fetch_add(&small_hits[g->group_id[0]], 1);
  return KC_OK;
}

static void test_many_small(cpu_pool_t *pool) {
  enum { LAUNCHES = 3000 };
  cpu_launch_t l = {.run = small_fn, .group_count = {3, 1, 1}, .local_size = {128, 1, 1}};
  memset(small_hits, 0, sizeof small_hits);
  int failed = 0;
  for (int i = 0; i < LAUNCHES; i++)
    failed += run(pool, &l) != ZE_RESULT_SUCCESS;
  EXPECT(failed == 0);
  for (int g = 0; g < 3; g++)
    EXPECT(atomic_load(&small_hits[g]) == LAUNCHES);
}

/* With a cost slot the pool learns: an empty kernel ends up inline on the caller, while a
 * heavy one keeps being shared with the workers. */
static _Atomic int on_worker;
static kc_status_t where_fn(const kc_host_group_t *g) {
  (void)g;
  if (!pthread_equal(pthread_self(), launcher)) atomic_store(&on_worker, 1);
  return KC_OK;
}
static kc_status_t heavy_fn(const kc_host_group_t *g) {
  for (volatile int spin = 0; spin < 200000; spin++)
    ;
  return where_fn(g);
}

/* A group the finaliser cannot run (no memory for fiber stacks) fails the whole launch with
 * OUT_OF_HOST_MEMORY, on the caller or on a worker, instead of ending the process. */
static kc_status_t failing_fn(const kc_host_group_t *g) {
  for (volatile int spin = 0; spin < 20000; spin++)
    ;
  return g->group_id[0] == 37 ? KC_ERR_OUT_OF_MEMORY : KC_OK;
}

static void test_group_failure(cpu_pool_t *pool) {
  cpu_launch_t l = {.run = failing_fn, .group_count = {64, 1, 1}, .local_size = {64, 1, 1}};
  EXPECT(run(pool, &l) == ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
  cpu_launch_t ok = {.run = small_fn, .group_count = {3, 1, 1}, .local_size = {128, 1, 1}};
  EXPECT(run(pool, &ok) == ZE_RESULT_SUCCESS); /* the next launch is unaffected */
}

/* Interrupts: 4000 groups of 1 ms would take seconds; the check, called from about 50 ms in,
 * stops the launch after its third call, and the next launch runs every group. */
static _Atomic uint32_t ran_groups, checks;
static kc_status_t slow_fn(const kc_host_group_t *g) {
  (void)g;
  atomic_fetch_add(&ran_groups, 1);
  nanosleep(&(struct timespec){0, 1000000}, NULL);
  return KC_OK;
}
static int third_call(void *ctx) {
  EXPECT(ctx == &checks);
  return atomic_fetch_add(&checks, 1) == 2;
}
static void test_interrupt(cpu_pool_t *pool) {
  EXPECT(cpu_set_interrupt_check(third_call, &checks) == ZE_RESULT_SUCCESS);
  cpu_launch_t l = {.run = slow_fn, .group_count = {4000, 1, 1}, .local_size = {256, 1, 1}};
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  EXPECT(run(pool, &l) == CPU_RESULT_INTERRUPTED);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double took = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  EXPECT(atomic_load(&checks) == 3 && took > 0.09 && took < 1.0);
  EXPECT(atomic_load(&ran_groups) < 4000);
  EXPECT(cpu_set_interrupt_check(NULL, NULL) == ZE_RESULT_SUCCESS);
  atomic_store(&ran_groups, 0);
  cpu_launch_t quick = {.run = slow_fn, .group_count = {40, 1, 1}, .local_size = {256, 1, 1}};
  EXPECT(run(pool, &quick) == ZE_RESULT_SUCCESS && atomic_load(&ran_groups) == 40);
  atomic_store(&ran_groups, 0);
  atomic_store(&checks, 0);
}

static void test_learning(cpu_pool_t *pool) {
  launcher = pthread_self();
  _Atomic uint32_t cost = 0;
  cpu_launch_t l = {
      .run = where_fn, .group_count = {64, 1, 1}, .local_size = {64, 1, 1}, .cost = &cost};
  for (int i = 0; i < 50; i++)
    EXPECT(run(pool, &l) == ZE_RESULT_SUCCESS);
  atomic_store(&on_worker, 0);
  EXPECT(run(pool, &l) == ZE_RESULT_SUCCESS);
  EXPECT(atomic_load(&cost) != 0 && atomic_load(&on_worker) == 0);
  _Atomic uint32_t heavy_cost = 0;
  cpu_launch_t h = {
      .run = heavy_fn, .group_count = {32, 1, 1}, .local_size = {4, 1, 1}, .cost = &heavy_cost};
  int shared = 0;
  for (int i = 0; i < 6; i++) {
    atomic_store(&on_worker, 0);
    EXPECT(run(pool, &h) == ZE_RESULT_SUCCESS);
    shared += i > 0 && atomic_load(&on_worker); /* after the first run the cost is known */
  }
  EXPECT(shared > 0);
}

/* Many groups of uneven cost over more threads than cores, with a cost slot that makes chunks
 * of tens of groups which shrink as blocks drain: across 30 launches every group runs exactly
 * once per launch (a scheme that lost or repeated a chunk, or a piece of one, fails here). */
enum { MANY = 10007 };
static _Atomic uint32_t many_hits[MANY];
static kc_status_t uneven_fn(const kc_host_group_t *g) {
  uint64_t id = g->group_id[0];
  for (volatile uint64_t spin = 0; spin < (id % 13) * 40; spin++)
    ;
  for (uint32_t i = 0; i < g->count; i++)
    atomic_fetch_add(&many_hits[id + i], 1);
  return KC_OK;
}

static void test_exactly_once(cpu_pool_t *pool) {
  memset(many_hits, 0, sizeof many_hits);
  _Atomic uint32_t cost = 25; /* ~100 ns per group of 64: chunks of about 80 groups */
  cpu_launch_t l = {
      .run = uneven_fn, .group_count = {MANY, 1, 1}, .local_size = {64, 1, 1}, .cost = &cost};
  for (int i = 0; i < 30; i++) {
    EXPECT(run(pool, &l) == ZE_RESULT_SUCCESS);
    if (i % 10 == 9) usleep(5000); /* some launches find the workers asleep */
  }
  int wrong = 0;
  for (int g = 0; g < MANY; g++)
    wrong += atomic_load(&many_hits[g]) != 30;
  EXPECT(wrong == 0);
}

/* Workers woken from sleep: a launch long enough for every worker finds them all joining
 * (the launcher wakes two, each of those two more, ...), though none was polling. */
#define TREE_WORKERS 7
static pthread_t seen_threads[TREE_WORKERS + 1];
static _Atomic uint32_t seen_count;
static pthread_mutex_t seen_lock = PTHREAD_MUTEX_INITIALIZER;
static kc_status_t napping_fn(const kc_host_group_t *g) {
  (void)g;
  pthread_t me = pthread_self();
  pthread_mutex_lock(&seen_lock);
  uint32_t n = atomic_load(&seen_count), i = 0;
  while (i < n && !pthread_equal(seen_threads[i], me))
    i++;
  if (i == n && n <= TREE_WORKERS) {
    seen_threads[n] = me;
    atomic_store(&seen_count, n + 1);
  }
  pthread_mutex_unlock(&seen_lock);
  nanosleep(&(struct timespec){0, 1000000}, NULL);
  return KC_OK;
}

static void test_wake_tree(void) {
  setenv("KAPI_CPU_SPIN_US", "0", 1); /* workers go to sleep at once */
  cpu_pool_t *pool = cpu_pool_create(TREE_WORKERS);
  unsetenv("KAPI_CPU_SPIN_US");
  EXPECT(pool != NULL);
  if (!pool) return;
  cpu_launch_t l = {.run = napping_fn, .group_count = {320, 1, 1}, .local_size = {64, 1, 1}};
  uint32_t best = 0;
  for (int round = 0; round < 4 && best < TREE_WORKERS + 1; round++) {
    usleep(20000);
    atomic_store(&seen_count, 0);
    EXPECT(run(pool, &l) == ZE_RESULT_SUCCESS);
    if (atomic_load(&seen_count) > best) best = atomic_load(&seen_count);
  }
  EXPECT(best == TREE_WORKERS + 1);
  cpu_pool_destroy(pool);
}

/* A long launch (known cost) wakes every worker at once, by the launcher (a kernel created
 * under KAPI_CPU_WIDE=1: cpu_launch_t.wide 2) or by the first worker that joins (WIDE=2), where
 * the wake tree would not: here joining workers wake nobody (KAPI_CPU_FANOUT=0) and the
 * launcher one (KAPI_CPU_WAKE=1), so without the wide wake (WIDE=0), or for a launch expected
 * to be short, at most one worker joins. */
static uint32_t participants_of(cpu_pool_t *pool, uint32_t cost_per_item, int rounds,
                                uint8_t wide) {
  _Atomic uint32_t cost = cost_per_item;
  cpu_launch_t l = {.run = napping_fn,
                    .group_count = {64, 1, 1},
                    .local_size = {64, 1, 1},
                    .cost = &cost,
                    .wide = wide};
  uint32_t best = 0;
  for (int round = 0; round < rounds; round++) {
    usleep(20000); /* every worker asleep */
    atomic_store(&cost, cost_per_item);
    atomic_store(&seen_count, 0);
    EXPECT(run(pool, &l) == ZE_RESULT_SUCCESS);
    if (atomic_load(&seen_count) > best) best = atomic_load(&seen_count);
  }
  return best;
}

static void test_wide_wake(void) {
  /* 1 ms per group of 64 items, in 1/16 ns per item: 64 ms for the launch, 8 ms each. */
  const uint32_t long_cost = 1000000 / 64 * 16;
  /* 64 groups in 24 us: shared (over 4 us), but 3 us each, well under the 50 us mark. */
  const uint32_t short_cost = 24000 / (64 * 64) * 16;
  setenv("KAPI_CPU_SPIN_US", "0", 1);
  setenv("KAPI_CPU_WAKE", "1", 1);
  setenv("KAPI_CPU_FANOUT", "0", 1);
  for (int mode = 0; mode <= 2; mode++) {
    cpu_pool_t *pool = cpu_pool_create(TREE_WORKERS);
    EXPECT(pool != NULL);
    if (!pool) continue;
    uint32_t many = participants_of(pool, long_cost, mode ? 4 : 2, (uint8_t)(mode + 1));
    if (legacy_scheme) /* the scheme before wakes every sleeper at each launch */
      EXPECT(many == TREE_WORKERS + 1);
    else
      EXPECT(mode ? many == TREE_WORKERS + 1 : many <= 2);
    if (!legacy_scheme && mode)
      EXPECT(participants_of(pool, short_cost, 1, (uint8_t)(mode + 1)) <= 2);
    cpu_pool_destroy(pool);
  }
  unsetenv("KAPI_CPU_FANOUT");
  unsetenv("KAPI_CPU_WAKE");
  unsetenv("KAPI_CPU_SPIN_US");
}

/* Every test under one scheme of chunking and waking. */
static void suite(bool legacy) {
  legacy_scheme = legacy;
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  cpu_pool_t *pool = cpu_pool_create(cores > 1 ? (uint32_t)cores - 1 : 1);
  EXPECT(pool != NULL);
  if (pool) {
    test_all_groups(pool);
    test_inline(pool);
    test_many_small(pool);
    test_learning(pool);
    test_group_failure(pool);
    test_interrupt(pool);
    test_exactly_once(pool);
    cpu_pool_destroy(pool);
  }
  cpu_pool_t *many = cpu_pool_create(7); /* more threads than most test machines' cores */
  if (many) {
    test_exactly_once(many);
    cpu_pool_destroy(many);
  }
  test_wake_tree();
  test_wide_wake();
  cpu_pool_t *none = cpu_pool_create(0); /* no workers: the caller does it all */
  if (none) {
    test_all_groups(none);
    test_group_failure(none);
    test_interrupt(none);
    cpu_pool_destroy(none);
  }
}

int main(void) {
  suite(false);
  suite(true); /* the scheme before */
  return ze_test_result("cpu_pool_test");
}
