/* kapi runtime: the contract of the runtime layer (libkapi_runtime.so).
 *
 * A Level Zero client: it finds drivers (kapi's CPU and CUDA drivers beside this library,
 * and Intel's GPU driver), lists their devices, and offers in-order queues, USM memory,
 * SPIR-V modules with a per-device kernel cache, launches and events. It speaks only the
 * Level Zero API through the system loader and knows nothing about Python.
 *
 * Conventions (as in LLVM-C and Level Zero):
 * - Handles are opaque. Every create has a destroy; objects the runtime hands out without a
 *   create (devices, default queues, cached kernels) are owned by the runtime and live until
 *   kr_shutdown().
 * - Functions that do work return a kr_status_t; functions that return a handle return NULL on
 *   failure. Either way, on failure *err (when err is not NULL) receives the status, the Level
 *   Zero result (if one caused it) and a message such as
 *     "zeModuleCreate on device 'kapi CPU (x86-64)': ZE_RESULT_ERROR_MODULE_BUILD_FAILURE:
 *      the SPIR-V module failed to build\nbuild log:\n..."
 *   On success *err is left untouched, so one kr_error_t can serve a sequence of calls.
 * - Nothing here prints, exits or aborts. Bad input (NULL handles, bad sizes, bad group sizes,
 *   wrong argument counts) is KR_ERR_INVALID_ARGUMENT with a message, never a crash.
 * - Thread-safety: every function may be called from any thread at any time, except
 *   kr_shutdown(), which needs every other call to have returned. A queue serialises the
 *   commands appended to it; a kernel serialises launches of itself (argument setting and
 *   the append happen under the kernel's lock), so two threads may launch one kernel.
 * - Index space: dimension 0 is the fastest-varying one (as get_global_id(0) in the kernel).
 */
#ifndef KAPI_RUNTIME_H
#define KAPI_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The build hides symbols by default; everything declared here is the library's interface. */
#pragma GCC visibility push(default)

/* ---------------------------------------------------------------------------------------- */
/* Errors                                                                                   */
/* ---------------------------------------------------------------------------------------- */

typedef enum kr_status {
  KR_OK = 0,
  KR_ERR_INVALID_ARGUMENT, /* NULL handle, bad size, wrong argument count, bad group size */
  KR_ERR_NO_DEVICE,        /* no Level Zero driver or device could be found/initialised */
  KR_ERR_LEVEL_ZERO,       /* a Level Zero call failed (ze_result in kr_error_t) */
  KR_ERR_BUILD,            /* the SPIR-V module failed to build; message holds the log */
  KR_ERR_KERNEL_NOT_FOUND, /* no kernel of that name in the module */
  KR_ERR_OUT_OF_MEMORY,    /* host or device allocation failed */
  KR_ERR_UNSUPPORTED,      /* the device or driver lacks the feature */
  KR_ERR_DEVICE_LOST,      /* the device failed (e.g. a kernel faulted) */
} kr_status_t;

#define KR_ERROR_MESSAGE_SIZE 4096

/* Filled on failure. Messages longer than the buffer are cut (ending in "..."). */
typedef struct kr_error {
  kr_status_t status;
  int32_t ze_result; /* the ze_result_t behind the error, 0 (ZE_RESULT_SUCCESS) if none */
  char message[KR_ERROR_MESSAGE_SIZE];
} kr_error_t;

/* Short fixed name of a status ("KR_ERR_BUILD"). Never NULL; not to be freed. */
const char *kr_status_name(kr_status_t s);

/* Name of a ze_result_t value ("ZE_RESULT_ERROR_INVALID_ARGUMENT"), or "ZE_RESULT_<0x...>"
 * for unknown values (in a static buffer per thread). Never NULL; not to be freed. */
const char *kr_result_name(int32_t ze_result);

