/* Unified shared memory: allocation and free, the pointer -> owning device query that
 * compute-follows-data rests on, and copies and fills appended to queues.
 */
#include "internal.h"

#include <string.h>

static bool is_pow2(size_t x) {
  return x && !(x & (x - 1));
}

void *kr_malloc(kr_device_t *dev, kr_mem_kind_t kind, size_t size, size_t alignment,
                kr_error_t *err) {
  if (!dev || size == 0 || (alignment && !is_pow2(alignment))) {
    kr_fail(err, KR_ERR_INVALID_ARGUMENT,
            "kr_malloc: %s (size %zu, alignment %zu; size must be > 0, alignment 0 or a "
            "power of two)",
            dev ? "bad size or alignment" : "NULL device", size, alignment);
    return NULL;
  }
  /* Past the device's largest allocation a driver answers UNSUPPORTED_SIZE; to the user that
   * is running out of memory, with the limit they must stay under. */
  if (kind != KR_MEM_HOST && size > dev->info.max_alloc_size) {
    kr_fail(err, KR_ERR_OUT_OF_MEMORY,
            "cannot allocate %zu bytes on device '%s': its largest allocation is %llu bytes; "
            "allocate less or split the data into several arrays",
            size, dev->info.name, (unsigned long long)dev->info.max_alloc_size);
    return NULL;
  }
  ze_device_mem_alloc_desc_t dd = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
  ze_host_mem_alloc_desc_t hd = {.stype = ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC};
  ze_context_handle_t ctx = dev->drv->ctx;
  void *p = NULL;
  ze_result_t r;
  const char *call;
  switch (kind) {
  case KR_MEM_DEVICE:
    call = "zeMemAllocDevice";
    r = zeMemAllocDevice(ctx, &dd, size, alignment, dev->h, &p);
    break;
  case KR_MEM_SHARED:
    call = "zeMemAllocShared";
    r = zeMemAllocShared(ctx, &dd, &hd, size, alignment, dev->h, &p);
    break;
  case KR_MEM_HOST:
    call = "zeMemAllocHost";
    r = zeMemAllocHost(ctx, &hd, size, alignment, &p);
    break;
  default:
    kr_fail(err, KR_ERR_INVALID_ARGUMENT, "kr_malloc: unknown memory kind %d", (int)kind);
    return NULL;
  }
  if (r || !p) {
    kr_ze_fail(err, r ? r : ZE_RESULT_ERROR_UNKNOWN, call, dev, "%zu bytes", size);
    return NULL;
  }
  return p;
}

/* The driver whose context owns ptr (NULL if none), with its allocation properties. */
static kr_driver_t *owner(const void *ptr, ze_memory_allocation_properties_t *props,
                          ze_device_handle_t *dev) {
  for (uint32_t i = 0; i < kr_rt.num_drivers; i++) {
    *props = (ze_memory_allocation_properties_t){
        .stype = ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES};
    *dev = NULL;
    kr_driver_t *drv = &kr_rt.drivers[i];
    if (zeMemGetAllocProperties(drv->ctx, ptr, props, dev) == ZE_RESULT_SUCCESS &&
        props->type != ZE_MEMORY_TYPE_UNKNOWN)
      return drv;
  }
  return NULL;
}

kr_status_t kr_free(void *ptr, kr_error_t *err) {
  if (!ptr) return KR_OK;
  kr_status_t st = kr_ensure_init(err);
  if (st) return st;
  ze_memory_allocation_properties_t props;
  ze_device_handle_t dev;
  kr_driver_t *drv = owner(ptr, &props, &dev);
  if (!drv)
    return kr_fail(err, KR_ERR_INVALID_ARGUMENT, "kr_free: %p is not memory allocated by kr_malloc",
                   ptr);
  ze_result_t r = zeMemFree(drv->ctx, ptr);
  if (r) return kr_ze_fail(err, r, "zeMemFree", kr_device_from_handle(dev), NULL);
  return KR_OK;
}

