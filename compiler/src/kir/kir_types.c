/* KIR vocabulary: scalar and array types, the op table and the keyword tables the parser,
 * verifier and lowering share. */
#include "kir/kir.h"

#include <stdio.h>
#include <string.h>

static const char *const scalar_names[] = {"void", "bool", "i8",  "i16", "i32", "i64", "u8",
                                           "u16",  "u32",  "u64", "f32", "f64", "f16"};

int kir_type_eq(kir_type_t a, kir_type_t b) {
  if (a.kind != b.kind) return 0;
  if (a.kind != KIR_ARRAY) return 1;
  return a.elem == b.elem && a.ndim == b.ndim && a.layout == b.layout && a.space == b.space &&
         !memcmp(a.shape, b.shape, sizeof a.shape);
}

int kir_type_is_static(kir_type_t t) {
  return t.kind == KIR_ARRAY && t.shape[0] != 0;
}

int kir_is_int(kir_kind_t k) {
  return k >= KIR_I8 && k <= KIR_U64;
}
int kir_is_signed(kir_kind_t k) {
  return k >= KIR_I8 && k <= KIR_I64;
}
int kir_is_float(kir_kind_t k) {
  return k == KIR_F32 || k == KIR_F64 || k == KIR_F16;
}
int kir_is_scalar(kir_kind_t k) {
  return k >= KIR_BOOL && k <= KIR_F16;
}

int kir_bits(kir_kind_t k) {
  static const int bits[] = {0, 1, 8, 16, 32, 64, 8, 16, 32, 64, 32, 64, 16, 64};
  return bits[k];
}

const char *kir_type_str(kir_type_t t, char *buf) {
  static const char layouts[] = "CFA";
  static const char *const spaces[] = {"global", "local", "private"};
  if (t.kind != KIR_ARRAY) return strcpy(buf, scalar_names[t.kind]);
  int n = snprintf(buf, KIR_TYPE_STR_MAX, "array(%s,%d,%c,%s", scalar_names[t.elem], t.ndim,
                   layouts[t.layout], spaces[t.space]);
  for (int k = 0; k < t.ndim && t.shape[0]; k++)
    n += snprintf(buf + n, (size_t)(KIR_TYPE_STR_MAX - n), ",%u", (unsigned)t.shape[k]);
  snprintf(buf + n, (size_t)(KIR_TYPE_STR_MAX - n), ")");
  return buf;
}

int kir_scalar_kind(const char *name) {
  for (int i = 0; i < (int)(sizeof scalar_names / sizeof *scalar_names); i++)
    if (!strcmp(name, scalar_names[i])) return i;
  return -1;
}

static const char *const op_names[] = {
#define KIR_OP_NAME(e, name, spec) name,
    KIR_OPS(KIR_OP_NAME)
#undef KIR_OP_NAME
};
static const char *const op_specs[] = {
#define KIR_OP_SPEC(e, name, spec) spec,
    KIR_OPS(KIR_OP_SPEC)
#undef KIR_OP_SPEC
};

const char *kir_op_name(kir_op_t op) {
  return op_names[op];
}
const char *kir_op_spec(kir_op_t op) {
  return op_specs[op];
}

int kir_op_lookup(const char *name) {
  for (int i = 0; i < KIR_OP_COUNT; i++)
    if (!strcmp(name, op_names[i])) return i;
  return -1;
}

int kir_op_is_terminator(kir_op_t op) {
  return op == KIR_OP_BR || op == KIR_OP_CBR || op == KIR_OP_RET || op == KIR_OP_UNREACHABLE ||
         op == KIR_OP_RAISE;
}

const char *const kir_math_names[] = {
#define KIR_MATH_NAME(e, name) name,
    KIR_MATH_FUNCS(KIR_MATH_NAME)
#undef KIR_MATH_NAME
        NULL};
const char *kir_math_name(kir_math_t m) {
  return kir_math_names[m];
}

const char *const kir_pred_names[] = {"eq", "ne", "lt", "le", "gt", "ge", NULL};
const char *const kir_rmw_names[] = {"add", "sub", "min", "max", "and", "or", "xor", "xchg", NULL};
const char *const kir_order_names[] = {"relaxed", "acquire", "release", "acq_rel", "seq_cst", NULL};
const char *const kir_scope_names[] = {"work_item", "sub_group", "work_group",
                                       "device",    "system",    NULL};
const char *const kir_fill_names[] = {"zero", "undef", NULL};
const char *const kir_group_op_names[] = {"add", "mul", "min", "max", "and", "or", "xor", NULL};

int kir_word_lookup(const char *const *table, const char *word) {
  for (int i = 0; table[i]; i++)
    if (!strcmp(table[i], word)) return i;
  return -1;
}
