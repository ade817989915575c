/* Kernels: a finalised entry point plus its argument values and group size. Argument bytes
 * live in one block, 8-byte aligned per argument, so a launch hands the finaliser's code an
 * array of pointers into it. Local-memory arguments only record their size here; each
 * running group gets its own buffer at launch (cpu_launch.c, cpu_pool.c). */
#include "cpu_api.h"
#include "cpu_driver.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KERNEL(h) ((cpu_kernel_t *)(h))

static uint32_t slot_size(const kc_host_arg_t *a) {
  uint32_t n = a->kind == KC_ARG_LOCAL ? (uint32_t)sizeof(void *) : a->size;
  return (n + 7u) & ~7u;
}

static void kernel_free(cpu_kernel_t *k) {
  free(k->args);
  free(k->values);
  free(k->local_size);
  free(k->local_index);
  free(k->arg_is_set);
  free(k);
}

/* Lays out the argument block; false when out of memory. */
static bool kernel_layout(cpu_kernel_t *k) {
  const kc_host_kernel_t *hk = k->k;
  uint32_t n = hk->num_args, bytes = 0;
  for (uint32_t i = 0; i < n; i++)
    bytes += slot_size(&hk->args[i]);
  k->args = calloc(n ? n : 1, sizeof(void *));
  k->values = calloc(bytes ? bytes : 1, 1);
  k->local_size = calloc(n ? n : 1, sizeof(uint32_t));
  k->local_index = calloc(n ? n : 1, sizeof(uint32_t));
  k->arg_is_set = calloc(n ? n : 1, 1);
  if (!k->args || !k->values || !k->local_size || !k->local_index || !k->arg_is_set) return false;
  for (uint32_t i = 0, off = 0; i < n; i++) {
    k->args[i] = k->values + off;
    off += slot_size(&hk->args[i]);
    if (hk->args[i].kind == KC_ARG_LOCAL) k->local_index[k->num_local++] = i;
  }
  k->args_unset = n;
  k->values_size = bytes;
  return true;
}

/* cpu_kernel_t.stream_min: KAPI_CPU_STREAMING (read when the kernel is created) "0" never, "1"
 * always, else (auto) when the launch stores at least the larger of 8 MiB, 1 MiB a core and the
 * L3 that CPU 0 shares: an output the caches would keep stays there for whatever reads it
 * next (kapi/_numeric/streaming.py has the same rule for kapi's own elementwise kernels). */
static uint64_t streaming_min(const kc_host_kernel_t *hk, const cpu_device_t *dev) {
  if (!hk->run_streaming) return 0;
  const char *v = getenv("KAPI_CPU_STREAMING");
  if (v && !strcmp(v, "0")) return 0;
  if (v && !strcmp(v, "1")) return 1;
  uint64_t min = (uint64_t)8 << 20, per_core = (uint64_t)dev->cores << 20;
  if (per_core > min) min = per_core;
  return dev->l3_shared > min ? dev->l3_shared : min;
}

ze_result_t cpu_kernel_create(ze_module_handle_t hmod, const ze_kernel_desc_t *desc,
                              ze_kernel_handle_t *out) {
  ZED_CHECK(hmod, ZED_KIND_MODULE);
  ZED_CHECK_PTR(desc);
  ZED_CHECK_PTR(desc->pKernelName);
  ZED_CHECK_PTR(out);
  cpu_module_t *mod = (cpu_module_t *)hmod;
  const kc_host_kernel_t *hk = kc_host_module_find(mod->host, desc->pKernelName);
  if (!hk) return ZE_RESULT_ERROR_INVALID_KERNEL_NAME;
  cpu_kernel_t *k = calloc(1, sizeof(*k));
  if (!k) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  k->module = mod;
  k->k = hk;
  const char *scheme = getenv("KAPI_CPU_POOL");
  k->pool_legacy = scheme && strcmp(scheme, "0") == 0;
  const char *wide = getenv("KAPI_CPU_WIDE");
  if (wide && wide[0] >= '0' && wide[0] <= '2' && !wide[1]) k->pool_wide = 1 + (wide[0] - '0');
  k->stream_min = streaming_min(hk, &mod->ctx->driver->device);
  if (!kernel_layout(k)) {
    kernel_free(k);
    return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  }
  for (int d = 0; d < 3; d++)
    k->group_size[d] = hk->required_local_size[0] ? hk->required_local_size[d] : 1;
  zed_object_init(&k->obj, ZED_KIND_KERNEL);
  __atomic_add_fetch(&mod->live_kernels, 1, __ATOMIC_RELAXED);
  *out = (ze_kernel_handle_t)k;
  return ZE_RESULT_SUCCESS;
}

