/* Host finaliser: batched barrier kernels prefetch a later batch's input while the current
 * batch runs.
 *
 * A batch runs region 0 (a tree reduction's copy of its input into local memory) for all its
 * groups, then the later regions (the tree's steps), which read nothing from global memory: on
 * a host where the input streams from DRAM, the core's memory requests stop while the steps run
 * and the copy's memory time and the steps' compute add up. Here every region's loop over the
 * batch's groups (from region KC_HF_PREFETCH_FIRST on: by default the copy too, so memory stays
 * busy while it runs), at group j, prefetches a few cache lines of what region 0 will load for
 * group j of the batch KC_HF_PREFETCH_AHEAD batches on (the groups after this batch along
 * dimension 0, which the driver runs next), a different few lines in each region, so the
 * requests are spread over the regions instead of issued in one burst that would wait for the
 * core's few line fill buffers.
 *
 * How: kc_hf_make_region_run tags region 0's flat nest without prefetches (its group and x
 * induction phis) and gives every prefetching region a third nest, the flat one with, at the
 * top of its group loop, `n = kapi.prefetch.count(lrx, pass); for q < n:
 * kapi.prefetch.mark(j, count, pass, lrx, q, n)` (pass: regions run so far in this call), taken
 * when `kapi.prefetch.on(items, lrx)`. After wi is inlined into run and cleaned up, region 0's
 * loads from global memory (addrspace 1) are plain loads whose addresses are expressions of the
 * tagged phis and of values computed before the state loop (arguments, group fields);
 * kc_hf_prefetch_expand copies each such address expression at every marker with the group phi
 * replaced by `count * ahead + j` and the x phi by the first work-item of line
 * (pass-first)*per + q, and prefetches it; n becomes the lines left of that group (at most per,
 * the lines per region), `on` the gate (auto: at least KC_HF_PREFETCH_MIN_BYTES read by region
 * 0, KC_HF_PREFETCH_MIN_LINES per group). Only expressions without memory access (loads of the
 * read-only group descriptor aside), calls or untagged phis are copied, and divisions only by
 * non-zero constants, so the copy can neither trap nor change what the kernel computes: a
 * prefetch never faults, whatever its address.
 */
#include "finalise/host/finalise_host.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PF_MARK "kapi.prefetch.mark"
#define PF_COUNT "kapi.prefetch.count"
#define PF_ON "kapi.prefetch.on"
#define PF_TAG_GROUP "kapi.prefetch.group"
#define PF_TAG_X "kapi.prefetch.x"
#define MAX_LOADS 4u  /* address expressions prefetched per marker */
#define MAX_NODES 48u /* instructions copied per address expression */
#define LINE 64u

int kc_hf_prefetch_lines(void) {
  const char *v = getenv("KAPI_HOST_PREFETCH");
  if (!v || !*v || strcmp(v, "auto") == 0) return -1;
  long n = strtol(v, NULL, 10);
  return n < 0 ? 0 : n > 64 ? 64 : (int)n;
}

int kc_hf_prefetch_ahead(void) {
  const char *v = getenv("KAPI_HOST_PREFETCH_AHEAD");
  long n = v && *v ? strtol(v, NULL, 10) : 0;
  return n < 1 ? KC_HF_PREFETCH_AHEAD : n > 8 ? 8 : (int)n;
}

/* The single digit lo..hi that environment variable `name` holds, else dflt. */
static int env_digit(const char *name, int lo, int hi, int dflt) {
  const char *v = getenv(name);
  return v && *v >= '0' + lo && *v <= '0' + hi && !v[1] ? *v - '0' : dflt;
}

int kc_hf_prefetch_first(void) {
  return env_digit("KAPI_HOST_PREFETCH_FIRST", 0, 1, KC_HF_PREFETCH_FIRST);
}

int kc_hf_prefetch_locality(void) {
  return env_digit("KAPI_HOST_PREFETCH_LOCALITY", 0, 3, KC_HF_PREFETCH_LOCALITY);
}

