/* Status names, the message formatter and the one deallocator for everything the compiler
 * hands out. */
#include "kapi/compiler.h"
#include "message.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

char *kc_vmsg(const char *fmt, va_list ap) {
  va_list again;
  va_copy(again, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  char *s = n < 0 ? NULL : malloc((size_t)n + 1);
  if (s) vsnprintf(s, (size_t)n + 1, fmt, again);
  va_end(again);
  return s;
}

char *kc_msg(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *s = kc_vmsg(fmt, ap);
  va_end(ap);
  return s;
}

void kc_free(void *p) {
  free(p);
}

const char *kc_status_name(kc_status_t s) {
  switch (s) {
  case KC_OK:
    return "KC_OK";
  case KC_ERR_INVALID_ARGUMENT:
    return "KC_ERR_INVALID_ARGUMENT";
  case KC_ERR_KIR:
    return "KC_ERR_KIR";
  case KC_ERR_UNSUPPORTED:
    return "KC_ERR_UNSUPPORTED";
  case KC_ERR_LLVM:
    return "KC_ERR_LLVM";
  case KC_ERR_SPIRV:
    return "KC_ERR_SPIRV";
  case KC_ERR_TARGET:
    return "KC_ERR_TARGET";
  case KC_ERR_OUT_OF_MEMORY:
    return "KC_ERR_OUT_OF_MEMORY";
  }
  return "KC_ERR_UNKNOWN";
}
