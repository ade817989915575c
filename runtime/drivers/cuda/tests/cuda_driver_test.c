/* End-to-end tests of the CUDA Level Zero driver through the standard loader: devices and
 * properties, USM and copies, and the SPIR-V fixtures of compiler/tests/nvptx launched on the
 * GPU (saxpy with its bandwidth, local-memory reductions, atomics under contention with exact
 * counts, math against the host's libm, and a faulting kernel that must give an error).
 * Usage: cuda_driver_test DRIVER_SO FIXTURE_DIR. Exits 77 (ctest SKIP) with the reason when
 * there is no NVIDIA GPU or no libcuda.so.1. */
#define _GNU_SOURCE
#include <level_zero/ze_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ze_check.h"

static const char *fixtures;
static ze_context_handle_t ctx;
static ze_device_handle_t dev;
static ze_command_queue_handle_t queue;
static ze_command_list_handle_t list;

static void *read_fixture(const char *name, size_t *n) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s.spv", fixtures, name);
  FILE *f = fopen(path, "rb");
  if (!f) {
    printf("FAIL: cannot open %s\n", path);
    exit(1);
  }
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  void *b = malloc((size_t)len);
  *n = fread(b, 1, (size_t)len, f);
  fclose(f);
  return b;
}

static ze_module_handle_t module(const char *name) {
  size_t n;
  void *spv = read_fixture(name, &n);
  ze_module_desc_t d = {.stype = ZE_STRUCTURE_TYPE_MODULE_DESC,
                        .format = ZE_MODULE_FORMAT_IL_SPIRV,
                        .inputSize = n,
                        .pInputModule = spv};
  ze_module_handle_t m = NULL;
  ze_module_build_log_handle_t log = NULL;
  ze_result_t r = zeModuleCreate(ctx, dev, &d, &m, &log);
  if (r != ZE_RESULT_SUCCESS) {
    size_t sz = 0;
    zeModuleBuildLogGetString(log, &sz, NULL);
    char *text = malloc(sz + 1);
    zeModuleBuildLogGetString(log, &sz, text);
    printf("FAIL: module %s: 0x%x: %s\n", name, r, text);
    exit(1);
  }
  zeModuleBuildLogDestroy(log);
  free(spv);
  return m;
}

static ze_kernel_handle_t kernel(ze_module_handle_t m, const char *name) {
  ze_kernel_desc_t d = {.stype = ZE_STRUCTURE_TYPE_KERNEL_DESC, .pKernelName = name};
  ze_kernel_handle_t k;
  ZE(zeKernelCreate(m, &d, &k));
  return k;
}

static void *dev_alloc(size_t n) {
  ze_device_mem_alloc_desc_t d = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
  void *p;
  ZE(zeMemAllocDevice(ctx, &d, n, 64, dev, &p));
  return p;
}

static void *host_alloc(size_t n) {
  ze_host_mem_alloc_desc_t d = {.stype = ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC};
  void *p;
  ZE(zeMemAllocHost(ctx, &d, n, 64, &p));
  return p;
}

/* Runs what was appended to the list and waits; returns the queue's result. */
static ze_result_t run(void) {
  ZE(zeCommandListClose(list));
  ze_result_t r = zeCommandQueueExecuteCommandLists(queue, 1, &list, NULL);
  if (r == ZE_RESULT_SUCCESS) r = zeCommandQueueSynchronize(queue, UINT64_MAX);
  zeCommandListReset(list);
  return r;
}

