/* NVPTX finaliser, coarsening: kernels whose work-items never meet (no groups, barriers, local
 * memory, atomics or private arrays; ids only through the global id and size) get a second
 * entry in which each thread runs a few consecutive work-items along x. One element per thread
 * tops out near 3.5 TB/s on an H200 while 16-byte accesses reach the copy's 4.3 TB/s
 * (TOOLCHAIN.md), so the work-item loop is marked parallel and handed to LLVM's vectoriser:
 * work-items of one launch that touch the same plain memory location, one of them writing, are
 * a data race and undefined, so no alias check between iterations is needed.
 */
#include "finalise/nvptx/finalise_nvptx.h"

#include <llvm-c/DebugInfo.h>
#include <llvm-c/Target.h>
#include <stdlib.h>
#include <string.h>

#define AS_GLOBAL 1
#define AS_LOCAL 3
#define ACCESS_BYTES 16 /* the widest PTX load: ld.global.v4.b32 */
#define MAX_ARGS 64     /* coarse_aligned is a 64-bit mask */

/* What a kernel's body shows: whether coarsening is allowed, and what it needs. */
typedef struct coarse_scan {
  int ok;
  LLVMValueRef gid;   /* the GlobalInvocationId builtin, whose dimension 0 is replaced */
  LLVMValueRef gsize; /* the GlobalSize builtin, if used */
  int uses_gid0;
  unsigned widest; /* bytes of the widest global load or store */
} coarse_scan_t;

static unsigned md_kind(LLVMContextRef ctx, const char *name) {
  return LLVMGetMDKindIDInContext(ctx, name, (unsigned)strlen(name));
}

static unsigned attr_kind(const char *name) {
  return LLVMGetEnumAttributeKindForName(name, strlen(name));
}

static int is_ptr_in(LLVMTypeRef t, unsigned as) {
  return LLVMGetTypeKind(t) == LLVMPointerTypeKind && LLVMGetPointerAddressSpace(t) == as;
}

static int const_dim(LLVMValueRef call, unsigned long long *dim) {
  if (LLVMGetNumArgOperands(call) != 1) return 0;
  LLVMValueRef d = LLVMGetOperand(call, 0);
  if (!LLVMIsAConstantInt(d)) return 0;
  *dim = LLVMConstIntGetZExtValue(d);
  return 1;
}

/* Builtins a coarsened work-item may call: ids along the global range, math, float tests. */
static int allowed_call(LLVMValueRef call, coarse_scan_t *s) {
  LLVMValueRef callee = LLVMGetCalledValue(call);
  if (!LLVMIsAFunction(callee) || !LLVMIsDeclaration(callee)) return 0; /* inlined by now */
  size_t n;
  const char *name = LLVMGetValueName2(callee, &n);
  if (!strncmp(name, "llvm.", 5)) return 1;
  char base[128];
  if (!kc_nvptx_spirv_name(name, base, sizeof base)) return 0;
  unsigned long long dim;
  if (!strcmp(base, "BuiltInGlobalInvocationId")) {
    if (!const_dim(call, &dim)) return 0;
    s->gid = callee;
    s->uses_gid0 |= dim == 0;
    return 1;
  }
  if (!strcmp(base, "BuiltInGlobalSize")) {
    s->gsize = callee;
    return const_dim(call, &dim);
  }
  if (!strcmp(base, "BuiltInGlobalOffset") || !strncmp(base, "ocl_", 4)) return 1;
  static const char *const tests[] = {"IsNan",      "IsInf",   "IsFinite",
                                      "SignBitSet", "Ordered", "Unordered"};
  for (size_t i = 0; i < sizeof tests / sizeof tests[0]; ++i)
    if (!strcmp(base, tests[i])) return 1;
  return 0;
}

static unsigned access_bytes(LLVMModuleRef mod, LLVMValueRef inst) {
  LLVMTypeRef t = LLVMIsALoadInst(inst) ? LLVMTypeOf(inst) : LLVMTypeOf(LLVMGetOperand(inst, 0));
  return (unsigned)LLVMABISizeOfType(LLVMGetModuleDataLayout(mod), t);
}

