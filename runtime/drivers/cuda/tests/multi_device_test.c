/* The CUDA driver with two GPUs, on fake_cuda.c (a libcuda that keeps CUDA's context rules and
 * counts the calls that break them), so it runs on machines without a GPU: events signalled on
 * the second device's queues and waited for on the host (the first kernel on cuda:gpu:1 used to
 * fail there: its event had been made in the first device's context), events of one device
 * waited for by another's queue, copies between the devices' memory (cuMemcpyPeerAsync, with
 * peer access enabled once per pair), fills, and frees of both devices' memory.
 * Usage: multi_device_test DRIVER_SO FAKE_LIBCUDA_SO. */
#include <level_zero/ze_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dlfcn.h>

#include "ze_check.h"

typedef struct fake_stats {
  long broken_rules, peer_copies, peer_enabled, cross_plain_copies, events_created;
} fake_stats;
static void (*stats_of)(fake_stats *);

static ze_context_handle_t ctx;
static ze_device_handle_t devs[2];
static ze_command_list_handle_t lists[2];
static ze_event_pool_handle_t pool;

static ze_event_handle_t event(uint32_t i) {
  ze_event_desc_t d = {.stype = ZE_STRUCTURE_TYPE_EVENT_DESC, .index = i};
  ze_event_handle_t e;
  ZE(zeEventCreate(pool, &d, &e));
  return e;
}

static void *device_alloc(int d, size_t n) {
  ze_device_mem_alloc_desc_t dd = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
  void *p = NULL;
  ZE(zeMemAllocDevice(ctx, &dd, n, 0, devs[d], &p));
  return p;
}

static void *host_alloc(size_t n) {
  ze_host_mem_alloc_desc_t hd = {.stype = ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC};
  void *p = NULL;
  ZE(zeMemAllocHost(ctx, &hd, n, 0, &p));
  return p;
}

/* The failure of the issue: a command on the second device signals an event, the host waits. */
static void test_signal_on_second_device(void) {
  enum { N = 256 };
  uint32_t *d1 = device_alloc(1, N * 4), *h = host_alloc(N * 4);
  uint32_t pattern = 0xdeadbeef;
  ze_event_handle_t filled = event(0), copied = event(1);
  ZE(zeCommandListAppendMemoryFill(lists[1], d1, &pattern, 4, N * 4, filled, 0, NULL));
  ZE(zeCommandListAppendMemoryCopy(lists[1], h, d1, N * 4, copied, 1, &filled));
  ze_result_t r = zeEventHostSynchronize(copied, UINT64_MAX);
  CHECK(r == ZE_RESULT_SUCCESS, "zeEventHostSynchronize on device 1's event: 0x%x", r);
  CHECK(zeEventQueryStatus(filled) == ZE_RESULT_SUCCESS, "the fill's event is complete");
  CHECK(h[0] == pattern && h[N - 1] == pattern, "device 1's fill reached the host: %x", h[0]);
  /* The same event, reset, now signalled on device 0: it gets a CUDA event of that context. */
  ZE(zeEventHostReset(copied));
  ZE(zeCommandListAppendMemoryCopy(lists[0], h, h + 1, 4, copied, 0, NULL));
  CHECK(zeEventHostSynchronize(copied, UINT64_MAX) == ZE_RESULT_SUCCESS,
        "an event used on device 1 then on device 0");
  ZE(zeEventDestroy(filled));
  ZE(zeEventDestroy(copied));
  ZE(zeMemFree(ctx, d1));
  ZE(zeMemFree(ctx, h));
}

/* Device 1's queue waits for an event of device 0 (cuStreamWaitEvent across contexts), and a
 * copy moves device 0's memory to device 1's directly. */