static unsigned kind_id(LLVMContextRef c, const char *name) {
  return LLVMGetMDKindIDInContext(c, name, (unsigned)strlen(name));
}

void kc_hf_prefetch_tag(LLVMValueRef phi, int is_x) {
  LLVMContextRef c = LLVMGetTypeContext(LLVMTypeOf(phi));
  LLVMMetadataRef none = LLVMMDNodeInContext2(c, NULL, 0);
  LLVMSetMetadata(phi, kind_id(c, is_x ? PF_TAG_X : PF_TAG_GROUP), LLVMMetadataAsValue(c, none));
}

static unsigned attr_kind(const char *name) {
  return LLVMGetEnumAttributeKindForName(name, strlen(name));
}

static void add_attrs(LLVMContextRef c, LLVMValueRef f, const char *const *attrs, size_t n) {
  for (size_t i = 0; i < n; i++)
    LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
                            LLVMCreateEnumAttribute(c, attr_kind(attrs[i]), 0));
}

LLVMValueRef kc_hf_prefetch_count(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef lrx,
                                  LLVMValueRef pass) {
  LLVMContextRef c = LLVMGetModuleContext(m);
  LLVMValueRef f = LLVMGetNamedFunction(m, PF_COUNT);
  if (!f) {
    LLVMTypeRef i64 = LLVMInt64TypeInContext(c), ps[2] = {i64, i64};
    f = LLVMAddFunction(m, PF_COUNT, LLVMFunctionType(i64, ps, 2, 0));
    static const char *const attrs[] = {"readnone", "nounwind", "willreturn"};
    add_attrs(c, f, attrs, 3);
  }
  LLVMValueRef args[2] = {lrx, pass};
  return kc_hf_call(b, f, args, 2);
}

LLVMValueRef kc_hf_prefetch_on(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef items,
                               LLVMValueRef lrx) {
  LLVMContextRef c = LLVMGetModuleContext(m);
  LLVMValueRef f = LLVMGetNamedFunction(m, PF_ON);
  if (!f) {
    LLVMTypeRef i64 = LLVMInt64TypeInContext(c), ps[2] = {i64, i64};
    f = LLVMAddFunction(m, PF_ON, LLVMFunctionType(LLVMInt1TypeInContext(c), ps, 2, 0));
    static const char *const attrs[] = {"readnone", "nounwind", "willreturn"};
    add_attrs(c, f, attrs, 3);
  }
  LLVMValueRef args[2] = {items, lrx};
  return kc_hf_call(b, f, args, 2);
}

void kc_hf_prefetch_mark(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef j, LLVMValueRef count,
                         LLVMValueRef pass, LLVMValueRef lrx, LLVMValueRef q, LLVMValueRef n) {
  LLVMContextRef c = LLVMGetModuleContext(m);
  LLVMValueRef f = LLVMGetNamedFunction(m, PF_MARK);
  if (!f) {
    LLVMTypeRef i64 = LLVMInt64TypeInContext(c), ps[6] = {i64, i64, i64, i64, i64, i64};
    f = LLVMAddFunction(m, PF_MARK, LLVMFunctionType(LLVMVoidTypeInContext(c), ps, 6, 0));
    /* Touches no memory the kernel can see: the clean-up passes move loads and stores
     * across it as if it were not there, and do not delete it. */
    static const char *const attrs[] = {"inaccessiblememonly", "nounwind", "willreturn"};
    add_attrs(c, f, attrs, 3);
  }
  LLVMValueRef args[6] = {j, count, pass, lrx, q, n};
  kc_hf_call(b, f, args, 6);
}

/* ---- Copying an address expression ---------------------------------------------------- */

