/* The persistent thread pool that runs a launch's work-groups: cores-1 workers plus the thread
 * that launches. The groups are split into one contiguous block per participant, as OpenMP's
 * static schedule splits a loop: each takes chunks of its own block first (so a thread streams
 * the same pages every launch, the pages it touched first, on its NUMA node), then chunks of
 * the others' blocks (so a late or busy thread delays nobody). Each participant has its own
 * scratch (argument array and local-memory buffer) so concurrently running groups never
 * share local memory. The launcher never waits for a worker that has not joined: it runs what
 * is left itself, then closes the launch once no joined worker is still busy (so a tiny launch
 * costs at most one futex wake, and a late worker just finds the launch closed). Launches with
 * few work-items run on the caller alone. Nothing on the launch path allocates once the scratch
 * buffers have grown to the largest launch seen.
 *
 * Finishing and waking (cpu_launch_t.legacy, from KAPI_CPU_POOL=0 when the kernel was created,
 * gives the scheme before, for comparisons): chunks shrink
 * as a block drains (half of what is left, down to a quarter of a chunk), so the last groups
 * handed out are small and a thread that took one late holds the launch up least; an idle
 * worker polls for a bounded time (KAPI_CPU_SPIN_US, 100 by default) before it sleeps; and the
 * launcher wakes only KAPI_CPU_WAKE sleeping workers (2), each worker that joins waking two
 * more while the launch has room for them, a tree instead of one system call that wakes every
 * sleeper before the launcher starts its own groups (and wakes workers a small launch has no
 * chunks for). */
#define _GNU_SOURCE
#include "cpu_driver.h"

#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Launches with at most this many work-items, or one group, run on the caller: waking a
 * worker costs more than they take. */
#define INLINE_ITEMS 256u
/* Once a launch site's cost is known: launches expected to take less than INLINE_NS run on the *
 * caller, and no chunk handed to a worker is expected to take less than CHUNK_NS
 * (KAPI_CPU_CHUNK_NS, read when the pool is created, for measuring other values). */
#define INLINE_NS 4000u
#define CHUNK_NS 8000u
/* Polls before a worker or the launcher goes to sleep on a futex (KAPI_CPU_POOL=0), and the
 * default time an idle worker polls otherwise (KAPI_CPU_SPIN_US). */
#define SPIN_POLLS 2000
#define SPIN_NS 100000u
/* Sleepers the launcher wakes (KAPI_CPU_WAKE), and each worker that joins wakes. */
#define WAKE_FIRST 2u
/* How often a polling thread offers its CPU to others (KAPI_CPU_YIELD=0: never). */
#define YIELD_NS 10000u
#define WAKE_FANOUT 2
/* Launches expected to take at least WIDE_NS with every participant wake every worker at
 * once, the way WIDE_MODE says unless the kernel asks otherwise (cpu_launch_t.wide): 0, two by
 * two as any launch; 1, by the launcher; 2, by the first workers that join. */
#define WIDE_MODE 0u
#define WIDE_NS 50000u
#define CACHE_LINE 64

/* A participant's private buffers for the groups it runs, a cache line apart from the next
 * participant's. */
typedef struct cpu_scratch {
  _Alignas(CACHE_LINE) void **args;
  uint32_t args_cap;
  void **slots; /* slots[j] holds the local buffer of local-memory argument j */
  uint32_t slots_cap;
  uint8_t *local;
  size_t local_cap;
} cpu_scratch_t;

/* One participant's home block of group indices, [next, end) still to hand out. */
typedef struct cpu_block {
  _Alignas(CACHE_LINE) _Atomic uint64_t next;
  uint64_t end;
} cpu_block_t;

typedef struct cpu_worker {
  struct cpu_pool *pool;
  pthread_t thread;
  uint32_t index;
  int last_cpu; /* the CPU it ran its last launch on (KAPI_CPU_POOL_STATS), -1 before */
} cpu_worker_t;

/* pool->state packs the launch generation (high 32 bits), the number of workers that joined it
 * and are still working (bits 1..31) and a "closed" bit (bit 0). Workers join with a CAS that
 * fails once the launch is closed or replaced, so the launch fields below are only rewritten
 * while no worker can be reading them. */
#define STATE_GEN(s) ((uint32_t)((s) >> 32))
#define STATE_ACTIVE(s) ((uint32_t)((s) >> 1) & 0x7fffffffu)
#define STATE_CLOSED 1ull
#define STATE_ONE_ACTIVE 2ull

/* Fields that different threads write often sit on cache lines of their own, so workers
 * spinning on the state do not slow down the group counter and the other way round. */

