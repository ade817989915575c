/* Host finaliser: the region scheme for kernels with work-group barriers (KC_HF_REGIONS).
 *
 * After the kernel is inlined into `i32 wi(group, x, y, z, state, local, storage)` and its
 * barriers are lowered to calls of __kapi_host_barrier, wi is split at every barrier k into a
 * continuation: the barrier becomes "save the values live after it; return k", and the code
 * after it becomes resume block k, which reloads them. wi's entry block (group fields,
 * arguments, the slot addresses) is re-run by every call, so it switches on `state` to the
 * kernel's start (0) or to resume block k. run (finalise_host_entry.c) then calls wi in one
 * work-item loop per state; once wi is inlined with a constant state, each loop holds one
 * region and vectorises like a barrier-free kernel.
 *
 * What is saved: SSA liveness (backward dataflow, phi uses on their incoming edges) gives the
 * values live right after each barrier. Each such value is demoted to a wi-local alloca (as
 * reg2mem does: store after its definition, load before each use), saved from it at the
 * barrier and restored into it at the resume block; SROA later turns the allocas back into
 * registers, so a value costs one store and one load per barrier it crosses and none inside
 * a region. Its per-work-item slot is `storage + n * offset + lin * size` (one array per
 * value, work-items consecutive, so the region loops read and write it contiguously).
 * Private arrays (allocas) outlive a region too: each gets a slot the same way (its bytes per
 * work-item contiguous), replacing the alloca.
 * storage is this thread's scratch (kc_host_scratch), allocated by run per group.
 */
#include "finalise/host/finalise_host.h"

#include <llvm-c/DebugInfo.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Pointer sets and maps (open addressing; keys are LLVM object pointers) ----------- */

typedef struct {
  void **keys;
  uint32_t *vals;
  size_t cap; /* power of two */
} pmap_t;

static size_t pmap_hash(const void *p, size_t cap) {
  uintptr_t h = (uintptr_t)p;
  h ^= h >> 17;
  h *= (uintptr_t)0x9e3779b97f4a7c15ull;
  return (size_t)(h >> 7) & (cap - 1);
}

static int pmap_init(pmap_t *m, size_t n) {
  m->cap = 16;
  while (m->cap < 2 * n + 2)
    m->cap *= 2;
  m->keys = calloc(m->cap, sizeof *m->keys);
  m->vals = calloc(m->cap, sizeof *m->vals);
  return m->keys && m->vals;
}

static void pmap_free(pmap_t *m) {
  free(m->keys);
  free(m->vals);
}

/* Slot of p: its own, or the empty one where it would go. */
static size_t pmap_slot(const pmap_t *m, const void *p) {
  size_t i = pmap_hash(p, m->cap);
  while (m->keys[i] && m->keys[i] != p)
    i = (i + 1) & (m->cap - 1);
  return i;
}

static void pmap_put(pmap_t *m, void *p, uint32_t v) {
  size_t i = pmap_slot(m, p);
  m->keys[i] = p;
  m->vals[i] = v;
}

/* UINT32_MAX when p is not in the map. */
static uint32_t pmap_get(const pmap_t *m, const void *p) {
  size_t i = pmap_slot(m, p);
  return m->keys[i] ? m->vals[i] : UINT32_MAX;
}

/* ---- Cycles ------------------------------------------------------------------------ */

int kc_hf_block_in_cycle(LLVMBasicBlockRef bb) {
  size_t nb = 0;
  LLVMValueRef fn = LLVMGetBasicBlockParent(bb);
  for (LLVMBasicBlockRef b = LLVMGetFirstBasicBlock(fn); b; b = LLVMGetNextBasicBlock(b))
    nb++;
  pmap_t seen;
  LLVMBasicBlockRef *stack = malloc((nb + 1) * sizeof *stack);
  if (!stack || !pmap_init(&seen, nb)) {
    free(stack), pmap_free(&seen);
    return 1; /* out of memory: the safe answer (fibers) */
  }
  size_t top = 0;
  int found = 0;
  stack[top++] = bb;
  while (top && !found) {
    LLVMValueRef t = LLVMGetBasicBlockTerminator(stack[--top]);
    unsigned ns = t ? LLVMGetNumSuccessors(t) : 0;
    for (unsigned i = 0; i < ns && !found; i++) {
      LLVMBasicBlockRef s = LLVMGetSuccessor(t, i);
      found = s == bb;
      if (!found && pmap_get(&seen, s) == UINT32_MAX) {
        pmap_put(&seen, s, 1);
        stack[top++] = s;
      }
    }
  }
  free(stack);
  pmap_free(&seen);
  return found;
}

/* ---- Liveness -------------------------------------------------------------------------- */

typedef uint64_t word_t;
#define WBITS 64u

typedef struct {
  LLVMValueRef fn;
  LLVMBasicBlockRef entry;
  size_t nb, nv, words; /* blocks, tracked values, words per bitset */
  LLVMBasicBlockRef *blocks;
  LLVMValueRef *vals; /* tracked: non-void instructions outside the entry block */
  pmap_t bidx, vidx;
  word_t *use, *def, *in, *out, *phiout; /* nb bitsets each */
} live_t;

static word_t *row(word_t *set, const live_t *l, size_t b) {
  return set + b * l->words;
}

static void bit_set(word_t *s, uint32_t i) {
  s[i / WBITS] |= (word_t)1 << (i % WBITS);
}

static void bit_clear(word_t *s, uint32_t i) {
  s[i / WBITS] &= ~((word_t)1 << (i % WBITS));
}

static int bit_get(const word_t *s, uint32_t i) {
  return (int)((s[i / WBITS] >> (i % WBITS)) & 1);
}

static uint32_t tracked(const live_t *l, LLVMValueRef v) {
  return LLVMIsAInstruction(v) ? pmap_get(&l->vidx, v) : UINT32_MAX;
}

static void live_free(live_t *l) {
  free(l->blocks);
  free(l->vals);
  pmap_free(&l->bidx);
  pmap_free(&l->vidx);
  free(l->use), free(l->def), free(l->in), free(l->out), free(l->phiout);
}

static int live_index(live_t *l) {
  for (LLVMBasicBlockRef b = l->entry; b; b = LLVMGetNextBasicBlock(b)) {
    l->nb++;
    if (b == l->entry) continue;
    for (LLVMValueRef i = LLVMGetFirstInstruction(b); i; i = LLVMGetNextInstruction(i))
      l->nv += LLVMGetTypeKind(LLVMTypeOf(i)) != LLVMVoidTypeKind;
  }
  l->words = (l->nv + WBITS - 1) / WBITS + 1;
  l->blocks = calloc(l->nb, sizeof *l->blocks);
  l->vals = calloc(l->nv + 1, sizeof *l->vals);
  size_t bits = l->nb * l->words;
  l->use = calloc(bits, sizeof(word_t)), l->def = calloc(bits, sizeof(word_t));
  l->in = calloc(bits, sizeof(word_t)), l->out = calloc(bits, sizeof(word_t));
  l->phiout = calloc(bits, sizeof(word_t));
  if (!pmap_init(&l->bidx, l->nb) || !pmap_init(&l->vidx, l->nv) || !l->blocks || !l->vals ||
      !l->use || !l->def || !l->in || !l->out || !l->phiout)
    return 0;
  size_t nb = 0, nv = 0;
  for (LLVMBasicBlockRef b = l->entry; b; b = LLVMGetNextBasicBlock(b)) {
    pmap_put(&l->bidx, b, (uint32_t)nb);
    l->blocks[nb++] = b;
    if (b == l->entry) continue;
    for (LLVMValueRef i = LLVMGetFirstInstruction(b); i; i = LLVMGetNextInstruction(i))
      if (LLVMGetTypeKind(LLVMTypeOf(i)) != LLVMVoidTypeKind) {
        pmap_put(&l->vidx, i, (uint32_t)nv);
        l->vals[nv++] = i;
      }
  }
  return 1;
}

/* use/def of each block; a phi's operands are used at the end of the incoming block. */
static void live_local(live_t *l) {
  for (size_t bi = 0; bi < l->nb; bi++) {
    word_t *use = row(l->use, l, bi), *def = row(l->def, l, bi);
    for (LLVMValueRef i = LLVMGetFirstInstruction(l->blocks[bi]); i;
         i = LLVMGetNextInstruction(i)) {
      if (LLVMIsAPHINode(i)) {
        for (unsigned k = 0; k < LLVMCountIncoming(i); k++) {
          uint32_t v = tracked(l, LLVMGetIncomingValue(i, k));
          uint32_t p = pmap_get(&l->bidx, LLVMGetIncomingBlock(i, k));
          if (v != UINT32_MAX && p != UINT32_MAX) bit_set(row(l->phiout, l, p), v);
        }
      } else {
        for (int k = 0; k < LLVMGetNumOperands(i); k++) {
          uint32_t v = tracked(l, LLVMGetOperand(i, k));
          if (v != UINT32_MAX && !bit_get(def, v)) bit_set(use, v);
        }
      }
      uint32_t d = tracked(l, i);
      if (d != UINT32_MAX) bit_set(def, d);
    }
  }
}

static void live_solve(live_t *l) {
  for (int changed = 1; changed;) {
    changed = 0;
    for (size_t bi = l->nb; bi-- > 0;) {
      word_t *out = row(l->out, l, bi), *in = row(l->in, l, bi);
      LLVMValueRef t = LLVMGetBasicBlockTerminator(l->blocks[bi]);
      unsigned ns = t ? LLVMGetNumSuccessors(t) : 0;
      const word_t *po = row(l->phiout, l, bi);
      for (size_t w = 0; w < l->words; w++) {
        word_t o = po[w];
        for (unsigned s = 0; s < ns; s++)
          o |= row(l->in, l, pmap_get(&l->bidx, LLVMGetSuccessor(t, s)))[w];
        word_t n = row(l->use, l, bi)[w] | (o & ~row(l->def, l, bi)[w]);
        if (o != out[w] || n != in[w]) changed = 1;
        out[w] = o, in[w] = n;
      }
    }
  }
}

/* Values live right after `call` (a barrier): the block's live-out, walked back to it. */
static void live_after(const live_t *l, LLVMValueRef call, word_t *set) {
  LLVMBasicBlockRef bb = LLVMGetInstructionParent(call);
  memcpy(set, row(l->out, l, pmap_get(&l->bidx, bb)), l->words * sizeof(word_t));
  for (LLVMValueRef i = LLVMGetLastInstruction(bb); i != call; i = LLVMGetPreviousInstruction(i)) {
    uint32_t d = tracked(l, i);
    if (d != UINT32_MAX) bit_clear(set, d);
    for (int k = 0; k < LLVMGetNumOperands(i); k++) {
      uint32_t v = tracked(l, LLVMGetOperand(i, k));
      if (v != UINT32_MAX) bit_set(set, v);
    }
  }
}

/* ---- The split -------------------------------------------------------------------------- */

typedef struct {
  LLVMModuleRef m;
  LLVMContextRef c;
  LLVMTargetDataRef td;
  kc_hf_kernel_t *k;
  LLVMBuilderRef b;
  LLVMBuilderRef at_entry; /* before the entry block's terminator */
  uint64_t rec;            /* bytes of per-work-item storage so far */
  uint64_t last_slot;      /* where slot() put its last slot in it */
  uint64_t urec;           /* bytes of one copy of the group's uniform values so far */
  uint64_t brec;           /* bytes of one copy of the batch's uniform values so far */
  /* alias.scope / noalias lists telling the copies apart (ucur and bcur read, unext and bnext
   * written): the offsets swap at run time, so only these tell LICM that a region's reloads
   * of uniform values are not clobbered by its saves, and can leave the work-item loop (and,
   * for the batch's, the loop over the batch's groups). */
  LLVMValueRef scope[5], noalias[5]; /* SCOPE_CUR, SCOPE_NEXT, SCOPE_WI, SCOPE_BCUR, ... */
  LLVMMetadataRef slots_md;          /* the five scopes: what the kernel's own accesses miss */
  char *narrow;                      /* per live value: saved in 32 bits (narrow_saves) */
  unsigned nnarrow;                  /* how many are (KAPI_DUMP=host shows "kapi-saves32") */
  unsigned nshared;    /* phis saved in an incoming value's slot ("kapi-shared-slots") */
  struct divloop *div; /* divergent loops split into regions */
  size_t ndiv;
  /* per tracked value, a divergent loop's count that its work-items share (active_uniform):
   * its step, and the loop (index in div); NULL elsewhere */
  LLVMValueRef *step;
  size_t *step_loop;
  uint32_t *step_state;  /* ...and the state of the loop's header barrier (its index + 1) */
  int unaligned;         /* split_at: the saves with alignment 1 (a divergent loop's exit) */
  LLVMValueRef flag_set; /* ...and the store setting that loop's flag (divloop_t.set) */
  char *log;
} split_t;

/* Per-work-item slot of `bytes` (aligned to `align`), as a pointer to `ty`, built in the
 * entry block. */
static LLVMValueRef slot(split_t *s, uint64_t bytes, unsigned align, LLVMTypeRef ptr_ty) {
  if (align < 1) align = 1;
  bytes = (bytes + align - 1) / align * align;
  s->rec = (s->rec + align - 1) / align * align;
  s->last_slot = s->rec;
  LLVMTypeRef i64 = LLVMInt64TypeInContext(s->c);
  LLVMBuilderRef b = s->at_entry;
  LLVMValueRef off = LLVMBuildMul(b, s->k->nwi, LLVMConstInt(i64, s->rec, 0), "");
  off = LLVMBuildAdd(b, off, LLVMBuildMul(b, s->k->lin, LLVMConstInt(i64, bytes, 0), ""), "");
  LLVMValueRef p =
      LLVMBuildInBoundsGEP2(b, LLVMInt8TypeInContext(s->c), s->k->storage, &off, 1, "kapi.slot");
  s->rec += bytes;
  return LLVMBuildBitCast(b, p, ptr_ty, "");
}

/* A value the same in every work-item keeps one copy per group (two: see ucur/unext), at a
 * loop-invariant address that LICM takes the region loop's stores and reloads out of. */
static void uniform_slot(split_t *s, uint64_t bytes, unsigned align, LLVMTypeRef ptr_ty,
                         LLVMValueRef *ld, LLVMValueRef *st) {
  if (align < 1) align = 1;
  s->urec = (s->urec + align - 1) / align * align;
  LLVMValueRef off = LLVMConstInt(LLVMInt64TypeInContext(s->c), s->urec, 0);
  LLVMTypeRef i8 = LLVMInt8TypeInContext(s->c);
  *ld = LLVMBuildInBoundsGEP2(s->at_entry, i8, s->k->ucur, &off, 1, "kapi.uslot");
  *st = LLVMBuildInBoundsGEP2(s->at_entry, i8, s->k->unext, &off, 1, "kapi.uslot");
  *ld = LLVMBuildBitCast(s->at_entry, *ld, ptr_ty, "");
  *st = LLVMBuildBitCast(s->at_entry, *st, ptr_ty, "");
  s->urec += bytes;
}

/* A value the same in every group of a batch (batch_divergence): one copy per batch (two,
 * as for the group's), which the loop over the batch's groups does not reload. */
static void batch_slot(split_t *s, uint64_t bytes, unsigned align, LLVMTypeRef ptr_ty,
                       LLVMValueRef *ld, LLVMValueRef *st) {
  if (align < 1) align = 1;
  s->brec = (s->brec + align - 1) / align * align;
  LLVMValueRef off = LLVMConstInt(LLVMInt64TypeInContext(s->c), s->brec, 0);
  LLVMTypeRef i8 = LLVMInt8TypeInContext(s->c);
  *ld = LLVMBuildInBoundsGEP2(s->at_entry, i8, s->k->bcur, &off, 1, "kapi.bslot");
  *st = LLVMBuildInBoundsGEP2(s->at_entry, i8, s->k->bnext, &off, 1, "kapi.bslot");
  *ld = LLVMBuildBitCast(s->at_entry, *ld, ptr_ty, "");
  *st = LLVMBuildBitCast(s->at_entry, *st, ptr_ty, "");
  s->brec += bytes;
}

static LLVMValueRef first_non_phi(LLVMBasicBlockRef bb) {
  LLVMValueRef i = LLVMGetFirstInstruction(bb);
  while (i && LLVMIsAPHINode(i))
    i = LLVMGetNextInstruction(i);
  return i;
}

static LLVMValueRef entry_alloca(split_t *s, LLVMTypeRef t) {
  LLVMBasicBlockRef entry = LLVMGetEntryBasicBlock(s->k->body);
  LLVMPositionBuilderBefore(s->b, LLVMGetFirstInstruction(entry));
  return LLVMBuildAlloca(s->b, t, "kapi.spill");
}

