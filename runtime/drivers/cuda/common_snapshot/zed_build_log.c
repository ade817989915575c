/* Build-log objects (ze_module_build_log_handle_t): the compiler's message for a module, kept
 * after zeModuleCreate returns so the caller can read it with zeModuleBuildLogGetString. */
#include "zed.h"

#include <stdlib.h>
#include <string.h>

struct zed_build_log {
  zed_object_t obj;
  char *text; /* never NULL once created */
};

zed_build_log_t *zed_build_log_create(char *text) {
  zed_build_log_t *log = calloc(1, sizeof(*log));
  if (!text)
    text = strdup("");
  if (!log || !text) {
    free(log);
    free(text);
    return NULL;
  }
  zed_object_init(&log->obj, ZED_KIND_BUILD_LOG);
  log->text = text;
  return log;
}

void zed_build_log_give(zed_build_log_t *log, ze_module_build_log_handle_t *out) {
  if (out)
    *out = (ze_module_build_log_handle_t)log;
  else if (log)
    zed_build_log_destroy((ze_module_build_log_handle_t)log);
}

ze_result_t zed_build_log_destroy(ze_module_build_log_handle_t h) {
  ZED_CHECK(h, ZED_KIND_BUILD_LOG);
  zed_build_log_t *log = (zed_build_log_t *)h;
  zed_object_retire(&log->obj);
  free(log->text);
  free(log);
  return ZE_RESULT_SUCCESS;
}

/* Level Zero's two-call protocol: *size gets the length with the terminator when log is NULL;
 * otherwise up to *size bytes are written, always terminated. */
ze_result_t zed_build_log_get_string(ze_module_build_log_handle_t h, size_t *size, char *out) {
  ZED_CHECK(h, ZED_KIND_BUILD_LOG);
  ZED_CHECK_PTR(size);
  const zed_build_log_t *log = (const zed_build_log_t *)h;
  size_t need = strlen(log->text) + 1;
  if (!out) {
    *size = need;
    return ZE_RESULT_SUCCESS;
  }
  if (*size == 0)
    return ZE_RESULT_ERROR_INVALID_SIZE;
  size_t n = need < *size ? need : *size;
  memcpy(out, log->text, n - 1);
  out[n - 1] = '\0';
  *size = n;
  return ZE_RESULT_SUCCESS;
}
