/* NVPTX finaliser: aligned entries. A kernel's array arguments arrive as bare global pointers
 * whose alignment the kernel cannot know (a view may start at any element), so LLVM's
 * load-store vectoriser, which runs in NVPTX code generation, merges neighbouring accesses
 * only when their alignment follows from the index alone, and a work-item's four consecutive
 * float stores stay four `st.global.f32`. kapi's allocations are 256-byte aligned, so after
 * optimisation each kernel without a coarsened entry gets a copy, NAME__kapi_aligned, whose
 * global pointer arguments are declared 16-byte aligned and whose accesses take the
 * alignment their addresses then show; where some global access is aligned to twice its
 * size (a vector could start there) the vectoriser is tried on it here, and the copy is kept
 * only when it widened some access the kernel itself leaves narrow. The CUDA driver launches it in
 * the kernel's place when every pointer it declares aligned is (cuda_module.c), else the kernel.
 * KAPI_CUDA_ALIGNED=0 (read per finalisation) makes none, to compare.
 */
#include "finalise/finalise_clone.h"
#include "finalise/nvptx/finalise_nvptx.h"

#include <llvm-c/Error.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <stdlib.h>
#include <string.h>

#define AS_GLOBAL 1
#define ALIGN_BYTES 16
#define MAX_ARGS 64 /* aligned_mask is a 64-bit mask */

static unsigned attr_kind(const char *name) {
  return LLVMGetEnumAttributeKindForName(name, strlen(name));
}

static int is_global_ptr(LLVMValueRef v) {
  LLVMTypeRef t = LLVMTypeOf(v);
  return LLVMGetTypeKind(t) == LLVMPointerTypeKind && LLVMGetPointerAddressSpace(t) == AS_GLOBAL;
}

/* Global loads and stores of fn wider than 4 bytes (vectors the vectoriser made). */
static unsigned wide_accesses(LLVMModuleRef mod, LLVMValueRef fn) {
  LLVMTargetDataRef dl = LLVMGetModuleDataLayout(mod);
  unsigned n = 0;
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb))
    for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i)) {
      int load = LLVMIsALoadInst(i) != NULL;
      if (!load && !LLVMIsAStoreInst(i)) continue;
      LLVMValueRef ptr = LLVMGetOperand(i, load ? 0 : 1);
      LLVMTypeRef t = LLVMTypeOf(load ? i : LLVMGetOperand(i, 0));
      if (is_global_ptr(ptr) && LLVMGetTypeKind(t) == LLVMVectorTypeKind &&
          LLVMABISizeOfType(dl, t) > 4)
        ++n;
    }
  return n;
}

/* Every nvvm.annotations entry of fn (kernel, reqntid, maxntid...) for copy too. */
static void copy_annotations(LLVMModuleRef mod, LLVMValueRef fn, LLVMValueRef copy) {
  unsigned n = LLVMGetNamedMetadataNumOperands(mod, "nvvm.annotations");
  if (!n) return;
  LLVMValueRef *nodes = malloc(n * sizeof *nodes);
  if (!nodes) return;
  LLVMGetNamedMetadataOperands(mod, "nvvm.annotations", nodes);
  for (unsigned i = 0; i < n; ++i) {
    unsigned k = LLVMGetMDNodeNumOperands(nodes[i]);
    if (k < 1 || k > 16) continue;
    LLVMValueRef ops[16];
    LLVMGetMDNodeOperands(nodes[i], ops);
    if (ops[0] != fn) continue;
    ops[0] = copy;
    LLVMAddNamedMetadataOperand(mod, "nvvm.annotations",
                                LLVMMDNodeInContext(LLVMGetModuleContext(mod), ops, k));
  }
  free(nodes);
}

static int aligned_enabled(void) {
  const char *env = getenv("KAPI_CUDA_ALIGNED");
  return !(env && !strcmp(env, "0"));
}

static kc_status_t vectorise(LLVMModuleRef mod, LLVMTargetMachineRef tm) {
  LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
  LLVMErrorRef e = LLVMRunPasses(mod, "function(load-store-vectorizer)", tm, po);
  LLVMDisposePassBuilderOptions(po);
  if (!e) return KC_OK;
  LLVMConsumeError(e);
  return KC_ERR_LLVM;
}

kc_status_t kc_nvptx_align_entries(LLVMModuleRef mod, LLVMTargetMachineRef tm,
                                   kc_nvptx_kernel_list_t *ks) {
  if (!aligned_enabled()) return KC_OK;
  LLVMContextRef ctx = LLVMGetModuleContext(mod);
  int any = 0;
  for (uint32_t i = 0; i < ks->count; ++i) {
    kc_nvptx_kernel_t *k = &ks->items[i];
    LLVMValueRef fn = LLVMGetNamedFunction(mod, k->name);
    if (!fn || k->coarse_name || LLVMCountParams(fn) >= MAX_ARGS) continue;
    uint64_t mask = 0;
    for (unsigned a = 0, n = LLVMCountParams(fn); a < n; ++a)
      if (is_global_ptr(LLVMGetParam(fn, a))) mask |= 1ull << a;
    if (!mask) continue;
    char *name = kc_msg("%s__kapi_aligned", k->name);
    if (!name) return KC_ERR_OUT_OF_MEMORY;
    LLVMValueRef copy = kc_clone_function(fn, name);
    free(name);
    for (unsigned a = 0, n = LLVMCountParams(copy); a < n; ++a)
      if (mask >> a & 1)
        LLVMAddAttributeAtIndex(copy, a + 1,
                                LLVMCreateEnumAttribute(ctx, attr_kind("align"), ALIGN_BYTES));
    size_t len;
    if (!kc_nvptx_raise_alignments(copy, ALIGN_BYTES)) { /* no vector could start */
      LLVMDeleteFunction(copy);
      continue;
    }
    k->aligned_name = strdup(LLVMGetValueName2(copy, &len));
    if (!k->aligned_name) return KC_ERR_OUT_OF_MEMORY;
    k->aligned_mask = mask;
    any = 1;
  }
  if (!any) return KC_OK;
  /* Code generation would run the vectoriser anyway; running it now shows what it merged. */
  kc_status_t st = vectorise(mod, tm);
  for (uint32_t i = 0; i < ks->count; ++i) {
    kc_nvptx_kernel_t *k = &ks->items[i];
    if (!k->aligned_name) continue;
    LLVMValueRef fn = LLVMGetNamedFunction(mod, k->name);
    LLVMValueRef copy = LLVMGetNamedFunction(mod, k->aligned_name);
    if (st == KC_OK && copy && fn && wide_accesses(mod, copy) > wide_accesses(mod, fn)) {
      copy_annotations(mod, fn, copy);
      continue;
    }
    if (copy) LLVMDeleteFunction(copy);
    free((char *)k->aligned_name);
    k->aligned_name = NULL;
    k->aligned_mask = 0;
  }
  return KC_OK; /* without the vectoriser (it failed) no copy is kept: the kernels still run */
}
