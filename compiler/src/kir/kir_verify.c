/* KIR verifier, module and function structure: one kernel, unique names, resolved calls,
 * parameter and slot types, one terminator per block, SSA dominance and no recursion. The
 * per-op type rules are in kir_verify_ops.c. After this passes, lowering cannot fail on KIR. */
#include "kir/kir.h"

#include <stdlib.h>
#include <string.h>

static int ferr(kir_diag_t *d, const kir_func_t *f, const char *what) {
  kir_error(d, f->file, f->line, f->text_line, "@%s: %s", f->name, what);
  return -1;
}

static int check_param(kir_diag_t *d, const kir_func_t *f, kir_type_t t) {
  if (t.kind == KIR_VOID) return ferr(d, f, "a parameter cannot be void");
  if (t.kind != KIR_ARRAY || !f->is_kernel) return 0;
  if (t.space == KIR_PRIVATE) return ferr(d, f, "a kernel cannot take a private array");
  if (t.space == KIR_LOCAL && t.layout != KIR_LAYOUT_C)
    return ferr(d, f, "a local array parameter must have layout C");
  return 0;
}

static int check_signature(kir_diag_t *d, const kir_func_t *f) {
  if (f->is_kernel && f->ret.kind != KIR_VOID) return ferr(d, f, "a kernel must return void");
  if (f->ret.kind == KIR_ARRAY) return ferr(d, f, "functions return scalars or void");
  for (int i = 0; i < f->nparams; i++)
    if (check_param(d, f, f->values[f->params[i]].type)) return -1;
  for (int i = 0; i < f->nvars; i++)
    if (!kir_is_scalar(f->vars[i].type.kind))
      return ferr(d, f, "variable slots must have scalar types");
  return 0;
}

static int check_blocks(kir_diag_t *d, const kir_func_t *f) {
  for (int b = 0; b < f->nblocks; b++) {
    const kir_block_t *blk = &f->blocks[b];
    if (!blk->ninsts || !kir_op_is_terminator(blk->insts[blk->ninsts - 1].op)) {
      kir_error(d, f->file, f->line, blk->text_line,
                "block ^%s does not end with a terminator (br, cbr, ret, unreachable)", blk->name);
      return -1;
    }
    for (int i = 0; i + 1 < blk->ninsts; i++)
      if (kir_op_is_terminator(blk->insts[i].op))
        return kir_inst_error(d, f, &blk->insts[i], "terminator %s in the middle of block ^%s",
                              kir_op_name(blk->insts[i].op), blk->name);
  }
  return 0;
}

/* Each operand's definition must dominate its use (same block: come before it). */
static int check_dominance(kir_diag_t *d, const kir_func_t *f, const int *idom) {
  for (int b = 0; b < f->nblocks; b++)
    for (int i = 0; i < f->blocks[b].ninsts; i++) {
      const kir_inst_t *in = &f->blocks[b].insts[i];
      for (int k = 0; k < in->nargs; k++) {
        const kir_value_t *v = &f->values[in->args[k]];
        if (v->param >= 0) continue;
        int ok =
            v->block == b ? v->inst < i : idom[b] < 0 || kir_cfg_dominates(f, idom, v->block, b);
        if (!ok)
          return kir_inst_error(d, f, in,
                                "%%%s is used where its definition does not dominate the use "
                                "(pass values between blocks through a variable slot)",
                                v->name);
      }
    }
  return 0;
}

static int verify_func(const kir_module_t *m, const kir_func_t *f, kir_diag_t *d) {
  if (check_signature(d, f) || check_blocks(d, f)) return -1;
  for (int b = 0; b < f->nblocks; b++)
    for (int i = 0; i < f->blocks[b].ninsts; i++)
      if (kir_verify_inst(m, f, &f->blocks[b].insts[i], d)) return -1;
  int *idom = malloc(sizeof(int) * (size_t)f->nblocks);
  if (!idom || kir_cfg_idoms(f, idom)) {
    free(idom);
    return ferr(d, f, "out of memory");
  }
  int rc = check_dominance(d, f, idom);
  free(idom);
  return rc;
}

static int find_func(const kir_module_t *m, const char *name) {
  for (int i = 0; i < m->nfuncs; i++)
    if (!strcmp(m->funcs[i].name, name)) return i;
  return -1;
}

static int resolve_calls(kir_module_t *m, kir_func_t *f, kir_diag_t *d) {
  for (int b = 0; b < f->nblocks; b++)
    for (int i = 0; i < f->blocks[b].ninsts; i++) {
      kir_inst_t *in = &f->blocks[b].insts[i];
      if (in->op != KIR_OP_CALL) continue;
      in->callee = find_func(m, in->callee_name);
      if (in->callee < 0)
        return kir_inst_error(d, f, in, "call to undefined function @%s", in->callee_name);
    }
  return 0;
}

/* Names the lowering gives its own declarations (builtins, helpers): a KIR function with one
 * of them would be confused with them. */
static int reserved_name(const char *name) {
  static const char *const prefixes[] = {"_Z", "llvm.", "kapi.", "__spirv", NULL};
  for (int i = 0; prefixes[i]; i++)
    if (!strncmp(name, prefixes[i], strlen(prefixes[i]))) return 1;
  return 0;
}

static int verify_module(kir_module_t *m, kir_diag_t *d) {
  m->kernel = -1;
  for (int i = 0; i < m->nfuncs; i++) {
    kir_func_t *f = &m->funcs[i];
    if (reserved_name(f->name))
      return ferr(d, f, "function names starting with _Z, llvm., kapi. or __spirv are reserved");
    if (find_func(m, f->name) != i) return ferr(d, f, "function defined twice");
    if (f->is_kernel && m->kernel >= 0) return ferr(d, f, "a module holds exactly one kernel");
    if (f->is_kernel) m->kernel = i;
  }
  if (m->kernel < 0) {
    kir_error(d, "<kir>", 1, 0, "the module has no kernel");
    return -1;
  }
  for (int i = 0; i < m->nfuncs; i++)
    if (resolve_calls(m, &m->funcs[i], d)) return -1;
  return 0;
}

int kir_verify(kir_module_t *m, kir_diag_t *d) {
  if (verify_module(m, d)) return -1;
  for (int i = 0; i < m->nfuncs; i++)
    if (verify_func(m, &m->funcs[i], d)) return -1;
  return kir_check_recursion(m, d);
}
