/* Host finaliser: exp and log (float and double, scalars and vectors) as arithmetic in the IR
 * instead of llvm.exp / llvm.log, which x86 code generation turns into one libm call per vector
 * lane: a vectorised work-item loop then spent most of its time in scalar calls and the lane
 * moves around them (black-scholes: bench/RESULTS.md, "CPU device against Intel's OpenCL CPU
 * runtime"), and glibc's vector exp/log are past OpenCL's 3 ulp (finalise_host_vecmath.c). The
 * formulas are plain arithmetic the loop vectoriser widens with the rest of the loop (what an
 * SVML call does, without a library), and scalar code gets the same results. They follow
 * fdlibm: exp by Cody-Waite reduction (x = k ln2 + r, |r| <= ln2/2), Taylor's polynomial in r
 * (degree 13 in double, 7 in float) and 2^k as two factors (a subnormal result is rounded
 * once); log by x = 2^k m, m in [sqrt(1/2), sqrt(2)), and fdlibm's series in s = (m-1)/(m+1).
 * Measured (every 97th float bit pattern; 4 million doubles against glibc): float exp 0.92 ulp,
 * log 0.79 ulp; double within 1 ulp of glibc's. KAPI_HOST_EXPLOG=libm restores the calls.
 */
#include "finalise/host/finalise_host.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  LLVMModuleRef m;
  LLVMBuilderRef b;
  LLVMTypeRef d, i64, i32, f; /* double, i64, i32, float: scalars or the argument's width */
} em_t;

static LLVMTypeRef like(LLVMTypeRef scalar, LLVMTypeRef shape) {
  return LLVMGetTypeKind(shape) == LLVMVectorTypeKind
             ? LLVMVectorType(scalar, LLVMGetVectorSize(shape))
             : scalar;
}

static LLVMValueRef splat_of(LLVMTypeRef ty, LLVMValueRef s) {
  if (LLVMGetTypeKind(ty) != LLVMVectorTypeKind) return s;
  unsigned n = LLVMGetVectorSize(ty);
  LLVMValueRef e[64];
  if (n > 64) return NULL;
  for (unsigned i = 0; i < n; i++)
    e[i] = s;
  return LLVMConstVector(e, n);
}

static LLVMValueRef dc(em_t *e, double v) {
  return splat_of(e->d, LLVMConstReal(LLVMDoubleTypeInContext(LLVMGetModuleContext(e->m)), v));
}

static LLVMValueRef fc(em_t *e, float v) {
  return splat_of(e->f, LLVMConstReal(LLVMFloatTypeInContext(LLVMGetModuleContext(e->m)), v));
}

static LLVMValueRef ic32(em_t *e, int32_t v) {
  return splat_of(e->i32,
                  LLVMConstInt(LLVMInt32TypeInContext(LLVMGetModuleContext(e->m)), (uint32_t)v, 1));
}

static LLVMValueRef ic(em_t *e, int64_t v) {
  return splat_of(e->i64,
                  LLVMConstInt(LLVMInt64TypeInContext(LLVMGetModuleContext(e->m)), (uint64_t)v, 1));
}

/* a * b + c, fused where the target has FMA. */
static LLVMValueRef mad(em_t *e, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c) {
  LLVMTypeRef t = LLVMTypeOf(a);
  LLVMValueRef args[3] = {a, b, c};
  return kc_hf_call(e->b, kc_hf_intrinsic(e->m, "llvm.fmuladd", &t, 1), args, 3);
}

static LLVMValueRef fmul(em_t *e, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildFMul(e->b, a, b, "");
}

static LLVMValueRef fadd(em_t *e, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildFAdd(e->b, a, b, "");
}

static LLVMValueRef fsub(em_t *e, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildFSub(e->b, a, b, "");
}

/* x where pred(x, v) is false, else r (NaN compares false: it stays). */
static LLVMValueRef when(em_t *e, LLVMRealPredicate pred, LLVMValueRef x, double v, LLVMValueRef r,
                         LLVMValueRef otherwise) {
  LLVMValueRef c = LLVMTypeOf(x) == e->d ? dc(e, v) : fc(e, (float)v);
  return LLVMBuildSelect(e->b, LLVMBuildFCmp(e->b, pred, x, c, ""), r, otherwise, "");
}

