/* Modules and kernels: SPIR-V through kapi's NVPTX finaliser to PTX, loaded with
 * cuModuleLoadDataEx (the driver JIT compiles PTX for the GPU at hand); the finaliser's or
 * the JIT's messages come back as the build log. Native binaries (cuda_module_native.c) hold
 * the finaliser's kernel table and PTX plus the cubin; ZE_MODULE_FORMAT_NATIVE loads one
 * without LLVM work or, with its cubin, any JIT (kapi's disk cache keeps them). Launches map group
 * counts to the grid and the group size to the block; local-memory arguments share the dynamic
 * shared memory.
 */
#include "cuda_driver.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* KAPI_CUDA_LIBDEVICE, else $CUDA_HOME or /usr/local/cuda's nvvm/libdevice/libdevice.10.bc. */
static const char *libdevice_path(char *buf, size_t cap) {
  const char *env = getenv("KAPI_CUDA_LIBDEVICE");
  if (env && *env) return env;
  const char *homes[] = {getenv("CUDA_HOME"), getenv("CUDA_PATH"), "/usr/local/cuda"};
  for (size_t i = 0; i < 3; ++i) {
    if (!homes[i] || !*homes[i]) continue;
    snprintf(buf, cap, "%s/nvvm/libdevice/libdevice.10.bc", homes[i]);
    if (access(buf, R_OK) == 0) return buf;
  }
  return NULL;
}

/* Threads per block of coarsened launches; 0 turns coarsening off. KAPI_CUDA_COARSEN: unset or
 * 1 for the default, 0 for off (to compare), or a power of two from 32 to 1024. */
#define COARSE_BLOCK_DEFAULT 256

static uint32_t g_coarse_block;
static pthread_once_t g_coarse_once = PTHREAD_ONCE_INIT;

static void read_coarse_block(void) {
  const char *env = getenv("KAPI_CUDA_COARSEN");
  long v = env && *env ? strtol(env, NULL, 10) : 1;
  if (v == 1 || v < 0 || v > 1024 || (v && (v < 32 || (v & (v - 1))))) v = COARSE_BLOCK_DEFAULT;
  g_coarse_block = (uint32_t)v;
}

static uint32_t coarse_block(void) {
  pthread_once(&g_coarse_once, read_coarse_block);
  return g_coarse_block;
}

static void give_log(char *text, ze_module_build_log_handle_t *out) {
  zed_build_log_t *log = zed_build_log_create(text);
  if (log)
    zed_build_log_give(log, out);
  else if (out)
    *out = NULL;
}

static ze_result_t load_ptx(cuda_module_t *m, ze_module_build_log_handle_t *log) {
  char err[8192] = "";
  int opts[3] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                 CU_JIT_GENERATE_LINE_INFO};
  void *vals[3] = {err, (void *)(uintptr_t)sizeof err, (void *)(uintptr_t)1};
  const char *ptx = kc_nvptx_module_ptx(m->nv, NULL);
  const char *debug_dir = cuda_ptx_debug_dir();
  char *annotated = debug_dir ? cuda_ptx_debug_annotate(debug_dir, ptx) : NULL;
  CUresult cr =
      cuda.cuModuleLoadDataEx(&m->mod, annotated ? annotated : ptx, annotated ? 3 : 2, opts, vals);
  free(annotated);
  if (cr == CUDA_SUCCESS) return ZE_RESULT_SUCCESS;
  size_t n = strlen(err) + 64;
  char *text = malloc(n);
  if (text) snprintf(text, n, "CUDA JIT (%s): %s", cuda_result_name(cr), err);
  give_log(text, log);
  ze_result_t r = cuda_to_ze(cr);
  return r == ZE_RESULT_ERROR_UNKNOWN ? ZE_RESULT_ERROR_MODULE_BUILD_FAILURE : r;
}

