/* Types SPIR-V cannot express, caught before the translator sees them: it exits the process
 * on an integer of odd width (LLVM's optimisers can create i65 and similar). Such a module is
 * a compiler bug, reported as an error. */
#include "compile.h"

#include <stdlib.h>
#include <string.h>

static int legal_int_width(LLVMTypeRef t) {
  while (LLVMGetTypeKind(t) == LLVMVectorTypeKind || LLVMGetTypeKind(t) == LLVMArrayTypeKind)
    t = LLVMGetElementType(t);
  if (LLVMGetTypeKind(t) != LLVMIntegerTypeKind) return 1;
  unsigned w = LLVMGetIntTypeWidth(t);
  return w == 1 || w == 8 || w == 16 || w == 32 || w == 64;
}

/* ---- widening ------------------------------------------------------------------------------
 * Scalar evolution writes `x & 3` as zext(trunc x to i2), and passes that expand it (induction
 * variable simplification, unrolling) then compute in i2: a `range(x & 3)` nested in another
 * loop gave an i2 induction variable (fuzzer finding). Each such value is rebuilt in the next
 * native width W with its high bits kept zero (an `and` with the mask after each operation
 * that may carry into them); signed operations sign-extend from the narrow width first. A
 * function with an odd-width use this does not know (a call, a store, a vector) is left alone,
 * for the check below to report. */

typedef struct {
  LLVMBuilderRef b;
  LLVMValueRef *from, *to; /* old odd-width value -> its widened replacement */
  int n, cap, failed;      /* failed: an odd-width value widenable() should have refused */
} widen_t;

static int odd_width(LLVMTypeRef t) {
  if (LLVMGetTypeKind(t) != LLVMIntegerTypeKind) return 0;
  unsigned w = LLVMGetIntTypeWidth(t);
  return w != 1 && w != 8 && w != 16 && w != 32 && w != 64;
}

static unsigned native_width(unsigned w) {
  return w <= 8 ? 8 : w <= 16 ? 16 : w <= 32 ? 32 : 64;
}

static LLVMTypeRef int_type(LLVMValueRef like, unsigned w) {
  return LLVMIntTypeInContext(LLVMGetTypeContext(LLVMTypeOf(like)), w);
}

static LLVMValueRef mask_of(LLVMTypeRef wide, unsigned n) {
  return LLVMConstInt(wide, n >= 64 ? ~0ULL : (1ULL << n) - 1, 0);
}

/* v (any integer) resized to `w` bits: truncated or zero-extended. */
static LLVMValueRef resize(LLVMBuilderRef b, LLVMValueRef v, unsigned w) {
  unsigned have = LLVMGetIntTypeWidth(LLVMTypeOf(v));
  LLVMTypeRef t = int_type(v, w);
  return have > w ? LLVMBuildTrunc(b, v, t, "") : have < w ? LLVMBuildZExt(b, v, t, "") : v;
}

/* The widened value x (high bits zero) of an n-bit integer, sign-extended within its width. */
static LLVMValueRef sign_in(LLVMBuilderRef b, LLVMValueRef x, unsigned n) {
  unsigned w = LLVMGetIntTypeWidth(LLVMTypeOf(x));
  LLVMValueRef k = LLVMConstInt(LLVMTypeOf(x), w - n, 0);
  return LLVMBuildAShr(b, LLVMBuildShl(b, x, k, ""), k, "");
}

static LLVMValueRef widened(widen_t *c, LLVMValueRef v);

/* `llvm.ctpop` of an odd width: the loop vectoriser's count of an i4 mask of compares
 * (fuzzer, seed 7000 kernel 47980). The widened operand's high bits are zero, so the count
 * is the same in the native width. */
static int is_ctpop(LLVMValueRef i) {
  if (LLVMGetInstructionOpcode(i) != LLVMCall) return 0;
  LLVMValueRef callee = LLVMGetCalledValue(i);
  size_t len = 0;
  const char *name = callee ? LLVMGetValueName2(callee, &len) : NULL;
  return name && !strncmp(name, "llvm.ctpop.", 11);
}

static LLVMValueRef widen_ctpop(widen_t *c, LLVMValueRef v, LLVMTypeRef wt) {
  LLVMValueRef a = widened(c, LLVMGetOperand(v, 0));
  LLVMPositionBuilderBefore(c->b, v);
  LLVMModuleRef mod = LLVMGetGlobalParent(LLVMGetBasicBlockParent(LLVMGetInstructionParent(v)));
  unsigned id = LLVMLookupIntrinsicID("llvm.ctpop", 10);
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(mod, id, &wt, 1);
  return LLVMBuildCall2(c->b, LLVMIntrinsicGetType(LLVMGetTypeContext(wt), id, &wt, 1), fn, &a, 1,
                        "");
}

