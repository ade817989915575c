/* The driver object and its one device, the host CPU, with properties read from the machine:
 * usable cores (cpu_process_cpus), clock, caches (sysconf, sysfs), memory (/proc/meminfo),
 * vector width (cpuid). zeInit sets the driver up once; later calls find it ready. */
#define _GNU_SOURCE
#include "cpu_api.h"
#include "cpu_driver.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static cpu_driver_t the_driver;
static pthread_once_t the_driver_once = PTHREAD_ONCE_INIT;
static bool the_driver_ready;

/* Reads the first line of a text file into buf; false if it cannot be read. */
static bool read_line(const char *path, char *buf, size_t n) {
  FILE *f = fopen(path, "r");
  if (!f) return false;
  bool ok = fgets(buf, (int)n, f) != NULL;
  fclose(f);
  if (ok) buf[strcspn(buf, "\n")] = '\0';
  return ok;
}

/* The value after "key<spaces>:" in a "key : value" file such as /proc/cpuinfo. */
static bool read_keyed(const char *path, const char *key, char *buf, size_t n) {
  FILE *f = fopen(path, "r");
  if (!f) return false;
  char line[512];
  bool found = false;
  size_t klen = strlen(key);
  while (!found && fgets(line, sizeof line, f)) {
    if (strncmp(line, key, klen) != 0 || !strchr(line, ':')) continue;
    const char *v = strchr(line, ':') + 1;
    while (*v == ' ' || *v == '\t')
      v++;
    snprintf(buf, n, "%s", v);
    buf[strcspn(buf, "\n")] = '\0';
    found = true;
  }
  fclose(f);
  return found;
}

static uint32_t usable_cores(void) {
  cpu_set_t set;
  if (cpu_process_cpus(&set)) return (uint32_t)CPU_COUNT(&set);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (uint32_t)n : 1;
}

/* Cache size of a level from sysfs (index entries give level, type and size "48K"). */
static uint64_t sysfs_cache(int level) {
  for (int i = 0; i < 8; i++) {
    char path[128], buf[64];
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
    if (!read_line(path, buf, sizeof buf)) break;
    if (atoi(buf) != level) continue;
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
    if (read_line(path, buf, sizeof buf) && strcmp(buf, "Instruction") == 0) continue;
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
    if (!read_line(path, buf, sizeof buf)) continue;
    char *end;
    uint64_t v = strtoull(buf, &end, 10);
    return *end == 'K' ? v << 10 : *end == 'M' ? v << 20 : v;
  }
  return 0;
}

static void read_caches(cpu_device_t *d) {
  const int names[3] = {_SC_LEVEL1_DCACHE_SIZE, _SC_LEVEL2_CACHE_SIZE, _SC_LEVEL3_CACHE_SIZE};
  for (int i = 0; i < 3; i++) {
    long v = sysconf(names[i]);
    d->cache_size[i] = v > 0 ? (uint64_t)v : sysfs_cache(i + 1);
  }
  uint64_t l3 = sysfs_cache(3);
  d->l3_shared = l3 ? l3 : d->cache_size[2];
}

static void read_identity(cpu_device_t *d) {
  char buf[256];
  if (!read_keyed("/proc/cpuinfo", "model name", d->name, sizeof d->name))
    snprintf(d->name, sizeof d->name, "host CPU");
  d->vendor_id = 0;
  if (read_keyed("/proc/cpuinfo", "vendor_id", buf, sizeof buf)) {
    if (strcmp(buf, "GenuineIntel") == 0)
      d->vendor_id = 0x8086;
    else if (strcmp(buf, "AuthenticAMD") == 0)
      d->vendor_id = 0x1022;
  }
  d->clock_mhz = 0;
  if (read_line("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", buf, sizeof buf))
    d->clock_mhz = (uint32_t)(strtoull(buf, NULL, 10) / 1000);
  else if (read_keyed("/proc/cpuinfo", "cpu MHz", buf, sizeof buf))
    d->clock_mhz = (uint32_t)atof(buf);
}

