/* NVPTX finaliser: native binaries (compiler.h, kc_nvptx_module_native / kc_nvptx_load). A
 * binary is the module's kernel table (names, arguments, required group sizes, coarsened
 * entries) and its PTX, with the options that shaped them (target sm, coarsening). Loading one
 * skips the SPIR-V reader and all LLVM work; the CUDA driver's own JIT (and its compute cache)
 * turns the PTX into GPU code as for a finalised module. Every length is checked against the
 * buffer; a binary made with other options is refused.
 */
#include "finalise/native_blob.h"
#include "finalise/nvptx/finalise_nvptx.h"

#include <stdlib.h>
#include <string.h>

#define NVPTX_MAGIC "KAPINVPX"
#define NVPTX_NATIVE_VERSION 2u
#define MAX_KERNELS 4096u
#define MAX_ARGS 4096u

void *kc_nvptx_native_pack(const kc_nvptx_kernel_list_t *ks, const char *ptx, size_t ptx_len,
                           uint32_t sm, int coarsen, size_t *len) {
  kc_blob_out_t o = {0};
  uint64_t plen = ptx_len;
  kc_blob_put(&o, NVPTX_MAGIC, 8);
  kc_blob_put_u32(&o, NVPTX_NATIVE_VERSION);
  kc_blob_put_u32(&o, sm);
  kc_blob_put_u32(&o, (uint32_t)(coarsen != 0));
  kc_blob_put_u32(&o, ks->count);
  for (uint32_t i = 0; i < ks->count; i++) {
    const kc_nvptx_kernel_t *k = &ks->items[i];
    kc_blob_put_str(&o, k->name);
    kc_blob_put_args(&o, k->args, k->num_args);
    kc_blob_put(&o, k->required_local_size, 12);
    kc_blob_put_str(&o, k->coarse_name);
    kc_blob_put_u32(&o, k->coarse_factor);
    kc_blob_put(&o, &k->coarse_aligned, 8);
    kc_blob_put_str(&o, k->aligned_name);
    kc_blob_put(&o, &k->aligned_mask, 8);
  }
  kc_blob_put(&o, &plen, 8);
  kc_blob_put(&o, ptx, ptx_len);
  if (o.failed) {
    free(o.p);
    return NULL;
  }
  *len = o.n;
  return o.p;
}

static int get_kernel(kc_blob_in_t *in, kc_nvptx_kernel_t *k) {
  char *name = NULL, *coarse = NULL, *aligned = NULL;
  kc_host_arg_t *args = NULL;
  int ok = kc_blob_get_str(in, &name) && name;
  k->name = name;
  ok = ok && kc_blob_get_args(in, MAX_ARGS, &args, &k->num_args);
  k->args = args;
  if (!ok || !kc_blob_get(in, k->required_local_size, 12)) return 0;
  ok = kc_blob_get_str(in, &coarse);
  k->coarse_name = coarse;
  ok = ok && kc_blob_get_u32(in, &k->coarse_factor) && kc_blob_get(in, &k->coarse_aligned, 8);
  ok = ok && kc_blob_get_str(in, &aligned);
  k->aligned_name = aligned;
  return ok && kc_blob_get(in, &k->aligned_mask, 8);
}

kc_status_t kc_nvptx_native_unpack(const void *blob, size_t len, uint32_t sm, int coarsen,
                                   kc_nvptx_kernel_list_t *ks, char **ptx, size_t *ptx_len,
                                   char **log) {
  kc_blob_in_t in = {blob, len, 0};
  char magic[8];
  uint32_t version, bsm, bcoarsen, n;
  if (!kc_blob_get(&in, magic, 8) || memcmp(magic, NVPTX_MAGIC, 8) ||
      !kc_blob_get_u32(&in, &version) || version != NVPTX_NATIVE_VERSION ||
      !kc_blob_get_u32(&in, &bsm) || !kc_blob_get_u32(&in, &bcoarsen)) {
    *log = kc_msg("not a native binary of this kapi CUDA driver (bad header or version)");
    return KC_ERR_INVALID_ARGUMENT;
  }
  if (bsm != sm || bcoarsen != (uint32_t)(coarsen != 0)) {
    *log = kc_msg("native binary was made for sm_%u%s; this device needs sm_%u%s", bsm,
                  bcoarsen ? "" : " without coarsening", sm, coarsen ? "" : " without coarsening");
    return KC_ERR_INVALID_ARGUMENT;
  }
  if (!kc_blob_get_u32(&in, &n) || n > MAX_KERNELS) goto bad;
  ks->items = calloc(n ? n : 1, sizeof *ks->items);
  if (!ks->items) return KC_ERR_OUT_OF_MEMORY;
  ks->count = 0;
  while (ks->count < n) {
    int ok = get_kernel(&in, &ks->items[ks->count]);
    ks->count++; /* a partly read entry is freed with the list */
    if (!ok) goto bad_list;
  }
  uint64_t plen;
  if (!kc_blob_get(&in, &plen, 8) || plen != in.n - in.at || plen == 0) goto bad_list;
  *ptx = malloc((size_t)plen + 1);
  if (!*ptx) {
    kc_nvptx_kernel_list_free(ks);
    return KC_ERR_OUT_OF_MEMORY;
  }
  memcpy(*ptx, in.p + in.at, (size_t)plen);
  (*ptx)[plen] = 0;
  *ptx_len = (size_t)plen;
  return KC_OK;
bad_list:
  kc_nvptx_kernel_list_free(ks);
bad:
  *log = kc_msg("native binary is truncated or malformed");
  return KC_ERR_INVALID_ARGUMENT;
}
