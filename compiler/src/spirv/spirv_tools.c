/* SPIRV-Tools (static library, C API): validation in the OpenCL 2.0 environment, the one our
 * SPIR-V must satisfy on every device, and disassembly for tests and KAPI_DUMP.
 * One exception: spirv-val's OpenCL environments reject the Int64Atomics capability, which
 * OpenCL devices offer through cl_khr_int64_base_atomics (and kernels need for i64 atomics).
 * Modules declaring it are validated in the universal SPIR-V 1.2 environment, with their
 * capabilities checked against the OpenCL 2.0 set plus Int64Atomics here. */
#include "compile.h"

#include <pthread.h>
#include <spirv-tools/libspirv.h>
#include <stdlib.h>
#include <string.h>

static spv_context spv_ctx, spv_ctx_universal;
static pthread_once_t spv_once = PTHREAD_ONCE_INIT;

/* One context per environment for the process: they hold only immutable grammar tables. */
static void create_context(void) {
  spv_ctx = spvContextCreate(SPV_ENV_OPENCL_2_0);
  spv_ctx_universal = spvContextCreate(SPV_ENV_UNIVERSAL_1_2);
}

enum { SPV_OP_CAPABILITY = 17, SPV_CAP_INT64_ATOMICS = 12 };

/* OpenCL 2.0 full profile capabilities (guaranteed and optional), those of the extensions
 * the translator may use (float atomics; SPV_INTEL_subgroups: 5568-5570, the sub-group
 * shuffles, which a kernel with an i64 atomic was refused for), and Int64Atomics. */
static int opencl_capability(uint32_t cap) {
  static const uint32_t allowed[] = {4,  5,    6,    7,    8,    9,    10,   11,   12,
                                     13, 14,   15,   17,   18,   19,   21,   22,   38,
                                     39, 5568, 5569, 5570, 5612, 5613, 6033, 6034, 0};
  for (int i = 0; allowed[i]; i++)
    if (allowed[i] == cap) return 1;
  return 0;
}

/* 1 if the module declares Int64Atomics; -1 (with *err) if it declares a capability outside
 * the OpenCL set while doing so; 0 otherwise. */
static int scan_capabilities(const uint32_t *w, size_t nw, char **err) {
  int int64_atomics = 0;
  uint32_t other = 0;
  for (size_t i = 5; i < nw;) {
    uint32_t len = w[i] >> 16, op = w[i] & 0xffff;
    if (!len || i + len > nw) break;
    if (op == SPV_OP_CAPABILITY && len == 2) {
      if (w[i + 1] == SPV_CAP_INT64_ATOMICS)
        int64_atomics = 1;
      else if (!opencl_capability(w[i + 1]))
        other = w[i + 1];
    }
    i += len;
  }
  if (int64_atomics && other) {
    kc_set_error(err, "SPIR-V validation failed: capability %u is not available in OpenCL", other);
    return -1;
  }
  return int64_atomics;
}

static kc_status_t check_input(const void *spirv, size_t nbytes, char **err) {
  pthread_once(&spv_once, create_context);
  if (!spv_ctx || !spv_ctx_universal)
    return kc_set_error(err, "cannot create a SPIRV-Tools context"), KC_ERR_SPIRV;
  if (!spirv || nbytes % 4 || nbytes < 20) {
    kc_set_error(err, "SPIR-V must be a non-empty sequence of 32-bit words");
    return spirv ? KC_ERR_SPIRV : KC_ERR_INVALID_ARGUMENT;
  }
  return KC_OK;
}

/* The words, 4-byte aligned whatever the caller's buffer. */
static uint32_t *aligned_words(const void *spirv, size_t nbytes) {
  uint32_t *w = malloc(nbytes);
  if (w) memcpy(w, spirv, nbytes);
  return w;
}

/* Rules of the SPIR-V specification that this SPIRV-Tools leaves unchecked for kernels and the
 * translator relies on (it builds LLVM IR from them unchecked, and LLVM then traps): every
 * index of an access chain is an integer scalar. Found by mutating valid modules. */
enum {
  SPV_OP_TYPE_INT = 21,
  SPV_OP_ACCESS_CHAIN = 65,
  SPV_OP_IN_BOUNDS_ACCESS_CHAIN = 66,
  SPV_OP_PTR_ACCESS_CHAIN = 67,
  SPV_OP_IN_BOUNDS_PTR_ACCESS_CHAIN = 70,
};

typedef struct type_scan {
  uint32_t bound;
  uint32_t *type_of;     /* result id -> its type id */
  unsigned char *is_int; /* id -> an OpTypeInt */
  int checking;          /* second pass */
  uint32_t bad_id, bad_op;
} type_scan_t;

