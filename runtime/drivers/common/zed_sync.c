/* Time and one-shot flags for kapi drivers: the monotonic clock used for device timestamps,
 * and a futex-backed wait on a 32-bit flag (events, fences) that sleeps instead of spinning. */
#define _GNU_SOURCE
#include "zed.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

uint64_t zed_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Flag states: 0 unset, 1 set, 2 unset with sleepers (so setting it wakes only when someone
 * sleeps: signalling an event nobody waits on costs no system call). */
enum { FLAG_UNSET = 0, FLAG_SET = 1, FLAG_SLEEPERS = 2 };

bool zed_flag_is_set(const uint32_t *flag) {
  return atomic_load_explicit((_Atomic uint32_t *)flag, memory_order_acquire) == FLAG_SET;
}

bool zed_wait_flag(uint32_t *flag, uint64_t timeout_ns) {
  if (zed_flag_is_set(flag)) return true;
  if (timeout_ns == 0) return false;
  uint64_t deadline = timeout_ns == UINT64_MAX ? UINT64_MAX : zed_now_ns() + timeout_ns;
  _Atomic uint32_t *a = (_Atomic uint32_t *)flag;
  for (;;) {
    uint32_t v = FLAG_UNSET;
    if (!atomic_compare_exchange_strong(a, &v, FLAG_SLEEPERS) && v == FLAG_SET) return true;
    struct timespec ts, *tsp = NULL;
    if (deadline != UINT64_MAX) {
      uint64_t now = zed_now_ns();
      if (now >= deadline) return zed_flag_is_set(flag);
      uint64_t left = deadline - now;
      ts.tv_sec = (time_t)(left / 1000000000u);
      ts.tv_nsec = (long)(left % 1000000000u);
      tsp = &ts;
    }
    /* Sleeps only while the flag still says "sleepers"; EAGAIN/EINTR just re-check. */
    syscall(SYS_futex, flag, FUTEX_WAIT_PRIVATE, FLAG_SLEEPERS, tsp, NULL, 0);
  }
}

void zed_set_flag(uint32_t *flag) {
  uint32_t old = atomic_exchange_explicit((_Atomic uint32_t *)flag, FLAG_SET, memory_order_acq_rel);
  if (old == FLAG_SLEEPERS) syscall(SYS_futex, flag, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

void zed_clear_flag(uint32_t *flag) {
  atomic_store_explicit((_Atomic uint32_t *)flag, FLAG_UNSET, memory_order_release);
}
