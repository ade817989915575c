/* Copies and fills. All USM is host memory, so a copy is memmove and a fill repeats the
 * pattern with memcpy doubling. Region copies walk rows and slices. Prefetch and advice have
 * nothing to move. */
#include "cpu_api.h"
#include "cpu_driver.h"

#include <stdlib.h>
#include <string.h>

#define LIST(h) ((cpu_list_t *)(h))

void cpu_fill(void *dst, size_t size, const void *pattern, size_t pattern_size) {
  if (pattern_size == 1) {
    memset(dst, *(const uint8_t *)pattern, size);
    return;
  }
  uint8_t *d = dst;
  size_t done = pattern_size < size ? pattern_size : size;
  memcpy(d, pattern, done);
  /* The filled prefix is whole patterns, so doubling it keeps the pattern's phase. */
  while (done < size) {
    size_t n = done < size - done ? done : size - done;
    memcpy(d + done, d, n);
    done += n;
  }
}

/* Copies and fills of at least PARALLEL_BYTES run on the device's pool, in pieces split into
 * one contiguous block per thread as launches are (cpu_pool.c). Beside the bandwidth, this
 * places pages: a fill is usually the first touch of a new allocation, and the thread that
 * touches a page first gets it on its NUMA node; the kernels' threads then find their block's
 * pages there. */
#define PARALLEL_BYTES (8u << 20)
#define PIECE_BYTES (256u << 10)

typedef struct bulk {
  uint8_t *dst;
  const uint8_t *src; /* NULL: a fill */
  const void *pattern;
  size_t size, pattern_size;
} bulk_t;

/* One piece (group) of a bulk copy or fill; pieces are multiples of any fill pattern's size. */
static kc_status_t bulk_piece(const kc_host_group_t *g) {
  const bulk_t *b = g->args[0];
  size_t off = (size_t)g->group_id[0] * PIECE_BYTES;
  size_t n = b->size - off < PIECE_BYTES ? b->size - off : PIECE_BYTES;
  if (b->src)
    memcpy(b->dst + off, b->src + off, n);
  else
    cpu_fill(b->dst + off, n, b->pattern, b->pattern_size);
  return KC_OK;
}

static ze_result_t bulk_run(cpu_device_t *dev, const bulk_t *b) {
  uintptr_t d = (uintptr_t)b->dst, s = (uintptr_t)b->src;
  bool overlap = b->src && d < s + b->size && s < d + b->size;
  if (b->size < PARALLEL_BYTES || overlap) {
    if (b->src)
      memmove(b->dst, b->src, b->size);
    else
      cpu_fill(b->dst, b->size, b->pattern, b->pattern_size);
    return ZE_RESULT_SUCCESS;
  }
  void *args[1] = {(void *)b};
  /* A "work-item" per cache line, so the pool sees the launch's real size. */
  cpu_launch_t l = {.run = bulk_piece,
                    .group_count = {(b->size + PIECE_BYTES - 1) / PIECE_BYTES, 1, 1},
                    .local_size = {PIECE_BYTES / 64, 1, 1},
                    .args = args,
                    .num_args = 1};
  return cpu_launch_run(dev, &l);
}

ze_result_t cpu_copy_run(cpu_device_t *dev, void *dst, const void *src, size_t size) {
  return bulk_run(dev, &(bulk_t){.dst = dst, .src = src, .size = size});
}

ze_result_t cpu_fill_run(cpu_device_t *dev, void *dst, size_t size, const void *pattern,
                         size_t pattern_size) {
  return bulk_run(
      dev, &(bulk_t){.dst = dst, .pattern = pattern, .size = size, .pattern_size = pattern_size});
}

static ze_result_t check_append(ze_command_list_handle_t h, ze_event_handle_t signal,
                                uint32_t num_wait, const ze_event_handle_t *wait) {
  ZED_CHECK(h, ZED_KIND_LIST);
  return cpu_check_events(signal, num_wait, wait);
}

ze_result_t cpu_command_list_append_memory_copy(ze_command_list_handle_t h, void *dst,
                                                const void *src, size_t size,
                                                ze_event_handle_t signal, uint32_t num_wait,
                                                ze_event_handle_t *wait) {
  ZED_CHECK_PTR(dst);
  ZED_CHECK_PTR(src);
  ze_result_t r = check_append(h, signal, num_wait, wait);
  if (r != ZE_RESULT_SUCCESS) return r;
  cpu_cmd_t cmd = {.kind = CPU_CMD_COPY, .u.copy = {dst, src, size}};
  return cpu_list_append(LIST(h), &cmd, signal, num_wait, wait);
}

/* Every context's memory is this process's memory: a copy between contexts is a copy. */
ze_result_t cpu_command_list_append_memory_copy_from_context(
    ze_command_list_handle_t h, void *dst, ze_context_handle_t src_ctx, const void *src,
    size_t size, ze_event_handle_t signal, uint32_t num_wait, ze_event_handle_t *wait) {
  ZED_CHECK(src_ctx, ZED_KIND_CONTEXT);
  return cpu_command_list_append_memory_copy(h, dst, src, size, signal, num_wait, wait);
}

