/* SPIR-V checks before the translator sees a module for NVPTX: the compiler's SPIRV-Tools
 * validation (kc_spirv_validate), then the checks for SPIR-V that validates but makes
 * SPIRV-LLVM-Translator 15 assert (it is built with assertions, which abort the process).
 * Those checks are shared with the host finaliser (kc_hf_check_spirv, kc_hf_sanitise_spirv).
 */
#include "finalise/host/finalise_host.h"
#include "finalise/nvptx/finalise_nvptx.h"

#include <stdlib.h>
#include <string.h>

kc_status_t kc_nvptx_validate(const void *spirv, size_t nbytes, uint32_t **words, char **log) {
  if (nbytes % 4 != 0 || nbytes < 20) {
    *log = kc_msg("SPIR-V validation failed: %zu bytes is not a SPIR-V module", nbytes);
    return KC_ERR_SPIRV;
  }
  /* An aligned copy the sanitiser may rewrite; callers' buffers need not be aligned. */
  uint32_t *w = malloc(nbytes);
  if (!w) return KC_ERR_OUT_OF_MEMORY;
  memcpy(w, spirv, nbytes);
  size_t n = nbytes / 4;
  kc_status_t st = kc_spirv_validate(w, nbytes, log);
  if (st == KC_OK && !kc_hf_check_spirv(w, n, log)) st = KC_ERR_SPIRV;
  if (st != KC_OK) {
    free(w);
    return st;
  }
  kc_hf_sanitise_spirv(w, n);
  *words = w;
  return KC_OK;
}
