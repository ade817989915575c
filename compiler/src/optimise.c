/* The optimiser: LLVM's new pass manager default pipelines, without a target machine (there is
 * no SPIR backend). Level 0 still promotes variable slots so the SPIR-V stays readable. */
#include "compile.h"

#include <llvm-c/Error.h>
#include <llvm-c/Support.h>
#include <llvm-c/Transforms/PassBuilder.h>

/* IndVarSimplify replaces a loop's exit value by its closed form (a sum of i over a range
 * becomes n*(n-1)/2), computed in a 65-bit integer the translator cannot express. Never
 * doing that costs little on devices. This is libLLVM-15's process-wide option registry: it is
 * set when this library loads, before any thread can be running a pipeline. */
__attribute__((constructor)) static void set_llvm_options(void) {
  const char *argv[] = {"kapi", "-replexitval=never"};
  LLVMParseCommandLineOptions(2, argv, "kapi compiler");
}

kc_status_t kc_optimise(LLVMModuleRef mod, int level, char **err) {
  static const char *const pipelines[] = {"function(mem2reg)", "default<O1>", "default<O2>",
                                          "default<O3>"};
  LLVMPassBuilderOptionsRef opts = LLVMCreatePassBuilderOptions();
  LLVMErrorRef e = LLVMRunPasses(mod, pipelines[level], NULL, opts);
  LLVMDisposePassBuilderOptions(opts);
  if (!e) return KC_OK;
  char *msg = LLVMGetErrorMessage(e);
  kc_set_error(err, "optimisation failed: %s", msg);
  LLVMDisposeErrorMessage(msg);
  return KC_ERR_LLVM;
}
