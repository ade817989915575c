/* Events and fences on CUDA events. A Level Zero event signalled by a command is a CUDA event
 * recorded on the stream, lazily: cuEventRecord costs about as much host time as a launch, and
 * most signals (one per runtime command) are only ever answered by "the stream is idle". One
 * signalled from the host only sets a flag (CUDA events cannot be signalled by the host), which
 * host waits see and device waits treat as already signalled. A CUDA event belongs to the context
 * it was made in and can only be recorded on that context's streams, while a Level Zero event
 * (from a pool of the driver's context) may be signalled on any device's queue: each Level Zero
 * event holds one CUDA event per device, made on its first record there. Waits need no such
 * care: cuStreamWaitEvent takes an event of another device's context.
 */
#include "cuda_driver.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

/* Guards every queue's deferred list and the deferred events' fields (rarely contended). */
static pthread_mutex_t deferred_lock = PTHREAD_MUTEX_INITIALIZER;

static void unlink_locked(cuda_event_t *e) {
  cuda_queue_t *q = e->queue;
  if (e->dprev)
    e->dprev->dnext = e->dnext;
  else
    q->deferred = e->dnext;
  if (e->dnext)
    e->dnext->dprev = e->dprev;
  else
    q->deferred_tail = e->dprev;
  e->dprev = e->dnext = NULL;
  e->queue = NULL;
}

void cuda_event_set_state(cuda_event_t *e, int state) {
  pthread_mutex_lock(&deferred_lock);
  if (e->state == CUDA_EV_DEFERRED) unlink_locked(e);
  e->state = state;
  pthread_mutex_unlock(&deferred_lock);
}

/* The CUDA event of e for device d, made in d's context on first use; d's context must be
 * current. */
static ze_result_t event_on(cuda_event_t *e, cuda_device_t *d, CUevent *out) {
  CUevent *slot = &e->per_device[d->index];
  if (!*slot) {
    ze_result_t r = cuda_to_ze(cuda.cuEventCreate(slot, e->cu_flags));
    if (r != ZE_RESULT_SUCCESS) {
      *slot = NULL;
      return r;
    }
  }
  *out = *slot;
  return ZE_RESULT_SUCCESS;
}

/* Records e on q's stream (q's device context current). */
static ze_result_t record(cuda_event_t *e, cuda_queue_t *q) {
  CUevent ev;
  ze_result_t r = event_on(e, q->device, &ev);
  if (r == ZE_RESULT_SUCCESS) r = cuda_to_ze(cuda.cuEventRecord(ev, q->stream));
  if (r == ZE_RESULT_SUCCESS) {
    e->ev = ev;
    e->ev_device = q->device;
    e->stream = q->stream;
  }
  return r;
}

/* Host waits and queries on a recorded event run in its device's context. */
static CUevent recorded_event(cuda_event_t *e) {
  if (e->ev_device) cuda_use(e->ev_device);
  return e->ev;
}

/* The signal of a command just run on q: numbered, and put at the end of q's deferred list. */
ze_result_t cuda_event_signal(cuda_event_t *e, cuda_queue_t *q) {
  if (e->timing) {
    pthread_mutex_lock(&deferred_lock);
    ze_result_t r = record(e, q);
    pthread_mutex_unlock(&deferred_lock);
    if (r == ZE_RESULT_SUCCESS) cuda_event_set_state(e, CUDA_EV_RECORDED);
    return r;
  }
  pthread_mutex_lock(&deferred_lock);
  if (e->state == CUDA_EV_DEFERRED) unlink_locked(e);
  e->queue = q;
  e->seq = ++q->submitted;
  e->dprev = q->deferred_tail;
  e->dnext = NULL;
  if (q->deferred_tail)
    q->deferred_tail->dnext = e;
  else
    q->deferred = e;
  q->deferred_tail = e;
  e->state = CUDA_EV_DEFERRED;
  pthread_mutex_unlock(&deferred_lock);
  return ZE_RESULT_SUCCESS;
}

/* Recording later than the command is conservative: the stream is in order, so the event then
 * completes after the command (and whatever followed it), never before. The event's queue may
 * be another device's than the caller's: the caller's current context is restored after. */
