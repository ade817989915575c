/* Host finaliser: native binaries (compiler.h, kc_host_module_native / kc_host_load). The
 * finalised module is compiled to an ELF object once, added to the JIT as that object, and
 * kept as a binary: a header naming the host (triple, CPU, features), the kernel table (names,
 * arguments, barrier use, required group sizes) and the object. Loading one skips the SPIR-V
 * reader, the builtin rewriting, O3 and code generation: the JIT only links the object. The
 * reader trusts nothing: every length is checked against the buffer, and a binary made for
 * another CPU or by another format version is refused (the caller builds from SPIR-V).
 */
#include "finalise_host_native.h"

#include <dlfcn.h>
#include <llvm-c/TargetMachine.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define NATIVE_MAGIC "KAPIHOST"
#define NATIVE_VERSION 2u /* 2: kernels record whether they spin (fiber scheme) */
#define MAX_KERNELS 4096u
#define MAX_ARGS 4096u

static char *host_id;
static pthread_once_t host_once = PTHREAD_ONCE_INIT;

/* Code generated for one CPU may use instructions another lacks: the binary names its host. */
static void host_id_init(void) {
  char *t = LLVMGetDefaultTargetTriple(), *c = LLVMGetHostCPUName(), *f = LLVMGetHostCPUFeatures();
  host_id = kc_msg("%s;%s;%s;%s", t, c, f, getenv("KAPI_HOST_NO_LIBMVEC") ? "nomvec" : "mvec");
  LLVMDisposeMessage(t);
  LLVMDisposeMessage(c);
  LLVMDisposeMessage(f);
}

static const char *host(void) {
  pthread_once(&host_once, host_id_init);
  return host_id ? host_id : "";
}

int kc_hf_emit_object(kc_hf_jit_t *j, LLVMModuleRef m, void **obj, size_t *len, char **log) {
  char *err = NULL;
  LLVMMemoryBufferRef buf = NULL;
  if (LLVMTargetMachineEmitToMemoryBuffer(j->tm, m, LLVMObjectFile, &err, &buf)) {
    *log = kc_msg("code generation failed: %s", err ? err : "unknown error");
    LLVMDisposeMessage(err);
    return 0;
  }
  *len = LLVMGetBufferSize(buf);
  *obj = malloc(*len ? *len : 1);
  if (*obj) memcpy(*obj, LLVMGetBufferStart(buf), *len);
  LLVMDisposeMemoryBuffer(buf);
  if (!*obj) *log = kc_msg("out of memory");
  return *obj != NULL;
}

int kc_hf_jit_add_object(kc_hf_jit_t *j, const void *obj, size_t len, char **log) {
  LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRangeCopy(obj, len, "kapi-host-object");
  LLVMErrorRef e = LLVMOrcLLJITAddObjectFile(j->jit, LLVMOrcLLJITGetMainJITDylib(j->jit), buf);
  if (e) {
    char *m = LLVMGetErrorMessage(e);
    *log = kc_msg("cannot add the object to the JIT: %s", m);
    LLVMDisposeErrorMessage(m);
  }
  return !e;
}

/* ---- writing ------------------------------------------------------------------------- */

typedef struct {
  uint8_t *p;
  size_t n, cap;
} out_t;

static int put(out_t *o, const void *d, size_t n) {
  if (o->n + n > o->cap) {
    size_t cap = (o->cap ? o->cap * 2 : 4096) + n;
    uint8_t *p = realloc(o->p, cap);
    if (!p) return 0;
    o->p = p, o->cap = cap;
  }
  memcpy(o->p + o->n, d, n);
  o->n += n;
  return 1;
}

static int put_u32(out_t *o, uint32_t v) {
  return put(o, &v, 4);
}

static int put_str(out_t *o, const char *s) {
  uint32_t n = (uint32_t)strlen(s);
  return put_u32(o, n) && put(o, s, n);
}

