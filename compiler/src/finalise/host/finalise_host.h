/* Private to the host CPU finaliser (finalise_host*.c): the phases kc_host_finalise runs, in
 * order, and the few types they share. Each phase returns 1 on success or 0 with *log set
 * (malloc'd). Not part of compiler.h.
 */
#ifndef KAPI_COMPILER_FINALISE_HOST_H
#define KAPI_COMPILER_FINALISE_HOST_H

#include "kapi/compiler.h"
#include "message.h"

#include <llvm-c/Core.h>
#include <llvm-c/Target.h>
#include <stdint.h>

/* Field indices of %kapi.group, the IR view of kc_host_group_t. */
enum {
  KC_HG_GROUP_ID,
  KC_HG_GROUP_RANGE,
  KC_HG_LOCAL_RANGE,
  KC_HG_OFFSET,
  KC_HG_ARGS,
  KC_HG_COUNT,
  KC_HG_LOCAL_STRIDE
};

/* How a kernel's work-items run (finalise_host_entry.c). */
typedef enum {
  KC_HF_LOOP,    /* no barrier: one loop over the group's work-items */
  KC_HF_REGIONS, /* barriers: one work-item loop per region between barriers */
  KC_HF_FIBERS,  /* every work-item on its own fiber (atomic loads in loops) */
} kc_hf_scheme_t;

/* Parameters of the region wi before the kernel's arguments. */
#define KC_HF_WI_FIXED 12u
/* The region wi's value for the kernel's end (its other returns are the next region). */
#define KC_HF_REGION_EXIT 0xffffffffu

/* One kernel while it is being finalised. */
typedef struct kc_hf_kernel {
  char *name;          /* the SPIR-V entry point's name */
  LLVMValueRef kernel; /* the kernel as read back (internal after entry generation) */
  LLVMValueRef run;    /* generated `void NAME.kapi.run(const kc_host_group_t *)` */
  LLVMValueRef body;   /* function the kernel is inlined into: run, or a wi function */
  int uses_barrier;    /* 1: the kernel has work-group barriers */
  int spins;           /* 1: an atomic load in a loop (needs forward progress: fibers) */
  /* 1: a barrier-free kernel with loops, run on the region scheme with its loops split into
   * regions where that vectorises their bodies across work-items (KAPI_HOST_LOOPVEC below) */
  int loopvec;
  unsigned chunk; /* a loopvec kernel's work-items per chunk (kc_hf_loopvec_chunk) */
  /* per region state of a loopvec kernel (NULL: none): 1 where work-items may return different
   * next states (a divergent loop's header), and run takes the smallest */
  unsigned char *min_states;
  /* byte ranges [lo, hi) (pairs, nfree of them) of a full chunk's slots, in run's frame, of
   * values live only across a divergent loop's header barrier: a work-item not in the mask of
   * their save no longer needs them (kc_hf_unmask_slots stores them whole) */
  uint64_t *free_saves;
  unsigned nfree;
  uint64_t frame_bytes; /* bytes of those slots in run's frame (0: none there) */
  kc_hf_scheme_t scheme;
  uint32_t num_args;
  kc_host_arg_t *args;
  LLVMTypeRef *arg_types; /* the kernel's parameter types (it is gone once inlined) */
  char *arg_byval;        /* 1 where the parameter is a byval pointer */
  char *arg_unversioned;  /* 1 where run hands it over times an opaque 1 (kc_hf_arg_unversioned) */
  uint32_t reqd[3];
  /* SSA values in `body` that the id builtins are rewritten to (filled by entry generation). */
  LLVMValueRef group_id[3], group_range[3], local_range[3], offset[3], local_id[3];
  LLVMValueRef local_base; /* i8*: this group's buffer for module-level __local variables */
  /* KC_HF_REGIONS: wi's state parameter, per-work-item storage, its linear local id and the
   * group's work-item count (all defined in wi's entry block, which every region re-runs). */
  LLVMValueRef state, storage, lin, nwi;
  /* ...and the two copies of the values that are the same in every work-item: a region reads
   * ucur and writes unext (one region's work-items run one after another, so a shared copy
   * written by one would be read by the next); run swaps them between regions. */
  LLVMValueRef ucur, unext;
  /* ...and of the values the same in every group of a batch (bcur read, bnext written), kept
   * only when the batch's groups run in lockstep: 1 when every group of a batch reaches the
   * same barriers in the same order whatever its id (the batch then has one state, and the
   * driver may batch it: kc_host_kernel_t.batches). */
  LLVMValueRef bcur, bnext;
  int lockstep;
  /* 1 when run should be given batches: lockstep, and no per-work-item slots (a kernel saving
   * values per work-item already runs long regions, and a batch only spreads its storage over
   * more cache: the scan in bench/cpu_barrier.py ran slower batched) */
  int batches;
  uint64_t local_size; /* bytes of the group's __local buffer (run allocates it) */
  /* bytes a work-item stores to arrays the kernel only writes (kc_hf_find_streams): 0, or its
   * streaming entry NAME.kapi.stream exists (kc_hf_make_streams) */
  uint32_t stream_bytes;
} kc_hf_kernel_t;