static int allowed_inst(LLVMModuleRef mod, LLVMValueRef inst, coarse_scan_t *s) {
  switch (LLVMGetInstructionOpcode(inst)) {
  case LLVMAlloca: /* one frame would serve every work-item of the thread */
  case LLVMAtomicRMW:
  case LLVMAtomicCmpXchg:
  case LLVMFence:
    return 0;
  case LLVMLoad:
  case LLVMStore:
    if (LLVMGetOrdering(inst) != LLVMAtomicOrderingNotAtomic) return 0;
    unsigned bytes = access_bytes(mod, inst);
    if (bytes > s->widest) s->widest = bytes;
    break;
  case LLVMCall:
    if (!allowed_call(inst, s)) return 0;
    break;
  default:
    break;
  }
  if (is_ptr_in(LLVMTypeOf(inst), AS_LOCAL)) return 0;
  for (int i = 0, n = LLVMGetNumOperands(inst); i < n; ++i)
    if (is_ptr_in(LLVMTypeOf(LLVMGetOperand(inst, i)), AS_LOCAL)) return 0;
  return 1;
}

static coarse_scan_t scan(LLVMModuleRef mod, LLVMValueRef fn, const kc_nvptx_kernel_t *k) {
  coarse_scan_t s = {0};
  if (k->num_args >= MAX_ARGS || LLVMGetFirstUse(fn)) return s;
  for (uint32_t i = 0; i < k->num_args; ++i)
    if (k->args[i].kind != KC_ARG_VALUE) return s;
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb))
    for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i))
      if (!allowed_inst(mod, i, &s)) return s;
  s.ok = s.uses_gid0 && s.widest > 0 && s.widest <= ACCESS_BYTES;
  return s;
}

/* Consecutive work-items per thread: as many elements of the widest access as fill 16 bytes,
 * at least 2 (a wider type gets two accesses) and at most 4 (narrow types would need more
 * registers than they save). */
static uint32_t factor_for(unsigned widest) {
  uint32_t f = ACCESS_BYTES / widest;
  return f < 2 ? 2 : f > 4 ? 4 : f;
}

static LLVMMetadataRef hint(LLVMContextRef ctx, const char *name, LLVMValueRef value) {
  LLVMMetadataRef ops[2] = {LLVMMDStringInContext2(ctx, name, strlen(name)), NULL};
  if (value) ops[1] = LLVMValueAsMetadata(value);
  return LLVMMDNodeInContext2(ctx, ops, value ? 2 : 1);
}

/* A loop id: a node whose first operand is itself (LLVM makes a self-referencing node
 * distinct), then the hints. */
static LLVMMetadataRef loop_id(LLVMContextRef ctx, LLVMMetadataRef *hints, size_t n) {
  LLVMMetadataRef ops[4];
  ops[0] = LLVMTemporaryMDNode(ctx, NULL, 0);
  memcpy(ops + 1, hints, n * sizeof *hints);
  LLVMMetadataRef id = LLVMMDNodeInContext2(ctx, ops, n + 1);
  LLVMMetadataReplaceAllUsesWith(ops[0], id); /* frees the temporary */
  return id;
}

static LLVMMetadataRef vector_loop_id(LLVMContextRef ctx, uint32_t factor) {
  LLVMValueRef yes = LLVMConstInt(LLVMInt1TypeInContext(ctx), 1, 0);
  LLVMValueRef width = LLVMConstInt(LLVMInt32TypeInContext(ctx), factor, 0);
  /* Without unroll.disable the loop is fully unrolled before the vectoriser sees it. */
  LLVMMetadataRef hints[3] = {hint(ctx, "llvm.loop.vectorize.enable", yes),
                              hint(ctx, "llvm.loop.vectorize.width", width),
                              hint(ctx, "llvm.loop.unroll.disable", NULL)};
  return loop_id(ctx, hints, 3);
}

static LLVMMetadataRef tail_loop_id(LLVMContextRef ctx) {
  LLVMValueRef no = LLVMConstInt(LLVMInt1TypeInContext(ctx), 0, 0);
  LLVMMetadataRef hints[2] = {hint(ctx, "llvm.loop.vectorize.enable", no),
                              hint(ctx, "llvm.loop.unroll.disable", NULL)};
  return loop_id(ctx, hints, 2);
}