ze_result_t cpu_kernel_destroy(ze_kernel_handle_t h) {
  ZED_CHECK(h, ZED_KIND_KERNEL);
  cpu_kernel_t *k = KERNEL(h);
  zed_object_retire(&k->obj);
  __atomic_sub_fetch(&k->module->live_kernels, 1, __ATOMIC_RELAXED);
  kernel_free(k);
  return ZE_RESULT_SUCCESS;
}

ze_result_t cpu_kernel_set_cache_config(ze_kernel_handle_t h, ze_cache_config_flags_t flags) {
  ZED_CHECK(h, ZED_KIND_KERNEL);
  (void)flags;
  return ZE_RESULT_SUCCESS;
}

/* Each dimension in 1..CPU_MAX_GROUP_SIZE, their product too, and equal to the kernel's
 * required size when it has one. */
static bool group_size_ok(const kc_host_kernel_t *hk, const uint32_t s[3]) {
  uint64_t total = 1;
  for (int d = 0; d < 3; d++) {
    if (s[d] == 0 || s[d] > CPU_MAX_GROUP_SIZE) return false;
    if (hk->required_local_size[0] && s[d] != hk->required_local_size[d]) return false;
    total *= s[d];
  }
  return total <= CPU_MAX_GROUP_SIZE;
}

ze_result_t cpu_kernel_set_group_size(ze_kernel_handle_t h, uint32_t x, uint32_t y, uint32_t z) {
  ZED_CHECK(h, ZED_KIND_KERNEL);
  cpu_kernel_t *k = KERNEL(h);
  const uint32_t s[3] = {x, y, z};
  if (!group_size_ok(k->k, s)) return ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION;
  memcpy(k->group_size, s, sizeof s);
  return ZE_RESULT_SUCCESS;
}

/* Largest divisor of n that is at most cap (cap >= 1). */
static uint32_t largest_divisor(uint32_t n, uint32_t cap) {
  if (n <= cap) return n;
  for (uint32_t d = cap; d > 1; d--)
    if (n % d == 0) return d;
  return 1;
}

/* Work-items per group that leave about four groups per core when the range allows it (so
 * the pool balances; kernels that spin excepted), with dimension 0 as long as possible (it is the
 * one the finaliser vectorises) and each size dividing its global size. */
static void suggest(uint32_t cores, const uint32_t global[3], int spins, uint32_t out[3]) {
  uint64_t items = (uint64_t)global[0] * global[1] * global[2];
  uint64_t want = items / ((uint64_t)cores * 4);
  /* A kernel spinning on an atomic load may wait for another work-item: only those of its
   * own group are sure to progress, so groups as large as allowed. */
  if (spins) want = CPU_MAX_GROUP_SIZE;
  uint32_t budget = want < 1 ? 1 : want > CPU_MAX_GROUP_SIZE ? CPU_MAX_GROUP_SIZE : (uint32_t)want;
  /* Short rows vectorise poorly; accept fewer groups for at least 16 items in dim 0. */
  if (budget < 16 && global[0] >= 16) budget = 16;
  for (int d = 0; d < 3; d++) {
    out[d] = largest_divisor(global[d], budget);
    budget /= out[d];
    if (budget == 0) budget = 1;
  }
}

ze_result_t cpu_kernel_suggest_group_size(ze_kernel_handle_t h, uint32_t gx, uint32_t gy,
                                          uint32_t gz, uint32_t *sx, uint32_t *sy, uint32_t *sz) {
  ZED_CHECK(h, ZED_KIND_KERNEL);
  ZED_CHECK_PTR(sx);
  ZED_CHECK_PTR(sy);
  ZED_CHECK_PTR(sz);
  if (gx == 0 || gy == 0 || gz == 0) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  const kc_host_kernel_t *hk = KERNEL(h)->k;
  uint32_t out[3];
  if (hk->required_local_size[0]) {
    memcpy(out, hk->required_local_size, sizeof out);
  } else {
    const uint32_t global[3] = {gx, gy, gz};
    cpu_driver_t *drv = cpu_driver();
    suggest(drv ? drv->device.cores : 1, global, (int)hk->spins, out);
  }
  *sx = out[0];
  *sy = out[1];
  *sz = out[2];
  return ZE_RESULT_SUCCESS;
}

/* Groups of a cooperative launch must all run at once: one per pool thread. */
ze_result_t cpu_kernel_suggest_max_cooperative_group_count(ze_kernel_handle_t h, uint32_t *count) {
  ZED_CHECK(h, ZED_KIND_KERNEL);
  ZED_CHECK_PTR(count);
  cpu_driver_t *drv = cpu_driver();
  *count = drv ? drv->device.cores : 1;
  return ZE_RESULT_SUCCESS;
}

