/* Tests of the host CPU finaliser (kc_host_finalise): SPIR-V fixtures built from kernels.cl
 * are finalised and run group by group, several groups concurrently on threads, the way the
 * CPU Level Zero driver runs them. `host_finalise_test NAME` runs one test; exit 0 = pass.
 */
#define _GNU_SOURCE
#include "kapi/compiler.h"

#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHECK(c, ...)                                                                              \
  do {                                                                                             \
    if (!(c)) {                                                                                    \
      fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #c);                        \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fprintf(stderr, "\n");                                                                       \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

static void *read_file(const char *name, size_t *n) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", KAPI_HOST_FIXTURES, name);
  FILE *f = fopen(path, "rb");
  CHECK(f, "cannot open %s", path);
  fseek(f, 0, SEEK_END);
  *n = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  void *p = malloc(*n);
  CHECK(fread(p, 1, *n, f) == *n, "short read");
  fclose(f);
  return p;
}

static kc_host_module_t *finalise(const char *fixture) {
  size_t n;
  void *spv = read_file(fixture, &n);
  kc_host_module_t *m = NULL;
  char *log = NULL;
  kc_status_t st = kc_host_finalise(spv, n, &m, &log);
  CHECK(st == KC_OK, "%s: %s", kc_status_name(st), log ? log : "(no log)");
  free(log);
  free(spv);
  return m;
}

static const kc_host_kernel_t *kernel(kc_host_module_t *m, const char *name) {
  const kc_host_kernel_t *k = kc_host_module_find(m, name);
  CHECK(k, "kernel %s not found", name);
  return k;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* ---- A launcher like the CPU driver's: groups shared out to threads ------------------- */

typedef struct launch {
  const kc_host_kernel_t *k;
  uint64_t groups[3], local[3], offset[3];
  void **args;         /* args[i] -> bytes of argument i (ignored for local arguments) */
  size_t *local_bytes; /* per argument: bytes of its local buffer, for KC_ARG_LOCAL */
  atomic_ulong next;
} launch_t;

/* Groups per run call for kernels that take batches: odd, so that rows of groups seldom divide
 * into whole batches (a batch never crosses a row of dimension 0). */
#define BATCH 5u

static void *worker(void *p) {
  launch_t *l = p;
  uint32_t na = l->k->num_args;
  uint64_t batch = l->k->batches ? BATCH : 1, stride = 64;
  for (uint32_t i = 0; i < na; i++)
    if (l->k->args[i].kind == KC_ARG_LOCAL && (l->local_bytes[i] + 63) / 64 * 64 > stride)
      stride = (l->local_bytes[i] + 63) / 64 * 64;
  void **args = calloc(na + 1, sizeof *args);
  void **bufs = calloc(na + 1, sizeof *bufs);
  for (uint32_t i = 0; i < na; i++) {
    args[i] = l->args[i];
    if (l->k->args[i].kind == KC_ARG_LOCAL) {
      bufs[i] = aligned_alloc(64, batch * stride); /* one buffer per group of a batch */
      args[i] = &bufs[i];
    }
  }
  kc_host_group_t g = {.args = args, .local_stride = stride};
  memcpy(g.group_range, l->groups, sizeof g.group_range);
  memcpy(g.local_range, l->local, sizeof g.local_range);
  memcpy(g.global_offset, l->offset, sizeof g.global_offset);
  uint64_t total = l->groups[0] * l->groups[1] * l->groups[2], nx = l->groups[0];
  /* a batch is `batch` consecutive group indices, cut at the end of a row */
  for (uint64_t b; (b = atomic_fetch_add(&l->next, 1)) * batch < total;) {
    for (uint64_t i = b * batch; i < (b + 1) * batch && i < total; i += g.count) {
      g.group_id[0] = i % nx;
      g.group_id[1] = i / nx % l->groups[1];
      g.group_id[2] = i / (nx * l->groups[1]);
      uint64_t end = (b + 1) * batch < total ? (b + 1) * batch : total;
      g.count = end - i < nx - g.group_id[0] ? end - i : nx - g.group_id[0];
      kc_status_t st = l->k->run(&g);
      CHECK(st == KC_OK, "group %llu could not run: %s", (unsigned long long)i, kc_status_name(st));
    }
  }
  for (uint32_t i = 0; i < na; i++)
    free(bufs[i]);
  free(bufs);
  free(args);
  return NULL;
}

static void launch(launch_t *l, int threads) {
  pthread_t t[16];
  atomic_store(&l->next, 0);
  for (int i = 0; i < threads; i++)
    pthread_create(&t[i], NULL, worker, l);
  for (int i = 0; i < threads; i++)
    pthread_join(t[i], NULL);
}

/* Seconds for the second of two 1D launches on the calling thread (whose fiber stacks are
 * then warm, as in a driver's persistent thread pool). */
static double time_on_this_thread(const kc_host_kernel_t *k, uint64_t groups, uint64_t local,
                                  void **args, size_t *local_bytes) {
  launch_t l = {.k = k,
                .groups = {groups, 1, 1},
                .local = {local, 1, 1},
                .args = args,
                .local_bytes = local_bytes};
  double t = 0;
  for (int r = 0; r < 2; r++) {
    atomic_store(&l.next, 0);
    double t0 = now();
    worker(&l);
    t = now() - t0;
  }
  return t;
}

static void launch1d(const kc_host_kernel_t *k, uint64_t groups, uint64_t local, void **args,
                     size_t *local_bytes, int threads) {
  launch_t l = {.k = k,
                .groups = {groups, 1, 1},
                .local = {local, 1, 1},
                .args = args,
                .local_bytes = local_bytes};
  launch(&l, threads);
}

/* ---- Tests -------------------------------------------------------------------------- */

static void test_ids_shape(kc_host_module_t *m, const uint64_t gr[3], const uint64_t lr[3],
                           const uint64_t off[3]) {
  const kc_host_kernel_t *k = kernel(m, "ids");
  CHECK(!k->uses_barrier && k->num_args == 1 && k->args[0].size == 8, "ids signature");
  uint64_t gs[3] = {gr[0] * lr[0], gr[1] * lr[1], gr[2] * lr[2]};
  size_t items = gs[0] * gs[1] * gs[2];
  uint64_t *out = calloc(items * 21, sizeof *out);
  void *args[1] = {&out};
  launch_t l = {.k = k, .args = args};
  memcpy(l.groups, gr, sizeof l.groups), memcpy(l.local, lr, sizeof l.local);
  memcpy(l.offset, off, sizeof l.offset);
  launch(&l, 3);
  for (uint64_t z = 0; z < gs[2]; z++)
    for (uint64_t y = 0; y < gs[1]; y++)
      for (uint64_t x = 0; x < gs[0]; x++) {
        uint64_t *o = out + ((z * gs[1] + y) * gs[0] + x) * 21, id[3] = {x, y, z};
        for (int d = 0; d < 3; d++) {
          uint64_t want[7] = {id[d] + off[d], id[d] % lr[d], id[d] / lr[d], lr[d],
                              gr[d],          gs[d],         off[d]};
          for (int q = 0; q < 7; q++)
            CHECK(o[q * 3 + d] == want[q], "item (%lu,%lu,%lu) value %d dim %d: %lu != %lu",
                  (unsigned long)x, (unsigned long)y, (unsigned long)z, q, d,
                  (unsigned long)o[q * 3 + d], (unsigned long)want[q]);
        }
      }
  free(out);
}

static void test_ids(void) {
  kc_host_module_t *m = finalise("kernels.spv");
  test_ids_shape(m, (uint64_t[]){3, 2, 2}, (uint64_t[]){4, 3, 2}, (uint64_t[]){1, 2, 3});
  test_ids_shape(m, (uint64_t[]){5, 3, 1}, (uint64_t[]){2, 4, 1}, (uint64_t[]){0, 0, 0});
  test_ids_shape(m, (uint64_t[]){7, 1, 1}, (uint64_t[]){5, 1, 1}, (uint64_t[]){9, 0, 0});
  kc_host_module_destroy(m);
}

/* The body of NAME.kapi.run in the module's optimised IR. */
static char *run_ir(kc_host_module_t *m, const char *name) {
  const char *ir = kc_host_module_llvm_ir(m);
  CHECK(ir, "no IR kept");
  char head[256];
  snprintf(head, sizeof head, "@%s.kapi.run(", name);
  const char *s = strstr(ir, head);
  CHECK(s, "no run function for %s in IR", name);
  const char *e = strstr(s, "\n}\n");
  size_t n = e ? (size_t)(e - s) : strlen(s);
  char *r = malloc(n + 1);
  memcpy(r, s, n), r[n] = 0;
  return r;
}

static void test_saxpy_vectorised(void) {
  kc_host_module_t *m = finalise("kernels.spv");
  const kc_host_kernel_t *k = kernel(m, "saxpy");
  CHECK(!k->uses_barrier && k->num_args == 3 && k->args[2].size == 4, "saxpy signature");
  size_t n = 1 << 16;
  float *y = malloc(n * 4), *x = malloc(n * 4), a = 2.5f;
  for (size_t i = 0; i < n; i++)
    y[i] = (float)i, x[i] = (float)(i % 13);
  void *args[3] = {&y, &x, &a};
  launch1d(k, n / 256, 256, args, NULL, 2);
  for (size_t i = 0; i < n; i++)
    CHECK(y[i] == 2.5f * (float)(i % 13) + (float)i, "y[%zu] = %g", i, y[i]);
  char *ir = run_ir(m, "saxpy");
  int vec = strstr(ir, "x float>") != NULL;
  CHECK(vec, "saxpy's work-item loop is not vectorised:\n%s", ir);
  printf("saxpy run function vectorised: %s\n", strstr(ir, "<16 x float>")  ? "<16 x float>"
                                                : strstr(ir, "<8 x float>") ? "<8 x float>"
                                                                            : "<4 x float>");
  free(ir);
  free(y), free(x);
  kc_host_module_destroy(m);
}

/* Correctness, vectorisation, and (printed, not asserted) single-thread bandwidth against
 * the same loop compiled by the C compiler. */
static void test_triad(void) {
  kc_host_module_t *m = finalise("kernels.spv");
  const kc_host_kernel_t *k = kernel(m, "triad");
  size_t n = 1 << 21, local = 1024;
  double *a = malloc(n * 8), *b = malloc(n * 8), *c = malloc(n * 8), s = 3.0;
  for (size_t i = 0; i < n; i++)
    a[i] = 0, b[i] = (double)i, c[i] = (double)(i % 5);
  void *args[4] = {&a, &b, &c, &s};
  launch1d(k, n / local, local, args, NULL, 1);
  for (size_t i = 0; i < n; i++)
    CHECK(a[i] == (double)i + 3.0 * (double)(i % 5), "a[%zu]", i);
  char *ir = run_ir(m, "triad");
  CHECK(strstr(ir, "x double>"), "triad's work-item loop is not vectorised:\n%s", ir);
  free(ir);
  double best_k = 1e9, best_c = 1e9;
  for (int r = 0; r < 5; r++) {
    double t0 = now();
    launch1d(k, n / local, local, args, NULL, 1);
    double t1 = now();
    for (size_t i = 0; i < n; i++)
      a[i] = b[i] + s * c[i];
    double t2 = now();
    best_k = fmin(best_k, t1 - t0), best_c = fmin(best_c, t2 - t1);
  }
  double bytes = 3.0 * 8.0 * (double)n;
  printf("triad n=%zu, 1 thread: kernel %.2f GB/s, C loop %.2f GB/s (ratio %.2f)\n", n,
         bytes / best_k * 1e-9, bytes / best_c * 1e-9, best_c / best_k);
  free(a), free(b), free(c);
  kc_host_module_destroy(m);
}

static void test_barrier_reduce(void) {
  kc_host_module_t *m = finalise("kernels.spv");
  const kc_host_kernel_t *k = kernel(m, "reduce");
  CHECK(k->uses_barrier && k->args[2].kind == KC_ARG_LOCAL, "reduce: barrier, local argument");
  uint64_t sizes[] = {1, 2, 64, 256};
  for (int si = 0; si < 4; si++) {
    uint64_t local = sizes[si], groups = 37, n = local * groups;
    float *in = malloc(n * 4), *out = calloc(groups, 4);
    for (uint64_t i = 0; i < n; i++)
      in[i] = (float)(i % 7);
    size_t lb[3] = {0, 0, local * 4};
    void *args[3] = {&out, &in, NULL};
    double per = time_on_this_thread(k, groups, local, args, lb) / (double)n * 1e9;
    launch1d(k, groups, local, args, lb, 4);
    printf("reduce, local size %lu: %.1f ns per work-item (%d barriers each)\n",
           (unsigned long)local, per, 3 + (int)log2((double)local));
    for (uint64_t g = 0; g < groups; g++) {
      float want = 0;
      for (uint64_t i = 0; i < local; i++)
        want += (float)((g * local + i) % 7);
      CHECK(out[g] == want, "local %lu group %lu: %g != %g", (unsigned long)local, (unsigned long)g,
            out[g], want);
    }
    free(in), free(out);
  }
  kc_host_module_destroy(m);
}

static void test_barrier_reverse(void) {
  kc_host_module_t *m = finalise("kernels.spv");
  const kc_host_kernel_t *k = kernel(m, "reverse");
  CHECK(k->uses_barrier && k->num_args == 2, "reverse: barrier, module-level local");
  uint64_t local = 256, groups = 40, n = local * groups;
  int *in = malloc(n * 4), *out = calloc(n, 4);
  for (uint64_t i = 0; i < n; i++)
    in[i] = (int)(i % 1000);
  void *args[2] = {&out, &in};
  launch1d(k, groups, local, args, NULL, 4);
  for (uint64_t i = 0; i < n; i++) {
    uint64_t g = i / local, l = i % local;
    int want = in[g * local + local - 1 - l] * 1000;
    CHECK(out[i] == want, "out[%lu] = %d, want %d", (unsigned long)i, out[i], want);
  }
  free(in), free(out);
  kc_host_module_destroy(m);
}

static void test_local_concurrent(void) {
  kc_host_module_t *m = finalise("kernels.spv");
  const kc_host_kernel_t *k = kernel(m, "local_nobarrier");
  CHECK(!k->uses_barrier, "local_nobarrier has no barrier");
  uint64_t local = 64, groups = 512, n = local * groups;
  int *in = malloc(n * 4), *out = calloc(n, 4);
  for (int rep = 0; rep < 3; rep++) {
    for (uint64_t i = 0; i < n; i++)
      in[i] = (int)(i * 7 + (uint64_t)rep);
    void *args[2] = {&out, &in};
    launch1d(k, groups, local, args, NULL, 4);
    for (uint64_t i = 0; i < n; i++)
      CHECK(out[i] == in[i] + (int)(i / local), "rep %d out[%lu] = %d", rep, (unsigned long)i,
            out[i]);
  }
  free(in), free(out);
  kc_host_module_destroy(m);
}

/* Batches of groups (the launcher's BATCH): a module-level __local array per group of a batch,
 * group counts that batches do not divide, rows of groups in 2-D; and a kernel whose groups
 * meet different numbers of barriers, which is never batched. */
static void test_batches(void) {
  kc_host_module_t *m = finalise("kernels.spv");
  const kc_host_kernel_t *k = kernel(m, "local_batch");
  CHECK(k->batches, "local_batch is not batched");
  const uint64_t shapes[][2] = {{1, 1}, {4, 1}, {5, 1}, {37, 1}, {7, 3}, {3, 4}};
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
    uint64_t gx = shapes[si][0], gy = shapes[si][1], local = 64, n = local * gx * gy;
    int *in = malloc(n * 4), *out = calloc(n, 4);
    for (uint64_t i = 0; i < n; i++)
      in[i] = (int)(i * 3 + si);
    void *args[2] = {&out, &in};
    launch_t l = {.k = k, .groups = {gx, gy, 1}, .local = {local, 1, 1}, .args = args};
    launch(&l, 3);
    for (uint64_t y = 0; y < gy; y++)
      for (uint64_t i = 0; i < gx * local; i++) {
        uint64_t g = i / local, mirror = g * local + local - 1 - i % local;
        int want = in[y * gx * local + mirror] * 100 + (int)(y * 1000 + g);
        CHECK(out[y * gx * local + i] == want, "shape %zu row %lu out[%lu] = %d, want %d", si,
              (unsigned long)y, (unsigned long)i, out[y * gx * local + i], want);
      }
    free(in), free(out);
  }
  k = kernel(m, "by_group");
  CHECK(!k->batches, "by_group is batched");
  uint64_t local = 16, groups = 23, n = local * groups;
  int *out = calloc(n, 4);
  void *args[2] = {&out, NULL};
  size_t lb[2] = {0, local * 4};
  launch1d(k, groups, local, args, lb, 3);
  for (uint64_t i = 0; i < n; i++) {
    uint64_t g = i / local, l = i % local;
    int tmp[16], acc[16] = {0};
    for (uint64_t j = 0; j < local; j++)
      tmp[j] = (int)j;
    for (uint64_t t = 0; t < g % 3; t++) {
      for (uint64_t j = 0; j < local; j++)
        acc[j] += tmp[(j + 1) % local];
      for (uint64_t j = 0; j < local; j++)
        tmp[j] = acc[j];
    }
    CHECK(out[i] == tmp[l], "by_group out[%lu] = %d, want %d", (unsigned long)i, out[i], tmp[l]);
  }
  free(out);
  kc_host_module_destroy(m);
}

/* ---- Atomics: exact results under contention (4 threads, 64 groups of 64) ------------- */

enum { AT_GROUPS = 64, AT_LOCAL = 64, AT_N = AT_GROUPS * AT_LOCAL };

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* out[] plus the final exchange slot must be exactly {initial 0} + {0 .. N-1}. */
static void check_exchange(const char *name, const uint64_t *vals) {
  uint64_t *v = malloc((AT_N + 1) * sizeof *v);
  memcpy(v, vals, (AT_N + 1) * sizeof *v);
  qsort(v, AT_N + 1, sizeof *v, cmp_u64);
  CHECK(v[0] == 0, "%s exchange: initial value lost", name);
  for (uint64_t i = 1; i <= AT_N; i++)
    CHECK(v[i] == i - 1, "%s exchange: values lost or duplicated at %lu", name, (unsigned long)i);
  free(v);
}

#define RUN_ATOMIC(T, NAME, INIT_MIN, INIT_MAX, INIT_AND)                                          \
  do {                                                                                             \
    const kc_host_kernel_t *k = kernel(m, NAME);                                                   \
    T c[11] = {0}, *out = calloc(AT_N, sizeof(T));                                                 \
    c[2] = INIT_MAX, c[3] = INIT_MIN, c[5] = INIT_AND;                                             \
    size_t lb[3] = {0, 0, 2 * sizeof(T)};                                                          \
    T *cp = c;                                                                                     \
    void *args[3] = {&cp, &out, NULL};                                                             \
    launch1d(k, AT_GROUPS, AT_LOCAL, args, lb, 4);                                                 \
    uint64_t ex[AT_N + 1];                                                                         \
    for (int i = 0; i < AT_N; i++)                                                                 \
      ex[i] = (uint64_t)out[i];                                                                    \
    ex[AT_N] = (uint64_t)c[7];                                                                     \
    check_exchange(NAME, ex);                                                                      \
    free(out);                                                                                     \
    memcpy(got, c, sizeof c);                                                                      \
  } while (0)

#define INT_CASE(T, NAME, SIGNED, TMIN, TMAX)                                                      \
  do {                                                                                             \
    T got[11];                                                                                     \
    RUN_ATOMIC(T, NAME, (SIGNED ? TMIN : 0), TMAX, (T) ~(T)0);                                     \
    T x = 0;                                                                                       \
    for (uint64_t g = 0; g < AT_N; g++)                                                            \
      x ^= (T)(g * g);                                                                             \
    T want[11] = {(T)AT_N,                                                                         \
                  (T)(0 - (T)AT_N),                                                                \
                  SIGNED ? (T)-1000 : 0,                                                           \
                  SIGNED ? (T)(AT_N - 1001) : (T)-1,                                               \
                  (T)0xffffffffu,                                                                  \
                  (T) ~(T)0xffffffffu,                                                             \
                  x,                                                                               \
                  0,                                                                               \
                  (T)AT_N,                                                                         \
                  (T)AT_N,                                                                         \
                  (T)(2 * AT_N)};                                                                  \
    for (int q = 0; q < 11; q++)                                                                   \
      if (q != 7)                                                                                  \
        CHECK(got[q] == want[q], "%s slot %d: %llu != %llu", NAME, q, (unsigned long long)got[q],  \
              (unsigned long long)want[q]);                                                        \
  } while (0)

#define FP_CASE(T, NAME)                                                                           \
  do {                                                                                             \
    T got[11];                                                                                     \
    RUN_ATOMIC(T, NAME, (T)-1e30, (T)1e30, 0);                                                     \
    T want[4] = {(T)AT_N, (T)-AT_N, (T)-1000, (T)(AT_N - 1001)};                                   \
    for (int q = 0; q < 4; q++)                                                                    \
      CHECK(got[q] == want[q], "%s slot %d: %g", NAME, q, (double)got[q]);                         \
    CHECK(got[8] == (T)AT_N && got[9] == (T)AT_N, "%s cas/local: %g %g", NAME, (double)got[8],     \
          (double)got[9]);                                                                         \
  } while (0)

static void test_atomics(void) {
  kc_host_module_t *m = finalise("kernels.spv");
  INT_CASE(int32_t, "atom_int", 1, INT32_MIN, INT32_MAX);
  INT_CASE(uint32_t, "atom_uint", 0, 0, UINT32_MAX);
  INT_CASE(int64_t, "atom_long", 1, INT64_MIN, INT64_MAX);
  INT_CASE(uint64_t, "atom_ulong", 0, 0, UINT64_MAX);
  FP_CASE(float, "atom_float");
  FP_CASE(double, "atom_double");
  kc_host_module_destroy(m);
}

/* ---- Math: ULP error against long-double libm, OpenCL 1.2/2.0 full-profile bounds ------ */

enum { MATH_N = 4096, MATH_FNS = 33 };

/* Kernel m_ID_f / m_ID_d per function; bounds from the OpenCL 2.0 full profile (ulp). */
static const struct {
  const char *id;
  double ulp;
} MATH_F[MATH_FNS] = {
    {"sin", 4},   {"cos", 4},       {"tan", 5},     {"exp", 3},  {"exp2", 3},  {"log", 3},
    {"log2", 3},  {"log10", 3},     {"sqrt", 3},    {"pow", 16}, {"atan2", 6}, {"asin", 4},
    {"acos", 4},  {"atan", 5},      {"sinh", 4},    {"cosh", 4}, {"tanh", 5},  {"cbrt", 2},
    {"expm1", 3}, {"log1p", 2},     {"hypot", 4},   {"erf", 16}, {"fma", 0},   {"fmod", 0},
    {"rsqrt", 2}, {"floorceil", 0}, {"fminmax", 0}, {"fabs", 0}, {"erfc", 16}, {"exp10", 3},
    {"asinh", 4}, {"acosh", 4},     {"atanh", 5},
};

static long double ref(int k, long double a, long double p, long double u, long double b) {
  switch (k) {
  case 0:
    return sinl(a);
  case 1:
    return cosl(a);
  case 2:
    return tanl(a);
  case 3:
    return expl(a);
  case 4:
    return exp2l(a);
  case 5:
    return logl(p);
  case 6:
    return log2l(p);
  case 7:
    return log10l(p);
  case 8:
    return sqrtl(p);
  case 9:
    return powl(p, b);
  case 10:
    return atan2l(a, b);
  case 11:
    return asinl(u);
  case 12:
    return acosl(u);
  case 13:
    return atanl(a);
  case 14:
    return sinhl(u);
  case 15:
    return coshl(u);
  case 16:
    return tanhl(a);
  case 17:
    return cbrtl(a);
  case 18:
    return expm1l(u);
  case 19:
    return log1pl(p);
  case 20:
    return hypotl(a, b);
  case 21:
    return erfl(a);
  case 22:
    return fmal(a, b, u);
  case 23:
    return fmodl(a, b);
  case 24:
    return 1.0L / sqrtl(p);
  case 25:
    return floorl(a) + ceill(b);
  case 26:
    return fminl(a, b) - fmaxl(a, b);
  case 27:
    return fabsl(a);
  case 28:
    return erfcl(a);
  case 29:
    return exp10l(u);
  case 30:
    return asinhl(a);
  case 31:
    return acoshl(p);
  default:
    return atanhl(u);
  }
}

/* |got - want| in units of the last place of want at the given precision. A want that rounds
 * to infinity makes an infinity exact; otherwise an infinity counts as the power of two past
 * the largest finite value, so overflowing near it is an ulp or so away, not infinitely many. */
static double ulps(long double got, long double want, int mant_bits, int min_exp) {
  if (isnan(want)) return isnan(got) ? 0 : 1e9;
  if (isinf(want)) return got == want ? 0 : 1e9;
  if (isnan(got)) return 1e9;
  long double overflow = ldexpl(2.0L - ldexpl(1.0L, -mant_bits), 1 - min_exp);
  if (isinf(got) && fabsl(want) >= overflow && !signbit(got) == !signbit(want)) return 0;
  if (isinf(got)) got = copysignl(ldexpl(1.0L, 2 - min_exp), got);
  int e = want == 0 ? min_exp : ilogbl(want);
  if (e < min_exp) e = min_exp;
  return (double)(fabsl(got - want) / ldexpl(1.0L, e - mant_bits + 1));
}

static double frand(unsigned *s, double lo, double hi) {
  *s = *s * 1103515245u + 12345u;
  return lo + (hi - lo) * (double)(*s >> 8) / (double)(1u << 24);
}

/* Runs every m_ID_S kernel over MATH_N inputs and checks each result's ULP error. */
#define MATH_RUN(T, S, MANT, MINEXP)                                                               \
  do {                                                                                             \
    T *in[4], *out = malloc(sizeof(T) * MATH_N);                                                   \
    for (int j = 0; j < 4; j++)                                                                    \
      in[j] = malloc(sizeof(T) * MATH_N);                                                          \
    unsigned seed = 7;                                                                             \
    for (int i = 0; i < MATH_N; i++) {                                                             \
      in[0][i] = (T)frand(&seed, -10, 10), in[1][i] = (T)frand(&seed, 0.01, 100);                  \
      in[2][i] = (T)frand(&seed, -1, 1), in[3][i] = (T)frand(&seed, -3, 3);                        \
    }                                                                                              \
    for (int f = 0; f < MATH_FNS; f++) {                                                           \
      char name[64];                                                                               \
      snprintf(name, sizeof name, "m_%s_%s", MATH_F[f].id, S);                                     \
      const kc_host_kernel_t *k = kernel(m, name);                                                 \
      void *args[5] = {&out, &in[0], &in[1], &in[2], &in[3]};                                      \
      launch1d(k, MATH_N / 64, 64, args, NULL, 2);                                                 \
      double worst = 0;                                                                            \
      for (int i = 0; i < MATH_N; i++) {                                                           \
        long double want = ref(f, in[0][i], in[1][i], in[2][i], in[3][i]);                         \
        if (f == 22) /* fma is correctly rounded: compare with the C library's */                  \
          want = sizeof(T) == 4                                                                    \
                     ? (long double)fmaf((float)in[0][i], (float)in[3][i], (float)in[2][i])        \
                     : (long double)fma(in[0][i], in[3][i], in[2][i]);                             \
        double e = ulps(out[i], want, MANT, MINEXP);                                               \
        if (e > worst) worst = e;                                                                  \
        CHECK(e <= fmax(MATH_F[f].ulp, 0.5), "%s(%g, %g, %g, %g) = %.17g, want %.17Lg: %.2f ulp",  \
              name, (double)in[0][i], (double)in[1][i], (double)in[2][i], (double)in[3][i],        \
              (double)out[i], want, e);                                                            \
      }                                                                                            \
      char *ir = run_ir(m, name);                                                                  \
      printf("%-14s max %.2f ulp (bound %g)%s\n", name, worst, MATH_F[f].ulp,                      \
             strstr(ir, "@_ZGV") ? "  [libmvec]" : "");                                            \
      free(ir);                                                                                    \
    }                                                                                              \
    for (int j = 0; j < 4; j++)                                                                    \
      free(in[j]);                                                                                 \
    free(out);                                                                                     \
  } while (0)

/* Every float function over 2^19 inputs spread over all 2^32 bit patterns (one per block of
 * 8192, at a pseudo-random place in it: all binades, infinities and NaNs, not only round
 * numbers), a second input running the other way. 4096 samples in a few ranges miss errors
 * that only some code paths make (libmvec's AVX-512 exp10f reached 3.76 ulp). */
static void math_scan_float(kc_host_module_t *m) {
  enum { SCAN = 1 << 19 };
  float *x = malloc(sizeof(float) * SCAN), *y = malloc(sizeof(float) * SCAN);
  float *out = malloc(sizeof(float) * SCAN);
  for (uint32_t i = 0; i < SCAN; i++) {
    uint32_t u = i * 8192u + ((i * 2654435761u) >> 19);
    memcpy(&x[i], &u, 4);
  }
  for (uint32_t i = 0; i < SCAN; i++)
    y[i] = x[SCAN - 1 - i];
  for (int f = 0; f < MATH_FNS; f++) {
    char name[64];
    snprintf(name, sizeof name, "m_%s_f", MATH_F[f].id);
    void *args[5] = {&out, &x, &x, &x, &y};
    launch1d(kernel(m, name), SCAN / 256, 256, args, NULL, 2);
    double worst = 0;
    for (uint32_t i = 0; i < SCAN; i++) {
      long double want =
          f == 22 ? (long double)fmaf(x[i], y[i], x[i]) : ref(f, x[i], x[i], x[i], y[i]);
      double e = ulps(out[i], want, 24, -126);
      if (e > worst) worst = e;
      CHECK(e <= fmax(MATH_F[f].ulp, 0.5), "%s(%a, %a) = %a, want %La: %.2f ulp (scan)", name,
            (double)x[i], (double)y[i], (double)out[i], want, e);
    }
    printf("%-14s max %.2f ulp over %d inputs (bound %g)\n", name, worst, SCAN, MATH_F[f].ulp);
  }
  free(x), free(y), free(out);
}

/* KAPI_HOST_CPU may name a CPU with instructions this one lacks. Its modules are still built and
 * linked (an unresolved symbol fails here as anywhere), then refused: check that of every
 * fixture, and skip the test (exit 77, ctest's SKIP_RETURN_CODE) saying where it runs. */
static void skip_unless_runnable(void) {
  static const char *const fixtures[] = {"small.spv", "kernels.spv", "halves.spv"};
  char *why = NULL;
  if (!getenv("KAPI_HOST_CPU")) return; /* the host runs its own code */
  for (size_t i = 0; i < sizeof fixtures / sizeof fixtures[0]; i++) {
    size_t n;
    void *spv = read_file(fixtures[i], &n);
    kc_host_module_t *m = NULL;
    char *log = NULL;
    kc_status_t st = kc_host_finalise(spv, n, &m, &log);
    free(spv);
    /* a refused module is still handed over, for its IR (KAPI_DUMP=host shows it) */
    CHECK(m && kc_host_module_llvm_ir(m), "%s: %s without the module", fixtures[i],
          kc_status_name(st));
    kc_host_module_destroy(m);
    if (st == KC_OK) { /* runnable: a property of the target, the first fixture tells */
      CHECK(!why, "%s runs but an earlier fixture did not: %s", fixtures[i], why);
      free(log);
      return;
    }
    CHECK(st == KC_ERR_TARGET && log && strstr(log, "cannot run here") && !strstr(log, "not found"),
          "%s: %s: %s", fixtures[i], kc_status_name(st), log ? log : "(no log)");
    free(why);
    why = log;
  }
  if (!why) return;
  printf("skipped: %s\n(every fixture was built and linked for it; run this test on such a CPU)\n",
         why);
  free(why);
  exit(77);
}

static void test_math(void) {
  skip_unless_runnable();
  kc_host_module_t *m = finalise("kernels.spv");
  MATH_RUN(float, "f", 24, -126);
  math_scan_float(m);
  MATH_RUN(double, "d", 53, -1022);
  { /* Throughput of one vectorisable function (printed; compare KAPI_HOST_NO_LIBMVEC=1). */
    size_t n = 1 << 18;
    float *x = malloc(n * 4), *y = malloc(n * 4);
    for (size_t i = 0; i < n; i++)
      x[i] = (float)i * 1e-4f;
    void *args[5] = {&y, &x, &x, &x, &x};
    double t = time_on_this_thread(kernel(m, "m_sin_f"), n / 256, 256, args, NULL);
    printf("m_sin_f: %.2f ns per work-item\n", t / (double)n * 1e9);
    free(x), free(y);
  }
  /* With libmvec, the float sin loop must call a vector variant. */
  if (!getenv("KAPI_HOST_NO_LIBMVEC") && dlopen("libmvec.so.1", RTLD_NOW | RTLD_NOLOAD)) {
    char *ir = run_ir(m, "m_sin_f");
    CHECK(strstr(ir, "@_ZGV"), "sin's work-item loop does not use libmvec:\n%s", ir);
    free(ir);
  }
  /* float exp10 is IR of our own (finalise_host_math.c), which the loop vectoriser takes. */
  char *ir10 = run_ir(m, "m_exp10_f");
  CHECK(strstr(ir10, " x double>") && !strstr(ir10, "exp10f"),
        "exp10's work-item loop is not vectorised IR:\n%s", ir10);
  free(ir10);
  /* Vector overloads: scalarised libm calls and vloadn. */
  const kc_host_kernel_t *k = kernel(m, "math_vec");
  float *a = malloc(64 * 16), *o = malloc(64 * 16);
  for (int i = 0; i < 256; i++)
    a[i] = (float)i * 0.37f - 40.0f;
  void *args[2] = {&o, &a};
  launch1d(k, 4, 16, args, NULL, 1);
  for (int i = 0; i < 256; i++)
    CHECK(ulps(o[i], sinl(a[i]), 24, -126) <= 4.5, "sin(float4) lane %d: %g", i, o[i]);
  free(a), free(o);
  kc_host_module_destroy(m);
}

/* ---- Half conversions: bit-exact against a reference that picks the nearest half ---------- */

/* The value of a finite half (its bits). */
static double half_value(uint16_t h) {
  int e = (h >> 10) & 0x1f, fr = h & 0x3ff;
  double v = e ? ldexp(1024 + fr, e - 25) : ldexp(fr, -24);
  return h & 0x8000 ? -v : v;
}

/* x rounded to the nearest half, ties to the even one; 65520 and up overflow (NaN: 0x7e00). The
 * distances to the two neighbours are exact doubles (Sterbenz), so the choice is exact. */
static uint16_t ref_half(double x) {
  if (isnan(x)) return 0x7e00;
  uint16_t s = signbit(x) ? 0x8000 : 0, lo = 0, hi = 0x7bff;
  double a = fabs(x);
  if (a >= 65520.0) return s | 0x7c00;
  while (lo < hi) {
    uint16_t mid = (uint16_t)((lo + hi + 1) / 2);
    if (half_value(mid) <= a)
      lo = mid;
    else
      hi = (uint16_t)(mid - 1);
  }
  if (lo == 0x7bff) return s | lo;
  double below = a - half_value(lo), above = half_value((uint16_t)(lo + 1)) - a;
  return s | (below < above ? lo : above < below ? lo + 1 : lo + (lo & 1));
}

static void check_half(const char *what, double x, uint16_t got) {
  if (isnan(x)) { /* NaN kept: quiet, same sign */
    CHECK((got & 0x7e00) == 0x7e00 && !!(got & 0x8000) == !!signbit(x),
          "%s(%a) = 0x%04x, want a quiet NaN of the same sign", what, x, got);
    return;
  }
  uint16_t want = ref_half(x);
  CHECK(got == want, "%s(%a) = 0x%04x (%a), want 0x%04x (%a)", what, x, got,
        (got & 0x7c00) == 0x7c00 ? x : half_value(got), want,
        (want & 0x7c00) == 0x7c00 ? x : half_value(want));
}

/* Inputs: every half, the midpoints between neighbours and the doubles and floats just beside
 * them, the overflow threshold 65520 and its neighbours, values below the smallest subnormal,
 * infinities, NaNs of both signs, and doubles over all binades. */
static size_t half_inputs(double *d, size_t cap) {
  size_t n = 0;
  for (uint32_t h = 0; h < 0x10000 && n + 7 <= cap; h++) {
    if ((h & 0x7c00) == 0x7c00) continue;
    double v = half_value((uint16_t)h);
    d[n++] = v;
    if ((h & 0x7fff) == 0x7bff) continue;
    double mid = (v + half_value((uint16_t)(h + 1))) / 2; /* exact */
    d[n++] = mid;
    d[n++] = nextafter(mid, -INFINITY), d[n++] = nextafter(mid, INFINITY);
    d[n++] = nextafterf((float)mid, -INFINITY), d[n++] = nextafterf((float)mid, INFINITY);
  }
  static const double special[] = {
      65504.0,        65519.0,        65519.999, 65520.0, 65521.0,  1e6, 1e300,    0x1p-25,
      0x1.000002p-25, 0x1.fffffep-26, 0x1p-26,   1e-300,  4.9e-324, 0.0, INFINITY, NAN,
      0x1.ffep15,     0x1.fffp15};
  for (size_t i = 0; i < sizeof special / sizeof special[0] && n + 2 <= cap; i++)
    d[n++] = special[i], d[n++] = -special[i];
  unsigned seed = 3;
  while (n < cap)
    d[n++] = ldexp(frand(&seed, -1, 1), (int)frand(&seed, -30, 18));
  return n;
}

static void test_halves(void) {
  skip_unless_runnable();
  enum { N = 1 << 19 };
  kc_host_module_t *m = finalise("halves.spv");
  double *d = malloc(N * sizeof *d), *back_d = malloc(N * sizeof *d);
  float *f = malloc(N * sizeof *f), *back_f = malloc(N * sizeof *f);
  uint16_t *from_d = malloc(N * 2), *from_f = malloc(N * 2);
  size_t n = half_inputs(d, N);
  for (size_t i = 0; i < n; i++)
    f[i] = (float)d[i];
  void *args[6] = {&from_d, &from_f, &back_f, &back_d, &d, &f};
  launch1d(kernel(m, "halves"), N / 256, 256, args, NULL, 2);
  for (size_t i = 0; i < n; i++) {
    check_half("(half)double", d[i], from_d[i]);
    check_half("(half)float", f[i], from_f[i]);
    int nan_d = (from_d[i] & 0x7c00) == 0x7c00 && (from_d[i] & 0x3ff);
    int nan_f = (from_f[i] & 0x7c00) == 0x7c00 && (from_f[i] & 0x3ff);
    double inf_d = from_d[i] & 0x8000 ? -INFINITY : INFINITY;
    double inf_f = from_f[i] & 0x8000 ? -INFINITY : INFINITY;
    double want_f = (from_d[i] & 0x7fff) == 0x7c00 ? inf_d : half_value(from_d[i]);
    double want_d = (from_f[i] & 0x7fff) == 0x7c00 ? inf_f : half_value(from_f[i]);
    CHECK(nan_d ? isnan(back_f[i])
                : (double)back_f[i] == want_f && !signbit(back_f[i]) == !signbit(want_f),
          "(float)half 0x%04x = %a", from_d[i], (double)back_f[i]);
    CHECK(nan_f ? isnan(back_d[i]) : back_d[i] == want_d && !signbit(back_d[i]) == !signbit(want_d),
          "(double)half 0x%04x = %a", from_f[i], back_d[i]);
  }
  printf("%zu conversions each way, bit-exact\n", n);
  free(d), free(back_d), free(f), free(back_f), free(from_d), free(from_f);
  kc_host_module_destroy(m);
}

/* Relational, integer, geometric and other builtins: exact results (libm-backed ones within
 * a few ulp) against the C library and C operators on the host. */
static int32_t sat32(int64_t v) {
  return v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : (int32_t)v;
}

static void expect_f(int i, int k, float got, float want, float tol) {
  int ok = (isnan(want) && isnan(got)) || got == want || fabsf(got - want) <= tol * fabsf(want);
  CHECK(ok, "input %d float result %d: %.9g != %.9g", i, k, got, want);
}

static void check_builtins_one(int i, float x, float y, int32_t a, int32_t b, const float *o,
                               const int32_t *io) {
  float ip, want[24];
  int e, k = 0;
  want[k++] = isnan(x) != 0, want[k++] = isinf(x) != 0, want[k++] = isfinite(x) != 0;
  want[k++] = isnormal(x) != 0;
  want[k++] = signbit(x) != 0;
  want[k++] = fminf(x - floorf(x), 0x1.fffffep-1f), want[k++] = floorf(x);
  want[k] = frexpf(x, &e), want[k] += (float)e * 1000.0f, k++;
  want[k] = modff(x, &ip), want[k] += ip * 1000.0f, k++;
  want[k++] = sinf(x) + cosf(x) * 1000.0f;
  want[k++] = ldexpf(x, 3), want[k++] = powf(y, 3.0f), want[k++] = copysignf(x, y);
  want[k++] = fdimf(x, y), want[k++] = fminf(fmaxf(x, -1.0f), 1.0f);
  want[k++] = x > 0 ? 1.0f : x < 0 ? -1.0f : isnan(x) ? 0.0f : x;
  want[k++] = x < y ? 0.0f : 1.0f;
  float t = fminf(fmaxf((x + 2.0f) / 4.0f, 0.0f), 1.0f);
  want[k++] = t * t * (3.0f - 2.0f * t);
  want[k++] = fabsf(x) > fabsf(y) ? x : fabsf(y) > fabsf(x) ? y : fmaxf(x, y);
  want[k++] = truncf(x) + roundf(y) * 1000.0f;
  want[k++] = x * y + y * x + 3.0f + 8.0f;
  want[k++] = a > b ? y : x;
  want[k++] = asinhf(x) + atanhf(y / 8.0f);
  want[k++] = exp10f(y);
  static const float tol[24] = {[5] = 1e-6f,  [9] = 1e-6f,  [11] = 1e-6f, [17] = 1e-6f,
                                [20] = 1e-6f, [22] = 1e-6f, [23] = 1e-6f};
  for (int q = 0; q < 24; q++)
    expect_f(i, q, o[q], want[q], tol[q]);
  uint32_t ua = (uint32_t)a, ub = (uint32_t)b;
  int32_t wi[16] = {(int32_t)(((int64_t)a * b) >> 32),
                    (int32_t)(((uint64_t)ua * ub) >> 32),
                    (int32_t)((ua << (ub & 31)) | (ua >> ((32 - (ub & 31)) & 31))),
                    sat32((int64_t)a + b),
                    sat32((int64_t)a - b),
                    (int32_t)(a > b ? (uint32_t)((int64_t)a - b) : (uint32_t)((int64_t)b - a)),
                    (int32_t)((ua & 0xffff) * (ub & 0xffff) + ua),
                    __builtin_popcount(ua),
                    ua ? __builtin_clz(ua) : 32,
                    ua ? __builtin_ctz(ua) : 32,
                    (int32_t)((uint32_t)(a < b ? a : b) * 3u + (uint32_t)(a > b ? a : b)),
                    (a > b || 0 > b) + 2 * (a >= b),
                    (int32_t)(a < 0 ? 0u - ua : ua),
                    ilogbf(x),
                    isnan(y) + 2 * (isnan(x) || isnan(y)) + 4 * (x < y || x > y),
                    (int32_t)(ua > ub ? ua : ub)};
  for (int q = 0; q < 16; q++)
    CHECK(io[q] == wi[q], "input %d (a=%d b=%d x=%g) int result %d: %d != %d", i, a, b, x, q, io[q],
          wi[q]);
}

static void test_builtins(void) {
  kc_host_module_t *m = finalise("kernels.spv");
  const kc_host_kernel_t *k = kernel(m, "builtins");
  enum { N = 256 };
  float in[2 * N], *out = calloc(N * 24, 4);
  int32_t iin[2 * N], *iout = calloc(N * 16, 4);
  unsigned seed = 11;
  const float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-40f, 2.5f, -2.5f, 0.5f, -7.0f};
  for (int i = 0; i < 2 * N; i++) {
    in[i] = i % 17 < 10 ? special[i % 17] : (float)frand(&seed, -6, 6);
    seed = seed * 1103515245u + 12345u;
    iin[i] = i % 5 == 0 ? (i % 2 ? INT32_MAX - i : INT32_MIN + i) : (int32_t)seed;
  }
  int n = N;
  float *op = out, *inp = in;
  int32_t *iop = iout, *iinp = iin;
  void *args[5] = {&op, &inp, &iop, &iinp, &n};
  launch1d(k, N / 32, 32, args, NULL, 2);
  for (int i = 0; i < N; i++)
    check_builtins_one(i, in[i], in[i + N], iin[i], iin[i + N], out + i * 24, iout + i * 16);
  free(out), free(iout);
  kc_host_module_destroy(m);
}