static LLVMValueRef add_like(LLVMModuleRef mod, LLVMValueRef fn, const char *suffix,
                             LLVMTypeRef *extra, unsigned nextra) {
  unsigned n = LLVMCountParams(fn);
  LLVMTypeRef *ps = malloc((n + nextra) * sizeof *ps);
  if (!ps) return NULL;
  LLVMTypeRef fty = LLVMGlobalGetValueType(fn);
  LLVMGetParamTypes(fty, ps);
  memcpy(ps + n, extra, nextra * sizeof *extra);
  LLVMTypeRef ty =
      LLVMFunctionType(LLVMVoidTypeInContext(LLVMGetModuleContext(mod)), ps, n + nextra, 0);
  free(ps);
  size_t len;
  const char *name = LLVMGetValueName2(fn, &len);
  char *full = kc_msg("%s%s", name, suffix);
  if (!full) return NULL;
  LLVMValueRef f = LLVMAddFunction(mod, full, ty);
  free(full);
  return f;
}

/* The kernel's body moves into NAME__kapi_wi(args..., gid0, gsize0), where the builtins for
 * dimension 0 read the two new parameters, and its memory accesses are marked parallel in
 * the coarse entry's vector loop. */
static LLVMValueRef make_work_item(LLVMModuleRef mod, LLVMValueRef fn, LLVMMetadataRef vloop) {
  LLVMContextRef ctx = LLVMGetModuleContext(mod);
  LLVMTypeRef i64 = LLVMInt64TypeInContext(ctx);
  LLVMTypeRef extra[2] = {i64, i64};
  LLVMValueRef wi = add_like(mod, fn, "__kapi_wi", extra, 2);
  if (!wi) return NULL;
  LLVMSetLinkage(wi, LLVMInternalLinkage);
  LLVMAddAttributeAtIndex(wi, LLVMAttributeFunctionIndex,
                          LLVMCreateEnumAttribute(ctx, attr_kind("alwaysinline"), 0));
  LLVMBasicBlockRef bb;
  while ((bb = LLVMGetFirstBasicBlock(fn))) {
    LLVMRemoveBasicBlockFromParent(bb);
    LLVMAppendExistingBasicBlock(wi, bb);
  }
  unsigned n = LLVMCountParams(fn);
  for (unsigned i = 0; i < n; ++i)
    LLVMReplaceAllUsesWith(LLVMGetParam(fn, i), LLVMGetParam(wi, i));
  unsigned parallel = md_kind(ctx, "llvm.mem.parallel_loop_access");
  LLVMValueRef loop = LLVMMetadataAsValue(ctx, vloop);
  LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
  for (bb = LLVMGetFirstBasicBlock(wi); bb; bb = LLVMGetNextBasicBlock(bb)) {
    LLVMValueRef i = LLVMGetFirstInstruction(bb);
    while (i) {
      LLVMValueRef next = LLVMGetNextInstruction(i);
      if (LLVMIsALoadInst(i) || LLVMIsAStoreInst(i)) LLVMSetMetadata(i, parallel, loop);
      char base[64];
      size_t len;
      unsigned long long dim;
      LLVMValueRef callee = LLVMIsACallInst(i) ? LLVMGetCalledValue(i) : NULL;
      if (callee && LLVMIsAFunction(callee) &&
          kc_nvptx_spirv_name(LLVMGetValueName2(callee, &len), base, sizeof base) &&
          const_dim(i, &dim) && dim == 0) {
        LLVMValueRef with = NULL;
        if (!strcmp(base, "BuiltInGlobalInvocationId")) with = LLVMGetParam(wi, n);
        if (!strcmp(base, "BuiltInGlobalSize")) with = LLVMGetParam(wi, n + 1);
        if (with) {
          LLVMPositionBuilderBefore(b, i);
          LLVMReplaceAllUsesWith(
              i, LLVMBuildZExtOrBitCast(b, LLVMBuildTrunc(b, with, LLVMTypeOf(i), ""),
                                        LLVMTypeOf(i), ""));
          LLVMInstructionEraseFromParent(i);
        }
      }
      i = next;
    }
  }
  LLVMDisposeBuilder(b);
  return wi;
}

/* builtin(0) as i64, or undef when the kernel never calls that builtin (its value is unused). */
static LLVMValueRef call_builtin(LLVMBuilderRef b, LLVMValueRef builtin, LLVMTypeRef i64) {
  if (!builtin) return LLVMGetUndef(i64);
  LLVMTypeRef fty = LLVMGlobalGetValueType(builtin), dim_type;
  LLVMGetParamTypes(fty, &dim_type);
  LLVMValueRef zero = LLVMConstInt(dim_type, 0, 0);
  LLVMValueRef v = LLVMBuildCall2(b, fty, builtin, &zero, 1, "");
  return LLVMBuildZExtOrBitCast(b, v, i64, "");
}