/* Per-group layout of the module's addrspace(3) globals (OpenCL `__local` variables). */
typedef struct kc_hf_locals {
  uint32_t count;
  LLVMValueRef *globals;
  uint64_t *offsets;
  uint64_t size; /* bytes of one group's buffer, 0 when the module has none */
} kc_hf_locals_t;

/* Base name of an Itanium-mangled function name (`_Z16__spirv_ocl_sqrtf` -> `__spirv_ocl_sqrt`)
 * copied into buf; the name itself when it is not mangled. */
void kc_hf_base_name(const char *name, char *buf, size_t cap);

/* finalise_host_check.c: rejects (with *log) valid SPIR-V the translator would abort on. */
int kc_hf_check_spirv(const uint32_t *words, size_t n, char **log);
/* Rewrites, in a copy the reader gets, what it would abort on but can safely lose. */
void kc_hf_sanitise_spirv(uint32_t *words, size_t n);

/* finalise_host_print.c: rewrites OpenCL printf calls to kc_host_printf, which the JIT binds
 * as __kapi_host_printf: one line, one write(2) to standard output, under a lock. */
int kc_hf_lower_printf(LLVMModuleRef m, char **log);
int kc_host_printf(const char *fmt, ...);

/* finalise_host_math.c: rewrites `__spirv_ocl_*` calls to LLVM intrinsics, IR, or libm calls. */
int kc_hf_lower_math(LLVMModuleRef m, char **log);

/* finalise_host_jit.c: the address a kernel's external `name` binds to: a function of libm
 * ("libm.so.6") or libmvec ("libmvec.so.1", `_ZGV*`, absent with KAPI_HOST_NO_LIBMVEC), both
 * opened by soname whatever the process loaded, or a memory intrinsic; NULL otherwise. */
void *kc_hf_math_symbol(const char *name);
/* The target the JIT generates code for: the host CPU, or the one KAPI_HOST_CPU names (docs/
 * guide/environment.md). kc_hf_target_features: all its features ("+avx2,+fma,..."; "" when
 * KAPI_HOST_CPU is unknown). kc_hf_target_id: triple, CPU and features (malloc'd; NULL when
 * unknown), which native binaries record. kc_hf_target_runnable: 1, or 0 and *log when
 * KAPI_HOST_CPU is unknown or names a CPU with ISA extensions this one lacks (its code builds,
 * so unresolved symbols still show, but must not run). */
const char *kc_hf_target_features(void);
char *kc_hf_target_id(void);
int kc_hf_target_runnable(char **log);

/* finalise_host_rt.c: the compiler-rt builtins x86 code generation may call (half and bfloat
 * conversions, 128-bit integer division and conversions, powi), by name; NULL for others. */
void *kc_hf_rt_symbol(const char *name);

/* finalise_host_vecmath.c: scalar libm calls the loop vectoriser may turn into glibc libmvec
 * calls. kc_hf_vectorisable: 1 when libmvec is loaded and has `dname` (double name: "sin").
 * kc_hf_vec_libm_call: the annotated scalar call (float/double scalars), or NULL. keep/release
 * bracket optimisation (they add and remove @llvm.compiler.used for the variants). */
int kc_hf_vectorisable(const char *dname, int is_double);
LLVMValueRef kc_hf_vec_libm_call(LLVMModuleRef m, LLVMBuilderRef b, const char *dname,
                                 LLVMValueRef *a, unsigned n);
