/* Memory: the kernel ABI (arrays arrive as pointer + extents + strides, docs/kir.md), the
 * device-function ABI, variable slots, array element access and private arrays. Layout C and F
 * index from the extents alone, so contiguous arrays need no stride multiplies. */
#include "lower/lower.h"

#include <stdio.h>
#include <string.h>

static LLVMTypeRef ptr_type(kc_lower_t *L, kir_type_t t) {
  return LLVMPointerType(kc_mem_type(L, t.elem), kc_addrspace(t.space));
}

/* Kernels: local arrays carry no strides (they are C-contiguous by construction). Device
 * functions: every array carries strides, whatever its space. */
static int has_stride_args(kir_type_t t, int kernel) {
  return !kernel || t.space != KIR_LOCAL;
}

unsigned kc_param_types(kc_lower_t *L, kir_type_t t, int kernel, LLVMTypeRef *out) {
  if (t.kind != KIR_ARRAY) {
    out[0] = kernel ? kc_mem_type(L, t.kind) : kc_scalar_type(L, t.kind);
    return 1;
  }
  unsigned n = 0;
  out[n++] = ptr_type(L, t);
  for (int k = 0; k < t.ndim; k++)
    out[n++] = L->i64;
  if (has_stride_args(t, kernel))
    for (int k = 0; k < t.ndim; k++)
      out[n++] = L->i64;
  return n;
}

/* Strides in elements of a C-contiguous array from its extents. */
static void c_strides(kc_lower_t *L, kc_val_t *a, int ndim) {
  a->str[ndim - 1] = LLVMConstInt(L->i64, 1, 0);
  for (int k = ndim - 2; k >= 0; k--)
    a->str[k] = LLVMBuildNUWMul(L->b, a->str[k + 1], a->ext[k + 1], "stride");
}

static void name_param(LLVMValueRef p, const char *base, const char *what, int k) {
  char buf[160];
  if (what)
    snprintf(buf, sizeof buf, "%s.%s%d", base, what, k);
  else
    snprintf(buf, sizeof buf, "%s", base);
  LLVMSetValueName2(p, buf, strlen(buf));
}

static unsigned unpack_array(kc_lower_t *L, kc_val_t *a, kir_type_t t, const char *name,
                             unsigned idx) {
  a->v = LLVMGetParam(L->fn, idx++);
  name_param(a->v, name, NULL, 0);
  for (int k = 0; k < t.ndim; k++)
    name_param(a->ext[k] = LLVMGetParam(L->fn, idx++), name, "dim", k);
  if (has_stride_args(t, L->f->is_kernel))
    for (int k = 0; k < t.ndim; k++)
      name_param(a->str[k] = LLVMGetParam(L->fn, idx++), name, "stride", k);
  /* A static shape (a C-contiguous local array) replaces the extent and stride arguments by
   * constants, so index math folds and the backend can prove the alignment of rows. The
   * arguments stay in the signature: the kernel ABI does not depend on the shape. */
  if (kir_type_is_static(t))
    for (int k = 0; k < t.ndim; k++)
      a->ext[k] = LLVMConstInt(L->i64, t.shape[k], 0);
  if (kir_type_is_static(t) || !has_stride_args(t, L->f->is_kernel)) c_strides(L, a, t.ndim);
  return idx;
}

void kc_unpack_params(kc_lower_t *L) {
  const kir_func_t *f = L->f;
  unsigned idx = 0;
  for (int i = 0; i < f->nparams; i++) {
    const kir_value_t *pv = &f->values[f->params[i]];
    kc_val_t *val = &L->vals[f->params[i]];
    if (pv->type.kind == KIR_ARRAY) {
      idx = unpack_array(L, val, pv->type, pv->name, idx);
      continue;
    }
    LLVMValueRef p = LLVMGetParam(L->fn, idx++);
    name_param(p, pv->name, NULL, 0);
    /* a bool kernel argument is one byte */
    if (f->is_kernel && pv->type.kind == KIR_BOOL)
      p = LLVMBuildICmp(L->b, LLVMIntNE, p, LLVMConstInt(L->i8, 0, 0), "");
    val->v = p;
  }
}

