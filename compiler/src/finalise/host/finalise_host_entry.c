/* Host finaliser: finds the kernels and generates each one's per-work-group entry
 * `void NAME.kapi.run(const kc_host_group_t *)`, the function kc_host_kernel_t.run points at.
 *
 * Barrier-free kernels (KC_HF_LOOP): run unpacks the arguments once, then loops z, y, x (dim 0
 * innermost) over the group's work-items calling the kernel, which is inlined later; the loop
 * variables are the local ids, so the vectoriser sees consecutive work-items as consecutive
 * iterations.
 * Kernels with barriers (KC_HF_REGIONS): `i32 NAME.kapi.wi(group, x, y, z, state, local,
 * storage, ucur, unext, args...)` runs one work-item from region `state` to its next barrier
 * and returns the next region (finalise_host_regions.c splits it after inlining); run, built after
 * that split, runs one work-item loop per region. Kernels that spin on an atomic load
 * (KC_HF_FIBERS): `NAME.kapi.wi(group, local_id, local)` runs one work-item, and run hands it to
 * kc_host_fiber_run, which runs every work-item on its own fiber (finalise_host_fiber.c) so that a
 * spinning one can let the others progress. In all, run allocates the group's buffer for __local
 * globals in its own frame.
 */
#include "finalise/host/finalise_host.h"

#include <llvm-c/DebugInfo.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SPIR_KERNEL_CC = 76 };

static unsigned attr_kind(const char *name) {
  return LLVMGetEnumAttributeKindForName(name, strlen(name));
}

static int is_byval(LLVMValueRef f, unsigned i) {
  return LLVMGetEnumAttributeAtIndex(f, i + 1, attr_kind("byval")) != NULL;
}

/* reqd_work_group_size metadata (three i32 constants), if present. */
static void read_reqd(LLVMValueRef f, uint32_t reqd[3]) {
  size_t n = 0;
  LLVMValueMetadataEntry *md = LLVMGlobalCopyAllMetadata(f, &n);
  unsigned want =
      LLVMGetMDKindIDInContext(LLVMGetTypeContext(LLVMTypeOf(f)), "reqd_work_group_size", 20);
  for (size_t i = 0; i < n; i++) {
    if (LLVMValueMetadataEntriesGetKind(md, (unsigned)i) != want) continue;
    LLVMContextRef c = LLVMGetTypeContext(LLVMTypeOf(f));
    LLVMValueRef node =
        LLVMMetadataAsValue(c, LLVMValueMetadataEntriesGetMetadata(md, (unsigned)i));
    if (LLVMGetMDNodeNumOperands(node) != 3) continue;
    LLVMValueRef ops[3];
    LLVMGetMDNodeOperands(node, ops);
    for (int d = 0; d < 3; d++)
      if (ops[d] && LLVMIsAConstantInt(ops[d]))
        reqd[d] = (uint32_t)LLVMConstIntGetZExtValue(ops[d]);
  }
  if (md) LLVMDisposeValueMetadataEntries(md);
}

static int collect_args(LLVMValueRef f, LLVMTargetDataRef td, kc_hf_kernel_t *k, char **log) {
  k->num_args = LLVMCountParams(f);
  k->args = calloc(k->num_args + 1, sizeof *k->args);
  k->arg_types = calloc(k->num_args + 1, sizeof *k->arg_types);
  k->arg_byval = calloc(k->num_args + 1, 1);
  k->arg_unversioned = calloc(k->num_args + 1, 1);
  if (!k->args || !k->arg_types || !k->arg_byval || !k->arg_unversioned)
    return *log = kc_msg("out of memory"), 0;
  for (unsigned i = 0; i < k->num_args; i++) {
    LLVMTypeRef t = LLVMTypeOf(LLVMGetParam(f, i));
    k->arg_types[i] = t;
    k->arg_byval[i] = LLVMGetTypeKind(t) == LLVMPointerTypeKind && is_byval(f, i);
    k->arg_unversioned[i] = (char)kc_hf_arg_unversioned(LLVMGetParam(f, i));
    int ptr = LLVMGetTypeKind(t) == LLVMPointerTypeKind;
    if (ptr && LLVMGetPointerAddressSpace(t) == 3) {
      k->args[i].kind = KC_ARG_LOCAL;
      continue;
    }
    LLVMTypeRef vt = ptr && is_byval(f, i) ? LLVMGetElementType(t) : t;
    if (!LLVMTypeIsSized(vt)) {
      *log = kc_msg("kernel %s: argument %u has an unsized type", k->name, i);
      return 0;
    }
    k->args[i].kind = KC_ARG_VALUE;
    k->args[i].size = (uint32_t)LLVMABISizeOfType(td, vt);
  }
  return 1;
}

/* Marks (in `marked`, parallel to the module's function list) every function that reaches a
 * work-group barrier, directly or through calls. */
static void mark_barrier_users(LLVMModuleRef m, LLVMValueRef *fns, char *marked, size_t nf) {
  for (int changed = 1; changed;) {
    changed = 0;
    for (size_t i = 0; i < nf; i++) {
      if (marked[i]) continue;
      for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fns[i]); bb && !marked[i];
           bb = LLVMGetNextBasicBlock(bb))
        for (LLVMValueRef in = LLVMGetFirstInstruction(bb); in; in = LLVMGetNextInstruction(in)) {
          if (!LLVMIsACallInst(in)) continue;
          LLVMValueRef callee = LLVMGetCalledValue(in);
          int hit = kc_hf_kernel_calls_barrier(in);
          for (size_t j = 0; j < nf && !hit; j++)
            hit = marked[j] && fns[j] == callee;
          if (hit) {
            marked[i] = 1;
            changed = 1;
            break;
          }
        }
    }
  }
  (void)m;
}

static int is_atomic_load(LLVMValueRef in) {
  return LLVMIsALoadInst(in) && LLVMGetOrdering(in) != LLVMAtomicOrderingNotAtomic;
}

static int index_of_fn(LLVMValueRef *fns, size_t nf, LLVMValueRef f) {
  for (size_t j = 0; j < nf; j++)
    if (fns[j] == f) return (int)j;
  return -1;
}

/* Marks every function that may spin on an atomic load: one in a loop, a call in a loop to a
 * function with an atomic load anywhere below it, or a call to a function that may spin.
 * Such kernels need forward progress between work-items, which only fibers give. */
static void mark_spinners(LLVMValueRef *fns, char *spins, size_t nf) {
  char *loads = calloc(nf + 1, 1);
  if (!loads) return;
  for (int changed = 1; changed;) {
    changed = 0;
    for (size_t i = 0; i < nf; i++)
      for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fns[i]); bb;
           bb = LLVMGetNextBasicBlock(bb))
        for (LLVMValueRef in = LLVMGetFirstInstruction(bb); in; in = LLVMGetNextInstruction(in)) {
          int callee = LLVMIsACallInst(in) ? index_of_fn(fns, nf, LLVMGetCalledValue(in)) : -1;
          int load = is_atomic_load(in) || (callee >= 0 && loads[callee]);
          if (load && !loads[i]) loads[i] = changed = 1;
          int spin = (callee >= 0 && spins[callee]) || (load && kc_hf_block_in_cycle(bb));
          if (spin && !spins[i]) spins[i] = changed = 1;
        }
  }
  free(loads);
}

int kc_hf_collect_kernels(LLVMModuleRef m, LLVMTargetDataRef td, kc_hf_kernel_t **out,
                          uint32_t *count, char **log) {
  size_t nf = 0;
  for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
    nf++;
  LLVMValueRef *fns = calloc(nf + 1, sizeof *fns);
  char *marked = calloc(nf + 1, 1), *spins = calloc(nf + 1, 1);
  kc_hf_kernel_t *ks = calloc(nf + 1, sizeof *ks);
  if (!fns || !marked || !spins || !ks) {
    free(fns), free(marked), free(spins), free(ks);
    return *log = kc_msg("out of memory"), 0;
  }
  nf = 0;
  for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
    fns[nf++] = f;
  mark_barrier_users(m, fns, marked, nf);
  mark_spinners(fns, spins, nf);
  uint32_t n = 0;
  int ok = 1;
  for (size_t i = 0; i < nf && ok; i++) {
    LLVMValueRef f = fns[i];
    if (LLVMGetFunctionCallConv(f) != SPIR_KERNEL_CC || LLVMIsDeclaration(f)) continue;
    kc_hf_kernel_t *k = &ks[n++];
    k->kernel = f;
    k->name = strdup(LLVMGetValueName(f));
    k->uses_barrier = marked[i];
    k->spins = spins[i];
    k->scheme = k->spins ? KC_HF_FIBERS : k->uses_barrier ? KC_HF_REGIONS : KC_HF_LOOP;
    if (k->scheme == KC_HF_LOOP && kc_hf_loopvec_on() && kc_hf_loopvec_candidate(f))
      k->scheme = KC_HF_REGIONS, k->loopvec = 1;
    read_reqd(f, k->reqd);
    ok = k->name ? collect_args(f, td, k, log) : (*log = kc_msg("out of memory"), 0);
  }
  free(fns);
  free(marked);
  free(spins);
  if (!ok) return kc_hf_kernels_free(ks, n), 0;
  *out = ks;
  *count = n;
  return 1;
}

void kc_hf_kernels_free(kc_hf_kernel_t *ks, uint32_t n) {
  if (!ks) return;
  for (uint32_t i = 0; i < n; i++) {
    free(ks[i].min_states);
    free(ks[i].free_saves);
    free(ks[i].name);
    free(ks[i].args);
    free(ks[i].arg_types);
    free(ks[i].arg_byval);
    free(ks[i].arg_unversioned);
  }
  free(ks);
}

/* %kapi.group: the IR view of kc_host_group_t. */
static LLVMTypeRef group_type(LLVMContextRef c) {
  LLVMTypeRef t = LLVMGetTypeByName2(c, "kapi.group");
  if (t) return t;
  LLVMTypeRef a3 = LLVMArrayType(LLVMInt64TypeInContext(c), 3);
  LLVMTypeRef i8pp = LLVMPointerType(LLVMPointerType(LLVMInt8TypeInContext(c), 0), 0);
  LLVMTypeRef i64 = LLVMInt64TypeInContext(c);
  LLVMTypeRef fields[7] = {a3, a3, a3, a3, i8pp, i64, i64};
  t = LLVMStructCreateNamed(c, "kapi.group");
  LLVMStructSetBody(t, fields, 7, 0);
  return t;
}

