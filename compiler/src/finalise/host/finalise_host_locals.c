/* Host finaliser: module-level `__local` variables (addrspace(3) globals) made per work-group.
 * A global is one object, but work-groups run concurrently on several threads, so each global
 * gets an offset in a per-group buffer that the kernel's run function allocates on its own
 * stack (one buffer per call, so per running group). Every use inside a kernel body is rewritten
 * to `local_base + offset`; constant expressions over the global become instructions first.
 * The globals themselves are left unused for global DCE; one that survives optimisation means a
 * use we could not rewrite, and kc_host_finalise reports it.
 */
#include "finalise/host/finalise_host.h"

#include <stdlib.h>
#include <string.h>

int kc_hf_layout_locals(LLVMModuleRef m, LLVMTargetDataRef td, kc_hf_locals_t *out, char **log) {
  memset(out, 0, sizeof *out);
  uint32_t n = 0;
  for (LLVMValueRef g = LLVMGetFirstGlobal(m); g; g = LLVMGetNextGlobal(g))
    if (LLVMGetPointerAddressSpace(LLVMTypeOf(g)) == 3) n++;
  if (n == 0) return 1;
  out->globals = calloc(n, sizeof *out->globals);
  out->offsets = calloc(n, sizeof *out->offsets);
  if (!out->globals || !out->offsets) return *log = kc_msg("out of memory"), 0;
  uint64_t size = 0;
  for (LLVMValueRef g = LLVMGetFirstGlobal(m); g; g = LLVMGetNextGlobal(g)) {
    if (LLVMGetPointerAddressSpace(LLVMTypeOf(g)) != 3) continue;
    LLVMTypeRef vt = LLVMGlobalGetValueType(g);
    uint64_t align = LLVMABIAlignmentOfType(td, vt);
    if (LLVMGetAlignment(g) > align) align = LLVMGetAlignment(g);
    if (align > 64) {
      *log = kc_msg("__local variable %s asks for alignment %llu (at most 64 supported)",
                    LLVMGetValueName(g), (unsigned long long)align);
      return 0;
    }
    size = (size + align - 1) / align * align;
    out->globals[out->count] = g;
    out->offsets[out->count++] = size;
    size += LLVMABISizeOfType(td, vt);
    LLVMSetLinkage(g, LLVMInternalLinkage);
  }
  out->size = (size + 63) / 64 * 64;
  return 1;
}

void kc_hf_locals_free(kc_hf_locals_t *l) {
  free(l->globals);
  free(l->offsets);
  memset(l, 0, sizeof *l);
}

typedef struct {
  const kc_hf_locals_t *locals;
  LLVMValueRef *ptrs;     /* per global: its pointer in the current body, made on first use */
  LLVMBuilderRef at_base; /* positioned right after local_base is defined */
  LLVMBuilderRef b;       /* positioned before the instruction being rewritten */
  LLVMValueRef base;
  int unsupported;
} rewrite_t;

static int index_of(const kc_hf_locals_t *l, LLVMValueRef v) {
  for (uint32_t i = 0; i < l->count; i++)
    if (l->globals[i] == v) return (int)i;
  return -1;
}

static int refers(const kc_hf_locals_t *l, LLVMValueRef v) {
  if (index_of(l, v) >= 0) return 1;
  if (!LLVMIsAConstantExpr(v)) return 0;
  for (int i = 0; i < LLVMGetNumOperands(v); i++)
    if (refers(l, LLVMGetOperand(v, i))) return 1;
  return 0;
}

static LLVMValueRef global_ptr(rewrite_t *r, int gi) {
  if (r->ptrs[gi]) return r->ptrs[gi];
  LLVMValueRef g = r->locals->globals[gi];
  LLVMContextRef c = LLVMGetModuleContext(LLVMGetGlobalParent(g));
  LLVMValueRef off = LLVMConstInt(LLVMInt64TypeInContext(c), r->locals->offsets[gi], 0);
  LLVMValueRef p = LLVMBuildInBoundsGEP2(r->at_base, LLVMInt8TypeInContext(c), r->base, &off, 1,
                                         LLVMGetValueName(g));
  p = LLVMBuildBitCast(r->at_base, p, LLVMPointerType(LLVMGlobalGetValueType(g), 0), "");
  return r->ptrs[gi] = LLVMBuildAddrSpaceCast(r->at_base, p, LLVMTypeOf(g), "");
}