ze_result_t cuda_module_create(ze_context_handle_t c, ze_device_handle_t d,
                               const ze_module_desc_t *desc, ze_module_handle_t *out,
                               ze_module_build_log_handle_t *log) {
  ZED_CHECK(c, ZED_KIND_CONTEXT);
  ZED_CHECK(d, ZED_KIND_DEVICE);
  ZED_CHECK_PTR(desc);
  ZED_CHECK_PTR(out);
  if (log) *log = NULL;
  if (desc->format != ZE_MODULE_FORMAT_IL_SPIRV && desc->format != ZE_MODULE_FORMAT_NATIVE)
    return ZE_RESULT_ERROR_INVALID_ENUMERATION;
  ZED_CHECK_PTR(desc->pInputModule);
  int native = desc->format == ZE_MODULE_FORMAT_NATIVE;
  cuda_module_t *m = calloc(1, sizeof *m);
  if (!m) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  m->device = (cuda_device_t *)d;
  char buf[1024];
  kc_nvptx_options_t o;
  kc_nvptx_options_init(&o);
  o.libdevice_path = libdevice_path(buf, sizeof buf);
  o.sm = (uint32_t)(m->device->sm_major * 10 + m->device->sm_minor);
  o.coarsen = coarse_block() != 0;
  char *text = NULL;
  const void *nv = desc->pInputModule, *cubin = NULL;
  size_t nv_len = desc->inputSize, cubin_len = 0;
  kc_status_t st = KC_OK;
  if (native &&
      !cuda_native_split(desc->pInputModule, desc->inputSize, &nv, &nv_len, &cubin, &cubin_len)) {
    st = KC_ERR_INVALID_ARGUMENT;
    text = strdup("kapi cuda driver: not a native binary of this driver (bad header)");
  } else if (native) {
    st = kc_nvptx_load(nv, nv_len, &o, &m->nv, &text);
  } else {
    st = kc_nvptx_finalise(desc->pInputModule, desc->inputSize, &o, &m->nv, &text);
  }
  ze_result_t r = st == KC_OK                               ? cuda_use(m->device)
                  : native && st == KC_ERR_INVALID_ARGUMENT ? ZE_RESULT_ERROR_INVALID_NATIVE_BINARY
                                                            : ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
  if (st != KC_OK)
    give_log(text, log);
  else
    free(text);
  /* A cubin the GPU or driver refuses costs only the JIT of the PTX beside it. */
  int loaded = r == ZE_RESULT_SUCCESS && cubin_len && !cuda_ptx_debug_dir() &&
               cuda.cuModuleLoadDataEx(&m->mod, cubin, 0, NULL, NULL) == CUDA_SUCCESS;
  if (r == ZE_RESULT_SUCCESS && !loaded) r = load_ptx(m, log);
  if (r != ZE_RESULT_SUCCESS) {
    kc_nvptx_module_destroy(m->nv);
    free(m);
    return r;
  }
  if (log && !*log) give_log(NULL, log);
  zed_object_init(&m->obj, ZED_KIND_MODULE);
  *out = (ze_module_handle_t)m;
  return ZE_RESULT_SUCCESS;
}

ze_result_t cuda_module_destroy(ze_module_handle_t h) {
  ZED_CHECK(h, ZED_KIND_MODULE);
  cuda_module_t *m = (cuda_module_t *)h;
  cuda_use(m->device);
  cuda.cuModuleUnload(m->mod);
  kc_nvptx_module_destroy(m->nv);
  zed_object_retire(&m->obj);
  free(m->native);
  free(m);
  return ZE_RESULT_SUCCESS;
}

ze_result_t cuda_module_get_kernel_names(ze_module_handle_t h, uint32_t *count, const char **n) {
  ZED_CHECK(h, ZED_KIND_MODULE);
  ZED_CHECK_PTR(count);
  cuda_module_t *m = (cuda_module_t *)h;
  uint32_t have = kc_nvptx_module_kernel_count(m->nv);
  if (!zed_list(count, n, have)) return ZE_RESULT_SUCCESS;
  for (uint32_t i = 0; i < *count; ++i)
    n[i] = kc_nvptx_module_kernel(m->nv, i)->name;
  return ZE_RESULT_SUCCESS;
}

