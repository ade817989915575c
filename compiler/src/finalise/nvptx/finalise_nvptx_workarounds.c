/* NVPTX finaliser: IR rewrites that keep LLVM 15's NVPTX instruction selection away from a
 * miscompile. Its bit-field-extract matcher (tryBFE) takes `and (sra x, c), mask` on i64 for
 * a bfe.u64, and checks that the mask fits the bits left after the shift against the *shift
 * amount's* type (i32): with c in 33..63 the check underflows and passes, and the unsigned bfe
 * then drops the sign bits the shift replicated. Python's `%` and `//` fix-ups produce exactly
 * `select (x < 0), K, 0`, which the DAG combiner folds into that pattern (-8 % 3 came out -1);
 * a one-bit test `select (x & 2^k) == 0, 0, K` folds into it too, through `shl x, 63 - k`.
 * Sign tests, bit tests and wide arithmetic shifts of i64 go through a short inline asm
 * instead, which instruction selection cannot fold.
 *
 * The CUDA driver's PTX compiler has the converse problem with 16-bit negation: for
 * `neg.s16` then `cvt.s64.s16` it returned 32768 for -int16(-32768), as if the negation were
 * done in a wider register (our PTX was right). Numba negates narrow integers before widening,
 * so `-a[i]` of an int16 array is exactly that pattern. An i16 negation is written as an asm
 * that negates in 32 bits and wraps explicitly, leaving no 16-bit negation to widen.
 *
 * Shifts by 31 of an i64 (15 of an i32) go through an asm too: the mul.wide combine gives
 * them a signed immediate that overflows (guard_half_width_shl).
 *
 * And 64-bit rotates by a register amount, which LLVM 15 prints without taking the amount
 * modulo 64: patched in the PTX text (kc_nvptx_mask_rotates).
 *
 * LLVM 15 selects `sitofp i1` as `selp.u32 1, 0` and a signed convert, so true became +1.0
 * where it is -1.0 (guard_sitofp_bool). And the driver's PTX compiler reasons wrongly about
 * `abs` twice (probed on the H100 with hand-written PTX, bench/RESULTS.md): after `abs.s64`
 * it folds a compare of the negation against a constant beyond 32 bits as if on the low 32
 * bits, it decided `abs.s32(x) < 0` false for the most negative x (whose abs wraps to
 * itself: exp(abs(int32 min)) came out inf, not 0), and it folds `abs.f32(x) > -1` to true,
 * forgetting NaN (`abs.f64` is right). It treats `max(x, -x)` alike (max with a uint8 of
 * abs(int32 min) came out 2^31), but not the sign-mask form `(x ^ (x >> 31)) - (x >> 31)`,
 * which was right for every consumer probed. So 32- and 64-bit integer abs is that form, and
 * a float abs a compare reads is a mask of the sign bit, both in asm (guard_abs).
 *
 * Loop strength reduction, which runs inside code generation after every IR rewrite of ours,
 * pushes a truncation to i1 into the arithmetic below it (scalar evolution models `x & 2` of
 * an even x as a one-bit truncation): a loop bound `(2 * i) & 2` became `mul i1` of the
 * truncated factors, which LLVM 15's NVPTX instruction selection cannot select (the module
 * failed to build; fuzzer, seed 7000 kernel 117857). guard_one_bit hides such arithmetic
 * behind a `freeze`, which scalar evolution does not look through. */
#include "finalise/nvptx/finalise_nvptx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A one-operand asm `text` (constraints `cons`) over x, lane by lane when x is a vector (from
 * coarsened work-item loops, which instruction selection splits into the scalar pattern). */