static void launch(ze_kernel_handle_t k, uint32_t gx, uint32_t gy, uint32_t lx, uint32_t ly) {
  ZE(zeKernelSetGroupSize(k, lx, ly, 1));
  ze_group_count_t g = {gx, gy, 1};
  ZE(zeCommandListAppendLaunchKernel(list, k, &g, NULL, 0, NULL));
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void test_properties(void) {
  ze_device_properties_t p = {.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES};
  ZE(zeDeviceGetProperties(dev, &p));
  ze_device_compute_properties_t c = {.stype = ZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES};
  ZE(zeDeviceGetComputeProperties(dev, &c));
  printf("device: %s, vendor 0x%x, %u SMs, %u MHz, %.1f GiB, max group %u, shared %u B\n", p.name,
         p.vendorId, p.numSubslicesPerSlice, p.coreClockRate, p.maxMemAllocSize / 1073741824.0,
         c.maxTotalGroupSize, c.maxSharedLocalMemory);
  CHECK(p.type == ZE_DEVICE_TYPE_GPU && p.vendorId == 0x10de && p.name[0], "device identity");
  CHECK(c.maxTotalGroupSize >= 1024 && c.subGroupSizes[0] == 32, "compute properties");
  CHECK(p.numSubslicesPerSlice > 0 && p.maxMemAllocSize > (1ull << 30), "size properties");
}

static void test_memory(void) {
  size_t n = 1 << 20;
  unsigned *h = host_alloc(n * 4), *d = dev_alloc(n * 4), *d2 = dev_alloc(n * 4);
  ze_device_mem_alloc_desc_t dd = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
  ze_host_mem_alloc_desc_t hd = {.stype = ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC};
  unsigned *s;
  ZE(zeMemAllocShared(ctx, &dd, &hd, n * 4, 64, dev, (void **)&s));
  unsigned pat = 0xdeadbeef;
  for (size_t i = 0; i < n; ++i)
    h[i] = (unsigned)i * 7u;
  ZE(zeCommandListAppendMemoryFill(list, d, &pat, 4, n * 4, NULL, 0, NULL));
  ZE(zeCommandListAppendMemoryCopy(list, s, d, n * 4, NULL, 0, NULL));
  ZE(zeCommandListAppendMemoryCopy(list, d2, h, n * 4, NULL, 0, NULL));
  ZE(run());
  int ok = 1;
  for (size_t i = 0; i < n; ++i)
    ok &= s[i] == pat;
  CHECK(ok, "fill + device->shared copy");
  memset(h, 0, n * 4);
  ZE(zeCommandListAppendMemoryCopy(list, h, d2, n * 4, NULL, 0, NULL));
  ZE(run());
  ok = 1;
  for (size_t i = 0; i < n; ++i)
    ok &= h[i] == (unsigned)i * 7u;
  CHECK(ok, "host->device->host round trip");
  ze_memory_allocation_properties_t mp = {.stype = ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES};
  ZE(zeMemGetAllocProperties(ctx, d + 5, &mp, NULL));
  CHECK(mp.type == ZE_MEMORY_TYPE_DEVICE, "device alloc type %d", mp.type);
  ZE(zeMemGetAllocProperties(ctx, s, &mp, NULL));
  CHECK(mp.type == ZE_MEMORY_TYPE_SHARED, "shared alloc type %d", mp.type);
  ZE(zeMemGetAllocProperties(ctx, h, &mp, NULL));
  CHECK(mp.type == ZE_MEMORY_TYPE_HOST, "host alloc type %d", mp.type);
  void *big;
  CHECK(zeMemAllocShared(ctx, &dd, &hd, (size_t)1 << 50, 64, dev, &big) ==
            ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY,
        "oversized shared allocation refused");
  ZE(zeMemFree(ctx, h));
  ZE(zeMemFree(ctx, d));
  ZE(zeMemFree(ctx, d2));
  ZE(zeMemFree(ctx, s));
}

/* Patterns of 1 to 128 bytes, aligned or not, each checked byte by byte. */
static void test_fill_patterns(void) {
  const size_t n = 1 << 20;
  unsigned char *d = dev_alloc(n + 64), *h = malloc(n);
  unsigned char pat[128];
  for (int i = 0; i < 128; ++i)
    pat[i] = (unsigned char)(i * 37 + 11);
  size_t sizes[] = {1, 2, 4, 8, 16, 64, 128};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; ++s)
    for (size_t off = 0; off <= 2; off += 2) {
      size_t ps = sizes[s], len = n - (off ? ps : 0);
      ZE(zeCommandListAppendMemoryFill(list, d + off, pat, ps, len, NULL, 0, NULL));
      ZE(zeCommandListAppendMemoryCopy(list, h, d + off, len, NULL, 0, NULL));
      ZE(run());
      int ok = 1;
      for (size_t i = 0; i < len; ++i)
        ok &= h[i] == pat[i % ps];
      CHECK(ok, "fill with a %zu-byte pattern at offset %zu", ps, off);
    }
  zeMemFree(ctx, d);
  free(h);
}

