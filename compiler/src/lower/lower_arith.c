/* Arithmetic with Python's semantics (docs/kir.md): constants, casts by source signedness,
 * wrapping integer ops, shifts that saturate instead of being poison, comparisons where float
 * `ne` is unordered, min/max as `a < b ? a : b`. Floor division and modulo: lower_pydiv.c. */
#include "lower/lower.h"
#include "spirv/translator.h"

int kc_lower_const(kc_lower_t *L, const kir_inst_t *in) {
  kir_kind_t k = in->type.kind;
  LLVMTypeRef t = kc_scalar_type(L, k);
  LLVMValueRef v = kir_is_float(k) ? LLVMConstReal(t, in->cval.f)
                                   : LLVMConstInt(t, (unsigned long long)in->cval.i, 0);
  kc_set_result(L, in, v);
  return 0;
}

static LLVMValueRef to_bool(kc_lower_t *L, LLVMValueRef v, kir_kind_t from) {
  LLVMValueRef zero = LLVMConstNull(LLVMTypeOf(v));
  if (kir_is_float(from)) return LLVMBuildFCmp(L->b, LLVMRealUNE, v, zero, "");
  return LLVMBuildICmp(L->b, LLVMIntNE, v, zero, "");
}

/* Float to integer truncates toward zero. LLVM leaves an out-of-range result undefined, and
 * targets differ (x86 wraps through a 32-bit conversion, NVPTX saturates), so narrow and
 * unsigned 32-bit targets convert to a wider signed integer first and wrap by truncation, as
 * NumPy's astype does on x86 (300.25 -> int8 44, -3.75 -> uint16 65533) on every device.
 * i32, i64 and u64 convert directly: a wider detour would cost x86 its vector conversions. */
static LLVMValueRef float_to_int(kc_lower_t *L, LLVMValueRef v, kir_kind_t to, LLVMTypeRef t) {
  unsigned bits = LLVMGetIntTypeWidth(t);
  if (bits < 32 || (bits == 32 && !kir_is_signed(to))) {
    LLVMTypeRef wide = LLVMIntTypeInContext(LLVMGetTypeContext(t), bits < 32 ? 32 : 64);
    return LLVMBuildTrunc(L->b, LLVMBuildFPToSI(L->b, v, wide, ""), t, "");
  }
  return kir_is_signed(to) ? LLVMBuildFPToSI(L->b, v, t, "") : LLVMBuildFPToUI(L->b, v, t, "");
}

LLVMValueRef kc_convert(kc_lower_t *L, LLVMValueRef v, kir_kind_t from, kir_kind_t to) {
  LLVMTypeRef t = kc_scalar_type(L, to);
  if (from == to) return v;
  if (to == KIR_BOOL) return to_bool(L, v, from);
  int src_signed = kir_is_signed(from); /* bool is 0/1: unsigned */
  if (kir_is_float(to)) {
    if (kir_is_float(from)) return LLVMBuildFPCast(L->b, v, t, "");
    return src_signed ? LLVMBuildSIToFP(L->b, v, t, "") : LLVMBuildUIToFP(L->b, v, t, "");
  }
  if (kir_is_float(from)) return float_to_int(L, v, to, t);
  return LLVMBuildIntCast2(L->b, v, t, src_signed, "");
}

int kc_lower_cast(kc_lower_t *L, const kir_inst_t *in) {
  kc_set_result(L, in, kc_convert(L, kc_arg(L, in, 0), kc_arg_type(L, in, 0).kind, in->type.kind));
  return 0;
}

int kc_lower_select(kc_lower_t *L, const kir_inst_t *in) {
  kc_set_result(L, in,
                LLVMBuildSelect(L->b, kc_arg(L, in, 0), kc_arg(L, in, 1), kc_arg(L, in, 2), ""));
  return 0;
}

/* Shift counts outside [0, bits) give what the mathematical shift would (0, or the sign for
 * arithmetic right shifts) instead of LLVM poison. */