static void read_memory(cpu_device_t *d) {
  char buf[128];
  d->mem_total = 0;
  if (read_keyed("/proc/meminfo", "MemTotal", buf, sizeof buf))
    d->mem_total = strtoull(buf, NULL, 10) << 10; /* the file says kB */
  if (d->mem_total == 0)
    d->mem_total = (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
}

static void read_vector_unit(cpu_device_t *d) {
  __builtin_cpu_init();
  d->simd_width = __builtin_cpu_supports("avx512f") ? 16 : __builtin_cpu_supports("avx") ? 8 : 4;
  d->has_fma = __builtin_cpu_supports("fma");
}

/* A forked child has none of the parent's pool threads: free the parent's pool (memory only,
 * there is nothing to join) so the child's first launch starts a fresh one instead of waiting
 * for workers that do not exist. The lock may have been held by another parent thread. */
static void forget_pool_in_child(void) {
  cpu_pool_t *pool = atomic_exchange(&the_driver.device.pool, NULL);
  if (pool) cpu_pool_free_orphan(pool);
  pthread_mutex_init(&the_driver.device.pool_lock, NULL);
}

static void driver_setup(void) {
  cpu_driver_t *drv = &the_driver;
  zed_object_init(&drv->obj, ZED_KIND_DRIVER);
  cpu_device_t *d = &drv->device;
  zed_object_init(&d->obj, ZED_KIND_DEVICE);
  d->cores = usable_cores();
  read_caches(d);
  read_identity(d);
  read_memory(d);
  read_vector_unit(d);
  pthread_mutex_init(&d->pool_lock, NULL);
  d->pool = NULL;
  pthread_atfork(NULL, NULL, forget_pool_in_child);
  the_driver_ready = true;
}

cpu_driver_t *cpu_driver(void) {
  return the_driver_ready ? &the_driver : NULL;
}

/* Double-checked: the launch path pays one atomic load once the pool exists. */
cpu_pool_t *cpu_device_pool(cpu_device_t *dev) {
  cpu_pool_t *pool = atomic_load_explicit(&dev->pool, memory_order_acquire);
  if (pool) return pool;
  pthread_mutex_lock(&dev->pool_lock);
  pool = atomic_load_explicit(&dev->pool, memory_order_acquire);
  if (!pool) {
    pool = cpu_pool_create(cpu_pool_participants(dev->cores) - 1);
    atomic_store_explicit(&dev->pool, pool, memory_order_release);
  }
  pthread_mutex_unlock(&dev->pool_lock);
  return pool;
}

/* Joins the workers when the loader unloads the driver (or the process exits), so no thread
 * runs driver code that is about to disappear. */
__attribute__((destructor)) static void driver_teardown(void) {
  if (!the_driver_ready) return;
  cpu_pool_t *pool = atomic_exchange(&the_driver.device.pool, NULL);
  if (pool) cpu_pool_destroy(pool);
}

/* The loader calls this twice (once to probe, once for the application); the set-up runs once.
 * A CPU is neither a GPU nor a VPU, so a request for only those finds no driver here. */
ze_result_t cpu_init(ze_init_flags_t flags) {
  if (flags & (ZE_INIT_FLAG_GPU_ONLY | ZE_INIT_FLAG_VPU_ONLY)) return ZE_RESULT_ERROR_UNINITIALIZED;
  pthread_once(&the_driver_once, driver_setup);
  return ZE_RESULT_SUCCESS;
}

/* Level Zero's two-call listing protocol for a list of exactly one handle. */
static ze_result_t list_one(uint32_t *count, void **out, void *only) {
  ZED_CHECK_PTR(count);
  if (zed_list(count, out, 1)) out[0] = only;
  return ZE_RESULT_SUCCESS;
}

ze_result_t cpu_driver_get(uint32_t *count, ze_driver_handle_t *drivers) {
  cpu_driver_t *drv = cpu_driver();
  if (!drv) return ZE_RESULT_ERROR_UNINITIALIZED;
  return list_one(count, (void **)drivers, drv);
}

ze_result_t cpu_driver_get_api_version(ze_driver_handle_t h, ze_api_version_t *version) {
  ZED_CHECK(h, ZED_KIND_DRIVER);
  ZED_CHECK_PTR(version);
  *version = ZE_API_VERSION_CURRENT;
  return ZE_RESULT_SUCCESS;
}

/* A fixed UUID: "kapi-cpu" then the driver version. */
ze_result_t cpu_driver_get_properties(ze_driver_handle_t h, ze_driver_properties_t *props) {
  ZED_CHECK(h, ZED_KIND_DRIVER);
  ZED_CHECK_PTR(props);
  memset(props->uuid.id, 0, sizeof props->uuid.id);
  memcpy(props->uuid.id, "kapi-cpu", 8);
  props->driverVersion = 1;
  props->uuid.id[8] = 1;
  return ZE_RESULT_SUCCESS;
}

ze_result_t cpu_driver_get_ipc_properties(ze_driver_handle_t h, ze_driver_ipc_properties_t *p) {
  ZED_CHECK(h, ZED_KIND_DRIVER);
  ZED_CHECK_PTR(p);
  p->flags = 0;
  return ZE_RESULT_SUCCESS;
}

ze_result_t cpu_driver_get_extension_properties(ze_driver_handle_t h, uint32_t *count,
                                                ze_driver_extension_properties_t *props) {
  ZED_CHECK(h, ZED_KIND_DRIVER);
  ZED_CHECK_PTR(count);
  (void)props;
  *count = 0;
  return ZE_RESULT_SUCCESS;
}

/* kapi's own extension functions (the Level Zero way to reach a driver-specific call). */
ze_result_t cpu_driver_get_extension_function_address(ze_driver_handle_t h, const char *name,
                                                      void **out) {
  ZED_CHECK(h, ZED_KIND_DRIVER);
  ZED_CHECK_PTR(name);
  ZED_CHECK_PTR(out);
  if (strcmp(name, CPU_EXT_SET_INTERRUPT_CHECK) != 0) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  *out = (void *)cpu_set_interrupt_check;
  return ZE_RESULT_SUCCESS;
}

ze_result_t cpu_device_get(ze_driver_handle_t h, uint32_t *count, ze_device_handle_t *devices) {
  ZED_CHECK(h, ZED_KIND_DRIVER);
  return list_one(count, (void **)devices, &((cpu_driver_t *)h)->device);
}

ze_result_t cpu_device_get_sub_devices(ze_device_handle_t h, uint32_t *count,
                                       ze_device_handle_t *subs) {
  ZED_CHECK(h, ZED_KIND_DEVICE);
  ZED_CHECK_PTR(count);
  (void)subs;
  *count = 0;
  return ZE_RESULT_SUCCESS;
}