int kc_hf_vec_keep(LLVMModuleRef m, char **log);
void kc_hf_vec_release(LLVMModuleRef m);
/* finalise_host_explog.c: exp, log, erf or erfc (`what`) of a float/double scalar or vector as
 * IR arithmetic; NULL for other functions and types, with KAPI_HOST_EXPLOG=libm (exp, log) or
 * KAPI_HOST_ERF=libm (erf, erfc), and for erf/erfc where libmvec's are faster (unless
 * KAPI_HOST_ERF=ir). */
LLVMValueRef kc_hf_exp_log(LLVMModuleRef m, LLVMBuilderRef b, const char *what, LLVMValueRef x);

/* finalise_host_atomics.c: rewrites `__spirv_Atomic*` calls to atomicrmw / cmpxchg / atomic
 * loads and stores, with the requested ordering (scope is strengthened to system). */
int kc_hf_lower_atomics(LLVMModuleRef m, char **log);

/* finalise_host_nontemporal.c: kc_hf_mark_nontemporal (after kc_hf_lower_atomics, before
 * optimisation): non-temporal stores marked so that the vectorisers widen them, and in a module
 * with any, an SFENCE before every releasing atomic operation or fence; returns how many
 * stores. kc_hf_restore_nontemporal (after vectorisation): the marked stores non-temporal
 * again, vector ones that may be under-aligned through an always-inline helper that tests the
 * address; returns how many calls of it (run always-inline then). */
unsigned kc_hf_mark_nontemporal(LLVMModuleRef m);
unsigned kc_hf_restore_nontemporal(LLVMModuleRef m);
/* One store marked as kc_hf_mark_nontemporal marks them (its alias scopes replaced). */
void kc_hf_mark_store_nontemporal(LLVMValueRef store);

/* finalise_host_streams.c: streaming entries. kc_hf_find_streams (after kc_hf_collect_kernels,
 * before entry generation): in a loop-scheme kernel whose global arrays are some of them only
 * stored to, each work-item's stores outside loops, those stores marked, and the kernel's
 * stream_bytes set (their bytes a work-item). kc_hf_make_streams (after vectorisation, before
 * kc_hf_restore_nontemporal): each such kernel's run copied into NAME.kapi.stream, with the
 * marked stores non-temporal; the marks dropped elsewhere. Returns how many copies. */
void kc_hf_find_streams(LLVMModuleRef m, kc_hf_kernel_t *ks, uint32_t n);
/* finalise_host_entry.c: 1 when a kernel's body is long floating-point work (what gets its
 * work-item loop interleaved: INTERLEAVE_MIN_WORK operations, a libm call counting 16), or
 * cannot be counted. */
int kc_hf_heavy_body(LLVMValueRef kernel);
int kc_hf_streams_on(void); /* KAPI_HOST_STREAMS, not 0 */
unsigned kc_hf_make_streams(LLVMModuleRef m, kc_hf_kernel_t *ks, uint32_t n);

/* finalise_host_subgroup.c: rewrites sub-group shuffles and OpGroup* builtins for sub-groups
 * of one work-item. */
int kc_hf_lower_sub_groups(LLVMModuleRef m, char **log);

/* finalise_host_entry.c: collects kernels, and generates each kernel's run function (and wi
 * function for kernels with barriers). */
int kc_hf_collect_kernels(LLVMModuleRef m, LLVMTargetDataRef td, kc_hf_kernel_t **out,
                          uint32_t *count, char **log);
int kc_hf_make_entries(LLVMModuleRef m, kc_hf_kernel_t *ks, uint32_t n,
                       const kc_hf_locals_t *locals, char **log);
void kc_hf_kernels_free(kc_hf_kernel_t *ks, uint32_t n);

/* finalise_host_strides.c: kc_hf_arg_unversioned: 1 for a kernel parameter on which LLVM's loop
 * vectoriser should not version loops (an integer that is not a layout-A array's stride: a
 * C-contiguous array's row extent is a symbolic stride that is never 1 in practice), which run
 * then hands over as kc_hf_times_opaque_one(its value); 0 for every parameter with
 * KAPI_HOST_VERSION_STRIDES set (not `0`), kc_hf_version_all_strides. */
