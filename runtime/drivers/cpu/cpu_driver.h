/* kapi's Level Zero driver for the host CPU: the objects behind every handle and the functions
 * the files share. Private to this folder; cpu_tables.c is the only door from the loader.
 * Execution model: one device (the host CPU); commands run in order, synchronously, on the
 * thread that submits them (immediate lists at append, regular lists at execute), with kernel
 * work-groups spread over a persistent thread pool (cpu_pool.c). */
#ifndef KAPI_CPU_DRIVER_H
#define KAPI_CPU_DRIVER_H

#include "kapi/compiler.h"
#include "zed.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/* Limits we promise in the device properties and enforce. */
#define CPU_MAX_GROUP_SIZE 1024u         /* per dimension and in total */
#define CPU_LOCAL_MEM_SIZE (64u * 1024u) /* bytes of local memory per work-group */
#define CPU_LOCAL_ALIGN 128u             /* alignment of each local-memory argument */
#define CPU_MEM_ALIGN 64u                /* alignment of USM allocations (a cache line) */
/* Kernels that take batches of groups (kc_host_kernel_t.batches) get about CPU_BATCH_ITEMS
 * work-items per run call, at most CPU_BATCH_GROUPS groups, and at most CPU_BATCH_LOCAL bytes of
 * local memory for the batch (one group's always). */
#define CPU_BATCH_ITEMS 4096u
#define CPU_BATCH_GROUPS 64u
#define CPU_BATCH_LOCAL (256u * 1024u)

typedef struct cpu_pool cpu_pool_t;

/* ---- driver and device (cpu_device.c) ---- */

typedef struct cpu_device {
  zed_object_t obj;
  uint32_t cores;      /* CPUs this process may run on (sched_getaffinity) */
  uint32_t clock_mhz;  /* highest core clock, 0 if unknown */
  uint32_t simd_width; /* 32-bit lanes of the widest vector unit */
  bool has_fma;
  uint64_t mem_total;     /* bytes of physical memory (/proc/meminfo MemTotal) */
  uint64_t cache_size[3]; /* L1d, L2, L3 bytes, 0 if unknown */
  /* L3 bytes that CPU 0 shares as Linux lists them (sysfs; glibc's sysconf may give the whole
   * socket's: 320 MiB on an EPYC whose cores share 32 MiB), else cache_size[2] */
  uint64_t l3_shared;
  char name[ZE_MAX_DEVICE_NAME];
  uint32_t vendor_id;
  pthread_mutex_t pool_lock; /* guards pool creation */
  cpu_pool_t *_Atomic pool;  /* created at the first launch */
} cpu_device_t;

typedef struct cpu_driver {
  zed_object_t obj;
  cpu_device_t device;
} cpu_driver_t;

/* The process-wide driver, set up by zeInit; NULL before. */
cpu_driver_t *cpu_driver(void);
/* The device's thread pool, created on first use; NULL when out of memory. */
cpu_pool_t *cpu_device_pool(cpu_device_t *dev);

/* ---- context (cpu_context.c) and memory (cpu_memory.c) ---- */

typedef struct cpu_context {
  zed_object_t obj;
  cpu_driver_t *driver;
  zed_range_map_t allocs; /* USM allocations: value = cpu_alloc_value(type, id) */
} cpu_context_t;

/* Frees every allocation still registered in ctx (at context destruction). */
void cpu_memory_release_all(cpu_context_t *ctx);

/* ---- events, pools, fences (cpu_event.c) ---- */

typedef struct cpu_event {
  zed_object_t obj;
  uint32_t signalled;        /* a zed flag */
  uint64_t start_ns, end_ns; /* of the last command that signalled it */
  struct cpu_event_pool *pool;
} cpu_event_t;

typedef struct cpu_event_pool {
  zed_object_t obj;
  ze_event_pool_flags_t flags;
  uint32_t count;
  cpu_event_t *events; /* count entries; an entry is live while its obj is ZED_KIND_EVENT */
} cpu_event_pool_t;

typedef struct cpu_fence {
  zed_object_t obj;
  uint32_t signalled; /* a zed flag */
} cpu_fence_t;

/* Checks an optional signal event and a wait list before anything is recorded or run. */
ze_result_t cpu_check_events(ze_event_handle_t signal, uint32_t num_wait,
                             const ze_event_handle_t *wait);
void cpu_event_signal(cpu_event_t *ev, uint64_t start_ns, uint64_t end_ns);
void cpu_event_wait(cpu_event_t *ev);
void cpu_event_reset(cpu_event_t *ev);

