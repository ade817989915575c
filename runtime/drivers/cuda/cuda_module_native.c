/* Native binaries of CUDA modules (zeModuleGetNativeBinary, ZE_MODULE_FORMAT_NATIVE): a small
 * header, the cubin the CUDA linker makes of the module's PTX for this GPU (absent when libcuda
 * has no linker or it fails), then the NVPTX finaliser's binary (kernel table and PTX,
 * kc_nvptx_module_native). Loading one needs no LLVM work and, with the cubin, no PTX JIT;
 * a cubin the GPU refuses falls back to the PTX. The linker runs once per module, when the
 * binary is first asked for (the disk cache asks once per kernel and device).
 */
#include "cuda_driver.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define CUBIN_MAGIC "KAPICUBN"
#define CUBIN_VERSION 1u
#define HEADER (8 + 4 + 8)

static pthread_mutex_t g_native_lock = PTHREAD_MUTEX_INITIALIZER;

/* The cubin of the PTX for the current context's GPU (malloc'ed), or NULL. */
static void *link_cubin(const char *ptx, size_t ptx_len, size_t *len) {
  if (!cuda.cuLinkCreate || !cuda.cuLinkAddData || !cuda.cuLinkComplete || !cuda.cuLinkDestroy)
    return NULL;
  CUlinkState link = NULL;
  if (cuda.cuLinkCreate(0, NULL, NULL, &link) != CUDA_SUCCESS) return NULL;
  void *out = NULL, *cubin = NULL;
  size_t n = 0;
  if (cuda.cuLinkAddData(link, CU_JIT_INPUT_PTX, (void *)ptx, ptx_len + 1, "kapi", 0, NULL, NULL) ==
          CUDA_SUCCESS &&
      cuda.cuLinkComplete(link, &cubin, &n) == CUDA_SUCCESS && cubin && n) {
    out = malloc(n);
    if (out) memcpy(out, cubin, n), *len = n;
  }
  cuda.cuLinkDestroy(link); /* owns cubin */
  return out;
}

static ze_result_t make_native(cuda_module_t *m) {
  size_t nv_len = 0, cubin_len = 0, ptx_len = 0;
  void *nv = kc_nvptx_module_native(m->nv, &nv_len);
  if (!nv) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  const char *ptx = kc_nvptx_module_ptx(m->nv, &ptx_len);
  void *cubin =
      cuda_use(m->device) == ZE_RESULT_SUCCESS ? link_cubin(ptx, ptx_len, &cubin_len) : NULL;
  uint8_t *b = malloc(HEADER + cubin_len + nv_len);
  if (b) {
    uint32_t v = CUBIN_VERSION;
    uint64_t c = cubin_len;
    memcpy(b, CUBIN_MAGIC, 8);
    memcpy(b + 8, &v, 4);
    memcpy(b + 12, &c, 8);
    if (cubin_len) memcpy(b + HEADER, cubin, cubin_len);
    memcpy(b + HEADER + cubin_len, nv, nv_len);
    m->native = b;
    m->native_len = HEADER + cubin_len + nv_len;
  }
  free(cubin);
  kc_free(nv);
  return b ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
}

/* The Level Zero two-call idiom: *size first, then the bytes. */
ze_result_t cuda_module_get_native_binary(ze_module_handle_t h, size_t *size, uint8_t *binary) {
  ZED_CHECK(h, ZED_KIND_MODULE);
  ZED_CHECK_PTR(size);
  cuda_module_t *m = (cuda_module_t *)h;
  pthread_mutex_lock(&g_native_lock);
  ze_result_t r = m->native ? ZE_RESULT_SUCCESS : make_native(m);
  pthread_mutex_unlock(&g_native_lock);
  if (r != ZE_RESULT_SUCCESS) return r;
  if (binary && *size < m->native_len) return ZE_RESULT_ERROR_INVALID_SIZE;
  if (binary) memcpy(binary, m->native, m->native_len);
  *size = m->native_len;
  return ZE_RESULT_SUCCESS;
}

int cuda_native_split(const void *bin, size_t len, const void **nv, size_t *nv_len,
                      const void **cubin, size_t *cubin_len) {
  const uint8_t *b = bin;
  uint32_t v;
  uint64_t c;
  if (len < HEADER || memcmp(b, CUBIN_MAGIC, 8)) return 0;
  memcpy(&v, b + 8, 4);
  memcpy(&c, b + 12, 8);
  if (v != CUBIN_VERSION || c > len - HEADER) return 0;
  *cubin = b + HEADER, *cubin_len = (size_t)c;
  *nv = b + HEADER + c, *nv_len = len - HEADER - (size_t)c;
  return 1;
}
