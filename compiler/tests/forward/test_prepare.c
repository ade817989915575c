/* Unit test of spirv_prepare.c (linked in directly: it is private to the library), on LLVM IR
 * the optimiser can produce but no KIR fixture reliably provokes: overflow intrinsics the
 * translator lacks are expanded into plain arithmetic, freeze is dropped, and an intrinsic the
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

static const char bad_text[] = "declare i32 @llvm.ssub.sat.i32(i32, i32)\n"
                               "define i32 @g(i32 %a, i32 %b) {\n"
                               "  %r = call i32 @llvm.ssub.sat.i32(i32 %a, i32 %b)\n"
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
    fprintf(stderr, "llvm.ssub.sat was not rejected\n");
    bad = 1;
  }
  if (badmod) LLVMDisposeModule(badmod);
  free(err);
  LLVMContextDispose(ctx);
  return bad;
}
