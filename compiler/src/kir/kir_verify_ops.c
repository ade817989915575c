/* KIR verifier, per-op type rules (docs/kir.md, "Instructions"). Each rule names the operand
 * and both types, so a pyfront bug reads as a sentence at the user's file:line. */
#include "kir/kir.h"

typedef struct vctx {
  const kir_module_t *m;
  const kir_func_t *f;
  const kir_inst_t *in;
  kir_diag_t *d;
} vctx_t;

#define FAIL(...) return kir_inst_error(c->d, c->f, c->in, __VA_ARGS__)

static kir_type_t arg(const vctx_t *c, int k) {
  return c->f->values[c->in->args[k]].type;
}
static kir_type_t scalar(kir_kind_t k) {
  return (kir_type_t){.kind = (uint8_t)k};
}
static const char *opname(const vctx_t *c) {
  return kir_op_name(c->in->op);
}

static int nargs(const vctx_t *c, int n) {
  if (c->in->nargs != n) FAIL("%s takes %d value operand(s), got %d", opname(c), n, c->in->nargs);
  return 0;
}

static int arg_is(const vctx_t *c, int k, kir_type_t t) {
  char b1[KIR_TYPE_STR_MAX], b2[KIR_TYPE_STR_MAX];
  if (!kir_type_eq(arg(c, k), t))
    FAIL("%s: %%%s has type %s, expected %s", opname(c), c->f->values[c->in->args[k]].name,
         kir_type_str(arg(c, k), b1), kir_type_str(t, b2));
  return 0;
}

static int type_ok(const vctx_t *c, int ok, const char *what) {
  char b[KIR_TYPE_STR_MAX];
  if (!ok) FAIL("%s needs %s, not %s", opname(c), what, kir_type_str(c->in->type, b));
  return 0;
}

/* n operands, all of the result type, which must satisfy pred. */
static int same_typed(const vctx_t *c, int n, int ok, const char *what) {
  if (type_ok(c, ok, what) || nargs(c, n)) return -1;
  for (int k = 0; k < n; k++)
    if (arg_is(c, k, c->in->type)) return -1;
  return 0;
}

static int check_array(const vctx_t *c, int k, kir_type_t *out) {
  char b[KIR_TYPE_STR_MAX];
  if (k >= c->in->nargs) FAIL("%s needs an array operand", opname(c));
  *out = arg(c, k);
  if (out->kind != KIR_ARRAY)
    FAIL("%s: %%%s is a %s, not an array", opname(c), c->f->values[c->in->args[k]].name,
         kir_type_str(*out, b));
  return 0;
}

/* Operands first.. are the ndim i64 indices. */
static int check_indices(const vctx_t *c, int first, int ndim) {
  if (c->in->nargs - first != ndim)
    FAIL("%s: a %d-dimensional array needs %d indices, got %d", opname(c), ndim, ndim,
         c->in->nargs - first);
  for (int k = first; k < c->in->nargs; k++)
    if (arg_is(c, k, scalar(KIR_I64))) return -1;
  return 0;
}

static int check_dim_literal(const vctx_t *c, kir_type_t a, int64_t d) {
  if (d < 0 || d >= a.ndim)
    FAIL("%s: dimension %lld out of range for rank %d", opname(c), (long long)d, a.ndim);
  return 0;
}

static int check_aload_astore(const vctx_t *c) {
  kir_type_t a;
  int store = c->in->op == KIR_OP_ASTORE || c->in->op == KIR_OP_ASTORE_NT;
  if (check_array(c, 0, &a)) return -1;
  if (!store && type_ok(c, c->in->type.kind == a.elem, "the array's element type")) return -1;
  if (store && (c->in->nargs < 2 || arg_is(c, 1, scalar(a.elem)))) {
    if (c->in->nargs < 2) FAIL("%s needs a value operand", opname(c));
    return -1;
  }
  return check_indices(c, store ? 2 : 1, a.ndim);
}

static int check_dim_stride(const vctx_t *c) {
  kir_type_t a;
  int wrap = c->in->op == KIR_OP_WRAPIDX;
  if (type_ok(c, c->in->type.kind == KIR_I64, "i64") || nargs(c, wrap ? 2 : 1) ||
      check_array(c, 0, &a) || check_dim_literal(c, a, c->in->lits[0]))
    return -1;
  return wrap ? arg_is(c, 1, scalar(KIR_I64)) : 0;
}

