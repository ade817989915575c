/* Errors: status and Level Zero result names, and the one place where failures become a
 * kr_error_t message ("<call> on device '<name>' (<driver>): <RESULT>: <what>").
 */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *kr_status_name(kr_status_t s) {
  switch (s) {
  case KR_OK:
    return "KR_OK";
  case KR_ERR_INVALID_ARGUMENT:
    return "KR_ERR_INVALID_ARGUMENT";
  case KR_ERR_NO_DEVICE:
    return "KR_ERR_NO_DEVICE";
  case KR_ERR_LEVEL_ZERO:
    return "KR_ERR_LEVEL_ZERO";
  case KR_ERR_BUILD:
    return "KR_ERR_BUILD";
  case KR_ERR_KERNEL_NOT_FOUND:
    return "KR_ERR_KERNEL_NOT_FOUND";
  case KR_ERR_OUT_OF_MEMORY:
    return "KR_ERR_OUT_OF_MEMORY";
  case KR_ERR_UNSUPPORTED:
    return "KR_ERR_UNSUPPORTED";
  case KR_ERR_DEVICE_LOST:
    return "KR_ERR_DEVICE_LOST";
  }
  return "KR_ERR_UNKNOWN";
}

typedef struct result_entry {
  uint32_t value;
  const char *name;
  const char *what;
} result_entry_t;