void *kc_hf_native_pack(const kc_host_kernel_t *ks, uint32_t n, const void *obj, size_t len,
                        size_t *out_len) {
  out_t o = {0};
  uint64_t len64 = len;
  int ok = put(&o, NATIVE_MAGIC, 8) && put_u32(&o, NATIVE_VERSION) && put_str(&o, host()) &&
           put_u32(&o, n);
  for (uint32_t i = 0; ok && i < n; i++) {
    const kc_host_kernel_t *k = &ks[i];
    ok = put_str(&o, k->name) && put_u32(&o, k->num_args);
    for (uint32_t a = 0; ok && a < k->num_args; a++)
      ok = put_u32(&o, (uint32_t)k->args[a].kind) && put_u32(&o, k->args[a].size);
    ok = ok && put_u32(&o, k->uses_barrier) && put_u32(&o, k->spins) &&
         put(&o, k->required_local_size, 12);
  }
  ok = ok && put(&o, &len64, 8) && put(&o, obj, len);
  if (!ok) {
    free(o.p);
    return NULL;
  }
  *out_len = o.n;
  return o.p;
}

/* ---- reading ------------------------------------------------------------------------- */

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

/* A malloc'ed NUL-terminated copy of a length-prefixed string. */
static char *get_str(in_t *in) {
  uint32_t n;
  if (!get_u32(in, &n) || n > in->n - in->at) return NULL;
  char *s = malloc((size_t)n + 1);
  if (!s) return NULL;
  memcpy(s, in->p + in->at, n);
  s[n] = 0;
  in->at += n;
  return s;
}

static int get_kernel(in_t *in, kc_host_kernel_t *k) {
  uint32_t n;
  if (!(k->name = get_str(in)) || !get_u32(in, &n) || n > MAX_ARGS) return 0;
  kc_host_arg_t *args = calloc(n ? n : 1, sizeof *args);
  if (!args) return 0;
  k->args = args;
  k->num_args = n;
  for (uint32_t a = 0; a < n; a++) {
    uint32_t kind;
    if (!get_u32(in, &kind) || kind > KC_ARG_LOCAL || !get_u32(in, &args[a].size)) return 0;
    args[a].kind = (kc_arg_kind_t)kind;
  }
  return get_u32(in, &k->uses_barrier) && get_u32(in, &k->spins) &&
         get(in, k->required_local_size, 12);
}

void kc_hf_native_kernels_free(kc_host_kernel_t *ks, uint32_t n) {
  for (uint32_t i = 0; ks && i < n; i++) {
    free((char *)ks[i].name);
    free((void *)ks[i].args);
  }
  free(ks);
}

kc_status_t kc_hf_native_unpack(const void *blob, size_t len, kc_host_kernel_t **ks_out,
                                uint32_t *n_out, const void **obj, size_t *obj_len, char **log) {
  in_t in = {blob, len, 0};
  char magic[8];
  uint32_t version, n;
  if (!get(&in, magic, 8) || memcmp(magic, NATIVE_MAGIC, 8) || !get_u32(&in, &version) ||
      version != NATIVE_VERSION) {
    *log = kc_msg("not a native binary of this kapi CPU driver (bad header or version)");
    return KC_ERR_INVALID_ARGUMENT;
  }
  char *id = get_str(&in);
  int same = id && !strcmp(id, host());
  free(id);
  if (!same) {
    *log =
        kc_msg("native binary was made for another CPU or configuration (this host: %s)", host());
    return KC_ERR_INVALID_ARGUMENT;
  }
  if (!get_u32(&in, &n) || n > MAX_KERNELS) goto bad;
  kc_host_kernel_t *ks = calloc(n ? n : 1, sizeof *ks);
  if (!ks) return KC_ERR_OUT_OF_MEMORY;
  uint32_t i = 0;
  while (i < n && get_kernel(&in, &ks[i]))
    i++;
  uint64_t olen;
  if (i < n || !get(&in, &olen, 8) || olen != in.n - in.at || olen == 0) {
    kc_hf_native_kernels_free(ks, i < n ? i + 1 : n);
    goto bad;
  }
  *ks_out = ks, *n_out = n;
  *obj = in.p + in.at, *obj_len = (size_t)olen;
  return KC_OK;
bad:
  *log = kc_msg("native binary is truncated or malformed");
  return KC_ERR_INVALID_ARGUMENT;
}

void kc_hf_native_prepare_process(void) {
  /* Objects built with libmvec's variants need them visible to the JIT's process search,
   * as finalising loads them (finalise_host_vecmath.c). */
  if (!getenv("KAPI_HOST_NO_LIBMVEC")) dlopen("libmvec.so.1", RTLD_NOW | RTLD_GLOBAL);
}
