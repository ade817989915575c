/* NVPTX finaliser, builtins: every call to a SPIR-V-friendly `__spirv_*` function is replaced
 * at its call site by NVPTX code (special registers, bar.sync, atomics with explicit fences)
 * or by a call to CUDA's libdevice. Rewriting call sites, not defining a library, lets
 * constant dimensions, scopes and semantics pick the exact instruction.
 */
#include "finalise/nvptx/finalise_nvptx.h"

#include <llvm-c/Target.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct bi_call {
  LLVMModuleRef mod;
  LLVMContextRef ctx;
  LLVMBuilderRef b;
  LLVMValueRef call;
  LLVMTypeRef ret;
  unsigned nargs;
  LLVMValueRef args[8];
  int have_libdevice;
} bi_call_t;

/* SPIR-V scopes and memory-semantics bits. */
enum { SCOPE_CROSS_DEVICE = 0, SCOPE_DEVICE = 1, SCOPE_SUBGROUP = 3 };
enum { SEM_ACQUIRE = 0x2, SEM_RELEASE = 0x4, SEM_ACQ_REL = 0x8, SEM_SEQ_CST = 0x10 };

static LLVMTypeRef i64t(bi_call_t *c) {
  return LLVMInt64TypeInContext(c->ctx);
}

static LLVMValueRef intrinsic(bi_call_t *c, const char *name, LLVMTypeRef *tys, size_t ntys,
                              LLVMValueRef *args, unsigned nargs) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(c->mod, id, tys, ntys);
  LLVMTypeRef ft = LLVMIntrinsicGetType(c->ctx, id, tys, ntys);
  return LLVMBuildCall2(c->b, ft, fn, args, nargs, "");
}

static void call0(bi_call_t *c, const char *name) {
  intrinsic(c, name, NULL, 0, NULL, 0);
}

/* A 32-bit special register (`tid`, `ntid`, `ctaid`, `nctaid`) of one dimension, as i64. */
static LLVMValueRef sreg_dim(bi_call_t *c, const char *reg, int dim) {
  char name[64];
  snprintf(name, sizeof name, "llvm.nvvm.read.ptx.sreg.%s.%c", reg, "xyz"[dim]);
  return LLVMBuildZExt(c->b, intrinsic(c, name, NULL, 0, NULL, 0), i64t(c), "");
}

/* ids have a dimension argument; when it is not a constant the three are selected. */
typedef LLVMValueRef (*dim_fn)(bi_call_t *c, int dim);

static LLVMValueRef by_dim(bi_call_t *c, dim_fn f) {
  LLVMValueRef d = c->nargs ? c->args[0] : NULL;
  if (!d || LLVMIsAConstantInt(d)) {
    unsigned long long v = d ? LLVMConstIntGetZExtValue(d) : 0;
    return v < 3 ? f(c, (int)v) : LLVMConstInt(i64t(c), 0, 0);
  }
  LLVMValueRef x = f(c, 0), y = f(c, 1), z = f(c, 2);
  LLVMTypeRef dt = LLVMTypeOf(d);
  LLVMValueRef is0 = LLVMBuildICmp(c->b, LLVMIntEQ, d, LLVMConstInt(dt, 0, 0), "");
  LLVMValueRef is1 = LLVMBuildICmp(c->b, LLVMIntEQ, d, LLVMConstInt(dt, 1, 0), "");
  return LLVMBuildSelect(c->b, is0, x, LLVMBuildSelect(c->b, is1, y, z, ""), "");
}

static LLVMValueRef tid(bi_call_t *c, int d) {
  return sreg_dim(c, "tid", d);
}
static LLVMValueRef ntid(bi_call_t *c, int d) {
  return sreg_dim(c, "ntid", d);
}
static LLVMValueRef ctaid(bi_call_t *c, int d) {
  return sreg_dim(c, "ctaid", d);
}
static LLVMValueRef nctaid(bi_call_t *c, int d) {
  return sreg_dim(c, "nctaid", d);
}
static LLVMValueRef zero(bi_call_t *c, int d) {
  (void)d;
  return LLVMConstInt(i64t(c), 0, 0);
}
static LLVMValueRef global_size(bi_call_t *c, int d) {
  return LLVMBuildNUWMul(c->b, nctaid(c, d), ntid(c, d), "");
}
/* ctaid * ntid + tid from zero-extended 32-bit registers: one mad.wide.u32, no overflow. */
static LLVMValueRef global_id(bi_call_t *c, int d) {
  LLVMValueRef base = LLVMBuildNUWMul(c->b, ctaid(c, d), ntid(c, d), "");
  return LLVMBuildNUWAdd(c->b, base, tid(c, d), "gid");
}