static int check_private_array(const vctx_t *c) {
  kir_type_t t = c->in->type;
  if (type_ok(c, t.kind == KIR_ARRAY && t.space == KIR_PRIVATE && t.layout == KIR_LAYOUT_C,
              "an array(T,N,C,private) type"))
    return -1;
  if (c->in->nlits != t.ndim) FAIL("private_array of rank %d needs %d extents", t.ndim, t.ndim);
  int64_t total = 1;
  for (int k = 0; k < c->in->nlits; k++) {
    if (c->in->lits[k] <= 0 || c->in->lits[k] > (1 << 20))
      FAIL("private_array extent %lld out of range", (long long)c->in->lits[k]);
    total *= c->in->lits[k];
  }
  if (total > (1 << 20)) FAIL("private_array of %lld elements is too large", (long long)total);
  return 0;
}

static int is_atomic_kind(kir_kind_t k) {
  return k == KIR_I32 || k == KIR_U32 || k == KIR_I64 || k == KIR_U64 || k == KIR_F32 ||
         k == KIR_F64;
}

/* Array operand 0 with an atomic element type in global or local memory; values after it. */
static int check_atomic(const vctx_t *c, int nvalues) {
  kir_type_t a;
  char b[KIR_TYPE_STR_MAX];
  if (check_array(c, 0, &a)) return -1;
  if (!is_atomic_kind(a.elem) || a.space == KIR_PRIVATE)
    FAIL("%s needs a global or local array of i32, u32, i64, u64, f32 or f64, not %s", opname(c),
         kir_type_str(a, b));
  if (c->in->op != KIR_OP_ATOMIC_STORE &&
      type_ok(c, c->in->type.kind == a.elem, "the array's element type"))
    return -1;
  if (c->in->nargs < 1 + nvalues) FAIL("%s needs %d value operand(s)", opname(c), nvalues);
  for (int k = 1; k <= nvalues; k++)
    if (arg_is(c, k, scalar(a.elem))) return -1;
  if (c->in->op == KIR_OP_ATOMIC_RMW && kir_is_float(a.elem) && c->in->sub >= KIR_RMW_AND &&
      c->in->sub <= KIR_RMW_XOR)
    FAIL("atomic %s is defined on integers only", kir_rmw_names[c->in->sub]);
  return check_indices(c, 1 + nvalues, a.ndim);
}

static int check_math(const vctx_t *c) {
  int sub = c->in->sub;
  if (sub >= KIR_MATH_PREDICATE_FIRST) {
    if (type_ok(c, c->in->type.kind == KIR_BOOL, "bool") || nargs(c, 1)) return -1;
    if (!kir_is_float(arg(c, 0).kind)) FAIL("math %s needs a float operand", kir_math_name(sub));
    return 0;
  }
  if (sub == KIR_MATH_LDEXP) { /* x * 2^n: a float and an i32 exponent (OpenCL ldexp) */
    if (type_ok(c, kir_is_float(c->in->type.kind), "f32 or f64") || nargs(c, 2)) return -1;
    return arg_is(c, 0, c->in->type) || arg_is(c, 1, scalar(KIR_I32)) ? -1 : 0;
  }
  return same_typed(c, sub >= KIR_MATH_BINARY_FIRST ? 2 : 1, kir_is_float(c->in->type.kind),
                    "f32 or f64");
}

static int check_cmp(const vctx_t *c) {
  if (type_ok(c, c->in->type.kind == KIR_BOOL, "bool") || nargs(c, 2)) return -1;
  if (!kir_is_scalar(arg(c, 0).kind)) FAIL("cmp needs scalar operands");
  return arg_is(c, 1, arg(c, 0));
}

static int check_call(const vctx_t *c) {
  const kir_func_t *g = &c->m->funcs[c->in->callee];
  char b1[KIR_TYPE_STR_MAX], b2[KIR_TYPE_STR_MAX];
  if (g->is_kernel) FAIL("the kernel @%s cannot be called", g->name);
  if (c->in->nargs != g->nparams)
    FAIL("@%s takes %d argument(s), got %d", g->name, g->nparams, c->in->nargs);
  for (int k = 0; k < g->nparams; k++)
    if (arg_is(c, k, g->values[g->params[k]].type)) return -1;
  if (!kir_type_eq(c->in->type, g->ret))
    FAIL("@%s returns %s, not %s", g->name, kir_type_str(g->ret, b1),
         kir_type_str(c->in->type, b2));
  return 0;
}

static int check_ret(const vctx_t *c) {
  if (c->f->ret.kind == KIR_VOID) return nargs(c, 0);
  if (nargs(c, 1)) return -1;
  return arg_is(c, 0, c->f->ret);
}

