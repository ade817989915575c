/* USM for the host CPU: host, device and shared allocations are all aligned host memory. The
 * context's range map remembers each one (its type and a unique id) so that any pointer inside
 * an allocation can be traced back to it (zeMemGetAllocProperties, zeMemGetAddressRange). */
#include "cpu_api.h"
#include "cpu_driver.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Allocations of at least HUGE_MIN bytes start within the first 4 KiB of a 2 MiB boundary (at
 * a color, below) and are asked for transparent huge pages (where the system leaves THP to
 * madvise, as Ubuntu does): a stream over a few hundred MiB then misses the TLB 512 times less.
 * Their pages are not touched here: the first fill or kernel does it, spread over the pool's
 * threads (cpu_copy.c). KAPI_CPU_MEM_HUGE=0 (read at each allocation; for measurements): none is,
 * and they are asked for small pages instead. */
#define HUGE_PAGE ((size_t)2 << 20)
#define HUGE_MIN ((size_t)8 << 20)
/* Colors (KAPI_CPU_MEM_COLOR, read at each huge allocation: 1 on, 0 off, unset COLOR_DEFAULT):
 * a huge allocation with the driver's alignment starts COLOR_STEP bytes further into its first
 * page than the one before (modulo 4 KiB), so that two arrays' elements of the same index are
 * not at nearly the same offset in their 2 MiB pages, as every huge allocation's were before.
 * On the GPU host's Xeon that made the 5-point stencil (bench/kernels.py) 3-4x slower: with
 * its output 0 or 64 bytes from its input modulo 2 MiB it streamed at a third of the rate it
 * reaches 1088 or 4096 bytes apart (bench/RESULTS.md, fourteenth session). */
#define COLOR_DEFAULT 1
#define COLOR_STEP ((size_t)17 * CPU_MEM_ALIGN)
#define COLOR_SPAN ((size_t)4096)

static _Atomic uint32_t next_color;

static size_t color_for(size_t size, size_t alignment) {
  if (size < HUGE_MIN || alignment > CPU_MEM_ALIGN) return 0;
  const char *v = getenv("KAPI_CPU_MEM_COLOR");
  if (!(v && *v ? strcmp(v, "1") == 0 : COLOR_DEFAULT)) return 0;
  return (size_t)atomic_fetch_add(&next_color, 1) * COLOR_STEP % COLOR_SPAN;
}

static bool huge_pages(void) {
  const char *v = getenv("KAPI_CPU_MEM_HUGE");
  return !(v && strcmp(v, "0") == 0);
}

static _Atomic uint64_t next_alloc_id = 1;

/* The range map's value packs the memory type (low 2 bits), the color in cache lines (the next
 * 6: how far the allocation starts into the block posix_memalign gave) and the id. */
static void *pack(ze_memory_type_t type, uint64_t id, size_t color) {
  return (void *)(uintptr_t)((id << 8) | (uint64_t)(color / CPU_MEM_ALIGN) << 2 | (uint64_t)type);
}
static ze_memory_type_t unpack_type(void *v) {
  return (ze_memory_type_t)((uintptr_t)v & 3u);
}
static uint64_t unpack_id(void *v) {
  return (uint64_t)(uintptr_t)v >> 8;
}
/* The pointer posix_memalign gave for the allocation r. */
static void *block_of(const zed_range_t *r) {
  return (void *)(r->base - (((uintptr_t)r->value >> 2) & 63u) * CPU_MEM_ALIGN);
}

/* Alignment 0 means "driver's choice"; otherwise it must be a power of two. A zero size still
 * gets a distinct pointer so it can be freed and looked up like any other. */
static ze_result_t allocate(ze_context_handle_t h, size_t size, size_t alignment,
                            ze_memory_type_t type, void **out) {
  ZED_CHECK(h, ZED_KIND_CONTEXT);
  ZED_CHECK_PTR(out);
  if (alignment & (alignment - 1)) return ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT;
  cpu_context_t *ctx = (cpu_context_t *)h;
  if (size > ctx->driver->device.mem_total) return ZE_RESULT_ERROR_UNSUPPORTED_SIZE;
  if (alignment < CPU_MEM_ALIGN) alignment = CPU_MEM_ALIGN;
  bool huge = size >= HUGE_MIN && huge_pages();
  size_t color = huge ? color_for(size, alignment) : 0;
  void *p = NULL;
  if (huge && alignment < HUGE_PAGE) alignment = HUGE_PAGE;
  if (posix_memalign(&p, alignment, size ? size + color : 1) != 0)
    return ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;
#if defined(MADV_HUGEPAGE) && defined(MADV_NOHUGEPAGE)
  if (huge) {
    madvise(p, (size + color) & ~(HUGE_PAGE - 1), MADV_HUGEPAGE); /* advice only */
  } else if (size >= HUGE_MIN) {
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t lo = ((uintptr_t)p + (uintptr_t)page - 1) & ~(uintptr_t)(page - 1);
    uintptr_t hi = ((uintptr_t)p + size) & ~(uintptr_t)(page - 1);
    if (hi > lo) madvise((void *)lo, hi - lo, MADV_NOHUGEPAGE);
  }
#endif
  uint64_t id = atomic_fetch_add(&next_alloc_id, 1);
  uint8_t *user = (uint8_t *)p + color;
  if (!zed_range_map_insert(&ctx->allocs, (uintptr_t)user, size, pack(type, id, color))) {
    free(p);
    return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  }
  *out = user;
  return ZE_RESULT_SUCCESS;
}

