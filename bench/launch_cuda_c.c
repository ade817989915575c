/* The peer of launch_c.c on NVIDIA GPUs: the same empty kernel (one thread) launched with the
 * CUDA driver API directly (cuLaunchKernel on a non-blocking stream of the primary context, as
 * kapi's CUDA driver does), the same batches and the same median, so that kapi's figure reads
 * as CUDA's own cost plus kapi's. Synchronous: launch, record an event, wait for it (what kapi's
 * synchronous launch does); asynchronous: launch only, the stream drained per batch.
 * Usage: launch_cuda_c [calls per batch (default 2000)] [batches (default 25)]
 * (KAPI_CUDA_LIBRARY: another libcuda, e.g. the fake of runtime/drivers/cuda/tests). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef int CUresult;
typedef void *CUcontext, *CUmodule, *CUfunction, *CUstream, *CUevent;

static CUresult (*cuInit)(unsigned);
static CUresult (*cuDeviceGet)(int *, int);
static CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, int);
static CUresult (*cuCtxSetCurrent)(CUcontext);
static CUresult (*cuModuleLoadDataEx)(CUmodule *, const void *, unsigned, int *, void **);
static CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
static CUresult (*cuStreamCreate)(CUstream *, unsigned);
static CUresult (*cuStreamSynchronize)(CUstream);
static CUresult (*cuEventCreate)(CUevent *, unsigned);
static CUresult (*cuEventRecord)(CUevent, CUstream);
static CUresult (*cuEventSynchronize)(CUevent);
static CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                  unsigned, unsigned, CUstream, void **, void **);

static const char *ptx = ".version 7.0\n"
                         ".target sm_70\n"
                         ".address_size 64\n"
                         ".visible .entry empty()\n"
                         "{\n"
                         "  ret;\n"
                         "}\n";

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

#define CHECK(call)                                                                                \
  do {                                                                                             \
    CUresult r_ = (call);                                                                          \
    if (r_) {                                                                                      \
      fprintf(stderr, "%s: CUDA error %d\n", #call, r_);                                           \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

static double per_call_us(CUfunction f, CUstream s, CUevent ev, int sync, int calls, int batches) {
  double *us = calloc(batches, sizeof *us);
  for (int b = -1; b < batches; b++) { /* b == -1: warm-up */
    double t0 = now_s();
    for (int i = 0; i < calls; i++) {
      CHECK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
      if (sync) {
        CHECK(cuEventRecord(ev, s));
        CHECK(cuEventSynchronize(ev));
      }
    }
    CHECK(cuStreamSynchronize(s));
    if (b >= 0) us[b] = (now_s() - t0) / calls * 1e6;
  }
  qsort(us, batches, sizeof *us, cmp_double);
  double m = batches % 2 ? us[batches / 2] : 0.5 * (us[batches / 2 - 1] + us[batches / 2]);
  free(us);
  return m;
}

#define SYM(name, sym)                                                                             \
  if (!(*(void **)&name = dlsym(lib, sym))) return fprintf(stderr, "no %s\n", sym), 1

int main(int argc, char **argv) {
  int calls = argc > 1 ? atoi(argv[1]) : 2000, batches = argc > 2 ? atoi(argv[2]) : 25;
  if (calls < 1 || batches < 1)
    return fprintf(stderr, "usage: launch_cuda_c [calls] [batches]\n"), 2;
  const char *name = getenv("KAPI_CUDA_LIBRARY");
  void *lib = dlopen(name && *name ? name : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return fprintf(stderr, "no libcuda: %s\n", dlerror()), 1;
  SYM(cuInit, "cuInit");
  SYM(cuDeviceGet, "cuDeviceGet");
  SYM(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  SYM(cuCtxSetCurrent, "cuCtxSetCurrent");
  SYM(cuModuleLoadDataEx, "cuModuleLoadDataEx");
  SYM(cuModuleGetFunction, "cuModuleGetFunction");
  SYM(cuStreamCreate, "cuStreamCreate");
  SYM(cuStreamSynchronize, "cuStreamSynchronize");
  SYM(cuEventCreate, "cuEventCreate");
  SYM(cuEventRecord, "cuEventRecord");
  SYM(cuEventSynchronize, "cuEventSynchronize");
  SYM(cuLaunchKernel, "cuLaunchKernel");
  int dev;
  CUcontext ctx;
  CUmodule mod;
  CUfunction f;
  CUstream s;
  CUevent ev;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  CHECK(cuModuleLoadDataEx(&mod, ptx, 0, NULL, NULL));
  CHECK(cuModuleGetFunction(&f, mod, "empty"));
  CHECK(cuStreamCreate(&s, 1 /* CU_STREAM_NON_BLOCKING */));
  CHECK(cuEventCreate(&ev, 2 /* CU_EVENT_DISABLE_TIMING */));
  double sync_us = per_call_us(f, s, ev, 1, calls, batches);
  double async_us = per_call_us(f, s, ev, 0, calls, batches);
  printf("empty-kernel launch with the CUDA driver API directly (C)\n");
  printf("  %d batches of %d calls, median host time per call:\n", batches, calls);
  printf("  synchronous (launch, record, wait)  %7.2f us\n", sync_us);
  printf("  asynchronous (launch)               %7.2f us\n", async_us);
  return 0;
}
