/* SPIR-V checks before the translator sees a module: SPIRV-Tools validation, then the cases
 * that validate but make SPIRV-LLVM-Translator 15 assert (it is built with assertions, which
 * abort the process). Those were found by corrupting fixture modules word by word: non-zero
 * padding after a string's terminator, alignments that are not powers of two, and
 * function-parameter attributes the translator has no mapping for, and decorations of ids
 * defined before them.
 */
#include "finalise_nvptx.h"

/* libspirv.h defines (not declares) this constant in C: renamed so that other files of the
 * library may include the header too. */
#define kDefaultMaxIdBound kc_nvptx_spv_default_max_id_bound
#include <spirv-tools/libspirv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct prescan {
  char **log;
  kc_status_t status;
  uint32_t bound;
  unsigned char *defined; /* one flag per id seen as a result so far */
} prescan_t;

static int pow2_ok(uint32_t v) {
  return v != 0 && (v & (v - 1)) == 0;
}

/* The translator insists that every byte after a string's terminating NUL is NUL too. */
static int string_padding_ok(const uint32_t *w, uint16_t nwords) {
  const unsigned char *b = (const unsigned char *)w;
  size_t n = (size_t)nwords * 4, i = 0;
  while (i < n && b[i])
    ++i;
  for (; i < n; ++i)
    if (b[i]) return 0;
  return 1;
}

static const char *check_operand(const spv_parsed_instruction_t *inst, uint16_t k) {
  enum { DEC_ALIGNMENT = 44, MEM_ALIGNED = 0x2, LAST_MAPPED_PARAM_ATTR = 6 };
  const spv_parsed_operand_t *op = &inst->operands[k];
  const uint32_t *w = inst->words + op->offset;
  const uint32_t *next =
      k + 1 < inst->num_operands ? inst->words + inst->operands[k + 1].offset : NULL;
  switch (op->type) {
  case SPV_OPERAND_TYPE_LITERAL_STRING:
    return string_padding_ok(w, op->num_words) ? NULL : "string with non-zero padding";
  case SPV_OPERAND_TYPE_FUNCTION_PARAMETER_ATTRIBUTE:
    return *w <= LAST_MAPPED_PARAM_ATTR ? NULL : "unsupported function parameter attribute";
  case SPV_OPERAND_TYPE_DECORATION:
    return *w == DEC_ALIGNMENT && next && !pow2_ok(*next) ? "alignment is not a power of two"
                                                          : NULL;
  case SPV_OPERAND_TYPE_MEMORY_ACCESS:
  case SPV_OPERAND_TYPE_OPTIONAL_MEMORY_ACCESS:
    return (*w & MEM_ALIGNED) && next && !pow2_ok(*next) ? "alignment is not a power of two" : NULL;
  default:
    return NULL;
  }
}

static spv_result_t on_header(void *user, spv_endianness_t e, uint32_t magic, uint32_t version,
                              uint32_t generator, uint32_t bound, uint32_t schema) {
  (void)e, (void)magic, (void)version, (void)generator, (void)schema;
  prescan_t *p = user;
  p->bound = bound;
  p->defined = calloc(bound ? bound : 1, 1);
  return p->defined ? SPV_SUCCESS : SPV_ERROR_OUT_OF_MEMORY;
}

static int defined(const prescan_t *p, uint32_t id) {
  return id < p->bound && p->defined[id];
}