/* 2^k for integer k in [-1022, 1023], as a double (k in its exponent field). */
static LLVMValueRef pow2(em_t *e, LLVMValueRef k) {
  LLVMValueRef bits = LLVMBuildShl(e->b, LLVMBuildAdd(e->b, k, ic(e, 1023), ""), ic(e, 52), "");
  return LLVMBuildBitCast(e->b, bits, e->d, "");
}

/* e^x in double; `degree` of Taylor's polynomial (13: 2^-58 for |r| <= ln2/2). */
static LLVMValueRef exp_double(em_t *e, LLVMValueRef x, int degree) {
  /* exp(710) overflows, exp(-746) rounds to 0: the clamp keeps k in range, infinities included */
  LLVMValueRef t = when(e, LLVMRealOGT, x, 710.0, dc(e, 710.0), x);
  t = when(e, LLVMRealOLT, t, -746.0, dc(e, -746.0), t);
  /* s = 1.5 * 2^52 + k, k = rint(t / ln2): k sits in s's low bits, no conversion needed */
  LLVMValueRef big = dc(e, 0x1.8p52);
  LLVMValueRef s = mad(e, t, dc(e, 0x1.71547652b82fep0), big);
  LLVMValueRef kd = fsub(e, s, big);
  /* r = t - k ln2 in two steps: ln2_hi has 32 significant bits, so k * ln2_hi is exact */
  LLVMValueRef r = mad(e, kd, dc(e, -0x1.62e42feep-1), t);
  r = mad(e, kd, dc(e, -0x1.a39ef35793c76p-33), r);
  double coef = 1.0;
  for (int i = 2; i <= degree; i++)
    coef /= i;
  LLVMValueRef p = dc(e, coef);
  for (int i = degree; i >= 1; i--) {
    coef *= i; /* 1/(i-1)! */
    p = mad(e, p, r, dc(e, coef));
  }
  /* p * 2^k as p * 2^(k/2) * 2^(k - k/2): each factor normal, one rounding at the end */
  LLVMValueRef k = LLVMBuildSub(e->b, LLVMBuildBitCast(e->b, s, e->i64, ""),
                                LLVMBuildBitCast(e->b, big, e->i64, ""), "");
  LLVMValueRef k1 = LLVMBuildAShr(e->b, k, ic(e, 1), "");
  LLVMValueRef k2 = LLVMBuildSub(e->b, k, k1, "");
  return fmul(e, fmul(e, p, pow2(e, k1)), pow2(e, k2));
}

