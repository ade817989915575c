/* Modules: SPIR-V in, host code out, through the compiler's host finaliser
 * (kc_host_finalise: validate, read back, link the builtins, optimise, ORC JIT). Whatever
 * goes wrong comes back as a Level Zero status with the reason in a build log; a module that
 * builds gets an empty log. A module's native binary (zeModuleGetNativeBinary) is the host
 * finaliser's: its kernel table and x86-64 object code for this CPU; zeModuleCreate with
 * ZE_MODULE_FORMAT_NATIVE links one without compiling (kapi's disk cache keeps them). */
#include "cpu_api.h"
#include "cpu_driver.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MODULE(h) ((cpu_module_t *)(h))

static char *format_log(const char *what) {
  char *s = strdup(what);
  return s;
}

static ze_result_t status_to_result(kc_status_t s) {
  switch (s) {
  case KC_OK:
    return ZE_RESULT_SUCCESS;
  case KC_ERR_OUT_OF_MEMORY:
    return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  default:
    return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
  }
}

/* KAPI_DUMP=host (or all): the finalised host IR on stderr, to see how kernels vectorise and
 * which scheme (the "kapi-scheme" attribute of NAME.kapi.run) a barrier kernel got. */
static void dump_host_ir(const kc_host_module_t *host) {
  const char *v = getenv("KAPI_DUMP");
  if (!v || (!strstr(v, "host") && !strstr(v, "all"))) return;
  const char *ir = kc_host_module_llvm_ir(host);
  fprintf(stderr, "; ---- kapi cpu driver: host LLVM IR ----\n%s\n", ir ? ir : "");
}

/* Runs the finaliser (or, for a native binary, the loader); on failure *log gets its message
 * (malloc'ed). */
static ze_result_t finalise(const ze_module_desc_t *desc, kc_host_module_t **host, char **log) {
  char *kc_log = NULL;
  int native = desc->format == ZE_MODULE_FORMAT_NATIVE;
  kc_status_t s = native ? kc_host_load(desc->pInputModule, desc->inputSize, host, &kc_log)
                         : kc_host_finalise(desc->pInputModule, desc->inputSize, host, &kc_log);
  if (s != KC_OK) {
    const char *why = kc_log && *kc_log ? kc_log : kc_status_name(s);
    size_t n = strlen(why) + 64;
    *log = malloc(n);
    if (*log)
      snprintf(*log, n, "kapi cpu driver: %s module did not build: %s",
               native ? "native" : "SPIR-V", why);
  }
  kc_free(kc_log);
  if (native && s == KC_ERR_INVALID_ARGUMENT) return ZE_RESULT_ERROR_INVALID_NATIVE_BINARY;
  if (*host) dump_host_ir(*host);
  if (s != KC_OK) { /* built for a CPU this one is not: shown, never run */
    kc_host_module_destroy(*host);
    *host = NULL;
  }
  return status_to_result(s);
}

/* Checks the description; on a refusal that deserves an explanation, *log says why. */
static ze_result_t check_desc(const ze_module_desc_t *desc, char **log) {
  if (desc->format != ZE_MODULE_FORMAT_IL_SPIRV && desc->format != ZE_MODULE_FORMAT_NATIVE)
    return ZE_RESULT_ERROR_INVALID_ENUMERATION;
  if (!desc->pInputModule) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (desc->inputSize == 0) return ZE_RESULT_ERROR_INVALID_SIZE;
  if (desc->pConstants && desc->pConstants->numConstants) {
    *log = format_log("kapi cpu driver: specialization constants are not supported");
    return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
  }
  return ZE_RESULT_SUCCESS;
}

ze_result_t cpu_module_create(ze_context_handle_t hctx, ze_device_handle_t hdev,
                              const ze_module_desc_t *desc, ze_module_handle_t *out,
                              ze_module_build_log_handle_t *log_out) {
  ZED_CHECK(hctx, ZED_KIND_CONTEXT);
  ZED_CHECK(hdev, ZED_KIND_DEVICE);
  ZED_CHECK_PTR(desc);
  ZED_CHECK_PTR(out);
  if (log_out) *log_out = NULL;
  char *log = NULL;
  kc_host_module_t *host = NULL;
  ze_result_t r = check_desc(desc, &log);
  if (r == ZE_RESULT_SUCCESS) r = finalise(desc, &host, &log);
  cpu_module_t *mod = NULL;
  if (r == ZE_RESULT_SUCCESS) {
    mod = calloc(1, sizeof(*mod));
    if (!mod) {
      kc_host_module_destroy(host);
      r = ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
  }
  if (log_out && r != ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY) {
    zed_build_log_t *bl = zed_build_log_create(log);
    log = NULL;
    zed_build_log_give(bl, log_out);
  }
  free(log);
  if (r != ZE_RESULT_SUCCESS) return r;
  zed_object_init(&mod->obj, ZED_KIND_MODULE);
  mod->ctx = (cpu_context_t *)hctx;
  mod->host = host;
  *out = (ze_module_handle_t)mod;
  return ZE_RESULT_SUCCESS;
}

/* Kernels hold pointers into the module's code, so they must go first. */
ze_result_t cpu_module_destroy(ze_module_handle_t h) {
  ZED_CHECK(h, ZED_KIND_MODULE);
  cpu_module_t *mod = MODULE(h);
  if (mod->live_kernels) return ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE;
  zed_object_retire(&mod->obj);
  kc_host_module_destroy(mod->host);
  free(mod);
  return ZE_RESULT_SUCCESS;
}

ze_result_t cpu_module_get_kernel_names(ze_module_handle_t h, uint32_t *count, const char **names) {
  ZED_CHECK(h, ZED_KIND_MODULE);
  ZED_CHECK_PTR(count);
  const kc_host_module_t *host = MODULE(h)->host;
  uint32_t total = kc_host_module_kernel_count(host);
  if (!zed_list(count, names, total)) return ZE_RESULT_SUCCESS;
  for (uint32_t i = 0; i < *count; i++)
    names[i] = kc_host_module_kernel(host, i)->name;
  return ZE_RESULT_SUCCESS;
}

ze_result_t cpu_module_get_properties(ze_module_handle_t h, ze_module_properties_t *props) {
  ZED_CHECK(h, ZED_KIND_MODULE);
  ZED_CHECK_PTR(props);
  props->flags = 0;
  return ZE_RESULT_SUCCESS;
}

/* The Level Zero two-call idiom: *size first, then the bytes. */
ze_result_t cpu_module_get_native_binary(ze_module_handle_t h, size_t *size, uint8_t *binary) {
  ZED_CHECK(h, ZED_KIND_MODULE);
  ZED_CHECK_PTR(size);
  size_t len = 0;
  const void *bin = kc_host_module_native(MODULE(h)->host, &len);
  if (!bin) return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
  if (!binary) {
    *size = len;
    return ZE_RESULT_SUCCESS;
  }
  if (*size < len) return ZE_RESULT_ERROR_INVALID_SIZE;
  memcpy(binary, bin, len);
  *size = len;
  return ZE_RESULT_SUCCESS;
}
