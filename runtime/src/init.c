/* Once-only start-up: which drivers the loader opens (KAPI_DRIVERS, ZE_ENABLE_ALT_DRIVERS,
 * or kapi's drivers found beside this library plus Intel's), zeInit, and the device list over
 * every driver. Also kr_shutdown, which undoes all of it except zeInit.
 */
#define _GNU_SOURCE
#include "internal.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

kr_runtime_t kr_rt;

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int init_state; /* 0: not tried, 1: up, 2: failed */
static kr_error_t init_error;
static char driver_list[4096];

/* The folder holding libkapi_runtime.so (where our drivers are built and installed). */
static void library_dir(char *buf, size_t n) {
  Dl_info info;
  buf[0] = '\0';
  if (!dladdr((void *)&kr_init, &info) || !info.dli_fname) return;
  const char *slash = strrchr(info.dli_fname, '/');
  if (!slash) return;
  size_t len = (size_t)(slash - info.dli_fname);
  if (len + 1 > n) return;
  memcpy(buf, info.dli_fname, len);
  buf[len] = '\0';
}

/* Appends ",item" (or "item" first); an item that does not fit is left out. */
static void list_add(char *list, size_t n, const char *item) {
  size_t len = strlen(list), m = strlen(item);
  if (len + m + 2 > n) return;
  if (len) list[len++] = ',';
  memcpy(list + len, item, m + 1);
}

/* Adds our driver `file` beside the library when it exists. */
static void add_ours(char *list, size_t n, const char *dir, const char *file, bool required) {
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  if (required || access(path, R_OK) == 0) list_add(list, n, path);
}

/* One KAPI_DRIVERS entry (or "all") appended to the list. */
static void add_entry(char *list, size_t n, const char *dir, const char *e) {
  if (!strcmp(e, "cpu")) {
    add_ours(list, n, dir, "libze_kapi_cpu.so", true);
  } else if (!strcmp(e, "cuda")) {
    add_ours(list, n, dir, "libze_kapi_cuda.so", true);
  } else if (!strcmp(e, "intel")) {
    list_add(list, n, "libze_intel_gpu.so.1");
  } else if (!strcmp(e, "all")) {
    add_ours(list, n, dir, "libze_kapi_cpu.so", false);
    add_ours(list, n, dir, "libze_kapi_cuda.so", false);
    list_add(list, n, "libze_intel_gpu.so.1");
  } else if (*e) {
    list_add(list, n, e);
  }
}

/* Decides ZE_ENABLE_ALT_DRIVERS (see runtime.h) and records it in driver_list. */
static void choose_drivers(void) {
  char dir[4096];
  library_dir(dir, sizeof dir);
  const char *kapi = getenv("KAPI_DRIVERS");
  const char *ze = getenv("ZE_ENABLE_ALT_DRIVERS");
  driver_list[0] = '\0';
  if (!kapi && ze) {
    snprintf(driver_list, sizeof driver_list, "%s", ze);
    return;
  }
  char spec[4096];
  snprintf(spec, sizeof spec, "%s", kapi ? kapi : "all");
  char *save = NULL;
  for (char *e = strtok_r(spec, ", ", &save); e; e = strtok_r(NULL, ", ", &save))
    add_entry(driver_list, sizeof driver_list, dir, e);
  setenv("ZE_ENABLE_ALT_DRIVERS", driver_list, 1);
}

const char *kr_driver_list(void) {
  return driver_list;
}

static kr_status_t no_device(kr_error_t *err, ze_result_t r, const char *what) {
  kr_status_t st = kr_fail(err, KR_ERR_NO_DEVICE,
                           "no Level Zero device found: %s (%s); drivers tried "
                           "(ZE_ENABLE_ALT_DRIVERS): '%s'; choose drivers with KAPI_DRIVERS, "
                           "set ZE_ENABLE_LOADER_DEBUG_TRACE=1 to see why the loader skipped one",
                           what, kr_result_name((int32_t)r), driver_list);
  if (err) err->ze_result = (int32_t)r;
  return st;
}

static kr_status_t open_driver(kr_driver_t *drv, ze_driver_handle_t h, uint32_t index,
                               kr_error_t *err) {
  drv->h = h;
  drv->index = index;
  pthread_mutex_init(&drv->event_lock, NULL);
  ze_context_desc_t cd = {.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC};
  ze_result_t r = zeContextCreate(h, &cd, &drv->ctx);
  if (r) return kr_ze_fail(err, r, "zeContextCreate", NULL, "driver %u", index);
  void *fn = NULL;
  if (zeDriverGetExtensionFunctionAddress(h, "zexKapiCpuSetInterruptCheck", &fn) == 0 && fn)
    drv->set_interrupt = (ze_result_t(*)(int (*)(void *), void *))fn;
  return KR_OK;
}