void kc_create_slots(kc_lower_t *L) {
  for (int i = 0; i < L->f->nvars; i++)
    L->slots[i] =
        LLVMBuildAlloca(L->b, kc_scalar_type(L, L->f->vars[i].type.kind), L->f->vars[i].name);
}

int kc_lower_var(kc_lower_t *L, const kir_inst_t *in) {
  LLVMValueRef slot = L->slots[in->var];
  if (in->op == KIR_OP_STORE_VAR) {
    LLVMBuildStore(L->b, kc_arg(L, in, 0), slot);
    return 0;
  }
  kc_set_result(L, in, LLVMBuildLoad2(L->b, kc_scalar_type(L, in->type.kind), slot, ""));
  return 0;
}

static LLVMValueRef linear_index(kc_lower_t *L, const kc_val_t *a, kir_type_t t,
                                 LLVMValueRef *idx) {
  LLVMValueRef lin;
  int n = t.ndim;
  if (t.layout == KIR_LAYOUT_C) {
    lin = idx[0];
    for (int k = 1; k < n; k++)
      lin = LLVMBuildNSWAdd(L->b, LLVMBuildNSWMul(L->b, lin, a->ext[k], ""), idx[k], "");
  } else if (t.layout == KIR_LAYOUT_F) {
    lin = idx[n - 1];
    for (int k = n - 2; k >= 0; k--)
      lin = LLVMBuildNSWAdd(L->b, LLVMBuildNSWMul(L->b, lin, a->ext[k], ""), idx[k], "");
  } else {
    lin = LLVMBuildNSWMul(L->b, idx[0], a->str[0], "");
    for (int k = 1; k < n; k++)
      lin = LLVMBuildNSWAdd(L->b, lin, LLVMBuildNSWMul(L->b, idx[k], a->str[k], ""), "");
  }
  return lin;
}

LLVMValueRef kc_element_ptr(kc_lower_t *L, const kir_inst_t *in, int first) {
  const kc_val_t *a = kc_arg_val(L, in, 0);
  kir_type_t t = kc_arg_type(L, in, 0);
  LLVMValueRef idx[KIR_MAX_NDIM] = {NULL};
  for (int k = 0; k < t.ndim; k++)
    idx[k] = kc_arg(L, in, first + k);
  LLVMValueRef lin = linear_index(L, a, t, idx);
  return LLVMBuildInBoundsGEP2(L->b, kc_mem_type(L, t.elem), a->v, &lin, 1, "");
}

static int lower_aload(kc_lower_t *L, const kir_inst_t *in) {
  kir_kind_t k = in->type.kind;
  LLVMValueRef v = LLVMBuildLoad2(L->b, kc_mem_type(L, k), kc_element_ptr(L, in, 1), "");
  if (k == KIR_BOOL) v = LLVMBuildICmp(L->b, LLVMIntNE, v, LLVMConstInt(L->i8, 0, 0), "");
  kc_set_result(L, in, v);
  return 0;
}

/* astore_nt: LLVM's !nontemporal, which the translator carries as SPIR-V's Nontemporal
 * memory operand; on local or private memory, where it means nothing, a plain store. */
static void mark_nontemporal(kc_lower_t *L, LLVMValueRef store) {
  LLVMMetadataRef one = LLVMValueAsMetadata(LLVMConstInt(L->i32, 1, 0));
  unsigned kind = LLVMGetMDKindIDInContext(L->ctx, "nontemporal", 11);
  LLVMSetMetadata(store, kind, LLVMMetadataAsValue(L->ctx, LLVMMDNodeInContext2(L->ctx, &one, 1)));
}

