/* NVPTX finaliser, printf: an OpenCL printf call (`__spirv_ocl_printf(fmt, args...)`) becomes
 * CUDA's `vprintf(fmt, argbuf)`: the arguments packed into a local buffer, each in an 8-byte
 * slot (kapi's print passes only 64-bit integers, doubles and string pointers), pointers made
 * generic. The CUDA driver prints the device's buffer at the next synchronisation.
 */
#include "finalise/nvptx/finalise_nvptx.h"

#include <stdlib.h>

static LLVMValueRef declare_vprintf(LLVMModuleRef mod, LLVMTypeRef *fty) {
  LLVMContextRef ctx = LLVMGetModuleContext(mod);
  LLVMTypeRef p8 = LLVMPointerType(LLVMInt8TypeInContext(ctx), 0);
  LLVMTypeRef params[2] = {p8, p8};
  *fty = LLVMFunctionType(LLVMInt32TypeInContext(ctx), params, 2, 0);
  LLVMValueRef fn = LLVMGetNamedFunction(mod, "vprintf");
  return fn ? fn : LLVMAddFunction(mod, "vprintf", *fty);
}

/* A generic i8* for a pointer of any address space. */
static LLVMValueRef generic(LLVMBuilderRef b, LLVMValueRef p, LLVMTypeRef p8) {
  LLVMTypeRef t = LLVMTypeOf(p);
  if (LLVMGetPointerAddressSpace(t) != 0) {
    LLVMTypeRef same = LLVMPointerType(LLVMGetElementType(t), 0);
    p = LLVMBuildAddrSpaceCast(b, p, same, "");
  }
  return LLVMBuildBitCast(b, p, p8, "");
}

/* The argument buffer: n 8-byte slots, allocated at the top of the function. */
static LLVMValueRef arg_buffer(LLVMBuilderRef b, LLVMValueRef call, unsigned n) {
  LLVMContextRef ctx = LLVMGetTypeContext(LLVMTypeOf(call));
  LLVMBasicBlockRef here = LLVMGetInsertBlock(b);
  LLVMValueRef fn = LLVMGetBasicBlockParent(here);
  LLVMBasicBlockRef entry = LLVMGetEntryBasicBlock(fn);
  LLVMBuilderRef top = LLVMCreateBuilderInContext(ctx);
  LLVMPositionBuilderBefore(top, LLVMGetFirstInstruction(entry));
  LLVMValueRef buf =
      LLVMBuildAlloca(top, LLVMArrayType(LLVMInt64TypeInContext(ctx), n), "kapi.printf.args");
  LLVMSetAlignment(buf, 8);
  LLVMDisposeBuilder(top);
  return buf;
}

LLVMValueRef kc_nvptx_lower_printf(LLVMModuleRef mod, LLVMBuilderRef b, LLVMValueRef call,
                                   char **log) {
  LLVMContextRef ctx = LLVMGetModuleContext(mod);
  LLVMTypeRef i64 = LLVMInt64TypeInContext(ctx),
              p8 = LLVMPointerType(LLVMInt8TypeInContext(ctx), 0);
  unsigned nargs = (unsigned)LLVMGetNumArgOperands(call);
  if (nargs < 1 || LLVMGetTypeKind(LLVMTypeOf(LLVMGetOperand(call, 0))) != LLVMPointerTypeKind) {
    *log = kc_msg("printf without a format string");
    return NULL;
  }
  LLVMValueRef argv[2] = {generic(b, LLVMGetOperand(call, 0), p8), LLVMConstNull(p8)};
  if (nargs > 1) {
    LLVMValueRef buf = arg_buffer(b, call, nargs - 1);
    for (unsigned k = 1; k < nargs; k++) {
      LLVMValueRef v = LLVMGetOperand(call, k);
      LLVMTypeRef t = LLVMTypeOf(v);
      if (LLVMGetTypeKind(t) == LLVMPointerTypeKind) v = generic(b, v, p8), t = p8;
      LLVMTypeKind kind = LLVMGetTypeKind(t);
      if (kind != LLVMPointerTypeKind && kind != LLVMDoubleTypeKind &&
          !(kind == LLVMIntegerTypeKind && LLVMGetIntTypeWidth(t) == 64)) {
        *log = kc_msg("printf argument %u is not a 64-bit integer, a double or a string", k);
        return NULL;
      }
      LLVMValueRef idx[2] = {LLVMConstInt(i64, 0, 0), LLVMConstInt(i64, k - 1, 0)};
      LLVMValueRef slot = LLVMBuildInBoundsGEP2(b, LLVMGetAllocatedType(buf), buf, idx, 2, "");
      LLVMValueRef st = LLVMBuildStore(b, v, LLVMBuildBitCast(b, slot, LLVMPointerType(t, 0), ""));
      LLVMSetAlignment(st, 8);
    }
    argv[1] = LLVMBuildBitCast(b, buf, p8, "");
  }
  LLVMTypeRef fty;
  LLVMValueRef fn = declare_vprintf(mod, &fty);
  return LLVMBuildCall2(b, fty, fn, argv, 2, "");
}