/* Appends the devices of one driver to kr_rt.devices. */
static kr_status_t list_devices(kr_driver_t *drv, kr_error_t *err) {
  uint32_t n = 0;
  ze_result_t r = zeDeviceGet(drv->h, &n, NULL);
  if (r) return kr_ze_fail(err, r, "zeDeviceGet", NULL, "driver %u", drv->index);
  ze_device_handle_t hs[64];
  if (n > 64) n = 64;
  r = zeDeviceGet(drv->h, &n, hs);
  if (r) return kr_ze_fail(err, r, "zeDeviceGet", NULL, "driver %u", drv->index);
  kr_device_t **grown = realloc(kr_rt.devices, (kr_rt.num_devices + n) * sizeof *grown);
  if (!grown && n) return kr_fail(err, KR_ERR_OUT_OF_MEMORY, "out of host memory");
  kr_rt.devices = grown;
  drv->first_device = kr_rt.num_devices;
  for (uint32_t i = 0; i < n; i++) {
    kr_device_t *dev = calloc(1, sizeof *dev);
    if (!dev) return kr_fail(err, KR_ERR_OUT_OF_MEMORY, "out of host memory");
    dev->h = hs[i];
    dev->drv = drv;
    dev->info.index = kr_rt.num_devices;
    pthread_mutex_init(&dev->lock, NULL);
    pthread_mutex_init(&dev->modules_lock, NULL);
    kr_rt.devices[kr_rt.num_devices++] = dev;
    drv->num_devices++;
    kr_status_t st = kr_device_fill(dev, err);
    if (st) return st;
  }
  return KR_OK;
}

static kr_status_t start(kr_error_t *err) {
  choose_drivers();
  ze_result_t r = zeInit(0);
  if (r) return no_device(err, r, "zeInit failed");
  uint32_t n = 0;
  r = zeDriverGet(&n, NULL);
  if (r || n == 0) return no_device(err, r, "the loader found no driver");
  ze_driver_handle_t hs[16];
  if (n > 16) n = 16;
  r = zeDriverGet(&n, hs);
  if (r) return no_device(err, r, "zeDriverGet failed");
  kr_rt.drivers = calloc(n, sizeof *kr_rt.drivers);
  if (!kr_rt.drivers) return kr_fail(err, KR_ERR_OUT_OF_MEMORY, "out of host memory");
  for (uint32_t i = 0; i < n; i++) {
    kr_status_t st = open_driver(&kr_rt.drivers[i], hs[i], i, err);
    kr_rt.num_drivers = i + 1;
    if (!st) st = list_devices(&kr_rt.drivers[i], err);
    if (st) return st;
  }
  if (kr_rt.num_devices == 0) return no_device(err, ZE_RESULT_SUCCESS, "drivers have no device");
  return KR_OK;
}

static void release_all(void);

kr_status_t kr_init(kr_error_t *err) {
  int s = atomic_load_explicit(&init_state, memory_order_acquire);
  if (s == 0) {
    pthread_mutex_lock(&init_lock);
    s = atomic_load(&init_state);
    if (s == 0) {
      kr_status_t st = start(&init_error);
      if (st) release_all();
      s = st ? 2 : 1;
      atomic_store_explicit(&init_state, s, memory_order_release);
    }
    pthread_mutex_unlock(&init_lock);
  }
  if (s == 1) return KR_OK;
  if (err) *err = init_error;
  return init_error.status;
}

kr_status_t kr_ensure_init(kr_error_t *err) {
  if (atomic_load_explicit(&init_state, memory_order_acquire) == 1) return KR_OK;
  return kr_init(err);
}

uint32_t kr_device_count(void) {
  return kr_init(NULL) ? 0 : kr_rt.num_devices;
}

kr_device_t *kr_device_get(uint32_t i) {
  if (kr_init(NULL) || i >= kr_rt.num_devices) return NULL;
  return kr_rt.devices[i];
}

const kr_device_info_t *kr_device_info(const kr_device_t *dev) {
  return dev ? &dev->info : NULL;
}

kr_device_t *kr_device_from_handle(ze_device_handle_t h) {
  for (uint32_t i = 0; i < kr_rt.num_devices; i++)
    if (kr_rt.devices[i]->h == h) return kr_rt.devices[i];
  return NULL;
}

static void release_all(void) {
  for (uint32_t i = 0; i < kr_rt.num_devices; i++) {
    kr_device_t *dev = kr_rt.devices[i];
    kr_queue_free(dev->default_queue);
    kr_device_modules_destroy(dev);
    pthread_mutex_destroy(&dev->lock);
    pthread_mutex_destroy(&dev->modules_lock);
    free(dev);
  }
  for (uint32_t i = 0; i < kr_rt.num_drivers; i++) {
    kr_driver_t *drv = &kr_rt.drivers[i];
    kr_driver_events_destroy(drv);
    if (drv->ctx) zeContextDestroy(drv->ctx);
    pthread_mutex_destroy(&drv->event_lock);
  }
  free(kr_rt.devices);
  free(kr_rt.drivers);
  memset(&kr_rt, 0, sizeof kr_rt);
}

void kr_shutdown(void) {
  pthread_mutex_lock(&init_lock);
  release_all();
  atomic_store(&init_state, 0);
  pthread_mutex_unlock(&init_lock);
}