ze_result_t cpu_mem_alloc_shared(ze_context_handle_t h, const ze_device_mem_alloc_desc_t *ddesc,
                                 const ze_host_mem_alloc_desc_t *hdesc, size_t size,
                                 size_t alignment, ze_device_handle_t dev, void **out) {
  ZED_CHECK_PTR(ddesc);
  ZED_CHECK_PTR(hdesc);
  if (dev) ZED_CHECK(dev, ZED_KIND_DEVICE);
  return allocate(h, size, alignment, ZE_MEMORY_TYPE_SHARED, out);
}

ze_result_t cpu_mem_alloc_device(ze_context_handle_t h, const ze_device_mem_alloc_desc_t *desc,
                                 size_t size, size_t alignment, ze_device_handle_t dev,
                                 void **out) {
  ZED_CHECK_PTR(desc);
  ZED_CHECK(dev, ZED_KIND_DEVICE);
  return allocate(h, size, alignment, ZE_MEMORY_TYPE_DEVICE, out);
}

ze_result_t cpu_mem_alloc_host(ze_context_handle_t h, const ze_host_mem_alloc_desc_t *desc,
                               size_t size, size_t alignment, void **out) {
  ZED_CHECK_PTR(desc);
  return allocate(h, size, alignment, ZE_MEMORY_TYPE_HOST, out);
}

/* Only the base pointer of an allocation of this context may be freed. */
ze_result_t cpu_mem_free(ze_context_handle_t h, void *ptr) {
  ZED_CHECK(h, ZED_KIND_CONTEXT);
  ZED_CHECK_PTR(ptr);
  cpu_context_t *ctx = (cpu_context_t *)h;
  zed_range_t r;
  if (!zed_range_map_remove(&ctx->allocs, (uintptr_t)ptr, &r))
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  free(block_of(&r));
  return ZE_RESULT_SUCCESS;
}

/* A pointer this context did not allocate is ZE_MEMORY_TYPE_UNKNOWN, as the API asks. */
ze_result_t cpu_mem_get_alloc_properties(ze_context_handle_t h, const void *ptr,
                                         ze_memory_allocation_properties_t *props,
                                         ze_device_handle_t *dev) {
  ZED_CHECK(h, ZED_KIND_CONTEXT);
  ZED_CHECK_PTR(ptr);
  ZED_CHECK_PTR(props);
  cpu_context_t *ctx = (cpu_context_t *)h;
  zed_range_t r;
  bool found = zed_range_map_find(&ctx->allocs, (uintptr_t)ptr, &r);
  props->type = found ? unpack_type(r.value) : ZE_MEMORY_TYPE_UNKNOWN;
  props->id = found ? unpack_id(r.value) : 0;
  props->pageSize = found ? (uint64_t)sysconf(_SC_PAGESIZE) : 0;
  if (dev) {
    bool on_device = found && props->type != ZE_MEMORY_TYPE_HOST;
    *dev = on_device ? (ze_device_handle_t)&ctx->driver->device : NULL;
  }
  return ZE_RESULT_SUCCESS;
}

ze_result_t cpu_mem_get_address_range(ze_context_handle_t h, const void *ptr, void **base,
                                      size_t *size) {
  ZED_CHECK(h, ZED_KIND_CONTEXT);
  ZED_CHECK_PTR(ptr);
  zed_range_t r;
  if (!zed_range_map_find(&((cpu_context_t *)h)->allocs, (uintptr_t)ptr, &r))
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (base) *base = (void *)r.base;
  if (size) *size = r.size;
  return ZE_RESULT_SUCCESS;
}

static void free_range(const zed_range_t *r, void *arg) {
  (void)arg;
  free(block_of(r));
}

void cpu_memory_release_all(cpu_context_t *ctx) {
  zed_range_map_drain(&ctx->allocs, free_range, NULL);
}
