/* A stand-in for libcuda.so.1 with several GPUs, for testing the CUDA driver's multi-device
 * code on machines without a GPU (KAPI_CUDA_LIBRARY points the driver at it). Memory is host
 * memory and every stream runs its work at once, but the rules of contexts are kept, strictly:
 * an event is recorded only on a stream of the context it was made in, a stream is used only
 * while its context is current, device memory is freed only in its own context, peer access is
 * enabled once per pair. A broken rule is an error result, as CUDA gives, and is counted.
 * Kernels cannot run here: cuModuleLoadDataEx fails, unless KAPI_FAKE_CUDA_KERNELS=1, where
 * modules load, functions exist and a launch (its geometry checked against CUDA's limits and
 * kept for fake_cuda_last_geometry) does nothing but occupy its stream for
 * KAPI_FAKE_CUDA_KERNEL_NS nanoseconds of "device time" (0): queries, synchronisations and
 * events then follow that timeline, as a busy GPU's would (bench/launch_c.c measures the
 * runtime's own host cost per launch this way). fake_cuda_calls counts the calls of each kind.
 * KAPI_FAKE_CUDA_DEVICES sets the number of GPUs (2), KAPI_FAKE_CUDA_PEER=0 denies peer access.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define API __attribute__((visibility("default")))
#define MAX_DEVICES 8

typedef int CUresult;
enum {
  OK = 0,
  INVALID_VALUE = 1,
  NOT_INITIALIZED = 3,
  INVALID_CONTEXT = 201,
  INVALID_IMAGE = 200,
  INVALID_HANDLE = 400,
  NOT_READY = 600,
  PEER_ALREADY_ENABLED = 704,
  PEER_NOT_SUPPORTED = 217,
};

typedef struct fake_ctx {
  int device;
  int peer[MAX_DEVICES]; /* peer access enabled to device i's memory */
} fake_ctx;

typedef struct fake_stream {
  fake_ctx *ctx;
  uint64_t busy_until; /* ns (CLOCK_MONOTONIC) when its last launch ends */
} fake_stream;

typedef struct fake_event {
  fake_ctx *ctx;
  int recorded;
  uint64_t done_at; /* when the work before its record ends */
} fake_event;

typedef struct fake_alloc {
  uintptr_t base;
  size_t size;
  fake_ctx *ctx; /* NULL: host memory (portable) */
  struct fake_alloc *next;
} fake_alloc;

/* What the tests read (fake_cuda_stats). */
typedef struct fake_stats {
  long broken_rules;       /* calls refused for breaking a context rule */
  long peer_copies;        /* cuMemcpyPeerAsync calls */
  long peer_enabled;       /* successful cuCtxEnablePeerAccess calls */
  long cross_plain_copies; /* cuMemcpyAsync between two devices' memory */
  long events_created;
} fake_stats;

/* Calls per kind (fake_cuda_calls). */
typedef struct fake_calls {
  long launch, event_record, event_create, event_query, event_sync, stream_query, stream_sync,
      stream_wait, ctx_get, ctx_set;
} fake_calls;

static int ndev = 2, peer_ok = 1, inited, kernels_ok;
static uint64_t kernel_ns;
static fake_calls calls;
static fake_ctx ctxs[MAX_DEVICES];
static __thread fake_ctx *current;
static fake_alloc *allocs;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static fake_stats stats;

static CUresult broken(void) {
  __atomic_add_fetch(&stats.broken_rules, 1, __ATOMIC_RELAXED);
  return INVALID_HANDLE;
}

#define COUNT(field) __atomic_add_fetch(&calls.field, 1, __ATOMIC_RELAXED)

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Whether the device has reached time t (always, without device time). */
static int reached(uint64_t t) {
  return !kernel_ns || now_ns() >= t;
}

static void wait_until(uint64_t t) {
  while (!reached(t)) {
  }
}

/* How many calls of a kind ("launch", "event_record", "event_create", "event_query",
 * "event_sync", "stream_query", "stream_sync", "stream_wait", "ctx_get", "ctx_set") were made;
 * -1 for an unknown kind. */