static LLVMValueRef shift(kc_lower_t *L, kir_kind_t k, int left, LLVMValueRef a, LLVMValueRef n) {
  LLVMTypeRef t = LLVMTypeOf(a);
  LLVMValueRef width = LLVMConstInt(t, (unsigned)kir_bits(k), 0);
  LLVMValueRef in_range = LLVMBuildICmp(L->b, LLVMIntULT, n, width, "");
  if (!left && kir_is_signed(k)) {
    LLVMValueRef max = LLVMConstInt(t, (unsigned)kir_bits(k) - 1, 0);
    return LLVMBuildAShr(L->b, a, LLVMBuildSelect(L->b, in_range, n, max, ""), "");
  }
  LLVMValueRef safe = LLVMBuildSelect(L->b, in_range, n, LLVMConstNull(t), "");
  LLVMValueRef r = left ? LLVMBuildShl(L->b, a, safe, "") : LLVMBuildLShr(L->b, a, safe, "");
  return LLVMBuildSelect(L->b, in_range, r, LLVMConstNull(t), "");
}

static LLVMValueRef min_max(kc_lower_t *L, kir_kind_t k, int is_min, LLVMValueRef a,
                            LLVMValueRef b) {
  LLVMValueRef c;
  if (kir_is_float(k))
    c = LLVMBuildFCmp(L->b, is_min ? LLVMRealOLT : LLVMRealOGT, a, b, "");
  else if (kir_is_signed(k))
    c = LLVMBuildICmp(L->b, is_min ? LLVMIntSLT : LLVMIntSGT, a, b, "");
  else
    c = LLVMBuildICmp(L->b, is_min ? LLVMIntULT : LLVMIntUGT, a, b, "");
  return LLVMBuildSelect(L->b, c, a, b, "");
}

LLVMValueRef kc_fast_math(kc_lower_t *L, LLVMValueRef v) {
  if (L->f->fastmath) kc_tr_set_fast_math(v, L->f->fastmath);
  return v;
}

/* float32 division under `arcp` is OpenCL's native_divide (an approximate x * (1/y): PTX
 * div.approx.f32, as nvcc's -prec-div=false and numba-cuda's fastmath give); other divisions
 * carry the flags and stay correctly rounded. */
static LLVMValueRef float_div(kc_lower_t *L, kir_kind_t k, LLVMValueRef a, LLVMValueRef b) {
  if (k == KIR_F32 && (L->f->fastmath & KIR_FM_ARCP)) {
    LLVMValueRef args[2] = {a, b};
    return kc_ocl_call(L, "native_divide", k, args, 2);
  }
  return kc_fast_math(L, LLVMBuildFDiv(L->b, a, b, ""));
}

static LLVMValueRef float_binary(kc_lower_t *L, kir_op_t op, kir_kind_t k, LLVMValueRef a,
                                 LLVMValueRef b) {
  switch (op) {
  case KIR_OP_ADD:
    return kc_fast_math(L, LLVMBuildFAdd(L->b, a, b, ""));
  case KIR_OP_SUB:
    return kc_fast_math(L, LLVMBuildFSub(L->b, a, b, ""));
  case KIR_OP_MUL:
    return kc_fast_math(L, LLVMBuildFMul(L->b, a, b, ""));
  case KIR_OP_DIV:
    return float_div(L, k, a, b);
  case KIR_OP_POW: {
    LLVMValueRef args[2] = {a, b};
    return kc_ocl_call(L, "pow", k, args, 2);
  }
  default:
    return NULL;
  }
}

static LLVMValueRef int_binary(kc_lower_t *L, kir_op_t op, kir_kind_t k, LLVMValueRef a,
                               LLVMValueRef b) {
  switch (op) {
  case KIR_OP_ADD:
    return LLVMBuildAdd(L->b, a, b, "");
  case KIR_OP_SUB:
    return LLVMBuildSub(L->b, a, b, "");
  case KIR_OP_MUL:
    return LLVMBuildMul(L->b, a, b, "");
  case KIR_OP_AND:
    return LLVMBuildAnd(L->b, a, b, "");
  case KIR_OP_OR:
    return LLVMBuildOr(L->b, a, b, "");
  case KIR_OP_XOR:
    return LLVMBuildXor(L->b, a, b, "");
  case KIR_OP_SHL:
    return shift(L, k, 1, a, b);
  case KIR_OP_SHR:
    return shift(L, k, 0, a, b);
  case KIR_OP_POW:
    return kc_ipow(L, k, a, b);
  default:
    return NULL;
  }
}

