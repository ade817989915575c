// Fixtures for the host finaliser tests: compiled to SPIR-V at build time (clang-15 ->
// llvm-spirv-15) and finalised by the tests with kc_host_finalise.

kernel void ids(global ulong *out) {
  size_t lin = ((get_global_id(2) - get_global_offset(2)) * get_global_size(1) +
                (get_global_id(1) - get_global_offset(1))) * get_global_size(0) +
               (get_global_id(0) - get_global_offset(0));
  global ulong *o = out + lin * 21;
  for (uint d = 0; d < 3; d++) {
    o[d] = get_global_id(d);
    o[3 + d] = get_local_id(d);
    o[6 + d] = get_group_id(d);
    o[9 + d] = get_local_size(d);
    o[12 + d] = get_num_groups(d);
    o[15 + d] = get_global_size(d);
    o[18 + d] = get_global_offset(d);
  }
}

kernel void saxpy(global float *y, global const float *x, float a) {
  size_t i = get_global_id(0);
  y[i] = a * x[i] + y[i];
}

kernel void triad(global double *a, global const double *b, global const double *c, double s) {
  size_t i = get_global_id(0);
  a[i] = b[i] + s * c[i];
}

// Barriers in a loop and in a (uniform) branch; local memory from an argument.
kernel void reduce(global float *out, global const float *in, local float *tmp) {
  size_t l = get_local_id(0);
  tmp[l] = in[get_global_id(0)];
  barrier(CLK_LOCAL_MEM_FENCE);
  size_t s = get_local_size(0);
  do {
    s >>= 1;
    if (l < s) tmp[l] += tmp[l + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  } while (s > 1);
  if (get_local_size(0) > 1) {
    float first = tmp[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    tmp[l] = first;
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (l == 0) out[get_group_id(0)] = tmp[get_local_size(0) - 1];
}

// A module-level __local array (must be per group) and a private array live across barriers.
kernel void reverse(global int *out, global const int *in) {
  local int buf[256];
  int priv[8];
  size_t l = get_local_id(0), n = get_local_size(0), g = get_global_id(0);
  for (int k = 0; k < 8; k++) priv[k] = in[g] * k;
  buf[l] = in[g];
  barrier(CLK_LOCAL_MEM_FENCE);
  int r = buf[n - 1 - l];
  barrier(CLK_LOCAL_MEM_FENCE);
  buf[l] = priv[(g + 3) % 8];
  barrier(CLK_LOCAL_MEM_FENCE);
  out[g] = r * 1000 + buf[l] - priv[(g + 3) % 8] + (int)(get_group_id(0) % 7) * 0;
}

// A module-level __local array in a kernel run in batches of groups: each group of a batch
// needs its own copy. Nothing is saved per work-item (ids are recomputed), so it batches.
kernel void local_batch(global int *out, global const int *in) {
  local int buf[64];
  size_t l = get_local_id(0), n = get_local_size(0);
  size_t i = get_global_id(1) * get_global_size(0) + get_global_id(0);
  int gid = (int)(get_group_id(1) * 1000 + get_group_id(0));
  buf[l] = in[i];
  barrier(CLK_LOCAL_MEM_FENCE);
  out[i] = buf[n - 1 - l] * 100 + gid;
}

// How many barriers a group meets depends on its id: groups of one batch would not run in
// lockstep, so the kernel is never batched (each group still barriers uniformly).
kernel void by_group(global int *out, local int *tmp) {
  size_t l = get_local_id(0), n = get_local_size(0);
  int acc = 0;
  tmp[l] = (int)l;
  for (size_t t = 0; t < get_group_id(0) % 3; t++) {
    barrier(CLK_LOCAL_MEM_FENCE);
    acc += tmp[(l + 1) % n];
    barrier(CLK_LOCAL_MEM_FENCE);
    tmp[l] = acc;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  out[get_global_id(0)] = tmp[l];
}

// Barrier-free use of a module-level __local array, concurrently in many groups.
kernel void local_nobarrier(global int *out, global const int *in) {
  local int scratch[64];
  size_t l = get_local_id(0);
  scratch[l] = in[get_global_id(0)] + (int)get_group_id(0);
  out[get_global_id(0)] = scratch[l];
}

#define ATOM_INT(T, AT)                                                                            \
  kernel void atom_##T(global T *c, global T *out, local T *lc) {                                 \
    size_t g = get_global_id(0), l = get_local_id(0);                                              \
    T v = (T)((long)g - 1000);                                                                     \
    volatile global AT *a = (volatile global AT *)c;                                               \
    volatile local AT *la = (volatile local AT *)lc;                                               \
    if (l == 0) {                                                                                  \
      atomic_store_explicit(&la[0], (T)0, memory_order_relaxed, memory_scope_work_group);          \
      atomic_store_explicit(&la[1], (T)0, memory_order_release, memory_scope_work_group);          \
    }                                                                                              \
    barrier(CLK_LOCAL_MEM_FENCE);                                                                  \
    atomic_fetch_add_explicit(&a[0], (T)1, memory_order_relaxed, memory_scope_device);             \
    atomic_fetch_sub_explicit(&a[1], (T)1, memory_order_acq_rel, memory_scope_device);             \
    atomic_fetch_min_explicit(&a[2], v, memory_order_seq_cst, memory_scope_device);                \
    atomic_fetch_max_explicit(&a[3], v, memory_order_relaxed, memory_scope_device);                \
    atomic_fetch_or_explicit(&a[4], (T)1 << (g % 32), memory_order_relaxed, memory_scope_device);  \
    atomic_fetch_and_explicit(&a[5], ~((T)1 << (g % 32)), memory_order_release,                    \
                              memory_scope_device);                                                \
    atomic_fetch_xor_explicit(&a[6], (T)(g * g), memory_order_relaxed, memory_scope_device);             \
    out[g] = atomic_exchange_explicit(&a[7], (T)g, memory_order_acq_rel, memory_scope_device);     \
    T e = atomic_load_explicit(&a[8], memory_order_acquire, memory_scope_device);                  \
    while (!atomic_compare_exchange_strong_explicit(&a[8], &e, e + 1, memory_order_acq_rel,        \
                                                    memory_order_relaxed, memory_scope_device))    \
      ;                                                                                            \
    atomic_fetch_add_explicit(&la[0], (T)1, memory_order_relaxed, memory_scope_work_group);        \
    T f = atomic_load_explicit(&la[1], memory_order_relaxed, memory_scope_work_group);             \
    while (!atomic_compare_exchange_weak_explicit(&la[1], &f, f + 2, memory_order_relaxed,         \
                                                  memory_order_relaxed, memory_scope_work_group))  \
      ;                                                                                            \
    atomic_fetch_min_explicit(&la[1], (T)1000000, memory_order_relaxed, memory_scope_work_group);  \
    barrier(CLK_LOCAL_MEM_FENCE);                                                                  \
    if (l == 0) {                                                                                  \
      atomic_fetch_add(&a[9], atomic_load(&la[0]));                                                \
      atomic_fetch_add(&a[10], atomic_load(&la[1]));                                               \
    }                                                                                              \
  }
ATOM_INT(int, atomic_int)
ATOM_INT(uint, atomic_uint)
ATOM_INT(long, atomic_long)
ATOM_INT(ulong, atomic_ulong)

// Float compare-exchange goes through the bits (SPIR-V 1.0 has only integer OpAtomicCompareExchange).
#define ATOM_FP(T, AT, IT, AIT, TO_T, TO_IT)                                                       \
  kernel void atom_##T(global T *c, global T *out, local T *lc) {                                 \
    size_t g = get_global_id(0), l = get_local_id(0);                                              \
    T v = (T)((long)g - 1000);                                                                     \
    volatile global AT *a = (volatile global AT *)c;                                               \
    volatile local AT *la = (volatile local AT *)lc;                                               \
    if (l == 0) atomic_store_explicit(&la[0], (T)0, memory_order_relaxed, memory_scope_work_group); \
    barrier(CLK_LOCAL_MEM_FENCE);                                                                  \
    atomic_fetch_add_explicit(&a[0], (T)1, memory_order_relaxed, memory_scope_device);             \
    atomic_fetch_sub_explicit(&a[1], (T)1, memory_order_seq_cst, memory_scope_device);             \
    atomic_fetch_min_explicit(&a[2], v, memory_order_relaxed, memory_scope_device);                \
    atomic_fetch_max_explicit(&a[3], v, memory_order_relaxed, memory_scope_device);                \
    out[g] = atomic_exchange_explicit(&a[7], (T)g, memory_order_acq_rel, memory_scope_device);     \
    volatile global AIT *ai = (volatile global AIT *)c;                                            \
    IT e = atomic_load_explicit(&ai[8], memory_order_acquire, memory_scope_device);                \
    while (!atomic_compare_exchange_strong_explicit(&ai[8], &e, TO_IT(TO_T(e) + (T)1),             \
                                                    memory_order_acq_rel, memory_order_relaxed,    \
                                                    memory_scope_device))                          \
      ;                                                                                            \
    atomic_fetch_add_explicit(&la[0], (T)1, memory_order_relaxed, memory_scope_work_group);        \
    barrier(CLK_LOCAL_MEM_FENCE);                                                                  \
    if (l == 0) atomic_fetch_add(&a[9], atomic_load(&la[0]));                                      \
  }
ATOM_FP(float, atomic_float, uint, atomic_uint, as_float, as_uint)
ATOM_FP(double, atomic_double, ulong, atomic_ulong, as_double, as_ulong)

// Math: one kernel per function and type, m_NAME_f / m_NAME_d, out[i] = function of the inputs
// (order and names match host_test.c MATH_F). One function per kernel, as in real kernels, so
// each work-item loop can be vectorised on its own (with libmvec where available).
#define M(T, S, NAME, EXPR)                                                                       \
  kernel void m_##NAME##_##S(global T *out, global const T *a, global const T *p,                 \
                             global const T *u, global const T *b) {                              \
    size_t i = get_global_id(0);                                                                   \
    out[i] = EXPR;                                                                                 \
  }
#define MATH_KERNELS(T, S)                                                                         \
  M(T, S, sin, sin(a[i]))                                                                          \
  M(T, S, cos, cos(a[i]))                                                                          \
  M(T, S, tan, tan(a[i]))                                                                          \
  M(T, S, exp, exp(a[i]))                                                                          \
  M(T, S, exp2, exp2(a[i]))                                                                        \
  M(T, S, log, log(p[i]))                                                                          \
  M(T, S, log2, log2(p[i]))                                                                        \
  M(T, S, log10, log10(p[i]))                                                                      \
  M(T, S, sqrt, sqrt(p[i]))                                                                        \
  M(T, S, pow, pow(p[i], b[i]))                                                                    \
  M(T, S, atan2, atan2(a[i], b[i]))                                                                \
  M(T, S, asin, asin(u[i]))                                                                        \
  M(T, S, acos, acos(u[i]))                                                                        \
  M(T, S, atan, atan(a[i]))                                                                        \
  M(T, S, sinh, sinh(u[i]))                                                                        \
  M(T, S, cosh, cosh(u[i]))                                                                        \
  M(T, S, tanh, tanh(a[i]))                                                                        \
  M(T, S, cbrt, cbrt(a[i]))                                                                        \
  M(T, S, expm1, expm1(u[i]))                                                                      \
  M(T, S, log1p, log1p(p[i]))                                                                      \
  M(T, S, hypot, hypot(a[i], b[i]))                                                                \
  M(T, S, erf, erf(a[i]))                                                                          \
  M(T, S, fma, fma(a[i], b[i], u[i]))                                                              \
  M(T, S, fmod, fmod(a[i], b[i]))                                                                  \
  M(T, S, rsqrt, rsqrt(p[i]))                                                                      \
  M(T, S, floorceil, floor(a[i]) + ceil(b[i]))                                                     \
  M(T, S, fminmax, fmin(a[i], b[i]) - fmax(a[i], b[i]))                                            \
  M(T, S, fabs, fabs(a[i]))                                                                        \
  M(T, S, erfc, erfc(a[i]))                                                                        \
  M(T, S, exp10, exp10(u[i]))                                                                      \
  M(T, S, asinh, asinh(a[i]))                                                                      \
  M(T, S, acosh, acosh(p[i]))                                                                       \
  M(T, S, atanh, atanh(u[i]))
MATH_KERNELS(float, f)
MATH_KERNELS(double, d)

kernel void math_vec(global float4 *out, global const float4 *a) {
  size_t i = get_global_id(0);
  out[i] = sin(a[i]) + atan(a[i]) * 0.0f + vload4(i, (global const float *)a) * 0.0f;
}

// Pairwise distance as numba-dpex users write it (dpbench): one work-item per row of D.
kernel void pairwise(global const double *x1, global const double *x2, global double *dist,
                     long n, long d) {
  size_t i = get_global_id(0);
  for (long j = 0; j < n; j++) {
    double s = 0;
    for (long k = 0; k < d; k++) {
      double t = x1[i * d + k] - x2[j * d + k];
      s += t * t;
    }
    dist[i * n + j] = sqrt(s);
  }
}

// Builtins beyond the math test, each result checked against C on the host (host_test.c
// test_builtins, same order). One work-item per input x = in[i], y = in[i + n].
kernel void builtins(global float *out, global const float *in, global int *iout,
                     global const int *iin, int n) {
  int i = get_global_id(0), k = 0, q = 0;
  float x = in[i], y = in[i + n], ip;
  int e, a = iin[i], b = iin[i + n];
  global float *o = out + i * 24;
  global int *io = iout + i * 16;
  o[k++] = isnan(x) ? 1.0f : 0.0f;
  o[k++] = isinf(x) ? 1.0f : 0.0f;
  o[k++] = isfinite(x) ? 1.0f : 0.0f;
  o[k++] = isnormal(x) ? 1.0f : 0.0f;
  o[k++] = signbit(x) ? 1.0f : 0.0f;
  o[k++] = fract(x, &ip);
  o[k++] = ip;
  o[k++] = frexp(x, &e) + (float)e * 1000.0f;
  o[k++] = modf(x, &ip) + ip * 1000.0f;
  o[k++] = sincos(x, &ip) + ip * 1000.0f;
  o[k++] = ldexp(x, 3);
  o[k++] = pown(y, 3);
  o[k++] = copysign(x, y);
  o[k++] = fdim(x, y);
  o[k++] = clamp(x, -1.0f, 1.0f);
  o[k++] = sign(x);
  o[k++] = step(y, x);
  o[k++] = smoothstep(-2.0f, 2.0f, x);
  o[k++] = maxmag(x, y);
  o[k++] = trunc(x) + round(y) * 1000.0f;
  o[k++] = dot((float4)(x, y, 1.0f, 2.0f), (float4)(y, x, 3.0f, 4.0f));
  o[k++] = select(x, y, a > b);
  o[k++] = asinh(x) + atanh(y / 8.0f);
  o[k++] = exp10(y);
  io[q++] = mul_hi(a, b);
  io[q++] = (int)mul_hi((uint)a, (uint)b);
  io[q++] = rotate(a, b);
  io[q++] = add_sat(a, b);
  io[q++] = sub_sat(a, b);
  io[q++] = abs_diff(a, b);
  io[q++] = mad24(a & 0xffff, b & 0xffff, a);
  io[q++] = popcount(a);
  io[q++] = clz(a);
  io[q++] = ctz(a);
  io[q++] = min(a, b) * 3 + max(a, b);
  io[q++] = any((int4)(a, 0, 0, 0) > (int4)(b)) + 2 * all((int4)(a) >= (int4)(b));
  io[q++] = abs(a);
  io[q++] = ilogb(x);
  io[q++] = isnan(y) + 2 * isunordered(x, y) + 4 * islessgreater(x, y);
  io[q++] = (int)(uint)max((uint)a, (uint)b);
}

// Arguments of every size the driver passes by value: a struct (byval), char, short, long.
typedef struct {
  float scale;
  int shift;
  long big;
} params_t;

kernel void byval(global long *out, params_t p, char c, short s, long l) {
  size_t i = get_global_id(0);
  out[i] = (long)(p.scale * (float)i) + p.shift + p.big + c * 1000 + s * 100000 + l;
}
