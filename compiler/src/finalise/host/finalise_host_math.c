/* Host finaliser: OpenCL.std extended instructions (`__spirv_ocl_*` calls) become LLVM
 * intrinsics (correctly rounded or lowered to libm, and vectorisable), short IR formulas, or
 * calls to the C library's libm (float `sinhf`, double `sinh`; vectors scalarised). glibc's
 * libm is within OpenCL's ULP bounds for every function mapped to it here.
 */
#include "finalise/host/finalise_host.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { M_INTRIN, M_LIBM, M_IR } how_t;

typedef struct {
  const char *ocl; /* after `__spirv_ocl_` */
  how_t how;
  const char *what; /* intrinsic name, libm double name, or formula tag */
} math_t;

static const math_t MATH[] = {
    {"sqrt", M_INTRIN, "llvm.sqrt"},
    {"native_sqrt", M_INTRIN, "llvm.sqrt"},
    {"half_sqrt", M_INTRIN, "llvm.sqrt"},
    {"fabs", M_INTRIN, "llvm.fabs"},
    {"floor", M_INTRIN, "llvm.floor"},
    {"ceil", M_INTRIN, "llvm.ceil"},
    {"trunc", M_INTRIN, "llvm.trunc"},
    {"rint", M_INTRIN, "llvm.rint"},
    {"round", M_INTRIN, "llvm.round"},
    {"copysign", M_INTRIN, "llvm.copysign"},
    {"fma", M_INTRIN, "llvm.fma"},
    {"mad", M_INTRIN, "llvm.fmuladd"},
    {"fmin", M_INTRIN, "llvm.minnum"},
    {"fmax", M_INTRIN, "llvm.maxnum"},
    {"fmin_common", M_INTRIN, "llvm.minnum"},
    {"fmax_common", M_INTRIN, "llvm.maxnum"},
    {"sin", M_INTRIN, "llvm.sin"},
    {"cos", M_INTRIN, "llvm.cos"},
    {"exp", M_INTRIN, "llvm.exp"},
    {"exp2", M_INTRIN, "llvm.exp2"},
    {"log", M_INTRIN, "llvm.log"},
    {"log2", M_INTRIN, "llvm.log2"},
    {"log10", M_INTRIN, "llvm.log10"},
    {"pow", M_INTRIN, "llvm.pow"},
    {"powr", M_INTRIN, "llvm.pow"},
    {"native_sin", M_INTRIN, "llvm.sin"},
    {"native_cos", M_INTRIN, "llvm.cos"},
    {"native_exp", M_INTRIN, "llvm.exp"},
    {"native_exp2", M_INTRIN, "llvm.exp2"},
    {"native_log", M_INTRIN, "llvm.log"},
    {"native_log2", M_INTRIN, "llvm.log2"},
    {"native_log10", M_INTRIN, "llvm.log10"},
    {"native_powr", M_INTRIN, "llvm.pow"},
    {"half_sin", M_INTRIN, "llvm.sin"},
    {"half_cos", M_INTRIN, "llvm.cos"},
    {"half_exp", M_INTRIN, "llvm.exp"},
    {"half_log", M_INTRIN, "llvm.log"},
    {"half_powr", M_INTRIN, "llvm.pow"},
    {"clz", M_INTRIN, "llvm.ctlz"},
    {"ctz", M_INTRIN, "llvm.cttz"},
    {"popcount", M_INTRIN, "llvm.ctpop"},
    {"s_abs", M_INTRIN, "llvm.abs"},
    {"tan", M_LIBM, "tan"},
    {"native_tan", M_LIBM, "tan"},
    {"asin", M_LIBM, "asin"},
    {"acos", M_LIBM, "acos"},
    {"atan", M_LIBM, "atan"},
    {"atan2", M_LIBM, "atan2"},
    {"sinh", M_LIBM, "sinh"},
    {"cosh", M_LIBM, "cosh"},
    {"tanh", M_LIBM, "tanh"},
    {"asinh", M_LIBM, "asinh"},
    {"acosh", M_LIBM, "acosh"},
    {"atanh", M_LIBM, "atanh"},
    {"exp10", M_LIBM, "exp10"},
    {"native_exp10", M_LIBM, "exp10"},
    {"expm1", M_LIBM, "expm1"},
    {"log1p", M_LIBM, "log1p"},
    {"cbrt", M_LIBM, "cbrt"},
    {"erf", M_LIBM, "erf"},
    {"erfc", M_LIBM, "erfc"},
    {"tgamma", M_LIBM, "tgamma"},
    {"lgamma", M_LIBM, "lgamma"},
    {"lgamma_r", M_LIBM, "lgamma_r"},
    {"hypot", M_LIBM, "hypot"},
    {"fmod", M_IR, "fmod"},
    {"remainder", M_LIBM, "remainder"},
    {"remquo", M_LIBM, "remquo"},
    {"fdim", M_LIBM, "fdim"},
    {"logb", M_LIBM, "logb"},
    {"nextafter", M_LIBM, "nextafter"},
    {"ldexp", M_LIBM, "ldexp"},
    {"frexp", M_LIBM, "frexp"},
    {"modf", M_LIBM, "modf"},
    {"ilogb", M_LIBM, "ilogb"},
    {"rsqrt", M_IR, "rsqrt"},
    {"native_rsqrt", M_IR, "rsqrt"},
    {"half_rsqrt", M_IR, "rsqrt"},
    {"native_recip", M_IR, "recip"},
    {"half_recip", M_IR, "recip"},
    {"native_divide", M_IR, "divide"},
    {"half_divide", M_IR, "divide"},
    {"fclamp", M_IR, "fclamp"},
    {"s_min", M_IR, "s_min"},
    {"s_max", M_IR, "s_max"},
    {"u_min", M_IR, "u_min"},
    {"u_max", M_IR, "u_max"},
    {"s_clamp", M_IR, "s_clamp"},
    {"u_clamp", M_IR, "u_clamp"},
    {"u_abs", M_IR, "u_abs"},
    {"mix", M_IR, "mix"},
    {"step", M_IR, "step"},
    {"degrees", M_IR, "degrees"},
    {"radians", M_IR, "radians"},
    {"sign", M_IR, "sign"},
    {"pown", M_IR, "pown"},
    {"sincos", M_IR, "sincos"},
    {"fract", M_IR, "fract"},
    {"s_mul_hi", M_IR, "s_mul_hi"},
    {"u_mul_hi", M_IR, "u_mul_hi"},
    {"rotate", M_IR, "rotate"},
    {"s_mad24", M_IR, "mad24"},
    {"u_mad24", M_IR, "mad24"},
    {"s_mul24", M_IR, "mul24"},
    {"u_mul24", M_IR, "mul24"},
    {"s_add_sat", M_INTRIN, "llvm.sadd.sat"},
    {"u_add_sat", M_INTRIN, "llvm.uadd.sat"},
    {"s_sub_sat", M_INTRIN, "llvm.ssub.sat"},
    {"u_sub_sat", M_INTRIN, "llvm.usub.sat"},
    {"s_abs_diff", M_IR, "s_abs_diff"},
    {"u_abs_diff", M_IR, "u_abs_diff"},
    {"select", M_IR, "select"},
    {"smoothstep", M_IR, "smoothstep"},
    {"maxmag", M_IR, "maxmag"},
    {"minmag", M_IR, "minmag"},
};

