/* Host CPU finaliser (compiler.h, "Host CPU"): SPIR-V -> validated -> LLVM (SPIR-V-friendly
 * builtins, typed pointers) -> builtins lowered -> per-work-group entries -> inlined -> O3 ->
 * ORC LLJIT. This file holds the public API and the order of the phases; each phase lives in
 * its own finalise_host_*.c. LLVM fatal errors during our LLVM work come back as KC_ERR_LLVM
 * through the compiler's one guard (llvm_guard.c).
 */
#include "finalise/host/finalise_host.h"

#include "compile.h"
#include "finalise/host/finalise_host_jit.h"
#include "finalise/host/finalise_host_native.h"
#include "spirv/translator.h"

#include <llvm-c/Analysis.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct kc_host_module {
  kc_hf_jit_t jit;
  uint32_t count;
  kc_host_kernel_t *kernels;
  char *ir;
  void *native; /* kc_host_module_native's binary, or NULL */
  size_t native_len;
  int refused; /* built for a CPU this one is not (kc_hf_target_runnable): not to run */
};

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void init_llvm(void) {
  LLVMInitializeNativeTarget();
  LLVMInitializeNativeAsmPrinter();
  LLVMInitializeNativeAsmParser(); /* the local atomics' inline assembly */
}

/* ---- Validation ---------------------------------------------------------------------- */

/* kc_spirv_validate checks the module against OpenCL's rules; the translator also needs the
 * OpenCL memory model with 64-bit physical addressing, which we check here. */
static int check_memory_model(const uint32_t *w, size_t n, char **log) {
  for (size_t i = 5; i < n;) {
    uint32_t count = w[i] >> 16, op = w[i] & 0xffff;
    if (count == 0 || i + count > n) break;
    if (op == 14 /* OpMemoryModel */ && count == 3) {
      if (w[i + 1] == 2 /* Physical64 */ && w[i + 2] == 2 /* OpenCL */) return 1;
      break;
    }
    i += count;
  }
  *log = kc_msg("SPIR-V module is not an OpenCL kernel module (Physical64 addressing, "
                "OpenCL memory model)");
  return 0;
}

static kc_status_t validate(const void *spirv, size_t nbytes, char **log) {
  if (nbytes < 20 || nbytes % 4) {
    *log =
        kc_msg("SPIR-V binary of %zu bytes is not a whole number of words with a header", nbytes);
    return KC_ERR_SPIRV;
  }
  kc_status_t st = kc_spirv_validate(spirv, nbytes, log);
  if (st != KC_OK) return st;
  uint32_t *w = malloc(nbytes);
  if (!w) return KC_ERR_OUT_OF_MEMORY;
  memcpy(w, spirv, nbytes);
  if (!check_memory_model(w, nbytes / 4, log) || !kc_hf_check_spirv(w, nbytes / 4, log))
    st = KC_ERR_SPIRV;
  free(w);
  return st;
}

/* ---- The LLVM phases ----------------------------------------------------------------- */

static void to_c_calling_convention(LLVMModuleRef m) {
  for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f)) {
    LLVMSetFunctionCallConv(f, LLVMCCallConv);
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
      for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i))
        if (LLVMIsACallInst(i)) LLVMSetInstructionCallConv(i, LLVMCCallConv);
  }
}

static int verify(LLVMModuleRef m, const char *when, char **log) {
  char *msg = NULL;
  if (!LLVMVerifyModule(m, LLVMReturnStatusAction, &msg)) {
    LLVMDisposeMessage(msg);
    return 1;
  }
  *log = kc_msg("internal error: invalid LLVM IR %s: %s", when, msg ? msg : "");
  LLVMDisposeMessage(msg);
  return 0;
}

/* After inlining only the generated entries may remain defined: anything else was not
 * inlinable (recursion), and its builtins would have no work-item to refer to. */
