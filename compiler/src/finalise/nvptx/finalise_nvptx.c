/* NVPTX finaliser: SPIR-V -> PTX for kapi's CUDA driver. This file chains the steps
 * (validate, read, remap address spaces, lower builtins, link libdevice, optimise, emit) and
 * owns the resulting module; the builtins and kernel preparation live beside it.
 */
#include "finalise/nvptx/finalise_nvptx.h"
#include "compile.h"
#include "spirv/translator.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/BitReader.h>
#include <llvm-c/Linker.h>
#include <llvm-c/Support.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NVPTX_TRIPLE "nvptx64-nvidia-cuda"
#define NVPTX_MAX_SM 86

struct kc_nvptx_module {
  char *ptx;
  size_t ptx_len;
  kc_nvptx_kernel_list_t kernels;
  uint32_t sm; /* the options it was made with, recorded in its native binary */
  int coarsen;
};

void kc_nvptx_options_init(kc_nvptx_options_t *opts) {
  opts->libdevice_path = NULL;
  opts->sm = NVPTX_MAX_SM;
  opts->opt_level = 3;
  opts->coarsen = 1;
}

static pthread_once_t nvptx_once = PTHREAD_ONCE_INIT;
/* Floating-point contraction as CUDA does it by default (nvcc --fmad=true, numba-cuda): without
 * it NVPTX writes every fmul and fadd with .rn, which forbids ptxas to fuse them, and an inner
 * product then costs twice the instructions (the tiled matmul ran at 0.8x numba-cuda). A fused
 * multiply-add rounds once, so results move by at most an ulp per operation, towards the exact
 * value. The option is NVPTX's own, in libLLVM-15's process-wide registry (set at load, before
 * any thread runs a pipeline, as optimise.c does for its option). */
__attribute__((constructor)) static void nvptx_set_llvm_options(void) {
  const char *argv[] = {"kapi", "-nvptx-fma-level=1"};
  LLVMParseCommandLineOptions(2, argv, "kapi NVPTX finaliser");
}

static void nvptx_init_target(void) {
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTarget();
  LLVMInitializeNVPTXTargetMC();
  LLVMInitializeNVPTXAsmPrinter();
}

/* SPIR generic (4) is NVPTX's const space and NVPTX generic is 0; SPIR constant (2) data lives
 * in global memory (1). Private 0, global 1 and local 3 keep their numbers. */
static kc_status_t nvptx_read(LLVMContextRef ctx, const void *spirv, size_t nbytes,
                              LLVMModuleRef *out, char **log) {
  LLVMModuleRef spir = NULL;
  char *err = NULL;
  if (!kc_tr_read_spirv(ctx, spirv, nbytes, &spir, &err)) {
    *log = err;
    return KC_ERR_SPIRV;
  }
  static const unsigned map[] = {0, 1, 1, 3, 0};
  int ok = kc_tr_remap_address_spaces(spir, map, 5, out, &err);
  LLVMDisposeModule(spir);
  if (!ok) {
    *log = err;
    return KC_ERR_UNSUPPORTED;
  }
  return KC_OK;
}

static int has_libdevice_calls(LLVMModuleRef mod) {
  for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f)) {
    size_t n;
    if (LLVMIsDeclaration(f) && strncmp(LLVMGetValueName2(f, &n), "__nv_", 5) == 0) return 1;
  }
  return 0;
}

