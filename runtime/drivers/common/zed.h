/* kapi Level Zero drivers: what every kapi driver (cpu, cuda) shares, private to the drivers.
 * The 46 exported *GetProcAddrTable getters live here and copy, field by field, the tables a
 * driver hands over through zed_driver_tables(); plus handle checks, build logs, an address
 * range map for USM look-ups and a monotonic clock. Nothing here is exported except the getters. */
#ifndef KAPI_ZED_H
#define KAPI_ZED_H

#include <level_zero/ze_api.h>
#include <level_zero/ze_ddi.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- Tables ------------------------------------------------------------------------------ */

/* Implemented once by each driver (its *_tables.c): the full core table, NULL where the driver
 * has no entry. The getters copy the fields that exist in the API version the loader asks. */
const ze_dditable_t *zed_driver_tables(void);

/* ---- Handles ----------------------------------------------------------------------------- */

/* Every handle a kapi driver returns (build logs aside: zed_build_log.c says why) points at a
 * struct that starts with zed_object_t. The tag says which kind of object it is, so a handle
 * of the wrong kind (or one already destroyed: destroy clears the tag) is refused with a
 * status instead of being used. */
typedef enum zed_kind {
  ZED_KIND_NONE = 0,
  ZED_KIND_DRIVER = 0x7a640001,
  ZED_KIND_DEVICE,
  ZED_KIND_CONTEXT,
  ZED_KIND_QUEUE,
  ZED_KIND_LIST,
  ZED_KIND_FENCE,
  ZED_KIND_EVENT_POOL,
  ZED_KIND_EVENT,
  ZED_KIND_MODULE,
  ZED_KIND_BUILD_LOG,
  ZED_KIND_KERNEL,
} zed_kind_t;

typedef struct zed_object {
  uint32_t kind; /* a zed_kind_t */
} zed_object_t;

static inline void zed_object_init(zed_object_t *o, zed_kind_t kind) {
  o->kind = kind;
}
static inline void zed_object_retire(zed_object_t *o) {
  o->kind = ZED_KIND_NONE;
}

/* Level Zero's two-call listing idiom over `have` entries: a call with *count 0 or without an
 * output array learns the count (false: nothing to fill); otherwise *count is clamped to
 * `have` and the caller fills that many entries (true). */
static inline bool zed_list(uint32_t *count, const void *out, uint32_t have) {
  if (*count == 0 || !out) {
    *count = have;
    return false;
  }
  if (*count > have) *count = have;
  return true;
}

/* zed_properties.c: one queue group doing compute and copies, listed the two-call way. */
ze_result_t zed_one_queue_group(uint32_t *count, ze_command_queue_group_properties_t *p,
                                size_t max_fill, uint32_t queues);
/* Module properties for SPIR-V 1.2 kernels: the given flags and floating-point flags, 4 KiB of
 * arguments, no printf, no native kernels. */
void zed_module_properties(ze_device_module_properties_t *p, ze_device_module_flags_t flags,
                           ze_device_fp_flags_t fp16, ze_device_fp_flags_t fp32,
                           ze_device_fp_flags_t fp64);

/* ZE_RESULT_SUCCESS when h is a live object of that kind; INVALID_NULL_HANDLE for NULL and
 * INVALID_ARGUMENT for a handle of another kind or a destroyed one. */
static inline ze_result_t zed_check(const void *h, zed_kind_t kind) {
  if (!h) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  return ((const zed_object_t *)h)->kind == (uint32_t)kind ? ZE_RESULT_SUCCESS
                                                           : ZE_RESULT_ERROR_INVALID_ARGUMENT;
}

/* Returns from the calling function when the handle check fails. */
#define ZED_CHECK(h, kind)                                                                         \
  do {                                                                                             \
    ze_result_t zed_r_ = zed_check((h), (kind));                                                   \
    if (zed_r_ != ZE_RESULT_SUCCESS) return zed_r_;                                                \
  } while (0)

/* Returns INVALID_NULL_POINTER from the calling function when p is NULL. */
#define ZED_CHECK_PTR(p)                                                                           \
  do {                                                                                             \
    if (!(p)) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;                                         \
  } while (0)

/* ---- Build logs -------------------------------------------------------------------------- */

typedef struct zed_build_log zed_build_log_t;

/* Takes ownership of text (malloc'ed, may be NULL for an empty log). NULL when out of memory,
 * in which case text is freed. */
zed_build_log_t *zed_build_log_create(char *text);
/* Hands the log to the caller when out is not NULL, else destroys it (zeModuleCreate's
 * phBuildLog is optional). */
void zed_build_log_give(zed_build_log_t *log, ze_module_build_log_handle_t *out);
ze_result_t zed_build_log_destroy(ze_module_build_log_handle_t h);
ze_result_t zed_build_log_get_string(ze_module_build_log_handle_t h, size_t *size, char *log);

/* ---- Address ranges ---------------------------------------------------------------------- */

/* A thread-safe set of disjoint [base, base+size) ranges, each with a user value: the USM
 * allocations of a context, found from any pointer inside them. */
typedef struct zed_range {
  uintptr_t base;
  size_t size;
  void *value;
} zed_range_t;

typedef struct zed_range_map {
  pthread_mutex_t lock;
  zed_range_t *items; /* sorted by base */
  size_t count, capacity;
} zed_range_map_t;

void zed_range_map_init(zed_range_map_t *m);
/* Frees the map's storage, not the values. */
void zed_range_map_fini(zed_range_map_t *m);
/* false when out of memory. */
bool zed_range_map_insert(zed_range_map_t *m, uintptr_t base, size_t size, void *value);
/* Removes the range starting exactly at base; false when there is none. *out gets it. */
bool zed_range_map_remove(zed_range_map_t *m, uintptr_t base, zed_range_t *out);
/* Finds the range holding addr (a zero-size range holds its base); false when none. */
bool zed_range_map_find(zed_range_map_t *m, uintptr_t addr, zed_range_t *out);
/* Calls fn on every range (under the lock) and empties the map. */
void zed_range_map_drain(zed_range_map_t *m, void (*fn)(const zed_range_t *r, void *arg),
                         void *arg);

/* ---- Time -------------------------------------------------------------------------------- */

/* Nanoseconds of CLOCK_MONOTONIC: the host and device clock of kapi drivers. */
uint64_t zed_now_ns(void);

/* One-shot flags (events, fences) that other threads set: a uint32_t starting at 0. Waiting
 * sleeps on a futex, never spins; setting costs a system call only when someone sleeps. */
bool zed_flag_is_set(const uint32_t *flag);
/* Waits until the flag is set or timeout_ns passes (UINT64_MAX: forever); true when set. */
bool zed_wait_flag(uint32_t *flag, uint64_t timeout_ns);
void zed_set_flag(uint32_t *flag);
void zed_clear_flag(uint32_t *flag);

#endif /* KAPI_ZED_H */
