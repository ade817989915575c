/* NVPTX finaliser: 32-bit integer work that Python's typing left in 64 bits. Numba types
 * uint32 arithmetic as 64-bit, and LLVM's instcombine folds `zext (trunc x)` into
 * `and x, 0xffffffff`, so a kernel that keeps 32-bit words in uint64 values (Philox, hashes)
 * reaches the NVPTX backend as 64-bit multiplies, xors and masks: a `mul.lo.s64` is three
 * SASS multiplies and an `xor.b64` two instructions, where the 32-bit forms are one. The
 * backend only selects `mul.wide.u32` for multiplies of explicit zero extensions, which the
 * DAG combiner itself turns back into masks first.
 *
 * After optimisation (no instcombine runs again), every scalar i64 value this pass can show
 * is below 2^32 gets an i32 twin computed in 32 bits:
 *   zext of at most 32 bits; `and` with such a value or a constant below 2^32; `or`, `xor`
 *   and `select` of two such values; `lshr` of such a value, or by 32 or more.
 * Its 64-bit users take `zext` of the twin (a `trunc` to i32 takes the twin itself), so the
 * 64-bit instruction dies. A multiply of two such values (a 32 x 32 -> 64-bit product) is
 * rebuilt from `mul` and `llvm.nvvm.mulhi.ui` of the twins: its high and low halves (`lshr
 * by 32`, `and` with a mask, `trunc`) are those two 32-bit values, with no 64-bit product
 * at all. The low 32 bits of a single-use 64-bit add, sub or multiply that only a mask or a
 * truncation reads are computed in 32 bits too. Each step is exact: a value below 2^32 is
 * the zero extension of its low half. KAPI_CUDA_NARROW=0 (read per finalisation) turns the
 * pass off, to compare.
 */
#include "finalise/nvptx/finalise_nvptx.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { NARROW = 1, PRODUCT = 2, LOW = 3 /* only the low half is read */ };

typedef struct twin {
  LLVMValueRef key;  /* the i64 instruction */
  LLVMValueRef low;  /* i32: the value itself (NARROW), or the product's low half */
  LLVMValueRef high; /* i32: the product's high half (PRODUCT) */
  int kind;
  int self; /* low reads key itself (a trunc of it): key's users stay */
} twin_t;

typedef struct twins {
  twin_t *items;
  size_t count, cap;
  LLVMValueRef *slots; /* open addressing: index + 1 into items by key, or 0 */
  size_t nslots;
} twins_t;

static size_t slot_of(const twins_t *t, LLVMValueRef key) {
  uintptr_t h = (uintptr_t)key;
  h ^= h >> 17;
  h *= 0x9E3779B97F4A7C15ull;
  return (size_t)(h >> 20) & (t->nslots - 1);
}

static twin_t *find(const twins_t *t, LLVMValueRef key) {
  if (!t->nslots) return NULL;
  for (size_t s = slot_of(t, key);; s = (s + 1) & (t->nslots - 1)) {
    uintptr_t v = (uintptr_t)t->slots[s];
    if (!v) return NULL;
    if (t->items[v - 1].key == key) return &t->items[v - 1];
  }
}

static int add(twins_t *t, twin_t tw) {
  if (t->count + 1 > t->nslots / 2) {
    size_t n = t->nslots ? t->nslots * 2 : 64;
    LLVMValueRef *slots = calloc(n, sizeof *slots);
    if (!slots) return 0;
    free(t->slots);
    t->slots = slots;
    t->nslots = n;
    for (size_t i = 0; i < t->count; ++i) {
      size_t s = slot_of(t, t->items[i].key);
      while (slots[s])
        s = (s + 1) & (n - 1);
      slots[s] = (LLVMValueRef)(uintptr_t)(i + 1);
    }
  }
  if (t->count == t->cap) {
    size_t n = t->cap ? t->cap * 2 : 64;
    twin_t *items = realloc(t->items, n * sizeof *items);
    if (!items) return 0;
    t->items = items;
    t->cap = n;
  }
  t->items[t->count++] = tw;
  size_t s = slot_of(t, tw.key);
  while (t->slots[s])
    s = (s + 1) & (t->nslots - 1);
  t->slots[s] = (LLVMValueRef)(uintptr_t)t->count;
  return 1;
}

