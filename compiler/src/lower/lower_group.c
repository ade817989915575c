/* Sub-groups and group collectives. Sub-group queries, barriers and shuffles become SPIR-V
 * builtins (SubgroupLocalInvocationId..., SPV_INTEL_subgroups shuffles); sub-group sums,
 * minima, maxima and votes become OpGroup* instructions with Subgroup scope, and the operations
 * SPIR-V 1.0 has no group instruction for are built here from shuffles. Each driver implements
 * those builtins. Work-group collectives go through a module-level local scratch and
 * work-group barriers, which every driver runs as it runs the user's own barriers.
 */
#include "lower/lower.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Work-items per work-group the scratch covers: the most any of our drivers allows. */
#define KC_GROUP_SCRATCH_ITEMS 1024
#define KC_GROUP_SCRATCH_NAME "kapi.group_scratch"

static LLVMValueRef sg_builtin(kc_lower_t *L, const char *base) {
  char name[96];
  snprintf(name, sizeof name, "_Z%zu__spirv_BuiltIn%sv", strlen(base) + 15, base);
  LLVMValueRef fn = kc_declare(L, name, L->i32, NULL, 0, KC_BUILTIN_PURE);
  return kc_call(L, fn, NULL, 0);
}

int kc_lower_sub_group_query(kc_lower_t *L, const kir_inst_t *in) {
  static const char *const names[] = {
      [KIR_OP_SG_LOCAL_ID] = "SubgroupLocalInvocationId", [KIR_OP_SG_LOCAL_RANGE] = "SubgroupSize",
      [KIR_OP_SG_MAX_RANGE] = "SubgroupMaxSize",          [KIR_OP_SG_GROUP_ID] = "SubgroupId",
      [KIR_OP_SG_GROUP_RANGE] = "NumSubgroups",
  };
  kc_set_result(L, in, LLVMBuildZExt(L->b, sg_builtin(L, names[in->op]), L->i64, ""));
  return 0;
}

static void control_barrier(kc_lower_t *L, unsigned scope) {
  LLVMTypeRef params[3] = {L->i32, L->i32, L->i32};
  LLVMValueRef fn =
      kc_declare(L, "_Z22__spirv_ControlBarrieriii", L->void_t, params, 3, KC_BUILTIN_CONVERGENT);
  LLVMValueRef args[3] = {LLVMConstInt(L->i32, scope, 0), LLVMConstInt(L->i32, scope, 0),
                          LLVMConstInt(L->i32, KC_SEM_ACQ_REL | KC_SEM_WORKGROUP_MEMORY, 0)};
  kc_call(L, fn, args, 3);
}

/* ---- shuffles ------------------------------------------------------------------------- */

/* Shuffles move 32- or 64-bit values: narrower ints and bools travel widened. */
static kir_kind_t carrier(kir_kind_t k) {
  if (k == KIR_F32 || k == KIR_F64 || k == KIR_I64 || k == KIR_U64) return k;
  return kir_is_signed(k) ? KIR_I32 : KIR_U32;
}

typedef enum { SHUF_IDX, SHUF_DOWN, SHUF_UP, SHUF_XOR } shuffle_kind_t;

/* __spirv_SubgroupShuffle{,Down,Up,Xor}INTEL on v (of kind k); n is an i32 lane, delta or mask.
 * Down and up pass v as both halves: the lanes past the sub-group's end read v again. */
