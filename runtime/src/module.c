/* Modules and kernels: SPIR-V built by the driver (with its build log on failure), kernels
 * looked up by name, and the per-device cache that lets kr_kernel_get build a module once.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The driver's build log appended to err's message (the reason a build failed). */
static void append_build_log(kr_error_t *err, ze_module_build_log_handle_t log) {
  size_t n = 0;
  if (!log) return;
  if (err && zeModuleBuildLogGetString(log, &n, NULL) == ZE_RESULT_SUCCESS && n > 1) {
    char *text = malloc(n);
    if (text && zeModuleBuildLogGetString(log, &n, text) == ZE_RESULT_SUCCESS) {
      size_t used = strnlen(err->message, sizeof err->message);
      size_t room = sizeof err->message - used;
      int m = snprintf(err->message + used, room, "\nbuild log:\n%s", text);
      if (m >= (int)room) memcpy(err->message + sizeof err->message - 4, "...", 4);
    }
    free(text);
  }
  zeModuleBuildLogDestroy(log);
}

/* zeModuleCreate from SPIR-V or from a native binary of the driver's. */
static kr_module_t *module_create(kr_device_t *dev, ze_module_format_t format, const void *spirv,
                                  size_t nbytes, const char *build_flags, kr_error_t *err) {
  int native = format == ZE_MODULE_FORMAT_NATIVE;
  if (!dev || !spirv || nbytes == 0) {
    kr_fail(err, KR_ERR_INVALID_ARGUMENT, "kr_module_create: %s",
            !dev ? "NULL device" : (native ? "empty native binary" : "empty SPIR-V module"));
    return NULL;
  }
  kr_module_t *mod = calloc(1, sizeof *mod);
  if (!mod) {
    kr_fail(err, KR_ERR_OUT_OF_MEMORY, "out of host memory");
    return NULL;
  }
  ze_module_desc_t md = {.stype = ZE_STRUCTURE_TYPE_MODULE_DESC,
                         .format = format,
                         .inputSize = nbytes,
                         .pInputModule = spirv,
                         .pBuildFlags = build_flags ? build_flags : ""};
  ze_module_build_log_handle_t log = NULL;
  ze_result_t r = zeModuleCreate(dev->drv->ctx, dev->h, &md, &mod->h, &log);
  if (r) {
    kr_ze_fail(err, r, "zeModuleCreate", dev, "%zu bytes of %s", nbytes,
               native ? "native binary" : "SPIR-V");
    append_build_log(err, log);
    free(mod);
    return NULL;
  }
  if (log) zeModuleBuildLogDestroy(log);
  mod->dev = dev;
  pthread_mutex_init(&mod->lock, NULL);
  return mod;
}

kr_module_t *kr_module_create(kr_device_t *dev, const void *spirv, size_t nbytes,
                              const char *build_flags, kr_error_t *err) {
  return module_create(dev, ZE_MODULE_FORMAT_IL_SPIRV, spirv, nbytes, build_flags, err);
}

static void kernel_destroy(kr_kernel_t *k) {
  zeKernelDestroy(k->h);
  pthread_mutex_destroy(&k->lock);
  free(k->slots);
  free(k->name);
  free(k);
}

void kr_module_destroy(kr_module_t *mod) {
  if (!mod) return;
  for (kr_kernel_t *k = mod->kernels, *next; k; k = next) {
    next = k->next;
    kernel_destroy(k);
  }
  zeModuleDestroy(mod->h);
  pthread_mutex_destroy(&mod->lock);
  free(mod);
}

/* Reads the kernel's properties; the argument count sizes its argument cache. */
static kr_status_t kernel_props(kr_kernel_t *k, kr_error_t *err) {
  ze_kernel_properties_t p = {.stype = ZE_STRUCTURE_TYPE_KERNEL_PROPERTIES};
  ze_result_t r = zeKernelGetProperties(k->h, &p);
  if (r) return kr_ze_fail(err, r, "zeKernelGetProperties", k->mod->dev, "kernel '%s'", k->name);
  kr_kernel_info_t *in = &k->info;
  in->name = k->name;
  in->device = k->mod->dev;
  in->num_args = p.numKernelArgs;
  in->required_group_size[0] = p.requiredGroupSizeX;
  in->required_group_size[1] = p.requiredGroupSizeY;
  in->required_group_size[2] = p.requiredGroupSizeZ;
  in->max_sub_group_size = p.maxSubgroupSize;
  in->private_mem_size = p.privateMemSize;
  in->local_mem_size = p.localMemSize;
  k->slots = calloc(p.numKernelArgs ? p.numKernelArgs : 1, sizeof *k->slots);
  if (!k->slots) return kr_fail(err, KR_ERR_OUT_OF_MEMORY, "out of host memory");
  return KR_OK;
}

