/* Command queues and command lists. A queue is a CUDA stream; a regular list records commands
 * (kernel arguments copied at append, as Level Zero requires) and replays them on a queue's
 * stream at execute; an immediate list runs each command on its own stream as it is appended.
 */
#include "cuda_driver.h"

#include <stdlib.h>
#include <string.h>

static ze_result_t stream_create(cuda_device_t *d, CUstream *s) {
  ze_result_t r = cuda_use(d);
  return r != ZE_RESULT_SUCCESS ? r : cuda_to_ze(cuda.cuStreamCreate(s, CU_STREAM_NON_BLOCKING));
}

ze_result_t cuda_queue_create(ze_context_handle_t c, ze_device_handle_t dh,
                              const ze_command_queue_desc_t *desc, ze_command_queue_handle_t *out) {
  ZED_CHECK(c, ZED_KIND_CONTEXT);
  ZED_CHECK(dh, ZED_KIND_DEVICE);
  ZED_CHECK_PTR(desc);
  ZED_CHECK_PTR(out);
  cuda_queue_t *q = calloc(1, sizeof *q);
  if (!q) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  q->device = (cuda_device_t *)dh;
  q->synchronous = desc->mode == ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS;
  ze_result_t r = stream_create(q->device, &q->stream);
  if (r != ZE_RESULT_SUCCESS) {
    free(q);
    return r;
  }
  zed_object_init(&q->obj, ZED_KIND_QUEUE);
  *out = (ze_command_queue_handle_t)q;
  return ZE_RESULT_SUCCESS;
}

static void queue_free(cuda_queue_t *q) {
  cuda_use(q->device);
  cuda.cuStreamSynchronize(q->stream);
  cuda_queue_completed(q, UINT64_MAX); /* no deferred event may outlive its stream */
  cuda.cuStreamDestroy(q->stream);
  zed_object_retire(&q->obj);
  free(q);
}

ze_result_t cuda_queue_destroy(ze_command_queue_handle_t h) {
  ZED_CHECK(h, ZED_KIND_QUEUE);
  queue_free((cuda_queue_t *)h);
  return ZE_RESULT_SUCCESS;
}

ze_result_t cuda_queue_synchronize(ze_command_queue_handle_t h, uint64_t timeout) {
  ZED_CHECK(h, ZED_KIND_QUEUE);
  cuda_queue_t *q = (cuda_queue_t *)h;
  cuda_use(q->device);
  uint64_t seq = cuda_queue_submitted(q);
  ze_result_t r =
      timeout == UINT64_MAX ? ZE_RESULT_NOT_READY : cuda_to_ze(cuda.cuStreamQuery(q->stream));
  if (r == ZE_RESULT_NOT_READY && timeout > 0) {
    /* Bounded waits are rare; wait fully rather than spin (the result is then exact). */
    r = cuda_to_ze(cuda.cuStreamSynchronize(q->stream));
  }
  if (r == ZE_RESULT_SUCCESS) cuda_queue_completed(q, seq);
  return r;
}

ze_result_t cuda_queue_execute(ze_command_queue_handle_t h, uint32_t n,
                               ze_command_list_handle_t *lists, ze_fence_handle_t fence) {
  ZED_CHECK(h, ZED_KIND_QUEUE);
  ZED_CHECK_PTR(lists);
  cuda_queue_t *q = (cuda_queue_t *)h;
  ze_result_t r = cuda_use(q->device);
  for (uint32_t i = 0; i < n && r == ZE_RESULT_SUCCESS; ++i) {
    ZED_CHECK(lists[i], ZED_KIND_LIST);
    cuda_list_t *l = (cuda_list_t *)lists[i];
    if (l->immediate) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    for (size_t c = 0; c < l->count && r == ZE_RESULT_SUCCESS; ++c)
      r = cuda_cmd_run(&l->cmds[c], q);
  }
  if (r == ZE_RESULT_SUCCESS && fence) {
    ZED_CHECK(fence, ZED_KIND_FENCE);
    cuda_fence_t *f = (cuda_fence_t *)fence;
    r = cuda_to_ze(cuda.cuEventRecord(f->ev, q->stream));
    if (r == ZE_RESULT_SUCCESS) f->state = CUDA_EV_RECORDED;
  }
  if (r == ZE_RESULT_SUCCESS && q->synchronous) r = cuda_to_ze(cuda.cuStreamSynchronize(q->stream));
  return r;
}

