/* Unit test of spirv_prepare.c and spirv_legal.c (linked in directly: they are private to the
 * library) on LLVM IR the optimiser made from fuzzer kernels, run by LLVM's interpreter before
 * and after: an odd-width (i2) loop value whose start is `sext i1 to i2` is widened into valid
 * IR, no shift of an i1 is left for the translator (which exits the process on one), and the
 * i4 bitcasts of bool vectors (a parity, a sum of counts, the bits themselves) are rebuilt. */
#include "compile.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/ExecutionEngine.h>
#include <llvm-c/IRReader.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void kc_set_error(char **err, const char *fmt, ...) { /* the library's, minus formatting */
  if (!err) return;
  free(*err);
  *err = strdup(fmt);
}

/* Seed 2000 kernel 3719's shape: `range(x & 3)` nested in a loop, counted in i2 from a bool. */
static const char ir_text[] =
    "define i64 @w(i1 %b, i64 %n) {\n"
    "entry:\n"
    "  %s = sext i1 %b to i2\n"
    "  br label %loop\n"
    "loop:\n"
    "  %p = phi i2 [ %s, %entry ], [ %q, %loop ]\n"
    "  %k = phi i64 [ 0, %entry ], [ %k1, %loop ]\n"
    "  %q = add i2 %p, 1\n"
    "  %k1 = add i64 %k, 1\n"
    "  %c = icmp eq i64 %k1, %n\n"
    "  br i1 %c, label %exit, label %loop\n"
    "exit:\n"
    "  %z = zext i2 %q to i64\n"
    "  ret i64 %z\n"
    "}\n"
    "define i64 @shifts(i1 %a, i1 %b) {\n"
    "  %x = shl i1 %a, %b\n"
    "  %y = lshr i1 %x, false\n"
    "  %v = ashr i1 %y, %b\n"
    "  %z = zext i1 %v to i64\n"
    "  ret i64 %z\n"
    "}\n"
    "declare i4 @llvm.ctpop.i4(i4)\n"
    "define i64 @bits(i64 %m, i64 %s) {\n"

    "  %u = trunc i64 %s to i4\n"
    "  %a = insertelement <4 x i64> undef, i64 %m, i32 0\n"
    "  %v = shufflevector <4 x i64> %a, <4 x i64> undef, <4 x i32> zeroinitializer\n"
    "  %e = and <4 x i64> %v, <i64 1, i64 2, i64 4, i64 8>\n"
    "  %b = icmp ne <4 x i64> %e, zeroinitializer\n"
    "  %c = bitcast <4 x i1> %b to i4\n"
    "  %p = call i4 @llvm.ctpop.i4(i4 %c)\n"
    "  %o = and i4 %p, 1\n"
    "  %odd = icmp ne i4 %o, 0\n"
    "  %sum = add i4 %p, %p\n"
    "  %x = xor i4 %c, %u\n"
    "  %xz = zext i4 %x to i64\n"
    "  %sz = zext i4 %sum to i64\n"
    "  %oz = zext i1 %odd to i64\n"
    "  %r1 = shl i64 %sz, 8\n"
    "  %r2 = shl i64 %oz, 16\n"
    "  %r3 = or i64 %xz, %r1\n"
    "  %r = or i64 %r3, %r2\n"
    "  ret i64 %r\n"
    "}\n";

/* bits(m, s): the low 4 bits of m as a bool vector, xor s | 2 * popcount << 8 | parity << 16 */
static unsigned long long bits_want(unsigned long long m, unsigned long long s) {
  unsigned long long k = m & 15, pop = __builtin_popcountll(k);
  return ((k ^ s) & 15) | ((2 * pop) & 15) << 8 | (pop & 1) << 16;
}

static LLVMModuleRef parse(LLVMContextRef ctx, const char *text) {
  LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRangeCopy(text, strlen(text), "t");
  LLVMModuleRef mod = NULL;
  char *msg = NULL;
  if (LLVMParseIRInContext(ctx, buf, &mod, &msg)) {
    fprintf(stderr, "parse: %s\n", msg);
    LLVMDisposeMessage(msg);
    return NULL;
  }
  return mod;
}

static int run(LLVMExecutionEngineRef ee, LLVMValueRef fn, unsigned long long a,
               unsigned long long b, unsigned long long want) {
  LLVMTypeRef i1 = LLVMInt1Type(), i64 = LLVMInt64Type();
  LLVMTypeRef t[2];
  for (int k = 0; k < 2; k++)
    t[k] = LLVMTypeOf(LLVMGetParam(fn, k)) == i64 ? i64 : i1;
  LLVMGenericValueRef args[2] = {LLVMCreateGenericValueOfInt(t[0], a, 0),
                                 LLVMCreateGenericValueOfInt(t[1], b, 0)};
  LLVMGenericValueRef r = LLVMRunFunction(ee, fn, 2, args);
  unsigned long long got = LLVMGenericValueToInt(r, 0);
  for (int k = 0; k < 2; k++)
    LLVMDisposeGenericValue(args[k]);
  LLVMDisposeGenericValue(r);
  if (got == want) return 0;
  fprintf(stderr, "%s(%llu, %llu) = %llu, want %llu\n", LLVMGetValueName(fn), a, b, got, want);
  return 1;
}

int main(void) {
  int bad = 0;
  LLVMContextRef ctx = LLVMGetGlobalContext();
  LLVMModuleRef mod = parse(ctx, ir_text);
  char *err = NULL, *msg = NULL;
  if (!mod || kc_spirv_prepare(mod, &err) != KC_OK || kc_check_spirv_types(mod, &err) != KC_OK)
    return fprintf(stderr, "legalisation failed: %s\n", err ? err : "parse"), 1;
  if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg))
    bad = 1, fprintf(stderr, "invalid IR after legalisation:\n%s\n", msg);
  LLVMDisposeMessage(msg);
  char *text = LLVMPrintModuleToString(mod);
  if (strstr(text, "i2 ") || strstr(text, "i4 %") || strstr(text, "to i4") ||
      strstr(text, "shl i1") || strstr(text, "shr i1"))
    bad = 1, fprintf(stderr, "left in the module:\n%s\n", text);
  LLVMDisposeMessage(text);
  if (bad) return 1;
  LLVMLinkInInterpreter();
  LLVMExecutionEngineRef ee;
  if (LLVMCreateInterpreterForModule(&ee, mod, &msg))
    return fprintf(stderr, "interpreter: %s\n", msg), 1;
  LLVMValueRef w = LLVMGetNamedFunction(mod, "w"), sh = LLVMGetNamedFunction(mod, "shifts");
  /* sext i1 true to i2 is 3: one step gives 0, two give 1; false starts at 0 */
  bad |= run(ee, w, 1, 1, 0) | run(ee, w, 1, 2, 1) | run(ee, w, 0, 1, 1) | run(ee, w, 0, 3, 3);
  bad |= run(ee, sh, 1, 0, 1) | run(ee, sh, 0, 0, 0);
  LLVMValueRef bits = LLVMGetNamedFunction(mod, "bits");
  for (unsigned long long m = 0; m < 16; m++)
    bad |= run(ee, bits, m, m * 7 + 3, bits_want(m, m * 7 + 3));
  LLVMDisposeExecutionEngine(ee);
  free(err);
  return bad;
}
