/* raise (Python's assert and raise): the failing work-item records its facts in the launch's
 * status buffer and returns; the launch then raises on the host. Only functions that may raise
 * (kc_may_raise) take the buffer, as a hidden last parameter, so other kernels are untouched.
 * Buffer (48 bytes, zeroed before the launch): u32 flag, u32 site, u64 global id x, y, z, then
 * the raise's values (i64 v0, v1: a bounds check's index and extent). The first failing
 * work-item wins the flag with a compare-exchange and alone writes the rest. */
#include "lower/lower.h"

#include <string.h>

LLVMTypeRef kc_status_type(kc_lower_t *L) {
  return LLVMPointerType(L->i32, KC_AS_GLOBAL);
}

/* may[f] = 1 for functions holding a raise or calling one that may raise (no recursion: the
 * verifier rejected it). Always 0. */
int kc_may_raise(const kir_module_t *m, char *may) {
  memset(may, 0, (size_t)m->nfuncs);
  for (int changed = 1; changed;) {
    changed = 0;
    for (int fi = 0; fi < m->nfuncs; fi++) {
      const kir_func_t *f = &m->funcs[fi];
      for (int b = 0; b < f->nblocks && !may[fi]; b++)
        for (int i = 0; i < f->blocks[b].ninsts && !may[fi]; i++) {
          const kir_inst_t *in = &f->blocks[b].insts[i];
          if (in->op == KIR_OP_RAISE || (in->op == KIR_OP_CALL && may[in->callee]))
            may[fi] = 1, changed = 1;
        }
    }
  }
  return 0;
}

/* Returns from the current function (undef for a value: the launch fails anyway). */
static void leave(kc_lower_t *L) {
  LLVMTypeRef rt = kc_scalar_type(L, L->f->ret.kind);
  if (L->f->ret.kind == KIR_VOID)
    LLVMBuildRetVoid(L->b);
  else
    LLVMBuildRet(L->b, LLVMGetUndef(rt));
}

static LLVMValueRef global_id(kc_lower_t *L, unsigned d) {
  LLVMValueRef fn =
      kc_declare(L, "_Z33__spirv_BuiltInGlobalInvocationIdi", L->i64, &L->i32, 1, KC_BUILTIN_PURE);
  LLVMValueRef dim = LLVMConstInt(L->i32, d, 0);
  return kc_call(L, fn, &dim, 1);
}

/* old = compare-exchange(flag, 0 -> 1), device scope, relaxed: the host reads the buffer
 * after the launch completes, which orders everything. */
static LLVMValueRef claim(kc_lower_t *L) {
  LLVMTypeRef p[6] = {kc_status_type(L), L->i32, L->i32, L->i32, L->i32, L->i32};
  LLVMValueRef fn = kc_declare(L, "_Z29__spirv_AtomicCompareExchangePU3AS1jiiijj", L->i32, p, 6,
                               KC_BUILTIN_MEMORY);
  LLVMValueRef a[6] = {L->status,
                       LLVMConstInt(L->i32, KC_SCOPE_DEVICE, 0),
                       LLVMConstInt(L->i32, KC_SEM_CROSS_WORKGROUP_MEMORY, 0),
                       LLVMConstInt(L->i32, KC_SEM_CROSS_WORKGROUP_MEMORY, 0),
                       LLVMConstInt(L->i32, 1, 0),
                       LLVMConstInt(L->i32, 0, 0)};
  return kc_call(L, fn, a, 6);
}

int kc_lower_raise(kc_lower_t *L, const kir_inst_t *in) {
  LLVMValueRef old = claim(L);
  LLVMValueRef won = LLVMBuildICmp(L->b, LLVMIntEQ, old, LLVMConstInt(L->i32, 0, 0), "");
  LLVMBasicBlockRef record = kc_new_block(L, "raise.record");
  LLVMBasicBlockRef out = kc_new_block(L, "raise.out");
  LLVMBuildCondBr(L->b, won, record, out);
  LLVMPositionBuilderAtEnd(L->b, record);
  LLVMValueRef one = LLVMConstInt(L->i64, 1, 0);
  LLVMValueRef site_ptr = LLVMBuildGEP2(L->b, L->i32, L->status, &one, 1, "");
  LLVMBuildStore(L->b, LLVMConstInt(L->i32, (uint64_t)in->lits[0], 0), site_ptr);
  LLVMTypeRef p64 = LLVMPointerType(L->i64, KC_AS_GLOBAL);
  LLVMValueRef ids = LLVMBuildBitCast(L->b, L->status, p64, "");
  for (unsigned d = 0; d < 3; d++) {
    LLVMValueRef at = LLVMConstInt(L->i64, d + 1, 0);
    LLVMBuildStore(L->b, global_id(L, d), LLVMBuildGEP2(L->b, L->i64, ids, &at, 1, ""));
  }
  for (int k = 0; k < in->nargs; k++) {
    LLVMValueRef at = LLVMConstInt(L->i64, 4 + (unsigned)k, 0);
    LLVMBuildStore(L->b, kc_arg(L, in, k), LLVMBuildGEP2(L->b, L->i64, ids, &at, 1, ""));
  }
  LLVMBuildBr(L->b, out);
  LLVMPositionBuilderAtEnd(L->b, out);
  leave(L);
  return 0;
}

/* After a call that may raise: leave if the flag is set (by this work-item, or by another, whose
 * launch fails anyway). */
void kc_after_raising_call(kc_lower_t *L) {
  LLVMValueRef flag = LLVMBuildLoad2(L->b, L->i32, L->status, "");
  LLVMSetVolatile(flag, 1);
  LLVMValueRef set = LLVMBuildICmp(L->b, LLVMIntNE, flag, LLVMConstInt(L->i32, 0, 0), "");
  LLVMBasicBlockRef stop = kc_new_block(L, "raised");
  LLVMBasicBlockRef go = kc_new_block(L, "not_raised");
  LLVMBuildCondBr(L->b, set, stop, go);
  LLVMPositionBuilderAtEnd(L->b, stop);
  leave(L);
  LLVMPositionBuilderAtEnd(L->b, go);
}
