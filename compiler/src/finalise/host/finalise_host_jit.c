/* Host finaliser: everything about the ORC LLJIT and the host target. One JIT per finalised
 * module (so modules are independent and thread-safe); the target machine is the host CPU with
 * all its features (or the CPU KAPI_HOST_CPU names), used both to optimise (the vectoriser needs
 * the real vector width) and to generate code. The JIT binds only the fiber runtime, libm/libmvec
 * functions (from those libraries, opened by soname), memory intrinsics and the compiler-rt
 * builtins x86 code generation calls (finalise_host_rt.c); any other external symbol is an
 * error, never a silent bind.
 */
#define _GNU_SOURCE
#include "finalise/host/finalise_host_jit.h"
#include "spirv/translator.h"

#include <dlfcn.h>
#include <llvm-c/Error.h>
#include <llvm-c/ExecutionEngine.h>
#include <llvm-c/OrcEE.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The ORC error reporter: keeps the message for the log instead of printing it. */
static void report(void *ctx, LLVMErrorRef err) {
  char **slot = ctx;
  char *m = LLVMGetErrorMessage(err);
  if (!*slot) *slot = kc_msg("%s", m);
  LLVMDisposeErrorMessage(m);
}

static char *take_error(LLVMErrorRef err, const char *what) {
  char *m = LLVMGetErrorMessage(err);
  char *r = kc_msg("%s: %s", what, m);
  LLVMDisposeErrorMessage(m);
  return r;
}

/* ---- The target ---------------------------------------------------------------------- */

/* What LLVM 15 picks on a Zen 4 host: it has no znver4, so the host's name is znver3 and Zen 4's
 * AVX-512 comes from the host's features (512-bit vectors: znver3 does not prefer 256). */
#define ZEN4_FEATURES                                                                              \
  "+avx512f,+avx512cd,+avx512dq,+avx512bw,+avx512vl,+avx512ifma,+avx512vbmi,+avx512vbmi2,"         \
  "+avx512vnni,+avx512bitalg,+avx512vpopcntdq,+avx512bf16,+gfni,+shstk"

/* The CPU the JIT generates code for, resolved once per process from KAPI_HOST_CPU. */
static struct {
  char *name;     /* KAPI_HOST_CPU as given, or "host" */
  char *cpu;      /* for the target machine */
  char *features; /* for the target machine: the host's, or only the additions to cpu's own */
  char *all;      /* every feature of the target, "+a,+b,..." (libmvec's ISAs, the check below) */
  char *error;    /* KAPI_HOST_CPU names no CPU LLVM 15 knows */
  char *missing;  /* features code for the target may use that this CPU lacks ("" if none) */
} target;
static pthread_once_t target_once = PTHREAD_ONCE_INIT;

/* Features code generation uses for ordinary code (vector and scalar ISA extensions); system
 * features (sgx, pku, wbnoinvd...) never appear in a kernel, so a CPU lacking them still runs it.
 */
static int codegen_feature(const char *f) {
  static const char *const prefixes[] = {"sse",        "ssse3",  "avx",   "fma",  "f16c", "bmi",
                                         "lzcnt",      "popcnt", "movbe", "cx16", "sahf", "gfni",
                                         "vpclmulqdq", "pclmul", "vaes",  "aes",  "sha",  "xop",
                                         "tbm",        "adx",    "prfchw"};
  for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
    if (!strncmp(f, prefixes[i], strlen(prefixes[i]))) return 1;
  return 0;
}

static int has_feature(const char *list, const char *f, size_t len) {
  for (const char *p = list; p && *p;) {
    const char *end = strchr(p, ',');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    if (n == len + 1 && p[0] == '+' && !strncmp(p + 1, f, len)) return 1;
    p = end ? end + 1 : p + n;
  }
  return 0;
}