static LLVMValueRef widen_inst(widen_t *c, LLVMValueRef v, unsigned n, LLVMTypeRef wt) {
  LLVMBuilderRef b = c->b;
  LLVMOpcode op = LLVMGetInstructionOpcode(v);
  LLVMValueRef x = LLVMGetNumOperands(v) > 0 ? LLVMGetOperand(v, 0) : NULL;
  LLVMValueRef y = LLVMGetNumOperands(v) > 1 ? LLVMGetOperand(v, 1) : NULL;
  unsigned w = LLVMGetIntTypeWidth(wt);
  switch (op) {
  case LLVMTrunc: /* from a wider native or odd width */
  case LLVMZExt:
  case LLVMSExt: {
    int odd = odd_width(LLVMTypeOf(x));
    LLVMValueRef a = odd ? widened(c, x) : x;
    LLVMPositionBuilderBefore(b, v); /* widened() leaves the builder at x */
    if (op == LLVMSExt) {
      /* an odd-width source is widened with zero high bits: sign-extend it within its own
       * width first; a native one (an i1 included: `sext i1 to i2` is 0 or 3) extends as is */
      if (odd) a = sign_in(b, a, LLVMGetIntTypeWidth(LLVMTypeOf(x)));
      if (LLVMGetIntTypeWidth(LLVMTypeOf(a)) < w) a = LLVMBuildSExt(b, a, wt, "");
    }
    return LLVMBuildAnd(b, resize(b, a, w), mask_of(wt, n), "");
  }
  case LLVMAdd:
  case LLVMSub:
  case LLVMMul:
  case LLVMAnd:
  case LLVMOr:
  case LLVMXor:
  case LLVMShl:
  case LLVMLShr:
  case LLVMUDiv:
  case LLVMURem: {
    LLVMValueRef a = widened(c, x), d = widened(c, y);
    LLVMPositionBuilderBefore(b, v);
    return LLVMBuildAnd(b, LLVMBuildBinOp(b, op, a, d, ""), mask_of(wt, n), "");
  }
  case LLVMAShr:
  case LLVMSDiv:
  case LLVMSRem: {
    LLVMValueRef a = widened(c, x), d = widened(c, y);
    LLVMPositionBuilderBefore(b, v);
    a = sign_in(b, a, n);
    if (op != LLVMAShr) d = sign_in(b, d, n);
    return LLVMBuildAnd(b, LLVMBuildBinOp(b, op, a, d, ""), mask_of(wt, n), "");
  }
  case LLVMSelect: {
    LLVMValueRef t = widened(c, y), f = widened(c, LLVMGetOperand(v, 2));
    LLVMPositionBuilderBefore(b, v);
    return LLVMBuildSelect(b, x, t, f, "");
  }
  case LLVMCall:
    if (is_ctpop(v)) return widen_ctpop(c, v, wt);
    c->failed = 1;
    return LLVMGetUndef(wt);
  default:
    c->failed = 1;
    return LLVMGetUndef(wt);
  }
}

/* The widened replacement of odd-width value v, built (once) just before v. */
static LLVMValueRef widened(widen_t *c, LLVMValueRef v) {
  unsigned n = LLVMGetIntTypeWidth(LLVMTypeOf(v));
  LLVMTypeRef wt = int_type(v, native_width(n));
  if (LLVMIsAConstantInt(v))
    return LLVMConstInt(wt, LLVMConstIntGetZExtValue(v) & ((1ULL << n) - 1), 0);
  if (LLVMIsUndef(v) || LLVMIsPoison(v)) return LLVMGetUndef(wt);
  for (int i = 0; i < c->n; i++)
    if (c->from[i] == v) return c->to[i];
  if (!LLVMIsAInstruction(v) || LLVMGetInstructionOpcode(v) == LLVMPHI) {
    c->failed = 1; /* an argument, or a phi not made up front (cannot happen) */
    return LLVMGetUndef(wt);
  }
  LLVMValueRef r = widen_inst(c, v, n, wt);
  if (c->n == c->cap) {
    c->cap = c->cap ? 2 * c->cap : 16;
    c->from = realloc(c->from, (size_t)c->cap * sizeof *c->from);
    c->to = realloc(c->to, (size_t)c->cap * sizeof *c->to);
  }
  c->from[c->n] = v, c->to[c->n++] = r;
  return r;
}

