/* The 46 *GetProcAddrTable getters the Level Zero loader 1.8 requires of a driver (one missing
 * and zeInit fails with 0x78000001). Core tables are copied field by field from the driver's
 * zed_driver_tables(), only the fields that exist in the version the loader asks for, so an
 * older loader's smaller struct is never overrun. Sysman (zes) and tools (zet) are not
 * implemented: those getters succeed and leave the loader's zeroed tables alone, so calls
 * return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE. */
#include "zed.h"

#include <level_zero/zes_ddi.h>
#include <level_zero/zet_ddi.h>

#define ZED_EXPORT __attribute__((visibility("default")))

/* Any 1.x is accepted: fields are appended to the tables from one minor version to the next. */
static ze_result_t check_request(ze_api_version_t version, const void *table) {
  if (!table) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (ZE_MAJOR_VERSION(version) != 1) return ZE_RESULT_ERROR_UNSUPPORTED_VERSION;
  return ZE_RESULT_SUCCESS;
}

#define BEGIN(member)                                                                              \
  ze_result_t r_ = check_request(version, t);                                                      \
  if (r_ != ZE_RESULT_SUCCESS) return r_;                                                          \
  const __typeof__(*t) *s = &zed_driver_tables()->member;
/* A field present since 1.0. */
#define F(f) t->f = s->f
/* A field added in version v: written only when the loader's struct has it. */
#define F_SINCE(v, f)                                                                              \
  do {                                                                                             \
    if (version >= (v)) t->f = s->f;                                                               \
  } while (0)

ZED_EXPORT ze_result_t zeGetGlobalProcAddrTable(ze_api_version_t version, ze_global_dditable_t *t) {
  BEGIN(Global);
  F(pfnInit);
  return ZE_RESULT_SUCCESS;
}

ZED_EXPORT ze_result_t zeGetDriverProcAddrTable(ze_api_version_t version, ze_driver_dditable_t *t) {
  BEGIN(Driver);
  F(pfnGet);
  F(pfnGetApiVersion);
  F(pfnGetProperties);
  F(pfnGetIpcProperties);
  F(pfnGetExtensionProperties);
  F(pfnGetExtensionFunctionAddress);
  return ZE_RESULT_SUCCESS;
}

ZED_EXPORT ze_result_t zeGetDeviceProcAddrTable(ze_api_version_t version, ze_device_dditable_t *t) {
  BEGIN(Device);
  F(pfnGet);
  F(pfnGetSubDevices);
  F(pfnGetProperties);
  F(pfnGetComputeProperties);
  F(pfnGetModuleProperties);
  F(pfnGetCommandQueueGroupProperties);
  F(pfnGetMemoryProperties);
  F(pfnGetMemoryAccessProperties);
  F(pfnGetCacheProperties);
  F(pfnGetImageProperties);
  F(pfnGetExternalMemoryProperties);
  F(pfnGetP2PProperties);
  F(pfnCanAccessPeer);
  F(pfnGetStatus);
  F_SINCE(ZE_API_VERSION_1_1, pfnGetGlobalTimestamps);
  F_SINCE(ZE_API_VERSION_1_2, pfnReserveCacheExt);
  F_SINCE(ZE_API_VERSION_1_2, pfnSetCacheAdviceExt);
  F_SINCE(ZE_API_VERSION_1_3, pfnPciGetPropertiesExt);
  return ZE_RESULT_SUCCESS;
}

ZED_EXPORT ze_result_t zeGetContextProcAddrTable(ze_api_version_t version,
                                                 ze_context_dditable_t *t) {
  BEGIN(Context);
  F(pfnCreate);
  F(pfnDestroy);
  F(pfnGetStatus);
  F(pfnSystemBarrier);
  F(pfnMakeMemoryResident);
  F(pfnEvictMemory);
  F(pfnMakeImageResident);
  F(pfnEvictImage);
  F_SINCE(ZE_API_VERSION_1_1, pfnCreateEx);
  return ZE_RESULT_SUCCESS;
}

ZED_EXPORT ze_result_t zeGetCommandQueueProcAddrTable(ze_api_version_t version,
                                                      ze_command_queue_dditable_t *t) {
  BEGIN(CommandQueue);
  F(pfnCreate);
  F(pfnDestroy);
  F(pfnExecuteCommandLists);
  F(pfnSynchronize);
  return ZE_RESULT_SUCCESS;
}

