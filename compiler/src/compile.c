/* kc_compile, the forward compiler's entry: KIR text -> parse -> verify -> lower -> LLVM verify
 * -> optimise -> SPIR-V (translator) -> SPIRV-Tools validation -> import check. Each call owns
 * its LLVM context, so calls on different threads do not interfere. */
#include "compile.h"
#include "kir/kir.h"
#include "lower/lower.h"

#include <llvm-c/Analysis.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct kc_program {
  char *entry;
  char *llvm_ir;
  void *spirv;
  size_t nbytes;
};

void kc_set_error(char **err, const char *fmt, ...) {
  if (!err) return;
  va_list ap;
  va_start(ap, fmt);
  free(*err);
  *err = kc_vmsg(fmt, ap);
  va_end(ap);
}

void kc_options_init(kc_options_t *opts) {
  if (opts) opts->opt_level = 2;
}

static char *dup_str(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = malloc(n);
  if (p) memcpy(p, s, n);
  return p;
}

/* Hands a diagnostic to the caller (or frees it). */
static kc_status_t give_diag(kir_diag_t *d, kc_status_t st, char **err) {
  if (err) {
    free(*err);
    *err = d->msg;
  } else {
    free(d->msg);
  }
  d->msg = NULL;
  return st;
}

static kc_status_t parse_and_verify(const char *kir, size_t len, kir_module_t **m, char **err) {
  kir_diag_t d = {0};
  if (kir_parse(kir, len, m, &d)) return give_diag(&d, KC_ERR_KIR, err);
  if (kir_verify(*m, &d)) {
    kir_module_destroy(*m);
    *m = NULL;
    return give_diag(&d, KC_ERR_KIR, err);
  }
  return KC_OK;
}

kc_status_t kc_kir_check(const char *kir, size_t kir_len, char **err) {
  if (err) *err = NULL;
  if (!kir) return kc_set_error(err, "kir is NULL"), KC_ERR_INVALID_ARGUMENT;
  kir_module_t *m = NULL;
  kc_status_t st = parse_and_verify(kir, kir_len, &m, err);
  kir_module_destroy(m);
  return st;
}

/* Everything that touches LLVM, run under the fatal-error guard. */
typedef struct job {
  const kir_module_t *m;
  int opt_level;
  kc_program_t *prog;
  char **err;
} job_t;

static kc_status_t lower_and_check(LLVMContextRef ctx, const job_t *j, LLVMModuleRef *mod) {
  kir_diag_t d = {0};
  if (kc_lower_module(ctx, j->m, mod, &d)) return give_diag(&d, KC_ERR_UNSUPPORTED, j->err);
  char *msg = NULL;
  if (LLVMVerifyModule(*mod, LLVMReturnStatusAction, &msg)) {
    kc_set_error(j->err, "internal: the lowered module is invalid LLVM IR: %s", msg);
    LLVMDisposeMessage(msg);
    return KC_ERR_LLVM;
  }
  LLVMDisposeMessage(msg);
  return KC_OK;
}

static kc_status_t run_llvm(void *arg) {
  job_t *j = arg;
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMContextSetOpaquePointers(ctx, 0); /* the translator needs typed pointers */
  LLVMModuleRef mod = NULL;
  kc_status_t st = lower_and_check(ctx, j, &mod);
  if (st == KC_OK) st = kc_optimise(mod, j->opt_level, j->err);
  if (st == KC_OK && j->opt_level > 1 && kc_has_wide_vectors(mod)) { /* rare: see optimise.c */
    LLVMDisposeModule(mod);
    mod = NULL;
    st = lower_and_check(ctx, j, &mod);
    if (st == KC_OK) st = kc_optimise(mod, 1, j->err);
  }
  if (st == KC_OK) st = kc_spirv_prepare(mod, j->err);
  if (st == KC_OK) {
    char *ir = LLVMPrintModuleToString(mod);
    j->prog->llvm_ir = dup_str(ir);
    LLVMDisposeMessage(ir);
    st = j->prog->llvm_ir ? KC_OK : KC_ERR_OUT_OF_MEMORY;
  }
  if (st == KC_OK) st = kc_emit_spirv(mod, &j->prog->spirv, &j->prog->nbytes, j->err);
  if (mod) LLVMDisposeModule(mod);
  LLVMContextDispose(ctx);
  return st;
}

kc_status_t kc_compile(const char *kir, size_t kir_len, const kc_options_t *opts,
                       kc_program_t **out, char **err) {
  if (err) *err = NULL;
  if (!kir || !out)
    return kc_set_error(err, "kir and out must not be NULL"), KC_ERR_INVALID_ARGUMENT;
  *out = NULL;
  kc_options_t o;
  kc_options_init(&o);
  if (opts) o = *opts;
  if (o.opt_level < 0 || o.opt_level > 3)
    return kc_set_error(err, "opt_level must be 0..3, not %d", o.opt_level),
           KC_ERR_INVALID_ARGUMENT;
  kir_module_t *m = NULL;
  kc_status_t st = parse_and_verify(kir, kir_len, &m, err);
  if (st != KC_OK) return st;
  kc_program_t *prog = calloc(1, sizeof *prog);
  if (!prog || !(prog->entry = dup_str(m->funcs[m->kernel].name))) {
    st = KC_ERR_OUT_OF_MEMORY;
  } else {
    job_t j = {m, o.opt_level, prog, err};
    st = kc_llvm_guarded(run_llvm, &j, err);
  }
  kir_module_destroy(m);
  if (st != KC_OK) {
    kc_program_destroy(prog);
    return st;
  }
  *out = prog;
  return KC_OK;
}

void kc_program_destroy(kc_program_t *prog) {
  if (!prog) return;
  free(prog->entry);
  free(prog->llvm_ir);
  free(prog->spirv);
  free(prog);
}

const char *kc_program_entry(const kc_program_t *prog) {
  return prog ? prog->entry : NULL;
}
const char *kc_program_llvm_ir(const kc_program_t *prog) {
  return prog ? prog->llvm_ir : NULL;
}

const void *kc_program_spirv(const kc_program_t *prog, size_t *nbytes) {
  if (nbytes) *nbytes = prog ? prog->nbytes : 0;
  return prog ? prog->spirv : NULL;
}
