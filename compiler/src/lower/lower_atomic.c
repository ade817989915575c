/* Atomics as `__spirv_Atomic*` calls with explicit scope and semantics (never OpenCL 1.2
 * atomic_add, which means work-group scope). Float add/sub use AtomicFAddEXT
 * (SPV_EXT_shader_atomic_float_add); float min/max are compare-exchange loops on the bits, so
 * they need no extra capability. */
#include "lower/lower.h"

#include <stdio.h>
#include <string.h>

static unsigned spirv_scope(int s) {
  static const unsigned map[] = {KC_SCOPE_INVOCATION, KC_SCOPE_SUBGROUP, KC_SCOPE_WORKGROUP,
                                 KC_SCOPE_DEVICE, KC_SCOPE_CROSS_DEVICE};
  return map[s];
}

static unsigned order_bits(int order) {
  static const unsigned map[] = {0, KC_SEM_ACQUIRE, KC_SEM_RELEASE, KC_SEM_ACQ_REL, KC_SEM_SEQ_CST};
  return map[order];
}

static unsigned storage_bits(unsigned as) {
  return as == KC_AS_LOCAL ? KC_SEM_WORKGROUP_MEMORY : KC_SEM_CROSS_WORKGROUP_MEMORY;
}

/* What a load or a failed compare-exchange may use: no release part (as SYCL's
 * default_read_order); a store drops the acquire part. */
static int read_order(int o) {
  return o == KIR_RELEASE ? KIR_RELAXED : o == KIR_ACQ_REL ? KIR_ACQUIRE : o;
}
static int write_order(int o) {
  return o == KIR_ACQUIRE ? KIR_RELAXED : o == KIR_ACQ_REL ? KIR_RELEASE : o;
}

typedef struct atomic_site {
  LLVMValueRef ptr;
  unsigned as;
  kir_kind_t k; /* the element kind the builtin is called on */
  unsigned scope;
} atomic_site_t;

/* __spirv_<op>(ptr, nconst i32 scope/semantics..., nvals values...) -> ret */
static LLVMValueRef spirv_atomic(kc_lower_t *L, const atomic_site_t *s, const char *op,
                                 const unsigned *consts, unsigned nconst, LLVMValueRef *vals,
                                 unsigned nvals, int returns) {
  char base[48], mangled[128], ptrcode[16];
  snprintf(base, sizeof base, "__spirv_%s", op);
  if (s->as)
    snprintf(ptrcode, sizeof ptrcode, "PU3AS%u%s", s->as, kc_mangle_code(s->k));
  else
    snprintf(ptrcode, sizeof ptrcode, "P%s", kc_mangle_code(s->k));
  int n = snprintf(mangled, sizeof mangled, "_Z%zu%s%s", strlen(base), base, ptrcode);
  for (unsigned i = 0; i < nconst; i++)
    n += snprintf(mangled + n, sizeof mangled - n, "i");
  for (unsigned i = 0; i < nvals; i++)
    n += snprintf(mangled + n, sizeof mangled - n, "%s", kc_mangle_code(s->k));
  LLVMTypeRef t = kc_scalar_type(L, s->k), params[8];
  LLVMValueRef args[8];
  unsigned np = 0;
  params[np] = LLVMTypeOf(s->ptr), args[np++] = s->ptr;
  for (unsigned i = 0; i < nconst; i++)
    params[np] = L->i32, args[np++] = LLVMConstInt(L->i32, consts[i], 0);
  for (unsigned i = 0; i < nvals; i++)
    params[np] = t, args[np++] = vals[i];
  LLVMValueRef fn = kc_declare(L, mangled, returns ? t : L->void_t, params, np, KC_BUILTIN_MEMORY);
  return kc_call(L, fn, args, np);
}

static const char *int_rmw_name(int op, int is_signed) {
  static const char *const names[] = {"AtomicIAdd", "AtomicISub", "AtomicSMin", "AtomicSMax",
                                      "AtomicAnd",  "AtomicOr",   "AtomicXor",  "AtomicExchange"};
  if (op == KIR_RMW_MIN && !is_signed) return "AtomicUMin";
  if (op == KIR_RMW_MAX && !is_signed) return "AtomicUMax";
  return names[op];
}

static atomic_site_t site_of(kc_lower_t *L, const kir_inst_t *in, int first_index) {
  kir_type_t t = kc_arg_type(L, in, 0);
  atomic_site_t s = {kc_element_ptr(L, in, first_index), kc_addrspace(t.space), t.elem,
                     spirv_scope(in->scope)};
  return s;
}

/* The same site seen as an integer of the element's width (compare-exchange is integer-only). */
static atomic_site_t int_site(kc_lower_t *L, const atomic_site_t *s) {
  kir_kind_t ik = s->k == KIR_F32 ? KIR_I32 : KIR_I64;
  LLVMTypeRef it = kc_scalar_type(L, ik);
  atomic_site_t is = {LLVMBuildBitCast(L->b, s->ptr, LLVMPointerType(it, s->as), ""), s->as, ik,
                      s->scope};
  return is;
}

static LLVMValueRef cmpxchg(kc_lower_t *L, const atomic_site_t *s, int order, LLVMValueRef expected,
                            LLVMValueRef desired) {
  unsigned st = storage_bits(s->as);
  unsigned c[3] = {s->scope, order_bits(order) | st, order_bits(read_order(order)) | st};
  LLVMValueRef v[2] = {desired, expected};
  return spirv_atomic(L, s, "AtomicCompareExchange", c, 3, v, 2, 1);
}

/* Float min/max: retry a compare-exchange on the integer bits until it sticks or the stored
 * value already is the result. Returns the old value. */
