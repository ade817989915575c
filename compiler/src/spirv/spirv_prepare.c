/* The last step before the translator, which exits the process (not returns) on LLVM IR it
 * cannot express. The optimiser may create such IR from valid kernels: `freeze` is dropped
 * (it only pins poison, which we never rely on), overflow intrinsics the translator lacks are
 * expanded, and any other intrinsic outside the list checked to translate is a clean
 * KC_ERR_LLVM instead of a dead process. (Block order and integer widths: spirv_block_order.c
 * and spirv_legal.c, run by kc_emit_spirv.) */
#include "compile.h"

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

/* Scalar constant e, or, when t is a vector type, the vector of t with every element e (NULL
 * beyond 64 lanes, far above the vectorisers' widths). */
static LLVMValueRef splat(LLVMTypeRef t, LLVMValueRef e) {
  if (LLVMGetTypeKind(t) != LLVMVectorTypeKind) return e;
  unsigned n = LLVMGetVectorSize(t);
  LLVMValueRef elems[64];
  if (n > 64) return NULL;
  for (unsigned i = 0; i < n; i++)
    elems[i] = e;
  return LLVMConstVector(elems, n);
}

static LLVMTypeRef element_type(LLVMTypeRef t) {
  return LLVMGetTypeKind(t) == LLVMVectorTypeKind ? LLVMGetElementType(t) : t;
}

/* A constant of type t (an integer or an integer vector) with every element `v`. */
static LLVMValueRef splat_const(LLVMTypeRef t, unsigned long long v) {
  return splat(t, LLVMConstInt(element_type(t), v, 0));
}

/* llvm.uadd.sat and llvm.ssub.sat (InstCombine makes them from a compare and select around
 * an add or sub; the translator 15 has no SPIR-V for these two, unlike usub.sat and sadd.sat),
 * rebuilt from plain arithmetic. Scalars or vectors. */
static LLVMValueRef expand_saturating(LLVMBuilderRef b, LLVMValueRef call, const char *name) {
  int uadd = !strncmp(name, "llvm.uadd.sat.", 14);
  if (!uadd && strncmp(name, "llvm.ssub.sat.", 14)) return NULL;
  LLVMValueRef x = LLVMGetOperand(call, 0), y = LLVMGetOperand(call, 1);
  LLVMTypeRef t = LLVMTypeOf(x), et = t;
  if (LLVMGetTypeKind(t) == LLVMVectorTypeKind) et = LLVMGetElementType(t);
  unsigned w = LLVMGetIntTypeWidth(et);
  LLVMValueRef zero = LLVMConstNull(t);
  if (uadd) {
    LLVMValueRef r = LLVMBuildAdd(b, x, y, "");
    return LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntULT, r, x, ""), LLVMConstAllOnes(t), r, "");
  }
  /* x - y overflows when x and y differ in sign and r's sign differs from x's */
  LLVMValueRef r = LLVMBuildSub(b, x, y, "");
  LLVMValueRef s = LLVMBuildAnd(b, LLVMBuildXor(b, x, y, ""), LLVMBuildXor(b, x, r, ""), "");
  LLVMValueRef ov = LLVMBuildICmp(b, LLVMIntSLT, s, zero, "");
  LLVMValueRef max = splat_const(t, (w >= 64 ? ~0ULL : (1ULL << w) - 1) >> 1);
  LLVMValueRef min = splat_const(t, 1ULL << (w - 1));
  if (!max || !min) return NULL;
  LLVMValueRef lim = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, x, zero, ""), min, max, "");
  return LLVMBuildSelect(b, ov, lim, r, "");
}

/* One step of an integer vector reduction, on two scalars. */
static LLVMValueRef reduce_step(LLVMBuilderRef b, const char *kind, LLVMValueRef x,
                                LLVMValueRef y) {
  static const struct {
    const char *name;
    LLVMIntPredicate pred;
  } minmax[] = {
      {"smin.", LLVMIntSLT}, {"smax.", LLVMIntSGT}, {"umin.", LLVMIntULT}, {"umax.", LLVMIntUGT}};
  if (!strncmp(kind, "add.", 4)) return LLVMBuildAdd(b, x, y, "");
  if (!strncmp(kind, "mul.", 4)) return LLVMBuildMul(b, x, y, "");
  if (!strncmp(kind, "and.", 4)) return LLVMBuildAnd(b, x, y, "");
  if (!strncmp(kind, "or.", 3)) return LLVMBuildOr(b, x, y, "");
  if (!strncmp(kind, "xor.", 4)) return LLVMBuildXor(b, x, y, "");
  for (unsigned i = 0; i < sizeof minmax / sizeof minmax[0]; i++)
    if (!strncmp(kind, minmax[i].name, 5))
      return LLVMBuildSelect(b, LLVMBuildICmp(b, minmax[i].pred, x, y, ""), x, y, "");
  return NULL;
}

