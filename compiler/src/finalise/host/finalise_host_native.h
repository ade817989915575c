/* Private to the host finaliser: native binaries of finalised modules (finalise_host_native.c). */
#ifndef KAPI_COMPILER_FINALISE_HOST_NATIVE_H
#define KAPI_COMPILER_FINALISE_HOST_NATIVE_H

#include "finalise/host/finalise_host_jit.h"

#include <stddef.h>

/* Generates the module's object code with the JIT's target machine; *obj is malloc'ed. */
int kc_hf_emit_object(kc_hf_jit_t *j, LLVMModuleRef m, void **obj, size_t *len, char **log);
/* Adds an object (copied) to the JIT's main library; lookups then link it. */
int kc_hf_jit_add_object(kc_hf_jit_t *j, const void *obj, size_t len, char **log);

/* The binary of a module: host id, kernel table, object. malloc'ed; NULL when out of memory. */
void *kc_hf_native_pack(const kc_host_kernel_t *ks, uint32_t n, const void *obj, size_t len,
                        size_t *out_len);
/* Reads a binary back: *ks (n entries, free with kc_hf_native_kernels_free) and the object,
 * which points into blob. KC_ERR_INVALID_ARGUMENT with *log for foreign or malformed ones. */
kc_status_t kc_hf_native_unpack(const void *blob, size_t len, kc_host_kernel_t **ks, uint32_t *n,
                                const void **obj, size_t *obj_len, char **log);
void kc_hf_native_kernels_free(kc_host_kernel_t *ks, uint32_t n);
/* Loads what objects may link against (libmvec), as a finalisation would have. */
void kc_hf_native_prepare_process(void);

#endif