int kc_hf_arg_unversioned(LLVMValueRef param);
LLVMValueRef kc_hf_times_opaque_one(LLVMBuilderRef b, LLVMValueRef v);
int kc_hf_version_all_strides(void);

/* finalise_host_gathers.c: every all-lanes gather in fn whose addresses are lane 0's plus
 * lane * S (proved from the index's instructions) switches on S to plain vector loads of the
 * window and shuffles, for S in kc_hf_window_spacings() (a bit per spacing; from
 * KAPI_HOST_WINDOW_GATHERS, by default by the element's size and the CPU; `0`: none), and to
 * scalar loads for any other S (KAPI_HOST_SCALAR_GATHERS=0: the gather). Returns how many it
 * rewrote. */
unsigned kc_hf_window_gathers(LLVMValueRef fn);
/* 1 when a function of m loads a double from global memory: on AVX2 such a module's optimiser
 * keeps LLVM's own view of gathers (kc_hf_cheap_gathers). */
int kc_hf_reads_doubles(LLVMModuleRef m);
unsigned kc_hf_window_spacings(unsigned elem_bytes);

/* finalise_host_locals.c: layout of __local globals, and their rewrite into per-group buffers. */
int kc_hf_layout_locals(LLVMModuleRef m, LLVMTargetDataRef td, kc_hf_locals_t *out, char **log);
int kc_hf_rewrite_locals(LLVMModuleRef m, const kc_hf_kernel_t *ks, uint32_t n,
                         const kc_hf_locals_t *locals, char **log);
void kc_hf_locals_free(kc_hf_locals_t *l);

/* finalise_host_regions.c: splits a KC_HF_REGIONS kernel's wi (kernel inlined, builtins
 * lowered) at its barriers into regions, then builds run around it (kc_hf_make_region_run).
 * kc_hf_yield_in_loops: KC_HF_FIBERS kernels that spin yield before each atomic load.
 * kc_hf_block_in_cycle: 1 when bb can reach itself. */
int kc_hf_split_regions(LLVMModuleRef m, kc_hf_kernel_t *k, char **log);
int kc_hf_make_region_run(LLVMModuleRef m, kc_hf_kernel_t *k, uint32_t nstates, uint64_t rec,
                          uint64_t urec, uint64_t brec);
/* Loops as regions (KAPI_HOST_LOOPVEC, on unless `0`): LLVM's loop vectoriser widens innermost
 * loops only, and a work-item loop around a kernel with a loop is not innermost. A loop that
 * every work-item of a group enters and leaves together (its exits uniform, reached on no
 * varying path) gets a barrier at its header: each iteration becomes a region, a work-item loop
 * of its own, which vectorises; the values carried from one iteration to the next live in the
 * region slots. kc_hf_loopvec_candidate (at collection, on the kernel before inlining): 1 when
 * a barrier-free kernel has a loop and private memory small and of fixed size, so that it runs
 * on the region scheme; the split then adds the barriers where they pay (loops that work-items
 * leave at different times get a per-work-item flag: finalise_host_regions.c). */
int kc_hf_loopvec_on(void);
/* Work-items per chunk of a loopvec kernel's run (finalise_host_entry.c's make_chunk_run): for
 * a kernel with a divergent loop four vectors of AVX-512 (its rounds then keep the chunk's
 * values in registers, kc_hf_unmask_slots, four vectors' worth of independent work to hide a
 * round's latency: mandelbrot's CPU time per launch fell by about a fifth from two vectors once
 * its count was kept once per chunk, which left the registers for them), 32 elsewhere or with
 * KAPI_HOST_LOOPVEC_UNIFORM=0 (the count per work-item: four vectors spilled); else 512: a
 * uniform loop's round does little per work-item, and its set-up (the state's dispatch, the
 * uniform values) is then shared by more (KAPI_HOST_LOOPVEC=N: N for all). */
#define KC_HF_LOOPVEC_CHUNK 512u
#define KC_HF_LOOPVEC_DIV_CHUNK 32u
#define KC_HF_LOOPVEC_DIV_CHUNK_WIDE 64u
/* The most bytes of a full chunk's slots that run keeps in its frame (make_chunk_run). */
#define KC_HF_LOOPVEC_FRAME (32u * 1024u)
unsigned kc_hf_loopvec_chunk(int divergent);
/* Lanes the chunk machine's work-item loops are vectorised with (KAPI_HOST_LOOPVEC_WIDTH;
 * 0: the vectoriser's own choice), for a kernel with a divergent loop or without. */
