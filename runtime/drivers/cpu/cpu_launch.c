/* Kernel launches. An immediate list runs the launch straight from the kernel's own argument
 * block, with no allocation; a regular list records a snapshot (arguments copied into one
 * block) because the kernel's arguments may change before the list is executed. */
#include "cpu_api.h"
#include "cpu_driver.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define LIST(h) ((cpu_list_t *)(h))
#define KERNEL(h) ((cpu_kernel_t *)(h))

/* Local-memory arguments above this count take a heap array for their offsets. */
#define STACK_LOCALS 16

/* Groups per run call: one unless the kernel takes batches (the region scheme), then enough
 * for about CPU_BATCH_ITEMS work-items within the local-memory budget. */
static uint64_t batch_items(void) {
  static uint64_t items;
  if (!items) {
    const char *v = getenv("KAPI_CPU_BATCH_ITEMS");
    long n = v ? strtol(v, NULL, 10) : 0;
    items = n > 0 ? (uint64_t)n : CPU_BATCH_ITEMS;
  }
  return items;
}

static uint32_t batch_size(const cpu_kernel_t *k, uint64_t group_items, uint64_t local_bytes) {
  if (!k->k->batches || !group_items) return 1;
  uint64_t b = batch_items() / group_items;
  if (local_bytes && b > CPU_BATCH_LOCAL / local_bytes) b = CPU_BATCH_LOCAL / local_bytes;
  if (b > CPU_BATCH_GROUPS) b = CPU_BATCH_GROUPS;
  return b ? (uint32_t)b : 1;
}

ze_result_t cpu_launch_prepare(const cpu_kernel_t *k, const ze_group_count_t *count,
                               uint32_t *offsets, cpu_launch_t *out) {
  if (k->args_unset)
    return ZE_RESULT_ERROR_INVALID_ARGUMENT; /* every argument must be set before a launch */
  uint64_t bytes = 0;
  for (uint32_t j = 0; j < k->num_local; j++) {
    offsets[j] = (uint32_t)bytes;
    bytes += (k->local_size[k->local_index[j]] + CPU_LOCAL_ALIGN - 1) & ~(CPU_LOCAL_ALIGN - 1);
  }
  if (bytes > CPU_LOCAL_MEM_SIZE) return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE;
  /* Group and work-item counts must fit 64 bits: the pool indexes groups linearly. */
  uint64_t groups, items;
  uint64_t group_items = (uint64_t)k->group_size[0] * k->group_size[1] * k->group_size[2];
  if (__builtin_mul_overflow((uint64_t)count->groupCountX, count->groupCountY, &groups) ||
      __builtin_mul_overflow(groups, count->groupCountZ, &groups) ||
      __builtin_mul_overflow(groups, group_items, &items))
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  /* the streaming entry when the launch stores enough (overflowing: far more than enough) */
  uint64_t stored;
  bool streams = k->stream_min && (__builtin_mul_overflow(items, k->k->streaming_bytes, &stored) ||
                                   stored >= k->stream_min);
  *out = (cpu_launch_t){
      .run = streams ? k->k->run_streaming : k->k->run,
      .group_count = {count->groupCountX, count->groupCountY, count->groupCountZ},
      .local_size = {k->group_size[0], k->group_size[1], k->group_size[2]},
      .args = k->args,
      .num_args = k->k->num_args,
      .num_local = k->num_local,
      .local_index = k->local_index,
      .local_offset = offsets,
      .local_bytes = (uint32_t)bytes,
      .batch = batch_size(k, group_items, bytes),
      /* A cache of the kernel's cost, written at run time even through a const kernel. */
      .cost = (_Atomic uint32_t *)&k->cost,
      .legacy = k->pool_legacy,
      .wide = k->pool_wide,
  };
  return ZE_RESULT_SUCCESS;
}

ze_result_t cpu_launch_run(cpu_device_t *dev, const cpu_launch_t *launch) {
  if (!launch->group_count[0] || !launch->group_count[1] || !launch->group_count[2])
    return ZE_RESULT_SUCCESS; /* nothing to run */
  cpu_pool_t *pool = cpu_device_pool(dev);
  if (!pool) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  return cpu_pool_run(pool, launch);
}