API long fake_cuda_calls(const char *what) {
  static const struct {
    const char *name;
    size_t offset;
  } kinds[] = {
      {"launch", offsetof(fake_calls, launch)},
      {"event_record", offsetof(fake_calls, event_record)},
      {"event_create", offsetof(fake_calls, event_create)},
      {"event_query", offsetof(fake_calls, event_query)},
      {"event_sync", offsetof(fake_calls, event_sync)},
      {"stream_query", offsetof(fake_calls, stream_query)},
      {"stream_sync", offsetof(fake_calls, stream_sync)},
      {"stream_wait", offsetof(fake_calls, stream_wait)},
      {"ctx_get", offsetof(fake_calls, ctx_get)},
      {"ctx_set", offsetof(fake_calls, ctx_set)},
  };
  for (size_t i = 0; i < sizeof kinds / sizeof *kinds; ++i)
    if (!strcmp(what, kinds[i].name))
      return __atomic_load_n((long *)((char *)&calls + kinds[i].offset), __ATOMIC_RELAXED);
  return -1;
}

API void fake_cuda_stats(fake_stats *out) {
  pthread_mutex_lock(&lock);
  *out = stats;
  pthread_mutex_unlock(&lock);
}

API CUresult cuInit(unsigned flags) {
  (void)flags;
  const char *n = getenv("KAPI_FAKE_CUDA_DEVICES"), *p = getenv("KAPI_FAKE_CUDA_PEER");
  if (n && atoi(n) > 0 && atoi(n) <= MAX_DEVICES) ndev = atoi(n);
  if (p) peer_ok = atoi(p) != 0;
  const char *k = getenv("KAPI_FAKE_CUDA_KERNELS"), *t = getenv("KAPI_FAKE_CUDA_KERNEL_NS");
  kernels_ok = k && atoi(k) != 0;
  kernel_ns = t && atoll(t) > 0 ? (uint64_t)atoll(t) : 0;
  for (int i = 0; i < MAX_DEVICES; ++i)
    ctxs[i].device = i;
  inited = 1;
  return OK;
}

API CUresult cuDeviceGetCount(int *n) {
  *n = ndev;
  return inited ? OK : NOT_INITIALIZED;
}

API CUresult cuDeviceGet(int *d, int ordinal) {
  if (ordinal < 0 || ordinal >= ndev) return INVALID_VALUE;
  *d = ordinal;
  return OK;
}

API CUresult cuDeviceGetName(char *name, int len, int d) {
  snprintf(name, (size_t)len, "Fake CUDA GPU %d", d);
  return OK;
}

API CUresult cuDeviceGetAttribute(int *v, int attr, int d) {
  (void)d;
  switch (attr) {
  case 1: /* max threads per block */
  case 2: /* block dims */
  case 3:
    *v = 1024;
    return OK;
  case 4:
    *v = 64;
    return OK;
  case 5: /* grid dims */
    *v = 2147483647;
    return OK;
  case 6:
  case 7:
    *v = 65535;
    return OK;
  case 8:
    *v = 48 * 1024;
    return OK;
  case 13:
    *v = 1000000;
    return OK;
  case 16: /* SMs */
    *v = 2;
    return OK;
  case 39:
    *v = 2048;
    return OK;
  case 75:
    *v = 9;
    return OK;
  case 76:
    *v = 0;
    return OK;
  case 83: /* managed memory */
    *v = 1;
    return OK;
  case 97:
    *v = 227 * 1024;
    return OK;
  default:
    *v = 0;
    return OK;
  }
}

API CUresult cuDeviceTotalMem_v2(size_t *bytes, int d) {
  (void)d;
  *bytes = (size_t)1 << 30;
  return OK;
}

API CUresult cuDeviceGetUuid(unsigned char *uuid, int d) {
  memset(uuid, 0, 16);
  memcpy(uuid, "fake-cuda", 9);
  uuid[15] = (unsigned char)d;
  return OK;
}

API CUresult cuDevicePrimaryCtxRetain(fake_ctx **c, int d) {
  if (d < 0 || d >= ndev) return INVALID_VALUE;
  *c = &ctxs[d];
  return OK;
}

API CUresult cuDevicePrimaryCtxRelease_v2(int d) {
  (void)d;
  return OK;
}

API CUresult cuCtxSetCurrent(fake_ctx *c) {
  COUNT(ctx_set);
  current = c;
  return OK;
}

API CUresult cuCtxGetCurrent(fake_ctx **c) {
  COUNT(ctx_get);
  *c = current;
  return OK;
}

