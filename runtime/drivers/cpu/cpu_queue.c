/* Command queues. Execution is synchronous: ExecuteCommandLists runs the lists in order on the
 * calling thread and signals the fence before returning, so Synchronize has nothing left to
 * wait for. A queue runs one submission at a time (the API lets threads share a queue). */
#include "cpu_api.h"
#include "cpu_driver.h"

#include <stdlib.h>

#define QUEUE(h) ((cpu_queue_t *)(h))

ze_result_t cpu_command_queue_create(ze_context_handle_t hctx, ze_device_handle_t hdev,
                                     const ze_command_queue_desc_t *desc,
                                     ze_command_queue_handle_t *out) {
  ZED_CHECK(hctx, ZED_KIND_CONTEXT);
  ZED_CHECK(hdev, ZED_KIND_DEVICE);
  ZED_CHECK_PTR(desc);
  ZED_CHECK_PTR(out);
  if (desc->ordinal != 0 || desc->index != 0) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  cpu_queue_t *q = calloc(1, sizeof(*q));
  if (!q) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  zed_object_init(&q->obj, ZED_KIND_QUEUE);
  q->ctx = (cpu_context_t *)hctx;
  q->dev = (cpu_device_t *)hdev;
  pthread_mutex_init(&q->lock, NULL);
  *out = (ze_command_queue_handle_t)q;
  return ZE_RESULT_SUCCESS;
}

ze_result_t cpu_command_queue_destroy(ze_command_queue_handle_t h) {
  ZED_CHECK(h, ZED_KIND_QUEUE);
  zed_object_retire(&QUEUE(h)->obj);
  pthread_mutex_destroy(&QUEUE(h)->lock);
  free(QUEUE(h));
  return ZE_RESULT_SUCCESS;
}

/* Every list is checked before any runs: closed, regular, alive. */
static ze_result_t check_lists(uint32_t n, ze_command_list_handle_t *lists) {
  if (n == 0) return ZE_RESULT_ERROR_INVALID_SIZE;
  ZED_CHECK_PTR(lists);
  for (uint32_t i = 0; i < n; i++) {
    ZED_CHECK(lists[i], ZED_KIND_LIST);
    const cpu_list_t *l = (const cpu_list_t *)lists[i];
    if (l->immediate || !l->closed) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  }
  return ZE_RESULT_SUCCESS;
}

ze_result_t cpu_command_queue_execute_command_lists(ze_command_queue_handle_t h, uint32_t n,
                                                    ze_command_list_handle_t *lists,
                                                    ze_fence_handle_t hfence) {
  ZED_CHECK(h, ZED_KIND_QUEUE);
  ze_result_t r = check_lists(n, lists);
  if (r != ZE_RESULT_SUCCESS) return r;
  if (hfence) ZED_CHECK(hfence, ZED_KIND_FENCE);
  cpu_queue_t *q = QUEUE(h);
  pthread_mutex_lock(&q->lock);
  for (uint32_t i = 0; i < n && r == ZE_RESULT_SUCCESS; i++)
    r = cpu_list_execute((cpu_list_t *)lists[i]);
  pthread_mutex_unlock(&q->lock);
  if (hfence && r == ZE_RESULT_SUCCESS) zed_set_flag(&((cpu_fence_t *)hfence)->signalled);
  return r;
}

ze_result_t cpu_command_queue_synchronize(ze_command_queue_handle_t h, uint64_t timeout_ns) {
  ZED_CHECK(h, ZED_KIND_QUEUE);
  (void)timeout_ns;
  return ZE_RESULT_SUCCESS;
}
