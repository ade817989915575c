/* Regression test for loader 1.8's intercept mode (two or more drivers): when zeModuleCreate
 * fails, the loader returns our build log unwrapped and then treats it as one of its own
 * objects. The log must still be readable and destroyable through the loader. The driver is
 * listed twice in ZE_ENABLE_ALT_DRIVERS, which is enough to switch the loader to that mode. */
#include "ze_test.h"

#include <string.h>

int main(void) {
  ze_test_env_t env;
  ze_test_open(&env);
  uint32_t n = 0;
  OK(zeDriverGet(&n, NULL));
  EXPECT(n == 2); /* both entries: the loader intercepts */
  uint8_t junk[16] = {1, 2, 3};
  ze_module_desc_t md = {
      ZE_STRUCTURE_TYPE_MODULE_DESC, NULL, ZE_MODULE_FORMAT_NATIVE, sizeof junk, junk, NULL, NULL};
  ze_module_handle_t mod = NULL;
  ze_module_build_log_handle_t log = NULL;
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_NATIVE_BINARY,
            zeModuleCreate(env.context, env.device, &md, &mod, &log));
  size_t size = 0;
  OK(zeModuleBuildLogGetString(log, &size, NULL));
  char text[256] = "";
  size = sizeof text;
  OK(zeModuleBuildLogGetString(log, &size, text));
  EXPECT(strstr(text, "native binary") != NULL);
  OK(zeModuleBuildLogDestroy(log));
  /* Ordinary work through wrapped handles. */
  ze_device_mem_alloc_desc_t dd = {ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, NULL, 0, 0};
  int *p = NULL;
  OK(zeMemAllocDevice(env.context, &dd, 64, 0, env.device, (void **)&p));
  int v = 42;
  OK(zeCommandListAppendMemoryFill(env.list, p, &v, sizeof v, 64, NULL, 0, NULL));
  EXPECT(p && p[15] == 42);
  ze_memory_allocation_properties_t props = {.stype =
                                                 ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES};
  ze_device_handle_t owner = NULL;
  OK(zeMemGetAllocProperties(env.context, p + 3, &props, &owner));
  EXPECT(props.type == ZE_MEMORY_TYPE_DEVICE && owner == env.device);
  OK(zeMemFree(env.context, p));
  ze_test_close(&env);
  return ze_test_result("cpu_intercept_test");
}