unsigned kc_hf_loopvec_width(int divergent);
/* The row length for which a barrier kernel that is not batched gets region loops of that
 * constant count (KAPI_HOST_LOOPVEC_WIDTH too; 0: none). */
unsigned kc_hf_vector_row_width(void);
int kc_hf_region_nopeel(void);
int kc_hf_region_memcpy(void);
int kc_hf_region_vector_rows(void);
int kc_hf_region_one_group(void);
int kc_hf_loopvec_candidate(LLVMValueRef kernel);
int kc_hf_add_yields(LLVMModuleRef m, const kc_hf_kernel_t *k, char **log);
/* After wi is inlined into run and cleaned up: region loops guarded by `x < U` stop at U.
 * Returns how many loops it narrowed. */
int kc_hf_narrow_region_loops(kc_hf_kernel_t *k);
/* After optimisation, a loopvec kernel's masked vector accesses to the slots of a full chunk in
 * run's frame become plain ones (finalise_host_regions.c); returns how many, after which SROA
 * may keep those slots in registers. */
unsigned kc_hf_unmask_slots(kc_hf_kernel_t *k);
int kc_hf_block_in_cycle(LLVMBasicBlockRef bb);

/* finalise_host_prefetch.c: batched kernels prefetch a later batch's region-0 input while a
 * batch runs. While run is built, kc_hf_prefetch_tag marks region 0's flat nest's group
 * (is_x 0) and x (is_x 1) induction phis, and each prefetching region's flat group loop gets
 * `n = kc_hf_prefetch_count(lrx, pass); for q < n: kc_hf_prefetch_mark(j, count, pass, lrx,
 * q, n)`, in a nest of its own taken when kc_hf_prefetch_on(items, lrx) (the launch's
 * work-items, x local range);
 * once wi is inlined and cleaned up, kc_hf_prefetch_expand sets n and turns the markers into
 * prefetches (or removes them); it returns how many address expressions each marker
 * prefetches (0: none). kc_hf_prefetch_lines: KAPI_HOST_PREFETCH, -1 (unset or `auto`) for
 * lines per region from the group's size, else that many (0: off). */
#define KC_HF_PREFETCH_SPREAD 8u /* auto: a group's lines spread over this many regions */
/* auto prefetches only launches whose region 0 reads at least this many bytes (smaller ones
 * may find their input in cache, where the prefetches only cost) in groups of at least this
 * many lines (a smaller group's steps are too short to cover them) */
#define KC_HF_PREFETCH_MIN_BYTES (16u << 20)
#define KC_HF_PREFETCH_MIN_LINES 16u
int kc_hf_prefetch_lines(void);
/* Which batch the prefetches are for (KAPI_HOST_PREFETCH_AHEAD; 1: the next, 2: the one after,
 * so a batch's copy never waits for lines requested in the previous batch's last steps), the
 * first region that prefetches (KAPI_HOST_PREFETCH_FIRST; 0: the copy too, so memory is kept
 * busy while it runs; 1: only the regions after it) and their locality
 * (KAPI_HOST_PREFETCH_LOCALITY, llvm.prefetch's: 2 is prefetcht1, into L2). Against the fifth
 * session's choice (1, 1, 3), on the 16-core host: the tree reduction in groups of 512 and 1024
 * 9-15% faster, in groups of 256 0-6%, two ahead another 2-3% there (bench/RESULTS.md, sixth
 * session). */
#define KC_HF_PREFETCH_AHEAD 2
#define KC_HF_PREFETCH_FIRST 0
#define KC_HF_PREFETCH_LOCALITY 2
int kc_hf_prefetch_ahead(void);
int kc_hf_prefetch_first(void);
int kc_hf_prefetch_locality(void);
void kc_hf_prefetch_tag(LLVMValueRef phi, int is_x);
LLVMValueRef kc_hf_prefetch_count(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef lrx,
                                  LLVMValueRef pass);
LLVMValueRef kc_hf_prefetch_on(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef items,
                               LLVMValueRef lrx);