/* ---------------------------------------------------------------------------------------- */
/* Initialisation and drivers                                                               */
/* ---------------------------------------------------------------------------------------- */
/* Which Level Zero drivers the loader opens is decided once, before the first zeInit:
 * - KAPI_DRIVERS, when set, is a comma-separated list of driver names or absolute paths:
 *     cpu    libze_kapi_cpu.so beside libkapi_runtime.so
 *     cuda   libze_kapi_cuda.so beside libkapi_runtime.so
 *     intel  libze_intel_gpu.so.1 (Intel's GPU driver, found by the loader's search path)
 *     all    every one of the above that exists (the default)
 *   anything else is used as given (a path or library name). The result is written to
 *   ZE_ENABLE_ALT_DRIVERS, replacing any value there: KAPI_DRIVERS is kapi's own knob.
 * - Else, when ZE_ENABLE_ALT_DRIVERS is set, it is respected unchanged.
 * - Else it is set to "all": our drivers found beside this library plus libze_intel_gpu.so.1,
 *   so a real Intel GPU is still found.
 * Setting either variable after kr_init has no effect on this process, and neither has any
 * when something else in the process called zeInit first (the loader reads the list once).
 * kr_init calls setenv: call it before starting threads that read the environment. */

/* Sets up the driver list, calls zeInit and lists every device of every driver. Runs once:
 * later calls (from any thread) return the first call's result and message. Returns
 * KR_ERR_NO_DEVICE, with the driver list tried in the message, when no device is found.
 * Every other function calls it implicitly where needed, so calling it is optional. */
kr_status_t kr_init(kr_error_t *err);

/* The driver list kr_init gave the loader (the final ZE_ENABLE_ALT_DRIVERS value), or ""
 * before kr_init. Owned by the runtime. */
const char *kr_driver_list(void);

/* Releases every object the runtime owns (default queues, cached kernels and modules, event
 * pools, contexts). Any handle obtained before is invalid afterwards. Free memory from
 * kr_malloc, destroy queues from kr_queue_create and modules from kr_module_create, and
 * release events first.
 * After it, kr_init may be called again. Not thread-safe with any other call. Optional:
 * useful for leak checkers and tests. */
void kr_shutdown(void);

/* ---------------------------------------------------------------------------------------- */
/* Devices                                                                                  */
/* ---------------------------------------------------------------------------------------- */

typedef struct kr_device kr_device_t; /* owned by the runtime; lives until kr_shutdown */

/* Values match ze_device_type_t. */
typedef enum kr_device_type {
  KR_DEVICE_GPU = 1,
  KR_DEVICE_CPU = 2,
  KR_DEVICE_FPGA = 3,
  KR_DEVICE_MCA = 4,
  KR_DEVICE_VPU = 5,
} kr_device_type_t;

/* Real properties, as reported by the device's Level Zero driver. */
typedef struct kr_device_info {
  uint32_t index; /* position in the kr_device_get list */
  char name[256]; /* ze_device_properties_t.name */
  kr_device_type_t type;
  uint32_t vendor_id; /* PCI vendor id (0x8086 Intel, 0x10de NVIDIA, ...) */
  uint32_t device_id;
  char vendor_name[64]; /* "Intel", "NVIDIA", "AMD", or "vendor 0x...." */
  /* The driver's short name: "kapi-cpu" / "kapi-cuda" for kapi's drivers (which advertise a
   * driver extension "kapi_driver_<name>" or have a driver UUID starting "kapi-<name>"),
   * "intel-gpu" for Intel's, else "ze-driver-<i>". */
  char driver_name[64];
  uint32_t driver_index;             /* which Level Zero driver (order of zeDriverGet) */
  uint32_t driver_version;           /* ze_driver_properties_t.driverVersion */
  uint32_t compute_units;            /* slices * subslices per slice * EUs per subslice */
  uint32_t threads_per_compute_unit; /* numThreadsPerEU */
  uint32_t core_clock_mhz;
  uint32_t max_work_group_size; /* maxTotalGroupSize */
  uint32_t max_group_size[3];   /* per-dimension work-group size limits */
  uint32_t max_group_count[3];  /* per-dimension limits on the number of groups */
  uint64_t local_mem_size;      /* maxSharedLocalMemory (bytes per work-group) */
  uint64_t global_mem_size;     /* sum of the device's memory totalSize (bytes) */
  uint64_t max_alloc_size;      /* maxMemAllocSize (bytes) */
  uint32_t fp16;                /* 1 when the device computes in half precision */
  uint32_t fp64;                /* 1 when the device computes in double precision */
  uint32_t num_sub_group_sizes;
  uint32_t sub_group_sizes[8];
  uint32_t spirv_version; /* highest SPIR-V version accepted, ZE_MAKE_VERSION form */
  uint8_t uuid[16];       /* ze_device_uuid_t */
} kr_device_info_t;

/* Number of devices over all drivers (0 when kr_init failed). Calls kr_init if needed. */
uint32_t kr_device_count(void);