API CUresult cuCtxSynchronize(void) {
  return current ? OK : INVALID_CONTEXT;
}

API CUresult cuDeviceCanAccessPeer(int *can, int d, int peer) {
  *can = peer_ok && d != peer;
  return OK;
}

API CUresult cuCtxEnablePeerAccess(fake_ctx *peer, unsigned flags) {
  (void)flags;
  if (!current) return INVALID_CONTEXT;
  if (!peer_ok || peer == current) return PEER_NOT_SUPPORTED;
  pthread_mutex_lock(&lock);
  CUresult r = current->peer[peer->device] ? PEER_ALREADY_ENABLED : OK;
  current->peer[peer->device] = 1;
  if (r == OK) stats.peer_enabled++;
  pthread_mutex_unlock(&lock);
  return r;
}

API CUresult cuMemGetInfo_v2(size_t *free_b, size_t *total) {
  *free_b = *total = (size_t)1 << 30;
  return current ? OK : INVALID_CONTEXT;
}

static CUresult track(void *p, size_t size, fake_ctx *ctx) {
  fake_alloc *a = malloc(sizeof *a);
  if (!p || !a) {
    free(p);
    free(a);
    return 2; /* out of memory */
  }
  a->base = (uintptr_t)p;
  a->size = size;
  a->ctx = ctx;
  pthread_mutex_lock(&lock);
  a->next = allocs;
  allocs = a;
  pthread_mutex_unlock(&lock);
  return OK;
}

/* The allocation holding p, or NULL (plain host memory). */
static fake_alloc *find(uintptr_t p) {
  pthread_mutex_lock(&lock);
  fake_alloc *a = allocs;
  while (a && !(p >= a->base && p < a->base + a->size))
    a = a->next;
  pthread_mutex_unlock(&lock);
  return a;
}

static CUresult untrack(uintptr_t p, int host) {
  pthread_mutex_lock(&lock);
  fake_alloc **link = &allocs;
  while (*link && (*link)->base != p)
    link = &(*link)->next;
  fake_alloc *a = *link;
  CUresult r = !a || (host != !a->ctx) ? INVALID_VALUE : OK;
  if (r == OK && a->ctx && a->ctx != current) r = INVALID_CONTEXT; /* freed in another context */
  if (r == OK) *link = a->next;
  pthread_mutex_unlock(&lock);
  if (r == INVALID_CONTEXT) __atomic_add_fetch(&stats.broken_rules, 1, __ATOMIC_RELAXED);
  if (r == OK) {
    free((void *)a->base);
    free(a);
  }
  return r;
}

API CUresult cuMemAlloc_v2(uintptr_t *p, size_t size) {
  if (!current) return INVALID_CONTEXT;
  void *m = calloc(1, size);
  CUresult r = track(m, size, current);
  *p = r == OK ? (uintptr_t)m : 0;
  return r;
}

API CUresult cuMemAllocManaged(uintptr_t *p, size_t size, unsigned flags) {
  (void)flags;
  return cuMemAlloc_v2(p, size);
}

API CUresult cuMemFree_v2(uintptr_t p) {
  return untrack(p, 0);
}

API CUresult cuMemHostAlloc(void **p, size_t size, unsigned flags) {
  (void)flags;
  if (!current) return INVALID_CONTEXT;
  void *m = calloc(1, size);
  CUresult r = track(m, size, NULL);
  *p = r == OK ? m : NULL;
  return r;
}

API CUresult cuMemFreeHost(void *p) {
  return untrack((uintptr_t)p, 1);
}

/* Work on a stream needs the stream's context current. */
static CUresult stream_ok(fake_stream *s) {
  return s && s->ctx == current ? OK : broken();
}

API CUresult cuMemcpyAsync(uintptr_t dst, uintptr_t src, size_t n, fake_stream *s) {
  if (stream_ok(s)) return INVALID_HANDLE;
  fake_alloc *a = find(dst), *b = find(src);
  if (a && b && a->ctx && b->ctx && a->ctx != b->ctx)
    __atomic_add_fetch(&stats.cross_plain_copies, 1, __ATOMIC_RELAXED);
  memmove((void *)dst, (const void *)src, n);
  return OK;
}

