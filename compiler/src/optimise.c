/* The optimiser: LLVM's new pass manager default pipelines, without a target machine (there is
 * no SPIR backend). Level 0 still promotes variable slots so the SPIR-V stays readable. */
#include "compile.h"

#include <llvm-c/Error.h>
#include <llvm-c/Support.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <stdlib.h>
#include <string.h>

/* IndVarSimplify replaces a loop's exit value by its closed form (a sum of i over a range
 * becomes n*(n-1)/2), computed in a 65-bit integer the translator cannot express. Never
 * doing that costs little on devices.
 * The loop vectoriser gives a loop a vector epilogue (the iterations left after the main
 * vector loop, at half the width) only from 16 lanes; from 8 (AVX2 floats), the host CPU's
 * short work-item loops run their tails vectorised too: a tree reduction's steps of 16 to 4
 * active work-items (bench/cpu_barrier.py; its per-group time fell by a fifth). Devices
 * without a loop vectoriser target (SPIR, NVPTX) are unaffected.
 * No interleaved memory-access groups (strided accesses such as a[4i+0..3] joined into one wide
 * access with shuffles): a barrier kernel's region loops are marked parallel, for which LLVM
 * 15's loop access analysis records no dependences, and the vectoriser then takes "none" for
 * "none between these two": it sank a group of stores past a conditional store to one of its
 * addresses in the same work-item (found by the fuzzer; tests/reliability/fuzz_regressions/
 * region_loop_interleaved_store_passes_conditional_store.json). Strided accesses become
 * gathers and scatters; bench/cpu_barrier.py and bench/dpbench.py's CPU rows did not move.
 * Loops stay versioned on a symbolic stride being 1 (LLVM's default): the CUDA finaliser's
 * coarsened entries rely on it for layout-A arrays (ld.global.v4, tests/drivers/cuda/
 * test_coarsen.py), and these options are process-wide, shared with the host finaliser, where
 * a C-contiguous array's row extent made a pairwise distance's region loop run its scalar
 * copy: the host finaliser hides such arguments from the versioning instead, per argument
 * (finalise/host/finalise_host_strides.c).
 * No switch lookup tables: SimplifyCFG turns a switch that picks constants into a load from a
 * private constant array, a module-scope variable in the Function storage class that SPIR-V
 * rejects (fuzzer, seed 6000 kernel 16181); devices get the compares and selects instead.
 * This is libLLVM-15's process-wide option registry: it is set when this library loads,
 * before any thread can be running a pipeline. */
__attribute__((constructor)) static void set_llvm_options(void) {
  const char *argv[] = {"kapi", "-replexitval=never", "-epilogue-vectorization-minimum-VF=8",
                        "-enable-interleaved-mem-accesses=0", "-switch-to-lookup=0"};
  LLVMParseCommandLineOptions(5, argv, "kapi compiler");
  /* KAPI_LLVM_TIME_PASSES=1: LLVM's -time-passes, a table of each pass's time on stderr after
   * every pipeline (the compiler's, and the CPU driver's clean-ups, O3 and code generation). */
  const char *t = getenv("KAPI_LLVM_TIME_PASSES");
  if (t && *t && strcmp(t, "0") != 0) {
    const char *more[] = {"kapi", "-time-passes"};
    LLVMParseCommandLineOptions(2, more, "kapi compiler");
  }
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

/* SPIR-V has vectors of 2, 3, 4, 8 and 16 lanes; without a target machine LLVM 15's O2 and O3
 * pipelines vectorise to any width (turning the SLP and loop vectorisers off in the C API's
 * options does not stop it): 32 independent max accumulators and a search's 32 compares
 * or-ed together became <32 x float> and <32 x i1>, and the translator stopped with "Cannot
 * translate source of bitcast instruction". The caller optimises such a module again at O1,
 * which makes no vectors; the finalisers optimise for their targets afterwards anyway. */
static int too_wide(LLVMTypeRef t) {
  return LLVMGetTypeKind(t) == LLVMVectorTypeKind && LLVMGetVectorSize(t) > 16;
}

int kc_has_wide_vectors(LLVMModuleRef mod) {
  for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f))
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
      for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i)) {
        if (too_wide(LLVMTypeOf(i))) return 1;
        for (int k = 0, n = LLVMGetNumOperands(i); k < n; k++)
          if (too_wide(LLVMTypeOf(LLVMGetOperand(i, k)))) return 1;
      }
  return 0;
}
