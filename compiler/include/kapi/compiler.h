/* kapi compiler: the contract of the compiler layer.
 *
 * Two halves. The forward compiler turns a KIR module (text, see docs/kir.md) into LLVM IR and
 * SPIR-V. The finaliser, used only by kapi's own Level Zero drivers, turns SPIR-V back into
 * native code for the host CPU or NVIDIA GPUs. Nothing here knows about devices or Python.
 *
 * Conventions (as in LLVM-C): handles are opaque; every create has a destroy; strings and
 * buffers returned through `char **` / `void **` are owned by the caller and freed with
 * kc_free(). Every function returns a kc_status_t; on failure *err (when err is not NULL)
 * receives a message "file:line: error: what" when the problem has a source location.
 * Functions are thread-safe unless said otherwise: each call uses its own LLVM context.
 */
#ifndef KAPI_COMPILER_H
#define KAPI_COMPILER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kc_status {
  KC_OK = 0,
  KC_ERR_INVALID_ARGUMENT, /* NULL pointer, bad option */
  KC_ERR_KIR,              /* malformed or ill-typed KIR (parse or verify) */
  KC_ERR_UNSUPPORTED,      /* valid KIR the compiler cannot lower yet */
  KC_ERR_LLVM,             /* LLVM rejected the module (a compiler bug) */
  KC_ERR_SPIRV,            /* SPIR-V emission, validation or reading failed */
  KC_ERR_TARGET,           /* native code generation failed */
  KC_ERR_OUT_OF_MEMORY,
} kc_status_t;

/* Frees any buffer or string returned by this library. NULL is fine. */
void kc_free(void *p);

/* Short fixed name of a status ("KC_ERR_KIR"). Never NULL; not to be freed. */
const char *kc_status_name(kc_status_t s);

/* ---------------------------------------------------------------------------------------- */
/* Forward compiler: KIR -> LLVM IR -> SPIR-V                                               */
/* ---------------------------------------------------------------------------------------- */

typedef struct kc_options {
  int opt_level; /* 0..3; default (as set by kc_options_init) 2 */
} kc_options_t;

void kc_options_init(kc_options_t *opts);

/* The result of compiling one KIR module. */
typedef struct kc_program kc_program_t;

/* Parses, verifies, lowers, optimises and emits SPIR-V (validated with SPIRV-Tools in the
 * OpenCL environment). opts may be NULL for defaults. On success *out owns the result. */
kc_status_t kc_compile(const char *kir, size_t kir_len, const kc_options_t *opts,
                       kc_program_t **out, char **err);

void kc_program_destroy(kc_program_t *prog);

/* The entry point's name (the KIR kernel's name). Owned by prog. */
const char *kc_program_entry(const kc_program_t *prog);

/* Optimised LLVM IR as text. Owned by prog. */
const char *kc_program_llvm_ir(const kc_program_t *prog);

/* The SPIR-V module. Owned by prog; *nbytes receives its size. */
const void *kc_program_spirv(const kc_program_t *prog, size_t *nbytes);

/* Only parses and verifies KIR (used by tests and tools). */
kc_status_t kc_kir_check(const char *kir, size_t kir_len, char **err);

/* SPIRV-Tools validation, OpenCL 2.0 environment. KC_ERR_SPIRV with the validator's message. */
kc_status_t kc_spirv_validate(const void *spirv, size_t nbytes, char **err);

/* SPIRV-Tools disassembly; *text is freed with kc_free. */
kc_status_t kc_spirv_disassemble(const void *spirv, size_t nbytes, char **text, char **err);

/* ---------------------------------------------------------------------------------------- */
/* Finaliser (for kapi's Level Zero drivers): SPIR-V -> native                              */
/* ---------------------------------------------------------------------------------------- */
/* Declared by the driver work (issues 3 and 5); each function validates the SPIR-V first, so
 * malformed input is KC_ERR_SPIRV, never a translator assertion. */

#ifdef __cplusplus
}
#endif

#endif /* KAPI_COMPILER_H */
