/* The last step before the translator, which exits the process (not returns) on LLVM IR it
 * cannot express. The optimiser may create such IR from valid kernels: `freeze` is dropped
 * (it only pins poison, which we never rely on), overflow intrinsics the translator lacks are
 * expanded, and any other intrinsic outside the list checked to translate is a clean
 * KC_ERR_LLVM instead of a dead process. Blocks are put in reverse postorder: SPIR-V wants
 * every block after its dominators, and the optimiser's layout does not promise that. */
#include "compile.h"

#include <stdlib.h>
#include <string.h>

/* Intrinsics the translator 15 turns into SPIR-V (checked with llvm-spirv-15 + spirv-val). */
static const char *const translatable[] = {"llvm.memset.",
                                           "llvm.memcpy.",
                                           "llvm.lifetime.",
                                           "llvm.smax.",
                                           "llvm.smin.",
                                           "llvm.umax.",
                                           "llvm.umin.",
                                           "llvm.abs.",
                                           "llvm.fabs.",
                                           "llvm.fmuladd.",
                                           "llvm.fma.",
                                           "llvm.ctpop.",
                                           "llvm.ctlz.",
                                           "llvm.cttz.",
                                           "llvm.assume",
                                           "llvm.expect.",
                                           "llvm.fshl.",
                                           "llvm.fshr.",
                                           "llvm.copysign.",
                                           "llvm.minnum.",
                                           "llvm.maxnum.",
                                           "llvm.minimum.",
                                           "llvm.maximum.",
                                           "llvm.floor.",
                                           "llvm.ceil.",
                                           "llvm.trunc.",
                                           "llvm.sqrt.",
                                           "llvm.bswap.",
                                           "llvm.usub.sat.",
                                           "llvm.sadd.sat.",
                                           "llvm.umul.with.overflow.",
                                           "llvm.sadd.with.overflow.",
                                           "llvm.roundeven.",
                                           "llvm.rint.",
                                           "llvm.round.",
                                           "llvm.nearbyint.",
                                           NULL};

static int is_translatable(const char *name) {
  for (int i = 0; translatable[i]; i++)
    if (!strncmp(name, translatable[i], strlen(translatable[i]))) return 1;
  return 0;
}

static const char *callee_name(LLVMValueRef call) {
  LLVMValueRef fn = LLVMGetCalledValue(call);
  if (!fn || LLVMGetValueKind(fn) != LLVMFunctionValueKind) return NULL;
  size_t len;
  return LLVMGetValueName2(fn, &len);
}

/* {iN, i1} result of an overflow intrinsic, rebuilt from plain arithmetic. */
static LLVMValueRef expand_overflow(LLVMBuilderRef b, LLVMValueRef call, const char *name) {
  LLVMValueRef x = LLVMGetOperand(call, 0), y = LLVMGetOperand(call, 1), r, ov;
  if (!strncmp(name, "llvm.uadd.with.overflow.", 24)) {
    r = LLVMBuildAdd(b, x, y, "");
    ov = LLVMBuildICmp(b, LLVMIntULT, r, x, "");
  } else if (!strncmp(name, "llvm.usub.with.overflow.", 24)) {
    r = LLVMBuildSub(b, x, y, "");
    ov = LLVMBuildICmp(b, LLVMIntULT, x, y, "");
  } else if (!strncmp(name, "llvm.ssub.with.overflow.", 24)) {
    r = LLVMBuildSub(b, x, y, "");
    LLVMValueRef s = LLVMBuildAnd(b, LLVMBuildXor(b, x, y, ""), LLVMBuildXor(b, x, r, ""), "");
    ov = LLVMBuildICmp(b, LLVMIntSLT, s, LLVMConstNull(LLVMTypeOf(x)), "");
  } else {
    return NULL;
  }
  LLVMValueRef agg = LLVMGetUndef(LLVMTypeOf(call));
  agg = LLVMBuildInsertValue(b, agg, r, 0, "");
  return LLVMBuildInsertValue(b, agg, ov, 1, "");
}

/* Integers the translator can express (it exits on others, e.g. the i65 of SCEV's closed forms). */
static int odd_int_type(LLVMTypeRef t) {
  if (LLVMGetTypeKind(t) == LLVMVectorTypeKind) t = LLVMGetElementType(t);
  if (LLVMGetTypeKind(t) != LLVMIntegerTypeKind) return 0;
  unsigned w = LLVMGetIntTypeWidth(t);
  return w != 1 && w != 8 && w != 16 && w != 32 && w != 64;
}