/* llvm.vector.reduce.<op> on an integer vector (the SLP vectoriser makes them from unrolled
 * reductions; the translator has no SPIR-V for them), rebuilt element by element. */
static LLVMValueRef expand_vector_reduce(LLVMBuilderRef b, LLVMValueRef call, const char *name) {
  static const char prefix[] = "llvm.vector.reduce.";
  if (strncmp(name, prefix, sizeof prefix - 1) || LLVMGetNumArgOperands(call) != 1) return NULL;
  LLVMValueRef v = LLVMGetOperand(call, 0);
  LLVMTypeRef vt = LLVMTypeOf(v);
  if (LLVMGetTypeKind(vt) != LLVMVectorTypeKind ||
      LLVMGetTypeKind(LLVMGetElementType(vt)) != LLVMIntegerTypeKind)
    return NULL;
  LLVMTypeRef i32 = LLVMInt32TypeInContext(LLVMGetTypeContext(vt));
  LLVMValueRef acc = LLVMBuildExtractElement(b, v, LLVMConstInt(i32, 0, 0), "");
  for (unsigned i = 1; acc && i < LLVMGetVectorSize(vt); i++) {
    LLVMValueRef e = LLVMBuildExtractElement(b, v, LLVMConstInt(i32, i, 0), "");
    acc = reduce_step(b, name + sizeof prefix - 1, acc, e);
  }
  return acc;
}

static int is_i1(LLVMValueRef v) {
  LLVMTypeRef t = LLVMTypeOf(v);
  return LLVMGetTypeKind(t) == LLVMIntegerTypeKind && LLVMGetIntTypeWidth(t) == 1;
}

/* An i1 or a vector of i1. */
static int is_bool_like(LLVMValueRef v) {
  LLVMTypeRef t = LLVMTypeOf(v);
  return LLVMGetTypeKind(t) == LLVMVectorTypeKind ? is_i1(LLVMGetUndef(LLVMGetElementType(t)))
                                                  : is_i1(v);
}

/* SPIR-V has no ordering or number conversion on booleans, and the translator gets both wrong
 * when the optimiser narrows to i1 (fuzzer findings): `sitofp i1 true` came out +1.0, and an
 * ordered compare of i1 became an invalid OpUGreaterThan on bool. Both are rewritten on i8, or
 * as a select. NULL when inst is none of these. */
static LLVMValueRef widen_bool_op(LLVMBuilderRef b, LLVMValueRef inst, LLVMOpcode op) {
  /* vectors too: the SLP vectoriser makes `sitofp <4 x i1>`, which came out +1.0 per true
   * lane on the CPU device (fuzzer, seed 5000 kernel 86794) */
  if ((op == LLVMSIToFP || op == LLVMUIToFP) && is_bool_like(LLVMGetOperand(inst, 0))) {
    LLVMTypeRef t = LLVMTypeOf(inst);
    LLVMValueRef on = splat(t, LLVMConstReal(element_type(t), op == LLVMSIToFP ? -1.0 : 1.0));
    if (!on) return NULL;
    return LLVMBuildSelect(b, LLVMGetOperand(inst, 0), on, LLVMConstNull(t), "");
  }
  if (op != LLVMICmp || !is_bool_like(LLVMGetOperand(inst, 0))) return NULL;
  LLVMIntPredicate p = LLVMGetICmpPredicate(inst);
  if (p == LLVMIntEQ || p == LLVMIntNE) return NULL;
  int sign = p == LLVMIntSGT || p == LLVMIntSGE || p == LLVMIntSLT || p == LLVMIntSLE;
  LLVMTypeRef bt = LLVMTypeOf(LLVMGetOperand(inst, 0));
  LLVMTypeRef i8 = LLVMInt8TypeInContext(LLVMGetTypeContext(bt));
  if (LLVMGetTypeKind(bt) == LLVMVectorTypeKind) i8 = LLVMVectorType(i8, LLVMGetVectorSize(bt));
  LLVMValueRef x[2];
  for (int k = 0; k < 2; k++)
    x[k] = sign ? LLVMBuildSExt(b, LLVMGetOperand(inst, k), i8, "")
                : LLVMBuildZExt(b, LLVMGetOperand(inst, k), i8, "");
  return LLVMBuildICmp(b, p, x[0], x[1], "");
}