static const math_t *lookup(const char *ocl) {
  for (size_t i = 0; i < sizeof MATH / sizeof MATH[0]; i++)
    if (strcmp(MATH[i].ocl, ocl) == 0) return &MATH[i];
  return NULL;
}

static LLVMTypeRef scalar_of(LLVMTypeRef t) {
  return LLVMGetTypeKind(t) == LLVMVectorTypeKind ? LLVMGetElementType(t) : t;
}

static LLVMValueRef splat(LLVMTypeRef ty, LLVMValueRef scalar) {
  if (LLVMGetTypeKind(ty) != LLVMVectorTypeKind) return scalar;
  unsigned n = LLVMGetVectorSize(ty);
  LLVMValueRef e[16];
  for (unsigned i = 0; i < n && i < 16; i++)
    e[i] = scalar;
  return LLVMConstVector(e, n);
}

static LLVMValueRef fconst(LLVMTypeRef ty, double v) {
  return splat(ty, LLVMConstReal(scalar_of(ty), v));
}

/* Overloaded intrinsic on the call's own types (vectors included). */
static LLVMValueRef by_intrinsic(LLVMModuleRef m, LLVMBuilderRef b, const char *name,
                                 LLVMValueRef *a, unsigned n, LLVMTypeRef ret) {
  LLVMTypeRef ty = ret;
  LLVMValueRef args[4];
  unsigned na = n;
  for (unsigned i = 0; i < n; i++)
    args[i] = a[i];
  LLVMContextRef c = LLVMGetTypeContext(ret);
  if (!strcmp(name, "llvm.ctlz") || !strcmp(name, "llvm.cttz") || !strcmp(name, "llvm.abs"))
    args[na++] = LLVMConstInt(LLVMInt1TypeInContext(c), 0, 0);
  LLVMValueRef fn = kc_hf_intrinsic(m, name, &ty, 1);
  return fn ? kc_hf_call(b, fn, args, na) : NULL;
}