kr_status_t kr_pointer_info(const void *ptr, kr_pointer_info_t *out, kr_error_t *err) {
  if (!out) return kr_fail(err, KR_ERR_INVALID_ARGUMENT, "kr_pointer_info: NULL output");
  memset(out, 0, sizeof *out);
  kr_status_t st = kr_ensure_init(err);
  if (st || !ptr) return st;
  ze_memory_allocation_properties_t props;
  ze_device_handle_t dev;
  kr_driver_t *drv = owner(ptr, &props, &dev);
  if (!drv) return KR_OK;
  out->kind = (kr_mem_kind_t)props.type;
  out->device = dev ? kr_device_from_handle(dev) : NULL;
  if (!out->device && drv->num_devices) out->device = kr_rt.devices[drv->first_device];
  void *base = NULL;
  size_t size = 0;
  if (zeMemGetAddressRange(drv->ctx, ptr, &base, &size) == ZE_RESULT_SUCCESS) {
    out->base = base;
    out->size = size;
  }
  return KR_OK;
}

/* A command with nothing to do (size 0): waits for its dependencies here and gives a completed
 * event. */
static kr_status_t done_event(kr_queue_t *q, uint32_t nwait, kr_event_t *const *wait,
                              kr_event_t **out_event, kr_error_t *err) {
  kr_status_t st = kr_events_wait(nwait, wait, err);
  if (st || !out_event) return st;
  kr_event_t *ev = kr_event_acquire(q->dev->drv, err);
  if (!ev) return err ? err->status : KR_ERR_LEVEL_ZERO;
  ze_result_t r = zeEventHostSignal(ev->h);
  if (r) {
    kr_event_release(ev);
    return kr_ze_fail(err, r, "zeEventHostSignal", q->dev, NULL);
  }
  *out_event = ev;
  return KR_OK;
}

kr_status_t kr_memcpy(kr_queue_t *q, void *dst, const void *src, size_t n, uint32_t nwait,
                      kr_event_t *const *wait, kr_event_t **out_event, kr_error_t *err) {
  if (!q || ((!dst || !src) && n))
    return kr_fail(err, KR_ERR_INVALID_ARGUMENT, "kr_memcpy: NULL %s", !q ? "queue" : "pointer");
  if (n == 0) return done_event(q, nwait, wait, out_event, err);
  kr_cmd_t c;
  kr_status_t st = kr_cmd_begin(&c, q, nwait, wait, err);
  if (st) return st;
  ze_result_t r = zeCommandListAppendMemoryCopy(q->cl, dst, src, n, c.ev->h, c.nwaits, c.waits);
  if (r) st = kr_ze_fail(err, r, "zeCommandListAppendMemoryCopy", q->dev, "%zu bytes", n);
  return kr_cmd_finish(&c, st, out_event, err);
}

kr_status_t kr_fill(kr_queue_t *q, void *dst, const void *pattern, size_t pattern_size, size_t n,
                    uint32_t nwait, kr_event_t *const *wait, kr_event_t **out_event,
                    kr_error_t *err) {
  if (!q || !pattern || (!dst && n))
    return kr_fail(err, KR_ERR_INVALID_ARGUMENT, "kr_fill: NULL %s",
                   !q ? "queue" : (!pattern ? "pattern" : "destination"));
  if (!is_pow2(pattern_size) || pattern_size > 128 || n % pattern_size)
    return kr_fail(err, KR_ERR_INVALID_ARGUMENT,
                   "kr_fill: pattern size %zu must be a power of two up to 128 dividing the "
                   "size %zu",
                   pattern_size, n);
  if (n == 0) return done_event(q, nwait, wait, out_event, err);
  kr_cmd_t c;
  kr_status_t st = kr_cmd_begin(&c, q, nwait, wait, err);
  if (st) return st;
  ze_result_t r = zeCommandListAppendMemoryFill(q->cl, dst, pattern, pattern_size, n, c.ev->h,
                                                c.nwaits, c.waits);
  if (r) st = kr_ze_fail(err, r, "zeCommandListAppendMemoryFill", q->dev, "%zu bytes", n);
  return kr_cmd_finish(&c, st, out_event, err);
}

kr_status_t kr_memset(kr_queue_t *q, void *dst, int value, size_t n, uint32_t nwait,
                      kr_event_t *const *wait, kr_event_t **out_event, kr_error_t *err) {
  uint8_t byte = (uint8_t)value;
  return kr_fill(q, dst, &byte, 1, n, nwait, wait, out_event, err);
}
