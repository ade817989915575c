/* Which kernel arguments LLVM's loop vectoriser may version a work-item loop on. Its loop
 * access analysis takes any loop-invariant value that multiplies the induction variable in an
 * address (a "symbolic stride") and gives the loop a vector version for that value being 1,
 * and a scalar one for every other value. `data[i, k]` of a C-contiguous array, with `i` the
 * work-item, has its row's extent as that stride, which is 1 only for one-column arrays, so a
 * pairwise distance ran scalar on every launch. An extent or a scalar argument is therefore
 * handed to the kernel multiplied by an opaque 1 (an empty inline assembly block): a product of
 * two unknowns is no symbolic stride, so such a loop vectorises with gathers, as Intel's OpenCL
 * runtime does. A layout-A array's strides (kapi's parameters `NAME.strideN`) keep the
 * versioning: a view's innermost stride is mostly 1, where the versioned loop's plain vector
 * loads beat gathers. The option behind it is process-wide, and the CUDA finaliser needs it
 * (compiler/src/optimise.c), so this is per argument, on the host only. */
#include "finalise/host/finalise_host.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

int kc_hf_version_all_strides(void) {
  const char *v = getenv("KAPI_HOST_VERSION_STRIDES");
  return v && *v && strcmp(v, "0") != 0;
}

/* 1 when `name` (a kernel parameter's) is kapi's name for an array's stride: "a.stride1". */
static int names_a_stride(const char *name) {
  const char *s = name ? strrchr(name, '.') : NULL;
  if (!s || strncmp(s, ".stride", 7) != 0 || !s[7]) return 0;
  for (s += 7; *s; s++)
    if (!isdigit((unsigned char)*s)) return 0;
  return 1;
}

static void add_attribute(LLVMValueRef call, LLVMAttributeIndex at, const char *name) {
  LLVMContextRef c = LLVMGetTypeContext(LLVMTypeOf(call));
  unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
  LLVMAddCallSiteAttribute(call, at, LLVMCreateEnumAttribute(c, kind, 0));
}

static LLVMValueRef opaque_one(LLVMBuilderRef b, LLVMTypeRef t) {
  LLVMTypeRef fty = LLVMFunctionType(t, &t, 1, 0);
  /* "=r,0": the result is the operand's register, which the block leaves as it is */
  LLVMValueRef asm_ = LLVMGetInlineAsm(fty, "", 0, "=r,0", 4, 0, 0, LLVMInlineAsmDialectATT, 0);
  LLVMValueRef one = LLVMConstInt(t, 1, 0);
  LLVMValueRef call = LLVMBuildCall2(b, fty, asm_, &one, 1, "kapi.one");
  add_attribute(call, LLVMAttributeFunctionIndex, "readnone");
  add_attribute(call, LLVMAttributeFunctionIndex, "nounwind");
  add_attribute(call, LLVMAttributeFunctionIndex, "willreturn");
  add_attribute(call, LLVMAttributeReturnIndex, "noundef");
  return call;
}

int kc_hf_arg_unversioned(LLVMValueRef param) {
  LLVMTypeRef t = LLVMTypeOf(param);
  if (LLVMGetTypeKind(t) != LLVMIntegerTypeKind || LLVMGetIntTypeWidth(t) < 8) return 0;
  return !kc_hf_version_all_strides() && !names_a_stride(LLVMGetValueName(param));
}

/* v is the argument's load. Both factors are marked as never undef or poison (the driver copied
 * the argument's bytes): otherwise loop unswitching freezes the product where it branches on
 * it, InstCombine then hands every use the frozen value, and a `freeze` is again a symbolic
 * stride (a rowsum's `for k in range(a.shape[1])` guard did that). */
LLVMValueRef kc_hf_times_opaque_one(LLVMBuilderRef b, LLVMValueRef v) {
  LLVMContextRef c = LLVMGetTypeContext(LLVMTypeOf(v));
  LLVMSetMetadata(v, LLVMGetMDKindIDInContext(c, "noundef", 7), LLVMMDNodeInContext(c, NULL, 0));
  return LLVMBuildMul(b, v, opaque_one(b, LLVMTypeOf(v)), "");
}