static LLVMValueRef shuffle(kc_lower_t *L, shuffle_kind_t s, kir_kind_t k, LLVMValueRef v,
                            LLVMValueRef n) {
  static const char *const kinds[] = {"", "Down", "Up", "Xor"};
  kir_kind_t ck = carrier(k);
  LLVMTypeRef t = kc_scalar_type(L, ck);
  const char *code = ck == KIR_F32 ? "f" : ck == KIR_F64 ? "d" : kir_bits(ck) == 64 ? "l" : "i";
  int two = s == SHUF_DOWN || s == SHUF_UP;
  char base[64], name[96];
  snprintf(base, sizeof base, "__spirv_SubgroupShuffle%sINTEL", kinds[s]);
  snprintf(name, sizeof name, "_Z%zu%s%s%sj", strlen(base), base, code, two ? code : "");
  LLVMTypeRef params[3] = {t, t, L->i32};
  if (!two) params[1] = L->i32;
  LLVMValueRef fn = kc_declare(L, name, t, params, two ? 3 : 2, KC_BUILTIN_CONVERGENT);
  LLVMValueRef w = kc_convert(L, v, k, ck);
  LLVMValueRef args[3] = {w, two ? w : n, n};
  return kc_convert(L, kc_call(L, fn, args, two ? 3 : 2), ck, k);
}

static int lower_shuffle(kc_lower_t *L, const kir_inst_t *in) {
  shuffle_kind_t s = in->op == KIR_OP_SG_SHUFFLE        ? SHUF_IDX
                     : in->op == KIR_OP_SG_SHUFFLE_DOWN ? SHUF_DOWN
                     : in->op == KIR_OP_SG_SHUFFLE_UP   ? SHUF_UP
                                                        : SHUF_XOR;
  LLVMValueRef n = LLVMBuildTrunc(L->b, kc_arg(L, in, 1), L->i32, "");
  kc_set_result(L, in, shuffle(L, s, in->type.kind, kc_arg(L, in, 0), n));
  return 0;
}

/* ---- combining operations ------------------------------------------------------------- */

static LLVMValueRef identity(kc_lower_t *L, kir_group_op_t op, kir_kind_t k) {
  LLVMTypeRef t = kc_scalar_type(L, k);
  int bits = kir_bits(k);
  if (kir_is_float(k)) {
    double v = op == KIR_GROUP_MUL   ? 1.0
               : op == KIR_GROUP_MIN ? INFINITY
               : op == KIR_GROUP_MAX ? -INFINITY
                                     : 0.0;
    return LLVMConstReal(t, v);
  }
  uint64_t all = bits == 64 ? ~0ull : (1ull << bits) - 1, sign = 1ull << (bits - 1);
  uint64_t v = 0;
  if (op == KIR_GROUP_MUL) v = 1;
  if (op == KIR_GROUP_AND) v = all;
  if (op == KIR_GROUP_MIN) v = kir_is_signed(k) ? sign - 1 : all;
  if (op == KIR_GROUP_MAX) v = kir_is_signed(k) ? sign : 0;
  return LLVMConstInt(t, v, 0);
}

/* a OP b with KIR's semantics (min/max as the `min`/`max` instructions). */
static LLVMValueRef combine(kc_lower_t *L, kir_group_op_t op, kir_kind_t k, LLVMValueRef a,
                            LLVMValueRef b) {
  int fl = kir_is_float(k);
  switch (op) {
  case KIR_GROUP_ADD:
    return fl ? LLVMBuildFAdd(L->b, a, b, "") : LLVMBuildAdd(L->b, a, b, "");
  case KIR_GROUP_MUL:
    return fl ? LLVMBuildFMul(L->b, a, b, "") : LLVMBuildMul(L->b, a, b, "");
  case KIR_GROUP_MIN:
  case KIR_GROUP_MAX: {
    int mn = op == KIR_GROUP_MIN;
    LLVMValueRef c = fl ? LLVMBuildFCmp(L->b, mn ? LLVMRealOLT : LLVMRealOGT, a, b, "")
                        : LLVMBuildICmp(L->b,
                                        kir_is_signed(k) ? (mn ? LLVMIntSLT : LLVMIntSGT)
                                                         : (mn ? LLVMIntULT : LLVMIntUGT),
                                        a, b, "");
    return LLVMBuildSelect(L->b, c, a, b, "");
  }
  case KIR_GROUP_AND:
    return LLVMBuildAnd(L->b, a, b, "");
  case KIR_GROUP_OR:
    return LLVMBuildOr(L->b, a, b, "");
  case KIR_GROUP_XOR:
    return LLVMBuildXor(L->b, a, b, "");
  }
  return a;
}

