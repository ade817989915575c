/* The kapi CUDA Level Zero driver's objects and entry points (private to this driver). Each
 * handle is one of these structs, tagged with zed_object_t so a wrong or stale handle is a
 * status, not a crash. One Level Zero device per CUDA device, on its primary context; one CUDA
 * stream per command queue and per immediate command list. CUDA streams and events belong to one
 * device's context: a Level Zero event, which any device's queue may signal, holds one CUDA event
 * per device it was recorded on.
 */
#include <pthread.h>

#ifndef KAPI_CUDA_DRIVER_H
#define KAPI_CUDA_DRIVER_H

#include "cuda_api.h"
#include "kapi/compiler.h"
#include "zed.h"

typedef struct cuda_device {
  zed_object_t obj;
  uint32_t index; /* position in the driver's devices */
  CUdevice dev;
  CUcontext ctx; /* primary context, retained */
  ze_device_properties_t props;
  ze_device_compute_properties_t compute;
  uint64_t total_mem;
  int mem_clock_khz, bus_width, sm_major, sm_minor, max_shared_optin, managed;
} cuda_device_t;

/* Peer access between two devices, decided on first use (cuda_peer.c). */
enum { CUDA_PEER_UNKNOWN = 0, CUDA_PEER_DIRECT = 1, CUDA_PEER_STAGED = 2 };

typedef struct cuda_driver {
  zed_object_t obj;
  uint32_t count;
  cuda_device_t *devices;
  pthread_mutex_t peer_lock;
  unsigned char *peer; /* count x count CUDA_PEER_* states, [from * count + to] */
} cuda_driver_t;

typedef struct cuda_context {
  zed_object_t obj;
  zed_range_map_t allocs; /* base -> cuda_alloc_t */
} cuda_context_t;

typedef struct cuda_alloc {
  ze_memory_type_t type;
  cuda_device_t *device; /* NULL for host allocations */
  size_t size;
} cuda_alloc_t;

typedef struct cuda_event_pool {
  zed_object_t obj;
  uint32_t count;
  unsigned cu_flags;
} cuda_event_pool_t;

/* DEFERRED: signalled by a command on a queue but not yet recorded (cuda_event.c); HOST_SIGNALED
 * also stands for "known complete". */
enum { CUDA_EV_RESET = 0, CUDA_EV_RECORDED = 1, CUDA_EV_HOST_SIGNALED = 2, CUDA_EV_DEFERRED = 3 };

struct cuda_queue;

typedef struct cuda_event {
  zed_object_t obj;
  CUevent ev;          /* RECORDED: the CUDA event last recorded (one of per_device) */
  CUevent *per_device; /* the driver's count of them, each made on its first record there */
  struct cuda_device *ev_device; /* RECORDED: the device ev belongs to */
  unsigned cu_flags;
  volatile int state;
  int timing;               /* from a timestamp pool: always recorded at once */
  CUstream stream;          /* where it was last recorded: a wait there is already implied */
  struct cuda_queue *queue; /* DEFERRED: the queue whose command signals it */
  uint64_t seq;             /* DEFERRED: that command's number on the queue */
  struct cuda_event *dprev, *dnext; /* DEFERRED: the queue's list, oldest first */
} cuda_event_t;

typedef struct cuda_module {
  zed_object_t obj;
  cuda_device_t *device;
  CUmodule mod;
  kc_nvptx_module_t *nv;
  void *native; /* zeModuleGetNativeBinary's bytes, made on first request */
  size_t native_len;
} cuda_module_t;

typedef struct cuda_kernel {
  zed_object_t obj;
  cuda_module_t *module;
  const kc_nvptx_kernel_t *info;
  CUfunction fn;
  CUfunction coarse_fn;  /* the finaliser's coarsened entry, or NULL (cuda_module.c) */
  CUfunction aligned_fn; /* its entry for 16-byte aligned pointers, or NULL (cuda_module.c) */
  uint32_t group[3];
  uint64_t *values;      /* one 8-byte slot per argument (every PTX parameter fits) */
  uint32_t *local_bytes; /* per KC_ARG_LOCAL argument, set at zeKernelSetArgumentValue */
  int dyn_shared_limit;  /* largest dynamic shared size already allowed on fn */
  int has_local;         /* some argument is a local buffer (laid out at each launch) */
} cuda_kernel_t;

typedef enum cuda_cmd_kind {
  CUDA_CMD_COPY,
  CUDA_CMD_FILL,
  CUDA_CMD_LAUNCH,
  CUDA_CMD_BARRIER,
  CUDA_CMD_RESET_EVENT,
} cuda_cmd_kind_t;

#define CUDA_CMD_INLINE 8

