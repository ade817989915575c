/* Private to the NVPTX finaliser (finalise_nvptx*.c): the steps finalise_nvptx.c chains.
 * Each step works on one module in place and reports failure as a status plus a message.
 */
#ifndef KAPI_COMPILER_FINALISE_NVPTX_H
#define KAPI_COMPILER_FINALISE_NVPTX_H

#include "kapi/compiler.h"
#include "message.h"

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

/* SPIRV-Tools validation plus the checks that keep translator assertions unreachable. On
 * success *words is a malloc'd, aligned copy (sanitised for the reader) to translate. */
kc_status_t kc_nvptx_validate(const void *spirv, size_t nbytes, uint32_t **words, char **log);

/* Replaces every call to a `__spirv_*` function with NVPTX code (special registers, barriers,
 * atomics) or a call to a libdevice `__nv_*` function. have_libdevice says whether `__nv_*`
 * calls will be resolved; without it only math with an exact LLVM intrinsic is accepted. */
kc_status_t kc_nvptx_lower_builtins(LLVMModuleRef mod, int have_libdevice, char **log);

/* Kernels: SPIR calling conventions -> C, local-memory pointer arguments rebased on the
 * dynamic shared-memory block, !nvvm.annotations, and the kernel table for the driver. */
typedef struct kc_nvptx_kernel_list {
  kc_nvptx_kernel_t *items;
  uint32_t count;
} kc_nvptx_kernel_list_t;

kc_status_t kc_nvptx_prepare_kernels(LLVMModuleRef mod, kc_nvptx_kernel_list_t *out, char **log);
void kc_nvptx_kernel_list_free(kc_nvptx_kernel_list_t *list);

/* Native binaries (finalise_nvptx_native.c): the kernel table and PTX with the options that
 * made them. pack: malloc'ed, NULL when out of memory. unpack: fills ks (free it with
 * kc_nvptx_kernel_list_free) and *ptx (malloc'ed, NUL-terminated); KC_ERR_INVALID_ARGUMENT
 * with *log for malformed binaries and for those made with another sm or coarsening. */
void *kc_nvptx_native_pack(const kc_nvptx_kernel_list_t *ks, const char *ptx, size_t ptx_len,
                           uint32_t sm, int coarsen, size_t *len);
kc_status_t kc_nvptx_native_unpack(const void *blob, size_t len, uint32_t sm, int coarsen,
                                   kc_nvptx_kernel_list_t *ks, char **ptx, size_t *ptx_len,
                                   char **log);

/* Adds the coarsened entry (kc_nvptx_kernel_t.coarse_name) to every kernel that allows one;
 * run before the builtins are lowered. After optimisation, kc_nvptx_coarsen_finish keeps those
 * the vectoriser widened (and makes them PTX entries) and deletes the rest. */
kc_status_t kc_nvptx_coarsen(LLVMModuleRef mod, kc_nvptx_kernel_list_t *ks);
void kc_nvptx_coarsen_finish(LLVMModuleRef mod, kc_nvptx_kernel_list_t *ks);

/* Caps every entry of ks (coarsened ones included) at n registers per thread (`.maxnreg`):
 * the kernel's max_registers, which the SPIR-V carries (kc_spirv_max_registers). n <= 0: none. */
void kc_nvptx_cap_registers(LLVMModuleRef mod, const kc_nvptx_kernel_list_t *ks, int n);

/* Marks fn as a PTX entry (!nvvm.annotations). */
void kc_nvptx_annotate_kernel(LLVMModuleRef mod, LLVMValueRef fn);

/* The name after `__spirv_` in an Itanium-mangled (_Z<len><name>...) or plain symbol; 0 when
 * sym is not a SPIR-V builtin or the name does not fit in cap. */
int kc_nvptx_spirv_name(const char *sym, char *out, size_t cap);

/* Sub-groups (finalise_nvptx_subgroup.c): a sub-group is a warp. The size of this work-item's
 * warp (the last one of a group may be partial) and its member mask, as i32; and an
 * SPV_INTEL_subgroups shuffle (kind after "SubgroupShuffle": INTEL, DownINTEL, UpINTEL,
 * XorINTEL) as shfl.sync, or NULL for a kind or type it does not handle. */