/* libm function for one scalar type ("sinh" -> "sinhf" for float). */
static LLVMValueRef libm_decl(LLVMModuleRef m, const char *dname, LLVMTypeRef ret,
                              LLVMTypeRef *params, unsigned n) {
  char name[64];
  int is_float = LLVMGetTypeKind(scalar_of(params[0])) == LLVMFloatTypeKind;
  if (!strcmp(dname, "lgamma_r"))
    strcpy(name, is_float ? "lgammaf_r" : "lgamma_r");
  else
    snprintf(name, sizeof name, "%s%s", dname, is_float ? "f" : "");
  LLVMTypeRef fty = LLVMFunctionType(ret, params, n, 0);
  LLVMValueRef f = LLVMGetNamedFunction(m, name);
  if (f) return LLVMGlobalGetValueType(f) == fty ? f : NULL;
  return LLVMAddFunction(m, name, fty);
}

/* glibc's double cbrt can be 4 ulp off, OpenCL allows 2: compute it in x87 long double
 * (cbrtl) and round once, which is within 0.5 ulp plus a negligible error. */
static int wide_for_double(const char *dname) {
  return !strcmp(dname, "cbrt");
}

static LLVMValueRef call_wide(LLVMModuleRef m, LLVMBuilderRef b, const char *dname,
                              LLVMValueRef x) {
  LLVMTypeRef f80 = LLVMX86FP80TypeInContext(LLVMGetModuleContext(m));
  char name[64];
  snprintf(name, sizeof name, "%sl", dname);
  LLVMValueRef fn = LLVMGetNamedFunction(m, name);
  if (!fn) fn = LLVMAddFunction(m, name, LLVMFunctionType(f80, &f80, 1, 0));
  LLVMValueRef wx = LLVMBuildFPExt(b, x, f80, "");
  return LLVMBuildFPTrunc(b, kc_hf_call(b, fn, &wx, 1), LLVMTypeOf(x), "");
}

/* A libm call per vector lane; pointer operands are per-lane pointers into the vector. */
static LLVMValueRef by_libm(LLVMModuleRef m, LLVMBuilderRef b, const char *dname, LLVMValueRef *a,
                            unsigned n, LLVMTypeRef ret) {
  int vec = LLVMGetTypeKind(ret) == LLVMVectorTypeKind;
  unsigned lanes = vec ? LLVMGetVectorSize(ret) : 1;
  LLVMTypeRef ps[4], pe[4];
  for (unsigned i = 0; i < n; i++) {
    LLVMTypeRef t = LLVMTypeOf(a[i]);
    int is_ptr = LLVMGetTypeKind(t) == LLVMPointerTypeKind;
    pe[i] = is_ptr ? scalar_of(LLVMGetElementType(t)) : NULL;
    ps[i] = is_ptr ? LLVMPointerType(pe[i], 0) : scalar_of(t);
  }
  LLVMTypeKind k0 = LLVMGetTypeKind(ps[0]);
  if (k0 != LLVMFloatTypeKind && k0 != LLVMDoubleTypeKind) return NULL;
  LLVMValueRef fn = libm_decl(m, dname, scalar_of(ret), ps, n);
  if (!fn) return NULL;
  int wide = k0 == LLVMDoubleTypeKind && n == 1 && wide_for_double(dname);
  LLVMTypeRef i32 = LLVMInt32TypeInContext(LLVMGetTypeContext(ret));
  LLVMValueRef out = vec ? LLVMGetUndef(ret) : NULL;
  for (unsigned l = 0; l < lanes; l++) {
    LLVMValueRef args[4], idx = LLVMConstInt(i32, l, 0);
    for (unsigned i = 0; i < n; i++) {
      if (pe[i]) {
        unsigned as = LLVMGetPointerAddressSpace(LLVMTypeOf(a[i]));
        LLVMValueRef p = LLVMBuildPointerCast(b, a[i], LLVMPointerType(pe[i], as), "");
        if (vec) p = LLVMBuildGEP2(b, pe[i], p, &idx, 1, "");
        args[i] = LLVMBuildPointerCast(b, p, ps[i], "");
      } else {
        args[i] = vec ? LLVMBuildExtractElement(b, a[i], idx, "") : a[i];
      }
    }
    LLVMValueRef r = wide ? call_wide(m, b, dname, args[0]) : kc_hf_call(b, fn, args, n);
    out = vec ? LLVMBuildInsertElement(b, out, r, idx, "") : r;
  }
  return out;
}

static LLVMValueRef icmp_select(LLVMBuilderRef b, LLVMIntPredicate p, LLVMValueRef x,
                                LLVMValueRef y) {
  return LLVMBuildSelect(b, LLVMBuildICmp(b, p, x, y, ""), x, y, "");
}

