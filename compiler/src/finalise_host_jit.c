/* Host finaliser: everything about the ORC LLJIT and the host target. One JIT per finalised
 * module (so modules are independent and thread-safe); the target machine is the host CPU with
 * all its features, used both to optimise (the vectoriser needs the real vector width) and to
 * generate code. The JIT resolves only libm and memory intrinsics from the process, plus the
 * fiber runtime; any other external symbol is an error, never a silent bind.
 */
#define _GNU_SOURCE
#include "finalise_host_jit.h"

#include <dlfcn.h>
#include <llvm-c/Error.h>
#include <llvm-c/Transforms/PassBuilder.h>
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

static LLVMTargetMachineRef host_machine(char **log) {
  char *triple = LLVMGetDefaultTargetTriple(), *err = NULL;
  LLVMTargetRef t;
  LLVMTargetMachineRef tm = NULL;
  if (LLVMGetTargetFromTriple(triple, &t, &err)) {
    *log = kc_msg("no LLVM target for the host (%s): %s", triple, err ? err : "");
  } else {
    char *cpu = LLVMGetHostCPUName(), *features = LLVMGetHostCPUFeatures();
    tm = LLVMCreateTargetMachine(t, triple, cpu, features, LLVMCodeGenLevelAggressive, LLVMRelocPIC,
                                 LLVMCodeModelJITDefault);
    LLVMDisposeMessage(cpu);
    LLVMDisposeMessage(features);
    if (!tm) *log = kc_msg("cannot create a target machine for %s", triple);
  }
  LLVMDisposeMessage(err);
  LLVMDisposeMessage(triple);
  return tm;
}

/* Process symbols a kernel may bind to: the C math library (and its vector twin, libmvec) and
 * memory intrinsics. glibc defines a few math functions in libc too (frexp, ldexp, modf...),
 * and the search may find libc's copy first: those are allowed by name. */
static int allow_symbol(void *ctx, LLVMOrcSymbolStringPoolEntryRef sym) {
  (void)ctx;
  const char *name = LLVMOrcSymbolStringPoolEntryStr(sym);
  static const char *const extra[] = {"memcpy",  "memmove",  "memset",   "frexp", "frexpf",
                                      "ldexp",   "ldexpf",   "modf",     "modff", "scalbn",
                                      "scalbnf", "copysign", "copysignf"};
  for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++)
    if (!strcmp(name, extra[i])) return 1;
  void *addr = dlsym(RTLD_DEFAULT, name);
  Dl_info info;
  if (!addr || !dladdr(addr, &info) || !info.dli_fname) return 0;
  const char *base = strrchr(info.dli_fname, '/');
  base = base ? base + 1 : info.dli_fname;
  if (!strncmp(base, "libm.so", 7) || !strncmp(base, "libmvec.so", 10)) return 1;
  /* A sanitizer runtime intercepts some of libm (sincos, frexp...): the process's copy then
   * lives elsewhere but is still libm's function. */
  void *libm = dlopen("libm.so.6", RTLD_NOW | RTLD_NOLOAD);
  int in_libm = libm && dlsym(libm, name) != NULL;
  if (libm) dlclose(libm);
  return in_libm;
}

static int define_runtime(kc_hf_jit_t *j, char **log) {
  LLVMOrcExecutionSessionRef es = LLVMOrcLLJITGetExecutionSession(j->jit);
  LLVMJITSymbolFlags flags = {LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable,
                              0};
  LLVMOrcCSymbolMapPair syms[2] = {
      {LLVMOrcExecutionSessionIntern(es, "__kapi_host_fiber_run"),
       {(LLVMOrcExecutorAddress)(uintptr_t)kc_host_fiber_run, flags}},
      {LLVMOrcExecutionSessionIntern(es, "__kapi_host_barrier"),
       {(LLVMOrcExecutorAddress)(uintptr_t)kc_host_fiber_barrier, flags}},
  };
  LLVMOrcJITDylibRef jd = LLVMOrcLLJITGetMainJITDylib(j->jit);
  LLVMErrorRef e = LLVMOrcJITDylibDefine(jd, LLVMOrcAbsoluteSymbols(syms, 2));
  if (!e) {
    LLVMOrcDefinitionGeneratorRef gen;
    e = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(
        &gen, LLVMOrcLLJITGetGlobalPrefix(j->jit), allow_symbol, NULL);
    if (!e) LLVMOrcJITDylibAddGenerator(jd, gen);
  }
  if (e) *log = take_error(e, "cannot set up the JIT's symbols");
  return !e;
}

int kc_hf_jit_create(kc_hf_jit_t *j, char **log) {
  memset(j, 0, sizeof *j);
  LLVMTargetMachineRef for_jit = host_machine(log);
  if (!for_jit) return 0;
  j->tm = host_machine(log);
  if (!j->tm) return LLVMDisposeTargetMachine(for_jit), 0;
  LLVMOrcLLJITBuilderRef builder = LLVMOrcCreateLLJITBuilder();
  LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(
      builder, LLVMOrcJITTargetMachineBuilderCreateFromTargetMachine(for_jit));
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
  if (j->tm) LLVMDisposeTargetMachine(j->tm);
  free(j->session_error);
  free(j->diagnostic);
  memset(j, 0, sizeof *j);
}

void kc_hf_jit_prepare(kc_hf_jit_t *j, LLVMModuleRef m) {
  LLVMSetTarget(m, LLVMOrcLLJITGetTripleString(j->jit));
  LLVMSetDataLayout(m, LLVMOrcLLJITGetDataLayoutStr(j->jit));
}

int kc_hf_jit_passes(kc_hf_jit_t *j, LLVMModuleRef m, const char *passes, char **log) {
  LLVMPassBuilderOptionsRef o = LLVMCreatePassBuilderOptions();
  LLVMPassBuilderOptionsSetLoopVectorization(o, 1);
  LLVMPassBuilderOptionsSetSLPVectorization(o, 1);
  LLVMPassBuilderOptionsSetLoopUnrolling(o, 1);
  LLVMPassBuilderOptionsSetLoopInterleaving(o, 1);
  LLVMErrorRef e = LLVMRunPasses(m, passes, j->tm, o);
  LLVMDisposePassBuilderOptions(o);
  if (e) *log = take_error(e, "LLVM passes failed");
  return !e;
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
    *log = kc_msg("code generation for %s failed: %s%s%s", name, m, more ? "; " : "",
                  more ? more : "");
    LLVMDisposeErrorMessage(m);
    return 0;
  }
  *addr = (void *)(uintptr_t)a;
  return 1;
}
