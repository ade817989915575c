/* STREAM triad a[i] = b[i] + s*c[i] on float32 arrays far larger than the caches: C with
 * OpenMP (-O3 -fopenmp -march=native) against the same kernel compiled by kapi (KIR ->
 * SPIR-V, or the OpenCL C fixture when the compiler cannot yet) run by kapi's CPU driver
 * through the runtime. Runs alternate in one process; prints median GB/s and the ratio.
 * Usage: stream_triad [n_elements (default 2^25)] [repetitions (default 15)]
 * Run it with OMP_WAIT_POLICY=passive (run_cpu.sh does): spinning OpenMP workers would take
 * the cores from the CPU driver's threads during the kapi runs.
 * Environment (for diagnosis): KAPI_TRIAD_MEM=device|shared|host (USM kind, default device),
 * KAPI_TRIAD_WG=<work-group size> (an NdRange launch instead of a Range launch). */
#include "bench_common.h"

#include <omp.h>

static const char *kir_triad =
    "kir 1\n"
    "kernel @triad(%a: array(f32,1,C,global), %b: array(f32,1,C,global), "
    "%c: array(f32,1,C,global), %s: f32) -> void file \"stream_triad.c\" line 1 {\n"
    "^entry:\n"
    "  %0 = global_id i64 0\n"
    "  %1 = aload f32 %b %0\n"
    "  %2 = aload f32 %c %0\n"
    "  %3 = mul f32 %s %2\n"
    "  %4 = add f32 %1 %3\n"
    "  astore %a %4 %0\n"
    "  ret\n"
    "}\n";

static void triad_omp(float *restrict a, const float *restrict b, const float *restrict c, float s,
                      size_t n) {
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; i++)
    a[i] = b[i] + s * c[i];
}

static void init_omp(float *a, float *b, float *c, size_t n) {
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; i++)
    a[i] = 0, b[i] = 1, c[i] = 2;
}

/* The kapi side: kernel, arrays and argument list. */
typedef struct kapi_triad {
  kr_queue_t *q;
  kr_kernel_t *k;
  float *arr[3]; /* a, b, c: the argument values point here */
  int64_t n, one;
  float s;
  uint32_t nargs;
  kr_arg_t args[10];
  const char *source;
  kr_mem_kind_t kind;
  size_t wg; /* 0: Range launch */
} kapi_triad_t;

static int kapi_setup(kapi_triad_t *t, size_t n, kr_error_t *err) {
  kr_device_t *dev = bench_device();
  if (!dev) return 1;
  const char *mem = getenv("KAPI_TRIAD_MEM"), *wg = getenv("KAPI_TRIAD_WG");
  t->kind = !mem || !strcmp(mem, "device") ? KR_MEM_DEVICE
            : !strcmp(mem, "shared")       ? KR_MEM_SHARED
                                           : KR_MEM_HOST;
  t->wg = wg ? strtoull(wg, NULL, 0) : 0;
  char why[512];
  size_t nbytes = 0;
  void *spv = spirv_from_kir(kir_triad, &nbytes, why, sizeof why);
  int from_kir = spv != NULL;
  if (!spv) spv = spirv_from_file(KERNELS_SPV, &nbytes);
  t->source = from_kir ? "KIR via kc_compile" : "OpenCL C fixture (clang-15 + llvm-spirv-15)";
  if (!from_kir) fprintf(stderr, "note: %s; using the fixture\n", why);
  t->k = spv ? kr_kernel_get(dev, spv, nbytes, "triad", err) : NULL;
  free(spv);
  t->q = kr_device_queue(dev, err);
  if (!t->k || !t->q) return fprintf(stderr, "kapi triad: %s\n", err->message), 1;
  float v[3] = {0, 1, 2};
  for (int i = 0; i < 3; i++) {
    t->arr[i] = kr_malloc(dev, t->kind, n * 4, 64, err);
    if (!t->arr[i] || kr_fill(t->q, t->arr[i], &v[i], 4, n * 4, 0, NULL, NULL, err))
      return fprintf(stderr, "kapi arrays: %s\n", err->message), 1;
  }
  t->n = (int64_t)n, t->one = 1, t->s = 3.0f;
  uint32_t k = 0;
  for (int i = 0; i < 3; i++) {
    t->args[k++] = (kr_arg_t){8, &t->arr[i]};
    if (from_kir) {
      t->args[k++] = (kr_arg_t){8, &t->n};
      t->args[k++] = (kr_arg_t){8, &t->one};
    }
  }
  t->args[k++] = (kr_arg_t){4, &t->s};
  t->nargs = k;
  return 0;
}

