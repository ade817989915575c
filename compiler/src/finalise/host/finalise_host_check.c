/* Host finaliser: checks on SPIR-V that SPIRV-Tools accepts but SPIRV-LLVM-Translator asserts
 * (aborts) on, found by mutating valid modules: string literals whose padding after the NUL is
 * not zero (the reader skips "whitespace" padding and runs into the next instruction), and
 * alignments that are not powers of two (Alignment decorations, Aligned memory operands). Runs
 * after validation, so instruction word counts are known to be sound. A small walk of its own:
 * SPIRV-Tools' header may be included by one file only (spirv_tools.c).
 */
#include "finalise/host/finalise_host.h"

#include <stdlib.h>
#include <string.h>

enum {
  OP_GROUP_DECORATE = 74,
  OP_GROUP_MEMBER_DECORATE = 75,
  OP_DECORATE_ID = 332,
  OP_LIFETIME_START = 256,
  OP_LIFETIME_STOP = 257,
  DEC_FUNC_PARAM_ATTR = 38,
  PARAM_ATTR_NO_WRITE = 6,
  OP_SOURCE_CONTINUED = 2,
  OP_SOURCE = 3,
  OP_SOURCE_EXTENSION = 4,
  OP_NAME = 5,
  OP_MEMBER_NAME = 6,
  OP_STRING = 7,
  OP_EXTENSION = 10,
  OP_EXT_INST_IMPORT = 11,
  OP_ENTRY_POINT = 15,
  OP_LOAD = 61,
  OP_STORE = 62,
  OP_COPY_MEMORY = 63,
  OP_COPY_MEMORY_SIZED = 64,
  OP_DECORATE = 71,
  OP_MEMBER_DECORATE = 72,
  OP_DECORATION_GROUP = 73,
  OP_MODULE_PROCESSED = 330,
  OP_DECORATE_STRING = 5632,
  OP_MEMBER_DECORATE_STRING = 5633,
  DEC_LINKAGE = 41,
  DEC_ALIGNMENT = 44,
  ACCESS_ALIGNED = 2,
};

/* Word index (in the instruction) of its string operand, or 0 when it has none. */
static uint32_t string_at(const uint32_t *in, uint32_t count) {
  switch (in[0] & 0xffff) {
  case OP_SOURCE_CONTINUED:
  case OP_SOURCE_EXTENSION:
  case OP_EXTENSION:
  case OP_MODULE_PROCESSED:
    return 1;
  case OP_NAME:
  case OP_STRING:
  case OP_EXT_INST_IMPORT:
    return 2;
  case OP_MEMBER_NAME:
  case OP_ENTRY_POINT:
    return 3;
  case OP_SOURCE:
    return count > 4 ? 4 : 0;
  case OP_DECORATE:
    return count > 3 && in[2] == DEC_LINKAGE ? 3 : 0;
  case OP_DECORATE_STRING:
    return count > 3 ? 3 : 0;
  case OP_MEMBER_DECORATE_STRING:
    return count > 4 ? 4 : 0;
  }
  return 0;
}

/* After the string's NUL, the rest of that word must be NUL too. */
static int string_padded(const uint32_t *in, uint32_t count, uint32_t at) {
  const unsigned char *b = (const unsigned char *)(in + at);
  size_t bytes = (size_t)(count - at) * 4, i = 0;
  while (i < bytes && b[i])
    i++;
  for (size_t end = (i / 4 + 1) * 4; i < end && i < bytes; i++)
    if (b[i]) return 0;
  return 1;
}

static int pow2(uint32_t v) {
  return v && !(v & (v - 1));
}

/* The memory-operand mask at word `at`, if present: an Aligned literal must follow, a power of
 * two. Returns the word after this operand group (for OpCopyMemory's second one). */
static uint32_t memory_operands_ok(const uint32_t *in, uint32_t count, uint32_t at, int *ok) {
  if (at >= count) return at;
  uint32_t mask = in[at];
  if (!(mask & ACCESS_ALIGNED)) return at + 1;
  if (at + 1 >= count || !pow2(in[at + 1])) *ok = 0;
  return at + 2;
}

