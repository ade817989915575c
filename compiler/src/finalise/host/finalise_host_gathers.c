/* Gathers of evenly spaced lanes read as plain loads. After the loop vectoriser, `data[i, k]`
 * of a C-contiguous array (`i` the work-item) is a gather whose addresses are
 * `base + (x + lane) * S + c`: lane l reads element l * S of a window that starts at lane 0's
 * address. For a small spacing S the window is S whole-vector loads, and lane l's element is
 * picked out of them by a chain of S - 1 two-input shuffles (vpermt2ps). For any other S the
 * lanes are scalar loads, each address one add from the last: on AMD's Zen 4 a 16-lane gather
 * costs more than the 16 scalar loads it replaces (rows of 16 floats 2.3x as fast without
 * it), on a Sapphire Rapids-class Xeon they are level, and where code generation scalarises
 * gathers (AVX2: kc_hf_cheap_gathers) it would extract each address from a vector. S is a
 * kernel argument (an extent, handed over times an opaque 1 so that the vectoriser does not
 * version the loop on it being 1: finalise_host_strides.c), so the choice is made at run
 * time: a switch on S (loop-invariant, so the branch predicts) to one window per spacing of a
 * set (window_default: rows of coordinates, colours, ...), and the scalar loads for any other.
 *
 * The address form is proved from the index's instructions, not tested per vector: lanes that
 * step by one (a constant <c, c+1, ...>, or the vectoriser's induction phi of such constants
 * plus splats), plus splats, times a splat S. Only gathers of every lane (an all-true mask) are
 * rewritten: the window's loads touch only elements between lane 0's and the last lane's, both
 * of which the gather reads, and the values kept are the ones it reads, so results are the
 * same bits. The cost is compile time (every gather gets its windows: a pairwise distance's
 * kernel builds in about 0.2 s more). KAPI_HOST_WINDOW_GATHERS sets the spacings (`0`: off). */
#include "finalise/host/finalise_host.h"

#include <stdlib.h>
#include <string.h>

#define MAX_SPACING 16
#define MAX_DEPTH 12

/* Bit s set: spacing s (1 to MAX_SPACING) gets a window. KAPI_HOST_WINDOW_GATHERS: `0`, none;
 * one number N, 1 to N; a list (separated by `,`, `+` or spaces), those spacings. Unset:
 * window_default(), by the element's size. */
static unsigned parse_spacings(const char *v) {
  unsigned set = 0, count = 0;
  long last = 0;
  for (const char *p = v; *p;) {
    char *end;
    long n = strtol(p, &end, 10);
    if (end == p) break;
    count++;
    last = n;
    if (n >= 1 && n <= MAX_SPACING) set |= 1u << n;
    p = end + strspn(end, ", +;");
  }
  if (count == 1) { /* a single number: every spacing up to it */
    set = 0;
    for (long n = 1; n <= last && n <= MAX_SPACING; n++)
      set |= 1u << n;
  }
  return set;
}

static unsigned spacings_to(unsigned n) {
  return ((2u << n) - 1) & ~1u;
}

/* The windows that beat scalar loads (bench/gather_rows.py --compare KAPI_HOST_WINDOW_GATHERS,
 * 2^22 elements, a Zen 4 and a Sapphire Rapids-class Xeon, AVX-512 and AVX2): for 4-byte
 * elements spacings to 4 everywhere (a row of 3 floats 1.3x as fast as from scalar loads) and
 * to 8 on Intel's cores, whose two-input shuffles are cheap (5 to 8: 1.05-1.25x there, but
 * 0.6-0.9x on Zen 4, which splits a 512-bit shuffle in two); for 8-byte elements, whose vectors
 * hold half as many lanes, only 1 and 2 (3 to 8 were 0.75-0.93x on both). */
static unsigned window_default(unsigned elem_bytes) {
  if (elem_bytes >= 8) return spacings_to(2);
  return spacings_to(__builtin_cpu_is("intel") ? 8 : 4);
}

/* The spacings that get a window for elements of elem_bytes; 0 when the windows are off. */
unsigned kc_hf_window_spacings(unsigned elem_bytes) {
  const char *v = getenv("KAPI_HOST_WINDOW_GATHERS");
  return v && *v ? parse_spacings(v) : window_default(elem_bytes);
}