static LLVMValueRef by_ir_int(LLVMBuilderRef b, const char *w, LLVMValueRef *a) {
  if (!strcmp(w, "s_min")) return icmp_select(b, LLVMIntSLT, a[0], a[1]);
  if (!strcmp(w, "s_max")) return icmp_select(b, LLVMIntSGT, a[0], a[1]);
  if (!strcmp(w, "u_min")) return icmp_select(b, LLVMIntULT, a[0], a[1]);
  if (!strcmp(w, "u_max")) return icmp_select(b, LLVMIntUGT, a[0], a[1]);
  if (!strcmp(w, "s_clamp"))
    return icmp_select(b, LLVMIntSLT, icmp_select(b, LLVMIntSGT, a[0], a[1]), a[2]);
  if (!strcmp(w, "u_clamp"))
    return icmp_select(b, LLVMIntULT, icmp_select(b, LLVMIntUGT, a[0], a[1]), a[2]);
  if (!strcmp(w, "u_abs")) return a[0];
  if (!strcmp(w, "mad24")) return LLVMBuildAdd(b, LLVMBuildMul(b, a[0], a[1], ""), a[2], "");
  if (!strcmp(w, "mul24")) return LLVMBuildMul(b, a[0], a[1], "");
  if (!strcmp(w, "s_abs_diff") || !strcmp(w, "u_abs_diff")) {
    LLVMValueRef gt = LLVMBuildICmp(b, w[0] == 's' ? LLVMIntSGT : LLVMIntUGT, a[0], a[1], "");
    return LLVMBuildSelect(b, gt, LLVMBuildSub(b, a[0], a[1], ""), LLVMBuildSub(b, a[1], a[0], ""),
                           "");
  }
  if (!strcmp(w, "s_mul_hi") || !strcmp(w, "u_mul_hi")) {
    LLVMTypeRef t = LLVMTypeOf(a[0]), st = scalar_of(t);
    unsigned bits = LLVMGetIntTypeWidth(st);
    LLVMTypeRef wide = LLVMIntTypeInContext(LLVMGetTypeContext(t), 2 * bits);
    if (LLVMGetTypeKind(t) == LLVMVectorTypeKind) wide = LLVMVectorType(wide, LLVMGetVectorSize(t));
    LLVMValueRef x =
        w[0] == 's' ? LLVMBuildSExt(b, a[0], wide, "") : LLVMBuildZExt(b, a[0], wide, "");
    LLVMValueRef y =
        w[0] == 's' ? LLVMBuildSExt(b, a[1], wide, "") : LLVMBuildZExt(b, a[1], wide, "");
    LLVMValueRef sh = splat(wide, LLVMConstInt(scalar_of(wide), bits, 0));
    return LLVMBuildTrunc(b, LLVMBuildLShr(b, LLVMBuildMul(b, x, y, ""), sh, ""), t, "");
  }
  return NULL;
}

