/* Python's `//`, `%` and integer `**` (docs/kir.md): floor semantics with the result's sign
 * following the divisor, integer division by zero giving 0 (kernels cannot raise), and
 * INT_MIN // -1 giving 0 as in Numba (never LLVM's undefined sdiv overflow). */
#include "lower/lower.h"

#include <stdio.h>

static LLVMValueRef cnst(LLVMValueRef like, long long v) {
  return LLVMConstInt(LLVMTypeOf(like), (unsigned long long)v, 1);
}

/* The divisor with 0 (and -1 for signed types, whose quotient may overflow) replaced by 1. */
static LLVMValueRef safe_divisor(kc_lower_t *L, kir_kind_t k, LLVMValueRef b, LLVMValueRef *bz,
                                 LLVMValueRef *bm1) {
  *bz = LLVMBuildICmp(L->b, LLVMIntEQ, b, cnst(b, 0), "");
  LLVMValueRef bad = *bz;
  if (kir_is_signed(k)) {
    *bm1 = LLVMBuildICmp(L->b, LLVMIntEQ, b, cnst(b, -1), "");
    bad = LLVMBuildOr(L->b, bad, *bm1, "");
  }
  return LLVMBuildSelect(L->b, bad, cnst(b, 1), b, "");
}

/* Truncating remainder r of a / b needs a floor correction when r and b differ in sign. */
static LLVMValueRef needs_floor_fix(kc_lower_t *L, LLVMValueRef r, LLVMValueRef b) {
  LLVMValueRef nz = LLVMBuildICmp(L->b, LLVMIntNE, r, cnst(r, 0), "");
  LLVMValueRef x = LLVMBuildXor(L->b, r, b, "");
  LLVMValueRef diff = LLVMBuildICmp(L->b, LLVMIntSLT, x, cnst(r, 0), "");
  return LLVMBuildAnd(L->b, nz, diff, "");
}

/* Python's (and NumPy's npy_divmod) float `//`: from fmod, not floor(a / b), whose rounding
 * gives 1.0 // 0.1 == 10.0 (Python: 9.0) and inf // 1 == inf (Python: nan). A zero divisor gives
 * a / b, as NumPy's floor_divide does (kernels cannot raise ZeroDivisionError). */
static LLVMValueRef float_floordiv(kc_lower_t *L, kir_kind_t k, LLVMValueRef a, LLVMValueRef b) {
  LLVMBuilderRef B = L->b;
  LLVMValueRef zero = LLVMConstReal(LLVMTypeOf(a), 0.0), one = LLVMConstReal(LLVMTypeOf(a), 1.0);
  LLVMValueRef args[2] = {a, b};
  LLVMValueRef mod = kc_ocl_call(L, "fmod", k, args, 2);
  LLVMValueRef div = LLVMBuildFDiv(B, LLVMBuildFSub(B, a, mod, ""), b, "");
  LLVMValueRef mod_nz = LLVMBuildFCmp(B, LLVMRealUNE, mod, zero, "");
  LLVMValueRef signs = LLVMBuildXor(B, LLVMBuildFCmp(B, LLVMRealOLT, b, zero, ""),
                                    LLVMBuildFCmp(B, LLVMRealOLT, mod, zero, ""), "");
  LLVMValueRef fix = LLVMBuildAnd(B, mod_nz, signs, "");
  div = LLVMBuildSelect(B, fix, LLVMBuildFSub(B, div, one, ""), div, "");
  LLVMValueRef fl = kc_ocl_call(L, "floor", k, &div, 1);
  LLVMValueRef up = LLVMBuildFCmp(B, LLVMRealOGT, LLVMBuildFSub(B, div, fl, ""),
                                  LLVMConstReal(LLVMTypeOf(a), 0.5), "");
  fl = LLVMBuildSelect(B, up, LLVMBuildFAdd(B, fl, one, ""), fl, "");
  LLVMValueRef q = LLVMBuildFDiv(B, a, b, "");
  LLVMValueRef cs[2] = {zero, q};
  LLVMValueRef signed_zero = kc_ocl_call(L, "copysign", k, cs, 2);
  LLVMValueRef div_z = LLVMBuildFCmp(B, LLVMRealOEQ, div, zero, "");
  LLVMValueRef r = LLVMBuildSelect(B, div_z, signed_zero, fl, "");
  LLVMValueRef b_z = LLVMBuildFCmp(B, LLVMRealOEQ, b, zero, "");
  return LLVMBuildSelect(B, b_z, q, r, "floordiv");
}