/* The runtime's path: immediate lists, one per queue, ordered across queues by events. */
static void test_immediate_events(void) {
  ze_command_queue_desc_t qd = {.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC,
                                .mode = ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS};
  ze_command_list_handle_t a, b;
  ZE(zeCommandListCreateImmediate(ctx, dev, &qd, &a));
  ZE(zeCommandListCreateImmediate(ctx, dev, &qd, &b));
  ze_event_pool_desc_t pd = {.stype = ZE_STRUCTURE_TYPE_EVENT_POOL_DESC,
                             .flags = ZE_EVENT_POOL_FLAG_HOST_VISIBLE,
                             .count = 4};
  ze_event_pool_handle_t pool;
  ZE(zeEventPoolCreate(ctx, &pd, 1, &dev, &pool));
  ze_event_handle_t e[3];
  for (uint32_t i = 0; i < 3; ++i) {
    ze_event_desc_t ed = {.stype = ZE_STRUCTURE_TYPE_EVENT_DESC, .index = i};
    ZE(zeEventCreate(pool, &ed, &e[i]));
  }
  const size_t n = 64 << 20;
  unsigned char *d1 = dev_alloc(n), *d2 = dev_alloc(n), *h = host_alloc(n);
  CHECK(zeEventQueryStatus(e[0]) == ZE_RESULT_NOT_READY, "fresh event not signalled");
  unsigned char v = 0x5c, z = 0;
  ZE(zeCommandListAppendMemoryFill(a, d1, &v, 1, n, e[0], 0, NULL));
  ZE(zeCommandListAppendMemoryCopy(b, d2, d1, n, e[1], 1, &e[0])); /* b waits for a's fill */
  ZE(zeCommandListAppendMemoryFill(a, d1, &z, 1, n, NULL, 1, &e[1]));
  ZE(zeCommandListAppendMemoryCopy(a, h, d2, n, e[2], 0, NULL));
  ZE(zeEventHostSynchronize(e[2], UINT64_MAX));
  int ok = 1;
  for (size_t i = 0; i < n; i += 4093)
    ok &= h[i] == v;
  CHECK(ok, "cross-list ordering by events");
  CHECK(zeEventQueryStatus(e[0]) == ZE_RESULT_SUCCESS, "signalled event");
  ZE(zeEventHostReset(e[0]));
  CHECK(zeEventHostSynchronize(e[0], 1000000) == ZE_RESULT_NOT_READY, "reset event times out");
  ZE(zeEventHostSignal(e[0]));
  CHECK(zeEventHostSynchronize(e[0], 0) == ZE_RESULT_SUCCESS, "host-signalled event");
  for (int i = 0; i < 3; ++i)
    zeEventDestroy(e[i]);
  zeEventPoolDestroy(pool);
  zeCommandListDestroy(a);
  zeCommandListDestroy(b);
  zeMemFree(ctx, d1);
  zeMemFree(ctx, d2);
  zeMemFree(ctx, h);
}

/* Signal events are recorded lazily (cuda_event.c): waits on older events, queries that the
 * stream's state answers, resets and re-signals of still-deferred events, a timestamp pool's
 * eager records, and a list destroyed while its events are deferred. */
static void test_deferred_events(void) {
  ze_command_queue_desc_t qd = {.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC,
                                .mode = ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS};
  ze_command_list_handle_t a;
  ZE(zeCommandListCreateImmediate(ctx, dev, &qd, &a));
  ze_event_pool_desc_t pd = {.stype = ZE_STRUCTURE_TYPE_EVENT_POOL_DESC,
                             .flags = ZE_EVENT_POOL_FLAG_HOST_VISIBLE,
                             .count = 8};
  ze_event_pool_desc_t tpd = pd;
  tpd.flags |= ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP;
  ze_event_pool_handle_t pool, tpool;
  ZE(zeEventPoolCreate(ctx, &pd, 1, &dev, &pool));
  ZE(zeEventPoolCreate(ctx, &tpd, 1, &dev, &tpool));
  ze_event_handle_t e[8], t;
  for (uint32_t i = 0; i < 8; ++i) {
    ze_event_desc_t ed = {.stype = ZE_STRUCTURE_TYPE_EVENT_DESC, .index = i};
    ZE(zeEventCreate(pool, &ed, &e[i]));
  }
  ze_event_desc_t ed = {.stype = ZE_STRUCTURE_TYPE_EVENT_DESC};
  ZE(zeEventCreate(tpool, &ed, &t));
  const size_t n = 64 << 20;
  unsigned char *d = dev_alloc(n), *h = host_alloc(n);
  for (uint32_t i = 0; i < 6; ++i) {
    unsigned char v = (unsigned char)(i + 1);
    ZE(zeCommandListAppendMemoryFill(a, d, &v, 1, n, e[i], 0, NULL));
  }
  ZE(zeCommandListAppendMemoryCopy(a, h, d, n, t, 0, NULL));
  ZE(zeEventHostSynchronize(e[1], UINT64_MAX)); /* an older event: recorded at the wait */
  CHECK(zeEventQueryStatus(e[0]) == ZE_RESULT_SUCCESS, "older deferred event complete");
  ZE(zeEventHostSynchronize(t, UINT64_MAX));
  CHECK(h[0] == 6 && h[n - 1] == 6, "copy after six fills read %u", h[0]);
  for (uint32_t i = 0; i < 6; ++i)
    CHECK(zeEventQueryStatus(e[i]) == ZE_RESULT_SUCCESS, "event %u complete after the copy", i);
  unsigned char z = 0;
  ZE(zeCommandListAppendMemoryFill(a, d, &z, 1, n, e[6], 0, NULL));
  ZE(zeEventHostReset(e[6])); /* reset while deferred */
  CHECK(zeEventHostSynchronize(e[6], 1000000) == ZE_RESULT_NOT_READY, "reset deferred event");
  ZE(zeCommandListAppendMemoryFill(a, d, &z, 1, n, e[6], 0, NULL));
  ZE(zeCommandListAppendMemoryFill(a, d, &z, 1, n, e[6], 0, NULL)); /* signalled again */
  ze_result_t r;
  while ((r = zeEventQueryStatus(e[6])) == ZE_RESULT_NOT_READY)
    ;
  CHECK(r == ZE_RESULT_SUCCESS, "polled deferred event 0x%x", r);
  ZE(zeCommandListAppendMemoryFill(a, d, &z, 1, n, e[7], 0, NULL));
  CHECK(zeCommandListDestroy(a) == ZE_RESULT_SUCCESS, "destroy list with a deferred event");
  CHECK(zeEventQueryStatus(e[7]) == ZE_RESULT_SUCCESS, "event of a destroyed list complete");
  for (int i = 0; i < 8; ++i)
    zeEventDestroy(e[i]);
  zeEventDestroy(t);
  zeEventPoolDestroy(pool);
  zeEventPoolDestroy(tpool);
  zeMemFree(ctx, d);
  zeMemFree(ctx, h);
}

