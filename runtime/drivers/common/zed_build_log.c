/* Build-log objects (ze_module_build_log_handle_t): the compiler's message for a module, kept
 * after zeModuleCreate returns so the caller can read it with zeModuleBuildLogGetString.
 *
 * Why a log starts like a loader object: with two or more drivers the loader 1.8 wraps every
 * handle in {driver handle, loader table} and unwraps it on each call, but when zeModuleCreate
 * fails it returns before wrapping *phBuildLog. The application then holds our raw log, and
 * the loader, taking it for one of its own, reads a table pointer from its second word and
 * calls through it. So a log holds itself and the driver's ze table in its first two words:
 * the loader then finds our own build-log entry points and passes us the log. Without the
 * loader in the way (one driver) those two words are simply unused. */
#include "zed.h"

#include <stdlib.h>
#include <string.h>

struct zed_build_log {
  struct zed_build_log *self; /* the loader object's "handle" */
  const ze_dditable_t *table; /* the loader object's table: loader 1.8 reads table->ze first */
  zed_object_t obj;
  char *text; /* never NULL once created */
};

/* Build logs are checked here, not with zed_check: their tag is not their first word. */
static ze_result_t check_log(const void *h) {
  if (!h) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  const zed_build_log_t *log = h;
  return log->self == log && log->obj.kind == ZED_KIND_BUILD_LOG ? ZE_RESULT_SUCCESS
                                                                 : ZE_RESULT_ERROR_INVALID_ARGUMENT;
}

zed_build_log_t *zed_build_log_create(char *text) {
  zed_build_log_t *log = calloc(1, sizeof(*log));
  if (!text) text = strdup("");
  if (!log || !text) {
    free(log);
    free(text);
    return NULL;
  }
  log->self = log;
  log->table = zed_driver_tables();
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
  ze_result_t r = check_log(h);
  if (r != ZE_RESULT_SUCCESS) return r;
  zed_build_log_t *log = (zed_build_log_t *)h;
  zed_object_retire(&log->obj);
  log->self = NULL;
  free(log->text);
  free(log);
  return ZE_RESULT_SUCCESS;
}

/* Level Zero's two-call protocol: *size gets the length with the terminator when log is NULL;
 * otherwise up to *size bytes are written, always terminated. */
ze_result_t zed_build_log_get_string(ze_module_build_log_handle_t h, size_t *size, char *out) {
  ze_result_t r = check_log(h);
  if (r != ZE_RESULT_SUCCESS) return r;
  ZED_CHECK_PTR(size);
  const zed_build_log_t *log = (const zed_build_log_t *)h;
  size_t need = strlen(log->text) + 1;
  if (!out) {
    *size = need;
    return ZE_RESULT_SUCCESS;
  }
  if (*size == 0) return ZE_RESULT_ERROR_INVALID_SIZE;
  size_t n = need < *size ? need : *size;
  memcpy(out, log->text, n - 1);
  out[n - 1] = '\0';
  *size = n;
  return ZE_RESULT_SUCCESS;
}
