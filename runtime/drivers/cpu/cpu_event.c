/* Event pools, events and fences. An event is a one-shot flag (zed_set_flag) plus the start
 * and end time of the command that signalled it, in nanoseconds of the shared monotonic clock
 * (every event carries them; kernel-timestamp pools just make them queryable). Commands run
 * synchronously, so a fence is signalled when its ExecuteCommandLists returns. */
#include "cpu_api.h"
#include "cpu_driver.h"

#include <stdlib.h>

#define EVENT(h) ((cpu_event_t *)(h))
#define FENCE(h) ((cpu_fence_t *)(h))

ze_result_t cpu_event_pool_create(ze_context_handle_t hctx, const ze_event_pool_desc_t *desc,
                                  uint32_t num_devices, ze_device_handle_t *devices,
                                  ze_event_pool_handle_t *out) {
  ZED_CHECK(hctx, ZED_KIND_CONTEXT);
  ZED_CHECK_PTR(desc);
  ZED_CHECK_PTR(out);
  if (num_devices && !devices) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  for (uint32_t i = 0; i < num_devices; i++)
    ZED_CHECK(devices[i], ZED_KIND_DEVICE);
  if (desc->count == 0) return ZE_RESULT_ERROR_INVALID_SIZE;
  if (desc->flags & ZE_EVENT_POOL_FLAG_IPC) return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
  cpu_event_pool_t *pool = calloc(1, sizeof(*pool));
  cpu_event_t *events = calloc(desc->count, sizeof(*events));
  if (!pool || !events) {
    free(pool);
    free(events);
    return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  }
  zed_object_init(&pool->obj, ZED_KIND_EVENT_POOL);
  pool->flags = desc->flags;
  pool->count = desc->count;
  pool->events = events;
  *out = (ze_event_pool_handle_t)pool;
  return ZE_RESULT_SUCCESS;
}

ze_result_t cpu_event_pool_destroy(ze_event_pool_handle_t h) {
  ZED_CHECK(h, ZED_KIND_EVENT_POOL);
  cpu_event_pool_t *pool = (cpu_event_pool_t *)h;
  for (uint32_t i = 0; i < pool->count; i++)
    zed_object_retire(&pool->events[i].obj); /* events die with their pool */
  zed_object_retire(&pool->obj);
  free(pool->events);
  free(pool);
  return ZE_RESULT_SUCCESS;
}

/* An index already holding a live event is refused, as the API requires. */
ze_result_t cpu_event_create(ze_event_pool_handle_t hpool, const ze_event_desc_t *desc,
                             ze_event_handle_t *out) {
  ZED_CHECK(hpool, ZED_KIND_EVENT_POOL);
  ZED_CHECK_PTR(desc);
  ZED_CHECK_PTR(out);
  cpu_event_pool_t *pool = (cpu_event_pool_t *)hpool;
  if (desc->index >= pool->count) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  cpu_event_t *ev = &pool->events[desc->index];
  if (ev->obj.kind == ZED_KIND_EVENT) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  zed_object_init(&ev->obj, ZED_KIND_EVENT);
  ev->pool = pool;
  ev->start_ns = ev->end_ns = 0;
  zed_clear_flag(&ev->signalled);
  *out = (ze_event_handle_t)ev;
  return ZE_RESULT_SUCCESS;
}

ze_result_t cpu_event_destroy(ze_event_handle_t h) {
  ZED_CHECK(h, ZED_KIND_EVENT);
  zed_object_retire(&EVENT(h)->obj);
  return ZE_RESULT_SUCCESS;
}

ze_result_t cpu_check_events(ze_event_handle_t signal, uint32_t num_wait,
                             const ze_event_handle_t *wait) {
  if (signal) ZED_CHECK(signal, ZED_KIND_EVENT);
  if (num_wait && !wait) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  for (uint32_t i = 0; i < num_wait; i++)
    ZED_CHECK(wait[i], ZED_KIND_EVENT);
  return ZE_RESULT_SUCCESS;
}

void cpu_event_signal(cpu_event_t *ev, uint64_t start_ns, uint64_t end_ns) {
  ev->start_ns = start_ns;
  ev->end_ns = end_ns;
  zed_set_flag(&ev->signalled);
}