/* ---- loops ------------------------------------------------------------------------------ */

/* `for (step = 1; step < n; step <<= 1) body(step)`, n an i32 or i64 uniform over the group
 * (so barriers and shuffles in the body are reached by every work-item alike). *carried is a
 * value updated by the body and returned through a phi. */
typedef LLVMValueRef (*step_fn)(kc_lower_t *L, void *ctx, LLVMValueRef step, LLVMValueRef carried);

static LLVMValueRef doubling_loop(kc_lower_t *L, LLVMValueRef n, LLVMValueRef carried, step_fn body,
                                  void *ctx) {
  LLVMTypeRef it = LLVMTypeOf(n);
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(L->b);
  LLVMBasicBlockRef head = kc_new_block(L, "grp.head");
  LLVMBuildBr(L->b, head);
  LLVMPositionBuilderAtEnd(L->b, head);
  LLVMBasicBlockRef loop = kc_new_block(L, "grp.body");
  LLVMPositionBuilderAtEnd(L->b, loop);
  LLVMBasicBlockRef done = kc_new_block(L, "grp.done");
  LLVMPositionBuilderAtEnd(L->b, head);
  LLVMValueRef step = LLVMBuildPhi(L->b, it, "step");
  LLVMValueRef cur = carried ? LLVMBuildPhi(L->b, LLVMTypeOf(carried), "acc") : NULL;
  LLVMBuildCondBr(L->b, LLVMBuildICmp(L->b, LLVMIntULT, step, n, ""), loop, done);
  LLVMPositionBuilderAtEnd(L->b, loop);
  LLVMValueRef next_val = body(L, ctx, step, cur);
  LLVMValueRef next_step = LLVMBuildShl(L->b, step, LLVMConstInt(it, 1, 0), "");
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(L->b);
  LLVMBuildBr(L->b, head);
  LLVMValueRef one = LLVMConstInt(it, 1, 0);
  LLVMAddIncoming(step, (LLVMValueRef[]){one, next_step}, (LLVMBasicBlockRef[]){pre, latch}, 2);
  if (cur)
    LLVMAddIncoming(cur, (LLVMValueRef[]){carried, next_val}, (LLVMBasicBlockRef[]){pre, latch}, 2);
  LLVMPositionBuilderAtEnd(L->b, done);
  return cur;
}

/* Runs `then` only where cond holds; the builder ends after the join. */
static void if_then(kc_lower_t *L, LLVMValueRef cond, void (*then)(kc_lower_t *, void *),
                    void *ctx) {
  LLVMBasicBlockRef yes = kc_new_block(L, "grp.then");
  LLVMPositionBuilderAtEnd(L->b, yes);
  LLVMBasicBlockRef join = kc_new_block(L, "grp.join");
  LLVMPositionBuilderAtEnd(L->b, LLVMGetPreviousBasicBlock(yes));
  LLVMBuildCondBr(L->b, cond, yes, join);
  LLVMPositionBuilderAtEnd(L->b, yes);
  then(L, ctx);
  LLVMBuildBr(L->b, join);
  LLVMPositionBuilderAtEnd(L->b, join);
}

/* ---- sub-group collectives (OpGroup*, else shuffles) ---------------------------------- */

typedef struct scan_ctx {
  kir_group_op_t op;
  kir_kind_t k;
  LLVMValueRef lane;        /* sub-group: i32 lane */
  LLVMValueRef lin, n, mem; /* work-group: i64 linear id and size, typed scratch pointer */
  LLVMValueRef step;        /* work-group reduction: the tree step being built */
} scan_ctx_t;

