/* Command lists. An immediate list runs each command as it is appended, on the caller's
 * thread; a regular list records commands (launches keep a snapshot of their arguments) and
 * runs them in order when a queue executes it. Waits block the running thread until the
 * event is signalled (by the host or another thread). Signal, wait, reset, barrier and
 * timestamp commands live here; copies are in cpu_copy.c and launches in cpu_launch.c. */
#include "cpu_api.h"
#include "cpu_driver.h"

#include <stdlib.h>
#include <string.h>

#define LIST(h) ((cpu_list_t *)(h))

static ze_result_t list_create(ze_context_handle_t hctx, ze_device_handle_t hdev, bool immediate,
                               ze_command_list_handle_t *out) {
  ZED_CHECK(hctx, ZED_KIND_CONTEXT);
  ZED_CHECK(hdev, ZED_KIND_DEVICE);
  ZED_CHECK_PTR(out);
  cpu_list_t *list = calloc(1, sizeof(*list));
  if (!list) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  zed_object_init(&list->obj, ZED_KIND_LIST);
  list->ctx = (cpu_context_t *)hctx;
  list->dev = (cpu_device_t *)hdev;
  list->immediate = immediate;
  *out = (ze_command_list_handle_t)list;
  return ZE_RESULT_SUCCESS;
}

ze_result_t cpu_command_list_create(ze_context_handle_t hctx, ze_device_handle_t hdev,
                                    const ze_command_list_desc_t *desc,
                                    ze_command_list_handle_t *out) {
  ZED_CHECK_PTR(desc);
  if (desc->commandQueueGroupOrdinal != 0) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  return list_create(hctx, hdev, false, out);
}

ze_result_t cpu_command_list_create_immediate(ze_context_handle_t hctx, ze_device_handle_t hdev,
                                              const ze_command_queue_desc_t *desc,
                                              ze_command_list_handle_t *out) {
  ZED_CHECK_PTR(desc);
  if (desc->ordinal != 0 || desc->index != 0) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  return list_create(hctx, hdev, true, out);
}

void cpu_cmd_free(cpu_cmd_t *cmd) {
  if (cmd->kind == CPU_CMD_LAUNCH)
    free(cmd->u.launch.owned);
  else if (cmd->kind == CPU_CMD_FILL)
    free(cmd->u.fill.owned);
}

static void list_clear(cpu_list_t *list) {
  for (size_t i = 0; i < list->count; i++)
    cpu_cmd_free(&list->cmds[i]);
  list->count = 0;
}

ze_result_t cpu_command_list_destroy(ze_command_list_handle_t h) {
  ZED_CHECK(h, ZED_KIND_LIST);
  cpu_list_t *list = LIST(h);
  list_clear(list);
  zed_object_retire(&list->obj);
  free(list->cmds);
  free(list);
  return ZE_RESULT_SUCCESS;
}

ze_result_t cpu_command_list_close(ze_command_list_handle_t h) {
  ZED_CHECK(h, ZED_KIND_LIST);
  LIST(h)->closed = true;
  return ZE_RESULT_SUCCESS;
}

ze_result_t cpu_command_list_reset(ze_command_list_handle_t h) {
  ZED_CHECK(h, ZED_KIND_LIST);
  list_clear(LIST(h));
  LIST(h)->closed = false;
  return ZE_RESULT_SUCCESS;
}

ze_result_t cpu_cmd_run(cpu_device_t *dev, cpu_cmd_t *cmd) {
  uint64_t start = cmd->event ? zed_now_ns() : 0;
  ze_result_t r = ZE_RESULT_SUCCESS;
  switch (cmd->kind) {
  case CPU_CMD_LAUNCH:
    if (cmd->u.launch.indirect) {
      const ze_group_count_t *c = cmd->u.launch.indirect;
      cmd->u.launch.launch.group_count[0] = c->groupCountX;
      cmd->u.launch.launch.group_count[1] = c->groupCountY;
      cmd->u.launch.launch.group_count[2] = c->groupCountZ;
    }
    r = cpu_launch_run(dev, &cmd->u.launch.launch);
    break;
  case CPU_CMD_COPY:
    r = cpu_copy_run(dev, cmd->u.copy.dst, cmd->u.copy.src, cmd->u.copy.size);
    break;
  case CPU_CMD_FILL:
    r = cpu_fill_run(dev, cmd->u.fill.dst, cmd->u.fill.size, cmd->u.fill.pattern,
                     cmd->u.fill.pattern_size);
    break;
  case CPU_CMD_SIGNAL:
    break; /* signalled below like any command's event */
  case CPU_CMD_WAIT:
    cpu_event_wait(cmd->event);
    return ZE_RESULT_SUCCESS;
  case CPU_CMD_RESET:
    cpu_event_reset(cmd->event);
    return ZE_RESULT_SUCCESS;
  case CPU_CMD_TIMESTAMP:
    *cmd->u.timestamp.dst = zed_now_ns();
    break;
  }
  /* Signalled even when the command failed: the failure is returned to whoever submitted it,
   * and a thread waiting on the event must not wait forever. */
  if (cmd->event) cpu_event_signal(cmd->event, start, zed_now_ns());
  return r;
}