LLVMValueRef kc_floordiv(kc_lower_t *L, kir_kind_t k, LLVMValueRef a, LLVMValueRef b) {
  if (kir_is_float(k)) return float_floordiv(L, k, a, b);
  LLVMValueRef bz, bm1 = NULL, sb = safe_divisor(L, k, b, &bz, &bm1), q;
  if (kir_is_signed(k)) {
    q = LLVMBuildSDiv(L->b, a, sb, "");
    LLVMValueRef fix = needs_floor_fix(L, LLVMBuildSRem(L->b, a, sb, ""), sb);
    q = LLVMBuildSelect(L->b, fix, LLVMBuildSub(L->b, q, cnst(q, 1), ""), q, "");
    /* a // -1 is -a, but INT_MIN // -1 is 0 as in Numba (int_divmod_signed and the
     * floor_divide ufunc), with no sdiv that could trap */
    unsigned bits = LLVMGetIntTypeWidth(LLVMTypeOf(a));
    LLVMValueRef amin =
        LLVMBuildICmp(L->b, LLVMIntEQ, a, LLVMConstInt(LLVMTypeOf(a), 1ULL << (bits - 1), 0), "");
    LLVMValueRef neg = LLVMBuildSelect(L->b, amin, cnst(a, 0), LLVMBuildNeg(L->b, a, ""), "");
    q = LLVMBuildSelect(L->b, bm1, neg, q, "");
  } else {
    q = LLVMBuildUDiv(L->b, a, sb, "");
  }
  return LLVMBuildSelect(L->b, bz, cnst(q, 0), q, "floordiv");
}

static LLVMValueRef float_mod(kc_lower_t *L, kir_kind_t k, LLVMValueRef a, LLVMValueRef b) {
  LLVMValueRef args[2] = {a, b}, zero = LLVMConstReal(LLVMTypeOf(a), 0.0);
  LLVMValueRef r = kc_ocl_call(L, "fmod", k, args, 2);
  LLVMValueRef nz = LLVMBuildFCmp(L->b, LLVMRealONE, r, zero, "");
  LLVMValueRef rneg = LLVMBuildFCmp(L->b, LLVMRealOLT, r, zero, "");
  LLVMValueRef bneg = LLVMBuildFCmp(L->b, LLVMRealOLT, b, zero, "");
  LLVMValueRef fix = LLVMBuildAnd(L->b, nz, LLVMBuildXor(L->b, rneg, bneg, ""), "");
  r = LLVMBuildSelect(L->b, fix, LLVMBuildFAdd(L->b, r, b, ""), r, "");
  /* a zero result takes the divisor's sign, as in Python */
  LLVMValueRef cs[2] = {zero, b};
  LLVMValueRef signed_zero = kc_ocl_call(L, "copysign", k, cs, 2);
  LLVMValueRef is_zero = LLVMBuildFCmp(L->b, LLVMRealOEQ, r, zero, "");
  return LLVMBuildSelect(L->b, is_zero, signed_zero, r, "mod");
}

LLVMValueRef kc_mod(kc_lower_t *L, kir_kind_t k, LLVMValueRef a, LLVMValueRef b) {
  if (kir_is_float(k)) return float_mod(L, k, a, b);
  LLVMValueRef bz, bm1 = NULL, sb = safe_divisor(L, k, b, &bz, &bm1), r;
  if (kir_is_signed(k)) {
    r = LLVMBuildSRem(L->b, a, sb, "");
    LLVMValueRef fix = needs_floor_fix(L, r, sb);
    r = LLVMBuildSelect(L->b, fix, LLVMBuildAdd(L->b, r, sb, ""), r, "");
  } else {
    r = LLVMBuildURem(L->b, a, sb, "");
  }
  return LLVMBuildSelect(L->b, bz, cnst(r, 0), r, "mod");
}