/* One Hillis-Steele step: lanes at or past step add in the value step lanes below. */
static LLVMValueRef sg_scan_step(kc_lower_t *L, void *ctx, LLVMValueRef step, LLVMValueRef v) {
  scan_ctx_t *s = ctx;
  LLVMValueRef below = shuffle(L, SHUF_UP, s->k, v, step);
  LLVMValueRef take = LLVMBuildICmp(L->b, LLVMIntUGE, s->lane, step, "");
  return LLVMBuildSelect(L->b, take, combine(L, s->op, s->k, below, v), v, "");
}

/* OpGroup{I,F}Add / {S,U,F}Min / {S,U,F}Max with Subgroup scope (Groups capability, SPIR-V
 * 1.0): the native form where a device has it. Only for 32- and 64-bit values, whose
 * exclusive-scan identity the instruction itself supplies. NULL when op has no such form. */
static LLVMValueRef spirv_group_op(kc_lower_t *L, kir_op_t what, kir_group_op_t op, kir_kind_t k,
                                   LLVMValueRef x) {
  if (op != KIR_GROUP_ADD && op != KIR_GROUP_MIN && op != KIR_GROUP_MAX) return NULL;
  if (kir_bits(k) < 32) return NULL;
  const char *kind = kir_is_float(k)       ? "F"
                     : op == KIR_GROUP_ADD ? "I"
                     : kir_is_signed(k)    ? "S"
                                           : "U";
  const char *what_op = op == KIR_GROUP_ADD ? "Add" : op == KIR_GROUP_MIN ? "Min" : "Max";
  char base[32], name[64];
  snprintf(base, sizeof base, "__spirv_Group%s%s", kind, what_op);
  snprintf(name, sizeof name, "_Z%zu%sii%s", strlen(base), base, kc_mangle_code(k));
  LLVMTypeRef t = kc_scalar_type(L, k);
  LLVMTypeRef params[3] = {L->i32, L->i32, t};
  LLVMValueRef fn = kc_declare(L, name, t, params, 3, KC_BUILTIN_CONVERGENT);
  unsigned gop = what == KIR_OP_GROUP_REDUCE ? 0 : what == KIR_OP_GROUP_INCLUSIVE_SCAN ? 1 : 2;
  LLVMValueRef args[3] = {LLVMConstInt(L->i32, KC_SCOPE_SUBGROUP, 0), LLVMConstInt(L->i32, gop, 0),
                          x};
  return kc_call(L, fn, args, 3);
}

/* Sub-group scans and reductions of the operations SPIR-V 1.0 has no group instruction for
 * (multiplication, bitwise), and of narrow types: built from shuffles. */
static LLVMValueRef sub_group_collective(kc_lower_t *L, kir_op_t what, kir_group_op_t op,
                                         kir_kind_t k, LLVMValueRef x) {
  LLVMValueRef native = spirv_group_op(L, what, op, k, x);
  if (native) return native;
  scan_ctx_t s = {op, k, sg_builtin(L, "SubgroupLocalInvocationId"), NULL, NULL, NULL, NULL};
  LLVMValueRef incl = doubling_loop(L, sg_builtin(L, "SubgroupMaxSize"), x, sg_scan_step, &s);
  if (what == KIR_OP_GROUP_INCLUSIVE_SCAN) return incl;
  if (what == KIR_OP_GROUP_EXCLUSIVE_SCAN) {
    LLVMValueRef below = shuffle(L, SHUF_UP, k, incl, LLVMConstInt(L->i32, 1, 0));
    LLVMValueRef first = LLVMBuildICmp(L->b, LLVMIntEQ, s.lane, LLVMConstInt(L->i32, 0, 0), "");
    return LLVMBuildSelect(L->b, first, identity(L, op, k), below, "");
  }
  /* reduce: the last lane of this sub-group holds the total */
  LLVMValueRef last =
      LLVMBuildSub(L->b, sg_builtin(L, "SubgroupSize"), LLVMConstInt(L->i32, 1, 0), "");
  return shuffle(L, SHUF_IDX, k, incl, last);
}