/* Device i in [0, kr_device_count()), or NULL. Stable for the runtime's life. */
kr_device_t *kr_device_get(uint32_t i);

/* The device's properties, owned by the runtime. NULL only for a NULL device. */
const kr_device_info_t *kr_device_info(const kr_device_t *dev);

/* 1 when copies between dev's memory and peer's go directly from one device to the other (the
 * same device; or peer access over NVLink or PCIe, which the driver enables on first use), 0
 * when they are staged through host memory (no peer access, or devices of different drivers),
 * -1 for a NULL device. */
int kr_device_can_access_peer(kr_device_t *dev, kr_device_t *peer);

/* The Level Zero handles behind a device, for code that calls Level Zero itself (kapi's C API
 * for extensions hands them on): its ze_driver_handle_t, ze_device_handle_t and the one
 * ze_context_handle_t the runtime uses for every device of that driver (USM from kr_malloc
 * belongs to it). Typed void * so this header needs no Level Zero headers. Each out pointer may
 * be NULL. The runtime owns the handles: valid until kr_shutdown, never to be destroyed or
 * released by the caller. KR_ERR_INVALID_ARGUMENT for a NULL device. */
kr_status_t kr_device_ze_handles(const kr_device_t *dev, void **driver, void **device,
                                 void **context, kr_error_t *err);

/* ---------------------------------------------------------------------------------------- */
/* Events                                                                                   */
/* ---------------------------------------------------------------------------------------- */
/* An event marks the completion of one command (launch, copy, fill) or of a queue barrier.
 * Events come from pools inside the runtime; kr_event_release returns one to its pool, which
 * reuses it only once it has signalled, so releasing a pending event is safe. Events are
 * reference-counted: the command's caller receives one reference. */

typedef struct kr_event kr_event_t;

/* Adds a reference (atomic; any thread). Returns ev. */
kr_event_t *kr_event_retain(kr_event_t *ev);

/* Drops a reference; the last one gives the event back to its pool. NULL is fine. */
void kr_event_release(kr_event_t *ev);

/* Blocks until the event has signalled. KR_ERR_DEVICE_LOST when the command failed. */
kr_status_t kr_event_wait(kr_event_t *ev, kr_error_t *err);

/* Blocks until every event has signalled. */
kr_status_t kr_events_wait(uint32_t n, kr_event_t *const *evs, kr_error_t *err);

/* 1 when signalled, 0 when pending, -1 on error (device lost, NULL). Never blocks. */
int kr_event_is_complete(kr_event_t *ev);

/* ---------------------------------------------------------------------------------------- */
/* Queues                                                                                   */
/* ---------------------------------------------------------------------------------------- */
/* A queue is an in-order Level Zero immediate command list on one device: commands run in
 * the order they are appended. Every command also takes a wait list (events that must have
 * signalled before it starts); events of another driver are waited for on the host first.
 * Commands taking `kr_event_t **out_event`: NULL makes the call synchronous (it returns once
 * the command has completed); otherwise the call returns once the command is appended and
 * *out_event receives a new event (one reference, released by the caller). */

typedef struct kr_queue kr_queue_t;

/* The device's default queue, created on first use and owned by the runtime. NULL (with
 * *err) if it cannot be created. */
kr_queue_t *kr_device_queue(kr_device_t *dev, kr_error_t *err);

/* A new queue of its own; destroy with kr_queue_destroy. */
kr_queue_t *kr_queue_create(kr_device_t *dev, kr_error_t *err);

/* Waits for the queue's commands, then destroys it. Default queues are ignored. NULL fine. */
void kr_queue_destroy(kr_queue_t *q);

kr_device_t *kr_queue_device(const kr_queue_t *q);

/* The queue's Level Zero immediate command list (a ze_command_list_handle_t), for code that
 * appends commands of its own; owned by the queue (valid until kr_queue_destroy, or kr_shutdown
 * for a default queue). The runtime appends under a lock of its own: commands appended through
 * this handle must not race with the runtime's on the same queue. NULL for a NULL queue. */
void *kr_queue_ze_command_list(const kr_queue_t *q);

/* Blocks until every command appended so far has completed. */
kr_status_t kr_queue_synchronize(kr_queue_t *q, kr_error_t *err);