static LLVMValueRef by_ir(LLVMModuleRef m, LLVMBuilderRef b, const char *w, LLVMValueRef *a,
                          LLVMTypeRef ret) {
  LLVMValueRef r = by_ir_int(b, w, a);
  if (r) return r;
  if (!strcmp(w, "rotate")) {
    LLVMValueRef args[3] = {a[0], a[0], a[1]};
    LLVMTypeRef t = LLVMTypeOf(a[0]);
    return kc_hf_call(b, kc_hf_intrinsic(m, "llvm.fshl", &t, 1), args, 3);
  }
  if (!strcmp(w, "select")) {
    /* Scalars: c != 0 picks b; vectors: the most significant bit of each lane of c does. */
    LLVMTypeRef ct = LLVMTypeOf(a[2]);
    LLVMValueRef cond = LLVMGetTypeKind(ct) == LLVMVectorTypeKind
                            ? LLVMBuildICmp(b, LLVMIntSLT, a[2], LLVMConstNull(ct), "")
                            : LLVMBuildICmp(b, LLVMIntNE, a[2], LLVMConstNull(ct), "");
    return LLVMBuildSelect(b, cond, a[1], a[0], "");
  }
  LLVMTypeRef ty = ret;
  LLVMValueRef one = fconst(ty, 1.0), zero = fconst(ty, 0.0);
  if (!strcmp(w, "rsqrt"))
    return LLVMBuildFDiv(b, one, by_intrinsic(m, b, "llvm.sqrt", a, 1, ty), "");
  if (!strcmp(w, "recip")) return LLVMBuildFDiv(b, one, a[0], "");
  if (!strcmp(w, "divide")) return LLVMBuildFDiv(b, a[0], a[1], "");
  if (!strcmp(w, "fmod")) return LLVMBuildFRem(b, a[0], a[1], ""); /* frem is C's fmod */
  if (!strcmp(w, "fclamp")) {
    LLVMValueRef mx = by_intrinsic(m, b, "llvm.maxnum", a, 2, ty);
    LLVMValueRef args[2] = {mx, a[2]};
    return by_intrinsic(m, b, "llvm.minnum", args, 2, ty);
  }
  if (!strcmp(w, "mix"))
    return LLVMBuildFAdd(b, a[0], LLVMBuildFMul(b, LLVMBuildFSub(b, a[1], a[0], ""), a[2], ""), "");
  if (!strcmp(w, "step"))
    return LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOLT, a[1], a[0], ""), zero, one, "");
  if (!strcmp(w, "degrees")) return LLVMBuildFMul(b, a[0], fconst(ty, 57.29577951308232), "");
  if (!strcmp(w, "radians")) return LLVMBuildFMul(b, a[0], fconst(ty, 0.017453292519943295), "");
  if (!strcmp(w, "sign")) {
    LLVMValueRef pos = LLVMBuildFCmp(b, LLVMRealOGT, a[0], zero, "");
    LLVMValueRef neg = LLVMBuildFCmp(b, LLVMRealOLT, a[0], zero, "");
    LLVMValueRef nan = LLVMBuildFCmp(b, LLVMRealUNO, a[0], a[0], "");
    LLVMValueRef r0 = LLVMBuildSelect(b, nan, zero, a[0], "");
    return LLVMBuildSelect(b, pos, one, LLVMBuildSelect(b, neg, fconst(ty, -1.0), r0, ""), "");
  }
  if (!strcmp(w, "smoothstep")) {
    LLVMValueRef t =
        LLVMBuildFDiv(b, LLVMBuildFSub(b, a[2], a[0], ""), LLVMBuildFSub(b, a[1], a[0], ""), "");
    LLVMValueRef lo[2] = {t, zero};
    LLVMValueRef hi[2] = {by_intrinsic(m, b, "llvm.maxnum", lo, 2, ty), one};
    t = by_intrinsic(m, b, "llvm.minnum", hi, 2, ty);
    LLVMValueRef k =
        LLVMBuildFSub(b, fconst(ty, 3.0), LLVMBuildFMul(b, fconst(ty, 2.0), t, ""), "");
    return LLVMBuildFMul(b, LLVMBuildFMul(b, t, t, ""), k, "");
  }
  if (!strcmp(w, "maxmag") || !strcmp(w, "minmag")) {
    int mx = w[1] == 'a';
    LLVMValueRef ax = by_intrinsic(m, b, "llvm.fabs", a, 1, ty);
    LLVMValueRef ay = by_intrinsic(m, b, "llvm.fabs", a + 1, 1, ty);
    LLVMValueRef xw = LLVMBuildFCmp(b, mx ? LLVMRealOGT : LLVMRealOLT, ax, ay, "");
    LLVMValueRef yw = LLVMBuildFCmp(b, mx ? LLVMRealOGT : LLVMRealOLT, ay, ax, "");
    LLVMValueRef tie = by_intrinsic(m, b, mx ? "llvm.maxnum" : "llvm.minnum", a, 2, ty);
    return LLVMBuildSelect(b, xw, a[0], LLVMBuildSelect(b, yw, a[1], tie, ""), "");
  }
  if (!strcmp(w, "pown")) {
    LLVMValueRef args[2] = {a[0], LLVMBuildSIToFP(b, a[1], ty, "")};
    return by_intrinsic(m, b, "llvm.pow", args, 2, ty);
  }
  if (!strcmp(w, "sincos")) {
    LLVMValueRef c = by_intrinsic(m, b, "llvm.cos", a, 1, ty);
    LLVMBuildStore(
        b, c,
        LLVMBuildPointerCast(
            b, a[1], LLVMPointerType(ty, LLVMGetPointerAddressSpace(LLVMTypeOf(a[1]))), ""));
    return by_intrinsic(m, b, "llvm.sin", a, 1, ty);
  }
  if (!strcmp(w, "fract")) {
    LLVMValueRef fl = by_intrinsic(m, b, "llvm.floor", a, 1, ty);
    LLVMBuildStore(
        b, fl,
        LLVMBuildPointerCast(
            b, a[1], LLVMPointerType(ty, LLVMGetPointerAddressSpace(LLVMTypeOf(a[1]))), ""));
    int is_f = LLVMGetTypeKind(scalar_of(ty)) == LLVMFloatTypeKind;
    LLVMValueRef args[2] = {LLVMBuildFSub(b, a[0], fl, ""),
                            fconst(ty, is_f ? 0x1.fffffep-1 : 0x1.fffffffffffffp-1)};
    return by_intrinsic(m, b, "llvm.minnum", args, 2, ty);
  }
  return NULL;
}

