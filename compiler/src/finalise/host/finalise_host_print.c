/* Host finaliser, printf: OpenCL printf calls (`__spirv_ocl_printf(fmt, args...)`, one per
 * kapi print) become calls to kc_host_printf, which formats the line into a buffer and writes it
 * to the process's standard output with one write(2) under a lock: lines of concurrent
 * work-items never interleave, and nothing waits in a stdio buffer once the launch completes.
 */
#include "finalise/host/finalise_host.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

static void write_all(const char *s, size_t n) {
  while (n) {
    ssize_t w = write(1, s, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return; /* like printf, a failed write is not the kernel's error */
    s += w, n -= (size_t)w;
  }
}

int kc_host_printf(const char *fmt, ...) {
  char small[512], *buf = small;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) return -1;
  if ((size_t)n >= sizeof small) {
    if (!(buf = malloc((size_t)n + 1))) return -1;
    va_start(ap, fmt);
    vsnprintf(buf, (size_t)n + 1, fmt, ap);
    va_end(ap);
  }
  pthread_mutex_lock(&out_lock);
  write_all(buf, (size_t)n);
  pthread_mutex_unlock(&out_lock);
  if (buf != small) free(buf);
  return 0;
}

static LLVMValueRef to_host_printf(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef call,
                                   const char *base, LLVMValueRef *a, unsigned na, char **log) {
  (void)a;
  if (strcmp(base, "__spirv_ocl_printf") != 0) return call;
  if (na < 1 || LLVMGetTypeKind(LLVMTypeOf(LLVMGetOperand(call, 0))) != LLVMPointerTypeKind) {
    *log = kc_msg("printf without a format string");
    return NULL;
  }
  LLVMValueRef *args = malloc(sizeof *args * na);
  if (!args) return *log = kc_msg("out of memory"), NULL;
  for (unsigned i = 0; i < na; i++)
    args[i] = LLVMGetOperand(call, i);
  LLVMTypeRef fmt = LLVMTypeOf(args[0]);
  LLVMTypeRef fty = LLVMFunctionType(LLVMInt32TypeInContext(LLVMGetModuleContext(m)), &fmt, 1, 1);
  LLVMValueRef fn = LLVMGetNamedFunction(m, "__kapi_host_printf");
  if (!fn)
    fn = LLVMAddFunction(m, "__kapi_host_printf", fty);
  else
    fty = LLVMGlobalGetValueType(fn);
  if (LLVMTypeOf(args[0]) != LLVMTypeOf(LLVMGetParam(fn, 0)))
    args[0] = LLVMBuildPointerCast(b, args[0], LLVMTypeOf(LLVMGetParam(fn, 0)), "");
  LLVMValueRef r = LLVMBuildCall2(b, fty, fn, args, na, "");
  free(args);
  return r;
}

int kc_hf_lower_printf(LLVMModuleRef m, char **log) {
  return kc_hf_rewrite_calls(m, "__spirv_ocl_printf", to_host_printf, log);
}