/* A legal-typed use of an odd-width value: zext/sext/trunc to a native width, or a compare. */
static LLVMValueRef widen_boundary(widen_t *c, LLVMValueRef u) {
  LLVMBuilderRef b = c->b;
  LLVMOpcode op = LLVMGetInstructionOpcode(u);
  LLVMValueRef x = LLVMGetOperand(u, 0);
  unsigned n = LLVMGetIntTypeWidth(LLVMTypeOf(x));
  if (op == LLVMZExt || op == LLVMSExt || op == LLVMTrunc) {
    LLVMValueRef a = widened(c, x);
    LLVMPositionBuilderBefore(b, u);
    unsigned to = LLVMGetIntTypeWidth(LLVMTypeOf(u)), w = LLVMGetIntTypeWidth(LLVMTypeOf(a));
    if (op != LLVMSExt) return resize(b, a, to);
    a = sign_in(b, a, n);
    return to > w ? LLVMBuildSExt(b, a, LLVMTypeOf(u), "") : resize(b, a, to);
  }
  LLVMValueRef a = widened(c, x), d = widened(c, LLVMGetOperand(u, 1));
  LLVMPositionBuilderBefore(b, u);
  LLVMIntPredicate p = LLVMGetICmpPredicate(u);
  if (p == LLVMIntSGT || p == LLVMIntSGE || p == LLVMIntSLT || p == LLVMIntSLE)
    a = sign_in(b, a, n), d = sign_in(b, d, n);
  return LLVMBuildICmp(b, p, a, d, "");
}

static int has_odd_operand(LLVMValueRef i) {
  for (int k = 0, n = LLVMGetNumOperands(i); k < n; k++)
    if (odd_width(LLVMTypeOf(LLVMGetOperand(i, k)))) return 1;
  return 0;
}

/* Every odd-width operand of i is a constant or an instruction (not an argument). */
static int odd_operands_known(LLVMValueRef i) {
  for (int k = 0, n = LLVMGetNumOperands(i); k < n; k++) {
    LLVMValueRef v = LLVMGetOperand(i, k);
    if (odd_width(LLVMTypeOf(v)) && !LLVMIsAConstantInt(v) && !LLVMIsUndef(v) && !LLVMIsPoison(v) &&
        !LLVMIsAInstruction(v))
      return 0;
  }
  return 1;
}

/* 1 if every odd-width value of fn is one widening knows (and there is at least one). */
static int widenable(LLVMValueRef fn) {
  int any = 0;
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb))
    for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i)) {
      int odd_result = odd_width(LLVMTypeOf(i)), odd_in = has_odd_operand(i);
      if (!odd_result && !odd_in) continue;
      any = 1;
      if (!odd_operands_known(i)) return 0;
      LLVMOpcode op = LLVMGetInstructionOpcode(i);
      if (odd_result) switch (op) {
        case LLVMTrunc:
        case LLVMZExt:
        case LLVMSExt:
        case LLVMAdd:
        case LLVMSub:
        case LLVMMul:
        case LLVMAnd:
        case LLVMOr:
        case LLVMXor:
        case LLVMShl:
        case LLVMLShr:
        case LLVMUDiv:
        case LLVMURem:
        case LLVMAShr:
        case LLVMSDiv:
        case LLVMSRem:
        case LLVMSelect:
        case LLVMPHI:
          continue;
        case LLVMCall:
          if (is_ctpop(i)) continue;
          return 0;
        default:
          return 0;
        }
      if (op != LLVMZExt && op != LLVMSExt && op != LLVMTrunc && op != LLVMICmp) return 0;
    }
  return any;
}

