/* Names of statuses and Level Zero results, and argument checks that need no driver. */
#include "check.h"

int main(void) {
  CHECK(!strcmp(kr_status_name(KR_OK), "KR_OK"));
  CHECK(!strcmp(kr_status_name(KR_ERR_BUILD), "KR_ERR_BUILD"));
  CHECK(!strcmp(kr_status_name((kr_status_t)999), "KR_ERR_UNKNOWN"));
  CHECK(!strcmp(kr_result_name(0), "ZE_RESULT_SUCCESS"));
  CHECK(!strcmp(kr_result_name(0x70000004), "ZE_RESULT_ERROR_MODULE_BUILD_FAILURE"));
  CHECK(!strcmp(kr_result_name(0x78000011), "ZE_RESULT_ERROR_INVALID_KERNEL_NAME"));
  CHECK(!strcmp(kr_result_name(0x12345), "ZE_RESULT_<0x00012345>"));

  kr_error_t err;
  CHECK_FAILS(kr_launch(NULL, NULL, 1, NULL, NULL, 0, NULL, 0, NULL, NULL, &err),
              KR_ERR_INVALID_ARGUMENT, "NULL queue", &err);
  CHECK_FAILS(kr_memcpy(NULL, NULL, NULL, 4, 0, NULL, NULL, &err), KR_ERR_INVALID_ARGUMENT,
              "NULL queue", &err);
  CHECK(kr_malloc(NULL, KR_MEM_DEVICE, 16, 0, &err) == NULL);
  CHECK(err.status == KR_ERR_INVALID_ARGUMENT && strstr(err.message, "NULL device"));
  CHECK(kr_kernel_get(NULL, "x", 1, "k", &err) == NULL && err.status == KR_ERR_INVALID_ARGUMENT);
  CHECK(kr_event_is_complete(NULL) == -1);
  CHECK(kr_device_info(NULL) == NULL && kr_kernel_info(NULL) == NULL);
  kr_event_release(NULL);
  kr_queue_destroy(NULL);
  kr_module_destroy(NULL);
  /* A NULL error pointer is allowed everywhere. */
  CHECK(kr_kernel_get(NULL, NULL, 0, NULL, NULL) == NULL);
  return 0;
}
