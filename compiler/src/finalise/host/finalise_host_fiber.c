/* Host finaliser runtime: the fiber scheme (KC_HF_FIBERS, kernels that spin on atomic loads)
 * and the region scheme's per-work-item storage. Called only from JIT code (the symbols are
 * defined into each JIT).
 *
 * Fibers: every work-item of a group runs on its own fiber (a small mmap'd stack with a guard
 * page, switched by a dozen instructions of x86-64 assembly: ucontext's swapcontext makes a
 * system call per switch and was ten times slower). A barrier switches back to the scheduler
 * and waits there until every work-item not yet returned has reached a barrier; a yield (an
 * atomic load in a loop, every few spins) switches back without waiting, so the work-item a
 * spinning one waits for gets to run. Private arrays live on the fiber's stack.
 * Stacks and scratch storage are per thread and reused by every group that thread runs; they
 * are freed when the thread exits.
 */
#define _GNU_SOURCE
#include "finalise/host/finalise_host.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Under valgrind, fiber stacks must be registered or every access to them is reported. The
 * client requests cost a few instructions when not running under valgrind. */
#if defined(__has_include) && __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define STACK_REGISTER(lo, hi) VALGRIND_STACK_REGISTER(lo, hi)
#define STACK_DEREGISTER(id) VALGRIND_STACK_DEREGISTER(id)
#else
#define STACK_REGISTER(lo, hi) 0u
#define STACK_DEREGISTER(id) ((void)(id))
#endif

/* Per work-item stack: room for private arrays; the pages are only touched when used. */
#define FIBER_STACK KC_HF_FIBER_STACK

/* Saves the callee-saved registers and the SSE/x87 control words on the current stack, stores
 * the stack pointer in *save, and resumes the context whose stack pointer is `to`. */
void kc_hf_switch(void **save, void *to);
__asm__(".text\n"
        ".globl kc_hf_switch\n"
        ".hidden kc_hf_switch\n"
        ".type kc_hf_switch,@function\n"
        "kc_hf_switch:\n"
        "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
        "  subq $8, %rsp\n  stmxcsr (%rsp)\n  fnstcw 4(%rsp)\n"
        "  movq %rsp, (%rdi)\n"
        "  movq %rsi, %rsp\n"
        "  ldmxcsr (%rsp)\n  fldcw 4(%rsp)\n  addq $8, %rsp\n"
        "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
        "  ret\n"
        ".size kc_hf_switch, .-kc_hf_switch\n");

typedef struct fiber {
  void *sp; /* saved stack pointer while the fiber is suspended */
  uint64_t local_id[3];
  int done;
  int at_barrier;    /* waiting for the rest of the group */
  unsigned spins;    /* yields asked for (one in a few switches) */
  unsigned stack_id; /* valgrind's id for the stack */
} fiber_t;

typedef struct sched {
  void *main_sp; /* the scheduler's stack pointer while a fiber runs */
  fiber_t *fibers;
  char *stacks; /* cap * (page + FIBER_STACK), each with a guard page below it */
  size_t cap, page;
  size_t cur;
  kc_hf_wi_fn wi;
  const kc_host_group_t *group;
  void *local;
  void *scratch; /* the region scheme's storage (kc_host_scratch) */
  uint64_t scratch_size;
  struct sched *prev, *next; /* every thread's, see all_scheds */
} sched_t;

/* Every live thread's scheduler, so that each stays reachable from a global: a process forked
 * from a multi-threaded one keeps the memory of threads that do not exist in it (valgrind
 * would call it lost; it is only unused). */
static sched_t *all_scheds;
static pthread_mutex_t all_lock = PTHREAD_MUTEX_INITIALIZER;

static __thread sched_t *tls_sched;
static pthread_key_t sched_key;
static pthread_once_t sched_once = PTHREAD_ONCE_INIT;

static void release_stacks(sched_t *s) {
  for (size_t i = 0; i < s->cap; i++)
    STACK_DEREGISTER(s->fibers[i].stack_id);
  if (s->stacks) munmap(s->stacks, s->cap * (s->page + FIBER_STACK));
  free(s->fibers);
  s->stacks = NULL, s->fibers = NULL, s->cap = 0;
}

static void sched_free(void *p) {
  sched_t *s = p;
  if (!s) return;
  pthread_mutex_lock(&all_lock);
  if (s->prev)
    s->prev->next = s->next;
  else
    all_scheds = s->next;
  if (s->next) s->next->prev = s->prev;
  pthread_mutex_unlock(&all_lock);
  release_stacks(s);
  free(s->scratch);
  free(s);
}

static void sched_key_init(void) {
  pthread_key_create(&sched_key, sched_free);
}

static sched_t *sched_this_thread(void) {
  sched_t *s = tls_sched;
  if (s) return s;
  pthread_once(&sched_once, sched_key_init);
  s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->page = (size_t)sysconf(_SC_PAGESIZE);
  pthread_mutex_lock(&all_lock);
  s->next = all_scheds;
  if (all_scheds) all_scheds->prev = s;
  all_scheds = s;
  pthread_mutex_unlock(&all_lock);
  tls_sched = s;
  pthread_setspecific(sched_key, s);
  return s;
}