struct cpu_pool {
  uint32_t threads;
  cpu_worker_t *workers;
  cpu_scratch_t *scratch; /* threads + 1: the last is the launcher's */
  cpu_block_t *blocks;    /* threads + 1 home blocks: worker i's is i, the launcher's the last */
  pthread_mutex_t lock;   /* one launch at a time */
  /* The launch: written by the launcher while the state is closed. */
  const cpu_launch_t *launch;
  uint64_t total, chunk;
  uint64_t min_chunk;        /* the smallest piece chunks shrink to (guided scheme) */
  uint32_t nblocks;          /* blocks this launch uses (1 when the launcher runs it alone) */
  _Atomic uint32_t max_join; /* workers that may join: one per chunk beyond the launcher's */
  bool stop;
  bool share; /* KAPI_CPU_SHARE=1: every launch of two or more groups goes to the workers */
  /* The current or last launch's cpu_launch_t.legacy: fixed chunks, poll-count spins, every
   * sleeper woken at once. Set by the launcher while the state is closed; read by idle
   * workers too, hence atomic. */
  _Atomic bool legacy;
  uint64_t spin_ns;    /* how long an idle worker polls before it sleeps */
  uint32_t wake_first; /* sleepers the launcher wakes itself */
  uint32_t fanout;     /* sleepers each joining worker wakes (KAPI_CPU_FANOUT) */
  /* Long launches (expected to take wide_ns or more with every participant, KAPI_CPU_WIDE_US)
   * wake their workers all at once rather than two by two, as cpu_launch_t.wide says. */
  uint64_t wide_ns;
  uint32_t fanout_now; /* the current launch's fanout; written while the state is closed */
  uint64_t begun_ns;   /* when the current launch was published (KAPI_CPU_POOL_STATS) */
  bool learn_whole;    /* unless KAPI_CPU_LEARN=1: learn from the whole launch (see learn()) */
  uint64_t chunk_ns;   /* CHUNK_NS or KAPI_CPU_CHUNK_NS */
  bool yield;          /* polls offer the CPU to others (KAPI_CPU_YIELD, on by default) */
  _Alignas(CACHE_LINE) _Atomic uint64_t state; /* generation | active workers | closed */
  _Alignas(CACHE_LINE) _Atomic uint32_t wake;  /* the generation, as a futex word */
  _Atomic uint32_t sleepers;
  _Alignas(CACHE_LINE) uint32_t idle; /* zed flag: the last joined worker left */
  _Atomic uint32_t failed;            /* a participant had no scratch memory */
  _Atomic uint32_t group_failed;      /* a group could not run (no fiber stacks) */
  _Atomic uint32_t interrupted;       /* the launcher's interrupt check fired */
};

/* KAPI_CPU_POOL_STATS=1 (read when the first pool is created): what the shared launches of
 * the process cost, printed to stderr at exit. Off, the launch path reads no extra clock. */
static struct {
  _Atomic uint64_t launches, joins, join_ns, groups, launcher_groups, own_ns, tail_ns;
  _Atomic uint64_t last_join_ns, stolen, moves, wide;
  uint32_t threads;
} stats;
/* The latest join of the current launch, in ns after it began. */
static _Atomic uint64_t launch_last_join;
static bool stats_on;