static LLVMValueRef asm_lanes(LLVMBuilderRef b, LLVMValueRef x, const char *text,
                              const char *cons) {
  LLVMTypeRef t = LLVMTypeOf(x), et = t;
  int vec = LLVMGetTypeKind(t) == LLVMVectorTypeKind;
  if (vec) et = LLVMGetElementType(t);
  LLVMTypeRef fty = LLVMFunctionType(et, &et, 1, 0);
  LLVMValueRef fn = LLVMGetInlineAsm(fty, (char *)text, strlen(text), (char *)cons, strlen(cons), 0,
                                     0, LLVMInlineAsmDialectATT, 0);
  if (!vec) return LLVMBuildCall2(b, fty, fn, &x, 1, "");
  LLVMTypeRef i32 = LLVMInt32TypeInContext(LLVMGetTypeContext(t));
  LLVMValueRef v = LLVMGetUndef(t);
  for (unsigned i = 0, n = LLVMGetVectorSize(t); i < n; ++i) {
    LLVMValueRef lane = LLVMConstInt(i32, i, 0);
    LLVMValueRef e = LLVMBuildExtractElement(b, x, lane, "");
    v = LLVMBuildInsertElement(b, v, LLVMBuildCall2(b, fty, fn, &e, 1, ""), lane, "");
  }
  return v;
}

/* The asm arithmetic shift right of i64 x (or each lane) by amount. */
static LLVMValueRef sign_shift(LLVMBuilderRef b, LLVMValueRef x, unsigned amount) {
  char text[32];
  snprintf(text, sizeof text, "shr.s64 $0, $1, %u;", amount);
  return asm_lanes(b, x, text, "=l,l");
}

/* i64, or a vector of i64. */
static int is_i64(LLVMValueRef v) {
  LLVMTypeRef t = LLVMTypeOf(v);
  if (LLVMGetTypeKind(t) == LLVMVectorTypeKind) t = LLVMGetElementType(t);
  return LLVMGetTypeKind(t) == LLVMIntegerTypeKind && LLVMGetIntTypeWidth(t) == 64;
}

/* The value of a constant integer or integer splat; 0 when v is neither. */
static int const_int(LLVMValueRef v, long long *out) {
  if (LLVMIsAConstantInt(v)) return *out = LLVMConstIntGetSExtValue(v), 1;
  if (!LLVMIsAConstant(v) || LLVMGetTypeKind(LLVMTypeOf(v)) != LLVMVectorTypeKind) return 0;
  unsigned n = LLVMGetVectorSize(LLVMTypeOf(v));
  for (unsigned i = 0; i < n; ++i) {
    LLVMValueRef e = LLVMGetAggregateElement(v, i);
    if (!e || !LLVMIsAConstantInt(e)) return 0;
    long long k = LLVMConstIntGetSExtValue(e);
    if (i && k != *out) return 0;
    *out = k;
  }
  return n > 0;
}

static int const_equals(LLVMValueRef v, long long k) {
  long long got;
  return const_int(v, &got) && got == k;
}

/* `x < 0` and `x > -1` on i64 (or i64 vectors) become tests of the asm's sign mask; returns 1
 * if replaced. */
static int guard_sign_test(LLVMBuilderRef b, LLVMValueRef inst) {
  if (LLVMGetInstructionOpcode(inst) != LLVMICmp) return 0;
  LLVMValueRef x = LLVMGetOperand(inst, 0), y = LLVMGetOperand(inst, 1);
  LLVMIntPredicate p = LLVMGetICmpPredicate(inst);
  int lt0 = p == LLVMIntSLT && const_equals(y, 0), gtm1 = p == LLVMIntSGT && const_equals(y, -1);
  if (!is_i64(x) || !(lt0 || gtm1)) return 0;
  LLVMPositionBuilderBefore(b, inst);
  LLVMValueRef mask = sign_shift(b, x, 63);
  LLVMValueRef zero = LLVMConstNull(LLVMTypeOf(x));
  LLVMValueRef repl = LLVMBuildICmp(b, lt0 ? LLVMIntNE : LLVMIntEQ, mask, zero, "");
  LLVMReplaceAllUsesWith(inst, repl);
  LLVMInstructionEraseFromParent(inst);
  return 1;
}

/* `ashr i64 x, c` with c in 33..63 (or its vector form) becomes the asm shift. */
static int guard_wide_ashr(LLVMBuilderRef b, LLVMValueRef inst) {
  if (LLVMGetInstructionOpcode(inst) != LLVMAShr || !is_i64(inst)) return 0;
  long long amount;
  if (!const_int(LLVMGetOperand(inst, 1), &amount) || amount < 33 || amount > 63) return 0;
  LLVMPositionBuilderBefore(b, inst);
  LLVMValueRef repl = sign_shift(b, LLVMGetOperand(inst, 0), (unsigned)amount);
  LLVMReplaceAllUsesWith(inst, repl);
  LLVMInstructionEraseFromParent(inst);
  return 1;
}