/* The bounds compiler.h promises for a group field (0: none): ids, counts and offsets below
 * 2^32, group sizes at most 2^16. LLVM then knows every global id is below 2^49, so a Python
 * index such as `a[gid - 1]` after `gid = get_id(0) + 1` loses its negative-index wrap-around
 * select, and the access stays consecutive for the vectoriser (a stencil's loop ran scalar). */
static uint64_t field_bound(unsigned field) {
  switch (field) {
  case KC_HG_GROUP_ID:
  case KC_HG_GROUP_RANGE:
  case KC_HG_OFFSET:
    return UINT64_C(1) << 32;
  case KC_HG_LOCAL_RANGE:
    return (UINT64_C(1) << 16) + 1;
  }
  return 0;
}

/* Field `field` of the group descriptor, element d of it (d < 0: a scalar field). */
static LLVMValueRef group_field(LLVMBuilderRef b, LLVMValueRef g, unsigned field, int d) {
  LLVMContextRef c = LLVMGetTypeContext(LLVMTypeOf(g));
  LLVMTypeRef i32 = LLVMInt32TypeInContext(c), i64 = LLVMInt64TypeInContext(c);
  LLVMValueRef idx[3] = {LLVMConstInt(i32, 0, 0), LLVMConstInt(i32, field, 0),
                         LLVMConstInt(i32, (unsigned)(d < 0 ? 0 : d), 0)};
  LLVMValueRef p = LLVMBuildInBoundsGEP2(b, group_type(c), g, idx, d < 0 ? 2 : 3, "");
  LLVMValueRef v = LLVMBuildLoad2(b, i64, p, "");
  LLVMSetAlignment(v, 8);
  uint64_t bound = field_bound(field);
  if (bound) {
    LLVMMetadataRef r[2] = {LLVMValueAsMetadata(LLVMConstInt(i64, 0, 0)),
                            LLVMValueAsMetadata(LLVMConstInt(i64, bound, 0))};
    LLVMSetMetadata(v, LLVMGetMDKindIDInContext(c, "range", 5),
                    LLVMMetadataAsValue(c, LLVMMDNodeInContext2(c, r, 2)));
  }
  return v;
}

static void load_group(LLVMBuilderRef b, LLVMValueRef g, kc_hf_kernel_t *k) {
  for (int d = 0; d < 3; d++) {
    k->group_id[d] = group_field(b, g, KC_HG_GROUP_ID, d);
    k->group_range[d] = group_field(b, g, KC_HG_GROUP_RANGE, d);
    k->local_range[d] = group_field(b, g, KC_HG_LOCAL_RANGE, d);
    k->offset[d] = group_field(b, g, KC_HG_OFFSET, d);
  }
}

/* Loads the kernel's arguments from group->args (byte pointers of any alignment). Done once
 * per group, before any loop, so that stores through kernel pointers cannot force reloads.
 * Returns a malloc'd array of num_args values (NULL when out of memory). */
static LLVMValueRef *unpack_args(LLVMBuilderRef b, LLVMValueRef g, const kc_hf_kernel_t *k) {
  LLVMContextRef c = LLVMGetTypeContext(LLVMTypeOf(g));
  LLVMTypeRef i8p = LLVMPointerType(LLVMInt8TypeInContext(c), 0), i32 = LLVMInt32TypeInContext(c);
  LLVMValueRef idx[2] = {LLVMConstInt(i32, 0, 0), LLVMConstInt(i32, KC_HG_ARGS, 0)};
  LLVMValueRef pa = LLVMBuildInBoundsGEP2(b, group_type(c), g, idx, 2, "");
  LLVMValueRef args = LLVMBuildLoad2(b, LLVMPointerType(i8p, 0), pa, "args");
  LLVMValueRef *vals = calloc(k->num_args + 1, sizeof *vals);
  for (unsigned i = 0; vals && i < k->num_args; i++) {
    LLVMValueRef ix = LLVMConstInt(i32, i, 0);
    LLVMValueRef p = LLVMBuildLoad2(b, i8p, LLVMBuildInBoundsGEP2(b, i8p, args, &ix, 1, ""), "");
    LLVMTypeRef t = k->arg_types[i];
    if (k->args[i].kind == KC_ARG_VALUE && k->arg_byval[i]) {
      vals[i] = LLVMBuildPointerCast(b, p, t, "");
      continue;
    }
    LLVMValueRef v = LLVMBuildLoad2(b, t, LLVMBuildBitCast(b, p, LLVMPointerType(t, 0), ""), "");
    LLVMSetAlignment(v, 1);
    vals[i] = k->arg_unversioned[i] ? kc_hf_times_opaque_one(b, v) : v;
  }
  return vals;
}

static LLVMValueRef local_buffer(LLVMBuilderRef b, LLVMContextRef c, uint64_t size) {
  LLVMTypeRef i8 = LLVMInt8TypeInContext(c);
  if (size == 0) return LLVMConstNull(LLVMPointerType(i8, 0));
  LLVMValueRef a = LLVMBuildAlloca(b, LLVMArrayType(i8, (unsigned)size), "kapi.local");
  LLVMSetAlignment(a, 64);
  return LLVMBuildBitCast(b, a, LLVMPointerType(i8, 0), "kapi.local.base");
}

static LLVMValueRef add_function(LLVMModuleRef m, const char *kname, const char *suffix,
                                 LLVMTypeRef fty) {
  char *name = kc_msg("%s.kapi.%s", kname, suffix);
  LLVMValueRef f = name ? LLVMAddFunction(m, name, fty) : NULL;
  free(name);
  return f;
}

/* One counted loop level: header with the induction phi, body built by the caller, latch. */
typedef struct {
  LLVMBasicBlockRef head, latch;
  LLVMValueRef iv;
} loop_t;

static loop_t loop_open(LLVMBuilderRef b, LLVMValueRef fn, LLVMBasicBlockRef from, const char *n) {
  LLVMContextRef c = LLVMGetTypeContext(LLVMTypeOf(fn));
  loop_t l = {LLVMAppendBasicBlockInContext(c, fn, n), LLVMAppendBasicBlockInContext(c, fn, n), 0};
  LLVMBuildBr(b, l.head);
  LLVMPositionBuilderAtEnd(b, l.head);
  l.iv = LLVMBuildPhi(b, LLVMInt64TypeInContext(c), n);
  LLVMValueRef zero = LLVMConstInt(LLVMInt64TypeInContext(c), 0, 0);
  LLVMAddIncoming(l.iv, &zero, &from, 1);
  return l;
}

/* Ends the body (the builder's current block) by branching to the latch; the latch steps the
 * induction variable and loops while it is below `count`. Leaves the builder in `exit`. */
static void loop_close(LLVMBuilderRef b, loop_t *l, LLVMValueRef count, LLVMBasicBlockRef exit) {
  LLVMBuildBr(b, l->latch);
  LLVMPositionBuilderAtEnd(b, l->latch);
  LLVMValueRef next = LLVMBuildNUWAdd(b, l->iv, LLVMConstInt(LLVMTypeOf(l->iv), 1, 0), "");
  LLVMAddIncoming(l->iv, &next, &l->latch, 1);
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntULT, next, count, ""), l->head, exit);
  LLVMPositionBuilderAtEnd(b, exit);
}

/* Floating-point work of a function and the defined functions it calls (depth-limited): each
 * arithmetic instruction or intrinsic call 1, each call of an external function (libm, libmvec)
 * 16; -1 for an indirect call or a call chain too deep. Adds their instructions to *size. */
static int fp_work(LLVMValueRef f, int depth, int *size) {
  if (depth > 8) return -1;
  int w = 0;
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb)) {
    for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i)) {
      LLVMOpcode op = LLVMGetInstructionOpcode(i);
      ++*size;
      if (op == LLVMFAdd || op == LLVMFSub || op == LLVMFMul || op == LLVMFDiv || op == LLVMFNeg) {
        w++;
      } else if (op == LLVMCall) {
        LLVMValueRef callee = LLVMGetCalledValue(i);
        if (!LLVMIsAFunction(callee)) return -1;
        LLVMTypeKind rk = LLVMGetTypeKind(LLVMGetReturnType(LLVMGlobalGetValueType(callee)));
        int fp = rk == LLVMFloatTypeKind || rk == LLVMDoubleTypeKind || rk == LLVMHalfTypeKind;
        if (LLVMGetIntrinsicID(callee)) {
          w += fp;
        } else if (LLVMIsDeclaration(callee)) {
          w += fp ? 16 : 0;
        } else {
          int inner = fp_work(callee, depth + 1, size);
          if (inner < 0) return -1;
          w += inner;
        }
      }
    }
  }
  return w;
}

/* Whether f or a defined function it calls has a loop (then the work-item loop is not
 * innermost). Run only for heavy kernels: kc_hf_block_in_cycle walks the function per block. */
static int has_loop(LLVMValueRef f, int depth) {
  if (depth > 8) return 1;
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb)) {
    if (kc_hf_block_in_cycle(bb)) return 1;
    for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i)) {
      if (LLVMGetInstructionOpcode(i) != LLVMCall) continue;
      LLVMValueRef callee = LLVMGetCalledValue(i);
      if (!LLVMIsAFunction(callee)) return 1;
      if (!LLVMIsDeclaration(callee) && has_loop(callee, depth + 1)) return 1;
    }
  }
  return 0;
}

/* The interleave count for a loop-scheme kernel's work-item loop: 4 when its body is straight
 * line with at least INTERLEAVE_MIN_WORK floating-point operations and at most
 * INTERLEAVE_MAX_SIZE instructions, else 0 (the vectoriser's choice). LLVM interleaves only small
 * loop bodies, trusting out-of-order execution to overlap a large body's iterations; but a body of
 * long dependent chains (exp, log, erf, divisions: black-scholes) fills the reorder buffer with
 * one iteration, and four independent vectors per iteration ran it 1.3-1.6x faster
 * (bench/RESULTS.md). KAPI_HOST_INTERLEAVE: `0` (or `1`), the vectoriser's choice for every kernel;
 * a power of two up to 16, that count for the heavy ones. *work: the operation count, -1 where a
 * loop (or an indirect call) rules the kernel out. The size bound: the vector body is copied per
 * interleaved vector, and for kapi.random's normals (950-1400 instructions) that added 0.4-1.1 s to
 * the first call for a 15-30% faster kernel; black-scholes has 125-191 (40-140 ms more). */
