/* Control flow and calls: branches to the lowered KIR blocks, returns, and calls to device
 * functions with arrays expanded to pointer + extents + strides (the device-function ABI). */
#include "lower/lower.h"

#include <stdlib.h>

int kc_lower_control(kc_lower_t *L, const kir_inst_t *in) {
  switch (in->op) {
  case KIR_OP_BR:
    LLVMBuildBr(L->b, L->blocks[in->targets[0]]);
    break;
  case KIR_OP_CBR:
    LLVMBuildCondBr(L->b, kc_arg(L, in, 0), L->blocks[in->targets[0]], L->blocks[in->targets[1]]);
    break;
  case KIR_OP_RET:
    if (in->nargs)
      LLVMBuildRet(L->b, kc_arg(L, in, 0));
    else
      LLVMBuildRetVoid(L->b);
    break;
  default:
    LLVMBuildUnreachable(L->b);
    break;
  }
  return 0;
}

int kc_lower_call(kc_lower_t *L, const kir_inst_t *in) {
  LLVMValueRef *args = malloc(sizeof *args * (KC_MAX_PARAM_PARTS * (size_t)in->nargs + 2));
  if (!args) return kir_inst_error(L->d, L->f, in, "out of memory");
  unsigned n = 0;
  for (int k = 0; k < in->nargs; k++) {
    kir_type_t t = kc_arg_type(L, in, k);
    if (t.kind == KIR_ARRAY)
      n += kc_array_call_args(L, kc_arg_val(L, in, k), t, args + n);
    else
      args[n++] = kc_arg(L, in, k);
  }
  int raises = L->may_raise[in->callee];
  if (raises) args[n++] = L->status;
  LLVMValueRef r = kc_call(L, L->fns[in->callee], args, n);
  free(args);
  kc_set_result(L, in, r);
  if (raises) kc_after_raising_call(L);
  return 0;
}