static int check_inlined(LLVMModuleRef m, const kc_hf_kernel_t *ks, uint32_t n, char **log) {
  for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f)) {
    if (LLVMIsDeclaration(f)) continue;
    int entry = 0;
    for (uint32_t i = 0; i < n && !entry; i++)
      entry = f == ks[i].run || f == ks[i].body;
    if (!entry) {
      *log = kc_msg("function %s cannot be inlined into its kernel (recursion is not "
                    "supported)",
                    LLVMGetValueName(f));
      return 0;
    }
  }
  return 1;
}

/* Bytes of the function's fixed-size allocas (private arrays; in run, the __local buffer). */
static uint64_t frame_bytes(LLVMValueRef f, LLVMTargetDataRef td) {
  uint64_t total = 0;
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
    for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i)) {
      if (!LLVMIsAAllocaInst(i)) continue;
      LLVMValueRef count = LLVMGetOperand(i, 0);
      uint64_t c = LLVMIsAConstantInt(count) ? LLVMConstIntGetZExtValue(count) : UINT32_MAX;
      uint64_t one = LLVMABISizeOfType(td, LLVMGetAllocatedType(i));
      total += one && c > UINT64_MAX / 4 / one ? UINT64_MAX / 4 : one * c;
    }
  return total;
}

/* Private memory must fit the stacks work-items run on (see KC_HF_FIBER_STACK). */
static int check_frames(LLVMModuleRef m, const kc_hf_kernel_t *ks, uint32_t n, char **log) {
  LLVMTargetDataRef td = LLVMGetModuleDataLayout(m);
  for (uint32_t i = 0; i < n; i++) {
    int fiber = ks[i].scheme == KC_HF_FIBERS;
    uint64_t bytes = frame_bytes(ks[i].body, td);
    /* the region scheme keeps __local variables in its scratch storage, under the same limit */
    if (ks[i].scheme == KC_HF_REGIONS) bytes += ks[i].local_size;
    unsigned limit = fiber ? KC_HF_FIBER_PRIVATE : KC_HF_FRAME;
    if (bytes > limit) {
      *log = kc_msg("kernel %s needs %llu bytes of %s memory; the host CPU device supports %u",
                    ks[i].name, (unsigned long long)bytes,
                    fiber ? "private (per work-item)" : "private and __local", limit);
      return 0;
    }
  }
  return 1;
}

static int check_locals_gone(LLVMModuleRef m, char **log) {
  for (LLVMValueRef g = LLVMGetFirstGlobal(m); g; g = LLVMGetNextGlobal(g))
    if (LLVMGetPointerAddressSpace(LLVMTypeOf(g)) == 3) {
      *log = kc_msg("__local variable %s is used outside a kernel body", LLVMGetValueName(g));
      return 0;
    }
  return 1;
}

/* KAPI_HOST_TIMES=1: each stage's CPU time (this thread's) on stderr, for where a first call's
 * compile goes (the region split, the O3 pipeline, the gathers' windows, code generation). */