ze_result_t cuda_kernel_create(ze_module_handle_t mh, const ze_kernel_desc_t *desc,
                               ze_kernel_handle_t *out) {
  ZED_CHECK(mh, ZED_KIND_MODULE);
  ZED_CHECK_PTR(desc);
  ZED_CHECK_PTR(desc->pKernelName);
  ZED_CHECK_PTR(out);
  cuda_module_t *m = (cuda_module_t *)mh;
  const kc_nvptx_kernel_t *info = kc_nvptx_module_find(m->nv, desc->pKernelName);
  if (!info) return ZE_RESULT_ERROR_INVALID_KERNEL_NAME;
  cuda_kernel_t *k = calloc(1, sizeof *k);
  if (!k) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  size_t n = info->num_args ? info->num_args : 1;
  k->values = calloc(n, sizeof *k->values);
  k->local_bytes = calloc(n, sizeof *k->local_bytes);
  ze_result_t r =
      k->values && k->local_bytes ? cuda_use(m->device) : ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  if (r == ZE_RESULT_SUCCESS) r = cuda_to_ze(cuda.cuModuleGetFunction(&k->fn, m->mod, info->name));
  if (r != ZE_RESULT_SUCCESS) {
    free(k->values);
    free(k->local_bytes);
    free(k);
    return r == ZE_RESULT_ERROR_INVALID_ARGUMENT ? ZE_RESULT_ERROR_INVALID_KERNEL_NAME : r;
  }
  /* Without its coarsened entry a kernel still runs, one work-item per thread. */
  if (r == ZE_RESULT_SUCCESS && info->coarse_name &&
      cuda.cuModuleGetFunction(&k->coarse_fn, m->mod, info->coarse_name) != CUDA_SUCCESS)
    k->coarse_fn = NULL;
  /* Nor without its aligned entry: the kernel itself serves every launch. Nor with one that
   * allows fewer threads per block than the kernel (more registers): a group size the
   * kernel takes must not fail to launch. */
  if (r == ZE_RESULT_SUCCESS && info->aligned_name &&
      cuda.cuModuleGetFunction(&k->aligned_fn, m->mod, info->aligned_name) != CUDA_SUCCESS)
    k->aligned_fn = NULL;
  int most = 0, most_aligned = 0;
  if (k->aligned_fn && cuda.cuFuncGetAttribute &&
      (cuda.cuFuncGetAttribute(&most, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, k->fn) !=
           CUDA_SUCCESS ||
       cuda.cuFuncGetAttribute(&most_aligned, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                               k->aligned_fn) != CUDA_SUCCESS ||
       most_aligned < most))
    k->aligned_fn = NULL;
  k->module = m;
  k->info = info;
  for (uint32_t i = 0; i < info->num_args; ++i)
    k->has_local |= info->args[i].kind == KC_ARG_LOCAL;
  for (int i = 0; i < 3; ++i)
    k->group[i] = info->required_local_size[i] ? info->required_local_size[i] : 1;
  zed_object_init(&k->obj, ZED_KIND_KERNEL);
  *out = (ze_kernel_handle_t)k;
  return ZE_RESULT_SUCCESS;
}

ze_result_t cuda_kernel_destroy(ze_kernel_handle_t h) {
  ZED_CHECK(h, ZED_KIND_KERNEL);
  cuda_kernel_t *k = (cuda_kernel_t *)h;
  zed_object_retire(&k->obj);
  free(k->values);
  free(k->local_bytes);
  free(k);
  return ZE_RESULT_SUCCESS;
}

ze_result_t cuda_kernel_set_group_size(ze_kernel_handle_t h, uint32_t x, uint32_t y, uint32_t z) {
  ZED_CHECK(h, ZED_KIND_KERNEL);
  cuda_kernel_t *k = (cuda_kernel_t *)h;
  const ze_device_compute_properties_t *c = &k->module->device->compute;
  if (!x || !y || !z || x > c->maxGroupSizeX || y > c->maxGroupSizeY || z > c->maxGroupSizeZ ||
      (uint64_t)x * y * z > c->maxTotalGroupSize)
    return ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION;
  k->group[0] = x;
  k->group[1] = y;
  k->group[2] = z;
  return ZE_RESULT_SUCCESS;
}

/* Largest divisor of n not above cap. */
static uint32_t divisor_up_to(uint32_t n, uint32_t cap) {
  for (uint32_t d = cap < n ? cap : n; d > 1; --d)
    if (n % d == 0) return d;
  return 1;
}

