/* Helpers for the CPU driver's tests: load the driver through the real Level Zero loader
 * (ZE_ENABLE_ALT_DRIVERS set before zeInit) and check results without aborting. */
#ifndef KAPI_CPU_ZE_TEST_H
#define KAPI_CPU_ZE_TEST_H

#include <level_zero/ze_api.h>
#include <stdio.h>
#include <stdlib.h>

static int ze_test_failures;

#define EXPECT(cond)                                                                               \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond);                          \
      ze_test_failures++;                                                                          \
    }                                                                                              \
  } while (0)

#define EXPECT_ZE(expected, call)                                                                  \
  do {                                                                                             \
    ze_result_t r_ = (call);                                                                       \
    if (r_ != (expected)) {                                                                        \
      fprintf(stderr, "%s:%d: %s gave 0x%x, expected 0x%x\n", __FILE__, __LINE__, #call,           \
              (unsigned)r_, (unsigned)(expected));                                                 \
      ze_test_failures++;                                                                          \
    }                                                                                              \
  } while (0)

#define OK(call) EXPECT_ZE(ZE_RESULT_SUCCESS, call)

typedef struct ze_test_env {
  ze_driver_handle_t driver;
  ze_device_handle_t device;
  ze_context_handle_t context;
  ze_command_list_handle_t list; /* immediate */
} ze_test_env_t;

/* Loads our driver (and only it) and opens a context and an immediate list; exits the test
 * with a message if the driver cannot be found. */
static inline void ze_test_open(ze_test_env_t *env) {
  setenv("ZE_ENABLE_ALT_DRIVERS", KAPI_CPU_DRIVER_PATH, 1);
  if (zeInit(0) != ZE_RESULT_SUCCESS) {
    fprintf(stderr, "zeInit failed with driver %s\n", KAPI_CPU_DRIVER_PATH);
    exit(1);
  }
  uint32_t n = 1;
  if (zeDriverGet(&n, &env->driver) != ZE_RESULT_SUCCESS || n != 1) {
    fprintf(stderr, "no driver\n");
    exit(1);
  }
  n = 1;
  OK(zeDeviceGet(env->driver, &n, &env->device));
  ze_context_desc_t cd = {ZE_STRUCTURE_TYPE_CONTEXT_DESC, NULL, 0};
  OK(zeContextCreate(env->driver, &cd, &env->context));
  ze_command_queue_desc_t qd = {
      ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, NULL, 0, 0, 0, ZE_COMMAND_QUEUE_MODE_DEFAULT,
      ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
  OK(zeCommandListCreateImmediate(env->context, env->device, &qd, &env->list));
}

static inline void ze_test_close(ze_test_env_t *env) {
  OK(zeCommandListDestroy(env->list));
  OK(zeContextDestroy(env->context));
}

static inline int ze_test_result(const char *name) {
  if (ze_test_failures)
    fprintf(stderr, "%s: %d failure(s)\n", name, ze_test_failures);
  else
    printf("%s: ok\n", name);
  return ze_test_failures ? 1 : 0;
}

#endif