/* vloadn(offset, p, n) and vstoren(data, offset, p): vectors at p + offset * lanes. */
static LLVMValueRef vload_store(LLVMBuilderRef b, const char *op, LLVMValueRef *a,
                                LLVMTypeRef ret) {
  int load = strncmp(op, "vloadn", 6) == 0;
  LLVMTypeRef vty = load ? ret : LLVMTypeOf(a[0]);
  if (LLVMGetTypeKind(vty) != LLVMVectorTypeKind) return NULL;
  LLVMValueRef off = load ? a[0] : a[1], p = load ? a[1] : a[2];
  unsigned as = LLVMGetPointerAddressSpace(LLVMTypeOf(p));
  LLVMTypeRef ety = LLVMGetElementType(vty);
  LLVMValueRef ep = LLVMBuildPointerCast(b, p, LLVMPointerType(ety, as), "");
  LLVMValueRef idx =
      LLVMBuildMul(b, off, LLVMConstInt(LLVMTypeOf(off), LLVMGetVectorSize(vty), 0), "");
  ep = LLVMBuildGEP2(b, ety, ep, &idx, 1, "");
  LLVMValueRef vp = LLVMBuildPointerCast(b, ep, LLVMPointerType(vty, as), "");
  LLVMValueRef x = load ? LLVMBuildLoad2(b, vty, vp, "") : LLVMBuildStore(b, a[0], vp);
  unsigned esz = LLVMGetTypeKind(ety) == LLVMIntegerTypeKind  ? LLVMGetIntTypeWidth(ety) / 8
                 : LLVMGetTypeKind(ety) == LLVMDoubleTypeKind ? 8
                                                              : 4;
  LLVMSetAlignment(x, esz);
  return x;
}

/* float exp10 (scalars and vectors), vectorisable on every x86 target and within 0.51 ulp:
 * x * log2(10) = k + r in double (|r| <= 1/2, error below 2^-45 relative), 2^r by its Taylor
 * polynomial of degree 10 (error below 2^-40), times 2^k, rounded to float once. glibc's AVX-512
 * exp10f (libmvec's _ZGVeN16v_exp10f, taken on AVX-512 hosts that do not prefer 256-bit
 * vectors, such as Zen 4) is 3.76 ulp off, past OpenCL's 3. Infinities and NaN come through the
 * clamp to [-160, 130] (2^-160 rounds to 0, 2^130 to infinity in float); NaN stays NaN. */
static LLVMValueRef exp10_float(LLVMBuilderRef b, LLVMValueRef x) {
  LLVMTypeRef ft = LLVMTypeOf(x), c_dbl = LLVMDoubleTypeInContext(LLVMGetTypeContext(ft));
  LLVMTypeRef c_i64 = LLVMInt64TypeInContext(LLVMGetTypeContext(ft)), dt = c_dbl, it = c_i64;
  if (LLVMGetTypeKind(ft) == LLVMVectorTypeKind) {
    dt = LLVMVectorType(c_dbl, LLVMGetVectorSize(ft));
    it = LLVMVectorType(c_i64, LLVMGetVectorSize(ft));
  }
  LLVMValueRef t =
      LLVMBuildFMul(b, LLVMBuildFPExt(b, x, dt, ""), fconst(dt, 0x1.a934f0979a371p+1), "");
  t = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOGT, t, fconst(dt, 130.0), ""), fconst(dt, 130.0),
                      t, "");
  t = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOLT, t, fconst(dt, -160.0), ""),
                      fconst(dt, -160.0), t, "");
  /* t + 1.5 * 2^52 has k = rint(t) in its low mantissa bits (ties to even, no libcall) */
  LLVMValueRef big = fconst(dt, 0x1.8p52), s = LLVMBuildFAdd(b, t, big, "");
  LLVMValueRef r = LLVMBuildFSub(b, t, LLVMBuildFSub(b, s, big, ""), "");
  static const double c[] = {0x1p+0,
                             0x1.62e42fefa39efp-1,
                             0x1.ebfbdff82c58fp-3,
                             0x1.c6b08d704a0cp-5,
                             0x1.3b2ab6fba4e77p-7,
                             0x1.5d87fe78a6731p-10,
                             0x1.430912f86c787p-13,
                             0x1.ffcbfc588b0c7p-17,
                             0x1.62c0223a5c824p-20,
                             0x1.b5253d395e7c4p-24,
                             0x1.e4cf5158b8ecap-28};
  LLVMValueRef p = fconst(dt, c[10]);
  for (int i = 9; i >= 0; i--)
    p = LLVMBuildFAdd(b, LLVMBuildFMul(b, p, r, ""), fconst(dt, c[i]), "");
  /* 2^k: k (the low bits of s) moved into the exponent field, plus the bias */
  LLVMValueRef k =
      LLVMBuildShl(b, LLVMBuildBitCast(b, s, it, ""), splat(it, LLVMConstInt(c_i64, 52, 0)), "");
  k = LLVMBuildAdd(b, k, splat(it, LLVMConstInt(c_i64, (uint64_t)1023 << 52, 0)), "");
  LLVMValueRef y = LLVMBuildFMul(b, p, LLVMBuildBitCast(b, k, dt, ""), "");
  return LLVMBuildFPTrunc(b, y, ft, "");
}