/* By-value arguments: a struct (SPIR-V byval pointer), char, short and long; sizes reported
 * in kc_host_arg_t must match what the driver copies. */
static void test_byval_args(void) {
  kc_host_module_t *m = finalise("kernels.spv");
  const kc_host_kernel_t *k = kernel(m, "byval");
  struct {
    float scale;
    int32_t shift;
    int64_t big;
  } p = {2.0f, -3, 1LL << 40};
  int8_t c = -5;
  int16_t s = 7;
  int64_t l = 123456789012LL;
  CHECK(k->num_args == 5 && k->args[1].size == sizeof p && k->args[2].size == 1 &&
            k->args[3].size == 2 && k->args[4].size == 8,
        "argument sizes %u %u %u %u", k->args[1].size, k->args[2].size, k->args[3].size,
        k->args[4].size);
  int64_t out[64], *op = out;
  void *args[5] = {&op, &p, &c, &s, &l};
  launch1d(k, 2, 32, args, NULL, 1);
  for (int64_t i = 0; i < 64; i++) {
    int64_t want = (int64_t)(2.0f * (float)i) - 3 + (1LL << 40) - 5000 + 700000 + l;
    CHECK(out[i] == want, "out[%ld] = %ld, want %ld", (long)i, (long)out[i], (long)want);
  }
  kc_host_module_destroy(m);
}

