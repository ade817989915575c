/* NVPTX finaliser, kernel side: which functions are kernels, how the driver passes their
 * arguments, and the !nvvm.annotations that make them PTX entries. Local-memory arguments are
 * rebased on one dynamic shared-memory block, since CUDA has no per-argument shared memory.
 */
#include "finalise/nvptx/finalise_nvptx.h"

#include <llvm-c/Target.h>
#include <stdlib.h>
#include <string.h>

#define SPIR_KERNEL_CC 76
#define SPIR_LOCAL_AS 3
#define DYNAMIC_LOCAL_NAME "__kapi_dynamic_local"

void kc_nvptx_kernel_list_free(kc_nvptx_kernel_list_t *list) {
  for (uint32_t i = 0; i < list->count; ++i) {
    free((char *)list->items[i].name);
    free((kc_host_arg_t *)list->items[i].args);
    free((char *)list->items[i].coarse_name);
    free((char *)list->items[i].aligned_name);
  }
  free(list->items);
  list->items = NULL;
  list->count = 0;
}

/* The one block every local argument points into; its size is set at launch. */
static LLVMValueRef dynamic_local(LLVMModuleRef mod) {
  LLVMValueRef g = LLVMGetNamedGlobal(mod, DYNAMIC_LOCAL_NAME);
  if (g) return g;
  LLVMContextRef ctx = LLVMGetModuleContext(mod);
  LLVMTypeRef t = LLVMArrayType(LLVMInt8TypeInContext(ctx), 0);
  g = LLVMAddGlobalInAddressSpace(mod, t, DYNAMIC_LOCAL_NAME, SPIR_LOCAL_AS);
  LLVMSetLinkage(g, LLVMExternalLinkage);
  LLVMSetAlignment(g, 16);
  return g;
}

/* param (a local pointer) now carries a byte offset: uses see dynamic_local + offset. */
static void rebase_local_arg(LLVMModuleRef mod, LLVMValueRef fn, LLVMValueRef param) {
  LLVMContextRef ctx = LLVMGetModuleContext(mod);
  LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
  LLVMBasicBlockRef entry = LLVMGetEntryBasicBlock(fn);
  LLVMPositionBuilderBefore(b, LLVMGetFirstInstruction(entry));
  LLVMTypeRef i64 = LLVMInt64TypeInContext(ctx);
  LLVMValueRef off = LLVMBuildPtrToInt(b, param, i64, "local.off");
  /* The CUDA driver lays local buffers out 16-byte aligned (cuda_module.c): saying so lets
   * the backend prove row alignment and use vector shared loads. */
  LLVMValueRef aligned = LLVMBuildAnd(b, off, LLVMConstInt(i64, (unsigned long long)-16, 1), "");
  LLVMValueRef base = dynamic_local(mod);
  LLVMValueRef idx[2] = {LLVMConstInt(i64, 0, 0), aligned};
  LLVMValueRef p = LLVMBuildInBoundsGEP2(b, LLVMGlobalGetValueType(base), base, idx, 2, "local");
  LLVMValueRef typed = LLVMBuildBitCast(b, p, LLVMTypeOf(param), "local.arg");
  LLVMReplaceAllUsesWith(param, typed);
  LLVMSetOperand(off, 0, param);
  LLVMDisposeBuilder(b);
}

static uint32_t byval_size(LLVMValueRef fn, unsigned i, LLVMTargetDataRef td) {
  unsigned kind = LLVMGetEnumAttributeKindForName("byval", 5);
  LLVMAttributeRef a = LLVMGetEnumAttributeAtIndex(fn, i + 1, kind);
  if (!a) return 0;
  LLVMTypeRef t = LLVMGetTypeAttributeValue(a);
  return t ? (uint32_t)LLVMABISizeOfType(td, t) : 0;
}

static kc_status_t describe_args(LLVMModuleRef mod, LLVMValueRef fn, kc_nvptx_kernel_t *k,
                                 char **log) {
  LLVMTargetDataRef td = LLVMGetModuleDataLayout(mod);
  unsigned n = LLVMCountParams(fn);
  kc_host_arg_t *args = calloc(n ? n : 1, sizeof *args);
  if (!args) return KC_ERR_OUT_OF_MEMORY;
  for (unsigned i = 0; i < n; ++i) {
    LLVMValueRef p = LLVMGetParam(fn, i);
    LLVMTypeRef t = LLVMTypeOf(p);
    uint32_t bv = byval_size(fn, i, td);
    if (LLVMGetTypeKind(t) == LLVMPointerTypeKind &&
        LLVMGetPointerAddressSpace(t) == SPIR_LOCAL_AS) {
      args[i].kind = KC_ARG_LOCAL;
      args[i].size = 0;
      rebase_local_arg(mod, fn, p);
    } else if (bv) {
      *log = kc_msg("kernel '%s': argument %u is a struct passed by value, which the NVIDIA "
                    "driver does not support",
                    k->name, i);
      free(args);
      return KC_ERR_UNSUPPORTED;
    } else {
      args[i].kind = KC_ARG_VALUE;
      args[i].size = (uint32_t)LLVMABISizeOfType(td, t);
    }
  }
  k->num_args = n;
  k->args = args;
  return KC_OK;
}

