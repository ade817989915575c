/* Driver and device listing through the real loader: one driver, one CPU device whose
 * properties match this machine, zeInit twice, limits the driver enforces. */
#define _GNU_SOURCE
#include "ze_test.h"

#include <sched.h>
#include <string.h>

static void test_device(ze_device_handle_t dev) {
  ze_device_properties_t p = {.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES};
  OK(zeDeviceGetProperties(dev, &p));
  EXPECT(p.type == ZE_DEVICE_TYPE_CPU);
  EXPECT(strlen(p.name) > 0);
  cpu_set_t set;
  sched_getaffinity(0, sizeof set, &set);
  EXPECT(p.numSlices * p.numSubslicesPerSlice * p.numEUsPerSubslice == (uint32_t)CPU_COUNT(&set));
  EXPECT(p.maxMemAllocSize > (1u << 20));
  EXPECT(p.physicalEUSimdWidth >= 4);

  ze_device_compute_properties_t c = {.stype = ZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES};
  OK(zeDeviceGetComputeProperties(dev, &c));
  EXPECT(c.maxTotalGroupSize >= 256 && c.maxGroupSizeX == c.maxTotalGroupSize);
  EXPECT(c.maxSharedLocalMemory >= 32 * 1024);

  ze_device_module_properties_t m = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MODULE_PROPERTIES};
  OK(zeDeviceGetModuleProperties(dev, &m));
  EXPECT(m.flags & ZE_DEVICE_MODULE_FLAG_FP64);
  EXPECT(m.spirvVersionSupported >= ZE_MAKE_VERSION(1, 2));

  uint32_t n = 0;
  OK(zeDeviceGetMemoryProperties(dev, &n, NULL));
  EXPECT(n == 1);
  ze_device_memory_properties_t mem = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MEMORY_PROPERTIES};
  OK(zeDeviceGetMemoryProperties(dev, &n, &mem));
  EXPECT(mem.totalSize == p.maxMemAllocSize);

  n = 0;
  OK(zeDeviceGetCacheProperties(dev, &n, NULL));
  EXPECT(n >= 1 && n <= 3);
  ze_device_cache_properties_t caches[3] = {{.stype = ZE_STRUCTURE_TYPE_DEVICE_CACHE_PROPERTIES},
                                            {.stype = ZE_STRUCTURE_TYPE_DEVICE_CACHE_PROPERTIES},
                                            {.stype = ZE_STRUCTURE_TYPE_DEVICE_CACHE_PROPERTIES}};
  OK(zeDeviceGetCacheProperties(dev, &n, caches));
  EXPECT(caches[0].cacheSize >= 4096);

  n = 0;
  OK(zeDeviceGetCommandQueueGroupProperties(dev, &n, NULL));
  EXPECT(n == 1);
  uint32_t subs = 5;
  OK(zeDeviceGetSubDevices(dev, &subs, NULL));
  EXPECT(subs == 0);
  uint64_t host = 0, devts = 0;
  OK(zeDeviceGetGlobalTimestamps(dev, &host, &devts));
  EXPECT(host > 0 && devts > 0);
}

int main(void) {
  ze_test_env_t env;
  ze_test_open(&env);
  OK(zeInit(0)); /* a second zeInit is harmless */
  uint32_t n = 0;
  OK(zeDriverGet(&n, NULL));
  EXPECT(n == 1);
  ze_api_version_t v = 0;
  OK(zeDriverGetApiVersion(env.driver, &v));
  EXPECT(ZE_MAJOR_VERSION(v) == 1);
  ze_driver_properties_t dp = {.stype = ZE_STRUCTURE_TYPE_DRIVER_PROPERTIES};
  OK(zeDriverGetProperties(env.driver, &dp));
  EXPECT(memcmp(dp.uuid.id, "kapi-cpu", 8) == 0);
  n = 0;
  OK(zeDeviceGet(env.driver, &n, NULL));
  EXPECT(n == 1);
  test_device(env.device);
  /* Null handles are refused, never dereferenced. */
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_NULL_HANDLE, zeDeviceGetProperties(NULL, NULL));
  ze_context_desc_t cd = {ZE_STRUCTURE_TYPE_CONTEXT_DESC, NULL, 0};
  ze_context_handle_t ctx;
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_NULL_HANDLE, zeContextCreate(NULL, &cd, &ctx));
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_NULL_POINTER, zeContextCreate(env.driver, &cd, NULL));
  /* A handle of the wrong kind is refused too. */
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_ARGUMENT,
            zeDeviceGetProperties((ze_device_handle_t)env.context, NULL));
  /* Entries the driver leaves out report "unsupported" through the loader. */
  ze_image_desc_t idesc = {.stype = ZE_STRUCTURE_TYPE_IMAGE_DESC};
  ze_image_handle_t img;
  EXPECT_ZE(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE,
            zeImageCreate(env.context, env.device, &idesc, &img));
  ze_test_close(&env);
  return ze_test_result("cpu_listing_test");
}