static int check_var(const vctx_t *c) {
  kir_type_t t = c->f->vars[c->in->var].type;
  if (c->in->op == KIR_OP_LOAD_VAR)
    return type_ok(c, kir_type_eq(c->in->type, t), "the slot's type");
  return nargs(c, 1) ? -1 : arg_is(c, 0, t);
}

static int check_select(const vctx_t *c) {
  kir_type_t t = c->in->type;
  if (type_ok(c, kir_is_scalar(t.kind), "a scalar type") || nargs(c, 3) ||
      arg_is(c, 0, scalar(KIR_BOOL)))
    return -1;
  return arg_is(c, 1, t) || arg_is(c, 2, t) ? -1 : 0;
}

static int check_index_space(const vctx_t *c) {
  if (type_ok(c, c->in->type.kind == KIR_I64, "i64")) return -1;
  if (c->in->lits[0] < 0 || c->in->lits[0] > 2) FAIL("%s dimension must be 0, 1 or 2", opname(c));
  return 0;
}

/* Sub-group and work-group collectives (lower_group.c): the group is a sub-group or a
 * work-group; ids, lanes and deltas are i64. */
static int check_group_scope(const vctx_t *c) {
  if (c->in->scope != KIR_SUB_GROUP && c->in->scope != KIR_WORK_GROUP)
    FAIL("%s needs scope sub_group or work_group, not %s", opname(c),
         kir_scope_names[c->in->scope]);
  return 0;
}

static int check_shuffle(const vctx_t *c) {
  kir_kind_t k = c->in->type.kind;
  if (type_ok(c, kir_is_scalar(k), "a scalar type") || nargs(c, 2) || arg_is(c, 0, c->in->type))
    return -1;
  return arg_is(c, 1, scalar(KIR_I64));
}

static int check_group_op(const vctx_t *c) {
  kir_kind_t k = c->in->type.kind;
  if (check_group_scope(c)) return -1;
  if (c->in->op == KIR_OP_GROUP_BROADCAST) return check_shuffle(c);
  if (c->in->op == KIR_OP_GROUP_ANY || c->in->op == KIR_OP_GROUP_ALL)
    return same_typed(c, 1, k == KIR_BOOL, "bool");
  if (same_typed(c, 1, kir_is_int(k) || kir_is_float(k), "an integer or float type")) return -1;
  if (c->in->sub >= KIR_GROUP_AND && !kir_is_int(k))
    FAIL("%s %s is defined on integers only", opname(c), kir_group_op_names[c->in->sub]);
  return 0;
}

/* A print template's `{}` marks one value each; `{{` and `}}` are literal braces. */
static int check_print(const vctx_t *c) {
  int marks = 0;
  for (const char *s = c->in->str; *s; s++) {
    if ((s[0] == '{' && s[1] == '{') || (s[0] == '}' && s[1] == '}')) {
      s++;
      continue;
    }
    if (s[0] == '{' && s[1] == '}') {
      marks++, s++;
      continue;
    }
    if (s[0] == '{' || s[0] == '}')
      FAIL("print: lone '%c' in the template (write %c%c)", s[0], s[0], s[0]);
  }
  if (marks != c->in->nargs)
    FAIL("print: the template has %d {} mark(s) for %d value(s)", marks, c->in->nargs);
  for (int k = 0; k < c->in->nargs; k++)
    if (!kir_is_scalar(arg(c, k).kind)) FAIL("print takes scalar values only");
  return 0;
}

static int check_raise(const vctx_t *c) {
  if (c->in->lits[0] < 0 || c->in->lits[0] > INT32_MAX)
    FAIL("raise: the site number must be 0..2^31-1");
  if (c->in->nargs > KIR_RAISE_VALUES)
    FAIL("raise: at most %d values (the status record's room)", KIR_RAISE_VALUES);
  for (int k = 0; k < c->in->nargs; k++)
    if (arg_is(c, k, scalar(KIR_I64))) return -1;
  return 0;
}