/* wi(entry's first n arguments, gid, gsize); 0 when out of memory. */
static LLVMValueRef call_work_item(LLVMBuilderRef b, LLVMValueRef entry, LLVMValueRef wi,
                                   unsigned n, LLVMValueRef gid, LLVMValueRef gsize) {
  LLVMValueRef *args = malloc((n + 2) * sizeof *args);
  if (!args) return NULL;
  for (unsigned i = 0; i < n; ++i)
    args[i] = LLVMGetParam(entry, i);
  args[n] = gid;
  args[n + 1] = gsize;
  LLVMValueRef call = LLVMBuildCall2(b, LLVMGlobalGetValueType(wi), wi, args, n + 2, "");
  free(args);
  return call;
}

/* The kernel itself now only calls its work-item with the real id and size. */
static int refill_kernel(LLVMBuilderRef b, LLVMValueRef fn, LLVMValueRef wi,
                         const coarse_scan_t *s) {
  LLVMContextRef ctx = LLVMGetTypeContext(LLVMTypeOf(fn));
  LLVMTypeRef i64 = LLVMInt64TypeInContext(ctx);
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, fn, "entry"));
  LLVMValueRef gid = call_builtin(b, s->gid, i64), gsize = call_builtin(b, s->gsize, i64);
  if (!call_work_item(b, fn, wi, LLVMCountParams(fn), gid, gsize)) return 0;
  LLVMBuildRetVoid(b);
  return 1;
}

static void set_loop(LLVMValueRef latch_branch, LLVMMetadataRef id) {
  LLVMContextRef ctx = LLVMGetTypeContext(LLVMTypeOf(latch_branch));
  LLVMSetMetadata(latch_branch, md_kind(ctx, "llvm.loop"), LLVMMetadataAsValue(ctx, id));
}

/* NAME__kapi_coarse(args..., size_x): thread t runs work-items t*F .. t*F+F-1 below size_x;
 * a full set goes through the vector loop, the last partial one through a scalar loop. Every
 * global pointer argument is declared 16-byte aligned (the driver checks before choosing this
 * entry), which is what lets the vector accesses be single PTX instructions. */
static LLVMValueRef make_coarse(LLVMModuleRef mod, LLVMValueRef fn, LLVMValueRef wi,
                                const coarse_scan_t *s, uint32_t factor, LLVMMetadataRef vloop,
                                uint64_t *aligned) {
  LLVMContextRef ctx = LLVMGetModuleContext(mod);
  LLVMTypeRef i64 = LLVMInt64TypeInContext(ctx);
  LLVMValueRef cf = add_like(mod, fn, "__kapi_coarse", &i64, 1);
  if (!cf) return NULL;
  unsigned n = LLVMCountParams(fn);
  *aligned = 0;
  for (unsigned i = 0; i < n; ++i)
    if (is_ptr_in(LLVMTypeOf(LLVMGetParam(cf, i)), AS_GLOBAL)) {
      LLVMAddAttributeAtIndex(cf, i + 1,
                              LLVMCreateEnumAttribute(ctx, attr_kind("align"), ACCESS_BYTES));
      *aligned |= 1ull << i;
    }
  LLVMValueRef size = LLVMGetParam(cf, n);
  LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(ctx, cf, "entry");
  LLVMBasicBlockRef vec = LLVMAppendBasicBlockInContext(ctx, cf, "vector");
  LLVMBasicBlockRef tail = LLVMAppendBasicBlockInContext(ctx, cf, "tail");
  LLVMBasicBlockRef tbody = LLVMAppendBasicBlockInContext(ctx, cf, "tail.body");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(ctx, cf, "done");
  LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
  LLVMPositionBuilderAtEnd(b, entry);
  LLVMValueRef f = LLVMConstInt(i64, factor, 0), one = LLVMConstInt(i64, 1, 0);
  LLVMValueRef first = LLVMBuildNUWMul(b, call_builtin(b, s->gid, i64), f, "first");
  LLVMValueRef end = LLVMBuildNUWAdd(b, first, f, "end");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntULE, end, size, ""), vec, tail);

  /* The vector loop counts from first to end, not from 0 to the factor: with a constant start
   * SimplifyCFG threads the first iteration off a two-iteration loop before the vectoriser
   * runs. */
  LLVMPositionBuilderAtEnd(b, vec);
  LLVMValueRef k = LLVMBuildPhi(b, i64, "k");
  LLVMValueRef ok = call_work_item(b, cf, wi, n, k, size);
  LLVMValueRef k1 = LLVMBuildNUWAdd(b, k, one, "");
  set_loop(LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntULT, k1, end, ""), vec, done), vloop);
  LLVMValueRef kin[2] = {first, k1};
  LLVMBasicBlockRef kfrom[2] = {entry, vec};
  LLVMAddIncoming(k, kin, kfrom, 2);

  LLVMPositionBuilderAtEnd(b, tail);
  LLVMValueRef w = LLVMBuildPhi(b, i64, "w");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntULT, w, size, ""), tbody, done);
  LLVMPositionBuilderAtEnd(b, tbody);
  ok = ok ? call_work_item(b, cf, wi, n, w, size) : NULL;
  LLVMValueRef w1 = LLVMBuildNUWAdd(b, w, one, "");
  set_loop(LLVMBuildBr(b, tail), tail_loop_id(ctx));
  LLVMValueRef win[2] = {first, w1};
  LLVMBasicBlockRef wfrom[2] = {entry, tbody};
  LLVMAddIncoming(w, win, wfrom, 2);

  LLVMPositionBuilderAtEnd(b, done);
  LLVMBuildRetVoid(b);
  LLVMDisposeBuilder(b);
  if (!ok) {
    LLVMDeleteFunction(cf);
    return NULL;
  }
  return cf;
}

