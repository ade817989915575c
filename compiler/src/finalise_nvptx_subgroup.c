/* NVPTX finaliser, sub-groups: a sub-group is a warp, 32 consecutive work-items in the
 * hardware's linear order (x fastest). The last warp of a group whose size is not a multiple
 * of 32 is partial, so every warp-synchronous instruction names the lanes that exist (the
 * member mask), and SubgroupSize is that warp's real size. Shuffles (SPV_INTEL_subgroups)
 * become shfl.sync; 64-bit values move as two 32-bit halves.
 */
#include "finalise_nvptx.h"

#include <string.h>

static LLVMValueRef sreg(LLVMModuleRef mod, LLVMBuilderRef b, const char *name) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  LLVMContextRef ctx = LLVMGetModuleContext(mod);
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(mod, id, NULL, 0);
  return LLVMBuildCall2(b, LLVMIntrinsicGetType(ctx, id, NULL, 0), fn, NULL, 0, "");
}

LLVMValueRef kc_nvptx_sub_group_size(LLVMModuleRef mod, LLVMBuilderRef b) {
  LLVMTypeRef i32 = LLVMInt32TypeInContext(LLVMGetModuleContext(mod));
  const char *const tid[] = {"llvm.nvvm.read.ptx.sreg.tid.x", "llvm.nvvm.read.ptx.sreg.tid.y",
                             "llvm.nvvm.read.ptx.sreg.tid.z"};
  const char *const ntid[] = {"llvm.nvvm.read.ptx.sreg.ntid.x", "llvm.nvvm.read.ptx.sreg.ntid.y",
                              "llvm.nvvm.read.ptx.sreg.ntid.z"};
  LLVMValueRef lin = sreg(mod, b, tid[2]), n = sreg(mod, b, ntid[0]);
  for (int d = 1; d >= 0; d--)
    lin =
        LLVMBuildAdd(b, LLVMBuildMul(b, lin, sreg(mod, b, ntid[d]), ""), sreg(mod, b, tid[d]), "");
  n = LLVMBuildMul(b, LLVMBuildMul(b, n, sreg(mod, b, ntid[1]), ""), sreg(mod, b, ntid[2]), "");
  /* items from this warp's first lane to the group's end, at most 32 */
  LLVMValueRef first = LLVMBuildAnd(b, lin, LLVMConstInt(i32, ~31u, 0), "");
  LLVMValueRef left = LLVMBuildSub(b, n, first, "");
  LLVMValueRef full = LLVMConstInt(i32, 32, 0);
  return LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntULT, left, full, ""), left, full, "sgsize");
}

LLVMValueRef kc_nvptx_sub_group_mask(LLVMModuleRef mod, LLVMBuilderRef b) {
  LLVMTypeRef i32 = LLVMInt32TypeInContext(LLVMGetModuleContext(mod));
  LLVMValueRef size = kc_nvptx_sub_group_size(mod, b);
  LLVMValueRef part = LLVMBuildSub(b, LLVMBuildShl(b, LLVMConstInt(i32, 1, 0), size, ""),
                                   LLVMConstInt(i32, 1, 0), "");
  LLVMValueRef full = LLVMBuildICmp(b, LLVMIntUGE, size, LLVMConstInt(i32, 32, 0), "");
  return LLVMBuildSelect(b, full, LLVMConstInt(i32, 0xffffffffu, 0), part, "sgmask");
}

/* One shfl.sync on a 32-bit integer. */
static LLVMValueRef shfl32(LLVMModuleRef mod, LLVMBuilderRef b, const char *mode, LLVMValueRef mask,
                           LLVMValueRef v, LLVMValueRef n) {
  char name[48];
  strcpy(name, "llvm.nvvm.shfl.sync.");
  strcat(name, mode);
  strcat(name, ".i32");
  LLVMContextRef ctx = LLVMGetModuleContext(mod);
  LLVMTypeRef i32 = LLVMInt32TypeInContext(ctx);
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(mod, id, NULL, 0);
  /* c: up clamps at lane 0 (0), the others at the warp's last lane (31) */
  LLVMValueRef c = LLVMConstInt(i32, strcmp(mode, "up") ? 0x1f : 0, 0);
  LLVMValueRef args[4] = {mask, v, n, c};
  return LLVMBuildCall2(b, LLVMIntrinsicGetType(ctx, id, NULL, 0), fn, args, 4, "");
}

LLVMValueRef kc_nvptx_shuffle(LLVMModuleRef mod, LLVMBuilderRef b, const char *kind,
                              LLVMValueRef *args, unsigned nargs) {
  const char *mode = !strcmp(kind, "INTEL")       ? "idx"
                     : !strcmp(kind, "DownINTEL") ? "down"
                     : !strcmp(kind, "UpINTEL")   ? "up"
                     : !strcmp(kind, "XorINTEL")  ? "bfly"
                                                  : NULL;
  int two = !strcmp(kind, "DownINTEL") || !strcmp(kind, "UpINTEL");
  if (!mode || nargs != (two ? 3u : 2u)) return NULL;
  /* Down reads `current` (operand 0), up reads `current` (operand 1); the other half only
   * matters past the sub-group's end, where SYCL leaves the result unspecified. */
  LLVMValueRef v = args[!strcmp(kind, "UpINTEL") ? 1 : 0], n = args[nargs - 1];
  LLVMContextRef ctx = LLVMGetModuleContext(mod);
  LLVMTypeRef t = LLVMTypeOf(v), i32 = LLVMInt32TypeInContext(ctx);
  LLVMTypeRef i64 = LLVMInt64TypeInContext(ctx);
  unsigned bits = LLVMGetTypeKind(t) == LLVMDoubleTypeKind    ? 64
                  : LLVMGetTypeKind(t) == LLVMFloatTypeKind   ? 32
                  : LLVMGetTypeKind(t) == LLVMIntegerTypeKind ? LLVMGetIntTypeWidth(t)
                                                              : 0;
  if ((bits != 32 && bits != 64) || LLVMTypeOf(n) != i32) return NULL;
  LLVMValueRef mask = kc_nvptx_sub_group_mask(mod, b);
  if (bits == 32) {
    LLVMValueRef w = LLVMBuildBitCast(b, v, i32, "");
    return LLVMBuildBitCast(b, shfl32(mod, b, mode, mask, w, n), t, "");
  }
  LLVMValueRef w = LLVMBuildBitCast(b, v, i64, "");
  LLVMValueRef lo = LLVMBuildTrunc(b, w, i32, "");
  LLVMValueRef hi = LLVMBuildTrunc(b, LLVMBuildLShr(b, w, LLVMConstInt(i64, 32, 0), ""), i32, "");
  lo = LLVMBuildZExt(b, shfl32(mod, b, mode, mask, lo, n), i64, "");
  hi = LLVMBuildZExt(b, shfl32(mod, b, mode, mask, hi, n), i64, "");
  LLVMValueRef r = LLVMBuildOr(b, lo, LLVMBuildShl(b, hi, LLVMConstInt(i64, 32, 0), ""), "");
  return LLVMBuildBitCast(b, r, t, "");
}