static LLVMValueRef linear(bi_call_t *c, dim_fn id, dim_fn size) {
  LLVMValueRef v = id(c, 2);
  v = LLVMBuildAdd(c->b, LLVMBuildMul(c->b, v, size(c, 1), ""), id(c, 1), "");
  return LLVMBuildAdd(c->b, LLVMBuildMul(c->b, v, size(c, 0), ""), id(c, 0), "");
}

static LLVMValueRef fit_int(bi_call_t *c, LLVMValueRef v) {
  if (LLVMTypeOf(v) == c->ret) return v;
  return LLVMBuildZExtOrBitCast(c->b, LLVMBuildTrunc(c->b, v, c->ret, ""), c->ret, "");
}

/* __spirv_BuiltIn*: work-item ids and sizes. NULL with *unknown set when not handled. */
static LLVMValueRef lower_id(bi_call_t *c, const char *n) {
  LLVMValueRef v = NULL;
  LLVMValueRef warp = LLVMConstInt(i64t(c), 32, 0);
  if (!strcmp(n, "GlobalInvocationId"))
    v = by_dim(c, global_id);
  else if (!strcmp(n, "LocalInvocationId"))
    v = by_dim(c, tid);
  else if (!strcmp(n, "WorkgroupId"))
    v = by_dim(c, ctaid);
  else if (!strcmp(n, "WorkgroupSize") || !strcmp(n, "EnqueuedWorkgroupSize"))
    v = by_dim(c, ntid);
  else if (!strcmp(n, "NumWorkgroups"))
    v = by_dim(c, nctaid);
  else if (!strcmp(n, "GlobalSize"))
    v = by_dim(c, global_size);
  else if (!strcmp(n, "GlobalOffset"))
    v = by_dim(c, zero);
  else if (!strcmp(n, "GlobalLinearId"))
    v = linear(c, global_id, global_size);
  else if (!strcmp(n, "LocalInvocationIndex"))
    v = linear(c, tid, ntid);
  else if (!strcmp(n, "SubgroupSize"))
    v = LLVMBuildZExt(c->b, kc_nvptx_sub_group_size(c->mod, c->b), i64t(c), "");
  else if (!strcmp(n, "SubgroupMaxSize"))
    v = warp;
  else if (!strcmp(n, "SubgroupLocalInvocationId"))
    v = LLVMBuildZExt(c->b, intrinsic(c, "llvm.nvvm.read.ptx.sreg.laneid", NULL, 0, NULL, 0),
                      i64t(c), "");
  else if (!strcmp(n, "SubgroupId"))
    v = LLVMBuildUDiv(c->b, linear(c, tid, ntid), warp, "");
  else if (!strcmp(n, "NumSubgroups")) {
    LLVMValueRef t =
        LLVMBuildMul(c->b, LLVMBuildMul(c->b, ntid(c, 0), ntid(c, 1), ""), ntid(c, 2), "");
    t = LLVMBuildAdd(c->b, t, LLVMConstInt(i64t(c), 31, 0), "");
    v = LLVMBuildUDiv(c->b, t, warp, "");
  }
  return v ? fit_int(c, v) : NULL;
}

static int const_arg(bi_call_t *c, unsigned i, unsigned long long dflt, unsigned long long *out) {
  if (i >= c->nargs) return 0;
  LLVMValueRef v = c->args[i];
  *out = LLVMIsAConstantInt(v) ? LLVMConstIntGetZExtValue(v) : dflt;
  return 1;
}

/* PTX membar of the scope's reach: cta for work-group and narrower, gl device, sys beyond. */
static void fence(bi_call_t *c, unsigned long long scope) {
  if (scope == SCOPE_CROSS_DEVICE)
    call0(c, "llvm.nvvm.membar.sys");
  else if (scope == SCOPE_DEVICE)
    call0(c, "llvm.nvvm.membar.gl");
  else
    call0(c, "llvm.nvvm.membar.cta");
}