/* KAPI_HOST_SCALAR_GATHERS: `0` keeps the gathers of spacings without a window; unset, they
 * become scalar loads (strided()). Read per kernel built, for comparisons. */
static int scalar_gathers(void) {
  const char *v = getenv("KAPI_HOST_SCALAR_GATHERS");
  return !(v && !strcmp(v, "0"));
}

static int opcode_is(LLVMValueRef v, LLVMOpcode op) {
  return LLVMIsAInstruction(v) && LLVMGetInstructionOpcode(v) == op;
}

/* 1 when every lane of v holds the same value: a uniform constant, or a shuffle of lane 0. */
static int is_splat(LLVMValueRef v) {
  LLVMTypeRef t = LLVMTypeOf(v);
  if (LLVMGetTypeKind(t) != LLVMVectorTypeKind) return 0;
  unsigned n = LLVMGetVectorSize(t);
  if (LLVMIsAConstant(v)) {
    LLVMValueRef e0 = LLVMGetAggregateElement(v, 0);
    for (unsigned i = 1; e0 && i < n; i++)
      if (LLVMGetAggregateElement(v, i) != e0) return 0;
    return e0 && LLVMIsAConstantInt(e0);
  }
  if (!LLVMIsAShuffleVectorInst(v) || LLVMGetNumMaskElements(v) != n) return 0;
  for (unsigned i = 0; i < n; i++)
    if (LLVMGetMaskValue(v, i) != 0) return 0;
  return 1;
}

typedef struct {
  LLVMValueRef phis[8];
  unsigned n;
} seen_t;

/* 1 when lane l of v is lane 0's value plus l: a constant <c, c+1, ...>, such a vector plus a
 * splat, or a phi all of whose incoming values are (an induction: assumed of the phi itself
 * while its incoming values are checked). */
static int steps_by_one(LLVMValueRef v, seen_t *seen, int depth) {
  if (depth > MAX_DEPTH) return 0;
  LLVMTypeRef t = LLVMTypeOf(v);
  if (LLVMGetTypeKind(t) != LLVMVectorTypeKind) return 0;
  if (LLVMIsAConstant(v)) {
    unsigned n = LLVMGetVectorSize(t);
    LLVMValueRef e0 = LLVMGetAggregateElement(v, 0);
    if (!e0 || !LLVMIsAConstantInt(e0)) return 0;
    long long c0 = LLVMConstIntGetSExtValue(e0);
    for (unsigned i = 1; i < n; i++) {
      LLVMValueRef e = LLVMGetAggregateElement(v, i);
      if (!e || !LLVMIsAConstantInt(e) || LLVMConstIntGetSExtValue(e) != c0 + (long long)i)
        return 0;
    }
    return 1;
  }
  if (opcode_is(v, LLVMAdd)) {
    LLVMValueRef a = LLVMGetOperand(v, 0), b = LLVMGetOperand(v, 1);
    return (is_splat(b) && steps_by_one(a, seen, depth + 1)) ||
           (is_splat(a) && steps_by_one(b, seen, depth + 1));
  }
  if (LLVMIsAPHINode(v)) {
    for (unsigned i = 0; i < seen->n; i++)
      if (seen->phis[i] == v) return 1;
    if (seen->n == sizeof seen->phis / sizeof *seen->phis) return 0;
    seen->phis[seen->n++] = v;
    unsigned n = LLVMCountIncoming(v);
    for (unsigned i = 0; i < n; i++)
      if (!steps_by_one(LLVMGetIncomingValue(v, i), seen, depth + 1)) return 0;
    return 1;
  }
  return 0;
}

/* 1 when lane l of the index vector v is lane 0's plus l * S: *stride is a splat of S, or
 * NULL for 1; *shift, when not 0, says S is 1 << *shift instead. */
