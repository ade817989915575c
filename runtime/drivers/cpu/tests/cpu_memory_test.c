/* USM, copies, fills, command lists and queues, events and fences through the real loader. */
#include "ze_test.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void test_alloc(ze_test_env_t *e) {
  ze_device_mem_alloc_desc_t dd = {ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, NULL, 0, 0};
  ze_host_mem_alloc_desc_t hd = {ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, NULL, 0};
  void *d = NULL, *h = NULL, *s = NULL;
  OK(zeMemAllocDevice(e->context, &dd, 4096, 256, e->device, &d));
  OK(zeMemAllocHost(e->context, &hd, 1000, 0, &h));
  OK(zeMemAllocShared(e->context, &dd, &hd, 64, 64, e->device, &s));
  EXPECT(d && ((uintptr_t)d % 256) == 0 && h && s);
  EXPECT_ZE(ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT,
            zeMemAllocHost(e->context, &hd, 16, 3, &h)); /* not a power of two */

  ze_memory_allocation_properties_t p = {.stype = ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES};
  ze_device_handle_t owner = NULL;
  OK(zeMemGetAllocProperties(e->context, (char *)d + 100, &p, &owner));
  EXPECT(p.type == ZE_MEMORY_TYPE_DEVICE && owner == e->device);
  uint64_t id_d = p.id;
  OK(zeMemGetAllocProperties(e->context, h, &p, &owner));
  EXPECT(p.type == ZE_MEMORY_TYPE_HOST && owner == NULL && p.id != id_d);
  OK(zeMemGetAllocProperties(e->context, s, &p, NULL));
  EXPECT(p.type == ZE_MEMORY_TYPE_SHARED);
  int local = 0;
  OK(zeMemGetAllocProperties(e->context, &local, &p, NULL));
  EXPECT(p.type == ZE_MEMORY_TYPE_UNKNOWN);

  void *base = NULL;
  size_t size = 0;
  OK(zeMemGetAddressRange(e->context, (char *)d + 4095, &base, &size));
  EXPECT(base == d && size == 4096);
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_ARGUMENT,
            zeMemGetAddressRange(e->context, &local, &base, &size));
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_ARGUMENT, zeMemFree(e->context, (char *)d + 8));
  OK(zeMemFree(e->context, d));
  OK(zeMemFree(e->context, h));
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_ARGUMENT, zeMemFree(e->context, h)); /* twice */
  (void)s; /* left for zeContextDestroy to free */
}

static void test_copy_fill(ze_test_env_t *e) {
  ze_device_mem_alloc_desc_t dd = {ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, NULL, 0, 0};
  uint32_t *a = NULL, *b = NULL;
  OK(zeMemAllocDevice(e->context, &dd, 1000 * 4, 0, e->device, (void **)&a));
  OK(zeMemAllocDevice(e->context, &dd, 1000 * 4, 0, e->device, (void **)&b));
  uint32_t pattern = 0xdeadbeef;
  OK(zeCommandListAppendMemoryFill(e->list, a, &pattern, 4, 999 * 4, NULL, 0, NULL));
  uint8_t byte = 7;
  OK(zeCommandListAppendMemoryFill(e->list, a + 999, &byte, 1, 4, NULL, 0, NULL));
  OK(zeCommandListAppendMemoryCopy(e->list, b, a, 1000 * 4, NULL, 0, NULL));
  int bad = 0;
  for (int i = 0; i < 999; i++)
    bad += b[i] != 0xdeadbeef;
  EXPECT(bad == 0 && b[999] == 0x07070707);
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_SIZE,
            zeCommandListAppendMemoryFill(e->list, a, &pattern, 3, 12, NULL, 0, NULL));
  /* A 2D region: column block 2..5 of rows 1..3 of a 10-wide byte matrix. */
  uint8_t src[40], dst[40] = {0};
  for (int i = 0; i < 40; i++)
    src[i] = (uint8_t)i;
  ze_copy_region_t sr = {2, 1, 0, 4, 3, 1}, dr = {0, 0, 0, 4, 3, 1};
  OK(zeCommandListAppendMemoryCopyRegion(e->list, dst, &dr, 4, 0, src, &sr, 10, 0, NULL, 0, NULL));
  EXPECT(dst[0] == 12 && dst[3] == 15 && dst[4] == 22 && dst[11] == 35);
  /* Between contexts: memory of one context copied by a list of another. */
  ze_context_desc_t cd = {ZE_STRUCTURE_TYPE_CONTEXT_DESC, NULL, 0};
  ze_context_handle_t other;
  OK(zeContextCreate(e->driver, &cd, &other));
  uint32_t *o = NULL;
  OK(zeMemAllocDevice(other, &dd, 16, 0, e->device, (void **)&o));
  OK(zeCommandListAppendMemoryCopyFromContext(e->list, o, e->context, a, 16, NULL, 0, NULL));
  EXPECT(o[0] == 0xdeadbeef && o[3] == 0xdeadbeef);
  OK(zeContextDestroy(other)); /* frees o */
  OK(zeMemFree(e->context, a));
  OK(zeMemFree(e->context, b));
}