void cpu_event_wait(cpu_event_t *ev) {
  zed_wait_flag(&ev->signalled, UINT64_MAX);
}

void cpu_event_reset(cpu_event_t *ev) {
  zed_clear_flag(&ev->signalled);
  ev->start_ns = ev->end_ns = 0;
}

ze_result_t cpu_event_host_signal(ze_event_handle_t h) {
  ZED_CHECK(h, ZED_KIND_EVENT);
  uint64_t now = zed_now_ns();
  cpu_event_signal(EVENT(h), now, now);
  return ZE_RESULT_SUCCESS;
}

ze_result_t cpu_event_host_synchronize(ze_event_handle_t h, uint64_t timeout_ns) {
  ZED_CHECK(h, ZED_KIND_EVENT);
  return zed_wait_flag(&EVENT(h)->signalled, timeout_ns) ? ZE_RESULT_SUCCESS : ZE_RESULT_NOT_READY;
}

ze_result_t cpu_event_query_status(ze_event_handle_t h) {
  ZED_CHECK(h, ZED_KIND_EVENT);
  return zed_flag_is_set(&EVENT(h)->signalled) ? ZE_RESULT_SUCCESS : ZE_RESULT_NOT_READY;
}

ze_result_t cpu_event_host_reset(ze_event_handle_t h) {
  ZED_CHECK(h, ZED_KIND_EVENT);
  cpu_event_reset(EVENT(h));
  return ZE_RESULT_SUCCESS;
}

/* Global and context timestamps are the same clock here. */
ze_result_t cpu_event_query_kernel_timestamp(ze_event_handle_t h,
                                             ze_kernel_timestamp_result_t *out) {
  ZED_CHECK(h, ZED_KIND_EVENT);
  ZED_CHECK_PTR(out);
  cpu_event_t *ev = EVENT(h);
  if (!(ev->pool->flags & ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP))
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (!zed_flag_is_set(&ev->signalled)) return ZE_RESULT_NOT_READY;
  out->global.kernelStart = out->context.kernelStart = ev->start_ns;
  out->global.kernelEnd = out->context.kernelEnd = ev->end_ns;
  return ZE_RESULT_SUCCESS;
}

ze_result_t cpu_fence_create(ze_command_queue_handle_t hq, const ze_fence_desc_t *desc,
                             ze_fence_handle_t *out) {
  ZED_CHECK(hq, ZED_KIND_QUEUE);
  ZED_CHECK_PTR(desc);
  ZED_CHECK_PTR(out);
  cpu_fence_t *f = calloc(1, sizeof(*f));
  if (!f) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  zed_object_init(&f->obj, ZED_KIND_FENCE);
  if (desc->flags & ZE_FENCE_FLAG_SIGNALED) zed_set_flag(&f->signalled);
  *out = (ze_fence_handle_t)f;
  return ZE_RESULT_SUCCESS;
}

ze_result_t cpu_fence_destroy(ze_fence_handle_t h) {
  ZED_CHECK(h, ZED_KIND_FENCE);
  zed_object_retire(&FENCE(h)->obj);
  free(FENCE(h));
  return ZE_RESULT_SUCCESS;
}

ze_result_t cpu_fence_host_synchronize(ze_fence_handle_t h, uint64_t timeout_ns) {
  ZED_CHECK(h, ZED_KIND_FENCE);
  return zed_wait_flag(&FENCE(h)->signalled, timeout_ns) ? ZE_RESULT_SUCCESS : ZE_RESULT_NOT_READY;
}

ze_result_t cpu_fence_query_status(ze_fence_handle_t h) {
  ZED_CHECK(h, ZED_KIND_FENCE);
  return zed_flag_is_set(&FENCE(h)->signalled) ? ZE_RESULT_SUCCESS : ZE_RESULT_NOT_READY;
}

ze_result_t cpu_fence_reset(ze_fence_handle_t h) {
  ZED_CHECK(h, ZED_KIND_FENCE);
  zed_clear_flag(&FENCE(h)->signalled);
  return ZE_RESULT_SUCCESS;
}