ze_result_t cuda_event_materialise(cuda_event_t *e) {
  ze_result_t r = ZE_RESULT_SUCCESS;
  CUcontext prev = NULL;
  int switched = 0; /* one read of the current context, a switch (and back) only if needed */
  cuda.cuCtxGetCurrent(&prev);
  pthread_mutex_lock(&deferred_lock);
  if (e->state == CUDA_EV_DEFERRED) {
    cuda_queue_t *q = e->queue;
    if (prev != q->device->ctx) {
      r = cuda_to_ze(cuda.cuCtxSetCurrent(q->device->ctx));
      switched = 1;
    }
    if (r == ZE_RESULT_SUCCESS) r = record(e, q);
    if (r == ZE_RESULT_SUCCESS) {
      unlink_locked(e);
      e->state = CUDA_EV_RECORDED;
    }
  }
  pthread_mutex_unlock(&deferred_lock);
  if (switched && prev) cuda.cuCtxSetCurrent(prev);
  return r;
}

void cuda_queue_completed(cuda_queue_t *q, uint64_t seq) {
  pthread_mutex_lock(&deferred_lock);
  while (q->deferred && q->deferred->seq <= seq) {
    cuda_event_t *e = q->deferred;
    unlink_locked(e);
    e->state = CUDA_EV_HOST_SIGNALED;
  }
  pthread_mutex_unlock(&deferred_lock);
}

uint64_t cuda_queue_submitted(cuda_queue_t *q) {
  pthread_mutex_lock(&deferred_lock);
  uint64_t n = q->submitted;
  pthread_mutex_unlock(&deferred_lock);
  return n;
}

/* A deferred event's queue and number, or 0 when it is no longer deferred. */
static int deferred_at(cuda_event_t *e, cuda_queue_t **q, uint64_t *seq, uint64_t *latest) {
  pthread_mutex_lock(&deferred_lock);
  int d = e->state == CUDA_EV_DEFERRED;
  if (d) {
    *q = e->queue;
    *seq = e->seq;
    *latest = e->queue->submitted;
  }
  pthread_mutex_unlock(&deferred_lock);
  return d;
}

/* Answers a query from the stream when it is idle (completing every deferred event of the
 * queue at once); otherwise records the event so that the answer is exact. */
static ze_result_t deferred_query(cuda_event_t *e) {
  cuda_queue_t *q;
  uint64_t seq, latest;
  if (!deferred_at(e, &q, &seq, &latest)) return ZE_RESULT_ERROR_NOT_AVAILABLE;
  ze_result_t r = cuda_use(q->device);
  if (r == ZE_RESULT_SUCCESS) r = cuda_to_ze(cuda.cuStreamQuery(q->stream));
  if (r == ZE_RESULT_SUCCESS) {
    cuda_queue_completed(q, latest);
    return r;
  }
  if (r != ZE_RESULT_NOT_READY) return r;
  r = cuda_event_materialise(e);
  return r != ZE_RESULT_SUCCESS ? r : ZE_RESULT_ERROR_NOT_AVAILABLE;
}

/* An unbounded wait: the event, recorded now (cuStreamSynchronize measured slower on the H200
 * than a record and cuEventSynchronize). The record covers every command the queue had run when
 * the wait began, so all of their deferred events complete with it: a wait_all over many events
 * costs one record. */
static ze_result_t deferred_wait(cuda_event_t *e) {
  cuda_queue_t *q;
  uint64_t seq, latest;
  if (!deferred_at(e, &q, &seq, &latest)) return ZE_RESULT_ERROR_NOT_AVAILABLE;
  ze_result_t r = cuda_event_materialise(e);
  if (r == ZE_RESULT_SUCCESS && e->state == CUDA_EV_RECORDED) {
    r = cuda_to_ze(cuda.cuEventSynchronize(recorded_event(e)));
    if (r == ZE_RESULT_SUCCESS) cuda_queue_completed(q, latest);
    return r;
  }
  return r != ZE_RESULT_SUCCESS ? r : ZE_RESULT_ERROR_NOT_AVAILABLE;
}