static void test_events(ze_test_env_t *e) {
  ze_event_pool_desc_t pd = {ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, NULL,
                             ZE_EVENT_POOL_FLAG_HOST_VISIBLE | ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP,
                             2};
  ze_event_pool_handle_t pool;
  OK(zeEventPoolCreate(e->context, &pd, 1, &e->device, &pool));
  ze_event_desc_t ed = {ZE_STRUCTURE_TYPE_EVENT_DESC, NULL, 0, 0, 0};
  ze_event_handle_t ev, ev2, dup;
  OK(zeEventCreate(pool, &ed, &ev));
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_ARGUMENT, zeEventCreate(pool, &ed, &dup)); /* index in use */
  ed.index = 1;
  OK(zeEventCreate(pool, &ed, &ev2));
  ed.index = 2;
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_ARGUMENT, zeEventCreate(pool, &ed, &dup));
  EXPECT_ZE(ZE_RESULT_NOT_READY, zeEventQueryStatus(ev));
  EXPECT_ZE(ZE_RESULT_NOT_READY, zeEventHostSynchronize(ev, 1000));
  char buf[64];
  OK(zeCommandListAppendMemoryFill(e->list, buf, "x", 1, sizeof buf, ev, 0, NULL));
  OK(zeEventHostSynchronize(ev, UINT64_MAX));
  ze_kernel_timestamp_result_t ts;
  OK(zeEventQueryKernelTimestamp(ev, &ts));
  EXPECT(ts.global.kernelEnd >= ts.global.kernelStart && ts.global.kernelStart > 0);
  OK(zeEventHostReset(ev));
  EXPECT_ZE(ZE_RESULT_NOT_READY, zeEventQueryStatus(ev));
  OK(zeEventHostSignal(ev2));
  /* A wait on a signalled event passes; the signal event of a barrier gets set. */
  OK(zeCommandListAppendBarrier(e->list, ev, 1, &ev2));
  OK(zeEventQueryStatus(ev));
  OK(zeCommandListAppendEventReset(e->list, ev));
  EXPECT_ZE(ZE_RESULT_NOT_READY, zeEventQueryStatus(ev));
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_NULL_HANDLE, zeEventHostSignal(NULL));
  OK(zeEventDestroy(ev));
  OK(zeEventDestroy(ev2));
  OK(zeEventPoolDestroy(pool));
}

