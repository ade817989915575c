/* Host finaliser: sub-group builtins. On the CPU a sub-group is one work-item (the driver
 * reports sub-group size 1), so a shuffle reads the work-item's own value, a reduction or an
 * inclusive scan is the value itself, an exclusive scan is the operation's identity, and a
 * vote is the predicate. Work-group collectives never get here: the forward compiler builds
 * them from local memory and barriers (lower_group.c).
 */
#include "finalise/host/finalise_host.h"

#include <math.h>
#include <string.h>

enum { SCOPE_SUBGROUP = 3, GROUP_EXCLUSIVE_SCAN = 2 };

/* Identity of OpGroup<op> on values of type t: 0 for sums, the type's top (bottom) for
 * minima (maxima). NULL for an op this does not know. */
static LLVMValueRef identity(const char *op, LLVMTypeRef t) {
  int fl = LLVMGetTypeKind(t) != LLVMIntegerTypeKind;
  if (!strcmp(op, "IAdd") || !strcmp(op, "FAdd")) return LLVMConstNull(t);
  if (fl && (!strcmp(op, "FMin") || !strcmp(op, "FMax")))
    return LLVMConstReal(t, op[1] == 'M' && op[2] == 'i' ? INFINITY : -INFINITY);
  if (fl) return NULL;
  unsigned bits = LLVMGetIntTypeWidth(t);
  unsigned long long all = bits >= 64 ? ~0ull : (1ull << bits) - 1, sign = 1ull << (bits - 1);
  if (!strcmp(op, "SMin")) return LLVMConstInt(t, sign - 1, 0);
  if (!strcmp(op, "SMax")) return LLVMConstInt(t, sign, 0);
  if (!strcmp(op, "UMin")) return LLVMConstInt(t, all, 0);
  if (!strcmp(op, "UMax")) return LLVMConstNull(t);
  return NULL;
}

static int is_const(LLVMValueRef v, unsigned long long want) {
  return LLVMIsAConstantInt(v) && LLVMConstIntGetZExtValue(v) == want;
}

static LLVMValueRef lower_call(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef call,
                               const char *base, LLVMValueRef *a, unsigned n, char **log) {
  (void)m;
  (void)b;
  const char *op = base + strlen("__spirv_");
  if (!strncmp(op, "SubgroupShuffle", 15) && n >= 2) return a[0];
  if (!strncmp(op, "Group", 5) && n >= 2 && is_const(a[0], SCOPE_SUBGROUP)) {
    op += 5;
    if ((!strcmp(op, "Any") || !strcmp(op, "All")) && n == 2) return a[1];
    LLVMValueRef id = n == 3 ? identity(op, LLVMTypeOf(call)) : NULL;
    if (id && LLVMIsAConstantInt(a[1])) return is_const(a[1], GROUP_EXCLUSIVE_SCAN) ? id : a[2];
  }
  *log = kc_msg("SPIR-V builtin %s is not supported by the CPU driver (sub-groups of one "
                "work-item; work-group collectives must come as local memory and barriers)",
                base);
  return NULL;
}

int kc_hf_lower_sub_groups(LLVMModuleRef m, char **log) {
  return kc_hf_rewrite_calls(m, "__spirv_SubgroupShuffle", lower_call, log) &&
         kc_hf_rewrite_calls(m, "__spirv_Group", lower_call, log);
}
