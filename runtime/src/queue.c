/* Queues: in-order immediate command lists, and the protocol every command follows (signal
 * event, wait list, synchronous wait or event hand-out), so launches, copies and fills share
 * one way of ordering and completing work.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

static kr_queue_t *queue_new(kr_device_t *dev, bool is_default, kr_error_t *err) {
  kr_queue_t *q = calloc(1, sizeof *q);
  if (!q) {
    kr_fail(err, KR_ERR_OUT_OF_MEMORY, "out of host memory");
    return NULL;
  }
  ze_command_queue_desc_t qd = {.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC,
                                .ordinal = dev->compute_ordinal,
                                .mode = ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS,
                                .priority = ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
  ze_result_t r = zeCommandListCreateImmediate(dev->drv->ctx, dev->h, &qd, &q->cl);
  if (r) {
    kr_ze_fail(err, r, "zeCommandListCreateImmediate", dev, NULL);
    free(q);
    return NULL;
  }
  q->dev = dev;
  q->is_default = is_default;
  q->driver_in_order = !strncmp(dev->drv->name, "kapi-", 5);
  pthread_mutex_init(&q->lock, NULL);
  return q;
}

kr_queue_t *kr_device_queue(kr_device_t *dev, kr_error_t *err) {
  if (!dev) {
    kr_fail(err, KR_ERR_INVALID_ARGUMENT, "kr_device_queue: NULL device");
    return NULL;
  }
  pthread_mutex_lock(&dev->lock);
  if (!dev->default_queue) dev->default_queue = queue_new(dev, true, err);
  kr_queue_t *q = dev->default_queue;
  pthread_mutex_unlock(&dev->lock);
  return q;
}

kr_queue_t *kr_queue_create(kr_device_t *dev, kr_error_t *err) {
  if (!dev) {
    kr_fail(err, KR_ERR_INVALID_ARGUMENT, "kr_queue_create: NULL device");
    return NULL;
  }
  return queue_new(dev, false, err);
}

kr_device_t *kr_queue_device(const kr_queue_t *q) {
  return q ? q->dev : NULL;
}

/* Drops held waits whose waiting command has completed (all of them when `all`). */
static void sweep_held(kr_queue_t *q, bool all) {
  kr_held_wait_t **link = &q->held;
  while (*link) {
    kr_held_wait_t *h = *link;
    if (all || kr_event_is_complete(h->waiter) != 0) {
      *link = h->next;
      kr_event_release(h->waiter);
      kr_event_release(h->waited);
      free(h);
    } else {
      link = &h->next;
    }
  }
}

void kr_queue_free(kr_queue_t *q) {
  if (!q) return;
  kr_queue_synchronize(q, NULL);
  sweep_held(q, true);
  kr_event_release(q->last);
  zeCommandListDestroy(q->cl);
  pthread_mutex_destroy(&q->lock);
  free(q);
}

void kr_queue_destroy(kr_queue_t *q) {
  if (q && !q->is_default) kr_queue_free(q);
}

kr_status_t kr_wait_list(kr_queue_t *q, uint32_t nwait, kr_event_t *const *wait,
                         ze_event_handle_t *buf, uint32_t nbuf, ze_event_handle_t **out,
                         uint32_t *n_out, kr_error_t *err) {
  *out = buf;
  *n_out = 0;
  if (nwait == 0) return KR_OK;
  if (!wait) return kr_fail(err, KR_ERR_INVALID_ARGUMENT, "wait list: NULL with %u events", nwait);
  if (nwait + 1 > nbuf) {
    *out = malloc((nwait + 1) * sizeof **out);
    if (!*out) return kr_fail(err, KR_ERR_OUT_OF_MEMORY, "out of host memory");
  }
  for (uint32_t i = 0; i < nwait; i++) {
    kr_event_t *ev = wait[i];
    if (!ev) return kr_fail(err, KR_ERR_INVALID_ARGUMENT, "wait list: event %u is NULL", i);
    if (ev->drv == q->dev->drv) {
      (*out)[(*n_out)++] = ev->h;
    } else {
      kr_status_t st = kr_event_wait(ev, err); /* another driver's event: wait on the host */
      if (st) return st;
    }
  }
  return KR_OK;
}