#define R(n, v, w)                                                                                 \
  { v, #n, w }
static const result_entry_t results[] = {
    R(ZE_RESULT_SUCCESS, 0x0, "success"),
    R(ZE_RESULT_NOT_READY, 0x1, "not ready yet"),
    R(ZE_RESULT_ERROR_DEVICE_LOST, 0x70000001, "the device was lost (e.g. a kernel faulted)"),
    R(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY, 0x70000002, "out of host memory"),
    R(ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY, 0x70000003, "out of device memory"),
    R(ZE_RESULT_ERROR_MODULE_BUILD_FAILURE, 0x70000004, "the SPIR-V module failed to build"),
    R(ZE_RESULT_ERROR_MODULE_LINK_FAILURE, 0x70000005, "the module failed to link"),
    R(ZE_RESULT_ERROR_DEVICE_REQUIRES_RESET, 0x70000006, "the device requires a reset"),
    R(ZE_RESULT_ERROR_DEVICE_IN_LOW_POWER_STATE, 0x70000007, "the device is in a low power state"),
    R(ZE_RESULT_EXP_ERROR_DEVICE_IS_NOT_VERTEX, 0x7ff00001, "the device is not a vertex"),
    R(ZE_RESULT_EXP_ERROR_VERTEX_IS_NOT_DEVICE, 0x7ff00002, "the vertex is not a device"),
    R(ZE_RESULT_EXP_ERROR_REMOTE_DEVICE, 0x7ff00003, "the device is remote"),
    R(ZE_RESULT_ERROR_INSUFFICIENT_PERMISSIONS, 0x70010000, "insufficient permissions"),
    R(ZE_RESULT_ERROR_NOT_AVAILABLE, 0x70010001, "the resource is not available"),
    R(ZE_RESULT_ERROR_DEPENDENCY_UNAVAILABLE, 0x70020000, "a dependency is unavailable"),
    R(ZE_RESULT_WARNING_DROPPED_DATA, 0x70020001, "data was dropped"),
    R(ZE_RESULT_ERROR_UNINITIALIZED, 0x78000001, "no driver is initialised"),
    R(ZE_RESULT_ERROR_UNSUPPORTED_VERSION, 0x78000002, "unsupported API version"),
    R(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE, 0x78000003, "the driver does not support this"),
    R(ZE_RESULT_ERROR_INVALID_ARGUMENT, 0x78000004, "invalid argument"),
    R(ZE_RESULT_ERROR_INVALID_NULL_HANDLE, 0x78000005, "null handle"),
    R(ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE, 0x78000006, "the object is in use"),
    R(ZE_RESULT_ERROR_INVALID_NULL_POINTER, 0x78000007, "null pointer"),
    R(ZE_RESULT_ERROR_INVALID_SIZE, 0x78000008, "invalid size"),
    R(ZE_RESULT_ERROR_UNSUPPORTED_SIZE, 0x78000009, "unsupported size"),
    R(ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT, 0x7800000a, "unsupported alignment"),
    R(ZE_RESULT_ERROR_INVALID_SYNCHRONIZATION_OBJECT, 0x7800000b, "invalid synchronisation object"),
    R(ZE_RESULT_ERROR_INVALID_ENUMERATION, 0x7800000c, "invalid enumeration"),
    R(ZE_RESULT_ERROR_UNSUPPORTED_ENUMERATION, 0x7800000d, "unsupported enumeration"),
    R(ZE_RESULT_ERROR_UNSUPPORTED_IMAGE_FORMAT, 0x7800000e, "unsupported image format"),
    R(ZE_RESULT_ERROR_INVALID_NATIVE_BINARY, 0x7800000f, "invalid native binary"),
    R(ZE_RESULT_ERROR_INVALID_GLOBAL_NAME, 0x78000010, "no global of that name"),
    R(ZE_RESULT_ERROR_INVALID_KERNEL_NAME, 0x78000011, "no kernel of that name in the module"),
    R(ZE_RESULT_ERROR_INVALID_FUNCTION_NAME, 0x78000012, "no function of that name"),
    R(ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION, 0x78000013, "invalid work-group size"),
    R(ZE_RESULT_ERROR_INVALID_GLOBAL_WIDTH_DIMENSION, 0x78000014, "invalid global size"),
    R(ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX, 0x78000015, "invalid kernel argument index"),
    R(ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE, 0x78000016, "invalid kernel argument size"),
    R(ZE_RESULT_ERROR_INVALID_KERNEL_ATTRIBUTE_VALUE, 0x78000017, "invalid kernel attribute"),
    R(ZE_RESULT_ERROR_INVALID_MODULE_UNLINKED, 0x78000018, "the module is not linked"),
    R(ZE_RESULT_ERROR_INVALID_COMMAND_LIST_TYPE, 0x78000019, "invalid command list type"),
    R(ZE_RESULT_ERROR_OVERLAPPING_REGIONS, 0x7800001a, "the copy regions overlap"),
    R(ZE_RESULT_WARNING_ACTION_REQUIRED, 0x7800001b, "action required"),
    R(ZE_RESULT_ERROR_UNKNOWN, 0x7ffffffe, "unknown error"),
};
#undef R

static const result_entry_t *find_result(int32_t r) {
  for (size_t i = 0; i < sizeof results / sizeof results[0]; i++)
    if (results[i].value == (uint32_t)r) return &results[i];
  return NULL;
}

const char *kr_result_name(int32_t r) {
  static _Thread_local char buf[40];
  const result_entry_t *e = find_result(r);
  if (e) return e->name;
  snprintf(buf, sizeof buf, "ZE_RESULT_<0x%08x>", (unsigned)r);
  return buf;
}

kr_status_t kr_status_of_result(ze_result_t r) {
  switch (r) {
  case ZE_RESULT_SUCCESS:
    return KR_OK;
  case ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY:
  case ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY:
    return KR_ERR_OUT_OF_MEMORY;
  case ZE_RESULT_ERROR_MODULE_BUILD_FAILURE:
  case ZE_RESULT_ERROR_MODULE_LINK_FAILURE:
  case ZE_RESULT_ERROR_INVALID_NATIVE_BINARY:
    return KR_ERR_BUILD;
  case ZE_RESULT_ERROR_INVALID_KERNEL_NAME:
    return KR_ERR_KERNEL_NOT_FOUND;
  case ZE_RESULT_ERROR_UNSUPPORTED_FEATURE:
  case ZE_RESULT_ERROR_UNSUPPORTED_VERSION:
    return KR_ERR_UNSUPPORTED;
  case ZE_RESULT_ERROR_DEVICE_LOST:
  case ZE_RESULT_ERROR_DEVICE_REQUIRES_RESET:
    return KR_ERR_DEVICE_LOST;
  case ZE_RESULT_ERROR_UNINITIALIZED:
    return KR_ERR_NO_DEVICE;
  case ZE_RESULT_ERROR_INVALID_ARGUMENT:
  case ZE_RESULT_ERROR_INVALID_SIZE:
  case ZE_RESULT_ERROR_UNSUPPORTED_SIZE:
  case ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT:
  case ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION:
  case ZE_RESULT_ERROR_INVALID_GLOBAL_WIDTH_DIMENSION:
  case ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX:
  case ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE:
  case ZE_RESULT_ERROR_OVERLAPPING_REGIONS:
    return KR_ERR_INVALID_ARGUMENT;
  default:
    return KR_ERR_LEVEL_ZERO;
  }
}

/* Ends a cut message with "..." so a reader knows there was more. */
static void mark_cut(kr_error_t *err, int n) {
  if (n >= (int)sizeof err->message) memcpy(err->message + sizeof err->message - 4, "...", 4);
}

kr_status_t kr_fail(kr_error_t *err, kr_status_t status, const char *fmt, ...) {
  if (!err) return status;
  err->status = status;
  err->ze_result = 0;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(err->message, sizeof err->message, fmt, ap);
  va_end(ap);
  mark_cut(err, n);
  return status;
}

kr_status_t kr_ze_fail(kr_error_t *err, ze_result_t r, const char *call, const kr_device_t *dev,
                       const char *extra_fmt, ...) {
  kr_status_t status = kr_status_of_result(r);
  if (status == KR_OK) status = KR_ERR_LEVEL_ZERO; /* a call that "failed" with success */
  if (!err) return status;
  err->status = status;
  err->ze_result = (int32_t)r;
  const result_entry_t *e = find_result((int32_t)r);
  int n;
  if (dev)
    n = snprintf(err->message, sizeof err->message, "%s on device '%s' (%s): %s: %s", call,
                 dev->info.name, dev->info.driver_name, kr_result_name((int32_t)r),
                 e ? e->what : "unknown result");
  else
    n = snprintf(err->message, sizeof err->message, "%s: %s: %s", call, kr_result_name((int32_t)r),
                 e ? e->what : "unknown result");
  if (extra_fmt && n >= 0 && (size_t)n + 2 < sizeof err->message) {
    err->message[n++] = ':';
    err->message[n++] = ' ';
    va_list ap;
    va_start(ap, extra_fmt);
    int m = vsnprintf(err->message + n, sizeof err->message - (size_t)n, extra_fmt, ap);
    va_end(ap);
    n += m;
  }
  mark_cut(err, n);
  return status;
}