API CUresult cuMemcpyPeerAsync(uintptr_t dst, fake_ctx *dctx, uintptr_t src, fake_ctx *sctx,
                               size_t n, fake_stream *s) {
  if (stream_ok(s)) return INVALID_HANDLE;
  fake_alloc *a = find(dst), *b = find(src);
  if (!a || !b || a->ctx != dctx || b->ctx != sctx) return broken(); /* contexts must match */
  __atomic_add_fetch(&stats.peer_copies, 1, __ATOMIC_RELAXED);
  memmove((void *)dst, (const void *)src, n);
  return OK;
}

API CUresult cuMemsetD8Async(uintptr_t p, unsigned char v, size_t n, fake_stream *s) {
  if (stream_ok(s)) return INVALID_HANDLE;
  memset((void *)p, v, n);
  return OK;
}

API CUresult cuMemsetD16Async(uintptr_t p, unsigned short v, size_t n, fake_stream *s) {
  if (stream_ok(s)) return INVALID_HANDLE;
  for (size_t i = 0; i < n; ++i)
    ((unsigned short *)p)[i] = v;
  return OK;
}

API CUresult cuMemsetD32Async(uintptr_t p, unsigned v, size_t n, fake_stream *s) {
  if (stream_ok(s)) return INVALID_HANDLE;
  for (size_t i = 0; i < n; ++i)
    ((unsigned *)p)[i] = v;
  return OK;
}

API CUresult cuStreamCreate(fake_stream **s, unsigned flags) {
  (void)flags;
  if (!current) return INVALID_CONTEXT;
  *s = calloc(1, sizeof **s);
  if (!*s) return 2;
  (*s)->ctx = current;
  return OK;
}

API CUresult cuStreamDestroy_v2(fake_stream *s) {
  free(s);
  return OK;
}

API CUresult cuStreamSynchronize(fake_stream *s) {
  COUNT(stream_sync);
  if (!s) return INVALID_HANDLE;
  wait_until(s->busy_until);
  return OK;
}

API CUresult cuStreamQuery(fake_stream *s) {
  COUNT(stream_query);
  if (!s) return INVALID_HANDLE;
  return reached(s->busy_until) ? OK : NOT_READY;
}

/* Another context's event may be waited for (as in CUDA). */
API CUresult cuStreamWaitEvent(fake_stream *s, fake_event *e, unsigned flags) {
  (void)flags;
  COUNT(stream_wait);
  if (stream_ok(s)) return INVALID_HANDLE;
  if (!e) return INVALID_HANDLE;
  if (e->done_at > s->busy_until) s->busy_until = e->done_at;
  return OK;
}

API CUresult cuEventCreate(fake_event **e, unsigned flags) {
  (void)flags;
  if (!current) return INVALID_CONTEXT;
  *e = calloc(1, sizeof **e);
  if (!*e) return 2;
  (*e)->ctx = current;
  __atomic_add_fetch(&stats.events_created, 1, __ATOMIC_RELAXED);
  COUNT(event_create);
  return OK;
}

API CUresult cuEventDestroy_v2(fake_event *e) {
  free(e);
  return OK;
}

/* The event and the stream must share a context: CUDA answers CUDA_ERROR_INVALID_HANDLE. */
API CUresult cuEventRecord(fake_event *e, fake_stream *s) {
  COUNT(event_record);
  if (!e || !s || e->ctx != s->ctx) return broken();
  e->recorded = 1;
  e->done_at = s->busy_until;
  return OK;
}

/* Stricter than CUDA needs: kapi's driver waits for an event in the event's own context. */
API CUresult cuEventSynchronize(fake_event *e) {
  COUNT(event_sync);
  if (!e || e->ctx != current) return broken();
  wait_until(e->done_at);
  return OK;
}

API CUresult cuEventQuery(fake_event *e) {
  COUNT(event_query);
  if (!e || e->ctx != current) return broken();
  return reached(e->done_at) ? OK : NOT_READY;
}

API CUresult cuEventElapsedTime(float *ms, fake_event *a, fake_event *b) {
  *ms = 0;
  return a && b && a->ctx == b->ctx ? OK : broken();
}

/* With kernels: every image loads, as one static module. */
/* One function per entry name asked for (the driver asks for a kernel's coarsened and
 * aligned entries too), and the name of the last one launched (fake_cuda_last_launch). */