typedef struct {
  LLVMValueRef fn;           /* run */
  LLVMBasicBlockRef *before; /* blocks that dominate the state loop */
  size_t nbefore;
  unsigned tag_group, tag_x; /* metadata kinds */
  LLVMValueRef from[MAX_NODES], to[MAX_NODES];
  unsigned n;
  LLVMValueRef group_to, x_to; /* what the tagged phis become at this marker */
  LLVMBuilderRef b;
} copy_t;

static int dominating(const copy_t *cp, LLVMValueRef v) {
  if (!LLVMIsAInstruction(v)) return 1; /* constants, globals, run's parameters */
  LLVMBasicBlockRef bb = LLVMGetInstructionParent(v);
  for (size_t i = 0; i < cp->nbefore; i++)
    if (cp->before[i] == bb) return 1;
  return 0;
}

/* Whether a pointer is derived from run's parameter 0 (the group descriptor, read-only while
 * the batch runs) by address arithmetic alone. */
static int group_pointer(LLVMValueRef fn, LLVMValueRef p, int depth) {
  if (p == LLVMGetParam(fn, 0)) return 1;
  if (depth > 4 || !LLVMIsAInstruction(p)) return 0;
  LLVMOpcode op = LLVMGetInstructionOpcode(p);
  if (op != LLVMGetElementPtr && op != LLVMBitCast) return 0;
  return group_pointer(fn, LLVMGetOperand(p, 0), depth + 1);
}

static int pure_opcode(LLVMValueRef i) {
  switch (LLVMGetInstructionOpcode(i)) {
  case LLVMAdd:
  case LLVMSub:
  case LLVMMul:
  case LLVMShl:
  case LLVMLShr:
  case LLVMAShr:
  case LLVMAnd:
  case LLVMOr:
  case LLVMXor:
  case LLVMTrunc:
  case LLVMZExt:
  case LLVMSExt:
  case LLVMGetElementPtr:
  case LLVMBitCast:
  case LLVMAddrSpaceCast:
  case LLVMPtrToInt:
  case LLVMIntToPtr:
  case LLVMICmp:
  case LLVMSelect:
    return 1;
  case LLVMUDiv:
  case LLVMURem: {
    LLVMValueRef d = LLVMGetOperand(i, 1);
    return LLVMIsAConstantInt(d) && LLVMConstIntGetZExtValue(d) != 0;
  }
  case LLVMSDiv:
  case LLVMSRem: { /* x86 traps on INT_MIN / -1 too */
    LLVMValueRef d = LLVMGetOperand(i, 1);
    return LLVMIsAConstantInt(d) && LLVMConstIntGetSExtValue(d) > 0;
  }
  default:
    return 0;
  }
}

/* Whether copy_value can copy v: the same walk, building nothing. */
static int copyable(const copy_t *cp, LLVMValueRef v, unsigned *budget) {
  if (LLVMIsAPHINode(v) && (LLVMGetMetadata(v, cp->tag_group) || LLVMGetMetadata(v, cp->tag_x)))
    return 1;
  if (dominating(cp, v)) return 1;
  if (!LLVMIsAInstruction(v) || !*budget) return 0;
  --*budget;
  int load = LLVMIsALoadInst(v) && !LLVMGetVolatile(v) &&
             LLVMGetOrdering(v) == LLVMAtomicOrderingNotAtomic &&
             group_pointer(cp->fn, LLVMGetOperand(v, 0), 0);
  if (!load && (LLVMIsAPHINode(v) || !pure_opcode(v))) return 0;
  int nops = LLVMGetNumOperands(v);
  if (nops > 8) return 0;
  for (int i = 0; i < nops; i++)
    if (!copyable(cp, LLVMGetOperand(v, (unsigned)i), budget)) return 0;
  return 1;
}