#define INTERLEAVE_MIN_WORK 48
#define INTERLEAVE_MAX_SIZE 512

int kc_hf_heavy_body(LLVMValueRef kernel) {
  int size = 0, work = fp_work(kernel, 0, &size);
  return work < 0 || work >= INTERLEAVE_MIN_WORK;
}
static unsigned interleave_count(LLVMValueRef kernel, int *work, int *size) {
  const char *v = getenv("KAPI_HOST_INTERLEAVE");
  char *end = NULL;
  long n = v && *v ? strtol(v, &end, 10) : 4;
  if ((end && *end) || n < 0 || n > 16 || (n & (n - 1))) n = 4; /* not a count: the default */
  *size = 0;
  *work = fp_work(kernel, 0, size);
  if (*work < INTERLEAVE_MIN_WORK || *size > INTERLEAVE_MAX_SIZE) return 0u;
  if (has_loop(kernel, 0)) return *work = -1, 0u;
  return n > 1 ? (unsigned)n : 0u;
}

/* Marks the loop closed by `latch` with {"llvm.loop.interleave.count", count}. */
static void mark_interleave(LLVMContextRef c, LLVMBasicBlockRef latch, unsigned count) {
  LLVMMetadataRef tmp = LLVMTemporaryMDNode(c, NULL, 0);
  LLVMMetadataRef hint[2] = {
      LLVMMDStringInContext2(c, "llvm.loop.interleave.count", 26),
      LLVMValueAsMetadata(LLVMConstInt(LLVMInt32TypeInContext(c), count, 0))};
  LLVMMetadataRef ops[2] = {tmp, LLVMMDNodeInContext2(c, hint, 2)};
  LLVMMetadataRef id = LLVMMDNodeInContext2(c, ops, 2);
  LLVMMetadataReplaceAllUsesWith(tmp, id);
  LLVMSetMetadata(LLVMGetBasicBlockTerminator(latch), LLVMGetMDKindIDInContext(c, "llvm.loop", 9),
                  LLVMMetadataAsValue(c, id));
}

static int make_loop_run(LLVMModuleRef m, LLVMBuilderRef b, kc_hf_kernel_t *k, uint64_t lsize) {
  LLVMContextRef c = LLVMGetModuleContext(m);
  LLVMValueRef fn = k->run;
  LLVMValueRef g = LLVMGetParam(fn, 0);
  LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(c, fn, "entry");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(c, fn, "done");
  LLVMPositionBuilderAtEnd(b, entry);
  k->local_base = local_buffer(b, c, lsize);
  load_group(b, g, k);
  LLVMValueRef *vals = unpack_args(b, g, k);
  if (!vals) return 0;
  LLVMValueRef zero = LLVMConstInt(LLVMInt64TypeInContext(c), 0, 0), empty = NULL;
  for (int d = 0; d < 3; d++) {
    LLVMValueRef z = LLVMBuildICmp(b, LLVMIntEQ, k->local_range[d], zero, "");
    empty = empty ? LLVMBuildOr(b, empty, z, "") : z;
  }
  LLVMBasicBlockRef go = LLVMAppendBasicBlockInContext(c, fn, "go");
  LLVMBuildCondBr(b, empty, done, go);
  LLVMPositionBuilderAtEnd(b, go);
  loop_t lz = loop_open(b, fn, go, "wi.z");
  loop_t ly = loop_open(b, fn, lz.head, "wi.y");
  loop_t lx = loop_open(b, fn, ly.head, "wi.x");
  k->local_id[0] = lx.iv, k->local_id[1] = ly.iv, k->local_id[2] = lz.iv;
  kc_hf_call(b, k->kernel, vals, k->num_args);
  free(vals);
  LLVMBasicBlockRef ex = LLVMAppendBasicBlockInContext(c, fn, "x.done");
  loop_close(b, &lx, k->local_range[0], ex);
  int work = 0, size = 0;
  unsigned ic = interleave_count(k->kernel, &work, &size);
  if (ic) mark_interleave(c, lx.latch, ic);
  char note[64]; /* for KAPI_DUMP=host */
  snprintf(note, sizeof note, "%u (work %d, size %d)", ic, work, size);
  LLVMAddAttributeAtIndex(
      fn, LLVMAttributeFunctionIndex,
      LLVMCreateStringAttribute(c, "kapi-interleave", 15, note, (unsigned)strlen(note)));
  LLVMBasicBlockRef ey = LLVMAppendBasicBlockInContext(c, fn, "y.done");
  loop_close(b, &ly, k->local_range[1], ey);
  loop_close(b, &lz, k->local_range[2], done);
  LLVMBuildRet(b, LLVMConstInt(LLVMInt32TypeInContext(c), KC_OK, 0));
  return 1;
}

static int make_fiber_run(LLVMModuleRef m, LLVMBuilderRef b, kc_hf_kernel_t *k, uint64_t lsize) {
  LLVMContextRef c = LLVMGetModuleContext(m);
  LLVMTypeRef i64 = LLVMInt64TypeInContext(c), i8p = LLVMPointerType(LLVMInt8TypeInContext(c), 0);
  LLVMTypeRef gp = LLVMPointerType(group_type(c), 0);
  LLVMTypeRef wparams[3] = {gp, LLVMPointerType(i64, 0), i8p};
  LLVMTypeRef wty = LLVMFunctionType(LLVMVoidTypeInContext(c), wparams, 3, 0);
  LLVMValueRef wi = add_function(m, k->name, "wi", wty);
  /* wi: one work-item; local ids are fixed for the fiber's life, so load them once. */
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(c, wi, "entry"));
  LLVMValueRef g = LLVMGetParam(wi, 0), lid = LLVMGetParam(wi, 1);
  load_group(b, g, k);
  for (int d = 0; d < 3; d++) {
    LLVMValueRef ix = LLVMConstInt(i64, (unsigned)d, 0);
    k->local_id[d] = LLVMBuildLoad2(b, i64, LLVMBuildInBoundsGEP2(b, i64, lid, &ix, 1, ""), "");
  }
  k->local_base = LLVMGetParam(wi, 2);
  LLVMValueRef *vals = unpack_args(b, g, k);
  if (!vals) return 0;
  kc_hf_call(b, k->kernel, vals, k->num_args);
  free(vals);
  LLVMBuildRetVoid(b);
  k->body = wi;
  /* run: the group's local buffer, then every work-item on its fiber. */
  LLVMTypeRef rparams[3] = {gp, LLVMPointerType(wty, 0), i8p};
  LLVMTypeRef rty = LLVMFunctionType(LLVMInt32TypeInContext(c), rparams, 3, 0);
  LLVMValueRef fr = LLVMGetNamedFunction(m, "__kapi_host_fiber_run");
  if (!fr) fr = LLVMAddFunction(m, "__kapi_host_fiber_run", rty);
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(c, k->run, "entry"));
  LLVMValueRef args[3] = {LLVMGetParam(k->run, 0), wi, local_buffer(b, c, lsize)};
  LLVMBuildRet(b, kc_hf_call(b, fr, args, 3));
  return 1;
}

static LLVMValueRef scratch_fn(LLVMModuleRef m) {
  LLVMValueRef f = LLVMGetNamedFunction(m, "__kapi_host_scratch");
  if (f) return f;
  LLVMContextRef c = LLVMGetModuleContext(m);
  LLVMTypeRef i64 = LLVMInt64TypeInContext(c), i8p = LLVMPointerType(LLVMInt8TypeInContext(c), 0);
  f = LLVMAddFunction(m, "__kapi_host_scratch", LLVMFunctionType(i8p, &i64, 1, 0));
  /* Like malloc's: the storage aliases nothing else, so stores through kernel pointers never
   * force values kept there to be reloaded. */
  LLVMAddAttributeAtIndex(f, LLVMAttributeReturnIndex,
                          LLVMCreateEnumAttribute(c, attr_kind("noalias"), 0));
  return f;
}

/* wi for KC_HF_REGIONS: `i32 wi(group, x, y, z, state, local, storage, ucur, unext, j, bcur,
 * bnext, args...)`, j the group's index in run's batch (group_id[0] + j is its id), the
 * arguments unpacked
 * once per group by run (reloading them from the group's argument array in every region loop would
 * be a load that no store can be proved not to clobber). wi's entry block (group fields, the linear
 * local id, the slot addresses) is re-run by every region, so nothing it defines is ever saved
 * across a barrier; it branches to the kernel's call, the block that the region split turns into a
 * switch. */