/* ---- modules and kernels (cpu_module.c, cpu_kernel.c) ---- */

typedef struct cpu_module {
  zed_object_t obj;
  cpu_context_t *ctx;
  kc_host_module_t *host; /* the finalised code */
  uint32_t live_kernels;  /* kernels created from it and not destroyed */
} cpu_module_t;

typedef struct cpu_kernel {
  zed_object_t obj;
  cpu_module_t *module;
  const kc_host_kernel_t *k;
  uint32_t group_size[3];
  void **args;     /* k->num_args: pointer to each value (or local slot) */
  uint8_t *values; /* argument bytes, each at args[i] */
  uint32_t values_size;
  uint32_t *local_size;  /* bytes asked for each local-memory argument, 0 for values */
  uint32_t *local_index; /* indices of local-memory arguments */
  uint32_t num_local;
  uint32_t args_unset;   /* arguments never set (a launch needs 0) */
  uint8_t *arg_is_set;   /* k->num_args flags */
  _Atomic uint32_t cost; /* cpu_launch_t.cost of launches from this kernel */
  bool pool_legacy;      /* KAPI_CPU_POOL=0 when the kernel was created (cpu_launch_t.legacy) */
  uint8_t pool_wide;     /* cpu_launch_t.wide, from KAPI_CPU_WIDE when the kernel was created */
  /* bytes a launch must store to the arrays the kernel only writes for its streaming entry
   * (kc_host_kernel_t.run_streaming) to run instead; 0: never (cpu_kernel.c) */
  uint64_t stream_min;
} cpu_kernel_t;

/* ---- launches (cpu_launch.c) and the pool (cpu_pool.c) ---- */

/* Everything one kernel launch needs, independent of the kernel object (so a regular command
 * list can keep a snapshot while the kernel's arguments change). */
typedef struct cpu_launch {
  kc_host_group_fn run;
  uint64_t group_count[3];
  uint64_t local_size[3];
  void *const *args; /* num_args pointers */
  uint32_t num_args;
  uint32_t num_local;           /* local-memory arguments */
  const uint32_t *local_index;  /* their indices */
  const uint32_t *local_offset; /* each one's offset in a group's local buffer */
  uint32_t local_bytes;         /* a group's local buffer size */
  uint32_t batch;               /* groups per run call (kc_host_group_t.count), >= 1 */
  /* What this launch site has cost so far, in 1/16 ns per work-item (0: not known yet). The
   * pool reads it to run cheap launches inline and to size chunks, and updates it after each
   * run. NULL: nothing is learned (the pool's defaults apply). */
  _Atomic uint32_t *cost;
  /* The pool's scheme before guided chunks and the wake tree (KAPI_CPU_POOL=0 when the kernel
   * was created: an A/B switch for benchmarks, per kernel so one process can compare both). */
  bool legacy;
  /* How a long launch wakes the pool's sleeping workers (cpu_pool.c, pool->wide_ns): 0, the
   * pool's default; else 1 + KAPI_CPU_WIDE when the kernel was created (0: two by two, as any
   * launch; 1: all at once by the launcher; 2: all at once by the first workers that join), an
   * A/B switch per kernel like legacy. */
  uint8_t wide;
} cpu_launch_t;

/* Runs every group of the launch before returning. ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY if
 * scratch space cannot be had. */
ze_result_t cpu_launch_run(cpu_device_t *dev, const cpu_launch_t *launch);

/* Fills a launch from a kernel's current state and a group count. offsets must hold
 * k->num_local entries. */
ze_result_t cpu_launch_prepare(const cpu_kernel_t *kernel, const ze_group_count_t *count,
                               uint32_t *offsets, cpu_launch_t *out);

#ifdef _GNU_SOURCE /* cpu_set_t is a GNU extension: only files that ask for it see this */
#include <sched.h>
/* The CPUs the process may run on (cpu_affinity.c): the union of its threads' masks, so a
 * thread pinned by OpenMP does not narrow it. false when none could be read. */
bool cpu_process_cpus(cpu_set_t *set);
#endif

/* zeDriverGetExtensionFunctionAddress name of cpu_set_interrupt_check. It takes no driver
 * handle: the loader hands the application its own handles, which only its forwarding
 * functions translate, and an extension function is called directly. */
#define CPU_EXT_SET_INTERRUPT_CHECK "zexKapiCpuSetInterruptCheck"
/* Launches the calling thread runs call check(ctx) about every CPU_INTERRUPT_POLL_NS once they
 * have run that long (NULL: never). When it returns nonzero the launch hands out no more
 * work-groups, waits for the running ones and fails with CPU_RESULT_INTERRUPTED; the pool and
 * queue stay usable. Per thread, so a hook that calls back into Python is only ever called
 * from the thread that installed it. */
