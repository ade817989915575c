/* Host time per launch of an empty kernel (one work-item) through the runtime from C, on
 * kapi's CPU driver (or the driver KAPI_BENCH_DRIVER names, e.g. kapi-cuda): synchronous launches
 * (return after completion), and asynchronous ones (appended with an event that is released at
 * once; the queue is drained per batch). Prints the median over batches of the time per call.
 * Target: under 3 microseconds. Usage: launch_c [calls per batch (default 2000)] [batches (default
 * 25)] */
#include "bench_common.h"

static const char *kir_empty = "kir 1\n"
                               "kernel @empty() -> void file \"launch_c.c\" line 1 {\n"
                               "^entry:\n"
                               "  ret\n"
                               "}\n";

typedef enum { SYNC, ASYNC_EVENT } launch_mode_t;

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
  double sync_us = per_call_us(q, k, SYNC, calls, batches);
  double async_us = per_call_us(q, k, ASYNC_EVENT, calls, batches);
  printf("empty-kernel launch through the runtime (C), device '%s' (%s), kernel from %s\n",
         kr_device_info(dev)->name, kr_device_info(dev)->driver_name, source);
  printf("  %d batches of %d calls, median host time per call:\n", batches, calls);
  printf("  synchronous (launch + wait)        %7.2f us\n", sync_us);
  printf("  asynchronous (launch, event freed) %7.2f us\n", async_us);
  printf("  target < 3 us: %s\n", sync_us < 3.0 ? "met" : "not met");
  kr_shutdown();
  return 0;
}