/* The target's code-generation features this CPU lacks, "a, b" ("" when it has them all). */
static char *missing_features(const char *all) {
  char *host = LLVMGetHostCPUFeatures(), *out = kc_msg("%s", "");
  for (const char *p = all; out && *p;) {
    const char *end = strchr(p, ',');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    if (p[0] == '+' && n > 1) {
      char f[64];
      snprintf(f, sizeof f, "%.*s", (int)(n - 1), p + 1);
      if (codegen_feature(f) && !has_feature(host, f, strlen(f))) {
        char *more = kc_msg("%s%s%s", out, *out ? ", " : "", f);
        free(out);
        out = more;
      }
    }
    p = end ? end + 1 : p + n;
  }
  LLVMDisposeMessage(host);
  return out;
}

static char *dup_llvm(char *m) {
  char *r = kc_msg("%s", m ? m : "");
  LLVMDisposeMessage(m);
  return r;
}

static void target_init(void) {
  const char *v = getenv("KAPI_HOST_CPU");
  if (!v || !*v || !strcmp(v, "host")) {
    target.name = kc_msg("host");
    target.cpu = dup_llvm(LLVMGetHostCPUName());
    target.features = dup_llvm(LLVMGetHostCPUFeatures());
    target.all = kc_msg("%s", target.features ? target.features : "");
    target.missing = kc_msg("%s", "");
    return;
  }
  int zen4 = !strcmp(v, "znver4");
  char *own = kc_tr_x86_cpu_features(zen4 ? "znver3" : v);
  target.name = kc_msg("%s", v);
  if (!own) {
    target.error = kc_msg("KAPI_HOST_CPU=%s: LLVM 15 knows no such x86-64 CPU (e.g. host, "
                          "x86-64-v2, haswell, skylake-avx512, znver4, sapphirerapids)",
                          v);
    return;
  }
  target.cpu = kc_msg("%s", zen4 ? "znver3" : v);
  target.features = kc_msg("%s", zen4 ? ZEN4_FEATURES : "");
  target.all = kc_msg("%s%s%s", own, zen4 ? "," : "", zen4 ? ZEN4_FEATURES : "");
  target.missing = target.all ? missing_features(target.all) : NULL;
  free(own);
}

/* NULL once the target is resolved, or why it cannot be (KAPI_HOST_CPU unknown; not freed). */
static const char *target_error(void) {
  pthread_once(&target_once, target_init);
  if (target.error) return target.error;
  return target.cpu && target.features && target.all && target.missing ? NULL : "out of memory";
}

const char *kc_hf_target_features(void) {
  return target_error() ? "" : target.all;
}

char *kc_hf_target_id(void) {
  if (target_error()) return NULL;
  char *triple = LLVMGetDefaultTargetTriple();
  char *id = kc_msg("%s;%s;%s", triple, target.cpu, target.all);
  LLVMDisposeMessage(triple);
  return id;
}

int kc_hf_target_runnable(char **log) {
  const char *e = target_error();
  if (e) return *log = kc_msg("%s", e), 0;
  if (!*target.missing) return 1;
  *log = kc_msg("KAPI_HOST_CPU=%s: the code was generated and linked, but this CPU lacks %s, which "
                "it may use: it cannot run here",
                target.name, target.missing);
  return 0;
}

/* The target machine for the CPU, with `more` features after its own ("" for none). */
static LLVMTargetMachineRef host_machine(const char *more, char **log) {
  const char *e = target_error();
  if (e) return *log = kc_msg("%s", e), NULL;
  char *triple = LLVMGetDefaultTargetTriple(), *err = NULL;
  char *features = kc_msg("%s%s%s", target.features, *target.features && *more ? "," : "", more);
  LLVMTargetRef t;
  LLVMTargetMachineRef tm = NULL;
  if (!features) {
    *log = kc_msg("out of memory");
  } else if (LLVMGetTargetFromTriple(triple, &t, &err)) {
    *log = kc_msg("no LLVM target for the host (%s): %s", triple, err ? err : "");
  } else {
    tm = LLVMCreateTargetMachine(t, triple, target.cpu, features, LLVMCodeGenLevelAggressive,
                                 LLVMRelocPIC, LLVMCodeModelJITDefault);
    if (!tm) *log = kc_msg("cannot create a target machine for %s (%s)", triple, target.cpu);
  }
  free(features);
  LLVMDisposeMessage(err);
  LLVMDisposeMessage(triple);
  return tm;
}