ze_result_t cuda_list_create(ze_context_handle_t c, ze_device_handle_t d,
                             const ze_command_list_desc_t *desc, ze_command_list_handle_t *out) {
  ZED_CHECK(c, ZED_KIND_CONTEXT);
  ZED_CHECK(d, ZED_KIND_DEVICE);
  ZED_CHECK_PTR(desc);
  ZED_CHECK_PTR(out);
  cuda_list_t *l = calloc(1, sizeof *l);
  if (!l) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  l->device = (cuda_device_t *)d;
  l->context = (cuda_context_t *)c;
  zed_object_init(&l->obj, ZED_KIND_LIST);
  *out = (ze_command_list_handle_t)l;
  return ZE_RESULT_SUCCESS;
}

ze_result_t cuda_list_create_immediate(ze_context_handle_t c, ze_device_handle_t d,
                                       const ze_command_queue_desc_t *desc,
                                       ze_command_list_handle_t *out) {
  ZED_CHECK_PTR(out);
  ze_command_queue_handle_t q;
  ze_result_t r = cuda_queue_create(c, d, desc, &q);
  if (r != ZE_RESULT_SUCCESS) return r;
  cuda_list_t *l = calloc(1, sizeof *l);
  if (!l) {
    queue_free((cuda_queue_t *)q);
    return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  }
  l->device = (cuda_device_t *)d;
  l->context = (cuda_context_t *)c;
  l->immediate = (cuda_queue_t *)q;
  zed_object_init(&l->obj, ZED_KIND_LIST);
  *out = (ze_command_list_handle_t)l;
  return ZE_RESULT_SUCCESS;
}

void cuda_cmd_free(cuda_cmd_t *c) {
  free(c->waits); /* NULL when inline */
  free(c->values);
  c->waits = NULL;
  c->values = NULL;
}

ze_result_t cuda_list_reset(ze_command_list_handle_t h) {
  ZED_CHECK(h, ZED_KIND_LIST);
  cuda_list_t *l = (cuda_list_t *)h;
  for (size_t i = 0; i < l->count; ++i)
    cuda_cmd_free(&l->cmds[i]);
  l->count = 0;
  return ZE_RESULT_SUCCESS;
}

ze_result_t cuda_list_destroy(ze_command_list_handle_t h) {
  ze_result_t r = cuda_list_reset(h);
  if (r != ZE_RESULT_SUCCESS) return r;
  cuda_list_t *l = (cuda_list_t *)h;
  if (l->immediate) queue_free(l->immediate);
  free(l->cmds);
  zed_object_retire(&l->obj);
  free(l);
  return ZE_RESULT_SUCCESS;
}

ze_result_t cuda_list_close(ze_command_list_handle_t h) {
  ZED_CHECK(h, ZED_KIND_LIST);
  return ZE_RESULT_SUCCESS;
}

/* Fills the common part of a command; the caller sets the operation. Only the fields every
 * command reads are cleared (the command is large and built once per launch). */
