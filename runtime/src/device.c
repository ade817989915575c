/* Device properties: everything kr_device_info_t reports, read once from the driver at
 * start-up, plus the driver's short name and the command queue group used for compute.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *vendor_of(uint32_t id) {
  switch (id) {
  case 0x8086:
    return "Intel";
  case 0x10de:
    return "NVIDIA";
  case 0x1002:
  case 0x1022:
    return "AMD";
  default:
    return NULL;
  }
}

/* kapi's drivers advertise an extension "kapi_driver_<name>"; others are named by vendor. */
void kr_driver_name(kr_driver_t *drv, const ze_device_properties_t *props) {
  uint32_t n = 0;
  if (zeDriverGetExtensionProperties(drv->h, &n, NULL) == ZE_RESULT_SUCCESS && n) {
    ze_driver_extension_properties_t *ext = calloc(n, sizeof *ext);
    if (ext && zeDriverGetExtensionProperties(drv->h, &n, ext) == ZE_RESULT_SUCCESS) {
      for (uint32_t i = 0; i < n; i++) {
        if (!strncmp(ext[i].name, "kapi_driver_", 12)) {
          snprintf(drv->name, sizeof drv->name, "kapi-%s", ext[i].name + 12);
          break;
        }
      }
    }
    free(ext);
  }
  if (drv->name[0]) return;
  /* Fallback for kapi drivers without the extension: a driver UUID starting "kapi-<name>". */
  ze_driver_properties_t dp = {.stype = ZE_STRUCTURE_TYPE_DRIVER_PROPERTIES};
  if (zeDriverGetProperties(drv->h, &dp) == ZE_RESULT_SUCCESS && !memcmp(dp.uuid.id, "kapi-", 5)) {
    size_t n = 0;
    while (n < sizeof dp.uuid.id && n + 1 < sizeof drv->name &&
           ((dp.uuid.id[n] >= 'a' && dp.uuid.id[n] <= 'z') || dp.uuid.id[n] == '-'))
      drv->name[n] = (char)dp.uuid.id[n], n++;
    drv->name[n] = '\0';
    return;
  }
  if (props && props->vendorId == 0x8086 && props->type == ZE_DEVICE_TYPE_GPU)
    snprintf(drv->name, sizeof drv->name, "intel-gpu");
  else
    snprintf(drv->name, sizeof drv->name, "ze-driver-%u", drv->index);
}

static kr_status_t fill_general(kr_device_t *dev, kr_error_t *err) {
  kr_device_info_t *in = &dev->info;
  ze_device_properties_t p = {.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES};
  ze_result_t r = zeDeviceGetProperties(dev->h, &p);
  if (r) return kr_ze_fail(err, r, "zeDeviceGetProperties", NULL, "driver %u", dev->drv->index);
  snprintf(in->name, sizeof in->name, "%s", p.name);
  if (!dev->drv->name[0]) kr_driver_name(dev->drv, &p);
  snprintf(in->driver_name, sizeof in->driver_name, "%s", dev->drv->name);
  in->type = (kr_device_type_t)p.type;
  in->vendor_id = p.vendorId;
  in->device_id = p.deviceId;
  const char *v = vendor_of(p.vendorId);
  if (v)
    snprintf(in->vendor_name, sizeof in->vendor_name, "%s", v);
  else
    snprintf(in->vendor_name, sizeof in->vendor_name, "vendor 0x%04x", p.vendorId);
  in->compute_units = p.numSlices * p.numSubslicesPerSlice * p.numEUsPerSubslice;
  in->threads_per_compute_unit = p.numThreadsPerEU;
  in->core_clock_mhz = p.coreClockRate;
  in->max_alloc_size = p.maxMemAllocSize;
  memcpy(in->uuid, p.uuid.id, sizeof in->uuid);
  ze_driver_properties_t dp = {.stype = ZE_STRUCTURE_TYPE_DRIVER_PROPERTIES};
  if (zeDriverGetProperties(dev->drv->h, &dp) == ZE_RESULT_SUCCESS)
    in->driver_version = dp.driverVersion;
  in->driver_index = dev->drv->index;
  return KR_OK;
}