/* min/max and abs intrinsics on i1 or its vectors (the translator writes them as ordered compares
 * on bool): unsigned max and signed min (true is -1) are `or`, the others `and`. NULL for any other
 * call. */
static LLVMValueRef bool_minmax(LLVMBuilderRef b, LLVMValueRef inst, const char *name) {
  /* |x| of an i1 is x (true is -1, whose absolute value wraps back to -1); the translator
   * made it an OpenCL s_abs of a bool, which SPIR-V rejects (fuzzer, seed 6000) */
  if (!strncmp(name, "llvm.abs.", 9)) return LLVMGetOperand(inst, 0);
  int is_or = !strncmp(name, "llvm.umax.", 10) || !strncmp(name, "llvm.smin.", 10);
  int is_and = !strncmp(name, "llvm.umin.", 10) || !strncmp(name, "llvm.smax.", 10);
  if (!is_or && !is_and) return NULL;
  LLVMValueRef x = LLVMGetOperand(inst, 0), y = LLVMGetOperand(inst, 1);
  return is_or ? LLVMBuildOr(b, x, y, "") : LLVMBuildAnd(b, x, y, "");
}

/* The elements of bool vector v combined: or (any), and (all), or their count in type t. */
static LLVMValueRef combine_bools(LLVMBuilderRef b, LLVMValueRef v, char how, LLVMTypeRef t) {
  LLVMTypeRef vt = LLVMTypeOf(v);
  LLVMTypeRef i32 = LLVMInt32TypeInContext(LLVMGetTypeContext(vt));
  LLVMValueRef acc = NULL;
  for (unsigned e = 0; e < LLVMGetVectorSize(vt); e++) {
    LLVMValueRef x = LLVMBuildExtractElement(b, v, LLVMConstInt(i32, e, 0), "");
    if (how == '+') x = LLVMBuildZExt(b, x, t, "");
    acc = !acc         ? x
          : how == '|' ? LLVMBuildOr(b, acc, x, "")
          : how == '&' ? LLVMBuildAnd(b, acc, x, "")
                       : LLVMBuildAdd(b, acc, x, "");
  }
  return acc;
}

static int legal_width(LLVMTypeRef t) {
  if (LLVMGetTypeKind(t) != LLVMIntegerTypeKind) return 0;
  unsigned w = LLVMGetIntTypeWidth(t);
  return w == 8 || w == 16 || w == 32 || w == 64;
}

/* `icmp eq/ne` of the cast with 0 or -1: an any/all. */
static int is_any_all(LLVMValueRef cast, LLVMValueRef user) {
  if (!LLVMIsAICmpInst(user)) return 0;
  LLVMValueRef k = LLVMGetOperand(user, 1);
  LLVMIntPredicate p = LLVMGetICmpPredicate(user);
  return LLVMGetOperand(user, 0) == cast && LLVMIsAConstantInt(k) &&
         (p == LLVMIntEQ || p == LLVMIntNE) &&
         (LLVMConstIntGetSExtValue(k) == 0 || LLVMConstIntGetSExtValue(k) == -1);
}

static int is_ctpop(LLVMValueRef user) {
  const char *name = LLVMIsACallInst(user) ? callee_name(user) : NULL;
  return name && !strncmp(name, "llvm.ctpop.", 11);
}

/* Whether every use of `inst` zero-extends it to a legal width. */
static int only_zext_to_legal(LLVMValueRef inst) {
  for (LLVMUseRef u = LLVMGetFirstUse(inst); u; u = LLVMGetNextUse(u))
    if (!LLVMIsAZExtInst(LLVMGetUser(u)) || !legal_width(LLVMTypeOf(LLVMGetUser(u)))) return 0;
  return 1;
}

/* The bits of bool vector v as an integer of type t (element e is bit e): the value of
 * `bitcast v to iN`, built in a legal width. */