static void test_saxpy(void) {
  ze_module_handle_t m = module("saxpy");
  ze_kernel_handle_t k = kernel(m, "saxpy");
  uint32_t n = 1u << 28;
  size_t bytes = (size_t)n * 4;
  float *x = dev_alloc(bytes), *y = dev_alloc(bytes);
  float *h = malloc(bytes);
  for (uint32_t i = 0; i < n; ++i)
    h[i] = (float)(i % 1000);
  ZE(zeCommandListAppendMemoryCopy(list, x, h, bytes, NULL, 0, NULL));
  float one = 1.0f, a = 2.0f;
  ZE(zeCommandListAppendMemoryFill(list, y, &one, 4, bytes, NULL, 0, NULL));
  ZE(zeKernelSetArgumentValue(k, 0, 8, &y));
  ZE(zeKernelSetArgumentValue(k, 1, 8, &x));
  ZE(zeKernelSetArgumentValue(k, 2, 4, &a));
  ZE(zeKernelSetArgumentValue(k, 3, 4, &n));
  launch(k, n / 256, 1, 256, 1);
  ZE(zeCommandListAppendMemoryCopy(list, h, y, bytes, NULL, 0, NULL));
  ZE(run());
  int ok = 1;
  for (uint32_t i = 0; i < n; ++i)
    ok &= h[i] == 2.0f * (float)(i % 1000) + 1.0f;
  CHECK(ok, "saxpy result");
  const int reps = 20;
  for (int i = 0; i < reps; ++i)
    launch(k, n / 256, 1, 256, 1);
  ZE(zeCommandListClose(list));
  double t0 = now();
  ZE(zeCommandQueueExecuteCommandLists(queue, 1, &list, NULL));
  ZE(zeCommandQueueSynchronize(queue, UINT64_MAX));
  double t = (now() - t0) / reps;
  zeCommandListReset(list);
  printf("saxpy n=2^28, 256 per group: %.3f ms, %.0f GB/s (12 bytes per element)\n", t * 1e3,
         12.0 * n / t / 1e9);
  zeMemFree(ctx, x);
  zeMemFree(ctx, y);
  free(h);
  zeKernelDestroy(k);
  zeModuleDestroy(m);
}

/* One case of test_coarse: y = a*x + y over groups*size work-items, x and y offset by whole
 * floats from 16-byte aligned buffers (or y the same array as x); the element after the
 * last work-item must stay untouched. */
typedef struct coarse_case {
  uint32_t groups, size, x_off, y_off;
  int same;
} coarse_case_t;