static LLVMValueRef load_at(split_t *s, LLVMValueRef before, LLVMValueRef a, LLVMTypeRef t) {
  LLVMPositionBuilderBefore(s->b, before);
  return LLVMBuildLoad2(s->b, t, a, "");
}

/* reg2mem for one value: a store after its definition, a load before each use (phi uses at
 * the end of the incoming block). Returns the alloca. */
static LLVMValueRef demote(split_t *s, LLVMValueRef v) {
  LLVMTypeRef t = LLVMTypeOf(v);
  LLVMValueRef a = entry_alloca(s, t);
  size_t nu = 0, cap = 8;
  LLVMValueRef *users = malloc(cap * sizeof *users);
  for (LLVMUseRef u = LLVMGetFirstUse(v); u && users; u = LLVMGetNextUse(u)) {
    if (nu == cap) {
      LLVMValueRef *p = realloc(users, (cap *= 2) * sizeof *p);
      if (!p) free(users);
      users = p;
      if (!p) break;
    }
    users[nu++] = LLVMGetUser(u);
  }
  if (!users) return NULL;
  for (size_t i = 0; i < nu; i++) {
    LLVMValueRef u = users[i];
    int dup = 0;
    for (size_t j = 0; j < i && !dup; j++)
      dup = users[j] == u;
    if (dup) continue;
    int phi = LLVMIsAPHINode(u) != NULL;
    for (int k = 0; k < LLVMGetNumOperands(u); k++) {
      if (LLVMGetOperand(u, k) != v) continue;
      LLVMValueRef at = phi ? LLVMGetBasicBlockTerminator(LLVMGetIncomingBlock(u, (unsigned)k)) : u;
      LLVMSetOperand(u, (unsigned)k, load_at(s, at, a, t));
    }
  }
  free(users);
  LLVMValueRef after =
      LLVMIsAPHINode(v) ? first_non_phi(LLVMGetInstructionParent(v)) : LLVMGetNextInstruction(v);
  LLVMPositionBuilderBefore(s->b, after);
  LLVMBuildStore(s->b, v, a);
  return a;
}

/* DemotePHIToStack: stores at the ends of the incoming blocks, a load replacing the phi. */
static void demote_phi(split_t *s, LLVMValueRef phi) {
  LLVMTypeRef t = LLVMTypeOf(phi);
  LLVMValueRef a = entry_alloca(s, t);
  for (unsigned i = 0; i < LLVMCountIncoming(phi); i++) {
    LLVMPositionBuilderBefore(s->b, LLVMGetBasicBlockTerminator(LLVMGetIncomingBlock(phi, i)));
    LLVMBuildStore(s->b, LLVMGetIncomingValue(phi, i), a);
  }
  LLVMValueRef ld = load_at(s, first_non_phi(LLVMGetInstructionParent(phi)), a, t);
  LLVMReplaceAllUsesWith(phi, ld);
  LLVMInstructionEraseFromParent(phi);
}

/* Phis in the successors of bb name bb as their predecessor; the split moves bb's terminator
 * to a new block, and the C API cannot rename a phi's incoming block, so they go to memory. */
static void demote_successor_phis(split_t *s, LLVMBasicBlockRef bb) {
  LLVMValueRef t = LLVMGetBasicBlockTerminator(bb);
  for (unsigned i = 0; t && i < LLVMGetNumSuccessors(t); i++) {
    LLVMBasicBlockRef succ = LLVMGetSuccessor(t, i);
    LLVMValueRef p = LLVMGetFirstInstruction(succ);
    while (p && LLVMIsAPHINode(p)) {
      demote_phi(s, p);
      p = LLVMGetFirstInstruction(succ);
    }
  }
}

/* Lifetime markers would bound a private array to one region; its slot outlives them all. */
static void drop_lifetimes(LLVMValueRef fn) {
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb))
    for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i;) {
      LLVMValueRef next = LLVMGetNextInstruction(i);
      if (LLVMIsACallInst(i)) {
        LLVMValueRef f = LLVMGetCalledValue(i);
        const char *n = LLVMIsAFunction(f) ? LLVMGetValueName(f) : "";
        if (!strncmp(n, "llvm.lifetime.", 14)) LLVMInstructionEraseFromParent(i);
      }
      i = next;
    }
}

/* Private arrays: each alloca becomes this work-item's part of a slot. */
static int privatise_allocas(split_t *s, LLVMValueRef *allocas, size_t n) {
  for (size_t i = 0; i < n; i++) {
    LLVMValueRef a = allocas[i], count = LLVMGetOperand(a, 0);
    if (!LLVMIsAConstantInt(count)) {
      s->log = kc_msg("kernel %s: a private array of run-time size in a kernel with barriers is "
                      "not supported on the host CPU device",
                      s->k->name);
      return 0;
    }
    LLVMTypeRef t = LLVMGetAllocatedType(a);
    uint64_t bytes = LLVMABISizeOfType(s->td, t) * LLVMConstIntGetZExtValue(count);
    unsigned align = LLVMGetAlignment(a);
    if (align < LLVMABIAlignmentOfType(s->td, t)) align = LLVMABIAlignmentOfType(s->td, t);
    if (align > 64 || bytes > KC_HF_FIBER_PRIVATE) {
      s->log = kc_msg("kernel %s needs %llu bytes of private (per work-item) memory aligned to "
                      "%u; the host CPU device supports %u aligned to 64",
                      s->k->name, (unsigned long long)bytes, align, KC_HF_FIBER_PRIVATE);
      return 0;
    }
    LLVMValueRef p = slot(s, bytes, align, LLVMTypeOf(a));
    LLVMReplaceAllUsesWith(a, p);
    LLVMInstructionEraseFromParent(a);
  }
  return 1;
}

static LLVMValueRef *collect(LLVMValueRef fn, int (*want)(LLVMValueRef), size_t *count) {
  size_t n = 0, cap = 16;
  LLVMValueRef *v = malloc(cap * sizeof *v);
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb && v; bb = LLVMGetNextBasicBlock(bb))
    for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i && v; i = LLVMGetNextInstruction(i)) {
      if (!want(i)) continue;
      if (n == cap) {
        LLVMValueRef *p = realloc(v, (cap *= 2) * sizeof *p);
        if (!p) free(v);
        v = p;
        if (!p) break;
      }
      v[n++] = i;
    }
  *count = n;
  return v;
}

static int is_barrier(LLVMValueRef i) {
  if (!LLVMIsACallInst(i)) return 0;
  LLVMValueRef f = LLVMGetCalledValue(i);
  return LLVMIsAFunction(f) && !strcmp(LLVMGetValueName(f), "__kapi_host_barrier");
}

static int is_alloca(LLVMValueRef i) {
  return LLVMIsAAllocaInst(i) != NULL;
}

/* ---- Divergence ------------------------------------------------------------------------- */

/* Which tracked values may differ between the work-items of a group (1 in the result, nv
 * entries); the others are saved once per group. Seeds: the local ids, loads that are
 * atomic, calls, read-modify-writes and allocas (private memory); then data dependence, and
 * for phis also control dependence: a phi is varying where a varying branch decides which
 * incoming edge is taken, that is in any block reached from the branch before one of its
 * post-dominators (loop headers of loops with varying exits included). Sound, not sharp. */
typedef struct {
  const live_t *l;
  const kc_hf_kernel_t *k;
  int batch;        /* 1: between the groups of a batch (batch_divergence) */
  int ids;          /* how many local ids vary: 1 (dimension 0's) or 3 (varying_ids) */
  char *vary;       /* per tracked value */
  char *entry_vary; /* per entry-block instruction, by pmap `eidx` */
  pmap_t eidx;
  char *influenced, *done; /* per block */
  char *inside;            /* per block: influenced, and not the join of the paths */
  word_t *pdom;            /* nb x bw post-dominator sets */
  size_t bw;
  /* active-lane mode (active_uniform): per divergent loop its blocks (by index in l), whose
   * exits' choice then does not make the loop's own values vary */
  char **loops;
  size_t nloops;
} diverge_t;

/* wi's parameters that differ between the groups of a batch: where its __local variables,
 * slots and uniform copies are, the group's index, and its local-memory arguments. */
static int batch_param(const kc_hf_kernel_t *k, LLVMValueRef op) {
  LLVMValueRef wi = k->body;
  for (unsigned i = 5; i <= 9; i++)
    if (op == LLVMGetParam(wi, i)) return 1;
  for (unsigned i = 0; i < k->num_args; i++)
    if (k->args[i].kind == KC_ARG_LOCAL && op == LLVMGetParam(wi, KC_HF_WI_FIXED + i)) return 1;
  return 0;
}

/* Which local ids differ between the work-items that run a region together: all three in a
 * group's loop nest, but only dimension 0's in a loopvec kernel, whose chunks are runs along x
 * with y and z fixed (make_chunk_run). There a loop bound or a row index taken from get_id(1)
 * is the same in every lane, and its loop is split as a uniform one. Seeded varying, such a
 * loop was not split at all and each work-item walked its own column (a 2-D Range kernel
 * summing blocks of rows per column, 7.7x slower; a triangle's range(r + 1), 38x).
 * KAPI_HOST_LOOPVEC_ROWS=0: all three, as before. */
static int varying_ids(const kc_hf_kernel_t *k) {
  if (!k->loopvec) return 3;
  const char *v = getenv("KAPI_HOST_LOOPVEC_ROWS");
  return v && *v == '0' ? 3 : 1;
}

static int operand_varies(const diverge_t *d, LLVMValueRef op) {
  if (LLVMIsAArgument(op)) {
    for (int i = 0; i < d->ids; i++)
      if (op == d->k->local_id[i]) return 1;
    return d->batch && batch_param(d->k, op);
  }
  if (!LLVMIsAInstruction(op)) return 0;
  uint32_t v = tracked(d->l, op);
  if (v != UINT32_MAX) return d->vary[v];
  uint32_t e = pmap_get(&d->eidx, op);
  return e != UINT32_MAX && d->entry_vary[e];
}

static int inst_varies(const diverge_t *d, LLVMValueRef i) {
  if (LLVMIsAPHINode(i)) {
    if (d->influenced[pmap_get(&d->l->bidx, LLVMGetInstructionParent(i))]) return 1;
    for (unsigned k = 0; k < LLVMCountIncoming(i); k++)
      if (operand_varies(d, LLVMGetIncomingValue(i, k))) return 1;
    return 0;
  }
  if (LLVMIsACallInst(i) || LLVMIsAAtomicRMWInst(i) || LLVMIsAAtomicCmpXchgInst(i) ||
      LLVMIsAAllocaInst(i))
    return 1;
  if (LLVMIsALoadInst(i) && LLVMGetOrdering(i) != LLVMAtomicOrderingNotAtomic) return 1;
  for (int k = 0; k < LLVMGetNumOperands(i); k++)
    if (operand_varies(d, LLVMGetOperand(i, k))) return 1;
  return 0;
}

static void post_dominators(diverge_t *d) {
  const live_t *l = d->l;
  for (size_t b = 0; b < l->nb; b++)
    memset(d->pdom + b * d->bw, 0xff, d->bw * sizeof(word_t));
  for (int changed = 1; changed;) {
    changed = 0;
    for (size_t b = l->nb; b-- > 0;) {
      word_t *set = d->pdom + b * d->bw;
      LLVMValueRef t = LLVMGetBasicBlockTerminator(l->blocks[b]);
      unsigned ns = t ? LLVMGetNumSuccessors(t) : 0;
      for (size_t w = 0; w < d->bw; w++) {
        word_t x = ns ? ~(word_t)0 : 0;
        for (unsigned s = 0; s < ns; s++)
          x &= d->pdom[pmap_get(&l->bidx, LLVMGetSuccessor(t, s)) * d->bw + w];
        if (w == b / WBITS) x |= (word_t)1 << (b % WBITS);
        if (x != set[w]) set[w] = x, changed = 1;
      }
    }
  }
}

/* Blocks reached from b's successors before a post-dominator of b (which is marked too), but
 * for those set in `skip` (NULL: none), which are only walked through. */
static void influence(diverge_t *d, size_t b, uint32_t *stack, const char *skip) {
  const live_t *l = d->l;
  const word_t *pd = d->pdom + b * d->bw;
  size_t top = 0;
  char *seen = calloc(l->nb, 1);
  if (!seen) {
    memset(d->influenced, 1, l->nb); /* out of memory: everything varies */
    return;
  }
  stack[top++] = (uint32_t)b;
  while (top) {
    size_t cur = stack[--top];
    LLVMValueRef t = LLVMGetBasicBlockTerminator(l->blocks[cur]);
    unsigned ns = t ? LLVMGetNumSuccessors(t) : 0;
    for (unsigned s = 0; s < ns; s++) {
      uint32_t n = pmap_get(&l->bidx, LLVMGetSuccessor(t, s));
      if (seen[n]) continue;
      seen[n] = 1;
      if (!skip || !skip[n]) d->influenced[n] = 1;
      if (n != b && bit_get(pd, n)) continue; /* a join: the paths meet here */
      if (!skip || !skip[n]) d->inside[n] = 1;
      stack[top++] = n;
    }
  }
  free(seen);
}

static int branch_varies(const diverge_t *d, LLVMValueRef t) {
  if (!t) return 0;
  if (LLVMIsABranchInst(t)) return LLVMIsConditional(t) && operand_varies(d, LLVMGetCondition(t));
  if (LLVMIsASwitchInst(t)) return operand_varies(d, LLVMGetOperand(t, 0));
  return LLVMGetNumSuccessors(t) > 1; /* anything else with a choice: assume it varies */
}

/* A block where the kernel stops or meets a barrier: which of them a group reaches is what
 * decides its next region. */
static int stops(LLVMBasicBlockRef bb) {
  if (LLVMIsAReturnInst(LLVMGetBasicBlockTerminator(bb))) return 1;
  for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i))
    if (is_barrier(i)) return 1;
  return 0;
}

/* In active-lane mode, the blocks of the largest divergent loop that block b's branch leaves
 * (b in it, a successor not): the lanes it sends out are done with that loop, and those it
 * keeps all take the same way, so inside the loop it decides nothing between active lanes.
 * NULL otherwise. */
static const char *exited_loop(const diverge_t *d, size_t b) {
  const char *best = NULL;
  size_t most = 0;
  LLVMValueRef t = LLVMGetBasicBlockTerminator(d->l->blocks[b]);
  for (size_t i = 0; i < d->nloops; i++) {
    const char *in = d->loops[i];
    if (!in[b]) continue;
    int leaves = 0;
    for (unsigned s = 0; t && s < LLVMGetNumSuccessors(t) && !leaves; s++)
      leaves = !in[pmap_get(&d->l->bidx, LLVMGetSuccessor(t, s))];
    size_t n = 0;
    for (size_t j = 0; leaves && j < d->l->nb; j++)
      n += in[j] != 0;
    if (leaves && n > most) best = in, most = n;
  }
  return best;
}

/* Which tracked values may differ between work-items (batch 0) or between the groups of a
 * batch (batch 1: also what depends on the group's id, local memory or storage; plain loads
 * from the same address read the same, as a store racing with them between groups would be
 * a data race). With batch 1, *lockstep says whether every group of a batch reaches the same
 * barriers in the same order: no barrier and no return lies on a path that a varying branch
 * chooses (before the paths meet again). */
static char *divergence_in(const live_t *l, const kc_hf_kernel_t *k, int batch, int *lockstep,
                           char **inside, char **loops, size_t nloops, int ids) {
  diverge_t d = {.l = l,
                 .k = k,
                 .batch = batch,
                 .ids = ids,
                 .bw = (l->nb + WBITS - 1) / WBITS,
                 .loops = loops,
                 .nloops = nloops};
  size_t ne = 0;
  for (LLVMValueRef i = LLVMGetFirstInstruction(l->entry); i; i = LLVMGetNextInstruction(i))
    ne++;
  d.vary = calloc(l->nv + 1, 1);
  d.entry_vary = calloc(ne + 1, 1);
  d.influenced = calloc(l->nb, 1);
  d.inside = calloc(l->nb, 1);
  d.done = calloc(l->nb, 1);
  d.pdom = calloc(l->nb * d.bw, sizeof(word_t));
  uint32_t *stack = calloc(l->nb + 1, sizeof *stack);
  int ok = d.vary && d.entry_vary && d.influenced && d.inside && d.done && d.pdom && stack &&
           pmap_init(&d.eidx, ne);
  if (ok) {
    ne = 0;
    for (LLVMValueRef i = LLVMGetFirstInstruction(l->entry); i; i = LLVMGetNextInstruction(i))
      pmap_put(&d.eidx, i, (uint32_t)ne++);
    post_dominators(&d);
    for (int changed = 1; changed;) {
      changed = 0;
      for (size_t b = 0; b < l->nb; b++) {
        for (LLVMValueRef i = LLVMGetFirstInstruction(l->blocks[b]); i;
             i = LLVMGetNextInstruction(i)) {
          uint32_t v = tracked(l, i);
          char *flag = v != UINT32_MAX ? &d.vary[v]
                       : b == 0        ? &d.entry_vary[pmap_get(&d.eidx, i)]
                                       : NULL;
          if (flag && !*flag && inst_varies(&d, i)) *flag = 1, changed = 1;
        }
        if (!d.done[b] && branch_varies(&d, LLVMGetBasicBlockTerminator(l->blocks[b]))) {
          d.done[b] = 1, changed = 1;
          influence(&d, b, stack, exited_loop(&d, b));
        }
      }
    }
  }
  if (lockstep) {
    *lockstep = ok;
    for (size_t b = 0; ok && b < l->nb; b++)
      if (d.inside[b] && stops(l->blocks[b])) *lockstep = 0;
  }
  if (inside && ok) *inside = d.inside, d.inside = NULL;
  free(d.entry_vary), free(d.influenced), free(d.inside), free(d.done), free(d.pdom), free(stack);
  pmap_free(&d.eidx);
  if (!ok) free(d.vary);
  return ok ? d.vary : NULL;
}