/* Copies everything a launch points at into one block owned by the command. */
static ze_result_t snapshot(const cpu_kernel_t *k, cpu_cmd_t *cmd) {
  cpu_launch_t *l = &cmd->u.launch.launch;
  size_t nargs = l->num_args, nloc = l->num_local;
  size_t values = k->values_size;
  size_t head = nargs * sizeof(void *) + 2 * nloc * sizeof(uint32_t);
  head = ((head + 7) & ~(size_t)7) + 8; /* then the command's own cost estimate */
  uint8_t *block = malloc(head + values + 1);
  if (!block) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  void **args = (void **)block;
  uint32_t *index = (uint32_t *)(block + nargs * sizeof(void *));
  uint32_t *offset = index + nloc;
  uint8_t *vals = block + head;
  memcpy(vals, k->values, values);
  for (size_t i = 0; i < nargs; i++)
    args[i] = vals + ((uint8_t *)k->args[i] - k->values);
  memcpy(index, l->local_index, nloc * sizeof(uint32_t));
  memcpy(offset, l->local_offset, nloc * sizeof(uint32_t));
  l->args = args;
  l->local_index = index;
  l->local_offset = offset;
  /* The command learns its own cost (the kernel may be gone by the time the list runs). */
  l->cost = (_Atomic uint32_t *)(block + head - 8);
  atomic_init(l->cost, atomic_load_explicit(&k->cost, memory_order_relaxed));
  cmd->u.launch.owned = block;
  return ZE_RESULT_SUCCESS;
}

/* The launch behind both direct and indirect appends; indirect is NULL for a direct one. */
static ze_result_t append_launch(ze_command_list_handle_t h, ze_kernel_handle_t hk,
                                 const ze_group_count_t *count, const ze_group_count_t *indirect,
                                 ze_event_handle_t signal, uint32_t num_wait,
                                 ze_event_handle_t *wait) {
  ZED_CHECK(h, ZED_KIND_LIST);
  ZED_CHECK(hk, ZED_KIND_KERNEL);
  ZED_CHECK_PTR(count);
  ze_result_t r = cpu_check_events(signal, num_wait, wait);
  if (r != ZE_RESULT_SUCCESS) return r;
  const cpu_kernel_t *k = KERNEL(hk);
  uint32_t stack_offsets[STACK_LOCALS];
  uint32_t *offsets = stack_offsets;
  if (k->num_local > STACK_LOCALS && !(offsets = malloc(k->num_local * sizeof(uint32_t))))
    return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  cpu_cmd_t cmd = {.kind = CPU_CMD_LAUNCH, .u.launch.indirect = indirect};
  r = cpu_launch_prepare(k, count, offsets, &cmd.u.launch.launch);
  if (r == ZE_RESULT_SUCCESS && !LIST(h)->immediate) r = snapshot(k, &cmd);
  if (r == ZE_RESULT_SUCCESS) r = cpu_list_append(LIST(h), &cmd, signal, num_wait, wait);
  if (offsets != stack_offsets) free(offsets);
  return r;
}

ze_result_t cpu_command_list_append_launch_kernel(ze_command_list_handle_t h, ze_kernel_handle_t hk,
                                                  const ze_group_count_t *count,
                                                  ze_event_handle_t signal, uint32_t num_wait,
                                                  ze_event_handle_t *wait) {
  return append_launch(h, hk, count, NULL, signal, num_wait, wait);
}

/* The group count lives in memory the caller may still write until the command runs (all USM
 * is host memory, so it is read then). */
ze_result_t cpu_command_list_append_launch_kernel_indirect(
    ze_command_list_handle_t h, ze_kernel_handle_t hk, const ze_group_count_t *count,
    ze_event_handle_t signal, uint32_t num_wait, ze_event_handle_t *wait) {
  return append_launch(h, hk, count, count, signal, num_wait, wait);
}

/* A cooperative launch differs only in allowing grid-wide synchronisation, which SPIR-V
 * kernels for this driver cannot express; it runs as an ordinary launch. */
ze_result_t cpu_command_list_append_launch_cooperative_kernel(
    ze_command_list_handle_t h, ze_kernel_handle_t hk, const ze_group_count_t *count,
    ze_event_handle_t signal, uint32_t num_wait, ze_event_handle_t *wait) {
  return cpu_command_list_append_launch_kernel(h, hk, count, signal, num_wait, wait);
}