static int make_region_wi(LLVMModuleRef m, LLVMBuilderRef b, kc_hf_kernel_t *k) {
  LLVMContextRef c = LLVMGetModuleContext(m);
  LLVMTypeRef i64 = LLVMInt64TypeInContext(c), i32 = LLVMInt32TypeInContext(c);
  LLVMTypeRef i8p = LLVMPointerType(LLVMInt8TypeInContext(c), 0);
  unsigned np = KC_HF_WI_FIXED + k->num_args;
  LLVMTypeRef *params = calloc(np, sizeof *params);
  if (!params) return 0;
  LLVMTypeRef fixed[KC_HF_WI_FIXED] = {
      LLVMPointerType(group_type(c), 0), i64, i64, i64, i32, i8p, i8p, i8p, i8p, i64, i8p, i8p};
  memcpy(params, fixed, sizeof fixed);
  for (unsigned i = 0; i < k->num_args; i++)
    params[KC_HF_WI_FIXED + i] = k->arg_types[i];
  LLVMValueRef wi = add_function(m, k->name, "wi", LLVMFunctionType(i32, params, np, 0));
  free(params);
  if (!wi) return 0;
  LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(c, wi, "entry");
  LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(c, wi, "body");
  LLVMPositionBuilderAtEnd(b, entry);
  load_group(b, LLVMGetParam(wi, 0), k);
  /* the group's place in run's batch: batches run along dimension 0; a loopvec kernel's j is
   * its chunk's first x instead (make_chunk_run) */
  if (!k->loopvec)
    k->group_id[0] = LLVMBuildAdd(b, k->group_id[0], LLVMGetParam(wi, 9), "kapi.group0");
  for (int d = 0; d < 3; d++)
    k->local_id[d] = LLVMGetParam(wi, 1 + (unsigned)d);
  k->state = LLVMGetParam(wi, 4);
  k->local_base = LLVMGetParam(wi, 5);
  k->storage = LLVMGetParam(wi, 6);
  k->ucur = LLVMGetParam(wi, 7);
  k->unext = LLVMGetParam(wi, 8);
  k->bcur = LLVMGetParam(wi, 10);
  k->bnext = LLVMGetParam(wi, 11);
  if (k->loopvec) {
    /* a chunk runs its whole state machine before the next starts, so the slots are the
     * chunk's: x - x0 of a constant count, the same addresses for every chunk */
    k->lin = LLVMBuildSub(b, k->local_id[0], LLVMGetParam(wi, 9), "kapi.lin");
    k->nwi = NULL; /* the chunk's count, once the split knows it (kc_hf_split_regions) */
  } else {
    LLVMValueRef r = LLVMBuildMul(b, k->local_id[2], k->local_range[1], "");
    r = LLVMBuildMul(b, LLVMBuildAdd(b, r, k->local_id[1], ""), k->local_range[0], "");
    k->lin = LLVMBuildAdd(b, r, k->local_id[0], "kapi.lin");
    k->nwi = LLVMBuildMul(b, LLVMBuildMul(b, k->local_range[0], k->local_range[1], ""),
                          k->local_range[2], "kapi.n");
  }
  LLVMBuildBr(b, body);
  LLVMPositionBuilderAtEnd(b, body);
  LLVMValueRef *vals = calloc(k->num_args + 1, sizeof *vals);
  if (!vals) return 0;
  for (unsigned i = 0; i < k->num_args; i++)
    vals[i] = LLVMGetParam(wi, KC_HF_WI_FIXED + i);
  kc_hf_call(b, k->kernel, vals, k->num_args);
  free(vals);
  LLVMBuildRet(b, LLVMConstInt(i32, KC_HF_REGION_EXIT, 0));
  k->body = wi;
  /* run is rebuilt after the split; until then it only has to be a valid definition. */
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(c, k->run, "entry"));
  LLVMBuildRet(b, LLVMConstInt(i32, KC_OK, 0));
  return 1;
}

/* A loop id (a node whose first operand is itself, which LLVM makes distinct). */
static LLVMMetadataRef self_loop_id(LLVMContextRef c) {
  LLVMMetadataRef tmp = LLVMTemporaryMDNode(c, NULL, 0);
  LLVMMetadataRef id = LLVMMDNodeInContext2(c, &tmp, 1);
  LLVMMetadataReplaceAllUsesWith(tmp, id); /* frees the temporary */
  return id;
}

/* Marks the work-item loop closed by `latch` parallel: the work-items of one region share no
 * memory without a barrier (racing on plain memory is undefined), so the vectoriser needs no
 * run-time alias checks, which it could not build between global and __local pointers. The
 * mark on the call reaches every memory access inlined from it. With `nounroll` (and no width),
 * {"llvm.loop.unroll.disable"} too: no peeling, which would give the loop an id other than the
 * one the accesses name (kc_hf_region_nopeel). */
static void mark_parallel_width(LLVMContextRef c, LLVMValueRef call, LLVMBasicBlockRef latch,
                                unsigned width, int full, int nounroll) {
  LLVMMetadataRef id = self_loop_id(c);
  if (!width && nounroll) {
    LLVMMetadataRef tmp = LLVMTemporaryMDNode(c, NULL, 0);
    LLVMMetadataRef off = LLVMMDStringInContext2(c, "llvm.loop.unroll.disable", 24);
    LLVMMetadataRef ops[2] = {tmp, LLVMMDNodeInContext2(c, &off, 1)};
    id = LLVMMDNodeInContext2(c, ops, 2);
    LLVMMetadataReplaceAllUsesWith(tmp, id);
  } else if (width) {
    /* {self, {"llvm.loop.vectorize.width", width}, {"llvm.loop.unroll.disable"}}: the
     * unroller would take a loop of a constant count of a few work-items apart before the
     * vectoriser sees it; with `full`, {"llvm.loop.vectorize.followup_vectorized",
     * {"llvm.loop.unroll.full"}} too: the vector loop is unrolled instead, so that its
     * accesses to the slots are at constant offsets (kc_hf_unmask_slots) */
    LLVMMetadataRef tmp = LLVMTemporaryMDNode(c, NULL, 0);
    LLVMMetadataRef hint[2] = {
        LLVMMDStringInContext2(c, "llvm.loop.vectorize.width", 25),
        LLVMValueAsMetadata(LLVMConstInt(LLVMInt32TypeInContext(c), width, 0))};
    LLVMMetadataRef off = LLVMMDStringInContext2(c, "llvm.loop.unroll.disable", 24);
    LLVMMetadataRef all = LLVMMDStringInContext2(c, "llvm.loop.unroll.full", 21);
    LLVMMetadataRef fu[2] = {
        LLVMMDStringInContext2(c, "llvm.loop.vectorize.followup_vectorized", 39),
        LLVMMDNodeInContext2(c, &all, 1)};
    LLVMMetadataRef ops[4] = {tmp, LLVMMDNodeInContext2(c, hint, 2),
                              LLVMMDNodeInContext2(c, &off, 1), LLVMMDNodeInContext2(c, fu, 2)};
    id = LLVMMDNodeInContext2(c, ops, full ? 4 : 3);
    LLVMMetadataReplaceAllUsesWith(tmp, id);
  }
  LLVMValueRef idv = LLVMMetadataAsValue(c, id);
  LLVMSetMetadata(call, LLVMGetMDKindIDInContext(c, "llvm.mem.parallel_loop_access", 29), idv);
  LLVMSetMetadata(LLVMGetBasicBlockTerminator(latch), LLVMGetMDKindIDInContext(c, "llvm.loop", 9),
                  idv);
}

/* Byte pointer `base + off`, as a pointer of type `ty`. */
static LLVMValueRef byte_gep(LLVMBuilderRef b, LLVMValueRef base, LLVMValueRef off, LLVMTypeRef ty,
                             const char *name) {
  LLVMContextRef c = LLVMGetTypeContext(LLVMTypeOf(base));
  LLVMValueRef p = LLVMBuildInBoundsGEP2(b, LLVMInt8TypeInContext(c), base, &off, 1, name);
  return ty == LLVMTypeOf(p) ? p : LLVMBuildBitCast(b, p, ty, "");
}

/* The kernel's arguments for group j of the batch: each local-memory argument's buffer is
 * j * local_stride bytes after group 0's. */
static void batch_args(LLVMBuilderRef b, const kc_hf_kernel_t *k, LLVMValueRef *vals,
                       LLVMValueRef *out, LLVMValueRef off) {
  LLVMContextRef c = LLVMGetTypeContext(LLVMTypeOf(off));
  for (unsigned i = 0; i < k->num_args; i++) {
    out[i] = vals[i];
    if (k->args[i].kind != KC_ARG_LOCAL) continue;
    LLVMTypeRef t = k->arg_types[i];
    LLVMTypeRef i8p = LLVMPointerType(LLVMInt8TypeInContext(c), LLVMGetPointerAddressSpace(t));
    out[i] = byte_gep(b, LLVMBuildBitCast(b, vals[i], i8p, ""), off, t, "kapi.local.j");
  }
}

/* Per group of a batch, run's part of the scratch storage: the work-items' slots (n * rec
 * bytes), the two copies of the group's uniform values (2 * urec), the module's __local
 * variables (lsize); after the batch's groups, the two copies of its uniform values. */
typedef struct {
  LLVMValueRef wi_bytes, local_off, stride; /* i64 */
} batch_layout_t;

static batch_layout_t batch_layout(LLVMBuilderRef b, LLVMValueRef n, uint64_t rec, uint64_t urec,
                                   uint64_t lsize) {
  LLVMTypeRef i64 = LLVMTypeOf(n);
  batch_layout_t L;
  L.wi_bytes = LLVMBuildMul(b, n, LLVMConstInt(i64, rec, 0), "");
  L.local_off = LLVMBuildAdd(b, L.wi_bytes, LLVMConstInt(i64, 2 * urec, 0), "");
  uint64_t tail = (lsize + 63) / 64 * 64; /* rec and urec are multiples of 64 already */
  L.stride = LLVMBuildAdd(b, L.local_off, LLVMConstInt(i64, tail, 0), "kapi.gstride");
  return L;
}

/* What every region's loop nest shares: run's values and the work-item function's arguments. */
typedef struct {
  LLVMBuilderRef b;
  LLVMContextRef c;
  LLVMValueRef fn, wi, g, storage, count, lstride, uoff, unoff, bcur, bnxt;
  LLVMValueRef pass; /* regions run so far in this call (NULL: no prefetching) */
  LLVMValueRef pfon; /* i1: this launch prefetches (kc_hf_prefetch_on) */
  LLVMValueRef lr[3], *vals, *args;
  batch_layout_t L;
  const kc_hf_kernel_t *k;
  unsigned na;
  unsigned xw;         /* nonzero: the x loop's count is this constant (a vector's lanes) */
  LLVMValueRef xrows;  /* with xw: the row's vectors, a loop around the x loop (rows of vectors) */
  int nounroll_groups; /* 1: the group loops are marked not to unroll */
} nest_t;

/* In a prefetching region's group loop, at group j: `for q < n: mark(j, ..., q, n)`, n the
 * lines of group j of a later batch that this region prefetches (the marker and n are filled in
 * once wi is inlined: kc_hf_prefetch_expand). Returns the block after the loop. */
