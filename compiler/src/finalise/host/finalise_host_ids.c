/* Host finaliser: work-item builtins and barriers, rewritten inside one kernel body after the
 * kernel has been inlined into it. Ids become arithmetic on SSA values the entry generator left
 * in kc_hf_kernel_t (the loop's induction variables in a barrier-free run function, so the
 * vectoriser sees global id = base + x), barriers become calls of __kapi_host_barrier (a fiber
 * switch, or where the region scheme splits the kernel), fences become LLVM
 * fences. A work-group runs on one thread, so group-scoped fences only need to order the
 * compiler; a sub-group is one work-item.
 */
#include "finalise/host/finalise_host.h"

#include <stdlib.h>
#include <string.h>

typedef enum { ID_GLOBAL, ID_LOCAL, ID_GROUP, ID_LSIZE, ID_NGROUPS, ID_GSIZE, ID_OFFSET } wi_id_t;

static const struct {
  const char *name;
  wi_id_t id;
} PER_DIM[] = {
    {"GlobalInvocationId", ID_GLOBAL},
    {"LocalInvocationId", ID_LOCAL},
    {"WorkgroupId", ID_GROUP},
    {"WorkgroupSize", ID_LSIZE},
    {"EnqueuedWorkgroupSize", ID_LSIZE},
    {"NumWorkgroups", ID_NGROUPS},
    {"GlobalSize", ID_GSIZE},
    {"GlobalOffset", ID_OFFSET},
};

static LLVMValueRef one_dim(LLVMBuilderRef b, const kc_hf_kernel_t *k, wi_id_t id, int d) {
  switch (id) {
  case ID_GLOBAL: {
    LLVMValueRef base = LLVMBuildMul(b, k->group_id[d], k->local_range[d], "");
    return LLVMBuildAdd(b, LLVMBuildAdd(b, base, k->offset[d], ""), k->local_id[d], "");
  }
  case ID_LOCAL:
    return k->local_id[d];
  case ID_GROUP:
    return k->group_id[d];
  case ID_LSIZE:
    return k->local_range[d];
  case ID_NGROUPS:
    return k->group_range[d];
  case ID_GSIZE:
    return LLVMBuildMul(b, k->group_range[d], k->local_range[d], "");
  case ID_OFFSET:
    return k->offset[d];
  }
  return NULL;
}

/* dim is an i32 operand; beyond 2, OpenCL gives 0 for ids and offsets and 1 for sizes. */
static LLVMValueRef per_dim(LLVMBuilderRef b, const kc_hf_kernel_t *k, wi_id_t id, LLVMValueRef dim,
                            LLVMTypeRef i64) {
  int size = id == ID_LSIZE || id == ID_NGROUPS || id == ID_GSIZE;
  LLVMValueRef dflt = LLVMConstInt(i64, size ? 1 : 0, 0);
  if (LLVMIsAConstantInt(dim)) {
    unsigned long long d = LLVMConstIntGetZExtValue(dim);
    return d < 3 ? one_dim(b, k, id, (int)d) : dflt;
  }
  LLVMValueRef r = dflt;
  for (int d = 2; d >= 0; d--) {
    LLVMValueRef is = LLVMBuildICmp(b, LLVMIntEQ, dim, LLVMConstInt(LLVMTypeOf(dim), d, 0), "");
    r = LLVMBuildSelect(b, is, one_dim(b, k, id, d), r, "");
  }
  return r;
}

/* Row-major linear index of (v0, v1, v2) in extents (e0, e1, e2), dim 0 fastest. */
static LLVMValueRef linear(LLVMBuilderRef b, LLVMValueRef v[3], LLVMValueRef e[3]) {
  LLVMValueRef r = LLVMBuildMul(b, v[2], e[1], "");
  r = LLVMBuildMul(b, LLVMBuildAdd(b, r, v[1], ""), e[0], "");
  return LLVMBuildAdd(b, r, v[0], "");
}

static LLVMValueRef scalar_builtin(LLVMBuilderRef b, const kc_hf_kernel_t *k, const char *n,
                                   LLVMTypeRef i64) {
  if (!strcmp(n, "GlobalLinearId")) {
    LLVMValueRef g[3], e[3];
    for (int d = 0; d < 3; d++) {
      g[d] = LLVMBuildAdd(b, LLVMBuildMul(b, k->group_id[d], k->local_range[d], ""), k->local_id[d],
                          "");
      e[d] = LLVMBuildMul(b, k->group_range[d], k->local_range[d], "");
    }
    return linear(b, g, e);
  }
  if (!strcmp(n, "LocalInvocationIndex") || !strcmp(n, "SubgroupId"))
    return linear(b, (LLVMValueRef *)k->local_id, (LLVMValueRef *)k->local_range);
  if (!strcmp(n, "NumSubgroups") || !strcmp(n, "NumEnqueuedSubgroups"))
    return LLVMBuildMul(b, LLVMBuildMul(b, k->local_range[0], k->local_range[1], ""),
                        k->local_range[2], "");
  if (!strcmp(n, "SubgroupSize") || !strcmp(n, "SubgroupMaxSize")) return LLVMConstInt(i64, 1, 0);
  if (!strcmp(n, "SubgroupLocalInvocationId")) return LLVMConstInt(i64, 0, 0);
  if (!strcmp(n, "WorkDim")) {
    /* Not in kc_host_group_t: the highest dimension with more than one work-item. */
    LLVMValueRef one = LLVMConstInt(i64, 1, 0);
    LLVMValueRef s1 = LLVMBuildMul(b, k->group_range[1], k->local_range[1], "");
    LLVMValueRef s2 = LLVMBuildMul(b, k->group_range[2], k->local_range[2], "");
    LLVMValueRef d = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntUGT, s1, one, ""),
                                     LLVMConstInt(i64, 2, 0), one, "");
    return LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntUGT, s2, one, ""), LLVMConstInt(i64, 3, 0), d,
                           "");
  }
  return NULL;
}