static int affine(LLVMValueRef v, LLVMValueRef *stride, unsigned *shift, int depth) {
  seen_t seen = {{0}, 0};
  if (depth > MAX_DEPTH) return 0;
  *stride = NULL;
  *shift = 0;
  if (steps_by_one(v, &seen, depth)) return 1;
  if (!LLVMIsAInstruction(v)) return 0;
  LLVMOpcode op = LLVMGetInstructionOpcode(v);
  LLVMValueRef a = LLVMGetOperand(v, 0), b = LLVMGetOperand(v, 1), inner;
  unsigned inner_shift;
  if (op == LLVMAdd) {
    if (is_splat(b)) return affine(a, stride, shift, depth + 1);
    if (is_splat(a)) return affine(b, stride, shift, depth + 1);
    return 0;
  }
  if (op == LLVMMul) {
    if (!is_splat(b)) {
      LLVMValueRef x = a;
      a = b;
      b = x;
    }
    if (!is_splat(b) || !affine(a, &inner, &inner_shift, depth + 1) || inner || inner_shift)
      return 0;
    *stride = b;
    return 1;
  }
  if (op == LLVMShl) {
    LLVMValueRef k = is_splat(b) && LLVMIsAConstant(b) ? LLVMGetAggregateElement(b, 0) : NULL;
    if (!k || LLVMConstIntGetZExtValue(k) == 0 || LLVMConstIntGetZExtValue(k) > 8 ||
        !affine(a, &inner, &inner_shift, depth + 1) || inner || inner_shift)
      return 0;
    *shift = (unsigned)LLVMConstIntGetZExtValue(k);
    return 1;
  }
  return 0;
}

/* Lane 0 of the vector v as a scalar, built at b: the splats' scalars and lane 0 of the rest,
 * so that the vector arithmetic is not needed for it. */
static LLVMValueRef lane0(LLVMBuilderRef b, LLVMValueRef v, int depth) {
  if (LLVMIsAConstant(v)) return LLVMGetAggregateElement(v, 0);
  if (depth < MAX_DEPTH && LLVMIsAShuffleVectorInst(v) && is_splat(v))
    return lane0(b, LLVMGetOperand(v, 0), depth + 1);
  if (LLVMIsAInsertElementInst(v)) {
    LLVMValueRef at = LLVMGetOperand(v, 2);
    if (LLVMIsAConstantInt(at) && LLVMConstIntGetZExtValue(at) == 0) return LLVMGetOperand(v, 1);
  }
  if (depth < MAX_DEPTH && LLVMIsAInstruction(v)) {
    LLVMOpcode op = LLVMGetInstructionOpcode(v);
    if (op == LLVMAdd || op == LLVMMul || op == LLVMShl) {
      LLVMValueRef x = lane0(b, LLVMGetOperand(v, 0), depth + 1);
      LLVMValueRef y = lane0(b, LLVMGetOperand(v, 1), depth + 1);
      return LLVMBuildBinOp(b, op, x, y, "kapi.lane0");
    }
  }
  LLVMContextRef c = LLVMGetTypeContext(LLVMTypeOf(v));
  return LLVMBuildExtractElement(b, v, LLVMConstInt(LLVMInt32TypeInContext(c), 0, 0), "");
}

static int all_true(LLVMValueRef mask) {
  if (!LLVMIsAConstant(mask)) return 0;
  unsigned n = LLVMGetVectorSize(LLVMTypeOf(mask));
  for (unsigned i = 0; i < n; i++) {
    LLVMValueRef e = LLVMGetAggregateElement(mask, i);
    if (!e || !LLVMIsAConstantInt(e) || LLVMConstIntGetZExtValue(e) != 1) return 0;
  }
  return 1;
}

/* The instructions of bb before `at` go to a new block placed before bb, which every branch to
 * bb now reaches instead (bb's phis go along: their predecessors are the new block's). */
