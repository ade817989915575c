/* Tiny assertion helpers for the runtime's C tests: a failed check prints file:line, the
 * expression and the runtime's last error message, then the test exits with status 1. */
#ifndef KAPI_RUNTIME_TEST_CHECK_H
#define KAPI_RUNTIME_TEST_CHECK_H

#include "kapi/runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ctest treats this exit status as "skipped" (SKIP_RETURN_CODE). */
#define TEST_SKIP 77

#define CHECK(cond)                                                                                \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);                     \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

/* A runtime call that must succeed; on failure prints its kr_error_t. */
#define CHECK_OK(call, err)                                                                        \
  do {                                                                                             \
    kr_status_t st_ = (call);                                                                      \
    if (st_ != KR_OK) {                                                                            \
      fprintf(stderr, "%s:%d: %s failed: %s: %s\n", __FILE__, __LINE__, #call,                     \
              kr_status_name(st_), (err)->message);                                                \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

/* A runtime call that must fail with `want` and a message containing `text`. */
#define CHECK_FAILS(call, want, text, err)                                                         \
  do {                                                                                             \
    memset((err), 0, sizeof *(err));                                                               \
    kr_status_t st_ = (call);                                                                      \
    if (st_ != (want) || (err)->status != (want) || !strstr((err)->message, (text))) {             \
      fprintf(stderr, "%s:%d: %s: expected %s with '%s', got %s: '%s'\n", __FILE__, __LINE__,      \
              #call, kr_status_name(want), (text), kr_status_name(st_), (err)->message);           \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

#endif /* KAPI_RUNTIME_TEST_CHECK_H */