static char *divergence(const live_t *l, const kc_hf_kernel_t *k, int batch, int *lockstep,
                        char **inside) {
  return divergence_in(l, k, batch, lockstep, inside, NULL, 0, varying_ids(k));
}

/* ---- Rematerialisation ------------------------------------------------------------------ */

/* Values computed without memory from entry-block values (ids, addresses of a work-item's
 * elements) are recomputed after a barrier instead of saved: cheaper than a slot, and the
 * vectoriser keeps seeing `base + x` rather than a loaded value. */
static int remat_opcode(LLVMOpcode op) {
  switch (op) {
  case LLVMGetElementPtr:
  case LLVMBitCast:
  case LLVMAddrSpaceCast:
  case LLVMPtrToInt:
  case LLVMIntToPtr:
  case LLVMTrunc:
  case LLVMZExt:
  case LLVMSExt:
  case LLVMAdd:
  case LLVMSub:
  case LLVMMul:
  case LLVMShl:
  case LLVMLShr:
  case LLVMAShr:
  case LLVMAnd:
  case LLVMOr:
  case LLVMXor:
  case LLVMICmp:
  case LLVMSelect:
    return 1;
  default:
    return 0;
  }
}

static int remat_ok(const live_t *l, LLVMValueRef v, int depth) {
  if (!LLVMIsAInstruction(v) || LLVMGetInstructionParent(v) == l->entry) return 1;
  if (depth > 6 || tracked(l, v) == UINT32_MAX || !remat_opcode(LLVMGetInstructionOpcode(v)))
    return 0;
  for (int i = 0; i < LLVMGetNumOperands(v); i++)
    if (!remat_ok(l, LLVMGetOperand(v, i), depth + 1)) return 0;
  return 1;
}

typedef struct {
  const live_t *l;
  const pmap_t *spill_of; /* spill alloca -> tracked value it holds */
  LLVMValueRef *memo;     /* per tracked value: its clone at this resume block */
  LLVMBuilderRef b;
} remat_t;

/* The original value behind an operand that demotion replaced with a reload. */
static LLVMValueRef undemoted(const remat_t *r, LLVMValueRef op) {
  if (!LLVMIsALoadInst(op)) return op;
  uint32_t v = pmap_get(r->spill_of, LLVMGetOperand(op, 0));
  return v == UINT32_MAX ? op : r->l->vals[v];
}

static LLVMValueRef remat(remat_t *r, LLVMValueRef v) {
  v = undemoted(r, v);
  if (!LLVMIsAInstruction(v) || LLVMGetInstructionParent(v) == r->l->entry) return v;
  uint32_t i = tracked(r->l, v);
  if (r->memo[i]) return r->memo[i];
  LLVMValueRef c = LLVMInstructionClone(v);
  for (int k = 0; k < LLVMGetNumOperands(v); k++)
    LLVMSetOperand(c, (unsigned)k, remat(r, LLVMGetOperand(v, k)));
  LLVMInsertIntoBuilder(r->b, c);
  return r->memo[i] = c;
}

static LLVMMetadataRef distinct_node(LLVMContextRef c, LLVMMetadataRef *ops, unsigned n) {
  LLVMMetadataRef all[3];
  all[0] = LLVMTemporaryMDNode(c, NULL, 0);
  if (n) memcpy(all + 1, ops, n * sizeof *ops);
  LLVMMetadataRef node = LLVMMDNodeInContext2(c, all, n + 1);
  LLVMMetadataReplaceAllUsesWith(all[0], node); /* self-reference: distinct */
  return node;
}

static void make_scopes(split_t *s) {
  LLVMMetadataRef domain = distinct_node(s->c, NULL, 0), sc[5];
  for (int i = 0; i < 5; i++)
    sc[i] = distinct_node(s->c, &domain, 1);
  for (int i = 0; i < 5; i++) {
    LLVMMetadataRef others[4];
    for (int j = 1; j < 5; j++)
      others[j - 1] = sc[(i + j) % 5];
    s->scope[i] = LLVMMetadataAsValue(s->c, LLVMMDNodeInContext2(s->c, &sc[i], 1));
    s->noalias[i] = LLVMMetadataAsValue(s->c, LLVMMDNodeInContext2(s->c, others, 4));
  }
  s->slots_md = LLVMMDNodeInContext2(s->c, sc, 5);
}

enum { SCOPE_CUR, SCOPE_NEXT, SCOPE_WI, SCOPE_BCUR, SCOPE_BNEXT };
/* What kind of slot a saved value has (split_t's slots). */
enum { SLOT_WI, SLOT_GROUP, SLOT_BATCH };

/* Saves and reloads in the five kinds of slot (group- and batch-uniform read and written, per
 * work-item) never alias each other: all come from one scratch object at offsets that alias
 * analysis cannot tell apart. */
static void set_scopes(split_t *s, LLVMValueRef access, int which) {
  LLVMSetMetadata(access, LLVMGetMDKindIDInContext(s->c, "alias.scope", 11), s->scope[which]);
  LLVMSetMetadata(access, LLVMGetMDKindIDInContext(s->c, "noalias", 7), s->noalias[which]);
}

/* Whether the kernel's own memory accesses are marked as missing every slot
 * (KAPI_HOST_SLOT_NOALIAS unset; `0`: not marked, as before). */
static int slot_noalias_on(void) {
  const char *v = getenv("KAPI_HOST_SLOT_NOALIAS");
  return !(v && *v == '0');
}

/* Whether pointer p is based only on memory the kernel was given: one of its arguments (wi's
 * parameters after the fixed ones: global and local buffers), the group's __local variables
 * (wi's `local` parameter) or a global; followed through GEPs, casts, phis and selects. Slots
 * and private arrays are based on the scratch storage (other parameters), and anything else
 * (a loaded or computed pointer) answers no. */
static int kernel_based(LLVMValueRef wi, LLVMValueRef p, int depth) {
  if (depth > 16) return 0;
  if (LLVMIsAArgument(p)) {
    for (unsigned i = 0; i < LLVMCountParams(wi); i++)
      if (LLVMGetParam(wi, i) == p) return i == 5 || i >= KC_HF_WI_FIXED;
    return 0;
  }
  if (LLVMIsAGlobalVariable(p)) return 1;
  if (LLVMIsAGetElementPtrInst(p) || LLVMIsABitCastInst(p) || LLVMIsAAddrSpaceCastInst(p))
    return kernel_based(wi, LLVMGetOperand(p, 0), depth + 1);
  if (LLVMIsAConstantExpr(p)) {
    LLVMOpcode op = LLVMGetConstOpcode(p);
    if (op == LLVMGetElementPtr || op == LLVMBitCast || op == LLVMAddrSpaceCast)
      return kernel_based(wi, LLVMGetOperand(p, 0), depth + 1);
    return 0;
  }
  if (LLVMIsALoadInst(p)) { /* a pointer the split demoted: every store to its spill */
    LLVMValueRef a = LLVMGetOperand(p, 0);
    if (!LLVMIsAAllocaInst(a)) return 0;
    int stores = 0;
    for (LLVMUseRef u = LLVMGetFirstUse(a); u; u = LLVMGetNextUse(u)) {
      LLVMValueRef user = LLVMGetUser(u);
      if (LLVMIsALoadInst(user)) continue;
      if (!LLVMIsAStoreInst(user) || LLVMGetOperand(user, 1) != a) return 0;
      if (!kernel_based(wi, LLVMGetOperand(user, 0), depth + 1)) return 0;
      stores++;
    }
    return stores > 0;
  }
  if (LLVMIsASelectInst(p))
    return kernel_based(wi, LLVMGetOperand(p, 1), depth + 1) &&
           kernel_based(wi, LLVMGetOperand(p, 2), depth + 1);
  if (LLVMIsAPHINode(p)) {
    for (unsigned i = 0; i < LLVMCountIncoming(p); i++) {
      LLVMValueRef in = LLVMGetIncomingValue(p, i);
      if (in != p && !kernel_based(wi, in, depth + 1)) return 0;
    }
    return 1;
  }
  return 0;
}

/* Marks every load, store and atomic of the kernel's own memory (kernel_based) in wi
 * `!noalias` the five slot scopes: no kernel pointer reaches the scratch storage, but alias
 * analysis could not tell, so a store to local memory kept a slot's value from staying in a
 * register across it (a scan's copy region stored `v` back into the slot it had just loaded
 * it from) and a value the same in every work-item from leaving the work-item loop. An
 * existing `!noalias` list is kept and extended. Returns how many accesses were marked. */
static unsigned mark_kernel_accesses(split_t *s) {
  if (!slot_noalias_on()) return 0;
  unsigned kind = LLVMGetMDKindIDInContext(s->c, "noalias", 7), n = 0;
  LLVMValueRef wi = s->k->body;
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(wi); bb; bb = LLVMGetNextBasicBlock(bb))
    for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i)) {
      LLVMValueRef ptr;
      if (LLVMIsALoadInst(i))
        ptr = LLVMGetOperand(i, 0);
      else if (LLVMIsAStoreInst(i) || LLVMIsAAtomicRMWInst(i) || LLVMIsAAtomicCmpXchgInst(i))
        ptr = LLVMGetOperand(i, LLVMIsAStoreInst(i) ? 1 : 0);
      else
        continue;
      if (!kernel_based(wi, ptr, 0)) continue;
      LLVMValueRef old = LLVMGetMetadata(i, kind);
      LLVMMetadataRef md = s->slots_md;
      if (old) {
        unsigned no = LLVMGetMDNodeNumOperands(old);
        LLVMValueRef *ops = calloc(no + 5, sizeof *ops);
        if (!ops) continue;
        LLVMGetMDNodeOperands(old, ops);
        LLVMMetadataRef *mds = calloc(no + 5, sizeof *mds);
        if (!mds) {
          free(ops);
          continue;
        }
        for (unsigned j = 0; j < no; j++)
          mds[j] = LLVMValueAsMetadata(ops[j]);
        LLVMValueRef sv = LLVMMetadataAsValue(s->c, s->slots_md);
        LLVMValueRef sops[5];
        LLVMGetMDNodeOperands(sv, sops);
        for (unsigned j = 0; j < 5; j++)
          mds[no + j] = LLVMValueAsMetadata(sops[j]);
        md = LLVMMDNodeInContext2(s->c, mds, no + 5);
        free(ops), free(mds);
      }
      LLVMSetMetadata(i, kind, LLVMMetadataAsValue(s->c, md));
      n++;
    }
  return n;
}

/* ---- Saves in 32 bits ---------------------------------------------------------------------- */

/* Whether only the low 32 bits of integer value v matter to what uses it: followed through
 * arithmetic whose low bits depend only on its operands' low bits (add, sub, mul, and, or,
 * xor, shl by another value; select and phi) down to truncations to 32 bits or fewer. Each
 * add, sub, mul and shl met is kept in `chain`; at most *budget values are visited. */
static int low_bits_only(LLVMValueRef v, pmap_t *seen, size_t *budget, LLVMValueRef *chain,
                         size_t *nchain) {
  if (pmap_get(seen, v) != UINT32_MAX) return 1;
  if (!*budget) return 0;
  --*budget;
  pmap_put(seen, v, 1);
  for (LLVMUseRef u = LLVMGetFirstUse(v); u; u = LLVMGetNextUse(u)) {
    LLVMValueRef user = LLVMGetUser(u);
    if (!LLVMIsAInstruction(user)) return 0;
    switch (LLVMGetInstructionOpcode(user)) {
    case LLVMTrunc:
      if (LLVMGetIntTypeWidth(LLVMTypeOf(user)) > 32) return 0;
      continue;
    case LLVMShl:
      if (LLVMGetOperand(user, 1) == v) return 0; /* a shift count needs all its bits */
      /* fall through */
    case LLVMAdd:
    case LLVMSub:
    case LLVMMul:
      if (pmap_get(seen, user) == UINT32_MAX) chain[(*nchain)++] = user;
      break;
    case LLVMSelect:
      if (LLVMGetOperand(user, 0) == v) return 0;
      break;
    case LLVMAnd:
    case LLVMOr:
    case LLVMXor:
    case LLVMPHI:
      break;
    default:
      return 0;
    }
    if (!low_bits_only(user, seen, budget, chain, nchain)) return 0;
  }
  return 1;
}

/* Whether arithmetic instruction x carries nsw or nuw. Restored from 32 bits, a saved value's
 * high bits differ, and an overflow flag could then make the low bits poison; the C API of
 * LLVM 15 can neither read nor clear the flags, so they are read from the printed
 * instruction: `%x = add nuw nsw i64 ...`, the flags right after the opcode. */
static int has_wrap_flags(LLVMValueRef x) {
  char *text = LLVMPrintValueToString(x);
  const char *p = text ? strstr(text, " = ") : NULL;
  if (p) p = strchr(p + 3, ' '); /* after the opcode */
  int flagged = !p || !strncmp(p, " nuw ", 5) || !strncmp(p, " nsw ", 5);
  LLVMDisposeMessage(text);
  return flagged;
}

/* Marks (s->narrow) the saved integer values wider than 32 bits of which only the low 32
 * matter: they are saved in 4 bytes and restored zero-extended. A scan's running sum (Numba
 * types an int32 plus an int32 as int64; the kernel stores it back into int32 memory) then
 * fills twice the lanes of a vector in the region loops that save and restore it. */
static int narrow_saves(split_t *s, const live_t *l, const word_t *all, const char *recompute) {
  pmap_t seen;
  LLVMValueRef *chain = malloc((l->nv + 1) * sizeof *chain);
  if (!chain || !pmap_init(&seen, l->nv)) {
    free(chain);
    return 0;
  }
  for (size_t v = 0; v < l->nv; v++) {
    LLVMTypeRef t = LLVMTypeOf(l->vals[v]);
    if (!bit_get(all, (uint32_t)v) || recompute[v] || LLVMGetTypeKind(t) != LLVMIntegerTypeKind ||
        LLVMGetIntTypeWidth(t) <= 32)
      continue;
    memset(seen.keys, 0, seen.cap * sizeof *seen.keys);
    size_t budget = l->nv, n = 0;
    if (!low_bits_only(l->vals[v], &seen, &budget, chain, &n)) continue;
    int flagged = 0;
    for (size_t i = 0; i < n && !flagged; i++)
      flagged = has_wrap_flags(chain[i]);
    s->narrow[v] = !flagged;
    s->nnarrow += !flagged;
  }
  pmap_free(&seen);
  free(chain);
  return 1;
}

/* Whether tracked value v is a count that the header barrier of its divergent loop, state k
 * (its index + 1), neither saves nor restores: the loop's entry and check do (split()). */
static int stepped(const split_t *s, size_t v, uint32_t k) {
  return s->step && s->step[v] && s->step_state[v] == k;
}

/* Splits bb after barrier `call` (number k): save `live` there and return k; the rest of bb
 * moves to the new resume block, which restores them first. */
