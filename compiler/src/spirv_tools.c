/* SPIRV-Tools (static library, C API): validation in the OpenCL 2.0 environment, the one our
 * SPIR-V must satisfy on every device, and disassembly for tests and KAPI_DUMP. */
#include "compile.h"

#include <pthread.h>
#include <spirv-tools/libspirv.h>
#include <stdlib.h>
#include <string.h>

static spv_context spv_ctx;
static pthread_once_t spv_once = PTHREAD_ONCE_INIT;

/* One context for the process: it holds only immutable grammar tables. */
static void create_context(void) {
  spv_ctx = spvContextCreate(SPV_ENV_OPENCL_2_0);
}

static kc_status_t check_input(const void *spirv, size_t nbytes, char **err) {
  pthread_once(&spv_once, create_context);
  if (!spv_ctx) return kc_set_error(err, "cannot create a SPIRV-Tools context"), KC_ERR_SPIRV;
  if (!spirv || nbytes % 4 || nbytes < 20) {
    kc_set_error(err, "SPIR-V must be a non-empty sequence of 32-bit words");
    return spirv ? KC_ERR_SPIRV : KC_ERR_INVALID_ARGUMENT;
  }
  return KC_OK;
}

/* The words, 4-byte aligned whatever the caller's buffer. */
static uint32_t *aligned_words(const void *spirv, size_t nbytes) {
  uint32_t *w = malloc(nbytes);
  if (w) memcpy(w, spirv, nbytes);
  return w;
}

kc_status_t kc_spirv_validate(const void *spirv, size_t nbytes, char **err) {
  kc_status_t st = check_input(spirv, nbytes, err);
  if (st != KC_OK) return st;
  uint32_t *w = aligned_words(spirv, nbytes);
  if (!w) return KC_ERR_OUT_OF_MEMORY;
  spv_diagnostic diag = NULL;
  spv_result_t r = spvValidateBinary(spv_ctx, w, nbytes / 4, &diag);
  free(w);
  if (r != SPV_SUCCESS) {
    kc_set_error(err, "SPIR-V validation failed: %s", diag && diag->error ? diag->error : "?");
    st = KC_ERR_SPIRV;
  }
  spvDiagnosticDestroy(diag);
  return st;
}

kc_status_t kc_spirv_disassemble(const void *spirv, size_t nbytes, char **text, char **err) {
  if (!text) return KC_ERR_INVALID_ARGUMENT;
  *text = NULL;
  kc_status_t st = check_input(spirv, nbytes, err);
  if (st != KC_OK) return st;
  uint32_t *w = aligned_words(spirv, nbytes);
  if (!w) return KC_ERR_OUT_OF_MEMORY;
  spv_text out = NULL;
  spv_diagnostic diag = NULL;
  uint32_t opts = SPV_BINARY_TO_TEXT_OPTION_FRIENDLY_NAMES | SPV_BINARY_TO_TEXT_OPTION_INDENT;
  spv_result_t r = spvBinaryToText(spv_ctx, w, nbytes / 4, opts, &out, &diag);
  free(w);
  if (r != SPV_SUCCESS) {
    kc_set_error(err, "SPIR-V disassembly failed: %s", diag && diag->error ? diag->error : "?");
    st = KC_ERR_SPIRV;
  } else if (!(*text = malloc(out->length + 1))) {
    st = KC_ERR_OUT_OF_MEMORY;
  } else {
    memcpy(*text, out->str, out->length);
    (*text)[out->length] = '\0';
  }
  spvTextDestroy(out);
  spvDiagnosticDestroy(diag);
  return st;
}