/* Pairwise distance (dpbench's kernel): correctness, and single-thread time (printed) against
 * the same loops compiled by the C compiler. */
static void test_pairwise(void) {
  kc_host_module_t *m = finalise("kernels.spv");
  const kc_host_kernel_t *k = kernel(m, "pairwise");
  long n = 1024, d = 3;
  double *x1 = malloc(sizeof(double) * (size_t)(n * d)),
         *dist = malloc(sizeof(double) * (size_t)(n * n));
  double *ref = malloc(sizeof(double) * (size_t)(n * n));
  unsigned seed = 3;
  for (long i = 0; i < n * d; i++)
    x1[i] = frand(&seed, -1, 1);
  void *args[5] = {&x1, &x1, &dist, &n, &d};
  double tk = time_on_this_thread(k, (uint64_t)n / 64, 64, args, NULL);
  double t0 = now();
  for (long i = 0; i < n; i++)
    for (long j = 0; j < n; j++) {
      double s = 0;
      for (long q = 0; q < d; q++) {
        double t = x1[i * d + q] - x1[j * d + q];
        s += t * t;
      }
      ref[i * n + j] = sqrt(s);
    }
  double tc = now() - t0;
  for (long i = 0; i < n * n; i++)
    CHECK(dist[i] == ref[i], "dist[%ld] %g != %g", i, dist[i], ref[i]);
  printf("pairwise n=%ld d=%ld, 1 thread: kernel %.2f ms, C loops %.2f ms (ratio %.2f)\n", n, d,
         tk * 1e3, tc * 1e3, tc / tk);
  free(x1), free(dist), free(ref);
  kc_host_module_destroy(m);
}