/* Whether the DAG combiner may fold v, an i1, into `and (sra .., 63), A`: a select on v with a
 * constant zero arm reads it, or a sign extension (a select of -1 and 0). */
static int selects_against_zero(LLVMValueRef v) {
  for (LLVMUseRef u = LLVMGetFirstUse(v); u; u = LLVMGetNextUse(u)) {
    LLVMValueRef user = LLVMGetUser(u);
    LLVMOpcode op = LLVMGetInstructionOpcode(user);
    if (op == LLVMSExt) return 1;
    if (op == LLVMSelect && LLVMGetOperand(user, 0) == v &&
        (const_equals(LLVMGetOperand(user, 1), 0) || const_equals(LLVMGetOperand(user, 2), 0)))
      return 1;
  }
  return 0;
}

/* `(x & 2^k) == 0` and `!= 0` on i64 (or i64 vectors) that selects_against_zero become tests
 * of an asm that moves bit k to the sign and spreads it. The DAG combiner folds
 * `select (x & 2^k) == 0, 0, A` into `and (sra (shl x, 63 - k), 63), A`, the shape tryBFE
 * miscompiles for a constant A of two bits or more (fuzzer, seed 7000 kernel 211915:
 * min(3, x & 2^31) of a negative x came out 1, not 3). Only such tests are rewritten: the
 * others (`r * x if e & 1 else r` of integer powers) fold into nothing wrong. Returns 1 if
 * replaced. */
static int guard_bit_test(LLVMBuilderRef b, LLVMValueRef inst) {
  if (LLVMGetInstructionOpcode(inst) != LLVMICmp) return 0;
  LLVMIntPredicate p = LLVMGetICmpPredicate(inst);
  LLVMValueRef a = LLVMGetOperand(inst, 0);
  if ((p != LLVMIntEQ && p != LLVMIntNE) || !const_equals(LLVMGetOperand(inst, 1), 0) ||
      !is_i64(a) || !LLVMIsAInstruction(a) || LLVMGetInstructionOpcode(a) != LLVMAnd ||
      !selects_against_zero(inst))
    return 0;
  long long k;
  unsigned long long m;
  if (!const_int(LLVMGetOperand(a, 1), &k) || !(m = (unsigned long long)k) || (m & (m - 1)))
    return 0;
  char text[80];
  snprintf(text, sizeof text, "{ .reg .b64 t; shl.b64 t, $1, %d; shr.s64 $0, t, 63; }",
           63 - __builtin_ctzll(m));
  LLVMPositionBuilderBefore(b, inst);
  LLVMValueRef spread = asm_lanes(b, LLVMGetOperand(a, 0), text, "=l,l");
  LLVMValueRef repl = LLVMBuildICmp(b, p, spread, LLVMConstNull(LLVMTypeOf(a)), "");
  LLVMReplaceAllUsesWith(inst, repl);
  LLVMInstructionEraseFromParent(inst);
  return 1;
}

/* the shifts re-sign-extend the wrapped 16 bits within the 32-bit register, so a compiler that
 * keeps the result there (as it evidently did) still holds -32768 for -(-32768) */
static const char neg16_asm[] = "{ .reg .b32 t; cvt.s32.s16 t, $1; neg.s32 t, t; shl.b32 t, t, 16; "
                                "shr.s32 t, t, 16; cvt.u16.u32 $0, t; }";

/* `sub i16 0, x` (or its vector form, lane by lane) becomes the asm negation; returns 1 if
 * replaced. */
static int guard_neg16(LLVMBuilderRef b, LLVMValueRef inst) {
  LLVMTypeRef t = LLVMTypeOf(inst), et = t;
  if (LLVMGetInstructionOpcode(inst) != LLVMSub || !const_equals(LLVMGetOperand(inst, 0), 0))
    return 0;
  if (LLVMGetTypeKind(t) == LLVMVectorTypeKind) et = LLVMGetElementType(t);
  if (LLVMGetTypeKind(et) != LLVMIntegerTypeKind || LLVMGetIntTypeWidth(et) != 16) return 0;
  LLVMPositionBuilderBefore(b, inst);
  LLVMValueRef repl = asm_lanes(b, LLVMGetOperand(inst, 1), neg16_asm, "=h,h");
  LLVMReplaceAllUsesWith(inst, repl);
  LLVMInstructionEraseFromParent(inst);
  return 1;
}