int main(int argc, char **argv) {
  size_t n = argc > 1 ? strtoull(argv[1], NULL, 0) : (size_t)1 << 25;
  int reps = argc > 2 ? atoi(argv[2]) : 15;
  if (n == 0 || reps < 1) return fprintf(stderr, "usage: stream_triad [n] [reps]\n"), 2;
  float *a = aligned_alloc(64, n * 4), *b = aligned_alloc(64, n * 4), *c = aligned_alloc(64, n * 4);
  if (!a || !b || !c) return fprintf(stderr, "out of memory\n"), 1;
  init_omp(a, b, c, n);
  kr_error_t err;
  kapi_triad_t t;
  memset(&t, 0, sizeof t);
  if (kapi_setup(&t, n, &err)) return 1;
  double bytes = 3.0 * 4.0 * (double)n, *c_gbs = calloc(reps, 8), *k_gbs = calloc(reps, 8);
  for (int r = -1; r < reps; r++) { /* r == -1: warm-up (page faults, JIT) */
    double t0 = now_s();
    triad_omp(a, b, c, 3.0f, n);
    double t1 = now_s();
    if (kr_launch(t.q, t.k, 1, &n, t.wg ? &t.wg : NULL, t.nargs, t.args, 0, NULL, NULL, &err))
      return fprintf(stderr, "kr_launch: %s\n", err.message), 1;
    double t2 = now_s();
    if (r >= 0) c_gbs[r] = bytes / (t1 - t0) / 1e9, k_gbs[r] = bytes / (t2 - t1) / 1e9;
  }
  float check = 0;
  if (kr_memcpy(t.q, &check, t.arr[0] + n - 1, 4, 0, NULL, NULL, &err) || check != 7.0f ||
      a[n - 1] != 7.0f)
    return fprintf(stderr, "wrong result: kapi %g, C %g (want 7)\n", check, a[n - 1]), 1;
  double cm = median(c_gbs, reps), km = median(k_gbs, reps);
  const char *wait = getenv("OMP_WAIT_POLICY");
  printf("stream triad, float32, n = %zu (%.0f MiB per array), %d runs, %d OpenMP threads, "
         "OMP_WAIT_POLICY=%s\n",
         n, n * 4.0 / (1 << 20), reps, omp_get_max_threads(), wait ? wait : "(unset)");
  size_t local[3] = {t.wg, 1, 1};
  if (!t.wg) kr_range_group_size(t.k, 1, &n, local, NULL);
  printf("  kapi kernel from: %s; %s memory; work-group %zu (%s)\n", t.source,
         t.kind == KR_MEM_DEVICE   ? "device"
         : t.kind == KR_MEM_SHARED ? "shared"
                                   : "host",
         local[0], t.wg ? "given" : "Range choice");
  printf("  C/OpenMP (-O3 -march=native)  median %7.2f GB/s\n", cm);
  printf("  kapi on the CPU driver         median %7.2f GB/s\n", km);
  printf("  ratio kapi / C = %.2f\n", km / cm);
  for (int i = 0; i < 3; i++)
    kr_free(t.arr[i], NULL);
  free(a), free(b), free(c), free(c_gbs), free(k_gbs);
  kr_shutdown();
  return 0;
}
