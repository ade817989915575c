/* Host finaliser: vectorisable math. A scalar libm call in a work-item loop would keep the loop
 * scalar; glibc's libmvec has SIMD versions (`_ZGVdN8v_sinf`: AVX2, 8 lanes) of most OpenCL.std
 * functions. Each scalar call gets LLVM's "vector-function-abi-variant" attribute naming the
 * variants the host can run, so the loop vectoriser may call them; the variants are declared
 * and kept alive with @llvm.compiler.used until optimisation is done. Only functions whose
 * libmvec accuracy is within OpenCL's bounds are listed (host_test.c's math test checks each
 * through the vector path), and only variants libmvec defines. Without libmvec, or with
 * KAPI_HOST_NO_LIBMVEC set, calls stay scalar.
 */
#define _GNU_SOURCE
#include "finalise/host/finalise_host.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Functions whose libmvec variants stay well inside OpenCL's bounds. Left out, because a scan
 * of every 7th float bit pattern (AVX2 variants) found errors at or past the bound: log (3.93
 * ulp, bound 3), exp (overflows to inf just below FLT_MAX), cbrt (2.85, bound 2), log1p (1.95,
 * bound 2); exp2, log2 and log10 share log's and exp's margins. Found within (glibc 2.36, worst
 * of the SSE4, AVX2 and AVX-512 variants over 8M floats spread over all bit patterns): sin 2.04
 * (4), cos 1.91 (4), tan 3.50 (5), asin 2.79 (4), acos 2.00 (4), atan 2.22 (5), sinh 1.82 (4),
 * cosh 2.32 (4), tanh 1.35 (5), asinh 2.04 (4), acosh 2.25 (4), atanh 2.08 (5), erf 4.00 (16),
 * erfc 1.50 (16), expm1 2.34 (3), pow 0.62 (16), atan2 3.70 (6), hypot 1.39 (4). exp10's
 * AVX-512 variant reaches 3.76 (3; 1.73 in the others): float exp10 is IR of our own
 * (finalise_host_math.c), so only double exp10 comes here (1.10). Doubles, 2M samples per
 * range: tan 3.48 (5), asin 3.01 (4), atan2 2.59 (6), acosh 2.69 (4), others below 2.3; sin,
 * cos (3.49, bound 4) and expm1 (2.91, bound 3) have too little margin, so they stay scalar in
 * double. Another glibc may differ: the host math tests run each target's variants
 * (`ctest -R host_math_`). */
static const char *const VECTORISABLE[] = {
    "sin",   "cos",   "tan",   "asin", "acos", "atan", "atan2", "sinh",  "cosh",  "tanh",
    "asinh", "acosh", "atanh", "pow",  "erf",  "erfc", "hypot", "expm1", "exp10",
};
static const char *const FLOAT_ONLY[] = {"sin", "cos", "expm1"};

/* Vector ISAs of the host, as libmvec names them: b = SSE4, d = AVX2, e = AVX-512. */
static struct {
  int ok;
  char isa[3];
  unsigned bits[3];
  int count;
} mvec;
static pthread_once_t mvec_once = PTHREAD_ONCE_INIT;

static void mvec_init(void) {
  /* libmvec is bound by handle (finalise_host_jit.c), absent with KAPI_HOST_NO_LIBMVEC. */
  if (!kc_hf_math_symbol("_ZGVbN2v_sin")) return;
  const char *f = kc_hf_target_features(); /* the target's ISAs, which may not be the host's */
  mvec.isa[mvec.count] = 'b', mvec.bits[mvec.count++] = 128;
  if (strstr(f, "+avx2")) mvec.isa[mvec.count] = 'd', mvec.bits[mvec.count++] = 256;
  if (strstr(f, "+avx512f")) mvec.isa[mvec.count] = 'e', mvec.bits[mvec.count++] = 512;
  mvec.ok = 1;
}

int kc_hf_vectorisable(const char *dname, int is_double) {
  pthread_once(&mvec_once, mvec_init);
  if (!mvec.ok) return 0;
  for (size_t i = 0; is_double && i < sizeof FLOAT_ONLY / sizeof FLOAT_ONLY[0]; i++)
    if (!strcmp(dname, FLOAT_ONLY[i])) return 0;
  for (size_t i = 0; i < sizeof VECTORISABLE / sizeof VECTORISABLE[0]; i++)
    if (!strcmp(dname, VECTORISABLE[i])) return 1;
  return 0;
}

static void add_attr(LLVMValueRef call, const char *name) {
  LLVMContextRef c = LLVMGetTypeContext(LLVMTypeOf(call));
  unsigned k = LLVMGetEnumAttributeKindForName(name, strlen(name));
  LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(c, k, 0));
}