static int run_coarse_case(ze_kernel_handle_t k, float *xb, float *yb, float *h,
                           const coarse_case_t *c) {
  uint32_t total = c->groups * c->size, cap = total + 8;
  for (uint32_t i = 0; i < cap; ++i)
    h[i] = (float)(i % 1000);
  ZE(zeCommandListAppendMemoryCopy(list, xb, h, cap * 4, NULL, 0, NULL));
  float one = 1.0f, a = 2.0f;
  ZE(zeCommandListAppendMemoryFill(list, yb, &one, 4, cap * 4, NULL, 0, NULL));
  float *x = xb + c->x_off, *y = c->same ? x : yb + c->y_off;
  ZE(zeKernelSetArgumentValue(k, 0, 8, &y));
  ZE(zeKernelSetArgumentValue(k, 1, 8, &x));
  ZE(zeKernelSetArgumentValue(k, 2, 4, &a));
  launch(k, c->groups, 1, c->size, 1);
  ZE(zeCommandListAppendMemoryCopy(list, h, c->same ? xb : yb, cap * 4, NULL, 0, NULL));
  ZE(run());
  uint32_t off = c->same ? c->x_off : c->y_off, bad = 0;
  for (uint32_t i = 0; i < cap; ++i) {
    float old = c->same ? (float)(i % 1000) : 1.0f;
    int inside = i >= off && i < off + total;
    float want = inside ? 2.0f * (float)((i - off + c->x_off) % 1000) + old : old;
    bad += h[i] != want;
  }
  CHECK(!bad, "coarse case %u x %u (x+%u, y+%u%s): %u wrong", c->groups, c->size, c->x_off,
        c->y_off, c->same ? ", in place" : "", bad);
  return !bad;
}

/* The coarsened entry (4 work-items per thread, 16-byte accesses) against one work-item per
 * thread: partial sets at the end, tiny launches, unaligned views (which must fall back to the
 * kernel's own entry) and in-place updates. */
static void test_coarse(void) {
  ze_module_handle_t m = module("coarse");
  ze_kernel_handle_t k = kernel(m, "stream_f32");
  static const coarse_case_t cases[] = {
      {1000003, 1, 0, 0, 0}, {1024, 256, 0, 0, 0}, {1, 3, 0, 0, 0},   {1000, 3, 1, 0, 0},
      {1000, 3, 0, 2, 0},    {1001, 5, 0, 0, 1},   {999, 7, 3, 0, 1}, {5, 1, 0, 0, 0},
  };
  uint32_t cap = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i)
    if (cases[i].groups * cases[i].size + 8 > cap) cap = cases[i].groups * cases[i].size + 8;
  float *x = dev_alloc(cap * 4), *y = dev_alloc(cap * 4), *h = malloc(cap * 4);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i)
    run_coarse_case(k, x, y, h, &cases[i]);
  zeMemFree(ctx, x);
  zeMemFree(ctx, y);
  free(h);
  zeKernelDestroy(k);
  zeModuleDestroy(m);
}

static void test_reduce(void) {
  ze_module_handle_t m = module("reduce");
  ze_kernel_handle_t ka = kernel(m, "reduce_arg"), kf = kernel(m, "reduce_fixed"),
                     ki = kernel(m, "ids2d");
  const uint32_t groups = 4096, L = 256, n = groups * L;
  float *in = host_alloc(n * 4), *out = host_alloc(groups * 4);
  int *iin = host_alloc(n * 4), *iout = host_alloc(groups * 4);
  for (uint32_t i = 0; i < n; ++i) {
    in[i] = (float)(i % 17);
    iin[i] = (int)(i % 1013);
  }
  ZE(zeKernelSetArgumentValue(ka, 0, 8, &in));
  ZE(zeKernelSetArgumentValue(ka, 1, 8, &out));
  ZE(zeKernelSetArgumentValue(ka, 2, L * 4, NULL));
  ZE(zeKernelSetArgumentValue(kf, 0, 8, &iin));
  ZE(zeKernelSetArgumentValue(kf, 1, 8, &iout));
  launch(ka, groups, 1, L, 1);
  launch(kf, groups, 1, L, 1);
  ZE(run());
  int ok = 1, iok = 1;
  for (uint32_t g = 0; g < groups; ++g) {
    double s = 0;
    long si = 0;
    for (uint32_t i = 0; i < L; ++i) {
      s += in[g * L + i];
      si += iin[g * L + i];
    }
    ok &= out[g] == (float)s;
    iok &= iout[g] == si;
  }
  CHECK(ok, "local-argument reduction");
  CHECK(iok, "fixed local array reduction");
  const uint32_t W = 64, H = 32;
  unsigned *ids = host_alloc(W * H * 4);
  ZE(zeKernelSetArgumentValue(ki, 0, 8, &ids));
  launch(ki, W / 16, H / 4, 16, 4);
  ZE(run());
  ok = 1;
  for (uint32_t y = 0; y < H; ++y)
    for (uint32_t x = 0; x < W; ++x)
      ok &= ids[y * W + x] == x + 1000 * y + 1000000 * (x % 16);
  CHECK(ok, "2-D ids");
  zeMemFree(ctx, in);
  zeMemFree(ctx, out);
  zeMemFree(ctx, iin);
  zeMemFree(ctx, iout);
  zeMemFree(ctx, ids);
  zeKernelDestroy(ka);
  zeKernelDestroy(kf);
  zeKernelDestroy(ki);
  zeModuleDestroy(m);
}