static LLVMBasicBlockRef split_at(split_t *s, LLVMValueRef call, uint32_t k, LLVMValueRef *spills,
                                  LLVMValueRef *slots, LLVMValueRef *stores, const char *kind,
                                  const word_t *live, remat_t *rm) {
  static const int save_scope[] = {SCOPE_WI, SCOPE_NEXT, SCOPE_BNEXT};
  static const int load_scope[] = {SCOPE_WI, SCOPE_CUR, SCOPE_BCUR};
  size_t nv = rm->l->nv;
  LLVMBasicBlockRef bb = LLVMGetInstructionParent(call);
  LLVMBasicBlockRef r = LLVMAppendBasicBlockInContext(s->c, s->k->body, "resume");
  LLVMPositionBuilderAtEnd(s->b, r);
  for (LLVMValueRef i = LLVMGetNextInstruction(call); i;) {
    LLVMValueRef next = LLVMGetNextInstruction(i);
    LLVMInstructionRemoveFromParent(i);
    LLVMInsertIntoBuilder(s->b, i);
    i = next;
  }
  LLVMValueRef first = LLVMGetFirstInstruction(r);
  LLVMPositionBuilderAtEnd(s->b, bb);
  for (size_t v = 0; v < nv; v++) {
    if (!bit_get(live, (uint32_t)v) || !slots[v] || stepped(s, v, k)) continue;
    LLVMTypeRef t = LLVMGetAllocatedType(spills[v]);
    LLVMValueRef x = LLVMBuildLoad2(s->b, t, spills[v], "");
    if (s->narrow[v]) x = LLVMBuildTrunc(s->b, x, LLVMInt32TypeInContext(s->c), "");
    LLVMValueRef st = LLVMBuildStore(s->b, x, stores[v]);
    set_scopes(s, st, save_scope[(int)kind[v]]);
    /* A divergent loop's exit saves, say, the count that the loop's header saves too, to
     * another slot: SimplifyCFG would sink the two stores into one with a selected address,
     * which the vectoriser makes a scatter. Stores of different alignment are never merged
     * (the slots' x86 vector stores are unaligned ones either way). */
    if (s->unaligned) LLVMSetAlignment(st, 1);
  }
  /* ...and the flag's store comes last, so that the exit's and the header's saves never end
   * their paths alike (instcombine gives a save to a slot in run's frame the slot's alignment
   * back, so the alignments alone do not keep them apart there) */
  if (s->flag_set) {
    LLVMInstructionRemoveFromParent(s->flag_set);
    LLVMInsertIntoBuilder(s->b, s->flag_set);
  }
  LLVMBuildRet(s->b, LLVMConstInt(LLVMInt32TypeInContext(s->c), k, 0));
  LLVMInstructionEraseFromParent(call);
  LLVMPositionBuilderBefore(s->b, first);
  memset(rm->memo, 0, nv * sizeof *rm->memo);
  rm->b = s->b;
  for (size_t v = 0; v < nv; v++) {
    if (!bit_get(live, (uint32_t)v) || stepped(s, v, k)) continue;
    LLVMTypeRef t = LLVMGetAllocatedType(spills[v]);
    LLVMTypeRef st = s->narrow[v] ? LLVMInt32TypeInContext(s->c) : t;
    LLVMValueRef x = slots[v] ? LLVMBuildLoad2(s->b, st, slots[v], "") : remat(rm, rm->l->vals[v]);
    if (slots[v]) set_scopes(s, x, load_scope[(int)kind[v]]);
    if (s->narrow[v]) x = LLVMBuildZExt(s->b, x, t, "");
    LLVMBuildStore(s->b, x, spills[v]);
  }
  return r;
}

/* ---- Loops as regions (KAPI_HOST_LOOPVEC) ----------------------------------------------- */

/* The most values a split loop may carry from one iteration to the next: each costs a save
 * and a reload per work-item and iteration. */
#define LOOP_MAX_LIVE 24u
/* The most private memory (bytes of allocas) a kernel may have to run its loops as regions:
 * private arrays become per-work-item slots, of which the region scheme allows less than a
 * barrier-free kernel's frame. */
#define LOOP_MAX_PRIVATE (16u * 1024u)

/* KAPI_HOST_LOOPVEC: unset or `1`, on with chunks of KC_HF_LOOPVEC_CHUNK work-items; `0`,
 * off; a number above 1, on with chunks of that many (at most 1024). */
static long loopvec_setting(void) {
  const char *v = getenv("KAPI_HOST_LOOPVEC");
  char *end = NULL;
  long n = v && *v ? strtol(v, &end, 10) : 1;
  if (end && *end) n = 1; /* not a number: the default */
  return n < 0 ? 1 : n > 1024 ? 1024 : n;
}

int kc_hf_loopvec_on(void) {
  return loopvec_setting() != 0;
}

static int active_uniform_on(void);

unsigned kc_hf_loopvec_chunk(int divergent) {
  long n = loopvec_setting();
  if (n > 1) return (unsigned)n;
  if (!divergent) return KC_HF_LOOPVEC_CHUNK;
  return strstr(kc_hf_target_features(), "+avx512f") && active_uniform_on()
             ? KC_HF_LOOPVEC_DIV_CHUNK_WIDE
             : KC_HF_LOOPVEC_DIV_CHUNK;
}

/* Walks f and the functions it calls (depth-limited): whether any block is in a cycle, and
 * adds its allocas' bytes to *bytes (a run-time count: LOOP_MAX_PRIVATE + 1). */
static int candidate_walk(LLVMValueRef f, LLVMTargetDataRef td, int depth, uint64_t *bytes,
                          int *loops) {
  if (depth > 8) return 0;
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb)) {
    if (!*loops && kc_hf_block_in_cycle(bb)) *loops = 1;
    for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i)) {
      if (LLVMIsAAllocaInst(i)) {
        LLVMValueRef count = LLVMGetOperand(i, 0);
        if (!LLVMIsAConstantInt(count)) return 0;
        *bytes += LLVMABISizeOfType(td, LLVMGetAllocatedType(i)) * LLVMConstIntGetZExtValue(count);
        if (*bytes > LOOP_MAX_PRIVATE) return 0;
      } else if (LLVMIsACallInst(i)) {
        LLVMValueRef callee = LLVMGetCalledValue(i);
        if (!LLVMIsAFunction(callee)) return 0;
        if (!LLVMIsDeclaration(callee) && !candidate_walk(callee, td, depth + 1, bytes, loops))
          return 0;
      }
    }
  }
  return 1;
}

/* KAPI_HOST_LOOPVEC_WIDTH: a power of two from 2 to 64, that many lanes; `0` (or `1`), the
 * vectoriser's choice; -1 when unset (or not such a number). */
static long loopvec_width_setting(void) {
  const char *v = getenv("KAPI_HOST_LOOPVEC_WIDTH");
  char *end = NULL;
  long n = v && *v ? strtol(v, &end, 10) : -1;
  if (n < 0 || (end && *end) || n > 64 || (n & (n - 1))) return -1;
  return n == 1 ? 0 : n;
}

/* Unset, for a kernel with a divergent loop one vector register of 32-bit lanes: 16 where the
 * target has AVX-512, 8 where it has AVX2 (the vectoriser sizes its vectors by the widest type
 * in the loop: a 64-bit loop counter would halve every float operation's lanes, and on AVX2
 * it then chose 4, whose loop it did not unroll into constant slot offsets: mandelbrot's
 * values went round its rounds through memory, 3.3 times as slow as with 8), else the
 * vectoriser's choice. */
unsigned kc_hf_loopvec_width(int divergent) {
  long n = loopvec_width_setting();
  if (n >= 0) return (unsigned)n;
  if (!divergent) return 0;
  const char *f = kc_hf_target_features();
  return strstr(f, "+avx512f") ? 16u : strstr(f, "+avx2") ? 8u : 0u;
}

/* Unset: 16 where the target has AVX2 or AVX-512 (a 16x16 tile's row: one vector of AVX-512,
 * two of AVX2), else none. */
unsigned kc_hf_vector_row_width(void) {
  long n = loopvec_width_setting();
  if (n >= 0) return (unsigned)n;
  return strstr(kc_hf_target_features(), "+avx2") ? 16u : 0u;
}

/* Whether the work-item loops of barrier kernels that are not batched are marked not to unroll
 * (KAPI_HOST_REGION_UNROLL unset; `1`: not marked, as before). Unrolling includes peeling: LLVM's
 * full-unroll pass peels a work-item off a loop to settle a compare (`lid >= d` with d = 1), and
 * the peeled loop's new id is not the one its accesses' parallel mark names, so the vectoriser
 * then sees dependences between local memory and the slots and leaves it scalar. */
int kc_hf_region_nopeel(void) {
  const char *v = getenv("KAPI_HOST_REGION_UNROLL");
  return !(v && *v == '1');
}

/* Whether barrier kernels' run functions may have their copying work-item loops turned into
 * memcpy calls (KAPI_HOST_REGION_MEMCPY=1; by default they say no-builtin-memcpy). */
int kc_hf_region_memcpy(void) {
  const char *v = getenv("KAPI_HOST_REGION_MEMCPY");
  return v && *v == '1';
}

/* Whether barrier kernels that are not batched get a nest per region for groups of one row
 * whose length is a multiple of a vector's lanes (KAPI_HOST_VECTOR_ROWS unset; `0`: not, as
 * before): no y and z loops, and the row as a loop over vectors, each a work-item loop of a
 * constant count (kc_hf_make_region_run). */
int kc_hf_region_vector_rows(void) {
  const char *v = getenv("KAPI_HOST_VECTOR_ROWS");
  return !(v && *v == '0');
}

/* How the run function of a barrier kernel that is not batched (one group per call) builds its
 * group loops (KAPI_HOST_ONE_GROUP): 1 (unset), marked not to unroll; 2, a constant count of 1;
 * 0, unrolled by LLVM as before (kc_hf_make_region_run). */
int kc_hf_region_one_group(void) {
  const char *v = getenv("KAPI_HOST_ONE_GROUP");
  return v && *v == '0' ? 0 : v && *v == '2' ? 2 : 1;
}

int kc_hf_loopvec_candidate(LLVMValueRef kernel) {
  LLVMTargetDataRef td = LLVMGetModuleDataLayout(LLVMGetGlobalParent(kernel));
  uint64_t bytes = 0;
  int loops = 0;
  return candidate_walk(kernel, td, 0, &bytes, &loops) && loops;
}

/* What may run in a split loop: no calls but intrinsics (a call may print, whose order
 * per work-item would change, or keep the body from vectorising), no atomics, no private
 * memory allocated in it. */
static int loop_inst_ok(LLVMValueRef i) {
  if (LLVMIsAAtomicRMWInst(i) || LLVMIsAAtomicCmpXchgInst(i) || LLVMIsAAllocaInst(i) ||
      LLVMIsAFenceInst(i))
    return 0;
  if ((LLVMIsALoadInst(i) || LLVMIsAStoreInst(i)) &&
      (LLVMGetOrdering(i) != LLVMAtomicOrderingNotAtomic || LLVMGetVolatile(i)))
    return 0;
  if (LLVMIsACallInst(i)) {
    LLVMValueRef f = LLVMGetCalledValue(i);
    if (!LLVMIsAFunction(f)) return 0;
    const char *n = LLVMGetValueName(f);
    return !strncmp(n, "llvm.", 5) && strncmp(n, "llvm.memset", 11) &&
           strncmp(n, "llvm.memcpy", 11) && strncmp(n, "llvm.memmove", 12);
  }
  return 1;
}

typedef struct {
  live_t l;
  size_t bw;                /* words of a block bitset */
  word_t *dom;              /* nb x bw dominator sets */
  uint32_t *pred, *pred_at; /* predecessors: pred[pred_at[b] .. pred_at[b + 1]) */
  char *inside;             /* per block: on a path a varying branch chooses */
  const char *vary;         /* per tracked value: may differ between work-items */
} loops_t;

static void dominators(loops_t *L) {
  const live_t *l = &L->l;
  for (size_t b = 0; b < l->nb; b++) {
    word_t *set = L->dom + b * L->bw;
    memset(set, b ? 0xff : 0, L->bw * sizeof(word_t));
    if (!b) bit_set(set, 0);
  }
  for (int changed = 1; changed;) {
    changed = 0;
    for (size_t b = 1; b < l->nb; b++) {
      word_t *set = L->dom + b * L->bw;
      for (size_t w = 0; w < L->bw; w++) {
        word_t x = L->pred_at[b] == L->pred_at[b + 1] ? 0 : ~(word_t)0;
        for (uint32_t p = L->pred_at[b]; p < L->pred_at[b + 1]; p++)
          x &= L->dom[L->pred[p] * L->bw + w];
        if (w == b / WBITS) x |= (word_t)1 << (b % WBITS);
        if (x != set[w]) set[w] = x, changed = 1;
      }
    }
  }
}

static int predecessors(loops_t *L) {
  const live_t *l = &L->l;
  size_t ne = 0;
  for (size_t b = 0; b < l->nb; b++) {
    LLVMValueRef t = LLVMGetBasicBlockTerminator(l->blocks[b]);
    ne += t ? LLVMGetNumSuccessors(t) : 0;
  }
  L->pred_at = calloc(l->nb + 2, sizeof *L->pred_at);
  L->pred = calloc(ne + 1, sizeof *L->pred);
  if (!L->pred_at || !L->pred) return 0;
  for (size_t b = 0; b < l->nb; b++) {
    LLVMValueRef t = LLVMGetBasicBlockTerminator(l->blocks[b]);
    for (unsigned s = 0; t && s < LLVMGetNumSuccessors(t); s++)
      L->pred_at[pmap_get(&l->bidx, LLVMGetSuccessor(t, s)) + 2]++;
  }
  for (size_t b = 0; b < l->nb; b++)
    L->pred_at[b + 2] += L->pred_at[b + 1];
  for (size_t b = 0; b < l->nb; b++) {
    LLVMValueRef t = LLVMGetBasicBlockTerminator(l->blocks[b]);
    for (unsigned s = 0; t && s < LLVMGetNumSuccessors(t); s++)
      L->pred[L->pred_at[pmap_get(&l->bidx, LLVMGetSuccessor(t, s)) + 1]++] = (uint32_t)b;
  }
  return 1;
}

/* A divergent loop split into regions (its exits differ between work-items): a barrier at
 * its header (bh) and one at its one exit block (bx); `pre` are the terminators of the blocks
 * entering it. Each round of the header's region runs the work-items not yet done (a per-work-item
 * flag, set before bx and cleared before the loop), and the others return bx's state at once;
 * run takes the smallest state any work-item returns (kc_hf_kernel_t.minstate), so the group
 * goes round again while any work-item is still in the loop, and on to bx's region once all
 * have left it. */
typedef struct divloop {
  LLVMValueRef bh, bx;
  LLVMValueRef *pre;
  size_t npre;
  size_t kh, kx;             /* indices of bh and bx among the barriers */
  LLVMValueRef done;         /* the flag's slot (i8*) */
  LLVMValueRef set;          /* the store setting it, before bx */
  LLVMBasicBlockRef *blocks; /* the loop's blocks (malloc'd, nblocks; its exit not among them) */
  size_t nblocks;
} divloop_t;

enum { LOOP_NO, LOOP_UNIFORM, LOOP_DIVERGENT };

/* Whether terminator t may send the work-items of a group different ways (conservative: a
 * condition from the entry block, or a switch). */
static int choice_varies(const loops_t *L, LLVMValueRef t) {
  if (LLVMGetNumSuccessors(t) < 2) return 0;
  if (!LLVMIsABranchInst(t)) return 1;
  LLVMValueRef cond = LLVMGetCondition(t);
  if (LLVMIsAConstant(cond)) return 0;
  uint32_t v = tracked(&L->l, cond);
  return v == UINT32_MAX || L->vary[v];
}

/* Whether the natural loop headed by block h (its back edges from the blocks h dominates)
 * may be split, and how: everything in it passes loop_inst_ok, it carries few values, and
 * either h is reached on no path a varying branch chooses (LOOP_UNIFORM: its exits are then
 * uniform too, as a varying exit would reach h again before the paths meet), or its entries
 * are so reached and it has one exit block, itself so reached
 * (LOOP_DIVERGENT, *exit set; the loop's blocks are those set in `in`). */
static int loop_splittable(loops_t *L, size_t h, uint32_t *stack, char *in, size_t *exit) {
  const live_t *l = &L->l;
  if (h == 0) return LOOP_NO;
  size_t top = 0, latches = 0;
  memset(in, 0, l->nb);
  in[h] = 1;
  for (uint32_t p = L->pred_at[h]; p < L->pred_at[h + 1]; p++) {
    uint32_t b = L->pred[p];
    if (!bit_get(L->dom + b * L->bw, (uint32_t)h)) continue;
    latches++;
    if (!in[b]) in[b] = 1, stack[top++] = b;
  }
  if (!latches) return LOOP_NO; /* not a loop header */
  while (top) {
    uint32_t b = stack[--top];
    for (uint32_t p = L->pred_at[b]; p < L->pred_at[b + 1]; p++)
      if (!in[L->pred[p]]) in[L->pred[p]] = 1, stack[top++] = L->pred[p];
  }
  size_t ex = SIZE_MAX;
  for (size_t b = 0; b < l->nb; b++) {
    if (!in[b]) continue;
    for (LLVMValueRef i = LLVMGetFirstInstruction(l->blocks[b]); i; i = LLVMGetNextInstruction(i))
      if (!loop_inst_ok(i) || is_barrier(i)) return LOOP_NO;
    LLVMValueRef t = LLVMGetBasicBlockTerminator(l->blocks[b]);
    if (LLVMIsAReturnInst(t)) return LOOP_NO;
    for (unsigned s = 0; s < LLVMGetNumSuccessors(t); s++) {
      size_t e = pmap_get(&l->bidx, LLVMGetSuccessor(t, s));
      if (in[e]) continue;
      if (ex != SIZE_MAX && ex != e) ex = SIZE_MAX - 1; /* a second exit block */
      if (ex == SIZE_MAX) ex = e;
    }
  }
  unsigned live = 0;
  const word_t *lin = row(l->in, l, h);
  for (size_t w = 0; w < l->words; w++)
    live += (unsigned)__builtin_popcountll(lin[w]);
  for (LLVMValueRef i = LLVMGetFirstInstruction(l->blocks[h]); i && LLVMIsAPHINode(i);
       i = LLVMGetNextInstruction(i))
    live++;
  if (live > LOOP_MAX_LIVE) return LOOP_NO;
  if (!L->inside[h]) return LOOP_UNIFORM;
  if (ex >= SIZE_MAX - 1 || L->inside[ex]) return LOOP_NO;
  for (uint32_t p = L->pred_at[h]; p < L->pred_at[h + 1]; p++)
    if (!in[L->pred[p]] && (L->inside[L->pred[p]] ||
                            choice_varies(L, LLVMGetBasicBlockTerminator(l->blocks[L->pred[p]]))))
      return LOOP_NO;
  *exit = ex;
  return LOOP_DIVERGENT;
}