static kc_status_t nvptx_link_libdevice(LLVMContextRef ctx, LLVMModuleRef mod, const char *path,
                                        char **log) {
  LLVMMemoryBufferRef buf = NULL;
  char *err = NULL;
  if (LLVMCreateMemoryBufferWithContentsOfFile(path, &buf, &err)) {
    *log = kc_msg("cannot read libdevice '%s': %s", path, err ? err : "?");
    LLVMDisposeMessage(err);
    return KC_ERR_TARGET;
  }
  LLVMModuleRef lib = NULL;
  LLVMBool bad = LLVMParseBitcodeInContext2(ctx, buf, &lib);
  LLVMDisposeMemoryBuffer(buf);
  if (bad) {
    *log = kc_msg("libdevice '%s' is not LLVM bitcode this LLVM can read", path);
    return KC_ERR_TARGET;
  }
  LLVMSetTarget(lib, NVPTX_TRIPLE);
  LLVMSetDataLayout(lib, LLVMGetDataLayoutStr(mod));
  if (LLVMLinkModules2(mod, lib)) { /* consumes lib */
    *log = kc_msg("linking libdevice '%s' failed", path);
    return KC_ERR_TARGET;
  }
  return KC_OK;
}

/* PTX identifiers are [A-Za-z_$][A-Za-z0-9_$]*; LLVM's NVPTX printer aborts on other names
 * (its own clean-up only replaces '.' and '@'), so internal symbols are renamed. LLVM keeps
 * names unique by appending a number on collision. */
static void nvptx_clean_name(LLVMValueRef v) {
  size_t n;
  const char *name = LLVMGetValueName2(v, &n);
  char *clean = malloc(n + 2);
  if (!clean) return;
  size_t j = 0;
  if (n == 0 || (name[0] >= '0' && name[0] <= '9')) clean[j++] = '_';
  int changed = j > 0;
  for (size_t i = 0; i < n; ++i) {
    char c = name[i];
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
             c == '_' || c == '$';
    clean[j++] = ok ? c : '_';
    changed |= !ok;
  }
  if (changed) LLVMSetValueName2(v, clean, j);
  free(clean);
}

/* Everything but the kernels becomes internal, so unused libdevice code is dropped and the
 * builtins inline; a declaration left over (not an intrinsic) would fail at module load. */
static kc_status_t nvptx_internalise(LLVMModuleRef mod, const kc_nvptx_kernel_list_t *ks) {
  for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f)) {
    size_t n;
    const char *name = LLVMGetValueName2(f, &n);
    if (LLVMIsDeclaration(f)) continue;
    int kernel = 0;
    for (uint32_t i = 0; i < ks->count && !kernel; ++i)
      kernel = strcmp(ks->items[i].name, name) == 0 ||
               (ks->items[i].coarse_name && strcmp(ks->items[i].coarse_name, name) == 0) ||
               (ks->items[i].aligned_name && strcmp(ks->items[i].aligned_name, name) == 0);
    if (kernel) continue;
    LLVMSetLinkage(f, LLVMInternalLinkage);
    nvptx_clean_name(f);
  }
  for (LLVMValueRef g = LLVMGetFirstGlobal(mod); g; g = LLVMGetNextGlobal(g))
    if (!LLVMIsDeclaration(g)) {
      LLVMSetLinkage(g, LLVMInternalLinkage);
      nvptx_clean_name(g);
    }
  return KC_OK;
}

/* After optimisation only intrinsics and CUDA's vprintf may stay declared: anything else would
 * fail at load. */
static kc_status_t nvptx_check_resolved(LLVMModuleRef mod, char **log) {
  for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f)) {
    size_t n;
    const char *name = LLVMGetValueName2(f, &n);
    if (LLVMIsDeclaration(f) && strncmp(name, "llvm.", 5) != 0 && strcmp(name, "vprintf") != 0 &&
        LLVMGetFirstUse(f)) {
      *log = kc_msg("unresolved function '%s' (not provided for NVIDIA GPUs)", name);
      return KC_ERR_UNSUPPORTED;
    }
  }
  return KC_OK;
}

