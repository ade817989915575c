/* Events and fences on CUDA events. A Level Zero event signalled by a command is a CUDA event
 * recorded on the stream; one signalled from the host only sets a flag (CUDA events cannot be
 * signalled by the host), which host waits see and device waits treat as already signalled.
 */
#include "cuda_driver.h"

#include <stdlib.h>
#include <time.h>

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
  cuda_use(&drv->devices[0]);
  cuda_event_t *e = calloc(1, sizeof *e);
  if (!e) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  ze_result_t r = cuda_to_ze(cuda.cuEventCreate(&e->ev, p->cu_flags));
  if (r != ZE_RESULT_SUCCESS) {
    free(e);
    return r;
  }
  zed_object_init(&e->obj, ZED_KIND_EVENT);
  *out = (ze_event_handle_t)e;
  return ZE_RESULT_SUCCESS;
}

ze_result_t cuda_event_destroy(ze_event_handle_t h) {
  ZED_CHECK(h, ZED_KIND_EVENT);
  cuda_event_t *e = (cuda_event_t *)h;
  zed_object_retire(&e->obj);
  cuda.cuEventDestroy(e->ev);
  free(e);
  return ZE_RESULT_SUCCESS;
}

ze_result_t cuda_event_host_signal(ze_event_handle_t h) {
  ZED_CHECK(h, ZED_KIND_EVENT);
  ((cuda_event_t *)h)->state = CUDA_EV_HOST_SIGNALED;
  return ZE_RESULT_SUCCESS;
}

ze_result_t cuda_event_host_reset(ze_event_handle_t h) {
  ZED_CHECK(h, ZED_KIND_EVENT);
  ((cuda_event_t *)h)->state = CUDA_EV_RESET;
  return ZE_RESULT_SUCCESS;
}

ze_result_t cuda_event_query_status(ze_event_handle_t h) {
  ZED_CHECK(h, ZED_KIND_EVENT);
  cuda_event_t *e = (cuda_event_t *)h;
  if (e->state == CUDA_EV_HOST_SIGNALED) return ZE_RESULT_SUCCESS;
  if (e->state == CUDA_EV_RESET) return ZE_RESULT_NOT_READY;
  return cuda_to_ze(cuda.cuEventQuery(e->ev));
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
    int st = e->state;
    if (st == CUDA_EV_HOST_SIGNALED) return ZE_RESULT_SUCCESS;
    if (st == CUDA_EV_RECORDED) {
      if (timeout == UINT64_MAX) return cuda_to_ze(cuda.cuEventSynchronize(e->ev));
      ze_result_t r = cuda_to_ze(cuda.cuEventQuery(e->ev));
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