/* ln(x) in double. */
static LLVMValueRef log_double(em_t *e, LLVMValueRef x) {
  LLVMBuilderRef b = e->b;
  /* subnormals (and +0) scaled into the normal range first */
  LLVMValueRef u = LLVMBuildBitCast(b, x, e->i64, "");
  LLVMValueRef sub = LLVMBuildICmp(b, LLVMIntULT, u, ic(e, INT64_C(0x0010000000000000)), "");
  LLVMValueRef xs = LLVMBuildSelect(b, sub, fmul(e, x, dc(e, 0x1p54)), x, "");
  LLVMValueRef kadj = LLVMBuildSelect(b, sub, ic(e, -54), ic(e, 0), "");
  u = LLVMBuildBitCast(b, xs, e->i64, "");
  /* x = 2^k * m with m in [sqrt(1/2), sqrt(2)): the high word moved so that k steps at
   * sqrt(1/2), as fdlibm does */
  LLVMValueRef hx = LLVMBuildLShr(b, u, ic(e, 32), "");
  hx = LLVMBuildAdd(b, hx, ic(e, 0x3ff00000 - 0x3fe6a09e), "");
  LLVMValueRef k = LLVMBuildSub(b, LLVMBuildLShr(b, hx, ic(e, 20), ""), ic(e, 0x3ff), "");
  k = LLVMBuildAdd(b, k, kadj, "");
  hx = LLVMBuildAdd(b, LLVMBuildAnd(b, hx, ic(e, 0xfffff), ""), ic(e, 0x3fe6a09e), "");
  LLVMValueRef mu = LLVMBuildOr(b, LLVMBuildShl(b, hx, ic(e, 32), ""),
                                LLVMBuildAnd(b, u, ic(e, 0xffffffff), ""), "");
  LLVMValueRef f = fsub(e, LLVMBuildBitCast(b, mu, e->d, ""), dc(e, 1.0));
  LLVMValueRef hfsq = fmul(e, dc(e, 0.5), fmul(e, f, f));
  LLVMValueRef s = LLVMBuildFDiv(b, f, fadd(e, dc(e, 2.0), f), "");
  LLVMValueRef z = fmul(e, s, s), w = fmul(e, z, z);
  static const double lg[] = {6.666666666666735130e-01, 3.999999999940941908e-01,
                              2.857142874366239149e-01, 2.222219843214978396e-01,
                              1.818357216161805012e-01, 1.531383769920937332e-01,
                              1.479819860511658591e-01};
  LLVMValueRef t1 = fmul(e, w, mad(e, w, mad(e, w, dc(e, lg[5]), dc(e, lg[3])), dc(e, lg[1])));
  LLVMValueRef t2 = mad(e, w, mad(e, w, dc(e, lg[6]), dc(e, lg[4])), dc(e, lg[2]));
  t2 = fmul(e, z, mad(e, w, t2, dc(e, lg[0])));
  LLVMValueRef rr = fadd(e, t2, t1);
  LLVMValueRef dk = LLVMBuildSIToFP(b, LLVMBuildTrunc(b, k, e->i32, ""), e->d, "");
  /* s(hfsq + R) + k ln2_lo - hfsq + f + k ln2_hi, in that order */
  LLVMValueRef y = mad(e, dk, dc(e, 1.90821492927058770002e-10), fmul(e, s, fadd(e, hfsq, rr)));
  y = fadd(e, fsub(e, y, hfsq), f);
  y = mad(e, dk, dc(e, 6.93147180369123816490e-01), y);
  /* log(+inf) = +inf, log(+-0) = -inf, log(x < 0) = NaN, NaN stays NaN */
  y = when(e, LLVMRealOEQ, x, __builtin_inf(), dc(e, __builtin_inf()), y);
  y = when(e, LLVMRealOEQ, x, 0.0, dc(e, -__builtin_inf()), y);
  y = when(e, LLVMRealOLT, x, 0.0, dc(e, __builtin_nan("")), y);
  return LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealUNO, x, x, ""), x, y, "");
}

/* 2^k for i32 k in [-126, 127], as a float. */
static LLVMValueRef pow2f(em_t *e, LLVMValueRef k) {
  LLVMValueRef bits = LLVMBuildShl(e->b, LLVMBuildAdd(e->b, k, ic32(e, 127), ""), ic32(e, 23), "");
  return LLVMBuildBitCast(e->b, bits, e->f, "");
}

/* e^x in float, as exp_double in float arithmetic: Taylor's degree 7 (|r| <= ln2/2: 2^-27). */
static LLVMValueRef exp_float(em_t *e, LLVMValueRef x) {
  /* exp(89) overflows, exp(-104) rounds to 0 */
  LLVMValueRef t = when(e, LLVMRealOGT, x, 89.0, fc(e, 89.0f), x);
  t = when(e, LLVMRealOLT, t, -104.0, fc(e, -104.0f), t);
  LLVMValueRef big = fc(e, 0x1.8p23f);
  LLVMValueRef s = mad(e, t, fc(e, 0x1.715476p0f), big);
  LLVMValueRef kd = fsub(e, s, big);
  /* ln2_hi has 15 significant bits: k * ln2_hi is exact for |k| <= 150 */
  LLVMValueRef r = mad(e, kd, fc(e, -0x1.62e4p-1f), t);
  r = mad(e, kd, fc(e, -0x1.7f7d1cp-20f), r);
  float coef = 1.0f / 5040.0f; /* 1/7! */
  static const float inv_fact[] = {1.0f, 1.0f, 0.5f, 1.0f / 6, 1.0f / 24, 1.0f / 120, 1.0f / 720};
  LLVMValueRef p = fc(e, coef);
  for (int i = 6; i >= 0; i--)
    p = mad(e, p, r, fc(e, inv_fact[i]));
  LLVMValueRef k = LLVMBuildSub(e->b, LLVMBuildBitCast(e->b, s, e->i32, ""),
                                LLVMBuildBitCast(e->b, big, e->i32, ""), "");
  LLVMValueRef k1 = LLVMBuildAShr(e->b, k, ic32(e, 1), "");
  LLVMValueRef k2 = LLVMBuildSub(e->b, k, k1, "");
  return fmul(e, fmul(e, p, pow2f(e, k1)), pow2f(e, k2));
}

