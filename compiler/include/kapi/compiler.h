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
 * OpenCL environment; no function has Import linkage). opts may be NULL for defaults. On
 * success *out owns the result (free with kc_program_destroy). Errors: KC_ERR_INVALID_ARGUMENT,
 * KC_ERR_KIR ("file:line: error: ..." at the instruction's source line), and, for compiler
 * bugs only, KC_ERR_UNSUPPORTED / KC_ERR_LLVM / KC_ERR_SPIRV. Thread-safe. */
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

/* SPIRV-Tools validation, OpenCL 2.0 environment. KC_ERR_SPIRV with the validator's message.
 * spirv-val's OpenCL environments reject Int64Atomics (an OpenCL extension capability, needed
 * for 64-bit atomics): a module declaring it is validated in the universal SPIR-V 1.2
 * environment and its capabilities are checked against the OpenCL 2.0 set plus Int64Atomics. */
kc_status_t kc_spirv_validate(const void *spirv, size_t nbytes, char **err);

/* SPIRV-Tools disassembly; *text is freed with kc_free. */
kc_status_t kc_spirv_disassemble(const void *spirv, size_t nbytes, char **text, char **err);

/* ---------------------------------------------------------------------------------------- */
/* Finaliser (for kapi's Level Zero drivers): SPIR-V -> native                              */
/* ---------------------------------------------------------------------------------------- */
/* Each finaliser validates the SPIR-V first, so malformed input is KC_ERR_SPIRV, never a
 * translator assertion. Every failure fills *log with the reason (a Level Zero build log). */

/* --- Host CPU (x86-64, ORC LLJIT) --- */
/* Exported from libkapi_compiler, which is built with -fvisibility=hidden. */
#pragma GCC visibility push(default)

/* What a driver hands a finalised kernel to run ONE work-group (or, for kernels that take them,
 * a batch of consecutive groups: count). Ids are per dimension, dim 0 fastest-varying. The
 * kernel runs every work-item of the group before returning, barriers included (the finaliser
 * owns the barrier scheme), on the calling thread; any number of threads may run groups of the
 * same kernel at once.
 * Memory a driver should know about: module-level __local variables of barrier-free kernels
 * are placed by run itself in its own stack frame (one copy per running group), so worker
 * threads need that much stack on top of their own (default 8 MiB pthread stacks are ample).
 * Kernels with barriers keep them, and per-work-item values, in per-thread scratch memory
 * (heap), and kernels that spin on atomic
 * loads run each work-item on a fiber with a 256 KiB stack (private arrays included); both
 * are kept per thread, reused across groups and freed when the thread exits. */
typedef struct kc_host_group {
  /* Bounds the kernels are compiled to rely on (Level Zero's counts are 32-bit): group_id,
   * group_range and global_offset below 2^32, local_range at most 2^16, in each dimension. */
  uint64_t group_id[3];
  uint64_t group_range[3]; /* number of groups per dimension */
  uint64_t local_range[3]; /* work-group size per dimension */
  uint64_t global_offset[3];
  /* args[i] points at the bytes of kernel argument i as set by zeKernelSetArgumentValue. For
   * a local-memory argument, args[i] points at a `void *` holding this group's local buffer
   * (the driver allocates one per concurrently running group, kc_host_arg_t.size bytes). */
  void *const *args;
  /* A batch: `count` groups run by this one call (0 counts as 1), consecutive along dimension 0
   * from group_id (group_id[0] + count <= group_range[0]). Only kernels with
   * kc_host_kernel_t.batches take more than one. Group i of the batch finds each local-memory
   * argument's buffer `i * local_stride` bytes after the one args[] gives (the driver allocates
   * count buffers of every local-memory argument, local_stride bytes apart). */
  uint64_t count;
  uint64_t local_stride;
} kc_host_group_t;

/* Returns KC_OK, or KC_ERR_OUT_OF_MEMORY when the group could not run (a kernel with barriers
 * needs scratch memory per work-item, a spinning one a fiber stack per work-item; they are
 * allocated on first use per thread). */
typedef kc_status_t (*kc_host_group_fn)(const kc_host_group_t *group);

typedef enum kc_arg_kind {
  KC_ARG_VALUE = 0, /* scalar or pointer passed by value; size = its byte size */
  KC_ARG_LOCAL = 1, /* local memory: size chosen at launch (zeKernelSetArgumentValue(NULL)) */
} kc_arg_kind_t;

typedef struct kc_host_arg {
  kc_arg_kind_t kind;
  uint32_t size; /* bytes of the value for KC_ARG_VALUE; 0 for KC_ARG_LOCAL */
} kc_host_arg_t;

typedef struct kc_host_kernel {
  const char *name;     /* owned by the module */
  kc_host_group_fn run; /* valid while the module lives */
  uint32_t num_args;
  const kc_host_arg_t *args;       /* num_args entries, owned by the module */
  uint32_t uses_barrier;           /* 1 if the kernel synchronises work-items */
  uint32_t required_local_size[3]; /* reqd_work_group_size, or zeros */
  /* 1 if a work-item may spin on an atomic load: forward progress between the work-items of
   * a group is guaranteed (fibers), between groups it is not, so a driver choosing the group
   * size should make groups as large as it can. */
  uint32_t spins;
  /* 1 if run takes a batch of groups (kc_host_group_t.count > 1): it then runs each region
   * between barriers for every group of the batch before the next region, which spreads the
   * per-region cost over the batch. */
  uint32_t batches;
  /* A second entry for launches that write more than the caches keep (NULL: none): the kernel
   * with its stores to the arrays it only writes as streaming stores, which skip the read of
   * each line before it is written and leave the caches alone; streaming_bytes: those stores'
   * bytes a work-item (0 with no such entry). */
  kc_host_group_fn run_streaming;
  uint32_t streaming_bytes;
} kc_host_kernel_t;

typedef struct kc_host_module kc_host_module_t;

/* SPIR-V -> validated -> LLVM (SPIR-V-friendly builtins, typed pointers) -> builtins lowered
 * to LLVM IR (ids, barriers, atomics, math) -> O3 -> ORC LLJIT for the host CPU. Thread-safe;
 * the module may be used from many threads. Failures: KC_ERR_SPIRV (invalid or unreadable
 * SPIR-V), KC_ERR_UNSUPPORTED (a builtin or construct the host cannot run, e.g. recursion),
 * KC_ERR_TARGET (code generation, unresolved symbols), KC_ERR_LLVM (an LLVM fatal error; the
 * call's LLVM state is leaked, the process lives). Kernels may call only libm (and libmvec,
 * which is loaded for vectorised math unless KAPI_HOST_NO_LIBMVEC is set). KC_ERR_TARGET also
 * for a module built and linked for a CPU (KAPI_HOST_CPU) with instructions this one lacks:
 * *out then still holds it, for kc_host_module_llvm_ir only (its kernels must not run), and the
 * caller destroys it; after any other failure *out is NULL. */
kc_status_t kc_host_finalise(const void *spirv, size_t nbytes, kc_host_module_t **out, char **log);
void kc_host_module_destroy(kc_host_module_t *mod);
uint32_t kc_host_module_kernel_count(const kc_host_module_t *mod);
/* i in [0, count); the pointer stays valid while the module lives. */
const kc_host_kernel_t *kc_host_module_kernel(const kc_host_module_t *mod, uint32_t i);
/* NULL when no kernel has that name. */
const kc_host_kernel_t *kc_host_module_find(const kc_host_module_t *mod, const char *name);
/* The optimised LLVM IR the module was compiled from (for tests and tuning). Owned by mod. */
const char *kc_host_module_llvm_ir(const kc_host_module_t *mod);
/* The module's native binary: its kernel table and object code for this host CPU, for
 * kc_host_load in another process (the disk cache). Owned by mod; NULL (*len 0) if none. */
const void *kc_host_module_native(const kc_host_module_t *mod, size_t *len);
/* A module from kc_host_module_native's bytes: no SPIR-V reading, optimisation or code
 * generation, only linking. KC_ERR_INVALID_ARGUMENT (with *log) when the binary is malformed,
 * from another format version, or for another CPU or configuration; KC_ERR_TARGET when it
 * does not link. The module has no LLVM IR (kc_host_module_llvm_ir returns NULL). */
kc_status_t kc_host_load(const void *native, size_t len, kc_host_module_t **out, char **log);
#pragma GCC visibility pop

/* --- NVIDIA (NVPTX) --- */
#pragma GCC visibility push(default)

typedef struct kc_nvptx_options {
  /* CUDA's libdevice (nvvm/libdevice/libdevice.10.bc). NULL: math functions without an exact
   * LLVM intrinsic (sin, exp, pow, ...) fail with KC_ERR_UNSUPPORTED. */
  const char *libdevice_path;
  uint32_t sm;   /* target sm_XY as XY; 0 means 86. Values above 86 (LLVM 15's newest) give
                    sm_86 PTX 7.5, which the CUDA driver compiles for newer GPUs. */
  int opt_level; /* 0..3; default 3 */
  int coarsen;   /* 1 (default): add coarsened entries where allowed (kc_nvptx_kernel_t) */
} kc_nvptx_options_t;

void kc_nvptx_options_init(kc_nvptx_options_t *opts);

/* One kernel of a finalised module, as the driver launches it with cuLaunchKernel: one
 * parameter per SPIR-V argument. A KC_ARG_LOCAL argument is passed as a 64-bit byte offset
 * into the launch's dynamic shared memory (the driver places each local buffer there); its
 * size here is 0, as for the host. */
typedef struct kc_nvptx_kernel {
  const char *name; /* owned by the module */
  uint32_t num_args;
  const kc_host_arg_t *args;       /* num_args entries, owned by the module */
  uint32_t required_local_size[3]; /* reqd_work_group_size, or zeros */
  /* A coarsened entry, or NULL: each thread runs coarse_factor consecutive work-items along x
   * with 16-byte vector accesses (only kernels whose work-items never interact get one, and
   * only when the vectoriser widened their accesses). It takes the kernel's arguments plus a
   * trailing 64-bit global size along x; launch it with at least ceil(size_x / coarse_factor)
   * threads along x in any blocks (y and z as for the kernel), and only when every argument
   * whose bit is set in coarse_aligned (global pointers) is 16-byte aligned. */
  const char *coarse_name; /* owned by the module */
  uint32_t coarse_factor;
  uint64_t coarse_aligned;
  /* An aligned entry, or NULL: the kernel itself (same arguments, same launch) with every
   * global pointer argument whose bit is set in aligned_mask declared 16-byte aligned, which
   * lets LLVM merge neighbouring accesses into 8- and 16-byte ones (only kept when it did).
   * Launch it in the kernel's place when every such argument is 16-byte aligned. */
  const char *aligned_name; /* owned by the module */
  uint64_t aligned_mask;
} kc_nvptx_kernel_t;

typedef struct kc_nvptx_module kc_nvptx_module_t;

/* SPIR-V -> validated -> LLVM (typed pointers) -> address spaces remapped to NVPTX's -> builtins
 * lowered -> libdevice linked and internalised -> optimised -> PTX. Thread-safe (own context
 * per call). On failure *log says why; *out is set only on success. Statuses: KC_ERR_SPIRV
 * (invalid SPIR-V, or SPIR-V the translator cannot read), KC_ERR_UNSUPPORTED (a builtin, math
 * function or storage class NVIDIA GPUs do not get, e.g. get_work_dim; the log names it),
 * KC_ERR_TARGET (libdevice unreadable, PTX emission failed), KC_ERR_LLVM (an internal error,
 * LLVM fatal errors included: the process survives). */
kc_status_t kc_nvptx_finalise(const void *spirv, size_t nbytes, const kc_nvptx_options_t *opts,
                              kc_nvptx_module_t **out, char **log);
void kc_nvptx_module_destroy(kc_nvptx_module_t *mod);
/* NUL-terminated PTX text, owned by the module; *len (if not NULL) gets its length. */
const char *kc_nvptx_module_ptx(const kc_nvptx_module_t *mod, size_t *len);
/* The module's native binary (kernel table and PTX, with the sm and coarsening it was made
 * for), for kc_nvptx_load in another process (the disk cache). Malloc'ed (kc_free); NULL when
 * out of memory. */
void *kc_nvptx_module_native(const kc_nvptx_module_t *mod, size_t *len);
/* A module from kc_nvptx_module_native's bytes, without any LLVM work. opts' sm and coarsen
 * must be those the binary was made with (opts may be NULL for the defaults);
 * KC_ERR_INVALID_ARGUMENT with *log otherwise and for malformed binaries. */
kc_status_t kc_nvptx_load(const void *native, size_t len, const kc_nvptx_options_t *opts,
                          kc_nvptx_module_t **out, char **log);
uint32_t kc_nvptx_module_kernel_count(const kc_nvptx_module_t *mod);
const kc_nvptx_kernel_t *kc_nvptx_module_kernel(const kc_nvptx_module_t *mod, uint32_t i);
/* NULL when no kernel has that name. */
const kc_nvptx_kernel_t *kc_nvptx_module_find(const kc_nvptx_module_t *mod, const char *name);
#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif

#endif /* KAPI_COMPILER_H */
