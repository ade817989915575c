/* Check helpers of the CUDA driver's C tests, which speak Level Zero directly: CHECK counts a
 * failure (the test reports them all at the end through `failures`), ZE stops at a failed call. */
#ifndef KAPI_CUDA_TEST_ZE_CHECK_H
#define KAPI_CUDA_TEST_ZE_CHECK_H

#include <level_zero/ze_api.h>
#include <stdio.h>
#include <stdlib.h>

static int failures;
#define CHECK(cond, ...)                                                                           \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      printf("FAIL %s:%d: ", __FILE__, __LINE__);                                                  \
      printf(__VA_ARGS__);                                                                         \
      printf("\n");                                                                                \
      failures++;                                                                                  \
    }                                                                                              \
  } while (0)
#define ZE(call)                                                                                   \
  do {                                                                                             \
    ze_result_t r_ = (call);                                                                       \
    if (r_ != ZE_RESULT_SUCCESS) {                                                                 \
      printf("FAIL %s:%d: %s = 0x%x\n", __FILE__, __LINE__, #call, r_);                            \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

#endif
