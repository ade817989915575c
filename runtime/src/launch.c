/* Launches: the work-group size (chosen for Range launches, checked for NdRange ones),
 * argument setting with a per-kernel cache of what the driver already holds, and the append.
 */
#include "internal.h"

#include <string.h>

/* Largest divisor of g that is <= limit (1 at worst). */
static size_t best_divisor(size_t g, size_t limit) {
  if (limit >= g) return g;
  for (size_t d = limit; d > 1; d--)
    if (g % d == 0) return d;
  return 1;
}

/* Checks a work-group size against the device, the kernel and the global size. */
static kr_status_t check_local(kr_kernel_t *k, uint32_t ndim, const size_t *global,
                               const size_t *local, kr_error_t *err) {
  const kr_device_info_t *dev = &k->mod->dev->info;
  const uint32_t *req = k->info.required_group_size;
  size_t total = 1;
  for (uint32_t d = 0; d < ndim; d++) {
    if (local[d] == 0 || global[d] % local[d])
      return kr_fail(err, KR_ERR_INVALID_ARGUMENT,
                     "kernel '%s': work-group size %zu in dimension %u does not divide the "
                     "global size %zu",
                     k->name, local[d], d, global[d]);
    if (local[d] > dev->max_group_size[d])
      return kr_fail(err, KR_ERR_INVALID_ARGUMENT,
                     "kernel '%s': work-group size %zu in dimension %u exceeds device '%s' "
                     "limit %u; use a smaller local size in the NdRange",
                     k->name, local[d], d, dev->name, dev->max_group_size[d]);
    if (global[d] / local[d] > dev->max_group_count[d])
      return kr_fail(err, KR_ERR_INVALID_ARGUMENT,
                     "kernel '%s': %zu work-groups in dimension %u exceed device '%s' limit %u; "
                     "put the largest extent first in the Range, or give an NdRange whose local "
                     "size makes fewer groups",
                     k->name, global[d] / local[d], d, dev->name, dev->max_group_count[d]);
    if (req[0] && local[d] != req[d])
      return kr_fail(err, KR_ERR_INVALID_ARGUMENT,
                     "kernel '%s' requires work-group size %u x %u x %u, got %zu in dimension %u",
                     k->name, req[0], req[1], req[2], local[d], d);
    total *= local[d];
  }
  if (total > dev->max_work_group_size)
    return kr_fail(err, KR_ERR_INVALID_ARGUMENT,
                   "kernel '%s': work-group of %zu work-items exceeds device '%s' limit %u "
                   "(Device.max_work_group_size); use a smaller local size in the NdRange",
                   k->name, total, dev->name, dev->max_work_group_size);
  return KR_OK;
}

/* Whether local leaves no dimension with more work-groups than the device launches. */
static bool counts_fit(const kr_device_info_t *dev, uint32_t ndim, const size_t *g,
                       const size_t *local) {
  for (uint32_t d = 0; d < ndim; d++)
    if (g[d] / local[d] > dev->max_group_count[d]) return false;
  return true;
}

/* The driver's suggestion, when it divides the global size in every dimension and fits the
 * device's group counts. */
static bool suggested(kr_kernel_t *k, uint32_t ndim, const size_t *g, size_t *local) {
  uint32_t s[3] = {1, 1, 1};
  uint32_t gg[3] = {1, 1, 1};
  for (uint32_t d = 0; d < ndim; d++) {
    if (g[d] > UINT32_MAX) return false;
    gg[d] = (uint32_t)g[d];
  }
  if (zeKernelSuggestGroupSize(k->h, gg[0], gg[1], gg[2], &s[0], &s[1], &s[2])) return false;
  for (uint32_t d = 0; d < ndim; d++) {
    if (s[d] == 0 || g[d] % s[d]) return false;
    local[d] = s[d];
  }
  for (uint32_t d = ndim; d < 3; d++)
    if (s[d] != 1) return false;
  return counts_fit(&k->mod->dev->info, ndim, g, local);
}

/* Smallest divisor of g up to cap that leaves at most max_count work-groups; 0 if none. */
static size_t least_divisor(size_t g, size_t max_count, size_t cap) {
  if (!max_count || g <= max_count) return 1;
  for (size_t d = (g + max_count - 1) / max_count; d <= cap && d <= g; d++)
    if (g % d == 0) return d;
  return 0;
}

/* Fills dimension 0 first (the fastest-varying), each with the largest divisor of its global
 * size that fits what is left of the work-group budget. A dimension whose global size has more
 * work-groups of one than the device launches (CUDA's dimensions 1 and 2 hold 65535) gets the
 * least divisor that fits first, so that the dimensions before it cannot spend its share of the
 * budget; when even those do not fit together, check_local names the limit. */