/* v's copy at the builder (NULL when v cannot be copied). */
static LLVMValueRef copy_value(copy_t *cp, LLVMValueRef v) {
  if (LLVMIsAPHINode(v)) {
    if (LLVMGetMetadata(v, cp->tag_group)) return cp->group_to;
    if (LLVMGetMetadata(v, cp->tag_x)) return cp->x_to;
  }
  if (dominating(cp, v)) return v;
  for (unsigned i = 0; i < cp->n; i++)
    if (cp->from[i] == v) return cp->to[i];
  if (!LLVMIsAInstruction(v) || cp->n == MAX_NODES) return NULL;
  int load = LLVMIsALoadInst(v) && !LLVMGetVolatile(v) &&
             LLVMGetOrdering(v) == LLVMAtomicOrderingNotAtomic &&
             group_pointer(cp->fn, LLVMGetOperand(v, 0), 0);
  if (!load && (LLVMIsAPHINode(v) || !pure_opcode(v))) return NULL;
  int nops = LLVMGetNumOperands(v);
  LLVMValueRef ops[8];
  if (nops > 8) return NULL;
  for (int i = 0; i < nops; i++)
    if (!(ops[i] = copy_value(cp, LLVMGetOperand(v, (unsigned)i)))) return NULL;
  LLVMValueRef c = LLVMInstructionClone(v);
  LLVMInsertIntoBuilder(cp->b, c);
  for (int i = 0; i < nops; i++)
    LLVMSetOperand(c, (unsigned)i, ops[i]);
  cp->from[cp->n] = v;
  cp->to[cp->n++] = c;
  return c;
}

/* ---- Finding region 0's loads and the markers ---------------------------------------- */

/* Blocks from run's entry down the chain of single successors (returning blocks aside) with
 * single predecessors: they dominate the state loop and everything in it. */
static size_t dominating_blocks(LLVMValueRef fn, LLVMBasicBlockRef *out, size_t cap) {
  size_t n = 0;
  LLVMBasicBlockRef cur = LLVMGetEntryBasicBlock(fn);
  while (cur && n < cap) {
    out[n++] = cur;
    LLVMValueRef t = LLVMGetBasicBlockTerminator(cur);
    LLVMBasicBlockRef next = NULL;
    int many = 0;
    for (unsigned i = 0; t && i < LLVMGetNumSuccessors(t); i++) {
      LLVMBasicBlockRef s = LLVMGetSuccessor(t, i);
      if (LLVMIsAReturnInst(LLVMGetBasicBlockTerminator(s))) continue;
      if (next && next != s) many = 1;
      next = s;
    }
    if (!next || many) break;
    unsigned preds = 0;
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb)) {
      LLVMValueRef bt = LLVMGetBasicBlockTerminator(bb);
      for (unsigned i = 0; bt && i < LLVMGetNumSuccessors(bt); i++)
        preds += LLVMGetSuccessor(bt, i) == next;
    }
    if (preds != 1) break;
    cur = next;
  }
  return n;
}

/* Whether v's expression (up to what dominates the state loop) reaches the tagged x phi:
 * the load is in region 0's flat nest, and its address moves with the work-item. */
static int reaches_x(const copy_t *cp, LLVMValueRef v, int depth) {
  if (!LLVMIsAInstruction(v) || dominating(cp, v) || depth > 24) return 0;
  if (LLVMIsAPHINode(v)) return LLVMGetMetadata(v, cp->tag_x) != NULL;
  int nops = LLVMGetNumOperands(v);
  for (int i = 0; i < nops; i++)
    if (reaches_x(cp, LLVMGetOperand(v, (unsigned)i), depth + 1)) return 1;
  return 0;
}

/* Region 0's loads from global memory (each address expression once), at most MAX_LOADS. */
static unsigned region0_loads(copy_t *cp, LLVMValueRef *loads) {
  unsigned n = 0;
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(cp->fn); bb; bb = LLVMGetNextBasicBlock(bb))
    for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i)) {
      if (!LLVMIsALoadInst(i) || LLVMGetVolatile(i)) continue;
      LLVMValueRef p = LLVMGetOperand(i, 0);
      unsigned budget = MAX_NODES;
      if (LLVMGetPointerAddressSpace(LLVMTypeOf(p)) != 1 || !reaches_x(cp, p, 0) ||
          !copyable(cp, p, &budget))
        continue;
      int seen = 0;
      for (unsigned k = 0; k < n && !seen; k++)
        seen = LLVMGetOperand(loads[k], 0) == p;
      if (seen || n == MAX_LOADS) continue;
      loads[n++] = i;
    }
  return n;
}

