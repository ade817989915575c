/* Types SPIR-V cannot express, caught before the translator sees them: it exits the process
 * on an integer of odd width (LLVM's optimisers can create i65 and similar). Such a module is
 * a compiler bug, reported as an error. */
#include "compile.h"

static int legal_int_width(LLVMTypeRef t) {
  while (LLVMGetTypeKind(t) == LLVMVectorTypeKind || LLVMGetTypeKind(t) == LLVMArrayTypeKind)
    t = LLVMGetElementType(t);
  if (LLVMGetTypeKind(t) != LLVMIntegerTypeKind) return 1;
  unsigned w = LLVMGetIntTypeWidth(t);
  return w == 1 || w == 8 || w == 16 || w == 32 || w == 64;
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

kc_status_t kc_check_spirv_types(LLVMModuleRef mod, char **err) {
  for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn)) {
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