static int alignments_ok(const uint32_t *in, uint32_t count) {
  int ok = 1;
  switch (in[0] & 0xffff) {
  case OP_DECORATE:
    return !(count > 3 && in[2] == DEC_ALIGNMENT && !pow2(in[3]));
  case OP_MEMBER_DECORATE:
    return !(count > 4 && in[3] == DEC_ALIGNMENT && !pow2(in[4]));
  case OP_LOAD:
    memory_operands_ok(in, count, 4, &ok);
    return ok;
  case OP_STORE:
    memory_operands_ok(in, count, 3, &ok);
    return ok;
  case OP_COPY_MEMORY:
    memory_operands_ok(in, count, memory_operands_ok(in, count, 3, &ok), &ok);
    return ok;
  case OP_COPY_MEMORY_SIZED:
    memory_operands_ok(in, count, memory_operands_ok(in, count, 4, &ok), &ok);
    return ok;
  }
  return 1;
}

/* FuncParamAttr values the translator can map back (NoReadWrite has no LLVM twin there). */
static int param_attr_ok(const uint32_t *in, uint32_t count) {
  uint32_t op = in[0] & 0xffff;
  if (op == OP_DECORATE && count > 3 && in[2] == DEC_FUNC_PARAM_ATTR)
    return in[3] <= PARAM_ATTR_NO_WRITE;
  return 1;
}

/* Ids defined before the debug names and annotations (OpString, OpExtInstImport,
 * OpDecorationGroup) cannot be named or decorated: the translator only accepts those on ids it
 * has not seen yet, and asserts otherwise. */
static int targets_ok(const uint32_t *in, uint32_t count, const unsigned char *early,
                      uint32_t bound) {
  uint32_t op = in[0] & 0xffff, from = 1, step = 1, to = 2;
  if (op == OP_GROUP_DECORATE) from = 2, to = count;
  if (op == OP_GROUP_MEMBER_DECORATE) from = 2, step = 2, to = count;
  if (op != OP_NAME && op != OP_MEMBER_NAME && op != OP_DECORATE && op != OP_MEMBER_DECORATE &&
      op != OP_DECORATE_ID && op != OP_DECORATE_STRING && op != OP_MEMBER_DECORATE_STRING &&
      op != OP_GROUP_DECORATE && op != OP_GROUP_MEMBER_DECORATE)
    return 1;
  for (uint32_t k = from; k < to && k < count; k += step)
    if (in[k] < bound && early[in[k]]) return 0;
  return 1;
}

static void mark_early(const uint32_t *in, uint32_t count, unsigned char *early, uint32_t bound) {
  uint32_t op = in[0] & 0xffff;
  int defines = op == OP_STRING || op == OP_EXT_INST_IMPORT || op == OP_DECORATION_GROUP;
  if (defines && count > 1 && in[1] < bound) early[in[1]] = 1;
}

static int check_words(const uint32_t *words, size_t n, unsigned char *early, uint32_t bound,
                       char **log) {
  for (size_t i = 5; i < n;) {
    uint32_t count = words[i] >> 16, op = words[i] & 0xffff;
    if (count == 0 || i + count > n) {
      *log = kc_msg("SPIR-V: malformed instruction at word %zu", i);
      return 0;
    }
    uint32_t at = string_at(words + i, count);
    if (at && at < count && !string_padded(words + i, count, at)) {
      *log = kc_msg("SPIR-V: string in instruction %u (word %zu) has non-zero padding", op, i);
      return 0;
    }
    if (!param_attr_ok(words + i, count) || !targets_ok(words + i, count, early, bound)) {
      *log = kc_msg("SPIR-V: name or decoration at word %zu is not accepted by the reader", i);
      return 0;
    }
    mark_early(words + i, count, early, bound);
    if (!alignments_ok(words + i, count)) {
      *log = kc_msg("SPIR-V: alignment in instruction %u (word %zu) is not a power of two", op, i);
      return 0;
    }
    i += count;
  }
  return 1;
}

int kc_hf_check_spirv(const uint32_t *words, size_t n, char **log) {
  uint32_t bound = words[3];
  unsigned char *early = calloc(bound ? bound : 1, 1);
  if (!early) return *log = kc_msg("out of memory"), 0;
  int ok = check_words(words, n, early, bound, log);
  free(early);
  return ok;
}

void kc_hf_sanitise_spirv(uint32_t *words, size_t n) {
  for (size_t i = 5; i < n;) {
    uint32_t count = words[i] >> 16, op = words[i] & 0xffff;
    if (count == 0 || i + count > n) return;
    /* Size 0 means "unknown" (the reader then marks the whole object); other sizes assert in
     * the reader unless the pointer's type agrees. Lifetimes are only optimisation hints. */
    if ((op == OP_LIFETIME_START || op == OP_LIFETIME_STOP) && count == 3) words[i + 2] = 0;
    i += count;
  }
}