static LLVMBasicBlockRef split_head(LLVMBasicBlockRef bb, LLVMValueRef at, LLVMBuilderRef b) {
  LLVMContextRef c = LLVMGetTypeContext(LLVMTypeOf(at));
  LLVMBasicBlockRef head = LLVMInsertBasicBlockInContext(c, bb, "kapi.window.head");
  LLVMValueRef bbv = LLVMBasicBlockAsValue(bb);
  for (LLVMUseRef u = LLVMGetFirstUse(bbv); u;) {
    LLVMUseRef next = LLVMGetNextUse(u);
    LLVMValueRef user = LLVMGetUser(u);
    if (LLVMIsATerminatorInst(user)) {
      unsigned ns = LLVMGetNumSuccessors(user);
      for (unsigned i = 0; i < ns; i++)
        if (LLVMGetSuccessor(user, i) == bb) LLVMSetSuccessor(user, i, head);
    }
    u = next;
  }
  LLVMPositionBuilderAtEnd(b, head);
  for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i && i != at;) {
    LLVMValueRef next = LLVMGetNextInstruction(i);
    LLVMInstructionRemoveFromParent(i);
    LLVMInsertIntoBuilder(b, i);
    i = next;
  }
  return head;
}

static int pure_value(LLVMValueRef i) {
  switch (LLVMGetInstructionOpcode(i)) {
  case LLVMAdd:
  case LLVMSub:
  case LLVMMul:
  case LLVMShl:
  case LLVMOr:
  case LLVMAnd:
  case LLVMGetElementPtr:
  case LLVMShuffleVector:
  case LLVMInsertElement:
  case LLVMExtractElement:
  case LLVMSExt:
  case LLVMZExt:
  case LLVMTrunc:
  case LLVMBitCast:
    return 1;
  default:
    return 0;
  }
}

/* Values of `head` used only in `slow` (or by values that move there) move to slow's start,
 * in their order: the gather's index arithmetic is then off the windows' path. */
static void sink_into(LLVMBasicBlockRef head, LLVMBasicBlockRef slow) {
  LLVMValueRef moving[256];
  unsigned n = 0;
  for (LLVMValueRef i = LLVMGetLastInstruction(head); i && n < 256;
       i = LLVMGetPreviousInstruction(i)) {
    if (!pure_value(i) || !LLVMGetFirstUse(i)) continue;
    int only_slow = 1;
    for (LLVMUseRef u = LLVMGetFirstUse(i); u && only_slow; u = LLVMGetNextUse(u)) {
      LLVMValueRef user = LLVMGetUser(u);
      int moved = 0;
      for (unsigned k = 0; k < n && !moved; k++)
        moved = moving[k] == user;
      only_slow = moved || (LLVMIsAInstruction(user) && !LLVMIsAPHINode(user) &&
                            LLVMGetInstructionParent(user) == slow);
    }
    if (only_slow) moving[n++] = i;
  }
  LLVMValueRef first = LLVMGetFirstInstruction(slow);
  LLVMBuilderRef b = LLVMCreateBuilderInContext(LLVMGetTypeContext(LLVMTypeOf(first)));
  LLVMPositionBuilderBefore(b, first);
  for (unsigned k = n; k-- > 0;) { /* collected last first: insert in the original order */
    LLVMInstructionRemoveFromParent(moving[k]);
    LLVMInsertIntoBuilder(b, moving[k]);
  }
  LLVMDisposeBuilder(b);
}

/* The gather's lanes out of a window at p (lane 0's element) for spacing s: s vector loads,
 * the last one ending at the last lane's element, and a chain of two-input shuffles. */
static LLVMValueRef window(LLVMBuilderRef b, LLVMTypeRef vt, LLVMValueRef p, unsigned s,
                           unsigned align) {
  LLVMTypeRef et = LLVMGetElementType(vt);
  unsigned n = LLVMGetVectorSize(vt);
  LLVMContextRef c = LLVMGetTypeContext(vt);
  LLVMTypeRef i64 = LLVMInt64TypeInContext(c), i32 = LLVMInt32TypeInContext(c);
  LLVMTypeRef vpt = LLVMPointerType(vt, LLVMGetPointerAddressSpace(LLVMTypeOf(p)));
  LLVMValueRef acc = NULL;
  int picked[64] = {0}; /* lanes whose element acc holds (at their own place) */
  for (unsigned j = 0; j < s; j++) {
    unsigned start = j + 1 < s ? j * n : (n - 1) * (s - 1);
    LLVMValueRef off = LLVMConstInt(i64, start, 0);
    LLVMValueRef q = start ? LLVMBuildGEP2(b, et, p, &off, 1, "") : p;
    LLVMValueRef ld = LLVMBuildLoad2(b, vt, LLVMBuildBitCast(b, q, vpt, ""), "kapi.window");
    LLVMSetAlignment(ld, align);
    LLVMValueRef mask[64];
    int any = 0;
    for (unsigned l = 0; l < n; l++) {
      unsigned o = l * s;
      if (picked[l]) {
        mask[l] = LLVMConstInt(i32, l, 0);
      } else if (o >= start && o < start + n) {
        mask[l] = LLVMConstInt(i32, (acc ? n : 0) + (o - start), 0);
        picked[l] = 1;
        any = 1;
      } else {
        mask[l] = LLVMGetUndef(i32);
      }
    }
    if (!any) continue;
    LLVMValueRef m = LLVMConstVector(mask, n);
    acc = acc ? LLVMBuildShuffleVector(b, acc, ld, m, "kapi.pick")
              : (s == 1 ? ld : LLVMBuildShuffleVector(b, ld, LLVMGetUndef(vt), m, "kapi.pick"));
  }
  return acc;
}

