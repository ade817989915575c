/* Native binaries' byte layout (native_blob.h): writer, bounds-checked reader, strings and
 * kernel argument lists, for both finalisers' kernel tables. */
#include "finalise/native_blob.h"

#include <stdlib.h>
#include <string.h>

void kc_blob_put(kc_blob_out_t *o, const void *d, size_t n) {
  if (o->failed) return;
  if (o->n + n > o->cap) {
    size_t cap = (o->cap ? o->cap * 2 : 4096) + n;
    uint8_t *p = realloc(o->p, cap);
    if (!p) {
      o->failed = 1;
      return;
    }
    o->p = p, o->cap = cap;
  }
  memcpy(o->p + o->n, d, n);
  o->n += n;
}

void kc_blob_put_u32(kc_blob_out_t *o, uint32_t v) {
  kc_blob_put(o, &v, 4);
}

void kc_blob_put_str(kc_blob_out_t *o, const char *s) {
  uint32_t n = s ? (uint32_t)strlen(s) : UINT32_MAX;
  kc_blob_put_u32(o, n);
  if (s) kc_blob_put(o, s, n);
}

void kc_blob_put_args(kc_blob_out_t *o, const kc_host_arg_t *args, uint32_t n) {
  kc_blob_put_u32(o, n);
  for (uint32_t a = 0; a < n; a++) {
    kc_blob_put_u32(o, (uint32_t)args[a].kind);
    kc_blob_put_u32(o, args[a].size);
  }
}

int kc_blob_get(kc_blob_in_t *in, void *d, size_t n) {
  if (n > in->n - in->at) return 0;
  memcpy(d, in->p + in->at, n);
  in->at += n;
  return 1;
}

int kc_blob_get_u32(kc_blob_in_t *in, uint32_t *v) {
  return kc_blob_get(in, v, 4);
}

int kc_blob_get_str(kc_blob_in_t *in, char **s) {
  uint32_t n;
  *s = NULL;
  if (!kc_blob_get_u32(in, &n)) return 0;
  if (n == UINT32_MAX) return 1;
  if (n > in->n - in->at || !(*s = malloc((size_t)n + 1))) return 0;
  memcpy(*s, in->p + in->at, n);
  (*s)[n] = 0;
  in->at += n;
  return 1;
}

int kc_blob_get_args(kc_blob_in_t *in, uint32_t max_args, kc_host_arg_t **args, uint32_t *n) {
  *args = NULL;
  if (!kc_blob_get_u32(in, n) || *n > max_args) return 0;
  kc_host_arg_t *a = calloc(*n ? *n : 1, sizeof *a);
  if (!a) return 0;
  *args = a;
  for (uint32_t i = 0; i < *n; i++) {
    uint32_t kind;
    if (!kc_blob_get_u32(in, &kind) || kind > KC_ARG_LOCAL || !kc_blob_get_u32(in, &a[i].size))
      return 0;
    a[i].kind = (kc_arg_kind_t)kind;
  }
  return 1;
}
