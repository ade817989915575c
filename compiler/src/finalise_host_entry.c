/* Host finaliser: finds the kernels and generates each one's per-work-group entry
 * `void NAME.kapi.run(const kc_host_group_t *)`, the function kc_host_kernel_t.run points at.
 *
 * Barrier-free kernels: run unpacks the arguments once, then loops z, y, x (dim 0 innermost)
 * over the group's work-items calling the kernel, which is inlined later; the loop variables
 * are the local ids, so the vectoriser sees consecutive work-items as consecutive iterations.
 * Kernels with barriers: NAME.kapi.wi(group, local_id, local) runs one work-item, and run hands
 * it to kc_host_fiber_run, which runs every work-item on its own fiber (finalise_host_fiber.c).
 * In both, run allocates the group's buffer for __local globals in its own frame.
 */
#include "finalise_host.h"

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
  k->args = calloc(k->num_args ? k->num_args : 1, sizeof *k->args);
  if (!k->args) return *log = kc_msg("out of memory"), 0;
  for (unsigned i = 0; i < k->num_args; i++) {
    LLVMTypeRef t = LLVMTypeOf(LLVMGetParam(f, i));
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

int kc_hf_collect_kernels(LLVMModuleRef m, LLVMTargetDataRef td, kc_hf_kernel_t **out,
                          uint32_t *count, char **log) {
  size_t nf = 0;
  for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
    nf++;
  LLVMValueRef *fns = calloc(nf + 1, sizeof *fns);
  char *marked = calloc(nf + 1, 1);
  kc_hf_kernel_t *ks = calloc(nf + 1, sizeof *ks);
  if (!fns || !marked || !ks) {
    free(fns), free(marked), free(ks);
    return *log = kc_msg("out of memory"), 0;
  }
  nf = 0;
  for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
    fns[nf++] = f;
  mark_barrier_users(m, fns, marked, nf);
  uint32_t n = 0;
  int ok = 1;
  for (size_t i = 0; i < nf && ok; i++) {
    LLVMValueRef f = fns[i];
    if (LLVMGetFunctionCallConv(f) != SPIR_KERNEL_CC || LLVMIsDeclaration(f)) continue;
    kc_hf_kernel_t *k = &ks[n++];
    k->kernel = f;
    k->name = strdup(LLVMGetValueName(f));
    k->uses_barrier = marked[i];
    read_reqd(f, k->reqd);
    ok = k->name ? collect_args(f, td, k, log) : (*log = kc_msg("out of memory"), 0);
  }
  free(fns);
  free(marked);
  if (!ok) return kc_hf_kernels_free(ks, n), 0;
  *out = ks;
  *count = n;
  return 1;
}

void kc_hf_kernels_free(kc_hf_kernel_t *ks, uint32_t n) {
  if (!ks) return;
  for (uint32_t i = 0; i < n; i++) {
    free(ks[i].name);
    free(ks[i].args);
  }
  free(ks);
}

/* %kapi.group: the IR view of kc_host_group_t. */
static LLVMTypeRef group_type(LLVMContextRef c) {
  LLVMTypeRef t = LLVMGetTypeByName2(c, "kapi.group");
  if (t) return t;
  LLVMTypeRef a3 = LLVMArrayType(LLVMInt64TypeInContext(c), 3);
  LLVMTypeRef i8pp = LLVMPointerType(LLVMPointerType(LLVMInt8TypeInContext(c), 0), 0);
  LLVMTypeRef fields[5] = {a3, a3, a3, a3, i8pp};
  t = LLVMStructCreateNamed(c, "kapi.group");
  LLVMStructSetBody(t, fields, 5, 0);
  return t;
}

static LLVMValueRef group_field(LLVMBuilderRef b, LLVMValueRef g, unsigned field, int d) {
  LLVMContextRef c = LLVMGetTypeContext(LLVMTypeOf(g));
  LLVMTypeRef i32 = LLVMInt32TypeInContext(c), i64 = LLVMInt64TypeInContext(c);
  LLVMValueRef idx[3] = {LLVMConstInt(i32, 0, 0), LLVMConstInt(i32, field, 0),
                         LLVMConstInt(i32, (unsigned)d, 0)};
  LLVMValueRef p = LLVMBuildInBoundsGEP2(b, group_type(c), g, idx, 3, "");
  LLVMValueRef v = LLVMBuildLoad2(b, i64, p, "");
  LLVMSetAlignment(v, 8);
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
    LLVMTypeRef t = LLVMTypeOf(LLVMGetParam(k->kernel, i));
    if (k->args[i].kind == KC_ARG_VALUE && LLVMGetTypeKind(t) == LLVMPointerTypeKind &&
        is_byval(k->kernel, i)) {
      vals[i] = LLVMBuildPointerCast(b, p, t, "");
      continue;
    }
    LLVMValueRef v = LLVMBuildLoad2(b, t, LLVMBuildBitCast(b, p, LLVMPointerType(t, 0), ""), "");
    LLVMSetAlignment(v, 1);
    vals[i] = v;
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
    int ok = k->uses_barrier ? make_fiber_run(m, b, k, locals->size)
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