/* An event that signals once every command appended so far has completed (a barrier). */
kr_status_t kr_queue_barrier(kr_queue_t *q, uint32_t nwait, kr_event_t *const *wait,
                             kr_event_t **out_event, kr_error_t *err);

/* ---------------------------------------------------------------------------------------- */
/* Memory (unified shared memory)                                                           */
/* ---------------------------------------------------------------------------------------- */

/* Values match ze_memory_type_t. */
typedef enum kr_mem_kind {
  KR_MEM_UNKNOWN = 0, /* not a USM allocation of any context the runtime knows */
  KR_MEM_HOST = 1,    /* host memory every device of the driver can access */
  KR_MEM_DEVICE = 2,  /* memory of one device */
  KR_MEM_SHARED = 3,  /* migrates between the host and one device */
} kr_mem_kind_t;

/* Allocates `size` bytes (size > 0) aligned to `alignment` (0: the driver's default, a power
 * of two otherwise) of the given kind. For KR_MEM_HOST the device only selects the driver
 * (context) the memory belongs to. Returns NULL with *err on failure. */
void *kr_malloc(kr_device_t *dev, kr_mem_kind_t kind, size_t size, size_t alignment,
                kr_error_t *err);

/* Frees memory from kr_malloc (any kind, any device; the owner is looked up). NULL is fine.
 * The caller makes sure no pending command still uses it. KR_ERR_INVALID_ARGUMENT for a
 * pointer the runtime did not allocate. */
kr_status_t kr_free(void *ptr, kr_error_t *err);

typedef struct kr_pointer_info {
  kr_mem_kind_t kind;
  kr_device_t *device; /* owner for DEVICE/SHARED; for HOST, the first device of its driver;
                          NULL for KR_MEM_UNKNOWN */
  void *base;          /* start of the allocation holding ptr (NULL when unknown) */
  size_t size;         /* its size in bytes (0 when unknown) */
} kr_pointer_info_t;

/* What ptr points into (compute-follows-data). Plain host memory is KR_OK with kind
 * KR_MEM_UNKNOWN. */
kr_status_t kr_pointer_info(const void *ptr, kr_pointer_info_t *out, kr_error_t *err);

/* Copies n bytes; src and dst may be USM of the queue's driver or plain host memory. */
kr_status_t kr_memcpy(kr_queue_t *q, void *dst, const void *src, size_t n, uint32_t nwait,
                      kr_event_t *const *wait, kr_event_t **out_event, kr_error_t *err);

/* Fills n bytes at dst with a repeated pattern of pattern_size bytes (1, 2, 4, ... 128, a
 * power of two dividing n). */
kr_status_t kr_fill(kr_queue_t *q, void *dst, const void *pattern, size_t pattern_size, size_t n,
                    uint32_t nwait, kr_event_t *const *wait, kr_event_t **out_event,
                    kr_error_t *err);

/* kr_fill with a one-byte pattern. */
kr_status_t kr_memset(kr_queue_t *q, void *dst, int value, size_t n, uint32_t nwait,
                      kr_event_t *const *wait, kr_event_t **out_event, kr_error_t *err);

/* ---------------------------------------------------------------------------------------- */
/* Modules and kernels                                                                      */
/* ---------------------------------------------------------------------------------------- */

typedef struct kr_module kr_module_t;
typedef struct kr_kernel kr_kernel_t;

/* The cheap path: the kernel `name` of this SPIR-V module built for dev. Modules are cached
 * per device by the SPIR-V's content (hash, then a byte comparison), kernels by name within
 * them, so a second call with the same bytes builds nothing. The kernel is owned by the
 * runtime and lives until kr_shutdown. Failures: KR_ERR_BUILD (message holds the driver's
 * build log; the failure is not cached), KR_ERR_KERNEL_NOT_FOUND. */
kr_kernel_t *kr_kernel_get(kr_device_t *dev, const void *spirv, size_t nbytes, const char *name,
                           kr_error_t *err);

/* Native binaries (the disk cache's second level): the driver's own code for a module, so a
 * later process skips the SPIR-V build. kr_module_native_binary builds (or finds) the cached
 * module for the SPIR-V on dev as kr_kernel_get would and returns zeModuleGetNativeBinary's
 * bytes, malloc'ed (free them); KR_ERR_UNSUPPORTED when the driver has none.
 * kr_module_cache_native creates dev's cached module for that SPIR-V from a native binary of
 * it (ZE_MODULE_FORMAT_NATIVE), so that kr_kernel_get with the same SPIR-V uses it; KR_OK at
 * once when the module is cached already. KR_ERR_LEVEL_ZERO or KR_ERR_BUILD when the driver
 * refuses the binary (another device, CPU or build): build from the SPIR-V then. The caller
 * vouches that the binary was made from these SPIR-V bytes. */