/* A block of its own for the exits of the loop whose blocks are set in `in` (by index in
 * L->l.bidx) to block e: it takes e's phis' values from the loop, and e's phis then take them
 * from it. The C API cannot rename a phi's incoming block, so e's phis are rebuilt. */
static LLVMBasicBlockRef dedicated_exit(loops_t *L, LLVMBuilderRef b, const char *in,
                                        LLVMBasicBlockRef e) {
  LLVMContextRef c = LLVMGetTypeContext(LLVMTypeOf(L->l.fn));
  LLVMBasicBlockRef x = LLVMInsertBasicBlockInContext(c, e, "loop.exit");
  for (size_t i = 0; i < L->l.nb; i++) {
    if (!in[i]) continue;
    LLVMValueRef t = LLVMGetBasicBlockTerminator(L->l.blocks[i]);
    for (unsigned s = 0; s < LLVMGetNumSuccessors(t); s++)
      if (LLVMGetSuccessor(t, s) == e) LLVMSetSuccessor(t, s, x);
  }
  for (LLVMValueRef p = LLVMGetFirstInstruction(e); p && LLVMIsAPHINode(p);) {
    LLVMValueRef next = LLVMGetNextInstruction(p);
    LLVMPositionBuilderAtEnd(b, x);
    LLVMValueRef px = LLVMBuildPhi(b, LLVMTypeOf(p), "");
    LLVMPositionBuilderBefore(b, p);
    LLVMValueRef pe = LLVMBuildPhi(b, LLVMTypeOf(p), "");
    for (unsigned k = 0; k < LLVMCountIncoming(p); k++) {
      LLVMValueRef v = LLVMGetIncomingValue(p, k);
      LLVMBasicBlockRef from = LLVMGetIncomingBlock(p, k);
      uint32_t fi = pmap_get(&L->l.bidx, from);
      LLVMAddIncoming(fi != UINT32_MAX && in[fi] ? px : pe, &v, &from, 1);
    }
    LLVMAddIncoming(pe, &px, &x, 1);
    LLVMReplaceAllUsesWith(p, pe);
    LLVMInstructionEraseFromParent(p);
    p = next;
  }
  LLVMPositionBuilderAtEnd(b, x);
  LLVMBuildBr(b, e);
  return x;
}

static LLVMValueRef add_barrier(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef before) {
  LLVMValueRef f = LLVMGetNamedFunction(m, "__kapi_host_barrier");
  if (!f) {
    LLVMContextRef c = LLVMGetModuleContext(m);
    f = LLVMAddFunction(m, "__kapi_host_barrier",
                        LLVMFunctionType(LLVMVoidTypeInContext(c), NULL, 0, 0));
  }
  LLVMPositionBuilderBefore(b, before);
  return kc_hf_call(b, f, NULL, 0);
}

/* C where v is `p + C`, C an integer constant, or with phis > 0 a phi (paths joining in the
 * loop, up to `phis` deep) of such values with one C; NULL otherwise. */
static LLVMValueRef added_constant(LLVMValueRef p, LLVMValueRef v, int phis) {
  if (!LLVMIsAInstruction(v)) return NULL;
  if (LLVMIsAPHINode(v)) {
    LLVMValueRef c = NULL;
    for (unsigned k = 0; phis > 0 && k < LLVMCountIncoming(v); k++) {
      LLVMValueRef ck = added_constant(p, LLVMGetIncomingValue(v, k), phis - 1);
      if (!ck || (c && ck != c)) return NULL;
      c = ck;
    }
    return c;
  }
  if (LLVMGetInstructionOpcode(v) != LLVMAdd) return NULL;
  LLVMValueRef a = LLVMGetOperand(v, 0), c = LLVMGetOperand(v, 1);
  if (a != p) a = c, c = LLVMGetOperand(v, 0);
  return a == p && LLVMIsAConstantInt(c) ? c : NULL;
}

/* The step of header phi p of the loop whose blocks are set in `in` when p is a count: every
 * value it takes from inside the loop is `p + C`, one integer constant C (looking through
 * `phis` levels of phis: added_constant); NULL otherwise. */
static LLVMValueRef induction_step(const live_t *l, const char *in, LLVMValueRef p, int phis) {
  LLVMValueRef step = NULL;
  if (LLVMGetTypeKind(LLVMTypeOf(p)) != LLVMIntegerTypeKind) return NULL;
  for (unsigned k = 0; k < LLVMCountIncoming(p); k++) {
    uint32_t b = pmap_get(&l->bidx, LLVMGetIncomingBlock(p, k));
    if (b == UINT32_MAX || !in[b]) continue;
    LLVMValueRef c = added_constant(p, LLVMGetIncomingValue(p, k), phis);
    if (!c || (step && c != step)) return NULL;
    step = c;
  }
  return step;
}

/* Whether index value v moves by one element per iteration of the loop headed by block h: a
 * phi of h that its latches step by 1 (induction_step, through the phis where the loop's paths
 * join), plus anything (through adds and integer casts). */
static int steps_by_one(const loops_t *L, const char *in, LLVMBasicBlockRef h, LLVMValueRef v,
                        int depth) {
  if (depth > 6 || !LLVMIsAInstruction(v)) return 0;
  if (LLVMIsAPHINode(v)) {
    if (LLVMGetInstructionParent(v) != h) return 0;
    LLVMValueRef step = induction_step(&L->l, in, v, 4);
    return step && LLVMConstIntGetSExtValue(step) == 1;
  }
  switch (LLVMGetInstructionOpcode(v)) {
  case LLVMSExt:
  case LLVMZExt:
  case LLVMTrunc:
    return steps_by_one(L, in, h, LLVMGetOperand(v, 0), depth + 1);
  case LLVMAdd:
    return steps_by_one(L, in, h, LLVMGetOperand(v, 0), depth + 1) ||
           steps_by_one(L, in, h, LLVMGetOperand(v, 1), depth + 1);
  default:
    return 0;
  }
}

/* Whether the loop headed by block h (its blocks set in `in`) already runs well as each
 * work-item's own loop: it holds vector operations (the SPIR-V's optimiser widened it along its
 * own iterations, which a work-item loop around it cannot widen again), or it reads or writes
 * memory one element further each iteration. Such a loop is split only where the work-items of
 * a chunk differ in its trip count anyway. Where it is uniform only because a chunk's
 * work-items share dimensions 1 and 2 (a block of a row per get_id(1), as kapi's CPU folds and
 * scans launch with one row per group), splitting it would give each iteration a state
 * dispatch for a chunk of one work-item, or gathers across rows: kapi.reduce of a device
 * function ran 4.6 times as slow. */
static int runs_along_itself(const loops_t *L, size_t h, const char *in) {
  LLVMBasicBlockRef hb = L->l.blocks[h];
  for (size_t b = 0; b < L->l.nb; b++) {
    if (!in[b]) continue;
    for (LLVMValueRef i = LLVMGetFirstInstruction(L->l.blocks[b]); i;
         i = LLVMGetNextInstruction(i)) {
      if (LLVMGetTypeKind(LLVMTypeOf(i)) == LLVMVectorTypeKind) return 1;
      LLVMValueRef p = LLVMIsALoadInst(i)    ? LLVMGetOperand(i, 0)
                       : LLVMIsAStoreInst(i) ? LLVMGetOperand(i, 1)
                                             : NULL;
      if (p && LLVMIsAGetElementPtrInst(p) && LLVMGetNumOperands(p) == 2 &&
          steps_by_one(L, in, hb, LLVMGetOperand(p, 1), 0))
        return 1;
    }
  }
  return 0;
}

/* Adds the barriers of the loops to split (kc_hf_loop_regions in finalise_host.h); the
 * divergent ones go to *div (malloc'd, *ndiv of them). Returns how many loops, -1 when out of
 * memory. */
static int loop_regions(LLVMModuleRef m, kc_hf_kernel_t *k, divloop_t **div, size_t *ndiv) {
  loops_t L = {.l = {.fn = k->body, .entry = LLVMGetEntryBasicBlock(k->body)}};
  int count = -1;
  char *vary = NULL, *in = NULL, *rows_inside = NULL;
  uint32_t *stack = NULL;
  size_t *heads = NULL, *exits = NULL, nh = 0, nd = 0;
  char **ins = NULL; /* per split loop: its blocks (divergent ones only) */
  *div = NULL, *ndiv = 0;
  if (!live_index(&L.l)) goto out;
  live_local(&L.l);
  live_solve(&L.l);
  L.bw = (L.l.nb + WBITS - 1) / WBITS;
  L.dom = calloc(L.l.nb * L.bw + 1, sizeof(word_t));
  vary = divergence(&L.l, k, 0, NULL, &L.inside);
  L.vary = vary;
  /* the blocks a varying branch chooses when dimensions 1 and 2 vary too: a loop reached
   * only so is uniform only within a chunk (runs_along_itself) */
  if (varying_ids(k) < 3) free(divergence_in(&L.l, k, 0, NULL, &rows_inside, NULL, 0, 3));
  in = calloc(L.l.nb + 1, 1);
  stack = calloc(L.l.nb + 1, sizeof *stack);
  heads = calloc(L.l.nb + 1, sizeof *heads);
  exits = calloc(L.l.nb + 1, sizeof *exits);
  ins = calloc(L.l.nb + 1, sizeof *ins);
  *div = calloc(L.l.nb + 1, sizeof **div);
  if (!L.dom || !vary || !L.inside || !in || !stack || !heads || !exits || !ins || !*div ||
      !predecessors(&L))
    goto out;
  dominators(&L);
  for (size_t h = 1; h < L.l.nb; h++) {
    size_t ex = SIZE_MAX;
    int how = loop_splittable(&L, h, stack, in, &ex);
    if (how == LOOP_UNIFORM && rows_inside && rows_inside[h] && runs_along_itself(&L, h, in))
      how = LOOP_NO;
    if (how == LOOP_DIVERGENT && !(ins[nh] = malloc(L.l.nb))) goto out;
    if (how == LOOP_DIVERGENT) memcpy(ins[nh], in, L.l.nb);
    if (how != LOOP_NO) heads[nh] = h, exits[nh++] = how == LOOP_DIVERGENT ? ex : SIZE_MAX;
  }
  /* the barriers, once the analysis no longer looks at the blocks */
  LLVMBuilderRef b = LLVMCreateBuilderInContext(LLVMGetModuleContext(m));
  for (size_t i = 0; i < nh; i++) {
    LLVMBasicBlockRef hb = L.l.blocks[heads[i]];
    LLVMValueRef bh = add_barrier(m, b, first_non_phi(hb));
    if (exits[i] == SIZE_MAX) continue;
    divloop_t *d = &(*div)[nd++];
    d->bh = bh;
    LLVMBasicBlockRef xb = dedicated_exit(&L, b, ins[i], L.l.blocks[exits[i]]);
    d->bx = add_barrier(m, b, LLVMGetBasicBlockTerminator(xb));
    d->pre = calloc(L.pred_at[heads[i] + 1] - L.pred_at[heads[i]] + 1, sizeof *d->pre);
    if (!d->pre) {
      LLVMDisposeBuilder(b);
      goto out;
    }
    for (uint32_t p = L.pred_at[heads[i]]; p < L.pred_at[heads[i] + 1]; p++)
      if (!bit_get(L.dom + L.pred[p] * L.bw, (uint32_t)heads[i]))
        d->pre[d->npre++] = LLVMGetBasicBlockTerminator(L.l.blocks[L.pred[p]]);
    d->blocks = calloc(L.l.nb + 1, sizeof *d->blocks);
    if (!d->blocks) {
      LLVMDisposeBuilder(b);
      goto out;
    }
    for (size_t j = 0; j < L.l.nb; j++)
      if (ins[i][j]) d->blocks[d->nblocks++] = L.l.blocks[j];
  }
  LLVMDisposeBuilder(b);
  count = (int)nh;
  *ndiv = nd;
out:
  for (size_t i = 0; ins && i < nh; i++)
    free(ins[i]);
  free(ins);
  free(vary), free(in), free(stack), free(heads), free(exits), free(L.dom), free(L.inside);
  free(L.pred), free(L.pred_at), free(rows_inside);
  live_free(&L.l);
  return count;
}

/* KAPI_HOST_SLOT_SHARE: unset or `1`, a phi saved per work-item shares the slot of one of its
 * incoming values where it can; `0`, every saved value has its own (to compare). */
static int slot_share_on(void) {
  const char *v = getenv("KAPI_HOST_SLOT_SHARE");
  return !(v && *v == '0');
}

/* Gives phi v (per work-item, saved, no slot of its own yet) the slot of one of its incoming
 * values: one saved per work-item in a slot of the same type, where no value already in that
 * slot is live across a barrier that v is live across. A slot holds only what crosses a
 * barrier (a region reloads every value live at its start, and saves at its end those live
 * at its barrier), so values never live across the same barrier can share it. The point is
 * the loop-carried value of a loop with barriers (a tiled matmul's `acc`): the phi crosses
 * the barrier at the top of the loop, its incoming value the one at the bottom, and the
 * region between them copied one slot to the other; in one slot the copy is a store of the
 * value just loaded from the same place, which LLVM deletes. Not in kernels with loops run as
 * regions, whose work-items may skip regions (a divergent loop's done flag): the caller
 * checks. Returns whether it shared one; slots[v] is set then, rep[v] the slot's first value. */
static int share_slots(split_t *s, const live_t *l, const word_t *live, size_t nbar,
                       LLVMTypeRef *stype, uint32_t *rep, LLVMValueRef *slots, const char *varying,
                       const pmap_t *spill_of, size_t v) {
  LLVMValueRef phi = l->vals[v];
  for (unsigned i = 0; i < LLVMCountIncoming(phi); i++) {
    /* a saved value is demoted by now: its uses load it from its spill */
    LLVMValueRef in = LLVMGetIncomingValue(phi, i);
    uint32_t w = LLVMIsALoadInst(in) ? pmap_get(spill_of, LLVMGetOperand(in, 0)) : UINT32_MAX;
    if (w == UINT32_MAX || w == v || !slots[w] || !varying[w] || stype[w] != stype[v] ||
        s->narrow[w] != s->narrow[v])
      continue;
    uint32_t r = rep[w];
    int clash = 0;
    for (size_t u = 0; u < l->nv && !clash; u++) {
      if (rep[u] != r || !slots[u]) continue;
      for (size_t k = 0; k < nbar && !clash; k++)
        clash =
            bit_get(live + k * l->words, (uint32_t)u) && bit_get(live + k * l->words, (uint32_t)v);
    }
    if (clash) continue;
    slots[v] = slots[w];
    rep[v] = r;
    s->nshared++;
    return 1;
  }
  return 0;
}

/* KAPI_HOST_LOOPVEC_UNIFORM=0 turns active_uniform off (to compare). */
static int active_uniform_on(void) {
  const char *v = getenv("KAPI_HOST_LOOPVEC_UNIFORM");
  return !v || strcmp(v, "0") != 0;
}

/* A divergent loop's counts that every work-item still in it shares: a count that starts the
 * same in every work-item and steps by the same constant in each, while work-items only leave.
 * The divergence analysis calls it varying (the loop's exits make its header's phis differ
 * between work-items once some have left), yet every work-item that crosses the loop's header
 * barrier holds the same value there. A header phi that is such a count, uniform but for the
 * loop's own exits (divergence_in's active-lane mode), live at no other barrier (not at the
 * loop's exit, where work-items arrive in different rounds), in a loop with no other barrier
 * (a round is then one iteration of every work-item still in it), is cleared in `varying` and
 * given s->step: it is kept once per chunk, in a uniform slot that the loop's entry writes and
 * each round's check, before it sends the work-items done with the loop on, reads and steps
 * (split()), for every work-item alike. The vectorised round then keeps one scalar count, not a
 * vector per work-item, and what needs it per work-item at the exit is built from that scalar;
 * the round's test of it is a scalar one. */
