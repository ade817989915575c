/* Host finaliser: non-temporal stores (`store_nontemporal` in kernels, LLVM's !nontemporal,
 * SPIR-V's Nontemporal memory operand), which x86 makes streaming stores (MOVNT*).
 *
 * Ordering. Streaming stores skip the read for ownership but are weakly ordered: a later
 * release store, an ordinary MOV under x86's model, could become visible to another core
 * before them, and even a locked instruction is not documented to order them on every x86
 * CPU. So in a module with any such store, an SFENCE goes before every atomic operation or
 * fence that releases (release, acq_rel, seq_cst), in every function (a device function may
 * release what a kernel stored): a work-item that publishes with release ordering publishes
 * its streaming stores too. The end of a launch is the CPU driver's: each pool thread fences
 * once after its last work-group (cpu_pool.c). Barriers need nothing: a work-group runs on one
 * thread, which sees its own stores in order.
 *
 * Vectorisation. LLVM's loop vectoriser refuses a loop with a non-temporal store the target
 * cannot store as a vector at the store's alignment, and x86 needs the vector's own alignment
 * (MOVNTPS, MOVNTDQ), where a kernel knows its array elements only as element-aligned: every
 * work-item loop with store_nontemporal stayed scalar. So before optimisation the stores lose
 * !nontemporal and carry instead an alias scope of their own (which no access is declared not
 * to alias, so it means nothing to alias analysis, and which the vectorisers carry over to the
 * stores they widen); after vectorisation the marked stores become non-temporal again, and a
 * vector store that may be under-aligned a call of an inlined helper that tests the address:
 * aligned (kapi's allocations are 64-byte aligned), one streaming store; else an ordinary
 * store (a view at an odd offset). Left to LLVM, such a store is split into 8-byte MOVNTIs,
 * each after an extract: sixteen instructions for 64 bytes (a scan of 2^24 float32 on a
 * Zen 4 ran at 0.94x its plain stores' speed with them, 1.08x with aligned ones).
 */
#include "finalise/host/finalise_host.h"

static int releases(LLVMValueRef i) {
  LLVMAtomicOrdering o;
  if (LLVMIsAFenceInst(i) || LLVMIsAAtomicRMWInst(i) || LLVMIsAStoreInst(i))
    o = LLVMGetOrdering(i);
  else if (LLVMIsAAtomicCmpXchgInst(i))
    o = LLVMGetCmpXchgSuccessOrdering(i);
  else
    return 0;
  return o == LLVMAtomicOrderingRelease || o == LLVMAtomicOrderingAcquireRelease ||
         o == LLVMAtomicOrderingSequentiallyConsistent;
}

static unsigned nontemporal_kind(LLVMContextRef c) {
  return LLVMGetMDKindIDInContext(c, "nontemporal", 11);
}

/* The alias scope that marks non-temporal stores through optimisation. */
static LLVMMetadataRef marker(LLVMContextRef c) {
  return kc_hf_alias_scope(c, "kapi.nontemporal", "kapi.nontemporal.stores");
}

static void fence_releases(LLVMModuleRef m) {
  LLVMValueRef sfence = kc_hf_intrinsic(m, "llvm.x86.sse.sfence", NULL, 0);
  LLVMBuilderRef b = LLVMCreateBuilderInContext(LLVMGetModuleContext(m));
  for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
      for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i))
        if (releases(i)) {
          LLVMPositionBuilderBefore(b, i);
          kc_hf_call(b, sfence, NULL, 0);
        }
  LLVMDisposeBuilder(b);
}

void kc_hf_mark_store_nontemporal(LLVMValueRef store) {
  LLVMContextRef c = LLVMGetTypeContext(LLVMTypeOf(store));
  LLVMMetadataRef mark = marker(c);
  /* (our lowering gives stores no scopes of their own to keep) */
  LLVMSetMetadata(store, kc_hf_scope_kind(c),
                  LLVMMetadataAsValue(c, LLVMMDNodeInContext2(c, &mark, 1)));
}

unsigned kc_hf_mark_nontemporal(LLVMModuleRef m) {
  LLVMContextRef c = LLVMGetModuleContext(m);
  unsigned kind = nontemporal_kind(c), n = 0;
  for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
      for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i))
        if (LLVMIsAStoreInst(i) && LLVMGetMetadata(i, kind)) {
          LLVMSetMetadata(i, kind, NULL);
          kc_hf_mark_store_nontemporal(i);
          n++;
        }
  if (n) fence_releases(m);
  return n;
}

enum { NT_MAX_TYPES = 16, NT_MAX_ALIGN = 64 };

typedef struct nt_helper {
  LLVMTypeRef ptr, val, fty;
  unsigned had; /* the stores' alignment */
  LLVMValueRef fn;
} nt_helper_t;

typedef struct nt_helpers {
  LLVMModuleRef m;
  LLVMContextRef ctx;
  unsigned kind; /* "nontemporal" */
  unsigned n;
  nt_helper_t h[NT_MAX_TYPES];
} nt_helpers_t;

static void set_nontemporal(nt_helpers_t *h, LLVMValueRef store) {
  LLVMMetadataRef one = LLVMValueAsMetadata(LLVMConstInt(LLVMInt32TypeInContext(h->ctx), 1, 0));
  LLVMSetMetadata(store, h->kind,
                  LLVMMetadataAsValue(h->ctx, LLVMMDNodeInContext2(h->ctx, &one, 1)));
}