ze_result_t cuda_event_pool_create(ze_context_handle_t c, const ze_event_pool_desc_t *desc,
                                   uint32_t ndev, ze_device_handle_t *devs,
                                   ze_event_pool_handle_t *out) {
  ZED_CHECK(c, ZED_KIND_CONTEXT);
  ZED_CHECK_PTR(desc);
  ZED_CHECK_PTR(out);
  (void)ndev;
  (void)devs;
  cuda_event_pool_t *p = calloc(1, sizeof *p);
  if (!p) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  p->count = desc->count;
  p->cu_flags = (desc->flags & ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP) ? CU_EVENT_DEFAULT
                                                                    : CU_EVENT_DISABLE_TIMING;
  zed_object_init(&p->obj, ZED_KIND_EVENT_POOL);
  *out = (ze_event_pool_handle_t)p;
  return ZE_RESULT_SUCCESS;
}

ze_result_t cuda_event_pool_destroy(ze_event_pool_handle_t h) {
  ZED_CHECK(h, ZED_KIND_EVENT_POOL);
  zed_object_retire((zed_object_t *)h);
  free(h);
  return ZE_RESULT_SUCCESS;
}

ze_result_t cuda_event_create(ze_event_pool_handle_t ph, const ze_event_desc_t *desc,
                              ze_event_handle_t *out) {
  ZED_CHECK(ph, ZED_KIND_EVENT_POOL);
  ZED_CHECK_PTR(desc);
  ZED_CHECK_PTR(out);
  cuda_event_pool_t *p = (cuda_event_pool_t *)ph;
  if (desc->index >= p->count) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  cuda_driver_t *drv = cuda_driver();
  if (!drv) return ZE_RESULT_ERROR_UNINITIALIZED;
  /* No CUDA event yet: it is made in the context of the device that first records it. */
  cuda_event_t *e = calloc(1, sizeof *e);
  CUevent *per_device = calloc(drv->count, sizeof *per_device);
  if (!e || !per_device) {
    free(e);
    free(per_device);
    return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  }
  e->per_device = per_device;
  e->cu_flags = p->cu_flags;
  e->timing = p->cu_flags == CU_EVENT_DEFAULT;
  zed_object_init(&e->obj, ZED_KIND_EVENT);
  *out = (ze_event_handle_t)e;
  return ZE_RESULT_SUCCESS;
}

ze_result_t cuda_event_destroy(ze_event_handle_t h) {
  ZED_CHECK(h, ZED_KIND_EVENT);
  cuda_event_t *e = (cuda_event_t *)h;
  cuda_event_set_state(e, CUDA_EV_RESET);
  zed_object_retire(&e->obj);
  cuda_driver_t *drv = cuda_driver();
  for (uint32_t i = 0; drv && i < drv->count; ++i)
    if (e->per_device[i]) cuda.cuEventDestroy(e->per_device[i]);
  free(e->per_device);
  free(e);
  return ZE_RESULT_SUCCESS;
}

ze_result_t cuda_event_host_signal(ze_event_handle_t h) {
  ZED_CHECK(h, ZED_KIND_EVENT);
  cuda_event_set_state((cuda_event_t *)h, CUDA_EV_HOST_SIGNALED);
  return ZE_RESULT_SUCCESS;
}

ze_result_t cuda_event_host_reset(ze_event_handle_t h) {
  ZED_CHECK(h, ZED_KIND_EVENT);
  cuda_event_set_state((cuda_event_t *)h, CUDA_EV_RESET);
  return ZE_RESULT_SUCCESS;
}

ze_result_t cuda_event_query_status(ze_event_handle_t h) {
  ZED_CHECK(h, ZED_KIND_EVENT);
  cuda_event_t *e = (cuda_event_t *)h;
  if (e->state == CUDA_EV_DEFERRED) {
    ze_result_t r = deferred_query(e);
    if (r != ZE_RESULT_ERROR_NOT_AVAILABLE) return r;
  }
  int st = e->state;
  if (st == CUDA_EV_HOST_SIGNALED) return ZE_RESULT_SUCCESS;
  if (st == CUDA_EV_RESET) return ZE_RESULT_NOT_READY;
  return cuda_to_ze(cuda.cuEventQuery(recorded_event(e)));
}