/* kc_host_finalise from several threads at once (each call has its own LLVM context and JIT),
 * then the modules used from other threads than the one that built them. */
static void *finalise_and_saxpy(void *p) {
  kc_host_module_t **out = p;
  *out = finalise("kernels.spv");
  return NULL;
}

static void test_finalise_concurrent(void) {
  pthread_t t[3];
  kc_host_module_t *m[3];
  for (int i = 0; i < 3; i++)
    pthread_create(&t[i], NULL, finalise_and_saxpy, &m[i]);
  for (int i = 0; i < 3; i++)
    pthread_join(t[i], NULL);
  for (int i = 0; i < 3; i++) {
    const kc_host_kernel_t *k = kernel(m[i], "saxpy");
    float y[256], x[256], a = (float)i, *yp = y, *xp = x;
    for (int j = 0; j < 256; j++)
      y[j] = 1.0f, x[j] = (float)j;
    void *args[3] = {&yp, &xp, &a};
    launch1d(k, 4, 64, args, NULL, 2);
    for (int j = 0; j < 256; j++)
      CHECK(y[j] == (float)i * (float)j + 1.0f, "module %d y[%d]", i, j);
  }
  for (int i = 0; i < 3; i++)
    kc_host_module_destroy(m[i]);
}

/* ---- Bad input: a status and a log, never a crash ---------------------------------------- */

