/* Control-flow facts the verifier needs: reachable blocks, immediate dominators (Cooper,
 * Harvey and Kennedy's iterative algorithm over reverse postorder) and call-graph cycles. */
#include "kir/kir.h"

#include <stdlib.h>
#include <string.h>

static int successors(const kir_func_t *f, int b, int *succ) {
  const kir_block_t *blk = &f->blocks[b];
  if (!blk->ninsts) return 0;
  const kir_inst_t *t = &blk->insts[blk->ninsts - 1];
  if (t->op == KIR_OP_BR) return succ[0] = t->targets[0], 1;
  if (t->op == KIR_OP_CBR) return succ[0] = t->targets[0], succ[1] = t->targets[1], 2;
  return 0;
}

/* Depth-first from the entry; fills order[] with blocks in postorder. Iterative (explicit
 * stack) so a long chain of blocks cannot overflow the C stack. */
static int postorder(const kir_func_t *f, char *seen, int *order) {
  int n = f->nblocks, count = 0, sp = 0;
  int *stack = malloc(sizeof(int) * 2 * (size_t)n);
  if (!stack) return -1;
  memset(seen, 0, (size_t)n);
  stack[sp++] = 0;
  stack[sp++] = 0;
  seen[0] = 1;
  while (sp) {
    int b = stack[sp - 2], next = stack[sp - 1], succ[2];
    int ns = successors(f, b, succ);
    if (next < ns) {
      stack[sp - 1]++;
      int s = succ[next];
      if (!seen[s]) {
        seen[s] = 1;
        stack[sp++] = s;
        stack[sp++] = 0;
      }
    } else {
      order[count++] = b;
      sp -= 2;
    }
  }
  free(stack);
  return count;
}

int kir_cfg_reachable(const kir_func_t *f, char *reachable) {
  int *order = malloc(sizeof(int) * (size_t)f->nblocks);
  if (!order) return -1;
  int n = postorder(f, reachable, order);
  free(order);
  return n < 0 ? -1 : 0;
}

static int intersect(const int *idom, const int *po_num, int a, int b) {
  while (a != b) {
    while (po_num[a] < po_num[b])
      a = idom[a];
    while (po_num[b] < po_num[a])
      b = idom[b];
  }
  return a;
}

static int new_idom(const kir_func_t *f, const int *idom, const int *po_num, int b) {
  int result = -1;
  for (int p = 0; p < f->nblocks; p++) {
    int succ[2], ns = successors(f, p, succ);
    if (idom[p] < 0 || po_num[p] < 0) continue;
    for (int k = 0; k < ns; k++)
      if (succ[k] == b) result = result < 0 ? p : intersect(idom, po_num, p, result);
  }
  return result;
}

int kir_cfg_idoms(const kir_func_t *f, int *idom) {
  int n = f->nblocks;
  int *order = malloc(sizeof(int) * (size_t)n), *po_num = malloc(sizeof(int) * (size_t)n);
  char *seen = malloc((size_t)n);
  if (!order || !po_num || !seen) return free(order), free(po_num), free(seen), -1;
  int count = postorder(f, seen, order);
  for (int b = 0; b < n; b++)
    idom[b] = -1, po_num[b] = -1;
  for (int k = 0; k < count; k++)
    po_num[order[k]] = k;
  idom[0] = 0;
  for (int changed = 1; changed;) {
    changed = 0;
    for (int k = count - 2; k >= 0; k--) { /* reverse postorder, entry excluded */
      int b = order[k], d = new_idom(f, idom, po_num, b);
      if (d != idom[b]) idom[b] = d, changed = 1;
    }
  }
  free(order), free(po_num), free(seen);
  return 0;
}

int kir_cfg_dominates(const kir_func_t *f, const int *idom, int a, int b) {
  (void)f;
  if (idom[b] < 0) return 1; /* unreachable blocks are dominated by everything, as in LLVM */
  for (;;) {
    if (a == b) return 1;
    if (b == 0) return 0;
    b = idom[b];
  }
}

/* ---- recursion ---- */

static int visit(const kir_module_t *m, int fi, char *state, kir_diag_t *d) {
  const kir_func_t *f = &m->funcs[fi];
  state[fi] = 1; /* on the current path */
  for (int b = 0; b < f->nblocks; b++)
    for (int i = 0; i < f->blocks[b].ninsts; i++) {
      const kir_inst_t *in = &f->blocks[b].insts[i];
      if (in->op != KIR_OP_CALL) continue;
      if (state[in->callee] == 1)
        return kir_inst_error(d, f, in, "recursion is not supported in kernels: @%s calls @%s",
                              f->name, m->funcs[in->callee].name);
      if (!state[in->callee] && visit(m, in->callee, state, d)) return -1;
    }
  state[fi] = 2; /* done */
  return 0;
}

int kir_check_recursion(const kir_module_t *m, kir_diag_t *d) {
  char *state = calloc((size_t)m->nfuncs, 1);
  if (!state) return -1;
  int rc = 0;
  for (int fi = 0; fi < m->nfuncs && !rc; fi++)
    if (!state[fi]) rc = visit(m, fi, state, d);
  free(state);
  return rc;
}