static void test_atomics(void) {
  ze_module_handle_t m = module("atomics");
  ze_kernel_handle_t kc = kernel(m, "count"), kfa = kernel(m, "fadd"), kl = kernel(m, "cas_lock");
  const uint32_t n = 1u << 22;
  int *c = host_alloc(64);
  unsigned *umax = (unsigned *)(c + 1);
  long *c64 = (long *)(c + 2);
  float *f = (float *)(c + 4), *fmx = (float *)(c + 5), *fmn = (float *)(c + 6);
  double *d = (double *)(c + 8);
  memset(c, 0, 64);
  *fmx = -1e30f;
  *fmn = 1e30f;
  ZE(zeKernelSetArgumentValue(kc, 0, 8, &c));
  ZE(zeKernelSetArgumentValue(kc, 1, 8, &umax));
  ZE(zeKernelSetArgumentValue(kc, 2, 8, &c64));
  ZE(zeKernelSetArgumentValue(kfa, 0, 8, &f));
  ZE(zeKernelSetArgumentValue(kfa, 1, 8, &d));
  ZE(zeKernelSetArgumentValue(kfa, 2, 8, &fmx));
  ZE(zeKernelSetArgumentValue(kfa, 3, 8, &fmn));
  launch(kc, n / 256, 1, 256, 1);
  launch(kfa, n / 256, 1, 256, 1);
  ZE(run());
  CHECK(*c == (int)n, "int add count %d, want %u", *c, n);
  CHECK(*umax == n - 1, "umax %u", *umax);
  CHECK(*c64 == (long)n * (n - 1) / 2, "64-bit add %ld", *c64);
  CHECK(*f == 0.5f * n, "float add %.1f, want %.1f", *f, 0.5 * n);
  CHECK(*d == 0.25 * n, "double add %.2f", *d);
  CHECK(*fmx == 6.0f && *fmn == -3.0f, "float max/min %g %g", *fmx, *fmn);
  int *lock = host_alloc(8), *counter = lock + 1;
  lock[0] = lock[1] = 0;
  ZE(zeKernelSetArgumentValue(kl, 0, 8, &lock));
  ZE(zeKernelSetArgumentValue(kl, 1, 8, &counter));
  launch(kl, 4096, 1, 64, 1);
  ZE(run());
  CHECK(*counter == 4096 && *lock == 0, "lock-protected counter %d", *counter);
  zeMemFree(ctx, c);
  zeMemFree(ctx, lock);
  zeKernelDestroy(kc);
  zeKernelDestroy(kfa);
  zeKernelDestroy(kl);
  zeModuleDestroy(m);
}

static double ulps32(float got, double want) {
  float w = (float)want;
  if (got == w) return 0;
  return fabs((double)got - want) / fabs((double)(nextafterf(w, INFINITY) - w));
}

static double ulps64(double got, long double want) {
  double w = (double)want;
  if (got == w) return 0;
  return (double)(fabsl((long double)got - want) / fabs(nextafter(w, INFINITY) - w));
}

static void test_math(void) {
  ze_module_handle_t m = module("math");
  ze_kernel_handle_t k32 = kernel(m, "math_f32"), k64 = kernel(m, "math_f64");
  const uint32_t n = 1 << 16;
  float *x = host_alloc(n * 4), *o = host_alloc(n * 32);
  double *xd = host_alloc(n * 8), *od = host_alloc(n * 64);
  for (uint32_t i = 0; i < n; ++i) {
    x[i] = 0.05f + 9.9f * (float)i / n;
    xd[i] = 0.05 + 9.9 * i / n;
  }
  ZE(zeKernelSetArgumentValue(k32, 0, 8, &o));
  ZE(zeKernelSetArgumentValue(k32, 1, 8, &x));
  ZE(zeKernelSetArgumentValue(k64, 0, 8, &od));
  ZE(zeKernelSetArgumentValue(k64, 1, 8, &xd));
  launch(k32, n / 128, 1, 128, 1);
  launch(k64, n / 128, 1, 128, 1);
  ZE(run());
  const char *names[8] = {"sin", "cos", "exp", "log", "pow", "sqrt", "tanh", "erf"};
  for (int f = 0; f < 8; ++f) {
    double worst = 0, worst64 = 0;
    for (uint32_t i = 0; i < n; ++i) {
      double v = x[i];
      long double vd = xd[i];
      double ref[8] = {sin(v), cos(v), exp(v), log(v), pow(v, 1.7f), sqrt(v), tanh(v), erf(v)};
      long double r64[8] = {sinl(vd),       cosl(vd),  expl(vd),  logl(vd),
                            powl(vd, 1.7L), sqrtl(vd), tanhl(vd), erfl(vd)};
      double u = ulps32(o[8 * i + f], ref[f]), u64 = ulps64(od[8 * i + f], r64[f]);
      if (u > worst) worst = u;
      if (u64 > worst64) worst64 = u64;
    }
    printf("math %-5s max error: f32 %.2f ulp, f64 %.2f ulp\n", names[f], worst, worst64);
    CHECK(worst <= 4.0 && worst64 <= 4.0, "%s too inaccurate", names[f]);
  }
  zeMemFree(ctx, x);
  zeMemFree(ctx, o);
  zeMemFree(ctx, xd);
  zeMemFree(ctx, od);
  zeKernelDestroy(k32);
  zeKernelDestroy(k64);
  zeModuleDestroy(m);
}

