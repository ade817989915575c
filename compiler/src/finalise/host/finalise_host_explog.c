/* Host finaliser: exp, log, erf and erfc (float and double, scalars and vectors) as arithmetic
 * in the IR instead of llvm.exp / llvm.log / libm calls, which x86 code generation turns into
 * one libm call per vector lane: a vectorised work-item loop then spent most of its time in
 * scalar calls and the lane moves around them (black-scholes: bench/RESULTS.md, "CPU device
 * against Intel's OpenCL CPU runtime"), and glibc's vector exp/log are past OpenCL's 3 ulp
 * (finalise_host_vecmath.c). The formulas are plain arithmetic the loop vectoriser widens with
 * the rest of the loop (what an SVML call does, without a library), and scalar code gets the
 * same results. exp and log follow fdlibm: exp by Cody-Waite reduction (x = k ln2 + r,
 * |r| <= ln2/2), Taylor's polynomial in r (degree 13 in double, 7 in float) and 2^k as two
 * factors (a subnormal result is rounded once); log by x = 2^k m, m in [sqrt(1/2), sqrt(2)), and
 * fdlibm's series in s = (m-1)/(m+1). Measured (every 97th float bit pattern; 4 million doubles
 * against glibc): float exp 0.92 ulp, log 0.79 ulp; double within 1 ulp of glibc's.
 * KAPI_HOST_EXPLOG=libm restores the calls. erf and erfc: below.
 */
#include "finalise/host/finalise_host.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  LLVMModuleRef m;
  LLVMBuilderRef b;
  LLVMTypeRef d, i64, i32, f; /* double, i64, i32, float: scalars or the argument's width */
  int fma;                    /* the target fuses a multiply and an add (mad) */
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

/* a * b + c, fused where the target has FMA. Where it has not (x86-64-v2), a float one is
 * computed in double instead: a * b is exact there and the sum is rounded twice (to double,
 * then to float), which is a fused result but in rare ties. The float formulas were fitted
 * for fused steps: with two roundings a step, exp reached 1.18 ulp and erf 5.03. */
