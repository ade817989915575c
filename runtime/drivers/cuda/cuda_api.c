/* Resolves the CUDA driver API from libcuda.so.1 at run time: a machine without NVIDIA's
 * driver still loads this Level Zero driver, which then reports no devices.
 */
#include "cuda_api.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

cuda_api_t cuda;
static int loaded;
static char load_error[256] = "not loaded";
static pthread_once_t once = PTHREAD_ONCE_INIT;

#define SYM(field, name)                                                                           \
  do {                                                                                             \
    *(void **)&cuda.field = dlsym(lib, name);                                                      \
    if (!cuda.field) {                                                                             \
      snprintf(load_error, sizeof load_error, "libcuda lacks %s", name);                           \
      return 0;                                                                                    \
    }                                                                                              \
  } while (0)

static int resolve(void *lib) {
  SYM(cuInit, "cuInit");
  SYM(cuDeviceGetCount, "cuDeviceGetCount");
  SYM(cuDeviceGet, "cuDeviceGet");
  SYM(cuDeviceGetName, "cuDeviceGetName");
  SYM(cuDeviceGetAttribute, "cuDeviceGetAttribute");
  SYM(cuDeviceTotalMem, "cuDeviceTotalMem_v2");
  SYM(cuDeviceGetUuid, "cuDeviceGetUuid");
  SYM(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  SYM(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
  SYM(cuCtxSetCurrent, "cuCtxSetCurrent");
  SYM(cuCtxGetCurrent, "cuCtxGetCurrent");
  SYM(cuCtxSynchronize, "cuCtxSynchronize");
  SYM(cuDeviceCanAccessPeer, "cuDeviceCanAccessPeer");
  SYM(cuCtxEnablePeerAccess, "cuCtxEnablePeerAccess");
  SYM(cuMemGetInfo, "cuMemGetInfo_v2");
  SYM(cuMemAlloc, "cuMemAlloc_v2");
  SYM(cuMemFree, "cuMemFree_v2");
  SYM(cuMemHostAlloc, "cuMemHostAlloc");
  SYM(cuMemFreeHost, "cuMemFreeHost");
  SYM(cuMemAllocManaged, "cuMemAllocManaged");
  SYM(cuMemcpyAsync, "cuMemcpyAsync");
  SYM(cuMemcpyPeerAsync, "cuMemcpyPeerAsync");
  SYM(cuMemsetD8Async, "cuMemsetD8Async");
  SYM(cuMemsetD16Async, "cuMemsetD16Async");
  SYM(cuMemsetD32Async, "cuMemsetD32Async");
  SYM(cuStreamCreate, "cuStreamCreate");
  SYM(cuStreamDestroy, "cuStreamDestroy_v2");
  SYM(cuStreamSynchronize, "cuStreamSynchronize");
  SYM(cuStreamQuery, "cuStreamQuery");
  SYM(cuStreamWaitEvent, "cuStreamWaitEvent");
  SYM(cuEventCreate, "cuEventCreate");
  SYM(cuEventDestroy, "cuEventDestroy_v2");
  SYM(cuEventRecord, "cuEventRecord");
  SYM(cuEventSynchronize, "cuEventSynchronize");
  SYM(cuEventQuery, "cuEventQuery");
  SYM(cuEventElapsedTime, "cuEventElapsedTime");
  SYM(cuModuleLoadDataEx, "cuModuleLoadDataEx");
  SYM(cuModuleUnload, "cuModuleUnload");
  SYM(cuModuleGetFunction, "cuModuleGetFunction");
  SYM(cuFuncSetAttribute, "cuFuncSetAttribute");
  SYM(cuLaunchKernel, "cuLaunchKernel");
  SYM(cuGetErrorName, "cuGetErrorName");
  *(void **)&cuda.cuFuncGetAttribute = dlsym(lib, "cuFuncGetAttribute");
  /* The linker only makes cubins for native binaries: without it they hold PTX alone. */
  *(void **)&cuda.cuLinkCreate = dlsym(lib, "cuLinkCreate_v2");
  *(void **)&cuda.cuLinkAddData = dlsym(lib, "cuLinkAddData_v2");
  *(void **)&cuda.cuLinkComplete = dlsym(lib, "cuLinkComplete");
  *(void **)&cuda.cuLinkDestroy = dlsym(lib, "cuLinkDestroy");
  return 1;
}

static void load_once(void) {
  const char *name = getenv("KAPI_CUDA_LIBRARY");
  void *lib = dlopen(name && *name ? name : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    snprintf(load_error, sizeof load_error, "cannot open libcuda.so.1: %s", dlerror());
    return;
  }
  if (!resolve(lib)) return; /* the library stays open: dlclose could run its destructors */
  CUresult r = cuda.cuInit(0);
  if (r != CUDA_SUCCESS) {
    snprintf(load_error, sizeof load_error, "cuInit failed: %s", cuda_result_name(r));
    return;
  }
  loaded = 1;
  load_error[0] = 0;
}

int cuda_api_load(void) {
  pthread_once(&once, load_once);
  return loaded;
}

const char *cuda_api_error(void) {
  return load_error;
}

const char *cuda_result_name(CUresult r) {
  const char *s = NULL;
  if (cuda.cuGetErrorName && cuda.cuGetErrorName(r, &s) == CUDA_SUCCESS && s) return s;
  return "CUDA_ERROR_UNKNOWN";
}
