/* SPIR-V emission: the translator (translator.cpp) writes the module, SPIRV-Tools validates it
 * in the OpenCL environment, and a scan rejects Import linkage, which spirv-val accepts but no
 * driver can link (TOOLCHAIN.md: the unmangled-builtin trap). */
#include "compile.h"
#include "lower/lower.h"
#include "spirv/translator.h"

#include <llvm-c/Analysis.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
  SPV_MAGIC = 0x07230203,
  SPV_OP_SOURCE_EXTENSION = 4,
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

/* ---- kernel attributes as source extensions --------------------------------------------------
 * KIR's max_registers reaches the finalisers as `OpSourceExtension "kapi.max_registers N"`, and
 * a kernel compiled with fastmath=True (KIR `fastmath fast`) carries
 * `OpSourceExtension "kapi.flush_denormals"` (numba-cuda's fastmath flushes float32 denormals
 * to zero; SPIR-V 1.0 has no execution mode for it: DenormFlushToZero is
 * SPV_KHR_float_controls, SPIR-V 1.4). A debug instruction of SPIR-V 1.0 (the modules are 1.0,
 * and no execution mode of it caps registers; SPV_INTEL_maximum_registers is newer than our
 * SPIRV-Tools). It names an extension of the source language, which the options are; drivers
 * that do not know it ignore it, and a module holds one kernel, so the module-level string is
 * the kernel's. Being in the SPIR-V, it is part of every key the runtime and the disk cache
 * derive from the module. */
#define MAXREG_PREFIX "kapi.max_registers "
#define FLUSH_DENORMALS "kapi.flush_denormals"

static int is_module_preamble(uint32_t op) {
  return op == 17 /* OpCapability */ || op == 10 /* OpExtension */ ||
         op == 11 /* OpExtInstImport */ || op == 14 /* OpMemoryModel */ ||
         op == 15 /* OpEntryPoint */ || op == 16 /* OpExecutionMode */;
}

/* The value of the module's string attribute `name` (a kernel's), or NULL; its length in len. */
static const char *kernel_attr(LLVMModuleRef mod, const char *name, unsigned *len) {
  for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f)) {
    LLVMAttributeRef a =
        LLVMGetStringAttributeAtIndex(f, LLVMAttributeFunctionIndex, name, (unsigned)strlen(name));
    if (a) return LLVMGetStringAttributeValue(a, len);
  }
  return NULL;
}

/* The module's kernel's max_registers attribute, 0 when it has none. */
static int kernel_max_registers(LLVMModuleRef mod) {
  unsigned len;
  const char *v = kernel_attr(mod, KC_MAX_REGISTERS_ATTR, &len);
  if (!v) return 0;
  char buf[16] = {0};
  memcpy(buf, v, len < sizeof buf - 1 ? len : sizeof buf - 1);
  return atoi(buf);
}

/* Inserts `OpSourceExtension text` at the start of the debug section (after the execution
 * modes). */
static kc_status_t add_source_extension(void **spirv, size_t *nbytes, const char *text) {
  size_t len = strlen(text);
  uint32_t sw = (uint32_t)len / 4 + 1; /* the string's words, NUL included */
  const uint32_t *w = *spirv;
  size_t nw = *nbytes / 4, at = 5;
  while (at < nw && is_module_preamble(w[at] & 0xffff) && (w[at] >> 16))
    at += w[at] >> 16;
  uint32_t *out = calloc(nw + 1 + sw, 4);
  if (!out) return KC_ERR_OUT_OF_MEMORY;
  memcpy(out, w, at * 4);
  out[at] = ((1 + sw) << 16) | SPV_OP_SOURCE_EXTENSION;
  memcpy(&out[at + 1], text, len);
  memcpy(&out[at + 1 + sw], &w[at], (nw - at) * 4);
  free(*spirv);
  *spirv = out;
  *nbytes = (nw + 1 + sw) * 4;
  return KC_OK;
}

/* The first OpSourceExtension string that starts with prefix, or NULL. */
static const char *find_source_extension(const uint32_t *w, size_t nw, const char *prefix) {
  size_t plen = strlen(prefix);
  for (size_t i = 5; i < nw;) {
    uint32_t len = w[i] >> 16, op = w[i] & 0xffff;
    if (!len || i + len > nw) break;
    size_t room = (len - 1) * 4;
    const char *s = (const char *)&w[i + 1];
    if (op == SPV_OP_SOURCE_EXTENSION && room >= plen + 1 && memchr(s, 0, room) &&
        strncmp(s, prefix, plen) == 0)
      return s;
    i += len;
  }
  return NULL;
}

int kc_spirv_max_registers(const uint32_t *w, size_t nw) {
  const char *s = find_source_extension(w, nw, MAXREG_PREFIX);
  if (!s) return 0;
  int v = atoi(s + sizeof MAXREG_PREFIX - 1); /* a module not made by us may say anything */
  return v >= KIR_MIN_REGISTERS && v <= KIR_MAX_REGISTERS ? v : 0;
}

int kc_spirv_flushes_denormals(const uint32_t *w, size_t nw) {
  const char *s = find_source_extension(w, nw, FLUSH_DENORMALS);
  return s && !strcmp(s, FLUSH_DENORMALS);
}

/* The kernel attributes the SPIR-V carries as source extensions. */
static kc_status_t add_kernel_attributes(LLVMModuleRef mod, void **spirv, size_t *nbytes) {
  kc_status_t st = KC_OK;
  int maxreg = kernel_max_registers(mod);
  if (maxreg) {
    char text[48];
    snprintf(text, sizeof text, MAXREG_PREFIX "%d", maxreg);
    st = add_source_extension(spirv, nbytes, text);
  }
  unsigned len;
  if (st == KC_OK && kernel_attr(mod, KC_FLUSH_DENORMALS_ATTR, &len))
    st = add_source_extension(spirv, nbytes, FLUSH_DENORMALS);
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
  kc_status_t st = add_kernel_attributes(mod, spirv, nbytes);
  if (st == KC_OK) st = kc_spirv_validate(*spirv, *nbytes, err);
  if (st == KC_OK) st = kc_spirv_check_no_imports(*spirv, *nbytes, err);
  if (st != KC_OK) {
    free(*spirv);
    *spirv = NULL;
  }
  return st;
}