kr_status_t kr_cmd_begin(kr_cmd_t *c, kr_queue_t *q, uint32_t nwait, kr_event_t *const *wait,
                         kr_error_t *err) {
  c->q = q;
  c->nwait_in = nwait;
  c->wait_in = wait;
  c->waits = c->wbuf;
  c->ev = kr_event_acquire(q->dev->drv, err);
  if (!c->ev) return err ? err->status : KR_ERR_LEVEL_ZERO;
  kr_status_t st = kr_wait_list(q, nwait, wait, c->wbuf, 8, &c->waits, &c->nwaits, err);
  if (st) {
    if (c->waits != c->wbuf) free(c->waits);
    kr_event_recycle(c->ev);
    return st;
  }
  pthread_mutex_lock(&q->lock);
  if (q->held) sweep_held(q, false);
  if (q->last) c->waits[c->nwaits++] = q->last->h; /* in order on any driver */
  return KR_OK;
}

/* Keeps the waited events of an asynchronous command alive until it completes. */
static void hold_waits(kr_cmd_t *c) {
  for (uint32_t i = 0; i < c->nwait_in; i++) {
    if (c->wait_in[i]->drv != c->q->dev->drv) continue;
    kr_held_wait_t *h = malloc(sizeof *h);
    if (!h) continue; /* out of memory: the caller's reference still protects the event */
    h->waiter = kr_event_retain(c->ev);
    h->waited = kr_event_retain(c->wait_in[i]);
    h->next = c->q->held;
    c->q->held = h;
  }
}

kr_status_t kr_cmd_finish(kr_cmd_t *c, kr_status_t st, kr_event_t **out_event, kr_error_t *err) {
  if (!st && out_event) hold_waits(c);
  if (!st && !c->q->driver_in_order) {
    kr_event_release(c->q->last);
    c->q->last = kr_event_retain(c->ev);
  }
  pthread_mutex_unlock(&c->q->lock);
  if (c->waits != c->wbuf) free(c->waits);
  if (st) {
    kr_event_recycle(c->ev); /* never appended */
    return st;
  }
  if (out_event) {
    *out_event = c->ev;
    return KR_OK;
  }
  ze_result_t r = zeEventHostSynchronize(c->ev->h, UINT64_MAX);
  if (r == ZE_RESULT_SUCCESS)
    kr_event_recycle(c->ev);
  else
    kr_event_release(c->ev);
  if (r) return kr_ze_fail(err, r, "zeEventHostSynchronize", c->q->dev, NULL);
  return KR_OK;
}

kr_status_t kr_queue_barrier(kr_queue_t *q, uint32_t nwait, kr_event_t *const *wait,
                             kr_event_t **out_event, kr_error_t *err) {
  if (!q) return kr_fail(err, KR_ERR_INVALID_ARGUMENT, "kr_queue_barrier: NULL queue");
  kr_cmd_t c;
  kr_status_t st = kr_cmd_begin(&c, q, nwait, wait, err);
  if (st) return st;
  ze_result_t r = zeCommandListAppendBarrier(q->cl, c.ev->h, c.nwaits, c.waits);
  if (r) st = kr_ze_fail(err, r, "zeCommandListAppendBarrier", q->dev, NULL);
  return kr_cmd_finish(&c, st, out_event, err);
}

kr_status_t kr_queue_synchronize(kr_queue_t *q, kr_error_t *err) {
  if (!q) return kr_fail(err, KR_ERR_INVALID_ARGUMENT, "kr_queue_synchronize: NULL queue");
  kr_status_t st = kr_queue_barrier(q, 0, NULL, NULL, err);
  if (!st) {
    pthread_mutex_lock(&q->lock);
    sweep_held(q, false);
    pthread_mutex_unlock(&q->lock);
  }
  return st;
}

void *kr_queue_ze_command_list(const kr_queue_t *q) {
  return q ? (void *)q->cl : NULL;
}