ZED_EXPORT ze_result_t zeGetCommandListProcAddrTable(ze_api_version_t version,
                                                     ze_command_list_dditable_t *t) {
  BEGIN(CommandList);
  F(pfnCreate);
  F(pfnCreateImmediate);
  F(pfnDestroy);
  F(pfnClose);
  F(pfnReset);
  F(pfnAppendWriteGlobalTimestamp);
  F(pfnAppendBarrier);
  F(pfnAppendMemoryRangesBarrier);
  F(pfnAppendMemoryCopy);
  F(pfnAppendMemoryFill);
  F(pfnAppendMemoryCopyRegion);
  F(pfnAppendMemoryCopyFromContext);
  F(pfnAppendImageCopy);
  F(pfnAppendImageCopyRegion);
  F(pfnAppendImageCopyToMemory);
  F(pfnAppendImageCopyFromMemory);
  F(pfnAppendMemoryPrefetch);
  F(pfnAppendMemAdvise);
  F(pfnAppendSignalEvent);
  F(pfnAppendWaitOnEvents);
  F(pfnAppendEventReset);
  F(pfnAppendQueryKernelTimestamps);
  F(pfnAppendLaunchKernel);
  F(pfnAppendLaunchCooperativeKernel);
  F(pfnAppendLaunchKernelIndirect);
  F(pfnAppendLaunchMultipleKernelsIndirect);
  F_SINCE(ZE_API_VERSION_1_3, pfnAppendImageCopyToMemoryExt);
  F_SINCE(ZE_API_VERSION_1_3, pfnAppendImageCopyFromMemoryExt);
  return ZE_RESULT_SUCCESS;
}

ZED_EXPORT ze_result_t zeGetFenceProcAddrTable(ze_api_version_t version, ze_fence_dditable_t *t) {
  BEGIN(Fence);
  F(pfnCreate);
  F(pfnDestroy);
  F(pfnHostSynchronize);
  F(pfnQueryStatus);
  F(pfnReset);
  return ZE_RESULT_SUCCESS;
}

ZED_EXPORT ze_result_t zeGetEventPoolProcAddrTable(ze_api_version_t version,
                                                   ze_event_pool_dditable_t *t) {
  BEGIN(EventPool);
  F(pfnCreate);
  F(pfnDestroy);
  F(pfnGetIpcHandle);
  F(pfnOpenIpcHandle);
  F(pfnCloseIpcHandle);
  return ZE_RESULT_SUCCESS;
}

ZED_EXPORT ze_result_t zeGetEventProcAddrTable(ze_api_version_t version, ze_event_dditable_t *t) {
  BEGIN(Event);
  F(pfnCreate);
  F(pfnDestroy);
  F(pfnHostSignal);
  F(pfnHostSynchronize);
  F(pfnQueryStatus);
  F(pfnHostReset);
  F(pfnQueryKernelTimestamp);
  return ZE_RESULT_SUCCESS;
}

ZED_EXPORT ze_result_t zeGetImageProcAddrTable(ze_api_version_t version, ze_image_dditable_t *t) {
  BEGIN(Image);
  F(pfnGetProperties);
  F(pfnCreate);
  F(pfnDestroy);
  F_SINCE(ZE_API_VERSION_1_3, pfnGetAllocPropertiesExt);
  return ZE_RESULT_SUCCESS;
}

ZED_EXPORT ze_result_t zeGetModuleProcAddrTable(ze_api_version_t version, ze_module_dditable_t *t) {
  BEGIN(Module);
  F(pfnCreate);
  F(pfnDestroy);
  F(pfnDynamicLink);
  F(pfnGetNativeBinary);
  F(pfnGetGlobalPointer);
  F(pfnGetKernelNames);
  F(pfnGetProperties);
  F(pfnGetFunctionPointer);
  F_SINCE(ZE_API_VERSION_1_3, pfnInspectLinkageExt);
  return ZE_RESULT_SUCCESS;
}

ZED_EXPORT ze_result_t zeGetModuleBuildLogProcAddrTable(ze_api_version_t version,
                                                        ze_module_build_log_dditable_t *t) {
  BEGIN(ModuleBuildLog);
  F(pfnDestroy);
  F(pfnGetString);
  return ZE_RESULT_SUCCESS;
}

ZED_EXPORT ze_result_t zeGetKernelProcAddrTable(ze_api_version_t version, ze_kernel_dditable_t *t) {
  BEGIN(Kernel);
  F(pfnCreate);
  F(pfnDestroy);
  F(pfnSetCacheConfig);
  F(pfnSetGroupSize);
  F(pfnSuggestGroupSize);
  F(pfnSuggestMaxCooperativeGroupCount);
  F(pfnSetArgumentValue);
  F(pfnSetIndirectAccess);
  F(pfnGetIndirectAccess);
  F(pfnGetSourceAttributes);
  F(pfnGetProperties);
  F(pfnGetName);
  return ZE_RESULT_SUCCESS;
}