/* One recorded command: waits first, then the operation, then the signal. */
typedef struct cuda_cmd {
  cuda_cmd_kind_t kind;
  cuda_device_t *src_device, *dst_device; /* a copy between two devices' memory, else NULL */
  cuda_event_t *signal;
  uint32_t nwait;
  cuda_event_t **waits;
  CUdeviceptr dst, src;
  size_t size;
  uint32_t pattern_size;
  int fill_by_copies;
  unsigned char pattern[128]; /* fill pattern; for a launch, the dynamic shared-memory size */
  cuda_kernel_t *kernel;
  CUfunction fn;    /* the kernel's entry or its coarsened one */
  uint32_t nvalues; /* launch arguments: the kernel's, plus the coarsened entry's size */
  uint32_t grid[3], block[3];
  uint64_t *values; /* launch arguments captured at append time, when more than CUDA_CMD_INLINE */
  /* Small wait lists and argument lists live in the command itself (no allocation per
   * launch); cuda_cmd_waits / cuda_cmd_values pick the right storage. */
  cuda_event_t *wbuf[CUDA_CMD_INLINE];
  uint64_t vbuf[CUDA_CMD_INLINE];
} cuda_cmd_t;

static inline cuda_event_t *const *cuda_cmd_waits(const cuda_cmd_t *c) {
  return c->nwait <= CUDA_CMD_INLINE ? c->wbuf : c->waits;
}

typedef struct cuda_queue {
  zed_object_t obj;
  cuda_device_t *device;
  CUstream stream;
  int synchronous;
  uint64_t submitted; /* deferred signals made on the stream so far (their numbers) */
  cuda_event_t *deferred, *deferred_tail; /* events signalled here, not recorded yet */
} cuda_queue_t;

typedef struct cuda_list {
  zed_object_t obj;
  cuda_device_t *device;
  cuda_context_t *context; /* whose allocations say which device a copy's pointers are on */
  cuda_queue_t *immediate; /* immediate lists run on their own queue at append */
  cuda_cmd_t *cmds;
  size_t count, capacity;
} cuda_list_t;

typedef struct cuda_fence {
  zed_object_t obj;
  cuda_queue_t *queue;
  CUevent ev;
  volatile int state;
} cuda_fence_t;

/* CUDA result -> Level Zero result: sticky kernel faults become DEVICE_LOST. */
ze_result_t cuda_to_ze(CUresult r);
/* Makes the device's primary context current on the calling thread. */
ze_result_t cuda_use(cuda_device_t *d);
/* Peer access from one device's context to another's memory (cuda_peer.c): enabled on first
 * use of the pair where cuDeviceCanAccessPeer allows it; returns CUDA_PEER_DIRECT or
 * CUDA_PEER_STAGED (copies then go through host memory inside the CUDA driver). */
int cuda_peer_access(cuda_device_t *from, cuda_device_t *to);
/* The device whose memory holds p (device or shared allocations of the context), or NULL. */
cuda_device_t *cuda_alloc_device(cuda_context_t *c, const void *p);
/* Runs one command on a queue's stream (waits, operation, signal). */
ze_result_t cuda_cmd_run(const cuda_cmd_t *c, cuda_queue_t *q);
void cuda_cmd_free(cuda_cmd_t *c);
/* cuLaunchKernel for a recorded launch (cuda_module.c). */
ze_result_t cuda_launch(const cuda_cmd_t *c, CUstream s);
/* Fills a launch command's arguments, grid and block from the kernel's current state. */
ze_result_t cuda_launch_prepare(cuda_cmd_t *c, cuda_kernel_t *k, const ze_group_count_t *groups);
/* Records or runs a launch command (signal and waits are set here). */
ze_result_t cuda_list_submit_launch(ze_command_list_handle_t h, cuda_kernel_t *k,
                                    const ze_group_count_t *groups, ze_event_handle_t sig,
                                    uint32_t nwait, ze_event_handle_t *waits);

/* Deferred signals (cuda_event.c): a command's signal event is only recorded on the stream when
 * something needs it as a CUDA event (a wait on another stream, a query that the stream's state
 * cannot answer); a synchronised stream completes all of its deferred events at once. */
ze_result_t cuda_event_signal(cuda_event_t *e, cuda_queue_t *q);
/* Records a deferred event now; waits then see it as RECORDED. */
ze_result_t cuda_event_materialise(cuda_event_t *e);
/* Marks the queue's deferred events up to command number seq complete. */
void cuda_queue_completed(cuda_queue_t *q, uint64_t seq);
/* The queue's command count, read under the deferred-events lock. */
uint64_t cuda_queue_submitted(cuda_queue_t *q);
/* Sets an event's state (reset, host signal), taking it off a queue's deferred list first. */
void cuda_event_set_state(cuda_event_t *e, int state);
/* The driver object, or NULL before zeInit / without devices. */
cuda_driver_t *cuda_driver(void);