static void divisors(const kr_device_info_t *dev, uint32_t ndim, const size_t *g, size_t *local) {
  size_t most = dev->max_work_group_size ? dev->max_work_group_size : 1;
  size_t budget = dev->type == KR_DEVICE_GPU && most > 256 ? 256 : most; /* occupancy first */
  size_t need[3] = {1, 1, 1}, after[4] = {1, 1, 1, 1};
  bool reserve = true;
  for (uint32_t d = 0; d < ndim; d++) {
    size_t cap = dev->max_group_size[d] < most ? dev->max_group_size[d] : most;
    need[d] = least_divisor(g[d], dev->max_group_count[d], cap);
    if (!need[d]) need[d] = 1, reserve = false;
  }
  for (uint32_t d = ndim; d-- > 0;)
    after[d] = after[d + 1] * need[d];
  if (after[0] > budget && after[0] <= most) budget = after[0]; /* launchable over occupancy */
  reserve = reserve && after[0] <= budget;
  for (uint32_t d = 0; d < ndim; d++) {
    size_t limit = dev->max_group_size[d] < budget ? dev->max_group_size[d] : budget;
    if (reserve && limit > budget / after[d + 1]) limit = budget / after[d + 1];
    local[d] = best_divisor(g[d], limit ? limit : 1);
    budget /= local[d];
  }
}

static kr_status_t choose_local(kr_kernel_t *k, uint32_t ndim, const size_t *g, size_t *local,
                                kr_error_t *err) {
  if (k->range_ndim == ndim && !memcmp(k->range_global, g, ndim * sizeof *g)) {
    memcpy(local, k->range_local, ndim * sizeof *local);
    return KR_OK;
  }
  const uint32_t *req = k->info.required_group_size;
  if (req[0]) {
    for (uint32_t d = 0; d < ndim; d++)
      local[d] = req[d];
  } else if (!suggested(k, ndim, g, local)) {
    divisors(&k->mod->dev->info, ndim, g, local);
  }
  kr_status_t st = check_local(k, ndim, g, local, err);
  if (st) return st;
  k->range_ndim = ndim;
  memcpy(k->range_global, g, ndim * sizeof *g);
  memcpy(k->range_local, local, ndim * sizeof *local);
  return KR_OK;
}

kr_status_t kr_range_group_size(kr_kernel_t *k, uint32_t ndim, const size_t *global,
                                size_t local_out[3], kr_error_t *err) {
  if (!k || !global || !local_out || ndim < 1 || ndim > 3)
    return kr_fail(err, KR_ERR_INVALID_ARGUMENT, "kr_range_group_size: bad arguments");
  local_out[0] = local_out[1] = local_out[2] = 1;
  for (uint32_t d = 0; d < ndim; d++)
    if (global[d] == 0) return KR_OK;
  pthread_mutex_lock(&k->lock);
  kr_status_t st = choose_local(k, ndim, global, local_out, err);
  pthread_mutex_unlock(&k->lock);
  return st;
}

/* Sets one argument unless the driver already holds the same value. */
static kr_status_t set_arg(kr_kernel_t *k, uint32_t i, const kr_arg_t *a, kr_error_t *err) {
  kr_arg_slot_t *s = &k->slots[i];
  bool local = a->value == NULL;
  if (s->valid && s->size == a->size && s->local == local &&
      (local || (a->size <= sizeof s->value && !memcmp(s->value, a->value, a->size))))
    return KR_OK;
  s->valid = false;
  ze_result_t r = zeKernelSetArgumentValue(k->h, i, a->size, a->value);
  if (r)
    return kr_ze_fail(err, r, "zeKernelSetArgumentValue", k->mod->dev,
                      "kernel '%s' argument %u (%zu bytes%s)", k->name, i, a->size,
                      local ? " of local memory" : "");
  s->size = a->size;
  s->local = local;
  if (local || a->size <= sizeof s->value) {
    if (!local) memcpy(s->value, a->value, a->size);
    s->valid = true;
  }
  return KR_OK;
}

static kr_status_t set_args(kr_kernel_t *k, uint32_t nargs, const kr_arg_t *args, kr_error_t *err) {
  if (nargs != k->info.num_args)
    return kr_fail(err, KR_ERR_INVALID_ARGUMENT, "kernel '%s' takes %u arguments, %u given",
                   k->name, k->info.num_args, nargs);
  if (nargs && !args)
    return kr_fail(err, KR_ERR_INVALID_ARGUMENT, "kernel '%s': NULL argument list", k->name);
  for (uint32_t i = 0; i < nargs; i++) {
    kr_status_t st = set_arg(k, i, &args[i], err);
    if (st) return st;
  }
  return KR_OK;
}