ze_result_t cpu_set_interrupt_check(int (*check)(void *ctx), void *ctx);
#define CPU_INTERRUPT_POLL_NS 50000000ull
#define CPU_RESULT_INTERRUPTED ZE_RESULT_NOT_READY

/* A pool of `threads` workers, each allowed on every CPU of the process (not the creating
 * thread's mask, which a pinning runtime may have narrowed); the thread that runs a launch works
 * too, so threads is the core count minus one (0 is fine: every launch then runs on the caller).
 * NULL when out of memory. Launches through one pool run one at a time. */
cpu_pool_t *cpu_pool_create(uint32_t threads);
/* One per core, or KAPI_CPU_THREADS (a test setting). */
uint32_t cpu_pool_participants(uint32_t cores);
/* Stops and joins the workers and frees the pool; no launch may be running. */
void cpu_pool_destroy(cpu_pool_t *pool);
/* Frees a pool inherited by a forked child, whose workers never existed in this process. */
void cpu_pool_free_orphan(cpu_pool_t *pool);
/* Runs every group of the launch before returning: on the caller alone when it is tiny,
 * otherwise spread over the workers. OUT_OF_HOST_MEMORY if local memory cannot be had. */
ze_result_t cpu_pool_run(cpu_pool_t *pool, const cpu_launch_t *launch);

/* ---- command lists and queues (cpu_list.c, cpu_queue.c, cpu_copy.c) ---- */

typedef enum cpu_cmd_kind {
  CPU_CMD_LAUNCH,
  CPU_CMD_COPY,
  CPU_CMD_FILL,
  CPU_CMD_SIGNAL,
  CPU_CMD_WAIT,
  CPU_CMD_RESET,
  CPU_CMD_TIMESTAMP,
} cpu_cmd_kind_t;

typedef struct cpu_cmd {
  cpu_cmd_kind_t kind;
  cpu_event_t *event; /* SIGNAL, WAIT, RESET; the signal event of the others (or NULL) */
  union {
    struct {
      cpu_launch_t launch;
      void *owned;                      /* the snapshot's storage */
      const ze_group_count_t *indirect; /* group count read when the command runs, or NULL */
    } launch;
    struct {
      void *dst;
      const void *src;
      size_t size;
    } copy;
    struct {
      void *dst;
      size_t size;
      size_t pattern_size;
      const uint8_t *pattern;
      uint8_t *owned; /* the pattern's copy in a regular list */
    } fill;
    struct {
      uint64_t *dst;
    } timestamp;
  } u;
} cpu_cmd_t;

typedef struct cpu_list {
  zed_object_t obj;
  cpu_context_t *ctx;
  cpu_device_t *dev;
  bool immediate;
  bool closed;
  cpu_cmd_t *cmds;
  size_t count, capacity;
} cpu_list_t;

/* Runs cmd now (immediate list) or records it (regular list: the list takes cmd's owned
 * storage, even on failure). */
ze_result_t cpu_list_submit(cpu_list_t *list, cpu_cmd_t *cmd);
/* Submits the waits of an append, then cmd, then its signal. */
ze_result_t cpu_list_append(cpu_list_t *list, cpu_cmd_t *cmd, ze_event_handle_t signal,
                            uint32_t num_wait, const ze_event_handle_t *wait);
/* Runs one command; start/end times go to its signal event. */
ze_result_t cpu_cmd_run(cpu_device_t *dev, cpu_cmd_t *cmd);
void cpu_cmd_free(cpu_cmd_t *cmd);
/* Runs every command of a closed regular list. */
ze_result_t cpu_list_execute(cpu_list_t *list);

typedef struct cpu_queue {
  zed_object_t obj;
  cpu_context_t *ctx;
  cpu_device_t *dev;
  pthread_mutex_t lock; /* command lists of one queue execute one at a time */
} cpu_queue_t;

/* Copy engine helpers (cpu_copy.c). */
void cpu_fill(void *dst, size_t size, const void *pattern, size_t pattern_size);
/* A copy (non-overlapping or not) or fill as a command runs it: large ones on the device's
 * pool, each thread its own contiguous block (cpu_copy.c). */
ze_result_t cpu_copy_run(cpu_device_t *dev, void *dst, const void *src, size_t size);
ze_result_t cpu_fill_run(cpu_device_t *dev, void *dst, size_t size, const void *pattern,
                         size_t pattern_size);

#endif /* KAPI_CPU_DRIVER_H */