static LLVMValueRef lower_barrier(bi_call_t *c, const char *n) {
  unsigned long long exec = 2, scope = SCOPE_DEVICE, sem = SEM_SEQ_CST;
  if (!strcmp(n, "ControlBarrier")) {
    const_arg(c, 0, 2, &exec);
    const_arg(c, 1, SCOPE_DEVICE, &scope);
    if (scope <= SCOPE_DEVICE) fence(c, scope); /* bar.sync orders only within the block */
    if (exec == SCOPE_SUBGROUP) {
      LLVMValueRef members = kc_nvptx_sub_group_mask(c->mod, c->b);
      intrinsic(c, "llvm.nvvm.bar.warp.sync", NULL, 0, &members, 1);
    } else {
      call0(c, "llvm.nvvm.barrier0");
    }
  } else {
    const_arg(c, 0, SCOPE_DEVICE, &scope);
    const_arg(c, 1, SEM_SEQ_CST, &sem);
    fence(c, scope);
  }
  return LLVMGetUndef(c->ret);
}

static int atomic_op(const char *n, LLVMAtomicRMWBinOp *op) {
  static const struct {
    const char *name;
    LLVMAtomicRMWBinOp op;
  } ops[] = {{"IAdd", LLVMAtomicRMWBinOpAdd},      {"ISub", LLVMAtomicRMWBinOpSub},
             {"And", LLVMAtomicRMWBinOpAnd},       {"Or", LLVMAtomicRMWBinOpOr},
             {"Xor", LLVMAtomicRMWBinOpXor},       {"SMin", LLVMAtomicRMWBinOpMin},
             {"SMax", LLVMAtomicRMWBinOpMax},      {"UMin", LLVMAtomicRMWBinOpUMin},
             {"UMax", LLVMAtomicRMWBinOpUMax},     {"Exchange", LLVMAtomicRMWBinOpXchg},
             {"FAddEXT", LLVMAtomicRMWBinOpFAdd},  {"FMinEXT", LLVMAtomicRMWBinOpFMin},
             {"FMaxEXT", LLVMAtomicRMWBinOpFMax},  {"IIncrement", LLVMAtomicRMWBinOpAdd},
             {"IDecrement", LLVMAtomicRMWBinOpSub}};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; ++i)
    if (!strcmp(n, ops[i].name)) {
      *op = ops[i].op;
      return 1;
    }
  return 0;
}

/* Float exchange goes through the same-width integer, which every target lowers. */
static LLVMValueRef atomic_xchg(bi_call_t *c, LLVMValueRef ptr, LLVMValueRef val) {
  LLVMTypeRef t = LLVMTypeOf(val);
  if (LLVMGetTypeKind(t) == LLVMIntegerTypeKind)
    return LLVMBuildAtomicRMW(c->b, LLVMAtomicRMWBinOpXchg, ptr, val, LLVMAtomicOrderingMonotonic,
                              0);
  LLVMTypeRef it = LLVMIntTypeInContext(c->ctx, LLVMGetTypeKind(t) == LLVMDoubleTypeKind ? 64 : 32);
  unsigned as = LLVMGetPointerAddressSpace(LLVMTypeOf(ptr));
  LLVMValueRef ip = LLVMBuildBitCast(c->b, ptr, LLVMPointerType(it, as), "");
  LLVMValueRef old =
      LLVMBuildAtomicRMW(c->b, LLVMAtomicRMWBinOpXchg, ip, LLVMBuildBitCast(c->b, val, it, ""),
                         LLVMAtomicOrderingMonotonic, 0);
  return LLVMBuildBitCast(c->b, old, t, "");
}