int kir_verify_inst(const kir_module_t *m, const kir_func_t *f, const kir_inst_t *in,
                    kir_diag_t *d) {
  vctx_t cv = {m, f, in, d}, *c = &cv;
  kir_kind_t k = in->type.kind;
  int num = kir_is_int(k) || kir_is_float(k), logic = kir_is_int(k) || k == KIR_BOOL;
  switch (in->op) {
  case KIR_OP_CONST:
    return type_ok(c, kir_is_scalar(k), "a scalar type");
  case KIR_OP_LOAD_VAR:
  case KIR_OP_STORE_VAR:
    return check_var(c);
  case KIR_OP_CAST:
    if (type_ok(c, kir_is_scalar(k), "a scalar type") || nargs(c, 1)) return -1;
    if (!kir_is_scalar(arg(c, 0).kind)) FAIL("cast needs a scalar operand");
    return 0;
  case KIR_OP_BITCAST: /* same width, no bool: a reinterpretation (bfloat16 storage, ...) */
    if (type_ok(c, kir_is_scalar(k) && k != KIR_BOOL, "a non-bool scalar type") || nargs(c, 1))
      return -1;
    if (!kir_is_scalar(arg(c, 0).kind) || arg(c, 0).kind == KIR_BOOL ||
        kir_bits(arg(c, 0).kind) != kir_bits(k))
      FAIL("bitcast needs a non-bool scalar operand of the result's width");
    return 0;
  case KIR_OP_SELECT:
    return check_select(c);
  case KIR_OP_ADD:
  case KIR_OP_SUB:
  case KIR_OP_MUL:
  case KIR_OP_FLOORDIV:
  case KIR_OP_MOD:
  case KIR_OP_POW:
  case KIR_OP_MIN:
  case KIR_OP_MAX:
    return same_typed(c, 2, num, "an integer or float type");
  case KIR_OP_DIV:
    return same_typed(c, 2, kir_is_float(k), "f32 or f64");
  case KIR_OP_NEG:
  case KIR_OP_ABS:
    return same_typed(c, 1, num, "an integer or float type");
  case KIR_OP_AND:
  case KIR_OP_OR:
  case KIR_OP_XOR:
    return same_typed(c, 2, logic, "an integer or bool type");
  case KIR_OP_NOT:
    return same_typed(c, 1, logic, "an integer or bool type");
  case KIR_OP_POPCOUNT:
    return same_typed(c, 1, kir_is_int(k), "an integer type");
  case KIR_OP_SHL:
  case KIR_OP_SHR:
    return same_typed(c, 2, kir_is_int(k), "an integer type");
  case KIR_OP_CMP:
    return check_cmp(c);
  case KIR_OP_MATH:
    return check_math(c);
  case KIR_OP_ALOAD:
  case KIR_OP_ASTORE:
  case KIR_OP_ASTORE_NT:
    return check_aload_astore(c);
  case KIR_OP_DIM:
  case KIR_OP_STRIDE:
  case KIR_OP_WRAPIDX:
    return check_dim_stride(c);
  case KIR_OP_PRIVATE_ARRAY:
    return check_private_array(c);
  case KIR_OP_ATOMIC_RMW:
  case KIR_OP_ATOMIC_STORE:
    return check_atomic(c, 1);
  case KIR_OP_ATOMIC_CMPXCHG:
    return check_atomic(c, 2);
  case KIR_OP_ATOMIC_LOAD:
    return check_atomic(c, 0);
  case KIR_OP_GLOBAL_ID:
  case KIR_OP_GLOBAL_RANGE:
  case KIR_OP_LOCAL_ID:
  case KIR_OP_LOCAL_RANGE:
  case KIR_OP_GROUP_ID:
  case KIR_OP_GROUP_RANGE:
    return check_index_space(c);
  case KIR_OP_SG_LOCAL_ID:
  case KIR_OP_SG_LOCAL_RANGE:
  case KIR_OP_SG_MAX_RANGE:
  case KIR_OP_SG_GROUP_ID:
  case KIR_OP_SG_GROUP_RANGE:
    return type_ok(c, k == KIR_I64, "i64");
  case KIR_OP_SG_SHUFFLE:
  case KIR_OP_SG_SHUFFLE_DOWN:
  case KIR_OP_SG_SHUFFLE_UP:
  case KIR_OP_SG_SHUFFLE_XOR:
    return check_shuffle(c);
  case KIR_OP_GROUP_BROADCAST:
  case KIR_OP_GROUP_REDUCE:
  case KIR_OP_GROUP_INCLUSIVE_SCAN:
  case KIR_OP_GROUP_EXCLUSIVE_SCAN:
  case KIR_OP_GROUP_ANY:
  case KIR_OP_GROUP_ALL:
    return check_group_op(c);
  case KIR_OP_CBR:
    return nargs(c, 1) ? -1 : arg_is(c, 0, scalar(KIR_BOOL));
  case KIR_OP_RET:
    return check_ret(c);
  case KIR_OP_CALL:
    return check_call(c);
  case KIR_OP_PRINT:
    return check_print(c);
  case KIR_OP_RAISE:
    return check_raise(c);
  case KIR_OP_FENCE:
  case KIR_OP_BARRIER:
  case KIR_OP_SG_BARRIER:
  case KIR_OP_BR:
  case KIR_OP_UNREACHABLE:
  case KIR_OP_COUNT:
    return 0;
  }
  return 0;
}