/* Whether the optimisation pipeline sees gathers as cheap on a CPU with AVX2 but not AVX-512
 * (unless KAPI_HOST_AVX2_GATHERS=0). LLVM 15 calls them slow there but on CPUs it tunes as
 * fast-gather, so the vectoriser reads `data[i, k]` across work-items from scalar loads,
 * which finalise_host_gathers.c cannot turn into window loads; with the gathers, it does, and
 * it reads the spacings without a window as scalar loads again. Code generation keeps the
 * CPU's own view: any other gather (of indices) is scalarised there, as the vectoriser would
 * have costed it. Measured on a Zen 4 and a Xeon held to AVX2 (bench/gather_rows.py): rows of 3
 * to 16 floats 1.1-1.7x as fast, of 64 level; a pairwise distance 1.7x. */
int kc_hf_cheap_gathers(void) {
  const char *v = getenv("KAPI_HOST_AVX2_GATHERS");
  if (v && !strcmp(v, "0")) return 0;
  const char *f = kc_hf_target_features();
  return strstr(f, "+avx2") && !strstr(f, "+avx512f");
}

/* ---- Symbols ------------------------------------------------------------------------- */

/* The math libraries, opened by soname once per process (RTLD_LOCAL: we look in them by handle,
 * and add nothing to the process's global scope). A kernel's build must not depend on which
 * libraries the process happened to load, or in what order: a search of the process finds the
 * first library that defines `erf`, which need not be libm. */
static struct {
  void *libm, *libmvec;
  char why[256]; /* why libm.so.6 did not open, for the log of a kernel that needed it */
} libs;
static pthread_once_t libs_once = PTHREAD_ONCE_INIT;

static void libs_open(void) {
  libs.libm = dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL);
  if (!libs.libm) snprintf(libs.why, sizeof libs.why, "%s", dlerror());
  if (!getenv("KAPI_HOST_NO_LIBMVEC")) libs.libmvec = dlopen("libmvec.so.1", RTLD_NOW | RTLD_LOCAL);
}

/* 1 when addr lies in the library whose file name starts with soname_base. dlsym on a handle
 * also searches the library's dependencies (libc): a name libm does not define is not taken. */
static int defined_in(void *addr, const char *soname_base) {
  Dl_info info;
  if (!addr || !dladdr(addr, &info) || !info.dli_fname) return 0;
  const char *base = strrchr(info.dli_fname, '/');
  base = base ? base + 1 : info.dli_fname;
  return !strncmp(base, soname_base, strlen(soname_base));
}

/* Memory intrinsics bind to the C library this library links (always present). glibc defines
 * a few math functions in libc too (frexp, ldexp, modf...): libm may hand back libc's copy. */
static void *c_library_symbol(const char *name) {
  static const struct {
    const char *name;
    void *addr;
  } mem[] = {{"memcpy", (void *)memcpy}, {"memmove", (void *)memmove}, {"memset", (void *)memset}};
  for (size_t i = 0; i < sizeof mem / sizeof mem[0]; i++)
    if (!strcmp(name, mem[i].name)) return mem[i].addr;
  return NULL;
}

