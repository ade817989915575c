/* Block order for SPIR-V: a block must come after its dominators in a SPIR-V function, and the
 * translator writes blocks in LLVM's order, which loop rotation and other O2 passes leave
 * dominance-unordered. Reverse post-order satisfies the rule; unreachable blocks go last. */
#include "compile.h"

#include <stdlib.h>

/* Iterative DFS from the entry (all[0]); post[] receives blocks in post-order. Returns their count.
 */
static unsigned post_order(LLVMBasicBlockRef *all, unsigned n, LLVMBasicBlockRef *post) {
  unsigned *next_succ = calloc(n, sizeof *next_succ);
  unsigned *stack = malloc(n * sizeof *stack);
  char *seen = calloc(n, 1);
  unsigned depth = 0, count = 0;
  if (!next_succ || !stack || !seen) goto done;
  stack[depth++] = 0; /* all[0] is the entry */
  seen[0] = 1;
  while (depth) {
    unsigned top = stack[depth - 1];
    LLVMValueRef term = LLVMGetBasicBlockTerminator(all[top]);
    unsigned nsucc = term ? LLVMGetNumSuccessors(term) : 0;
    if (next_succ[top] < nsucc) {
      LLVMBasicBlockRef s = LLVMGetSuccessor(term, next_succ[top]++);
      for (unsigned i = 0; i < n; i++)
        if (all[i] == s && !seen[i]) {
          seen[i] = 1;
          stack[depth++] = i;
          break;
        }
    } else {
      post[count++] = all[top];
      depth--;
    }
  }
done:
  free(next_succ);
  free(stack);
  free(seen);
  return count;
}

static void order_function(LLVMValueRef fn) {
  unsigned n = LLVMCountBasicBlocks(fn);
  if (n < 2) return;
  LLVMBasicBlockRef *all = malloc(n * sizeof *all);
  LLVMBasicBlockRef *post = malloc(n * sizeof *post);
  if (all && post) {
    LLVMGetBasicBlocks(fn, all);
    unsigned reached = post_order(all, n, post);
    /* Entry stays first; every other reachable block follows in reverse post-order. */
    LLVMBasicBlockRef prev = all[0];
    for (unsigned i = reached; i-- > 1;) {
      LLVMMoveBasicBlockAfter(post[i - 1], prev);
      prev = post[i - 1];
    }
  }
  free(all);
  free(post);
}

void kc_order_blocks(LLVMModuleRef mod) {
  for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn))
    if (!LLVMIsDeclaration(fn)) order_function(fn);
}