static unsigned width(LLVMValueRef v) {
  LLVMTypeRef ty = LLVMTypeOf(v);
  return LLVMGetTypeKind(ty) == LLVMIntegerTypeKind ? LLVMGetIntTypeWidth(ty) : 0;
}

/* A constant below 2^32, or NULL. */
static LLVMValueRef small_const(LLVMValueRef v, LLVMTypeRef i32) {
  if (!LLVMIsAConstantInt(v) || width(v) != 64) return NULL;
  unsigned long long c = LLVMConstIntGetZExtValue(v);
  return c >> 32 ? NULL : LLVMConstInt(i32, c, 0);
}

/* The i32 twin of v when v is known below 2^32, else NULL. */
static LLVMValueRef narrow_of(const twins_t *t, LLVMValueRef v, LLVMTypeRef i32) {
  LLVMValueRef c = small_const(v, i32);
  if (c) return c;
  twin_t *tw = find(t, v);
  return tw && tw->kind == NARROW ? tw->low : NULL;
}

/* Where a value's 32-bit twin is built: just after it (after the phis of its block), or at
 * the top of the function for an argument. Every twin is built at its value's definition, so
 * it dominates every place the value is used. */
static void position_after(LLVMBuilderRef b, LLVMValueRef v) {
  LLVMValueRef next;
  if (LLVMIsAInstruction(v)) {
    next = LLVMGetNextInstruction(v);
  } else {
    LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(b));
    next = LLVMGetFirstInstruction(LLVMGetEntryBasicBlock(fn));
  }
  while (next && LLVMIsAPHINode(next))
    next = LLVMGetNextInstruction(next);
  if (next)
    LLVMPositionBuilderBefore(b, next);
  else
    LLVMPositionBuilderAtEnd(b, LLVMGetInstructionParent(v));
}

static int is_small_const(LLVMValueRef v) {
  return LLVMIsAConstantInt(v) && width(v) == 64 && !(LLVMConstIntGetZExtValue(v) >> 32);
}

/* Operations whose low 32 bits depend only on their operands' low 32 bits. */
static int low_op(LLVMValueRef v) {
  if (!LLVMIsAInstruction(v) || width(v) != 64) return 0;
  switch (LLVMGetInstructionOpcode(v)) {
  case LLVMAdd:
  case LLVMSub:
  case LLVMMul:
  case LLVMAnd:
  case LLVMOr:
  case LLVMXor:
    return 1;
  case LLVMShl: {
    LLVMValueRef c = LLVMGetOperand(v, 1);
    return LLVMIsAConstantInt(c) && LLVMConstIntGetZExtValue(c) < 32;
  }
  default:
    return 0;
  }
}

/* Every user of v reads only its low 32 bits: truncations to 32 bits or fewer, masks by a
 * constant below 2^32, and such operations whose own users do. */
static int low_only(LLVMValueRef v, int depth) {
  if (!LLVMGetFirstUse(v)) return 0;
  for (LLVMUseRef u = LLVMGetFirstUse(v); u; u = LLVMGetNextUse(u)) {
    LLVMValueRef user = LLVMGetUser(u);
    if (LLVMIsATruncInst(user) && width(user) <= 32) continue;
    if (LLVMIsAInstruction(user) && LLVMGetInstructionOpcode(user) == LLVMAnd &&
        (is_small_const(LLVMGetOperand(user, 0)) || is_small_const(LLVMGetOperand(user, 1))))
      continue;
    if (LLVMIsAInstruction(user) && LLVMGetInstructionOpcode(user) == LLVMShl &&
        LLVMGetOperand(user, 1) == v)
      return 0;
    if (depth < 6 && low_op(user) && low_only(user, depth + 1)) continue;
    return 0;
  }
  return 1;
}