static LLVMBasicBlockRef prefetch_loop(nest_t *t, LLVMValueRef j) {
  LLVMModuleRef m = LLVMGetGlobalParent(t->fn);
  LLVMValueRef n = kc_hf_prefetch_count(m, t->b, t->lr[0], t->pass);
  LLVMBasicBlockRef go = LLVMAppendBasicBlockInContext(t->c, t->fn, "pf.go");
  LLVMBasicBlockRef after = LLVMAppendBasicBlockInContext(t->c, t->fn, "pf.done");
  LLVMValueRef zero = LLVMConstInt(LLVMTypeOf(n), 0, 0);
  LLVMBuildCondBr(t->b, LLVMBuildICmp(t->b, LLVMIntNE, n, zero, ""), go, after);
  LLVMPositionBuilderAtEnd(t->b, go);
  loop_t lq = loop_open(t->b, t->fn, go, "pf");
  kc_hf_prefetch_mark(m, t->b, j, t->count, t->pass, t->lr[0], lq.iv, n);
  loop_close(t->b, &lq, n, after);
  /* a loop of one to a few prefetches: unrolling it would only add a remainder loop */
  LLVMMetadataRef tmp = LLVMTemporaryMDNode(t->c, NULL, 0);
  LLVMMetadataRef off = LLVMMDStringInContext2(t->c, "llvm.loop.unroll.disable", 24);
  LLVMMetadataRef ops[2] = {tmp, LLVMMDNodeInContext2(t->c, &off, 1)};
  LLVMMetadataRef id = LLVMMDNodeInContext2(t->c, ops, 2);
  LLVMMetadataReplaceAllUsesWith(tmp, id);
  LLVMSetMetadata(LLVMGetBasicBlockTerminator(lq.latch),
                  LLVMGetMDKindIDInContext(t->c, "llvm.loop", 9), LLVMMetadataAsValue(t->c, id));
  return after;
}

/* One region's loop nest, from block `from`: `for each group j: for z, y, x: next = wi(...,
 * state, j)`, or with `flat` (groups of one row: local range 1 in y and z) `for each group j:
 * for x` with y = z = 0, and with `pf` (flat only) prefetching for a later batch first. Returns
 * the block after it (the builder left there) and, in *next, the region's next state. The flat nest
 * exists because loops of one iteration between the group and work-item loops are not free: they
 * hold the x loop's set-up (trip count, vector checks) inside them and keep registers, which for a
 * tree reduction's narrow steps cost as much as the steps' work (in cache, its tree's time per
 * group halved without them). One loop over the rows instead of y and z took half that gain; both
 * nests took about 70 ms more to compile than one, so only batched kernels, whose regions are
 * short, get both. */
static LLVMBasicBlockRef region_nest(nest_t *t, LLVMBasicBlockRef from, uint32_t s, int flat,
                                     int pf, LLVMValueRef *next) {
  LLVMBuilderRef b = t->b;
  LLVMContextRef c = t->c;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(c), i8p = LLVMPointerType(i8, 0);
  LLVMTypeRef i32 = LLVMInt32TypeInContext(c), i64 = LLVMInt64TypeInContext(c);
  LLVMValueRef zero64 = LLVMConstInt(i64, 0, 0);
  LLVMPositionBuilderAtEnd(b, from);
  loop_t lj = loop_open(b, t->fn, from, "grp");
  LLVMValueRef goff = LLVMBuildMul(b, lj.iv, t->L.stride, "");
  LLVMValueRef base = LLVMBuildInBoundsGEP2(b, i8, t->storage, &goff, 1, "kapi.storage");
  LLVMValueRef ubase = LLVMBuildInBoundsGEP2(b, i8, base, &t->L.wi_bytes, 1, "kapi.ubase");
  LLVMValueRef cur = LLVMBuildInBoundsGEP2(b, i8, ubase, &t->uoff, 1, "kapi.ucur");
  LLVMValueRef nxt = LLVMBuildInBoundsGEP2(b, i8, ubase, &t->unoff, 1, "kapi.unext");
  LLVMValueRef local = t->k->local_size ? LLVMBuildInBoundsGEP2(b, i8, base, &t->L.local_off, 1, "")
                                        : LLVMConstNull(i8p);
  batch_args(b, t->k, t->vals, t->args + KC_HF_WI_FIXED, LLVMBuildMul(b, lj.iv, t->lstride, ""));
  /* region 0's loads, which the prefetching nests copy for a later batch
   * (finalise_host_prefetch.c): tagged in the one nest without prefetches */
  if (t->pass && flat && !pf && s == 0) kc_hf_prefetch_tag(lj.iv, 0);
  loop_t lz = {0}, ly = {0};
  LLVMBasicBlockRef xfrom = pf ? prefetch_loop(t, lj.iv) : lj.head;
  if (!flat) {
    lz = loop_open(b, t->fn, lj.head, "wi.z");
    ly = loop_open(b, t->fn, lz.head, "wi.y");
    xfrom = ly.head;
  }
  loop_t lv = {0};
  if (t->xrows) {
    lv = loop_open(b, t->fn, xfrom, "wi.xv");
    xfrom = lv.head;
  }
  loop_t lx = loop_open(b, t->fn, xfrom, "wi.x");
  if (t->pass && flat && !pf && s == 0) kc_hf_prefetch_tag(lx.iv, 1);
  LLVMValueRef x = lx.iv;
  if (t->xrows) /* x = v * xw + i: the vector's first work-item and its lane */
    x = LLVMBuildNUWAdd(b, LLVMBuildNUWMul(b, lv.iv, LLVMConstInt(i64, t->xw, 0), ""), lx.iv,
                        "kapi.x");
  LLVMValueRef fixed[KC_HF_WI_FIXED] = {t->g,
                                        x,
                                        flat ? zero64 : ly.iv,
                                        flat ? zero64 : lz.iv,
                                        LLVMConstInt(i32, s, 0),
                                        local,
                                        base,
                                        cur,
                                        nxt,
                                        lj.iv,
                                        t->bcur,
                                        t->bnxt};
  memcpy(t->args, fixed, sizeof fixed);
  *next = kc_hf_call(b, t->wi, t->args, t->na);
  LLVMBasicBlockRef ex = LLVMAppendBasicBlockInContext(c, t->fn, "x.done");
  loop_close(b, &lx, t->lr[0], ex);
  mark_parallel_width(c, *next, lx.latch, t->xw, 0, !t->k->batches && kc_hf_region_nopeel());
  if (t->xrows) {
    LLVMBasicBlockRef ev = LLVMAppendBasicBlockInContext(c, t->fn, "xv.done");
    loop_close(b, &lv, t->xrows, ev);
  }
  if (!flat) {
    LLVMBasicBlockRef ey = LLVMAppendBasicBlockInContext(c, t->fn, "y.done");
    loop_close(b, &ly, t->lr[1], ey);
    LLVMBasicBlockRef ez = LLVMAppendBasicBlockInContext(c, t->fn, "z.done");
    loop_close(b, &lz, t->lr[2], ez);
  }
  LLVMBasicBlockRef ej = LLVMAppendBasicBlockInContext(c, t->fn, "grp.done");
  loop_close(b, &lj, t->count, ej);
  if (t->nounroll_groups) { /* one group per call: unrolling it only adds code */
    LLVMMetadataRef tmp = LLVMTemporaryMDNode(c, NULL, 0);
    LLVMMetadataRef off = LLVMMDStringInContext2(c, "llvm.loop.unroll.disable", 24);
    LLVMMetadataRef ops[2] = {tmp, LLVMMDNodeInContext2(c, &off, 1)};
    LLVMMetadataRef id = LLVMMDNodeInContext2(c, ops, 2);
    LLVMMetadataReplaceAllUsesWith(tmp, id);
    LLVMSetMetadata(LLVMGetBasicBlockTerminator(lj.latch),
                    LLVMGetMDKindIDInContext(c, "llvm.loop", 9), LLVMMetadataAsValue(c, id));
  }
  return ej;
}

/* What a loopvec kernel's state machines share (make_chunk_run). */
typedef struct {
  LLVMBuilderRef b;
  LLVMContextRef c;
  LLVMValueRef fn, g, local, storage, ubase, bbase, y, z;
  LLVMValueRef *args;
  unsigned na;
  uint32_t nstates;
  uint64_t urec, brec;
  const kc_hf_kernel_t *k;
} chunk_t;

/* KAPI_HOST_LOOPVEC_SELF=0: a divergent loop's rounds go through the dispatch on the state. */
static int loop_self_on(void) {
  const char *v = getenv("KAPI_HOST_LOOPVEC_SELF");
  return !v || strcmp(v, "0") != 0;
}

/* One chunk's state machine, from block `from` (where the builder is): `state = 0; until EXIT:
 * next = min or last over x = x0 + i, i < count, of wi(..., state)`, its slots in `storage`.
 * Leaves the builder in the block after it. */
