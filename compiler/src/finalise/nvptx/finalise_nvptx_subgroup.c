/* NVPTX finaliser, sub-groups: a sub-group is a warp, 32 consecutive work-items in the
 * hardware's linear order (x fastest). The last warp of a group whose size is not a multiple
 * of 32 is partial, so every warp-synchronous instruction names the lanes that exist (the
 * member mask), and SubgroupSize is that warp's real size, unless the kernel requires a
 * work-group size of whole warps (both are then constants). Shuffles (SPV_INTEL_subgroups)
 * become shfl.sync; 64-bit values move as two 32-bit halves.
 */
#include "finalise/nvptx/finalise_nvptx.h"

#include <string.h>

static LLVMValueRef sreg(LLVMModuleRef mod, LLVMBuilderRef b, const char *name) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  LLVMContextRef ctx = LLVMGetModuleContext(mod);
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(mod, id, NULL, 0);
  return LLVMBuildCall2(b, LLVMIntrinsicGetType(ctx, id, NULL, 0), fn, NULL, 0, "");
}

/* Whether every warp of mod's kernel is whole: the kernel requires a work-group size
 * (reqd_work_group_size, which the runtime enforces at launch) whose items are a multiple of
 * 32. Its warp-synchronous instructions then name all 32 lanes (a constant mask), where a
 * computed mask made ptxas check for divergence at each of them (MATCH, REDUX, VOTE and a
 * branch on sm_90). A module holds one kernel; its functions run only within it. */
static int whole_warps(LLVMModuleRef mod) {
  LLVMContextRef ctx = LLVMGetModuleContext(mod);
  unsigned want = LLVMGetMDKindIDInContext(ctx, "reqd_work_group_size", 20);
  for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f)) {
    if (LLVMIsDeclaration(f)) continue;
    size_t n = 0;
    LLVMValueMetadataEntry *md = LLVMGlobalCopyAllMetadata(f, &n);
    uint64_t items = 0;
    for (size_t i = 0; i < n && !items; ++i) {
      if (LLVMValueMetadataEntriesGetKind(md, (unsigned)i) != want) continue;
      LLVMValueRef node =
          LLVMMetadataAsValue(ctx, LLVMValueMetadataEntriesGetMetadata(md, (unsigned)i));
      LLVMValueRef v[3] = {0};
      if (LLVMGetMDNodeNumOperands(node) != 3) continue;
      LLVMGetMDNodeOperands(node, v);
      items = 1;
      for (int d = 0; d < 3; d++)
        items *= v[d] && LLVMIsAConstantInt(v[d]) ? LLVMConstIntGetZExtValue(v[d]) : 0;
    }
    if (md) LLVMDisposeValueMetadataEntries(md);
    if (items) return items % 32 == 0;
  }
  return 0;
}