static ze_result_t cmd_init(cuda_cmd_t *c, cuda_cmd_kind_t kind, ze_event_handle_t sig,
                            uint32_t nwait, ze_event_handle_t *waits) {
  c->kind = kind;
  c->waits = NULL;
  c->values = NULL;
  c->nwait = 0;
  if (sig) ZED_CHECK(sig, ZED_KIND_EVENT);
  c->signal = (cuda_event_t *)sig;
  if (nwait) {
    ZED_CHECK_PTR(waits);
    cuda_event_t **w = c->wbuf;
    if (nwait > CUDA_CMD_INLINE) {
      w = c->waits = malloc(nwait * sizeof *c->waits);
      if (!w) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    for (uint32_t i = 0; i < nwait; ++i) {
      if (zed_check(waits[i], ZED_KIND_EVENT) != ZE_RESULT_SUCCESS) {
        cuda_cmd_free(c);
        return ZE_RESULT_ERROR_INVALID_ARGUMENT;
      }
      w[i] = (cuda_event_t *)waits[i];
    }
  }
  c->nwait = nwait;
  return ZE_RESULT_SUCCESS;
}

/* Runs now on an immediate list, else keeps the command for execute. Takes c's storage. */
static ze_result_t submit(cuda_list_t *l, cuda_cmd_t *c) {
  if (l->immediate) {
    ze_result_t r = cuda_use(l->device);
    if (r == ZE_RESULT_SUCCESS) r = cuda_cmd_run(c, l->immediate);
    if (r == ZE_RESULT_SUCCESS && l->immediate->synchronous)
      r = cuda_to_ze(cuda.cuStreamSynchronize(l->immediate->stream));
    cuda_cmd_free(c);
    return r;
  }
  if (l->count == l->capacity) {
    size_t cap = l->capacity ? 2 * l->capacity : 16;
    cuda_cmd_t *cmds = realloc(l->cmds, cap * sizeof *cmds);
    if (!cmds) {
      cuda_cmd_free(c);
      return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    l->cmds = cmds;
    l->capacity = cap;
  }
  l->cmds[l->count++] = *c;
  return ZE_RESULT_SUCCESS;
}

ze_result_t cuda_list_append_barrier(ze_command_list_handle_t h, ze_event_handle_t sig,
                                     uint32_t nwait, ze_event_handle_t *waits) {
  ZED_CHECK(h, ZED_KIND_LIST);
  cuda_cmd_t c;
  memset(&c, 0, sizeof c);
  ze_result_t r = cmd_init(&c, CUDA_CMD_BARRIER, sig, nwait, waits);
  return r != ZE_RESULT_SUCCESS ? r : submit((cuda_list_t *)h, &c);
}

ze_result_t cuda_list_append_memory_ranges_barrier(ze_command_list_handle_t h, uint32_t n,
                                                   const size_t *sizes, const void **ranges,
                                                   ze_event_handle_t sig, uint32_t nwait,
                                                   ze_event_handle_t *waits) {
  (void)n;
  (void)sizes;
  (void)ranges;
  return cuda_list_append_barrier(h, sig, nwait, waits);
}

ze_result_t cuda_list_append_copy(ze_command_list_handle_t h, void *dst, const void *src,
                                  size_t size, ze_event_handle_t sig, uint32_t nwait,
                                  ze_event_handle_t *waits) {
  ZED_CHECK(h, ZED_KIND_LIST);
  ZED_CHECK_PTR(dst);
  ZED_CHECK_PTR(src);
  cuda_cmd_t c;
  memset(&c, 0, sizeof c);
  ze_result_t r = cmd_init(&c, CUDA_CMD_COPY, sig, nwait, waits);
  if (r != ZE_RESULT_SUCCESS) return r;
  c.dst = (CUdeviceptr)(uintptr_t)dst;
  c.src = (CUdeviceptr)(uintptr_t)src;
  c.size = size;
  cuda_list_t *l = (cuda_list_t *)h;
  cuda_driver_t *drv = cuda_driver();
  if (drv && drv->count > 1) { /* one GPU's memory to another's: a peer copy */
    cuda_device_t *sd = cuda_alloc_device(l->context, src),
                  *dd = cuda_alloc_device(l->context, dst);
    if (sd && dd && sd != dd) {
      c.src_device = sd;
      c.dst_device = dd;
    }
  }
  return submit(l, &c);
}

/* Patterns of 1, 2 and 4 bytes (or any pattern of one repeated byte) map to cuMemsetD8/16/32;
 * longer ones, up to 128 bytes, are written once and then doubled by device copies. */
ze_result_t cuda_list_append_fill(ze_command_list_handle_t h, void *p, const void *pattern,
                                  size_t pattern_size, size_t size, ze_event_handle_t sig,
                                  uint32_t nwait, ze_event_handle_t *waits) {
  ZED_CHECK(h, ZED_KIND_LIST);
  ZED_CHECK_PTR(p);
  ZED_CHECK_PTR(pattern);
  const unsigned char *b = pattern;
  size_t ps = pattern_size;
  if (ps == 0 || ps > 128 || (ps & (ps - 1))) return ZE_RESULT_ERROR_INVALID_SIZE;
  int uniform = 1;
  for (size_t i = 1; i < ps; ++i)
    uniform &= b[i] == b[0];
  if (uniform) ps = 1;
  if (size % ps) return ZE_RESULT_ERROR_INVALID_SIZE;
  int copies = ps > 4 || (uintptr_t)p % ps; /* cuMemsetD16/32 need aligned destinations */
  cuda_cmd_t c;
  memset(&c, 0, sizeof c);
  ze_result_t r = cmd_init(&c, CUDA_CMD_FILL, sig, nwait, waits);
  if (r != ZE_RESULT_SUCCESS) return r;
  c.dst = (CUdeviceptr)(uintptr_t)p;
  c.size = size;
  c.pattern_size = (uint32_t)ps;
  c.fill_by_copies = copies;
  memcpy(c.pattern, b, ps);
  return submit((cuda_list_t *)h, &c);
}

ze_result_t cuda_list_append_signal(ze_command_list_handle_t h, ze_event_handle_t ev) {
  ZED_CHECK(ev, ZED_KIND_EVENT);
  return cuda_list_append_barrier(h, ev, 0, NULL);
}

ze_result_t cuda_list_append_wait(ze_command_list_handle_t h, uint32_t n, ze_event_handle_t *evs) {
  return cuda_list_append_barrier(h, NULL, n, evs);
}

ze_result_t cuda_list_append_reset(ze_command_list_handle_t h, ze_event_handle_t ev) {
  ZED_CHECK(h, ZED_KIND_LIST);
  ZED_CHECK(ev, ZED_KIND_EVENT);
  cuda_cmd_t c;
  memset(&c, 0, sizeof c);
  ze_result_t r = cmd_init(&c, CUDA_CMD_RESET_EVENT, NULL, 0, NULL);
  if (r != ZE_RESULT_SUCCESS) return r;
  c.signal = (cuda_event_t *)ev;
  return submit((cuda_list_t *)h, &c);
}

/* A pattern longer than 4 bytes (or a misaligned one): one copy from the host, then copies
 * that double the filled prefix, log2(size / pattern) of them. CUDA stages a pageable host
 * source before cuMemcpyAsync returns, so the command's pattern buffer may go away. */
static ze_result_t fill_by_copies(const cuda_cmd_t *c, CUstream s) {
  size_t done = c->pattern_size < c->size ? c->pattern_size : c->size;
  CUresult r = cuda.cuMemcpyAsync(c->dst, (CUdeviceptr)(uintptr_t)c->pattern, done, s);
  while (r == CUDA_SUCCESS && done < c->size) {
    size_t n = done < c->size - done ? done : c->size - done;
    r = cuda.cuMemcpyAsync(c->dst + done, c->dst, n, s);
    done += n;
  }
  return cuda_to_ze(r);
}

static ze_result_t run_fill(const cuda_cmd_t *c, CUstream s) {
  uint16_t v16;
  uint32_t v32;
  if (c->fill_by_copies) return fill_by_copies(c, s);
  switch (c->pattern_size) {
  case 1:
    return cuda_to_ze(cuda.cuMemsetD8Async(c->dst, c->pattern[0], c->size, s));
  case 2:
    memcpy(&v16, c->pattern, 2);
    return cuda_to_ze(cuda.cuMemsetD16Async(c->dst, v16, c->size / 2, s));
  default:
    memcpy(&v32, c->pattern, 4);
    return cuda_to_ze(cuda.cuMemsetD32Async(c->dst, v32, c->size / 4, s));
  }
}

/* Between two devices: cuMemcpyPeerAsync, direct over NVLink or PCIe once peer access is
 * enabled both ways (cuda_peer.c), else staged through host memory by the CUDA driver. */
static ze_result_t run_peer_copy(const cuda_cmd_t *c, CUstream s) {
  cuda_peer_access(c->dst_device, c->src_device);
  cuda_peer_access(c->src_device, c->dst_device);
  return cuda_to_ze(
      cuda.cuMemcpyPeerAsync(c->dst, c->dst_device->ctx, c->src, c->src_device->ctx, c->size, s));
}

/* A device wait: nothing for an event already complete or signalled earlier on this stream;
 * a deferred event of another stream (of this device or another) is recorded first. */
static ze_result_t wait_for(cuda_event_t *e, cuda_queue_t *q) {
  if (e->state == CUDA_EV_DEFERRED) {
    if (e->queue == q) return ZE_RESULT_SUCCESS; /* the stream is in order */
    ze_result_t r = cuda_event_materialise(e);
    if (r != ZE_RESULT_SUCCESS) return r;
  }
  if (e->state == CUDA_EV_RECORDED && e->stream != q->stream)
    return cuda_to_ze(cuda.cuStreamWaitEvent(q->stream, e->ev, 0));
  return ZE_RESULT_SUCCESS;
}

ze_result_t cuda_cmd_run(const cuda_cmd_t *c, cuda_queue_t *q) {
  CUstream s = q->stream;
  ze_result_t r = ZE_RESULT_SUCCESS;
  cuda_event_t *const *waits = cuda_cmd_waits(c);
  for (uint32_t i = 0; i < c->nwait && r == ZE_RESULT_SUCCESS; ++i)
    r = wait_for(waits[i], q);
  if (r != ZE_RESULT_SUCCESS) return r;
  switch (c->kind) {
  case CUDA_CMD_COPY:
    r = c->src_device ? run_peer_copy(c, s)
                      : cuda_to_ze(cuda.cuMemcpyAsync(c->dst, c->src, c->size, s));
    break;
  case CUDA_CMD_FILL:
    r = run_fill(c, s);
    break;
  case CUDA_CMD_LAUNCH:
    r = cuda_launch(c, s);
    break;
  case CUDA_CMD_RESET_EVENT:
    cuda_event_set_state(c->signal, CUDA_EV_RESET);
    return ZE_RESULT_SUCCESS;
  case CUDA_CMD_BARRIER:
    break; /* a stream is in order */
  }
  if (r == ZE_RESULT_SUCCESS && c->signal) r = cuda_event_signal(c->signal, q);
  return r;
}

/* The command for a launch (cuda_module.c checks the kernel); built on the stack, so an
 * immediate list's launch allocates nothing. */
ze_result_t cuda_list_submit_launch(ze_command_list_handle_t h, cuda_kernel_t *k,
                                    const ze_group_count_t *groups, ze_event_handle_t sig,
                                    uint32_t nwait, ze_event_handle_t *waits) {
  ZED_CHECK(h, ZED_KIND_LIST);
  cuda_cmd_t c;
  ze_result_t r = cmd_init(&c, CUDA_CMD_LAUNCH, sig, nwait, waits);
  if (r == ZE_RESULT_SUCCESS) r = cuda_launch_prepare(&c, k, groups);
  if (r != ZE_RESULT_SUCCESS) {
    cuda_cmd_free(&c);
    return r;
  }
  return submit((cuda_list_t *)h, &c);
}