/* An instruction computing constant expression v with the globals replaced. */
static LLVMValueRef materialise(rewrite_t *r, LLVMValueRef v) {
  int gi = index_of(r->locals, v);
  if (gi >= 0) return global_ptr(r, gi);
  if (!refers(r->locals, v)) return v;
  int n = LLVMGetNumOperands(v);
  LLVMValueRef ops[16];
  if (n > 16) return r->unsupported = 1, v;
  for (int i = 0; i < n; i++)
    ops[i] = materialise(r, LLVMGetOperand(v, i));
  LLVMOpcode op = LLVMGetConstOpcode(v);
  switch (op) {
  case LLVMGetElementPtr: {
    LLVMTypeRef src = LLVMGetGEPSourceElementType(v);
    return LLVMIsInBounds(v) ? LLVMBuildInBoundsGEP2(r->b, src, ops[0], ops + 1, n - 1, "")
                             : LLVMBuildGEP2(r->b, src, ops[0], ops + 1, n - 1, "");
  }
  case LLVMBitCast:
  case LLVMAddrSpaceCast:
  case LLVMPtrToInt:
  case LLVMIntToPtr:
    return LLVMBuildCast(r->b, op, ops[0], LLVMTypeOf(v), "");
  default:
    r->unsupported = 1;
    return v;
  }
}

static void rewrite_inst(rewrite_t *r, LLVMValueRef inst) {
  int phi = LLVMIsAPHINode(inst) != NULL;
  for (int i = 0; i < LLVMGetNumOperands(inst); i++) {
    LLVMValueRef v = LLVMGetOperand(inst, i);
    if (!v || !refers(r->locals, v)) continue;
    if (phi)
      LLVMPositionBuilderBefore(r->b, LLVMGetBasicBlockTerminator(LLVMGetIncomingBlock(inst, i)));
    else
      LLVMPositionBuilderBefore(r->b, inst);
    LLVMSetOperand(inst, i, materialise(r, v));
  }
}

static int rewrite_body(const kc_hf_kernel_t *k, const kc_hf_locals_t *l, char **log) {
  rewrite_t r = {.locals = l, .base = k->local_base};
  r.ptrs = calloc(l->count, sizeof *r.ptrs);
  if (!r.ptrs) return *log = kc_msg("out of memory"), 0;
  LLVMContextRef c = LLVMGetModuleContext(LLVMGetGlobalParent(k->body));
  r.at_base = LLVMCreateBuilderInContext(c);
  r.b = LLVMCreateBuilderInContext(c);
  LLVMBasicBlockRef entry = LLVMGetEntryBasicBlock(k->body);
  if (LLVMIsAInstruction(k->local_base))
    LLVMPositionBuilderBefore(r.at_base, LLVMGetNextInstruction(k->local_base));
  else
    LLVMPositionBuilderBefore(r.at_base, LLVMGetFirstInstruction(entry));
  for (LLVMBasicBlockRef bb = entry; bb; bb = LLVMGetNextBasicBlock(bb))
    for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i))
      rewrite_inst(&r, i);
  LLVMDisposeBuilder(r.at_base);
  LLVMDisposeBuilder(r.b);
  free(r.ptrs);
  if (r.unsupported)
    *log = kc_msg("kernel %s: a __local variable is used in a constant expression the host "
                  "finaliser cannot rewrite",
                  k->name);
  return !r.unsupported;
}

int kc_hf_rewrite_locals(LLVMModuleRef m, const kc_hf_kernel_t *ks, uint32_t n,
                         const kc_hf_locals_t *locals, char **log) {
  (void)m;
  if (locals->count == 0) return 1;
  for (uint32_t i = 0; i < n; i++)
    if (!rewrite_body(&ks[i], locals, log)) return 0;
  return 1;
}