/* The cache line this marker prefetches for each load: line (pass-1)*per + q of the next
 * batch's group j, a line being 64 bytes of consecutive work-items' elements (beyond the
 * group's last work-item of a narrower load: its last line again, already on its way). */
static void expand_mark(LLVMModuleRef m, copy_t *cp, LLVMValueRef mark, LLVMValueRef per,
                        LLVMValueRef *loads, unsigned nloads, unsigned locality) {
  LLVMContextRef c = LLVMGetModuleContext(m);
  LLVMTypeRef i64 = LLVMInt64TypeInContext(c), i32 = LLVMInt32TypeInContext(c);
  LLVMTypeRef i8p = LLVMPointerType(LLVMInt8TypeInContext(c), 0);
  LLVMValueRef pf = kc_hf_intrinsic(m, "llvm.prefetch", &i8p, 1);
  LLVMTargetDataRef td = LLVMGetModuleDataLayout(m);
  LLVMBuilderRef b = cp->b;
  LLVMPositionBuilderBefore(b, mark);
  LLVMValueRef j = LLVMGetOperand(mark, 0), count = LLVMGetOperand(mark, 1);
  LLVMValueRef pass = LLVMGetOperand(mark, 2), lrx = LLVMGetOperand(mark, 3);
  LLVMValueRef q = LLVMGetOperand(mark, 4);
  LLVMValueRef one = LLVMConstInt(i64, 1, 0);
  LLVMValueRef ahead = LLVMConstInt(i64, (unsigned)kc_hf_prefetch_ahead(), 0);
  cp->group_to = LLVMBuildAdd(b, LLVMBuildMul(b, count, ahead, ""), j, "kapi.pf.group");
  LLVMValueRef first = LLVMConstInt(i64, (unsigned)kc_hf_prefetch_first(), 0);
  LLVMValueRef line = LLVMBuildAdd(b, LLVMBuildMul(b, LLVMBuildSub(b, pass, first, ""), per, ""), q,
                                   "kapi.pf.line");
  LLVMValueRef last_x = LLVMBuildSub(b, lrx, one, "");
  for (unsigned k = 0; k < nloads && pf; k++) {
    uint64_t size = LLVMStoreSizeOfType(td, LLVMTypeOf(loads[k]));
    uint64_t step = size && size < LINE ? LINE / size : 1; /* work-items per line */
    LLVMValueRef x = LLVMBuildMul(b, line, LLVMConstInt(i64, step, 0), "");
    LLVMValueRef in = LLVMBuildICmp(b, LLVMIntULT, x, lrx, "");
    cp->x_to = LLVMBuildSelect(b, in, x, last_x, "kapi.pf.x");
    cp->n = 0;
    LLVMValueRef addr = copy_value(cp, LLVMGetOperand(loads[k], 0));
    if (!addr) continue; /* checked by the caller: not reached */
    LLVMValueRef p =
        LLVMBuildAddrSpaceCast(b, addr, LLVMPointerType(LLVMInt8TypeInContext(c), 0), "");
    LLVMValueRef args[4] = {p, LLVMConstInt(i32, 0, 0), LLVMConstInt(i32, locality, 0),
                            LLVMConstInt(i32, 1, 0)};
    kc_hf_call(b, pf, args, 4);
  }
}

