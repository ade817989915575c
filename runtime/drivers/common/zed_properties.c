/* Device properties every kapi driver reports the same way, with the numbers that differ
 * between devices as arguments: one queue group, and module properties for SPIR-V 1.2. */
#include "zed.h"

#include <string.h>

ze_result_t zed_one_queue_group(uint32_t *count, ze_command_queue_group_properties_t *p,
                                size_t max_fill, uint32_t queues) {
  ZED_CHECK_PTR(count);
  if (!zed_list(count, p, 1)) return ZE_RESULT_SUCCESS;
  p->flags =
      ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE | ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY;
  p->maxMemoryFillPatternSize = max_fill;
  p->numQueues = queues;
  return ZE_RESULT_SUCCESS;
}

void zed_module_properties(ze_device_module_properties_t *p, ze_device_module_flags_t flags,
                           ze_device_fp_flags_t fp16, ze_device_fp_flags_t fp32,
                           ze_device_fp_flags_t fp64) {
  p->spirvVersionSupported = ZE_MAKE_VERSION(1, 2);
  p->flags = flags;
  p->fp16flags = fp16;
  p->fp32flags = fp32;
  p->fp64flags = fp64;
  p->maxArgumentsSize = 4096;
  p->printfBufferSize = 0;
  memset(&p->nativeKernelSupported, 0, sizeof p->nativeKernelSupported);
}