static void widen_function(LLVMValueRef fn) {
  if (!widenable(fn)) return;
  widen_t c = {.b = LLVMCreateBuilderInContext(LLVMGetTypeContext(LLVMTypeOf(fn)))};
  enum { MAX = 256 };
  LLVMValueRef phis[MAX], news[MAX], bounds[MAX];
  int nphi = 0, nb = 0;
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb))
    for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i)) {
      if (nphi == MAX || nb == MAX) goto out;
      if (odd_width(LLVMTypeOf(i)) && LLVMGetInstructionOpcode(i) == LLVMPHI) {
        unsigned n = LLVMGetIntTypeWidth(LLVMTypeOf(i));
        LLVMPositionBuilderBefore(c.b, i);
        phis[nphi] = i;
        news[nphi] = LLVMBuildPhi(c.b, int_type(i, native_width(n)), "");
        c.from = realloc(c.from, (size_t)(c.n + 1) * sizeof *c.from);
        c.to = realloc(c.to, (size_t)(c.n + 1) * sizeof *c.to);
        c.cap = c.n + 1;
        c.from[c.n] = i, c.to[c.n++] = news[nphi++];
      } else if (!odd_width(LLVMTypeOf(i)) && has_odd_operand(i)) {
        bounds[nb++] = i;
      }
    }
  for (int k = 0; k < nphi; k++)
    for (unsigned j = 0; j < LLVMCountIncoming(phis[k]); j++) {
      LLVMValueRef v = widened(&c, LLVMGetIncomingValue(phis[k], j));
      LLVMBasicBlockRef from = LLVMGetIncomingBlock(phis[k], j);
      LLVMAddIncoming(news[k], &v, &from, 1);
    }
  for (int k = 0; k < nb; k++) {
    LLVMValueRef r = widen_boundary(&c, bounds[k]);
    LLVMReplaceAllUsesWith(bounds[k], r);
    LLVMInstructionEraseFromParent(bounds[k]);
  }
  /* the odd-width instructions now only use each other: cut the ties, then erase them */
  for (int k = 0; k < c.n; k++)
    LLVMReplaceAllUsesWith(c.from[k], LLVMGetUndef(LLVMTypeOf(c.from[k])));
  for (int k = 0; k < c.n; k++)
    LLVMInstructionEraseFromParent(c.from[k]);
out:
  LLVMDisposeBuilder(c.b);
  free(c.from);
  free(c.to);
}

static LLVMValueRef first_illegal(LLVMValueRef fn) {
  for (LLVMBasicBlockRef b = LLVMGetFirstBasicBlock(fn); b; b = LLVMGetNextBasicBlock(b))
    for (LLVMValueRef i = LLVMGetFirstInstruction(b); i; i = LLVMGetNextInstruction(i)) {
      if (!legal_int_width(LLVMTypeOf(i))) return i;
      int n = LLVMGetNumOperands(i);
      for (int k = 0; k < n; k++)
        if (!legal_int_width(LLVMTypeOf(LLVMGetOperand(i, k)))) return i;
    }
  return NULL;
}

/* ---- shifts of booleans ---------------------------------------------------------------------
 * The translator 15 rewrites `shl`/`lshr` of i1 into shifts of i32 and then asserts (exits the
 * process, SPIRVRegularizeLLVM.cpp:612 `V->user_empty()`) erasing the original (fuzzer finding:
 * the widening above once sign-extended an i1 with a shift pair). A shift of one bit by
 * anything but 0 is poison, so each such shift is its first operand. */

static int is_bool_type(LLVMTypeRef t) {
  if (LLVMGetTypeKind(t) == LLVMVectorTypeKind) t = LLVMGetElementType(t);
  return LLVMGetTypeKind(t) == LLVMIntegerTypeKind && LLVMGetIntTypeWidth(t) == 1;
}

static void drop_bool_shifts(LLVMValueRef fn) {
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb))
    for (LLVMValueRef i = LLVMGetFirstInstruction(bb), next; i; i = next) {
      next = LLVMGetNextInstruction(i);
      LLVMOpcode op = LLVMGetInstructionOpcode(i);
      if ((op == LLVMShl || op == LLVMLShr || op == LLVMAShr) && is_bool_type(LLVMTypeOf(i))) {
        LLVMReplaceAllUsesWith(i, LLVMGetOperand(i, 0));
        LLVMInstructionEraseFromParent(i);
      }
    }
}

kc_status_t kc_check_spirv_types(LLVMModuleRef mod, char **err) {
  for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn)) {
    if (!LLVMIsDeclaration(fn) && first_illegal(fn)) widen_function(fn);
    if (!LLVMIsDeclaration(fn)) drop_bool_shifts(fn);
    LLVMValueRef bad = LLVMIsDeclaration(fn) ? NULL : first_illegal(fn);
    if (bad) {
      char *text = LLVMPrintValueToString(bad);
      kc_set_error(err,
                   "function '%s' uses an integer width SPIR-V cannot express (a compiler "
                   "bug): %s",
                   LLVMGetValueName(fn), text);
      LLVMDisposeMessage(text);
      return KC_ERR_LLVM;
    }
  }
  return KC_OK;
}
