/* A sorted array of disjoint address ranges with binary search: the USM allocation registry
 * behind zeMemGetAllocProperties / zeMemGetAddressRange. Look-ups take a mutex; allocation
 * and look-up are not on the kernel-launch path. */
#include "zed.h"

#include <stdlib.h>
#include <string.h>

void zed_range_map_init(zed_range_map_t *m) {
  pthread_mutex_init(&m->lock, NULL);
  m->items = NULL;
  m->count = m->capacity = 0;
}

void zed_range_map_fini(zed_range_map_t *m) {
  free(m->items);
  m->items = NULL;
  m->count = m->capacity = 0;
  pthread_mutex_destroy(&m->lock);
}

/* Index of the first range whose base is greater than addr. */
static size_t upper_bound(const zed_range_map_t *m, uintptr_t addr) {
  size_t lo = 0, hi = m->count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (m->items[mid].base <= addr)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

bool zed_range_map_insert(zed_range_map_t *m, uintptr_t base, size_t size, void *value) {
  pthread_mutex_lock(&m->lock);
  bool ok = true;
  if (m->count == m->capacity) {
    size_t cap = m->capacity ? 2 * m->capacity : 16;
    zed_range_t *items = realloc(m->items, cap * sizeof(*items));
    if (items) {
      m->items = items;
      m->capacity = cap;
    } else {
      ok = false;
    }
  }
  if (ok) {
    size_t i = upper_bound(m, base);
    memmove(&m->items[i + 1], &m->items[i], (m->count - i) * sizeof(*m->items));
    m->items[i] = (zed_range_t){base, size, value};
    m->count++;
  }
  pthread_mutex_unlock(&m->lock);
  return ok;
}

bool zed_range_map_remove(zed_range_map_t *m, uintptr_t base, zed_range_t *out) {
  pthread_mutex_lock(&m->lock);
  size_t i = upper_bound(m, base);
  bool found = i > 0 && m->items[i - 1].base == base;
  if (found) {
    if (out) *out = m->items[i - 1];
    memmove(&m->items[i - 1], &m->items[i], (m->count - i) * sizeof(*m->items));
    m->count--;
  }
  pthread_mutex_unlock(&m->lock);
  return found;
}

bool zed_range_map_find(zed_range_map_t *m, uintptr_t addr, zed_range_t *out) {
  pthread_mutex_lock(&m->lock);
  size_t i = upper_bound(m, addr);
  bool found = false;
  if (i > 0) {
    const zed_range_t *r = &m->items[i - 1];
    found = addr == r->base || addr - r->base < r->size;
    if (found && out) *out = *r;
  }
  pthread_mutex_unlock(&m->lock);
  return found;
}

void zed_range_map_drain(zed_range_map_t *m, void (*fn)(const zed_range_t *r, void *arg),
                         void *arg) {
  pthread_mutex_lock(&m->lock);
  for (size_t i = 0; i < m->count; i++)
    fn(&m->items[i], arg);
  m->count = 0;
  pthread_mutex_unlock(&m->lock);
}