static LLVMValueRef atomic_body(bi_call_t *c, const char *n) {
  LLVMValueRef ptr = c->args[0];
  LLVMAtomicRMWBinOp op;
  if (!strcmp(n, "Load")) {
    LLVMValueRef v = LLVMBuildLoad2(c->b, c->ret, ptr, "");
    LLVMSetOrdering(v, LLVMAtomicOrderingMonotonic);
    LLVMSetAlignment(v, (unsigned)LLVMABISizeOfType(LLVMGetModuleDataLayout(c->mod), c->ret));
    return v;
  }
  if (!strcmp(n, "Store") && c->nargs == 4) {
    LLVMValueRef s = LLVMBuildStore(c->b, c->args[3], ptr);
    LLVMSetOrdering(s, LLVMAtomicOrderingMonotonic);
    LLVMSetAlignment(
        s, (unsigned)LLVMABISizeOfType(LLVMGetModuleDataLayout(c->mod), LLVMTypeOf(c->args[3])));
    return LLVMGetUndef(c->ret);
  }
  if ((!strcmp(n, "CompareExchange") || !strcmp(n, "CompareExchangeWeak")) && c->nargs == 6) {
    LLVMValueRef x =
        LLVMBuildAtomicCmpXchg(c->b, ptr, c->args[5], c->args[4], LLVMAtomicOrderingMonotonic,
                               LLVMAtomicOrderingMonotonic, 0);
    return LLVMBuildExtractValue(c->b, x, 0, "");
  }
  if (!atomic_op(n, &op)) return NULL;
  if (op == LLVMAtomicRMWBinOpXchg && c->nargs == 4) return atomic_xchg(c, ptr, c->args[3]);
  LLVMValueRef val = c->nargs == 4 ? c->args[3] : LLVMConstInt(c->ret, 1, 0);
  if (c->nargs != 4 && c->nargs != 3) return NULL;
  return LLVMBuildAtomicRMW(c->b, op, ptr, val, LLVMAtomicOrderingMonotonic, 0);
}

/* __spirv_Atomic*: relaxed LLVM atomics (device scope in PTX) with membars for the ordering
 * the semantics ask for, since LLVM 15's NVPTX ignores atomic orderings. */
static LLVMValueRef lower_atomic(bi_call_t *c, const char *n) {
  unsigned long long scope = SCOPE_DEVICE, sem = SEM_SEQ_CST;
  if (c->nargs < 3) return NULL;
  const_arg(c, 1, SCOPE_DEVICE, &scope);
  const_arg(c, 2, SEM_SEQ_CST, &sem);
  if (sem & (SEM_RELEASE | SEM_ACQ_REL | SEM_SEQ_CST)) fence(c, scope);
  LLVMValueRef v = atomic_body(c, n);
  if (v && (sem & (SEM_ACQUIRE | SEM_ACQ_REL | SEM_SEQ_CST))) fence(c, scope);
  return v;
}

/* Relational tests on floats (OpIsNan...), which come back as __spirv_ calls. */
static LLVMValueRef lower_relational(bi_call_t *c, const char *n) {
  if (c->nargs < 1 || LLVMGetTypeKind(LLVMTypeOf(c->args[0])) == LLVMVectorTypeKind) return NULL;
  LLVMValueRef x = c->args[0], r = NULL;
  LLVMTypeRef t = LLVMTypeOf(x);
  LLVMTypeKind tk = LLVMGetTypeKind(t);
  if (tk != LLVMFloatTypeKind && tk != LLVMDoubleTypeKind) return NULL; /* not a relational */
  LLVMValueRef inf = LLVMConstReal(t, __builtin_inf());
  if (!strcmp(n, "IsNan"))
    r = LLVMBuildFCmp(c->b, LLVMRealUNO, x, x, "");
  else if (!strcmp(n, "IsInf") || !strcmp(n, "IsFinite")) {
    LLVMValueRef a = intrinsic(c, "llvm.fabs", &t, 1, &x, 1);
    r = LLVMBuildFCmp(c->b, n[2] == 'I' ? LLVMRealOEQ : LLVMRealONE, a, inf, "");
  } else if (!strcmp(n, "SignBitSet")) {
    unsigned w = LLVMGetTypeKind(t) == LLVMDoubleTypeKind ? 64 : 32;
    LLVMTypeRef it = LLVMIntTypeInContext(c->ctx, w);
    r = LLVMBuildICmp(c->b, LLVMIntSLT, LLVMBuildBitCast(c->b, x, it, ""), LLVMConstInt(it, 0, 0),
                      "");
  } else if ((!strcmp(n, "Ordered") || !strcmp(n, "Unordered")) && c->nargs == 2)
    r = LLVMBuildFCmp(c->b, n[0] == 'O' ? LLVMRealORD : LLVMRealUNO, x, c->args[1], "");
  return r ? LLVMBuildZExt(c->b, r, c->ret, "") : NULL;
}

