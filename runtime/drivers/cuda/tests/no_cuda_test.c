/* Without libcuda.so.1 the CUDA driver loads, zeInit succeeds and it reports no devices: a
 * machine without NVIDIA's driver must see a clean "no devices", never an error or a crash.
 * Usage: no_cuda_test DRIVER_SO (KAPI_CUDA_LIBRARY points at a library that does not exist). */
#include <level_zero/ze_api.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  setenv("ZE_ENABLE_ALT_DRIVERS", argv[1], 1);
  setenv("KAPI_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
  ze_result_t r = zeInit(0);
  uint32_t n = 99;
  ze_result_t g = zeDriverGet(&n, NULL);
  printf("zeInit 0x%x, zeDriverGet 0x%x, %u drivers\n", r, g, n);
  /* The loader may report UNINITIALIZED when no driver has a device; either way no driver. */
  if ((r == ZE_RESULT_SUCCESS && g == ZE_RESULT_SUCCESS && n == 0) ||
      (r != ZE_RESULT_SUCCESS && (g != ZE_RESULT_SUCCESS || n == 0))) {
    printf("no devices reported cleanly\n");
    return 0;
  }
  return 1;
}