kr_status_t kr_module_native_binary(kr_device_t *dev, const void *spirv, size_t nbytes, void **out,
                                    size_t *len, kr_error_t *err);
kr_status_t kr_module_cache_native(kr_device_t *dev, const void *spirv, size_t nbytes,
                                   const void *native, size_t native_len, kr_error_t *err);

/* An uncached module of one's own; build_flags may be NULL. Destroyed with kr_module_destroy,
 * which also destroys its kernels. KR_ERR_BUILD with the build log on failure. */
kr_module_t *kr_module_create(kr_device_t *dev, const void *spirv, size_t nbytes,
                              const char *build_flags, kr_error_t *err);
void kr_module_destroy(kr_module_t *mod);

/* A kernel of the module, owned by the module (the same pointer for the same name). */
kr_kernel_t *kr_module_kernel(kr_module_t *mod, const char *name, kr_error_t *err);

typedef struct kr_kernel_info {
  const char *name; /* owned by the kernel */
  kr_device_t *device;
  uint32_t num_args;
  uint32_t required_group_size[3]; /* reqd_work_group_size, or zeros */
  uint32_t max_sub_group_size;
  uint32_t private_mem_size; /* bytes per work-item, as the driver reports */
  uint32_t local_mem_size;   /* static local memory, bytes per work-group */
} kr_kernel_info_t;

const kr_kernel_info_t *kr_kernel_info(const kr_kernel_t *k);

/* ---------------------------------------------------------------------------------------- */
/* Launches                                                                                 */
/* ---------------------------------------------------------------------------------------- */

/* One kernel argument: `size` bytes read from `value` (copied at launch; a pointer argument
 * passes the address of the pointer variable, size 8). value == NULL means local memory:
 * `size` bytes of work-group local memory for that argument. */
typedef struct kr_arg {
  size_t size;
  const void *value;
} kr_arg_t;

/* Installs, for the calling thread only, a check that launches this thread runs call about
 * every 50 ms once they have run that long, on drivers that can stop a launch between
 * work-groups (kapi's CPU driver, where the launching thread runs groups itself). When check
 * returns nonzero, the launch hands out no more work-groups, waits for the running ones and
 * fails (KR_ERR_LEVEL_ZERO, ze_result ZE_RESULT_NOT_READY); what the kernel wrote so far stays
 * written, and the queue and device remain usable. check == NULL removes it. The Python
 * extension installs one that runs Python's signal handlers, so Ctrl-C interrupts a launch. */
kr_status_t kr_set_interrupt_check(int (*check)(void *ctx), void *ctx, kr_error_t *err);

/* Launches the kernel over an ndim-dimensional (1..3) index space of global[0..ndim-1]
 * work-items on the queue's device (which must be the kernel's device).
 * - local == NULL (a Range launch): the runtime chooses the work-group size, each
 *   dimension's size a divisor of global[d] within the device's limits (the driver's
 *   suggestion when it divides, else the best divisor). The choice is cached per kernel.
 * - local != NULL (an NdRange launch): local[0..ndim-1] is used as given; it must divide
 *   global in every dimension and respect the device's and the kernel's limits, otherwise
 *   KR_ERR_INVALID_ARGUMENT says which dimension and limit.
 * A global size of 0 in any dimension launches nothing (an event, if asked, is complete).
 * nargs must equal the kernel's argument count; a bad argument size names the argument.
 * wait/out_event: see Queues. */
kr_status_t kr_launch(kr_queue_t *q, kr_kernel_t *k, uint32_t ndim, const size_t *global,
                      const size_t *local, uint32_t nargs, const kr_arg_t *args, uint32_t nwait,
                      kr_event_t *const *wait, kr_event_t **out_event, kr_error_t *err);

/* The work-group size a Range launch of k over global would use (for inspection and tests).
 */
kr_status_t kr_range_group_size(kr_kernel_t *k, uint32_t ndim, const size_t *global,
                                size_t local_out[3], kr_error_t *err);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif

#endif /* KAPI_RUNTIME_H */
