/* Lowering driver: one LLVM module (spir64, typed pointers) per KIR module. Declares every
 * function with its ABI, then lowers each body block by block, dispatching instructions to
 * lower_<concern>.c. Variable slots become entry-block allocas that the optimiser promotes. */
#include "lower/lower.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SPIR_FUNC_CC 75
#define SPIR_KERNEL_CC 76

/* n8:16:32:64 names the native integer widths, so LLVM's optimisers do not narrow to the odd
 * widths SPIR-V cannot express (a `range(x & 3)` trip count became `trunc i64 to i2`). */
static const char *const spir64_layout =
    "e-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024-"
    "n8:16:32:64";

LLVMTypeRef kc_scalar_type(kc_lower_t *L, kir_kind_t k) {
  switch (k) {
  case KIR_VOID:
    return L->void_t;
  case KIR_BOOL:
    return L->i1;
  case KIR_I8:
  case KIR_U8:
    return L->i8;
  case KIR_I16:
  case KIR_U16:
    return LLVMInt16TypeInContext(L->ctx);
  case KIR_I32:
  case KIR_U32:
    return L->i32;
  case KIR_F32:
    return L->f32;
  case KIR_F64:
    return L->f64;
  case KIR_F16:
    return LLVMHalfTypeInContext(L->ctx);
  default:
    return L->i64;
  }
}

LLVMTypeRef kc_mem_type(kc_lower_t *L, kir_kind_t k) {
  return k == KIR_BOOL ? L->i8 : kc_scalar_type(L, k);
}

unsigned kc_addrspace(kir_space_t s) {
  return s == KIR_GLOBAL ? KC_AS_GLOBAL : s == KIR_LOCAL ? KC_AS_LOCAL : KC_AS_PRIVATE;
}

kc_val_t *kc_arg_val(kc_lower_t *L, const kir_inst_t *in, int k) {
  return &L->vals[in->args[k]];
}
LLVMValueRef kc_arg(kc_lower_t *L, const kir_inst_t *in, int k) {
  return L->vals[in->args[k]].v;
}
kir_type_t kc_arg_type(kc_lower_t *L, const kir_inst_t *in, int k) {
  return L->f->values[in->args[k]].type;
}

void kc_set_result(kc_lower_t *L, const kir_inst_t *in, LLVMValueRef v) {
  if (in->result >= 0) L->vals[in->result].v = v;
}

LLVMBasicBlockRef kc_new_block(kc_lower_t *L, const char *name) {
  LLVMBasicBlockRef cur = LLVMGetInsertBlock(L->b);
  LLVMBasicBlockRef next = LLVMGetNextBasicBlock(cur);
  if (next) return LLVMInsertBasicBlockInContext(L->ctx, next, name);
  return LLVMAppendBasicBlockInContext(L->ctx, L->fn, name);
}

static void add_fn_attr(kc_lower_t *L, LLVMValueRef fn, const char *name) {
  unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
  LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(L->ctx, kind, 0));
}

/* no-builtins keeps LLVM from turning code into libm/libc calls no device can link. Every
 * function is convergent, as in OpenCL C, so barriers never move across control flow. */
void kc_set_fn_attrs(kc_lower_t *L, LLVMValueRef fn) {
  add_fn_attr(L, fn, "nounwind");
  add_fn_attr(L, fn, "convergent");
  LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                          LLVMCreateStringAttribute(L->ctx, "no-builtins", 11, "", 0));
}

static LLVMValueRef declare_func(kc_lower_t *L, const kir_func_t *f, int may_raise) {
  LLVMTypeRef *params = malloc(sizeof *params * (KC_MAX_PARAM_PARTS * (size_t)f->nparams + 2));
  if (!params) return NULL;
  unsigned n = 0;
  for (int i = 0; i < f->nparams; i++)
    n += kc_param_types(L, f->values[f->params[i]].type, f->is_kernel, params + n);
  if (may_raise) params[n++] = kc_status_type(L); /* hidden, last */
  LLVMTypeRef fty = LLVMFunctionType(kc_scalar_type(L, f->ret.kind), params, n, 0);
  free(params);
  LLVMValueRef fn = LLVMAddFunction(L->mod, f->name, fty);
  LLVMSetFunctionCallConv(fn, f->is_kernel ? SPIR_KERNEL_CC : SPIR_FUNC_CC);
  if (!f->is_kernel) LLVMSetLinkage(fn, LLVMInternalLinkage);
  kc_set_fn_attrs(L, fn);
  if (f->max_registers) { /* kc_emit_spirv carries it into the SPIR-V */
    char v[16];
    int len = snprintf(v, sizeof v, "%d", f->max_registers);
    LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                            LLVMCreateStringAttribute(L->ctx, KC_MAX_REGISTERS_ATTR,
                                                      sizeof KC_MAX_REGISTERS_ATTR - 1, v, len));
  }
  if (f->is_kernel && f->group_size[0]) { /* the translator makes it ExecutionMode LocalSize */
    LLVMTypeRef i32 = LLVMInt32TypeInContext(L->ctx);
    LLVMMetadataRef dims[3];
    for (int d = 0; d < 3; d++)
      dims[d] = LLVMValueAsMetadata(LLVMConstInt(i32, (unsigned)f->group_size[d], 0));
    unsigned kind = LLVMGetMDKindIDInContext(L->ctx, "reqd_work_group_size", 20);
    LLVMGlobalSetMetadata(fn, kind, LLVMMDNodeInContext2(L->ctx, dims, 3));
  }
  if (f->is_kernel && f->fastmath == KIR_FM_FAST)
    LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                            LLVMCreateStringAttribute(L->ctx, KC_FLUSH_DENORMALS_ATTR,
                                                      sizeof KC_FLUSH_DENORMALS_ATTR - 1, "", 0));
  return fn;
}