static void nap(void) {
  struct timespec ts = {0, 50000};
  nanosleep(&ts, NULL);
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A recorded event blocks in cuEventSynchronize when the wait is unbounded; otherwise (and for
 * host signals, which no CUDA call can wait for) the state is polled with short sleeps. */
ze_result_t cuda_event_host_synchronize(ze_event_handle_t h, uint64_t timeout) {
  ZED_CHECK(h, ZED_KIND_EVENT);
  cuda_event_t *e = (cuda_event_t *)h;
  uint64_t start = now_ns();
  for (;;) {
    if (e->state == CUDA_EV_DEFERRED) {
      ze_result_t r = timeout == UINT64_MAX ? deferred_wait(e) : deferred_query(e);
      if (r != ZE_RESULT_ERROR_NOT_AVAILABLE) return r;
    }
    int st = e->state;
    if (st == CUDA_EV_HOST_SIGNALED) return ZE_RESULT_SUCCESS;
    if (st == CUDA_EV_RECORDED) {
      if (timeout == UINT64_MAX) return cuda_to_ze(cuda.cuEventSynchronize(recorded_event(e)));
      ze_result_t r = cuda_to_ze(cuda.cuEventQuery(recorded_event(e)));
      if (r != ZE_RESULT_NOT_READY) return r;
    }
    if (timeout != UINT64_MAX && now_ns() - start >= timeout) return ZE_RESULT_NOT_READY;
    nap();
  }
}

ze_result_t cuda_fence_create(ze_command_queue_handle_t q, const ze_fence_desc_t *desc,
                              ze_fence_handle_t *out) {
  ZED_CHECK(q, ZED_KIND_QUEUE);
  ZED_CHECK_PTR(desc);
  ZED_CHECK_PTR(out);
  cuda_queue_t *queue = (cuda_queue_t *)q;
  cuda_use(queue->device);
  cuda_fence_t *f = calloc(1, sizeof *f);
  if (!f) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  ze_result_t r = cuda_to_ze(cuda.cuEventCreate(&f->ev, CU_EVENT_DISABLE_TIMING));
  if (r != ZE_RESULT_SUCCESS) {
    free(f);
    return r;
  }
  f->queue = queue;
  f->state = (desc->flags & ZE_FENCE_FLAG_SIGNALED) ? CUDA_EV_HOST_SIGNALED : CUDA_EV_RESET;
  zed_object_init(&f->obj, ZED_KIND_FENCE);
  *out = (ze_fence_handle_t)f;
  return ZE_RESULT_SUCCESS;
}

ze_result_t cuda_fence_destroy(ze_fence_handle_t h) {
  ZED_CHECK(h, ZED_KIND_FENCE);
  cuda_fence_t *f = (cuda_fence_t *)h;
  zed_object_retire(&f->obj);
  cuda.cuEventDestroy(f->ev);
  free(f);
  return ZE_RESULT_SUCCESS;
}

ze_result_t cuda_fence_host_synchronize(ze_fence_handle_t h, uint64_t timeout) {
  ZED_CHECK(h, ZED_KIND_FENCE);
  cuda_fence_t *f = (cuda_fence_t *)h;
  uint64_t start = now_ns();
  for (;;) {
    if (f->state == CUDA_EV_HOST_SIGNALED) return ZE_RESULT_SUCCESS;
    if (f->state == CUDA_EV_RECORDED) {
      if (timeout == UINT64_MAX) return cuda_to_ze(cuda.cuEventSynchronize(f->ev));
      ze_result_t r = cuda_to_ze(cuda.cuEventQuery(f->ev));
      if (r != ZE_RESULT_NOT_READY) return r;
    }
    if (timeout != UINT64_MAX && now_ns() - start >= timeout) return ZE_RESULT_NOT_READY;
    nap();
  }
}

ze_result_t cuda_fence_query_status(ze_fence_handle_t h) {
  ZED_CHECK(h, ZED_KIND_FENCE);
  cuda_fence_t *f = (cuda_fence_t *)h;
  if (f->state == CUDA_EV_HOST_SIGNALED) return ZE_RESULT_SUCCESS;
  if (f->state == CUDA_EV_RESET) return ZE_RESULT_NOT_READY;
  return cuda_to_ze(cuda.cuEventQuery(f->ev));
}

ze_result_t cuda_fence_reset(ze_fence_handle_t h) {
  ZED_CHECK(h, ZED_KIND_FENCE);
  ((cuda_fence_t *)h)->state = CUDA_EV_RESET;
  return ZE_RESULT_SUCCESS;
}