#define MAX_FUNCTIONS 256
static int the_module;
static struct fake_function { char name[160]; } functions[MAX_FUNCTIONS];
static int nfunctions;
static char last_launch[160];
static unsigned last_grid[3], last_block[3];

static int is_function(const void *f) { /* under lock */
  const struct fake_function *p = f;
  return p >= functions && p < functions + MAX_FUNCTIONS && p - functions < nfunctions;
}

API CUresult cuModuleLoadDataEx(void **m, const void *image, unsigned n, int *opts, void **vals) {
  (void)image, (void)n, (void)opts, (void)vals;
  if (!kernels_ok) return INVALID_IMAGE;
  if (!current) return INVALID_CONTEXT;
  *m = &the_module;
  return OK;
}

API CUresult cuModuleUnload(void *m) {
  (void)m;
  return OK;
}

API CUresult cuModuleGetFunction(void **f, void *m, const char *name) {
  if (!kernels_ok || m != &the_module || !name || strlen(name) >= sizeof functions[0].name)
    return INVALID_HANDLE;
  pthread_mutex_lock(&lock);
  int i = 0;
  while (i < nfunctions && strcmp(functions[i].name, name))
    ++i;
  if (i == nfunctions && nfunctions < MAX_FUNCTIONS) strcpy(functions[nfunctions++].name, name);
  pthread_mutex_unlock(&lock);
  if (i == MAX_FUNCTIONS) return INVALID_HANDLE;
  *f = &functions[i];
  return OK;
}

API CUresult cuFuncSetAttribute(void *f, int attr, int v) {
  (void)f, (void)attr, (void)v;
  return OK;
}

/* CUDA's launch limits, as cuDeviceGetAttribute reports them above: a geometry past them is
 * CUDA_ERROR_INVALID_VALUE, as a real GPU answers. */
static int geometry_ok(const unsigned grid[3], const unsigned block[3]) {
  static const unsigned max_grid[3] = {2147483647u, 65535, 65535}, max_block[3] = {1024, 1024, 64};
  for (int d = 0; d < 3; d++)
    if (!grid[d] || !block[d] || grid[d] > max_grid[d] || block[d] > max_block[d]) return 0;
  return (uint64_t)block[0] * block[1] * block[2] <= 1024;
}

API CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                            unsigned by, unsigned bz, unsigned shared, fake_stream *s, void **args,
                            void **extra) {
  (void)shared, (void)args, (void)extra;
  const unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
  if (!geometry_ok(grid, block)) return INVALID_VALUE;
  pthread_mutex_lock(&lock);
  int known = is_function(f); /* without kernels no function exists */
  if (known) {
    strcpy(last_launch, ((struct fake_function *)f)->name);
    memcpy(last_grid, grid, sizeof grid);
    memcpy(last_block, block, sizeof block);
  }
  pthread_mutex_unlock(&lock);
  if (!known) return INVALID_HANDLE;
  if (stream_ok(s)) return INVALID_HANDLE;
  COUNT(launch);
  if (kernel_ns) {
    uint64_t t = now_ns();
    s->busy_until = (s->busy_until > t ? s->busy_until : t) + kernel_ns;
  }
  return OK;
}

/* The entry name of the last function launched ("" before any). */
API void fake_cuda_last_launch(char *out, size_t n) {
  pthread_mutex_lock(&lock);
  snprintf(out, n, "%s", last_launch);
  pthread_mutex_unlock(&lock);
}

/* The grid and block of the last launch: geometry[0..2] the grid, [3..5] the block. */
API void fake_cuda_last_geometry(unsigned geometry[6]) {
  pthread_mutex_lock(&lock);
  memcpy(geometry, last_grid, sizeof last_grid);
  memcpy(geometry + 3, last_block, sizeof last_block);
  pthread_mutex_unlock(&lock);
}

API CUresult cuGetErrorName(CUresult r, const char **s) {
  switch (r) {
  case OK:
    *s = "CUDA_SUCCESS";
    break;
  case INVALID_HANDLE:
    *s = "CUDA_ERROR_INVALID_HANDLE";
    break;
  case INVALID_CONTEXT:
    *s = "CUDA_ERROR_INVALID_CONTEXT";
    break;
  case INVALID_IMAGE:
    *s = "CUDA_ERROR_INVALID_IMAGE";
    break;
  default:
    *s = "CUDA_ERROR_UNKNOWN";
  }
  return OK;
}