static int lower_inst(kc_lower_t *L, const kir_inst_t *in) {
  switch (in->op) {
  case KIR_OP_CONST:
    return kc_lower_const(L, in);
  case KIR_OP_LOAD_VAR:
  case KIR_OP_STORE_VAR:
    return kc_lower_var(L, in);
  case KIR_OP_CAST:
    return kc_lower_cast(L, in);
  case KIR_OP_BITCAST:
    kc_set_result(L, in,
                  LLVMBuildBitCast(L->b, kc_arg(L, in, 0), kc_scalar_type(L, in->type.kind), ""));
    return 0;
  case KIR_OP_SELECT:
    return kc_lower_select(L, in);
  case KIR_OP_NEG:
  case KIR_OP_ABS:
  case KIR_OP_NOT:
  case KIR_OP_POPCOUNT:
    return kc_lower_unary(L, in);
  case KIR_OP_CMP:
    return kc_lower_cmp(L, in);
  case KIR_OP_MATH:
    return kc_lower_math(L, in);
  case KIR_OP_ALOAD:
  case KIR_OP_ASTORE:
  case KIR_OP_ASTORE_NT:
  case KIR_OP_DIM:
  case KIR_OP_STRIDE:
  case KIR_OP_WRAPIDX:
    return kc_lower_array_op(L, in);
  case KIR_OP_PRIVATE_ARRAY:
    return kc_lower_private_array(L, in);
  case KIR_OP_ATOMIC_RMW:
  case KIR_OP_ATOMIC_CMPXCHG:
  case KIR_OP_ATOMIC_LOAD:
  case KIR_OP_ATOMIC_STORE:
    return kc_lower_atomic(L, in);
  case KIR_OP_FENCE:
    return kc_lower_fence(L, in);
  case KIR_OP_GLOBAL_ID:
  case KIR_OP_GLOBAL_RANGE:
  case KIR_OP_LOCAL_ID:
  case KIR_OP_LOCAL_RANGE:
  case KIR_OP_GROUP_ID:
  case KIR_OP_GROUP_RANGE:
    return kc_lower_index_space(L, in);
  case KIR_OP_BARRIER:
    return kc_lower_barrier(L, in);
  case KIR_OP_SG_LOCAL_ID:
  case KIR_OP_SG_LOCAL_RANGE:
  case KIR_OP_SG_MAX_RANGE:
  case KIR_OP_SG_GROUP_ID:
  case KIR_OP_SG_GROUP_RANGE:
    return kc_lower_sub_group_query(L, in);
  case KIR_OP_SG_BARRIER:
  case KIR_OP_SG_SHUFFLE:
  case KIR_OP_SG_SHUFFLE_DOWN:
  case KIR_OP_SG_SHUFFLE_UP:
  case KIR_OP_SG_SHUFFLE_XOR:
  case KIR_OP_GROUP_BROADCAST:
  case KIR_OP_GROUP_REDUCE:
  case KIR_OP_GROUP_INCLUSIVE_SCAN:
  case KIR_OP_GROUP_EXCLUSIVE_SCAN:
  case KIR_OP_GROUP_ANY:
  case KIR_OP_GROUP_ALL:
    return kc_lower_group(L, in);
  case KIR_OP_BR:
  case KIR_OP_CBR:
  case KIR_OP_RET:
  case KIR_OP_UNREACHABLE:
    return kc_lower_control(L, in);
  case KIR_OP_CALL:
    return kc_lower_call(L, in);
  case KIR_OP_PRINT:
    return kc_lower_print(L, in);
  case KIR_OP_RAISE:
    return kc_lower_raise(L, in);
  default:
    return kc_lower_binary(L, in);
  }
}