/* The gather's lanes as scalar loads, lane l at p + l * s (s the spacing, a scalar): each lane's
 * address one add from the last, where a scalarised gather extracts it from a vector. */
static LLVMValueRef strided(LLVMBuilderRef b, LLVMTypeRef vt, LLVMValueRef p, LLVMValueRef s,
                            unsigned align) {
  LLVMTypeRef et = LLVMGetElementType(vt);
  unsigned n = LLVMGetVectorSize(vt);
  LLVMContextRef c = LLVMGetTypeContext(vt);
  LLVMTypeRef i32 = LLVMInt32TypeInContext(c);
  LLVMValueRef acc = LLVMGetUndef(vt), q = p;
  for (unsigned l = 0; l < n; l++) {
    if (l) q = LLVMBuildGEP2(b, et, q, &s, 1, "kapi.strided");
    LLVMValueRef ld = LLVMBuildLoad2(b, et, q, "");
    LLVMSetAlignment(ld, align);
    acc = LLVMBuildInsertElement(b, acc, ld, LLVMConstInt(i32, l, 0), "");
  }
  return acc;
}

/* Deletes v when nothing uses it and it is pure arithmetic, and then its operands that are left
 * unused so. A value is in the list at most once, and is erased only once its last user is. */
static void erase_dead(LLVMValueRef v) {
  LLVMValueRef work[64];
  unsigned n = 0;
  work[n++] = v;
  while (n) {
    v = work[--n];
    if (!LLVMIsAInstruction(v) || LLVMGetFirstUse(v) || !pure_value(v)) continue;
    unsigned no = (unsigned)LLVMGetNumOperands(v);
    for (unsigned k = 0; k < no; k++) {
      LLVMValueRef op = LLVMGetOperand(v, k);
      int listed = !LLVMIsAInstruction(op) || n == sizeof work / sizeof *work;
      for (unsigned w = 0; w < n && !listed; w++)
        listed = work[w] == op;
      if (!listed) work[n++] = op;
    }
    LLVMInstructionEraseFromParent(v);
  }
}

/* The address of the gather's lane 0 (element type et, base + idx), built at b. */
static LLVMValueRef lane0_address(LLVMBuilderRef b, LLVMTypeRef et, LLVMValueRef base,
                                  LLVMValueRef idx, const char *name) {
  LLVMValueRef i0 = lane0(b, idx, 0);
  return LLVMBuildGEP2(b, et, base, &i0, 1, name);
}

/* v takes the gather's place; the gather goes, and the address arithmetic only it used. */
static void retire(LLVMValueRef g, LLVMValueRef v) {
  LLVMValueRef ptrs = LLVMGetOperand(g, 0);
  LLVMReplaceAllUsesWith(g, v);
  LLVMInstructionEraseFromParent(g);
  erase_dead(ptrs);
}

static unsigned elem_bytes(LLVMTypeRef t) {
  switch (LLVMGetTypeKind(t)) {
  case LLVMHalfTypeKind:
  case LLVMBFloatTypeKind:
    return 2;
  case LLVMFloatTypeKind:
    return 4;
  case LLVMIntegerTypeKind:
    return (LLVMGetIntTypeWidth(t) + 7) / 8;
  default: /* double, pointers */
    return 8;
  }
}

