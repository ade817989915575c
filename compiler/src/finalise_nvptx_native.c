/* NVPTX finaliser: native binaries (compiler.h, kc_nvptx_module_native / kc_nvptx_load). A
 * binary is the module's kernel table (names, arguments, required group sizes, coarsened
 * entries) and its PTX, with the options that shaped them (target sm, coarsening). Loading one
 * skips the SPIR-V reader and all LLVM work; the CUDA driver's own JIT (and its compute cache)
 * turns the PTX into GPU code as for a finalised module. Every length is checked against the
 * buffer; a binary made with other options is refused.
 */
#include "finalise_nvptx.h"

#include <stdlib.h>
#include <string.h>

#define NVPTX_MAGIC "KAPINVPX"
#define NVPTX_NATIVE_VERSION 1u
#define MAX_KERNELS 4096u
#define MAX_ARGS 4096u

typedef struct {
  uint8_t *p;
  size_t n, cap;
  int failed;
} out_t;

static void put(out_t *o, const void *d, size_t n) {
  if (o->failed) return;
  if (o->n + n > o->cap) {
    size_t cap = (o->cap ? o->cap * 2 : 4096) + n;
    uint8_t *p = realloc(o->p, cap);
    if (!p) {
      o->failed = 1;
      return;
    }
    o->p = p, o->cap = cap;
  }
  memcpy(o->p + o->n, d, n);
  o->n += n;
}

static void put_u32(out_t *o, uint32_t v) {
  put(o, &v, 4);
}

static void put_str(out_t *o, const char *s) {
  uint32_t n = s ? (uint32_t)strlen(s) : UINT32_MAX; /* UINT32_MAX: no string (NULL) */
  put_u32(o, n);
  if (s) put(o, s, n);
}

void *kc_nvptx_native_pack(const kc_nvptx_kernel_list_t *ks, const char *ptx, size_t ptx_len,
                           uint32_t sm, int coarsen, size_t *len) {
  out_t o = {0};
  uint64_t plen = ptx_len;
  put(&o, NVPTX_MAGIC, 8);
  put_u32(&o, NVPTX_NATIVE_VERSION);
  put_u32(&o, sm);
  put_u32(&o, (uint32_t)(coarsen != 0));
  put_u32(&o, ks->count);
  for (uint32_t i = 0; i < ks->count; i++) {
    const kc_nvptx_kernel_t *k = &ks->items[i];
    put_str(&o, k->name);
    put_u32(&o, k->num_args);
    for (uint32_t a = 0; a < k->num_args; a++) {
      put_u32(&o, (uint32_t)k->args[a].kind);
      put_u32(&o, k->args[a].size);
    }
    put(&o, k->required_local_size, 12);
    put_str(&o, k->coarse_name);
    put_u32(&o, k->coarse_factor);
    put(&o, &k->coarse_aligned, 8);
  }
  put(&o, &plen, 8);
  put(&o, ptx, ptx_len);
  if (o.failed) {
    free(o.p);
    return NULL;
  }
  *len = o.n;
  return o.p;
}

typedef struct {
  const uint8_t *p;
  size_t n, at;
} in_t;

static int get(in_t *in, void *d, size_t n) {
  if (n > in->n - in->at) return 0;
  memcpy(d, in->p + in->at, n);
  in->at += n;
  return 1;
}

static int get_u32(in_t *in, uint32_t *v) {
  return get(in, v, 4);
}

/* A malloc'ed copy of a length-prefixed string; *s stays NULL for an absent one. */
static int get_str(in_t *in, char **s) {
  uint32_t n;
  *s = NULL;
  if (!get_u32(in, &n)) return 0;
  if (n == UINT32_MAX) return 1;
  if (n > in->n - in->at || !(*s = malloc((size_t)n + 1))) return 0;
  memcpy(*s, in->p + in->at, n);
  (*s)[n] = 0;
  in->at += n;
  return 1;
}

static int get_kernel(in_t *in, kc_nvptx_kernel_t *k) {
  uint32_t n;
  char *name = NULL, *coarse = NULL;
  int ok = get_str(in, &name) && name;
  k->name = name;
  if (!ok || !get_u32(in, &n) || n > MAX_ARGS) return 0;
  kc_host_arg_t *args = calloc(n ? n : 1, sizeof *args);
  if (!args) return 0;
  k->args = args;
  k->num_args = n;
  for (uint32_t a = 0; a < n; a++) {
    uint32_t kind;
    if (!get_u32(in, &kind) || kind > KC_ARG_LOCAL || !get_u32(in, &args[a].size)) return 0;
    args[a].kind = (kc_arg_kind_t)kind;
  }
  if (!get(in, k->required_local_size, 12)) return 0;
  ok = get_str(in, &coarse);
  k->coarse_name = coarse;
  return ok && get_u32(in, &k->coarse_factor) && get(in, &k->coarse_aligned, 8);
}

kc_status_t kc_nvptx_native_unpack(const void *blob, size_t len, uint32_t sm, int coarsen,
                                   kc_nvptx_kernel_list_t *ks, char **ptx, size_t *ptx_len,
                                   char **log) {
  in_t in = {blob, len, 0};
  char magic[8];
  uint32_t version, bsm, bcoarsen, n;
  if (!get(&in, magic, 8) || memcmp(magic, NVPTX_MAGIC, 8) || !get_u32(&in, &version) ||
      version != NVPTX_NATIVE_VERSION || !get_u32(&in, &bsm) || !get_u32(&in, &bcoarsen)) {
    *log = kc_msg("not a native binary of this kapi CUDA driver (bad header or version)");
    return KC_ERR_INVALID_ARGUMENT;
  }
  if (bsm != sm || bcoarsen != (uint32_t)(coarsen != 0)) {
    *log = kc_msg("native binary was made for sm_%u%s; this device needs sm_%u%s", bsm,
                  bcoarsen ? "" : " without coarsening", sm, coarsen ? "" : " without coarsening");
    return KC_ERR_INVALID_ARGUMENT;
  }
  if (!get_u32(&in, &n) || n > MAX_KERNELS) goto bad;
  ks->items = calloc(n ? n : 1, sizeof *ks->items);
  if (!ks->items) return KC_ERR_OUT_OF_MEMORY;
  ks->count = 0;
  while (ks->count < n) {
    int ok = get_kernel(&in, &ks->items[ks->count]);
    ks->count++; /* a partly read entry is freed with the list */
    if (!ok) goto bad_list;
  }
  uint64_t plen;
  if (!get(&in, &plen, 8) || plen != in.n - in.at || plen == 0) goto bad_list;
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