static void expect_fail(const void *p, size_t n, kc_status_t want, const char *what,
                        const char *in_log) {
  kc_host_module_t *m = (kc_host_module_t *)1;
  char *log = NULL;
  kc_status_t st = kc_host_finalise(p, n, &m, &log);
  CHECK(st == want, "%s: got %s (%s)", what, kc_status_name(st), log ? log : "");
  CHECK(m == NULL && log && *log, "%s: no log or module set", what);
  CHECK(!in_log || strstr(log, in_log), "%s: log lacks '%s': %s", what, in_log, log);
  printf("%s -> %s: %s\n", what, kc_status_name(st), log);
  free(log);
}

static void test_malformed(void) {
  size_t n;
  unsigned char *spv = read_file("kernels.spv", &n);
  unsigned char *junk = malloc(n);
  unsigned s = 1;
  for (size_t i = 0; i < n; i++)
    s = s * 1103515245u + 12345u, junk[i] = (unsigned char)(s >> 16);
  expect_fail(junk, n, KC_ERR_SPIRV, "random bytes", NULL);
  memcpy(junk, spv, 20); /* a valid header followed by garbage */
  expect_fail(junk, n, KC_ERR_SPIRV, "valid header, random body", NULL);
  expect_fail(spv, n / 2 & ~(size_t)3, KC_ERR_SPIRV, "truncated module", NULL);
  expect_fail(spv, 7, KC_ERR_SPIRV, "7 bytes", NULL);
  expect_fail(spv, 0, KC_ERR_SPIRV, "empty", NULL);
  memcpy(junk, spv, n);
  for (size_t i = 24; i < n; i += 97)
    junk[i] ^= 0x5a; /* scattered bit flips */
  expect_fail(junk, n, KC_ERR_SPIRV, "bit flips", NULL);
  CHECK(kc_host_finalise(NULL, 0, NULL, NULL) == KC_ERR_INVALID_ARGUMENT, "NULL arguments");
  free(junk), free(spv);
}