/* ---- work-group collectives (local scratch + barriers) --------------------------------- */

static LLVMValueRef scratch(kc_lower_t *L, kir_kind_t k) {
  LLVMValueRef g = LLVMGetNamedGlobal(L->mod, KC_GROUP_SCRATCH_NAME);
  if (!g) {
    LLVMTypeRef at = LLVMArrayType(L->i64, KC_GROUP_SCRATCH_ITEMS);
    g = LLVMAddGlobalInAddressSpace(L->mod, at, KC_GROUP_SCRATCH_NAME, KC_AS_LOCAL);
    LLVMSetInitializer(g, LLVMGetUndef(at));
    LLVMSetLinkage(g, LLVMInternalLinkage);
    LLVMSetAlignment(g, 8);
  }
  LLVMTypeRef pt = LLVMPointerType(kc_mem_type(L, k), KC_AS_LOCAL);
  return LLVMBuildBitCast(L->b, g, pt, "");
}

static LLVMValueRef local_builtin(kc_lower_t *L, kir_op_t op, unsigned d) {
  static const char *const names[] = {[KIR_OP_LOCAL_ID] = "__spirv_BuiltInLocalInvocationId",
                                      [KIR_OP_LOCAL_RANGE] = "__spirv_BuiltInWorkgroupSize"};
  char name[96];
  snprintf(name, sizeof name, "_Z%zu%si", strlen(names[op]), names[op]);
  LLVMValueRef fn = kc_declare(L, name, L->i64, &L->i32, 1, KC_BUILTIN_PURE);
  LLVMValueRef dim = LLVMConstInt(L->i32, d, 0);
  return kc_call(L, fn, &dim, 1);
}

/* get_local_linear_id's order (SYCL row-major: dimension 2 fastest) and the group's size. */
static void group_linear(kc_lower_t *L, LLVMValueRef *lin, LLVMValueRef *n) {
  LLVMValueRef id = local_builtin(L, KIR_OP_LOCAL_ID, 0);
  LLVMValueRef size = local_builtin(L, KIR_OP_LOCAL_RANGE, 0);
  for (unsigned d = 1; d < 3; d++) {
    LLVMValueRef r = local_builtin(L, KIR_OP_LOCAL_RANGE, d);
    id =
        LLVMBuildAdd(L->b, LLVMBuildMul(L->b, id, r, ""), local_builtin(L, KIR_OP_LOCAL_ID, d), "");
    size = LLVMBuildMul(L->b, size, r, "");
  }
  *lin = id;
  *n = size;
}

static LLVMValueRef slot(kc_lower_t *L, LLVMValueRef mem, LLVMValueRef i) {
  return LLVMBuildGEP2(L->b, LLVMGetElementType(LLVMTypeOf(mem)), mem, &i, 1, "");
}
static LLVMValueRef load_slot(kc_lower_t *L, LLVMValueRef mem, LLVMValueRef i) {
  return LLVMBuildLoad2(L->b, LLVMGetElementType(LLVMTypeOf(mem)), slot(L, mem, i), "");
}

/* Tree step: slots at multiples of 2*step take in the slot step above, where it exists. */
static void wg_reduce_pair(kc_lower_t *L, void *ctx) {
  scan_ctx_t *s = ctx;
  LLVMValueRef other = LLVMBuildAdd(L->b, s->lin, s->step, "");
  LLVMValueRef v =
      combine(L, s->op, s->k, load_slot(L, s->mem, s->lin), load_slot(L, s->mem, other));
  LLVMBuildStore(L->b, v, slot(L, s->mem, s->lin));
}

