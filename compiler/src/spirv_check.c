/* SPIRV-Tools validation for the finalisers (universal 1.2 rules). The translator asserts on
 * SPIR-V it does not expect, so every binary from outside passes through here first. */
#include "spirv_check.h"

#include <spirv-tools/libspirv.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *format_error(const char *what) {
  const char *prefix = "SPIR-V validation failed: ";
  char *s = malloc(strlen(prefix) + strlen(what) + 1);
  if (s) sprintf(s, "%s%s", prefix, what);
  return s;
}

kc_status_t kc_spirv_validate_universal(const void *spirv, size_t nbytes, char **err) {
  if (!spirv || nbytes < 20 || nbytes % 4) {
    if (err) *err = format_error("not a whole number of 32-bit words with a header");
    return spirv ? KC_ERR_SPIRV : KC_ERR_INVALID_ARGUMENT;
  }
  uint32_t *w = malloc(nbytes); /* the caller's buffer may not be 4-byte aligned */
  if (!w) return KC_ERR_OUT_OF_MEMORY;
  memcpy(w, spirv, nbytes);
  spv_context ctx = spvContextCreate(SPV_ENV_UNIVERSAL_1_2);
  spv_diagnostic diag = NULL;
  spv_result_t r = spvValidateBinary(ctx, w, nbytes / 4, &diag);
  kc_status_t st = KC_OK;
  if (r != SPV_SUCCESS) {
    if (err) *err = format_error(diag && diag->error ? diag->error : "invalid module");
    st = KC_ERR_SPIRV;
  }
  spvDiagnosticDestroy(diag);
  spvContextDestroy(ctx);
  free(w);
  return st;
}