/* v's low 32 bits as an i32, built after v (the builder's position is left anywhere). */
static LLVMValueRef low_of(LLVMBuilderRef b, twins_t *t, LLVMValueRef v, LLVMTypeRef i32,
                           int depth) {
  LLVMValueRef n = narrow_of(t, v, i32);
  if (n) return n;
  if (LLVMIsAConstantInt(v)) return LLVMConstTrunc(v, i32);
  twin_t *tw = find(t, v);
  if (tw) return tw->low; /* a product's low half, or a low twin */
  LLVMValueRef low;
  if (depth < 6 && low_op(v) && low_only(v, 0)) {
    LLVMOpcode op = LLVMGetInstructionOpcode(v);
    LLVMValueRef x = low_of(b, t, LLVMGetOperand(v, 0), i32, depth + 1);
    LLVMValueRef y = low_of(b, t, LLVMGetOperand(v, 1), i32, depth + 1);
    if (!x || !y) return NULL;
    position_after(b, v);
    switch (op) {
    case LLVMAdd:
      low = LLVMBuildAdd(b, x, y, "");
      break;
    case LLVMSub:
      low = LLVMBuildSub(b, x, y, "");
      break;
    case LLVMMul:
      low = LLVMBuildMul(b, x, y, "");
      break;
    case LLVMAnd:
      low = LLVMBuildAnd(b, x, y, "");
      break;
    case LLVMOr:
      low = LLVMBuildOr(b, x, y, "");
      break;
    case LLVMXor:
      low = LLVMBuildXor(b, x, y, "");
      break;
    default: /* shl by a constant below 32 */
      low = LLVMBuildShl(b, x, y, "");
      break;
    }
  } else {
    position_after(b, v);
    low = LLVMBuildTrunc(b, v, i32, "");
  }
  twin_t lw = {v, low, NULL, LOW, 1};
  return add(t, lw) ? low : NULL;
}

static LLVMValueRef mulhi(LLVMModuleRef mod, LLVMBuilderRef b, LLVMValueRef x, LLVMValueRef y) {
  LLVMTypeRef i32 = LLVMTypeOf(x);
  LLVMTypeRef ps[2] = {i32, i32};
  LLVMTypeRef fty = LLVMFunctionType(i32, ps, 2, 0);
  LLVMValueRef f = LLVMGetNamedFunction(mod, "llvm.nvvm.mulhi.ui");
  if (!f) f = LLVMAddFunction(mod, "llvm.nvvm.mulhi.ui", fty);
  LLVMValueRef args[2] = {x, y};
  return LLVMBuildCall2(b, fty, f, args, 2, "");
}

/* The twin of inst (a scalar i64 instruction), built just after it; 0 when it has none,
 * -1 when out of memory. */