static LLVMTargetMachineRef nvptx_machine(const kc_nvptx_options_t *o, char **log) {
  char *err = NULL;
  LLVMTargetRef target;
  if (LLVMGetTargetFromTriple(NVPTX_TRIPLE, &target, &err)) {
    *log = kc_msg("NVPTX target unavailable: %s", err ? err : "?");
    LLVMDisposeMessage(err);
    return NULL;
  }
  unsigned sm = o->sm == 0 || o->sm > NVPTX_MAX_SM ? NVPTX_MAX_SM : o->sm;
  char cpu[16];
  snprintf(cpu, sizeof cpu, "sm_%u", sm);
  LLVMCodeGenOptLevel lvl = o->opt_level <= 0   ? LLVMCodeGenLevelNone
                            : o->opt_level >= 3 ? LLVMCodeGenLevelAggressive
                                                : LLVMCodeGenLevelDefault;
  return LLVMCreateTargetMachine(target, NVPTX_TRIPLE, cpu, "+ptx75", lvl, LLVMRelocDefault,
                                 LLVMCodeModelDefault);
}

static kc_status_t nvptx_optimise(LLVMModuleRef mod, LLVMTargetMachineRef tm, int level,
                                  char **log) {
  char passes[64];
  snprintf(passes, sizeof passes, "function(nvvm-reflect),default<O%d>",
           level < 0   ? 0
           : level > 3 ? 3
                       : level);
  LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
  LLVMErrorRef e = LLVMRunPasses(mod, passes, tm, po);
  LLVMDisposePassBuilderOptions(po);
  if (e) {
    char *m = LLVMGetErrorMessage(e);
    *log = kc_msg("optimisation failed: %s", m);
    LLVMDisposeErrorMessage(m);
    return KC_ERR_LLVM;
  }
  return KC_OK;
}

static kc_status_t nvptx_emit(LLVMModuleRef mod, LLVMTargetMachineRef tm, kc_nvptx_module_t *out,
                              char **log) {
  char *err = NULL;
  if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &err)) {
    *log = kc_msg("internal error, invalid NVPTX module: %s", err);
    LLVMDisposeMessage(err);
    return KC_ERR_LLVM;
  }
  LLVMDisposeMessage(err);
  LLVMMemoryBufferRef buf = NULL;
  if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMAssemblyFile, &err, &buf)) {
    *log = kc_msg("PTX emission failed: %s", err ? err : "?");
    LLVMDisposeMessage(err);
    return KC_ERR_TARGET;
  }
  size_t n = LLVMGetBufferSize(buf);
  char *text = malloc(n + 1);
  if (text) {
    memcpy(text, LLVMGetBufferStart(buf), n);
    text[n] = 0;
    out->ptx = kc_nvptx_mask_rotates(text);
    free(text);
  }
  if (out->ptx) out->ptx_len = strlen(out->ptx);
  LLVMDisposeMemoryBuffer(buf);
  return out->ptx ? KC_OK : KC_ERR_OUT_OF_MEMORY;
}

/* Steps after reading, on the NVPTX module. */
static kc_status_t nvptx_lower(LLVMContextRef ctx, LLVMModuleRef mod, const kc_nvptx_options_t *o,
                               int maxreg, int ftz, kc_nvptx_module_t *out, char **log) {
  LLVMTargetMachineRef tm = nvptx_machine(o, log);
  if (!tm) return KC_ERR_TARGET;
  LLVMSetTarget(mod, NVPTX_TRIPLE);
  LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
  char *dl = LLVMCopyStringRepOfTargetData(td);
  LLVMSetDataLayout(mod, dl);
  LLVMDisposeMessage(dl);
  LLVMDisposeTargetData(td);
  kc_status_t st = kc_nvptx_prepare_kernels(mod, &out->kernels, log);
  if (st == KC_OK && o->coarsen) st = kc_nvptx_coarsen(mod, &out->kernels);
  if (st == KC_OK && ftz) kc_nvptx_flush_denormals(mod); /* the coarsened entries too */
  if (st == KC_OK) st = kc_nvptx_lower_builtins(mod, o->libdevice_path != NULL, log);
  if (st == KC_OK && has_libdevice_calls(mod))
    st = nvptx_link_libdevice(ctx, mod, o->libdevice_path, log);
  if (st == KC_OK) st = nvptx_internalise(mod, &out->kernels);
  if (st == KC_OK) st = nvptx_optimise(mod, tm, o->opt_level, log);
  if (st == KC_OK) kc_nvptx_coarsen_finish(mod, &out->kernels);
  if (st == KC_OK && o->coarsen) st = kc_nvptx_align_entries(mod, tm, &out->kernels);
  if (st == KC_OK) kc_nvptx_cap_registers(mod, &out->kernels, maxreg);
  if (st == KC_OK) st = kc_nvptx_narrow(mod);
  if (st == KC_OK) st = nvptx_check_resolved(mod, log);
  if (st == KC_OK) kc_nvptx_avoid_miscompiles(mod);
  if (st == KC_OK) st = nvptx_emit(mod, tm, out, log);
  LLVMDisposeTargetMachine(tm);
  return st;
}