static LLVMValueRef mad(em_t *e, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c) {
  LLVMTypeRef t = LLVMTypeOf(a);
  if (!e->fma && t == e->f) {
    LLVMValueRef ad = LLVMBuildFPExt(e->b, a, e->d, ""), bd = LLVMBuildFPExt(e->b, b, e->d, "");
    LLVMValueRef cd = LLVMBuildFPExt(e->b, c, e->d, "");
    return LLVMBuildFPTrunc(e->b, LLVMBuildFAdd(e->b, LLVMBuildFMul(e->b, ad, bd, ""), cd, ""), t,
                            "");
  }
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

/* erf and erfc (glibc's libmvec erf was about half of black-scholes' time, bench/RESULTS.md):
 * a = |x|; erf(a) = a + a (P(a^2) - 1) below 1 (erfc = 1 - erf below 0.5); above, erfc(a) =
 * exp(-a^2) R(a), R = erfc(a) e^(a^2) piecewise, each piece a polynomial around its centre:
 * in a for erf (which needs R only to erfc(a) times erf's ulp), and R = w S(w), w = 1/a, for
 * erfc (R to its own ulp up to the underflow; S is near 1/sqrt(pi), no cancellation). The
 * vector code runs one polynomial, its coefficients chosen per lane by selects. Coefficients:
 * tools/fit_erf.py (its output below, with each fit's error); float tables hold float values.
 * Measured: tests/drivers/cpu/test_cpu_erf.py. KAPI_HOST_ERF=libm restores the calls. */
/* P - 1, erf(a)/a = P(a^2) for a < 1.0: worst relative error 8.1e-18 */
static const double ERF_SMALL_D[12] = {
    0x1.06eba8214db68p-3,  -0x1.812746b0379c1p-2,  0x1.ce2f21a040f66p-4,  -0x1.b82ce31203772p-6,
    0x1.565bccfa44156p-8,  -0x1.c02db0665e53dp-11, 0x1.f9a2be4f731a1p-14, -0x1.f4ca838adb73bp-17,
    0x1.b981d78881a5dp-20, -0x1.5c131500d3f88p-23, 0x1.d76af6ca49787p-27, -0x1.ac9585a44fe29p-31};
/* P - 1, erf(a)/a = P(a^2) for a < 1.75: worst relative error 1.2e-8 */
static const double ERF_SMALL_F[9] = {0x1.06eba6p-3,  -0x1.812726p-2,  0x1.ce2acp-4,
                                      -0x1.b7f108p-6, 0x1.54bdaap-8,   -0x1.b36358p-11,
                                      0x1.bc84fcp-14, -0x1.4110a2p-17, 0x1.db9664p-22};
/* [1.0, 2.0): worst relative error 3.2e-16 */
/* [2.0, 3.5): worst relative error 1.8e-15 */
/* [3.5, 6.0): worst relative error 1.6e-14 */
static const double ERF_D_C[3] = {0x1.8p+0, 0x1.6p+1, 0x1.3p+2};
static const double ERF_D_P[3][15] = {
    {0x1.494daffa2ad68p-2, -0x1.4f1988444cb5ap-3, 0x1.37ea271bc54f2p-4, -0x1.0dc51d29337d3p-5,
     0x1.b65944f34010bp-7, -0x1.513ed7737c5d3p-8, 0x1.ee705e882dd0ep-10, -0x1.5b0ab45af7dfbp-11,
     0x1.d45090b3f934fp-13, -0x1.30c470595520dp-14, 0x1.7f9d3bddcd27cp-16, -0x1.d2f0c117c2611p-18,
     0x1.14cff905c6c52p-19, -0x1.5818fa3c2a0d8p-21, 0x1.819707b18baa5p-23},
    {0x1.8c9eb68ff27d7p-3, -0x1.030578133026fp-4, 0x1.43b98bac839bdp-6, -0x1.84e9ab306cc06p-8,
     0x1.c2c72fd6bd2c2p-10, -0x1.f99e427ebce1ep-12, 0x1.131bb1a0c51aap-13, -0x1.23128bd4c335ap-15,
     0x1.2bfb397e8c391p-17, -0x1.2dad92022ae33p-19, 0x1.28600c98247f5p-21, -0x1.1b4fac0d6715ep-23,
     0x1.0ac74c6b40472p-25, -0x1.1348a04ecf887p-27, 0x1.f0b0f255c1e44p-30},
    {0x1.dc603a3e77e9bp-4, -0x1.81149bc4a27e3p-6, 0x1.317c144f8c376p-8, -0x1.dc1af87f3d056p-11,
     0x1.6cc10c134810fp-13, -0x1.12f17620fc69p-15, 0x1.9818c319aa2fbp-18, -0x1.2a61a22d3974bp-20,
     0x1.ae1ebd351c65p-23, -0x1.31e78ebcfb6d6p-25, 0x1.ad288ad21ac9p-28, -0x1.2564f2d3e8f68p-30,
     0x1.9196726ff38ap-33, -0x1.436c766a789fp-35, 0x1.ae8149cb260fdp-38},
};
/* [0.5, 0.75): worst relative error 1.1e-19 */
/* [0.75, 1.0): worst relative error 2.9e-23 */
/* [1.0, 2.0): worst relative error 1.7e-17 */
/* [2.0, 4.0): worst relative error 2.5e-20 */
/* [4.0, 8.0): worst relative error 6.3e-23 */
/* [8.0, 27.5): worst relative error 1.3e-24 */
static const double ERFC_D_C[6] = {
    0x1.aaaaaaaaaaaabp+0, 0x1.2aaaaaaaaaaabp+0, 0x1.8p-1, 0x1.8p-2, 0x1.8p-3, 0x1.4a7904a7904a8p-4};
static const double ERFC_D_P[6][17] = {
    {0x1.5cdbf5bc0e487p-2, -0x1.b9c5ef4bd3c17p-4, 0x1.ecc63288cfcd9p-6, -0x1.99e4ecbcf241ep-8,
     0x1.a6f2665692cdcp-15, 0x1.fdef7a15450abp-11, -0x1.929e5eb8c1689p-11, 0x1.cd4400e8c9841p-12,
     -0x1.c50120e3d803ep-13, 0x1.8d2a69407c82dp-14, -0x1.366530571b0e1p-15, 0x1.9d6eda700c959p-17,
     -0x1.8752e6daf9bdap-19, -0x1.4fab0802cc29p-24, 0x1.8b4c89618c2f6p-21, -0x1.a8bca990f19e4p-21,
     0x1.0f701ef95468bp-21},
    {0x1.9c8946da3c512p-2, -0x1.2316f949ab516p-3, 0x1.3094f01d01a1dp-5, -0x1.03eab8a6f2624p-11,
     -0x1.1bc9d8aedebf8p-7, 0x1.0dd94c201d773p-7, -0x1.684142f616403p-8, 0x1.869d4816054fap-9,
     -0x1.514afa046a88p-10, 0x1.6527416da4196p-12, 0x1.92f6f5b4398bcp-14, -0x1.f70826b470e0bp-13,
     0x1.f8d6e8e41046dp-13, -0x1.88b4a06400778p-13, 0x1.063aa0ee633dbp-13, -0x1.3837d5d346e41p-14,
     0x1.2ea5c228a41bfp-15},
    {0x1.df6a7891d7325p-2, -0x1.5a4720afb6ecep-3, 0x1.3cfedc0bfe592p-6, 0x1.4a14f6e4b4ba9p-5,
     -0x1.9d6a514f48565p-5, 0x1.34bef96fed859p-5, -0x1.28d3f1d754427p-6, 0x1.2607f992be38cp-11,
     0x1.6cac0ff3cbc3dp-7, -0x1.09e0de086bad7p-6, 0x1.0268ac151f361p-6, -0x1.7b40e9e348d42p-7,
     0x1.710cf7364ae1cp-8, 0x1.0a66e8528c82p-13, -0x1.4b9fbddfa19fep-8, 0x1.54881ea06d15p-7,
     -0x1.576031f09b757p-7},
    {0x1.0fcced7e1e7c8p-1, -0x1.367279608aefep-3, -0x1.78feec12540f9p-4, 0x1.6b0b80c994884p-3,
     -0x1.dc4a70137b076p-4, -0x1.35b947fc42d7ep-5, 0x1.91e7801c228b4p-3, -0x1.05d22809a4d22p-2,
     0x1.16c3e0e0491c6p-3, 0x1.5cbe2ad839183p-3, -0x1.1c334ecb4f394p-1, 0x1.8fe92354f9ea9p-1,
     -0x1.11faef84d0906p-1, -0x1.b5ba254587393p-2, 0x1.070dfa7478a3fp+1, -0x1.d41f3365dbf53p+1,
     0x1.ab28d1883204cp+1},
    {0x1.1c08bb2a920bdp-1, -0x1.88cb4896bfa1p-4, -0x1.abb5a57bd785ep-3, 0x1.b5ff386741273p-3,
     0x1.4c526c5b2b9adp-4, -0x1.b065cea9c3919p-2, 0x1.606dfdb2ccfe4p-2, 0x1.e9a73b7b61efbp-2,
     -0x1.94233b1ca7af1p+0, 0x1.3d253dcfbedd4p+0, 0x1.50a8b34467c43p+1, -0x1.2115cc71732c4p+3,
     0x1.1991cf7698cc5p+3, 0x1.eb404780f066cp+3, -0x1.1366c0ad53c54p+6, 0x1.55d2dffc904d6p+6,
     0x1.62ed9dfea5f81p+6},
    {0x1.1fef14afa7bbp-1, -0x1.6dc9f445c8093p-5, -0x1.109a27e0d3713p-2, 0x1.024880264bcf1p-3,
     0x1.51dc4baa253a8p-2, -0x1.aa15a6f7c4ae5p-2, -0x1.05820d7ab6c76p-1, 0x1.8c7c7ad2e3cd2p+0,
     0x1.597e4dbd93497p-2, -0x1.80e41761d8149p+2, 0x1.3d247238d105ap+2, 0x1.575aa9bfb85bp+4,
     -0x1.99d3ab5310767p+5, -0x1.6df7916fbf604p+5, 0x1.67113c479f983p+8, -0x1.ca6918c134ef9p+7,
     -0x1.d1342fe423e1dp+10},
};
/* [1.75, 4.0): worst relative error 9.0e-7 */
static const double ERF_F_C[1] = {0x1.7p+1};
static const double ERF_F_P[1][8] = {
    {0x1.7d0a4ap-3, -0x1.dfc00cp-5, 0x1.21d2ecp-6, -0x1.513fdap-8, 0x1.772e34p-10, -0x1.99764p-12,
     0x1.02cebp-13, -0x1.08a78p-15},
};
/* e^r, |r| <= ln2/2: worst relative error 1.0e-7 */
static const double EXP_F[6] = {0x1.000002p+0, 0x1p+0,        0x1.fffd0ap-2,
                                0x1.55547cp-3, 0x1.576362p-5, 0x1.123d82p-7};
/* [0.5, 1.0): worst relative error 3.9e-9 */
/* [1.0, 2.0): worst relative error 6.6e-10 */
/* [2.0, 4.0): worst relative error 1.5e-11 */
/* [4.0, 10.5): worst relative error 6.2e-13 */
static const double ERFC_F_C[4] = {0x1.8p+0, 0x1.8p-1, 0x1.8p-2, 0x1.618618p-3};
static const double ERFC_F_P[4][9] = {
    {0x1.7026c8p-2, -0x1.e4f55ap-4, 0x1.0f9f3p-5, -0x1.84bfdep-8, -0x1.31729ap-10, 0x1.0bf1f8p-9,
     -0x1.8599dp-10, 0x1.f1c91ap-11, -0x1.d7d4dap-12},
    {0x1.df6a78p-2, -0x1.5a472p-3, 0x1.3cfed2p-6, 0x1.4a10b2p-5, -0x1.9d665ep-5, 0x1.35b2e4p-5,
     -0x1.2a9972p-6, -0x1.eaf88ep-10, 0x1.b79578p-7},
    {0x1.0fcceep-1, -0x1.36727ap-3, -0x1.78feecp-4, 0x1.6b0bbp-3, -0x1.dc4b82p-4, -0x1.3660eap-5,
     0x1.9262a6p-3, -0x1.fe146ap-3, 0x1.dbef14p-4},
    {0x1.1cbdap-1, -0x1.6ec20ep-4, -0x1.bf0362p-3, 0x1.aa259ap-3, 0x1.d17294p-4, -0x1.cd51ecp-2,
     0x1.22d10cp-2, 0x1.5dec72p-1, -0x1.a7ed96p+0},
};

/* v as a double or float constant (splat to the argument's width). */
static LLVMValueRef cst(em_t *e, int single, double v) {
  return single ? fc(e, (float)v) : dc(e, v);
}

/* lo <= a <= hi (NaN stays NaN). */
static LLVMValueRef clamp(em_t *e, int single, LLVMValueRef a, double lo, double hi) {
  a = when(e, LLVMRealOLT, a, lo, cst(e, single, lo), a);
  return when(e, LLVMRealOGT, a, hi, cst(e, single, hi), a);
}

/* Horner's p[0] + v p[1] + ... + v^deg p[deg]. */
static LLVMValueRef horner(em_t *e, int single, LLVMValueRef v, const double *p, int deg) {
  LLVMValueRef r = cst(e, single, p[deg]);
  for (int i = deg - 1; i >= 0; i--)
    r = mad(e, r, v, cst(e, single, p[i]));
  return r;
}

/* R(a) for a in [1, hi]: piece k (from a >= lower[k]) is p[k] in w - c[k], w = a or 1/a. */
static LLVMValueRef pieces(em_t *e, int single, LLVMValueRef a, LLVMValueRef w, const double *lower,
                           const double *c, const double *p, int n, int deg) {
  LLVMValueRef in[8];
  for (int k = 1; k < n; k++)
    in[k] = LLVMBuildFCmp(e->b, LLVMRealOGE, a, cst(e, single, lower[k]), "");
  LLVMValueRef pick[32];
  for (int j = 0; j <= deg + 1; j++) { /* j = deg + 1: the centre */
    LLVMValueRef v = cst(e, single, j > deg ? c[0] : p[j]);
    for (int k = 1; k < n; k++)
      v = LLVMBuildSelect(e->b, in[k], cst(e, single, j > deg ? c[k] : p[k * (deg + 1) + j]), v,
                          "");
    pick[j] = v;
  }
  LLVMValueRef v = fsub(e, w, pick[deg + 1]), r = pick[deg];
  for (int j = deg - 1; j >= 0; j--)
    r = mad(e, r, v, pick[j]);
  return r;
}

static LLVMValueRef unary(em_t *e, const char *name, LLVMValueRef x) {
  LLVMTypeRef t = LLVMTypeOf(x);
  return kc_hf_call(e->b, kc_hf_intrinsic(e->m, name, &t, 1), &x, 1);
}

/* exp(-a^2) R: a^2 = hi + lo exactly (Veltkamp's split, no FMA needed), exp(-hi - lo) =
 * exp(-hi) (1 - lo) (|lo| <= 2^-53 hi), the exp last so that a subnormal result is rounded once
 * more only. */
static LLVMValueRef exp_minus_square(em_t *e, int single, LLVMValueRef a, LLVMValueRef r) {
  LLVMValueRef t = fmul(e, a, cst(e, single, single ? 0x1p12 + 1 : 0x1p27 + 1));
  LLVMValueRef ah = fsub(e, t, fsub(e, t, a)), al = fsub(e, a, ah);
  LLVMValueRef hi = fmul(e, a, a);
  LLVMValueRef lo = fsub(e, fmul(e, ah, ah), hi);
  lo = fadd(e, fadd(e, lo, fmul(e, fadd(e, ah, ah), al)), fmul(e, al, al));
  LLVMValueRef nh = LLVMBuildFNeg(e->b, hi, "");
  LLVMValueRef ex = single ? exp_float(e, nh) : exp_double(e, nh, 13);
  return fmul(e, mad(e, LLVMBuildFNeg(e->b, r, ""), lo, r), ex);
}

/* erf in float from 1.75 on, only to erf's absolute precision (erfc(a) <= 2^-8): exp(-a^2)
 * (a^2 rounded, -a^2 in [-16, -3]: 2^k normal, no clamps) by a degree-5 minimax, R of degree 7
 * around its centre. */
static LLVMValueRef erf_float(em_t *e, LLVMValueRef x, LLVMValueRef a, LLVMValueRef small) {
  LLVMValueRef ac = when(e, LLVMRealOGT, a, 4.0, fc(e, 4.0f), a); /* erf rounds to 1 from 4 */
  LLVMValueRef r = horner(e, 1, fsub(e, ac, fc(e, (float)ERF_F_C[0])), ERF_F_P[0], 7);
  LLVMValueRef t = LLVMBuildFNeg(e->b, fmul(e, ac, ac), "");
  LLVMValueRef big = fc(e, 0x1.8p23f);
  LLVMValueRef s = mad(e, t, fc(e, 0x1.715476p0f), big);
  LLVMValueRef rr = mad(e, fsub(e, s, big), fc(e, -0x1.62e430p-1f), t);
  LLVMValueRef p = horner(e, 1, rr, EXP_F, 5);
  /* p 2^k: k added to p's exponent field (s's low bits hold k + 2^22) */
  LLVMValueRef k = LLVMBuildShl(e->b, LLVMBuildBitCast(e->b, s, e->i32, ""), ic32(e, 23), "");
  LLVMValueRef ex = LLVMBuildBitCast(
      e->b, LLVMBuildAdd(e->b, LLVMBuildBitCast(e->b, p, e->i32, ""), k, ""), e->f, "");
  LLVMValueRef q = mad(e, LLVMBuildFNeg(e->b, r, ""), ex, fc(e, 1.0f));
  LLVMValueRef y =
      LLVMBuildSelect(e->b, LLVMBuildFCmp(e->b, LLVMRealOLT, a, fc(e, 1.75f), ""), small, q, "");
  LLVMTypeRef ty = LLVMTypeOf(x);
  LLVMValueRef args[2] = {y, x};
  return kc_hf_call(e->b, kc_hf_intrinsic(e->m, "llvm.copysign", &ty, 1), args, 2);
}

static LLVMValueRef erf_any(em_t *e, LLVMValueRef x, int complement) {
  int single = LLVMTypeOf(x) == e->f;
  LLVMValueRef a = unary(e, "llvm.fabs", x);
  /* erf(a) below 1.75 (float) and 1 (double): a + a (P(a^2) - 1), the tables holding P - 1 */
  LLVMValueRef p =
      horner(e, single, fmul(e, a, a), single ? ERF_SMALL_F : ERF_SMALL_D, single ? 8 : 11);
  LLVMValueRef small = mad(e, a, p, a);
  if (single && !complement) return erf_float(e, x, a, small);
  LLVMValueRef one = cst(e, single, 1.0), q;
  if (!complement) { /* double erf rounds to 1 from 6 on */
    static const double lower[] = {1, 2, 3.5};
    LLVMValueRef ac = clamp(e, 0, a, 1.0, 6.0);
    LLVMValueRef r = pieces(e, 0, ac, ac, lower, ERF_D_C, (const double *)ERF_D_P, 3, 14);
    q = fsub(e, one, exp_minus_square(e, 0, ac, r));
    LLVMValueRef y =
        LLVMBuildSelect(e->b, LLVMBuildFCmp(e->b, LLVMRealOLT, a, one, ""), small, q, "");
    LLVMTypeRef t = LLVMTypeOf(x);
    LLVMValueRef args[2] = {y, x};
    return kc_hf_call(e->b, kc_hf_intrinsic(e->m, "llvm.copysign", &t, 1), args, 2);
  }
  /* erfc: 0 from 10.5 (float) and 27.5 (double) on */
  static const double lf[] = {0.5, 1, 2, 4}, ld[] = {0.5, 0.75, 1, 2, 4, 8};
  LLVMValueRef ac = clamp(e, single, a, 0.5, single ? 10.5 : 27.5);
  LLVMValueRef w = LLVMBuildFDiv(e->b, one, ac, "");
  LLVMValueRef r = single ? pieces(e, 1, ac, w, lf, ERFC_F_C, (const double *)ERFC_F_P, 4, 8)
                          : pieces(e, 0, ac, w, ld, ERFC_D_C, (const double *)ERFC_D_P, 6, 16);
  r = fmul(e, w, r);
  q = exp_minus_square(e, single, ac, r);
  /* |x| < 0.5: 1 - erf(x); x <= -0.5: 2 - erfc(-x) */
  LLVMValueRef args[2] = {small, x};
  LLVMTypeRef t = LLVMTypeOf(x);
  LLVMValueRef erfx = kc_hf_call(e->b, kc_hf_intrinsic(e->m, "llvm.copysign", &t, 1), args, 2);
  LLVMValueRef neg = LLVMBuildFCmp(e->b, LLVMRealOLT, x, cst(e, single, 0.0), "");
  q = LLVMBuildSelect(e->b, neg, fsub(e, cst(e, single, 2.0), q), q, "");
  return LLVMBuildSelect(e->b, LLVMBuildFCmp(e->b, LLVMRealOLT, a, cst(e, single, 0.5), ""),
                         fsub(e, one, erfx), q, "");
}

/* Whether erf/erfc of x's type is ours: float erf on AVX-512 targets, where it takes 5-12% less
 * time than libmvec's `_ZGVeN16v_erff` (Zen 4; with AVX2 or SSE4 only, libmvec's are 1.7x and
 * 2.6x faster); double erf and erfc only where libmvec has no vector version (ours take 2.5-5x
 * libmvec's AVX-512 time), or under KAPI_HOST_ERF=ir. */
static int erf_here(const char *what, LLVMValueRef x, int forced) {
  LLVMTypeRef t = LLVMTypeOf(x);
  if (LLVMGetTypeKind(t) == LLVMVectorTypeKind) t = LLVMGetElementType(t);
  int dbl = LLVMGetTypeKind(t) == LLVMDoubleTypeKind;
  if (forced || !kc_hf_vectorisable(what, dbl)) return 1;
  return !dbl && !strcmp(what, "erf") && strstr(kc_hf_target_features(), "+avx512f");
}

LLVMValueRef kc_hf_exp_log(LLVMModuleRef m, LLVMBuilderRef b, const char *what, LLVMValueRef x) {
  int is_exp = !strcmp(what, "exp"), is_log = !strcmp(what, "log");
  int is_erf = !strcmp(what, "erf"), is_erfc = !strcmp(what, "erfc");
  if (!is_exp && !is_log && !is_erf && !is_erfc) return NULL;
  /* `libm`: the calls (libm's, libmvec's for erf), to compare */
  const char *v = getenv(is_erf || is_erfc ? "KAPI_HOST_ERF" : "KAPI_HOST_EXPLOG");
  if (v && !strcmp(v, "libm")) return NULL;
  if ((is_erf || is_erfc) && !erf_here(what, x, v && !strcmp(v, "ir"))) return NULL;
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
            like(LLVMFloatTypeInContext(c), ty),
            strstr(kc_hf_target_features(), "+fma") != NULL};
  if (is_erf || is_erfc) return erf_any(&e, x, is_erfc);
  if (k == LLVMFloatTypeKind) return is_exp ? exp_float(&e, x) : log_float(&e, x);
  return is_exp ? exp_double(&e, x, 13) : log_double(&e, x);
}