/* `shl i64 x, 31` (or `shl i32 x, 15`): when x is a sign extension from half the width,
 * LLVM 15's mul.wide combine makes it `mul.wide.s32 x, 1 << 31`, an immediate that in a
 * signed 32-bit operand is -2^31: the product's sign flips (-12 << 31 came out positive;
 * fuzzer, seed 6000 kernel 401). The shift goes through an asm the combine cannot see into,
 * lane by lane for vectors. Returns 1 if replaced. */
static int guard_half_width_shl(LLVMBuilderRef b, LLVMValueRef inst) {
  if (LLVMGetInstructionOpcode(inst) != LLVMShl) return 0;
  LLVMTypeRef t = LLVMTypeOf(inst), et = t;
  if (LLVMGetTypeKind(t) == LLVMVectorTypeKind) et = LLVMGetElementType(t);
  unsigned w = LLVMGetIntTypeWidth(et);
  long long amount;
  if ((w != 64 && w != 32) || !const_int(LLVMGetOperand(inst, 1), &amount) ||
      amount != (long long)w / 2 - 1)
    return 0;
  LLVMPositionBuilderBefore(b, inst);
  char text[32];
  snprintf(text, sizeof text, "shl.b%u $0, $1, %lld;", w, amount);
  LLVMValueRef repl = asm_lanes(b, LLVMGetOperand(inst, 0), text, w == 64 ? "=l,l" : "=r,r");
  LLVMReplaceAllUsesWith(inst, repl);
  LLVMInstructionEraseFromParent(inst);
  return 1;
}

static LLVMTypeRef element_type(LLVMValueRef v) {
  LLVMTypeRef t = LLVMTypeOf(v);
  return LLVMGetTypeKind(t) == LLVMVectorTypeKind ? LLVMGetElementType(t) : t;
}

/* The name of the function a call instruction calls; NULL for anything else. */
static const char *callee_name(LLVMValueRef inst) {
  if (LLVMGetInstructionOpcode(inst) != LLVMCall) return NULL;
  LLVMValueRef callee = LLVMGetCalledValue(inst);
  size_t len = 0;
  return callee ? LLVMGetValueName2(callee, &len) : NULL;
}

/* `llvm.abs.i16` (what the optimiser makes of select(x < 0, -x, x)) is lowered to `abs.s16`,
 * which the driver's PTX compiler widens as it does neg.s16 (abs(-32768) came back 32768):
 * rebuilt as a select over the asm negation. Returns 1 if replaced. */
static int guard_abs16(LLVMBuilderRef b, LLVMValueRef inst) {
  const char *name = callee_name(inst);
  if (!name || strncmp(name, "llvm.abs.", 9)) return 0;
  LLVMTypeRef t = LLVMTypeOf(inst), et = element_type(inst);
  if (LLVMGetTypeKind(et) != LLVMIntegerTypeKind || LLVMGetIntTypeWidth(et) != 16) return 0;
  LLVMPositionBuilderBefore(b, inst);
  LLVMValueRef x = LLVMGetOperand(inst, 0);
  LLVMValueRef neg = LLVMBuildSub(b, LLVMConstNull(t), x, "");
  LLVMValueRef lt = LLVMBuildICmp(b, LLVMIntSLT, x, LLVMConstNull(t), "");
  LLVMValueRef repl = LLVMBuildSelect(b, lt, neg, x, "");
  LLVMReplaceAllUsesWith(inst, repl);
  LLVMInstructionEraseFromParent(inst);
  if (LLVMIsAInstruction(neg)) guard_neg16(b, neg);
  return 1;
}

