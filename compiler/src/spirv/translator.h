/* The C wall around SPIRV-LLVM-Translator's C++ API and the few LLVM C++ facts the C API lacks
 * (translator.cpp is the only C++ in the compiler). No C++ type or exception crosses it.
 * Private to compiler/: not part of compiler.h.
 */
#ifndef KAPI_COMPILER_TRANSLATOR_H
#define KAPI_COMPILER_TRANSLATOR_H

#include <llvm-c/Core.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* LLVM module (typed pointers, spir64 triple) -> SPIR-V, capped at version 1.2, with the float
 * atomic extensions enabled. On success returns 1 and *spirv and *nbytes (malloc'd, caller frees
 * with free()); on failure returns 0 and *err (malloc'd). */
int kc_tr_write_spirv(LLVMModuleRef module, void **spirv, size_t *nbytes, char **err);

/* SPIR-V -> LLVM module in ctx (which must use typed pointers), with SPIR-V-friendly builtin
 * names (`__spirv_*`). The caller must have validated the binary first: the translator asserts
 * on input it does not expect. Returns 1 and *module, or 0 and *err (malloc'd). */
int kc_tr_read_spirv(LLVMContextRef ctx, const void *spirv, size_t nbytes, LLVMModuleRef *module,
                     char **err);

/* Clones module into a new module (same context) in which every pointer type in address space
 * a < map_len is moved to map[a]: globals, signatures, instructions, constants and metadata.
 * Casts between spaces that become one space turn into bitcasts; overloaded intrinsics are
 * renamed. A pointer in an address space >= map_len is an error (codegen would abort on it).
 * module is left unchanged apart from constant casts expanded into instructions.
 * Returns 1 and *out (caller disposes), or 0 and *err (malloc'd). */
int kc_tr_remap_address_spaces(LLVMModuleRef module, const unsigned *map, unsigned map_len,
                               LLVMModuleRef *out, char **err);

/* Sets LLVM fast-math flags on inst when it is a floating-point operation (the C API of LLVM 15
 * has no setter); flags are kir_fastmath_t bits (nnan 1, ninf 2, nsz 4, arcp 8, contract 16,
 * afn 32, reassoc 64). Anything else (a constant the builder folded) is left alone. */
void kc_tr_set_fast_math(LLVMValueRef inst, unsigned flags);

/* The features LLVM's x86 table gives 64-bit CPU `cpu` ("haswell"), as "+avx2,+fma,...", or
 * NULL when LLVM 15 knows no such CPU. malloc'd: the caller frees it with free(). */
char *kc_tr_x86_cpu_features(const char *cpu);

#ifdef __cplusplus
}
#endif

#endif