static LLVMValueRef pack_bools(LLVMBuilderRef b, LLVMValueRef v, LLVMTypeRef t) {
  LLVMTypeRef i32 = LLVMInt32TypeInContext(LLVMGetTypeContext(t));
  LLVMValueRef acc = NULL;
  for (unsigned e = 0; e < LLVMGetVectorSize(LLVMTypeOf(v)); e++) {
    LLVMValueRef x = LLVMBuildExtractElement(b, v, LLVMConstInt(i32, e, 0), "");
    x = LLVMBuildShl(b, LLVMBuildZExt(b, x, t, ""), LLVMConstInt(t, e, 0), "");
    acc = acc ? LLVMBuildOr(b, acc, x, "") : x;
  }
  return acc;
}

/* A count of the elements of v (a `ctpop` of the cast) replacing `pop`: in each legal-width
 * zext of it directly, else in the next legal width, truncated to pop's odd width (which
 * spirv_legal.c's widening then carries through adds, masks and compares). */
static void rebuild_count(LLVMBuilderRef b, LLVMValueRef v, LLVMValueRef pop, LLVMTypeRef wide) {
  if (!only_zext_to_legal(pop)) {
    LLVMPositionBuilderBefore(b, pop);
    LLVMValueRef n = combine_bools(b, v, '+', wide);
    LLVMReplaceAllUsesWith(pop, LLVMBuildTrunc(b, n, LLVMTypeOf(pop), ""));
    return;
  }
  for (LLVMUseRef u = LLVMGetFirstUse(pop), next; u; u = next) {
    LLVMValueRef ext = LLVMGetUser(u);
    next = LLVMGetNextUse(u);
    LLVMPositionBuilderBefore(b, ext);
    LLVMReplaceAllUsesWith(ext, combine_bools(b, v, '+', LLVMTypeOf(ext)));
    LLVMInstructionEraseFromParent(ext);
  }
}

/* InstCombine turns reductions of a bool vector (llvm.vector.reduce.or/and/add/xor of
 * <N x i1>) into `icmp ne (bitcast <N x i1> to iN), 0`, `icmp eq (..), -1`, `ctpop(bitcast ..)`
 * and `ctpop(..) & 1`, and sums counts in iN: an iN SPIR-V cannot express for N other than 8,
 * 16, 32, 64 (fuzzer findings: <4 x i1> to i4), and a bitcast of a bool vector SPIR-V refuses
 * at any width (<8 x i1> to i8: seed 6000 kernel 16660). any/all and counts are rebuilt from the
 * elements; any other use gets the packed bits truncated to iN, for spirv_legal.c to widen.
 * Returns 1 if `cast` was rewritten (and erased, with the uses rebuilt). */
static int bool_vector_bitcast(LLVMBuilderRef b, LLVMValueRef cast) {
  LLVMValueRef v = LLVMGetOperand(cast, 0);
  LLVMTypeRef vt = LLVMTypeOf(v), t = LLVMTypeOf(cast);
  if (LLVMGetTypeKind(vt) != LLVMVectorTypeKind || LLVMGetTypeKind(t) != LLVMIntegerTypeKind ||
      LLVMGetIntTypeWidth(t) > 64 || !is_i1(LLVMGetUndef(LLVMGetElementType(vt))))
    return 0;
  unsigned n = LLVMGetIntTypeWidth(t);
  LLVMTypeRef wide = LLVMIntTypeInContext(LLVMGetTypeContext(t), n <= 8    ? 8
                                                                 : n <= 16 ? 16
                                                                 : n <= 32 ? 32
                                                                           : 64);
  for (LLVMUseRef u = LLVMGetFirstUse(cast), next; u; u = next) {
    LLVMValueRef user = LLVMGetUser(u);
    next = LLVMGetNextUse(u);
    while (next && LLVMGetUser(next) == user)
      next = LLVMGetNextUse(next); /* erased below */
    if (is_any_all(cast, user)) {
      int all = LLVMConstIntGetSExtValue(LLVMGetOperand(user, 1)) == -1;
      LLVMPositionBuilderBefore(b, user);
      LLVMValueRef r = combine_bools(b, v, all ? '&' : '|', NULL);
      /* any: ne 0 is r, eq 0 its negation; all: eq -1 is r, ne -1 its negation */
      if ((LLVMGetICmpPredicate(user) == LLVMIntEQ) != all) r = LLVMBuildNot(b, r, "");
      LLVMReplaceAllUsesWith(user, r);
      LLVMInstructionEraseFromParent(user);
    } else if (is_ctpop(user)) {
      rebuild_count(b, v, user, wide);
      LLVMInstructionEraseFromParent(user);
    }
  }
  if (LLVMGetFirstUse(cast)) { /* any other use: the bits themselves, right after the cast */
    LLVMPositionBuilderBefore(b, LLVMGetNextInstruction(cast));
    LLVMReplaceAllUsesWith(cast, LLVMBuildTrunc(b, pack_bools(b, v, wide), t, ""));
  }
  LLVMInstructionEraseFromParent(cast);
  return 1;
}

