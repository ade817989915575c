/* Diagnostic LD_PRELOAD for crash hunts on machines without gdb: on SIGSEGV/SIGBUS print the
 * fault address, the instruction pointer, the native backtrace and the mappings that hold them
 * (a JIT-compiled frame shows as an anonymous mapping), then die with the signal. Built and
 * loaded by bench/gpu_suite.sh: gcc -O1 -shared -fPIC -o libcrashbt.so tools/crashbt.c */
#define _GNU_SOURCE
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

/* pytest's fd capture points fd 2 at a temporary file during each test, and a crashing
 * worker takes that file with it: write to a copy of the stderr the process started with. */
static FILE *out;

static void show_map(unsigned long a) {
  FILE *f = fopen("/proc/self/maps", "r");
  char line[512];
  if (!f) return;
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && a >= lo && a < hi) {
      fprintf(out, "  map of %#lx (+%#lx): %s", a, a - lo, line);
      break;
    }
  }
  fclose(f);
}

static void on_sig(int sig, siginfo_t *si, void *ucv) {
  ucontext_t *uc = ucv;
  unsigned long ip = uc->uc_mcontext.gregs[REG_RIP];
  unsigned long sp = uc->uc_mcontext.gregs[REG_RSP];
  fprintf(out, "\n=== crashbt: signal %d addr %p ip %#lx sp %#lx tid %ld\n", sig, si->si_addr, ip,
          sp, (long)syscall(SYS_gettid));
  show_map(ip);
  show_map((unsigned long)si->si_addr);
  show_map(sp);
  void *frames[64];
  int n = backtrace(frames, 64);
  backtrace_symbols_fd(frames, n, fileno(out));
  for (int i = 0; i < n; i++)
    show_map((unsigned long)frames[i]);
  /* the raw stack words: return addresses into JIT code show up here */
  unsigned long *s = (unsigned long *)sp;
  for (int i = 0; i < 48; i++)
    fprintf(out, "  sp[%d] %#lx\n", i, s[i]);
  fflush(out);
  signal(sig, SIG_DFL);
  raise(sig);
}

__attribute__((constructor)) static void init(void) {
  int fd = dup(2);
  out = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (!out) out = stderr;
  setvbuf(out, NULL, _IONBF, 0);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_sig;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  static char stack[1 << 16];
  stack_t ss = {.ss_sp = stack, .ss_size = sizeof stack};
  sigaltstack(&ss, NULL);
  sigaction(SIGSEGV, &sa, NULL);
  sigaction(SIGBUS, &sa, NULL);
}
