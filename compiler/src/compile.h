/* Private seams between the forward compiler's phases (compile.c drives them): optimisation,
 * SPIR-V emission and checks, the LLVM fatal-error guard and error-string helpers. */
#ifndef KAPI_COMPILER_COMPILE_H
#define KAPI_COMPILER_COMPILE_H

#include "kapi/compiler.h"
#include "message.h"

#include <llvm-c/Core.h>

/* *err = formatted message (malloc'd) when err is not NULL. */
void kc_set_error(char **err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* optimise.c: runs the default pipeline of the level (0..3). */
kc_status_t kc_optimise(LLVMModuleRef mod, int level, char **err);
/* Whether a value of the module has a vector type SPIR-V lacks (more than 16 lanes). */
int kc_has_wide_vectors(LLVMModuleRef mod);

/* spirv_prepare.c: makes optimised IR safe for the translator (which exits on IR it cannot
 * express): drops freeze, expands overflow intrinsics, rejects other unknown intrinsics. */
kc_status_t kc_spirv_prepare(LLVMModuleRef mod, char **err);

/* spirv_emit.c: LLVM module -> validated SPIR-V with no imported functions. */
kc_status_t kc_emit_spirv(LLVMModuleRef mod, void **spirv, size_t *nbytes, char **err);
/* The register cap a module's kernel asks for (KIR max_registers, carried by kc_emit_spirv as
 * OpSourceExtension "kapi.max_registers N"); 0 for none or a value outside 16..255. Read by
 * the NVPTX finaliser. */
int kc_spirv_max_registers(const uint32_t *words, size_t nwords);
/* Whether a module's kernel flushes float32 denormals to zero (fastmath=True, KIR `fastmath
 * fast`; carried as OpSourceExtension "kapi.flush_denormals"). Read by the NVPTX finaliser. */
int kc_spirv_flushes_denormals(const uint32_t *words, size_t nwords);
/* KC_ERR_SPIRV when a function has Import linkage (a driver could not link it). */
kc_status_t kc_spirv_check_no_imports(const void *spirv, size_t nbytes, char **err);

/* Puts every function's blocks in reverse post-order (SPIR-V's dominance rule). */
void kc_order_blocks(LLVMModuleRef mod);

/* KC_ERR_LLVM if the module holds an integer type SPIR-V cannot express (the translator would
 * exit the process on it). */
kc_status_t kc_check_spirv_types(LLVMModuleRef mod, char **err);

/* llvm_guard.c: runs fn(arg) with LLVM's fatal errors turned into KC_ERR_LLVM (the process
 * survives; the LLVM context of the failed call is leaked, since LLVM's state is unknown). */
kc_status_t kc_llvm_guarded(kc_status_t (*fn)(void *arg), void *arg, char **err);

#endif