static int lower_astore(kc_lower_t *L, const kir_inst_t *in) {
  LLVMValueRef v = kc_arg(L, in, 1);
  kir_type_t t = kc_arg_type(L, in, 0);
  if (t.elem == KIR_BOOL) v = LLVMBuildZExt(L->b, v, L->i8, "");
  LLVMValueRef st = LLVMBuildStore(L->b, v, kc_element_ptr(L, in, 2));
  if (in->op == KIR_OP_ASTORE_NT && t.space == KIR_GLOBAL) mark_nontemporal(L, st);
  return 0;
}

int kc_lower_array_op(kc_lower_t *L, const kir_inst_t *in) {
  const kc_val_t *a = kc_arg_val(L, in, 0);
  int d = (int)in->lits[0];
  switch (in->op) {
  case KIR_OP_ALOAD:
    return lower_aload(L, in);
  case KIR_OP_ASTORE:
  case KIR_OP_ASTORE_NT:
    return lower_astore(L, in);
  case KIR_OP_DIM:
    kc_set_result(L, in, a->ext[d]);
    return 0;
  case KIR_OP_STRIDE:
    kc_set_result(L, in, a->str[d]);
    return 0;
  default:
    break;
  }
  LLVMValueRef i = kc_arg(L, in, 1);
  LLVMValueRef neg = LLVMBuildICmp(L->b, LLVMIntSLT, i, LLVMConstInt(L->i64, 0, 0), "");
  LLVMValueRef wrapped = LLVMBuildAdd(L->b, i, a->ext[d], "");
  kc_set_result(L, in, LLVMBuildSelect(L->b, neg, wrapped, i, "wrapidx"));
  return 0;
}

/* Storage in the entry block (one allocation per work-item, not per loop trip); the fill
 * happens where the instruction is, so a private_array in a loop is zeroed on every trip. */
int kc_lower_private_array(kc_lower_t *L, const kir_inst_t *in) {
  kir_type_t t = in->type;
  kc_val_t *a = &L->vals[in->result];
  uint64_t total = 1;
  for (int k = 0; k < t.ndim; k++) {
    a->ext[k] = LLVMConstInt(L->i64, (uint64_t)in->lits[k], 0);
    total *= (uint64_t)in->lits[k];
  }
  LLVMTypeRef elem = kc_mem_type(L, t.elem), arr = LLVMArrayType(elem, (unsigned)total);
  LLVMBasicBlockRef here = LLVMGetInsertBlock(L->b);
  LLVMValueRef first = LLVMGetFirstInstruction(L->entry); /* after the other allocas */
  while (LLVMGetInstructionOpcode(first) == LLVMAlloca)
    first = LLVMGetNextInstruction(first);
  LLVMPositionBuilderBefore(L->b, first);
  LLVMValueRef storage = LLVMBuildAlloca(L->b, arr, "private");
  LLVMValueRef zero = LLVMConstInt(L->i64, 0, 0), idx[2] = {zero, zero};
  a->v = LLVMBuildInBoundsGEP2(L->b, arr, storage, idx, 2, "");
  LLVMPositionBuilderAtEnd(L->b, here);
  for (int k = t.ndim - 1, s = 1; k >= 0; s *= (int)in->lits[k], k--)
    a->str[k] = LLVMConstInt(L->i64, (uint64_t)s, 0);
  if (in->sub == KIR_FILL_ZERO) {
    unsigned esize = kir_bits(t.elem) < 8 ? 1 : (unsigned)kir_bits(t.elem) / 8;
    LLVMBuildMemSet(L->b, a->v, LLVMConstInt(L->i8, 0, 0), LLVMConstInt(L->i64, total * esize, 0),
                    esize);
  }
  return 0;
}

unsigned kc_array_call_args(kc_lower_t *L, const kc_val_t *a, kir_type_t t, LLVMValueRef *out) {
  (void)L;
  unsigned n = 0;
  out[n++] = a->v;
  for (int k = 0; k < t.ndim; k++)
    out[n++] = a->ext[k];
  for (int k = 0; k < t.ndim; k++)
    out[n++] = a->str[k];
  return n;
}