/* At placeholder `count(lrx, pass)` (before it): the lines per region, *per (KAPI_HOST_PREFETCH,
 * or auto: a group's lines of the widest load, L, over KC_HF_PREFETCH_SPREAD regions, at least
 * 1), and returns this region's count, the lines left of L from line (pass-1)*per, at most
 * per. */
static LLVMValueRef counts(LLVMBuilderRef b, LLVMValueRef ph, unsigned size, int lines,
                           LLVMValueRef *per) {
  LLVMValueRef lrx = LLVMGetOperand(ph, 0), pass = LLVMGetOperand(ph, 1);
  LLVMTypeRef i64 = LLVMTypeOf(lrx);
  LLVMValueRef zero = LLVMConstInt(i64, 0, 0), one = LLVMConstInt(i64, 1, 0);
  LLVMPositionBuilderBefore(b, ph);
  LLVMValueRef bytes = LLVMBuildMul(b, lrx, LLVMConstInt(i64, size, 0), "");
  LLVMValueRef total = LLVMBuildUDiv(b, LLVMBuildAdd(b, bytes, LLVMConstInt(i64, LINE - 1, 0), ""),
                                     LLVMConstInt(i64, LINE, 0), "kapi.pf.lines");
  if (lines > 0) {
    *per = LLVMConstInt(i64, (unsigned)lines, 0);
  } else {
    LLVMValueRef s = LLVMConstInt(i64, KC_HF_PREFETCH_SPREAD, 0);
    LLVMValueRef p =
        LLVMBuildUDiv(b, LLVMBuildAdd(b, total, LLVMBuildSub(b, s, one, ""), ""), s, "");
    *per = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, p, zero, ""), one, p, "kapi.pf.per");
  }
  LLVMValueRef first = LLVMConstInt(i64, (unsigned)kc_hf_prefetch_first(), 0);
  LLVMValueRef start = LLVMBuildMul(b, LLVMBuildSub(b, pass, first, ""), *per, "");
  LLVMValueRef left = LLVMBuildSub(b, total, start, "");
  LLVMValueRef n = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntULT, left, *per, ""), left, *per, "");
  return LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntULT, start, total, ""), n, zero, "kapi.pf.n");
}

/* auto's gate, before placeholder `on(items, lrx)`: region 0 reads at least
 * KC_HF_PREFETCH_MIN_BYTES in all, at least KC_HF_PREFETCH_MIN_LINES lines per group. */
static LLVMValueRef gate(LLVMBuilderRef b, LLVMValueRef ph, unsigned size) {
  LLVMValueRef items = LLVMGetOperand(ph, 0), lrx = LLVMGetOperand(ph, 1);
  LLVMTypeRef i64 = LLVMTypeOf(items);
  LLVMPositionBuilderBefore(b, ph);
  LLVMValueRef sz = LLVMConstInt(i64, size, 0);
  LLVMValueRef big = LLVMBuildICmp(
      b, LLVMIntUGE, items, LLVMConstInt(i64, (KC_HF_PREFETCH_MIN_BYTES + size - 1) / size, 0), "");
  LLVMValueRef wide =
      LLVMBuildICmp(b, LLVMIntUGE, LLVMBuildMul(b, lrx, sz, ""),
                    LLVMConstInt(i64, (uint64_t)KC_HF_PREFETCH_MIN_LINES * LINE, 0), "");
  return LLVMBuildAnd(b, big, wide, "kapi.pf.on");
}

static LLVMValueRef *calls_to(LLVMValueRef fn, LLVMValueRef callee, size_t *n) {
  size_t cap = 0;
  *n = 0;
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); callee && bb;
       bb = LLVMGetNextBasicBlock(bb))
    for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i))
      cap += LLVMIsACallInst(i) && LLVMGetCalledValue(i) == callee;
  LLVMValueRef *out = malloc((cap + 1) * sizeof *out);
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); out && callee && bb;
       bb = LLVMGetNextBasicBlock(bb))
    for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i))
      if (LLVMIsACallInst(i) && LLVMGetCalledValue(i) == callee) out[(*n)++] = i;
  return out;
}