static void build_helper(nt_helpers_t *hs, nt_helper_t *h, unsigned need) {
  LLVMContextRef c = hs->ctx;
  LLVMTypeRef params[2] = {h->ptr, h->val};
  h->fty = LLVMFunctionType(LLVMVoidTypeInContext(c), params, 2, 0);
  h->fn = LLVMAddFunction(hs->m, "kapi.store_nontemporal", h->fty);
  LLVMSetLinkage(h->fn, LLVMInternalLinkage);
  unsigned inl = LLVMGetEnumAttributeKindForName("alwaysinline", 12);
  LLVMAddAttributeAtIndex(h->fn, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(c, inl, 0));
  LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(c, h->fn, "entry");
  LLVMBasicBlockRef nt = LLVMAppendBasicBlockInContext(c, h->fn, "aligned");
  LLVMBasicBlockRef plain = LLVMAppendBasicBlockInContext(c, h->fn, "plain");
  LLVMBuilderRef b = LLVMCreateBuilderInContext(c);
  LLVMValueRef p = LLVMGetParam(h->fn, 0), v = LLVMGetParam(h->fn, 1);
  LLVMTypeRef i64 = LLVMInt64TypeInContext(c);
  LLVMPositionBuilderAtEnd(b, entry);
  LLVMValueRef low =
      LLVMBuildAnd(b, LLVMBuildPtrToInt(b, p, i64, ""), LLVMConstInt(i64, need - 1, 0), "");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntEQ, low, LLVMConstInt(i64, 0, 0), ""), nt, plain);
  LLVMPositionBuilderAtEnd(b, nt);
  LLVMValueRef s = LLVMBuildStore(b, v, p);
  LLVMSetAlignment(s, need);
  set_nontemporal(hs, s);
  LLVMBuildRetVoid(b);
  LLVMPositionBuilderAtEnd(b, plain);
  LLVMSetAlignment(LLVMBuildStore(b, v, p), h->had);
  LLVMBuildRetVoid(b);
  LLVMDisposeBuilder(b);
}

/* The helper for stores of val through ptr at alignment had; NULL when the table is full. */
static nt_helper_t *helper(nt_helpers_t *hs, LLVMTypeRef ptr, LLVMTypeRef val, unsigned had,
                           unsigned need) {
  for (unsigned k = 0; k < hs->n; k++)
    if (hs->h[k].ptr == ptr && hs->h[k].val == val && hs->h[k].had == had) return &hs->h[k];
  if (hs->n == NT_MAX_TYPES) return NULL;
  nt_helper_t *h = &hs->h[hs->n++];
  *h = (nt_helper_t){.ptr = ptr, .val = val, .had = had};
  build_helper(hs, h, need);
  return h;
}

/* The alignment a streaming store of the vector store i needs (its size, at most 64 bytes),
 * or 0 when it has it, or is not a vector of a power-of-two size. */
static unsigned needs_alignment(LLVMValueRef i, LLVMTargetDataRef td) {
  LLVMTypeRef t = LLVMTypeOf(LLVMGetOperand(i, 0));
  if (LLVMGetTypeKind(t) != LLVMVectorTypeKind) return 0;
  unsigned long long size = LLVMStoreSizeOfType(td, t);
  if (size < 16 || (size & (size - 1))) return 0;
  unsigned need = size < NT_MAX_ALIGN ? (unsigned)size : NT_MAX_ALIGN;
  return LLVMGetAlignment(i) < need ? need : 0;
}

/* Store i, marked: non-temporal again, through the helper where it may be under-aligned. */
static int restore(nt_helpers_t *hs, LLVMBuilderRef b, LLVMValueRef i, LLVMTargetDataRef td) {
  LLVMSetMetadata(i, kc_hf_scope_kind(hs->ctx), NULL);
  unsigned need = needs_alignment(i, td);
  nt_helper_t *h = NULL;
  if (need) {
    LLVMValueRef v = LLVMGetOperand(i, 0), p = LLVMGetOperand(i, 1);
    h = helper(hs, LLVMTypeOf(p), LLVMTypeOf(v), LLVMGetAlignment(i), need);
  }
  if (!h) { /* aligned, scalar, or the table full (LLVM's split: correct, slower) */
    set_nontemporal(hs, i);
    return 0;
  }
  LLVMValueRef args[2] = {LLVMGetOperand(i, 1), LLVMGetOperand(i, 0)};
  LLVMPositionBuilderBefore(b, i);
  LLVMBuildCall2(b, h->fty, h->fn, args, 2, "");
  LLVMInstructionEraseFromParent(i);
  return 1;
}

unsigned kc_hf_restore_nontemporal(LLVMModuleRef m) {
  nt_helpers_t hs = {.m = m, .ctx = LLVMGetModuleContext(m)};
  hs.kind = nontemporal_kind(hs.ctx);
  LLVMValueRef mark = LLVMMetadataAsValue(hs.ctx, marker(hs.ctx));
  LLVMTargetDataRef td = LLVMGetModuleDataLayout(m);
  LLVMBuilderRef b = LLVMCreateBuilderInContext(hs.ctx);
  unsigned calls = 0;
  for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f)) {
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
      for (LLVMValueRef i = LLVMGetFirstInstruction(bb), next; i; i = next) {
        next = LLVMGetNextInstruction(i);
        if (LLVMIsAStoreInst(i) && kc_hf_has_scope(i, mark, NULL, NULL))
          calls += restore(&hs, b, i, td);
      }
  }
  LLVMDisposeBuilder(b);
  return calls;
}
