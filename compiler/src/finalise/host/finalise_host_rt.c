/* Host finaliser: the compiler-rt builtins LLVM 15's x86 code generation calls, which the JIT
 * binds by name (finalise_host_jit.c) like libm: a process need not have loaded libgcc_s or
 * compiler-rt, nor a version that has the half ones (GCC 12+). Conversions to half and bfloat
 * are our own, bit-exact: round to nearest even, overflow to infinity, NaN kept (quiet, sign and
 * leading payload bits). 128-bit integer arithmetic and conversions and powi are the C
 * compiler's own operators (its runtime library, linked into ours).
 */
#include "finalise/host/finalise_host.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* ---- binary16 and bfloat16 ------------------------------------------------------------- */

/* LLVM 15 passes and returns half and bfloat in the low 16 bits of xmm0 (the _Float16 ABI). A C
 * float travels in the same register, so a float carries the bits: no compiler needs _Float16. */
static float carry(uint16_t h) {
  uint32_t u = h;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static uint16_t carried(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)u;
}

static uint32_t bits_f(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

static float f_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* Rounds |x| = m * 2^(e - 63) (m's top bit set) to the nearest binary16, ties to even. The
 * subnormal and normal encodings meet: q's leading bit (0x400) carries into the exponent. */
static uint16_t half_round(uint16_t sign, int e, uint64_t m) {
  if (e > 15) return sign | 0x7c00;
  int shift = e >= -14 ? 53 : 39 - e; /* bits of m below the result's last place */
  if (shift > 64) return sign;        /* below 2^-25: rounds to zero */
  uint64_t q = shift == 64 ? 0 : m >> shift;
  uint64_t rest = shift == 64 ? m : m & ((UINT64_C(1) << shift) - 1);
  uint64_t tie = UINT64_C(1) << (shift - 1);
  q += rest > tie || (rest == tie && (q & 1));
  uint64_t h =
      (uint64_t)(e >= -14 ? e + 14 : 0) * 0x400 + q; /* 0x7c00 when it rounded up to 2^16 */
  return (uint16_t)(sign | h);
}

/* The same for bfloat16 (8 exponent bits, 7 fraction bits: float's range, so no subnormal is
 * reached from float; from double, |x| below float's range rounds like a float subnormal). */
static uint16_t bf16_round(uint16_t sign, int e, uint64_t m) {
  if (e > 127) return sign | 0x7f80;
  int shift = e >= -126 ? 56 : 56 + (-126 - e);
  if (shift > 64) return sign;
  uint64_t q = shift == 64 ? 0 : m >> shift;
  uint64_t rest = shift == 64 ? m : m & ((UINT64_C(1) << shift) - 1);
  uint64_t tie = UINT64_C(1) << (shift - 1);
  q += rest > tie || (rest == tie && (q & 1));
  uint64_t h = (uint64_t)(e >= -126 ? e + 126 : 0) * 0x80 + q;
  return (uint16_t)(sign | h);
}

typedef struct {
  uint16_t sign; /* 0x8000 or 0 */
  int kind;      /* 0 zero, 1 finite (e, m), 2 infinity, 3 NaN (payload: fraction's top bits) */
  int e;
  uint64_t m;
  uint64_t payload; /* NaN: fraction bits left-aligned in 64 */
} unpacked_t;

static int top_bit(uint64_t m) {
  return 63 - __builtin_clzll(m);
}

static unpacked_t unpack_f(float f) {
  uint32_t u = bits_f(f), ex = (u >> 23) & 0xff, fr = u & 0x7fffff;
  unpacked_t r = {.sign = (uint16_t)((u >> 16) & 0x8000)};
  if (ex == 0xff) {
    r.kind = fr ? 3 : 2, r.payload = (uint64_t)fr << 41;
  } else if (ex == 0 && fr == 0) {
    r.kind = 0;
  } else {
    uint64_t m = ex ? fr | 0x800000u : fr;
    int t = top_bit(m);
    r.kind = 1, r.e = (ex ? (int)ex : 1) - 127 - 23 + t, r.m = m << (63 - t);
  }
  return r;
}

static unpacked_t unpack_d(double d) {
  uint64_t u;
  memcpy(&u, &d, 8);
  uint64_t ex = (u >> 52) & 0x7ff, fr = u & ((UINT64_C(1) << 52) - 1);
  unpacked_t r = {.sign = (uint16_t)((u >> 48) & 0x8000)};
  if (ex == 0x7ff) {
    r.kind = fr ? 3 : 2, r.payload = fr << 12;
  } else if (ex == 0 && fr == 0) {
    r.kind = 0;
  } else {
    uint64_t m = ex ? fr | (UINT64_C(1) << 52) : fr;
    int t = top_bit(m);
    r.kind = 1, r.e = (ex ? (int)ex : 1) - 1023 - 52 + t, r.m = m << (63 - t);
  }
  return r;
}

/* x87 extended: 64-bit significand with an explicit leading bit, 15-bit exponent. */
static unpacked_t unpack_x(long double x) {
  unsigned char b[16] = {0};
  memcpy(b, &x, 10);
  uint64_t m;
  uint16_t se;
  memcpy(&m, b, 8);
  memcpy(&se, b + 8, 2);
  int ex = se & 0x7fff;
  unpacked_t r = {.sign = (uint16_t)(se & 0x8000)};
  if (ex == 0x7fff) {
    r.kind = m << 1 ? 3 : 2, r.payload = m << 1;
  } else if (m == 0) {
    r.kind = 0;
  } else {
    int t = top_bit(m);
    r.kind = 1, r.e = (ex ? ex : 1) - 16383 - 63 + t, r.m = m << (63 - t);
  }
  return r;
}

static uint16_t to_half(unpacked_t v) {
  switch (v.kind) {
  case 0:
    return v.sign;
  case 2:
    return v.sign | 0x7c00;
  case 3: /* quiet, with the payload's leading bits */
    return v.sign | 0x7e00 | (uint16_t)(v.payload >> 54);
  default:
    return half_round(v.sign, v.e, v.m);
  }
}

static uint16_t to_bf16(unpacked_t v) {
  switch (v.kind) {
  case 0:
    return v.sign;
  case 2:
    return v.sign | 0x7f80;
  case 3:
    return v.sign | 0x7fc0 | (uint16_t)(v.payload >> 57);
  default:
    return bf16_round(v.sign, v.e, v.m);
  }
}

/* binary16 -> float is exact. A signalling NaN comes back quiet, as F16C's vcvtph2ps does. */
static float half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16, ex = (h >> 10) & 0x1f, fr = h & 0x3ff;
  if (ex == 0x1f) return f_bits(sign | 0x7f800000u | (fr ? 0x400000u | fr << 13 : 0));
  if (ex == 0) return sign ? -ldexpf((float)fr, -24) : ldexpf((float)fr, -24);
  return f_bits(sign | (ex + 112) << 23 | fr << 13);
}

static float rt_extendhfsf2(float h) {
  return half_to_float(carried(h));
}
static double rt_extendhfdf2(float h) {
  return half_to_float(carried(h));
}
static long double rt_extendhfxf2(float h) {
  return half_to_float(carried(h));
}
static float rt_truncsfhf2(float x) {
  return carry(to_half(unpack_f(x)));
}
static float rt_truncdfhf2(double x) {
  return carry(to_half(unpack_d(x)));
}
static float rt_truncxfhf2(long double x) {
  return carry(to_half(unpack_x(x)));
}
static float rt_truncsfbf2(float x) {
  return carry(to_bf16(unpack_f(x)));
}
static float rt_truncdfbf2(double x) {
  return carry(to_bf16(unpack_d(x)));
}
/* The older names pass the half as an integer. */
static float rt_gnu_h2f_ieee(uint16_t h) {
  return half_to_float(h);
}
static uint16_t rt_gnu_f2h_ieee(float x) {
  return to_half(unpack_f(x));
}

/* ---- 128-bit integers ---------------------------------------------------------------------- */

typedef __int128 i128;
typedef unsigned __int128 u128;

static i128 rt_divti3(i128 a, i128 b) {
  return a / b;
}
static u128 rt_udivti3(u128 a, u128 b) {
  return a / b;
}
static i128 rt_modti3(i128 a, i128 b) {
  return a % b;
}
static u128 rt_umodti3(u128 a, u128 b) {
  return a % b;
}
static i128 rt_muloti4(i128 a, i128 b, int *overflow) {
  i128 r;
  *overflow = __builtin_mul_overflow(a, b, &r);
  return r;
}

/* Float -> 128-bit integer truncates toward zero. Out of range (poison to LLVM) saturates and
 * NaN gives 0, so the C conversion is never undefined; float and double widen exactly. */
#define I128_MAX ((i128)(~(u128)0 >> 1))

static i128 fix_ti(long double x) {
  if (x != x) return 0;
  if (x >= 0x1p127L) return I128_MAX;
  if (x < -0x1p127L) return -I128_MAX - 1;
  return (i128)x;
}

static u128 fixuns_ti(long double x) {
  if (!(x > -1.0L)) return 0;
  if (x >= 0x1p128L) return ~(u128)0;
  return (u128)x;
}

static i128 rt_fixsfti(float x) {
  return fix_ti(x);
}
static i128 rt_fixdfti(double x) {
  return fix_ti(x);
}
static i128 rt_fixxfti(long double x) {
  return fix_ti(x);
}
static u128 rt_fixunssfti(float x) {
  return fixuns_ti(x);
}
static u128 rt_fixunsdfti(double x) {
  return fixuns_ti(x);
}
static u128 rt_fixunsxfti(long double x) {
  return fixuns_ti(x);
}
static i128 rt_fixhfti(float h) {
  return rt_fixsfti(half_to_float(carried(h)));
}
static u128 rt_fixunshfti(float h) {
  return rt_fixunssfti(half_to_float(carried(h)));
}

static float rt_floattisf(i128 a) {
  return (float)a;
}
static double rt_floattidf(i128 a) {
  return (double)a;
}
static long double rt_floattixf(i128 a) {
  return (long double)a;
}
static float rt_floatuntisf(u128 a) {
  return (float)a;
}
static double rt_floatuntidf(u128 a) {
  return (double)a;
}
static long double rt_floatuntixf(u128 a) {
  return (long double)a;
}
/* An integer below 65520 in magnitude is exact in float, and larger ones round to infinity. */
static float rt_floattihf(i128 a) {
  if (a >= 65520 || a <= -65520) return carry(a < 0 ? 0xfc00 : 0x7c00);
  return carry(to_half(unpack_f((float)a)));
}
static float rt_floatuntihf(u128 a) {
  return carry(a >= 65520 ? 0x7c00 : to_half(unpack_f((float)a)));
}

/* ---- powi ----------------------------------------------------------------------------------- */

#define POWI(NAME, F)                                                                              \
  static F NAME(F x, int n) {                                                                      \
    unsigned k = n < 0 ? 0u - (unsigned)n : (unsigned)n;                                           \
    F r = 1;                                                                                       \
    for (F p = x; k; k >>= 1, p *= p)                                                              \
      if (k & 1) r *= p;                                                                           \
    return n < 0 ? 1 / r : r;                                                                      \
  }
POWI(rt_powisf2, float)
POWI(rt_powidf2, double)
POWI(rt_powixf2, long double)

/* ---- By name -------------------------------------------------------------------------------- */

void *kc_hf_rt_symbol(const char *name) {
  static const struct {
    const char *name;
    void *addr;
  } rt[] = {
      {"__extendhfsf2", (void *)rt_extendhfsf2},
      {"__extendhfdf2", (void *)rt_extendhfdf2},
      {"__extendhfxf2", (void *)rt_extendhfxf2},
      {"__truncsfhf2", (void *)rt_truncsfhf2},
      {"__truncdfhf2", (void *)rt_truncdfhf2},
      {"__truncxfhf2", (void *)rt_truncxfhf2},
      {"__truncsfbf2", (void *)rt_truncsfbf2},
      {"__truncdfbf2", (void *)rt_truncdfbf2},
      {"__gnu_h2f_ieee", (void *)rt_gnu_h2f_ieee},
      {"__gnu_f2h_ieee", (void *)rt_gnu_f2h_ieee},
      {"__divti3", (void *)rt_divti3},
      {"__udivti3", (void *)rt_udivti3},
      {"__modti3", (void *)rt_modti3},
      {"__umodti3", (void *)rt_umodti3},
      {"__muloti4", (void *)rt_muloti4},
      {"__fixsfti", (void *)rt_fixsfti},
      {"__fixdfti", (void *)rt_fixdfti},
      {"__fixxfti", (void *)rt_fixxfti},
      {"__fixunssfti", (void *)rt_fixunssfti},
      {"__fixunsdfti", (void *)rt_fixunsdfti},
      {"__fixunsxfti", (void *)rt_fixunsxfti},
      {"__fixhfti", (void *)rt_fixhfti},
      {"__fixunshfti", (void *)rt_fixunshfti},
      {"__floattisf", (void *)rt_floattisf},
      {"__floattidf", (void *)rt_floattidf},
      {"__floattixf", (void *)rt_floattixf},
      {"__floatuntisf", (void *)rt_floatuntisf},
      {"__floatuntidf", (void *)rt_floatuntidf},
      {"__floatuntixf", (void *)rt_floatuntixf},
      {"__floattihf", (void *)rt_floattihf},
      {"__floatuntihf", (void *)rt_floatuntihf},
      {"__powisf2", (void *)rt_powisf2},
      {"__powidf2", (void *)rt_powidf2},
      {"__powixf2", (void *)rt_powixf2},
  };
  if (!name || strncmp(name, "__", 2)) return NULL;
  for (size_t i = 0; i < sizeof rt / sizeof rt[0]; i++)
    if (!strcmp(name, rt[i].name)) return rt[i].addr;
  return NULL;
}