/* The caller may reuse the pattern's buffer once the append returns. */
ze_result_t cpu_command_list_append_memory_fill(ze_command_list_handle_t h, void *dst,
                                                const void *pattern, size_t pattern_size,
                                                size_t size, ze_event_handle_t signal,
                                                uint32_t num_wait, ze_event_handle_t *wait) {
  ZED_CHECK_PTR(dst);
  ZED_CHECK_PTR(pattern);
  if (pattern_size == 0 || (pattern_size & (pattern_size - 1)) || pattern_size > 256)
    return ZE_RESULT_ERROR_INVALID_SIZE;
  ze_result_t r = check_append(h, signal, num_wait, wait);
  if (r != ZE_RESULT_SUCCESS) return r;
  /* An immediate list runs the fill now; a regular one needs its own copy of the pattern. */
  uint8_t *copy = NULL;
  if (!LIST(h)->immediate) {
    copy = malloc(pattern_size);
    if (!copy) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    memcpy(copy, pattern, pattern_size);
  }
  cpu_cmd_t cmd = {.kind = CPU_CMD_FILL,
                   .u.fill = {dst, size, pattern_size, copy ? copy : pattern, copy}};
  return cpu_list_append(LIST(h), &cmd, signal, num_wait, wait);
}
/* One command per row, so a regular list needs no extra bookkeeping for regions. */
ze_result_t cpu_command_list_append_memory_copy_region(
    ze_command_list_handle_t h, void *dst, const ze_copy_region_t *dst_region, uint32_t dst_pitch,
    uint32_t dst_slice_pitch, const void *src, const ze_copy_region_t *src_region,
    uint32_t src_pitch, uint32_t src_slice_pitch, ze_event_handle_t signal, uint32_t num_wait,
    ze_event_handle_t *wait) {
  ZED_CHECK_PTR(dst);
  ZED_CHECK_PTR(src);
  ZED_CHECK_PTR(dst_region);
  ZED_CHECK_PTR(src_region);
  if (dst_region->width != src_region->width || dst_region->height != src_region->height ||
      dst_region->depth != src_region->depth)
    return ZE_RESULT_ERROR_OVERLAPPING_REGIONS;
  ze_result_t r = check_append(h, signal, num_wait, wait);
  if (r != ZE_RESULT_SUCCESS) return r;
  for (uint32_t i = 0; i < num_wait && r == ZE_RESULT_SUCCESS; i++) {
    cpu_cmd_t w = {.kind = CPU_CMD_WAIT, .event = (cpu_event_t *)wait[i]};
    r = cpu_list_submit(LIST(h), &w);
  }
  uint32_t depth = src_region->depth ? src_region->depth : 1;
  uint32_t height = src_region->height ? src_region->height : 1;
  for (uint32_t z = 0; z < depth && r == ZE_RESULT_SUCCESS; z++) {
    for (uint32_t y = 0; y < height && r == ZE_RESULT_SUCCESS; y++) {
      size_t so = (size_t)(src_region->originZ + z) * src_slice_pitch +
                  (size_t)(src_region->originY + y) * src_pitch + src_region->originX;
      size_t d = (size_t)(dst_region->originZ + z) * dst_slice_pitch +
                 (size_t)(dst_region->originY + y) * dst_pitch + dst_region->originX;
      cpu_cmd_t cmd = {
          .kind = CPU_CMD_COPY,
          .u.copy = {(uint8_t *)dst + d, (const uint8_t *)src + so, src_region->width}};
      r = cpu_list_submit(LIST(h), &cmd);
    }
  }
  if (r == ZE_RESULT_SUCCESS && signal) {
    cpu_cmd_t s = {.kind = CPU_CMD_SIGNAL, .event = (cpu_event_t *)signal};
    r = cpu_list_submit(LIST(h), &s);
  }
  return r;
}

ze_result_t cpu_command_list_append_memory_prefetch(ze_command_list_handle_t h, const void *ptr,
                                                    size_t size) {
  ZED_CHECK(h, ZED_KIND_LIST);
  ZED_CHECK_PTR(ptr);
  (void)size;
  return ZE_RESULT_SUCCESS;
}

ze_result_t cpu_command_list_append_mem_advise(ze_command_list_handle_t h, ze_device_handle_t dev,
                                               const void *ptr, size_t size,
                                               ze_memory_advice_t advice) {
  ZED_CHECK(h, ZED_KIND_LIST);
  ZED_CHECK(dev, ZED_KIND_DEVICE);
  ZED_CHECK_PTR(ptr);
  (void)size;
  (void)advice;
  return ZE_RESULT_SUCCESS;
}
