/* NVPTX finaliser, fast math: OpenCL's float32 native_* functions (what kapi's lowering emits
 * under the `afn` and `arcp` fast-math flags) as PTX's approximate instructions, the ones
 * nvcc's --use_fast_math and libdevice's __nv_fast_* use: sqrt/rsqrt/div/lg2/ex2/sin/cos
 * .approx.f32, with .ftz when the kernel flushes denormals. log, exp and their base-10 forms
 * scale lg2/ex2 by a constant; tan is sin/cos; powr is 2^(y lg2 x). fastmath=True also
 * flushes float32 denormals to zero, as numba-cuda's fastmath (NVVM -ftz=1) does.
 */
#include "finalise/nvptx/finalise_nvptx.h"

#include <stdio.h>
#include <string.h>

typedef struct fm_call {
  LLVMModuleRef mod;
  LLVMBuilderRef b;
  LLVMTypeRef f32;
  int ftz;
} fm_call_t;

/* llvm.nvvm.OP.approx[.ftz].f on n float operands. */
static LLVMValueRef approx(fm_call_t *c, const char *op, LLVMValueRef *args, unsigned n) {
  char name[48];
  snprintf(name, sizeof name, "llvm.nvvm.%s.approx%s.f", op, c->ftz ? ".ftz" : "");
  LLVMTypeRef params[2] = {c->f32, c->f32}, ft = LLVMFunctionType(c->f32, params, n, 0);
  LLVMValueRef fn = LLVMGetNamedFunction(c->mod, name);
  if (!fn) {
    fn = LLVMAddFunction(c->mod, name, ft);
    LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                            LLVMCreateEnumAttribute(LLVMGetModuleContext(c->mod),
                                                    LLVMGetEnumAttributeKindForName("readnone", 8),
                                                    0));
  }
  return LLVMBuildCall2(c->b, ft, fn, args, n, "");
}

static LLVMValueRef approx1(fm_call_t *c, const char *op, LLVMValueRef x) {
  return approx(c, op, &x, 1);
}

static LLVMValueRef scaled(fm_call_t *c, LLVMValueRef x, double k) {
  return LLVMBuildFMul(c->b, x, LLVMConstReal(c->f32, k), "");
}

LLVMValueRef kc_nvptx_native_math(LLVMModuleRef mod, LLVMBuilderRef b, const char *name,
                                  LLVMValueRef *args, unsigned nargs, int ftz) {
  LLVMTypeRef f32 = LLVMFloatTypeInContext(LLVMGetModuleContext(mod));
  for (unsigned i = 0; i < nargs; ++i)
    if (LLVMTypeOf(args[i]) != f32) return NULL;
  fm_call_t c = {mod, b, f32, ftz};
  LLVMValueRef x = nargs ? args[0] : NULL;
  if (nargs == 1) {
    if (!strcmp(name, "sqrt") || !strcmp(name, "rsqrt") || !strcmp(name, "sin") ||
        !strcmp(name, "cos"))
      return approx1(&c, name, x);
    if (!strcmp(name, "log2")) return approx1(&c, "lg2", x);
    if (!strcmp(name, "log")) return scaled(&c, approx1(&c, "lg2", x), 0.693147180559945309);
    if (!strcmp(name, "log10")) return scaled(&c, approx1(&c, "lg2", x), 0.301029995663981195);
    if (!strcmp(name, "exp2")) return approx1(&c, "ex2", x);
    if (!strcmp(name, "exp")) return approx1(&c, "ex2", scaled(&c, x, 1.44269504088896341));
    if (!strcmp(name, "exp10")) return approx1(&c, "ex2", scaled(&c, x, 3.32192809488736235));
    if (!strcmp(name, "recip")) {
      LLVMValueRef q[2] = {LLVMConstReal(f32, 1.0), x};
      return approx(&c, "div", q, 2);
    }
    if (!strcmp(name, "tan")) {
      LLVMValueRef q[2] = {approx1(&c, "sin", x), approx1(&c, "cos", x)};
      return approx(&c, "div", q, 2);
    }
  } else if (nargs == 2) {
    if (!strcmp(name, "divide")) return approx(&c, "div", args, 2);
    if (!strcmp(name, "powr"))
      return approx1(&c, "ex2", LLVMBuildFMul(b, args[1], approx1(&c, "lg2", x), ""));
  }
  return NULL;
}

#define DENORMAL_ATTR "denormal-fp-math-f32"
#define PRESERVE_SIGN "preserve-sign,preserve-sign"

void kc_nvptx_flush_denormals(LLVMModuleRef mod) {
  LLVMContextRef ctx = LLVMGetModuleContext(mod);
  for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f))
    if (LLVMCountBasicBlocks(f))
      LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
                              LLVMCreateStringAttribute(ctx, DENORMAL_ATTR,
                                                        sizeof DENORMAL_ATTR - 1, PRESERVE_SIGN,
                                                        sizeof PRESERVE_SIGN - 1));
  LLVMValueRef one = LLVMConstInt(LLVMInt32TypeInContext(ctx), 1, 0);
  LLVMAddModuleFlag(mod, LLVMModuleFlagBehaviorOverride, "nvvm-reflect-ftz", 16,
                    LLVMValueAsMetadata(one));
}

int kc_nvptx_flushes_denormals(LLVMValueRef fn) {
  return fn && LLVMGetStringAttributeAtIndex(fn, LLVMAttributeFunctionIndex, DENORMAL_ATTR,
                                             sizeof DENORMAL_ATTR - 1) != NULL;
}