ze_result_t cuda_kernel_suggest_group_size(ze_kernel_handle_t h, uint32_t gx, uint32_t gy,
                                           uint32_t gz, uint32_t *x, uint32_t *y, uint32_t *z) {
  ZED_CHECK(h, ZED_KIND_KERNEL);
  ZED_CHECK_PTR(x);
  ZED_CHECK_PTR(y);
  ZED_CHECK_PTR(z);
  *x = divisor_up_to(gx ? gx : 1, 256);
  *y = divisor_up_to(gy ? gy : 1, 256 / *x);
  *z = divisor_up_to(gz ? gz : 1, 256 / (*x * *y));
  return ZE_RESULT_SUCCESS;
}

ze_result_t cuda_kernel_set_argument(ze_kernel_handle_t h, uint32_t i, size_t size,
                                     const void *value) {
  ZED_CHECK(h, ZED_KIND_KERNEL);
  cuda_kernel_t *k = (cuda_kernel_t *)h;
  if (i >= k->info->num_args) return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX;
  const kc_host_arg_t *a = &k->info->args[i];
  if (a->kind == KC_ARG_LOCAL) {
    if (value) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    k->local_bytes[i] = (uint32_t)size;
    return ZE_RESULT_SUCCESS;
  }
  if (size != a->size || size > sizeof(uint64_t))
    return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE;
  k->values[i] = 0;
  if (value) memcpy(&k->values[i], value, size);
  return ZE_RESULT_SUCCESS;
}

ze_result_t cuda_kernel_get_properties(ze_kernel_handle_t h, ze_kernel_properties_t *p) {
  ZED_CHECK(h, ZED_KIND_KERNEL);
  ZED_CHECK_PTR(p);
  cuda_kernel_t *k = (cuda_kernel_t *)h;
  p->numKernelArgs = k->info->num_args;
  p->requiredGroupSizeX = k->info->required_local_size[0];
  p->requiredGroupSizeY = k->info->required_local_size[1];
  p->requiredGroupSizeZ = k->info->required_local_size[2];
  p->requiredNumSubGroups = 0;
  p->requiredSubgroupSize = 0;
  p->maxSubgroupSize = 32;
  p->maxNumSubgroups = k->module->device->compute.maxTotalGroupSize / 32;
  p->localMemSize = 0;
  p->privateMemSize = 0;
  p->spillMemSize = 0;
  memset(&p->uuid, 0, sizeof p->uuid);
  return ZE_RESULT_SUCCESS;
}

ze_result_t cuda_kernel_get_name(ze_kernel_handle_t h, size_t *size, char *name) {
  ZED_CHECK(h, ZED_KIND_KERNEL);
  ZED_CHECK_PTR(size);
  const char *n = ((cuda_kernel_t *)h)->info->name;
  size_t need = strlen(n) + 1;
  if (*size == 0 || !name) {
    *size = need;
    return ZE_RESULT_SUCCESS;
  }
  if (*size < need) return ZE_RESULT_ERROR_INVALID_SIZE;
  memcpy(name, n, need);
  return ZE_RESULT_SUCCESS;
}

static uint64_t *cmd_values(const cuda_cmd_t *c) {
  return c->nvalues <= CUDA_CMD_INLINE ? (uint64_t *)c->vbuf : c->values;
}

/* Threads per block of a coarsened launch: the chosen size shared out over the kernel's y and z
 * block extents (0 when they leave none). */
static uint32_t coarse_block_x(const cuda_kernel_t *k) {
  return coarse_block() / (k->group[1] * k->group[2]);
}

/* The coarsened entry serves a launch when every pointer it declares 16-byte aligned is, and
 * its grid fits CUDA's limit along x. */
static int coarse_allowed(const cuda_kernel_t *k, uint64_t size_x) {
  const kc_nvptx_kernel_t *in = k->info;
  uint32_t bx = k->coarse_fn ? coarse_block_x(k) : 0;
  if (!bx) return 0;
  for (uint32_t i = 0; i < in->num_args; ++i)
    if ((in->coarse_aligned >> i & 1) && (k->values[i] & 15)) return 0;
  uint64_t threads = (size_x + in->coarse_factor - 1) / in->coarse_factor;
  return (threads + bx - 1) / bx <= INT32_MAX;
}

/* Enough blocks of the coarsened entry to give every consecutive run of coarse_factor
 * work-items along x a thread; groups do not exist for it, so any block shape will do. */
