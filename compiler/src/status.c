/* Status names and the one deallocator for everything the compiler hands out. */
#include "kapi/compiler.h"

#include <stdlib.h>

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
