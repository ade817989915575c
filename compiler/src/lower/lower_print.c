/* print: one OpenCL `printf` call per KIR print, so a line is written at once on every device.
 * The KIR template (literal text with a `{}` per value; pyfront ends it with print's `end`,
 * a newline by default) becomes a printf format in constant memory (addrspace 2), which the
 * translator maps to the OpenCL.std printf instruction. Values follow C's variadic promotions,
 * chosen to read like Python: integers as %ld/%lu widened to 64 bits (`l` is 64-bit in OpenCL
 * C, on CUDA and on Linux x86-64; OpenCL has no `ll`), floats as %.9g (f32) and %.17g (f64),
 * enough digits to read the exact value back, and bools as True/False through %s. */
#include "lower/lower.h"

#include <stdlib.h>
#include <string.h>

#define SPIR_FUNC_CC 75
#define KC_AS_CONSTANT 2

/* An i8 addrspace(2)* to a NUL-terminated copy of s (len bytes) in constant memory. */
static LLVMValueRef const_string(kc_lower_t *L, const char *s, size_t len, const char *name) {
  LLVMValueRef init = LLVMConstStringInContext(L->ctx, s, (unsigned)len, 0);
  LLVMValueRef g = LLVMAddGlobalInAddressSpace(L->mod, LLVMTypeOf(init), name, KC_AS_CONSTANT);
  LLVMSetInitializer(g, init);
  LLVMSetGlobalConstant(g, 1);
  LLVMSetLinkage(g, LLVMPrivateLinkage);
  LLVMSetUnnamedAddress(g, LLVMGlobalUnnamedAddr);
  LLVMSetAlignment(g, 1);
  LLVMValueRef zero = LLVMConstInt(L->i32, 0, 0), idx[2] = {zero, zero};
  return LLVMConstInBoundsGEP2(LLVMTypeOf(init), g, idx, 2);
}

/* The module's one "True"/"False" pair, made on first use. */
static LLVMValueRef bool_string(kc_lower_t *L, int v) {
  const char *name = v ? "kapi.true" : "kapi.false";
  LLVMValueRef g = LLVMGetNamedGlobal(L->mod, name);
  if (!g) return const_string(L, v ? "True" : "False", v ? 4 : 5, name);
  LLVMValueRef zero = LLVMConstInt(L->i32, 0, 0), idx[2] = {zero, zero};
  return LLVMConstInBoundsGEP2(LLVMGlobalGetValueType(g), g, idx, 2);
}

/* The printf conversion of a value of kind k, and the value as printf receives it. */
static const char *convert(kc_lower_t *L, kir_kind_t k, LLVMValueRef v, LLVMValueRef *out) {
  if (k == KIR_BOOL) {
    *out = LLVMBuildSelect(L->b, v, bool_string(L, 1), bool_string(L, 0), "");
    return "%s";
  }
  if (kir_is_float(k)) {
    *out = k == KIR_F32 ? LLVMBuildFPExt(L->b, v, L->f64, "") : v;
    return k == KIR_F32 ? "%.9g" : "%.17g";
  }
  int is_signed = kir_is_signed(k);
  *out = kir_bits(k) == 64 ? v
         : is_signed       ? LLVMBuildSExt(L->b, v, L->i64, "")
                           : LLVMBuildZExt(L->b, v, L->i64, "");
  return is_signed ? "%ld" : "%lu";
}

static LLVMValueRef declare_printf(kc_lower_t *L) {
  LLVMValueRef fn = LLVMGetNamedFunction(L->mod, "printf");
  if (fn) return fn;
  LLVMTypeRef fmt = LLVMPointerType(L->i8, KC_AS_CONSTANT);
  fn = LLVMAddFunction(L->mod, "printf", LLVMFunctionType(L->i32, &fmt, 1, 1));
  LLVMSetFunctionCallConv(fn, SPIR_FUNC_CC);
  return fn;
}

/* Appends n bytes of s to the growing buffer (*buf, *len, *cap); -1 when out of memory. */
static int append(char **buf, size_t *len, size_t *cap, const char *s, size_t n) {
  if (*len + n + 1 > *cap) {
    size_t want = (*len + n + 1) * 2;
    char *p = realloc(*buf, want);
    if (!p) return -1;
    *buf = p, *cap = want;
  }
  memcpy(*buf + *len, s, n);
  *len += n;
  (*buf)[*len] = '\0';
  return 0;
}

/* The format of `in` (its values converted into args[1..]); NULL when out of memory. */
static char *build_format(kc_lower_t *L, const kir_inst_t *in, LLVMValueRef *args, size_t *len) {
  char *buf = NULL;
  size_t cap = 0;
  *len = 0;
  int k = 0, rc = append(&buf, len, &cap, "", 0); /* an empty template gives "" */
  for (const char *s = in->str; *s && !rc; s++) {
    if (s[0] == '{' && s[1] == '}') {
      const char *conv = convert(L, kc_arg_type(L, in, k).kind, kc_arg(L, in, k), &args[k + 1]);
      rc = append(&buf, len, &cap, conv, strlen(conv));
      k++, s++;
    } else if (s[0] == '%') {
      rc = append(&buf, len, &cap, "%%", 2);
    } else {
      rc = append(&buf, len, &cap, s, 1);
      if ((s[0] == '{' || s[0] == '}') && s[1] == s[0]) s++; /* {{ and }} */
    }
  }
  if (rc) free(buf);
  return rc ? NULL : buf;
}

int kc_lower_print(kc_lower_t *L, const kir_inst_t *in) {
  LLVMValueRef *args = malloc(sizeof *args * ((size_t)in->nargs + 1));
  size_t len;
  char *fmt = args ? build_format(L, in, args, &len) : NULL;
  if (!fmt) {
    free(args);
    return kir_inst_error(L->d, L->f, in, "out of memory");
  }
  args[0] = const_string(L, fmt, len, "kapi.fmt");
  free(fmt);
  kc_call(L, declare_printf(L), args, (unsigned)in->nargs + 1);
  free(args);
  return 0;
}