static int active_uniform(split_t *s, const live_t *l, char *varying, const word_t *live,
                          LLVMValueRef *bars, size_t nbar) {
  if (!active_uniform_on()) return 1;
  char **mem = calloc(s->ndiv + 1, sizeof *mem);
  size_t *kh = calloc(s->ndiv + 1, sizeof *kh);
  s->step = calloc(l->nv + 1, sizeof *s->step);
  s->step_loop = calloc(l->nv + 1, sizeof *s->step_loop);
  s->step_state = calloc(l->nv + 1, sizeof *s->step_state);
  int ok = mem && kh && s->step && s->step_loop && s->step_state;
  for (size_t i = 0; ok && i < s->ndiv; i++) {
    ok = (mem[i] = calloc(l->nb + 1, 1)) != NULL;
    for (size_t j = 0; ok && j < s->div[i].nblocks; j++) {
      uint32_t b = pmap_get(&l->bidx, s->div[i].blocks[j]);
      if (b != UINT32_MAX) mem[i][b] = 1;
    }
    kh[i] = SIZE_MAX;
    for (size_t k = 0; ok && k < nbar; k++) {
      uint32_t b = pmap_get(&l->bidx, LLVMGetInstructionParent(bars[k]));
      if (bars[k] == s->div[i].bh)
        kh[i] = k;
      else if (b != UINT32_MAX && mem[i][b])
        kh[i] = SIZE_MAX - 1; /* another barrier in it */
    }
  }
  char *avary = ok ? divergence_in(l, s->k, 0, NULL, NULL, mem, s->ndiv, varying_ids(s->k)) : NULL;
  ok = ok && avary;
  for (size_t v = 0; ok && v < l->nv; v++) {
    if (!varying[v] || avary[v] || !LLVMIsAPHINode(l->vals[v])) continue;
    LLVMBasicBlockRef bb = LLVMGetInstructionParent(l->vals[v]);
    size_t in = SIZE_MAX;
    for (size_t i = 0; i < s->ndiv && in == SIZE_MAX; i++)
      if (kh[i] < nbar && LLVMGetInstructionParent(s->div[i].bh) == bb) in = i;
    if (in == SIZE_MAX) continue;
    int only = 1;
    for (size_t k = 0; k < nbar && only; k++)
      if (k != kh[in] && bit_get(live + k * l->words, (uint32_t)v)) only = 0;
    LLVMValueRef step = only ? induction_step(l, mem[in], l->vals[v], 0) : NULL;
    if (step) varying[v] = 0, s->step[v] = step, s->step_loop[v] = in;
    if (step) s->step_state[v] = (uint32_t)kh[in] + 1;
  }
  for (size_t i = 0; mem && i < s->ndiv; i++)
    free(mem[i]);
  free(mem), free(kh), free(avary);
  return ok;
}

/* A divergent loop's done flag per work-item: 32 bits where the target stores those under a
 * mask but not bytes (AVX2 without AVX-512BW: its byte stores under a mask became a branch
 * per lane, with the flags kept in memory; mandelbrot 24.6 -> 15.2 ms), else a byte (SSE
 * stores neither under a mask, and ran slower with the wider flag). */
static LLVMTypeRef flag_type(LLVMContextRef c) {
  const char *f = kc_hf_target_features();
  return strstr(f, "+avx2") && !strstr(f, "+avx512bw") ? LLVMInt32TypeInContext(c)
                                                       : LLVMInt8TypeInContext(c);
}

/* KAPI_HOST_FREE_SAVES=0 keeps every save of a divergent loop's values masked (to compare). */
static int free_saves_on(void) {
  const char *v = getenv("KAPI_HOST_FREE_SAVES");
  return !v || strcmp(v, "0") != 0;
}

/* The slots, as byte ranges of a full chunk's (kc_hf_kernel_t.free_saves), of the values that
 * are live across a divergent loop's header barrier and no other barrier (mandelbrot's z),
 * in a loop with no other barrier. Such a value is saved at that barrier only, and read only
 * where a work-item resumes there. While the loop's rounds run, every work-item of the chunk
 * is either at the header or gone to the exit barrier, where the value is dead; it is next
 * read after the work-item enters the loop again, which saves it anew (the loop's entries are
 * uniform: all enter together). So the lanes a round's save leaves out (those leaving the
 * loop, those gone before, a chunk's missing work-items) may be given whatever the save
 * computed for them: the save needs no select with the slot's old lanes, which the value
 * would otherwise go through on every iteration. soff and sbytes: each value's own slot. */
static int find_free_saves(split_t *s, const live_t *l, const word_t *live, LLVMValueRef *bars,
                           size_t nbar, const uint64_t *soff, const uint64_t *sbytes) {
  kc_hf_kernel_t *k = s->k;
  for (size_t i = 0; i < s->ndiv; i++) {
    const divloop_t *d = &s->div[i];
    int alone = 1; /* no other barrier in the loop */
    for (size_t b = 0; b < nbar && alone; b++) {
      LLVMBasicBlockRef bb = LLVMGetInstructionParent(bars[b]);
      for (size_t j = 0; j < d->nblocks && alone; j++)
        alone = b == d->kh || d->blocks[j] != bb;
    }
    for (size_t v = 0; alone && v < l->nv; v++) {
      if (!sbytes[v] || !bit_get(live + d->kh * l->words, (uint32_t)v)) continue;
      int only = 1;
      for (size_t b = 0; b < nbar && only; b++)
        only = b == d->kh || !bit_get(live + b * l->words, (uint32_t)v);
      if (!only) continue;
      uint64_t *r = realloc(k->free_saves, (k->nfree + 1) * 2 * sizeof *r);
      if (!r) return 0;
      k->free_saves = r;
      r[2 * k->nfree] = (uint64_t)k->chunk * soff[v];
      r[2 * k->nfree + 1] = (uint64_t)k->chunk * (soff[v] + sbytes[v]);
      k->nfree++;
    }
  }
  return 1;
}

/* Values the same in every work-item of a chunk that are live across a divergent loop's
 * barriers (its header's or its exit's) get per-work-item slots all the same: the loop's rounds
 * run under a mask, so one copy per chunk is read and written each round by a masked gather
 * and scatter of one address (mandelbrot's `ci` from get_id(1), uniform once dimension 1 is:
 * 5.7 times as slow), where per-work-item copies in the frame become vector registers
 * (kc_hf_unmask_slots). A divergent loop's counts (active_uniform's steps) keep their own
 * scheme. Marking a value varying is always sound. KAPI_HOST_ROUND_UNIFORMS=0: one copy per
 * chunk, as before. */
static void per_lane_across_rounds(split_t *s, const live_t *l, char *varying, const word_t *live,
                                   LLVMValueRef *bars, size_t nbar) {
  const char *v = getenv("KAPI_HOST_ROUND_UNIFORMS"); /* `0`: one copy per chunk, as before */
  if (v && *v == '0') return;
  for (size_t k = 0; k < nbar; k++) {
    int in_rounds = 0;
    for (size_t i = 0; i < s->ndiv && !in_rounds; i++)
      in_rounds = bars[k] == s->div[i].bh || bars[k] == s->div[i].bx;
    if (!in_rounds) continue;
    for (size_t v = 0; v < l->nv; v++)
      if (bit_get(live + k * l->words, (uint32_t)v) && !(s->step && s->step[v])) varying[v] = 1;
  }
}

static int split(split_t *s, LLVMValueRef *bars, size_t nbar, LLVMValueRef *allocas,
                 size_t nalloca) {
  live_t l = {.fn = s->k->body, .entry = LLVMGetEntryBasicBlock(s->k->body)};
  word_t *live = NULL;
  LLVMValueRef *spills = NULL, *slots = NULL, *stores = NULL, *memo = NULL;
  LLVMBasicBlockRef *resume = NULL;
  char *varying = NULL, *bvarying = NULL, *kind = NULL;
  uint64_t *soff = NULL, *sbytes = NULL; /* per value, its own per-work-item slot */
  pmap_t spill_of = {0};
  int ok = live_index(&l);
  if (ok) {
    live_local(&l);
    live_solve(&l);
    live = calloc((nbar + 1) * l.words, sizeof *live);
    spills = calloc(l.nv + 1, sizeof *spills);
    slots = calloc(l.nv + 1, sizeof *slots);
    stores = calloc(l.nv + 1, sizeof *stores);
    memo = calloc(l.nv + 1, sizeof *memo);
    resume = calloc(nbar + 1, sizeof *resume);
    kind = calloc(l.nv + 1, 1);
    soff = calloc(l.nv + 1, sizeof *soff);
    sbytes = calloc(l.nv + 1, sizeof *sbytes);
    ok = live && spills && slots && stores && memo && resume && kind && soff && sbytes &&
         pmap_init(&spill_of, l.nv);
  }
  if (!ok) {
    s->log = kc_msg("out of memory");
    goto out;
  }
  /* 1. liveness on the untouched CFG; `all` (row nbar) is the union over barriers. */
  word_t *all = live + nbar * l.words;
  for (size_t k = 0; k < nbar; k++) {
    live_after(&l, bars[k], live + k * l.words);
    for (size_t w = 0; w < l.words; w++)
      all[w] |= live[k * l.words + w];
  }
  /* 2. private arrays to slots (their addresses are entry-block values, never saved). */
  if (!(ok = privatise_allocas(s, allocas, nalloca))) goto out;
  make_scopes(s);
  /* 3. saved values to wi-local allocas, each with its slot unless it is recomputed. */
  char *recompute = calloc(l.nv + 1, 1);
  if (!recompute) {
    s->log = kc_msg("out of memory");
    ok = 0;
    goto out;
  }
  for (size_t v = 0; v < l.nv; v++)
    recompute[v] = bit_get(all, (uint32_t)v) && remat_ok(&l, l.vals[v], 0);
  varying = divergence(&l, s->k, 0, NULL, NULL);
  bvarying = varying ? divergence(&l, s->k, 1, &s->k->lockstep, NULL) : NULL;
  if (!varying || !bvarying) {
    free(recompute);
    s->log = kc_msg("out of memory");
    ok = 0;
    goto out;
  }
  if (s->ndiv && !active_uniform(s, &l, varying, live, bars, nbar)) {
    free(recompute);
    s->log = kc_msg("out of memory");
    ok = 0;
    goto out;
  }
  if (s->ndiv) per_lane_across_rounds(s, &l, varying, live, bars, nbar);
  s->narrow = calloc(l.nv + 1, 1);
  if (!s->narrow || !narrow_saves(s, &l, all, recompute)) {
    free(recompute);
    s->log = kc_msg("out of memory");
    ok = 0;
    goto out;
  }
  /* Per-work-item values saved across barriers share a slot with a phi's incoming value
   * (share_slots); the rest get their own. */
  LLVMTypeRef *stype = calloc(l.nv + 1, sizeof *stype);
  uint32_t *rep = malloc((l.nv + 1) * sizeof *rep);
  if (!stype || !rep) {
    free(recompute), free(stype), free(rep);
    s->log = kc_msg("out of memory");
    ok = 0;
    goto out;
  }
  for (size_t v = 0; v < l.nv; v++)
    rep[v] = (uint32_t)v;
  for (size_t v = 0; s->step && v < l.nv; v++)
    if (s->step[v] && s->narrow[v]) s->narrow[v] = 0, s->nnarrow--; /* split() steps it whole */
  for (size_t v = 0; v < l.nv; v++) {
    if (!bit_get(all, (uint32_t)v)) continue;
    LLVMTypeRef t = LLVMTypeOf(l.vals[v]);
    if (!LLVMTypeIsSized(t) || !(spills[v] = demote(s, l.vals[v]))) {
      free(recompute);
      s->log =
          kc_msg("kernel %s: a value of an unsupported type is live across a barrier", s->k->name);
      ok = 0;
      goto out;
    }
    pmap_put(&spill_of, spills[v], (uint32_t)v);
    if (s->narrow[v]) t = LLVMInt32TypeInContext(s->c); /* the slot's type */
    uint64_t bytes = LLVMABISizeOfType(s->td, t);
    unsigned align = LLVMABIAlignmentOfType(s->td, t);
    if (recompute[v]) continue;
    stype[v] = t;
    if (varying[v]) {
      if (!LLVMIsAPHINode(l.vals[v]) || !slot_share_on() || s->k->loopvec || s->ndiv) {
        slots[v] = stores[v] = slot(s, bytes, align, LLVMPointerType(t, 0));
        soff[v] = s->last_slot, sbytes[v] = s->rec - s->last_slot;
      }
      /* else the phi's slot once every other value has one, below */
    } else if (!bvarying[v] && s->k->lockstep && !(s->step && s->step[v])) {
      kind[v] = SLOT_BATCH;
      batch_slot(s, bytes, align, LLVMPointerType(t, 0), &slots[v], &stores[v]);
    } else {
      kind[v] = SLOT_GROUP;
      uniform_slot(s, bytes, align, LLVMPointerType(t, 0), &slots[v], &stores[v]);
    }
  }
  for (size_t v = 0; v < l.nv; v++) {
    if (!stype[v] || slots[v] || !varying[v]) continue; /* a phi left for now above */
    if (!share_slots(s, &l, live, nbar, stype, rep, slots, varying, &spill_of, v)) {
      LLVMTypeRef t = stype[v];
      slots[v] = slot(s, LLVMABISizeOfType(s->td, t), LLVMABIAlignmentOfType(s->td, t),
                      LLVMPointerType(t, 0));
    }
    stores[v] = slots[v];
  }
  free(recompute), free(stype), free(rep);
  /* each divergent loop's flag: cleared on entering the loop, set on leaving it */
  for (size_t i = 0; i < s->ndiv; i++) {
    divloop_t *d = &s->div[i];
    LLVMTypeRef ft = flag_type(s->c);
    unsigned fb = (unsigned)LLVMABISizeOfType(s->td, ft);
    d->done = slot(s, fb, fb, LLVMPointerType(ft, 0));
    for (size_t j = 0; j <= d->npre; j++) {
      LLVMPositionBuilderBefore(s->b, j < d->npre ? d->pre[j] : d->bx);
      LLVMValueRef st = LLVMBuildStore(s->b, LLVMConstInt(ft, j == d->npre, 0), d->done);
      set_scopes(s, st, SCOPE_WI);
      if (j == d->npre) d->set = st;
    }
    for (size_t k = 0; k < nbar; k++) {
      if (bars[k] == d->bh) d->kh = k;
      if (bars[k] == d->bx) d->kx = k;
    }
    /* the loop's counts (active_uniform): its entry writes their first values */
    for (size_t v = 0; s->step && v < l.nv; v++) {
      if (!s->step[v] || s->step_loop[v] != i) continue;
      for (size_t j = 0; j < d->npre; j++) {
        LLVMBasicBlockRef from = LLVMGetInstructionParent(d->pre[j]);
        LLVMValueRef first = NULL;
        for (unsigned q = 0; q < LLVMCountIncoming(l.vals[v]) && !first; q++)
          if (LLVMGetIncomingBlock(l.vals[v], q) == from)
            first = LLVMGetIncomingValue(l.vals[v], q);
        LLVMPositionBuilderBefore(s->b, d->pre[j]);
        set_scopes(s, LLVMBuildStore(s->b, first, stores[v]), SCOPE_NEXT);
      }
    }
  }
  if (s->ndiv && free_saves_on() && !find_free_saves(s, &l, live, bars, nbar, soff, sbytes)) {
    s->log = kc_msg("out of memory");
    ok = 0;
    goto out;
  }
  if (s->rec > KC_HF_FIBER_PRIVATE) {
    s->log = kc_msg("kernel %s needs %llu bytes of private (per work-item) memory; the host CPU "
                    "device supports %u",
                    s->k->name, (unsigned long long)s->rec, KC_HF_FIBER_PRIVATE);
    ok = 0;
    goto out;
  }
  /* 4. split at each barrier. */
  remat_t rm = {.l = &l, .spill_of = &spill_of, .memo = memo};
  for (size_t k = 0; k < nbar; k++) {
    demote_successor_phis(s, LLVMGetInstructionParent(bars[k]));
    s->unaligned = 0, s->flag_set = NULL;
    for (size_t i = 0; i < s->ndiv; i++)
      if (s->div[i].kx == k) s->unaligned = 1, s->flag_set = s->div[i].set;
    resume[k] =
        split_at(s, bars[k], (uint32_t)k + 1, spills, slots, stores, kind, live + k * l.words, &rm);
  }
  /* 5. the entry block dispatches on the state. */
  LLVMValueRef br = LLVMGetBasicBlockTerminator(l.entry);
  LLVMBasicBlockRef body = LLVMGetSuccessor(br, 0);
  LLVMInstructionEraseFromParent(br);
  LLVMPositionBuilderAtEnd(s->b, l.entry);
  LLVMValueRef sw = LLVMBuildSwitch(s->b, s->k->state, body, (unsigned)nbar);
  for (size_t k = 0; k < nbar; k++)
    LLVMAddCase(sw, LLVMConstInt(LLVMInt32TypeInContext(s->c), k + 1, 0), resume[k]);
  /* a divergent loop's header region: work-items done with the loop go on to its exit's */
  for (size_t i = 0; i < s->ndiv; i++) {
    divloop_t *d = &s->div[i];
    LLVMTypeRef i32 = LLVMInt32TypeInContext(s->c);
    LLVMBasicBlockRef chk = LLVMAppendBasicBlockInContext(s->c, s->k->body, "loop.check");
    LLVMBasicBlockRef skip = LLVMAppendBasicBlockInContext(s->c, s->k->body, "loop.done");
    LLVMPositionBuilderAtEnd(s->b, chk);
    /* the loop's counts, for every work-item alike: this round's, and the next round's */
    for (size_t u = 0; s->step && u < l.nv; u++) {
      if (!s->step[u] || s->step_loop[u] != i) continue;
      LLVMTypeRef t = LLVMGetAllocatedType(spills[u]);
      LLVMValueRef x = LLVMBuildLoad2(s->b, t, slots[u], "kapi.count");
      set_scopes(s, x, SCOPE_CUR);
      LLVMBuildStore(s->b, x, spills[u]);
      set_scopes(s, LLVMBuildStore(s->b, LLVMBuildAdd(s->b, x, s->step[u], ""), stores[u]),
                 SCOPE_NEXT);
    }
    LLVMTypeRef ft = flag_type(s->c);
    LLVMValueRef v = LLVMBuildLoad2(s->b, ft, d->done, "");
    set_scopes(s, v, SCOPE_WI);
    LLVMValueRef gone = LLVMBuildICmp(s->b, LLVMIntNE, v, LLVMConstInt(ft, 0, 0), "");
    LLVMBuildCondBr(s->b, gone, skip, resume[d->kh]);
    LLVMPositionBuilderAtEnd(s->b, skip);
    LLVMBuildRet(s->b, LLVMConstInt(i32, d->kx + 1, 0));
    /* the switch's case for the header's state now goes to the check */
    for (unsigned c = 1; c <= (unsigned)nbar; c++)
      if (LLVMGetSuccessor(sw, c) == resume[d->kh]) LLVMSetSuccessor(sw, c, chk);
  }
out:
  free(live), free(spills), free(slots), free(stores), free(memo), free(resume), free(varying);
  free(soff), free(sbytes);
  free(bvarying), free(kind);
  pmap_free(&spill_of);
  live_free(&l);
  return ok;
}

