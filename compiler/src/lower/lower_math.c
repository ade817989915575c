/* Math as OpenCL.std extended instructions through `__spirv_ocl_*` calls, in the operand's own
 * precision (an f32 kernel never gets a double from here); isnan/isinf/isfinite are plain
 * float comparisons. */
#include "lower/lower.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Half precision goes through f32: OpenCL's half builtins are optional and our drivers' math
 * libraries have none; f32 holds every half exactly, so only the result rounds again. */
static LLVMValueRef ocl_call_f16(kc_lower_t *L, const char *name, LLVMValueRef *args, unsigned n) {
  LLVMValueRef wide[2];
  for (unsigned i = 0; i < n; i++)
    wide[i] = LLVMBuildFPExt(L->b, args[i], L->f32, "");
  LLVMValueRef r = kc_ocl_call(L, name, KIR_F32, wide, n);
  return LLVMBuildFPTrunc(L->b, r, kc_scalar_type(L, KIR_F16), "");
}

LLVMValueRef kc_ocl_call(kc_lower_t *L, const char *name, kir_kind_t k, LLVMValueRef *args,
                         unsigned n) {
  if (k == KIR_F16) return ocl_call_f16(L, name, args, n);
  char base[48], mangled[80];
  snprintf(base, sizeof base, "__spirv_ocl_%s", name);
  snprintf(mangled, sizeof mangled, "_Z%zu%s%s%s", strlen(base), base, kc_mangle_code(k),
           n == 2 ? kc_mangle_code(k) : "");
  LLVMTypeRef t = kc_scalar_type(L, k), params[2] = {t, t};
  return kc_call(L, kc_declare(L, mangled, t, params, n, KC_BUILTIN_PURE), args, n);
}

static LLVMValueRef predicate(kc_lower_t *L, kir_math_t m, kir_kind_t k, LLVMValueRef a) {
  if (m == KIR_MATH_ISNAN) return LLVMBuildFCmp(L->b, LLVMRealUNO, a, a, "isnan");
  LLVMValueRef mag = kc_ocl_call(L, "fabs", k, &a, 1);
  LLVMValueRef inf = LLVMConstReal(kc_scalar_type(L, k), INFINITY);
  if (m == KIR_MATH_ISINF) return LLVMBuildFCmp(L->b, LLVMRealOEQ, mag, inf, "isinf");
  return LLVMBuildFCmp(L->b, LLVMRealOLT, mag, inf, "isfinite");
}

/* OpenCL ldexp(gentype x, int n): the one math function whose operands differ in type. */
static LLVMValueRef ldexp_call(kc_lower_t *L, kir_kind_t k, LLVMValueRef *args) {
  if (k == KIR_F16) { /* through f32, as every half math function */
    LLVMValueRef wide[2] = {LLVMBuildFPExt(L->b, args[0], L->f32, ""), args[1]};
    return LLVMBuildFPTrunc(L->b, ldexp_call(L, KIR_F32, wide), kc_scalar_type(L, k), "");
  }
  char mangled[48];
  snprintf(mangled, sizeof mangled, "_Z17__spirv_ocl_ldexp%si", kc_mangle_code(k));
  LLVMTypeRef params[2] = {kc_scalar_type(L, k), kc_scalar_type(L, KIR_I32)};
  return kc_call(L, kc_declare(L, mangled, params[0], params, 2, KC_BUILTIN_PURE), args, 2);
}

/* Under `afn`, float32 (and half) math functions that OpenCL has a native_ form of take it:
 * precision the device defines (NVIDIA: PTX sqrt/lg2/ex2/sin/cos .approx, what nvcc's
 * --use_fast_math and numba-cuda's fastmath give; Intel GPUs: their native instructions). */
static const char *fast_name(kc_lower_t *L, kir_math_t m, kir_kind_t k, char *buf, size_t cap) {
  static const kir_math_t native[] = {KIR_MATH_SQRT,  KIR_MATH_EXP, KIR_MATH_LOG, KIR_MATH_LOG2,
                                      KIR_MATH_LOG10, KIR_MATH_SIN, KIR_MATH_COS, KIR_MATH_TAN};
  const char *name = kir_math_name(m);
  if (!(L->f->fastmath & KIR_FM_AFN) || (k != KIR_F32 && k != KIR_F16)) return name;
  for (size_t i = 0; i < sizeof native / sizeof native[0]; ++i)
    if (native[i] == m) {
      snprintf(buf, cap, "native_%s", name);
      return buf;
    }
  return name;
}

int kc_lower_math(kc_lower_t *L, const kir_inst_t *in) {
  kir_math_t m = (kir_math_t)in->sub;
  kir_kind_t k = kc_arg_type(L, in, 0).kind;
  LLVMValueRef args[2] = {kc_arg(L, in, 0), in->nargs > 1 ? kc_arg(L, in, 1) : NULL}, r;
  if (m >= KIR_MATH_PREDICATE_FIRST)
    r = predicate(L, m, k, args[0]);
  else if (m == KIR_MATH_LDEXP)
    r = ldexp_call(L, k, args);
  else {
    char buf[32];
    r = kc_ocl_call(L, fast_name(L, m, k, buf, sizeof buf), k, args, (unsigned)in->nargs);
  }
  kc_set_result(L, in, r);
  return 0;
}
