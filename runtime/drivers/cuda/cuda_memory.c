/* Unified shared memory on CUDA: device memory with cuMemAlloc, host memory pinned with
 * cuMemHostAlloc (device-visible through unified addressing), shared memory managed with
 * cuMemAllocManaged but never more than the card has free (an over-subscribed managed
 * allocation can hang the GPU). Each context records its allocations for property queries.
 */
#include "cuda_driver.h"

#include <stdlib.h>

static cuda_device_t *first_device(void) {
  cuda_driver_t *drv = cuda_driver();
  return drv ? &drv->devices[0] : NULL;
}

static ze_result_t record(cuda_context_t *c, void *p, size_t size, ze_memory_type_t type,
                          cuda_device_t *d) {
  cuda_alloc_t *a = malloc(sizeof *a);
  if (!a) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  a->type = type;
  a->device = d;
  a->size = size;
  if (!zed_range_map_insert(&c->allocs, (uintptr_t)p, size, a)) {
    free(a);
    return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  }
  return ZE_RESULT_SUCCESS;
}

static ze_result_t check_align(size_t align) {
  /* CUDA allocations are 256-byte aligned; larger alignments are not promised. */
  if (align & (align - 1)) return ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT;
  return align > 256 ? ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT : ZE_RESULT_SUCCESS;
}

ze_result_t cuda_mem_alloc_device(ze_context_handle_t ch, const ze_device_mem_alloc_desc_t *desc,
                                  size_t size, size_t align, ze_device_handle_t dh, void **out) {
  ZED_CHECK(ch, ZED_KIND_CONTEXT);
  ZED_CHECK(dh, ZED_KIND_DEVICE);
  ZED_CHECK_PTR(desc);
  ZED_CHECK_PTR(out);
  if (size == 0) return ZE_RESULT_ERROR_UNSUPPORTED_SIZE;
  ze_result_t r = check_align(align);
  cuda_device_t *d = (cuda_device_t *)dh;
  if (r == ZE_RESULT_SUCCESS) r = cuda_use(d);
  if (r != ZE_RESULT_SUCCESS) return r;
  CUdeviceptr p = 0;
  r = cuda_to_ze(cuda.cuMemAlloc(&p, size));
  if (r != ZE_RESULT_SUCCESS) return r;
  r = record((cuda_context_t *)ch, (void *)(uintptr_t)p, size, ZE_MEMORY_TYPE_DEVICE, d);
  if (r != ZE_RESULT_SUCCESS)
    cuda.cuMemFree(p);
  else
    *out = (void *)(uintptr_t)p;
  return r;
}

ze_result_t cuda_mem_alloc_host(ze_context_handle_t ch, const ze_host_mem_alloc_desc_t *desc,
                                size_t size, size_t align, void **out) {
  ZED_CHECK(ch, ZED_KIND_CONTEXT);
  ZED_CHECK_PTR(desc);
  ZED_CHECK_PTR(out);
  if (size == 0) return ZE_RESULT_ERROR_UNSUPPORTED_SIZE;
  cuda_device_t *d = first_device();
  ze_result_t r = check_align(align);
  if (r == ZE_RESULT_SUCCESS) r = d ? cuda_use(d) : ZE_RESULT_ERROR_UNINITIALIZED;
  if (r != ZE_RESULT_SUCCESS) return r;
  void *p = NULL;
  r = cuda_to_ze(
      cuda.cuMemHostAlloc(&p, size, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP));
  if (r == ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY) r = ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  if (r != ZE_RESULT_SUCCESS) return r;
  r = record((cuda_context_t *)ch, p, size, ZE_MEMORY_TYPE_HOST, NULL);
  if (r != ZE_RESULT_SUCCESS)
    cuda.cuMemFreeHost(p);
  else
    *out = p;
  return r;
}