/* LLVM reports through the context; its default handler prints warnings (a coarsened loop the
 * vectoriser declined is one) and exits on errors. Here warnings are dropped and the first
 * error becomes the finaliser's. */
static void nvptx_diagnostic(LLVMDiagnosticInfoRef di, void *slot) {
  char **first = slot;
  if (LLVMGetDiagInfoSeverity(di) != LLVMDSError || *first) return;
  char *d = LLVMGetDiagInfoDescription(di);
  *first = kc_msg("%s", d ? d : "LLVM error");
  LLVMDisposeMessage(d);
}

/* Read, lower and emit, in a context of its own (so calls on many threads are independent). */
static kc_status_t nvptx_finalise_words(const uint32_t *words, size_t nbytes,
                                        const kc_nvptx_options_t *opts, kc_nvptx_module_t **out,
                                        char **log) {
  pthread_once(&nvptx_once, nvptx_init_target);
  kc_nvptx_module_t *m = calloc(1, sizeof *m);
  if (!m) return KC_ERR_OUT_OF_MEMORY;
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMContextSetOpaquePointers(ctx, 0);
  char *diagnostic = NULL;
  LLVMContextSetDiagnosticHandler(ctx, nvptx_diagnostic, &diagnostic);
  LLVMModuleRef mod = NULL;
  kc_status_t st = nvptx_read(ctx, words, nbytes, &mod, log);
  int maxreg = kc_spirv_max_registers(words, nbytes / 4);
  int ftz = kc_spirv_flushes_denormals(words, nbytes / 4);
  if (st == KC_OK) st = nvptx_lower(ctx, mod, opts, maxreg, ftz, m, log);
  if (st == KC_OK && diagnostic) {
    st = KC_ERR_LLVM;
    *log = diagnostic;
    diagnostic = NULL;
  }
  free(diagnostic);
  if (mod) LLVMDisposeModule(mod);
  LLVMContextDispose(ctx);
  if (st == KC_OK) {
    m->sm = opts->sm ? opts->sm : NVPTX_MAX_SM;
    m->coarsen = opts->coarsen;
    *out = m;
  } else {
    kc_nvptx_module_destroy(m);
  }
  return st;
}

/* kc_llvm_guarded's calling shape: LLVM's fatal errors (a finaliser bug, never expected from
 * validated input) become a status instead of ending the process. */
typedef struct nvptx_job {
  const uint32_t *words;
  size_t nbytes;
  const kc_nvptx_options_t *opts;
  kc_nvptx_module_t **out;
  char **log;
  kc_status_t status;
} nvptx_job_t;

static kc_status_t nvptx_job(void *arg) {
  nvptx_job_t *j = arg;
  j->status = nvptx_finalise_words(j->words, j->nbytes, j->opts, j->out, j->log);
  return KC_OK;
}