static kr_kernel_t *kernel_create(kr_module_t *mod, const char *name, kr_error_t *err) {
  kr_kernel_t *k = calloc(1, sizeof *k);
  char *copy = strdup(name);
  if (!k || !copy) {
    free(k);
    free(copy);
    kr_fail(err, KR_ERR_OUT_OF_MEMORY, "out of host memory");
    return NULL;
  }
  k->name = copy;
  k->mod = mod;
  ze_kernel_desc_t kd = {.stype = ZE_STRUCTURE_TYPE_KERNEL_DESC, .pKernelName = name};
  ze_result_t r = zeKernelCreate(mod->h, &kd, &k->h);
  if (r) {
    kr_ze_fail(err, r, "zeKernelCreate", mod->dev, "kernel '%s'", name);
    free(copy);
    free(k);
    return NULL;
  }
  pthread_mutex_init(&k->lock, NULL);
  if (kernel_props(k, err)) {
    kernel_destroy(k);
    return NULL;
  }
  return k;
}

kr_kernel_t *kr_module_kernel(kr_module_t *mod, const char *name, kr_error_t *err) {
  if (!mod || !name) {
    kr_fail(err, KR_ERR_INVALID_ARGUMENT, "kr_module_kernel: NULL %s", !mod ? "module" : "name");
    return NULL;
  }
  pthread_mutex_lock(&mod->lock);
  kr_kernel_t *k = mod->kernels;
  while (k && strcmp(k->name, name))
    k = k->next;
  if (!k) {
    k = kernel_create(mod, name, err);
    if (k) {
      k->next = mod->kernels;
      mod->kernels = k;
    }
  }
  pthread_mutex_unlock(&mod->lock);
  return k;
}

/* 64-bit FNV-1a over 8-byte words (SPIR-V is a stream of 32-bit words), then the tail. */
static uint64_t spirv_hash(const void *data, size_t n) {
  const uint8_t *p = data;
  uint64_t h = 0xcbf29ce484222325ull ^ n;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, p + i, 8);
    h = (h ^ w) * 0x100000001b3ull;
  }
  for (; i < n; i++)
    h = (h ^ p[i]) * 0x100000001b3ull;
  return h ^ (h >> 29);
}

static kr_module_t *find_cached(kr_device_t *dev, const void *spirv, size_t nbytes) {
  uint64_t h = spirv_hash(spirv, nbytes);
  for (kr_cached_module_t *c = dev->modules; c; c = c->next)
    if (c->hash == h && c->nbytes == nbytes && !memcmp(c->spirv, spirv, nbytes)) return c->mod;
  return NULL;
}

/* The cached module for these bytes on dev, built on first use (from the native binary when
 * one is given). Called under dev->modules_lock. */
static kr_module_t *cached_module(kr_device_t *dev, const void *spirv, size_t nbytes,
                                  const void *native, size_t native_len, kr_error_t *err) {
  kr_module_t *found = find_cached(dev, spirv, nbytes);
  if (found) return found;
  kr_cached_module_t *c = calloc(1, sizeof *c);
  void *copy = malloc(nbytes);
  if (!c || !copy) {
    free(c);
    free(copy);
    kr_fail(err, KR_ERR_OUT_OF_MEMORY, "out of host memory");
    return NULL;
  }
  c->mod = native ? module_create(dev, ZE_MODULE_FORMAT_NATIVE, native, native_len, NULL, err)
                  : kr_module_create(dev, spirv, nbytes, NULL, err);
  if (!c->mod) {
    free(c);
    free(copy);
    return NULL;
  }
  memcpy(copy, spirv, nbytes);
  c->hash = spirv_hash(spirv, nbytes);
  c->nbytes = nbytes;
  c->spirv = copy;
  c->next = dev->modules;
  dev->modules = c;
  return c->mod;
}