static int access_chain(uint32_t op) {
  return op == SPV_OP_ACCESS_CHAIN || op == SPV_OP_IN_BOUNDS_ACCESS_CHAIN ||
         op == SPV_OP_PTR_ACCESS_CHAIN || op == SPV_OP_IN_BOUNDS_PTR_ACCESS_CHAIN;
}

static spv_result_t scan_instruction(void *user, const spv_parsed_instruction_t *in) {
  type_scan_t *t = user;
  if (!t->checking) {
    if (in->result_id < t->bound) {
      t->type_of[in->result_id] = in->type_id;
      t->is_int[in->result_id] = in->opcode == SPV_OP_TYPE_INT;
    }
    return SPV_SUCCESS;
  }
  if (!access_chain(in->opcode)) return SPV_SUCCESS;
  for (uint16_t k = 3; k < in->num_operands; ++k) { /* type, result, base, then indices */
    uint32_t id = in->words[in->operands[k].offset];
    if (id >= t->bound || !t->is_int[t->type_of[id]]) {
      t->bad_id = id, t->bad_op = in->opcode;
      return SPV_ERROR_INVALID_DATA;
    }
  }
  return SPV_SUCCESS;
}

static kc_status_t check_types(const uint32_t *w, size_t nw, char **err) {
  type_scan_t t = {.bound = w[3]};
  t.type_of = calloc(t.bound ? t.bound : 1, sizeof *t.type_of);
  t.is_int = calloc(t.bound ? t.bound : 1, 1);
  kc_status_t st = t.type_of && t.is_int ? KC_OK : KC_ERR_OUT_OF_MEMORY;
  for (int pass = 0; pass < 2 && st == KC_OK; ++pass) {
    t.checking = pass;
    if (spvBinaryParse(spv_ctx, &t, w, nw, NULL, scan_instruction, NULL) != SPV_SUCCESS) {
      kc_set_error(err,
                   "SPIR-V validation failed: index %%%u of an access chain (opcode %u) is "
                   "not an integer",
                   t.bad_id, t.bad_op);
      st = KC_ERR_SPIRV;
    }
  }
  free(t.type_of);
  free(t.is_int);
  return st;
}

kc_status_t kc_spirv_validate(const void *spirv, size_t nbytes, char **err) {
  kc_status_t st = check_input(spirv, nbytes, err);
  if (st != KC_OK) return st;
  uint32_t *w = aligned_words(spirv, nbytes);
  if (!w) return KC_ERR_OUT_OF_MEMORY;
  int env = scan_capabilities(w, nbytes / 4, err);
  if (env < 0) {
    free(w);
    return KC_ERR_SPIRV;
  }
  spv_diagnostic diag = NULL;
  spv_result_t r = spvValidateBinary(env ? spv_ctx_universal : spv_ctx, w, nbytes / 4, &diag);
  if (r != SPV_SUCCESS) {
    kc_set_error(err, "SPIR-V validation failed: %s", diag && diag->error ? diag->error : "?");
    st = KC_ERR_SPIRV;
  }
  spvDiagnosticDestroy(diag);
  if (st == KC_OK) st = check_types(w, nbytes / 4, err);
  free(w);
  return st;
}

kc_status_t kc_spirv_disassemble(const void *spirv, size_t nbytes, char **text, char **err) {
  if (!text) return KC_ERR_INVALID_ARGUMENT;
  *text = NULL;
  kc_status_t st = check_input(spirv, nbytes, err);
  if (st != KC_OK) return st;
  uint32_t *w = aligned_words(spirv, nbytes);
  if (!w) return KC_ERR_OUT_OF_MEMORY;
  spv_text out = NULL;
  spv_diagnostic diag = NULL;
  uint32_t opts = SPV_BINARY_TO_TEXT_OPTION_FRIENDLY_NAMES | SPV_BINARY_TO_TEXT_OPTION_INDENT;
  spv_result_t r = spvBinaryToText(spv_ctx, w, nbytes / 4, opts, &out, &diag);
  free(w);
  if (r != SPV_SUCCESS) {
    kc_set_error(err, "SPIR-V disassembly failed: %s", diag && diag->error ? diag->error : "?");
    st = KC_ERR_SPIRV;
  } else if (!(*text = malloc(out->length + 1))) {
    st = KC_ERR_OUT_OF_MEMORY;
  } else {
    memcpy(*text, out->str, out->length);
    (*text)[out->length] = '\0';
  }
  spvTextDestroy(out);
  spvDiagnosticDestroy(diag);
  return st;
}