static kc_status_t legalise_bool_bitcasts(LLVMBuilderRef b, LLVMValueRef fn) {
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb))
    for (LLVMValueRef inst = LLVMGetFirstInstruction(bb); inst;)
      /* a rewrite erases instructions after inst too: rescan the block */
      inst = LLVMGetInstructionOpcode(inst) == LLVMBitCast && bool_vector_bitcast(b, inst)
                 ? LLVMGetFirstInstruction(bb)
                 : LLVMGetNextInstruction(inst);
  return KC_OK;
}

/* Returns 1 if inst was replaced (and erased), 0 if kept, -1 on an untranslatable call. */
/* llvm.bitreverse of i1 (or of <N x i1>), which the optimiser makes from bool expressions, is
 * the value itself: one bit reversed is that bit. NULL for anything else. */
static LLVMValueRef bitreverse_of_bits(LLVMValueRef inst, const char *name) {
  if (strncmp(name, "llvm.bitreverse.", 16)) return NULL;
  LLVMTypeRef t = LLVMTypeOf(inst);
  if (LLVMGetTypeKind(t) == LLVMVectorTypeKind) t = LLVMGetElementType(t);
  if (LLVMGetTypeKind(t) != LLVMIntegerTypeKind || LLVMGetIntTypeWidth(t) != 1) return NULL;
  return LLVMGetOperand(inst, 0);
}

/* InstCombine writes a select of vectors on a splat condition with the scalar condition;
 * SPIR-V before 1.4 (the translator's 1.2) wants the condition as wide as the operands. */
static int splat_select_condition(LLVMBuilderRef b, LLVMValueRef inst) {
  LLVMTypeRef t = LLVMTypeOf(inst);
  LLVMValueRef cond = LLVMGetOperand(inst, 0);
  if (LLVMGetTypeKind(t) != LLVMVectorTypeKind ||
      LLVMGetTypeKind(LLVMTypeOf(cond)) == LLVMVectorTypeKind)
    return 0;
  LLVMPositionBuilderBefore(b, inst);
  unsigned n = LLVMGetVectorSize(t);
  LLVMTypeRef i32 = LLVMInt32TypeInContext(LLVMGetTypeContext(t));
  LLVMValueRef one = LLVMBuildInsertElement(b, LLVMGetUndef(LLVMVectorType(LLVMTypeOf(cond), n)),
                                            cond, LLVMConstInt(i32, 0, 0), "");
  LLVMValueRef zeros = LLVMConstNull(LLVMVectorType(i32, n));
  LLVMSetOperand(inst, 0, LLVMBuildShuffleVector(b, one, LLVMGetUndef(LLVMTypeOf(one)), zeros, ""));
  return 1;
}

