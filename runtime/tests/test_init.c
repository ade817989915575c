/* Driver selection and start-up failure, one scenario per process (the loader is
 * initialised once): ctest runs this with different environments and a mode argument.
 *   no-driver  KAPI_DRIVERS names a missing library: KR_ERR_NO_DEVICE naming it, no devices
 *   ze-env     ZE_ENABLE_ALT_DRIVERS set by the user is kept as it is
 *   kapi-env   KAPI_DRIVERS=cpu,intel: our driver by absolute path beside the library, then
 *              Intel's GPU driver, and ZE_ENABLE_ALT_DRIVERS is set to that list */
#include "check.h"

static void no_driver(void) {
  kr_error_t err;
  memset(&err, 0, sizeof err);
  CHECK(kr_init(&err) == KR_ERR_NO_DEVICE);
  CHECK(err.status == KR_ERR_NO_DEVICE);
  CHECK(strstr(err.message, "/nonexistent/libze_nope.so") != NULL);
  CHECK(strstr(err.message, "KAPI_DRIVERS") != NULL);
  /* The failure is remembered and reported again, with the same message. */
  kr_error_t again;
  CHECK(kr_init(&again) == KR_ERR_NO_DEVICE && !strcmp(again.message, err.message));
  CHECK(kr_device_count() == 0 && kr_device_get(0) == NULL);
  CHECK(kr_free((void *)&err, &again) == KR_ERR_NO_DEVICE);
  kr_shutdown();
}

static void ze_env(void) {
  kr_init(NULL); /* may fail (no such driver); the list is what matters */
  CHECK(!strcmp(kr_driver_list(), "/nonexistent/libze_user_choice.so"));
  CHECK(!strcmp(getenv("ZE_ENABLE_ALT_DRIVERS"), "/nonexistent/libze_user_choice.so"));
}

static void kapi_env(void) {
  kr_init(NULL);
  const char *list = kr_driver_list();
  const char *comma = strchr(list, ',');
  CHECK(list[0] == '/' && comma != NULL);
  CHECK(!strncmp(comma - strlen("/libze_kapi_cpu.so"), "/libze_kapi_cpu.so",
                 strlen("/libze_kapi_cpu.so")));
  CHECK(!strcmp(comma + 1, "libze_intel_gpu.so.1"));
  CHECK(!strcmp(getenv("ZE_ENABLE_ALT_DRIVERS"), list));
}

int main(int argc, char **argv) {
  CHECK(argc == 2);
  if (!strcmp(argv[1], "no-driver"))
    no_driver();
  else if (!strcmp(argv[1], "ze-env"))
    ze_env();
  else if (!strcmp(argv[1], "kapi-env"))
    kapi_env();
  else
    CHECK(!"unknown mode");
  return 0;
}