/* `sitofp i1 b` (or its vector form) becomes `select b, -1.0, 0.0`. Returns 1 if replaced. */
static int guard_sitofp_bool(LLVMBuilderRef b, LLVMValueRef inst) {
  if (LLVMGetInstructionOpcode(inst) != LLVMSIToFP) return 0;
  LLVMValueRef x = LLVMGetOperand(inst, 0);
  LLVMTypeRef et = element_type(x);
  if (LLVMGetTypeKind(et) != LLVMIntegerTypeKind || LLVMGetIntTypeWidth(et) != 1) return 0;
  LLVMTypeRef t = LLVMTypeOf(inst), ft = element_type(inst);
  LLVMValueRef m1 = LLVMConstReal(ft, -1.0), zero = LLVMConstNull(t);
  if (LLVMGetTypeKind(t) == LLVMVectorTypeKind) {
    unsigned n = LLVMGetVectorSize(t);
    LLVMValueRef lanes[64];
    if (n > 64) return 0;
    for (unsigned i = 0; i < n; ++i)
      lanes[i] = m1;
    m1 = LLVMConstVector(lanes, n);
  }
  LLVMPositionBuilderBefore(b, inst);
  LLVMValueRef repl = LLVMBuildSelect(b, x, m1, zero, "");
  LLVMReplaceAllUsesWith(inst, repl);
  LLVMInstructionEraseFromParent(inst);
  return 1;
}

static int has_fcmp_user(LLVMValueRef v) {
  for (LLVMUseRef u = LLVMGetFirstUse(v); u; u = LLVMGetNextUse(u))
    if (LLVMGetInstructionOpcode(LLVMGetUser(u)) == LLVMFCmp) return 1;
  return 0;
}

/* `llvm.abs` of i32 and i64 always, and `llvm.fabs` of float when a compare reads it, become
 * asm (lane by lane for vectors). Returns 1 if replaced. */
static int guard_abs(LLVMBuilderRef b, LLVMValueRef inst) {
  const char *name = callee_name(inst);
  if (!name) return 0;
  LLVMTypeRef et = element_type(inst);
  const char *text, *cons;
  unsigned w = LLVMGetTypeKind(et) == LLVMIntegerTypeKind ? LLVMGetIntTypeWidth(et) : 0;
  if (!strncmp(name, "llvm.abs.", 9) && w == 64) {
    text = "{ .reg .b64 m, t; shr.s64 m, $1, 63; xor.b64 t, $1, m; sub.s64 $0, t, m; }";
    cons = "=l,l";
  } else if (!strncmp(name, "llvm.abs.", 9) && w == 32) {
    text = "{ .reg .b32 m, t; shr.s32 m, $1, 31; xor.b32 t, $1, m; sub.s32 $0, t, m; }";
    cons = "=r,r";
  } else if (!strncmp(name, "llvm.fabs.", 10) && LLVMGetTypeKind(et) == LLVMFloatTypeKind &&
             has_fcmp_user(inst)) {
    text = "{ .reg .b32 t; mov.b32 t, $1; and.b32 t, t, 2147483647; mov.b32 $0, t; }";
    cons = "=f,f";
  } else {
    return 0;
  }
  LLVMPositionBuilderBefore(b, inst);
  LLVMValueRef repl = asm_lanes(b, LLVMGetOperand(inst, 0), text, cons);
  LLVMReplaceAllUsesWith(inst, repl);
  LLVMInstructionEraseFromParent(inst);
  return 1;
}

/* Whether scalar evolution may narrow x's operands to one bit through inst: inst is a mask
 * of one bit (`and x, 2^k`), a truncation to i1, or a shift by all but one bit (`shl x, N-1`,
 * the first half of a sign extension of bit 0). */
static int narrows_to_one_bit(LLVMValueRef inst) {
  LLVMTypeRef t = LLVMTypeOf(inst);
  if (LLVMGetTypeKind(t) != LLVMIntegerTypeKind) return 0;
  LLVMOpcode op = LLVMGetInstructionOpcode(inst);
  if (op == LLVMTrunc) return LLVMGetIntTypeWidth(t) == 1;
  unsigned w = LLVMGetIntTypeWidth(t);
  long long k;
  if (w == 1 || w > 64 || !const_int(LLVMGetOperand(inst, 1), &k)) return 0;
  unsigned long long m = (unsigned long long)k & (~0ULL >> (64 - w));
  if (op == LLVMAnd) return m && !(m & (m - 1));
  return op == LLVMShl && m == w - 1;
}