static int prepare_inst(LLVMBuilderRef b, LLVMValueRef inst, char **err) {
  LLVMOpcode op = LLVMGetInstructionOpcode(inst);
  if (op == LLVMFreeze) {
    LLVMReplaceAllUsesWith(inst, LLVMGetOperand(inst, 0));
    LLVMInstructionEraseFromParent(inst);
    return 1;
  }
  if (op == LLVMSelect) return splat_select_condition(b, inst);
  const char *name = op == LLVMCall ? callee_name(inst) : NULL;
  if (op == LLVMSIToFP || op == LLVMUIToFP || op == LLVMICmp || (name && is_bool_like(inst))) {
    LLVMPositionBuilderBefore(b, inst);
    LLVMValueRef repl = name ? bool_minmax(b, inst, name) : widen_bool_op(b, inst, op);
    if (repl) {
      LLVMReplaceAllUsesWith(inst, repl);
      LLVMInstructionEraseFromParent(inst);
      return 1;
    }
  }
  if (!name || strncmp(name, "llvm.", 5) || is_translatable(name)) return 0;
  LLVMPositionBuilderBefore(b, inst);
  LLVMValueRef repl = expand_overflow(b, inst, name);
  if (!repl) repl = expand_saturating(b, inst, name);
  if (!repl) repl = expand_vector_reduce(b, inst, name);
  if (!repl) repl = bitreverse_of_bits(inst, name);
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

/* dest's phis, rebuilt with one incoming entry from `from` now coming from `via` (the C API
 * cannot change an incoming block in place). */
static void move_one_incoming(LLVMBuilderRef b, LLVMBasicBlockRef dest, LLVMBasicBlockRef from,
                              LLVMBasicBlockRef via) {
  for (LLVMValueRef phi = LLVMGetFirstInstruction(dest), next; phi && LLVMIsAPHINode(phi);
       phi = next) {
    next = LLVMGetNextInstruction(phi);
    LLVMPositionBuilderBefore(b, phi);
    LLVMValueRef np = LLVMBuildPhi(b, LLVMTypeOf(phi), "");
    int moved = 0;
    for (unsigned i = 0; i < LLVMCountIncoming(phi); i++) {
      LLVMValueRef v = LLVMGetIncomingValue(phi, i);
      LLVMBasicBlockRef bb = LLVMGetIncomingBlock(phi, i);
      if (bb == from && !moved) bb = via, moved = 1;
      LLVMAddIncoming(np, &v, &bb, 1);
    }
    LLVMReplaceAllUsesWith(phi, np);
    LLVMInstructionEraseFromParent(phi);
  }
}

/* A branch or switch that reaches one block by two edges (switch cases sharing a target, the
 * optimiser's `br i1 %c, label %x, label %x`) gives that block's phis two entries for one
 * predecessor, which SPIR-V's validator refuses (fuzzer, seed 6000 kernel 14838): every edge
 * after the first to a block goes through a block of its own. */
static void split_repeated_edges(LLVMBuilderRef b, LLVMValueRef fn) {
  LLVMContextRef c = LLVMGetTypeContext(LLVMTypeOf(fn));
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb)) {
    LLVMValueRef term = LLVMGetBasicBlockTerminator(bb);
    unsigned n = term ? LLVMGetNumSuccessors(term) : 0;
    for (unsigned i = 1; i < n; i++) {
      LLVMBasicBlockRef dest = LLVMGetSuccessor(term, i);
      int seen = 0;
      for (unsigned k = 0; k < i && !seen; k++)
        seen = LLVMGetSuccessor(term, k) == dest;
      if (!seen) continue;
      LLVMBasicBlockRef via = LLVMInsertBasicBlockInContext(c, dest, "kapi.edge");
      LLVMPositionBuilderAtEnd(b, via);
      LLVMBuildBr(b, dest);
      LLVMSetSuccessor(term, i, via);
      move_one_incoming(b, dest, bb, via);
    }
  }
}

/* SPIR-V wants a function's OpVariables first in its first block, and the translator emits
 * each alloca where it stands. The loop vectoriser's runtime alias checks put ptrtoints of the
 * arguments at the top of the entry block, before a private array's alloca (a kernel filling
 * a private array, scattering uint16 values and then copying them: spirv-val refused it).
 * The entry block's constant-size allocas move to its top, in their order. */
static void hoist_entry_allocas(LLVMBuilderRef b, LLVMValueRef fn) {
  if (!LLVMCountBasicBlocks(fn)) return;
  LLVMValueRef at = LLVMGetFirstInstruction(LLVMGetEntryBasicBlock(fn));
  while (at && LLVMGetInstructionOpcode(at) == LLVMAlloca)
    at = LLVMGetNextInstruction(at);
  for (LLVMValueRef inst = at, next; inst; inst = next) {
    next = LLVMGetNextInstruction(inst);
    if (LLVMGetInstructionOpcode(inst) != LLVMAlloca || !LLVMIsConstant(LLVMGetOperand(inst, 0)))
      continue;
    LLVMInstructionRemoveFromParent(inst);
    LLVMPositionBuilderBefore(b, at);
    LLVMInsertIntoBuilder(b, inst);
  }
}

static kc_status_t prepare_function(LLVMBuilderRef b, LLVMValueRef fn, char **err) {
  hoist_entry_allocas(b, fn);
  split_repeated_edges(b, fn);
  legalise_bool_bitcasts(b, fn);
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
