/* The host CPU device's Level Zero properties: what the machine has (cpu_device.c read it at
 * zeInit) and the limits this driver enforces (cpu_driver.h). Each query fills only the
 * fields of its struct, never stype or pNext. */
#include "cpu_api.h"
#include "cpu_driver.h"

#include <stdio.h>
#include <string.h>

#define DEVICE(h) ((cpu_device_t *)(h))

/* Stable per machine model: "kapi-cpu" then the vendor id and a hash of the CPU name. */
static void device_uuid(const cpu_device_t *d, uint8_t *id) {
  uint32_t hash = 2166136261u;
  for (const char *c = d->name; *c; c++)
    hash = (hash ^ (uint8_t)*c) * 16777619u;
  memset(id, 0, ZE_MAX_DEVICE_UUID_SIZE);
  memcpy(id, "kapi-cpu", 8);
  memcpy(id + 8, &d->vendor_id, 4);
  memcpy(id + 12, &hash, 4);
}

ze_result_t cpu_device_get_properties(ze_device_handle_t h, ze_device_properties_t *p) {
  ZED_CHECK(h, ZED_KIND_DEVICE);
  ZED_CHECK_PTR(p);
  const cpu_device_t *d = DEVICE(h);
  p->type = ZE_DEVICE_TYPE_CPU;
  p->vendorId = d->vendor_id;
  p->deviceId = 0;
  p->flags = ZE_DEVICE_PROPERTY_FLAG_INTEGRATED; /* it is the host */
  p->subdeviceId = 0;
  p->coreClockRate = d->clock_mhz;
  p->maxMemAllocSize = d->mem_total;
  p->maxHardwareContexts = 1;
  p->maxCommandQueuePriority = 0;
  p->numThreadsPerEU = 1;
  p->physicalEUSimdWidth = d->simd_width;
  p->numEUsPerSubslice = 1;
  p->numSubslicesPerSlice = d->cores;
  p->numSlices = 1;
  /* Nanoseconds, or ticks per second for the 1.2 flavour of the struct. */
  p->timerResolution = p->stype == ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2 ? 1000000000u : 1u;
  p->timestampValidBits = 64;
  p->kernelTimestampValidBits = 64;
  device_uuid(d, p->uuid.id);
  snprintf(p->name, sizeof p->name, "%s", d->name);
  return ZE_RESULT_SUCCESS;
}

/* One sub-group size, 1: every work-item is its own sub-group on this device. */
ze_result_t cpu_device_get_compute_properties(ze_device_handle_t h,
                                              ze_device_compute_properties_t *p) {
  ZED_CHECK(h, ZED_KIND_DEVICE);
  ZED_CHECK_PTR(p);
  p->maxTotalGroupSize = CPU_MAX_GROUP_SIZE;
  p->maxGroupSizeX = p->maxGroupSizeY = p->maxGroupSizeZ = CPU_MAX_GROUP_SIZE;
  p->maxGroupCountX = p->maxGroupCountY = p->maxGroupCountZ = UINT32_MAX;
  p->maxSharedLocalMemory = CPU_LOCAL_MEM_SIZE;
  p->numSubGroupSizes = 1;
  memset(p->subGroupSizes, 0, sizeof p->subGroupSizes);
  p->subGroupSizes[0] = 1;
  return ZE_RESULT_SUCCESS;
}

/* fp64 is native. fp16 is not claimed: x86 has no half arithmetic short of AVX512-FP16 and the
 * finaliser does not promise half support. */
ze_result_t cpu_device_get_module_properties(ze_device_handle_t h,
                                             ze_device_module_properties_t *p) {
  ZED_CHECK(h, ZED_KIND_DEVICE);
  ZED_CHECK_PTR(p);
  const cpu_device_t *d = DEVICE(h);
  ze_device_fp_flags_t fp = ZE_DEVICE_FP_FLAG_DENORM | ZE_DEVICE_FP_FLAG_INF_NAN |
                            ZE_DEVICE_FP_FLAG_ROUND_TO_NEAREST | ZE_DEVICE_FP_FLAG_ROUND_TO_ZERO |
                            ZE_DEVICE_FP_FLAG_ROUND_TO_INF | ZE_DEVICE_FP_FLAG_ROUNDED_DIVIDE_SQRT;
  if (d->has_fma) fp |= ZE_DEVICE_FP_FLAG_FMA;
  zed_module_properties(p, ZE_DEVICE_MODULE_FLAG_FP64 | ZE_DEVICE_MODULE_FLAG_INT64_ATOMICS, 0, fp,
                        fp);
  return ZE_RESULT_SUCCESS;
}

/* One group of one queue that does compute and copies. */
ze_result_t cpu_device_get_command_queue_group_properties(ze_device_handle_t h, uint32_t *count,
                                                          ze_command_queue_group_properties_t *p) {
  ZED_CHECK(h, ZED_KIND_DEVICE);
  return zed_one_queue_group(count, p, 256, 1);
}

