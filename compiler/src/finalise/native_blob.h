/* Native binaries' byte layout, shared by the host and NVPTX finalisers (finalise_*_native.c):
 * a growing output buffer whose failure is sticky (one check at the end), a bounds-checked
 * reader, length-prefixed strings (UINT32_MAX: no string) and kernel argument lists. Private to
 * the compiler library. */
#ifndef KAPI_COMPILER_NATIVE_BLOB_H
#define KAPI_COMPILER_NATIVE_BLOB_H

#include "kapi/compiler.h"

#include <stddef.h>
#include <stdint.h>

typedef struct {
  uint8_t *p;
  size_t n, cap;
  int failed; /* set by the first allocation failure; later puts do nothing */
} kc_blob_out_t;

void kc_blob_put(kc_blob_out_t *o, const void *d, size_t n);
void kc_blob_put_u32(kc_blob_out_t *o, uint32_t v);
void kc_blob_put_str(kc_blob_out_t *o, const char *s); /* s may be NULL */
void kc_blob_put_args(kc_blob_out_t *o, const kc_host_arg_t *args, uint32_t n);

typedef struct {
  const uint8_t *p;
  size_t n, at;
} kc_blob_in_t;

/* Each returns 1, or 0 when the buffer ends first (or, for strings and arguments, on a malformed
 * value or an allocation failure). */
int kc_blob_get(kc_blob_in_t *in, void *d, size_t n);
int kc_blob_get_u32(kc_blob_in_t *in, uint32_t *v);
/* *s: a malloc'ed NUL-terminated copy, or NULL for an absent string. */
int kc_blob_get_str(kc_blob_in_t *in, char **s);
/* *args: malloc'ed, at most max_args entries; *n their number. */
int kc_blob_get_args(kc_blob_in_t *in, uint32_t max_args, kc_host_arg_t **args, uint32_t *n);

#endif
