/* SPIR-V validation shared by the finalisers. Private to compiler/. Only one translation unit
 * may include spirv-tools/libspirv.h (in C its constants have external linkage). */
#ifndef KAPI_COMPILER_SPIRV_CHECK_H
#define KAPI_COMPILER_SPIRV_CHECK_H

#include "kapi/compiler.h"

/* Validates in the universal SPIR-V 1.2 environment: the OpenCL 2.0 profile forbids
 * Int64Atomics, which 64-bit atomics need and both of our drivers support. On failure returns
 * KC_ERR_SPIRV and *err (kc_free) holds "SPIR-V validation failed: <validator message>". */
kc_status_t kc_spirv_validate_universal(const void *spirv, size_t nbytes, char **err);

#endif