static void stage_time(const char *what) {
  static __thread double last;
  static int on = -1;
  if (on < 0) {
    const char *v = getenv("KAPI_HOST_TIMES");
    on = v && *v && strcmp(v, "0") != 0;
  }
  if (!on) return;
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  double now = (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
  if (what) fprintf(stderr, "kapi-host-time %s %.1f ms\n", what, now - last);
  last = now;
}

typedef struct {
  kc_hf_jit_t *jit;
  LLVMModuleRef m;
  kc_hf_kernel_t *ks;
  uint32_t n;
  kc_hf_locals_t locals;
  char *ir;
} work_t;

#define REGION_CLEANUP                                                                             \
  "function(sroa,early-cse<memssa>,instcombine,simplifycfg,loop-mssa(licm),gvn,simplifycfg,"       \
  "loop-mssa(licm,simple-loop-unswitch<nontrivial>),simplifycfg,instcombine,loop-mssa(licm))"

/* After kc_hf_unmask_slots: slots to registers, and the selects it added folded. */
#define SLOTS_CLEANUP "function(sroa,early-cse,instcombine,simplifycfg)"

/* The region scheme's split (finalise_host_regions.c) on every KC_HF_REGIONS kernel: scalar
 * private variables go to registers first (only arrays should need per-work-item memory);
 * then each split wi is inlined into its run's region loops. Fiber kernels that spin get
 * their yields. */
static kc_status_t split_regions(work_t *w, char **log) {
  int any = 0;
  for (uint32_t i = 0; i < w->n; i++) {
    any |= w->ks[i].scheme == KC_HF_REGIONS;
    if (!kc_hf_add_yields(w->m, &w->ks[i], log)) return KC_ERR_OUT_OF_MEMORY;
  }
  if (!any) return KC_OK;
  if (!kc_hf_jit_passes(w->jit, w->m, "function(sroa)", log)) return KC_ERR_LLVM;
  for (uint32_t i = 0; i < w->n; i++)
    if (w->ks[i].scheme == KC_HF_REGIONS && !kc_hf_split_regions(w->m, &w->ks[i], log))
      return KC_ERR_UNSUPPORTED;
  if (!verify(w->m, "after the region split", log)) return KC_ERR_LLVM;
  if (!kc_hf_jit_passes(w->jit, w->m, "always-inline,globaldce", log)) return KC_ERR_LLVM;
  /* Enough clean-up for region loops' guards to be seen as `x < loop-invariant` (uniform
   * reloads hoisted, uniform branches unswitched), then the narrowing. */
  if (!kc_hf_jit_passes(w->jit, w->m, REGION_CLEANUP, log)) return KC_ERR_LLVM;
  for (uint32_t i = 0; i < w->n; i++)
    if (w->ks[i].scheme == KC_HF_REGIONS) {
      w->ks[i].body = w->ks[i].run;
      kc_hf_narrow_region_loops(&w->ks[i]);
      kc_hf_prefetch_expand(w->m, &w->ks[i]);
    }
  return KC_OK;
}

static kc_status_t lower(work_t *w, char **log) {
  LLVMModuleRef m = w->m;
  kc_hf_jit_prepare(w->jit, m);
  if (!kc_hf_lower_printf(m, log) || !kc_hf_lower_math(m, log) || !kc_hf_lower_atomics(m, log))
    return KC_ERR_UNSUPPORTED;
  kc_hf_mark_nontemporal(m);
  if (!kc_hf_lower_sub_groups(m, log)) return KC_ERR_UNSUPPORTED;
  if (!kc_hf_vec_keep(m, log)) return KC_ERR_OUT_OF_MEMORY;
  LLVMTargetDataRef td = LLVMGetModuleDataLayout(m);
  if (!kc_hf_layout_locals(m, td, &w->locals, log)) return KC_ERR_UNSUPPORTED;
  if (!kc_hf_collect_kernels(m, td, &w->ks, &w->n, log)) return KC_ERR_UNSUPPORTED;
  kc_hf_find_streams(m, w->ks, w->n);
  if (!kc_hf_make_entries(m, w->ks, w->n, &w->locals, log)) return KC_ERR_OUT_OF_MEMORY;
  to_c_calling_convention(m); /* after kernels were found by their SPIR_KERNEL convention */
  if (!verify(m, "after entry generation", log)) return KC_ERR_LLVM;
  if (!kc_hf_jit_passes(w->jit, m, "always-inline,globaldce", log)) return KC_ERR_LLVM;
  if (!check_inlined(m, w->ks, w->n, log)) return KC_ERR_UNSUPPORTED;
  for (uint32_t i = 0; i < w->n; i++)
    if (!kc_hf_lower_ids(m, &w->ks[i], log)) return KC_ERR_UNSUPPORTED;
  if (!kc_hf_rewrite_locals(m, w->ks, w->n, &w->locals, log)) return KC_ERR_UNSUPPORTED;
  if (!verify(m, "after builtin lowering", log)) return KC_ERR_LLVM;
  stage_time("lowering");
  kc_status_t st = split_regions(w, log);
  if (st != KC_OK) return st;
  stage_time("regions");
  if (!kc_hf_jit_o3(w->jit, m, kc_hf_cheap_gathers() && !kc_hf_reads_doubles(m), log))
    return KC_ERR_LLVM;
  stage_time("O3");
  unsigned unmasked = 0;
  for (uint32_t i = 0; i < w->n; i++)
    if (w->ks[i].scheme == KC_HF_REGIONS && w->ks[i].loopvec)
      unmasked += kc_hf_unmask_slots(&w->ks[i]);
  if (unmasked && !kc_hf_jit_passes(w->jit, m, SLOTS_CLEANUP, log)) return KC_ERR_LLVM;
  unsigned windows = 0;
  for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
    if (!LLVMIsDeclaration(f)) windows += kc_hf_window_gathers(f);
  if (windows && !verify(m, "after the gathers' windows", log)) return KC_ERR_LLVM;
  stage_time("windows");
  kc_hf_make_streams(m, w->ks, w->n);
  if (kc_hf_restore_nontemporal(m) && !kc_hf_jit_passes(w->jit, m, "always-inline,globaldce", log))
    return KC_ERR_LLVM;
  kc_hf_vec_release(m);
  if (!check_locals_gone(m, log) || !check_frames(m, w->ks, w->n, log)) return KC_ERR_UNSUPPORTED;
  w->ir = LLVMPrintModuleToString(m);
  return KC_OK;
}

/* k's entry NAME.SUFFIX, looked up in the JIT (linking the object on the first lookup). */
static kc_host_group_fn entry(kc_hf_jit_t *jit, const char *name, const char *suffix, char **log) {
  char *sym = kc_msg("%s.%s", name, suffix);
  void *addr = NULL;
  int ok = sym && kc_hf_jit_lookup(jit, sym, &addr, log);
  free(sym);
  return ok ? (kc_host_group_fn)addr : NULL;
}

/* Sets k's run (and run_streaming where k has streaming bytes) from the JIT. */
static kc_status_t lookup_entries(kc_hf_jit_t *jit, kc_host_kernel_t *k, char **log) {
  k->run = entry(jit, k->name, "kapi.run", log);
  if (!k->run) return KC_ERR_TARGET;
  if (k->streaming_bytes && !(k->run_streaming = entry(jit, k->name, "kapi.stream", log)))
    return KC_ERR_TARGET;
  return KC_OK;
}

/* Fills the public kernel table from the finalised kernels; looks each entry up (compiling the
 * module on the first lookup). */
static kc_status_t publish(work_t *w, kc_host_module_t *mod, char **log) {
  mod->kernels = calloc(w->n ? w->n : 1, sizeof *mod->kernels);
  if (!mod->kernels) return KC_ERR_OUT_OF_MEMORY;
  for (uint32_t i = 0; i < w->n; i++) {
    kc_hf_kernel_t *k = &w->ks[i];
    kc_host_kernel_t *out = &mod->kernels[i];
    out->name = k->name, k->name = NULL;
    out->args = k->args, k->args = NULL;
    mod->count = i + 1; /* (the module owns them now: destroy frees them) */
    out->num_args = k->num_args;
    out->uses_barrier = (uint32_t)k->uses_barrier;
    out->spins = (uint32_t)k->spins;
    out->batches = k->scheme == KC_HF_REGIONS && k->batches;
    memcpy(out->required_local_size, k->reqd, sizeof k->reqd);
    out->streaming_bytes = k->stream_bytes;
    kc_status_t st = lookup_entries(&mod->jit, out, log);
    if (st != KC_OK) return st;
  }
  return KC_OK;
}

static kc_status_t finalise(const void *spirv, size_t nbytes, kc_host_module_t *mod, char **log) {
  kc_status_t st = validate(spirv, nbytes, log);
  if (st != KC_OK) return st;
  if (!kc_hf_jit_create(&mod->jit, log)) return KC_ERR_TARGET;
  LLVMOrcThreadSafeContextRef tsc = LLVMOrcCreateNewThreadSafeContext();
  LLVMContextRef ctx = LLVMOrcThreadSafeContextGetContext(tsc);
  LLVMContextSetOpaquePointers(ctx, 0);
  kc_hf_jit_capture_diagnostics(&mod->jit, ctx);
  work_t w = {.jit = &mod->jit};
  char *err = NULL;
  uint32_t *words = malloc(nbytes);
  if (!words) {
    LLVMOrcDisposeThreadSafeContext(tsc);
    return KC_ERR_OUT_OF_MEMORY;
  }
  memcpy(words, spirv, nbytes);
  kc_hf_sanitise_spirv(words, nbytes / 4);
  stage_time(NULL);
  int read = kc_tr_read_spirv(ctx, words, nbytes, &w.m, &err);
  free(words);
  if (!read) {
    *log = err;
    LLVMOrcDisposeThreadSafeContext(tsc);
    return KC_ERR_SPIRV;
  }
  st = lower(&w, log);
  /* Code generation once, to an object the JIT links and the module keeps as its binary. */
  void *obj = NULL;
  size_t obj_len = 0;
  if (st == KC_OK && !kc_hf_emit_object(&mod->jit, w.m, &obj, &obj_len, log)) st = KC_ERR_TARGET;
  stage_time("codegen");
  LLVMDisposeModule(w.m);
  if (st == KC_OK)
    st = kc_hf_jit_add_object(&mod->jit, obj, obj_len, log) ? publish(&w, mod, log) : KC_ERR_TARGET;
  if (st == KC_OK) /* no binary (out of memory) only costs the disk cache */
    mod->native = kc_hf_native_pack(mod->kernels, mod->count, obj, obj_len, &mod->native_len);
  /* Built and linked for a CPU (KAPI_HOST_CPU) with instructions this one lacks: a launch would
   * die of SIGILL, so the module is an error, whose message says it got this far. */
  if (st == KC_OK && !kc_hf_target_runnable(log)) st = KC_ERR_TARGET, mod->refused = 1;
  free(obj);
  LLVMOrcDisposeThreadSafeContext(tsc);
  mod->ir = w.ir ? strdup(w.ir) : NULL;
  LLVMDisposeMessage(w.ir);
  kc_hf_kernels_free(w.ks, w.n);
  kc_hf_locals_free(&w.locals);
  return st;
}

/* kc_llvm_guarded's view of one finalisation. `returned` tells a normal return (the module can
 * be destroyed) from an LLVM fatal error (its JIT is in an unknown state and is leaked). */
typedef struct {
  const void *spirv;
  size_t nbytes;
  kc_host_module_t *mod;
  char *msg;
  int returned;
} guarded_t;

static kc_status_t finalise_guarded(void *p) {
  guarded_t *g = p;
  kc_status_t st = finalise(g->spirv, g->nbytes, g->mod, &g->msg);
  g->returned = 1;
  return st;
}

kc_status_t kc_host_finalise(const void *spirv, size_t nbytes, kc_host_module_t **out, char **log) {
  if (log) *log = NULL;
  if (!spirv || !out) {
    if (log) *log = kc_msg("kc_host_finalise: spirv and out must not be NULL");
    return KC_ERR_INVALID_ARGUMENT;
  }
  *out = NULL;
  pthread_once(&init_once, init_llvm);
  guarded_t g = {.spirv = spirv, .nbytes = nbytes, .mod = calloc(1, sizeof(kc_host_module_t))};
  if (!g.mod) return KC_ERR_OUT_OF_MEMORY;
  char *fatal = NULL;
  kc_status_t st = kc_llvm_guarded(finalise_guarded, &g, &fatal);
  if (!g.returned) { /* LLVM fatal error: fatal holds the reason */
    free(g.msg);
    g.msg = fatal;
    g.mod = NULL;
  } else {
    free(fatal);
  }
  if (st == KC_OK || (st == KC_ERR_TARGET && g.mod && g.mod->refused)) {
    *out = g.mod; /* a refused one for its IR (compiler.h) */
  } else {
    kc_host_module_destroy(g.mod);
  }
  if (st != KC_OK && !g.msg)
    g.msg = kc_msg("%s", st == KC_ERR_OUT_OF_MEMORY ? "out of memory" : "failed");
  if (log)
    *log = g.msg;
  else
    free(g.msg);
  return st;
}

void kc_host_module_destroy(kc_host_module_t *mod) {
  if (!mod) return;
  for (uint32_t i = 0; i < mod->count; i++) {
    free((char *)mod->kernels[i].name);
    free((void *)mod->kernels[i].args);
  }
  free(mod->kernels);
  kc_hf_jit_dispose(&mod->jit);
  free(mod->ir);
  free(mod->native);
  free(mod);
}

uint32_t kc_host_module_kernel_count(const kc_host_module_t *mod) {
  return mod ? mod->count : 0;
}

const kc_host_kernel_t *kc_host_module_kernel(const kc_host_module_t *mod, uint32_t i) {
  return mod && i < mod->count ? &mod->kernels[i] : NULL;
}

const kc_host_kernel_t *kc_host_module_find(const kc_host_module_t *mod, const char *name) {
  for (uint32_t i = 0; mod && name && i < mod->count; i++)
    if (!strcmp(mod->kernels[i].name, name)) return &mod->kernels[i];
  return NULL;
}

const char *kc_host_module_llvm_ir(const kc_host_module_t *mod) {
  return mod ? mod->ir : NULL;
}

const void *kc_host_module_native(const kc_host_module_t *mod, size_t *len) {
  if (len) *len = mod && mod->native ? mod->native_len : 0;
  return mod ? mod->native : NULL;
}

/* ---- Loading a native binary (finalise_host_native.c has its format) ------------------ */

typedef struct {
  const void *blob;
  size_t len;
  kc_host_module_t *mod;
  char *msg;
  int returned;
} load_t;

static kc_status_t load(load_t *l) {
  kc_host_module_t *mod = l->mod;
  const void *obj;
  size_t obj_len;
  kc_host_kernel_t *ks = NULL;
  uint32_t n = 0;
  kc_status_t st = kc_hf_native_unpack(l->blob, l->len, &ks, &n, &obj, &obj_len, &l->msg);
  if (st != KC_OK) return st;
  mod->kernels = ks, mod->count = n; /* owned by mod from here (destroy frees them) */
  if (!kc_hf_target_runnable(&l->msg)) return KC_ERR_TARGET;
  kc_hf_native_prepare_process();
  if (!kc_hf_jit_create(&mod->jit, &l->msg)) return KC_ERR_TARGET;
  if (!kc_hf_jit_add_object(&mod->jit, obj, obj_len, &l->msg)) return KC_ERR_TARGET;
  for (uint32_t i = 0; i < n; i++) {
    kc_status_t st = lookup_entries(&mod->jit, &ks[i], &l->msg);
    if (st != KC_OK) return st;
  }
  mod->native = malloc(l->len);
  if (mod->native) memcpy(mod->native, l->blob, l->len), mod->native_len = l->len;
  return KC_OK;
}

static kc_status_t load_guarded(void *p) {
  load_t *l = p;
  kc_status_t st = load(l);
  l->returned = 1;
  return st;
}

kc_status_t kc_host_load(const void *native, size_t len, kc_host_module_t **out, char **log) {
  if (log) *log = NULL;
  if (!native || !out) {
    if (log) *log = kc_msg("kc_host_load: native and out must not be NULL");
    return KC_ERR_INVALID_ARGUMENT;
  }
  *out = NULL;
  pthread_once(&init_once, init_llvm);
  load_t l = {.blob = native, .len = len, .mod = calloc(1, sizeof(kc_host_module_t))};
  if (!l.mod) return KC_ERR_OUT_OF_MEMORY;
  char *fatal = NULL;
  kc_status_t st = kc_llvm_guarded(load_guarded, &l, &fatal);
  if (!l.returned) {
    free(l.msg);
    l.msg = fatal;
    l.mod = NULL;
  } else {
    free(fatal);
  }
  if (st != KC_OK) {
    kc_host_module_destroy(l.mod);
    if (!l.msg) l.msg = kc_msg("%s", st == KC_ERR_OUT_OF_MEMORY ? "out of memory" : "failed");
  } else {
    *out = l.mod;
  }
  if (log)
    *log = l.msg;
  else
    free(l.msg);
  return st;
}