/* Math with an exact LLVM intrinsic that NVPTX lowers to one correctly rounded instruction. */
static LLVMValueRef math_intrinsic(bi_call_t *c, const char *n) {
  static const struct {
    const char *ocl, *llvm;
  } map[] = {{"sqrt", "llvm.sqrt"},     {"fabs", "llvm.fabs"},   {"floor", "llvm.floor"},
             {"ceil", "llvm.ceil"},     {"trunc", "llvm.trunc"}, {"rint", "llvm.rint"},
             {"round", "llvm.round"},   {"fma", "llvm.fma"},     {"mad", "llvm.fma"},
             {"fmin", "llvm.minnum"},   {"fmax", "llvm.maxnum"}, {"copysign", "llvm.copysign"},
             {"popcount", "llvm.ctpop"}};
  LLVMTypeRef t = c->ret;
  for (size_t i = 0; i < sizeof map / sizeof map[0]; ++i)
    if (!strcmp(n, map[i].ocl)) return intrinsic(c, map[i].llvm, &t, 1, c->args, c->nargs);
  if (!strcmp(n, "clz") || !strcmp(n, "ctz")) {
    LLVMValueRef a[2] = {c->args[0], LLVMConstInt(LLVMInt1TypeInContext(c->ctx), 0, 0)};
    return intrinsic(c, n[0] == 'c' && n[1] == 'l' ? "llvm.ctlz" : "llvm.cttz", &t, 1, a, 2);
  }
  return NULL;
}

static LLVMValueRef int_math(bi_call_t *c, const char *n) {
  LLVMValueRef a = c->args[0];
  if (!strcmp(n, "u_abs")) return a;
  if (!strcmp(n, "s_abs")) {
    LLVMValueRef neg = LLVMBuildNeg(c->b, a, "");
    LLVMValueRef lt = LLVMBuildICmp(c->b, LLVMIntSLT, a, LLVMConstInt(c->ret, 0, 0), "");
    return LLVMBuildSelect(c->b, lt, neg, a, "");
  }
  static const struct {
    const char *name;
    LLVMIntPredicate pred;
  } mm[] = {
      {"s_min", LLVMIntSLT}, {"u_min", LLVMIntULT}, {"s_max", LLVMIntSGT}, {"u_max", LLVMIntUGT}};
  for (size_t i = 0; i < 4; ++i)
    if (!strcmp(n, mm[i].name) && c->nargs == 2) {
      LLVMValueRef cmp = LLVMBuildICmp(c->b, mm[i].pred, a, c->args[1], "");
      return LLVMBuildSelect(c->b, cmp, a, c->args[1], "");
    }
  return NULL;
}

/* OpenCL.std names that libdevice provides as __nv_<name>f / __nv_<name>. */
static const char *const libdevice_names[] = {
    "acos",  "acosh", "asin",   "asinh",     "atan",      "atan2",  "atanh", "cbrt",
    "cos",   "cosh",  "cospi",  "erf",       "erfc",      "exp",    "exp2",  "exp10",
    "expm1", "fdim",  "fmod",   "hypot",     "ldexp",     "lgamma", "log",   "log10",
    "log1p", "log2",  "logb",   "pow",       "rsqrt",     "sin",    "sinh",  "sinpi",
    "tan",   "tanh",  "tgamma", "nextafter", "remainder", "ilogb",  "powi"};

static const char *libdevice_alias(const char *n) {
  if (!strncmp(n, "native_", 7))
    n += 7;
  else if (!strncmp(n, "half_", 5))
    n += 5;
  if (!strcmp(n, "powr")) return "pow";
  if (!strcmp(n, "pown")) return "powi";
  for (size_t i = 0; i < sizeof libdevice_names / sizeof libdevice_names[0]; ++i)
    if (!strcmp(n, libdevice_names[i])) return libdevice_names[i];
  return NULL;
}