int kc_lower_binary(kc_lower_t *L, const kir_inst_t *in) {
  kir_kind_t k = in->type.kind;
  LLVMValueRef a = kc_arg(L, in, 0), b = kc_arg(L, in, 1), r;
  if (in->op == KIR_OP_MIN || in->op == KIR_OP_MAX)
    r = min_max(L, k, in->op == KIR_OP_MIN, a, b);
  else if (in->op == KIR_OP_FLOORDIV)
    r = kc_floordiv(L, k, a, b);
  else if (in->op == KIR_OP_MOD)
    r = kc_mod(L, k, a, b);
  else
    r = kir_is_float(k) ? float_binary(L, in->op, k, a, b) : int_binary(L, in->op, k, a, b);
  if (!r) return kir_inst_error(L->d, L->f, in, "internal: cannot lower %s", kir_op_name(in->op));
  kc_set_result(L, in, r);
  return 0;
}

int kc_lower_unary(kc_lower_t *L, const kir_inst_t *in) {
  kir_kind_t k = in->type.kind;
  LLVMValueRef a = kc_arg(L, in, 0), r;
  if (in->op == KIR_OP_NOT) {
    r = LLVMBuildNot(L->b, a, "");
  } else if (in->op == KIR_OP_POPCOUNT) {
    /* OpenCL.std popcount (any integer width; signedness does not matter): both finalisers
     * turn it into llvm.ctpop, one popc on NVIDIA GPUs */
    r = kc_ocl_call(L, "popcount", k, &a, 1);
  } else if (kir_is_float(k)) {
    r = in->op == KIR_OP_NEG ? kc_fast_math(L, LLVMBuildFNeg(L->b, a, ""))
                             : kc_ocl_call(L, "fabs", k, &a, 1);
  } else if (in->op == KIR_OP_NEG) {
    r = LLVMBuildNeg(L->b, a, "");
  } else if (kir_is_signed(k)) {
    LLVMValueRef neg = LLVMBuildICmp(L->b, LLVMIntSLT, a, LLVMConstNull(LLVMTypeOf(a)), "");
    r = LLVMBuildSelect(L->b, neg, LLVMBuildNeg(L->b, a, ""), a, "");
  } else {
    r = a; /* abs of an unsigned value */
  }
  kc_set_result(L, in, r);
  return 0;
}

int kc_lower_cmp(kc_lower_t *L, const kir_inst_t *in) {
  static const LLVMRealPredicate fp[] = {LLVMRealOEQ, LLVMRealUNE, LLVMRealOLT,
                                         LLVMRealOLE, LLVMRealOGT, LLVMRealOGE};
  static const LLVMIntPredicate si[] = {LLVMIntEQ,  LLVMIntNE,  LLVMIntSLT,
                                        LLVMIntSLE, LLVMIntSGT, LLVMIntSGE};
  static const LLVMIntPredicate ui[] = {LLVMIntEQ,  LLVMIntNE,  LLVMIntULT,
                                        LLVMIntULE, LLVMIntUGT, LLVMIntUGE};
  kir_kind_t k = kc_arg_type(L, in, 0).kind;
  LLVMValueRef a = kc_arg(L, in, 0), b = kc_arg(L, in, 1), r;
  if (kir_is_float(k))
    r = LLVMBuildFCmp(L->b, fp[in->sub], a, b, "");
  else
    r = LLVMBuildICmp(L->b, kir_is_signed(k) ? si[in->sub] : ui[in->sub], a, b, "");
  kc_set_result(L, in, r);
  return 0;
}