/* x behind a freeze when x is arithmetic inst narrows to one bit. Returns 1 if done. */
static int guard_one_bit(LLVMBuilderRef b, LLVMValueRef inst) {
  if (!narrows_to_one_bit(inst)) return 0;
  LLVMValueRef x = LLVMGetOperand(inst, 0);
  if (!LLVMIsABinaryOperator(x) && !LLVMIsACastInst(x)) return 0;
  LLVMPositionBuilderBefore(b, inst);
  LLVMSetOperand(inst, 0, LLVMBuildFreeze(b, x, ""));
  return 1;
}

void kc_nvptx_avoid_miscompiles(LLVMModuleRef mod) {
  LLVMBuilderRef b = LLVMCreateBuilderInContext(LLVMGetModuleContext(mod));
  for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn))
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb))
      for (LLVMValueRef inst = LLVMGetFirstInstruction(bb), next; inst; inst = next) {
        next = LLVMGetNextInstruction(inst);
        if (!guard_sign_test(b, inst) && !guard_bit_test(b, inst) && !guard_wide_ashr(b, inst) &&
            !guard_abs16(b, inst) && !guard_half_width_shl(b, inst) &&
            !guard_sitofp_bool(b, inst) && !guard_abs(b, inst))
          if (!guard_neg16(b, inst)) guard_one_bit(b, inst);
      }
  LLVMDisposeBuilder(b);
}

/* LLVM 15's ROTL64reg_sw / ROTR64reg_sw (a 64-bit rotate by a register) print
 *   shl.b64 %lhs, src, amt; sub.u32 %amt2, 64, amt; shr.b64 %rhs, src, %amt2; add.u64 ..
 * with amt itself where a rotate means amt modulo 64, and the DAG combiner drops an explicit
 * `and amt, 63` as redundant for a rotate: `~(1 << (u & 63))`, which it folds into
 * rotl(-2, u), gave 0 for u >= 64 (fuzzer finding). Rotates come from several combines (that
 * one, shl/srl pairs, funnel shifts), so the printed template itself is patched: the amount
 * is masked into %amt1 first. */
static const char rot_decl[] = ".reg .u32 %amt2;\n\t";

/* Length of the patched block starting at p (just after rot_decl) written to out (if not
 * NULL), or 0 when p is not the template. */
static size_t patch_rotate(const char *p, char *out) {
  static const char shl[] = "shl.b64 \t%lhs, ", shr[] = "shr.b64 \t%lhs, ";
  if (strncmp(p, shl, sizeof shl - 1) && strncmp(p, shr, sizeof shr - 1)) return 0;
  const char *src = p + sizeof shl - 1, *comma = strchr(src, ','), *semi = strchr(src, ';');
  if (!comma || !semi || comma > semi) return 0;
  const char *amt = comma + 2;
  int alen = (int)(semi - amt), slen = (int)(comma - src);
  char want[96];
  snprintf(want, sizeof want, ";\n\tsub.u32 \t%%amt2, 64, %.*s;", alen, amt);
  if (alen <= 0 || alen > 32 || slen > 32 || strncmp(semi, want, strlen(want))) return 0;
  char buf[320];
  int n = snprintf(buf, sizeof buf,
                   ".reg .u32 %%amt1;\n\tand.b32 \t%%amt1, %.*s, 63;\n\t%.7s \t%%lhs, %.*s, "
                   "%%amt1;\n\tsub.u32 \t%%amt2, 64, %%amt1;",
                   alen, amt, p, slen, src);
  if (out) memcpy(out, buf, (size_t)n);
  return (size_t)n | (size_t)(semi + strlen(want) - p) << 16; /* written, consumed */
}

char *kc_nvptx_mask_rotates(const char *ptx) {
  size_t n = strlen(ptx), count = 0;
  for (const char *p = strstr(ptx, rot_decl); p; p = strstr(p + 1, rot_decl))
    count++;
  char *out = malloc(n + count * 64 + 1), *o = out;
  if (!out) return NULL;
  const char *p = ptx;
  for (const char *hit; (hit = strstr(p, rot_decl));) {
    hit += sizeof rot_decl - 1;
    memcpy(o, p, (size_t)(hit - p));
    o += hit - p;
    size_t r = patch_rotate(hit, o);
    o += r & 0xffff;
    p = hit + (r >> 16);
  }
  strcpy(o, p);
  return out;
}