static kc_status_t coarsen_kernel(LLVMModuleRef mod, LLVMValueRef fn, kc_nvptx_kernel_t *k) {
  coarse_scan_t s = scan(mod, fn, k);
  if (!s.ok) return KC_OK;
  LLVMContextRef ctx = LLVMGetModuleContext(mod);
  uint32_t factor = factor_for(s.widest);
  LLVMMetadataRef vloop = vector_loop_id(ctx, factor);
  LLVMValueRef wi = make_work_item(mod, fn, vloop);
  if (!wi) return KC_ERR_OUT_OF_MEMORY;
  LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
  int ok = refill_kernel(b, fn, wi, &s);
  LLVMDisposeBuilder(b);
  if (!ok) return KC_ERR_OUT_OF_MEMORY;
  uint64_t aligned;
  LLVMValueRef cf = make_coarse(mod, fn, wi, &s, factor, vloop, &aligned);
  size_t len;
  k->coarse_name = cf ? strdup(LLVMGetValueName2(cf, &len)) : NULL;
  if (!k->coarse_name) {
    if (cf) LLVMDeleteFunction(cf);
    return KC_ERR_OUT_OF_MEMORY;
  }
  k->coarse_factor = factor;
  k->coarse_aligned = aligned;
  return KC_OK;
}

kc_status_t kc_nvptx_coarsen(LLVMModuleRef mod, kc_nvptx_kernel_list_t *ks) {
  for (uint32_t i = 0; i < ks->count; ++i) {
    LLVMValueRef fn = LLVMGetNamedFunction(mod, ks->items[i].name);
    kc_status_t st = fn ? coarsen_kernel(mod, fn, &ks->items[i]) : KC_OK;
    if (st != KC_OK) return st;
  }
  return KC_OK;
}

/* The vectoriser widened some global access to at least 8 bytes with the alignment to match. */
static int widened(LLVMValueRef fn) {
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb))
    for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i)) {
      if (!LLVMIsALoadInst(i) && !LLVMIsAStoreInst(i)) continue;
      LLVMValueRef v = LLVMIsALoadInst(i) ? i : LLVMGetOperand(i, 0);
      if (LLVMGetTypeKind(LLVMTypeOf(v)) == LLVMVectorTypeKind && LLVMGetAlignment(i) >= 8)
        return 1;
    }
  return 0;
}

void kc_nvptx_coarsen_finish(LLVMModuleRef mod, kc_nvptx_kernel_list_t *ks) {
  for (uint32_t i = 0; i < ks->count; ++i) {
    kc_nvptx_kernel_t *k = &ks->items[i];
    if (!k->coarse_name) continue;
    LLVMValueRef cf = LLVMGetNamedFunction(mod, k->coarse_name);
    if (cf && widened(cf)) {
      kc_nvptx_annotate_kernel(mod, cf);
      continue;
    }
    if (cf) LLVMDeleteFunction(cf); /* no wider than the kernel itself: not worth a launch */
    free((char *)k->coarse_name);
    k->coarse_name = NULL;
    k->coarse_factor = 0;
    k->coarse_aligned = 0;
  }
}
