/* Private structures and helpers shared by the runtime's source files (never installed).
 * The public contract is kapi/runtime.h; everything here is hidden from the library's users.
 */
#ifndef KAPI_RUNTIME_INTERNAL_H
#define KAPI_RUNTIME_INTERNAL_H

#include "kapi/runtime.h"

#include <level_zero/ze_api.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#define KR_EVENTS_PER_POOL 128

typedef struct kr_driver kr_driver_t;

/* A block of events created together (one ze_event_pool_handle_t). */
typedef struct kr_event_block {
  ze_event_pool_handle_t pool;
  struct kr_event_block *next;
  struct kr_event *events; /* KR_EVENTS_PER_POOL of them */
} kr_event_block_t;

struct kr_event {
  ze_event_handle_t h;
  kr_driver_t *drv;
  atomic_int refs;
  struct kr_event *next; /* in the driver's free or retired list */
};

/* One Level Zero driver, with the one context the runtime uses for all its devices. */
struct kr_driver {
  ze_driver_handle_t h;
  ze_context_handle_t ctx;
  /* The driver's zexKapiCpuSetInterruptCheck, or NULL (drivers that cannot stop a launch). */
  ze_result_t (*set_interrupt)(int (*)(void *), void *);
  uint32_t index;
  char name[64];
  uint32_t first_device; /* index of its first device in the runtime's list */
  uint32_t num_devices;
  /* Event pools: `free` events are reset and ready; `retired` ones (a FIFO, oldest first)
   * were released by their last user and are reset once they have signalled. Releasing
   * does not ask the driver whether the event has signalled (on a GPU that costs as much as
   * a launch); reclaiming does, oldest first, stopping at the first one still pending. */
  pthread_mutex_t event_lock;
  kr_event_block_t *blocks;
  struct kr_event *free;
  struct kr_event *retired, *retired_tail;
};

/* A cached SPIR-V module of one device. */
typedef struct kr_cached_module {
  uint64_t hash;
  size_t nbytes;
  void *spirv; /* a copy, compared on a hash match */
  kr_module_t *mod;
  struct kr_cached_module *next;
} kr_cached_module_t;

struct kr_device {
  ze_device_handle_t h;
  kr_driver_t *drv;
  kr_device_info_t info;
  uint32_t compute_ordinal; /* command queue group used for compute */
  pthread_mutex_t lock;     /* guards default_queue */
  kr_queue_t *default_queue;
  pthread_mutex_t modules_lock; /* guards modules; held while one builds */
  kr_cached_module_t *modules;
};

/* One event a queue must keep alive until a command that waits on it has completed. */
typedef struct kr_held_wait {
  kr_event_t *waiter; /* the waiting command's event */
  kr_event_t *waited;
  struct kr_held_wait *next;
} kr_held_wait_t;

struct kr_queue {
  kr_device_t *dev;
  ze_command_list_handle_t cl;
  pthread_mutex_t lock; /* guards appends to cl and `held` */
  bool is_default;
  /* Whether the driver runs an immediate list's commands in order (kapi's drivers do). For
   * others the runtime chains each command to the previous one's event (`last`). */
  bool driver_in_order;
  kr_event_t *last;
  kr_held_wait_t *held;
};

/* Cached value of one kernel argument, so an unchanged argument is not set again. */
typedef struct kr_arg_slot {
  size_t size;
  bool valid; /* value holds what the driver has */
  bool local; /* set as local memory of `size` bytes */
  uint8_t value[16];
} kr_arg_slot_t;

struct kr_kernel {
  ze_kernel_handle_t h;
  kr_module_t *mod;
  kr_kernel_info_t info;
  char *name;
  pthread_mutex_t lock; /* serialises argument setting and launches of this kernel */
  uint32_t group[3];    /* group size last given to the driver (0: none yet) */
  /* The last Range choice: global size -> local size. */
  uint32_t range_ndim;
  size_t range_global[3];
  size_t range_local[3];
  kr_arg_slot_t *slots; /* info.num_args of them */
  struct kr_kernel *next;
};

struct kr_module {
  ze_module_handle_t h;
  kr_device_t *dev;
  pthread_mutex_t lock; /* guards kernels */
  kr_kernel_t *kernels;
};

/* --- runtime state (init.c) --- */
typedef struct kr_runtime {
  uint32_t num_drivers;
  kr_driver_t *drivers;
  uint32_t num_devices;
  kr_device_t **devices;
} kr_runtime_t;

extern kr_runtime_t kr_rt;

/* kr_init's fast path: KR_OK when the runtime is up, else its failure in *err. */
kr_status_t kr_ensure_init(kr_error_t *err);
kr_device_t *kr_device_from_handle(ze_device_handle_t h);

/* --- errors (error.c) --- */
/* Fills *err (if not NULL) with status and printf-style message; returns status. */
kr_status_t kr_fail(kr_error_t *err, kr_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A failed Level Zero call: "<call> on device '<name>' (<driver>): <RESULT>: <what>[: extra]".
 * dev may be NULL. Returns the status the result maps to. */
kr_status_t kr_ze_fail(kr_error_t *err, ze_result_t r, const char *call, const kr_device_t *dev,
                       const char *extra_fmt, ...) __attribute__((format(printf, 5, 6)));
kr_status_t kr_status_of_result(ze_result_t r);

/* --- devices (device.c) --- */
kr_status_t kr_device_fill(kr_device_t *dev, kr_error_t *err);
void kr_driver_name(kr_driver_t *drv, const ze_device_properties_t *first_dev_props);

/* --- events (event.c) --- */
kr_event_t *kr_event_acquire(kr_driver_t *drv, kr_error_t *err);
/* Returns an event known to have signalled (or never used) to the free list, reset. */
void kr_event_recycle(kr_event_t *ev);
void kr_driver_events_destroy(kr_driver_t *drv);

/* --- queues (queue.c) --- */
/* Turns a caller's wait list into ze handles for a command on q: events of q's own driver are
 * kept, others are waited for on the host. *out points to `buf` (n entries) or a heap array
 * the caller frees when it is not buf. */
kr_status_t kr_wait_list(kr_queue_t *q, uint32_t nwait, kr_event_t *const *wait,
                         ze_event_handle_t *buf, uint32_t nbuf, ze_event_handle_t **out,
                         uint32_t *n_out, kr_error_t *err);
/* (The list has room for one more entry: the queue's previous command, see kr_queue.) */
/* The command-appending protocol shared by launches, copies and fills. begin: takes the
 * signal event (a new one, returned to the caller later or waited on for synchronous calls)
 * and builds the wait list; finish: after the append, holds cross-queue waits, waits for
 * synchronous calls and hands out the event. */
typedef struct kr_cmd {
  kr_queue_t *q;
  kr_event_t *ev;
  ze_event_handle_t wbuf[8];
  ze_event_handle_t *waits;
  uint32_t nwaits;
  uint32_t nwait_in;
  kr_event_t *const *wait_in;
} kr_cmd_t;
kr_status_t kr_cmd_begin(kr_cmd_t *c, kr_queue_t *q, uint32_t nwait, kr_event_t *const *wait,
                         kr_error_t *err);
/* r: the append's result (already reported in err when failed); call names it. */
kr_status_t kr_cmd_finish(kr_cmd_t *c, kr_status_t st, kr_event_t **out_event, kr_error_t *err);
void kr_queue_free(kr_queue_t *q);

/* --- modules (module.c) --- */
void kr_device_modules_destroy(kr_device_t *dev);

#endif /* KAPI_RUNTIME_INTERNAL_H */