static void chunk_machine(chunk_t *t, LLVMBasicBlockRef from, LLVMValueRef x0, LLVMValueRef count,
                          LLVMValueRef storage, int full) {
  LLVMBuilderRef b = t->b;
  LLVMContextRef c = t->c;
  LLVMTypeRef i64 = LLVMInt64TypeInContext(c), i32 = LLVMInt32TypeInContext(c);
  LLVMTypeRef i8 = LLVMInt8TypeInContext(c);
  LLVMValueRef zero64 = LLVMConstInt(i64, 0, 0), one64 = LLVMConstInt(i64, 1, 0);
  LLVMBasicBlockRef sloop = LLVMAppendBasicBlockInContext(c, t->fn, "state");
  LLVMBasicBlockRef after = LLVMAppendBasicBlockInContext(c, t->fn, "chunk.done");
  LLVMBuildBr(b, sloop);
  LLVMPositionBuilderAtEnd(b, sloop);
  LLVMValueRef state = LLVMBuildPhi(b, i32, "state"), zero = LLVMConstInt(i32, 0, 0);
  LLVMValueRef uoff = LLVMBuildPhi(b, i64, "uoff"), boff = LLVMBuildPhi(b, i64, "boff");
  LLVMAddIncoming(state, &zero, &from, 1);
  LLVMAddIncoming(uoff, &zero64, &from, 1);
  LLVMAddIncoming(boff, &zero64, &from, 1);
  LLVMValueRef unoff = LLVMBuildSub(b, LLVMConstInt(i64, t->urec, 0), uoff, "");
  LLVMValueRef bnoff = LLVMBuildSub(b, LLVMConstInt(i64, t->brec, 0), boff, "");
  LLVMValueRef fixed[KC_HF_WI_FIXED] = {
      t->g,
      NULL, /* x */
      t->y,
      t->z,
      NULL, /* state */
      t->local,
      storage,
      LLVMBuildInBoundsGEP2(b, i8, t->ubase, &uoff, 1, "kapi.ucur"),
      LLVMBuildInBoundsGEP2(b, i8, t->ubase, &unoff, 1, "kapi.unext"),
      x0, /* j: the chunk's first x, from which wi's slots count (make_region_wi) */
      LLVMBuildInBoundsGEP2(b, i8, t->bbase, &boff, 1, "kapi.bcur"),
      LLVMBuildInBoundsGEP2(b, i8, t->bbase, &bnoff, 1, "kapi.bnext")};
  LLVMValueRef sw = LLVMBuildSwitch(b, state, after, t->nstates);
  LLVMValueRef umax = LLVMConstInt(i32, KC_HF_REGION_EXIT, 0);
  for (uint32_t st = 0; st < t->nstates; st++) {
    LLVMBasicBlockRef xh = LLVMAppendBasicBlockInContext(c, t->fn, "wi.x");
    LLVMBasicBlockRef xd = LLVMAppendBasicBlockInContext(c, t->fn, "x.done");
    LLVMAddCase(sw, LLVMConstInt(i32, st, 0), xh);
    /* the smallest state where it may differ, else the last (a min of states that instcombine
     * folds to a compare with a constant is no reduction the vectoriser knows) */
    int takemin = t->k->min_states && t->k->min_states[st];
    /* a divergent loop's header state goes round again itself while any work-item is still in
     * the loop, not through the dispatch on the state: each round then costs a branch on the
     * mask test, and the rounds are a loop of their own (`again`), which swaps the copies of
     * the uniform values as the dispatch does */
    int self = takemin && loop_self_on();
    LLVMBasicBlockRef again = self ? LLVMAppendBasicBlockInContext(c, t->fn, "round") : NULL;
    LLVMPositionBuilderAtEnd(b, xh);
    LLVMValueRef i = LLVMBuildPhi(b, i64, "wi.i"), mn = LLVMBuildPhi(b, i32, "kapi.min");
    LLVMAddIncoming(i, &zero64, &sloop, 1);
    LLVMAddIncoming(mn, &umax, &sloop, 1);
    memcpy(t->args, fixed, sizeof fixed);
    LLVMValueRef pu = NULL, pb = NULL; /* this round's uoff and boff */
    if (self) {
      pu = LLVMBuildPhi(b, i64, "round.uoff"), pb = LLVMBuildPhi(b, i64, "round.boff");
      LLVMAddIncoming(pu, &uoff, &sloop, 1);
      LLVMAddIncoming(pb, &boff, &sloop, 1);
      LLVMValueRef nu = LLVMBuildSub(b, LLVMConstInt(i64, t->urec, 0), pu, "");
      LLVMValueRef nb = LLVMBuildSub(b, LLVMConstInt(i64, t->brec, 0), pb, "");
      t->args[7] = LLVMBuildInBoundsGEP2(b, i8, t->ubase, &pu, 1, "kapi.ucur");
      t->args[8] = LLVMBuildInBoundsGEP2(b, i8, t->ubase, &nu, 1, "kapi.unext");
      t->args[10] = LLVMBuildInBoundsGEP2(b, i8, t->bbase, &pb, 1, "kapi.bcur");
      t->args[11] = LLVMBuildInBoundsGEP2(b, i8, t->bbase, &nb, 1, "kapi.bnext");
    }
    t->args[1] = LLVMBuildNUWAdd(b, x0, i, "wi.x");
    t->args[4] = LLVMConstInt(i32, st, 0);
    LLVMValueRef next = kc_hf_call(b, t->k->body, t->args, t->na);
    LLVMValueRef mn2 =
        takemin ? LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntULT, next, mn, ""), next, mn, "")
                : next;
    LLVMValueRef i2 = LLVMBuildNUWAdd(b, i, one64, "");
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(b);
    LLVMAddIncoming(i, &i2, &latch, 1);
    LLVMAddIncoming(mn, &mn2, &latch, 1);
    if (self) LLVMAddIncoming(pu, &pu, &latch, 1), LLVMAddIncoming(pb, &pb, &latch, 1);
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntULT, i2, count, ""), xh, xd);
    mark_parallel_width(c, next, latch, kc_hf_loopvec_width(t->k->min_states != NULL), full, 0);
    LLVMPositionBuilderAtEnd(b, xd);
    LLVMValueRef nu = unoff, nb = bnoff;
    if (self) {
      nu = LLVMBuildSub(b, LLVMConstInt(i64, t->urec, 0), pu, "");
      nb = LLVMBuildSub(b, LLVMConstInt(i64, t->brec, 0), pb, "");
      LLVMValueRef st32 = LLVMConstInt(i32, st, 0);
      LLVMBasicBlockRef out = LLVMAppendBasicBlockInContext(c, t->fn, "round.done");
      LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntEQ, mn2, st32, ""), again, out);
      LLVMPositionBuilderAtEnd(b, again);
      LLVMAddIncoming(i, &zero64, &again, 1);
      LLVMAddIncoming(mn, &umax, &again, 1);
      LLVMAddIncoming(pu, &nu, &again, 1);
      LLVMAddIncoming(pb, &nb, &again, 1);
      LLVMBuildBr(b, xh);
      LLVMPositionBuilderAtEnd(b, out);
      xd = out;
    }
    LLVMAddIncoming(state, &mn2, &xd, 1);
    LLVMAddIncoming(uoff, &nu, &xd, 1);
    LLVMAddIncoming(boff, &nb, &xd, 1);
    LLVMBuildBr(b, sloop);
  }
  LLVMPositionBuilderAtEnd(b, after);
}

/* run for kernels whose loops run as regions (kc_hf_kernel_t.loopvec; no work-group barrier):
 * the group's rows in chunks of k->chunk work-items along x, each chunk running
 * the whole state machine (chunk_machine) before the next starts. Nothing but a barrier would
 * make a work-item wait for another, so a chunk may finish the kernel before its neighbours
 * start it, and a loop's iterations then work on one chunk's values, in L1 (a group's row of
 * 1024 per iteration took a pairwise distance's columns from L2 each time, and ran slower than
 * without the split); a divergent loop goes round only while a work-item of the chunk is in it.
 * The next state is the last work-item's, which in a uniform loop is every work-item's, or the
 * smallest any returns (an unsigned min reduction, which vectorises with the loop) where they
 * may differ: a divergent loop's own while any work-item of the chunk is still in it. */
static int make_chunk_run(LLVMModuleRef m, kc_hf_kernel_t *k, uint32_t nstates, uint64_t rec,
                          uint64_t urec, uint64_t brec) {
  LLVMContextRef c = LLVMGetModuleContext(m);
  LLVMTypeRef i64 = LLVMInt64TypeInContext(c), i32 = LLVMInt32TypeInContext(c);
  LLVMTypeRef i8 = LLVMInt8TypeInContext(c), i8p = LLVMPointerType(i8, 0);
  LLVMValueRef fn = k->run, g = LLVMGetParam(fn, 0);
  while (LLVMGetFirstBasicBlock(fn))
    LLVMDeleteBasicBlock(LLVMGetFirstBasicBlock(fn));
  LLVMBuilderRef b = LLVMCreateBuilderInContext(c);
  LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(c, fn, "entry");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(c, fn, "done");
  LLVMBasicBlockRef oom = LLVMAppendBasicBlockInContext(c, fn, "oom");
  LLVMBasicBlockRef go = LLVMAppendBasicBlockInContext(c, fn, "go");
  LLVMPositionBuilderAtEnd(b, entry);
  chunk_t t = {
      .b = b, .c = c, .fn = fn, .g = g, .nstates = nstates, .urec = urec, .brec = brec, .k = k};
  t.na = KC_HF_WI_FIXED + k->num_args;
  t.args = calloc(t.na, sizeof *t.args);
  LLVMValueRef *vals = unpack_args(b, g, k);
  if (!t.args || !vals) {
    free(t.args), free(vals);
    LLVMDisposeBuilder(b);
    return 0;
  }
  memcpy(t.args + KC_HF_WI_FIXED, vals, k->num_args * sizeof *vals);
  free(vals);
  LLVMValueRef lr[3];
  for (int d = 0; d < 3; d++)
    lr[d] = group_field(b, g, KC_HG_LOCAL_RANGE, d);
  LLVMValueRef zero64 = LLVMConstInt(i64, 0, 0), one64 = LLVMConstInt(i64, 1, 0);
  LLVMValueRef n = LLVMBuildMul(b, lr[0], LLVMBuildMul(b, lr[1], lr[2], ""), "");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntEQ, n, zero64, ""), done, go);
  LLVMPositionBuilderAtEnd(b, go);
  /* slots for one chunk (make_region_wi): a full chunk's in run's frame where they fit, which
   * lets SROA keep them in registers across a loop's rounds once the vectoriser has made each
   * region one vector of the chunk (kc_hf_unmask_slots); the last, partial chunk's, and all of
   * them where they do not fit, in the scratch storage */
  unsigned wn = k->chunk;
  LLVMValueRef w = LLVMConstInt(i64, wn, 0);
  LLVMValueRef framed = NULL;
  if (rec && rec * wn <= KC_HF_LOOPVEC_FRAME) {
    LLVMBuilderRef eb = LLVMCreateBuilderInContext(c); /* in the entry block, for SROA */
    LLVMPositionBuilderBefore(eb, LLVMGetFirstInstruction(entry));
    framed = LLVMBuildAlloca(eb, LLVMArrayType(i8, (unsigned)(rec * wn)), "kapi.slots");
    k->frame_bytes = rec * wn;
    LLVMSetAlignment(framed, 64);
    LLVMDisposeBuilder(eb);
    framed = LLVMBuildBitCast(b, framed, i8p, "");
  }
  batch_layout_t L = batch_layout(b, w, rec, urec, k->local_size);
  LLVMValueRef bytes = LLVMBuildAdd(b, L.stride, LLVMConstInt(i64, 2 * brec, 0), "");
  int none = !rec && !urec && !brec && !k->local_size;
  t.storage = none ? LLVMConstNull(i8p) : kc_hf_call(b, scratch_fn(m), &bytes, 1);
  t.ubase = LLVMBuildInBoundsGEP2(b, i8, t.storage, &L.wi_bytes, 1, "kapi.ubase");
  t.bbase = LLVMBuildInBoundsGEP2(b, i8, t.storage, &L.stride, 1, "kapi.bbase");
  t.local = k->local_size ? LLVMBuildInBoundsGEP2(b, i8, t.storage, &L.local_off, 1, "")
                          : LLVMConstNull(i8p);
  LLVMBasicBlockRef start = LLVMAppendBasicBlockInContext(c, fn, "start");
  if (none)
    LLVMBuildBr(b, start);
  else
    LLVMBuildCondBr(b, LLVMBuildIsNull(b, t.storage, ""), oom, start);
  LLVMPositionBuilderAtEnd(b, start);
  loop_t lz = loop_open(b, fn, start, "wi.z");
  loop_t ly = loop_open(b, fn, lz.head, "wi.y");
  t.y = ly.iv, t.z = lz.iv;
  /* the chunks of the row: full ones by a machine of a constant count (with `framed`, slots in
   * the frame), then what is left by one of a run-time count */
  LLVMBasicBlockRef chead = LLVMAppendBasicBlockInContext(c, fn, "chunk");
  LLVMBasicBlockRef cfull = LLVMAppendBasicBlockInContext(c, fn, "chunk.full");
  LLVMBasicBlockRef ctail = LLVMAppendBasicBlockInContext(c, fn, "chunk.tail");
  LLVMBasicBlockRef cnext = LLVMAppendBasicBlockInContext(c, fn, "chunk.next");
  LLVMBuildBr(b, chead);
  LLVMPositionBuilderAtEnd(b, chead);
  LLVMValueRef xc = LLVMBuildPhi(b, i64, "kapi.chunk");
  LLVMAddIncoming(xc, &zero64, &ly.head, 1);
  LLVMValueRef xe = LLVMBuildNUWAdd(b, xc, w, "");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntULE, xe, lr[0], ""), cfull, ctail);
  LLVMPositionBuilderAtEnd(b, cfull);
  chunk_machine(&t, cfull, xc, w, framed ? framed : t.storage, framed && k->min_states);
  LLVMBuildBr(b, cnext);
  LLVMPositionBuilderAtEnd(b, ctail);
  chunk_machine(&t, ctail, xc, LLVMBuildSub(b, lr[0], xc, ""), t.storage, 0);
  LLVMBuildBr(b, ly.latch);
  LLVMPositionBuilderAtEnd(b, cnext);
  LLVMAddIncoming(xc, &xe, &cnext, 1);
  LLVMBasicBlockRef ey = LLVMAppendBasicBlockInContext(c, fn, "y.done");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntULT, xe, lr[0], ""), chead, ly.latch);
  /* ly's body ends at the chunks' exit: close y and z from the latch */
  LLVMPositionBuilderAtEnd(b, ly.latch);
  LLVMValueRef ny = LLVMBuildNUWAdd(b, ly.iv, one64, "");
  LLVMAddIncoming(ly.iv, &ny, &ly.latch, 1);
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntULT, ny, lr[1], ""), ly.head, ey);
  LLVMPositionBuilderAtEnd(b, ey);
  loop_close(b, &lz, lr[2], done);
  LLVMBuildRet(b, LLVMConstInt(i32, KC_OK, 0));
  LLVMPositionBuilderAtEnd(b, oom);
  LLVMBuildRet(b, LLVMConstInt(i32, KC_ERR_OUT_OF_MEMORY, 0));
  free(t.args);
  free(k->min_states);
  k->min_states = NULL;
  LLVMDisposeBuilder(b);
  LLVMAddAttributeAtIndex(fn, 1, LLVMCreateEnumAttribute(c, attr_kind("noalias"), 0));
  LLVMAddAttributeAtIndex(fn, 1, LLVMCreateEnumAttribute(c, attr_kind("readonly"), 0));
  LLVMSetLinkage(k->body, LLVMInternalLinkage);
  LLVMAddAttributeAtIndex(k->body, LLVMAttributeFunctionIndex,
                          LLVMCreateEnumAttribute(c, attr_kind("alwaysinline"), 0));
  return 1;
}