static void stats_print(void) {
  uint64_t n = atomic_load(&stats.launches);
  if (!n) return;
  double groups = (double)atomic_load(&stats.groups);
  double joins = (double)atomic_load(&stats.joins);
  fprintf(stderr,
          "kapi-cpu-pool: %llu shared launches; %.2f of %u workers joined each; a worker joined "
          "%.1f us after the launch began (mean); the launcher ran %.0f%% of the groups, in "
          "%.1f us, then waited %.1f us for the workers (means per launch)\n",
          (unsigned long long)n, joins / (double)n, stats.threads,
          joins ? (double)atomic_load(&stats.join_ns) / 1e3 / joins : 0.0,
          groups ? 100.0 * (double)atomic_load(&stats.launcher_groups) / groups : 0.0,
          (double)atomic_load(&stats.own_ns) / 1e3 / (double)n,
          (double)atomic_load(&stats.tail_ns) / 1e3 / (double)n);
  fprintf(stderr,
          "kapi-cpu-pool: the last worker joined %.1f us after the launch began (mean); %.1f%% "
          "of the groups ran outside their home block; a worker ran on another CPU than in its "
          "last launch in %.1f%% of its joins; %llu launches woke every worker at once\n",
          (double)atomic_load(&stats.last_join_ns) / 1e3 / (double)n,
          groups ? 100.0 * (double)atomic_load(&stats.stolen) / groups : 0.0,
          joins ? 100.0 * (double)atomic_load(&stats.moves) / joins : 0.0,
          (unsigned long long)atomic_load(&stats.wide));
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

static void futex_wait(_Atomic uint32_t *word, uint32_t expect) {
  syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expect, NULL, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *word, int n) {
  syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

/* Grows buf to hold n items of size sz; false when out of memory. Only the first launches of
 * a given size get here. */
static bool grow(void **buf, uint32_t *cap, uint32_t n, size_t sz) {
  if (n <= *cap) return true;
  void *p = realloc(*buf, n * sz);
  if (!p) return false;
  *buf = p;
  *cap = n;
  return true;
}

/* The argument array this participant passes to the kernel (*out): the launch's own when there
 * is no local memory, otherwise a copy whose local-memory entries point at this participant's
 * slots. false when out of memory. */
static bool scratch_args(cpu_scratch_t *s, const cpu_launch_t *l, void *const **out) {
  *out = l->args;
  if (l->num_local == 0) return true;
  if (!grow((void **)&s->args, &s->args_cap, l->num_args, sizeof(void *)) ||
      !grow((void **)&s->slots, &s->slots_cap, l->num_local, sizeof(void *)))
    return false;
  size_t bytes = (size_t)l->local_bytes * (l->batch ? l->batch : 1); /* a batch's buffers */
  if (bytes > s->local_cap) {
    void *p = NULL;
    if (posix_memalign(&p, CPU_LOCAL_ALIGN, bytes) != 0) return false;
    free(s->local);
    s->local = p;
    s->local_cap = bytes;
  }
  memcpy(s->args, l->args, l->num_args * sizeof(void *));
  for (uint32_t j = 0; j < l->num_local; j++) {
    s->slots[j] = s->local + l->local_offset[j];
    s->args[l->local_index[j]] = &s->slots[j];
  }
  *out = s->args;
  return true;
}

/* The calling thread's interrupt check (cpu_set_interrupt_check). */
static _Thread_local struct {
  int (*check)(void *ctx);
  void *ctx;
} interrupt;

ze_result_t cpu_set_interrupt_check(int (*check)(void *ctx), void *ctx) {
  interrupt.check = check;
  interrupt.ctx = ctx;
  return ZE_RESULT_SUCCESS;
}

/* What a participant checks between groups: the pool's interrupted flag, and for the launcher
 * with a check installed, the check itself once per CPU_INTERRUPT_POLL_NS. Reading the clock
 * costs about as much as a tiny group, so the launcher reads it about once per millisecond:
 * every `stride` groups, the stride doubling while groups are quick and halving while they are
 * slow. A one-group launch never reads it. */
typedef struct poll {
  cpu_pool_t *pool;
  bool launcher;
  uint32_t left, stride; /* groups until the next clock read; groups between reads */
  uint64_t last_ns;      /* the last clock read */
  uint64_t next_ns;      /* when the launcher next calls the check (0: not yet set) */
} poll_t;

#define POLL_INIT(p, is_launcher)                                                                  \
  { .pool = (p), .launcher = (is_launcher), .left = 2, .stride = 1 }

static bool interrupted(poll_t *p) {
  if (atomic_load_explicit(&p->pool->interrupted, memory_order_relaxed)) return true;
  if (!p->launcher || !interrupt.check || --p->left) return false;
  uint64_t now = zed_now_ns();
  if (p->next_ns && now - p->last_ns < 1000000 && p->stride < 65536) p->stride *= 2;
  if (now - p->last_ns > 4000000 && p->stride > 1) p->stride /= 2;
  p->left = p->stride;
  p->last_ns = now;
  if (!p->next_ns) p->next_ns = now + CPU_INTERRUPT_POLL_NS;
  if (now < p->next_ns) return false;
  p->next_ns = now + CPU_INTERRUPT_POLL_NS;
  if (!interrupt.check(interrupt.ctx)) return false;
  atomic_store(&p->pool->interrupted, 1);
  return true;
}

/* Runs groups [first, last) of the launch in linear order (dimension 0 fastest), in batches of
 * up to l->batch groups along dimension 0 per run call. False when a group could not run (the
 * finaliser had no memory for its fiber stacks) or the launch was interrupted. */
static bool run_groups(const cpu_launch_t *l, void *const *args, uint64_t first, uint64_t last,
                       poll_t *poll) {
  kc_host_group_t g = {.args = args, .count = 1, .local_stride = l->local_bytes};
  memcpy(g.group_range, l->group_count, sizeof g.group_range);
  memcpy(g.local_range, l->local_size, sizeof g.local_range);
  uint64_t nx = l->group_count[0], ny = l->group_count[1], batch = l->batch ? l->batch : 1;
  g.group_id[0] = first % nx;
  g.group_id[1] = (first / nx) % ny;
  g.group_id[2] = first / (nx * ny);
  for (uint64_t i = first; i < last; i += g.count) {
    if (interrupted(poll)) return false;
    g.count = batch;
    if (g.count > last - i) g.count = last - i;
    if (g.count > nx - g.group_id[0]) g.count = nx - g.group_id[0];
    if (l->run(&g) != KC_OK) return false;
    if ((g.group_id[0] += g.count) == nx) {
      g.group_id[0] = 0;
      if (++g.group_id[1] == ny) {
        g.group_id[1] = 0;
        g.group_id[2]++;
      }
    }
  }
  return true;
}

/* The next chunk of block b, or false when it is all handed out. Fixed chunks (legacy) or
 * guided ones: a chunk, or half of what is left once that is less than two chunks, but never
 * less than min_chunk. Either way every group is handed out exactly once: [first, last) is
 * claimed by moving b->next past it atomically. */
static bool take(cpu_pool_t *pool, cpu_block_t *b, uint64_t *first, uint64_t *last) {
  uint64_t f = atomic_load_explicit(&b->next, memory_order_relaxed);
  if (f >= b->end) return false;
  uint64_t chunk = pool->chunk;
  /* Whole chunks by fetch-add (an atomic that cannot fail, however many threads take at once)
   * while two or more are left, and always in the legacy scheme; the tail by CAS, shrinking. */
  if (atomic_load_explicit(&pool->legacy, memory_order_relaxed) || b->end - f >= 2 * chunk ||
      pool->min_chunk >= chunk) {
    f = atomic_fetch_add_explicit(&b->next, chunk, memory_order_relaxed);
    if (f >= b->end) return false;
  } else {
    for (;;) {
      uint64_t left = b->end - f, n = left / 2;
      if (n > chunk) n = chunk;
      if (n < pool->min_chunk) n = pool->min_chunk;
      if (n > left || n == 0) n = left;
      if (atomic_compare_exchange_weak_explicit(&b->next, &f, f + n, memory_order_relaxed,
                                                memory_order_relaxed)) {
        chunk = n;
        break;
      }
      if (f >= b->end) return false;
    }
  }
  *first = f;
  *last = f + chunk < b->end ? f + chunk : b->end;
  return true;
}

/* Kernels' streaming stores (MOVNT*, from store_nontemporal) are weakly ordered: each thread
 * fences after its last group, so that they are visible before the launch is seen to end. */
static inline void order_streaming_stores(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_sfence();
#endif
}

/* A participant's share: chunks of its home block, then of the others, until none are left. */
static void participate_groups(cpu_pool_t *pool, cpu_scratch_t *s, uint32_t home, poll_t *poll,
                               uint64_t *ran) {
  const cpu_launch_t *l = pool->launch;
  void *const *args;
  if (!scratch_args(s, l, &args)) {
    atomic_store(&pool->failed, 1);
    return; /* the others finish the groups */
  }
  uint32_t nb = pool->nblocks;
  for (uint32_t i = 0; i < nb; i++) {
    cpu_block_t *b = &pool->blocks[(home + i) % nb];
    uint64_t first, last;
    while (take(pool, b, &first, &last)) {
      *ran += last - first;
      if (i && stats_on)
        atomic_fetch_add_explicit(&stats.stolen, last - first, memory_order_relaxed);
      if (!run_groups(l, args, first, last, poll)) {
        if (!atomic_load(&pool->interrupted)) atomic_store(&pool->group_failed, 1);
        return;
      }
    }
  }
}

static void participate(cpu_pool_t *pool, cpu_scratch_t *s, uint32_t home, poll_t *poll,
                        uint64_t *ran) {
  participate_groups(pool, s, home, poll, ran);
  order_streaming_stores();
}

/* True when some block still has groups nobody took. */
static bool groups_left(cpu_pool_t *pool) {
  for (uint32_t i = 0; i < pool->nblocks; i++)
    if (atomic_load_explicit(&pool->blocks[i].next, memory_order_relaxed) < pool->blocks[i].end)
      return true;
  return false;
}

/* Returns once the generation differs from seen: a short spin, then sleep on the futex. */
static void await_generation(cpu_pool_t *pool, uint32_t seen) {
  if (atomic_load_explicit(&pool->legacy, memory_order_relaxed)) {
    for (int i = 0; i < SPIN_POLLS; i++) {
      if (STATE_GEN(atomic_load_explicit(&pool->state, memory_order_acquire)) != seen) return;
      cpu_relax();
    }
  } else {
    /* Polls for spin_ns (a pause costs from ~10 to ~140 cycles by CPU model, so a count of
     * polls is no bound in time): the clock read every 64 polls, and the CPU offered to any
     * other runnable thread every YIELD_NS, so that on a loaded machine a polling worker does
     * not hold up the launcher (or anyone) sharing its CPU for the whole poll. */
    uint64_t until = 0, yield_at = 0;
    for (uint32_t i = 1;; i++) {
      if (STATE_GEN(atomic_load_explicit(&pool->state, memory_order_acquire)) != seen) return;
      cpu_relax();
      if (i % 64 == 0) {
        uint64_t now = zed_now_ns();
        if (!until) {
          until = now + pool->spin_ns;
          yield_at = now + YIELD_NS;
        } else if (now >= until) {
          break;
        } else if (now >= yield_at && pool->yield) {
          sched_yield();
          yield_at = zed_now_ns() + YIELD_NS;
        }
      }
    }
  }
  while (STATE_GEN(atomic_load(&pool->state)) == seen) {
    atomic_fetch_add(&pool->sleepers, 1);
    if (atomic_load(&pool->wake) == seen) futex_wait(&pool->wake, seen);
    atomic_fetch_sub(&pool->sleepers, 1);
  }
}

/* Joins launch gen unless it is closed or already replaced, or full. *room: how many more
 * workers may join after this one. */
static bool join(cpu_pool_t *pool, uint32_t gen, uint32_t *room) {
  uint64_t s = atomic_load(&pool->state);
  /* max_join may belong to a newer launch by now; the CAS then fails on the generation. */
  uint32_t cap = atomic_load_explicit(&pool->max_join, memory_order_relaxed);
  while (STATE_GEN(s) == gen && !(s & STATE_CLOSED) && STATE_ACTIVE(s) < cap)
    if (atomic_compare_exchange_weak(&pool->state, &s, s + STATE_ONE_ACTIVE)) {
      *room = cap - STATE_ACTIVE(s) - 1;
      return true;
    }
  return false;
}

static void leave(cpu_pool_t *pool) {
  uint64_t s = atomic_fetch_sub(&pool->state, STATE_ONE_ACTIVE) - STATE_ONE_ACTIVE;
  if (STATE_ACTIVE(s) == 0) zed_set_flag(&pool->idle);
}

static void *worker_main(void *arg) {
  cpu_worker_t *w = arg;
  cpu_pool_t *pool = w->pool;
  uint32_t seen = 0;
  for (;;) {
    await_generation(pool, seen);
    seen = STATE_GEN(atomic_load_explicit(&pool->state, memory_order_acquire));
    if (pool->stop) break;
    uint32_t room;
    if (!join(pool, seen, &room)) continue; /* the launcher finished without us */
    if (stats_on) {
      uint64_t after = zed_now_ns() - pool->begun_ns;
      atomic_fetch_add_explicit(&stats.joins, 1, memory_order_relaxed);
      atomic_fetch_add_explicit(&stats.join_ns, after, memory_order_relaxed);
      uint64_t latest = atomic_load_explicit(&launch_last_join, memory_order_relaxed);
      while (latest < after &&
             !atomic_compare_exchange_weak_explicit(&launch_last_join, &latest, after,
                                                    memory_order_relaxed, memory_order_relaxed))
        ;
      int cpu = sched_getcpu();
      if (w->last_cpu >= 0 && cpu != w->last_cpu)
        atomic_fetch_add_explicit(&stats.moves, 1, memory_order_relaxed);
      w->last_cpu = cpu;
    }
    /* The wake tree: pass the wake on while the launch has room for more workers. */
    if (!atomic_load_explicit(&pool->legacy, memory_order_relaxed) && room && pool->fanout_now &&
        atomic_load(&pool->sleepers))
      futex_wake(&pool->wake, room < pool->fanout_now ? (int)room : (int)pool->fanout_now);
    poll_t poll = POLL_INIT(pool, false);
    uint64_t ran = 0;
    participate(pool, &pool->scratch[w->index], w->index, &poll, &ran);
    leave(pool);
  }
  return NULL;
}

static void scratch_free(cpu_scratch_t *s) {
  free(s->args);
  free(s->slots);
  free(s->local);
}

/* Participants of a device's pool: one per core, or KAPI_CPU_THREADS (a test setting: more
 * threads than cores make races between concurrent work-groups likely on a small machine). */
uint32_t cpu_pool_participants(uint32_t cores) {
  const char *v = getenv("KAPI_CPU_THREADS");
  long n = v ? strtol(v, NULL, 10) : 0;
  return n > 0 && n <= 4096 ? (uint32_t)n : cores;
}

/* KAPI_CPU_PIN=1: worker i runs only on the (i + 1)-th CPU of the process's set (wrapping),
 * the first left to the launching thread, so that a worker's home block of a launch stays in
 * one core's caches from launch to launch. For measurements. */
static void pin_worker(pthread_t t, const cpu_set_t *cpus, uint32_t i) {
  int n = CPU_COUNT(cpus);
  if (n <= 1) return;
  int want = (int)((i + 1) % (uint32_t)n), seen = 0;
  for (int c = 0; c < CPU_SETSIZE; c++) {
    if (!CPU_ISSET(c, cpus)) continue;
    if (seen++ == want) {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(c, &one);
      pthread_setaffinity_np(t, sizeof one, &one);
      return;
    }
  }
}

/* Starts as many workers as the system allows, up to threads. */
cpu_pool_t *cpu_pool_create(uint32_t threads) {
  cpu_pool_t *pool = aligned_alloc(CACHE_LINE, sizeof(*pool));
  if (!pool) return NULL;
  memset(pool, 0, sizeof(*pool));
  pool->workers = calloc(threads ? threads : 1, sizeof(*pool->workers));
  /* Cache-line aligned, as the type asks (its size is a multiple of the line). */
  pool->scratch = aligned_alloc(CACHE_LINE, (threads + 1) * sizeof(*pool->scratch));
  if (pool->scratch) memset(pool->scratch, 0, (threads + 1) * sizeof(*pool->scratch));
  pool->blocks = aligned_alloc(CACHE_LINE, (threads + 1) * sizeof(*pool->blocks));
  if (pool->blocks) memset(pool->blocks, 0, (threads + 1) * sizeof(*pool->blocks));
  if (!pool->workers || !pool->scratch || !pool->blocks) {
    free(pool->workers);
    free(pool->scratch);
    free(pool->blocks);
    free(pool);
    return NULL;
  }
  pthread_mutex_init(&pool->lock, NULL);
  atomic_store(&pool->state, STATE_CLOSED); /* generation 0: no launch yet */
  const char *share = getenv("KAPI_CPU_SHARE");
  pool->share = share && strcmp(share, "1") == 0;
  const char *st = getenv("KAPI_CPU_POOL_STATS");
  if (st && strcmp(st, "1") == 0 && !stats_on) {
    stats_on = true;
    stats.threads = threads;
    atexit(stats_print);
  }
  const char *spin = getenv("KAPI_CPU_SPIN_US");
  long spin_us = spin ? strtol(spin, NULL, 10) : -1;
  pool->spin_ns = spin_us >= 0 && spin_us <= 1000000 ? (uint64_t)spin_us * 1000 : SPIN_NS;
  const char *yield_env = getenv("KAPI_CPU_YIELD");
  pool->yield = !(yield_env && strcmp(yield_env, "0") == 0);
  const char *chunk_env = getenv("KAPI_CPU_CHUNK_NS");
  long chunk_ns = chunk_env ? strtol(chunk_env, NULL, 10) : 0;
  pool->chunk_ns = chunk_ns > 0 && chunk_ns <= 1000000000L ? (uint64_t)chunk_ns : CHUNK_NS;
  const char *learn_env = getenv("KAPI_CPU_LEARN");
  pool->learn_whole = !(learn_env && strcmp(learn_env, "1") == 0);
  const char *wake = getenv("KAPI_CPU_WAKE");
  long wake_n = wake ? strtol(wake, NULL, 10) : 0;
  pool->wake_first = wake_n > 0 && wake_n <= INT_MAX ? (uint32_t)wake_n : WAKE_FIRST;
  const char *fanout = getenv("KAPI_CPU_FANOUT");
  long fanout_n = fanout ? strtol(fanout, NULL, 10) : 0;
  pool->fanout = fanout && fanout_n >= 0 && fanout_n <= INT_MAX ? (uint32_t)fanout_n : WAKE_FANOUT;
  const char *wide_us = getenv("KAPI_CPU_WIDE_US");
  long wide_us_n = wide_us ? strtol(wide_us, NULL, 10) : 0;
  pool->wide_ns = wide_us_n > 0 && wide_us_n <= 1000000 ? (uint64_t)wide_us_n * 1000 : WIDE_NS;
  const char *pin_env = getenv("KAPI_CPU_PIN");
  bool pin = pin_env && strcmp(pin_env, "1") == 0;
  /* Workers get the process's CPUs, not the mask of the thread creating them. */
  pthread_attr_t attr, *use = NULL;
  cpu_set_t cpus;
  if (cpu_process_cpus(&cpus) && pthread_attr_init(&attr) == 0) {
    use = &attr;
    if (pthread_attr_setaffinity_np(&attr, sizeof cpus, &cpus) != 0) {
      pthread_attr_destroy(&attr);
      use = NULL;
    }
  }
  for (uint32_t i = 0; i < threads; i++) {
    cpu_worker_t *w = &pool->workers[i];
    w->pool = pool;
    w->index = i;
    w->last_cpu = -1;
    if (pthread_create(&w->thread, use, worker_main, w) != 0 &&
        (!use || pthread_create(&w->thread, NULL, worker_main, w) != 0))
      break;
    if (pin && use) pin_worker(w->thread, &cpus, i);
    pthread_setname_np(w->thread, "kapi-cpu");
    pool->threads++;
  }
  if (use) pthread_attr_destroy(use);
  /* The launcher's scratch is the one after the last started worker's. */
  return pool;
}

/* Publishes generation gen (open or closed) and wakes up to `wake` sleeping workers. */
static void publish(cpu_pool_t *pool, uint32_t gen, bool closed, uint32_t wake) {
  atomic_store(&pool->state, ((uint64_t)gen << 32) | (closed ? STATE_CLOSED : 0));
  atomic_store(&pool->wake, gen); /* seq_cst: pairs with the sleepers count */
  if (wake && atomic_load(&pool->sleepers))
    futex_wake(&pool->wake, wake < INT_MAX ? (int)wake : INT_MAX);
}

void cpu_pool_free_orphan(cpu_pool_t *pool) {
  for (uint32_t i = 0; i <= pool->threads; i++)
    scratch_free(&pool->scratch[i]);
  free(pool->workers);
  free(pool->scratch);
  free(pool->blocks);
  free(pool);
}

void cpu_pool_destroy(cpu_pool_t *pool) {
  pthread_mutex_lock(&pool->lock);
  pool->stop = true;
  publish(pool, STATE_GEN(atomic_load(&pool->state)) + 1, true, UINT32_MAX);
  pthread_mutex_unlock(&pool->lock);
  for (uint32_t i = 0; i < pool->threads; i++)
    pthread_join(pool->workers[i].thread, NULL);
  pthread_mutex_destroy(&pool->lock);
  cpu_pool_free_orphan(pool); /* the memory, now that no worker uses it */
}

/* Closes the current launch once no joined worker is busy; after that no worker reads the
 * launch fields. All groups have been handed out by then, so all have run. While it waits for
 * workers in long groups, the launcher still calls its interrupt check every
 * CPU_INTERRUPT_POLL_NS, so the workers start no further group of their chunks. */
static void close_launch(cpu_pool_t *pool) {
  uint64_t wait_ns = interrupt.check ? CPU_INTERRUPT_POLL_NS : UINT64_MAX;
  for (int polls = 0;; polls++) {
    uint64_t s = atomic_load(&pool->state);
    if (STATE_ACTIVE(s) == 0) {
      if (atomic_compare_exchange_weak(&pool->state, &s, s | STATE_CLOSED)) return;
      continue;
    }
    if (polls < SPIN_POLLS) {
      cpu_relax();
      /* As a polling worker does (await_generation): let a worker that shares this CPU run. */
      if (polls % 256 == 255 && pool->yield &&
          !atomic_load_explicit(&pool->legacy, memory_order_relaxed))
        sched_yield();
      continue;
    }
    bool woken = zed_wait_flag(&pool->idle, wait_ns);
    zed_clear_flag(&pool->idle); /* re-checked above before sleeping again */
    if (!woken && !atomic_load(&pool->interrupted) && interrupt.check(interrupt.ctx))
      atomic_store(&pool->interrupted, 1);
  }
}

/* How a launch is shared: chunk size and how many workers may join (0: the caller runs it
 * alone). Without a known cost: alone when tiny, else about eight chunks per participant. * With
 * one: alone when expected to be quick, and chunks no cheaper than pool->chunk_ns. *wide: the
 * launch is expected to take pool->wide_ns or more with all who may join. */
static uint32_t plan(cpu_pool_t *pool, const cpu_launch_t *l, uint64_t total, uint64_t items,
                     bool *wide) {
  uint64_t p = (uint64_t)pool->threads + 1;
  uint64_t cost = l->cost ? atomic_load_explicit(l->cost, memory_order_relaxed) : 0;
  uint64_t est_ns = UINT64_MAX;
  if (cost && !__builtin_mul_overflow(cost, items, &est_ns)) est_ns >>= 4;
  bool alone = pool->threads == 0 || total == 1 ||
               (!pool->share && (cost ? est_ns < INLINE_NS : items <= INLINE_ITEMS));
  uint64_t chunk = total / (p * 8);
  if (pool->share) chunk = 1; /* as many groups side by side as there are threads */
  if (cost) {
    uint64_t group_ns = est_ns / total ? est_ns / total : 1;
    if (chunk < pool->chunk_ns / group_ns) chunk = pool->chunk_ns / group_ns;
  }
  if (chunk == 0) chunk = 1;
  pool->min_chunk = alone ? total : chunk / 4 ? chunk / 4 : 1;
  uint64_t extra = (total + chunk - 1) / chunk - 1; /* chunks beyond the launcher's first */
  pool->chunk = alone ? total : chunk;
  uint32_t joiners = alone ? 0 : extra < pool->threads ? (uint32_t)extra : pool->threads;
  *wide = cost && joiners && est_ns / (joiners + 1) >= pool->wide_ns;
  return joiners;
}

/* Where block i of n starts: total * i / n without overflow. */
static uint64_t split(uint64_t total, uint32_t i, uint32_t n) {
  return (uint64_t)((unsigned __int128)total * i / n);
}

/* Folds the measured time of a run into the launch site's cost (a moving average). */
static void learn(const cpu_launch_t *l, uint64_t ns, uint64_t items, uint32_t participants) {
  if (!l->cost || items == 0) return;
  uint64_t c = ns * participants * 16 / items;
  if (c == 0) c = 1;
  if (c > UINT32_MAX) c = UINT32_MAX;
  uint64_t old = atomic_load_explicit(l->cost, memory_order_relaxed);
  atomic_store_explicit(l->cost, (uint32_t)(old ? (3 * old + c) / 4 : c), memory_order_relaxed);
}

ze_result_t cpu_pool_run(cpu_pool_t *pool, const cpu_launch_t *l) {
  uint64_t total = l->group_count[0] * l->group_count[1] * l->group_count[2];
  uint64_t items = total * l->local_size[0] * l->local_size[1] * l->local_size[2];
  pthread_mutex_lock(&pool->lock);
  uint64_t start = l->cost ? zed_now_ns() : 0;
  atomic_store_explicit(&pool->legacy, l->legacy, memory_order_relaxed);
  bool wide;
  uint32_t joiners = plan(pool, l, total, items, &wide);
  uint32_t wide_mode = l->wide ? l->wide - 1u : WIDE_MODE;
  wide = wide && !l->legacy && wide_mode;
  pool->fanout_now = wide && wide_mode == 2 ? pool->threads : pool->fanout;
  bool alone = joiners == 0;
  pool->launch = l;
  pool->total = total;
  atomic_store_explicit(&pool->max_join, joiners, memory_order_relaxed);
  /* One block per participant (always threads + 1, whoever joins: the split must not depend
   * on how many workers woke up in time, or pages would change hands between launches). */
  pool->nblocks = alone ? 1 : pool->threads + 1;
  for (uint32_t i = 0; i < pool->nblocks; i++) {
    atomic_store_explicit(&pool->blocks[i].next, split(total, i, pool->nblocks),
                          memory_order_relaxed);
    pool->blocks[i].end = split(total, i + 1, pool->nblocks);
  }
  atomic_store_explicit(&pool->failed, 0, memory_order_relaxed);
  atomic_store_explicit(&pool->group_failed, 0, memory_order_relaxed);
  atomic_store_explicit(&pool->interrupted, 0, memory_order_relaxed);
  if (!alone) {
    zed_clear_flag(&pool->idle);
    if (stats_on) {
      pool->begun_ns = zed_now_ns();
      atomic_store_explicit(&launch_last_join, 0, memory_order_relaxed);
    }
    uint32_t wake = l->legacy                    ? UINT32_MAX
                    : wide && wide_mode == 1     ? joiners
                    : joiners < pool->wake_first ? joiners
                                                 : pool->wake_first;
    publish(pool, STATE_GEN(atomic_load(&pool->state)) + 1, false, wake);
  }
  poll_t poll = POLL_INIT(pool, true);
  uint64_t ran = 0, own_end = 0;
  uint64_t own_start = l->cost && !alone && !l->legacy && !pool->learn_whole ? zed_now_ns() : 0;
  participate(pool, &pool->scratch[pool->threads], pool->threads, &poll, &ran);
  if ((stats_on || own_start) && !alone) own_end = zed_now_ns();
  if (!alone) close_launch(pool);
  if (stats_on && !alone) {
    atomic_fetch_add_explicit(&stats.launches, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&stats.groups, total, memory_order_relaxed);
    atomic_fetch_add_explicit(&stats.launcher_groups, ran, memory_order_relaxed);
    atomic_fetch_add_explicit(&stats.own_ns, own_end - pool->begun_ns, memory_order_relaxed);
    atomic_fetch_add_explicit(&stats.tail_ns, zed_now_ns() - own_end, memory_order_relaxed);
    atomic_fetch_add_explicit(&stats.last_join_ns, atomic_load(&launch_last_join),
                              memory_order_relaxed);
    if (wide) atomic_fetch_add_explicit(&stats.wide, 1, memory_order_relaxed);
  }
  /* The cost per work-item: by default (and always for legacy launches) the whole launch's
   * time times the workers that were allowed to join. With KAPI_CPU_LEARN=1 the launcher's own
   * rate over the groups it ran, the truer figure, which on the GPU host's 16 cores made a
   * 2^17 triad slower (19.6 us against 12.0): with the true cost and chunks of CHUNK_NS, a
   * 20 us launch gets 2-3 chunks and 3 of 15 workers, where the inflated one let all join. */
  if (own_start && ran)
    learn(l, own_end - own_start, ran * (items / total), 1);
  else if (l->cost)
    learn(l, zed_now_ns() - start, items, joiners + 1);
  bool failed =
      (groups_left(pool) && atomic_load(&pool->failed)) || atomic_load(&pool->group_failed);
  bool stopped = atomic_load(&pool->interrupted);
  pthread_mutex_unlock(&pool->lock);
  return stopped  ? CPU_RESULT_INTERRUPTED
         : failed ? ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY
                  : ZE_RESULT_SUCCESS;
}