kr_kernel_t *kr_kernel_get(kr_device_t *dev, const void *spirv, size_t nbytes, const char *name,
                           kr_error_t *err) {
  if (!dev || !spirv || !nbytes || !name) {
    kr_fail(err, KR_ERR_INVALID_ARGUMENT, "kr_kernel_get: %s",
            !dev ? "NULL device" : (!name ? "NULL kernel name" : "empty SPIR-V module"));
    return NULL;
  }
  pthread_mutex_lock(&dev->modules_lock);
  kr_module_t *mod = cached_module(dev, spirv, nbytes, NULL, 0, err);
  pthread_mutex_unlock(&dev->modules_lock);
  return mod ? kr_module_kernel(mod, name, err) : NULL;
}

kr_status_t kr_module_cache_native(kr_device_t *dev, const void *spirv, size_t nbytes,
                                   const void *native, size_t native_len, kr_error_t *err) {
  if (!dev || !spirv || !nbytes || !native || !native_len)
    return kr_fail(err, KR_ERR_INVALID_ARGUMENT, "kr_module_cache_native: %s",
                   !dev ? "NULL device" : "empty SPIR-V module or native binary");
  pthread_mutex_lock(&dev->modules_lock);
  kr_module_t *mod = cached_module(dev, spirv, nbytes, native, native_len, err);
  pthread_mutex_unlock(&dev->modules_lock);
  return mod ? KR_OK : err ? err->status : KR_ERR_BUILD;
}

/* zeModuleGetNativeBinary's two calls into a malloc'ed buffer. */
static kr_status_t native_binary(kr_module_t *mod, void **out, size_t *len, kr_error_t *err) {
  size_t n = 0;
  ze_result_t r = zeModuleGetNativeBinary(mod->h, &n, NULL);
  if (r == ZE_RESULT_ERROR_UNSUPPORTED_FEATURE || r == ZE_RESULT_ERROR_UNINITIALIZED ||
      (r == ZE_RESULT_SUCCESS && n == 0))
    return kr_fail(err, KR_ERR_UNSUPPORTED, "the driver of %s gives no native binaries",
                   mod->dev->info.name);
  if (r) return kr_ze_fail(err, r, "zeModuleGetNativeBinary", mod->dev, "size");
  void *buf = malloc(n);
  if (!buf) return kr_fail(err, KR_ERR_OUT_OF_MEMORY, "out of host memory");
  r = zeModuleGetNativeBinary(mod->h, &n, buf);
  if (r) {
    free(buf);
    return kr_ze_fail(err, r, "zeModuleGetNativeBinary", mod->dev, "%zu bytes", n);
  }
  *out = buf, *len = n;
  return KR_OK;
}

kr_status_t kr_module_native_binary(kr_device_t *dev, const void *spirv, size_t nbytes, void **out,
                                    size_t *len, kr_error_t *err) {
  if (!dev || !spirv || !nbytes || !out || !len)
    return kr_fail(err, KR_ERR_INVALID_ARGUMENT, "kr_module_native_binary: %s",
                   !dev ? "NULL device" : "empty SPIR-V module or NULL output");
  pthread_mutex_lock(&dev->modules_lock);
  kr_module_t *mod = cached_module(dev, spirv, nbytes, NULL, 0, err);
  kr_status_t st = mod ? native_binary(mod, out, len, err) : (err ? err->status : KR_ERR_BUILD);
  pthread_mutex_unlock(&dev->modules_lock);
  return st;
}

const kr_kernel_info_t *kr_kernel_info(const kr_kernel_t *k) {
  return k ? &k->info : NULL;
}

void kr_device_modules_destroy(kr_device_t *dev) {
  for (kr_cached_module_t *c = dev->modules, *next; c; c = next) {
    next = c->next;
    kr_module_destroy(c->mod);
    free(c->spirv);
    free(c);
  }
  dev->modules = NULL;
}