static int check_widths(LLVMValueRef inst, char **err) {
  LLVMTypeRef t = LLVMTypeOf(inst);
  for (int k = -1; k < LLVMGetNumOperands(inst); k++) {
    if (k >= 0) t = LLVMTypeOf(LLVMGetOperand(inst, (unsigned)k));
    if (odd_int_type(t)) {
      kc_set_error(err,
                   "internal: the optimiser produced a %u-bit integer, which SPIR-V cannot "
                   "express (try opt_level=0 and report this kernel)",
                   LLVMGetIntTypeWidth(
                       LLVMGetTypeKind(t) == LLVMVectorTypeKind ? LLVMGetElementType(t) : t));
      return -1;
    }
  }
  return 0;
}

/* Returns 1 if inst was replaced (and erased), 0 if kept, -1 on an untranslatable call. */
static int prepare_inst(LLVMBuilderRef b, LLVMValueRef inst, char **err) {
  LLVMOpcode op = LLVMGetInstructionOpcode(inst);
  if (op == LLVMFreeze) {
    LLVMReplaceAllUsesWith(inst, LLVMGetOperand(inst, 0));
    LLVMInstructionEraseFromParent(inst);
    return 1;
  }
  if (check_widths(inst, err)) return -1;
  const char *name = op == LLVMCall ? callee_name(inst) : NULL;
  if (!name || strncmp(name, "llvm.", 5) || is_translatable(name)) return 0;
  LLVMPositionBuilderBefore(b, inst);
  LLVMValueRef repl = expand_overflow(b, inst, name);
  if (!repl) {
    kc_set_error(err,
                 "internal: the optimiser produced %s, which SPIR-V cannot express "
                 "(try opt_level=0 and report this kernel)",
                 name);
    return -1;
  }
  LLVMReplaceAllUsesWith(inst, repl);
  LLVMInstructionEraseFromParent(inst);
  return 1;
}

/* Reverse postorder of fn's blocks from the entry (iterative DFS); unreachable blocks keep
 * their place after the reachable ones. Returns -1 when out of memory. */
static int order_blocks(LLVMValueRef fn) {
  unsigned n = LLVMCountBasicBlocks(fn);
  if (n < 2) return 0;
  LLVMBasicBlockRef *all = malloc(sizeof *all * n), *post = malloc(sizeof *post * n);
  LLVMBasicBlockRef *stack = malloc(sizeof *stack * n);
  unsigned *next = calloc(n, sizeof *next), npost = 0, sp = 0;
  char *seen = calloc(n, 1);
  if (!all || !post || !stack || !next || !seen) {
    free(all), free(post), free(stack), free(next), free(seen);
    return -1;
  }
  LLVMGetBasicBlocks(fn, all);
  stack[sp++] = all[0];
  seen[0] = 1;
  while (sp) {
    LLVMBasicBlockRef b = stack[sp - 1];
    LLVMValueRef term = LLVMGetBasicBlockTerminator(b);
    unsigned bi = 0;
    while (all[bi] != b)
      bi++;
    if (term && next[bi] < LLVMGetNumSuccessors(term)) {
      LLVMBasicBlockRef s = LLVMGetSuccessor(term, next[bi]++);
      unsigned si = 0;
      while (all[si] != s)
        si++;
      if (!seen[si]) seen[si] = 1, stack[sp++] = s;
    } else {
      post[npost++] = b;
      sp--;
    }
  }
  /* entry stays first; each later block moves right after the previous one in RPO */
  for (unsigned k = npost - 1; k > 0; k--)
    LLVMMoveBasicBlockAfter(post[k - 1], post[k]);
  free(all), free(post), free(stack), free(next), free(seen);
  return 0;
}

static kc_status_t prepare_function(LLVMBuilderRef b, LLVMValueRef fn, char **err) {
  if (order_blocks(fn)) return KC_ERR_OUT_OF_MEMORY;
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb))
    for (LLVMValueRef inst = LLVMGetFirstInstruction(bb), next; inst; inst = next) {
      next = LLVMGetNextInstruction(inst);
      if (prepare_inst(b, inst, err) < 0) return KC_ERR_LLVM;
    }
  return KC_OK;
}

kc_status_t kc_spirv_prepare(LLVMModuleRef mod, char **err) {
  LLVMBuilderRef b = LLVMCreateBuilderInContext(LLVMGetModuleContext(mod));
  kc_status_t st = KC_OK;
  for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn && st == KC_OK; fn = LLVMGetNextFunction(fn))
    st = prepare_function(b, fn, err);
  LLVMDisposeBuilder(b);
  return st;
}
