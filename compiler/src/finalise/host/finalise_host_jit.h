/* Private to the host finaliser: the ORC LLJIT wrapper (finalise_host_jit.c). */
#ifndef KAPI_COMPILER_FINALISE_HOST_JIT_H
#define KAPI_COMPILER_FINALISE_HOST_JIT_H

#include "finalise/host/finalise_host.h"

#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/TargetMachine.h>

typedef struct kc_hf_jit {
  LLVMOrcLLJITRef jit;
  LLVMTargetMachineRef tm;     /* the host, for code generation */
  LLVMTargetMachineRef opt_tm; /* for the O3 pipeline of a module whose gathers may be cheap:
                                  tm, or (kc_hf_cheap_gathers) its own */
  char *session_error;         /* first error ORC reported asynchronously, if any */
  char *diagnostic;            /* first error LLVM reported through the context's handler */
} kc_hf_jit_t;

/* Routes ctx's diagnostics into j (errors kept for the log, warnings dropped): the library
 * never prints. */
void kc_hf_jit_capture_diagnostics(kc_hf_jit_t *j, LLVMContextRef ctx);
/* A JIT for the host CPU with the fiber runtime and libm visible. */
int kc_hf_jit_create(kc_hf_jit_t *j, char **log);
/* 1 when the optimisation pipeline treats gathers as cheap (AVX2 without AVX-512, unless
 * KAPI_HOST_AVX2_GATHERS=0). */
int kc_hf_cheap_gathers(void);
void kc_hf_jit_dispose(kc_hf_jit_t *j);
/* Sets the module's triple and data layout to the JIT's. */
void kc_hf_jit_prepare(kc_hf_jit_t *j, LLVMModuleRef m);
/* Runs a new-pass-manager pipeline ("default<O3>") with the host target machine. */
int kc_hf_jit_passes(kc_hf_jit_t *j, LLVMModuleRef m, const char *passes, char **log);
/* The O3 pipeline, with the late loop unrolling KAPI_HOST_UNROLL asks for; with opt_tm when
 * cheap_gathers (and kc_hf_cheap_gathers() made one), else with tm. */
int kc_hf_jit_o3(kc_hf_jit_t *j, LLVMModuleRef m, int cheap_gathers, char **log);
/* Takes ownership of tsm. */
int kc_hf_jit_add(kc_hf_jit_t *j, LLVMOrcThreadSafeModuleRef tsm, char **log);
/* Compiles on first use; unresolved symbols come back here as an error. */
int kc_hf_jit_lookup(kc_hf_jit_t *j, const char *name, void **addr, char **log);

#endif