static LLVMValueRef wg_reduce_step(kc_lower_t *L, void *ctx, LLVMValueRef step, LLVMValueRef v) {
  scan_ctx_t *s = ctx;
  LLVMValueRef mask = LLVMBuildSub(L->b, LLVMBuildShl(L->b, step, LLVMConstInt(L->i64, 1, 0), ""),
                                   LLVMConstInt(L->i64, 1, 0), "");
  LLVMValueRef aligned = LLVMBuildICmp(L->b, LLVMIntEQ, LLVMBuildAnd(L->b, s->lin, mask, ""),
                                       LLVMConstInt(L->i64, 0, 0), "");
  LLVMValueRef inside =
      LLVMBuildICmp(L->b, LLVMIntULT, LLVMBuildAdd(L->b, s->lin, step, ""), s->n, "");
  s->step = step;
  if_then(L, LLVMBuildAnd(L->b, aligned, inside, ""), wg_reduce_pair, s);
  control_barrier(L, KC_SCOPE_WORKGROUP);
  return v;
}

/* Hillis-Steele step over the scratch: read step below (clamped; unused where lin < step),
 * wait, combine, publish, wait. */
static LLVMValueRef wg_scan_step(kc_lower_t *L, void *ctx, LLVMValueRef step, LLVMValueRef v) {
  scan_ctx_t *s = ctx;
  LLVMValueRef take = LLVMBuildICmp(L->b, LLVMIntUGE, s->lin, step, "");
  LLVMValueRef src = LLVMBuildSelect(L->b, take, LLVMBuildSub(L->b, s->lin, step, ""), s->lin, "");
  LLVMValueRef below = load_slot(L, s->mem, src);
  control_barrier(L, KC_SCOPE_WORKGROUP);
  v = LLVMBuildSelect(L->b, take, combine(L, s->op, s->k, below, v), v, "");
  LLVMBuildStore(L->b, v, slot(L, s->mem, s->lin));
  control_barrier(L, KC_SCOPE_WORKGROUP);
  return v;
}

static LLVMValueRef work_group_collective(kc_lower_t *L, kir_op_t what, kir_group_op_t op,
                                          kir_kind_t k, LLVMValueRef x) {
  scan_ctx_t s = {op, k, NULL, NULL, NULL, scratch(L, k), NULL};
  group_linear(L, &s.lin, &s.n);
  LLVMValueRef zero = LLVMConstInt(L->i64, 0, 0);
  LLVMBuildStore(L->b, x, slot(L, s.mem, s.lin));
  control_barrier(L, KC_SCOPE_WORKGROUP);
  LLVMValueRef r;
  if (what == KIR_OP_GROUP_REDUCE) {
    doubling_loop(L, s.n, NULL, wg_reduce_step, &s);
    r = load_slot(L, s.mem, zero);
  } else {
    r = doubling_loop(L, s.n, x, wg_scan_step, &s);
    if (what == KIR_OP_GROUP_EXCLUSIVE_SCAN) {
      LLVMValueRef first = LLVMBuildICmp(L->b, LLVMIntEQ, s.lin, zero, "");
      LLVMValueRef prev = LLVMBuildSelect(
          L->b, first, zero, LLVMBuildSub(L->b, s.lin, LLVMConstInt(L->i64, 1, 0), ""), "");
      r = LLVMBuildSelect(L->b, first, identity(L, op, k), load_slot(L, s.mem, prev), "");
    }
  }
  control_barrier(L, KC_SCOPE_WORKGROUP); /* the scratch is free again */
  return r;
}

typedef struct bcast_ctx {
  LLVMValueRef mem, x;
} bcast_ctx_t;

static void bcast_publish(kc_lower_t *L, void *ctx) {
  bcast_ctx_t *c = ctx;
  LLVMBuildStore(L->b, c->x, c->mem);
}

