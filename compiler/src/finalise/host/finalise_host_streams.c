/* Host finaliser: streaming entries. A kernel that writes some of its global arrays without
 * ever reading them, each work-item storing outside any loop (an elementwise kernel such as
 * the triad `a[i] = b[i] + s * c[i]`), gets a second entry, NAME.kapi.stream: the same code
 * with those stores, where the vectorisers made vector stores of them, as streaming stores (as
 * store_nontemporal's: no read of each line before it is written; 16 bytes of traffic an
 * element of the triad become 12). The CPU driver launches
 * it in the kernel's place when the launch writes more than the caches would keep
 * (kc_host_kernel_t.streaming_bytes times the work-items; cpu_launch.c): below that, plain stores
 * leave the output in the caches for whatever reads it next.
 *
 * Only kernels whose body is short (not what the loop scheme interleaves as long floating-point
 * work): black-scholes, whose outputs are written between long chains of math, ran at half its
 * speed with streaming stores on a Zen 4, in cache and out of it.
 *
 * The analysis runs on the kernel as read back, before it is inlined: a global pointer
 * parameter qualifies when every use of it, through address arithmetic and casts, is the
 * address of a plain store (a load, a call, a phi or a comparison of it disqualifies it). A
 * module with atomics, fences or store_nontemporal gets no streaming entries: their ordering is
 * the SFENCE scheme's (finalise_host_nontemporal.c), which these entries need not: nothing in
 * them releases, and the pool's threads fence after their last work-group. The qualifying
 * stores carry an alias scope of their own through optimisation (as store_nontemporal's do, so
 * that the vectorisers widen them), which the copy turns into the non-temporal mark.
 */
#include "finalise/finalise_clone.h"
#include "finalise/host/finalise_host.h"

#include <stdlib.h>
#include <string.h>

enum { MAX_STORES = 256, MAX_DEPTH = 16 };

/* KAPI_HOST_STREAMS=0: no streaming entries (read at each build; part of the disk cache's key
 * as every KAPI_HOST_ setting is). */
int kc_hf_streams_on(void) {
  const char *v = getenv("KAPI_HOST_STREAMS");
  return !(v && !strcmp(v, "0"));
}

/* The alias scope that marks a candidate store (uniqued: the same node each time). */
static LLVMMetadataRef candidate_scope(LLVMContextRef c) {
  return kc_hf_alias_scope(c, "kapi.stream", "kapi.stream.stores");
}

/* The scope list that find_in gives candidate stores. */
static LLVMValueRef candidate(LLVMContextRef c) {
  LLVMMetadataRef scope = candidate_scope(c);
  return LLVMMetadataAsValue(c, LLVMMDNodeInContext2(c, &scope, 1));
}

static int is_atomic(LLVMValueRef i) {
  if (LLVMIsAFenceInst(i) || LLVMIsAAtomicRMWInst(i) || LLVMIsAAtomicCmpXchgInst(i)) return 1;
  return (LLVMIsALoadInst(i) || LLVMIsAStoreInst(i)) &&
         (LLVMGetOrdering(i) != LLVMAtomicOrderingNotAtomic || LLVMGetVolatile(i));
}

/* 1 when the module orders memory itself (atomics, fences) or already has streaming stores
 * (store_nontemporal's, marked with alias scopes): no streaming entries then. */
static int orders_memory(LLVMModuleRef m) {
  unsigned scopes = kc_hf_scope_kind(LLVMGetModuleContext(m));
  for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
      for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i))
        if (is_atomic(i) || (LLVMIsAStoreInst(i) && LLVMGetMetadata(i, scopes))) return 1;
  return 0;
}

typedef struct {
  LLVMValueRef stores[MAX_STORES];
  unsigned n;
} stores_t;

/* 1 when every use of the pointer v is, through GEPs and casts, the address of a plain store
 * (collected into s); 0 at anything else. */
static int only_stored_to(LLVMValueRef v, stores_t *s, int depth) {
  if (depth > MAX_DEPTH) return 0;
  for (LLVMUseRef u = LLVMGetFirstUse(v); u; u = LLVMGetNextUse(u)) {
    LLVMValueRef user = LLVMGetUser(u);
    if (LLVMIsAStoreInst(user)) {
      if (LLVMGetOperand(user, 1) != v || LLVMGetOperand(user, 0) == v) return 0; /* escapes */
      if (s->n == MAX_STORES) return 0;
      s->stores[s->n++] = user;
    } else if (LLVMIsAGetElementPtrInst(user) || LLVMIsABitCastInst(user) ||
               LLVMIsAAddrSpaceCastInst(user)) {
      if (LLVMGetOperand(user, 0) != v || !only_stored_to(user, s, depth + 1)) return 0;
    } else {
      return 0;
    }
  }
  return 1;
}