static int libc_math_name(const char *name) {
  static const char *const names[] = {"frexp", "frexpf", "ldexp",   "ldexpf",   "modf",
                                      "modff", "scalbn", "scalbnf", "copysign", "copysignf"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (!strcmp(name, names[i])) return 1;
  return 0;
}

void *kc_hf_math_symbol(const char *name) {
  pthread_once(&libs_once, libs_open);
  void *a = c_library_symbol(name);
  if (a) return a;
  if (!strncmp(name, "_ZGV", 4)) {
    a = libs.libmvec ? dlsym(libs.libmvec, name) : NULL;
    return defined_in(a, "libmvec.so") ? a : NULL;
  }
  a = libs.libm ? dlsym(libs.libm, name) : NULL;
  return defined_in(a, "libm.so") || (a && libc_math_name(name)) ? a : NULL;
}

/* The JIT's definition generator: each external symbol a module needs, and no other, is bound
 * here to its address in libm, libmvec or libc, or to our compiler-rt builtin of that name, as
 * an absolute symbol. Names left unbound stay undefined, and the lookup reports them ("Symbols
 * not found"). */
static LLVMErrorRef generate(LLVMOrcDefinitionGeneratorRef gen, void *ctx,
                             LLVMOrcLookupStateRef *ls, LLVMOrcLookupKind kind,
                             LLVMOrcJITDylibRef jd, LLVMOrcJITDylibLookupFlags jd_flags,
                             LLVMOrcCLookupSet set, size_t n) {
  (void)gen, (void)ctx, (void)ls, (void)kind, (void)jd_flags;
  LLVMOrcCSymbolMapPair *syms = calloc(n ? n : 1, sizeof *syms);
  if (!syms) return LLVMCreateStringError("out of memory");
  LLVMJITSymbolFlags flags = {LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable,
                              0};
  size_t found = 0;
  for (size_t i = 0; i < n; i++) {
    const char *name = LLVMOrcSymbolStringPoolEntryStr(set[i].Name);
    void *a = kc_hf_math_symbol(name);
    if (!a) a = kc_hf_rt_symbol(name);
    if (!a) continue;
    LLVMOrcRetainSymbolStringPoolEntry(set[i].Name); /* the map takes a reference */
    syms[found++] =
        (LLVMOrcCSymbolMapPair){set[i].Name, {(LLVMOrcExecutorAddress)(uintptr_t)a, flags}};
  }
  LLVMErrorRef e = found ? LLVMOrcJITDylibDefine(jd, LLVMOrcAbsoluteSymbols(syms, found)) : NULL;
  free(syms);
  return e;
}

static int define_runtime(kc_hf_jit_t *j, char **log) {
  LLVMOrcExecutionSessionRef es = LLVMOrcLLJITGetExecutionSession(j->jit);
  LLVMJITSymbolFlags flags = {LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable,
                              0};
  LLVMOrcCSymbolMapPair syms[] = {
      {LLVMOrcExecutionSessionIntern(es, "__kapi_host_fiber_run"),
       {(LLVMOrcExecutorAddress)(uintptr_t)kc_host_fiber_run, flags}},
      {LLVMOrcExecutionSessionIntern(es, "__kapi_host_barrier"),
       {(LLVMOrcExecutorAddress)(uintptr_t)kc_host_fiber_barrier, flags}},
      {LLVMOrcExecutionSessionIntern(es, "__kapi_host_yield"),
       {(LLVMOrcExecutorAddress)(uintptr_t)kc_host_fiber_yield, flags}},
      {LLVMOrcExecutionSessionIntern(es, "__kapi_host_scratch"),
       {(LLVMOrcExecutorAddress)(uintptr_t)kc_host_scratch, flags}},
      {LLVMOrcExecutionSessionIntern(es, "__kapi_host_printf"),
       {(LLVMOrcExecutorAddress)(uintptr_t)kc_host_printf, flags}},
  };
  LLVMOrcJITDylibRef jd = LLVMOrcLLJITGetMainJITDylib(j->jit);
  LLVMErrorRef e =
      LLVMOrcJITDylibDefine(jd, LLVMOrcAbsoluteSymbols(syms, sizeof syms / sizeof syms[0]));
  if (!e)
    LLVMOrcJITDylibAddGenerator(jd,
                                LLVMOrcCreateCustomCAPIDefinitionGenerator(generate, NULL, NULL));
  if (e) *log = take_error(e, "cannot set up the JIT's symbols");
  return !e;
}

/* KAPI_PERF=1: the JIT's code goes to perf's jitdump files, so `perf record -k 1` then
 * `perf inject --jit` names kernels in profiles instead of showing bare addresses. Off by
 * default: the listener writes a file per process and keeps every object's code mapped. */
static LLVMOrcObjectLayerRef perf_object_layer(void *ctx, LLVMOrcExecutionSessionRef es,
                                               const char *triple) {
  (void)ctx, (void)triple;
  LLVMOrcObjectLayerRef layer = LLVMOrcCreateRTDyldObjectLinkingLayerWithSectionMemoryManager(es);
  LLVMJITEventListenerRef perf = LLVMCreatePerfJITEventListener();
  if (perf) LLVMOrcRTDyldObjectLinkingLayerRegisterJITEventListener(layer, perf);
  return layer;
}

static int perf_wanted(void) {
  const char *v = getenv("KAPI_PERF");
  return v && *v && strcmp(v, "0") != 0;
}

int kc_hf_jit_create(kc_hf_jit_t *j, char **log) {
  memset(j, 0, sizeof *j);
  LLVMTargetMachineRef for_jit = host_machine("", log);
  if (!for_jit) return 0;
  j->tm = host_machine("", log);
  /* the optimiser's own machine only where it differs from code generation's */
  j->opt_tm = j->tm && kc_hf_cheap_gathers() ? host_machine("+fast-gather", log) : j->tm;
  if (!j->opt_tm) {
    if (j->tm) LLVMDisposeTargetMachine(j->tm);
    j->tm = NULL;
    return LLVMDisposeTargetMachine(for_jit), 0;
  }
  LLVMOrcLLJITBuilderRef builder = LLVMOrcCreateLLJITBuilder();
  LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(
      builder, LLVMOrcJITTargetMachineBuilderCreateFromTargetMachine(for_jit));
  if (perf_wanted())
    LLVMOrcLLJITBuilderSetObjectLinkingLayerCreator(builder, perf_object_layer, NULL);
  LLVMErrorRef e = LLVMOrcCreateLLJIT(&j->jit, builder);
  if (e) {
    *log = take_error(e, "cannot create the JIT");
    j->jit = NULL;
    kc_hf_jit_dispose(j);
    return 0;
  }
  LLVMOrcExecutionSessionSetErrorReporter(LLVMOrcLLJITGetExecutionSession(j->jit), report,
                                          &j->session_error);
  if (!define_runtime(j, log)) return kc_hf_jit_dispose(j), 0;
  return 1;
}

static void on_diagnostic(LLVMDiagnosticInfoRef di, void *ctx) {
  kc_hf_jit_t *j = ctx;
  if (LLVMGetDiagInfoSeverity(di) != LLVMDSError || j->diagnostic) return;
  char *d = LLVMGetDiagInfoDescription(di);
  j->diagnostic = kc_msg("%s", d ? d : "LLVM error");
  LLVMDisposeMessage(d);
}

void kc_hf_jit_capture_diagnostics(kc_hf_jit_t *j, LLVMContextRef ctx) {
  LLVMContextSetDiagnosticHandler(ctx, on_diagnostic, j);
}

void kc_hf_jit_dispose(kc_hf_jit_t *j) {
  if (j->jit) {
    LLVMErrorRef e = LLVMOrcDisposeLLJIT(j->jit);
    if (e) LLVMConsumeError(e);
  }
  if (j->opt_tm && j->opt_tm != j->tm) LLVMDisposeTargetMachine(j->opt_tm);
  if (j->tm) LLVMDisposeTargetMachine(j->tm);
  free(j->session_error);
  free(j->diagnostic);
  memset(j, 0, sizeof *j);
}

void kc_hf_jit_prepare(kc_hf_jit_t *j, LLVMModuleRef m) {
  LLVMSetTarget(m, LLVMOrcLLJITGetTripleString(j->jit));
  LLVMSetDataLayout(m, LLVMOrcLLJITGetDataLayoutStr(j->jit));
}

static int run_passes(LLVMTargetMachineRef tm, LLVMModuleRef m, const char *passes, char **log) {
  LLVMPassBuilderOptionsRef o = LLVMCreatePassBuilderOptions();
  LLVMPassBuilderOptionsSetLoopVectorization(o, 1);
  LLVMPassBuilderOptionsSetSLPVectorization(o, 1);
  LLVMPassBuilderOptionsSetLoopUnrolling(o, 1);
  LLVMPassBuilderOptionsSetLoopInterleaving(o, 1);
  LLVMErrorRef e = LLVMRunPasses(m, passes, tm, o);
  LLVMDisposePassBuilderOptions(o);
  if (e) *log = take_error(e, "LLVM passes failed");
  return !e;
}

int kc_hf_jit_passes(kc_hf_jit_t *j, LLVMModuleRef m, const char *passes, char **log) {
  return run_passes(j->tm, m, passes, log);
}

/* ---- The optimisation pipeline ------------------------------------------------------- */

/* LLVM 15's default<O3> module pipeline as `opt-15 -passes='default<O3>' -print-pipeline-passes`
 * prints it (without its verify passes, which LLVMRunPasses does not add either), split at the
 * options of its one loop-unroll pass after the vectorisers. With no options added it builds
 * the same code as default<O3> (KAPI_HOST_UNROLL=1). */
static const char O3_HEAD[] =
    "annotation2metadata,forceattrs,inferattrs,coro-early,function<eager-inv>(lower-expect,"
    "simplifycfg<bonus-inst-threshold=1;no-forward-switch-cond;no-switch-range-to-icmp;no-switch-"
    "to-lookup;keep-loops;no-hoist-common-insts;no-sink-common-insts>,"
    "sroa,early-cse<>,callsite-splitting),openmp-opt,ipsccp,called-value-propagation,"
    "globalopt,function(mem2reg),deadargelim,function<eager-inv>(instcombine,"
    "simplifycfg<bonus-inst-threshold=1;no-forward-switch-cond;switch-range-to-icmp;no-switch-to-"
    "lookup;keep-loops;no-hoist-common-insts;no-sink-common-insts>),"
    "require<globals-aa>,function(invalidate<aa>),require<profile-summary>,"
    "cgscc(devirt<4>(inline<only-mandatory>,inline,function-attrs,argpromotion,"
    "openmp-opt-cgscc,function<eager-inv>(sroa,early-cse<memssa>,speculative-execution,"
    "jump-threading,correlated-propagation,"
    "simplifycfg<bonus-inst-threshold=1;no-forward-switch-cond;switch-range-to-icmp;no-switch-to-"
    "lookup;keep-loops;no-hoist-common-insts;no-sink-common-insts>,"
    "instcombine,aggressive-instcombine,libcalls-shrinkwrap,tailcallelim,"
    "simplifycfg<bonus-inst-threshold=1;no-forward-switch-cond;switch-range-to-icmp;no-switch-to-"
    "lookup;keep-loops;no-hoist-common-insts;no-sink-common-insts>,"
    "reassociate,require<opt-remark-emit>,loop-mssa(loop-instsimplify,loop-simplifycfg,"
    "licm<no-allowspeculation>,loop-rotate,licm<allowspeculation>,"
    "simple-loop-unswitch<nontrivial;trivial>),"
    "simplifycfg<bonus-inst-threshold=1;no-forward-switch-cond;switch-range-to-icmp;no-switch-to-"
    "lookup;keep-loops;no-hoist-common-insts;no-sink-common-insts>,"
    "instcombine,loop(loop-idiom,indvars,loop-deletion,loop-unroll-full),sroa,"
    "mldst-motion<no-split-footer-bb>,gvn<>,sccp,bdce,instcombine,jump-threading,"
    "correlated-propagation,adce,memcpyopt,dse,loop-mssa(licm<allowspeculation>),coro-elide,"
    "simplifycfg<bonus-inst-threshold=1;no-forward-switch-cond;switch-range-to-icmp;no-switch-to-"
    "lookup;keep-loops;hoist-common-insts;sink-common-insts>,"
    "instcombine),coro-split)),coro-cleanup,globalopt,globaldce,elim-avail-extern,"
    "rpo-function-attrs,recompute-globalsaa,function<eager-inv>(float2int,"
    "lower-constant-intrinsics,loop(loop-rotate,loop-deletion),loop-distribute,"
    "inject-tli-mappings,loop-vectorize<no-interleave-forced-only;no-vectorize-forced-only;>,"
    "loop-load-elim,instcombine,"
    "simplifycfg<bonus-inst-threshold=1;forward-switch-cond;switch-range-to-icmp;switch-to-lookup;"
    "no-keep-loops;hoist-common-insts;sink-common-insts>,"
    "slp-vectorizer,vector-combine,instcombine,loop-unroll<O3";
static const char O3_TAIL[] =
    ">,transform-warning,instcombine,require<opt-remark-emit>,"
    "loop-mssa(licm<allowspeculation>),alignment-from-assumptions,loop-sink,instsimplify,"
    "div-rem-pairs,tailcallelim,"
    "simplifycfg<bonus-inst-threshold=1;no-forward-switch-cond;switch-range-to-icmp;no-switch-to-"
    "lookup;keep-loops;no-hoist-common-insts;no-sink-common-insts>),"
    "globaldce,constmerge,cg-profile,rel-lookup-table-converter,function(annotation-remarks)";

/* KAPI_HOST_UNROLL: how the late loop-unroll pass may unroll a loop whose count it cannot remove
 * entirely (full unrolling of a loop of a small constant count, and every loop's own
 * llvm.loop.unroll marks, apply in every setting). The x86 cost model allows partial and run-time
 * unrolling on CPUs whose scheduling model has a loop buffer (Zen, Skylake and later); after the
 * loop vectoriser had interleaved a loop, run-time unrolling copied it again up to 8 times with a
 * remainder loop: a local scan's host IR six times larger on Zen, most of its 0.75 s build in the
 * unroller, LSR and instruction selection over the copies, for no speed. Unset: no run-time
 * unrolling, partial unrolling (a constant count) as the cost model decides (a tiled matmul's
 * 16-step loops: without it 20% slower on a Xeon); 0: neither; 1: both, as before. */
static const char *unroll_options(void) {
  const char *v = getenv("KAPI_HOST_UNROLL");
  if (v && !strcmp(v, "1")) return "";
  if (v && !strcmp(v, "0")) return ";no-partial;no-runtime";
  return ";no-runtime";
}

int kc_hf_jit_o3(kc_hf_jit_t *j, LLVMModuleRef m, int cheap_gathers, char **log) {
  const char *u = unroll_options();
  char *p = kc_msg("%s%s%s", O3_HEAD, u, O3_TAIL);
  if (!p) return *log = kc_msg("out of memory"), 0;
  int ok = run_passes(cheap_gathers ? j->opt_tm : j->tm, m, p, log);
  free(p);
  return ok;
}

int kc_hf_jit_add(kc_hf_jit_t *j, LLVMOrcThreadSafeModuleRef tsm, char **log) {
  LLVMErrorRef e = LLVMOrcLLJITAddLLVMIRModule(j->jit, LLVMOrcLLJITGetMainJITDylib(j->jit), tsm);
  if (e) {
    LLVMOrcDisposeThreadSafeModule(tsm);
    *log = take_error(e, "cannot add the module to the JIT");
  }
  return !e;
}

int kc_hf_jit_lookup(kc_hf_jit_t *j, const char *name, void **addr, char **log) {
  LLVMOrcExecutorAddress a = 0;
  LLVMErrorRef e = LLVMOrcLLJITLookup(j->jit, &a, name);
  if (e) {
    char *m = LLVMGetErrorMessage(e);
    const char *more = j->session_error ? j->session_error : j->diagnostic;
    pthread_once(&libs_once, libs_open);
    *log = kc_msg("code generation for %s failed: %s%s%s%s%s", name, m, more ? "; " : "",
                  more ? more : "",
                  libs.libm ? "" : "; libm.so.6 did not open: ", libs.libm ? "" : libs.why);
    LLVMDisposeErrorMessage(m);
    return 0;
  }
  *addr = (void *)(uintptr_t)a;
  return 1;
}
