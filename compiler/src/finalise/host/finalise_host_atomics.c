/* Host finaliser: `__spirv_Atomic*` calls (SPIR-V-friendly names) become LLVM atomics. The
 * mangled names vary with type and address space, so calls are rewritten by base name and
 * operand types rather than linked against a fixed library. Orderings are honoured (or
 * strengthened where LLVM has no exact equivalent); every scope becomes system scope, which is
 * at least as strong as any OpenCL scope.
 *
 * One exception: integer add and subtract on local memory. A work-group runs on one thread of
 * the CPU driver's pool, and its local memory is that thread's own, so no other core can see
 * it: a locked `xadd` there only serialises the pipeline (a local histogram ran at a third of
 * its speed). Those become a plain `xadd` in inline assembly, one instruction, which neither
 * a fiber switch (only at barriers) nor another thread can split; being opaque and marked as
 * touching memory, it keeps its place among the other accesses and is never vectorised, so
 * work-items that hit the same counter still add one after the other.
 */
#include "finalise/host/finalise_host.h"

#include <stdlib.h>
#include <string.h>

enum { SEM_ACQUIRE = 0x2, SEM_RELEASE = 0x4, SEM_ACQREL = 0x8, SEM_SEQCST = 0x10 };

/* SPIR-V memory semantics -> LLVM ordering; a non-constant value gets the strongest. */
static LLVMAtomicOrdering order_of(LLVMValueRef sem) {
  if (!LLVMIsAConstantInt(sem)) return LLVMAtomicOrderingSequentiallyConsistent;
  unsigned long long v = LLVMConstIntGetZExtValue(sem);
  if (v & SEM_SEQCST) return LLVMAtomicOrderingSequentiallyConsistent;
  if ((v & SEM_ACQREL) || (v & (SEM_ACQUIRE | SEM_RELEASE)) == (SEM_ACQUIRE | SEM_RELEASE))
    return LLVMAtomicOrderingAcquireRelease;
  if (v & SEM_ACQUIRE) return LLVMAtomicOrderingAcquire;
  if (v & SEM_RELEASE) return LLVMAtomicOrderingRelease;
  return LLVMAtomicOrderingMonotonic;
}

static int strength(LLVMAtomicOrdering o) {
  switch (o) {
  case LLVMAtomicOrderingMonotonic:
    return 1;
  case LLVMAtomicOrderingAcquire:
  case LLVMAtomicOrderingRelease:
    return 2;
  case LLVMAtomicOrderingAcquireRelease:
    return 3;
  case LLVMAtomicOrderingSequentiallyConsistent:
    return 4;
  default:
    return 0;
  }
}

/* Loads cannot release and stores cannot acquire: strengthen those to seq_cst. */
static LLVMAtomicOrdering for_load(LLVMAtomicOrdering o) {
  return (o == LLVMAtomicOrderingRelease || o == LLVMAtomicOrderingAcquireRelease)
             ? LLVMAtomicOrderingSequentiallyConsistent
             : o;
}
static LLVMAtomicOrdering for_store(LLVMAtomicOrdering o) {
  return (o == LLVMAtomicOrderingAcquire || o == LLVMAtomicOrderingAcquireRelease)
             ? LLVMAtomicOrderingSequentiallyConsistent
             : o;
}

/* ptr retyped to point at ty, in ptr's address space (typed pointers). */
static LLVMValueRef ptr_to(LLVMBuilderRef b, LLVMValueRef ptr, LLVMTypeRef ty) {
  LLVMTypeRef want = LLVMPointerType(ty, LLVMGetPointerAddressSpace(LLVMTypeOf(ptr)));
  return LLVMTypeOf(ptr) == want ? ptr : LLVMBuildBitCast(b, ptr, want, "");
}

static unsigned natural_align(LLVMTypeRef ty) {
  switch (LLVMGetTypeKind(ty)) {
  case LLVMIntegerTypeKind:
    return LLVMGetIntTypeWidth(ty) / 8;
  case LLVMFloatTypeKind:
    return 4;
  case LLVMHalfTypeKind:
    return 2;
  default:
    return 8;
  }
}

enum { LOCAL_AS = 3 }; /* OpenCL's __local address space in the translator's LLVM IR */

