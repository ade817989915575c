/* kapi extension: signals around kernel launches, installed at the first launch.
 * - A crash (SIGSEGV, SIGBUS) during a launch on a CPU device, or after CPU launches ran,
 *   prints one line naming KAPI_BOUNDSCHECK=1 (kernels there run without bounds checks, so an
 *   out-of-bounds index writes wherever it points), then passes the signal on to the handler
 *   that was there before (faulthandler's, or the default: the process still dies as before).
 * - Ctrl-C during a launch goes to Python's handler, which the CPU driver's interrupt check
 *   runs between work-groups (launch.c). A work-group that runs for long is never between
 *   work-groups, so a Ctrl-C pressed again while the same launch still runs ends the process,
 *   with a message, instead of being ignored.
 * The launch path pays two relaxed atomic updates and a coarse clock read per launch.
 */
#define _GNU_SOURCE
#include "kx.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* A second Ctrl-C ends the process only this long after the first: time enough for the CPU
 * driver's check (every 50 ms) to stop a launch of short work-groups by itself. */
#define ESCALATE_NS 250000000ull
/* The first Ctrl-C says what happens next when the launch has run at least this long. */
#define LONG_LAUNCH_NS 500000000ull

static atomic_int running;            /* launches in progress, any device */
static atomic_int cpu_running;        /* of those, on a CPU device */
static atomic_int cpu_ran;            /* a launch ran on a CPU device in this process */
static _Atomic uint64_t started_ns;   /* when running last went from 0 to 1 */
static _Atomic uint64_t first_int_ns; /* the first Ctrl-C of the running launches, or 0 */
static atomic_int hinted;             /* the crash hint was printed */
static struct sigaction prev_int, prev_segv, prev_bus;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts); /* async-signal-safe, a vDSO read */
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void say(const char *s) {
  ssize_t r = write(STDERR_FILENO, s, strlen(s));
  (void)r;
}

/* Hands sig to the handler installed before ours. A fatal signal with the default action (or
 * none) gets the default back and returns: the faulting instruction faults again and the
 * process ends as it would have without kapi. */
static void chain(int sig, siginfo_t *si, void *uc, const struct sigaction *prev) {
  if (prev->sa_flags & SA_SIGINFO) {
    if (prev->sa_sigaction) prev->sa_sigaction(sig, si, uc);
    return;
  }
  if (prev->sa_handler == SIG_IGN) return;
  if (prev->sa_handler != SIG_DFL) {
    prev->sa_handler(sig);
    return;
  }
  signal(sig, SIG_DFL);
  if (sig == SIGINT) raise(sig); /* delivered once this handler returns */
}

static void on_fatal(int sig, siginfo_t *si, void *uc) {
  int during = atomic_load_explicit(&cpu_running, memory_order_relaxed) > 0;
  if ((during || atomic_load_explicit(&cpu_ran, memory_order_relaxed)) &&
      !atomic_exchange(&hinted, 1))
    say(during ? "kapi: crashed during a kernel launch on the CPU device, where kernels run "
                 "without bounds checks: an index out of bounds? Rerun with KAPI_BOUNDSCHECK=1 "
                 "to get an IndexError naming the kernel's file:line\n"
               : "kapi: crashed after kernels ran on the CPU device, where they run without "
                 "bounds checks: a write out of bounds corrupts memory that fails later. Rerun "
                 "with KAPI_BOUNDSCHECK=1 to get an IndexError naming the kernel's file:line\n");
  chain(sig, si, uc, sig == SIGBUS ? &prev_bus : &prev_segv);
}

static void on_interrupt(int sig, siginfo_t *si, void *uc) {
  if (prev_int.sa_handler == SIG_IGN && !(prev_int.sa_flags & SA_SIGINFO)) return;
  if (atomic_load_explicit(&running, memory_order_relaxed) > 0) {
    uint64_t now = now_ns(), first = atomic_load(&first_int_ns);
    if (!first) {
      atomic_store(&first_int_ns, now);
      if (now - atomic_load(&started_ns) >= LONG_LAUNCH_NS)
        say("kapi: Ctrl-C: the kernel launch stops once the work-groups now running end; "
            "press Ctrl-C again to end the process\n");
    } else if (now - first >= ESCALATE_NS) {
      say("kapi: Ctrl-C again while a kernel launch still runs (a work-group has not ended): "
          "ending the process\n");
      signal(SIGINT, SIG_DFL);
      raise(SIGINT); /* pending until this handler returns, then the default action */
      return;
    }
  }
  chain(sig, si, uc, &prev_int);
}

/* Puts fn in front of sig's handler, kept in *prev. The flags are the previous handler's (a
 * SIGINT that interrupts a system call must still interrupt it, as Python wants), plus
 * SA_SIGINFO and SA_ONSTACK (a stack overflow's SIGSEGV runs on faulthandler's stack). */
static void install(int sig, void (*fn)(int, siginfo_t *, void *), struct sigaction *prev) {
  struct sigaction sa;
  if (sigaction(sig, NULL, prev) != 0) return;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = fn;
  sa.sa_flags = (prev->sa_flags & ~(SA_RESETHAND | SA_SIGINFO)) | SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  sigaction(sig, &sa, NULL);
}

void kx_signals_install(void) {
  static atomic_int done;
  if (atomic_exchange(&done, 1)) return;
  install(SIGSEGV, on_fatal, &prev_segv);
  install(SIGBUS, on_fatal, &prev_bus);
  install(SIGINT, on_interrupt, &prev_int);
}

void kx_signals_launch_begin(int cpu) {
  if (atomic_fetch_add_explicit(&running, 1, memory_order_relaxed) == 0)
    atomic_store_explicit(&started_ns, now_ns(), memory_order_relaxed);
  if (cpu) {
    atomic_fetch_add_explicit(&cpu_running, 1, memory_order_relaxed);
    atomic_store_explicit(&cpu_ran, 1, memory_order_relaxed);
  }
}

void kx_signals_launch_end(int cpu) {
  if (cpu) atomic_fetch_sub_explicit(&cpu_running, 1, memory_order_relaxed);
  if (atomic_fetch_sub_explicit(&running, 1, memory_order_relaxed) == 1)
    atomic_store_explicit(&first_int_ns, 0, memory_order_relaxed);
}