static LLVMValueRef work_group_broadcast(kc_lower_t *L, kir_kind_t k, LLVMValueRef x,
                                         LLVMValueRef id) {
  LLVMValueRef lin, n;
  group_linear(L, &lin, &n);
  LLVMValueRef mem = scratch(L, k);
  if (k == KIR_BOOL) x = LLVMBuildZExt(L->b, x, L->i8, "");
  bcast_ctx_t c = {mem, x};
  if_then(L, LLVMBuildICmp(L->b, LLVMIntEQ, lin, id, ""), bcast_publish, &c);
  control_barrier(L, KC_SCOPE_WORKGROUP);
  LLVMValueRef r = LLVMBuildLoad2(L->b, kc_mem_type(L, k), mem, "");
  control_barrier(L, KC_SCOPE_WORKGROUP);
  return k == KIR_BOOL ? LLVMBuildTrunc(L->b, r, L->i1, "") : r;
}

/* ---- dispatch ----------------------------------------------------------------------------- */

static LLVMValueRef collective(kc_lower_t *L, const kir_inst_t *in, kir_op_t what,
                               kir_group_op_t op, kir_kind_t k, LLVMValueRef x) {
  if (in->scope == KIR_SUB_GROUP) return sub_group_collective(L, what, op, k, x);
  return work_group_collective(L, what, op, k, x);
}

/* any/all: OpGroupAny/All over a sub-group; an or/and reduction of the predicate as an i32
 * over a work-group. */
static LLVMValueRef vote(kc_lower_t *L, const kir_inst_t *in) {
  if (in->scope == KIR_SUB_GROUP) {
    const char *name =
        in->op == KIR_OP_GROUP_ANY ? "_Z16__spirv_GroupAnyib" : "_Z16__spirv_GroupAllib";
    LLVMTypeRef params[2] = {L->i32, L->i1};
    LLVMValueRef fn = kc_declare(L, name, L->i1, params, 2, KC_BUILTIN_CONVERGENT);
    LLVMValueRef args[2] = {LLVMConstInt(L->i32, KC_SCOPE_SUBGROUP, 0), kc_arg(L, in, 0)};
    return kc_call(L, fn, args, 2);
  }
  LLVMValueRef p = LLVMBuildZExt(L->b, kc_arg(L, in, 0), L->i32, "");
  kir_group_op_t op = in->op == KIR_OP_GROUP_ANY ? KIR_GROUP_OR : KIR_GROUP_AND;
  LLVMValueRef r = collective(L, in, KIR_OP_GROUP_REDUCE, op, KIR_I32, p);
  return LLVMBuildICmp(L->b, LLVMIntNE, r, LLVMConstInt(L->i32, 0, 0), "");
}

int kc_lower_group(kc_lower_t *L, const kir_inst_t *in) {
  kir_kind_t k = in->type.kind;
  LLVMValueRef r;
  switch (in->op) {
  case KIR_OP_SG_BARRIER:
    control_barrier(L, KC_SCOPE_SUBGROUP);
    return 0;
  case KIR_OP_SG_SHUFFLE:
  case KIR_OP_SG_SHUFFLE_DOWN:
  case KIR_OP_SG_SHUFFLE_UP:
  case KIR_OP_SG_SHUFFLE_XOR:
    return lower_shuffle(L, in);
  case KIR_OP_GROUP_BROADCAST:
    if (in->scope == KIR_SUB_GROUP) {
      LLVMValueRef lane = LLVMBuildTrunc(L->b, kc_arg(L, in, 1), L->i32, "");
      r = shuffle(L, SHUF_IDX, k, kc_arg(L, in, 0), lane);
    } else {
      r = work_group_broadcast(L, k, kc_arg(L, in, 0), kc_arg(L, in, 1));
    }
    break;
  case KIR_OP_GROUP_ANY:
  case KIR_OP_GROUP_ALL:
    r = vote(L, in);
    break;
  default:
    r = collective(L, in, in->op, (kir_group_op_t)in->sub, k, kc_arg(L, in, 0));
    break;
  }
  kc_set_result(L, in, r);
  return 0;
}
