/* Unit test of spirv_prepare.c (linked in directly: it is private to the library), on LLVM IR
 * the optimiser can produce but no KIR fixture reliably provokes: overflow and saturating
 * intrinsics the translator lacks are expanded into plain arithmetic (their values checked on
 * constants, which the builder folds), freeze is dropped, and an intrinsic the
 * translator cannot express becomes KC_ERR_LLVM instead of reaching the translator (which would
 * exit the process). */
#include "compile.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/IRReader.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void kc_set_error(char **err, const char *fmt, ...) { /* the library's, minus formatting */
  if (!err) return;
  free(*err);
  *err = strdup(fmt);
}

static const char ir_text[] =
    "declare { i32, i1 } @llvm.uadd.with.overflow.i32(i32, i32)\n"
    "declare { i64, i1 } @llvm.usub.with.overflow.i64(i64, i64)\n"
    "declare { i32, i1 } @llvm.ssub.with.overflow.i32(i32, i32)\n"
    "define i32 @f(i32 %a, i32 %b, i64 %c, i64 %d) {\n"
    "  %u = call { i32, i1 } @llvm.uadd.with.overflow.i32(i32 %a, i32 %b)\n"
    "  %v = call { i64, i1 } @llvm.usub.with.overflow.i64(i64 %c, i64 %d)\n"
    "  %s = call { i32, i1 } @llvm.ssub.with.overflow.i32(i32 %a, i32 %b)\n"
    "  %u0 = extractvalue { i32, i1 } %u, 0\n"
    "  %u1 = extractvalue { i32, i1 } %u, 1\n"
    "  %v1 = extractvalue { i64, i1 } %v, 1\n"
    "  %s1 = extractvalue { i32, i1 } %s, 1\n"
    "  %fr = freeze i32 %u0\n"
    "  %o1 = or i1 %u1, %v1\n"
    "  %o2 = or i1 %o1, %s1\n"
    "  %r = select i1 %o2, i32 %fr, i32 0\n"
    "  ret i32 %r\n"
    "}\n";

static const char bad_text[] = "declare i32 @llvm.bitreverse.i32(i32)\n"
                               "define i32 @g(i32 %a) {\n"
                               "  %r = call i32 @llvm.bitreverse.i32(i32 %a)\n"
                               "  ret i32 %r\n"
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

/* Two edges into one block: a switch's cases sharing a target, and a branch whose two arms
 * are one block; each phi keeps one entry per edge. */
static const char edges_text[] =
    "declare i1 @llvm.abs.i1(i1, i1)\n"
    "define i64 @e(i64 %x, i1 %c) {\n"
    "entry:\n"
    "  switch i64 %x, label %d [ i64 1, label %t\n i64 2, label %t\n i64 3, label %u ]\n"
    "u:\n"
    "  br i1 %c, label %t, label %t\n"
    "d:\n"
    "  br label %t\n"
    "t:\n"
    "  %p = phi i64 [ 5, %entry ], [ 5, %entry ], [ 7, %u ], [ 7, %u ], [ 9, %d ]\n"
    "  %a = call i1 @llvm.abs.i1(i1 %c, i1 false)\n"
    "  %z = zext i1 %a to i64\n"
    "  %r = add i64 %p, %z\n"
    "  ret i64 %r\n"
    "}\n";

static int check_edges(LLVMContextRef ctx) {
  LLVMModuleRef mod = parse(ctx, edges_text);
  char *err = NULL, *msg = NULL;
  int bad = !mod || kc_spirv_prepare(mod, &err) != KC_OK;
  if (!bad && LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg))
    bad = 1, fprintf(stderr, "edges: %s\n", msg);
  LLVMDisposeMessage(msg);
  free(err);
  LLVMValueRef fn = mod ? LLVMGetNamedFunction(mod, "e") : NULL;
  for (LLVMBasicBlockRef bb = fn ? LLVMGetFirstBasicBlock(fn) : NULL; bb;
       bb = LLVMGetNextBasicBlock(bb)) {
    LLVMValueRef term = LLVMGetBasicBlockTerminator(bb);
    for (unsigned i = 0; i < LLVMGetNumSuccessors(term); i++)
      for (unsigned k = 0; k < i; k++)
        if (LLVMGetSuccessor(term, k) == LLVMGetSuccessor(term, i))
          bad = 1, fprintf(stderr, "edges: a block is still reached twice from one terminator\n");
    for (LLVMValueRef in = LLVMGetFirstInstruction(bb); in; in = LLVMGetNextInstruction(in))
      if (LLVMIsACallInst(in)) bad = 1, fprintf(stderr, "edges: llvm.abs.i1 left in place\n");
  }
  if (mod) LLVMDisposeModule(mod);
  return bad;
}

