/* The CPU driver's Level Zero tables, and nothing else: the loader gets them through the
 * getters in drivers/common (zed_getters.c), which copy the fields of the version it asks.
 * An entry left out here is NULL, which the loader turns into UNSUPPORTED_FEATURE. */
#include "cpu_api.h"
#include "zed.h"

static const ze_dditable_t cpu_tables = {
    .Global =
        {
            .pfnInit = cpu_init,
        },
    .Driver =
        {
            .pfnGet = cpu_driver_get,
            .pfnGetApiVersion = cpu_driver_get_api_version,
            .pfnGetProperties = cpu_driver_get_properties,
            .pfnGetIpcProperties = cpu_driver_get_ipc_properties,
            .pfnGetExtensionProperties = cpu_driver_get_extension_properties,
            .pfnGetExtensionFunctionAddress = cpu_driver_get_extension_function_address,
        },
    .Device =
        {
            .pfnGet = cpu_device_get,
            .pfnGetSubDevices = cpu_device_get_sub_devices,
            .pfnGetProperties = cpu_device_get_properties,
            .pfnGetComputeProperties = cpu_device_get_compute_properties,
            .pfnGetModuleProperties = cpu_device_get_module_properties,
            .pfnGetCommandQueueGroupProperties = cpu_device_get_command_queue_group_properties,
            .pfnGetMemoryProperties = cpu_device_get_memory_properties,
            .pfnGetMemoryAccessProperties = cpu_device_get_memory_access_properties,
            .pfnGetCacheProperties = cpu_device_get_cache_properties,
            .pfnGetImageProperties = cpu_device_get_image_properties,
            .pfnGetExternalMemoryProperties = cpu_device_get_external_memory_properties,
            .pfnGetP2PProperties = cpu_device_get_p2p_properties,
            .pfnCanAccessPeer = cpu_device_can_access_peer,
            .pfnGetStatus = cpu_device_get_status,
            .pfnGetGlobalTimestamps = cpu_device_get_global_timestamps,
        },
    .Context =
        {
            .pfnCreate = cpu_context_create,
            .pfnCreateEx = cpu_context_create_ex,
            .pfnDestroy = cpu_context_destroy,
            .pfnGetStatus = cpu_context_get_status,
            .pfnSystemBarrier = cpu_context_system_barrier,
            .pfnMakeMemoryResident = cpu_context_make_memory_resident,
            .pfnEvictMemory = cpu_context_evict_memory,
        },
    .CommandQueue =
        {
            .pfnCreate = cpu_command_queue_create,
            .pfnDestroy = cpu_command_queue_destroy,
            .pfnExecuteCommandLists = cpu_command_queue_execute_command_lists,
            .pfnSynchronize = cpu_command_queue_synchronize,
        },
    .CommandList =
        {
            .pfnCreate = cpu_command_list_create,
            .pfnCreateImmediate = cpu_command_list_create_immediate,
            .pfnDestroy = cpu_command_list_destroy,
            .pfnClose = cpu_command_list_close,
            .pfnReset = cpu_command_list_reset,
            .pfnAppendWriteGlobalTimestamp = cpu_command_list_append_write_global_timestamp,
            .pfnAppendBarrier = cpu_command_list_append_barrier,
            .pfnAppendMemoryRangesBarrier = cpu_command_list_append_memory_ranges_barrier,
            .pfnAppendSignalEvent = cpu_command_list_append_signal_event,
            .pfnAppendWaitOnEvents = cpu_command_list_append_wait_on_events,
            .pfnAppendEventReset = cpu_command_list_append_event_reset,
            .pfnAppendMemoryCopy = cpu_command_list_append_memory_copy,
            .pfnAppendMemoryCopyFromContext = cpu_command_list_append_memory_copy_from_context,
            .pfnAppendMemoryFill = cpu_command_list_append_memory_fill,
            .pfnAppendMemoryCopyRegion = cpu_command_list_append_memory_copy_region,
            .pfnAppendMemoryPrefetch = cpu_command_list_append_memory_prefetch,
            .pfnAppendMemAdvise = cpu_command_list_append_mem_advise,
            .pfnAppendLaunchKernel = cpu_command_list_append_launch_kernel,
            .pfnAppendLaunchCooperativeKernel = cpu_command_list_append_launch_cooperative_kernel,
            .pfnAppendLaunchKernelIndirect = cpu_command_list_append_launch_kernel_indirect,
        },
    .Fence =
        {
            .pfnCreate = cpu_fence_create,
            .pfnDestroy = cpu_fence_destroy,
            .pfnHostSynchronize = cpu_fence_host_synchronize,
            .pfnQueryStatus = cpu_fence_query_status,
            .pfnReset = cpu_fence_reset,
        },
    .EventPool =
        {
            .pfnCreate = cpu_event_pool_create,
            .pfnDestroy = cpu_event_pool_destroy,
        },
    .Event =
        {
            .pfnCreate = cpu_event_create,
            .pfnDestroy = cpu_event_destroy,
            .pfnHostSignal = cpu_event_host_signal,
            .pfnHostSynchronize = cpu_event_host_synchronize,
            .pfnQueryStatus = cpu_event_query_status,
            .pfnHostReset = cpu_event_host_reset,
            .pfnQueryKernelTimestamp = cpu_event_query_kernel_timestamp,
        },
    .Mem =
        {
            .pfnAllocShared = cpu_mem_alloc_shared,
            .pfnAllocDevice = cpu_mem_alloc_device,
            .pfnAllocHost = cpu_mem_alloc_host,
            .pfnFree = cpu_mem_free,
            .pfnGetAllocProperties = cpu_mem_get_alloc_properties,
            .pfnGetAddressRange = cpu_mem_get_address_range,
        },
    .Module =
        {
            .pfnCreate = cpu_module_create,
            .pfnDestroy = cpu_module_destroy,
            .pfnGetKernelNames = cpu_module_get_kernel_names,
            .pfnGetProperties = cpu_module_get_properties,
            .pfnGetNativeBinary = cpu_module_get_native_binary,
        },
    .ModuleBuildLog =
        {
            .pfnDestroy = zed_build_log_destroy,
            .pfnGetString = zed_build_log_get_string,
        },
    .Kernel =
        {
            .pfnCreate = cpu_kernel_create,
            .pfnDestroy = cpu_kernel_destroy,
            .pfnSetCacheConfig = cpu_kernel_set_cache_config,
            .pfnSetGroupSize = cpu_kernel_set_group_size,
            .pfnSuggestGroupSize = cpu_kernel_suggest_group_size,
            .pfnSuggestMaxCooperativeGroupCount = cpu_kernel_suggest_max_cooperative_group_count,
            .pfnSetArgumentValue = cpu_kernel_set_argument_value,
            .pfnSetIndirectAccess = cpu_kernel_set_indirect_access,
            .pfnGetIndirectAccess = cpu_kernel_get_indirect_access,
            .pfnGetSourceAttributes = cpu_kernel_get_source_attributes,
            .pfnGetProperties = cpu_kernel_get_properties,
            .pfnGetName = cpu_kernel_get_name,
        },
};

const ze_dditable_t *zed_driver_tables(void) {
  return &cpu_tables;
}