/* Word index of the first instruction with opcode op (and, if want2 >= 0, word 2 == want2). */
static size_t find_inst(const uint32_t *w, size_t n, uint32_t op, int64_t want2) {
  for (size_t i = 5; i < n && (w[i] >> 16);) {
    if ((w[i] & 0xffff) == op && (want2 < 0 || ((w[i] >> 16) > 2 && w[i + 2] == want2))) return i;
    i += w[i] >> 16;
  }
  CHECK(0, "instruction %u not found in the fixture", op);
  return 0;
}

/* Valid SPIR-V (as SPIRV-Tools sees it) that the translator would abort on: each found by
 * mutation, each must come back as a status (or, for lifetimes, finalise fine). */
static void test_reader_traps(void) {
  size_t n;
  uint32_t *spv = read_file("small.spv", &n), *w = malloc(n);
  size_t nw = n / 4, i;
  memcpy(w, spv, n);
  i = find_inst(w, nw, 71 /* OpDecorate */, 44 /* Alignment */);
  w[i + 3] = 6;
  expect_fail(w, n, KC_ERR_SPIRV, "Alignment 6", "power of two");
  memcpy(w, spv, n);
  i = find_inst(w, nw, 71, 38 /* FuncParamAttr */);
  w[i + 3] = 7; /* NoReadWrite */
  expect_fail(w, n, KC_ERR_SPIRV, "FuncParamAttr NoReadWrite", "decoration");
  memcpy(w, spv, n);
  i = find_inst(w, nw, 71, -1);
  w[i + 1] = w[find_inst(w, nw, 11 /* OpExtInstImport */, -1) + 1];
  expect_fail(w, n, KC_ERR_SPIRV, "decorated OpExtInstImport", "decoration");
  memcpy(w, spv, n);
  i = find_inst(w, nw, 5 /* OpName */, -1); /* found by the NVPTX corruption sweep */
  w[i + 1] = w[find_inst(w, nw, 11 /* OpExtInstImport */, -1) + 1];
  expect_fail(w, n, KC_ERR_SPIRV, "named OpExtInstImport", "name or decoration");
  memcpy(w, spv, n);
  i = find_inst(w, nw, 256 /* OpLifetimeStart */, -1);
  w[i + 2] = 3; /* a size the reader would reject for this pointer type */
  kc_host_module_t *m;
  char *log = NULL;
  CHECK(kc_host_finalise(w, n, &m, &log) == KC_OK, "odd lifetime size: %s", log);
  kc_host_module_destroy(m);
  free(w), free(spv);
}

