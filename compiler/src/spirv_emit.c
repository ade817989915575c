/* SPIR-V emission: the translator (translator.cpp) writes the module, SPIRV-Tools validates it
 * in the OpenCL environment, and a scan rejects Import linkage, which spirv-val accepts but no
 * driver can link (TOOLCHAIN.md: the unmangled-builtin trap). */
#include "compile.h"
#include "translator.h"

#include <llvm-c/Analysis.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum {
  SPV_MAGIC = 0x07230203,
  SPV_OP_NAME = 5,
  SPV_OP_FUNCTION = 54,
  SPV_OP_DECORATE = 71,
  SPV_DEC_LINKAGE = 41
};
enum { SPV_LINKAGE_IMPORT = 1 };

/* Whether id is a function (builtin variables are imported by design; functions must not be). */
static int is_function(const uint32_t *w, size_t nw, uint32_t id) {
  for (size_t i = 5; i < nw;) {
    uint32_t len = w[i] >> 16, op = w[i] & 0xffff;
    if (!len || i + len > nw) break;
    if (op == SPV_OP_FUNCTION && len >= 3 && w[i + 2] == id) return 1;
    i += len;
  }
  return 0;
}

/* The name the module gives an id (OpName), for the message. */
static const char *id_name(const uint32_t *w, size_t nw, uint32_t id) {
  for (size_t i = 5; i < nw;) {
    uint32_t len = w[i] >> 16, op = w[i] & 0xffff;
    if (!len || i + len > nw) break;
    if (op == SPV_OP_NAME && len >= 3 && w[i + 1] == id) return (const char *)&w[i + 2];
    i += len;
  }
  return "?";
}

kc_status_t kc_spirv_check_no_imports(const void *spirv, size_t nbytes, char **err) {
  size_t nw = nbytes / 4;
  uint32_t *w = malloc(nbytes + 4);
  if (!w) return KC_ERR_OUT_OF_MEMORY;
  memcpy(w, spirv, nbytes);
  w[nw] = 0; /* a name running to the end still terminates */
  kc_status_t st = KC_OK;
  if (nw < 5 || w[0] != SPV_MAGIC) {
    kc_set_error(err, "not a SPIR-V module");
    st = KC_ERR_SPIRV;
  }
  for (size_t i = 5; st == KC_OK && i < nw;) {
    uint32_t len = w[i] >> 16, op = w[i] & 0xffff;
    if (!len || i + len > nw) break;
    if (op == SPV_OP_DECORATE && len >= 4 && w[i + 2] == SPV_DEC_LINKAGE &&
        w[i + len - 1] == SPV_LINKAGE_IMPORT && is_function(w, nw, w[i + 1])) {
      kc_set_error(err, "SPIR-V imports '%s', which no driver provides (a compiler bug)",
                   id_name(w, nw, w[i + 1]));
      st = KC_ERR_SPIRV;
    }
    i += len;
  }
  free(w);
  return st;
}

kc_status_t kc_emit_spirv(LLVMModuleRef mod, void **spirv, size_t *nbytes, char **err) {
  char *msg = NULL;
  kc_order_blocks(mod);
  kc_status_t legal = kc_check_spirv_types(mod, err);
  if (legal != KC_OK) return legal;
  /* The translator asserts (exits the process) on IR that does not verify: a bug in the
   * rewrites above (or in kc_spirv_prepare) must be an error, not a dead process. */
  if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg)) {
    kc_set_error(err, "internal: the module prepared for SPIR-V is invalid LLVM IR: %s", msg);
    LLVMDisposeMessage(msg);
    return KC_ERR_LLVM;
  }
  LLVMDisposeMessage(msg);
  msg = NULL;
  if (!kc_tr_write_spirv(mod, spirv, nbytes, &msg)) {
    kc_set_error(err, "%s", msg ? msg : "SPIR-V emission failed");
    free(msg);
    return KC_ERR_SPIRV;
  }
  kc_status_t st = kc_spirv_validate(*spirv, *nbytes, err);
  if (st == KC_OK) st = kc_spirv_check_no_imports(*spirv, *nbytes, err);
  if (st != KC_OK) {
    free(*spirv);
    *spirv = NULL;
  }
  return st;
}