static void test_bad_module(void) {
  const char junk[64] = "definitely not SPIR-V";
  ze_module_desc_t d = {.stype = ZE_STRUCTURE_TYPE_MODULE_DESC,
                        .format = ZE_MODULE_FORMAT_IL_SPIRV,
                        .inputSize = sizeof junk,
                        .pInputModule = (const uint8_t *)junk};
  ze_module_handle_t m = NULL;
  ze_module_build_log_handle_t log = NULL;
  ze_result_t r = zeModuleCreate(ctx, dev, &d, &m, &log);
  size_t sz = 0;
  if (log) zeModuleBuildLogGetString(log, &sz, NULL);
  char *text = calloc(1, sz + 1);
  if (log) zeModuleBuildLogGetString(log, &sz, text);
  printf("bad module: 0x%x, log: %s\n", r, text);
  CHECK(r == ZE_RESULT_ERROR_MODULE_BUILD_FAILURE && strstr(text, "SPIR-V"), "bad module");
  free(text);
  if (log) zeModuleBuildLogDestroy(log);
}

/* Native binaries: a module made from zeModuleGetNativeBinary's bytes (cubin and PTX) runs
 * saxpy as the SPIR-V one does; with its cubin cut out it runs from the PTX; junk and a
 * damaged header are refused with INVALID_NATIVE_BINARY. */
static ze_result_t native_module(const void *bin, size_t n, ze_module_handle_t *m) {
  ze_module_desc_t d = {.stype = ZE_STRUCTURE_TYPE_MODULE_DESC,
                        .format = ZE_MODULE_FORMAT_NATIVE,
                        .inputSize = n,
                        .pInputModule = bin};
  ze_module_build_log_handle_t log = NULL;
  ze_result_t r = zeModuleCreate(ctx, dev, &d, m, &log);
  if (log) zeModuleBuildLogDestroy(log);
  return r;
}

static int saxpy_small(ze_module_handle_t m) {
  ze_kernel_handle_t k = kernel(m, "saxpy");
  uint32_t n = 4096;
  float *x = dev_alloc(n * 4), *y = dev_alloc(n * 4), *h = malloc(n * 4);
  for (uint32_t i = 0; i < n; ++i)
    h[i] = (float)i;
  ZE(zeCommandListAppendMemoryCopy(list, x, h, n * 4, NULL, 0, NULL));
  float one = 1.0f, a = 3.0f;
  ZE(zeCommandListAppendMemoryFill(list, y, &one, 4, n * 4, NULL, 0, NULL));
  ZE(zeKernelSetArgumentValue(k, 0, 8, &y));
  ZE(zeKernelSetArgumentValue(k, 1, 8, &x));
  ZE(zeKernelSetArgumentValue(k, 2, 4, &a));
  ZE(zeKernelSetArgumentValue(k, 3, 4, &n));
  launch(k, n / 256, 1, 256, 1);
  ZE(zeCommandListAppendMemoryCopy(list, h, y, n * 4, NULL, 0, NULL));
  ZE(run());
  int ok = 1;
  for (uint32_t i = 0; i < n; ++i)
    ok &= h[i] == 3.0f * (float)i + 1.0f;
  zeMemFree(ctx, x);
  zeMemFree(ctx, y);
  free(h);
  zeKernelDestroy(k);
  return ok;
}