unsigned kc_hf_prefetch_expand(LLVMModuleRef m, kc_hf_kernel_t *k) {
  LLVMContextRef c = LLVMGetModuleContext(m);
  size_t nmarks = 0, ncounts = 0, nb = 0;
  LLVMValueRef *marks = calls_to(k->run, LLVMGetNamedFunction(m, PF_MARK), &nmarks);
  LLVMValueRef *phs = calls_to(k->run, LLVMGetNamedFunction(m, PF_COUNT), &ncounts);
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(k->run); bb; bb = LLVMGetNextBasicBlock(bb))
    nb++;
  LLVMBasicBlockRef *before = malloc((nb + 1) * sizeof *before);
  LLVMValueRef *pers = malloc((ncounts + 1) * sizeof *pers),
               *ns = malloc((ncounts + 1) * sizeof *ns);
  LLVMBuilderRef b = LLVMCreateBuilderInContext(c);
  LLVMTypeRef i64 = LLVMInt64TypeInContext(c);
  unsigned nloads = 0, size = 0;
  if (marks && phs && before && pers && ns) {
    copy_t cp = {.fn = k->run,
                 .before = before,
                 .tag_group = kind_id(c, PF_TAG_GROUP),
                 .tag_x = kind_id(c, PF_TAG_X),
                 .b = b};
    cp.nbefore = dominating_blocks(k->run, before, nb);
    LLVMValueRef loads[MAX_LOADS];
    nloads = nmarks ? region0_loads(&cp, loads) : 0;
    for (unsigned i = 0; i < nloads; i++) {
      unsigned sz = (unsigned)LLVMStoreSizeOfType(LLVMGetModuleDataLayout(m), LLVMTypeOf(loads[i]));
      if (sz > size) size = sz;
    }
    for (size_t i = 0; i < ncounts; i++)
      ns[i] = nloads ? counts(b, phs[i], size, kc_hf_prefetch_lines(), &pers[i])
                     : LLVMConstInt(i64, 0, 0);
    unsigned locality = (unsigned)kc_hf_prefetch_locality();
    for (size_t i = 0; i < nmarks && nloads; i++)
      for (size_t h = 0; h < ncounts; h++)
        if (LLVMGetOperand(marks[i], 5) == phs[h])
          expand_mark(m, &cp, marks[i], pers[h], loads, nloads, locality);
  }
  for (size_t i = 0; i < nmarks; i++)
    LLVMInstructionEraseFromParent(marks[i]);
  for (size_t i = 0; i < ncounts; i++) {
    LLVMReplaceAllUsesWith(phs[i], ns && nloads ? ns[i] : LLVMConstInt(i64, 0, 0));
    LLVMInstructionEraseFromParent(phs[i]);
  }
  size_t nons = 0;
  LLVMValueRef *ons = calls_to(k->run, LLVMGetNamedFunction(m, PF_ON), &nons);
  for (size_t i = 0; ons && i < nons; i++) {
    LLVMValueRef on = LLVMConstInt(LLVMInt1TypeInContext(c), nloads != 0, 0);
    if (nloads && kc_hf_prefetch_lines() < 0) on = gate(b, ons[i], size);
    LLVMReplaceAllUsesWith(ons[i], on);
    LLVMInstructionEraseFromParent(ons[i]);
  }
  free(ons);
  LLVMDisposeBuilder(b);
  free(marks), free(phs), free(before), free(pers), free(ns);
  /* for KAPI_DUMP=host, beside kapi-scheme: how many loads' addresses the regions prefetch */
  char num[16];
  snprintf(num, sizeof num, "%u", nloads);
  LLVMAddAttributeAtIndex(
      k->run, LLVMAttributeFunctionIndex,
      LLVMCreateStringAttribute(c, "kapi-prefetch", 13, num, (unsigned)strlen(num)));
  return nloads;
}
