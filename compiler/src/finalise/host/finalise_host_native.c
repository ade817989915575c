/* Host finaliser: native binaries (compiler.h, kc_host_module_native / kc_host_load). The
 * finalised module is compiled to an ELF object once, added to the JIT as that object, and
 * kept as a binary: a header naming the host (triple, CPU, features), the kernel table (names,
 * arguments, barrier use, required group sizes) and the object. Loading one skips the SPIR-V
 * reader, the builtin rewriting, O3 and code generation: the JIT only links the object. The
 * reader trusts nothing: every length is checked against the buffer, and a binary made for
 * another CPU or by another format version is refused (the caller builds from SPIR-V).
 */
#include "finalise/host/finalise_host_native.h"
#include "finalise/native_blob.h"

#include <dlfcn.h>
#include <llvm-c/TargetMachine.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define NATIVE_MAGIC "KAPIHOST"
/* 2: kernels record whether they spin (fiber scheme); 3: and whether they take batches of groups
 * (kc_host_kernel_t.batches); 4: objects without jump tables or unwind tables (see
 * no_cross_section_offsets: older ones may crash when linked, so they are refused); 5: and
 * their streaming entries' bytes a work-item (kc_host_kernel_t.streaming_bytes) */
#define NATIVE_VERSION 5u
#define MAX_KERNELS 4096u
#define MAX_ARGS 4096u

static char *host_id;
static pthread_once_t host_once = PTHREAD_ONCE_INIT;

/* Code generated for one CPU may use instructions another lacks: the binary names its host. */
static void host_id_init(void) {
  char *t = kc_hf_target_id(); /* the host's triple, CPU and features, or KAPI_HOST_CPU's */
  host_id = kc_msg("%s;%s;pf%d.%d.%d.%d;%s", t ? t : "unknown target",
                   getenv("KAPI_HOST_NO_LIBMVEC") ? "nomvec" : "mvec", kc_hf_prefetch_lines(),
                   kc_hf_prefetch_locality(), kc_hf_prefetch_ahead(), kc_hf_prefetch_first(),
                   kc_hf_version_all_strides() ? "vstrides" : "");
  free(t);
}

static const char *host(void) {
  pthread_once(&host_once, host_id_init);
  return host_id ? host_id : "";
}

/* The JIT links each section of the object into memory of its own (RuntimeDyld's section
 * memory manager maps code and read-only data separately), and nothing keeps two mappings
 * within 2 GiB of each other: in a process whose address space is crowded (many threads, their
 * stacks and malloc arenas, other JITs), they can land farther apart. The large code model reaches
 * constants through 64-bit offsets, but LLVM 15 still emits switch jump tables as 32-bit
 * differences between .rodata and .text, and unwind tables (.eh_frame) point at .text the same
 * way: truncated, a jump table sends a kernel to a wild address (the CPU device's rare crash on
 * a 32-core host). So no function gets a jump table (a switch becomes compares, which the region
 * scheme's few states do not mind) or an unwind table (kernels never throw): the object then
 * refers from one section to another only through the GOT and 64-bit offsets. */
static void no_cross_section_offsets(LLVMModuleRef m) {
  LLVMContextRef c = LLVMGetModuleContext(m);
  LLVMAttributeRef no_tables = LLVMCreateStringAttribute(c, "no-jump-tables", 14, "true", 4);
  unsigned nounwind = LLVMGetEnumAttributeKindForName("nounwind", 8);
  unsigned uwtable = LLVMGetEnumAttributeKindForName("uwtable", 7);
  LLVMAttributeRef nothrow = LLVMCreateEnumAttribute(c, nounwind, 0);
  for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f)) {
    if (LLVMIsDeclaration(f)) continue;
    LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, no_tables);
    LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, nothrow);
    LLVMRemoveEnumAttributeAtIndex(f, LLVMAttributeFunctionIndex, uwtable);
  }
}

int kc_hf_emit_object(kc_hf_jit_t *j, LLVMModuleRef m, void **obj, size_t *len, char **log) {
  no_cross_section_offsets(m);
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

/* ---- writing and reading (native_blob.h) ----------------------------------------------- */

void *kc_hf_native_pack(const kc_host_kernel_t *ks, uint32_t n, const void *obj, size_t len,
                        size_t *out_len) {
  kc_blob_out_t o = {0};
  uint64_t len64 = len;
  kc_blob_put(&o, NATIVE_MAGIC, 8);
  kc_blob_put_u32(&o, NATIVE_VERSION);
  kc_blob_put_str(&o, host());
  kc_blob_put_u32(&o, n);
  for (uint32_t i = 0; i < n; i++) {
    const kc_host_kernel_t *k = &ks[i];
    kc_blob_put_str(&o, k->name);
    kc_blob_put_args(&o, k->args, k->num_args);
    kc_blob_put_u32(&o, k->uses_barrier);
    kc_blob_put_u32(&o, k->spins);
    kc_blob_put(&o, k->required_local_size, 12);
    kc_blob_put_u32(&o, k->batches);
    kc_blob_put_u32(&o, k->streaming_bytes);
  }
  kc_blob_put(&o, &len64, 8);
  kc_blob_put(&o, obj, len);
  if (o.failed) {
    free(o.p);
    return NULL;
  }
  *out_len = o.n;
  return o.p;
}

static int get_kernel(kc_blob_in_t *in, kc_host_kernel_t *k) {
  char *name = NULL;
  kc_host_arg_t *args = NULL;
  int ok = kc_blob_get_str(in, &name) && name;
  k->name = name;
  ok = ok && kc_blob_get_args(in, MAX_ARGS, &args, &k->num_args);
  k->args = args;
  return ok && kc_blob_get_u32(in, &k->uses_barrier) && kc_blob_get_u32(in, &k->spins) &&
         kc_blob_get(in, k->required_local_size, 12) && kc_blob_get_u32(in, &k->batches) &&
         kc_blob_get_u32(in, &k->streaming_bytes);
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
  kc_blob_in_t in = {blob, len, 0};
  char magic[8];
  uint32_t version, n;
  if (!kc_blob_get(&in, magic, 8) || memcmp(magic, NATIVE_MAGIC, 8) ||
      !kc_blob_get_u32(&in, &version) || version != NATIVE_VERSION) {
    *log = kc_msg("not a native binary of this kapi CPU driver (bad header or version)");
    return KC_ERR_INVALID_ARGUMENT;
  }
  char *id = NULL;
  int same = kc_blob_get_str(&in, &id) && id && !strcmp(id, host());
  free(id);
  if (!same) {
    *log =
        kc_msg("native binary was made for another CPU or configuration (this host: %s)", host());
    return KC_ERR_INVALID_ARGUMENT;
  }
  if (!kc_blob_get_u32(&in, &n) || n > MAX_KERNELS) goto bad;
  kc_host_kernel_t *ks = calloc(n ? n : 1, sizeof *ks);
  if (!ks) return KC_ERR_OUT_OF_MEMORY;
  uint32_t i = 0;
  while (i < n && get_kernel(&in, &ks[i]))
    i++;
  uint64_t olen;
  if (i < n || !kc_blob_get(&in, &olen, 8) || olen != in.n - in.at || olen == 0) {
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