ZED_EXPORT ze_result_t zeGetSamplerProcAddrTable(ze_api_version_t version,
                                                 ze_sampler_dditable_t *t) {
  BEGIN(Sampler);
  F(pfnCreate);
  F(pfnDestroy);
  return ZE_RESULT_SUCCESS;
}

ZED_EXPORT ze_result_t zeGetPhysicalMemProcAddrTable(ze_api_version_t version,
                                                     ze_physical_mem_dditable_t *t) {
  BEGIN(PhysicalMem);
  F(pfnCreate);
  F(pfnDestroy);
  return ZE_RESULT_SUCCESS;
}

ZED_EXPORT ze_result_t zeGetMemProcAddrTable(ze_api_version_t version, ze_mem_dditable_t *t) {
  BEGIN(Mem);
  F(pfnAllocShared);
  F(pfnAllocDevice);
  F(pfnAllocHost);
  F(pfnFree);
  F(pfnGetAllocProperties);
  F(pfnGetAddressRange);
  F(pfnGetIpcHandle);
  F(pfnOpenIpcHandle);
  F(pfnCloseIpcHandle);
  F_SINCE(ZE_API_VERSION_1_3, pfnFreeExt);
  return ZE_RESULT_SUCCESS;
}

ZED_EXPORT ze_result_t zeGetVirtualMemProcAddrTable(ze_api_version_t version,
                                                    ze_virtual_mem_dditable_t *t) {
  BEGIN(VirtualMem);
  F(pfnReserve);
  F(pfnFree);
  F(pfnQueryPageSize);
  F(pfnMap);
  F(pfnUnmap);
  F(pfnSetAccessAttribute);
  F(pfnGetAccessAttribute);
  return ZE_RESULT_SUCCESS;
}

/* Getters for tables no kapi driver implements: validate the request, write nothing. */
#define UNFILLED(name, type)                                                                       \
  ZED_EXPORT ze_result_t name(ze_api_version_t version, type *t) {                                 \
    return check_request(version, t);                                                              \
  }

UNFILLED(zesGetDeviceProcAddrTable, zes_device_dditable_t)
UNFILLED(zesGetDiagnosticsProcAddrTable, zes_diagnostics_dditable_t)
UNFILLED(zesGetDriverProcAddrTable, zes_driver_dditable_t)
UNFILLED(zesGetEngineProcAddrTable, zes_engine_dditable_t)
UNFILLED(zesGetFabricPortProcAddrTable, zes_fabric_port_dditable_t)
UNFILLED(zesGetFanProcAddrTable, zes_fan_dditable_t)
UNFILLED(zesGetFirmwareProcAddrTable, zes_firmware_dditable_t)
UNFILLED(zesGetFrequencyProcAddrTable, zes_frequency_dditable_t)
UNFILLED(zesGetLedProcAddrTable, zes_led_dditable_t)
UNFILLED(zesGetMemoryProcAddrTable, zes_memory_dditable_t)
UNFILLED(zesGetPerformanceFactorProcAddrTable, zes_performance_factor_dditable_t)
UNFILLED(zesGetPowerProcAddrTable, zes_power_dditable_t)
UNFILLED(zesGetPsuProcAddrTable, zes_psu_dditable_t)
UNFILLED(zesGetRasProcAddrTable, zes_ras_dditable_t)
UNFILLED(zesGetSchedulerProcAddrTable, zes_scheduler_dditable_t)
UNFILLED(zesGetStandbyProcAddrTable, zes_standby_dditable_t)
UNFILLED(zesGetTemperatureProcAddrTable, zes_temperature_dditable_t)
UNFILLED(zetGetCommandListProcAddrTable, zet_command_list_dditable_t)
UNFILLED(zetGetContextProcAddrTable, zet_context_dditable_t)
UNFILLED(zetGetDebugProcAddrTable, zet_debug_dditable_t)
UNFILLED(zetGetDeviceProcAddrTable, zet_device_dditable_t)
UNFILLED(zetGetKernelProcAddrTable, zet_kernel_dditable_t)
UNFILLED(zetGetMetricGroupProcAddrTable, zet_metric_group_dditable_t)
UNFILLED(zetGetMetricProcAddrTable, zet_metric_dditable_t)
UNFILLED(zetGetMetricQueryPoolProcAddrTable, zet_metric_query_pool_dditable_t)
UNFILLED(zetGetMetricQueryProcAddrTable, zet_metric_query_dditable_t)
UNFILLED(zetGetMetricStreamerProcAddrTable, zet_metric_streamer_dditable_t)
UNFILLED(zetGetModuleProcAddrTable, zet_module_dditable_t)
UNFILLED(zetGetTracerExpProcAddrTable, zet_tracer_exp_dditable_t)
