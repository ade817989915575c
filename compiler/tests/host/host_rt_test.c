/* Tests of the compiler-rt builtins the host JIT binds (finalise_host_rt.c), called by name as
 * generated code calls them, with LLVM 15's x86 conventions (half and bfloat in the low 16 bits
 * of xmm0, carried here in a float). Conversions are checked bit for bit against a reference
 * that picks the nearest value exactly, and against F16C and libgcc_s where this host has them;
 * the ones SPIR-V cannot reach (x87, bfloat, 128-bit integers, powi) are only tested here.
 */
#define _GNU_SOURCE
#include "finalise_host.h"

#include <dlfcn.h>
#include <immintrin.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(c, ...)                                                                              \
  do {                                                                                             \
    if (!(c)) {                                                                                    \
      fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #c);                        \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fprintf(stderr, "\n");                                                                       \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

typedef __int128 i128;
typedef unsigned __int128 u128;

static void *rt(const char *name) {
  void *a = kc_hf_rt_symbol(name);
  CHECK(a, "%s is not provided", name);
  return a;
}

static uint16_t bits16(float carrier) {
  uint32_t u;
  memcpy(&u, &carrier, 4);
  return (uint16_t)u;
}

static float carrier(uint16_t h) {
  uint32_t u = h;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static uint64_t rng = 0x9e3779b97f4a7c15u;
static uint64_t next(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return rng;
}

/* ---- The reference: the nearest representable value, ties to the even one -------------- */

/* A 16-bit format with `fb` fraction bits and exponent bias `bias` (half: 10, 15; bfloat: 7,
 * 127): the value of finite, non-negative bits h. */
static long double value16(uint16_t h, int fb, int bias) {
  int e = h >> fb, fr = h & ((1 << fb) - 1);
  return e ? ldexpl((1 << fb) + fr, e - bias - fb) : ldexpl(fr, 1 - bias - fb);
}

/* x rounded to the format; distances to the two neighbours are exact (Sterbenz), so the choice
 * is. NaN is 0xffff here (the caller checks NaNs on its own). */
static uint16_t ref16(long double x, int fb, int bias) {
  if (isnan(x)) return 0xffff;
  uint16_t s = signbit(x) ? 0x8000 : 0, inf = (uint16_t)(((1 << (15 - fb)) - 1) << fb);
  uint16_t lo = 0, hi = (uint16_t)(inf - 1);
  long double a = fabsl(x), top = value16(hi, fb, bias);
  if (a >= top + (top - value16(hi - 1, fb, bias)) / 2) return s | inf; /* a tie: inf is even */
  while (lo < hi) {
    uint16_t mid = (uint16_t)((lo + hi + 1) / 2);
    if (value16(mid, fb, bias) <= a)
      lo = mid;
    else
      hi = (uint16_t)(mid - 1);
  }
  if (lo == inf - 1) return s | lo;
  long double below = a - value16(lo, fb, bias), above = value16(lo + 1, fb, bias) - a;
  return s | (below < above ? lo : above < below ? lo + 1 : lo + (lo & 1));
}

static void check16(const char *fn, long double x, uint16_t got, int fb, int bias) {
  uint16_t exp_mask = (uint16_t)(((1 << (15 - fb)) - 1) << fb), quiet = (uint16_t)(1 << (fb - 1));
  if (isnan(x)) {
    CHECK((got & exp_mask) == exp_mask && (got & quiet) && !!(got & 0x8000) == !!signbit(x),
          "%s(NaN) = 0x%04x: not a quiet NaN of the same sign", fn, got);
    return;
  }
  uint16_t want = ref16(x, fb, bias);
  CHECK(got == want, "%s(%La) = 0x%04x, want 0x%04x", fn, x, got, want);
}

/* Values around every representable one of the format: itself, the midpoint to the next, and
 * just beside the midpoint (by a double's, a float's and an x87 ulp). */
static int around(uint32_t i, int fb, int bias, long double *out) {
  uint16_t h = (uint16_t)(i & 0x7fff), inf = (uint16_t)(((1 << (15 - fb)) - 1) << fb);
  if (h >= inf) return 0;
  long double v = value16(h, fb, bias), mid = (v + value16(h + 1, fb, bias)) / 2;
  long double sign = i & 0x8000 ? -1 : 1;
  if (h + 1 == inf) mid = v + (v - value16(h - 1, fb, bias)) / 2; /* the overflow threshold */
  out[0] = sign * v, out[1] = sign * mid;
  out[2] = sign * nextafterl(mid, 0), out[3] = sign * nextafterl(mid, INFINITY);
  out[4] = sign * (long double)nextafter((double)mid, 0);
  out[5] = sign * (long double)nextafter((double)mid, INFINITY);
  out[6] = sign * (long double)nextafterf((float)mid, 0);
  out[7] = sign * (long double)nextafterf((float)mid, INFINITY);
  return 8;
}

static const long double SPECIAL[] = {0.0L,        INFINITY,  NAN,      1e-300L,
                                      0x1p-16445L, 1e4000L,   0x1p-25L, 0x1p-26L,
                                      0x1p-134L,   0x1p-133L, 3.4e38L,  1e6L};

typedef float (*from_f_fn)(float);
typedef float (*from_d_fn)(double);
typedef float (*from_x_fn)(long double);

/* One conversion to a 16-bit format from float, double and x87 over the values around every
 * representable one, the specials and random values; each kind of input only where it is
 * exact in the source type. */
static void conversions_to(const char *f_name, const char *d_name, const char *x_name, int fb,
                           int bias) {
  from_f_fn from_f = f_name ? (from_f_fn)rt(f_name) : NULL;
  from_d_fn from_d = (from_d_fn)rt(d_name);
  from_x_fn from_x = x_name ? (from_x_fn)rt(x_name) : NULL;
  long double xs[8];
  size_t n = 0;
  for (uint32_t i = 0; i < 0x10000; i++) {
    int k = around(i, fb, bias, xs);
    for (int j = 0; j < k; j++, n++) {
      long double x = xs[j];
      if (from_x) check16(x_name, x, bits16(from_x(x)), fb, bias);
      if ((long double)(double)x == x) check16(d_name, x, bits16(from_d((double)x)), fb, bias);
      if (from_f && (long double)(float)x == x)
        check16(f_name, x, bits16(from_f((float)x)), fb, bias);
    }
  }
  for (size_t i = 0; i < 2 * sizeof SPECIAL / sizeof SPECIAL[0]; i++) {
    long double x = i % 2 ? -SPECIAL[i / 2] : SPECIAL[i / 2];
    if (from_x) check16(x_name, x, bits16(from_x(x)), fb, bias);
    check16(d_name, x, bits16(from_d((double)x)), fb, bias);
    if (from_f) check16(f_name, (float)x, bits16(from_f((float)x)), fb, bias);
  }
  for (int i = 0; i < 1000000; i++) { /* exponents from 2^-150 to 2^150, random fractions */
    double d = ldexp(1.0 + (double)(next() >> 11) * 0x1p-53, (int)(next() % 301) - 150);
    d = next() & 1 ? -d : d;
    check16(d_name, d, bits16(from_d(d)), fb, bias);
    if (from_f) check16(f_name, (float)d, bits16(from_f((float)d)), fb, bias);
  }
  printf("%s, %s%s%s: bit-exact on %zu values\n", d_name, f_name ? f_name : "", x_name ? ", " : "",
         x_name ? x_name : "", n + 1000000);
}

/* Where this host has them, F16C and libgcc_s (GCC 12+) agree with ours on every float. */
__attribute__((target("f16c"))) static uint16_t f16c_from_float(float x) {
  return (uint16_t)_cvtss_sh(x, _MM_FROUND_TO_NEAREST_INT);
}
__attribute__((target("f16c"))) static float f16c_to_float(uint16_t h) {
  return _cvtsh_ss(h);
}

static void against_others(void) {
  from_f_fn ours = (from_f_fn)rt("__truncsfhf2");
  float (*ext)(float) = (float (*)(float))rt("__extendhfsf2");
  void *gcc = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_LOCAL);
  from_f_fn theirs = gcc ? (from_f_fn)dlsym(gcc, "__truncsfhf2") : NULL;
  from_d_fn theirs_d = gcc ? (from_d_fn)dlsym(gcc, "__truncdfhf2") : NULL;
  from_d_fn ours_d = (from_d_fn)rt("__truncdfhf2");
  int f16c = __builtin_cpu_supports("f16c");
  for (uint64_t u = 0; u < 0x100000000u; u += 1021) { /* every 1021st float */
    float x;
    uint32_t b = (uint32_t)u;
    memcpy(&x, &b, 4);
    if (isnan(x)) continue;
    uint16_t h = bits16(ours(x));
    CHECK(!f16c || h == f16c_from_float(x), "F16C(%a) = 0x%04x, ours 0x%04x", x, f16c_from_float(x),
          h);
    CHECK(!theirs || h == bits16(theirs(x)), "libgcc(%a) differs from ours, 0x%04x", x, h);
    CHECK(!theirs_d || bits16(ours_d(x)) == bits16(theirs_d(x)), "libgcc(double %a)", x);
  }
  for (uint32_t h = 0; h < 0x10000; h++) {
    float got = ext(carrier((uint16_t)h));
    float want = f16c ? f16c_to_float((uint16_t)h) : 0;
    long double v = value16(h & 0x7fff, 10, 15);
    int nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff), inf = (h & 0x7fff) == 0x7c00;
    CHECK(nan ? isnan(got)
              : got == (h & 0x8000 ? -1 : 1) * (inf ? INFINITY : v) &&
                    !!signbit(got) == !!(h & 0x8000),
          "__extendhfsf2(0x%04x) = %a", h, got);
    if (f16c)
      CHECK(memcmp(&got, &want, 4) == 0, "__extendhfsf2(0x%04x) = %a, F16C %a", h, got, want);
    double gd = ((double (*)(float))rt("__extendhfdf2"))(carrier((uint16_t)h));
    long double gx = ((long double (*)(float))rt("__extendhfxf2"))(carrier((uint16_t)h));
    CHECK(nan ? isnan(gd) && isnan(gx) : gd == got && gx == got, "__extendhf{d,x}f2(0x%04x)", h);
    CHECK(((float (*)(uint16_t))rt("__gnu_h2f_ieee"))((uint16_t)h) == got || nan,
          "__gnu_h2f_ieee(0x%04x)", h);
    if (!nan)
      CHECK(((uint16_t(*)(float))rt("__gnu_f2h_ieee"))(got) == h, "__gnu_f2h_ieee(%a)", got);
  }
  printf("half: same as%s%s, and back to float exactly\n", f16c ? " F16C" : "",
         theirs ? " libgcc_s" : (f16c ? "" : " (neither here)"));
}

/* ---- 128-bit integers and powi -------------------------------------------------------------- */

static void integers(void) {
  i128 (*divti3)(i128, i128) = (i128(*)(i128, i128))rt("__divti3");
  i128 (*modti3)(i128, i128) = (i128(*)(i128, i128))rt("__modti3");
  u128 (*udivti3)(u128, u128) = (u128(*)(u128, u128))rt("__udivti3");
  u128 (*umodti3)(u128, u128) = (u128(*)(u128, u128))rt("__umodti3");
  for (int i = 0; i < 100000; i++) {
    i128 a = (i128)(((u128)next() << 64) | next()) >> (next() % 127);
    i128 b = (i128)(((u128)next() << 64) | next()) >> (next() % 127);
    i128 min = -(i128)(~(u128)0 >> 1) - 1;
    if (b == 0 || b == min || (b == -1 && a == min)) continue;
    i128 q = divti3(a, b), r = modti3(a, b);
    CHECK(q * b + r == a && (r == 0 || (r < 0) == (a < 0)) && (r < 0 ? -r : r) < (b < 0 ? -b : b),
          "signed 128-bit division %d", i);
    u128 ua = (u128)a, ub = (u128)b, uq = udivti3(ua, ub), ur = umodti3(ua, ub);
    CHECK(uq * ub + ur == ua && ur < ub, "unsigned 128-bit division %d", i);
  }
  int overflow = 0;
  i128 (*muloti4)(i128, i128, int *) = (i128(*)(i128, i128, int *))rt("__muloti4");
  CHECK(muloti4((i128)1 << 100, (i128)1 << 30, &overflow) == 0 && overflow, "__muloti4 overflow");
  CHECK(muloti4(-3, (i128)1 << 100, &overflow) == -3 * ((i128)1 << 100) && !overflow, "__muloti4");
  /* float <-> 128-bit: ties to even, truncation toward zero, saturation out of range */
  float (*floattisf)(i128) = (float (*)(i128))rt("__floattisf");
  double (*floatuntidf)(u128) = (double (*)(u128))rt("__floatuntidf");
  CHECK(floattisf((1 << 24) + 1) == 16777216.0f && floattisf((1 << 24) + 3) == 16777220.0f &&
            floattisf(-((i128)1 << 100) - 1) == -0x1p100f,
        "__floattisf");
  CHECK(floatuntidf(~(u128)0) == 0x1p128 && floatuntidf(((u128)1 << 53) + 1) == 0x1p53,
        "__floatuntidf");
  i128 (*fixdfti)(double) = (i128(*)(double))rt("__fixdfti");
  u128 (*fixunssfti)(float) = (u128(*)(float))rt("__fixunssfti");
  CHECK(fixdfti(-0x1.8p100) == -((i128)3 << 99) && fixdfti(-2.75) == -2 && fixdfti(1e300) > 0 &&
            fixdfti(NAN) == 0,
        "__fixdfti");
  CHECK(fixunssfti(0x1p127f) == (u128)1 << 127 && fixunssfti(-0.5f) == 0, "__fixunssfti");
  float (*floattihf)(i128) = (float (*)(i128))rt("__floattihf");
  CHECK(bits16(floattihf(2049)) == 0x6800 && bits16(floattihf(2051)) == 0x6802 &&
            bits16(floattihf(65519)) == 0x7bff && bits16(floattihf(65520)) == 0x7c00 &&
            bits16(floattihf(-((i128)1 << 120))) == 0xfc00,
        "__floattihf");
  i128 (*fixhfti)(float) = (i128(*)(float))rt("__fixhfti");
  CHECK(fixhfti(carrier(0xfbff)) == -65504 && fixhfti(carrier(0x3bff)) == 0, "__fixhfti");
  float (*powisf2)(float, int) = (float (*)(float, int))rt("__powisf2");
  double (*powidf2)(double, int) = (double (*)(double, int))rt("__powidf2");
  for (int n = -20; n <= 20; n++)
    CHECK(powidf2(2.0, n) == ldexp(1, n) && powisf2(-2.0f, n) == (n & 1 ? -1 : 1) * ldexpf(1, n),
          "powi(2, %d)", n);
  CHECK(powidf2(3.0, 5) == 243.0 && powisf2(NAN, 0) == 1.0f && isinf(powidf2(0.0, -1)), "powi");
  printf("128-bit integers and powi: ok\n");
}

int main(void) {
  CHECK(!kc_hf_rt_symbol("__no_such_builtin") && !kc_hf_rt_symbol("sin"), "unknown names bind");
  conversions_to("__truncsfhf2", "__truncdfhf2", "__truncxfhf2", 10, 15);
  conversions_to("__truncsfbf2", "__truncdfbf2", NULL, 7, 127);
  against_others();
  integers();
  printf("rt: ok\n");
  return 0;
}