/* One gather: 1 when it became a switch on its spacing, or (scalar) scalar loads. */
static int rewrite(LLVMValueRef g, int scalar, LLVMBuilderRef b) {
  /* llvm.masked.gather(<N x T*> ptrs, i32 align, <N x i1> mask, <N x T> passthru) */
  LLVMValueRef ptrs = LLVMGetOperand(g, 0), mask = LLVMGetOperand(g, 2);
  LLVMTypeRef vt = LLVMTypeOf(g);
  if (LLVMGetTypeKind(vt) != LLVMVectorTypeKind || LLVMGetVectorSize(vt) > 64 ||
      LLVMGetVectorSize(vt) < 2 || !all_true(mask))
    return 0;
  if (!LLVMIsAGetElementPtrInst(ptrs) || LLVMGetNumOperands(ptrs) != 2) return 0;
  LLVMValueRef base = LLVMGetOperand(ptrs, 0), idx = LLVMGetOperand(ptrs, 1), stride;
  unsigned shift;
  if (LLVMGetTypeKind(LLVMTypeOf(base)) != LLVMPointerTypeKind ||
      LLVMGetGEPSourceElementType(ptrs) != LLVMGetElementType(vt) ||
      LLVMGetTypeKind(LLVMTypeOf(idx)) != LLVMVectorTypeKind || !affine(idx, &stride, &shift, 0))
    return 0;
  unsigned set = kc_hf_window_spacings(elem_bytes(LLVMGetElementType(vt)));
  if (!set) return 0; /* the windows are off: every gather stays */
  LLVMContextRef c = LLVMGetTypeContext(vt);
  unsigned align = (unsigned)LLVMConstIntGetZExtValue(LLVMGetOperand(g, 1));
  LLVMTypeRef it = LLVMGetElementType(LLVMTypeOf(idx));
  /* 64-bit indices only: a narrower one is sign-extended lane by lane, so lanes that wrap
   * around its range would not be evenly spaced in memory */
  if (LLVMGetIntTypeWidth(it) != 64) return 0;
  /* a constant spacing is decided now */
  LLVMValueRef k = stride && LLVMIsAConstant(stride) ? LLVMGetAggregateElement(stride, 0) : NULL;
  int constant = !stride || k;
  if (constant) {
    long long sp = shift ? 1ll << shift : k ? LLVMConstIntGetSExtValue(k) : 1;
    if (sp < 1 || sp > MAX_SPACING || !(set & (1u << sp))) {
      if (!scalar) return 0;
      LLVMPositionBuilderBefore(b, g);
      LLVMValueRef p0 = lane0_address(b, LLVMGetElementType(vt), base, idx, "kapi.strided");
      retire(g, strided(b, vt, p0, LLVMConstInt(it, (unsigned long long)sp, 1), align));
      return 1;
    }
    set = 1u << sp;
  }
  LLVMBasicBlockRef bb = LLVMGetInstructionParent(g);
  LLVMValueRef fn = LLVMGetBasicBlockParent(bb);
  LLVMBasicBlockRef head = split_head(bb, g, b);
  /* head: lane 0's address, then the switch */
  LLVMPositionBuilderAtEnd(b, head);
  LLVMValueRef p0 = lane0_address(b, LLVMGetElementType(vt), base, idx, "kapi.window.at");
  LLVMBasicBlockRef slow = LLVMAppendBasicBlockInContext(c, fn, "kapi.window.gather");
  LLVMBasicBlockRef fast[MAX_SPACING + 1];
  LLVMValueRef got[MAX_SPACING + 2];
  LLVMBasicBlockRef from[MAX_SPACING + 2];
  unsigned nin = 0;
  LLVMValueRef spacing = NULL;
  if (constant) {
    for (unsigned s = 1; s <= MAX_SPACING; s++)
      if (set & (1u << s)) fast[s] = LLVMAppendBasicBlockInContext(c, fn, "kapi.window");
    for (unsigned s = 1; s <= MAX_SPACING; s++)
      if (set & (1u << s)) LLVMBuildBr(b, fast[s]);
  } else {
    spacing = lane0(b, stride, 0);
    LLVMValueRef sw = LLVMBuildSwitch(b, spacing, slow, MAX_SPACING);
    for (unsigned s = 1; s <= MAX_SPACING; s++)
      if (set & (1u << s)) {
        fast[s] = LLVMAppendBasicBlockInContext(c, fn, "kapi.window");
        LLVMAddCase(sw, LLVMConstInt(it, s, 0), fast[s]);
      }
  }
  for (unsigned s = 1; s <= MAX_SPACING; s++) {
    if (!(set & (1u << s))) continue;
    LLVMPositionBuilderAtEnd(b, fast[s]);
    got[nin] = window(b, vt, p0, s, align);
    from[nin++] = fast[s];
    LLVMBuildBr(b, bb);
  }
  LLVMPositionBuilderAtEnd(b, slow);
  if (!constant && scalar) {
    got[nin] = strided(b, vt, p0, spacing, align);
    LLVMBuildBr(b, bb);
    from[nin++] = slow;
  } else if (!constant) {
    LLVMInstructionRemoveFromParent(g);
    LLVMInsertIntoBuilder(b, g);
    LLVMBuildBr(b, bb);
    got[nin] = g;
    from[nin++] = slow;
  }
  LLVMPositionBuilderBefore(b, LLVMGetFirstInstruction(bb));
  LLVMValueRef phi = LLVMBuildPhi(b, vt, "kapi.gathered");
  LLVMAddIncoming(phi, got, from, nin);
  if (constant || scalar) {
    retire(g, phi);
    if (constant) LLVMDeleteBasicBlock(slow);
  } else {
    /* the phi's own operand is the gather: replace the other uses only */
    for (LLVMUseRef u = LLVMGetFirstUse(g); u;) {
      LLVMUseRef next = LLVMGetNextUse(u);
      LLVMValueRef user = LLVMGetUser(u);
      if (user != phi) {
        unsigned no = LLVMGetNumOperands(user);
        for (unsigned k = 0; k < no; k++)
          if (LLVMGetOperand(user, k) == g) LLVMSetOperand(user, k, phi);
      }
      u = next;
    }
    sink_into(head, slow);
  }
  return 1;
}