/* The bytes a work-item of kernel f stores to the arrays it only writes, their stores marked;
 * 0 (nothing marked) when there are none or one of them is in a loop. */
static uint32_t find_in(LLVMValueRef f, LLVMTargetDataRef td) {
  stores_t s = {.n = 0};
  for (unsigned p = 0, np = LLVMCountParams(f); p < np; p++) {
    LLVMValueRef arg = LLVMGetParam(f, p);
    LLVMTypeRef t = LLVMTypeOf(arg);
    if (LLVMGetTypeKind(t) != LLVMPointerTypeKind || LLVMGetPointerAddressSpace(t) != 1) continue;
    unsigned before = s.n;
    if (!only_stored_to(arg, &s, 0)) s.n = before; /* this array is read too (or escapes) */
  }
  uint64_t bytes = 0;
  for (unsigned k = 0; k < s.n; k++) {
    if (kc_hf_block_in_cycle(LLVMGetInstructionParent(s.stores[k]))) return 0;
    bytes += LLVMStoreSizeOfType(td, LLVMTypeOf(LLVMGetOperand(s.stores[k], 0)));
  }
  if (!bytes || bytes > UINT32_MAX) return 0;
  LLVMContextRef c = LLVMGetModuleContext(LLVMGetGlobalParent(f));
  LLVMValueRef mark = candidate(c);
  for (unsigned k = 0; k < s.n; k++)
    LLVMSetMetadata(s.stores[k], kc_hf_scope_kind(c), mark);
  return (uint32_t)bytes;
}

void kc_hf_find_streams(LLVMModuleRef m, kc_hf_kernel_t *ks, uint32_t n) {
  if (!kc_hf_streams_on() || orders_memory(m)) return;
  LLVMTargetDataRef td = LLVMGetModuleDataLayout(m);
  for (uint32_t i = 0; i < n; i++)
    if (ks[i].scheme == KC_HF_LOOP && !kc_hf_heavy_body(ks[i].kernel))
      ks[i].stream_bytes = find_in(ks[i].kernel, td);
}

/* Marked stores of f: the vector ones made non-temporal (to_nt), the rest left plain, their
 * marks dropped; returns how many vector stores were made non-temporal. Only vector stores:
 * the vectorisers made them of neighbouring work-items' elements, so they write whole lines; a
 * scalar one may be a scatter (`out[perm[i]] = v`), whose streaming stores would each write a
 * part of a line to memory, or the vector loop's last few elements. */
static unsigned convert(LLVMValueRef f, int to_nt) {
  LLVMContextRef c = LLVMGetModuleContext(LLVMGetGlobalParent(f));
  LLVMValueRef scope = LLVMMetadataAsValue(c, candidate_scope(c)), rest[KC_HF_MAX_SCOPES];
  unsigned kind = kc_hf_scope_kind(c), n = 0, nrest;
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
    for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i)) {
      if (!LLVMIsAStoreInst(i) || !kc_hf_has_scope(i, scope, rest, &nrest)) continue;
      int vector = LLVMGetTypeKind(LLVMTypeOf(LLVMGetOperand(i, 0))) == LLVMVectorTypeKind;
      if (to_nt && vector) {
        kc_hf_mark_store_nontemporal(i); /* (its list replaced: less alias information, late) */
        n++;
      } else {
        LLVMSetMetadata(i, kind, nrest ? LLVMMDNodeInContext(c, rest, nrest) : NULL);
      }
    }
  return n;
}

unsigned kc_hf_make_streams(LLVMModuleRef m, kc_hf_kernel_t *ks, uint32_t n) {
  unsigned made = 0;
  for (uint32_t i = 0; i < n; i++) {
    kc_hf_kernel_t *k = &ks[i];
    if (!k->stream_bytes) continue;
    char *name = kc_msg("%s.kapi.stream", k->name);
    LLVMValueRef copy = name ? kc_clone_function(k->run, name) : NULL;
    free(name);
    if (!copy || !convert(copy, 1)) { /* (nothing vectorised: nothing to stream) */
      if (copy) LLVMDeleteFunction(copy);
      k->stream_bytes = 0;
      continue;
    }
    made++;
  }
  for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
    convert(f, 0); /* the kernels' own runs, and any mark left elsewhere */
  return made;
}
