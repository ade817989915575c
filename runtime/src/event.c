/* Events: pools of host-visible Level Zero events per driver, handed out one by one and
 * recycled. A released event is reused only after it has signalled (the retired list), so a
 * caller may drop an event whose command is still running.
 */
#include "internal.h"

#include <stdlib.h>

/* Creates one more pool of KR_EVENTS_PER_POOL events and puts them on the free list. */
static kr_status_t grow(kr_driver_t *drv, kr_error_t *err) {
  kr_event_block_t *b = calloc(1, sizeof *b);
  kr_event_t *evs = calloc(KR_EVENTS_PER_POOL, sizeof *evs);
  if (!b || !evs) {
    free(b);
    free(evs);
    return kr_fail(err, KR_ERR_OUT_OF_MEMORY, "out of host memory");
  }
  ze_event_pool_desc_t pd = {.stype = ZE_STRUCTURE_TYPE_EVENT_POOL_DESC,
                             .flags = ZE_EVENT_POOL_FLAG_HOST_VISIBLE,
                             .count = KR_EVENTS_PER_POOL};
  ze_result_t r = zeEventPoolCreate(drv->ctx, &pd, 0, NULL, &b->pool);
  if (r) {
    free(b);
    free(evs);
    return kr_ze_fail(err, r, "zeEventPoolCreate", NULL, "driver %s", drv->name);
  }
  b->events = evs;
  b->next = drv->blocks;
  drv->blocks = b;
  for (uint32_t i = 0; i < KR_EVENTS_PER_POOL; i++) {
    ze_event_desc_t ed = {.stype = ZE_STRUCTURE_TYPE_EVENT_DESC,
                          .index = i,
                          .signal = ZE_EVENT_SCOPE_FLAG_HOST,
                          .wait = ZE_EVENT_SCOPE_FLAG_HOST};
    r = zeEventCreate(b->pool, &ed, &evs[i].h);
    if (r) return kr_ze_fail(err, r, "zeEventCreate", NULL, "driver %s", drv->name);
    evs[i].drv = drv;
    evs[i].next = drv->free;
    drv->free = &evs[i];
  }
  return KR_OK;
}

/* Moves retired events that have signalled back to the free list, reset, oldest first.
 * Queues are in order, so pending events mostly mean newer ones are pending too: a pending
 * one goes to the back, and a few of them end the sweep (one that never signals, from a
 * failed command, then costs a query now and then instead of blocking every other). */
static void reclaim(kr_driver_t *drv) {
  for (int pending = 0; drv->retired && pending < 4;) {
    kr_event_t *ev = drv->retired;
    drv->retired = ev->next;
    if (!drv->retired) drv->retired_tail = NULL;
    ev->next = NULL;
    if (zeEventQueryStatus(ev->h) == ZE_RESULT_SUCCESS && zeEventHostReset(ev->h) == 0) {
      ev->next = drv->free;
      drv->free = ev;
      continue;
    }
    pending++;
    if (drv->retired_tail)
      drv->retired_tail->next = ev;
    else
      drv->retired = ev;
    drv->retired_tail = ev;
  }
}

kr_event_t *kr_event_acquire(kr_driver_t *drv, kr_error_t *err) {
  pthread_mutex_lock(&drv->event_lock);
  if (!drv->free) reclaim(drv);
  if (!drv->free && grow(drv, err)) {
    pthread_mutex_unlock(&drv->event_lock);
    return NULL;
  }
  kr_event_t *ev = drv->free;
  drv->free = ev->next;
  pthread_mutex_unlock(&drv->event_lock);
  ev->next = NULL;
  atomic_store_explicit(&ev->refs, 1, memory_order_relaxed);
  return ev;
}

kr_event_t *kr_event_retain(kr_event_t *ev) {
  if (ev) atomic_fetch_add_explicit(&ev->refs, 1, memory_order_relaxed);
  return ev;
}

void kr_event_release(kr_event_t *ev) {
  if (!ev || atomic_fetch_sub_explicit(&ev->refs, 1, memory_order_acq_rel) != 1) return;
  kr_driver_t *drv = ev->drv;
  ev->next = NULL;
  pthread_mutex_lock(&drv->event_lock);
  if (drv->retired_tail)
    drv->retired_tail->next = ev;
  else
    drv->retired = ev;
  drv->retired_tail = ev;
  pthread_mutex_unlock(&drv->event_lock);
}

void kr_event_recycle(kr_event_t *ev) {
  if (atomic_fetch_sub_explicit(&ev->refs, 1, memory_order_acq_rel) != 1) return;
  if (zeEventHostReset(ev->h)) {
    atomic_store(&ev->refs, 1);
    kr_event_release(ev); /* could not reset: let reclaim try later */
    return;
  }
  kr_driver_t *drv = ev->drv;
  pthread_mutex_lock(&drv->event_lock);
  ev->next = drv->free;
  drv->free = ev;
  pthread_mutex_unlock(&drv->event_lock);
}

/* The device an event's failure is reported against: the driver's first device. */
static kr_device_t *event_device(kr_event_t *ev) {
  kr_driver_t *drv = ev->drv;
  return drv->num_devices ? kr_rt.devices[drv->first_device] : NULL;
}

kr_status_t kr_event_wait(kr_event_t *ev, kr_error_t *err) {
  if (!ev) return kr_fail(err, KR_ERR_INVALID_ARGUMENT, "kr_event_wait: NULL event");
  ze_result_t r = zeEventHostSynchronize(ev->h, UINT64_MAX);
  if (r) return kr_ze_fail(err, r, "zeEventHostSynchronize", event_device(ev), NULL);
  return KR_OK;
}

kr_status_t kr_events_wait(uint32_t n, kr_event_t *const *evs, kr_error_t *err) {
  if (n && !evs) return kr_fail(err, KR_ERR_INVALID_ARGUMENT, "kr_events_wait: NULL list");
  for (uint32_t i = 0; i < n; i++) {
    kr_status_t st = kr_event_wait(evs[i], err);
    if (st) return st;
  }
  return KR_OK;
}

int kr_event_is_complete(kr_event_t *ev) {
  if (!ev) return -1;
  ze_result_t r = zeEventQueryStatus(ev->h);
  if (r == ZE_RESULT_SUCCESS) return 1;
  return r == ZE_RESULT_NOT_READY ? 0 : -1;
}

void kr_driver_events_destroy(kr_driver_t *drv) {
  kr_event_block_t *b = drv->blocks;
  while (b) {
    kr_event_block_t *next = b->next;
    for (uint32_t i = 0; i < KR_EVENTS_PER_POOL; i++)
      if (b->events[i].h) zeEventDestroy(b->events[i].h);
    zeEventPoolDestroy(b->pool);
    free(b->events);
    free(b);
    b = next;
  }
  drv->blocks = NULL;
  drv->free = drv->retired = drv->retired_tail = NULL;
}