/* run for KC_HF_REGIONS: takes a batch of groups (kc_host_group_t.count; more than one only
 * for lockstep kernels, whose groups all reach the same barriers: kc_hf_kernel_t.lockstep),
 * scratch storage for them (batch_layout_t), then `state = 0; until EXIT: for each group j:
 * for z, y, x: next = wi(..., state, j)`, with one such loop nest per state so that, once wi
 * is inlined with a constant state, each holds only its region (for batched kernels two per
 * state, the flat one taken by groups of one row: region_nest). Barriers are uniform over a group,
 * and in lockstep over the batch, so the last work-item's next state is the batch's. Running a
 * region for the whole batch spreads the dispatch over it, and what depends only on values the same
 * in every group (the batch's uniform copies, e.g. a tree reduction's stride and each loop's trip
 * count) is computed once per batch, not per group. */
int kc_hf_make_region_run(LLVMModuleRef m, kc_hf_kernel_t *k, uint32_t nstates, uint64_t rec,
                          uint64_t urec, uint64_t brec) {
  if (k->loopvec) return make_chunk_run(m, k, nstates, rec, urec, brec);
  LLVMContextRef c = LLVMGetModuleContext(m);
  LLVMTypeRef i64 = LLVMInt64TypeInContext(c), i32 = LLVMInt32TypeInContext(c);
  LLVMTypeRef i8 = LLVMInt8TypeInContext(c), i8p = LLVMPointerType(i8, 0);
  LLVMValueRef fn = k->run, g = LLVMGetParam(fn, 0);
  while (LLVMGetFirstBasicBlock(fn))
    LLVMDeleteBasicBlock(LLVMGetFirstBasicBlock(fn));
  LLVMBuilderRef b = LLVMCreateBuilderInContext(c);
  LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(c, fn, "entry");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(c, fn, "done");
  LLVMBasicBlockRef oom = LLVMAppendBasicBlockInContext(c, fn, "oom");
  LLVMBasicBlockRef go = LLVMAppendBasicBlockInContext(c, fn, "go");
  LLVMBasicBlockRef sloop = LLVMAppendBasicBlockInContext(c, fn, "state");
  LLVMPositionBuilderAtEnd(b, entry);
  nest_t t = {.b = b, .c = c, .fn = fn, .wi = k->body, .g = g, .k = k};
  /* Groups whose rows are 16 work-items (a 16x16 tile's: one vector of AVX-512, two of AVX2) also
   * get nests whose x loop counts that constant: one vector iteration, without the vectoriser's
   * checks of the count and its epilogue loops, which cost a short region as much as its work
   * (batched kernels excepted: their flat nests already serve short rows). */
  unsigned xw = k->batches ? 0u : kc_hf_vector_row_width();
  char xs[16];
  snprintf(xs, sizeof xs, "%u", xw); /* for KAPI_DUMP=host */
  LLVMAddAttributeAtIndex(
      fn, LLVMAttributeFunctionIndex,
      LLVMCreateStringAttribute(c, "kapi-vector-rows", 16, xs, (unsigned)strlen(xs)));
  /* A region's x loop that only copies (a scan's `slm[lid] = v` from its slot, `out[gid] = v`)
   * would become a call of memcpy per row: for rows of a few hundred work-items in cache
   * the call (and the registers it clobbers) cost more than the vector loop it replaces (the
   * scan spent a fifth of its time in memmove). KAPI_HOST_REGION_MEMCPY=1 allows them. */
  if (!kc_hf_region_memcpy()) {
    static const char *const nob[] = {"no-builtin-memcpy", "no-builtin-memmove"};
    for (int i = 0; i < 2; i++)
      LLVMAddAttributeAtIndex(
          fn, LLVMAttributeFunctionIndex,
          LLVMCreateStringAttribute(c, nob[i], (unsigned)strlen(nob[i]), "", 0));
  }
  t.na = KC_HF_WI_FIXED + k->num_args;
  t.args = calloc(t.na, sizeof *t.args);
  t.vals = unpack_args(b, g, k);
  if (!t.args || !t.vals) {
    free(t.args), free(t.vals);
    LLVMDisposeBuilder(b);
    return 0;
  }
  for (int d = 0; d < 3; d++)
    t.lr[d] = group_field(b, g, KC_HG_LOCAL_RANGE, d);
  LLVMValueRef zero64 = LLVMConstInt(i64, 0, 0), one64 = LLVMConstInt(i64, 1, 0);
  /* A kernel that is not batched is given one group per call (kc_host_kernel_t.batches):
   * LLVM unrolled each region's group loop four times plus a remainder for nothing, which cost
   * the first call (about a tenth of the local scan's and the tiled matmul's build), so its
   * group loops are marked not to unroll. KAPI_HOST_ONE_GROUP=2 counts them to a constant 1
   * instead (they fold away: a third of those builds, the tiled matmul 15% faster, but the
   * scan 20% slower: a value spilled and reloaded in its row loops); `0`, unrolled as before. */
  int one = k->batches ? 0 : kc_hf_region_one_group();
  t.nounroll_groups = one == 1;
  if (one == 2) {
    t.count = one64;
  } else {
    LLVMValueRef count = group_field(b, g, KC_HG_COUNT, -1);
    t.count = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, count, zero64, ""), one64, count,
                              "kapi.count");
  }
  t.lstride = group_field(b, g, KC_HG_LOCAL_STRIDE, -1);
  LLVMValueRef rows = LLVMBuildMul(b, t.lr[1], t.lr[2], "");
  LLVMValueRef n = LLVMBuildMul(b, t.lr[0], rows, "");
  LLVMValueRef flat = k->batches ? LLVMBuildICmp(b, LLVMIntEQ, rows, one64, "kapi.flat") : NULL;
  /* Groups of one row whose length is a multiple of a vector's lanes (a scan's 256) but not
   * one vector: a flat nest whose row is a loop over its vectors, each one work-item loop of
   * xw, so the vectoriser's checks of the count, its epilogue loops and the y and z loops (of
   * one iteration, which hold the x loop's set-up and registers) are gone from every region */
  LLVMValueRef vrows = NULL, xrows = NULL;
  if (xw && kc_hf_region_vector_rows()) {
    LLVMValueRef lanes = LLVMConstInt(i64, xw, 0);
    LLVMValueRef whole =
        LLVMBuildICmp(b, LLVMIntEQ, LLVMBuildURem(b, t.lr[0], lanes, ""), zero64, "");
    vrows = LLVMBuildAnd(b, whole, LLVMBuildICmp(b, LLVMIntEQ, rows, one64, ""), "kapi.vrows");
    xrows = LLVMBuildUDiv(b, t.lr[0], lanes, "kapi.xrows");
  }
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntEQ, n, zero64, ""), done, go);
  LLVMPositionBuilderAtEnd(b, go);
  t.L = batch_layout(b, n, rec, urec, k->local_size);
  LLVMValueRef groups_bytes = LLVMBuildMul(b, t.count, t.L.stride, "");
  LLVMValueRef bytes = LLVMBuildAdd(b, groups_bytes, LLVMConstInt(i64, 2 * brec, 0), "");
  /* Nothing to keep (no slots, no __local variables): no storage, and no call for it (which
   * would answer NULL, not out of memory, on a thread that never had any). */
  int none = !rec && !urec && !brec && !k->local_size;
  t.storage = none ? LLVMConstNull(i8p) : kc_hf_call(b, scratch_fn(m), &bytes, 1);
  LLVMValueRef bbase = LLVMBuildInBoundsGEP2(b, i8, t.storage, &groups_bytes, 1, "kapi.bbase");
  if (k->batches && kc_hf_prefetch_lines()) { /* whether this launch prefetches at all */
    LLVMValueRef items = n;
    for (int d = 0; d < 3; d++)
      items = LLVMBuildMul(b, items, group_field(b, g, KC_HG_GROUP_RANGE, d), "");
    t.pfon = kc_hf_prefetch_on(m, b, items, t.lr[0]);
  }
  if (none)
    LLVMBuildBr(b, sloop);
  else
    LLVMBuildCondBr(b, LLVMBuildIsNull(b, t.storage, ""), oom, sloop);
  LLVMPositionBuilderAtEnd(b, sloop);
  LLVMValueRef state = LLVMBuildPhi(b, i32, "state"), zero = LLVMConstInt(i32, 0, 0);
  LLVMAddIncoming(state, &zero, &go, 1);
  /* The two copies by offset, not by swapped pointers: alias analysis then still sees every
   * slot address as based on the scratch storage, which aliases nothing. */
  LLVMValueRef uoff = LLVMBuildPhi(b, i64, "uoff"), boff = LLVMBuildPhi(b, i64, "boff");
  LLVMAddIncoming(uoff, &zero64, &go, 1);
  LLVMAddIncoming(boff, &zero64, &go, 1);
  t.uoff = uoff;
  if (k->batches && kc_hf_prefetch_lines()) {
    t.pass = LLVMBuildPhi(b, i64, "kapi.pass");
    LLVMAddIncoming(t.pass, &zero64, &go, 1);
  }
  t.unoff = LLVMBuildSub(b, LLVMConstInt(i64, urec, 0), uoff, "");
  LLVMValueRef bnoff = LLVMBuildSub(b, LLVMConstInt(i64, brec, 0), boff, "");
  t.bcur = LLVMBuildInBoundsGEP2(b, i8, bbase, &boff, 1, "kapi.bcur");
  t.bnxt = LLVMBuildInBoundsGEP2(b, i8, bbase, &bnoff, 1, "kapi.bnext");
  LLVMValueRef sw = LLVMBuildSwitch(b, state, done, nstates);
  for (uint32_t s = 0; s < nstates; s++) {
    LLVMBasicBlockRef cs = LLVMAppendBasicBlockInContext(c, fn, "region");
    LLVMAddCase(sw, LLVMConstInt(i32, s, 0), cs);
    /* the full nest's start, the flat one's, the flat one prefetching for a later batch's, the
     * row of one vector's, the row of vectors' */
    LLVMBasicBlockRef nests[5] = {cs, NULL, NULL, NULL, NULL};
    if (xw) { /* rows of one vector: an x loop without the vectoriser's checks */
      nests[0] = LLVMAppendBasicBlockInContext(c, fn, "region.any");
      nests[3] = LLVMAppendBasicBlockInContext(c, fn, "region.vector");
      LLVMBasicBlockRef other = nests[0];
      if (vrows) {
        other = LLVMAppendBasicBlockInContext(c, fn, "region.other");
        nests[4] = LLVMAppendBasicBlockInContext(c, fn, "region.vectors");
      }
      LLVMPositionBuilderAtEnd(b, cs);
      LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntEQ, t.lr[0], LLVMConstInt(i64, xw, 0), ""),
                      nests[3], other);
      if (vrows) {
        LLVMPositionBuilderAtEnd(b, other);
        LLVMBuildCondBr(b, vrows, nests[4], nests[0]);
      }
    }
    if (k->batches) {
      nests[0] = LLVMAppendBasicBlockInContext(c, fn, "region.full");
      nests[1] = LLVMAppendBasicBlockInContext(c, fn, "region.flat");
      LLVMPositionBuilderAtEnd(b, cs);
      LLVMBuildCondBr(b, flat, nests[1], nests[0]);
    }
    if (k->batches && t.pass && s >= (uint32_t)kc_hf_prefetch_first()) {
      /* A nest of its own, not a branch in the flat one: the prefetches' values would hold
       * registers in launches that do not prefetch (a tree in cache ran slower for them). */
      nests[2] = LLVMAppendBasicBlockInContext(c, fn, "region.flat.pf");
      LLVMBasicBlockRef pick = nests[1];
      nests[1] = LLVMAppendBasicBlockInContext(c, fn, "region.flat");
      LLVMPositionBuilderAtEnd(b, pick);
      LLVMBuildCondBr(b, t.pfon, nests[2], nests[1]);
    }
    for (int f = 0; f < 5; f++) {
      if (!nests[f]) continue;
      LLVMValueRef next, lr0 = t.lr[0];
      if (f >= 3) t.lr[0] = LLVMConstInt(i64, xw, 0), t.xw = xw;
      if (f == 4) t.xrows = xrows;
      LLVMBasicBlockRef ej =
          region_nest(&t, nests[f], s, f == 1 || f == 2 || f == 4, f == 2, &next);
      t.lr[0] = lr0, t.xw = 0, t.xrows = NULL;
      LLVMAddIncoming(state, &next, &ej, 1);
      /* what this region wrote, the next one reads */
      LLVMAddIncoming(uoff, &t.unoff, &ej, 1);
      LLVMAddIncoming(boff, &bnoff, &ej, 1);
      if (t.pass) {
        LLVMValueRef np = LLVMBuildAdd(b, t.pass, one64, "");
        LLVMAddIncoming(t.pass, &np, &ej, 1);
      }
      LLVMBuildBr(b, sloop);
    }
  }
  free(t.args);
  free(t.vals);
  LLVMPositionBuilderAtEnd(b, done);
  LLVMBuildRet(b, LLVMConstInt(i32, KC_OK, 0));
  LLVMPositionBuilderAtEnd(b, oom);
  LLVMBuildRet(b, LLVMConstInt(i32, KC_ERR_OUT_OF_MEMORY, 0));
  LLVMDisposeBuilder(b);
  /* The group descriptor is the driver's, read-only while the group runs, and no kernel
   * pointer reaches it: its fields stay in registers across the kernel's stores. */
  LLVMAddAttributeAtIndex(fn, 1, LLVMCreateEnumAttribute(c, attr_kind("noalias"), 0));
  LLVMAddAttributeAtIndex(fn, 1, LLVMCreateEnumAttribute(c, attr_kind("readonly"), 0));
  /* wi is now an ordinary function to inline into each region loop. */
  LLVMSetLinkage(k->body, LLVMInternalLinkage);
  LLVMAddAttributeAtIndex(k->body, LLVMAttributeFunctionIndex,
                          LLVMCreateEnumAttribute(c, attr_kind("alwaysinline"), 0));
  return 1;
}