/* Random one-word mutations of a valid module: a status every time, never an abort. */
static void test_mutations(void) {
  size_t n;
  uint32_t *spv = read_file("small.spv", &n), *w = malloc(n);
  unsigned s = 12345, ok = 0;
  for (int it = 0; it < 120; it++) {
    memcpy(w, spv, n);
    s = s * 1103515245u + 12345u;
    size_t at = 5 + (s >> 8) % (n / 4 - 5);
    s = s * 1103515245u + 12345u;
    w[at] = (s >> 8) % 3 == 0   ? w[at] ^ (1u << (s >> 12) % 32)
            : (s >> 8) % 3 == 1 ? (s >> 4) % 64
                                : w[at] + 1;
    kc_host_module_t *m = NULL;
    char *log = NULL;
    kc_status_t st = kc_host_finalise(w, n, &m, &log);
    CHECK(st == KC_OK || (log && *log), "mutation %d: status %d without a log", it, st);
    if (st == KC_OK) ok++;
    kc_host_module_destroy(m); /* NULL, or a module (refused ones too: compiler.h) */
    free(log);
  }
  printf("120 mutations: %u finalised, %u rejected with a log\n", ok, 120 - ok);
  free(w), free(spv);
}

static void test_unresolved(void) {
  size_t n;
  void *spv = read_file("unresolved.spv", &n);
  expect_fail(spv, n, KC_ERR_TARGET, "unresolved symbol", "kapi_no_such_function");
  free(spv);
}

static void test_unsupported(void) {
  size_t n;
  void *spv = read_file("unsupported.spv", &n);
  expect_fail(spv, n, KC_ERR_UNSUPPORTED, "prefetch", "prefetch");
  free(spv);
}

/* Runs `handshake` (work-item 0 spins until work-item 1 sets a flag) as one group of two; a
 * scheme without forward progress hangs, which the alarm turns into a failure. */
static void run_handshake(kc_host_module_t *m) {
  const kc_host_kernel_t *k = kernel(m, "handshake");
  CHECK(k->spins && !k->uses_barrier, "handshake: spins, no barrier");
  int flag = 0, out[2] = {0, 0}, *fp = &flag, *op = out;
  void *args[2] = {&fp, &op};
  alarm(60);
  launch1d(k, 1, 2, args, NULL, 1);
  alarm(0);
  CHECK(out[0] == 42 && out[1] == 41 && flag == 1, "handshake: %d %d %d", out[0], out[1], flag);
}

/* Which scheme each kernel got (the "kapi-scheme" attribute of its run function): regions for
 * barriers, no fibers on their path, and fibers only for a kernel spinning on an atomic load,
 * which then completes. */