unsigned kc_hf_window_gathers(LLVMValueRef fn) {
  LLVMValueRef found[1024];
  unsigned n = 0;
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb))
    for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i && n < 1024;
         i = LLVMGetNextInstruction(i)) {
      if (!LLVMIsACallInst(i)) continue;
      LLVMValueRef callee = LLVMGetCalledValue(i);
      if (!LLVMIsAFunction(callee)) continue;
      const char *name = LLVMGetValueName(callee);
      if (!strncmp(name, "llvm.masked.gather.", 19)) found[n++] = i;
    }
  if (!n) return 0;
  LLVMBuilderRef b = LLVMCreateBuilderInContext(LLVMGetTypeContext(LLVMTypeOf(fn)));
  unsigned count = 0;
  /* the last first: a block's head then holds only the index arithmetic of the gathers not yet
   * rewritten, and each one's can move into its own gather's block */
  int scalar = scalar_gathers();
  for (unsigned i = n; i-- > 0;)
    count += (unsigned)rewrite(found[i], scalar, b);
  LLVMDisposeBuilder(b);
  return count;
}

/* Rows of doubles hold 4 lanes a vector on AVX2: with gathers called cheap the vectoriser
 * interleaves four of them a step, each with its switch, and rows of 3 to 8 doubles ran at
 * 0.8-0.9x the scalar loads LLVM builds itself (a pairwise distance of float64 points 0.83x;
 * bench/gather_rows.py --dtype float64, a Zen 4 and a Xeon held to AVX2). */
int kc_hf_reads_doubles(LLVMModuleRef m) {
  for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
      for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i))
        if (LLVMIsALoadInst(i) && LLVMGetTypeKind(LLVMTypeOf(i)) == LLVMDoubleTypeKind &&
            LLVMGetPointerAddressSpace(LLVMTypeOf(LLVMGetOperand(i, 0))) == 1)
          return 1;
  return 0;
}