/* SPIR-V core instructions the reader leaves as calls (OpIsNan, OpAny, OpDot, ...). The
 * result is a bool (or bool vector) unless the call says otherwise: then 1 for scalars and -1
 * per lane for vectors, as OpenCL C's relational functions return. */
static LLVMValueRef relational(LLVMModuleRef m, LLVMBuilderRef b, const char *op, LLVMValueRef *a,
                               unsigned n) {
  LLVMTypeRef t = LLVMTypeOf(a[0]);
  if (n == 2 && !strcmp(op, "Ordered")) return LLVMBuildFCmp(b, LLVMRealORD, a[0], a[1], "");
  if (n == 2 && !strcmp(op, "Unordered")) return LLVMBuildFCmp(b, LLVMRealUNO, a[0], a[1], "");
  if (n == 2 && !strcmp(op, "LessOrGreater")) return LLVMBuildFCmp(b, LLVMRealONE, a[0], a[1], "");
  if (n != 1) return NULL;
  LLVMTypeKind k = LLVMGetTypeKind(scalar_of(t));
  if (!strcmp(op, "Any") || !strcmp(op, "All")) {
    if (LLVMGetTypeKind(t) != LLVMVectorTypeKind)
      return LLVMBuildICmp(b, LLVMIntNE, a[0], LLVMConstNull(t), "");
    LLVMValueRef ne = LLVMBuildICmp(b, LLVMIntNE, a[0], LLVMConstNull(t), "");
    LLVMTypeRef nt = LLVMTypeOf(ne);
    const char *red = op[1] == 'n' ? "llvm.vector.reduce.or" : "llvm.vector.reduce.and";
    return kc_hf_call(b, kc_hf_intrinsic(m, red, &nt, 1), &ne, 1);
  }
  if (!strcmp(op, "BitCount")) return by_intrinsic(m, b, "llvm.ctpop", a, 1, t);
  if (k != LLVMFloatTypeKind && k != LLVMDoubleTypeKind) return NULL;
  if (!strcmp(op, "IsNan")) return LLVMBuildFCmp(b, LLVMRealUNO, a[0], a[0], "");
  LLVMValueRef abs = by_intrinsic(m, b, "llvm.fabs", a, 1, t), inf = fconst(t, INFINITY);
  if (!strcmp(op, "IsInf")) return LLVMBuildFCmp(b, LLVMRealOEQ, abs, inf, "");
  if (!strcmp(op, "IsFinite")) return LLVMBuildFCmp(b, LLVMRealONE, abs, inf, "");
  if (!strcmp(op, "IsNormal")) {
    LLVMValueRef lo = fconst(t, k == LLVMFloatTypeKind ? 0x1p-126 : 0x1p-1022);
    return LLVMBuildAnd(b, LLVMBuildFCmp(b, LLVMRealOGE, abs, lo, ""),
                        LLVMBuildFCmp(b, LLVMRealOLT, abs, inf, ""), "");
  }
  if (!strcmp(op, "SignBitSet")) {
    unsigned bits = k == LLVMFloatTypeKind ? 32 : 64;
    LLVMTypeRef it = LLVMIntTypeInContext(LLVMGetTypeContext(t), bits);
    if (LLVMGetTypeKind(t) == LLVMVectorTypeKind) it = LLVMVectorType(it, LLVMGetVectorSize(t));
    LLVMValueRef i = LLVMBuildBitCast(b, a[0], it, "");
    return LLVMBuildICmp(b, LLVMIntSLT, i, LLVMConstNull(it), "");
  }
  return NULL;
}