static void coarse_geometry(cuda_cmd_t *c, const cuda_kernel_t *k, uint64_t size_x) {
  uint32_t f = k->info->coarse_factor, bx = coarse_block_x(k);
  uint64_t threads = (size_x + f - 1) / f;
  if (threads < bx) bx = (uint32_t)threads;
  c->block[0] = bx ? bx : 1;
  c->grid[0] = (uint32_t)((threads + c->block[0] - 1) / c->block[0]);
}

/* The aligned entry serves a launch (in the kernel's place, same grid and arguments) when
 * every pointer it declares 16-byte aligned is: a view at another offset takes the kernel. */
static int aligned_allowed(const cuda_kernel_t *k) {
  const kc_nvptx_kernel_t *in = k->info;
  if (!k->aligned_fn) return 0;
  for (uint32_t i = 0; i < in->num_args; ++i)
    if ((in->aligned_mask >> i & 1) && (k->values[i] & 15)) return 0;
  return 1;
}

ze_result_t cuda_launch_prepare(cuda_cmd_t *c, cuda_kernel_t *k, const ze_group_count_t *groups) {
  uint32_t n = k->info->num_args;
  uint64_t size_x = (uint64_t)groups->groupCountX * k->group[0];
  int coarse = coarse_allowed(k, size_x);
  c->kernel = k;
  c->fn = coarse ? k->coarse_fn : aligned_allowed(k) ? k->aligned_fn : k->fn;
  c->nvalues = n + (coarse ? 1 : 0);
  if (c->nvalues > CUDA_CMD_INLINE && !(c->values = malloc(c->nvalues * sizeof *c->values)))
    return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  uint64_t *values = cmd_values(c);
  memcpy(values, k->values, n * sizeof *values);
  if (coarse) values[n] = size_x;
  uint64_t shared = 0;
  if (k->has_local)
    for (uint32_t i = 0; i < n; ++i)
      if (k->info->args[i].kind == KC_ARG_LOCAL) {
        values[i] = shared;
        shared = (shared + k->local_bytes[i] + 15) & ~(uint64_t)15;
      }
  if (shared > (uint64_t)k->module->device->max_shared_optin)
    return ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;
  if ((int)shared > k->dyn_shared_limit) {
    cuda_use(k->module->device);
    CUresult cr = cuda.cuFuncSetAttribute(k->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                          (int)shared);
    if (cr == CUDA_SUCCESS && k->aligned_fn)
      cr = cuda.cuFuncSetAttribute(k->aligned_fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                   (int)shared);
    if (cr != CUDA_SUCCESS) return cuda_to_ze(cr);
    k->dyn_shared_limit = (int)shared;
  }
  uint32_t sh = (uint32_t)shared;
  memcpy(c->pattern, &sh, sizeof sh); /* the dynamic shared-memory size travels here */
  c->grid[0] = groups->groupCountX;
  c->grid[1] = groups->groupCountY;
  c->grid[2] = groups->groupCountZ;
  memcpy(c->block, k->group, sizeof c->block);
  if (coarse) coarse_geometry(c, k, size_x);
  return ZE_RESULT_SUCCESS;
}

ze_result_t cuda_list_append_launch(ze_command_list_handle_t h, ze_kernel_handle_t kh,
                                    const ze_group_count_t *groups, ze_event_handle_t sig,
                                    uint32_t nwait, ze_event_handle_t *waits) {
  ZED_CHECK(kh, ZED_KIND_KERNEL);
  ZED_CHECK_PTR(groups);
  return cuda_list_submit_launch(h, (cuda_kernel_t *)kh, groups, sig, nwait, waits);
}

ze_result_t cuda_launch(const cuda_cmd_t *c, CUstream s) {
  uint32_t n = c->nvalues, shared;
  memcpy(&shared, c->pattern, sizeof shared);
  void *params[257];
  if (n > 257) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  uint64_t *values = cmd_values(c);
  for (uint32_t i = 0; i < n; ++i)
    params[i] = &values[i];
  return cuda_to_ze(cuda.cuLaunchKernel(c->fn, c->grid[0], c->grid[1], c->grid[2], c->block[0],
                                        c->block[1], c->block[2], shared, s, params, NULL));
}