/* Declares one libmvec variant (`_ZGVdN8vv_powf`: <8 x float>(<8 x float>, <8 x float>)). */
static void declare_variant(LLVMModuleRef m, const char *vname, LLVMTypeRef ty, unsigned lanes,
                            unsigned nargs) {
  if (LLVMGetNamedFunction(m, vname)) return;
  LLVMTypeRef vt = LLVMVectorType(ty, lanes), ps[2] = {vt, vt};
  LLVMAddFunction(m, vname, LLVMFunctionType(vt, ps, nargs, 0));
}

LLVMValueRef kc_hf_vec_libm_call(LLVMModuleRef m, LLVMBuilderRef b, const char *dname,
                                 LLVMValueRef *a, unsigned n) {
  LLVMTypeRef ty = LLVMTypeOf(a[0]);
  LLVMTypeKind k = LLVMGetTypeKind(ty);
  if ((k != LLVMFloatTypeKind && k != LLVMDoubleTypeKind) || n < 1 || n > 2) return NULL;
  for (unsigned i = 1; i < n; i++)
    if (LLVMTypeOf(a[i]) != ty) return NULL;
  char scalar[32];
  snprintf(scalar, sizeof scalar, "%s%s", dname, k == LLVMFloatTypeKind ? "f" : "");
  LLVMTypeRef ps[2] = {ty, ty};
  LLVMTypeRef fty = LLVMFunctionType(ty, ps, n, 0);
  LLVMValueRef fn = LLVMGetNamedFunction(m, scalar);
  if (!fn) fn = LLVMAddFunction(m, scalar, fty);
  if (LLVMGlobalGetValueType(fn) != fty) return NULL;
  LLVMValueRef call = kc_hf_call(b, fn, a, n);
  /* OpenCL math has no errno: the call reads and writes no memory, so loops stay analysable. */
  add_attr(call, "readnone");
  add_attr(call, "nounwind");
  add_attr(call, "willreturn");
  char variants[512] = "", vname[64];
  size_t used = 0;
  for (int i = 0; i < mvec.count; i++) {
    unsigned lanes = mvec.bits[i] / (k == LLVMFloatTypeKind ? 32 : 64);
    const char *params = n == 2 ? "vv" : "v";
    snprintf(vname, sizeof vname, "_ZGV%cN%u%s_%s", mvec.isa[i], lanes, params, scalar);
    /* An ISA's set may lack a function another has (glibc's AVX-512 set is not AVX2's). */
    if (!kc_hf_math_symbol(vname)) continue;
    declare_variant(m, vname, ty, lanes, n);
    used += (size_t)snprintf(variants + used, sizeof variants - used, "%s_ZGV_LLVM_N%u%s_%s(%s)",
                             used ? "," : "", lanes, params, scalar, vname);
  }
  if (!used) return call;
  const char *attr = "vector-function-abi-variant";
  LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex,
                           LLVMCreateStringAttribute(LLVMGetModuleContext(m), attr,
                                                     (unsigned)strlen(attr), variants,
                                                     (unsigned)strlen(variants)));
  return call;
}

/* @llvm.compiler.used keeps the (so far unused) variant declarations through inlining and
 * global DCE until the vectoriser has run. */
int kc_hf_vec_keep(LLVMModuleRef m, char **log) {
  if (LLVMGetNamedGlobal(m, "llvm.compiler.used")) return 1; /* not ours: leave it alone */
  LLVMContextRef c = LLVMGetModuleContext(m);
  LLVMTypeRef i8p = LLVMPointerType(LLVMInt8TypeInContext(c), 0);
  size_t n = 0;
  for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
    n += !strncmp(LLVMGetValueName(f), "_ZGV", 4);
  if (n == 0) return 1;
  LLVMValueRef *els = calloc(n, sizeof *els);
  if (!els) return *log = kc_msg("out of memory"), 0;
  n = 0;
  for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
    if (!strncmp(LLVMGetValueName(f), "_ZGV", 4)) els[n++] = LLVMConstBitCast(f, i8p);
  LLVMValueRef arr = LLVMConstArray(i8p, els, (unsigned)n);
  LLVMValueRef g = LLVMAddGlobal(m, LLVMTypeOf(arr), "llvm.compiler.used");
  LLVMSetInitializer(g, arr);
  LLVMSetLinkage(g, LLVMAppendingLinkage);
  LLVMSetSection(g, "llvm.metadata");
  free(els);
  return 1;
}

void kc_hf_vec_release(LLVMModuleRef m) {
  LLVMValueRef g = LLVMGetNamedGlobal(m, "llvm.compiler.used");
  if (!g) return;
  LLVMDeleteGlobal(g);
  for (LLVMValueRef f = LLVMGetFirstFunction(m), next; f; f = next) {
    next = LLVMGetNextFunction(f);
    if (LLVMIsDeclaration(f) && !LLVMGetFirstUse(f) && !strncmp(LLVMGetValueName(f), "_ZGV", 4))
      LLVMDeleteFunction(f);
  }
}