LLVMValueRef kc_nvptx_sub_group_size(LLVMModuleRef mod, LLVMBuilderRef b) {
  LLVMTypeRef i32 = LLVMInt32TypeInContext(LLVMGetModuleContext(mod));
  if (whole_warps(mod)) return LLVMConstInt(i32, 32, 0);
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
  if (whole_warps(mod)) return LLVMConstInt(i32, 0xffffffffu, 0);
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

/* shfl.sync of a 32- or 64-bit value (64-bit ones as two halves); NULL for another width. */
static LLVMValueRef shfl_value(LLVMModuleRef mod, LLVMBuilderRef b, const char *mode,
                               LLVMValueRef mask, LLVMValueRef v, LLVMValueRef n) {
  LLVMContextRef ctx = LLVMGetModuleContext(mod);
  LLVMTypeRef t = LLVMTypeOf(v), i32 = LLVMInt32TypeInContext(ctx);
  LLVMTypeRef i64 = LLVMInt64TypeInContext(ctx);
  LLVMTypeKind tk = LLVMGetTypeKind(t);
  unsigned bits = tk == LLVMDoubleTypeKind    ? 64
                  : tk == LLVMFloatTypeKind   ? 32
                  : tk == LLVMIntegerTypeKind ? LLVMGetIntTypeWidth(t)
                                              : 0;
  if ((bits != 32 && bits != 64) || LLVMTypeOf(n) != i32) return NULL;
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
  return shfl_value(mod, b, mode, kc_nvptx_sub_group_mask(mod, b), v, n);
}

/* ---- OpGroup* over a warp ----------------------------------------------------------------- */

enum { SCOPE_SUBGROUP = 3, OP_REDUCE = 0, OP_INCLUSIVE = 1, OP_EXCLUSIVE = 2 };

typedef struct group_op {
  char kind;  /* I, F, S, U */
  int is_add; /* else min or max */
  int is_min;
} group_op_t;

static int parse_op(const char *k, group_op_t *op) {
  if (!*k || !strchr("IFSU", k[0])) return 0;
  op->kind = k[0];
  op->is_add = !strcmp(k + 1, "Add") && (k[0] == 'I' || k[0] == 'F');
  op->is_min = !strcmp(k + 1, "Min");
  return op->is_add || op->is_min || (!strcmp(k + 1, "Max") && k[0] != 'I');
}

static LLVMValueRef combine(LLVMBuilderRef b, const group_op_t *op, LLVMValueRef x,
                            LLVMValueRef y) {
  if (op->is_add) return op->kind == 'F' ? LLVMBuildFAdd(b, x, y, "") : LLVMBuildAdd(b, x, y, "");
  LLVMValueRef lt = op->kind == 'F'
                        ? LLVMBuildFCmp(b, op->is_min ? LLVMRealOLT : LLVMRealOGT, x, y, "")
                        : LLVMBuildICmp(b,
                                        op->kind == 'S' ? (op->is_min ? LLVMIntSLT : LLVMIntSGT)
                                                        : (op->is_min ? LLVMIntULT : LLVMIntUGT),
                                        x, y, "");
  return LLVMBuildSelect(b, lt, x, y, "");
}

static LLVMValueRef identity(const group_op_t *op, LLVMTypeRef t) {
  if (op->is_add) return LLVMConstNull(t);
  if (op->kind == 'F') return LLVMConstReal(t, op->is_min ? __builtin_inf() : -__builtin_inf());
  unsigned bits = LLVMGetIntTypeWidth(t);
  unsigned long long all = bits >= 64 ? ~0ull : (1ull << bits) - 1, sign = 1ull << (bits - 1);
  if (op->kind == 'S') return LLVMConstInt(t, op->is_min ? sign - 1 : sign, 0);
  return LLVMConstInt(t, op->is_min ? all : 0, 0);
}

/* redux.sync for 32-bit integer reductions (sm_80+). */
static LLVMValueRef redux(LLVMModuleRef mod, LLVMBuilderRef b, const group_op_t *op, LLVMValueRef x,
                          LLVMValueRef mask) {
  const char *name = op->is_add ? "llvm.nvvm.redux.sync.add"
                     : op->kind == 'S'
                         ? (op->is_min ? "llvm.nvvm.redux.sync.min" : "llvm.nvvm.redux.sync.max")
                         : (op->is_min ? "llvm.nvvm.redux.sync.umin" : "llvm.nvvm.redux.sync.umax");
  LLVMContextRef ctx = LLVMGetModuleContext(mod);
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(mod, id, NULL, 0);
  LLVMValueRef args[2] = {x, mask};
  return LLVMBuildCall2(b, LLVMIntrinsicGetType(ctx, id, NULL, 0), fn, args, 2, "");
}

/* Inclusive scan over the warp: five shfl.up steps, each lane adding in the lane step below. */
static LLVMValueRef warp_scan(LLVMModuleRef mod, LLVMBuilderRef b, const group_op_t *op,
                              LLVMValueRef x, LLVMValueRef lane, LLVMValueRef mask) {
  LLVMTypeRef i32 = LLVMInt32TypeInContext(LLVMGetModuleContext(mod));
  for (unsigned step = 1; step < 32; step <<= 1) {
    LLVMValueRef d = LLVMConstInt(i32, step, 0);
    LLVMValueRef below = shfl_value(mod, b, "up", mask, x, d);
    LLVMValueRef take = LLVMBuildICmp(b, LLVMIntUGE, lane, d, "");
    x = LLVMBuildSelect(b, take, combine(b, op, below, x), x, "");
  }
  return x;
}

static LLVMValueRef vote(LLVMModuleRef mod, LLVMBuilderRef b, int all, LLVMValueRef p) {
  const char *name = all ? "llvm.nvvm.vote.all.sync" : "llvm.nvvm.vote.any.sync";
  LLVMContextRef ctx = LLVMGetModuleContext(mod);
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(mod, id, NULL, 0);
  LLVMValueRef args[2] = {kc_nvptx_sub_group_mask(mod, b), p};
  return LLVMBuildCall2(b, LLVMIntrinsicGetType(ctx, id, NULL, 0), fn, args, 2, "");
}

LLVMValueRef kc_nvptx_group(LLVMModuleRef mod, LLVMBuilderRef b, const char *kind,
                            LLVMValueRef *args, unsigned nargs) {
  if (nargs < 2 || !LLVMIsAConstantInt(args[0]) ||
      LLVMConstIntGetZExtValue(args[0]) != SCOPE_SUBGROUP)
    return NULL; /* work-group collectives arrive as local memory and barriers */
  LLVMTypeRef i1 = LLVMInt1TypeInContext(LLVMGetModuleContext(mod));
  if ((!strcmp(kind, "Any") || !strcmp(kind, "All")) && nargs == 2 && LLVMTypeOf(args[1]) == i1)
    return vote(mod, b, kind[1] == 'l', args[1]);
  group_op_t op;
  if (nargs != 3 || !parse_op(kind, &op) || !LLVMIsAConstantInt(args[1])) return NULL;
  unsigned long long what = LLVMConstIntGetZExtValue(args[1]);
  LLVMValueRef x = args[2];
  LLVMTypeRef t = LLVMTypeOf(x), i32 = LLVMInt32TypeInContext(LLVMGetModuleContext(mod));
  int is_int = LLVMGetTypeKind(t) == LLVMIntegerTypeKind;
  if (what > OP_EXCLUSIVE || (is_int != (op.kind != 'F'))) return NULL;
  if (!is_int && LLVMGetTypeKind(t) != LLVMFloatTypeKind &&
      LLVMGetTypeKind(t) != LLVMDoubleTypeKind)
    return NULL;
  LLVMValueRef mask = kc_nvptx_sub_group_mask(mod, b);
  if (what == OP_REDUCE && t == i32) return redux(mod, b, &op, x, mask);
  LLVMValueRef lane = sreg(mod, b, "llvm.nvvm.read.ptx.sreg.laneid");
  LLVMValueRef incl = warp_scan(mod, b, &op, x, lane, mask);
  if (what == OP_INCLUSIVE) return incl;
  if (what == OP_EXCLUSIVE) {
    LLVMValueRef below = shfl_value(mod, b, "up", mask, incl, LLVMConstInt(i32, 1, 0));
    LLVMValueRef first = LLVMBuildICmp(b, LLVMIntEQ, lane, LLVMConstInt(i32, 0, 0), "");
    return LLVMBuildSelect(b, first, identity(&op, t), below, "");
  }
  LLVMValueRef last = LLVMBuildSub(b, kc_nvptx_sub_group_size(mod, b), LLVMConstInt(i32, 1, 0), "");
  return shfl_value(mod, b, "idx", mask, incl, last);
}