static void mark_set(cpu_kernel_t *k, uint32_t i) {
  if (!k->arg_is_set[i]) {
    k->arg_is_set[i] = 1;
    k->args_unset--;
  }
}

/* A value argument takes exactly its size (NULL value: zero bytes, a null pointer). A local
 * memory argument takes a NULL value and its byte size. */
ze_result_t cpu_kernel_set_argument_value(ze_kernel_handle_t h, uint32_t index, size_t size,
                                          const void *value) {
  ZED_CHECK(h, ZED_KIND_KERNEL);
  cpu_kernel_t *k = KERNEL(h);
  if (index >= k->k->num_args) return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX;
  const kc_host_arg_t *a = &k->k->args[index];
  if (a->kind == KC_ARG_LOCAL) {
    if (value) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    if (size > CPU_LOCAL_MEM_SIZE) return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE;
    k->local_size[index] = (uint32_t)size;
  } else {
    if (size != a->size) return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE;
    if (value)
      memcpy(k->args[index], value, size);
    else
      memset(k->args[index], 0, size);
  }
  mark_set(k, index);
  return ZE_RESULT_SUCCESS;
}

/* Every allocation is host memory the kernel can reach anyway; the flags are only kept. */
ze_result_t cpu_kernel_set_indirect_access(ze_kernel_handle_t h,
                                           ze_kernel_indirect_access_flags_t flags) {
  ZED_CHECK(h, ZED_KIND_KERNEL);
  (void)flags;
  return ZE_RESULT_SUCCESS;
}

ze_result_t cpu_kernel_get_indirect_access(ze_kernel_handle_t h,
                                           ze_kernel_indirect_access_flags_t *flags) {
  ZED_CHECK(h, ZED_KIND_KERNEL);
  ZED_CHECK_PTR(flags);
  *flags = ZE_KERNEL_INDIRECT_ACCESS_FLAG_HOST | ZE_KERNEL_INDIRECT_ACCESS_FLAG_DEVICE |
           ZE_KERNEL_INDIRECT_ACCESS_FLAG_SHARED;
  return ZE_RESULT_SUCCESS;
}

/* Level Zero's two-call string protocol. */
static ze_result_t give_string(const char *s, uint32_t *size, char *out) {
  ZED_CHECK_PTR(size);
  uint32_t need = (uint32_t)strlen(s) + 1;
  if (!out) {
    *size = need;
    return ZE_RESULT_SUCCESS;
  }
  if (*size == 0) return ZE_RESULT_ERROR_INVALID_SIZE;
  uint32_t n = need < *size ? need : *size;
  memcpy(out, s, n - 1);
  out[n - 1] = '\0';
  *size = n;
  return ZE_RESULT_SUCCESS;
}

/* No source attributes are known: the string is "" (owned by the driver, as the API says). */
ze_result_t cpu_kernel_get_source_attributes(ze_kernel_handle_t h, uint32_t *size, char **out) {
  ZED_CHECK(h, ZED_KIND_KERNEL);
  ZED_CHECK_PTR(size);
  ZED_CHECK_PTR(out);
  static char empty[1] = "";
  if (*size != 0) *out = empty;
  *size = 1;
  return ZE_RESULT_SUCCESS;
}

ze_result_t cpu_kernel_get_name(ze_kernel_handle_t h, size_t *size, char *name) {
  ZED_CHECK(h, ZED_KIND_KERNEL);
  ZED_CHECK_PTR(size);
  uint32_t n = *size > UINT32_MAX ? UINT32_MAX : (uint32_t)*size;
  ze_result_t r = give_string(KERNEL(h)->k->name, &n, name);
  *size = n;
  return r;
}

ze_result_t cpu_kernel_get_properties(ze_kernel_handle_t h, ze_kernel_properties_t *p) {
  ZED_CHECK(h, ZED_KIND_KERNEL);
  ZED_CHECK_PTR(p);
  const kc_host_kernel_t *hk = KERNEL(h)->k;
  p->numKernelArgs = hk->num_args;
  p->requiredGroupSizeX = hk->required_local_size[0];
  p->requiredGroupSizeY = hk->required_local_size[1];
  p->requiredGroupSizeZ = hk->required_local_size[2];
  p->requiredNumSubGroups = 0;
  p->requiredSubgroupSize = 0;
  p->maxSubgroupSize = 1;
  p->maxNumSubgroups = CPU_MAX_GROUP_SIZE;
  p->localMemSize = 0;
  p->privateMemSize = 0;
  p->spillMemSize = 0;
  memset(p->uuid.kid, 0, sizeof p->uuid.kid);
  memset(p->uuid.mid, 0, sizeof p->uuid.mid);
  return ZE_RESULT_SUCCESS;
}
