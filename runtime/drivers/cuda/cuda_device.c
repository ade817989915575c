/* zeInit, the driver object and its devices: one Level Zero device per CUDA device, with
 * properties read from cuDeviceGetAttribute. No libcuda.so.1 or no GPU: zero drivers, cleanly.
 */
#include "cuda_driver.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cuda_driver_t the_driver;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

ze_result_t cuda_to_ze(CUresult r) {
  switch (r) {
  case CUDA_SUCCESS:
    return ZE_RESULT_SUCCESS;
  case CUDA_ERROR_OUT_OF_MEMORY:
    return ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;
  case CUDA_ERROR_NOT_READY:
    return ZE_RESULT_NOT_READY;
  case 1:
    return ZE_RESULT_ERROR_INVALID_ARGUMENT; /* CUDA_ERROR_INVALID_VALUE */
  }
  /* 700-799: faults in a kernel (illegal address, trap, misaligned...); the context is gone. */
  if (r >= 700 && r < 800) return ZE_RESULT_ERROR_DEVICE_LOST;
  return ZE_RESULT_ERROR_UNKNOWN;
}

/* cuCtxGetCurrent reads a thread-local; setting only on a change keeps launches from
 * re-binding the context each time while staying right when other code (numba-cuda, CuPy)
 * switches contexts on the same thread. */
ze_result_t cuda_use(cuda_device_t *d) {
  CUcontext cur = NULL;
  if (cuda.cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == d->ctx) return ZE_RESULT_SUCCESS;
  return cuda_to_ze(cuda.cuCtxSetCurrent(d->ctx));
}

static int attr(CUdevice d, int a) {
  int v = 0;
  cuda.cuDeviceGetAttribute(&v, a, d);
  return v;
}