/* ln(x) in float: fdlibm's logf (the same steps as log_double, a shorter series). */
static LLVMValueRef log_float(em_t *e, LLVMValueRef x) {
  LLVMBuilderRef b = e->b;
  LLVMValueRef u = LLVMBuildBitCast(b, x, e->i32, "");
  LLVMValueRef sub = LLVMBuildICmp(b, LLVMIntULT, u, ic32(e, 0x00800000), "");
  LLVMValueRef xs = LLVMBuildSelect(b, sub, fmul(e, x, fc(e, 0x1p25f)), x, "");
  LLVMValueRef kadj = LLVMBuildSelect(b, sub, ic32(e, -25), ic32(e, 0), "");
  u = LLVMBuildAdd(b, LLVMBuildBitCast(b, xs, e->i32, ""), ic32(e, 0x3f800000 - 0x3f3504f3), "");
  LLVMValueRef k = LLVMBuildSub(b, LLVMBuildLShr(b, u, ic32(e, 23), ""), ic32(e, 0x7f), "");
  k = LLVMBuildAdd(b, k, kadj, "");
  u = LLVMBuildAdd(b, LLVMBuildAnd(b, u, ic32(e, 0x007fffff), ""), ic32(e, 0x3f3504f3), "");
  LLVMValueRef f = fsub(e, LLVMBuildBitCast(b, u, e->f, ""), fc(e, 1.0f));
  LLVMValueRef hfsq = fmul(e, fc(e, 0.5f), fmul(e, f, f));
  LLVMValueRef s = LLVMBuildFDiv(b, f, fadd(e, fc(e, 2.0f), f), "");
  LLVMValueRef z = fmul(e, s, s), w = fmul(e, z, z);
  LLVMValueRef t1 = fmul(e, z, mad(e, w, fc(e, 0x91e9ee.0p-25f), fc(e, 0xaaaaaa.0p-24f)));
  LLVMValueRef t2 = fmul(e, w, mad(e, w, fc(e, 0xf89e26.0p-26f), fc(e, 0xccce13.0p-25f)));
  LLVMValueRef rr = fadd(e, t2, t1);
  LLVMValueRef dk = LLVMBuildSIToFP(b, k, e->f, "");
  LLVMValueRef y = mad(e, dk, fc(e, 9.0580006145e-06f), fmul(e, s, fadd(e, hfsq, rr)));
  y = fadd(e, fsub(e, y, hfsq), f);
  y = mad(e, dk, fc(e, 6.9313812256e-01f), y);
  y = when(e, LLVMRealOEQ, x, __builtin_inf(), fc(e, __builtin_inff()), y);
  y = when(e, LLVMRealOEQ, x, 0.0, fc(e, -__builtin_inff()), y);
  y = when(e, LLVMRealOLT, x, 0.0, fc(e, __builtin_nanf("")), y);
  return LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealUNO, x, x, ""), x, y, "");
}

LLVMValueRef kc_hf_exp_log(LLVMModuleRef m, LLVMBuilderRef b, const char *what, LLVMValueRef x) {
  int is_exp = !strcmp(what, "exp");
  if (!is_exp && strcmp(what, "log")) return NULL;
  const char *v = getenv("KAPI_HOST_EXPLOG"); /* `libm`: the calls, to compare */
  if (v && !strcmp(v, "libm")) return NULL;
  LLVMTypeRef ty = LLVMTypeOf(x), st = ty;
  if (LLVMGetTypeKind(ty) == LLVMVectorTypeKind) {
    st = LLVMGetElementType(ty);
    if (LLVMGetVectorSize(ty) > 64) return NULL;
  }
  LLVMTypeKind k = LLVMGetTypeKind(st);
  if (k != LLVMFloatTypeKind && k != LLVMDoubleTypeKind) return NULL;
  LLVMContextRef c = LLVMGetModuleContext(m);
  em_t e = {m,
            b,
            like(LLVMDoubleTypeInContext(c), ty),
            like(LLVMInt64TypeInContext(c), ty),
            like(LLVMInt32TypeInContext(c), ty),
            like(LLVMFloatTypeInContext(c), ty)};
  if (k == LLVMFloatTypeKind) return is_exp ? exp_float(&e, x) : log_float(&e, x);
  return is_exp ? exp_double(&e, x, 13) : log_double(&e, x);
}