int kc_hf_split_regions(LLVMModuleRef m, kc_hf_kernel_t *k, char **log) {
  split_t s = {.m = m, .c = LLVMGetModuleContext(m), .td = LLVMGetModuleDataLayout(m), .k = k};
  drop_lifetimes(k->body);
  divloop_t *div = NULL;
  size_t ndiv = 0;
  int looped = k->loopvec ? loop_regions(m, k, &div, &ndiv) : 0;
  if (looped < 0) {
    for (size_t i = 0; i < ndiv; i++)
      free(div[i].pre), free(div[i].blocks);
    free(div);
    return *log = kc_msg("out of memory"), 0;
  }
  s.div = div, s.ndiv = ndiv;
  if (k->loopvec) { /* the slots are a chunk's (make_region_wi) */
    k->chunk = kc_hf_loopvec_chunk(ndiv > 0);
    k->nwi = LLVMConstInt(LLVMInt64TypeInContext(s.c), k->chunk, 0);
  }
  size_t nbar = 0, nalloca = 0;
  LLVMValueRef *bars = collect(k->body, is_barrier, &nbar);
  /* run takes the smallest state: a divergent loop's header barrier comes before its exit's */
  for (size_t i = 0; bars && i < ndiv; i++) {
    size_t ih = 0, ix = 0;
    for (size_t j = 0; j < nbar; j++) {
      if (bars[j] == div[i].bh) ih = j;
      if (bars[j] == div[i].bx) ix = j;
    }
    if (ih > ix) bars[ih] = div[i].bx, bars[ix] = div[i].bh;
  }
  LLVMValueRef *allocas = collect(k->body, is_alloca, &nalloca);
  s.b = LLVMCreateBuilderInContext(s.c);
  s.at_entry = LLVMCreateBuilderInContext(s.c);
  int ok = bars && allocas;
  if (!ok) s.log = kc_msg("out of memory");
  if (ok) {
    LLVMPositionBuilderBefore(s.at_entry,
                              LLVMGetBasicBlockTerminator(LLVMGetEntryBasicBlock(k->body)));
    ok = split(&s, bars, nbar, allocas, nalloca);
  }
  unsigned nmarked = ok ? mark_kernel_accesses(&s) : 0;
  LLVMDisposeBuilder(s.b);
  LLVMDisposeBuilder(s.at_entry);
  free(bars);
  free(allocas);
  k->batches = k->lockstep && s.rec == 0 && !k->loopvec;
  const char *yes = k->batches ? "yes" : "no"; /* for KAPI_DUMP=host, beside kapi-scheme */
  LLVMAddAttributeAtIndex(
      k->run, LLVMAttributeFunctionIndex,
      LLVMCreateStringAttribute(s.c, "kapi-batches", 12, yes, (unsigned)strlen(yes)));
  char n32[24];
  if (k->loopvec) { /* for KAPI_DUMP=host: how many loops run as regions, how many divergent */
    snprintf(n32, sizeof n32, "%d", looped);
    LLVMAddAttributeAtIndex(
        k->run, LLVMAttributeFunctionIndex,
        LLVMCreateStringAttribute(s.c, "kapi-loop-regions", 17, n32, (unsigned)strlen(n32)));
    snprintf(n32, sizeof n32, "%zu", ndiv);
    LLVMAddAttributeAtIndex(
        k->run, LLVMAttributeFunctionIndex,
        LLVMCreateStringAttribute(s.c, "kapi-divergent-loops", 20, n32, (unsigned)strlen(n32)));
  }
  snprintf(n32, sizeof n32, "%u", s.nnarrow);
  LLVMAddAttributeAtIndex(
      k->run, LLVMAttributeFunctionIndex,
      LLVMCreateStringAttribute(s.c, "kapi-saves32", 12, n32, (unsigned)strlen(n32)));
  snprintf(n32, sizeof n32, "%u", nmarked);
  LLVMAddAttributeAtIndex(
      k->run, LLVMAttributeFunctionIndex,
      LLVMCreateStringAttribute(s.c, "kapi-slot-noalias", 17, n32, (unsigned)strlen(n32)));
  snprintf(n32, sizeof n32, "%u", s.nshared);
  LLVMAddAttributeAtIndex(
      k->run, LLVMAttributeFunctionIndex,
      LLVMCreateStringAttribute(s.c, "kapi-shared-slots", 17, n32, (unsigned)strlen(n32)));
  free(s.narrow), free(s.step), free(s.step_loop), free(s.step_state);
  if (ok && ndiv) {
    k->min_states = calloc(nbar + 2, 1);
    ok = k->min_states != NULL;
    for (size_t i = 0; ok && i < ndiv; i++)
      k->min_states[div[i].kh + 1] = 1;
  }
  for (size_t i = 0; i < ndiv; i++)
    free(div[i].pre), free(div[i].blocks);
  free(div);
  if (ok)
    ok = kc_hf_make_region_run(m, k, (uint32_t)nbar + 1, (s.rec + 63) / 64 * 64,
                               (s.urec + 63) / 64 * 64, (s.brec + 63) / 64 * 64);
  if (!ok)
    *log = s.log ? s.log : kc_msg("out of memory");
  else
    free(s.log);
  return ok;
}

/* ---- Forward progress on fibers ------------------------------------------------------ */

static int is_atomic_load(LLVMValueRef i) {
  return LLVMIsALoadInst(i) && LLVMGetOrdering(i) != LLVMAtomicOrderingNotAtomic;
}

int kc_hf_add_yields(LLVMModuleRef m, const kc_hf_kernel_t *k, char **log) {
  if (!k->spins) return 1;
  size_t n = 0;
  LLVMValueRef *loads = collect(k->body, is_atomic_load, &n);
  if (!loads) return *log = kc_msg("out of memory"), 0;
  LLVMContextRef c = LLVMGetModuleContext(m);
  LLVMValueRef f = LLVMGetNamedFunction(m, "__kapi_host_yield");
  if (!f)
    f = LLVMAddFunction(m, "__kapi_host_yield",
                        LLVMFunctionType(LLVMVoidTypeInContext(c), NULL, 0, 0));
  LLVMBuilderRef b = LLVMCreateBuilderInContext(c);
  for (size_t i = 0; i < n; i++) {
    if (!kc_hf_block_in_cycle(LLVMGetInstructionParent(loads[i]))) continue;
    LLVMPositionBuilderBefore(b, loads[i]);
    kc_hf_call(b, f, NULL, 0);
  }
  LLVMDisposeBuilder(b);
  free(loads);
  return 1;
}

/* ---- Narrowing region loops ---------------------------------------------------------------- */

/* A region loop whose every iteration does nothing unless `x < U` (U the same for the whole
 * loop), as a tree reduction's `if lid < stride` makes it once wi is inlined and cleaned up,
 * needs to run only while x < U: its bound becomes max(min(n, U), 1) (the loop is do-while,
 * and iteration 0 then skips itself when U <= 0). Matched strictly: header = the induction
 * phi, then the guard; the guard's false edge goes straight to the latch, which only steps
 * and tests; nothing from the loop is used after it. */
typedef struct {
  LLVMBasicBlockRef head, latch;
  LLVMValueRef iv, next, exit_cmp, guard;
} narrow_t;

static int only_inside(LLVMValueRef v, const pmap_t *in_loop) {
  for (LLVMUseRef u = LLVMGetFirstUse(v); u; u = LLVMGetNextUse(u))
    if (pmap_get(in_loop, LLVMGetInstructionParent(LLVMGetUser(u))) == UINT32_MAX) return 0;
  return 1;
}

/* Blocks of the loop headed by n->head with latch n->latch (reachable from the head without
 * passing the latch), into `in`; 0 when the loop has another way out. */
static int loop_blocks(const narrow_t *n, pmap_t *in, LLVMBasicBlockRef *stack, size_t cap) {
  size_t top = 0;
  pmap_put(in, n->latch, 1);
  pmap_put(in, n->head, 1);
  stack[top++] = n->head;
  while (top) {
    LLVMValueRef t = LLVMGetBasicBlockTerminator(stack[--top]);
    for (unsigned i = 0; t && i < LLVMGetNumSuccessors(t); i++) {
      LLVMBasicBlockRef s = LLVMGetSuccessor(t, i);
      if (pmap_get(in, s) != UINT32_MAX) continue;
      if (LLVMIsAReturnInst(LLVMGetBasicBlockTerminator(s)) || top == cap) return 0;
      pmap_put(in, s, 1);
      stack[top++] = s;
    }
  }
  return 1;
}

static int match_latch(narrow_t *n) {
  LLVMValueRef t = LLVMGetBasicBlockTerminator(n->latch);
  if (!t || !LLVMIsABranchInst(t) || !LLVMIsConditional(t)) return 0;
  LLVMValueRef c = LLVMGetCondition(t);
  if (!LLVMIsAICmpInst(c) || LLVMGetOperand(c, 0) != n->next) return 0;
  LLVMIntPredicate p = LLVMGetICmpPredicate(c);
  int back = LLVMGetSuccessor(t, 0) == n->head;
  if (!((p == LLVMIntULT && back) || (p == LLVMIntNE && back) || (p == LLVMIntEQ && !back)))
    return 0;
  /* the latch: the step, the test, the branch, and nothing else */
  LLVMValueRef first = LLVMGetFirstInstruction(n->latch);
  if (first != n->next || LLVMGetNextInstruction(first) != c || LLVMGetNextInstruction(c) != t)
    return 0;
  n->exit_cmp = c;
  return 1;
}

static int match_head(narrow_t *n) {
  LLVMValueRef iv = LLVMGetFirstInstruction(n->head);
  if (!iv || !LLVMIsAPHINode(iv) || LLVMCountIncoming(iv) != 2) return 0;
  LLVMValueRef after = LLVMGetNextInstruction(iv);
  if (LLVMIsAPHINode(after)) return 0; /* another loop-carried value: iterations matter */
  int li = LLVMGetIncomingBlock(iv, 0) == n->latch ? 0 : 1;
  if (LLVMGetIncomingBlock(iv, (unsigned)li) != n->latch) return 0;
  LLVMValueRef start = LLVMGetIncomingValue(iv, (unsigned)!li);
  LLVMValueRef next = LLVMGetIncomingValue(iv, (unsigned)li);
  if (!LLVMIsAConstantInt(start) || LLVMConstIntGetZExtValue(start) != 0) return 0;
  if (!LLVMIsAInstruction(next) || LLVMGetInstructionOpcode(next) != LLVMAdd ||
      LLVMGetOperand(next, 0) != iv || !LLVMIsAConstantInt(LLVMGetOperand(next, 1)) ||
      LLVMConstIntGetZExtValue(LLVMGetOperand(next, 1)) != 1)
    return 0;
  LLVMValueRef t = LLVMGetBasicBlockTerminator(n->head);
  if (!LLVMIsABranchInst(t) || !LLVMIsConditional(t) || LLVMGetSuccessor(t, 1) != n->latch)
    return 0;
  LLVMValueRef g = LLVMGetCondition(t);
  if (!LLVMIsAICmpInst(g) || LLVMGetOperand(g, 0) != iv) return 0;
  LLVMIntPredicate p = LLVMGetICmpPredicate(g);
  if (p != LLVMIntSLT && p != LLVMIntULT) return 0;
  n->iv = iv, n->next = next, n->guard = g;
  return 1;
}

/* The bound becomes max(m, 1) with m = min(n, U) (U clamped at 0 for a signed guard); every
 * iteration left then has x < U exactly when U > 0 (n >= 1: run skips empty groups), which
 * replaces the guard: the same for the whole loop, so the body is no longer masked per
 * work-item, and written as U > 0 it tells later passes U's sign (`slm[lid + U]` then needs
 * no negative-index wrap-around and loads contiguously). */
static void narrow_one(LLVMBuilderRef b, narrow_t *n, LLVMBasicBlockRef pre) {
  LLVMValueRef bound = LLVMGetOperand(n->exit_cmp, 1), u = LLVMGetOperand(n->guard, 1);
  LLVMTypeRef t = LLVMTypeOf(bound);
  LLVMPositionBuilderBefore(b, LLVMGetBasicBlockTerminator(pre));
  LLVMValueRef zero = LLVMConstInt(t, 0, 0), one = LLVMConstInt(t, 1, 0);
  int is_signed = LLVMGetICmpPredicate(n->guard) == LLVMIntSLT;
  LLVMValueRef any = LLVMBuildICmp(b, is_signed ? LLVMIntSGT : LLVMIntNE, u, zero, "kapi.active");
  if (is_signed) u = LLVMBuildSelect(b, any, u, zero, ""); /* negative U: none active */
  LLVMValueRef m = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntULT, u, bound, ""), u, bound, "");
  m = LLVMBuildSelect(b, any, m, one, "kapi.narrowed");
  LLVMSetOperand(n->exit_cmp, 1, m);
  LLVMReplaceAllUsesWith(n->guard, any);
  LLVMInstructionEraseFromParent(n->guard);
}