LLVMValueRef kc_nvptx_sub_group_size(LLVMModuleRef mod, LLVMBuilderRef b);
LLVMValueRef kc_nvptx_sub_group_mask(LLVMModuleRef mod, LLVMBuilderRef b);
LLVMValueRef kc_nvptx_shuffle(LLVMModuleRef mod, LLVMBuilderRef b, const char *kind,
                              LLVMValueRef *args, unsigned nargs);
/* OpGroup* with Subgroup scope (kind after "Group": Any, All, IAdd, FAdd, SMin, UMin, FMin,
 * SMax, UMax, FMax) as warp votes, redux.sync (32-bit integer reductions, sm_80) or shfl.sync
 * scans; NULL for another scope or kind. */
LLVMValueRef kc_nvptx_group(LLVMModuleRef mod, LLVMBuilderRef b, const char *kind,
                            LLVMValueRef *args, unsigned nargs);
/* finalise_nvptx_fastmath.c: OpenCL's native_NAME (name without the prefix) on float32
 * operands as PTX approximate instructions (.ftz ones when ftz), or NULL for another name or
 * type (the caller then computes it accurately). */
LLVMValueRef kc_nvptx_native_math(LLVMModuleRef mod, LLVMBuilderRef b, const char *name,
                                  LLVMValueRef *args, unsigned nargs, int ftz);
/* fastmath=True's denormal flush (kc_spirv_flushes_denormals): every function defined in mod
 * says "denormal-fp-math-f32"="preserve-sign" (LLVM's NVPTX then selects .ftz float32
 * instructions) and libdevice's __nvvm_reflect("__CUDA_FTZ") answers 1, as NVVM's -ftz=1. */
void kc_nvptx_flush_denormals(LLVMModuleRef mod);
/* Whether fn flushes float32 denormals (kc_nvptx_flush_denormals marked it). */
int kc_nvptx_flushes_denormals(LLVMValueRef fn);
/* finalise_nvptx_print.c: the call to CUDA's vprintf that replaces an OpenCL printf call (the
 * builder placed before it), or NULL with *log set. */
LLVMValueRef kc_nvptx_lower_printf(LLVMModuleRef mod, LLVMBuilderRef b, LLVMValueRef call,
                                   char **log);

/* Rewrites the IR shapes that LLVM 15's NVPTX instruction selection or the driver's PTX
 * compiler miscompile (i64 sign tests and wide shifts, 16-bit negation and abs, shifts by half
 * the width minus one, `sitofp i1`, 64-bit and compared float abs) into equivalent forms they
 * cannot (finalise_nvptx_workarounds.c). Run after the last optimisation, right before code
 * generation. */
void kc_nvptx_avoid_miscompiles(LLVMModuleRef mod);
/* After optimisation: i64 values known below 2^32 computed in 32 bits, 32 x 32-bit products
 * as mul and mulhi (finalise_nvptx_narrow.c). */
kc_status_t kc_nvptx_narrow(LLVMModuleRef mod);
/* After optimisation: the aligned entry (kc_nvptx_kernel_t.aligned_name) of every kernel
 * without a coarsened one, kept where declaring its global pointers 16-byte aligned let the
 * load-store vectoriser widen an access (finalise_nvptx_align.c). */
kc_status_t kc_nvptx_align_entries(LLVMModuleRef mod, LLVMTargetMachineRef tm,
                                   kc_nvptx_kernel_list_t *ks);
/* fn's loads and stores take the alignment their addresses are known to have, up to max;
 * returns how many global ones are now aligned to at least twice their size
 * (finalise_nvptx_raise.cpp). */
unsigned kc_nvptx_raise_alignments(LLVMValueRef fn, unsigned max);

/* ptx with each 64-bit rotate by a register taking its amount modulo 64 (LLVM 15 prints it
 * unmasked; finalise_nvptx_workarounds.c); malloc'ed, NULL when out of memory. */
char *kc_nvptx_mask_rotates(const char *ptx);

#endif