kc_status_t kc_nvptx_finalise(const void *spirv, size_t nbytes, const kc_nvptx_options_t *opts,
                              kc_nvptx_module_t **out, char **log) {
  char *dummy = NULL;
  if (!log) log = &dummy;
  *log = NULL;
  if (!spirv || !out) {
    *log = kc_msg("kc_nvptx_finalise: NULL argument");
    return KC_ERR_INVALID_ARGUMENT;
  }
  kc_nvptx_options_t defaults;
  kc_nvptx_options_init(&defaults);
  if (!opts) opts = &defaults;
  uint32_t *words = NULL;
  kc_status_t st = kc_nvptx_validate(spirv, nbytes, &words, log);
  if (st == KC_OK) {
    nvptx_job_t job = {words, nbytes, opts, out, log, KC_OK};
    char *fatal = NULL;
    st = kc_llvm_guarded(nvptx_job, &job, &fatal);
    if (st == KC_OK)
      st = job.status;
    else if (!*log)
      *log = fatal, fatal = NULL; /* an LLVM fatal error, caught */
    free(fatal);
  }
  free(words);
  if (st != KC_OK && !*log) *log = kc_msg("%s", kc_status_name(st));
  if (log == &dummy) free(dummy);
  return st;
}

void kc_nvptx_module_destroy(kc_nvptx_module_t *mod) {
  if (!mod) return;
  free(mod->ptx);
  kc_nvptx_kernel_list_free(&mod->kernels);
  free(mod);
}

const char *kc_nvptx_module_ptx(const kc_nvptx_module_t *mod, size_t *len) {
  if (len) *len = mod->ptx_len;
  return mod->ptx;
}

uint32_t kc_nvptx_module_kernel_count(const kc_nvptx_module_t *mod) {
  return mod->kernels.count;
}

const kc_nvptx_kernel_t *kc_nvptx_module_kernel(const kc_nvptx_module_t *mod, uint32_t i) {
  return i < mod->kernels.count ? &mod->kernels.items[i] : NULL;
}

const kc_nvptx_kernel_t *kc_nvptx_module_find(const kc_nvptx_module_t *mod, const char *name) {
  for (uint32_t i = 0; i < mod->kernels.count; ++i)
    if (strcmp(mod->kernels.items[i].name, name) == 0) return &mod->kernels.items[i];
  return NULL;
}

void *kc_nvptx_module_native(const kc_nvptx_module_t *mod, size_t *len) {
  if (len) *len = 0;
  if (!mod || !len) return NULL;
  return kc_nvptx_native_pack(&mod->kernels, mod->ptx, mod->ptx_len, mod->sm, mod->coarsen, len);
}

kc_status_t kc_nvptx_load(const void *native, size_t len, const kc_nvptx_options_t *opts,
                          kc_nvptx_module_t **out, char **log) {
  char *dummy = NULL;
  if (!log) log = &dummy;
  *log = NULL;
  kc_status_t st = KC_ERR_INVALID_ARGUMENT;
  kc_nvptx_options_t defaults;
  kc_nvptx_options_init(&defaults);
  if (!opts) opts = &defaults;
  kc_nvptx_module_t *m = native && out ? calloc(1, sizeof *m) : NULL;
  if (!native || !out)
    *log = kc_msg("kc_nvptx_load: NULL argument");
  else if (!m)
    st = KC_ERR_OUT_OF_MEMORY;
  else
    st = kc_nvptx_native_unpack(native, len, opts->sm ? opts->sm : NVPTX_MAX_SM, opts->coarsen,
                                &m->kernels, &m->ptx, &m->ptx_len, log);
  if (st == KC_OK) {
    m->sm = opts->sm ? opts->sm : NVPTX_MAX_SM;
    m->coarsen = opts->coarsen;
    *out = m;
  } else {
    free(m);
    if (!*log) *log = kc_msg("%s", kc_status_name(st));
  }
  if (log == &dummy) free(dummy);
  return st;
}