ze_result_t cuda_mem_alloc_shared(ze_context_handle_t ch, const ze_device_mem_alloc_desc_t *dd,
                                  const ze_host_mem_alloc_desc_t *hd, size_t size, size_t align,
                                  ze_device_handle_t dh, void **out) {
  ZED_CHECK(ch, ZED_KIND_CONTEXT);
  ZED_CHECK_PTR(dd);
  ZED_CHECK_PTR(hd);
  ZED_CHECK_PTR(out);
  if (dh) ZED_CHECK(dh, ZED_KIND_DEVICE);
  if (size == 0) return ZE_RESULT_ERROR_UNSUPPORTED_SIZE;
  cuda_device_t *d = dh ? (cuda_device_t *)dh : first_device();
  ze_result_t r = check_align(align);
  if (r == ZE_RESULT_SUCCESS) r = d ? cuda_use(d) : ZE_RESULT_ERROR_UNINITIALIZED;
  if (r != ZE_RESULT_SUCCESS) return r;
  if (!d->managed) return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
  size_t free_b = 0, total_b = 0;
  r = cuda_to_ze(cuda.cuMemGetInfo(&free_b, &total_b));
  if (r != ZE_RESULT_SUCCESS) return r;
  if (size > free_b) return ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;
  CUdeviceptr p = 0;
  r = cuda_to_ze(cuda.cuMemAllocManaged(&p, size, CU_MEM_ATTACH_GLOBAL));
  if (r != ZE_RESULT_SUCCESS) return r;
  r = record((cuda_context_t *)ch, (void *)(uintptr_t)p, size, ZE_MEMORY_TYPE_SHARED, d);
  if (r != ZE_RESULT_SUCCESS)
    cuda.cuMemFree(p);
  else
    *out = (void *)(uintptr_t)p;
  return r;
}

ze_result_t cuda_mem_free(ze_context_handle_t ch, void *p) {
  ZED_CHECK(ch, ZED_KIND_CONTEXT);
  ZED_CHECK_PTR(p);
  zed_range_t range;
  if (!zed_range_map_remove(&((cuda_context_t *)ch)->allocs, (uintptr_t)p, &range))
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  cuda_alloc_t *a = range.value;
  cuda_device_t *d = a->device ? a->device : first_device();
  if (d) cuda_use(d);
  /* A free waits for the GPU to stop using the memory, as zeMemFree requires. */
  CUresult cr = a->type == ZE_MEMORY_TYPE_HOST ? cuda.cuMemFreeHost(p)
                                               : cuda.cuMemFree((CUdeviceptr)(uintptr_t)p);
  free(a);
  return cuda_to_ze(cr);
}

ze_result_t cuda_mem_get_alloc_properties(ze_context_handle_t ch, const void *p,
                                          ze_memory_allocation_properties_t *props,
                                          ze_device_handle_t *dev) {
  ZED_CHECK(ch, ZED_KIND_CONTEXT);
  ZED_CHECK_PTR(props);
  zed_range_t r;
  if (!p || !zed_range_map_find(&((cuda_context_t *)ch)->allocs, (uintptr_t)p, &r)) {
    props->type = ZE_MEMORY_TYPE_UNKNOWN;
    props->id = 0;
    props->pageSize = 0;
    if (dev) *dev = NULL;
    return ZE_RESULT_SUCCESS;
  }
  cuda_alloc_t *a = r.value;
  props->type = a->type;
  props->id = (uint64_t)r.base;
  props->pageSize = 4096;
  if (dev) *dev = (ze_device_handle_t)a->device;
  return ZE_RESULT_SUCCESS;
}

ze_result_t cuda_mem_get_address_range(ze_context_handle_t ch, const void *p, void **base,
                                       size_t *size) {
  ZED_CHECK(ch, ZED_KIND_CONTEXT);
  zed_range_t r;
  if (!p || !zed_range_map_find(&((cuda_context_t *)ch)->allocs, (uintptr_t)p, &r))
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (base) *base = (void *)r.base;
  if (size) *size = r.size;
  return ZE_RESULT_SUCCESS;
}