static kr_status_t set_group(kr_kernel_t *k, const size_t *local, kr_error_t *err) {
  uint32_t g[3] = {(uint32_t)local[0], (uint32_t)local[1], (uint32_t)local[2]};
  if (!memcmp(g, k->group, sizeof g)) return KR_OK;
  ze_result_t r = zeKernelSetGroupSize(k->h, g[0], g[1], g[2]);
  if (r)
    return kr_ze_fail(err, r, "zeKernelSetGroupSize", k->mod->dev, "kernel '%s', %u x %u x %u",
                      k->name, g[0], g[1], g[2]);
  memcpy(k->group, g, sizeof g);
  return KR_OK;
}

static kr_status_t check_launch(kr_queue_t *q, kr_kernel_t *k, uint32_t ndim, const size_t *global,
                                kr_error_t *err) {
  if (!q || !k || !global)
    return kr_fail(err, KR_ERR_INVALID_ARGUMENT, "kr_launch: NULL %s",
                   !q ? "queue" : (!k ? "kernel" : "global size"));
  if (ndim < 1 || ndim > 3)
    return kr_fail(err, KR_ERR_INVALID_ARGUMENT, "kernel '%s': %u dimensions (1 to 3 allowed)",
                   k->name, ndim);
  if (k->mod->dev != q->dev)
    return kr_fail(err, KR_ERR_INVALID_ARGUMENT,
                   "kernel '%s' was built for device '%s' but the queue is on device '%s'", k->name,
                   k->mod->dev->info.name, q->dev->info.name);
  return KR_OK;
}

/* Group size, arguments and the append, under the kernel's lock; on success the command is
 * begun (the queue locked) and appended, and the caller finishes it. */
static kr_status_t append_locked(kr_cmd_t *c, kr_queue_t *q, kr_kernel_t *k, uint32_t ndim,
                                 const size_t *global, const size_t *local_in, uint32_t nargs,
                                 const kr_arg_t *args, uint32_t nwait, kr_event_t *const *wait,
                                 kr_error_t *err, bool *begun) {
  size_t local[3] = {1, 1, 1}, g[3] = {1, 1, 1};
  memcpy(g, global, ndim * sizeof *g);
  kr_status_t st =
      local_in ? check_local(k, ndim, g, local_in, err) : choose_local(k, ndim, g, local, err);
  if (st) return st;
  if (local_in) memcpy(local, local_in, ndim * sizeof *local);
  st = set_args(k, nargs, args, err);
  if (!st) st = set_group(k, local, err);
  if (!st) st = kr_cmd_begin(c, q, nwait, wait, err);
  if (st) return st;
  *begun = true;
  ze_group_count_t count = {(uint32_t)(g[0] / local[0]), (uint32_t)(g[1] / local[1]),
                            (uint32_t)(g[2] / local[2])};
  ze_result_t r =
      zeCommandListAppendLaunchKernel(q->cl, k->h, &count, c->ev->h, c->nwaits, c->waits);
  if (r) st = kr_ze_fail(err, r, "zeCommandListAppendLaunchKernel", q->dev, "kernel '%s'", k->name);
  return st;
}

kr_status_t kr_set_interrupt_check(int (*check)(void *ctx), void *ctx, kr_error_t *err) {
  kr_status_t st = kr_ensure_init(err);
  if (st) return st;
  for (uint32_t i = 0; i < kr_rt.num_drivers; i++) {
    kr_driver_t *drv = &kr_rt.drivers[i];
    ze_result_t r = drv->set_interrupt ? drv->set_interrupt(check, ctx) : 0;
    if (r) return kr_ze_fail(err, r, "zexKapiCpuSetInterruptCheck", NULL, "driver %u", i);
  }
  return KR_OK;
}

kr_status_t kr_launch(kr_queue_t *q, kr_kernel_t *k, uint32_t ndim, const size_t *global,
                      const size_t *local, uint32_t nargs, const kr_arg_t *args, uint32_t nwait,
                      kr_event_t *const *wait, kr_event_t **out_event, kr_error_t *err) {
  kr_status_t st = check_launch(q, k, ndim, global, err);
  if (st) return st;
  for (uint32_t d = 0; d < ndim; d++) {
    if (global[d] == 0) {
      if (nwait && (st = kr_events_wait(nwait, wait, err))) return st;
      return kr_queue_barrier(q, 0, NULL, out_event, err);
    }
  }
  kr_cmd_t c;
  bool begun = false;
  pthread_mutex_lock(&k->lock);
  st = append_locked(&c, q, k, ndim, global, local, nargs, args, nwait, wait, err, &begun);
  /* The append has captured the arguments: the kernel may be relaunched at once. */
  pthread_mutex_unlock(&k->lock);
  return begun ? kr_cmd_finish(&c, st, out_event, err) : st;
}