static void test_cross_device_copy_and_wait(void) {
  enum { N = 1024 };
  uint32_t *d0 = device_alloc(0, N * 4), *d1 = device_alloc(1, N * 4), *h = host_alloc(N * 4);
  for (uint32_t i = 0; i < N; ++i)
    h[i] = i * 7u + 1;
  ze_event_handle_t up = event(2), across = event(3), down = event(4);
  fake_stats before, after;
  stats_of(&before);
  ZE(zeCommandListAppendMemoryCopy(lists[0], d0, h, N * 4, up, 0, NULL));
  ZE(zeCommandListAppendMemoryCopy(lists[1], d1, d0, N * 4, across, 1, &up));
  memset(h, 0, N * 4);
  ZE(zeCommandListAppendMemoryCopy(lists[1], h, d1, N * 4, down, 1, &across));
  ZE(zeEventHostSynchronize(down, UINT64_MAX));
  stats_of(&after);
  int ok = 1;
  for (uint32_t i = 0; i < N; ++i)
    ok &= h[i] == i * 7u + 1;
  CHECK(ok, "device 0 -> device 1 copy: h[1] = %u", h[1]);
  CHECK(after.peer_copies == before.peer_copies + 1, "one cuMemcpyPeerAsync (%ld)",
        after.peer_copies - before.peer_copies);
  CHECK(after.cross_plain_copies == before.cross_plain_copies, "no plain copy across devices");
  /* A second copy back: peer access stays enabled (once per pair, both ways). */
  ZE(zeEventHostReset(across));
  ZE(zeCommandListAppendMemoryCopy(lists[0], d0, d1, N * 4, across, 0, NULL));
  ZE(zeEventHostSynchronize(across, UINT64_MAX));
  fake_stats again;
  stats_of(&again);
  CHECK(again.peer_enabled == 2, "peer access enabled once each way (%ld)", again.peer_enabled);
  ze_bool_t can = 0;
  ZE(zeDeviceCanAccessPeer(devs[0], devs[1], &can));
  CHECK(can, "zeDeviceCanAccessPeer(0, 1)");
  ZE(zeEventDestroy(up));
  ZE(zeEventDestroy(across));
  ZE(zeEventDestroy(down));
  ZE(zeMemFree(ctx, d0));
  ZE(zeMemFree(ctx, h));
  (void)d1; /* left for zeContextDestroy, which frees it in device 1's context */
}

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  setenv("ZE_ENABLE_ALT_DRIVERS", argv[1], 1);
  setenv("KAPI_CUDA_LIBRARY", argv[2], 1);
  setenv("KAPI_FAKE_CUDA_DEVICES", "2", 1);
  void *fake = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
  *(void **)&stats_of = fake ? dlsym(fake, "fake_cuda_stats") : NULL;
  if (!stats_of) {
    printf("FAIL: cannot load %s\n", argv[2]);
    return 1;
  }
  ZE(zeInit(0));
  uint32_t nd = 1, n = 2;
  ze_driver_handle_t drv;
  ZE(zeDriverGet(&nd, &drv));
  ZE(zeDeviceGet(drv, &n, devs));
  CHECK(n == 2, "two devices, got %u", n);
  ze_context_desc_t cd = {.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC};
  ZE(zeContextCreate(drv, &cd, &ctx));
  ze_command_queue_desc_t qd = {.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC,
                                .mode = ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS};
  for (int i = 0; i < 2; ++i)
    ZE(zeCommandListCreateImmediate(ctx, devs[i], &qd, &lists[i]));
  ze_event_pool_desc_t pd = {.stype = ZE_STRUCTURE_TYPE_EVENT_POOL_DESC,
                             .flags = ZE_EVENT_POOL_FLAG_HOST_VISIBLE,
                             .count = 8};
  ZE(zeEventPoolCreate(ctx, &pd, 0, NULL, &pool));
  test_signal_on_second_device();
  test_cross_device_copy_and_wait();
  ZE(zeEventPoolDestroy(pool));
  for (int i = 0; i < 2; ++i)
    ZE(zeCommandListDestroy(lists[i]));
  ZE(zeContextDestroy(ctx));
  fake_stats s;
  stats_of(&s);
  CHECK(s.broken_rules == 0, "%ld calls broke a CUDA context rule", s.broken_rules);
  printf("%s: %ld CUDA events made, %ld peer copies\n", failures ? "FAILED" : "passed",
         s.events_created, s.peer_copies);
  return failures ? 1 : 0;
}