static LLVMValueRef id_builtin(LLVMBuilderRef b, const kc_hf_kernel_t *k, const char *n,
                               LLVMValueRef call) {
  LLVMTypeRef i64 = LLVMTypeOf(k->group_id[0]);
  LLVMValueRef r = NULL;
  unsigned na = LLVMGetNumArgOperands(call);
  for (size_t i = 0; i < sizeof PER_DIM / sizeof PER_DIM[0] && !r; i++)
    if (na == 1 && !strcmp(n, PER_DIM[i].name))
      r = per_dim(b, k, PER_DIM[i].id, LLVMGetOperand(call, 0), i64);
  if (!r && na == 0) r = scalar_builtin(b, k, n, i64);
  if (!r) return NULL;
  LLVMTypeRef want = LLVMTypeOf(call);
  if (LLVMGetTypeKind(want) != LLVMIntegerTypeKind) return NULL;
  return want == i64 ? r : LLVMBuildIntCast2(b, r, want, 0, "");
}

/* Execution or memory scope: 3 = Subgroup and 4 = Invocation never need another work-item. */
static int scope_is(LLVMValueRef scope, unsigned long long lo, unsigned long long hi) {
  if (!LLVMIsAConstantInt(scope)) return 0;
  unsigned long long s = LLVMConstIntGetZExtValue(scope);
  return s >= lo && s <= hi;
}

static int is_work_group_barrier(LLVMValueRef call) {
  return !scope_is(LLVMGetOperand(call, 0), 3, 4);
}

/* A fence: group-or-narrower scope only orders this thread's code (a group runs on one thread);
 * wider scopes order memory for other threads too. */
static void fence(LLVMBuilderRef b, LLVMValueRef mem_scope) {
  LLVMBuildFence(b, LLVMAtomicOrderingSequentiallyConsistent, scope_is(mem_scope, 2, 4), "");
}

static int lower_sync(LLVMModuleRef m, LLVMBuilderRef b, const kc_hf_kernel_t *k, const char *n,
                      LLVMValueRef call) {
  if (!strcmp(n, "MemoryBarrier") && LLVMGetNumArgOperands(call) == 2) {
    fence(b, LLVMGetOperand(call, 0));
    return 1;
  }
  if (strcmp(n, "ControlBarrier") || LLVMGetNumArgOperands(call) != 3) return 0;
  if (k->scheme == KC_HF_LOOP || !is_work_group_barrier(call)) {
    fence(b, LLVMGetOperand(call, 1));
    return 1;
  }
  LLVMValueRef f = LLVMGetNamedFunction(m, "__kapi_host_barrier");
  if (!f) {
    LLVMTypeRef vt = LLVMVoidTypeInContext(LLVMGetModuleContext(m));
    f = LLVMAddFunction(m, "__kapi_host_barrier", LLVMFunctionType(vt, NULL, 0, 0));
  }
  kc_hf_call(b, f, NULL, 0);
  return 1;
}

int kc_hf_kernel_calls_barrier(LLVMValueRef call) {
  char base[256];
  kc_hf_base_name(LLVMGetValueName(LLVMGetCalledValue(call)), base, sizeof base);
  return !strcmp(base, "__spirv_ControlBarrier") && LLVMGetNumArgOperands(call) == 3 &&
         is_work_group_barrier(call);
}

int kc_hf_lower_ids(LLVMModuleRef m, const kc_hf_kernel_t *k, char **log) {
  size_t n;
  LLVMValueRef *calls = kc_hf_find_calls(m, k->body, "__spirv_", &n);
  if (n == (size_t)-1) return *log = kc_msg("out of memory"), 0;
  LLVMBuilderRef b = LLVMCreateBuilderInContext(LLVMGetModuleContext(m));
  int ok = 1;
  for (size_t i = 0; i < n && ok; i++) {
    LLVMValueRef call = calls[i];
    char base[256];
    kc_hf_base_name(LLVMGetValueName(LLVMGetCalledValue(call)), base, sizeof base);
    LLVMPositionBuilderBefore(b, call);
    if (!strncmp(base, "__spirv_BuiltIn", 15)) {
      LLVMValueRef r = id_builtin(b, k, base + 15, call);
      if (!r) {
        *log = kc_msg("kernel %s: unsupported work-item builtin %s", k->name, base);
        ok = 0;
        break;
      }
      LLVMReplaceAllUsesWith(call, r);
    } else if (!lower_sync(m, b, k, base + 8, call)) {
      *log = kc_msg("kernel %s: unsupported SPIR-V builtin %s", k->name, base);
      ok = 0;
      break;
    }
    LLVMInstructionEraseFromParent(call);
  }
  LLVMDisposeBuilder(b);
  free(calls);
  return ok;
}