ze_result_t cpu_device_get_memory_properties(ze_device_handle_t h, uint32_t *count,
                                             ze_device_memory_properties_t *p) {
  ZED_CHECK(h, ZED_KIND_DEVICE);
  ZED_CHECK_PTR(count);
  if (!zed_list(count, p, 1)) return ZE_RESULT_SUCCESS;
  p->flags = 0;
  p->maxClockRate = 0; /* not known without privileged DMI access */
  p->maxBusWidth = 0;
  p->totalSize = DEVICE(h)->mem_total;
  snprintf(p->name, sizeof p->name, "host memory");
  return ZE_RESULT_SUCCESS;
}

/* All USM kinds are ordinary host memory: every access works, concurrently and atomically. */
ze_result_t cpu_device_get_memory_access_properties(ze_device_handle_t h,
                                                    ze_device_memory_access_properties_t *p) {
  ZED_CHECK(h, ZED_KIND_DEVICE);
  ZED_CHECK_PTR(p);
  ze_memory_access_cap_flags_t all =
      ZE_MEMORY_ACCESS_CAP_FLAG_RW | ZE_MEMORY_ACCESS_CAP_FLAG_ATOMIC |
      ZE_MEMORY_ACCESS_CAP_FLAG_CONCURRENT | ZE_MEMORY_ACCESS_CAP_FLAG_CONCURRENT_ATOMIC;
  p->hostAllocCapabilities = all;
  p->deviceAllocCapabilities = all;
  p->sharedSingleDeviceAllocCapabilities = all;
  p->sharedCrossDeviceAllocCapabilities = all;
  p->sharedSystemAllocCapabilities = all;
  return ZE_RESULT_SUCCESS;
}

/* The data caches a core sees, L1 first; levels the machine does not report are left out. */
ze_result_t cpu_device_get_cache_properties(ze_device_handle_t h, uint32_t *count,
                                            ze_device_cache_properties_t *p) {
  ZED_CHECK(h, ZED_KIND_DEVICE);
  ZED_CHECK_PTR(count);
  const cpu_device_t *d = DEVICE(h);
  uint32_t known = 0;
  for (int i = 0; i < 3; i++)
    known += d->cache_size[i] != 0;
  if (!zed_list(count, p, known)) return ZE_RESULT_SUCCESS;
  uint32_t n = 0;
  for (int i = 0; i < 3 && n < *count; i++) {
    if (!d->cache_size[i]) continue;
    p[n].flags = 0;
    p[n].cacheSize = d->cache_size[i];
    n++;
  }
  *count = n;
  return ZE_RESULT_SUCCESS;
}

/* No image support: all zero, as the specification asks of such devices. */
ze_result_t cpu_device_get_image_properties(ze_device_handle_t h, ze_device_image_properties_t *p) {
  ZED_CHECK(h, ZED_KIND_DEVICE);
  ZED_CHECK_PTR(p);
  p->maxImageDims1D = p->maxImageDims2D = p->maxImageDims3D = 0;
  p->maxImageBufferSize = 0;
  p->maxImageArraySlices = p->maxSamplers = p->maxReadImageArgs = p->maxWriteImageArgs = 0;
  return ZE_RESULT_SUCCESS;
}

ze_result_t cpu_device_get_external_memory_properties(ze_device_handle_t h,
                                                      ze_device_external_memory_properties_t *p) {
  ZED_CHECK(h, ZED_KIND_DEVICE);
  ZED_CHECK_PTR(p);
  p->memoryAllocationImportTypes = p->memoryAllocationExportTypes = 0;
  p->imageImportTypes = p->imageExportTypes = 0;
  return ZE_RESULT_SUCCESS;
}

/* There is one device, so a peer is itself. */
ze_result_t cpu_device_get_p2p_properties(ze_device_handle_t h, ze_device_handle_t peer,
                                          ze_device_p2p_properties_t *p) {
  ZED_CHECK(h, ZED_KIND_DEVICE);
  ZED_CHECK(peer, ZED_KIND_DEVICE);
  ZED_CHECK_PTR(p);
  p->flags = ZE_DEVICE_P2P_PROPERTY_FLAG_ACCESS | ZE_DEVICE_P2P_PROPERTY_FLAG_ATOMICS;
  return ZE_RESULT_SUCCESS;
}

ze_result_t cpu_device_can_access_peer(ze_device_handle_t h, ze_device_handle_t peer,
                                       ze_bool_t *value) {
  ZED_CHECK(h, ZED_KIND_DEVICE);
  ZED_CHECK(peer, ZED_KIND_DEVICE);
  ZED_CHECK_PTR(value);
  *value = 1;
  return ZE_RESULT_SUCCESS;
}

ze_result_t cpu_device_get_status(ze_device_handle_t h) {
  ZED_CHECK(h, ZED_KIND_DEVICE);
  return ZE_RESULT_SUCCESS;
}

/* Host and device share CLOCK_MONOTONIC, so both timestamps are one reading. */
ze_result_t cpu_device_get_global_timestamps(ze_device_handle_t h, uint64_t *host,
                                             uint64_t *device) {
  ZED_CHECK(h, ZED_KIND_DEVICE);
  ZED_CHECK_PTR(host);
  ZED_CHECK_PTR(device);
  *host = *device = zed_now_ns();
  return ZE_RESULT_SUCCESS;
}