/* reqd_work_group_size survives the SPIR-V round trip as function metadata. */
static void read_required_size(LLVMValueRef fn, uint32_t out[3]) {
  unsigned want = LLVMGetMDKindIDInContext(LLVMGetModuleContext(LLVMGetGlobalParent(fn)),
                                           "reqd_work_group_size", 20);
  size_t n = 0;
  LLVMValueMetadataEntry *md = LLVMGlobalCopyAllMetadata(fn, &n);
  for (size_t i = 0; i < n; ++i) {
    if (LLVMValueMetadataEntriesGetKind(md, (unsigned)i) != want) continue;
    LLVMContextRef ctx = LLVMGetModuleContext(LLVMGetGlobalParent(fn));
    LLVMValueRef node =
        LLVMMetadataAsValue(ctx, LLVMValueMetadataEntriesGetMetadata(md, (unsigned)i));
    unsigned ops = LLVMGetMDNodeNumOperands(node);
    LLVMValueRef v[3] = {0};
    if (ops == 3) LLVMGetMDNodeOperands(node, v);
    for (int d = 0; d < 3 && ops == 3; ++d)
      if (v[d] && LLVMIsAConstantInt(v[d])) out[d] = (uint32_t)LLVMConstIntGetZExtValue(v[d]);
  }
  if (md) LLVMDisposeValueMetadataEntries(md);
}

void kc_nvptx_annotate_kernel(LLVMModuleRef mod, LLVMValueRef fn) {
  LLVMContextRef ctx = LLVMGetModuleContext(mod);
  LLVMValueRef ops[3] = {fn, LLVMMDStringInContext(ctx, "kernel", 6),
                         LLVMConstInt(LLVMInt32TypeInContext(ctx), 1, 0)};
  LLVMAddNamedMetadataOperand(mod, "nvvm.annotations", LLVMMDNodeInContext(ctx, ops, 3));
}

/* !{fn, !"maxnreg", i32 n}: LLVM prints it as `.maxnreg n`, which ptxas obeys for that entry
 * (spilling to local memory what does not fit). */
static void annotate_maxnreg(LLVMModuleRef mod, LLVMValueRef fn, int n) {
  LLVMContextRef ctx = LLVMGetModuleContext(mod);
  LLVMValueRef ops[3] = {fn, LLVMMDStringInContext(ctx, "maxnreg", 7),
                         LLVMConstInt(LLVMInt32TypeInContext(ctx), (unsigned)n, 0)};
  LLVMAddNamedMetadataOperand(mod, "nvvm.annotations", LLVMMDNodeInContext(ctx, ops, 3));
}

void kc_nvptx_cap_registers(LLVMModuleRef mod, const kc_nvptx_kernel_list_t *ks, int n) {
  if (n <= 0) return;
  for (uint32_t i = 0; i < ks->count; ++i) {
    LLVMValueRef fn = LLVMGetNamedFunction(mod, ks->items[i].name);
    if (fn) annotate_maxnreg(mod, fn, n);
    const char *coarse = ks->items[i].coarse_name;
    if (coarse && (fn = LLVMGetNamedFunction(mod, coarse))) annotate_maxnreg(mod, fn, n);
    const char *aligned = ks->items[i].aligned_name;
    if (aligned && (fn = LLVMGetNamedFunction(mod, aligned))) annotate_maxnreg(mod, fn, n);
  }
}

/* Kernel calls (rare) and every other call use the C convention on NVPTX. */
static void reset_calling_conventions(LLVMModuleRef mod) {
  for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f)) {
    LLVMSetFunctionCallConv(f, 0);
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
      for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i))
        if (LLVMIsACallInst(i)) LLVMSetInstructionCallConv(i, 0);
  }
}

/* A kernel keeps its name in PTX, where identifiers are [A-Za-z_$][A-Za-z0-9_$]*; LLVM's
 * NVPTX printer aborts on anything else. */
static int ptx_identifier(const char *s) {
  if (!*s || (*s >= '0' && *s <= '9')) return 0;
  for (; *s; ++s)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
          *s == '_' || *s == '$'))
      return 0;
  return 1;
}

static kc_status_t add_kernel(LLVMModuleRef mod, LLVMValueRef fn, kc_nvptx_kernel_list_t *out,
                              char **log) {
  kc_nvptx_kernel_t *items = realloc(out->items, (out->count + 1) * sizeof *items);
  if (!items) return KC_ERR_OUT_OF_MEMORY;
  out->items = items;
  kc_nvptx_kernel_t *k = &items[out->count];
  memset(k, 0, sizeof *k);
  size_t len;
  const char *name = LLVMGetValueName2(fn, &len);
  if (!ptx_identifier(name)) {
    *log = kc_msg("kernel name '%s' is not a valid PTX identifier", name);
    return KC_ERR_UNSUPPORTED;
  }
  k->name = strdup(name);
  if (!k->name) return KC_ERR_OUT_OF_MEMORY;
  out->count++;
  read_required_size(fn, k->required_local_size);
  kc_status_t st = describe_args(mod, fn, k, log);
  if (st == KC_OK) kc_nvptx_annotate_kernel(mod, fn);
  return st;
}

kc_status_t kc_nvptx_prepare_kernels(LLVMModuleRef mod, kc_nvptx_kernel_list_t *out, char **log) {
  for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f)) {
    if (LLVMGetFunctionCallConv(f) != SPIR_KERNEL_CC || LLVMIsDeclaration(f)) continue;
    kc_status_t st = add_kernel(mod, f, out, log);
    if (st != KC_OK) return st;
  }
  if (out->count == 0) {
    *log = kc_msg("the SPIR-V module has no kernel");
    return KC_ERR_SPIRV;
  }
  reset_calling_conventions(mod);
  return KC_OK;
}
