/* LLVM reports some errors with report_fatal_error, which exits the process unless the
 * installed handler leaves first. The handler long-jumps back to the compile call of its own
 * thread, which turns the reason into a status: a compiler bug must not kill the user's process. */
#include "compile.h"

#include <llvm-c/ErrorHandling.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>

static _Thread_local jmp_buf *guard_jmp;
static _Thread_local char guard_reason[512];
static pthread_once_t install_once = PTHREAD_ONCE_INIT;

static void on_fatal(const char *reason) {
  if (!guard_jmp) return; /* not inside a guarded call: LLVM's default (exit) follows */
  snprintf(guard_reason, sizeof guard_reason, "%s", reason ? reason : "unknown");
  longjmp(*guard_jmp, 1);
}

static void install(void) {
  LLVMInstallFatalErrorHandler(on_fatal);
}

kc_status_t kc_llvm_guarded(kc_status_t (*fn)(void *arg), void *arg, char **err) {
  pthread_once(&install_once, install);
  jmp_buf here;
  jmp_buf *outer = guard_jmp;
  if (setjmp(here)) {
    guard_jmp = outer;
    kc_set_error(err, "LLVM fatal error: %s", guard_reason);
    return KC_ERR_LLVM;
  }
  guard_jmp = &here;
  kc_status_t st = fn(arg);
  guard_jmp = outer;
  return st;
}