/* `*ptr += val` on a work-group's local memory, returning the old value (see the top). */
static LLVMValueRef local_xadd(LLVMBuilderRef b, LLVMValueRef ptr, LLVMValueRef val) {
  LLVMTypeRef ty = LLVMTypeOf(val);
  LLVMTypeRef params[2] = {ty, LLVMTypeOf(ptr)};
  LLVMTypeRef fty = LLVMFunctionType(ty, params, 2, 0);
  char *text = LLVMGetIntTypeWidth(ty) == 64 ? "xaddq $0, ($2)" : "xaddl $0, ($2)";
  char constraints[] = "=r,0,r,~{memory},~{dirflag},~{fpsr},~{flags}";
  LLVMValueRef fn = LLVMGetInlineAsm(fty, text, strlen(text), constraints, strlen(constraints), 1,
                                     0, LLVMInlineAsmDialectATT, 0);
  LLVMValueRef args[2] = {val, ptr};
  return LLVMBuildCall2(b, fty, fn, args, 2, "");
}

static int local_int(LLVMValueRef ptr, LLVMTypeRef ty) {
  if (LLVMGetPointerAddressSpace(LLVMTypeOf(ptr)) != LOCAL_AS) return 0;
  if (LLVMGetTypeKind(ty) != LLVMIntegerTypeKind) return 0;
  unsigned w = LLVMGetIntTypeWidth(ty);
  return w == 32 || w == 64;
}

static LLVMValueRef rmw(LLVMBuilderRef b, LLVMAtomicRMWBinOp op, LLVMValueRef ptr, LLVMValueRef val,
                        LLVMValueRef sem) {
  LLVMValueRef p = ptr_to(b, ptr, LLVMTypeOf(val));
  if ((op == LLVMAtomicRMWBinOpAdd || op == LLVMAtomicRMWBinOpSub) && local_int(p, LLVMTypeOf(val)))
    return local_xadd(b, p, op == LLVMAtomicRMWBinOpAdd ? val : LLVMBuildNeg(b, val, ""));
  return LLVMBuildAtomicRMW(b, op, p, val, order_of(sem), 0);
}

/* cmpxchg works on integers only: floats go through their bits. Returns the old value. */
static LLVMValueRef cmpxchg(LLVMBuilderRef b, LLVMValueRef *a, int weak, LLVMTypeRef ret) {
  LLVMTypeRef ty = ret;
  int is_fp = LLVMGetTypeKind(ty) == LLVMFloatTypeKind || LLVMGetTypeKind(ty) == LLVMDoubleTypeKind;
  LLVMTypeRef ity = is_fp ? LLVMIntTypeInContext(LLVMGetTypeContext(ty),
                                                 LLVMGetTypeKind(ty) == LLVMFloatTypeKind ? 32 : 64)
                          : ty;
  LLVMValueRef val = is_fp ? LLVMBuildBitCast(b, a[4], ity, "") : a[4];
  LLVMValueRef cmp = is_fp ? LLVMBuildBitCast(b, a[5], ity, "") : a[5];
  LLVMAtomicOrdering succ = order_of(a[2]), fail = order_of(a[3]);
  if (fail == LLVMAtomicOrderingRelease) fail = LLVMAtomicOrderingMonotonic;
  if (fail == LLVMAtomicOrderingAcquireRelease) fail = LLVMAtomicOrderingAcquire;
  if (strength(fail) > strength(succ))
    succ = fail == LLVMAtomicOrderingAcquire ? LLVMAtomicOrderingAcquire
                                             : LLVMAtomicOrderingSequentiallyConsistent;
  LLVMValueRef x = LLVMBuildAtomicCmpXchg(b, ptr_to(b, a[0], ity), cmp, val, succ, fail, 0);
  LLVMSetWeak(x, weak);
  LLVMValueRef old = LLVMBuildExtractValue(b, x, 0, "");
  return is_fp ? LLVMBuildBitCast(b, old, ty, "") : old;
}

static LLVMValueRef atomic_load(LLVMBuilderRef b, LLVMValueRef *a, LLVMTypeRef ty) {
  LLVMValueRef l = LLVMBuildLoad2(b, ty, ptr_to(b, a[0], ty), "");
  LLVMSetOrdering(l, for_load(order_of(a[2])));
  LLVMSetAlignment(l, natural_align(ty));
  return l;
}

