/* Host finaliser runtime: the barrier scheme for kernels with work-group barriers. Every
 * work-item of a group runs on its own fiber (ucontext, small mmap'd stack with a guard page);
 * a barrier switches back to the scheduler, which resumes the next work-item. Rounds repeat
 * until every work-item has returned, so any barrier placement that OpenCL allows (in loops,
 * in uniform branches) is executed correctly. Private arrays live on the fiber's stack.
 * Stacks are per thread and reused by every group that thread runs; they are freed when the
 * thread exits. Called only from JIT code (the symbols are defined into each JIT).
 */
#define _GNU_SOURCE
#include "finalise_host.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

/* Per work-item stack: room for private arrays; the pages are only touched when used. */
#define FIBER_STACK (256u * 1024u)

typedef struct fiber {
  ucontext_t ctx;
  uint64_t local_id[3];
  int done;
} fiber_t;

typedef struct sched {
  ucontext_t main;
  fiber_t *fibers;
  char *stacks; /* cap * (page + FIBER_STACK), each with a guard page below it */
  size_t cap, page;
  size_t cur;
  kc_hf_wi_fn wi;
  const kc_host_group_t *group;
  void *local;
} sched_t;

static __thread sched_t *tls_sched;
static pthread_key_t sched_key;
static pthread_once_t sched_once = PTHREAD_ONCE_INIT;

static void sched_free(void *p) {
  sched_t *s = p;
  if (!s) return;
  if (s->stacks) munmap(s->stacks, s->cap * (s->page + FIBER_STACK));
  free(s->fibers);
  free(s);
}

static void sched_key_init(void) { pthread_key_create(&sched_key, sched_free); }

/* This thread's scheduler with room for n fibers; NULL when memory runs out. */
static sched_t *sched_get(size_t n) {
  sched_t *s = tls_sched;
  if (!s) {
    pthread_once(&sched_once, sched_key_init);
    s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->page = (size_t)sysconf(_SC_PAGESIZE);
    tls_sched = s;
    pthread_setspecific(sched_key, s);
  }
  if (n <= s->cap) return s;
  size_t slot = s->page + FIBER_STACK;
  char *st = mmap(NULL, n * slot, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  fiber_t *f = calloc(n, sizeof *f);
  if (st == MAP_FAILED || !f) {
    if (st != MAP_FAILED) munmap(st, n * slot);
    free(f);
    return NULL;
  }
  for (size_t i = 0; i < n; i++) mprotect(st + i * slot, s->page, PROT_NONE);
  if (s->stacks) munmap(s->stacks, s->cap * slot);
  free(s->fibers);
  s->stacks = st, s->fibers = f, s->cap = n;
  return s;
}

static void trampoline(void) {
  sched_t *s = tls_sched;
  fiber_t *f = &s->fibers[s->cur];
  s->wi(s->group, f->local_id, s->local);
  f->done = 1; /* returning resumes uc_link, the scheduler */
}

void kc_host_fiber_barrier(void) {
  sched_t *s = tls_sched;
  swapcontext(&s->fibers[s->cur].ctx, &s->main);
}

void kc_host_fiber_run(const kc_host_group_t *g, kc_hf_wi_fn wi, void *local) {
  size_t lx = g->local_range[0], ly = g->local_range[1], lz = g->local_range[2];
  size_t n = lx * ly * lz;
  if (n == 0) return;
  sched_t *volatile s = sched_get(n);
  if (!s) abort(); /* no memory for stacks: nothing sensible to return to from a kernel */
  s->wi = wi, s->group = g, s->local = local;
  size_t slot = s->page + FIBER_STACK;
  for (size_t i = 0; i < n; i++) {
    fiber_t *f = &s->fibers[i];
    f->local_id[0] = i % lx, f->local_id[1] = i / lx % ly, f->local_id[2] = i / (lx * ly);
    f->done = 0;
    getcontext(&f->ctx);
    f->ctx.uc_stack.ss_sp = s->stacks + i * slot + s->page;
    f->ctx.uc_stack.ss_size = FIBER_STACK;
    f->ctx.uc_link = &s->main;
    makecontext(&f->ctx, trampoline, 0);
  }
  for (size_t left = n; left;) {
    left = 0;
    for (size_t i = 0; i < n; i++) {
      if (s->fibers[i].done) continue;
      s->cur = i;
      swapcontext(&s->main, &s->fibers[i].ctx);
      left += !s->fibers[i].done;
    }
  }
}