static void *signal_later(void *ev) {
  usleep(30000);
  zeEventHostSignal((ze_event_handle_t)ev);
  return NULL;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* A wait in a command list sleeps until another thread signals the event; the command after it
 * runs only then. */
static void test_cross_thread_wait(ze_test_env_t *e) {
  ze_event_pool_desc_t pd = {ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, NULL,
                             ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 1};
  ze_event_pool_handle_t pool;
  OK(zeEventPoolCreate(e->context, &pd, 0, NULL, &pool));
  ze_event_desc_t ed = {ZE_STRUCTURE_TYPE_EVENT_DESC, NULL, 0, 0, 0};
  ze_event_handle_t ev;
  OK(zeEventCreate(pool, &ed, &ev));
  pthread_t t;
  pthread_create(&t, NULL, signal_later, ev);
  double t0 = now_ms();
  int x = 0, one = 1;
  OK(zeCommandListAppendMemoryCopy(e->list, &x, &one, sizeof x, NULL, 1, &ev));
  double waited = now_ms() - t0;
  EXPECT(x == 1);
  EXPECT(waited >= 20.0);
  pthread_join(t, NULL);
  OK(zeEventHostReset(ev));
  pthread_create(&t, NULL, signal_later, ev);
  OK(zeEventHostSynchronize(ev, UINT64_MAX)); /* the host waits on the same futex path */
  OK(zeEventQueryStatus(ev));
  pthread_join(t, NULL);
  OK(zeEventDestroy(ev));
  OK(zeEventPoolDestroy(pool));
}

/* A regular list records; nothing happens until a queue executes it, then the fence is set. */
static void test_regular_list(ze_test_env_t *e) {
  ze_command_list_desc_t ld = {ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC, NULL, 0, 0};
  ze_command_list_handle_t list;
  OK(zeCommandListCreate(e->context, e->device, &ld, &list));
  ze_command_queue_desc_t qd = {
      ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, NULL, 0, 0, 0, ZE_COMMAND_QUEUE_MODE_DEFAULT,
      ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
  ze_command_queue_handle_t q;
  OK(zeCommandQueueCreate(e->context, e->device, &qd, &q));
  ze_fence_desc_t fd = {ZE_STRUCTURE_TYPE_FENCE_DESC, NULL, 0};
  ze_fence_handle_t fence;
  OK(zeFenceCreate(q, &fd, &fence));
  uint64_t pat = 0x0102030405060708ull, out[4] = {0};
  OK(zeCommandListAppendMemoryFill(list, out, &pat, 8, sizeof out, NULL, 0, NULL));
  pat = 0; /* the list keeps its own copy of the pattern */
  EXPECT(out[0] == 0);
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_ARGUMENT, zeCommandQueueExecuteCommandLists(q, 1, &list, NULL));
  OK(zeCommandListClose(list));
  EXPECT_ZE(ZE_RESULT_NOT_READY, zeFenceQueryStatus(fence));
  OK(zeCommandQueueExecuteCommandLists(q, 1, &list, fence));
  OK(zeFenceHostSynchronize(fence, UINT64_MAX));
  OK(zeCommandQueueSynchronize(q, UINT64_MAX));
  EXPECT(out[0] == 0x0102030405060708ull && out[3] == 0x0102030405060708ull);
  OK(zeFenceReset(fence));
  EXPECT_ZE(ZE_RESULT_NOT_READY, zeFenceQueryStatus(fence));
  OK(zeCommandListReset(list));
  OK(zeFenceDestroy(fence));
  OK(zeCommandQueueDestroy(q));
  OK(zeCommandListDestroy(list));
}

/* A native binary that is not one of the host finaliser's is refused with a build log that says
 * why. */
static void test_module_errors(ze_test_env_t *e) {
  uint8_t junk[16] = {1, 2, 3};
  ze_module_desc_t md = {
      ZE_STRUCTURE_TYPE_MODULE_DESC, NULL, ZE_MODULE_FORMAT_NATIVE, sizeof junk, junk, NULL, NULL};
  ze_module_handle_t mod = NULL;
  ze_module_build_log_handle_t log = NULL;
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_NATIVE_BINARY,
            zeModuleCreate(e->context, e->device, &md, &mod, &log));
  EXPECT(log != NULL);
  size_t n = 0;
  OK(zeModuleBuildLogGetString(log, &n, NULL));
  EXPECT(n > 10);
  char text[256];
  n = sizeof text;
  OK(zeModuleBuildLogGetString(log, &n, text));
  EXPECT(strstr(text, "native binary") != NULL);
  OK(zeModuleBuildLogDestroy(log));
  md.format = ZE_MODULE_FORMAT_IL_SPIRV;
  md.inputSize = 0;
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_SIZE, zeModuleCreate(e->context, e->device, &md, &mod, NULL));
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_NULL_HANDLE, zeModuleCreate(e->context, NULL, &md, &mod, NULL));
}

/* Copies and fills large enough to run on the pool in pieces (cpu_copy.c): an odd size, a
 * 16-byte pattern starting mid-piece, and an overlapping copy (which must stay a memmove). */
static void test_large_copy_fill(ze_test_env_t *e) {
  ze_device_mem_alloc_desc_t dd = {ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, NULL, 0, 0};
  size_t n = (24u << 20) / 4 + 5; /* uint32 elements */
  uint32_t *a = NULL, *b = NULL;
  OK(zeMemAllocDevice(e->context, &dd, n * 4, 0, e->device, (void **)&a));
  OK(zeMemAllocDevice(e->context, &dd, n * 4, 0, e->device, (void **)&b));
  uint32_t pat[4] = {1, 2, 3, 4};
  OK(zeCommandListAppendMemoryFill(e->list, a + 3, pat, 16, (n - 7) * 4, NULL, 0, NULL));
  OK(zeCommandListAppendMemoryCopy(e->list, b, a, n * 4, NULL, 0, NULL));
  size_t bad = 0;
  for (size_t i = 3; i < n - 4; i++)
    bad += b[i] != pat[(i - 3) % 4];
  EXPECT(bad == 0);
  for (size_t i = 0; i < n; i++)
    a[i] = (uint32_t)i;
  OK(zeCommandListAppendMemoryCopy(e->list, a + 1, a, (n - 1) * 4, NULL, 0, NULL));
  bad = a[0] != 0;
  for (size_t i = 1; i < n; i++)
    bad += a[i] != (uint32_t)(i - 1);
  EXPECT(bad == 0);
  OK(zeMemFree(e->context, a));
  OK(zeMemFree(e->context, b));
}

