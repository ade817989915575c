/* Small helpers the host finaliser's phases share: mangled-name parsing, intrinsic
 * declarations, and finding the builtin calls each phase rewrites.
 */
#include "finalise/host/finalise_host.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void kc_hf_base_name(const char *name, char *buf, size_t cap) {
  size_t len = strlen(name);
  const char *start = name;
  if (len > 2 && name[0] == '_' && name[1] == 'Z' && isdigit((unsigned char)name[2])) {
    char *end;
    unsigned long n = strtoul(name + 2, &end, 10);
    if (n <= strlen(end)) {
      start = end;
      len = n;
    }
  }
  if (len >= cap) len = cap - 1;
  memcpy(buf, start, len);
  buf[len] = '\0';
}

LLVMValueRef kc_hf_intrinsic(LLVMModuleRef m, const char *name, LLVMTypeRef *types, size_t n) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  return id ? LLVMGetIntrinsicDeclaration(m, id, types, n) : NULL;
}

LLVMValueRef kc_hf_call(LLVMBuilderRef b, LLVMValueRef fn, LLVMValueRef *args, unsigned n) {
  LLVMTypeRef fty = LLVMGlobalGetValueType(fn);
  LLVMValueRef call = LLVMBuildCall2(b, fty, fn, args, n, "");
  LLVMSetInstructionCallConv(call, LLVMGetFunctionCallConv(fn));
  return call;
}

static int calls_match(LLVMValueRef inst, const char *prefix) {
  if (!LLVMIsACallInst(inst)) return 0;
  LLVMValueRef callee = LLVMGetCalledValue(inst);
  if (!LLVMIsAFunction(callee) || !LLVMIsDeclaration(callee)) return 0;
  char base[256];
  kc_hf_base_name(LLVMGetValueName(callee), base, sizeof base);
  return strncmp(base, prefix, strlen(prefix)) == 0;
}

static int push(LLVMValueRef **v, size_t *n, size_t *cap, LLVMValueRef x) {
  if (*n == *cap) {
    size_t c = *cap ? *cap * 2 : 16;
    LLVMValueRef *p = realloc(*v, c * sizeof *p);
    if (!p) return 0;
    *v = p;
    *cap = c;
  }
  (*v)[(*n)++] = x;
  return 1;
}

LLVMValueRef *kc_hf_find_calls(LLVMModuleRef m, LLVMValueRef only_in, const char *prefix,
                               size_t *count) {
  LLVMValueRef *v = NULL;
  size_t n = 0, cap = 0;
  for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f)) {
    if (only_in && f != only_in) continue;
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
      for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i))
        if (calls_match(i, prefix) && !push(&v, &n, &cap, i)) {
          free(v);
          *count = (size_t)-1;
          return NULL;
        }
  }
  *count = n;
  return v;
}

int kc_hf_rewrite_calls(LLVMModuleRef m, const char *prefix, kc_hf_lower_call_fn fn, char **log) {
  size_t n;
  LLVMValueRef *calls = kc_hf_find_calls(m, NULL, prefix, &n);
  if (n == (size_t)-1) return *log = kc_msg("out of memory"), 0;
  LLVMBuilderRef b = LLVMCreateBuilderInContext(LLVMGetModuleContext(m));
  int ok = 1;
  for (size_t i = 0; i < n && ok; i++) {
    LLVMValueRef call = calls[i], a[KC_HF_MAX_OPERANDS];
    char base[256];
    kc_hf_base_name(LLVMGetValueName(LLVMGetCalledValue(call)), base, sizeof base);
    unsigned na = LLVMGetNumArgOperands(call);
    for (unsigned j = 0; j < na && j < KC_HF_MAX_OPERANDS; j++)
      a[j] = LLVMGetOperand(call, j);
    LLVMPositionBuilderBefore(b, call);
    LLVMValueRef r = fn(m, b, call, base, a, na, log);
    ok = r != NULL;
    if (!r || r == call) continue;
    if (LLVMGetTypeKind(LLVMTypeOf(call)) != LLVMVoidTypeKind) LLVMReplaceAllUsesWith(call, r);
    LLVMInstructionEraseFromParent(call);
  }
  LLVMDisposeBuilder(b);
  free(calls);
  return ok;
}

LLVMMetadataRef kc_hf_alias_scope(LLVMContextRef c, const char *domain, const char *scope) {
  LLVMMetadataRef dom_name = LLVMMDStringInContext2(c, domain, strlen(domain));
  LLVMMetadataRef dom = LLVMMDNodeInContext2(c, &dom_name, 1);
  LLVMMetadataRef ops[2] = {LLVMMDStringInContext2(c, scope, strlen(scope)), dom};
  return LLVMMDNodeInContext2(c, ops, 2);
}

unsigned kc_hf_scope_kind(LLVMContextRef c) {
  return LLVMGetMDKindIDInContext(c, "alias.scope", 11);
}

int kc_hf_has_scope(LLVMValueRef i, LLVMValueRef scope, LLVMValueRef *rest, unsigned *nrest) {
  LLVMValueRef list = LLVMGetMetadata(i, kc_hf_scope_kind(LLVMGetTypeContext(LLVMTypeOf(i))));
  unsigned n = list ? LLVMGetMDNodeNumOperands(list) : 0;
  LLVMValueRef ops[KC_HF_MAX_SCOPES];
  if (!n || n > KC_HF_MAX_SCOPES) return 0;
  LLVMGetMDNodeOperands(list, ops);
  int found = 0;
  unsigned kept = 0;
  for (unsigned k = 0; k < n; k++)
    if (ops[k] == scope)
      found = 1;
    else if (rest)
      rest[kept++] = ops[k];
  if (nrest) *nrest = kept;
  return found;
}