static LLVMValueRef float_min_max(kc_lower_t *L, const kir_inst_t *in, atomic_site_t s,
                                  LLVMValueRef val) {
  atomic_site_t is = int_site(L, &s);
  LLVMTypeRef it = kc_scalar_type(L, is.k), ft = kc_scalar_type(L, s.k);
  unsigned c[2] = {s.scope, storage_bits(s.as)};
  LLVMValueRef init = spirv_atomic(L, &is, "AtomicLoad", c, 2, NULL, 0, 1);
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(L->b), loop = kc_new_block(L, "atomic.loop");
  LLVMBuildBr(L->b, loop);
  LLVMPositionBuilderAtEnd(L->b, loop);
  LLVMBasicBlockRef cas = kc_new_block(L, "atomic.cas"), done = kc_new_block(L, "atomic.done");
  LLVMValueRef cur = LLVMBuildPhi(L->b, it, "");
  LLVMValueRef curf = LLVMBuildBitCast(L->b, cur, ft, "");
  int is_min = in->sub == KIR_RMW_MIN;
  LLVMValueRef keep = LLVMBuildFCmp(L->b, is_min ? LLVMRealOLT : LLVMRealOGT, curf, val, "");
  LLVMValueRef want = LLVMBuildBitCast(L->b, LLVMBuildSelect(L->b, keep, curf, val, ""), it, "");
  LLVMBuildCondBr(L->b, LLVMBuildICmp(L->b, LLVMIntEQ, want, cur, ""), done, cas);
  LLVMPositionBuilderAtEnd(L->b, cas);
  LLVMValueRef found = cmpxchg(L, &is, in->order, cur, want);
  LLVMBuildCondBr(L->b, LLVMBuildICmp(L->b, LLVMIntEQ, found, cur, ""), done, loop);
  LLVMValueRef inc[2] = {init, found};
  LLVMBasicBlockRef from[2] = {pre, cas};
  LLVMAddIncoming(cur, inc, from, 2);
  LLVMPositionBuilderAtEnd(L->b, done);
  return curf;
}

static LLVMValueRef rmw(kc_lower_t *L, const kir_inst_t *in) {
  atomic_site_t s = site_of(L, in, 2);
  LLVMValueRef val = kc_arg(L, in, 1);
  unsigned c[2] = {s.scope, order_bits(in->order) | storage_bits(s.as)};
  if (!kir_is_float(s.k))
    return spirv_atomic(L, &s, int_rmw_name(in->sub, kir_is_signed(s.k)), c, 2, &val, 1, 1);
  switch (in->sub) {
  case KIR_RMW_SUB:
    val = LLVMBuildFNeg(L->b, val, ""); /* fall through */
  case KIR_RMW_ADD:
    return spirv_atomic(L, &s, "AtomicFAddEXT", c, 2, &val, 1, 1);
  case KIR_RMW_XCHG:
    return spirv_atomic(L, &s, "AtomicExchange", c, 2, &val, 1, 1);
  default:
    return float_min_max(L, in, s, val);
  }
}

static LLVMValueRef float_aware_cmpxchg(kc_lower_t *L, const kir_inst_t *in) {
  atomic_site_t s = site_of(L, in, 3);
  LLVMValueRef expected = kc_arg(L, in, 1), desired = kc_arg(L, in, 2);
  if (!kir_is_float(s.k)) return cmpxchg(L, &s, in->order, expected, desired);
  atomic_site_t is = int_site(L, &s);
  LLVMTypeRef it = kc_scalar_type(L, is.k);
  LLVMValueRef found = cmpxchg(L, &is, in->order, LLVMBuildBitCast(L->b, expected, it, ""),
                               LLVMBuildBitCast(L->b, desired, it, ""));
  return LLVMBuildBitCast(L->b, found, kc_scalar_type(L, s.k), "");
}

int kc_lower_atomic(kc_lower_t *L, const kir_inst_t *in) {
  LLVMValueRef r = NULL;
  if (in->op == KIR_OP_ATOMIC_RMW) {
    r = rmw(L, in);
  } else if (in->op == KIR_OP_ATOMIC_CMPXCHG) {
    r = float_aware_cmpxchg(L, in);
  } else if (in->op == KIR_OP_ATOMIC_LOAD) {
    atomic_site_t s = site_of(L, in, 1);
    unsigned c[2] = {s.scope, order_bits(read_order(in->order)) | storage_bits(s.as)};
    r = spirv_atomic(L, &s, "AtomicLoad", c, 2, NULL, 0, 1);
  } else {
    atomic_site_t s = site_of(L, in, 2);
    unsigned c[2] = {s.scope, order_bits(write_order(in->order)) | storage_bits(s.as)};
    LLVMValueRef v = kc_arg(L, in, 1);
    spirv_atomic(L, &s, "AtomicStore", c, 2, &v, 1, 0);
  }
  kc_set_result(L, in, r);
  return 0;
}

/* atomic_fence: orders both local and global memory, at the given scope. */
int kc_lower_fence(kc_lower_t *L, const kir_inst_t *in) {
  LLVMTypeRef params[2] = {L->i32, L->i32};
  LLVMValueRef fn =
      kc_declare(L, "_Z21__spirv_MemoryBarrierii", L->void_t, params, 2, KC_BUILTIN_MEMORY);
  unsigned sem = order_bits(in->order) | KC_SEM_WORKGROUP_MEMORY | KC_SEM_CROSS_WORKGROUP_MEMORY;
  LLVMValueRef args[2] = {LLVMConstInt(L->i32, spirv_scope(in->scope), 0),
                          LLVMConstInt(L->i32, sem, 0)};
  kc_call(L, fn, args, 2);
  return 0;
}