static int twin_for(LLVMModuleRef mod, LLVMBuilderRef b, twins_t *t, LLVMValueRef inst,
                    LLVMTypeRef i32, twin_t *out) {
  LLVMOpcode op = LLVMGetInstructionOpcode(inst);
  memset(out, 0, sizeof *out);
  out->key = inst;
  out->kind = NARROW;
  LLVMValueRef a = LLVMGetNumOperands(inst) > 0 ? LLVMGetOperand(inst, 0) : NULL;
  LLVMValueRef c = LLVMGetNumOperands(inst) > 1 ? LLVMGetOperand(inst, 1) : NULL;
  switch (op) {
  case LLVMAnd: {
    if (!narrow_of(t, a, i32) && !narrow_of(t, c, i32)) return 0;
    LLVMValueRef x = low_of(b, t, a, i32, 0), y = low_of(b, t, c, i32, 0);
    if (!x || !y) return -1;
    position_after(b, inst);
    out->low = LLVMBuildAnd(b, x, y, "");
    return 1;
  }
  case LLVMOr:
  case LLVMXor: {
    LLVMValueRef x = narrow_of(t, a, i32), y = narrow_of(t, c, i32);
    if (!x || !y) return 0;
    position_after(b, inst);
    out->low = op == LLVMOr ? LLVMBuildOr(b, x, y, "") : LLVMBuildXor(b, x, y, "");
    return 1;
  }
  case LLVMSelect: {
    LLVMValueRef x = narrow_of(t, c, i32), y = narrow_of(t, LLVMGetOperand(inst, 2), i32);
    if (!x || !y) return 0;
    position_after(b, inst);
    out->low = LLVMBuildSelect(b, a, x, y, "");
    return 1;
  }
  case LLVMLShr: {
    if (!LLVMIsAConstantInt(c)) return 0;
    unsigned long long s = LLVMConstIntGetZExtValue(c);
    if (s >= 64) return 0;
    LLVMValueRef x = narrow_of(t, a, i32);
    twin_t *p = find(t, a);
    position_after(b, inst);
    if (x && s < 32) {
      out->low = LLVMBuildLShr(b, x, LLVMConstInt(i32, s, 0), "");
    } else if (p && p->kind == PRODUCT && s >= 32) {
      out->low = s == 32 ? p->high : LLVMBuildLShr(b, p->high, LLVMConstInt(i32, s - 32, 0), "");
    } else if (s >= 32) {
      out->low = LLVMBuildTrunc(b, inst, i32, "");
      out->self = 1;
    } else {
      return 0;
    }
    return 1;
  }
  case LLVMZExt: {
    unsigned w = width(a);
    if (!w || w > 32) return 0;
    position_after(b, inst);
    out->low = w == 32 ? a : LLVMBuildZExt(b, a, i32, "");
    out->self = 1; /* a zext of 32 bits is already what its users would get */
    return 1;
  }
  case LLVMMul: {
    LLVMValueRef x = narrow_of(t, a, i32), y = narrow_of(t, c, i32);
    if (!x || !y) return 0;
    position_after(b, inst);
    out->kind = PRODUCT;
    out->low = LLVMBuildMul(b, x, y, "");
    out->high = mulhi(mod, b, x, y);
    return 1;
  }
  default:
    return 0;
  }
}

/* Every use of v: collected first, since rewriting them changes the list. */
static LLVMUseRef *uses_of(LLVMValueRef v, size_t *n) {
  size_t k = 0;
  for (LLVMUseRef u = LLVMGetFirstUse(v); u; u = LLVMGetNextUse(u))
    ++k;
  LLVMUseRef *us = malloc((k ? k : 1) * sizeof *us);
  if (!us) return NULL;
  k = 0;
  for (LLVMUseRef u = LLVMGetFirstUse(v); u; u = LLVMGetNextUse(u))
    us[k++] = u;
  *n = k;
  return us;
}

/* key's truncations to i32 read low instead; with `wide` its other users read zext(low). */
static int redirect(LLVMBuilderRef b, const twin_t *tw, int wide) {
  size_t n;
  LLVMUseRef *us = uses_of(tw->key, &n);
  if (!us) return 0;
  LLVMValueRef z = NULL;
  for (size_t i = 0; i < n; ++i) {
    LLVMValueRef user = LLVMGetUser(us[i]);
    if (user == tw->low) continue; /* the twin is a truncation of the key itself */
    if (LLVMIsATruncInst(user)) {
      if (LLVMGetFirstUse(user) == NULL) continue; /* already rewritten (a repeated use) */
      unsigned w = width(user);
      LLVMValueRef v = tw->low;
      if (w < 32) {
        LLVMPositionBuilderBefore(b, user);
        v = LLVMBuildTrunc(b, v, LLVMTypeOf(user), "");
      }
      if (w <= 32) {
        LLVMReplaceAllUsesWith(user, v);
        continue;
      }
    }
    if (!wide) continue;
    if (!z) {
      position_after(b, LLVMIsAInstruction(tw->low) ? tw->low : tw->key);
      z = LLVMBuildZExt(b, tw->low, LLVMTypeOf(tw->key), "");
    }
    for (int k = 0, m = LLVMGetNumOperands(user); k < m; ++k)
      if (LLVMGetOperand(user, k) == tw->key) LLVMSetOperand(user, (unsigned)k, z);
  }
  free(us);
  return 1;
}