/* The loop of exponentiation by squaring, from the header block on. */
static void build_ipow_loop(kc_lower_t *L, LLVMBuilderRef b, LLVMValueRef fn, LLVMTypeRef t,
                            LLVMBasicBlockRef pre) {
  LLVMBasicBlockRef head = LLVMAppendBasicBlockInContext(L->ctx, fn, "head");
  LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(L->ctx, fn, "body");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(L->ctx, fn, "done");
  LLVMBuildBr(b, head);
  LLVMPositionBuilderAtEnd(b, head);
  LLVMValueRef acc = LLVMBuildPhi(b, t, "acc"), base = LLVMBuildPhi(b, t, "base");
  LLVMValueRef e = LLVMBuildPhi(b, t, "e"), one = LLVMConstInt(t, 1, 0);
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntEQ, e, LLVMConstNull(t), ""), done, body);
  LLVMPositionBuilderAtEnd(b, body);
  LLVMValueRef odd = LLVMBuildTrunc(b, LLVMBuildAnd(b, e, one, ""), L->i1, "");
  LLVMValueRef acc2 = LLVMBuildSelect(b, odd, LLVMBuildMul(b, acc, base, ""), acc, "");
  LLVMValueRef base2 = LLVMBuildMul(b, base, base, ""), e2 = LLVMBuildLShr(b, e, one, "");
  LLVMBuildBr(b, head);
  LLVMValueRef in_acc[2] = {one, acc2}, in_base[2] = {LLVMGetParam(fn, 0), base2};
  LLVMValueRef in_e[2] = {LLVMGetParam(fn, 1), e2};
  LLVMBasicBlockRef from[2] = {pre, body};
  LLVMAddIncoming(acc, in_acc, from, 2);
  LLVMAddIncoming(base, in_base, from, 2);
  LLVMAddIncoming(e, in_e, from, 2);
  LLVMPositionBuilderAtEnd(b, done);
  LLVMBuildRet(b, acc);
}

/* One internal helper per integer type (inlined by the optimiser). A negative exponent gives
 * 0: no integer result exists and kernels cannot return floats from an int op. */
static LLVMValueRef ipow_helper(kc_lower_t *L, kir_kind_t k) {
  char name[32];
  snprintf(name, sizeof name, "kapi.ipow.%s%d", kir_is_signed(k) ? "i" : "u", kir_bits(k));
  LLVMValueRef fn = LLVMGetNamedFunction(L->mod, name);
  if (fn) return fn;
  LLVMTypeRef t = kc_scalar_type(L, k), params[2] = {t, t};
  fn = LLVMAddFunction(L->mod, name, LLVMFunctionType(t, params, 2, 0));
  LLVMSetLinkage(fn, LLVMInternalLinkage);
  LLVMSetFunctionCallConv(fn, 75);
  kc_set_fn_attrs(L, fn);
  LLVMBuilderRef b = LLVMCreateBuilderInContext(L->ctx);
  LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(L->ctx, fn, "entry");
  LLVMPositionBuilderAtEnd(b, entry);
  if (kir_is_signed(k)) {
    LLVMBasicBlockRef neg = LLVMAppendBasicBlockInContext(L->ctx, fn, "negative");
    LLVMBasicBlockRef pre = LLVMAppendBasicBlockInContext(L->ctx, fn, "pre");
    LLVMValueRef isneg = LLVMBuildICmp(b, LLVMIntSLT, LLVMGetParam(fn, 1), LLVMConstNull(t), "");
    LLVMBuildCondBr(b, isneg, neg, pre);
    LLVMPositionBuilderAtEnd(b, neg);
    LLVMBuildRet(b, LLVMConstNull(t));
    LLVMPositionBuilderAtEnd(b, pre);
    entry = pre;
  }
  build_ipow_loop(L, b, fn, t, entry);
  LLVMDisposeBuilder(b);
  return fn;
}

LLVMValueRef kc_ipow(kc_lower_t *L, kir_kind_t k, LLVMValueRef a, LLVMValueRef b) {
  LLVMValueRef args[2] = {a, b};
  return kc_call(L, ipow_helper(L, k), args, 2);
}