static void fill_properties(cuda_device_t *d) {
  ze_device_properties_t *p = &d->props;
  p->type = ZE_DEVICE_TYPE_GPU;
  p->vendorId = 0x10de;
  p->deviceId = (uint32_t)attr(d->dev, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID);
  p->coreClockRate = (uint32_t)(attr(d->dev, CU_DEVICE_ATTRIBUTE_CLOCK_RATE) / 1000);
  p->maxMemAllocSize = d->total_mem;
  p->maxHardwareContexts = 1;
  p->numThreadsPerEU = 1;
  p->physicalEUSimdWidth = 32;
  p->numEUsPerSubslice =
      (uint32_t)attr(d->dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR) / 32;
  p->numSubslicesPerSlice = (uint32_t)attr(d->dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  p->numSlices = 1;
  p->timerResolution = 1;
  p->timestampValidBits = 64;
  p->kernelTimestampValidBits = 64;
  cuda.cuDeviceGetUuid(p->uuid.id, d->dev);
  cuda.cuDeviceGetName(p->name, ZE_MAX_DEVICE_NAME, d->dev);
  ze_device_compute_properties_t *c = &d->compute;
  c->maxTotalGroupSize = (uint32_t)attr(d->dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  c->maxGroupSizeX = (uint32_t)attr(d->dev, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X);
  c->maxGroupSizeY = (uint32_t)attr(d->dev, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X + 1);
  c->maxGroupSizeZ = (uint32_t)attr(d->dev, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X + 2);
  c->maxGroupCountX = (uint32_t)attr(d->dev, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X);
  c->maxGroupCountY = (uint32_t)attr(d->dev, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X + 1);
  c->maxGroupCountZ = (uint32_t)attr(d->dev, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X + 2);
  d->max_shared_optin = attr(d->dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  c->maxSharedLocalMemory = (uint32_t)d->max_shared_optin;
  c->numSubGroupSizes = 1;
  c->subGroupSizes[0] = 32;
  d->mem_clock_khz = attr(d->dev, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
  d->bus_width = attr(d->dev, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  d->sm_major = attr(d->dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  d->sm_minor = attr(d->dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  d->managed = attr(d->dev, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY);
}

static int open_device(cuda_device_t *d, int ordinal) {
  size_t total = 0;
  if (cuda.cuDeviceGet(&d->dev, ordinal) != CUDA_SUCCESS) return 0;
  if (cuda.cuDevicePrimaryCtxRetain(&d->ctx, d->dev) != CUDA_SUCCESS) return 0;
  cuda.cuDeviceTotalMem(&total, d->dev);
  d->total_mem = total;
  zed_object_init(&d->obj, ZED_KIND_DEVICE);
  fill_properties(d);
  return 1;
}

static void init_devices(void) {
  int n = 0;
  if (!cuda_api_load() || cuda.cuDeviceGetCount(&n) != CUDA_SUCCESS || n <= 0) return;
  the_driver.devices = calloc((size_t)n, sizeof(cuda_device_t));
  if (!the_driver.devices) return;
  for (int i = 0; i < n; ++i) {
    cuda_device_t *d = &the_driver.devices[the_driver.count];
    if (open_device(d, i)) d->index = the_driver.count++;
  }
  pthread_mutex_init(&the_driver.peer_lock, NULL);
  the_driver.peer = calloc((size_t)the_driver.count * the_driver.count, 1);
  if (the_driver.count) zed_object_init(&the_driver.obj, ZED_KIND_DRIVER);
}

cuda_driver_t *cuda_driver(void) {
  return the_driver.count ? &the_driver : NULL;
}

/* Only GPU drivers are asked for by flags that include GPU_ONLY or none; VPU_ONLY excludes us.
 * Success even without devices: zeDriverGet then reports none. */
ze_result_t cuda_init(ze_init_flags_t flags) {
  if (flags && !(flags & ZE_INIT_FLAG_GPU_ONLY)) return ZE_RESULT_SUCCESS;
  pthread_once(&init_once, init_devices);
  return ZE_RESULT_SUCCESS;
}

ze_result_t cuda_driver_get(uint32_t *count, ze_driver_handle_t *drivers) {
  ZED_CHECK_PTR(count);
  uint32_t have = cuda_driver() ? 1 : 0;
  if (zed_list(count, drivers, have) && have) drivers[0] = (ze_driver_handle_t)&the_driver;
  return ZE_RESULT_SUCCESS;
}

ze_result_t cuda_driver_get_api_version(ze_driver_handle_t h, ze_api_version_t *v) {
  ZED_CHECK(h, ZED_KIND_DRIVER);
  ZED_CHECK_PTR(v);
  *v = ZE_API_VERSION_1_4;
  return ZE_RESULT_SUCCESS;
}

ze_result_t cuda_driver_get_properties(ze_driver_handle_t h, ze_driver_properties_t *p) {
  ZED_CHECK(h, ZED_KIND_DRIVER);
  ZED_CHECK_PTR(p);
  memset(&p->uuid, 0, sizeof p->uuid);
  memcpy(p->uuid.id, "kapi-cuda", 9);
  p->driverVersion = 1;
  return ZE_RESULT_SUCCESS;
}

ze_result_t cuda_driver_get_ipc_properties(ze_driver_handle_t h, ze_driver_ipc_properties_t *p) {
  ZED_CHECK(h, ZED_KIND_DRIVER);
  ZED_CHECK_PTR(p);
  p->flags = 0; /* no IPC */
  return ZE_RESULT_SUCCESS;
}

ze_result_t cuda_driver_get_extension_properties(ze_driver_handle_t h, uint32_t *count,
                                                 ze_driver_extension_properties_t *p) {
  ZED_CHECK(h, ZED_KIND_DRIVER);
  ZED_CHECK_PTR(count);
  /* kapi's runtime names its own drivers by this extension ("kapi-cuda"). */
  if (!zed_list(count, p, 1)) return ZE_RESULT_SUCCESS;
  snprintf(p->name, ZE_MAX_EXTENSION_NAME, "kapi_driver_cuda");
  p->version = 1;
  return ZE_RESULT_SUCCESS;
}

ze_result_t cuda_device_get(ze_driver_handle_t h, uint32_t *count, ze_device_handle_t *devices) {
  ZED_CHECK(h, ZED_KIND_DRIVER);
  ZED_CHECK_PTR(count);
  if (!zed_list(count, devices, the_driver.count)) return ZE_RESULT_SUCCESS;
  for (uint32_t i = 0; i < *count; ++i)
    devices[i] = (ze_device_handle_t)&the_driver.devices[i];
  return ZE_RESULT_SUCCESS;
}

ze_result_t cuda_device_get_sub_devices(ze_device_handle_t h, uint32_t *count,
                                        ze_device_handle_t *subs) {
  ZED_CHECK(h, ZED_KIND_DEVICE);
  ZED_CHECK_PTR(count);
  (void)subs;
  *count = 0;
  return ZE_RESULT_SUCCESS;
}

/* Copies the fixed part of a properties struct, keeping the caller's stype and pNext. */
#define COPY_PROPS(dst, src)                                                                       \
  do {                                                                                             \
    void *next_ = (dst)->pNext;                                                                    \
    __typeof__((dst)->stype) stype_ = (dst)->stype;                                                \
    *(dst) = (src);                                                                                \
    (dst)->pNext = next_;                                                                          \
    (dst)->stype = stype_;                                                                         \
  } while (0)

ze_result_t cuda_device_get_properties(ze_device_handle_t h, ze_device_properties_t *p) {
  ZED_CHECK(h, ZED_KIND_DEVICE);
  ZED_CHECK_PTR(p);
  COPY_PROPS(p, ((cuda_device_t *)h)->props);
  return ZE_RESULT_SUCCESS;
}

ze_result_t cuda_device_get_compute_properties(ze_device_handle_t h,
                                               ze_device_compute_properties_t *p) {
  ZED_CHECK(h, ZED_KIND_DEVICE);
  ZED_CHECK_PTR(p);
  COPY_PROPS(p, ((cuda_device_t *)h)->compute);
  return ZE_RESULT_SUCCESS;
}

ze_result_t cuda_device_get_module_properties(ze_device_handle_t h,
                                              ze_device_module_properties_t *p) {
  ZED_CHECK(h, ZED_KIND_DEVICE);
  ZED_CHECK_PTR(p);
  ze_device_fp_flags_t fp = ZE_DEVICE_FP_FLAG_DENORM | ZE_DEVICE_FP_FLAG_INF_NAN |
                            ZE_DEVICE_FP_FLAG_ROUND_TO_NEAREST | ZE_DEVICE_FP_FLAG_ROUND_TO_ZERO |
                            ZE_DEVICE_FP_FLAG_ROUND_TO_INF | ZE_DEVICE_FP_FLAG_FMA;
  zed_module_properties(p,
                        ZE_DEVICE_MODULE_FLAG_FP16 | ZE_DEVICE_MODULE_FLAG_FP64 |
                            ZE_DEVICE_MODULE_FLAG_INT64_ATOMICS,
                        fp, fp | ZE_DEVICE_FP_FLAG_ROUNDED_DIVIDE_SQRT, fp);
  return ZE_RESULT_SUCCESS;
}

ze_result_t cuda_device_get_queue_group_properties(ze_device_handle_t h, uint32_t *count,
                                                   ze_command_queue_group_properties_t *p) {
  ZED_CHECK(h, ZED_KIND_DEVICE);
  return zed_one_queue_group(count, p, 128, 64);
}

ze_result_t cuda_device_get_memory_properties(ze_device_handle_t h, uint32_t *count,
                                              ze_device_memory_properties_t *p) {
  ZED_CHECK(h, ZED_KIND_DEVICE);
  ZED_CHECK_PTR(count);
  cuda_device_t *d = (cuda_device_t *)h;
  if (!zed_list(count, p, 1)) return ZE_RESULT_SUCCESS;
  p->flags = 0;
  p->maxClockRate = (uint32_t)(d->mem_clock_khz / 1000);
  p->maxBusWidth = (uint32_t)d->bus_width;
  p->totalSize = d->total_mem;
  strcpy(p->name, "HBM/GDDR");
  return ZE_RESULT_SUCCESS;
}

ze_result_t cuda_context_create(ze_driver_handle_t h, const ze_context_desc_t *desc,
                                ze_context_handle_t *out) {
  ZED_CHECK(h, ZED_KIND_DRIVER);
  ZED_CHECK_PTR(desc);
  ZED_CHECK_PTR(out);
  cuda_context_t *c = calloc(1, sizeof *c);
  if (!c) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  zed_range_map_init(&c->allocs);
  zed_object_init(&c->obj, ZED_KIND_CONTEXT);
  *out = (ze_context_handle_t)c;
  return ZE_RESULT_SUCCESS;
}

/* Allocations still live when their context goes are freed with it, each in its device's
 * context (host allocations are portable: any context frees them). */
static void free_alloc(const zed_range_t *r, void *arg) {
  (void)arg;
  cuda_alloc_t *a = r->value;
  if (a->device) cuda_use(a->device);
  if (a->type == ZE_MEMORY_TYPE_HOST)
    cuda.cuMemFreeHost((void *)r->base);
  else
    cuda.cuMemFree((CUdeviceptr)r->base);
  free(a);
}

ze_result_t cuda_context_destroy(ze_context_handle_t h) {
  ZED_CHECK(h, ZED_KIND_CONTEXT);
  cuda_context_t *c = (cuda_context_t *)h;
  zed_object_retire(&c->obj);
  if (the_driver.count) cuda_use(&the_driver.devices[0]);
  zed_range_map_drain(&c->allocs, free_alloc, NULL);
  zed_range_map_fini(&c->allocs);
  free(c);
  return ZE_RESULT_SUCCESS;
}

ze_result_t cuda_context_get_status(ze_context_handle_t h) {
  ZED_CHECK(h, ZED_KIND_CONTEXT);
  return ZE_RESULT_SUCCESS;
}
