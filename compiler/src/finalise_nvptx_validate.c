/* SPIR-V checks before the translator sees a module for NVPTX: the compiler's SPIRV-Tools
 * validation (kc_spirv_validate), then the checks for SPIR-V that validates but makes
 * SPIRV-LLVM-Translator 15 assert (it is built with assertions, which abort the process).
 * Those are shared with the host finaliser (kc_hf_check_spirv, kc_hf_sanitise_spirv); this
 * file adds the cases found by corrupting the NVPTX fixtures that those do not cover yet:
 * names (OpName, OpMemberName) and decorations of ids defined before them.
 */
#include "finalise_host.h"
#include "finalise_nvptx.h"

#include <stdlib.h>
#include <string.h>

enum {
  OP_NAME = 5,
  OP_MEMBER_NAME = 6,
  OP_STRING = 7,
  OP_EXT_INST_IMPORT = 11,
  OP_DECORATE = 71,
  OP_MEMBER_DECORATE = 72,
  OP_DECORATION_GROUP = 73,
};

/* The translator only lets a name or a decoration target an id it has not seen defined. Ids
 * defined before the names and annotations: strings, imports, decoration groups. */
static int names_ok(const uint32_t *w, size_t n, unsigned char *early, uint32_t bound) {
  for (size_t i = 5; i < n;) {
    uint32_t count = w[i] >> 16, op = w[i] & 0xffff;
    if (count == 0 || i + count > n) return 0;
    int names =
        op == OP_NAME || op == OP_MEMBER_NAME || op == OP_DECORATE || op == OP_MEMBER_DECORATE;
    if (names && count > 1 && w[i + 1] < bound && early[w[i + 1]]) return 0;
    int defines = op == OP_STRING || op == OP_EXT_INST_IMPORT || op == OP_DECORATION_GROUP;
    if (defines && count > 1 && w[i + 1] < bound) early[w[i + 1]] = 1;
    i += count;
  }
  return 1;
}

kc_status_t kc_nvptx_validate(const void *spirv, size_t nbytes, uint32_t **words, char **log) {
  if (nbytes % 4 != 0 || nbytes < 20) {
    *log = kc_nvptx_msg("SPIR-V validation failed: %zu bytes is not a SPIR-V module", nbytes);
    return KC_ERR_SPIRV;
  }
  /* An aligned copy the sanitiser may rewrite; callers' buffers need not be aligned. */
  uint32_t *w = malloc(nbytes);
  if (!w) return KC_ERR_OUT_OF_MEMORY;
  memcpy(w, spirv, nbytes);
  size_t n = nbytes / 4;
  kc_status_t st = kc_spirv_validate(w, nbytes, log);
  if (st == KC_OK && !kc_hf_check_spirv(w, n, log)) st = KC_ERR_SPIRV;
  if (st == KC_OK) {
    uint32_t bound = w[3];
    unsigned char *early = calloc(bound ? bound : 1, 1);
    if (!early)
      st = KC_ERR_OUT_OF_MEMORY;
    else if (!names_ok(w, n, early, bound)) {
      *log = kc_nvptx_msg("SPIR-V not accepted: a name or decoration targets an id defined "
                          "before it");
      st = KC_ERR_SPIRV;
    }
    free(early);
  }
  if (st != KC_OK) {
    free(w);
    return st;
  }
  kc_hf_sanitise_spirv(w, n);
  *words = w;
  return KC_OK;
}
