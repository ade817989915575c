/* Contexts: each owns the registry of its USM allocations (freed with it). Residency and
 * system barriers are no-ops: all memory is the host's and always resident. */
#include "cpu_api.h"
#include "cpu_driver.h"

#include <stdlib.h>

ze_result_t cpu_context_create(ze_driver_handle_t hdrv, const ze_context_desc_t *desc,
                               ze_context_handle_t *out) {
  ZED_CHECK(hdrv, ZED_KIND_DRIVER);
  ZED_CHECK_PTR(desc);
  ZED_CHECK_PTR(out);
  cpu_context_t *ctx = calloc(1, sizeof(*ctx));
  if (!ctx) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  zed_object_init(&ctx->obj, ZED_KIND_CONTEXT);
  ctx->driver = (cpu_driver_t *)hdrv;
  zed_range_map_init(&ctx->allocs);
  *out = (ze_context_handle_t)ctx;
  return ZE_RESULT_SUCCESS;
}

/* The device list can only name our one device. */
ze_result_t cpu_context_create_ex(ze_driver_handle_t hdrv, const ze_context_desc_t *desc,
                                  uint32_t num_devices, ze_device_handle_t *devices,
                                  ze_context_handle_t *out) {
  ZED_CHECK(hdrv, ZED_KIND_DRIVER);
  if (num_devices && !devices) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  for (uint32_t i = 0; i < num_devices; i++)
    ZED_CHECK(devices[i], ZED_KIND_DEVICE);
  return cpu_context_create(hdrv, desc, out);
}

ze_result_t cpu_context_destroy(ze_context_handle_t h) {
  ZED_CHECK(h, ZED_KIND_CONTEXT);
  cpu_context_t *ctx = (cpu_context_t *)h;
  zed_object_retire(&ctx->obj);
  cpu_memory_release_all(ctx);
  zed_range_map_fini(&ctx->allocs);
  free(ctx);
  return ZE_RESULT_SUCCESS;
}

ze_result_t cpu_context_get_status(ze_context_handle_t h) {
  ZED_CHECK(h, ZED_KIND_CONTEXT);
  return ZE_RESULT_SUCCESS;
}

ze_result_t cpu_context_system_barrier(ze_context_handle_t h, ze_device_handle_t dev) {
  ZED_CHECK(h, ZED_KIND_CONTEXT);
  ZED_CHECK(dev, ZED_KIND_DEVICE);
  return ZE_RESULT_SUCCESS;
}

ze_result_t cpu_context_make_memory_resident(ze_context_handle_t h, ze_device_handle_t dev,
                                             void *ptr, size_t size) {
  ZED_CHECK(h, ZED_KIND_CONTEXT);
  ZED_CHECK(dev, ZED_KIND_DEVICE);
  ZED_CHECK_PTR(ptr);
  (void)size;
  return ZE_RESULT_SUCCESS;
}

ze_result_t cpu_context_evict_memory(ze_context_handle_t h, ze_device_handle_t dev, void *ptr,
                                     size_t size) {
  return cpu_context_make_memory_resident(h, dev, ptr, size);
}