static void test_native(void) {
  ze_module_handle_t m = module("saxpy");
  size_t n = 0;
  ZE(zeModuleGetNativeBinary(m, &n, NULL));
  uint8_t *bin = malloc(n);
  ZE(zeModuleGetNativeBinary(m, &n, bin));
  uint64_t cubin;
  memcpy(&cubin, bin + 12, 8);
  printf("native binary: %zu bytes, cubin %llu bytes\n", n, (unsigned long long)cubin);
  CHECK(n > 20 && !memcmp(bin, "KAPICUBN", 8) && cubin < n, "native binary header");
  zeModuleDestroy(m);
  ze_module_handle_t l = NULL;
  ZE(native_module(bin, n, &l));
  CHECK(saxpy_small(l), "saxpy from the native binary");
  zeModuleDestroy(l);
  /* Without the cubin: the same header with length 0, then the finaliser's part. */
  uint8_t *ptx_only = malloc(n);
  memcpy(ptx_only, bin, 12);
  memset(ptx_only + 12, 0, 8);
  memcpy(ptx_only + 20, bin + 20 + cubin, n - 20 - cubin);
  ZE(native_module(ptx_only, n - cubin, &l));
  CHECK(saxpy_small(l), "saxpy from the native binary's PTX");
  zeModuleDestroy(l);
  const char junk[64] = "not a native binary";
  CHECK(native_module(junk, sizeof junk, &l) == ZE_RESULT_ERROR_INVALID_NATIVE_BINARY, "junk");
  bin[8] ^= 1; /* the format version */
  CHECK(native_module(bin, n, &l) == ZE_RESULT_ERROR_INVALID_NATIVE_BINARY, "damaged header");
  free(ptx_only);
  free(bin);
}

/* Last: the fault leaves the CUDA context unusable. */
static void test_illegal_address(void) {
  ze_module_handle_t m = module("illegal");
  ze_kernel_handle_t k = kernel(m, "illegal_write");
  int *p = dev_alloc(1024);
  ZE(zeKernelSetArgumentValue(k, 0, 8, &p));
  launch(k, 4, 1, 64, 1);
  ze_result_t r = run();
  printf("illegal address kernel: 0x%x\n", r);
  CHECK(r == ZE_RESULT_ERROR_DEVICE_LOST, "faulting kernel gave 0x%x, want DEVICE_LOST", r);
}

/* Progress on stdout (flushed), so a run that hangs or crashes shows where. */
static void step(const char *name) {
  printf("-- %s\n", name);
  fflush(stdout);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    printf("usage: %s DRIVER_SO FIXTURE_DIR\n", argv[0]);
    return 2;
  }
  fixtures = argv[2];
  setenv("ZE_ENABLE_ALT_DRIVERS", argv[1], 1);
  ze_result_t r = zeInit(0);
  uint32_t nd = 0;
  if (r == ZE_RESULT_SUCCESS) r = zeDriverGet(&nd, NULL);
  if (r != ZE_RESULT_SUCCESS || nd == 0) {
    printf("SKIP: no NVIDIA GPU through the kapi CUDA driver (zeInit/zeDriverGet 0x%x, %u "
           "drivers): no libcuda.so.1 or no device here\n",
           r, nd);
    return 77;
  }
  ze_driver_handle_t drv;
  nd = 1;
  ZE(zeDriverGet(&nd, &drv));
  uint32_t next = 1;
  ze_driver_extension_properties_t ext;
  ZE(zeDriverGetExtensionProperties(drv, &next, &ext));
  CHECK(next == 1 && !strcmp(ext.name, "kapi_driver_cuda"), "driver extension '%s'", ext.name);
  uint32_t ndev = 1;
  ZE(zeDeviceGet(drv, &ndev, &dev));
  ze_context_desc_t cd = {.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC};
  ZE(zeContextCreate(drv, &cd, &ctx));
  ze_command_queue_desc_t qd = {.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC};
  ZE(zeCommandQueueCreate(ctx, dev, &qd, &queue));
  ze_command_list_desc_t ld = {.stype = ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC};
  ZE(zeCommandListCreate(ctx, dev, &ld, &list));
  step("test_properties");
  test_properties();
  step("test_memory");
  test_memory();
  step("test_fill_patterns");
  test_fill_patterns();
  step("test_immediate_events");
  test_immediate_events();
  step("test_deferred_events");
  test_deferred_events();
  step("test_bad_module");
  test_bad_module();
  step("test_saxpy");
  test_saxpy();
  step("test_native");
  test_native();
  step("test_coarse");
  test_coarse();
  step("test_reduce");
  test_reduce();
  step("test_atomics");
  test_atomics();
  step("test_math");
  test_math();
  /* A second context whose allocations are left to zeContextDestroy. */
  ze_context_handle_t ctx2;
  ZE(zeContextCreate(drv, &cd, &ctx2));
  ze_device_mem_alloc_desc_t dd = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
  void *leak;
  ZE(zeMemAllocDevice(ctx2, &dd, 1 << 20, 64, dev, &leak));
  ZE(zeContextDestroy(ctx2));
  step("test_illegal_address");
  test_illegal_address();
  if (failures) {
    printf("%d failure(s)\n", failures);
    return 1;
  }
  printf("all CUDA driver checks passed\n");
  return 0;
}