static LLVMValueRef lower_math_scalar(bi_call_t *c, const char *n, char **log) {
  LLVMTypeKind k = LLVMGetTypeKind(c->ret);
  LLVMTypeKind ak = LLVMGetTypeKind(LLVMTypeOf(c->args[0]));
  if (k == LLVMIntegerTypeKind && ak == LLVMIntegerTypeKind) {
    LLVMValueRef v = int_math(c, n);
    return v ? v : math_intrinsic(c, n);
  }
  if (!strncmp(n, "native_", 7)) { /* approximate float32; others as the accurate function */
    LLVMValueRef in = LLVMGetBasicBlockParent(LLVMGetInstructionParent(c->call));
    LLVMValueRef v = kc_nvptx_native_math(c->mod, c->b, n + 7, c->args, c->nargs,
                                          kc_nvptx_flushes_denormals(in));
    if (v) return v;
    n += 7;
    if (!strcmp(n, "divide") && c->nargs == 2)
      return LLVMBuildFDiv(c->b, c->args[0], c->args[1], "");
    if (!strcmp(n, "recip") && c->nargs == 1)
      return LLVMBuildFDiv(c->b, LLVMConstReal(c->ret, 1.0), c->args[0], "");
  }
  LLVMValueRef v = math_intrinsic(c, n);
  if (v) return v;
  const char *nv = libdevice_alias(n);
  int fp32 = ak == LLVMFloatTypeKind, fp64 = ak == LLVMDoubleTypeKind;
  if (!nv || !(fp32 || fp64)) return NULL;
  if (!c->have_libdevice) {
    *log = kc_msg("math function '%s' needs CUDA's libdevice, which was not given", n);
    return NULL;
  }
  char name[64];
  snprintf(name, sizeof name, "__nv_%s%s", nv, fp32 ? "f" : "");
  LLVMTypeRef params[8];
  for (unsigned i = 0; i < c->nargs; ++i)
    params[i] = LLVMTypeOf(c->args[i]);
  LLVMTypeRef ft = LLVMFunctionType(c->ret, params, c->nargs, 0);
  LLVMValueRef fn = LLVMGetNamedFunction(c->mod, name);
  if (!fn) fn = LLVMAddFunction(c->mod, name, ft);
  return LLVMBuildCall2(c->b, ft, fn, c->args, c->nargs, "");
}

/* A vector form (the vectorisers make them from unrolled loops: `abs` of <4 x i64> in a fuzzer
 * kernel) is its scalar lowering element by element; a scalar argument stays as it is. */
static LLVMValueRef lower_math_vector(bi_call_t *c, const char *n, char **log) {
  bi_call_t e = *c;
  e.ret = LLVMGetElementType(c->ret);
  LLVMValueRef out = LLVMGetUndef(c->ret);
  for (unsigned i = 0; i < LLVMGetVectorSize(c->ret); ++i) {
    LLVMValueRef idx = LLVMConstInt(LLVMInt32TypeInContext(c->ctx), i, 0);
    for (unsigned a = 0; a < c->nargs; ++a)
      e.args[a] = LLVMGetTypeKind(LLVMTypeOf(c->args[a])) == LLVMVectorTypeKind
                      ? LLVMBuildExtractElement(c->b, c->args[a], idx, "")
                      : c->args[a];
    LLVMValueRef r = lower_math_scalar(&e, n, log);
    if (!r) return NULL;
    out = LLVMBuildInsertElement(c->b, out, r, idx, "");
  }
  return out;
}

static LLVMValueRef lower_math(bi_call_t *c, const char *n, char **log) {
  if (c->nargs == 0) return NULL;
  int vec = 0, ptr = 0;
  for (unsigned a = 0; a < c->nargs; ++a) {
    LLVMTypeKind ak = LLVMGetTypeKind(LLVMTypeOf(c->args[a]));
    vec |= ak == LLVMVectorTypeKind, ptr |= ak == LLVMPointerTypeKind;
  }
  if (LLVMGetTypeKind(c->ret) == LLVMVectorTypeKind && !ptr) return lower_math_vector(c, n, log);
  if (vec || LLVMGetTypeKind(LLVMTypeOf(c->args[0])) == LLVMPointerTypeKind) {
    *log = kc_msg("vector or pointer form of math function '%s' is not supported on "
                  "NVIDIA GPUs",
                  n);
    return NULL;
  }
  return lower_math_scalar(c, n, log);
}

