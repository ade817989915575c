/* The arena that owns one KIR module: parsing allocates many small pieces that all die
 * together, so they are carved from large chunks and freed in one sweep. */
#include "kir/kir.h"

#include <stdlib.h>
#include <string.h>

typedef struct kir_chunk {
  struct kir_chunk *next;
  size_t used, size;
  max_align_t data[];
} kir_chunk_t;

struct kir_arena {
  kir_chunk_t *head;
};

kir_arena_t *kir_arena_create(void) {
  return calloc(1, sizeof(kir_arena_t));
}

void kir_arena_destroy(kir_arena_t *a) {
  if (!a) return;
  for (kir_chunk_t *c = a->head, *next; c; c = next) {
    next = c->next;
    free(c);
  }
  free(a);
}

void *kir_alloc(kir_arena_t *a, size_t n) {
  n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
  kir_chunk_t *c = a->head;
  if (!c || c->size - c->used < n) {
    size_t size = n > 65536 ? n : 65536;
    c = malloc(sizeof(kir_chunk_t) + size);
    if (!c) return NULL;
    c->used = 0;
    c->size = size;
    c->next = a->head;
    a->head = c;
  }
  void *p = (char *)c->data + c->used;
  c->used += n;
  memset(p, 0, n);
  return p;
}

char *kir_strndup(kir_arena_t *a, const char *s, size_t n) {
  char *p = kir_alloc(a, n + 1);
  if (p) memcpy(p, s, n);
  return p;
}

void *kir_push(kir_arena_t *a, void *data_ptr, int *len, int *cap, size_t elt) {
  char **data = data_ptr;
  if (*len == *cap) {
    int ncap = *cap ? *cap * 2 : 8;
    char *nd = kir_alloc(a, (size_t)ncap * elt);
    if (!nd) return NULL;
    if (*len) memcpy(nd, *data, (size_t)*len * elt);
    *data = nd;
    *cap = ncap;
  }
  return *data + (size_t)(*len)++ * elt;
}