static LLVMValueRef atomic_store(LLVMBuilderRef b, LLVMValueRef ptr, LLVMValueRef val,
                                 LLVMValueRef sem) {
  LLVMValueRef s = LLVMBuildStore(b, val, ptr_to(b, ptr, LLVMTypeOf(val)));
  LLVMSetOrdering(s, for_store(order_of(sem)));
  LLVMSetAlignment(s, natural_align(LLVMTypeOf(val)));
  return s;
}

typedef struct {
  const char *name;
  LLVMAtomicRMWBinOp op;
} rmw_op_t;

static const rmw_op_t RMW_OPS[] = {
    {"Exchange", LLVMAtomicRMWBinOpXchg}, {"IAdd", LLVMAtomicRMWBinOpAdd},
    {"ISub", LLVMAtomicRMWBinOpSub},      {"SMin", LLVMAtomicRMWBinOpMin},
    {"UMin", LLVMAtomicRMWBinOpUMin},     {"SMax", LLVMAtomicRMWBinOpMax},
    {"UMax", LLVMAtomicRMWBinOpUMax},     {"And", LLVMAtomicRMWBinOpAnd},
    {"Or", LLVMAtomicRMWBinOpOr},         {"Xor", LLVMAtomicRMWBinOpXor},
    {"FAddEXT", LLVMAtomicRMWBinOpFAdd},  {"FMinEXT", LLVMAtomicRMWBinOpFMin},
    {"FMaxEXT", LLVMAtomicRMWBinOpFMax},
};

/* The replacement for one call (op is the name after `__spirv_Atomic`); NULL if unknown. */
static LLVMValueRef lower_one(LLVMBuilderRef b, const char *op, LLVMValueRef *a, unsigned n,
                              LLVMTypeRef ret) {
  for (size_t i = 0; i < sizeof RMW_OPS / sizeof RMW_OPS[0]; i++)
    if (n == 4 && strcmp(op, RMW_OPS[i].name) == 0) return rmw(b, RMW_OPS[i].op, a[0], a[3], a[2]);
  if (n == 3 && (strcmp(op, "IIncrement") == 0 || strcmp(op, "IDecrement") == 0))
    return rmw(b, op[1] == 'I' ? LLVMAtomicRMWBinOpAdd : LLVMAtomicRMWBinOpSub, a[0],
               LLVMConstInt(ret, 1, 0), a[2]);
  if (n == 3 && strcmp(op, "Load") == 0) return atomic_load(b, a, ret);
  if (n == 4 && strcmp(op, "Store") == 0) return atomic_store(b, a[0], a[3], a[2]);
  if (n == 6 && strcmp(op, "CompareExchange") == 0) return cmpxchg(b, a, 0, ret);
  if (n == 6 && strcmp(op, "CompareExchangeWeak") == 0) return cmpxchg(b, a, 1, ret);
  LLVMTypeRef i32 = LLVMInt32TypeInContext(LLVMGetTypeContext(LLVMTypeOf(a[0])));
  if (n == 3 && strcmp(op, "FlagTestAndSet") == 0) {
    LLVMValueRef old = rmw(b, LLVMAtomicRMWBinOpXchg, a[0], LLVMConstInt(i32, 1, 0), a[2]);
    LLVMValueRef set = LLVMBuildICmp(b, LLVMIntNE, old, LLVMConstInt(i32, 0, 0), "");
    return LLVMGetIntTypeWidth(ret) == 1 ? set : LLVMBuildZExt(b, set, ret, "");
  }
  if (n == 3 && strcmp(op, "FlagClear") == 0)
    return atomic_store(b, a[0], LLVMConstInt(i32, 0, 0), a[2]);
  return NULL;
}

static LLVMValueRef lower_call(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef call,
                               const char *base, LLVMValueRef *a, unsigned na, char **log) {
  (void)m;
  LLVMValueRef r =
      na <= 6 ? lower_one(b, base + strlen("__spirv_Atomic"), a, na, LLVMTypeOf(call)) : NULL;
  if (!r) *log = kc_msg("unsupported atomic builtin %s with %u operands", base, na);
  return r;
}

int kc_hf_lower_atomics(LLVMModuleRef m, char **log) {
  return kc_hf_rewrite_calls(m, "__spirv_Atomic", lower_call, log);
}
