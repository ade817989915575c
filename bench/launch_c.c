/* Host time per launch of an empty kernel (one work-item) through the runtime from C, on
 * kapi's CPU driver (or the driver KAPI_BENCH_DRIVER names, e.g. kapi-cuda): synchronous launches
 * (return after completion), and asynchronous ones (appended with an event that is released at
 * once; the queue is drained per batch). Prints the median over batches of the time per call.
 * Target: under 3 microseconds. Usage: launch_c [calls per batch (default 2000)] [batches (default
 * 25)]
 *
 * Without a GPU, the CUDA driver runs on the fake libcuda of its tests (kernels on, calls that
 * cost nothing): the time is then kapi's own host cost per launch, and the CUDA calls per launch
 * are counted too:
 *   KAPI_BENCH_DRIVER=kapi-cuda
 * KAPI_CUDA_LIBRARY=build/runtime/drivers/cuda/tests/libkapi_fake_cuda.so KAPI_FAKE_CUDA_DEVICES=1
 * KAPI_FAKE_CUDA_KERNELS=1 [KAPI_FAKE_CUDA_KERNEL_NS=2000] launch_c (KAPI_FAKE_CUDA_KERNEL_NS:
 * device time per kernel, so that the stream is busy as a GPU's is). */
#include "bench_common.h"

static const char *kir_empty = "kir 1\n"
                               "kernel @empty() -> void file \"launch_c.c\" line 1 {\n"
                               "^entry:\n"
                               "  ret\n"
                               "}\n";

typedef enum { SYNC, ASYNC_EVENT } launch_mode_t;

/* The fake libcuda's call counter, when the CUDA driver runs on it (else NULL). */
typedef long (*fake_calls_fn)(const char *);
static fake_calls_fn fake_calls(void) {
  const char *lib = getenv("KAPI_CUDA_LIBRARY");
  void *h = lib && *lib ? dlopen(lib, RTLD_NOW | RTLD_NOLOAD) : NULL;
  return h ? (fake_calls_fn)dlsym(h, "fake_cuda_calls") : NULL;
}

static const char *const fake_kinds[] = {
    "launch",       "event_record", "event_create", "event_query", "event_sync",
    "stream_query", "stream_sync",  "stream_wait",  "ctx_get",     "ctx_set"};
#define N_FAKE_KINDS (sizeof fake_kinds / sizeof *fake_kinds)

static void fake_snapshot(fake_calls_fn f, long *out) {
  for (size_t i = 0; f && i < N_FAKE_KINDS; i++)
    out[i] = f(fake_kinds[i]);
}

/* Median microseconds per call over `batches` batches of `calls` launches. */
static double per_call_us(kr_queue_t *q, kr_kernel_t *k, launch_mode_t mode, int calls,
                          int batches) {
  kr_error_t err;
  size_t one = 1;
  double *us = calloc(batches, sizeof *us);
  for (int b = -1; b < batches; b++) { /* b == -1: warm-up */
    double t0 = now_s();
    for (int i = 0; i < calls; i++) {
      kr_event_t *ev = NULL;
      if (kr_launch(q, k, 1, &one, NULL, 0, NULL, 0, NULL, mode == SYNC ? NULL : &ev, &err)) {
        fprintf(stderr, "kr_launch: %s\n", err.message);
        exit(1);
      }
      kr_event_release(ev);
    }
    if (kr_queue_synchronize(q, &err)) {
      fprintf(stderr, "kr_queue_synchronize: %s\n", err.message);
      exit(1);
    }
    if (b >= 0) us[b] = (now_s() - t0) / calls * 1e6;
  }
  double m = median(us, batches);
  free(us);
  return m;
}

int main(int argc, char **argv) {
  int calls = argc > 1 ? atoi(argv[1]) : 2000, batches = argc > 2 ? atoi(argv[2]) : 25;
  if (calls < 1 || batches < 1) return fprintf(stderr, "usage: launch_c [calls] [batches]\n"), 2;
  kr_device_t *dev = bench_device();
  if (!dev) return 1;
  char why[512];
  size_t n = 0;
  void *spv = spirv_from_kir(kir_empty, &n, why, sizeof why);
  const char *source = spv ? "KIR via kc_compile" : "OpenCL C fixture";
  if (!spv) {
    fprintf(stderr, "note: %s; using the fixture\n", why);
    spv = spirv_from_file(KERNELS_SPV, &n);
  }
  kr_error_t err;
  kr_kernel_t *k = spv ? kr_kernel_get(dev, spv, n, "empty", &err) : NULL;
  kr_queue_t *q = kr_device_queue(dev, &err);
  free(spv);
  if (!k || !q) return fprintf(stderr, "empty kernel: %s\n", err.message), 1;
  fake_calls_fn fake = fake_calls();
  long c0[N_FAKE_KINDS], c1[N_FAKE_KINDS], c2[N_FAKE_KINDS];
  fake_snapshot(fake, c0);
  double sync_us = per_call_us(q, k, SYNC, calls, batches);
  fake_snapshot(fake, c1);
  double async_us = per_call_us(q, k, ASYNC_EVENT, calls, batches);
  fake_snapshot(fake, c2);
  printf("empty-kernel launch through the runtime (C), device '%s' (%s), kernel from %s\n",
         kr_device_info(dev)->name, kr_device_info(dev)->driver_name, source);
  printf("  %d batches of %d calls, median host time per call:\n", batches, calls);
  printf("  synchronous (launch + wait)        %7.2f us\n", sync_us);
  printf("  asynchronous (launch, event freed) %7.2f us\n", async_us);
  printf("  target < 3 us: %s\n", sync_us < 3.0 ? "met" : "not met");
  if (fake) {
    double per = (double)calls * (batches + 1);
    printf("  fake libcuda, CUDA calls per launch (sync / async):\n");
    for (size_t i = 0; i < N_FAKE_KINDS; i++)
      printf("    %-13s %6.3f / %6.3f\n", fake_kinds[i], (c1[i] - c0[i]) / per,
             (c2[i] - c1[i]) / per);
  }
  kr_shutdown();
  return 0;
}