static ze_result_t list_push(cpu_list_t *list, cpu_cmd_t *cmd) {
  if (list->count == list->capacity) {
    size_t cap = list->capacity ? 2 * list->capacity : 16;
    cpu_cmd_t *cmds = realloc(list->cmds, cap * sizeof(*cmds));
    if (!cmds) {
      cpu_cmd_free(cmd);
      return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    list->cmds = cmds;
    list->capacity = cap;
  }
  list->cmds[list->count++] = *cmd;
  return ZE_RESULT_SUCCESS;
}

ze_result_t cpu_list_submit(cpu_list_t *list, cpu_cmd_t *cmd) {
  if (!list->immediate) {
    if (list->closed) {
      cpu_cmd_free(cmd);
      return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    }
    return list_push(list, cmd);
  }
  ze_result_t r = cpu_cmd_run(list->dev, cmd);
  cpu_cmd_free(cmd);
  return r;
}

ze_result_t cpu_list_append(cpu_list_t *list, cpu_cmd_t *cmd, ze_event_handle_t signal,
                            uint32_t num_wait, const ze_event_handle_t *wait) {
  for (uint32_t i = 0; i < num_wait; i++) {
    cpu_cmd_t w = {.kind = CPU_CMD_WAIT, .event = (cpu_event_t *)wait[i]};
    ze_result_t r = cpu_list_submit(list, &w);
    if (r != ZE_RESULT_SUCCESS) {
      cpu_cmd_free(cmd);
      return r;
    }
  }
  cmd->event = (cpu_event_t *)signal;
  return cpu_list_submit(list, cmd);
}

ze_result_t cpu_list_execute(cpu_list_t *list) {
  for (size_t i = 0; i < list->count; i++) {
    ze_result_t r = cpu_cmd_run(list->dev, &list->cmds[i]);
    if (r != ZE_RESULT_SUCCESS) return r;
  }
  return ZE_RESULT_SUCCESS;
}

/* Checks shared by every append: the list and its events. */
static ze_result_t check_append(ze_command_list_handle_t h, ze_event_handle_t signal,
                                uint32_t num_wait, const ze_event_handle_t *wait) {
  ZED_CHECK(h, ZED_KIND_LIST);
  return cpu_check_events(signal, num_wait, wait);
}

ze_result_t cpu_command_list_append_signal_event(ze_command_list_handle_t h, ze_event_handle_t ev) {
  ZED_CHECK(h, ZED_KIND_LIST);
  ZED_CHECK(ev, ZED_KIND_EVENT);
  cpu_cmd_t cmd = {.kind = CPU_CMD_SIGNAL};
  return cpu_list_append(LIST(h), &cmd, ev, 0, NULL);
}

ze_result_t cpu_command_list_append_wait_on_events(ze_command_list_handle_t h, uint32_t n,
                                                   ze_event_handle_t *events) {
  ze_result_t r = check_append(h, NULL, n, events);
  if (r != ZE_RESULT_SUCCESS) return r;
  for (uint32_t i = 0; i < n && r == ZE_RESULT_SUCCESS; i++) {
    cpu_cmd_t cmd = {.kind = CPU_CMD_WAIT, .event = (cpu_event_t *)events[i]};
    r = cpu_list_submit(LIST(h), &cmd);
  }
  return r;
}

ze_result_t cpu_command_list_append_event_reset(ze_command_list_handle_t h, ze_event_handle_t ev) {
  ZED_CHECK(h, ZED_KIND_LIST);
  ZED_CHECK(ev, ZED_KIND_EVENT);
  cpu_cmd_t cmd = {.kind = CPU_CMD_RESET, .event = (cpu_event_t *)ev};
  return cpu_list_submit(LIST(h), &cmd);
}

/* Commands already run in order, so a barrier is its waits and its signal. */
ze_result_t cpu_command_list_append_barrier(ze_command_list_handle_t h, ze_event_handle_t signal,
                                            uint32_t num_wait, ze_event_handle_t *wait) {
  ze_result_t r = check_append(h, signal, num_wait, wait);
  if (r != ZE_RESULT_SUCCESS) return r;
  cpu_cmd_t cmd = {.kind = CPU_CMD_SIGNAL};
  return cpu_list_append(LIST(h), &cmd, signal, num_wait, wait);
}

ze_result_t cpu_command_list_append_memory_ranges_barrier(
    ze_command_list_handle_t h, uint32_t num_ranges, const size_t *sizes, const void **ranges,
    ze_event_handle_t signal, uint32_t num_wait, ze_event_handle_t *wait) {
  if (num_ranges && (!sizes || !ranges)) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  return cpu_command_list_append_barrier(h, signal, num_wait, wait);
}

ze_result_t cpu_command_list_append_write_global_timestamp(ze_command_list_handle_t h,
                                                           uint64_t *dst, ze_event_handle_t signal,
                                                           uint32_t num_wait,
                                                           ze_event_handle_t *wait) {
  ZED_CHECK_PTR(dst);
  ze_result_t r = check_append(h, signal, num_wait, wait);
  if (r != ZE_RESULT_SUCCESS) return r;
  cpu_cmd_t cmd = {.kind = CPU_CMD_TIMESTAMP, .u.timestamp.dst = dst};
  return cpu_list_append(LIST(h), &cmd, signal, num_wait, wait);
}