/* Erases the pure instructions nothing reads any more: the keys, and the truncations whose
 * readers took a twin. Repeated until nothing changes (a key's operands may be keys). */
static void erase_dead(twins_t *t) {
  int changed = 1;
  while (changed) {
    changed = 0;
    for (size_t k = t->count; k-- > 0;) {
      twin_t *tw = &t->items[k];
      if (!tw->key) continue;
      LLVMUseRef u, next;
      for (u = LLVMGetFirstUse(tw->key); u; u = next) {
        next = LLVMGetNextUse(u);
        LLVMValueRef user = LLVMGetUser(u);
        if (LLVMIsATruncInst(user) && !LLVMGetFirstUse(user)) {
          LLVMInstructionEraseFromParent(user);
          changed = 1;
          next = LLVMGetFirstUse(tw->key);
        }
      }
      if (!LLVMGetFirstUse(tw->key) &&
          !(tw->self && tw->low && LLVMIsAInstruction(tw->low) && LLVMIsATruncInst(tw->low) &&
            LLVMGetOperand(tw->low, 0) == tw->key)) {
        LLVMInstructionEraseFromParent(tw->key);
        tw->key = NULL;
        changed = 1;
      }
    }
  }
}

static int narrow_function(LLVMModuleRef mod, LLVMBuilderRef b, LLVMValueRef fn) {
  LLVMTypeRef i32 = LLVMInt32TypeInContext(LLVMGetModuleContext(mod));
  twins_t t = {0};
  int ok = 1;
  LLVMPositionBuilderAtEnd(b, LLVMGetEntryBasicBlock(fn));
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb && ok; bb = LLVMGetNextBasicBlock(bb))
    for (LLVMValueRef i = LLVMGetFirstInstruction(bb), next; i && ok; i = next) {
      next = LLVMGetNextInstruction(i);
      /* A truncation of a value whose readers all want its low half: computed in 32 bits. */
      if (LLVMIsATruncInst(i) && width(i) <= 32) {
        LLVMValueRef a = LLVMGetOperand(i, 0);
        if (width(a) == 64 && !find(&t, a) && low_op(a) && low_only(a, 0))
          ok = low_of(b, &t, a, i32, 0) != NULL;
        continue;
      }
      if (width(i) != 64 || LLVMIsAPHINode(i)) continue;
      twin_t tw;
      int r = twin_for(mod, b, &t, i, i32, &tw);
      if (r < 0) ok = 0;
      if (r > 0) ok = add(&t, tw);
    }
  /* The readers of the narrow values and low halves take the 32-bit twins (64-bit readers
   * of a narrow value its zero extension); a product keeps its 64-bit multiply only for
   * readers of more than its halves. */
  for (size_t k = 0; k < t.count && ok; ++k) {
    twin_t *tw = &t.items[k];
    if (tw->kind == NARROW && tw->self) continue;
    ok = redirect(b, tw, tw->kind == NARROW);
  }
  if (ok) erase_dead(&t);
  free(t.items);
  free(t.slots);
  return ok;
}

static int narrow_enabled(void) {
  const char *env = getenv("KAPI_CUDA_NARROW");
  return !(env && !strcmp(env, "0"));
}

kc_status_t kc_nvptx_narrow(LLVMModuleRef mod) {
  if (!narrow_enabled()) return KC_OK;
  LLVMBuilderRef b = LLVMCreateBuilderInContext(LLVMGetModuleContext(mod));
  int ok = 1;
  for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn && ok; fn = LLVMGetNextFunction(fn))
    if (!LLVMIsDeclaration(fn)) ok = narrow_function(mod, b, fn);
  LLVMDisposeBuilder(b);
  return ok ? KC_OK : KC_ERR_OUT_OF_MEMORY;
}
