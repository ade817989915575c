/* The optimiser: LLVM's new pass manager default pipelines, without a target machine (there is
 * no SPIR backend). Level 0 still promotes variable slots so the SPIR-V stays readable. */
#include "compile.h"

#include <llvm-c/Error.h>
#include <llvm-c/Support.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <pthread.h>

/* IndVarSimplify rewrites a loop's exit values into closed forms, and SCEV computes those in
 * integers one bit wider than the loop's (i65 for `s += i` over an i64 range). SPIR-V has no
 * such types: the translator exits on them. Keeping exit values as computed avoids them. */
static void set_llvm_options(void) {
  const char *argv[] = {"kapi", "-replexitval=never"};
  LLVMParseCommandLineOptions(2, argv, NULL);
}

kc_status_t kc_optimise(LLVMModuleRef mod, int level, char **err) {
  static const char *const pipelines[] = {"function(mem2reg)", "default<O1>", "default<O2>",
                                          "default<O3>"};
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, set_llvm_options);
  LLVMPassBuilderOptionsRef opts = LLVMCreatePassBuilderOptions();
  LLVMErrorRef e = LLVMRunPasses(mod, pipelines[level], NULL, opts);
  LLVMDisposePassBuilderOptions(opts);
  if (!e) return KC_OK;
  char *msg = LLVMGetErrorMessage(e);
  kc_set_error(err, "optimisation failed: %s", msg);
  LLVMDisposeErrorMessage(msg);
  return KC_ERR_LLVM;
}