/* Entry points (Level Zero signatures) filled into the tables by cuda_tables.c. */
ze_result_t cuda_init(ze_init_flags_t flags);
ze_result_t cuda_driver_get(uint32_t *count, ze_driver_handle_t *drivers);
ze_result_t cuda_driver_get_api_version(ze_driver_handle_t h, ze_api_version_t *v);
ze_result_t cuda_driver_get_properties(ze_driver_handle_t h, ze_driver_properties_t *p);
ze_result_t cuda_driver_get_ipc_properties(ze_driver_handle_t h, ze_driver_ipc_properties_t *p);
ze_result_t cuda_driver_get_extension_properties(ze_driver_handle_t h, uint32_t *count,
                                                 ze_driver_extension_properties_t *p);
ze_result_t cuda_device_get(ze_driver_handle_t h, uint32_t *count, ze_device_handle_t *devices);
ze_result_t cuda_device_get_sub_devices(ze_device_handle_t h, uint32_t *count,
                                        ze_device_handle_t *subs);
ze_result_t cuda_device_get_properties(ze_device_handle_t h, ze_device_properties_t *p);
ze_result_t cuda_device_get_compute_properties(ze_device_handle_t h,
                                               ze_device_compute_properties_t *p);
ze_result_t cuda_device_get_module_properties(ze_device_handle_t h,
                                              ze_device_module_properties_t *p);
ze_result_t cuda_device_get_queue_group_properties(ze_device_handle_t h, uint32_t *count,
                                                   ze_command_queue_group_properties_t *p);
ze_result_t cuda_device_get_memory_properties(ze_device_handle_t h, uint32_t *count,
                                              ze_device_memory_properties_t *p);
ze_result_t cuda_device_can_access_peer(ze_device_handle_t h, ze_device_handle_t peer,
                                        ze_bool_t *value);
ze_result_t cuda_context_create(ze_driver_handle_t h, const ze_context_desc_t *desc,
                                ze_context_handle_t *out);
ze_result_t cuda_context_destroy(ze_context_handle_t h);
ze_result_t cuda_context_get_status(ze_context_handle_t h);

ze_result_t cuda_mem_alloc_device(ze_context_handle_t c, const ze_device_mem_alloc_desc_t *d,
                                  size_t size, size_t align, ze_device_handle_t dev, void **out);
ze_result_t cuda_mem_alloc_host(ze_context_handle_t c, const ze_host_mem_alloc_desc_t *d,
                                size_t size, size_t align, void **out);
ze_result_t cuda_mem_alloc_shared(ze_context_handle_t c, const ze_device_mem_alloc_desc_t *dd,
                                  const ze_host_mem_alloc_desc_t *hd, size_t size, size_t align,
                                  ze_device_handle_t dev, void **out);
ze_result_t cuda_mem_free(ze_context_handle_t c, void *p);
ze_result_t cuda_mem_get_alloc_properties(ze_context_handle_t c, const void *p,
                                          ze_memory_allocation_properties_t *props,
                                          ze_device_handle_t *dev);
ze_result_t cuda_mem_get_address_range(ze_context_handle_t c, const void *p, void **base,
                                       size_t *size);

ze_result_t cuda_queue_create(ze_context_handle_t c, ze_device_handle_t d,
                              const ze_command_queue_desc_t *desc, ze_command_queue_handle_t *out);
ze_result_t cuda_queue_destroy(ze_command_queue_handle_t h);
ze_result_t cuda_queue_execute(ze_command_queue_handle_t h, uint32_t n,
                               ze_command_list_handle_t *lists, ze_fence_handle_t fence);
ze_result_t cuda_queue_synchronize(ze_command_queue_handle_t h, uint64_t timeout);

ze_result_t cuda_list_create(ze_context_handle_t c, ze_device_handle_t d,
                             const ze_command_list_desc_t *desc, ze_command_list_handle_t *out);
ze_result_t cuda_list_create_immediate(ze_context_handle_t c, ze_device_handle_t d,
                                       const ze_command_queue_desc_t *desc,
                                       ze_command_list_handle_t *out);
ze_result_t cuda_list_destroy(ze_command_list_handle_t h);
ze_result_t cuda_list_close(ze_command_list_handle_t h);
ze_result_t cuda_list_reset(ze_command_list_handle_t h);
ze_result_t cuda_list_append_barrier(ze_command_list_handle_t h, ze_event_handle_t sig,
                                     uint32_t nwait, ze_event_handle_t *waits);
