/* Unit test of spirv_legal.c (linked in directly: it is private to the library) on LLVM IR the
 * optimiser made from fuzzer kernels: an odd-width (i2) loop value whose start is
 * `sext i1 to i2` is widened into valid IR with the right values (run by LLVM's interpreter),
 * and no shift of an i1 is left for the translator (which exits the process on one). */
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
static const char ir_text[] = "define i64 @w(i1 %b, i64 %n) {\n"
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
                              "}\n";

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
  LLVMTypeRef second = LLVMTypeOf(LLVMGetParam(fn, 1)) == i64 ? i64 : i1;
  LLVMGenericValueRef args[2] = {LLVMCreateGenericValueOfInt(i1, a, 0),
                                 LLVMCreateGenericValueOfInt(second, b, 0)};
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
  if (!mod || kc_check_spirv_types(mod, &err) != KC_OK)
    return fprintf(stderr, "legalisation failed: %s\n", err ? err : "parse"), 1;
  if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg))
    bad = 1, fprintf(stderr, "invalid IR after legalisation:\n%s\n", msg);
  LLVMDisposeMessage(msg);
  char *text = LLVMPrintModuleToString(mod);
  if (strstr(text, "i2 ") || strstr(text, "shl i1") || strstr(text, "shr i1"))
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
  LLVMDisposeExecutionEngine(ee);
  free(err);
  return bad;
}