int kc_nvptx_spirv_name(const char *sym, char *out, size_t cap) {
  const char *p = sym;
  size_t len = strlen(sym);
  if (!strncmp(sym, "_Z", 2)) {
    char *end;
    len = strtoul(sym + 2, &end, 10);
    p = end;
    if (len > strlen(p)) return 0;
  }
  if (len <= 8 || strncmp(p, "__spirv_", 8) != 0 || len - 8 >= cap) return 0;
  memcpy(out, p + 8, len - 8);
  out[len - 8] = 0;
  return 1;
}

static LLVMValueRef lower_one(bi_call_t *c, const char *base, char **log) {
  if (!strncmp(base, "BuiltIn", 7)) return lower_id(c, base + 7);
  if (!strcmp(base, "ControlBarrier") || !strcmp(base, "MemoryBarrier"))
    return lower_barrier(c, base);
  if (!strncmp(base, "Atomic", 6)) return lower_atomic(c, base + 6);
  if (!strncmp(base, "SubgroupShuffle", 15))
    return kc_nvptx_shuffle(c->mod, c->b, base + 15, c->args, c->nargs);
  if (!strncmp(base, "Group", 5)) return kc_nvptx_group(c->mod, c->b, base + 5, c->args, c->nargs);
  if (!strcmp(base, "ocl_printf")) return kc_nvptx_lower_printf(c->mod, c->b, c->call, log);
  if (!strncmp(base, "ocl_", 4)) return lower_math(c, base + 4, log);
  if (!strcmp(base, "BitCount") && c->nargs == 1) {
    /* OpBitCount: the vectorisers count masks of compares with llvm.ctpop (fuzzer, seed 7000
     * kernel 47980), in the operand's width, widened if the result is wider */
    LLVMTypeRef t = LLVMTypeOf(c->args[0]);
    LLVMValueRef r = intrinsic(c, "llvm.ctpop", &t, 1, c->args, 1);
    return t == c->ret ? r : LLVMBuildZExtOrBitCast(c->b, r, c->ret, "");
  }
  return lower_relational(c, base);
}

static kc_status_t lower_calls_to(LLVMModuleRef mod, LLVMValueRef fn, const char *base,
                                  int have_libdevice, char **log) {
  bi_call_t c = {.mod = mod, .ctx = LLVMGetModuleContext(mod), .have_libdevice = have_libdevice};
  c.b = LLVMCreateBuilderInContext(c.ctx);
  kc_status_t st = KC_OK;
  LLVMUseRef u;
  while (st == KC_OK && (u = LLVMGetFirstUse(fn))) {
    c.call = LLVMGetUser(u);
    if (!LLVMIsACallInst(c.call) || LLVMGetCalledValue(c.call) != fn) {
      *log = kc_msg("builtin '__spirv_%s' is used other than by a call", base);
      st = KC_ERR_UNSUPPORTED;
      break;
    }
    c.ret = LLVMGetReturnType(LLVMGetCalledFunctionType(c.call));
    c.nargs = (unsigned)LLVMGetNumArgOperands(c.call);
    if (c.nargs > 8) c.nargs = 8;
    for (unsigned i = 0; i < c.nargs; ++i)
      c.args[i] = LLVMGetOperand(c.call, i);
    LLVMPositionBuilderBefore(c.b, c.call);
    LLVMValueRef v = lower_one(&c, base, log);
    if (!v) {
      if (!*log) *log = kc_msg("SPIR-V builtin '__spirv_%s' is not supported on NVIDIA GPUs", base);
      st = KC_ERR_UNSUPPORTED;
      break;
    }
    if (LLVMGetTypeKind(c.ret) != LLVMVoidTypeKind) LLVMReplaceAllUsesWith(c.call, v);
    LLVMInstructionEraseFromParent(c.call);
  }
  LLVMDisposeBuilder(c.b);
  return st;
}

kc_status_t kc_nvptx_lower_builtins(LLVMModuleRef mod, int have_libdevice, char **log) {
  LLVMValueRef f = LLVMGetFirstFunction(mod);
  while (f) {
    LLVMValueRef next = LLVMGetNextFunction(f);
    size_t n;
    char base[128];
    if (LLVMIsDeclaration(f) && kc_nvptx_spirv_name(LLVMGetValueName2(f, &n), base, sizeof base)) {
      kc_status_t st = lower_calls_to(mod, f, base, have_libdevice, log);
      if (st != KC_OK) return st;
      LLVMDeleteFunction(f);
    }
    f = next;
  }
  return KC_OK;
}