/* Unreachable blocks are not lowered: they may use values no path defines. */
static int create_blocks(kc_lower_t *L) {
  const kir_func_t *f = L->f;
  char *reachable = malloc((size_t)f->nblocks);
  if (!reachable || kir_cfg_reachable(f, reachable)) return free(reachable), -1;
  for (int b = 0; b < f->nblocks; b++)
    L->blocks[b] =
        reachable[b] ? LLVMAppendBasicBlockInContext(L->ctx, L->fn, f->blocks[b].name) : NULL;
  free(reachable);
  return 0;
}

static int lower_body(kc_lower_t *L) {
  const kir_func_t *f = L->f;
  L->entry = LLVMAppendBasicBlockInContext(L->ctx, L->fn, "entry");
  LLVMPositionBuilderAtEnd(L->b, L->entry);
  kc_create_slots(L); /* allocas first: SPIR-V wants every OpVariable at the top */
  kc_unpack_params(L);
  if (create_blocks(L)) return -1;
  LLVMBuildBr(L->b, L->blocks[0]);
  for (int b = 0; b < f->nblocks; b++) {
    if (!L->blocks[b]) continue;
    LLVMPositionBuilderAtEnd(L->b, L->blocks[b]);
    for (int i = 0; i < f->blocks[b].ninsts; i++)
      if (lower_inst(L, &f->blocks[b].insts[i])) return -1;
  }
  return 0;
}

static int lower_func(kc_lower_t *L, int fi) {
  const kir_func_t *f = &L->m->funcs[fi];
  L->f = f;
  L->fn = L->fns[fi];
  L->status = L->may_raise[fi] ? LLVMGetLastParam(L->fn) : NULL;
  if (L->status) LLVMSetValueName2(L->status, "kapi.status", 11);
  L->vals = calloc((size_t)f->nvalues + 1, sizeof *L->vals);
  L->slots = calloc((size_t)f->nvars + 1, sizeof *L->slots);
  L->blocks = calloc((size_t)f->nblocks, sizeof *L->blocks);
  int rc = L->vals && L->slots && L->blocks ? lower_body(L) : -1;
  if (rc && !L->d->msg) kir_error(L->d, f->file, f->line, 0, "out of memory while lowering");
  free(L->vals), free(L->slots), free(L->blocks);
  L->vals = NULL, L->slots = NULL, L->blocks = NULL;
  return rc;
}

static void add_metadata(kc_lower_t *L) {
  LLVMValueRef ver[2] = {LLVMConstInt(L->i32, 2, 0), LLVMConstInt(L->i32, 0, 0)};
  LLVMAddNamedMetadataOperand(L->mod, "opencl.ocl.version", LLVMMDNodeInContext(L->ctx, ver, 2));
  LLVMValueRef spir[2] = {LLVMConstInt(L->i32, 1, 0), LLVMConstInt(L->i32, 2, 0)};
  LLVMAddNamedMetadataOperand(L->mod, "opencl.spir.version", LLVMMDNodeInContext(L->ctx, spir, 2));
}

static void init_types(kc_lower_t *L) {
  L->i1 = LLVMInt1TypeInContext(L->ctx);
  L->i8 = LLVMInt8TypeInContext(L->ctx);
  L->i32 = LLVMInt32TypeInContext(L->ctx);
  L->i64 = LLVMInt64TypeInContext(L->ctx);
  L->f32 = LLVMFloatTypeInContext(L->ctx);
  L->f64 = LLVMDoubleTypeInContext(L->ctx);
  L->void_t = LLVMVoidTypeInContext(L->ctx);
}

int kc_lower_module(LLVMContextRef ctx, const kir_module_t *m, LLVMModuleRef *out, kir_diag_t *d) {
  kc_lower_t L = {.ctx = ctx, .m = m, .d = d};
  init_types(&L);
  L.mod = LLVMModuleCreateWithNameInContext(m->funcs[m->kernel].name, ctx);
  LLVMSetTarget(L.mod, "spir64-unknown-unknown");
  LLVMSetDataLayout(L.mod, spir64_layout);
  add_metadata(&L);
  L.b = LLVMCreateBuilderInContext(ctx);
  L.fns = calloc((size_t)m->nfuncs, sizeof *L.fns);
  L.may_raise = malloc((size_t)m->nfuncs + 1);
  int rc = L.fns && L.may_raise ? kc_may_raise(m, L.may_raise) : -1;
  for (int i = 0; i < m->nfuncs && !rc; i++)
    rc = (L.fns[i] = declare_func(&L, &m->funcs[i], L.may_raise[i])) ? 0 : -1;
  for (int i = 0; i < m->nfuncs && !rc; i++)
    rc = lower_func(&L, i);
  free(L.fns);
  free(L.may_raise);
  LLVMDisposeBuilder(L.b);
  if (rc) {
    LLVMDisposeModule(L.mod);
    if (!d->msg) kir_error(d, "<kir>", 0, 0, "out of memory while lowering");
    return -1;
  }
  *out = L.mod;
  return 0;
}