/* Huge allocations (8 MiB and up) start on a 2 MiB boundary under KAPI_CPU_MEM_COLOR=0; under
 * 1 (the default) each with the driver's alignment starts at another offset modulo 4 KiB than
 * the one before, still 64-byte aligned, whole (written end to end), its own base for address
 * lookups, and freed (by zeMemFree, or by zeContextDestroy for the one left); under
 * KAPI_CPU_MEM_HUGE=0 they are plain allocations, used and freed the same way. */
static void test_huge_colors(ze_test_env_t *e) {
  ze_host_mem_alloc_desc_t hd = {ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, NULL, 0};
  const size_t n = (size_t)16 << 20;
  void *p[4] = {NULL};
  for (int color = 0; color <= 1; color++) {
    setenv("KAPI_CPU_MEM_COLOR", color ? "1" : "0", 1);
    for (int i = 0; i < 3; i++)
      OK(zeMemAllocHost(e->context, &hd, n, 0, &p[i]));
    OK(zeMemAllocHost(e->context, &hd, n, 4096, &p[3])); /* an alignment asked for: kept */
    unsetenv("KAPI_CPU_MEM_COLOR");
    for (int i = 0; i < 4; i++) {
      uintptr_t a = (uintptr_t)p[i];
      EXPECT(a % 64 == 0 && (i < 3 && color ? 1 : a % ((uintptr_t)2 << 20) == 0));
      memset(p[i], i + 1, n);
      void *base = NULL;
      size_t size = 0;
      OK(zeMemGetAddressRange(e->context, (char *)p[i] + n - 1, &base, &size));
      EXPECT(base == p[i] && size == n);
    }
    uintptr_t d01 = ((uintptr_t)p[0] - (uintptr_t)p[1]) % 4096;
    uintptr_t d12 = ((uintptr_t)p[1] - (uintptr_t)p[2]) % 4096;
    EXPECT(color ? d01 != 0 && d12 != 0 : d01 == 0 && d12 == 0);
    EXPECT(((unsigned char *)p[2])[n - 1] == 3 && ((unsigned char *)p[3])[0] == 4);
    for (int i = color; i < 4; i++) /* the first colored one is left to the context */
      OK(zeMemFree(e->context, p[i]));
  }
  /* By default they are colored. */
  for (int i = 0; i < 2; i++)
    OK(zeMemAllocHost(e->context, &hd, n, 0, &p[i]));
  EXPECT(((uintptr_t)p[0] - (uintptr_t)p[1]) % 4096 != 0);
  for (int i = 0; i < 2; i++)
    OK(zeMemFree(e->context, p[i]));
  /* KAPI_CPU_MEM_HUGE=0: small pages, no 2 MiB alignment (nor color), the same use. */
  setenv("KAPI_CPU_MEM_HUGE", "0", 1);
  setenv("KAPI_CPU_MEM_COLOR", "1", 1);
  for (int i = 0; i < 2; i++)
    OK(zeMemAllocHost(e->context, &hd, n, 0, &p[i]));
  unsetenv("KAPI_CPU_MEM_COLOR");
  unsetenv("KAPI_CPU_MEM_HUGE");
  for (int i = 0; i < 2; i++) {
    EXPECT((uintptr_t)p[i] % 64 == 0);
    memset(p[i], 7, n);
    void *base = NULL;
    size_t size = 0;
    OK(zeMemGetAddressRange(e->context, p[i], &base, &size));
    EXPECT(base == p[i] && size == n);
  }
  OK(zeMemFree(e->context, p[0])); /* p[1] is left to the context */
}

int main(void) {
  ze_test_env_t env;
  ze_test_open(&env);
  test_alloc(&env);
  test_copy_fill(&env);
  test_large_copy_fill(&env);
  test_huge_colors(&env);
  test_events(&env);
  test_regular_list(&env);
  test_cross_thread_wait(&env);
  test_module_errors(&env);
  ze_test_close(&env);
  return ze_test_result("cpu_memory_test");
}
