/* Several GPUs in one process: peer access between devices' primary contexts, and which device
 * an allocation lives on. Peer access is enabled once per ordered pair, on the first copy or
 * query that needs it, where cuDeviceCanAccessPeer allows it (NVLink or PCIe P2P); elsewhere a
 * copy between two devices still works, staged through host memory by the CUDA driver.
 */
#include "cuda_driver.h"

#include <stdlib.h>

/* Enables from's access to to's memory; another library sharing the primary contexts (CuPy,
 * numba-cuda) may have done so already, which is as good. */
static int enable(cuda_device_t *from, cuda_device_t *to) {
  int can = 0;
  if (cuda.cuDeviceCanAccessPeer(&can, from->dev, to->dev) != CUDA_SUCCESS || !can)
    return CUDA_PEER_STAGED;
  CUcontext prev = NULL;
  cuda.cuCtxGetCurrent(&prev);
  if (cuda_use(from) != ZE_RESULT_SUCCESS) return CUDA_PEER_STAGED;
  CUresult r = cuda.cuCtxEnablePeerAccess(to->ctx, 0);
  if (prev && prev != from->ctx) cuda.cuCtxSetCurrent(prev);
  return r == CUDA_SUCCESS || r == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED ? CUDA_PEER_DIRECT
                                                                          : CUDA_PEER_STAGED;
}

int cuda_peer_access(cuda_device_t *from, cuda_device_t *to) {
  if (from == to) return CUDA_PEER_DIRECT;
  cuda_driver_t *drv = cuda_driver();
  if (!drv || !drv->peer) return CUDA_PEER_STAGED;
  unsigned char *state = &drv->peer[from->index * drv->count + to->index];
  pthread_mutex_lock(&drv->peer_lock);
  if (*state == CUDA_PEER_UNKNOWN) *state = (unsigned char)enable(from, to);
  int s = *state;
  pthread_mutex_unlock(&drv->peer_lock);
  return s;
}

ze_result_t cuda_device_can_access_peer(ze_device_handle_t h, ze_device_handle_t peer,
                                        ze_bool_t *value) {
  ZED_CHECK(h, ZED_KIND_DEVICE);
  ZED_CHECK(peer, ZED_KIND_DEVICE);
  ZED_CHECK_PTR(value);
  *value = cuda_peer_access((cuda_device_t *)h, (cuda_device_t *)peer) == CUDA_PEER_DIRECT;
  return ZE_RESULT_SUCCESS;
}

cuda_device_t *cuda_alloc_device(cuda_context_t *c, const void *p) {
  zed_range_t r;
  if (!c || !zed_range_map_find(&c->allocs, (uintptr_t)p, &r)) return NULL;
  return ((cuda_alloc_t *)r.value)->device;
}
