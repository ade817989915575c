/* Builtins in SPIR-V-friendly form: declarations of `__spirv_*` functions (Itanium-mangled as
 * the translator expects), the index space (`__spirv_BuiltIn*`) and work-group barriers.
 * Dimension 0 is SPIR-V component 0, the fastest-varying one, as in numba-dpex. */
#include "lower/lower.h"

#include <stdio.h>
#include <string.h>

#define SPIR_FUNC_CC 75

LLVMValueRef kc_declare(kc_lower_t *L, const char *name, LLVMTypeRef ret, LLVMTypeRef *params,
                        unsigned n, kc_builtin_kind_t kind) {
  LLVMValueRef fn = LLVMGetNamedFunction(L->mod, name);
  if (fn) return fn;
  fn = LLVMAddFunction(L->mod, name, LLVMFunctionType(ret, params, n, 0));
  LLVMSetFunctionCallConv(fn, SPIR_FUNC_CC);
  const char *attrs[] = {"nounwind", "willreturn",
                         kind == KC_BUILTIN_PURE         ? "readnone"
                         : kind == KC_BUILTIN_CONVERGENT ? "convergent"
                                                         : NULL};
  for (unsigned i = 0; i < 3 && attrs[i]; i++) {
    unsigned ak = LLVMGetEnumAttributeKindForName(attrs[i], strlen(attrs[i]));
    LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(L->ctx, ak, 0));
  }
  return fn;
}

LLVMValueRef kc_call(kc_lower_t *L, LLVMValueRef fn, LLVMValueRef *args, unsigned n) {
  LLVMValueRef call = LLVMBuildCall2(L->b, LLVMGlobalGetValueType(fn), fn, args, n, "");
  LLVMSetInstructionCallConv(call, LLVMGetFunctionCallConv(fn));
  return call;
}

const char *kc_mangle_code(kir_kind_t k) {
  static const char *const codes[] = {"v", "b", "c", "s", "i", "l", "h", "t", "j", "m", "f", "d"};
  if (k == KIR_F16) return "Dh";
  return k <= KIR_F64 ? codes[k] : "l";
}

static const char *const index_space_names[] = {
    [KIR_OP_GLOBAL_ID] = "__spirv_BuiltInGlobalInvocationId",
    [KIR_OP_GLOBAL_RANGE] = "__spirv_BuiltInGlobalSize",
    [KIR_OP_LOCAL_ID] = "__spirv_BuiltInLocalInvocationId",
    [KIR_OP_LOCAL_RANGE] = "__spirv_BuiltInWorkgroupSize",
    [KIR_OP_GROUP_ID] = "__spirv_BuiltInWorkgroupId",
    [KIR_OP_GROUP_RANGE] = "__spirv_BuiltInNumWorkgroups",
};

/* `i64 _Z<len>__spirv_BuiltInXi(i32 dim)`: the call form works with the translator without
 * Input variables (which must live in addrspace(7) to stay SPIR-V 1.2). */
int kc_lower_index_space(kc_lower_t *L, const kir_inst_t *in) {
  const char *base = index_space_names[in->op];
  char name[96];
  snprintf(name, sizeof name, "_Z%zu%si", strlen(base), base);
  LLVMValueRef fn = kc_declare(L, name, L->i64, &L->i32, 1, KC_BUILTIN_PURE);
  LLVMValueRef dim = LLVMConstInt(L->i32, (uint64_t)in->lits[0], 0);
  kc_set_result(L, in, kc_call(L, fn, &dim, 1));
  return 0;
}

/* barrier SCOPE: control barrier over the work-group; the fence covers local memory, and
 * global memory too for device/system scope. */
int kc_lower_barrier(kc_lower_t *L, const kir_inst_t *in) {
  LLVMTypeRef params[3] = {L->i32, L->i32, L->i32};
  LLVMValueRef fn =
      kc_declare(L, "_Z22__spirv_ControlBarrieriii", L->void_t, params, 3, KC_BUILTIN_CONVERGENT);
  unsigned mem_scope = KC_SCOPE_WORKGROUP, sem = KC_SEM_ACQ_REL | KC_SEM_WORKGROUP_MEMORY;
  if (in->scope == KIR_DEVICE || in->scope == KIR_SYSTEM) {
    mem_scope = in->scope == KIR_DEVICE ? KC_SCOPE_DEVICE : KC_SCOPE_CROSS_DEVICE;
    sem |= KC_SEM_CROSS_WORKGROUP_MEMORY;
  }
  LLVMValueRef args[3] = {LLVMConstInt(L->i32, KC_SCOPE_WORKGROUP, 0),
                          LLVMConstInt(L->i32, mem_scope, 0), LLVMConstInt(L->i32, sem, 0)};
  kc_call(L, fn, args, 3);
  return 0;
}