static void test_schemes(void) {
  kc_host_module_t *m = finalise("kernels.spv");
  const char *ir = kc_host_module_llvm_ir(m);
  /* batches: lockstep kernels without per-work-item slots (reverse has a private array) */
  CHECK(kernel(m, "reduce")->batches && kernel(m, "local_batch")->batches, "no batches");
  CHECK(!kernel(m, "reverse")->batches && !kernel(m, "by_group")->batches,
        "batches for a kernel with private arrays or barriers chosen by the group's id");
  CHECK(!kernel(m, "triad")->batches, "batches for a barrier-free kernel");
  CHECK(!strstr(ir, "fiber"), "a kernels.spv kernel runs on fibers");
  const char *regions[] = {"reduce", "reverse"};
  for (int i = 0; i < 2; i++) {
    char *r = run_ir(m, regions[i]);
    CHECK(strstr(r, "__kapi_host_scratch"), "%s: no per-work-item storage", regions[i]);
    free(r);
    CHECK(!kernel(m, regions[i])->spins, "%s spins", regions[i]);
  }
  CHECK(strstr(ir, "\"kapi-scheme\"=\"regions\""), "no region scheme in kernels.spv");
  char *r = run_ir(m, "reduce");
  CHECK(strstr(r, "x float>"), "reduce's region loops are not vectorised:\n%s", r);
  free(r);
  kc_host_module_destroy(m);
  m = finalise("small.spv");
  ir = kc_host_module_llvm_ir(m);
  r = run_ir(m, "handshake");
  CHECK(strstr(r, "__kapi_host_fiber_run"), "handshake does not run on fibers:\n%s", r);
  free(r);
  CHECK(strstr(ir, "__kapi_host_yield"), "handshake's spin loop does not yield");
  r = run_ir(m, "scale");
  CHECK(!strstr(r, "fiber") && !strstr(r, "scratch"), "scale is not a plain work-item loop");
  free(r);
  run_handshake(m);
  kc_host_module_destroy(m);
}

/* Every execution scheme (loop; regions with a __local array and a private array; fibers)
 * under valgrind. */
static void test_valgrind(void) {
  kc_host_module_t *m = finalise("small.spv");
  const kc_host_kernel_t *k = kernel(m, "scale");
  float y[64], a = 2;
  for (int i = 0; i < 64; i++)
    y[i] = (float)i;
  float *yp = y;
  void *args[2] = {&yp, &a};
  launch1d(k, 4, 16, args, NULL, 2);
  for (int i = 0; i < 64; i++)
    CHECK(y[i] == 2.0f * (float)i, "scale %d", i);
  k = kernel(m, "group_sum");
  int in[256], out[4], *ip = in, *op = out;
  for (int i = 0; i < 256; i++)
    in[i] = i;
  void *args2[2] = {&op, &ip};
  launch1d(k, 4, 64, args2, NULL, 2);
  for (int g = 0; g < 4; g++) {
    int want = 0;
    for (int l = 0; l < 64; l++)
      want += in[g * 64 + l] + l % 4;
    CHECK(out[g] == want, "group_sum %d: %d != %d", g, out[g], want);
  }
  run_handshake(m);
  kc_host_module_destroy(m);
}

/* Native binaries: a module loaded from kc_host_module_native's bytes runs as the finalised one
 * (a loop kernel and a fiber kernel); malformed, truncated and foreign binaries are refused. */
static kc_host_module_t *load_native(const void *bin, size_t len, kc_status_t want) {
  kc_host_module_t *m = NULL;
  char *log = NULL;
  kc_status_t st = kc_host_load(bin, len, &m, &log);
  CHECK(st == want, "kc_host_load: %s, wanted %s: %s", kc_status_name(st), kc_status_name(want),
        log ? log : "(no log)");
  CHECK(st == KC_OK || (log && *log && !m), "a refusal has a log and no module");
  free(log);
  return m;
}

static void test_native(void) {
  kc_host_module_t *built = finalise("kernels.spv");
  size_t len = 0;
  const void *bin = kc_host_module_native(built, &len);
  CHECK(bin && len > 64, "finalised module without a native binary");
  kc_host_module_t *m = load_native(bin, len, KC_OK);
  CHECK(kc_host_module_kernel_count(m) == kc_host_module_kernel_count(built), "kernel count");
  CHECK(kc_host_module_llvm_ir(m) == NULL, "a loaded module has no IR");
  size_t len2 = 0;
  const void *bin2 = kc_host_module_native(m, &len2);
  CHECK(len2 == len && !memcmp(bin, bin2, len), "a loaded module gives its binary back");
  const kc_host_kernel_t *k = kernel(m, "saxpy");
  CHECK(!k->uses_barrier && k->num_args == 3 && k->args[2].size == 4, "saxpy signature");
  size_t n = 4096;
  float *y = malloc(n * 4), *x = malloc(n * 4), a = 2.5f;
  for (size_t i = 0; i < n; i++)
    y[i] = (float)i, x[i] = (float)(i % 13);
  void *args[3] = {&y, &x, &a};
  launch1d(k, n / 256, 256, args, NULL, 2);
  for (size_t i = 0; i < n; i++)
    CHECK(y[i] == 2.5f * (float)(i % 13) + (float)i, "y[%zu] = %g", i, y[i]);
  free(y), free(x);
  k = kernel(m, "reduce");
  CHECK(k->uses_barrier && k->args[2].kind == KC_ARG_LOCAL, "reduce: barrier, local argument");
  uint64_t local = 64, groups = 5;
  float *in = malloc(local * groups * 4), *out = calloc(groups, 4);
  for (uint64_t i = 0; i < local * groups; i++)
    in[i] = (float)(i % 7);
  size_t lb[3] = {0, 0, local * 4};
  void *rargs[3] = {&out, &in, NULL};
  launch1d(k, groups, local, rargs, lb, 2);
  for (uint64_t g = 0; g < groups; g++) {
    float want = 0;
    for (uint64_t i = 0; i < local; i++)
      want += (float)((g * local + i) % 7);
    CHECK(out[g] == want, "reduce group %lu: %g != %g", (unsigned long)g, out[g], want);
  }
  free(in), free(out);
  kc_host_module_destroy(m);
  /* Every truncation is refused; so are a changed magic and a changed host description. */
  for (size_t cut = 0; cut < len; cut += cut < 256 ? 1 : 997)
    load_native(bin, cut, KC_ERR_INVALID_ARGUMENT);
  uint8_t *bad = malloc(len);
  memcpy(bad, bin, len);
  bad[0] ^= 0xff;
  load_native(bad, len, KC_ERR_INVALID_ARGUMENT);
  memcpy(bad, bin, len);
  bad[16] ^= 0x20; /* the first byte of the host description (after magic, version, length) */
  load_native(bad, len, KC_ERR_INVALID_ARGUMENT);
  free(bad);
  CHECK(kc_host_load(NULL, 0, &m, NULL) == KC_ERR_INVALID_ARGUMENT, "NULL binary");
  kc_host_module_destroy(built);
}

int main(int argc, char **argv) {
  static const struct {
    const char *name;
    void (*fn)(void);
  } tests[] = {
      {"ids", test_ids},
      {"saxpy_vectorised", test_saxpy_vectorised},
      {"triad", test_triad},
      {"barrier_reduce", test_barrier_reduce},
      {"barrier_reverse", test_barrier_reverse},
      {"local_concurrent", test_local_concurrent},
      {"batches", test_batches},
      {"atomics", test_atomics},
      {"math", test_math},
      {"halves", test_halves},
      {"builtins", test_builtins},
      {"byval_args", test_byval_args},
      {"pairwise", test_pairwise},
      {"finalise_concurrent", test_finalise_concurrent},
      {"malformed", test_malformed},
      {"unresolved", test_unresolved},
      {"unsupported", test_unsupported},
      {"reader_traps", test_reader_traps},
      {"mutations", test_mutations},
      {"schemes", test_schemes},
      {"valgrind", test_valgrind},
      {"native", test_native},
  };
  for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++)
    if (argc == 2 && !strcmp(argv[1], tests[i].name)) {
      tests[i].fn();
      printf("%s: ok\n", argv[1]);
      return 0;
    }
  fprintf(stderr, "usage: %s TEST\n", argv[0]);
  return 2;
}