/* name(x, y) on constants, and the value its expansion must fold to */
static const struct {
  const char *fn, *type;
  long long x, y, want;
} sat_cases[] = {
    {"uadd", "i8", 200, 100, -1},
    {"uadd", "i8", 20, 10, 30},
    {"uadd", "i8", -1, 0, -1},
    {"ssub", "i8", -100, 100, -128},
    {"ssub", "i8", 100, -100, 127},
    {"ssub", "i8", 5, 7, -2},
    {"ssub", "i8", -128, -1, -127},
    {"uadd", "i64", -1, 1, -1},
    {"uadd", "i64", 5, 6, 11},
    {"ssub", "i64", -0x7fffffffffffffffLL - 1, 1, -0x7fffffffffffffffLL - 1},
    {"ssub", "i64", 0x7fffffffffffffffLL, -1, 0x7fffffffffffffffLL},
};

/* Values are compared as signed iN (an unsigned 255 in i8 is -1). */
static int check_saturating(LLVMContextRef ctx) {
  char text[8192] = "", line[256];
  size_t n = sizeof sat_cases / sizeof sat_cases[0];
  for (size_t i = 0; i < n; i++) {
    const char *t = sat_cases[i].type;
    snprintf(line, sizeof line, "declare %s @llvm.%s.sat.%s(%s, %s)\n", t, sat_cases[i].fn, t, t,
             t);
    if (!strstr(text, line)) strncat(text, line, sizeof text - strlen(text) - 1);
    snprintf(line, sizeof line,
             "define %s @c%zu() {\n  %%r = call %s @llvm.%s.sat.%s(%s %lld, %s %lld)\n"
             "  ret %s %%r\n}\n",
             t, i, t, sat_cases[i].fn, t, t, sat_cases[i].x, t, sat_cases[i].y, t);
    strncat(text, line, sizeof text - strlen(text) - 1);
  }
  strncat(text,
          "declare <2 x i8> @llvm.ssub.sat.v2i8(<2 x i8>, <2 x i8>)\ndefine <2 x i8> @v() {\n"
          "  %r = call <2 x i8> @llvm.ssub.sat.v2i8(<2 x i8> <i8 100, i8 -100>, "
          "<2 x i8> <i8 -100, i8 1>)\n  ret <2 x i8> %r\n}\n",
          sizeof text - strlen(text) - 1);
  LLVMModuleRef mod = parse(ctx, text);
  char *err = NULL;
  int bad = 0;
  if (!mod || kc_spirv_prepare(mod, &err) != KC_OK) {
    fprintf(stderr, "saturating: prepare failed: %s\n", err ? err : "");
    free(err);
    if (mod) LLVMDisposeModule(mod);
    return 1;
  }
  for (size_t i = 0; i < n; i++) {
    snprintf(line, sizeof line, "c%zu", i);
    LLVMValueRef ret =
        LLVMGetBasicBlockTerminator(LLVMGetEntryBasicBlock(LLVMGetNamedFunction(mod, line)));
    LLVMValueRef r = LLVMGetOperand(ret, 0);
    if (!LLVMIsAConstantInt(r) || LLVMConstIntGetSExtValue(r) != sat_cases[i].want) {
      fprintf(stderr, "llvm.%s.sat.%s(%lld, %lld) did not fold to %lld\n", sat_cases[i].fn,
              sat_cases[i].type, sat_cases[i].x, sat_cases[i].y, sat_cases[i].want);
      bad = 1;
    }
  }
  LLVMValueRef ret =
      LLVMGetBasicBlockTerminator(LLVMGetEntryBasicBlock(LLVMGetNamedFunction(mod, "v")));
  LLVMValueRef r = LLVMGetOperand(ret, 0);
  static const long long vwant[2] = {127, -101};
  for (unsigned k = 0; k < 2; k++) {
    LLVMValueRef e = LLVMGetAggregateElement(r, k);
    if (!e || LLVMConstIntGetSExtValue(e) != vwant[k])
      bad = 1, fprintf(stderr, "llvm.ssub.sat.v2i8 lane %u did not fold to %lld\n", k, vwant[k]);
  }
  LLVMDisposeModule(mod);
  return bad;
}

int main(void) {
  int bad = 0;
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMContextSetOpaquePointers(ctx, 0);
  LLVMModuleRef mod = parse(ctx, ir_text);
  char *err = NULL;
  if (!mod || kc_spirv_prepare(mod, &err) != KC_OK) bad = 1, fprintf(stderr, "prepare failed\n");
  char *msg = NULL;
  if (mod && LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg))
    bad = 1, fprintf(stderr, "%s\n", msg);
  LLVMDisposeMessage(msg);
  char *text = mod ? LLVMPrintModuleToString(mod) : NULL;
  if (text && (strstr(text, "call {") || strstr(text, "freeze"))) {
    fprintf(stderr, "left in the module:\n%s\n", text);
    bad = 1;
  }
  if (text) LLVMDisposeMessage(text);
  if (mod) LLVMDisposeModule(mod);
  LLVMModuleRef badmod = parse(ctx, bad_text);
  if (!badmod || kc_spirv_prepare(badmod, &err) != KC_ERR_LLVM || !err) {
    fprintf(stderr, "llvm.bitreverse.i32 was not rejected\n");
    bad = 1;
  }
  if (badmod) LLVMDisposeModule(badmod);
  free(err);
  bad |= check_saturating(ctx);
  bad |= check_edges(ctx);
  LLVMContextDispose(ctx);
  return bad;
}