static kr_status_t fill_compute(kr_device_t *dev, kr_error_t *err) {
  kr_device_info_t *in = &dev->info;
  ze_device_compute_properties_t c = {.stype = ZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES};
  ze_result_t r = zeDeviceGetComputeProperties(dev->h, &c);
  if (r) return kr_ze_fail(err, r, "zeDeviceGetComputeProperties", dev, NULL);
  in->max_work_group_size = c.maxTotalGroupSize;
  in->max_group_size[0] = c.maxGroupSizeX;
  in->max_group_size[1] = c.maxGroupSizeY;
  in->max_group_size[2] = c.maxGroupSizeZ;
  in->max_group_count[0] = c.maxGroupCountX;
  in->max_group_count[1] = c.maxGroupCountY;
  in->max_group_count[2] = c.maxGroupCountZ;
  in->local_mem_size = c.maxSharedLocalMemory;
  in->num_sub_group_sizes = c.numSubGroupSizes > 8 ? 8 : c.numSubGroupSizes;
  memcpy(in->sub_group_sizes, c.subGroupSizes, sizeof in->sub_group_sizes);
  return KR_OK;
}

static kr_status_t fill_module_and_memory(kr_device_t *dev, kr_error_t *err) {
  kr_device_info_t *in = &dev->info;
  ze_device_module_properties_t m = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MODULE_PROPERTIES};
  ze_result_t r = zeDeviceGetModuleProperties(dev->h, &m);
  if (r) return kr_ze_fail(err, r, "zeDeviceGetModuleProperties", dev, NULL);
  in->spirv_version = m.spirvVersionSupported;
  in->fp16 = (m.flags & ZE_DEVICE_MODULE_FLAG_FP16) != 0;
  in->fp64 = (m.flags & ZE_DEVICE_MODULE_FLAG_FP64) != 0;
  uint32_t n = 0;
  r = zeDeviceGetMemoryProperties(dev->h, &n, NULL);
  if (r) return kr_ze_fail(err, r, "zeDeviceGetMemoryProperties", dev, NULL);
  ze_device_memory_properties_t mp[8];
  if (n > 8) n = 8;
  for (uint32_t i = 0; i < n; i++)
    mp[i] = (ze_device_memory_properties_t){.stype = ZE_STRUCTURE_TYPE_DEVICE_MEMORY_PROPERTIES};
  r = zeDeviceGetMemoryProperties(dev->h, &n, mp);
  if (r) return kr_ze_fail(err, r, "zeDeviceGetMemoryProperties", dev, NULL);
  in->global_mem_size = 0;
  for (uint32_t i = 0; i < n; i++)
    in->global_mem_size += mp[i].totalSize;
  return KR_OK;
}

/* The first command queue group that can run kernels; 0 when the driver cannot tell. */
static uint32_t compute_ordinal(kr_device_t *dev) {
  uint32_t n = 0;
  if (zeDeviceGetCommandQueueGroupProperties(dev->h, &n, NULL) || n == 0) return 0;
  ze_command_queue_group_properties_t g[16];
  if (n > 16) n = 16;
  for (uint32_t i = 0; i < n; i++)
    g[i] = (ze_command_queue_group_properties_t){
        .stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES};
  if (zeDeviceGetCommandQueueGroupProperties(dev->h, &n, g)) return 0;
  for (uint32_t i = 0; i < n; i++)
    if (g[i].flags & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE) return i;
  return 0;
}

kr_status_t kr_device_fill(kr_device_t *dev, kr_error_t *err) {
  kr_status_t st = fill_general(dev, err);
  if (!st) st = fill_compute(dev, err);
  if (!st) st = fill_module_and_memory(dev, err);
  dev->compute_ordinal = compute_ordinal(dev);
  return st;
}

int kr_device_can_access_peer(kr_device_t *dev, kr_device_t *peer) {
  if (!dev || !peer) return -1;
  if (dev == peer) return 1;
  if (dev->drv != peer->drv) return 0;
  ze_bool_t can = 0;
  return zeDeviceCanAccessPeer(dev->h, peer->h, &can) == ZE_RESULT_SUCCESS && can;
}

kr_status_t kr_device_ze_handles(const kr_device_t *dev, void **driver, void **device,
                                 void **context, kr_error_t *err) {
  if (!dev) return kr_fail(err, KR_ERR_INVALID_ARGUMENT, "kr_device_ze_handles: NULL device");
  if (driver) *driver = (void *)dev->drv->h;
  if (device) *device = (void *)dev->h;
  if (context) *context = (void *)dev->drv->ctx;
  return KR_OK;
}