/* Every function but the generated entries is inlined into them and then deleted. */
static void internalise(LLVMModuleRef m, const kc_hf_kernel_t *ks, uint32_t n) {
  LLVMContextRef c = LLVMGetModuleContext(m);
  LLVMAttributeRef always = LLVMCreateEnumAttribute(c, attr_kind("alwaysinline"), 0);
  for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f)) {
    if (LLVMIsDeclaration(f)) continue;
    int entry = 0;
    for (uint32_t i = 0; i < n && !entry; i++)
      entry = f == ks[i].run || f == ks[i].body;
    if (entry) continue;
    LLVMSetLinkage(f, LLVMInternalLinkage);
    LLVMRemoveEnumAttributeAtIndex(f, LLVMAttributeFunctionIndex, attr_kind("noinline"));
    LLVMRemoveEnumAttributeAtIndex(f, LLVMAttributeFunctionIndex, attr_kind("optnone"));
    LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, always);
  }
}

int kc_hf_make_entries(LLVMModuleRef m, kc_hf_kernel_t *ks, uint32_t n,
                       const kc_hf_locals_t *locals, char **log) {
  LLVMContextRef c = LLVMGetModuleContext(m);
  LLVMTypeRef gp = LLVMPointerType(group_type(c), 0);
  LLVMTypeRef rty = LLVMFunctionType(LLVMInt32TypeInContext(c), &gp, 1, 0);
  LLVMBuilderRef b = LLVMCreateBuilderInContext(c);
  for (uint32_t i = 0; i < n; i++) {
    kc_hf_kernel_t *k = &ks[i];
    k->run = add_function(m, k->name, "run", rty);
    if (!k->run) {
      LLVMDisposeBuilder(b);
      return *log = kc_msg("out of memory"), 0;
    }
    k->body = k->run;
    k->local_size = locals->size;
    static const char *const scheme[] = {"loop", "regions", "fibers"};
    LLVMAddAttributeAtIndex(k->run, LLVMAttributeFunctionIndex,
                            LLVMCreateStringAttribute(c, "kapi-scheme", 11, scheme[k->scheme],
                                                      (unsigned)strlen(scheme[k->scheme])));
    int ok = k->scheme == KC_HF_FIBERS    ? make_fiber_run(m, b, k, locals->size)
             : k->scheme == KC_HF_REGIONS ? make_region_wi(m, b, k)
                                          : make_loop_run(m, b, k, locals->size);
    if (!ok) {
      LLVMDisposeBuilder(b);
      return *log = kc_msg("out of memory"), 0;
    }
  }
  LLVMDisposeBuilder(b);
  internalise(m, ks, n);
  return 1;
}