void kc_hf_prefetch_mark(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef j, LLVMValueRef count,
                         LLVMValueRef pass, LLVMValueRef lrx, LLVMValueRef q, LLVMValueRef n);
unsigned kc_hf_prefetch_expand(LLVMModuleRef m, kc_hf_kernel_t *k);

/* finalise_host_ids.c: rewrites id builtins and barriers inside each kernel's body. */
int kc_hf_lower_ids(LLVMModuleRef m, const kc_hf_kernel_t *k, char **log);
/* 1 when call is a work-group control barrier (one that needs the region or fiber scheme). */
int kc_hf_kernel_calls_barrier(LLVMValueRef call);

/* Stack of one work-item's fiber (KC_HF_FIBERS), and the most private memory a kernel may use
 * in it (the rest is for calls into libm and the switch itself); the region scheme allows the
 * same per work-item in its scratch storage. A barrier-free kernel runs on the driver's thread
 * stack: its private and __local memory together get KC_HF_FRAME. */
#define KC_HF_FIBER_STACK (256u * 1024u)
#define KC_HF_FIBER_PRIVATE (192u * 1024u)
#define KC_HF_FRAME (4u * 1024u * 1024u)

/* finalise_host_fiber.c: the fiber scheme, called from JIT code. Runs wi once per work-item
 * of the group on per-work-item fibers; kc_host_fiber_barrier waits for the group. */
typedef void (*kc_hf_wi_fn)(const kc_host_group_t *g, const uint64_t *local_id, void *local);
kc_status_t kc_host_fiber_run(const kc_host_group_t *g, kc_hf_wi_fn wi, void *local);
void kc_host_fiber_barrier(void);
/* A spinning work-item lets the others run (every few calls): forward progress for atomic
 * loads in loops. Only called on the fiber scheme. */
void kc_host_fiber_yield(void);
/* This thread's per-work-item storage for the region scheme: at least `bytes`, 64-byte
 * aligned, reused by every group the thread runs; NULL when memory runs out. */
void *kc_host_scratch(uint64_t bytes);

/* LLVM helpers shared by the phases. */
LLVMValueRef kc_hf_intrinsic(LLVMModuleRef m, const char *name, LLVMTypeRef *types, size_t n);
LLVMValueRef kc_hf_call(LLVMBuilderRef b, LLVMValueRef fn, LLVMValueRef *args, unsigned n);
/* finalise_host_util.c: the alias scope `scope` of domain `domain`, both named by strings
 * (uniqued: the same node each time in a context). The finaliser marks stores with scopes that
 * no access is declared not to alias, which alias analysis ignores and the vectorisers keep. */
LLVMMetadataRef kc_hf_alias_scope(LLVMContextRef c, const char *domain, const char *scope);
/* The "alias.scope" metadata kind. kc_hf_has_scope: whether instruction i's alias scope list
 * (of at most KC_HF_MAX_SCOPES) holds scope (as a value); with rest, the list's other scopes
 * go into rest[*nrest]. Optimisation may have added scopes of its own to a list: the loop
 * vectoriser's runtime alias checks do. */
#define KC_HF_MAX_SCOPES 16
unsigned kc_hf_scope_kind(LLVMContextRef c);
int kc_hf_has_scope(LLVMValueRef i, LLVMValueRef scope, LLVMValueRef *rest, unsigned *nrest);
/* Calls to declared functions whose base name starts with prefix, in module order. */
LLVMValueRef *kc_hf_find_calls(LLVMModuleRef m, LLVMValueRef only_in, const char *prefix,
                               size_t *count);
/* One builtin call seen by kc_hf_rewrite_calls: its base name, its first KC_HF_MAX_OPERANDS
 * operands (nargs counts them all) and the builder placed before it. Returns the value that
 * replaces the call (anything for a void call), the call itself to leave it, or NULL with *log
 * set when it is not supported. */
#define KC_HF_MAX_OPERANDS 8
typedef LLVMValueRef (*kc_hf_lower_call_fn)(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef call,
                                            const char *base, LLVMValueRef *args, unsigned nargs,
                                            char **log);
/* Rewrites every call to a declared function whose base name starts with prefix. */
int kc_hf_rewrite_calls(LLVMModuleRef m, const char *prefix, kc_hf_lower_call_fn fn, char **log);

#endif