void *kc_host_scratch(uint64_t bytes) {
  sched_t *s = sched_this_thread();
  if (!s) return NULL;
  if (bytes <= s->scratch_size) return s->scratch;
  void *p = NULL;
  if (posix_memalign(&p, 64, bytes)) return NULL;
  free(s->scratch);
  s->scratch = p, s->scratch_size = bytes;
  return p;
}

/* This thread's scheduler with room for n fibers; NULL when memory runs out. */
static sched_t *sched_get(size_t n) {
  sched_t *s = sched_this_thread();
  if (!s) return NULL;
  if (n <= s->cap) return s;
  size_t slot = s->page + FIBER_STACK;
  char *st = mmap(NULL, n * slot, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  fiber_t *f = calloc(n, sizeof *f);
  if (st == MAP_FAILED || !f) {
    if (st != MAP_FAILED) munmap(st, n * slot);
    free(f);
    return NULL;
  }
  release_stacks(s);
  for (size_t i = 0; i < n; i++) {
    char *lo = st + i * slot;
    mprotect(lo, s->page, PROT_NONE);
    f[i].stack_id = STACK_REGISTER(lo + s->page, lo + slot);
  }
  s->stacks = st, s->fibers = f, s->cap = n;
  return s;
}

/* First code of every fiber: run the work-item, then go back for good. */
static void fiber_entry(void) {
  sched_t *s = tls_sched;
  fiber_t *f = &s->fibers[s->cur];
  s->wi(s->group, f->local_id, s->local);
  f->done = 1;
  kc_hf_switch(&f->sp, s->main_sp);
  __builtin_unreachable();
}

/* A fresh stack laid out as kc_hf_switch leaves a suspended one, "returning" to fiber_entry
 * with the ABI's alignment (rsp = 8 mod 16 at function entry). */
static void *fiber_stack(char *lo, size_t size) {
  uint64_t *top = (uint64_t *)(((uintptr_t)lo + size) & ~(uintptr_t)15);
  uint32_t ctl[2];
  __asm__ volatile("stmxcsr %0\n fnstcw %1" : "=m"(ctl[0]), "=m"(ctl[1]));
  *--top = 0; /* fiber_entry's (never used) return address */
  *--top = (uint64_t)(uintptr_t)fiber_entry;
  for (int i = 0; i < 6; i++)
    *--top = 0; /* rbp rbx r12 r13 r14 r15 */
  top--;
  memcpy(top, ctl, sizeof ctl);
  return top;
}

void kc_host_fiber_barrier(void) {
  sched_t *s = tls_sched;
  s->fibers[s->cur].at_barrier = 1;
  kc_hf_switch(&s->fibers[s->cur].sp, s->main_sp);
}

void kc_host_fiber_yield(void) {
  sched_t *s = tls_sched;
  fiber_t *f = &s->fibers[s->cur];
  if (++f->spins % 4 == 0) kc_hf_switch(&f->sp, s->main_sp);
}

kc_status_t kc_host_fiber_run(const kc_host_group_t *g, kc_hf_wi_fn wi, void *local) {
  size_t lx = g->local_range[0], ly = g->local_range[1], lz = g->local_range[2];
  size_t n = lx * ly * lz;
  if (n == 0) return KC_OK;
  sched_t *volatile s = sched_get(n);
  if (!s) return KC_ERR_OUT_OF_MEMORY; /* no memory for the stacks: the launch fails */
  s->wi = wi, s->group = g, s->local = local;
  size_t slot = s->page + FIBER_STACK;
  for (size_t i = 0; i < n; i++) {
    fiber_t *f = &s->fibers[i];
    f->local_id[0] = i % lx, f->local_id[1] = i / lx % ly, f->local_id[2] = i / (lx * ly);
    f->done = 0, f->at_barrier = 0, f->spins = 0;
    /* Stack tops staggered by cache lines: equally aligned tops would all share cache sets. */
    f->sp = fiber_stack(s->stacks + i * slot + s->page, FIBER_STACK - (i % 61) * 64);
  }
  /* Rounds resume every work-item that is neither done nor waiting; once all that are left
   * wait at a barrier, the barrier opens. */
  for (size_t left = n; left;) {
    size_t waiting = 0;
    left = 0;
    for (size_t i = 0; i < n; i++) {
      fiber_t *f = &s->fibers[i];
      if (f->done) continue;
      if (!f->at_barrier) {
        s->cur = i;
        kc_hf_switch(&s->main_sp, f->sp);
      }
      left += !f->done;
      waiting += !f->done && f->at_barrier;
    }
    if (waiting == left)
      for (size_t i = 0; i < n; i++)
        s->fibers[i].at_barrier = 0;
  }
  return KC_OK;
}