/* The translator only lets a name or decoration target an id not defined yet (a forward id). */
static const char *check_targets(const prescan_t *p, const spv_parsed_instruction_t *inst) {
  enum {
    NAME = 5,
    MEMBER_NAME = 6,
    DECORATE = 71,
    MEMBER_DECORATE = 72,
    GROUP_DECORATE = 74,
    GROUP_MEMBER_DECORATE = 75,
    DECORATE_ID = 332,
    DECORATE_STRING = 5632,
    MEMBER_DECORATE_STRING = 5633
  };
  const uint32_t *w = inst->words;
  uint16_t op = inst->opcode, n = inst->num_words;
  if (op == NAME || op == MEMBER_NAME || op == DECORATE || op == MEMBER_DECORATE ||
      op == DECORATE_ID || op == DECORATE_STRING || op == MEMBER_DECORATE_STRING)
    return n > 1 && defined(p, w[1]) ? "name or decoration of an id defined before it" : NULL;
  if (op == GROUP_DECORATE || op == GROUP_MEMBER_DECORATE)
    for (uint16_t i = 2; i < n; i += op == GROUP_DECORATE ? 1 : 2)
      if (defined(p, w[i])) return "name or decoration of an id defined before it";
  return NULL;
}

static spv_result_t on_instruction(void *user, const spv_parsed_instruction_t *inst) {
  prescan_t *p = user;
  const char *target = check_targets(p, inst);
  if (target) {
    *p->log = kc_nvptx_msg("SPIR-V not accepted: %s (opcode %u)", target, inst->opcode);
    p->status = KC_ERR_SPIRV;
    return SPV_ERROR_INVALID_BINARY;
  }
  if (inst->result_id < p->bound) p->defined[inst->result_id] = 1;
  for (uint16_t k = 0; k < inst->num_operands; ++k) {
    const char *why = check_operand(inst, k);
    if (why) {
      *p->log = kc_nvptx_msg("SPIR-V not accepted: %s (opcode %u, result id %u)", why, inst->opcode,
                             inst->result_id);
      p->status = KC_ERR_SPIRV;
      return SPV_ERROR_INVALID_BINARY;
    }
  }
  return SPV_SUCCESS;
}

static kc_status_t prescan(spv_const_context ctx, const uint32_t *words, size_t nwords,
                           char **log) {
  prescan_t p = {log, KC_OK, 0, NULL};
  spv_diagnostic diag = NULL;
  spv_result_t r = spvBinaryParse(ctx, &p, words, nwords, on_header, on_instruction, &diag);
  free(p.defined);
  if (r != SPV_SUCCESS && p.status == KC_OK) {
    *log = kc_nvptx_msg("SPIR-V parsing failed: %s", diag && diag->error ? diag->error : "?");
    p.status = KC_ERR_SPIRV;
  }
  spvDiagnosticDestroy(diag);
  return p.status;
}

/* The translator asserts on SPIR-V it does not expect: SPIRV-Tools sees the bytes first. The
 * universal 1.2 rules, not OpenCL 2.0's profile: that profile forbids Int64Atomics, which
 * 64-bit atomics need and every NVIDIA GPU supports. */
kc_status_t kc_nvptx_validate(const void *spirv, size_t nbytes, char **log) {
  if (nbytes % 4 != 0 || nbytes < 20) {
    *log = kc_nvptx_msg("SPIR-V validation failed: %zu bytes is not a SPIR-V module", nbytes);
    return KC_ERR_SPIRV;
  }
  uint32_t *copy = NULL; /* words must be aligned; callers' buffers need not be */
  if ((uintptr_t)spirv % sizeof(uint32_t)) {
    copy = malloc(nbytes);
    if (!copy) return KC_ERR_OUT_OF_MEMORY;
    memcpy(copy, spirv, nbytes);
    spirv = copy;
  }
  spv_context ctx = spvContextCreate(SPV_ENV_UNIVERSAL_1_2);
  spv_diagnostic diag = NULL;
  spv_const_binary_t bin = {(const uint32_t *)spirv, nbytes / 4};
  spv_result_t r = spvValidate(ctx, &bin, &diag);
  kc_status_t st = KC_OK;
  if (r != SPV_SUCCESS) {
    *log = kc_nvptx_msg("SPIR-V validation failed: %s",
                        diag && diag->error ? diag->error : "invalid module");
    st = KC_ERR_SPIRV;
  }
  spvDiagnosticDestroy(diag);
  if (st == KC_OK) st = prescan(ctx, bin.code, bin.wordCount, log);
  spvContextDestroy(ctx);
  free(copy);
  return st;
}