ze_result_t cuda_list_append_memory_ranges_barrier(ze_command_list_handle_t h, uint32_t n,
                                                   const size_t *sizes, const void **ranges,
                                                   ze_event_handle_t sig, uint32_t nwait,
                                                   ze_event_handle_t *waits);
ze_result_t cuda_list_append_copy(ze_command_list_handle_t h, void *dst, const void *src,
                                  size_t size, ze_event_handle_t sig, uint32_t nwait,
                                  ze_event_handle_t *waits);
ze_result_t cuda_list_append_fill(ze_command_list_handle_t h, void *p, const void *pattern,
                                  size_t pattern_size, size_t size, ze_event_handle_t sig,
                                  uint32_t nwait, ze_event_handle_t *waits);
ze_result_t cuda_list_append_signal(ze_command_list_handle_t h, ze_event_handle_t ev);
ze_result_t cuda_list_append_wait(ze_command_list_handle_t h, uint32_t n, ze_event_handle_t *evs);
ze_result_t cuda_list_append_reset(ze_command_list_handle_t h, ze_event_handle_t ev);
ze_result_t cuda_list_append_launch(ze_command_list_handle_t h, ze_kernel_handle_t k,
                                    const ze_group_count_t *groups, ze_event_handle_t sig,
                                    uint32_t nwait, ze_event_handle_t *waits);

ze_result_t cuda_event_pool_create(ze_context_handle_t c, const ze_event_pool_desc_t *desc,
                                   uint32_t ndev, ze_device_handle_t *devs,
                                   ze_event_pool_handle_t *out);
ze_result_t cuda_event_pool_destroy(ze_event_pool_handle_t h);
ze_result_t cuda_event_create(ze_event_pool_handle_t p, const ze_event_desc_t *desc,
                              ze_event_handle_t *out);
ze_result_t cuda_event_destroy(ze_event_handle_t h);
ze_result_t cuda_event_host_signal(ze_event_handle_t h);
ze_result_t cuda_event_host_synchronize(ze_event_handle_t h, uint64_t timeout);
ze_result_t cuda_event_query_status(ze_event_handle_t h);
ze_result_t cuda_event_host_reset(ze_event_handle_t h);
ze_result_t cuda_fence_create(ze_command_queue_handle_t q, const ze_fence_desc_t *desc,
                              ze_fence_handle_t *out);
ze_result_t cuda_fence_destroy(ze_fence_handle_t h);
ze_result_t cuda_fence_host_synchronize(ze_fence_handle_t h, uint64_t timeout);
ze_result_t cuda_fence_query_status(ze_fence_handle_t h);
ze_result_t cuda_fence_reset(ze_fence_handle_t h);

ze_result_t cuda_module_create(ze_context_handle_t c, ze_device_handle_t d,
                               const ze_module_desc_t *desc, ze_module_handle_t *out,
                               ze_module_build_log_handle_t *log);
ze_result_t cuda_module_destroy(ze_module_handle_t h);
ze_result_t cuda_module_get_kernel_names(ze_module_handle_t h, uint32_t *count, const char **n);
ze_result_t cuda_module_get_native_binary(ze_module_handle_t h, size_t *size, uint8_t *binary);
/* cuda_module_native.c: a native binary's parts (the finaliser's binary and the cubin, whose
 * length is 0 when it has none); 0 when the header is not this driver's. */
/* KAPI_CUDA_DEBUG_PTX (cuda_ptx_debug.c): the directory, or NULL when unset. */
const char *cuda_ptx_debug_dir(void);
/* Writes PTX to the directory and returns a malloc'd copy whose line info names its lines. */
char *cuda_ptx_debug_annotate(const char *dir, const char *ptx);
int cuda_native_split(const void *bin, size_t len, const void **nv, size_t *nv_len,
                      const void **cubin, size_t *cubin_len);
ze_result_t cuda_kernel_create(ze_module_handle_t m, const ze_kernel_desc_t *desc,
                               ze_kernel_handle_t *out);
ze_result_t cuda_kernel_destroy(ze_kernel_handle_t h);
ze_result_t cuda_kernel_set_group_size(ze_kernel_handle_t h, uint32_t x, uint32_t y, uint32_t z);
ze_result_t cuda_kernel_suggest_group_size(ze_kernel_handle_t h, uint32_t gx, uint32_t gy,
                                           uint32_t gz, uint32_t *x, uint32_t *y, uint32_t *z);
ze_result_t cuda_kernel_set_argument(ze_kernel_handle_t h, uint32_t i, size_t size,
                                     const void *value);
ze_result_t cuda_kernel_get_properties(ze_kernel_handle_t h, ze_kernel_properties_t *p);
ze_result_t cuda_kernel_get_name(ze_kernel_handle_t h, size_t *size, char *name);

#endif