static LLVMValueRef lower_core(LLVMModuleRef m, LLVMBuilderRef b, const char *op, LLVMValueRef *a,
                               unsigned n, LLVMTypeRef ret) {
  if (n == 2 && !strcmp(op, "Dot")) {
    LLVMTypeRef t = LLVMTypeOf(a[0]);
    if (LLVMGetTypeKind(t) != LLVMVectorTypeKind) return LLVMBuildFMul(b, a[0], a[1], "");
    LLVMValueRef args[2] = {LLVMConstReal(scalar_of(t), -0.0), LLVMBuildFMul(b, a[0], a[1], "")};
    return kc_hf_call(b, kc_hf_intrinsic(m, "llvm.vector.reduce.fadd", &t, 1), args, 2);
  }
  LLVMValueRef r = relational(m, b, op, a, n);
  if (!r || LLVMTypeOf(r) == ret || !strcmp(op, "BitCount")) return r;
  if (LLVMGetTypeKind(ret) != LLVMGetTypeKind(LLVMTypeOf(r))) return NULL;
  return LLVMGetTypeKind(ret) == LLVMVectorTypeKind ? LLVMBuildSExt(b, r, ret, "")
                                                    : LLVMBuildZExt(b, r, ret, "");
}

static LLVMValueRef lower_one(LLVMModuleRef m, LLVMBuilderRef b, const char *op, LLVMValueRef *a,
                              unsigned n, LLVMTypeRef ret) {
  if (!strncmp(op, "vloadn", 6) || !strncmp(op, "vstoren", 7)) return vload_store(b, op, a, ret);
  const math_t *e = lookup(op);
  if (!e) return NULL;
  if (!strcmp(e->what, "exp10") && LLVMGetTypeKind(scalar_of(ret)) == LLVMFloatTypeKind)
    return exp10_float(b, a[0]);
  /* exp, log, erf and erfc as arithmetic the loop vectoriser widens (finalise_host_explog.c) */
  if (e->how == M_INTRIN && !strncmp(e->what, "llvm.", 5)) {
    LLVMValueRef r = kc_hf_exp_log(m, b, e->what + 5, a[0]);
    if (r) return r;
  }
  if (e->how == M_LIBM && (!strcmp(e->what, "erf") || !strcmp(e->what, "erfc"))) {
    LLVMValueRef r = kc_hf_exp_log(m, b, e->what, a[0]);
    if (r) return r;
  }
  /* Scalar float/double calls libmvec can vectorise (cbrt in double keeps its x87 path). */
  const char *libm = e->how == M_LIBM                                      ? e->what
                     : e->how == M_INTRIN && !strncmp(e->what, "llvm.", 5) ? e->what + 5
                                                                           : NULL;
  int dbl = LLVMGetTypeKind(ret) == LLVMDoubleTypeKind;
  if (libm && LLVMGetTypeKind(ret) != LLVMVectorTypeKind && !(dbl && wide_for_double(libm)) &&
      kc_hf_vectorisable(libm, dbl)) {
    LLVMValueRef r = kc_hf_vec_libm_call(m, b, libm, a, n);
    if (r) return r;
  }
  switch (e->how) {
  case M_INTRIN:
    return by_intrinsic(m, b, e->what, a, n, ret);
  case M_LIBM:
    return by_libm(m, b, e->what, a, n, ret);
  case M_IR:
    return by_ir(m, b, e->what, a, ret);
  }
  return NULL;
}

/* Core operations handled here; other `__spirv_*` calls are left to the atomics and ids
 * phases. */
static int is_core(const char *op) {
  static const char *const ops[] = {"Ordered",  "Unordered", "LessOrGreater", "Any",
                                    "All",      "BitCount",  "IsNan",         "IsInf",
                                    "IsFinite", "IsNormal",  "SignBitSet",    "Dot"};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    if (!strcmp(op, ops[i])) return 1;
  return 0;
}

static LLVMValueRef lower_call(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef call,
                               const char *base, LLVMValueRef *a, unsigned na, char **log) {
  int ocl = !strncmp(base, "__spirv_ocl_", 12);
  if (!ocl && !is_core(base + 8)) return call; /* ids, barriers, atomics: other phases */
  LLVMTypeRef ret = LLVMTypeOf(call);
  LLVMValueRef r = NULL;
  if (na >= 1 && na <= 4)
    r = ocl ? lower_one(m, b, base + 12, a, na, ret) : lower_core(m, b, base + 8, a, na, ret);
  if (!r)
    *log = kc_msg("unsupported SPIR-V builtin %s (%s)", base + (ocl ? 12 : 8),
                  LLVMGetValueName(LLVMGetCalledValue(call)));
  return r;
}

int kc_hf_lower_math(LLVMModuleRef m, char **log) {
  return kc_hf_rewrite_calls(m, "__spirv_", lower_call, log);
}