int kc_hf_narrow_region_loops(kc_hf_kernel_t *k) {
  LLVMValueRef fn = k->run;
  size_t nb = 0;
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb))
    nb++;
  LLVMBasicBlockRef *stack = malloc((nb + 1) * sizeof *stack);
  if (!stack) return 0;
  LLVMBuilderRef b = LLVMCreateBuilderInContext(LLVMGetTypeContext(LLVMTypeOf(fn)));
  int count = 0;
  for (LLVMBasicBlockRef h = LLVMGetFirstBasicBlock(fn); h; h = LLVMGetNextBasicBlock(h)) {
    narrow_t n = {.head = h};
    LLVMValueRef iv = LLVMGetFirstInstruction(h);
    if (!iv || !LLVMIsAPHINode(iv) || LLVMCountIncoming(iv) != 2) continue;
    LLVMBasicBlockRef pre = NULL;
    for (unsigned i = 0; i < 2; i++) {
      LLVMBasicBlockRef from = LLVMGetIncomingBlock(iv, i);
      LLVMValueRef t = LLVMGetBasicBlockTerminator(from);
      if (LLVMIsABranchInst(t) && LLVMIsConditional(t))
        n.latch = from;
      else
        pre = from;
    }
    if (!n.latch || !pre || !match_head(&n) || !match_latch(&n)) continue;
    pmap_t in;
    if (!pmap_init(&in, nb)) break;
    int ok = loop_blocks(&n, &in, stack, nb);
    LLVMValueRef u = LLVMGetOperand(n.guard, 1);
    ok = ok && (!LLVMIsAInstruction(u) || pmap_get(&in, LLVMGetInstructionParent(u)) == UINT32_MAX);
    for (LLVMBasicBlockRef bb = h; ok && bb; bb = LLVMGetNextBasicBlock(bb)) {
      if (pmap_get(&in, bb) == UINT32_MAX) continue;
      for (LLVMValueRef i = LLVMGetFirstInstruction(bb); ok && i; i = LLVMGetNextInstruction(i))
        ok = only_inside(i, &in);
    }
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); ok && bb != h;
         bb = LLVMGetNextBasicBlock(bb))
      if (pmap_get(&in, bb) != UINT32_MAX)
        for (LLVMValueRef i = LLVMGetFirstInstruction(bb); ok && i; i = LLVMGetNextInstruction(i))
          ok = only_inside(i, &in);
    pmap_free(&in);
    if (!ok) continue;
    narrow_one(b, &n, pre);
    count++;
  }
  LLVMDisposeBuilder(b);
  free(stack);
  return count;
}

/* ---- Slots in registers (loopvec kernels) ---------------------------------------------------- */

/* Constant byte offset of pointer p from the alloca it is a bitcast or constant i8 (array)
 * GEP of, which goes to *a; 0 when p is not such a pointer. */
static int frame_offset(LLVMValueRef p, LLVMValueRef *a, uint64_t *off) {
  *off = 0;
  for (int depth = 0; depth < 8; depth++) {
    if (LLVMIsAAllocaInst(p)) return *a = p, 1;
    if (LLVMIsABitCastInst(p)) {
      p = LLVMGetOperand(p, 0);
      continue;
    }
    if (!LLVMIsAGetElementPtrInst(p)) return 0;
    LLVMTypeRef src = LLVMGetGEPSourceElementType(p);
    unsigned n = (unsigned)LLVMGetNumOperands(p);
    int bytes = LLVMGetTypeKind(src) == LLVMIntegerTypeKind && LLVMGetIntTypeWidth(src) == 8;
    int array = LLVMGetTypeKind(src) == LLVMArrayTypeKind &&
                LLVMGetTypeKind(LLVMGetElementType(src)) == LLVMIntegerTypeKind &&
                LLVMGetIntTypeWidth(LLVMGetElementType(src)) == 8;
    if (!(bytes && n == 2) && !(array && n == 3)) return 0;
    for (unsigned i = 1; i < n; i++)
      if (!LLVMIsAConstantInt(LLVMGetOperand(p, i))) return 0;
    if (array && LLVMConstIntGetZExtValue(LLVMGetOperand(p, 1)) != 0) return 0;
    long long d = LLVMConstIntGetSExtValue(LLVMGetOperand(p, n - 1));
    if (d < 0) return 0;
    *off += (uint64_t)d;
    p = LLVMGetOperand(p, 0);
  }
  return 0;
}

/* Name of the function call i calls ("" if none). */
static const char *callee_name(LLVMValueRef i) {
  LLVMValueRef f = LLVMIsACallInst(i) ? LLVMGetCalledValue(i) : NULL;
  return f && LLVMIsAFunction(f) ? LLVMGetValueName(f) : "";
}

/* For v, a tree of vector umins whose leaves each select between the same two constant
 * splats: the lanes (an <N x i1>, built with b) where the tree's leaves give the smaller of
 * them, *lo, the other being *hi; NULL when v is no such tree. *lo = *hi = UINT64_MAX on
 * entry. */
static LLVMValueRef low_lanes(LLVMBuilderRef b, LLVMValueRef v, uint64_t *lo, uint64_t *hi,
                              int depth) {
  if (depth > 6 || !LLVMIsAInstruction(v)) return NULL;
  if (!strncmp(callee_name(v), "llvm.umin.v", 11)) {
    LLVMValueRef x = low_lanes(b, LLVMGetOperand(v, 0), lo, hi, depth + 1);
    LLVMValueRef y = x ? low_lanes(b, LLVMGetOperand(v, 1), lo, hi, depth + 1) : NULL;
    return y ? LLVMBuildOr(b, x, y, "") : NULL;
  }
  if (!LLVMIsASelectInst(v)) return NULL;
  LLVMValueRef m = LLVMGetOperand(v, 0), t = LLVMGetOperand(v, 1), f = LLVMGetOperand(v, 2);
  if (LLVMGetTypeKind(LLVMTypeOf(m)) != LLVMVectorTypeKind) return NULL;
  LLVMValueRef ts = LLVMIsAConstant(t) ? LLVMGetAggregateElement(t, 0) : NULL;
  LLVMValueRef fs = LLVMIsAConstant(f) ? LLVMGetAggregateElement(f, 0) : NULL;
  if (!ts || !fs || !LLVMIsAConstantInt(ts) || !LLVMIsAConstantInt(fs)) return NULL;
  unsigned n = LLVMGetVectorSize(LLVMTypeOf(t));
  for (unsigned i = 1; i < n; i++) /* splats only */
    if (LLVMGetAggregateElement(t, i) != ts || LLVMGetAggregateElement(f, i) != fs) return NULL;
  uint64_t a = LLVMConstIntGetZExtValue(ts), c = LLVMConstIntGetZExtValue(fs);
  uint64_t l = a < c ? a : c, h = a < c ? c : a;
  if (*lo == UINT64_MAX) *lo = l, *hi = h;
  if (l != *lo || h != *hi) return NULL;
  return a == l ? m : LLVMBuildNot(b, m, "");
}

/* low_lanes of phi v, whose incoming values are such trees or splats of *lo or *hi (a round's
 * copies that LLVM unswitched on a uniform test, one where every lane chooses the same): a phi
 * of their lanes, each built at the end of its incoming block; NULL when one is neither. */
static LLVMValueRef low_lanes_phi(LLVMBuilderRef b, LLVMValueRef v, uint64_t *lo, uint64_t *hi) {
  unsigned n = LLVMCountIncoming(v);
  LLVMValueRef *m = calloc(n + 1, sizeof *m);
  int ok = m != NULL;
  for (unsigned k = 0; ok && k < n; k++) { /* the trees first: they tell lo from hi */
    LLVMValueRef x = LLVMGetIncomingValue(v, k);
    if (LLVMIsAConstant(x)) continue;
    LLVMPositionBuilderBefore(b, LLVMGetBasicBlockTerminator(LLVMGetIncomingBlock(v, k)));
    ok = (m[k] = low_lanes(b, x, lo, hi, 1)) != NULL;
  }
  LLVMTypeRef mt = NULL;
  for (unsigned k = 0; ok && k < n; k++) {
    LLVMValueRef x = LLVMGetIncomingValue(v, k);
    unsigned lanes = LLVMGetVectorSize(LLVMTypeOf(x));
    mt = LLVMVectorType(LLVMInt1TypeInContext(LLVMGetTypeContext(LLVMTypeOf(x))), lanes);
    if (m[k]) continue;
    LLVMValueRef e = LLVMGetAggregateElement(x, 0);
    ok = e && LLVMIsAConstantInt(e) && *lo != UINT64_MAX;
    for (unsigned i = 1; ok && i < lanes; i++)
      ok = LLVMGetAggregateElement(x, i) == e;
    uint64_t c = ok ? LLVMConstIntGetZExtValue(e) : 0;
    ok = ok && (c == *lo || c == *hi);
    if (ok) m[k] = c == *lo ? LLVMConstAllOnes(mt) : LLVMConstNull(mt);
  }
  LLVMValueRef r = NULL;
  if (ok && mt) {
    LLVMBasicBlockRef bb = LLVMGetInstructionParent(v);
    LLVMPositionBuilder(b, bb, LLVMGetFirstInstruction(bb));
    r = LLVMBuildPhi(b, mt, "kapi.lanes");
    for (unsigned k = 0; k < n; k++) {
      LLVMBasicBlockRef from = LLVMGetIncomingBlock(v, k);
      LLVMAddIncoming(r, &m[k], &from, 1);
    }
  }
  free(m);
  return r;
}

/* The next state of a divergent loop's rounds is the umin over the lanes of a select between
 * two states, which x86 reduces in ten instructions: `any(lanes choosing the smaller) ?
 * smaller : larger` is a mask test. Returns how many reductions became one. */
static unsigned any_of_two(LLVMValueRef fn, LLVMBuilderRef b) {
  unsigned count = 0;
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb))
    for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i;) {
      LLVMValueRef next = LLVMGetNextInstruction(i);
      if (!strncmp(callee_name(i), "llvm.vector.reduce.umin.", 24)) {
        uint64_t lo = UINT64_MAX, hi = UINT64_MAX;
        LLVMValueRef x = LLVMGetOperand(i, 0), m;
        if (LLVMIsAPHINode(x)) {
          m = low_lanes_phi(b, x, &lo, &hi);
        } else {
          LLVMPositionBuilderBefore(b, i);
          m = low_lanes(b, x, &lo, &hi, 0);
        }
        LLVMPositionBuilderBefore(b, i);
        if (m) {
          LLVMContextRef c = LLVMGetTypeContext(LLVMTypeOf(m));
          unsigned n = LLVMGetVectorSize(LLVMTypeOf(m));
          LLVMTypeRef bits = LLVMIntTypeInContext(c, n), t = LLVMTypeOf(i);
          LLVMValueRef any = LLVMBuildICmp(b, LLVMIntNE, LLVMBuildBitCast(b, m, bits, ""),
                                           LLVMConstInt(bits, 0, 0), "kapi.any");
          LLVMReplaceAllUsesWith(
              i, LLVMBuildSelect(b, any, LLVMConstInt(t, lo, 0), LLVMConstInt(t, hi, 0), ""));
          LLVMInstructionEraseFromParent(i);
          count++;
        }
      }
      i = next;
    }
  return count;
}

/* A masked store into run's frame: where it starts and ends there. A free save must be the
 * only one at its place. */
typedef struct {
  LLVMValueRef at;
  uint64_t off, end;
} frame_store_t;

/* The function's masked stores into run's frame (*n of them, malloc'd); NULL when out of memory
 * or none. */
static frame_store_t *frame_stores(LLVMValueRef fn, LLVMTargetDataRef td, size_t *n) {
  frame_store_t *f = NULL;
  size_t cap = 0;
  *n = 0;
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb))
    for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i)) {
      LLVMValueRef a = NULL;
      uint64_t off = 0;
      if (strncmp(callee_name(i), "llvm.masked.store.", 18) ||
          !frame_offset(LLVMGetOperand(i, 1), &a, &off))
        continue;
      if (*n == cap) {
        cap = cap ? 2 * cap : 64;
        frame_store_t *more = realloc(f, cap * sizeof *f);
        if (!more) return free(f), *n = 0, NULL;
        f = more;
      }
      uint64_t bytes = LLVMStoreSizeOfType(td, LLVMTypeOf(LLVMGetOperand(i, 0)));
      f[(*n)++] = (frame_store_t){i, off, off + bytes};
    }
  return f;
}

/* Whether the masked store i, of `bytes` at offset off of the chunk's slots in run's frame
 * (alloca a), lies in one of k's free_saves and is the function's only masked store there (of
 * the n in f). */
static int free_save(const kc_hf_kernel_t *k, const frame_store_t *f, size_t n, LLVMValueRef a,
                     uint64_t off, uint64_t bytes, LLVMValueRef i) {
  /* the chunk's slots as make_chunk_run allocated them (LLVM numbers a repeated name, and
   * names a slice SROA cuts from it NAME.sroa.N) */
  size_t len = 0;
  const char *name = LLVMGetValueName2(a, &len);
  if (len < 10 || strncmp(name, "kapi.slots", 10) || strspn(name + 10, "0123456789") != len - 10)
    return 0;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(LLVMGetTypeContext(LLVMTypeOf(a)));
  if (!k->frame_bytes || LLVMGetAllocatedType(a) != LLVMArrayType(i8, (unsigned)k->frame_bytes))
    return 0;
  int in = 0;
  for (unsigned r = 0; r < k->nfree && !in; r++)
    in = off >= k->free_saves[2 * r] && off + bytes <= k->free_saves[2 * r + 1];
  for (size_t j = 0; in && j < n; j++)
    in = f[j].at == i || f[j].end <= off || f[j].off >= off + bytes;
  return in;
}

/* Masked loads and stores of whole vectors inside a slot array in run's frame (a full chunk's,
 * make_chunk_run) become plain ones, a store of `select(mask, value, old)`: the lanes the mask
 * leaves out are the thread's own and nobody else's, so rewriting them with what they held is
 * no change, and plain accesses at constant offsets are what SROA turns into registers (a
 * divergent loop's values then go round its rounds as vector phis, not through memory). A
 * store to a value's slot in free_saves, the only one there, needs no select (find_free_saves):
 * the lanes it leaves out no longer hold anything. */
unsigned kc_hf_unmask_slots(kc_hf_kernel_t *k) {
  LLVMValueRef fn = k->run;
  LLVMModuleRef m = LLVMGetGlobalParent(fn);
  LLVMTargetDataRef td = LLVMGetModuleDataLayout(m);
  LLVMBuilderRef b = LLVMCreateBuilderInContext(LLVMGetModuleContext(m));
  unsigned count = 0;
  size_t nstores = 0; /* out of memory: no free saves */
  frame_store_t *stores = k->nfree ? frame_stores(fn, td, &nstores) : NULL;
  unsigned nfree = 0;
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb))
    for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i;) {
      LLVMValueRef next = LLVMGetNextInstruction(i);
      const char *name = callee_name(i);
      int store = !strncmp(name, "llvm.masked.store.", 18);
      int load = !strncmp(name, "llvm.masked.load.", 17);
      if (!store && !load) {
        i = next;
        continue;
      }
      /* store(value, ptr, align, mask); load(ptr, align, mask, passthru) */
      LLVMValueRef ptr = LLVMGetOperand(i, store ? 1 : 0);
      LLVMValueRef al = LLVMGetOperand(i, store ? 2 : 1), mask = LLVMGetOperand(i, store ? 3 : 2);
      LLVMTypeRef vt = store ? LLVMTypeOf(LLVMGetOperand(i, 0)) : LLVMTypeOf(i);
      LLVMValueRef a = NULL;
      uint64_t off = 0;
      if (!frame_offset(ptr, &a, &off) ||
          LLVMGetInstructionParent(a) != LLVMGetEntryBasicBlock(fn) ||
          !LLVMIsAConstantInt(LLVMGetOperand(a, 0)) ||
          off + LLVMStoreSizeOfType(td, vt) > LLVMABISizeOfType(td, LLVMGetAllocatedType(a)) *
                                                  LLVMConstIntGetZExtValue(LLVMGetOperand(a, 0))) {
        i = next;
        continue;
      }
      unsigned align = (unsigned)LLVMConstIntGetZExtValue(al);
      LLVMPositionBuilderBefore(b, i);
      if (store && stores &&
          free_save(k, stores, nstores, a, off, LLVMStoreSizeOfType(td, vt), i)) {
        LLVMSetAlignment(LLVMBuildStore(b, LLVMGetOperand(i, 0), ptr), align);
        nfree++;
      } else {
        LLVMValueRef old = LLVMBuildLoad2(b, vt, ptr, "kapi.slotv");
        LLVMSetAlignment(old, align);
        if (store) {
          LLVMValueRef v = LLVMBuildSelect(b, mask, LLVMGetOperand(i, 0), old, "");
          LLVMSetAlignment(LLVMBuildStore(b, v, ptr), align);
        } else {
          LLVMReplaceAllUsesWith(i, LLVMBuildSelect(b, mask, old, LLVMGetOperand(i, 3), ""));
        }
      }
      LLVMInstructionEraseFromParent(i);
      count++;
      i = next;
    }
  free(stores);
  char n32[24]; /* for KAPI_DUMP=host */
  snprintf(n32, sizeof n32, "%u", nfree);
  LLVMContextRef c = LLVMGetModuleContext(m);
  LLVMAddAttributeAtIndex(
      fn, LLVMAttributeFunctionIndex,
      LLVMCreateStringAttribute(c, "kapi-free-saves", 15, n32, (unsigned)strlen(n32)));
  if (count) count += any_of_two(fn, b);
  LLVMDisposeBuilder(b);
  return count;
}
